"""The results store the book reads: one gzip-compressed JSON per run, `<store>/<key>.json.gz`, holding the
resolved config, the definition revisions it ran under, the final metrics with provenance and the logged curve.
Writes are atomic and byte-reproducible (no time stamp in the gzip header), and a file is only ever replaced by
a run of the same config (a key collision with another config is refused). Compressed, a run costs ~9 kB of the
repository instead of ~38 kB: the checkout travels whole to a lent GPU machine, under a size limit.
`read_entry` / `write_entry` are the only code that knows the format; plain `<key>.json` entries (written before
the store was compressed) are still read, and `migrate` rewrites them compressed.

The key (`TrainConfig.hash()`) hashes the config's canonical identity (sinkpaper.train.config.identity): fields
at their default are left out, so adding a defaulted field keeps every key, and the revision of every model
value whose definition changed (sinkpaper.models.config.DEFINITION_REVISIONS) is in it. A stored run whose file
key is no longer the key its config has today is *stale*: it ran under an older definition (rerun it) or was
written under an older key scheme (`python -m sinkpaper store migrate` renames it). Stale runs are kept on disk,
listed by `stale_results` / `python -m sinkpaper store stale`, and never returned as current by the readers
(`read_result`, `list_results`). `get` is the one lookup of a config's run: found, stale or missing.

The curve keeps each number at the precision the trainer computes it in, fp32: the shortest decimal that reads
back as the same fp32 value (`at_fp32`), not the ten further digits of noise a float64 repr carries. A run with the
circuits' per-head evaluations costs ~40 kB instead of ~66 kB; every reading is the same number.

A stored run gains what the evaluation records today (a measurement added after it ran) only through a rerun
that reproduces it: `replace_with_reruns` checks that every value the stored run holds is the rerun's, timings
aside, before it replaces the file (on the CPU, one thread, a rerun of the same config is bit for bit the same).
"""
from __future__ import annotations

import functools
import gzip
import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..files import atomic_open
from .config import identity, identity_hash

DEFAULT_STORE = "results/store"
SUFFIX = ".json.gz"
LEGACY_SUFFIX = ".json"


def result_path(store: str | Path, config_hash: str) -> Path:
    return Path(store) / f"{config_hash}{SUFFIX}"


def entry_key(path: str | Path) -> str:
    """The key a store file is named by (its name without the suffix)."""
    name = Path(path).name
    return name[: -len(SUFFIX)] if name.endswith(SUFFIX) else name[: -len(LEGACY_SUFFIX)]


def read_entry(path: str | Path) -> dict:
    """One store file, compressed or (written before the store was compressed) plain JSON."""
    path = Path(path)
    raw = path.read_bytes()
    return json.loads(gzip.decompress(raw) if path.name.endswith(SUFFIX) else raw)


def at_fp32(x):
    """``x`` with every float (in lists and mappings too) as the shortest decimal that reads back as the same fp32
    value; ints, strings, bools and None as they are, and a float outside fp32's range unchanged."""
    if isinstance(x, float):
        return float(str(np.float32(x))) if math.isfinite(x) and abs(x) < 3.0e38 else x
    if isinstance(x, list):
        return [at_fp32(v) for v in x]
    if isinstance(x, dict):
        return {k: at_fp32(v) for k, v in x.items()}
    return x


def write_entry(path: str | Path, payload: dict) -> Path:
    """Write a store file atomically: compact JSON, gzip without a time stamp (the same run gives the same bytes)."""
    data = json.dumps(payload, separators=(",", ":")).encode()
    with atomic_open(path, "wb") as f:
        f.write(gzip.compress(data, compresslevel=9, mtime=0))
    return Path(path)


def entry_paths(store: str | Path) -> list[Path]:
    """Every store file of a folder (compressed and legacy), sorted by name."""
    d = Path(store)
    return sorted([*d.glob(f"*{SUFFIX}"), *d.glob(f"*{LEGACY_SUFFIX}")], key=lambda p: p.name)


def recorded_revisions(payload: dict) -> dict[str, int]:
    """The definition revisions a stored run ran under; {} for runs stored before revisions were recorded (they
    ran under every value's first definition)."""
    return dict(payload.get("revisions") or {})


def stored_identity(payload: dict) -> dict:
    """A stored run's identity under the definitions it ran with."""
    return identity(payload.get("config", {}), recorded_revisions(payload))


def stored_key(payload: dict) -> str:
    """The key a stored run has under the definitions it ran with (what `migrate` names its file)."""
    return identity_hash(stored_identity(payload))


