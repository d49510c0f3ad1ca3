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
# Every claim of Gu et al. (2025), *When Attention Sink Emerges in Language Models: An Empirical View*
# (ICLR 2025), that this book checks, with the paper's number, ours, the setting ours was measured in, and
# whether the direction agrees. The table is generated from the records the chapters wrote when they were
# executed (the book runner executes this page last); nothing on it is typed in by hand except the paper's
# own numbers, which come from `sinkpaper.book.claims`.
#
# Two columns of results:
#
# * **ours**: real language models — the offline pretrained models (SmolLM2-135M, Gemma-3-270M, or any model
#   id passed to a chapter) measured when the chapter ran, or pre-training runs at the `gpu` profile loaded
#   from the results store. A claim whose GPU run is not stored yet says *no stored GPU run*.
# * **miniature**: the synthetic analogue (the Bigram-Backcopy task, a one-layer model trained for a minute
#   on a CPU; chapters 4-10). It shows the same mechanism at a tiny scale; it does not replace the real runs.
#
# *agrees* / *disagrees* compare the direction of the effect (more or less sink, where the sink sits), by
# the rule each chapter states next to its own table; *not comparable* means the setting differs too much
# or the result is missing. A disagreement is a finding, reported as measured.

# %% tags=["parameters"]
profile = "cpu"  # cpu | gpu | paper: the profile the chapters ran at (this page only reads their records)
results = ""  # folder of chapter records; "" = the one the book runner set (book/_results in a checkout)

# %%
from collections import Counter

from IPython.display import Markdown, display

from sinkpaper import provenance
from sinkpaper.book import claims, figures

PROFILES = ("cpu", "gpu", "paper")
if profile not in PROFILES:
    raise ValueError(f"unknown profile '{profile}'; valid: {', '.join(PROFILES)}")
directory = results or claims.results_dir()
card = claims.scorecard(directory)
recorded = claims.load_records(directory)
chapters = sorted({c.chapter for c in claims.CLAIMS})
missing_chapters = [ch for ch in chapters if not any(claims.claim(cid).chapter == ch for cid in recorded)]

# %% [markdown]
# ## Summary

# %%
lm, mini = Counter(r["direction"] for r in card.rows), Counter(r["miniature direction"] for r in card.rows)
summary = figures.Table([
    {"results": "ours (real LMs)", **{k: lm.get(k, 0) for k in ("agrees", "disagrees", "not comparable",
                                                                  "no result yet")}},
    {"results": "miniature", **{k: mini.get(k, 0) for k in ("agrees", "disagrees", "not comparable",
                                                            "no result yet")}},
])
display(summary)
if missing_chapters:
    display(Markdown("**Chapters with no records in this build:** " + ", ".join(missing_chapters)
                     + " (they failed or were not executed; their claims read *no result yet*)."))
display(Markdown(figures.provenance_line({**provenance.stamp(), "profile": profile, "records": str(directory)})))

# %% [markdown]
# ## Every claim
#
# Hover over a setting to see its provenance (profile, hardware, tokens seen, code version, computed now or
# loaded from the results store); the chapter column links to the chapter that measured it.

# %%
from sinkpaper.book import scorecard  # noqa: E402  (after merging issue-21b: scorecard.Scorecard(paper.listing(directory)))

_V = {"no result yet": "no result"}
display(scorecard.Scorecard([
    {"id": r["id"], "section": r["section"], "chapter": r["chapter"], "claim": r["claim"],
     "paper": {"source": r["paper"], "values": {}},
     "results": {"real LMs": {"verdict": _V.get(r["direction"], r["direction"]), "values": {},
                              "measurement": f"{r['ours']} ({r['setting']})", "note": r["provenance"],
                              "status": "found" if r["ours"] != "—" else "missing"},
                 "real text (CPU)": {"verdict": "no result", "values": {}, "status": "not run",
                                     "measurement": "not run"},
                 "miniature": {"verdict": _V.get(r["miniature direction"], r["miniature direction"]), "values": {},
                               "measurement": r["miniature"],
                               "status": "found" if r["miniature"] != "—" else "missing"}}}
    for r in card.rows]))
