"""sinkpaper: reproduce 'When Attention Sink Emerges in Language Models: An Empirical View' (Gu et al., ICLR 2025).

Layers, each depending only on the ones before it (tests/test_layers.py checks the direction and that no import
circle exists):
  attention (reference operators, masks) and fused (the Triton operators, blocked CPU column statistics,
  fused.testing: the checks against fp64; kernels: its old name) <- models (configurable LLaMA-style decoder)
  <- metrics (sink rate, the uniform floor, massive activations, QK angles) / mechanism (the miniature's heads)
  <- lms, probes, streaming, long_context (any HF causal LM; hf_attention is the one place that overrides
     transformers' attention)
  <- data (token files, packing, the offline corpus by job) + train (trainer, sweeps, the results store,
     train.run: open a run directory)
  <- results (results.reading: how a stored run is read, in one place: the one loop over the store, the metric
     vocabulary, the plateau, whether it trained; results.sweeps: a family's stored sweep, the real-text sweep a
     chapter reads and the summaries over seeds; generated README blocks;
     results.curves: a run over training; results.numbers: the formatter set; results.measured and
     results.text_runs: the blocks read from stored measurements and from runs outside the main sweep)
  <- paper (the paper's numbers typed once, its claims and their rules; the listing reads chapter records and
     the results store)
  <- book (the chapters' shelf, presentation: with site the only place altair and ipywidgets are imported;
     figures, tables, points, prose, the explorer and widgets) <- site (building the site from the chapters: the
     papermill runner, the offline assets, the Sphinx extension)
  <- cli (`python -m sinkpaper ...`: parses and dispatches).

The version comes from git through setuptools-scm, which writes sinkpaper/_version.py when the package is built
or installed (an untagged commit reads like 0.1.1.devN+g<commit>). A checkout that was never installed has no
_version.py; sinkpaper.provenance.code_version() then asks git directly.
"""
try:
    from ._version import version as __version__
except ImportError:  # a source tree that was never built or installed
    __version__ = "0.0.0+unknown"