def _stored_key_of(path: Path) -> str:
    """:func:`stored_key` of the run in the file ``path``, read once per version of the file (the registry reads
    the same control runs for many claims; a file is only ever replaced whole, which changes its mtime)."""
    st = path.stat()
    return _stored_key_cached(str(path), st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=4096)
def _stored_key_cached(path: str, mtime_ns: int, size: int) -> str:
    return stored_key(read_entry(path))


def current_key(payload: dict) -> str:
    """The key a stored run's config has today (current definitions)."""
    return identity_hash(identity(payload.get("config", {})))


PARTIAL = "partial"


def partial_path(store: str | Path, config_hash: str) -> Path:
    """Where a run in progress keeps its curve so far (``run.partial``): beside the store, never read as a result."""
    return Path(store) / PARTIAL / f"{config_hash}{SUFFIX}"


def write_partial(store: str | Path, cfg, curve: list[dict], progress: dict) -> Path:
    """A run's curve so far, atomically, marked unfinished with where it stands (``progress``: step, tokens,
    elapsed, projected end, the routes it trained under)."""
    path = partial_path(store, cfg.hash())
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_entry(path, {"hash": cfg.hash(), "name": cfg.name, "profile": cfg.profile, "config": cfg.to_dict(),
                              "unfinished": True, "progress": progress, "curve": at_fp32(curve)})


def write_result(store: str | Path, cfg, result: dict, curve: list[dict] | None = None) -> Path:
    path = result_path(store, cfg.hash())
    config = cfg.to_dict()
    legacy = path.with_name(f"{cfg.hash()}{LEGACY_SUFFIX}")
    for existing in (path, legacy):
        if not existing.exists():
            continue
        old = read_entry(existing)
        if stored_identity(old) != cfg.identity():
            raise ValueError(f"{path} holds a different config with the same hash; refusing to overwrite it")
    payload = {"hash": cfg.hash(), "name": cfg.name, "profile": cfg.profile, "config": config,
               "revisions": cfg.revisions(), "result": result, "curve": at_fp32(curve or [])}
    write_entry(path, payload)
    if legacy.exists():
        legacy.unlink()       # the same run, now compressed
    partial_path(store, cfg.hash()).unlink(missing_ok=True)   # stored whole: its partial curve is done
    return path


# what a rerun may change: how long it took, where and when it ran (its provenance, and the machine's cached copy
# of the token file), and the name it was trained under (the key is the run; a family's base is another's point)
NOT_COMPARED = frozenset({"tokens_per_s", "wall_seconds", "eval_seconds", "eval_cpu_seconds", "provenance", "mapped",
                          "name"})


def _first_difference(old, new, where: str) -> str | None:
    """Where ``new`` does not hold ``old``'s value (a mapping may add keys; :data:`NOT_COMPARED` is not compared)."""
    if isinstance(old, dict):
        if not isinstance(new, dict):
            return f"{where}: {type(new).__name__} instead of a mapping"
        for k, v in old.items():
            if k in NOT_COMPARED:
                continue
            if k not in new:
                return f"{where}.{k}: missing in the rerun"
            found = _first_difference(v, new[k], f"{where}.{k}")
            if found:
                return found
        return None
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return next((d for i, (a, b) in enumerate(zip(old, new)) if (d := _first_difference(a, b, f"{where}[{i}]"))),
                    None)
    if isinstance(old, float) and isinstance(new, float):   # a curve is stored at fp32 precision (at_fp32)
        return None if at_fp32(old) == at_fp32(new) else f"{where}: {old!r} stored, {new!r} in the rerun"
    return None if old == new else f"{where}: {old!r} stored, {new!r} in the rerun"


def rerun_difference(stored: dict, rerun: dict) -> str | None:
    """None when ``rerun`` reproduces ``stored``: the same key, config and definitions, and every value the stored
    run recorded (result and every logged step of its curve) the rerun's, timings aside; else the first
    difference, in words."""
    if stored_key(stored) != stored_key(rerun):
        return f"a different run (key {stored_key(rerun)}, stored {stored_key(stored)})"
    steps = {r.get("step"): r for r in rerun.get("curve", [])}
    for r in stored.get("curve", []):
        if r.get("step") not in steps:
            return f"curve: step {r.get('step')} missing in the rerun"
        found = _first_difference(r, steps[r["step"]], f"curve[step {r['step']}]")
        if found:
            return found
    return _first_difference(stored.get("result", {}), rerun.get("result", {}), "result")


