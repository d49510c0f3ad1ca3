"""sinkpaper: reproduce 'When Attention Sink Emerges in Language Models: An Empirical View' (Gu et al., ICLR 2025).

Layers, each depending only on the ones before it:
  attention (reference operators, masks) <- models (configurable LLaMA-style decoder)
  <- metrics (sink rate, massive activations, QK angles) / lms (any HF causal LM, probe inputs)
  <- data + train (pre-training, the results store)
  <- paper (the paper's numbers typed once, its claims and their rules; the listing reads chapter records and
     the results store)
  <- cli (`python -m sinkpaper ...`) and book (papermill runner; notebook-only packages live there).
"""
__version__ = "0.1.0"
