"""When each verdict rule was fixed, read from git: the registry's source at every commit that touched it, parsed
(never imported), so a reader can check that a rule predates the results it judges.

For every claim it follows two things, each as normalised source text (``ast.unparse``: a reflowed line is not a
change): its ``rule=`` (what decides the verdict) and its ``measure=`` (which runs or chapter it reads). It also
follows the rule classes, the functions that judge (the seed spread, the plateau's verdict) and the numeric
thresholds they share (SINK, NO_SINK, CHANGE, PLATEAU, ...), docstrings left out. A change to one of those
changes every rule that uses it; each is listed once, under its own name.
"""
from __future__ import annotations

import ast
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# every file the claims and their rules have lived in, oldest first
REGISTRY_FILES = ("sinkpaper/book/claims.py", "sinkpaper/paper.py", "sinkpaper/paper/numbers.py",
                  "sinkpaper/paper/verdicts.py", "sinkpaper/paper/rules.py", "sinkpaper/paper/claims.py",
                  "sinkpaper/results/reading.py")
FOLLOWED = ("rule", "measure")


@dataclass(frozen=True)
class Change:
    name: str       # "<claim id>: rule", "<claim id>: measure", "class <Name>" or a threshold's name
    kind: str       # "set" (first seen), "changed" or "removed"
    commit: str     # short hash
    time: str       # the author date, "YYYY-MM-DD HH:MM UTC" (the store's computed_at format)
    subject: str    # the commit's first line

    @property
    def date(self) -> str:
        return self.time[:10]


def _strip_docstrings(node: ast.AST) -> ast.AST:
    for n in ast.walk(node):
        body = getattr(n, "body", None)
        if isinstance(n, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and body \
                and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            n.body = body[1:] or [ast.Pass()]
    return node


def followed(source: str, functions: frozenset[str] = frozenset()) -> dict[str, str]:
    """{name: normalised source} of what one registry module defines: each claim's rule and measure, each class
    and each function named in ``functions`` (docstrings left out), each upper-case numeric module-level
    constant (a threshold). A module that does not parse gives {}."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return {}
    out: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Claim" and node.args:
            name = _claim_id(node.args[0])
            for kw in node.keywords:
                if name and kw.arg in FOLLOWED:
                    out[f"{name}: {kw.arg}"] = ast.unparse(kw.value)
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name != "Claim":
            out[f"class {node.name}"] = ast.unparse(_strip_docstrings(node))
        elif isinstance(node, ast.FunctionDef) and node.name in functions:
            out[f"function {node.name}"] = ast.unparse(_strip_docstrings(node))
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, ast.Name) and t.id.isupper() and isinstance(node.value, ast.Constant) \
                        and isinstance(node.value.value, (int, float)) and not isinstance(node.value.value, bool):
                    out[t.id] = ast.unparse(node.value)
    return out


JUDGING_FILES = ("sinkpaper/paper/verdicts.py", "sinkpaper/paper/rules.py")


def _judging_functions(root: Path) -> frozenset[str]:
    """The functions that judge today (those of verdicts.py and rules.py), followed wherever they lived."""
    names = set()
    for rel in JUDGING_FILES:
        path = root / rel
        if path.exists():
            names |= {n.name for n in ast.parse(path.read_text(encoding="utf-8")).body
                      if isinstance(n, ast.FunctionDef)}
    return frozenset(names)


def _claim_id(node: ast.AST) -> str | None:
    """A Claim's id: its literal, or the template of an f-string id ("bias_{short}") for claims made in a loop."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "{" + ast.unparse(v.value) + "}"
                       for v in node.values)
    return None


def _changes_of(changes: list[Change], cid: str, what: str) -> list[Change]:
    """The changes of one claim's rule or measure, its id matched literally or by an id template."""
    def matches(name: str) -> bool:
        key, _, kind = name.rpartition(": ")
        if kind != what:
            return False
        if "{" not in key:
            return key == cid
        return re.fullmatch(re.sub(r"\\\{[^}]*\\\}", ".+", re.escape(key)), cid) is not None
    exact = [c for c in changes if c.name == f"{cid}: {what}"]
    return exact or [c for c in changes if matches(c.name)]


def _git(root: Path, *args: str, stdin: bytes | None = None, env_tz: str | None = None) -> bytes:
    env = {**os.environ, "TZ": env_tz} if env_tz else None
    return subprocess.run(["git", "-C", str(root), *args], input=stdin, capture_output=True, check=True,
                          timeout=120, env=env).stdout


def _sources(root: Path, commit: str) -> list[str]:
    """The registry files' text at one commit (those that exist there), through one `git cat-file` call."""
    out = _git(root, "cat-file", "--batch", stdin="".join(f"{commit}:{p}\n" for p in REGISTRY_FILES).encode())
    texts, i = [], 0
    while i < len(out):
        end = out.index(b"\n", i)
        header = out[i:end].split()
        i = end + 1
        if header[-1] == b"missing":
            continue
        size = int(header[2])
        texts.append(out[i:i + size].decode("utf-8"))
        i += size + 1           # the blob, then its newline
    return texts


