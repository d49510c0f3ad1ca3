"""sinkpaper: reproduce 'When Attention Sink Emerges in Language Models: An Empirical View' (Gu et al., ICLR 2025).

Layers, each depending only on the ones before it:
  attention (reference operators, masks) <- models (configurable LLaMA-style decoder)
  <- metrics (sink rate, massive activations, QK angles) / lms (any HF causal LM, probe inputs)
  <- data + train (pre-training, the results store)
  <- paper (the paper's numbers typed once, its claims and their rules; the listing reads chapter records and
     the results store)
  <- cli (`python -m sinkpaper ...`) and book (papermill runner; notebook-only packages live there).

The version comes from git through setuptools-scm, which writes sinkpaper/_version.py when the package is built
or installed (an untagged commit reads like 0.1.1.devN+g<commit>). A checkout that was never installed has no
_version.py; sinkpaper.provenance.code_version() then asks git directly.
"""
try:
    from ._version import version as __version__
except ImportError:  # a source tree that was never built or installed
    __version__ = "0.0.0+unknown"