def replace_with_reruns(store: str | Path, reruns: list[str | Path]) -> list[Path]:
    """Replace each stored run by its rerun (a store file written by a rerun of the same config), so it keeps
    every value and the name it was stored under, and gains what the evaluation records today. Every rerun is
    checked before any file is replaced: one that does not reproduce its stored run, or whose run is not stored,
    raises naming the first difference, and nothing is replaced."""
    checked = []
    for path in reruns:
        rerun = read_entry(path)
        target = result_path(store, stored_key(rerun))
        if not target.exists():
            raise ValueError(f"{path}: no stored run {target.name} to replace (a new run is stored by training it); "
                             "nothing replaced")
        stored = read_entry(target)
        why = rerun_difference(stored, rerun)
        if why:
            raise ValueError(f"{path} does not reproduce {target}: {why}; nothing replaced")
        # the run keeps the name it was stored under
        rerun["name"] = stored.get("name", rerun.get("name"))
        if "name" in stored.get("result", {}):
            rerun["result"]["name"] = stored["result"]["name"]
        checked.append((target, rerun))
    return [write_entry(target, rerun) for target, rerun in checked]


def read_result(store: str | Path, cfg, ident: dict | None = None) -> dict | None:
    """The stored run of exactly this config under today's definitions, or None. ``ident``: the config's
    ``identity()`` where the caller has it (building it is most of a lookup's time when the registry reads
    hundreds of runs)."""
    ident = cfg.identity() if ident is None else ident
    key = identity_hash(ident)
    path = result_path(store, key)
    if not path.exists():
        path = path.with_name(f"{key}{LEGACY_SUFFIX}")
        if not path.exists():
            return None
    # threads, checkpoint cadence, the name and the like do not change a result: a run stored with other
    # bookkeeping counts. Stored under another point's name (a family's base is another family's point), it is
    # returned under the name asked for, with the name it was stored as.
    if _stored_key_of(path) != key:
        return None
    payload = read_entry(path)
    if payload.get("name") != cfg.name:
        payload = {**payload, "name": cfg.name, "stored_as": payload.get("name")}
    return payload


FOUND, STALE, MISSING = "found", "stale", "missing"


@dataclass(frozen=True)
class Lookup:
    """What the store holds for one config: ``status`` FOUND (``payload`` is the run), STALE (only runs that no
    longer count: ``payload`` is one of them, ``reason`` says why) or MISSING."""
    status: str
    payload: dict | None = None
    reason: str = ""
    path: Path | None = None     # the file a FOUND run was read from


def get(store: str | Path, cfg) -> Lookup:
    """THE one lookup of a config's stored run, for every reader (the registry, the results layer, the chapters).

    FOUND: a run of exactly this config under today's definitions (`read_result`). STALE: none, but the store
    holds a run that no longer counts for it: one that ran under an older definition of a model value (its
    config's key today is this config's key), or one stored under the same name, profile and seed with other
    result-changing settings (the point was changed after it ran). Stale runs are shown, never counted. MISSING:
    nothing."""
    want = cfg.identity()
    payload = read_result(store, cfg, want)
    if payload is not None:
        key = identity_hash(want)
        path = result_path(store, key)
        return Lookup(FOUND, payload, path=path if path.exists() else Path(store) / f"{key}{LEGACY_SUFFIX}")
    index = _index(store)
    for path in index["older_definition"].get(identity_hash(want), ()):
        old = read_entry(path)
        return Lookup(STALE, old, _stale_reason(Path(path), old) or "ran under an older definition; stale, rerun")
    for path, ident in index["by_run"].get((cfg.name, cfg.profile, cfg.run.seed), ()):
        if ident != want:
            return Lookup(STALE, read_entry(path), "stored with other settings under this point's name (the point "
                                                   "changed after it ran); stale, rerun")
    return Lookup(MISSING)


def _index(store: str | Path) -> dict:
    """The store's runs by (name, profile, seed) and its stale files by the key their config has today; read
    once per version of the folder (its modification time changes when a file is added, renamed or removed: the
    store writes a run by renaming a finished file into place, never in place)."""
    from ..models.config import DEFINITION_REVISIONS
    d = Path(store)
    if not d.is_dir():
        return {"by_run": {}, "older_definition": {}}
    return _index_of(str(d.resolve()), d.stat().st_mtime_ns, json.dumps(DEFINITION_REVISIONS, sort_keys=True))


@functools.lru_cache(maxsize=4)
def _index_of(store: str, mtime_ns: int, definitions: str) -> dict:
    by_run: dict[tuple, list] = {}
    older: dict[str, list] = {}
    for path, payload in entries(store):
        run = (payload.get("name"), payload.get("profile"), payload.get("config", {}).get("run", {}).get("seed"))
        by_run.setdefault(run, []).append((str(path), stored_identity(payload)))
        now = current_key(payload)
        if entry_key(path) != now:
            older.setdefault(now, []).append(str(path))
    return {"by_run": by_run, "older_definition": older}