def rule_history(root: str | Path = ROOT) -> list[Change]:
    """Every change, oldest first, of what decides a verdict: each claim's rule and measure, the rule classes,
    the judging functions, the thresholds. RuntimeError when ``root`` has no git history (a source archive); a
    shallow clone gives the history from its oldest commit on (:func:`is_shallow` says so)."""
    root = Path(root)
    try:
        log = _git(root, "log", "--reverse", "--date=format-local:%Y-%m-%d %H:%M UTC", "--format=%h%x09%ad%x09%s",
                   "--", *REGISTRY_FILES, env_tz="UTC").decode("utf-8")
    except (OSError, subprocess.CalledProcessError, subprocess.TimeoutExpired) as e:
        raise RuntimeError(f"no git history at {root}: the rule history is read from git ({e})") from e
    changes: list[Change] = []
    state: dict[str, str] = {}
    judging = _judging_functions(root)
    for line in log.splitlines():
        commit, when, subject = line.split("\t", 2)
        now: dict[str, str] = {}
        for text in _sources(root, commit):
            now.update(followed(text, judging))
        if not now:          # a commit where the registry did not parse (or only a shim remained): skip it
            continue
        for name in sorted(set(state) | set(now)):
            before, after = state.get(name), now.get(name)
            if before == after:
                continue
            kind = "set" if before is None else "removed" if after is None else "changed"
            changes.append(Change(name, kind, commit, when, subject))
        state = now
    return changes


def is_shallow(root: str | Path = ROOT) -> bool:
    """Whether ``root`` is a shallow clone (its history then starts at the clone's oldest commit)."""
    try:
        return _git(Path(root), "rev-parse", "--is-shallow-repository").strip() == b"true"
    except (OSError, subprocess.CalledProcessError, subprocess.TimeoutExpired):
        return False


def unshallow(root: str | Path = ROOT, timeout: float = 180) -> bool:
    """Fetch the rest of a shallow clone's history (a Colab copy is cloned with --depth 1); True when the clone
    is complete afterwards. Needs the network; False (and the clone unchanged) when the fetch fails."""
    if not is_shallow(root):
        return True
    try:
        subprocess.run(["git", "-C", str(root), "fetch", "--unshallow", "--quiet"], capture_output=True,
                       check=True, timeout=timeout)
    except (OSError, subprocess.CalledProcessError, subprocess.TimeoutExpired):
        return False
    return not is_shallow(root)


def by_claim(changes: list[Change], entries: list[dict],
             scales: tuple[str, ...] = ("real text (CPU)", "miniature")) -> list[dict]:
    """One row per claim of ``entries`` (the registry's listing) that has a rule: when its rule was set and last
    changed, when the runs it reads last changed, and, at each of ``scales`` where the claim reads stored runs,
    how many of them were computed before the rule in force now (0 of n: the rule was fixed before every result
    it judges there)."""
    rows = []
    for e in entries:
        if e["rule"] is None:
            continue
        cid = e["id"]
        rule, measure = _changes_of(changes, cid, "rule"), _changes_of(changes, cid, "measure")
        row = {"claim": cid,
               "rule set": f"{rule[0].time} ({rule[0].commit})" if rule else "not in the history",
               "rule last changed": f"{rule[-1].time} ({rule[-1].commit})" if len(rule) > 1 else "never",
               "runs it reads, last changed": f"{measure[-1].time} ({measure[-1].commit})" if measure else ""}
        for scale in scales:
            r = e["results"].get(scale, {})
            col = f"{scale}: runs older than the rule"
            if not r.get("measurement", "").startswith("store"):
                row[col] = "a chapter's, after its rule" if r.get("measurement", "").startswith(
                    "chapter") else "not run"
            elif not r.get("computed_at"):
                row[col] = "no runs stored yet"
            elif rule:
                done = r["computed_at"]
                row[col] = f"{sum(t < rule[-1].time for t in done)} of {len(done)}"
        rows.append(row)
    return rows


def by_commit(changes: list[Change]) -> list[dict]:
    """One row per commit that changed or removed something the verdicts read (first appearances aside), newest
    first: its time, its subject once, and what it changed, grouped by kind ("changed: a: rule, b: measure")."""
    groups: dict[str, list[Change]] = {}
    for c in changes:
        if c.kind != "set":
            groups.setdefault(c.commit, []).append(c)
    rows = []
    for commit, cs in groups.items():
        kinds: dict[str, list[str]] = {}
        for c in cs:
            kinds.setdefault(c.kind, []).append(c.name)
        rows.append({"time": cs[0].time, "commit": commit,
                     "what": "; ".join(f"{k}: {', '.join(names)}" for k, names in kinds.items()),
                     "why (the commit's subject)": cs[0].subject})
    return rows[::-1]
