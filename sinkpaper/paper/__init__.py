"""The paper, once: every table and figure value of Gu et al. (2025) that code uses, its claims, and the rules
that say whether a result of ours agrees with each claim.

* ``NUMBERS`` holds each number exactly as the paper prints it, typed once, with its source (table or figure).
  Keys are the sweep-point names of ``configs/*.yaml`` where the book runs the point (``lr_x2``, ``wd_0.5``,
  ``sink_token``, ``kernel_elu``); a point the book does not run gets the name it would have there
  (``ffn_swish``, ``heads_4``). A metric other than Sink_1 is named after a colon (``sink_token: Sink*``).
* ``CLAIMS`` lists every claim the book checks, and the paper's experiments it does not run, each with one
  agreement rule. There is ONE threshold set (``SINK``, ``NO_SINK``, ``FACTOR``, ``CHANGE``, ``MASSIVE``), ONE
  combinator (:func:`all_of`, in which a missing value means ``no result``) and ONE verdict vocabulary
  (``VERDICTS``). Nothing else in the project decides a verdict.
* :func:`listing` gives every claim with its results at each scale (``SCALES``): the pretrained LMs the
  chapters measure (read from the chapters' records, :func:`record`; where a chapter has not run, as in a fresh
  clone, from the measurement committed to the repository, :mod:`.committed`), and training runs read from the
  results store (the real-text CPU profile ``text`` and the miniature) through :func:`store_lookup`.
* Each rule is checked against the paper's own numbers (it must read ``agrees``) and against a result in which
  the claimed effect is absent (it must not): ``rule_check``. A claim whose rule could not tell the two apart is
  marked qualitative, with no rule and no verdict.

Numbers are typed from the paper (arXiv:2410.10781), each with its source there (table, figure or section); nothing
here is a result of ours. It is library code under the book: no plotting or widget package is imported here
(tests/test_layers.py).
"""
from __future__ import annotations

from .verdicts import AGREES, CHANGE, DISAGREES, Decision, EXTRA_SEEDS, FACTOR, GPU_SCALE, LAYERS_4_SCALE, DEFAULT_CPU_SCALE, INCONCLUSIVE, MASSIVE, NOT_COMPARABLE, NOT_RUN, NOT_YET, NO_RESULT, NO_SINK, PLATEAU, PLATEAU_EVALS, RISING, SCALES, SEEDS_MIN, SINK, STALE, Seeds, TRAINED, Undecided, VERDICTS, all_of, judge, no_sink_verdict, sink_verdict, verdict_of  # noqa: F401
from .rules import Both, Bound, Change, Contrast, DependsOn, Falls, Keeps, MattersLittle, Monotone, MovesTo, Prefix, Ratio, Recovers, Rule, Sinks, WeightDecay  # noqa: F401
from .numbers import DEFAULT_ALIASES, NUMBERS, Number, paper_text, paper_value  # noqa: F401
from .claim import Chapter, Claim, MINI, NotRun, PAPER_SCALE, Runs  # noqa: F401
from .onsets import ONSETS, After, Onset, onset_step, onset_text  # noqa: F401
from .claims import CLAIMS, NOT_JUDGED, claim, rule_check  # noqa: F401
from .records import RESULTS_ENV, load_records, results_dir, write_record  # noqa: F401
from .lookup import PROFILE_OF, entry, listing, result, scale_rule, store_lookup  # noqa: F401
from .report import bos_statement, record, counts, fmt_values, markdown_table, row, row_of, rows, text_table, verdict_text  # noqa: F401