def entries(store: str | Path):
    """(path, payload) of every store file, stale ones included (see `list_results` for the current ones)."""
    for p in entry_paths(store):
        yield p, read_entry(p)


def _stale_reason(path: Path, payload: dict) -> str | None:
    now = current_key(payload)
    if entry_key(path) == now:
        return None
    from ..models.config import definition_revisions
    ran = recorded_revisions(payload)
    today = definition_revisions(payload.get("config", {}).get("model") or {})
    if ran != today:
        fields = sorted(set(ran) | set(today))
        model = payload.get("config", {}).get("model") or {}
        said = ", ".join(f"model.{f}={model.get(f)!r} revision {ran.get(f, 1)} (now {today.get(f, 1)})"
                         for f in fields if ran.get(f, 1) != today.get(f, 1))
        return f"ran under an older definition: {said}; stale, rerun"
    return "named by an older key scheme; run `python -m sinkpaper store migrate`"


def stale_results(store: str | Path = DEFAULT_STORE) -> list[dict]:
    """Stored runs whose file key is not the key their config has today: ``{"path", "name", "profile", "key",
    "current_key", "reason"}`` each. They stay on disk and are never returned as current."""
    out = []
    for p, payload in entries(store):
        reason = _stale_reason(p, payload)
        if reason:
            out.append({"path": str(p), "name": payload.get("name", ""), "profile": payload.get("profile"),
                        "key": entry_key(p), "current_key": current_key(payload), "reason": reason})
    return out


def list_results(store: str | Path, name_prefix: str = "") -> list[dict]:
    """Every current stored run whose name starts with name_prefix (e.g. an experiment family); stale runs (see
    `stale_results`) are left out."""
    out = []
    for p, payload in entries(store):
        if payload.get("name", "").startswith(name_prefix) and _stale_reason(p, payload) is None:
            out.append(payload)
    return out


def migrate(store: str | Path = DEFAULT_STORE) -> list[tuple[str, str]]:
    """Rename every stored run to its key under the definitions it ran with (and record those revisions in it),
    compressed (a plain `.json` entry is rewritten as `<key>.json.gz`), its curve at fp32 precision (`at_fp32`).

    Runs stored before revisions were recorded ran under first definitions. No run is deleted: a run whose
    definition changed since gets a key today's configs do not produce, so it stays on disk, stale (only an
    identical second copy of a run, as an interrupted migration leaves, is removed). Running it twice changes
    nothing the second time. Returns the (old name, new name) pairs of the files renamed. Refuses (ValueError,
    nothing changed) when two files hold the same config with different results.
    """
    plan = []
    targets: dict[str, tuple[str, dict]] = {}
    duplicates = []
    for p, payload in entries(store):
        key = stored_key(payload)
        if key in targets:
            other_name, other = targets[key]
            if _content(payload) != _content(other):
                raise ValueError(f"{p.name} and {other_name} hold the same config ({key}) with different results; "
                                 "keep one of them, then migrate")
            here = p.name == f"{key}{SUFFIX}"
            duplicates.append(p if not here else Path(store) / other_name)  # e.g. an interrupted migration
            if here:
                plan = [e for e in plan if e[0].name != other_name]
                targets[key] = (p.name, payload)
                plan.append((p, payload, key))
            continue
        targets[key] = (p.name, payload)
        plan.append((p, payload, key))
    names = {p.name for p, _, _ in plan} | {d.name for d in duplicates}
    for p, payload, key in plan:
        target = p.with_name(f"{key}{SUFFIX}")
        if target != p and target.exists() and target.name not in names:
            raise ValueError(f"{target} exists and holds another run; cannot rename {p.name} to it")
    renamed = []
    for p, payload, key in plan:
        updated = {**payload, "hash": key, "revisions": recorded_revisions(payload),
                   **({"curve": at_fp32(payload["curve"])} if "curve" in payload else {})}
        order = ["hash", "name", "profile", "config", "revisions"]  # the layout write_result uses
        updated = {k: updated[k] for k in order if k in updated} | {k: v for k, v in updated.items() if k not in order}
        target = p.with_name(f"{key}{SUFFIX}")
        if target == p:
            if updated != payload or list(updated) != list(payload):
                write_entry(p, updated)
            continue
        write_entry(target, updated)  # new file complete before the old one goes
        renamed.append((p.name, target.name))
    written = {f"{key}{SUFFIX}" for _, _, key in plan}
    for old, _ in renamed:
        if old not in written:
            (Path(store) / old).unlink()
    for dup in duplicates:
        if dup.name not in written:
            dup.unlink()
    return renamed


def _content(payload: dict) -> dict:
    return {k: v for k, v in payload.items() if k not in ("hash", "revisions")}
