# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Reproduction scorecard
#
# Every claim of Gu et al. (2025), *When Attention Sink Emerges in Language Models* (ICLR 2025), that this book
# checks: per scale, the verdict, the paper's number beside ours, and why (hover a cell for the rule). The method
# is in the fold under the grid.

# %% tags=["parameters"]
profile = "cpu"  # cpu | gpu | paper: the profile the chapters ran at (this page only reads their records)
results = ""  # folder of chapter records; "" = the one the book runner set (book/_results in a checkout)

# %% tags=["remove-input"]
from IPython.display import Markdown, display

from sinkpaper import paper, provenance
from sinkpaper.book import figures, findings, scorecard

PROFILES = ("cpu", "gpu", "paper")
if profile not in PROFILES:
    raise ValueError(f"unknown profile '{profile}'; valid: {', '.join(PROFILES)}")
directory = results or paper.results_dir()
entries = paper.listing(directory)
recorded = paper.load_records(directory)
chapters = sorted({e["chapter"] for e in entries
                   if any(isinstance(m, paper.Chapter) for m in paper.claim(e["id"]).measure.values())})
missing_chapters = [ch for ch in chapters if not any(paper.claim(cid).chapter == ch for cid in recorded)]

# %% tags=["remove-input", "full-width"]
display(findings.verdict_chart(entries))
display(scorecard.Scorecard(entries, late_rules=findings.rules_set_after_runs(entries)))
n_rules = sum(e["rule"] is not None for e in entries)
checks_ok = sum(e["rule_check"] is not None and e["rule_check"]["paper"] == paper.AGREES
                and e["rule_check"]["no_effect"] != paper.AGREES for e in entries)
said = [Markdown(f"{len(entries)} claims; {n_rules} have a rule, and {checks_ok} of those read *agrees* on the paper's "
                 "numbers and not on a result with the claimed effect absent. The others are qualitative (or, for "
                 "the propositions, a check rather than a reproduction) and carry no verdict.")]
# how often a change that keeps a sink in the paper keeps one here: a "removes the sink" read at a scale where
# many such changes have none is weak evidence
rates = [r for s in paper.SCALES if (r := paper.report.base_rate_sentence(entries, s))]
if rates:
    said.append(Markdown("**Base rate** (the points of the claims that a sink stays, read on every seed) \u2014 "
                         + " ".join(rates)))
display(figures.Fold("The rules, and how often a change that keeps a sink in the paper keeps one here", *said))
if missing_chapters:
    display(Markdown("**Chapters with no records in this build:** " + ", ".join(missing_chapters)
                     + " (they failed or were not executed; their claims read *no result*)."))
display(Markdown(figures.provenance_line({**provenance.stamp(), "profile": profile,
                                          "records": provenance.shown_path(directory)})))

# %% [markdown]
# ## How the verdicts are decided
#
# ````{dropdown} The method
#
# One listing decides every verdict: `sinkpaper.paper` (also `python -m sinkpaper claims`) types the paper's
# numbers once and states each claim's rule in one sentence; our numbers come from the records the chapters wrote
# when they ran (this page runs last) and from the results store.
#
# The scales ({ref}`defined in the glossary <glossary-profiles>`):
#
# * **real LMs**: the offline pretrained models, measured when the chapter ran (Sections 3, 10, 11).
# * **real text (CPU)**: the Sections 4-7 sweeps at a scale a CPU trains (2 layers, a fixed first token), read
#   from the store; some of its runs trained on a lent GPU with the same recipe, as each run's provenance says.
# * **real text, 4 layers (CPU)**: the same recipe at 4 layers in fp32, for the changes that keep no sink at 2
#   (the single changes read at 10,000 steps, `configs/budget.yaml`).
# * **real text, paper's default (CPU)** and **GPU (paper's default)**: the paper's own packing (no fixed first
#   token), planned before its runs.
# * **miniature**: the Bigram-Backcopy analogue, beside the others, replacing none.
#
# The paper's own 60M-parameter runs of Sections 4-7 are not run: those rows read *no result (not run)*.
#
# Each stored run is read on its **plateau** (the mean over the last 20 % of its steps); a run that did not learn
# (its loss no better than its data's unigram frequencies) is left out and named. A verdict holds only when
# **every seed** reads it: a threshold with every seed on the same side, a comparison with paired differences of
# one sign and the seed ranges apart; otherwise *inconclusive*, with the reason. A value between the sink
# thresholds (5-10 %) is *inconclusive*; *not comparable* is a control with nothing to compare, or an order
# between two events one of which never forms; *not yet* is a "no sink" whose runs never reached the held-out
# loss at which the base's own sink formed; *no result* is not run, not stored, or stored under an older
# definition (*stale, rerun*). Each rule reads *agrees* on the paper's numbers and not where the claimed effect is
# absent. A disagreement that survives the seeds is a finding.
# ````

# %% tags=["remove-input"]
# the thresholds every rule shares, written from the registry's own constants
from sinkpaper.paper.verdicts import CHANGE, NO_SINK, SINK
from sinkpaper.results.reading import PLATEAU

display(figures.folded(
    "The rules' shared thresholds, as formulas",
    f"A point's value $v$ is its plateau, the mean of its evaluations over the last {PLATEAU:.0%} of its steps, "
    "and $v_0$ the value of its control:\n\n"
    rf"$$\text{{sink}}: v \ge {SINK:g}\,\%, \qquad \text{{no sink}}: v < {NO_SINK:g}\,\%, \qquad "
    rf"\text{{a change}}: |v - v_0| \ge {CHANGE:g}\,|v_0|$$" "\n\n"
    "Between the two sink thresholds a value is in the grey band; a verdict holds only where every seed reads it."))
