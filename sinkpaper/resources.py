"""The files sinkpaper ships besides code: the experiment configs and the committed real-text sample.

In a clone they are the repository's top-level ``configs/`` and ``data/sample/``. A ``pip install``ed sinkpaper
carries the same files inside the package, as ``sinkpaper/configs/`` and ``sinkpaper/sample/`` (pyproject.toml
maps the two folders into the wheel). A path given by the user is always tried first, relative to the working
directory; only when nothing is there do these functions fall back to the shipped copy, so
``--config optimization``, ``--config configs/optimization.yaml`` and the cpu profile's
``data.path: data/sample/tokens.u16.xz`` work from any directory.
"""
from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent
_CHECKOUT = _PACKAGE.parent
CONFIG_SUFFIX = ".yaml"


def configs_dir() -> Path | None:
    """The shipped configs: ``sinkpaper/configs`` of an installed package, else a clone's ``configs/``."""
    for d in (_PACKAGE / "configs", _CHECKOUT / "configs"):
        if (d / "_base.yaml").is_file():
            return d
    return None


def sample_dir() -> Path | None:
    """The shipped real-text sample: ``sinkpaper/sample`` of an installed package, else ``data/sample/``."""
    for d in (_PACKAGE / "sample", _CHECKOUT / "data" / "sample"):
        if (d / "tokens.u16.xz").is_file():
            return d
    return None


def config_families(directory: Path | None = None) -> list[str]:
    """The experiment families (config stems without the leading-underscore shared files)."""
    d = directory if directory is not None else configs_dir()
    return sorted(p.stem for p in d.glob(f"[!_]*{CONFIG_SUFFIX}")) if d is not None else []


def find_config(name: str | Path) -> Path:
    """A config file: ``name`` itself when it exists; else, for ``optimization``, ``optimization.yaml`` or
    ``configs/optimization.yaml``, that family in ``./configs/`` and then in the shipped configs.

    Raises FileNotFoundError (one line) naming the families there are.
    """
    path = Path(name)
    if path.is_file():
        return path
    candidates = []
    if len(path.parts) == 1 or (len(path.parts) == 2 and path.parts[0] == "configs"):
        stem = path.name[: -len(CONFIG_SUFFIX)] if path.name.endswith(CONFIG_SUFFIX) else path.name
        candidates.append(Path("configs") / f"{stem}{CONFIG_SUFFIX}")
        shipped = configs_dir()
        if shipped is not None:
            candidates.append(shipped / f"{stem}{CONFIG_SUFFIX}")
    for c in candidates:
        if c.is_file():
            return c
    families = config_families(Path("configs")) or config_families()
    raise FileNotFoundError(f"no config {str(name)!r} (looked in {', '.join(str(c) for c in candidates) or 'the path as given'});"
                            f" valid: a YAML file, or one of the experiment families {', '.join(families) or '(none found)'}")


def data_file(path: str | Path) -> Path:
    """A data file named relative to the working directory; a missing ``data/sample/<file>`` falls back to the
    shipped sample. Any other path is returned as given (its reader reports what is missing)."""
    path = Path(path)
    if path.exists() or path.is_absolute():
        return path
    parts = path.parts
    if len(parts) == 3 and parts[:2] == ("data", "sample"):
        shipped = sample_dir()
        if shipped is not None and (shipped / parts[2]).exists():
            return shipped / parts[2]
    return path
