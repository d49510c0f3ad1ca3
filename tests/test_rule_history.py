"""The rule-history appendix's reader (sinkpaper.paper.history): what it follows in a registry module, and the
changes it finds in a small git history made here (set, a reflow that is no change, a real change)."""
from __future__ import annotations

import subprocess
import textwrap

import pytest

from sinkpaper.paper import history

MODULE = '''
SINK = 10.0
NAME = "not a threshold"


class Bound:
    """A docstring."""
    def apply(self, v):
        return v >= SINK


def judge(rule, values):
    return rule.apply(values)


CLAIMS = [
    Claim("a", "4", rule=Bound(), measure=Runs("x", {"p": "p"})),
    *(Claim(f"bias_{short}", "7.2", rule=Bound()) for short in ("k", "kv")),
]
'''


def test_it_follows_rules_measures_classes_judging_functions_and_thresholds():
    got = history.followed(MODULE, frozenset({"judge"}))
    assert set(got) == {"SINK", "class Bound", "function judge", "a: rule", "a: measure", "bias_{short}: rule"}
    assert "A docstring" not in got["class Bound"]
    # a reflow or a new docstring is not a change; a new bound is
    reflowed = MODULE.replace('rule=Bound(), measure=Runs("x", {"p": "p"})',
                              'rule=Bound(),\n          measure=Runs("x",\n {"p": "p"})')
    assert history.followed(reflowed, frozenset({"judge"})) == got
    assert history.followed(MODULE.replace('"""A docstring."""', '"""Another."""'), frozenset({"judge"})) == got
    assert history.followed(MODULE.replace("v >= SINK", "v > SINK"), frozenset())["class Bound"] != got["class Bound"]
    assert history.followed("def broken(:\n") == {}


def _commit(repo, text, message, when):
    path = repo / "sinkpaper" / "paper" / "claims.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    env = {"GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin"}
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True, env=env)
    subprocess.run(["git", "-C", str(repo), "commit", "-qm", message], check=True, env=env)


def test_the_history_of_a_small_repository_and_which_runs_are_older_than_each_rule(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    _commit(tmp_path, MODULE, "rules set", "2026-01-01T10:00:00+00:00")
    _commit(tmp_path, MODULE.replace('rule=Bound(), measure', 'rule=Bound(),\n          measure'), "reflow only",
            "2026-01-02T10:00:00+00:00")
    _commit(tmp_path, MODULE.replace('Claim("a", "4", rule=Bound()', 'Claim("a", "4", rule=Other()'),
            "a's rule changed, after its first run", "2026-01-03T10:00:00+00:00")
    changes = history.rule_history(tmp_path)
    assert [(c.name, c.kind, c.subject) for c in changes if c.kind != "set"] == [
        ("a: rule", "changed", "a's rule changed, after its first run")]
    assert changes[0].time == "2026-01-01 10:00 UTC" and changes[0].date == "2026-01-01"

    def entry(cid, computed, rule="r"):
        return {"id": cid, "rule": rule,
                "results": {"real text (CPU)": {"measurement": "store x", "computed_at": computed}}}
    rows = history.by_claim(changes, scales=("real text (CPU)",), entries=[entry("a", ["2026-01-02 09:00 UTC", "2026-01-04 09:00 UTC"]),
                                      entry("bias_k", ["2026-01-02 09:00 UTC"]), entry("bias_kv", []),
                                      entry("no rule", [], rule=None)])
    col = "real text (CPU): runs older than the rule"
    assert [(r["claim"], r["rule last changed"], r[col]) for r in rows] == [
        ("a", "2026-01-03 10:00 UTC (" + changes[-1].commit + ")", "1 of 2"),
        ("bias_k", "never", "0 of 1"), ("bias_kv", "never", "no runs stored yet")]


def test_without_git_history_it_says_so(tmp_path):
    with pytest.raises(RuntimeError, match="no git history"):
        history.rule_history(tmp_path)


def test_the_repositorys_own_history_dates_every_ruled_claim():
    """Every claim with a rule has a first commit in the repository's history (a clone that reaches it)."""
    if history.is_shallow():
        pytest.skip("a shallow clone: the registry's first commits are not here")
    from sinkpaper import paper

    rows = history.by_claim(history.rule_history(), paper.listing())
    assert rows and all(r["rule set"] != "not in the history" for r in rows), \
        [r["claim"] for r in rows if r["rule set"] == "not in the history"]


def test_a_shallow_clone_is_deepened_from_its_origin(tmp_path):
    """Colab clones with --depth 1: the appendix fetches the rest before reading the history, and says so when
    it cannot (no origin to fetch from)."""
    origin = tmp_path / "origin"
    subprocess.run(["git", "init", "-q", str(origin)], check=True)
    for i, day in enumerate(("01", "02")):
        _commit(origin, MODULE.replace("SINK = 10.0", f"SINK = 1{i}.0"), f"commit {i}", f"2026-01-{day}T10:00:00+00:00")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{origin}", str(clone)], check=True)
    assert history.is_shallow(clone)
    assert len(history.rule_history(clone)) == len(history.followed(MODULE))   # one commit: everything "set"
    assert history.unshallow(clone) and not history.is_shallow(clone)
    assert [(c.name, c.kind) for c in history.rule_history(clone) if c.kind != "set"] == [("SINK", "changed")]
    (tmp_path / "lonely").mkdir()
    lonely = tmp_path / "lonely" / "c"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{origin}", str(lonely)], check=True)
    subprocess.run(["git", "-C", str(lonely), "remote", "remove", "origin"], check=True)
    assert history.unshallow(lonely) is False and history.is_shallow(lonely)


def test_the_changes_are_listed_once_per_commit_newest_first():
    C = history.Change
    changes = [C("a: rule", "set", "c1", "2026-01-01 10:00 UTC", "first"),
               C("a: rule", "changed", "c2", "2026-01-02 10:00 UTC", "two things"),
               C("SINK", "changed", "c2", "2026-01-02 10:00 UTC", "two things"),
               C("b: measure", "removed", "c2", "2026-01-02 10:00 UTC", "two things"),
               C("a: measure", "changed", "c3", "2026-01-03 10:00 UTC", "third")]
    assert history.by_commit(changes) == [
        {"time": "2026-01-03 10:00 UTC", "commit": "c3", "what": "changed: a: measure",
         "why (the commit's subject)": "third"},
        {"time": "2026-01-02 10:00 UTC", "commit": "c2", "what": "changed: a: rule, SINK; removed: b: measure",
         "why (the commit's subject)": "two things"}]
