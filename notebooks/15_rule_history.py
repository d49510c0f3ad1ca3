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
# # Appendix: when each verdict rule was fixed
#
# A verdict is only as honest as its rule: a rule chosen after the results it judges can be bent to agree. Every
# rule of this book lives in one registry (`sinkpaper/paper/`), so its history is in git. This page reads that
# history, commit by commit, and lists for each claim when its rule was first set and when it last changed, and
# when the runs it reads last changed. Nothing here is typed by hand: the registry's source at every commit is
# parsed, each rule compared as normalised source (a reflowed line is not a change).
#
# Read it beside the results' own dates: each stored run names its commit and time in its provenance (the
# chapters' provenance lines), and a commit that changed a rule says in its message why, and whether the rule
# was fixed before the results it judges were looked at.

# %% tags=["parameters"]
profile = "cpu"  # cpu | gpu | paper: this page reads git only; the same on every profile

# %%
from IPython.display import Markdown, display

from sinkpaper import paper, provenance
from sinkpaper.book import figures, parameters, sources
from sinkpaper.paper import history

sources.begin("15_rule_history")

if profile not in parameters.PROFILES:
    raise ValueError(f"unknown profile {profile!r}; valid: {', '.join(parameters.PROFILES)}")
sources.record({**provenance.stamp("cpu", profile=profile),
                "source_of_numbers": "git history of " + ", ".join(history.REGISTRY_FILES)})
changes = None
if not history.unshallow():   # a shallow clone (Colab's) would date every rule at its one commit
    display(Markdown("**This clone is shallow and its history could not be fetched** (`git fetch --unshallow` "
                     "needs the network), so no rule history here: every rule would look newer than it is."))
else:
    try:
        changes = history.rule_history()
    except RuntimeError as e:
        display(Markdown(f"**No git history here**, so no rule history: {e}. Clone the repository to read it."))

# %% [markdown]
# ## Each claim's rule
#
# *rule set*: the commit where the claim's rule first appears in the registry; *rule last changed*: the last
# commit that changed it; *runs it reads, last changed*: when the points, seeds or chapter it reads last changed.
# The last columns count, at each scale where the claim reads stored runs, the runs computed before its rule in
# force now (each run's time is in its provenance): *0 of n* means the rule was fixed before every result it
# judges there. A chapter measures its claims when it runs, so after their rules.
# A rule set after some of its runs existed is not wrong in itself (a claim added later, a rule the paper's own
# numbers decide), but it is the place to read the commit's reason.

# %% tags=["hide-input"]
if changes is not None:
    listing = paper.listing()
    rows = history.by_claim(changes, listing)
    counted = [v for r in rows for k, v in r.items() if k.endswith("runs older than the rule") and " of " in v]
    before = sum(v.startswith("0 of ") for v in counted)
    display(Markdown(f"**{before} of {len(counted)}** readings of stored runs were judged by a rule fixed before "
                     f"every run they read; {sum(e['rule'] is not None for e in listing)} claims with a rule; "
                     f"{len(changes)} changes in all, from {changes[0].time} ({changes[0].commit}) to "
                     f"{changes[-1].time} ({changes[-1].commit}). The table per claim is folded below."))

# %% tags=["hide-input", "hide-output", "full-width"]
if changes is not None:
    display(figures.Table(rows))

# %% [markdown]
# ## Every change, newest first
#
# One row per commit, with what it changed: a claim's rule or measure, a rule class, a judging function (the seed
# spread, the plateau) or a shared threshold (`SINK`, `NO_SINK`, `CHANGE`, `PLATEAU`, ...), which changes every
# rule that uses it. The subject is the commit's first line; `git show <commit>` has the whole message.

# %% tags=["hide-input", "hide-output"]
if changes is not None:
    display(figures.Table([{k: (v if len(v) <= 160 or k == "what" else v[:157] + "...") for k, v in r.items()}
                           for r in history.by_commit(changes)]))
