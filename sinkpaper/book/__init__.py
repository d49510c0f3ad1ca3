"""The chapters' shelf, presentation only: what a chapter calls to show what the library measured and stored. The
altair charts and the table display (``figures``), the tables built from stored runs (``tables``), the Section-7
points (``points``), sentences read from runs (``prose``), live training (``experiments``), the real-text section
chapters 4-9 lead with (``realtext``), the finding card at the top of every chapter with claims (``findings``), the
scorecard grid (``scorecard``), the chapter's parameter check (``parameters``), the attention explorer and widgets,
the Measurements page's charts (``measured_charts``) and the Colab set-up a chapter runs first (``colab``).
What the chapters read (stored sweeps, metrics, summaries over seeds, formatters) is library code in
:mod:`sinkpaper.results`. Building the site from the chapters (executing them, the offline assets, the Sphinx
extension, the browser check) is the other trade, :mod:`sinkpaper.site`.

Notebook-only dependencies (papermill, jupytext, altair, vl-convert) are imported inside these modules only;
the core ``sinkpaper`` library never imports them.
"""
import importlib
import importlib.abc
import importlib.util
import sys
import warnings

# The site builder's modules lived here until they moved to sinkpaper.site; their old names keep working for one
# release, each with one deprecation line naming the new one.
MOVED_TO_SITE = ("runner", "machine_paths", "assets", "chromium", "sphinx_ext")


def _moved(name: str):
    new = f"sinkpaper.site.{name}"
    warnings.warn(f"sinkpaper.book.{name} is now {new}; the old name goes in the next release",
                  DeprecationWarning, stacklevel=3)
    return importlib.import_module(new)


def __getattr__(name: str):
    if name in MOVED_TO_SITE:
        module = globals()[name] = _moved(name)   # warned once: the next lookup finds the attribute
        return module
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class _MovedFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """``import sinkpaper.book.runner`` and ``from sinkpaper.book.runner import main`` hand over the moved module."""

    def find_spec(self, fullname, path=None, target=None):
        pkg, _, name = fullname.rpartition(".")
        if pkg == __name__ and name in MOVED_TO_SITE:
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec):
        return _moved(spec.name.rpartition(".")[2])

    def exec_module(self, module):
        pass                                    # the module is the new one, already executed


if not any(isinstance(f, _MovedFinder) for f in sys.meta_path):
    sys.meta_path.append(_MovedFinder())
