"""Names that left a module: the module's ``__getattr__`` says where each one went instead of a bare
"has no attribute", for one release after a move (sinkpaper.book.sections / section7 / experiments,
sinkpaper.data.corpus)."""
from __future__ import annotations

from collections.abc import Callable, Mapping


def moved_names(module: str, moved: Mapping[str, str], verb: str = "moved: use",
                error: type[Exception] = AttributeError) -> Callable[[str], object]:
    """A module-level ``__getattr__`` for `module`: a name in `moved` raises `error` with the message
    "<module>.<name> <verb> <moved[name]>"; any other name is the usual AttributeError."""
    def __getattr__(name: str):
        if name in moved:
            raise error(f"{module}.{name} {verb} {moved[name]}")
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    return __getattr__
