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
# # Appendix: where every number came from
#
# Each chapter says in one line under its finding card how many stored runs it read, on which machines and code
# versions, and what it computed while it ran. This page lists what is behind each of those lines: every section's
# provenance as the chapter recorded it when it ran, and every run the results store still lacks, with the command
# that trains it. It reads the ledgers the chapters wrote in this build (`sinkpaper.book.sources`), so it runs
# after them; a chapter that failed in this build keeps its last ledger.

# %% tags=["parameters"]
profile = "cpu"  # cpu | gpu | paper: this page reads the chapters' ledgers only; the same on every profile

# %% tags=["hide-input"]
import re
from pathlib import Path

from IPython.display import Markdown, display

from sinkpaper.book import figures, parameters, sources
from sinkpaper.provenance import shown_path

if profile not in parameters.PROFILES:
    raise ValueError(f"unknown profile {profile!r}; valid: {', '.join(parameters.PROFILES)}")

ledgers = [led for led in sources.load_all() if led.get("stem") != sources.APPENDIX]
if not ledgers:
    display(Markdown("No chapter has written its ledger in this build yet: run the chapters first "
                     "(`python -m sinkpaper.site run`)."))
total = {"stored": 0, "computed": 0, "missing": 0}
for led in ledgers:
    for k in total:
        total[k] += led["counts"].get(k, 0)
display(Markdown(f"*Sources:* the ledgers the chapters wrote in this build "
                 f"(`{shown_path(sources.results_dir() / sources.SUBDIR)}`)."))
display(Markdown(f"{len(ledgers)} chapters: {total['stored']} stored runs read (a run read by two chapters counts "
                 f"twice), {total['computed']} computations run while the book was built, {total['missing']} runs "
                 "not in the results store yet."))
build = sources.build_parts(ledgers)
if build:   # said once here; a row that holds all of it says "this build"
    display(Markdown(f"*{sources.BUILD}*, in the rows below: " + sources.SEP.join(build) + "."))

# %% tags=["hide-input"]
def title_of(stem: str) -> str:
    """A chapter's title, from its source notebook (its stem where the source is not at hand, e.g. on Colab)."""
    src = Path("notebooks") / f"{stem}.py"
    found = re.search(r"^# # (.+)$", src.read_text(encoding="utf-8"), re.M) if src.exists() else None
    return found.group(1) if found else stem


for led in ledgers:
    c = led["counts"]
    display(Markdown(f"### {title_of(led['stem'])}\n\n"
                     + f"{c['stored']} stored runs, {c['computed']} computed now, {c['versions']} code versions"
                     + (f", on {', '.join(c['machines'])}" if c["machines"] else "") + "."))
    rows = sources.table_rows(led, build)
    if rows:   # each section's provenance, one fold per chapter (found by the browser's find-in-page)
        display(figures.Fold(f"The provenance of its {len(led['entries'])} section(s)", figures.Table(rows)))
    for m in led["missing"]:
        display(figures.folded(f"{len(m['runs'])} run(s) not stored yet: {m['what']}", m["text"]))
