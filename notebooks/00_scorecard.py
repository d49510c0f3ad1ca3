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
display(Markdown(f"{len(entries)} claims; {n_rules} have a rule, and {checks_ok} of those read *agrees* on the "
                 "paper's numbers and not on a result with the claimed effect absent. The others are qualitative "
                 "(or, for the propositions, a check rather than a reproduction) and carry no verdict."))
# how often a change that keeps a sink in the paper keeps one here: a "removes the sink" read at a scale where
# many such changes have none is weak evidence
rates = [r for s in paper.SCALES if (r := paper.report.base_rate_sentence(entries, s))]
if rates:
    display(Markdown("**Base rate** (the points of the claims that a sink stays, read on every seed) \u2014 "
                     + " ".join(rates)))
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
# Everything on this page comes from one listing,
# `sinkpaper.paper` (also `python -m sinkpaper claims`): the paper's numbers are typed there once, each
# claim's rule is stated there in one sentence, and our numbers are read from the records the chapters wrote
# when they ran (the book runner executes this page last) and from the results store. Nothing else decides a
# verdict.
#
# The scales of results:
#
# * **real LMs**: the offline pretrained models (SmolLM2-135M, Gemma-3-270M, or any model id passed to a
#   chapter), measured when the chapter ran (Sections 3, 10 and 11). The Sections 4-7 experiments at the
#   paper's scale (60M parameters, ~21B tokens) are not run: those rows read *no result (not run)*.
# * **real text (CPU)**: the Sections 4-7 sweeps on the offline text corpus at a scale a CPU can train (the
#   `text` profile of `configs/`: 2 layers, a fixed first token), read from the results store. Rows without a
#   stored run read *no result*. Many stored runs were trained with that same recipe on a GPU lent to the
#   project (their seeds agree with the CPU-trained ones; the book's Measurements page shows the check); each
#   run's provenance, shown when you hover a cell, names the machine it trained on.
# * **real text, 4 layers (CPU)**: the same recipe at 4 layers in fp32, for the position family, the base and the
#   changes that keep no sink at 2 layers (`configs/layers_4.yaml`, its claims and rules registered before its
#   runs): is a missing sink a depth effect?
# * **real text, paper's default (CPU)**: the paper's own packing (no fixed first token, no BOS) at 4 layers and
#   context 256 over hundreds of millions of tokens (`configs/default_cpu.yaml`, planned before its run).
# * **GPU (paper's default)**: the calibrated 4-layer model in the paper's packing, trained on a lent GPU.
# * **miniature**: the synthetic analogue (the Bigram-Backcopy task, a one-layer model trained in minutes
#   on a CPU), read from the results store. It is an analogue at a tiny scale, shown beside the other two; it
#   replaces neither.
#
# Each stored run is read on its **plateau**, the mean of its evaluations over the last 20 % of its training steps
# (late in a run Sink_1 still moves by ~5 points from one evaluation to the next), and a run that did not learn
# (its loss no better than the unigram frequencies of its data) is left out and named in the row's notes.
# The verdicts are *agrees*, *disagrees*, *inconclusive*, *not yet*, *not comparable* and *no result*. A verdict on stored
# runs holds only when **every seed** reads it: a threshold with every seed on the same side, a comparison with
# the paired differences of one sign and the points' seed ranges apart. Otherwise the row reads *inconclusive*
# with the reason under it: the difference is inside the seed spread, not a finding. A value in the grey band
# between the sink thresholds (5-10 %) reads *inconclusive*; *not comparable* is a control with nothing to
# compare, or an order between two events one of which never forms; *not yet* is a "no sink" whose runs never
# reached the held-out loss at which the base's own sink formed (a sink they could still grow would make the claim
# agree: the budget, not the change, is what they show); *no result* is not run, not
# stored, or stored under an older definition of a variant or earlier settings of a point (*stale, rerun*).
# Each rule was checked to read *agrees* on the paper's own numbers and not on a result where the claimed effect
# is absent. A disagreement that survives the seeds is a finding, reported as measured.
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
