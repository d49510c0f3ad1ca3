"""How a stored run is read: the window its value is read on (its plateau), what it takes to count as trained and
when it is still rising at its end. The results layer reads runs with these (:mod:`.sweeps`, :mod:`.calibration`);
the paper registry judges every rule on those readings and re-exports them, and its rule history
(:mod:`sinkpaper.paper.history`) follows this file, so a change here is dated like a change of a rule.
"""
from __future__ import annotations

# Fixed before the stored runs were re-scored under them. Inside one text run Sink_1 moves by ~5 points between
# evaluations late in training (90th percentile 12), so a run is read on its plateau, never its last evaluation.
PLATEAU = 0.2        # a run's value: the mean of its evaluations over the last 20 % of its training steps
PLATEAU_EVALS = 3    # ... which needs at least 3 evaluations there (else "not enough evaluations", the run named)
TRAINED = 0.1        # a run learned when its held-out or its training loss over that window is at least 0.1 nats
#                      (4x the held-out loss's sampling error on 100 x 64 tokens) below the unigram loss of its data,
#                      the loss of predicting each token by its frequency. Else it is listed and no verdict counts it.
#                      (Not "below its first evaluation": by step 100 the text runs already sit at the unigram level
#                      and the miniature's at its task's floor, so a first evaluation says nothing about learning.)
RISING = 0.25        # a run is "still rising at its end" when the least-squares line through its plateau's values
#                      rises across the window by at least this share of the plateau's mean (the registry's 25 %
#                      change) and by at least 1 point of Sink % (below that, evaluation noise on near-zero values):
#                      its plateau is then a lower bound, and the book says so beside the number
