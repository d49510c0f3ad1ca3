"""Run sweeps (families x points x seeds) into the results store, safely for hours and across sessions, and
summarize each point over its seeds (mean, min, max: the spread the book shows).

Safety:
- a run already in the store is skipped; a killed run resumes from its last checkpoint (its run directory is
  named by the config hash, so a changed config never resumes an old one);
- before training, a worker *claims* the run: `<store>/.claims/<hash>.json`, created with O_EXCL, holding the
  host and pid. Any number of sweep processes can share one store: a run claimed by a live process is left to
  it, a claim whose process is gone (killed sweep) is taken over, and the store file itself is only written
  atomically by the process that holds the claim. So two workers never train the same run, and a killed
  sweep loses at most the steps since the run's last checkpoint.
- checkpoints live in the run directories (not committed): a sweep stopped with its machine (a session's end)
  starts its runs in flight over on the next machine. `start_before` keeps a worker from starting a run after
  a given time, so that it does not begin what the machine's remaining time cannot finish.
"""
from __future__ import annotations

import json
import os
import socket
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Mapping

from .config import load, sweep_points
from .store import read_result
from ..files import atomic_write_text
from .trainer import TrainingDiverged, device_of, latest_checkpoint, train

CLAIMS = ".claims"
DIVERGED = "diverged"   # runs whose loss became non-finite: a result (the paper's "-"), kept and not retried


# ------------------------------------------------------------------------------------------------ claims
def _claim_path(store: str | Path, config_hash: str) -> Path:
    return Path(store) / CLAIMS / f"{config_hash}.json"


def _alive(claim: dict) -> bool:
    """Is the process that wrote this claim still running? (A claim from another host counts as alive.)"""
    if claim.get("host") != socket.gethostname():
        return True
    try:
        os.kill(int(claim["pid"]), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, KeyError, ValueError, TypeError):
        return True
    return True


def read_claim(store: str | Path, config_hash: str) -> dict | None:
    path = _claim_path(store, config_hash)
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, json.JSONDecodeError):
        return {"host": "?", "pid": -1}   # being written right now: treat as held


def claim(store: str | Path, config_hash: str, name: str, seed: int) -> bool:
    """Take the run for this process; False when a live process holds it."""
    path = _claim_path(store, config_hash)
    path.parent.mkdir(parents=True, exist_ok=True)
    body = json.dumps({"host": socket.gethostname(), "pid": os.getpid(), "name": name, "seed": seed,
                       "since": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())})
    for _ in range(2):
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            held = read_claim(store, config_hash)
            if held is None:
                continue                      # released between our two calls: try again
            if _alive(held):
                return False
            # a dead process's claim: move it aside (only one taker's rename succeeds), then retry
            try:
                os.replace(path, path.with_suffix(f".stale-{os.getpid()}"))
                os.unlink(path.with_suffix(f".stale-{os.getpid()}"))
            except FileNotFoundError:
                pass
            continue
        with os.fdopen(fd, "w") as f:
            f.write(body)
        return True
    return False


def diverged_path(store: str | Path, config_hash: str) -> Path:
    return Path(store) / DIVERGED / f"{config_hash}.json"


def read_diverged(store: str | Path, cfg) -> dict | None:
    path = diverged_path(store, cfg.hash())
    return json.loads(path.read_text()) if path.exists() else None


def divergence_error(record: Mapping) -> str:
    """A divergence record's error in short: up to its first ";" (what went wrong and at which step)."""
    return str(record.get("error", "diverged")).split(";")[0]


def release(store: str | Path, config_hash: str) -> None:
    held = read_claim(store, config_hash)
    if held is not None and held.get("pid") == os.getpid() and held.get("host") == socket.gethostname():
        _claim_path(store, config_hash).unlink(missing_ok=True)


# ------------------------------------------------------------------------------------------------ plans
@dataclass
class PlannedRun:
    family: str
    point: str | None
    seed: int
    cfg: object

    @property
    def label(self) -> str:
        return f"{self.cfg.name} seed {self.seed}"


def sweep_configs(config: str | Path, profile: str, points: list[str] | None, seeds: list[int],
                  overrides: dict | None = None) -> list[tuple[str, int, object]]:
    """[(point, seed, TrainConfig)] for every point x seed, all validated before anything runs."""
    available = sweep_points(config)
    points = points or available or [None]
    unknown = [p for p in points if p is not None and p not in available]
    if unknown:
        raise ValueError(f"unknown sweep point(s) {', '.join(unknown)}; valid: {', '.join(available) or '(none)'}")
    return [(p, s, load(config, profile, {**(overrides or {}), "run.seed": s}, p)) for p in points for s in seeds]


def plan(configs: list[str | Path], profile: str, points: list[str] | None, seeds: list[int],
         overrides: dict | None = None) -> list[PlannedRun]:
    """Every run of every family, in order (families first, then points, then seeds), validated up front.
    `points` names points across families; each must exist in at least one of them."""
    runs = []
    for config in configs:
        available = sweep_points(config)
        mine = [p for p in points if p in available] if points else None
        if points and not mine:
            continue
        runs += [PlannedRun(Path(config).stem, p, s, cfg) for p, s, cfg in
                 sweep_configs(config, profile, mine, seeds, overrides)]
    if points:
        known = {r.point for r in runs}
        unknown = [p for p in points if p not in known]
        if unknown:
            valid = sorted({p for c in configs for p in sweep_points(c)})
            raise ValueError(f"unknown sweep point(s) {', '.join(unknown)}; valid: {', '.join(valid)}")
    return runs


def run_dir(out: str | Path, run: PlannedRun) -> Path:
    """OUT/<family>/<point>/seed-N-<hash>: a changed config never resumes an old run's checkpoints."""
    return Path(out) / run.family / (run.point or "base") / f"seed-{run.seed}-{run.cfg.hash()}"


def parse_start_before(text: str) -> datetime:
    """An ISO 8601 time ('2026-11-25T20:05', a date and time; UTC when no offset is given) as an aware
    datetime; a clear ValueError otherwise."""
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"--start-before {text!r} is not an ISO 8601 date and time "
                         "(e.g. 2026-11-25T20:05 or 2026-11-25T20:05+00:00; UTC when no offset)") from None
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


def run_sweep(config, profile: str, out: str | Path, store: str | Path, *, points=None, seeds=(0,),
              overrides=None, progress: bool = True, log=None, keep_going: bool = False,
              start_before: datetime | None = None, retrain_bf16_softmax: bool = False) -> list[dict]:
    """Train every run the store does not hold and no live process has claimed; returns the stored payloads
    of the runs that are done (runs left to another worker are not waited for). `config` is one path or a
    list of family paths. `keep_going`: a run that raises is logged, its claim released and the sweep goes on
    (an unattended sweep of hundreds of runs should not stop at the first broken point); by default it raises.
    `start_before` (an aware datetime): no run starts training at or after it; stored runs are still read.
    `retrain_bf16_softmax`: a stored run (or divergence record) that trained the reference softmax in bf16
    (:func:`sinkpaper.train.recheck.trained_bf16_softmax`) counts as not stored: it is trained again and replaced."""
    from .recheck import trained_bf16_softmax

    def held(cfg):
        found = read_result(store, cfg)
        return None if found is not None and retrain_bf16_softmax and trained_bf16_softmax(found) else found

    def diverged(cfg):
        record = read_diverged(store, cfg)
        return record is not None and not (retrain_bf16_softmax and trained_bf16_softmax(record))
    configs = [config] if isinstance(config, (str, Path)) else list(config)
    runs = plan(configs, profile, points, list(seeds), overrides)
    for run in runs[:1]:
        device_of(run.cfg)      # a GPU profile on a machine without CUDA: one line, before any run starts
    from .. import provenance
    provenance.code_version()   # fixed now, at launch: a long sweep runs the code it started with
    bar = None
    if progress:
        from ..progress import bar as progress_bar
        bar = progress_bar(total=len(runs), desc=f"sweep {profile}", unit="run")
    payloads = []
    for run in runs:
        stored = held(run.cfg)
        if stored is None and diverged(run.cfg):
            if bar is not None:
                bar.update(1)
            continue
        late = stored is None and start_before is not None and datetime.now(timezone.utc) >= start_before
        if late:
            if log:
                log(f"not starting {run.label}: it is past {start_before.isoformat(timespec='minutes')}")
        elif stored is None and claim(store, run.cfg.hash(), run.cfg.name, run.seed):
            try:
                stored = held(run.cfg)   # another worker may have finished it meanwhile
                if stored is None:
                    d = run_dir(out, run)
                    from .inflight import restore_run   # a checkpoint an earlier sitting kept, beside the store
                    restore_run(d, Path(store).parent / "inflight", say=log or print)
                    if log:
                        log(f"training {run.label} -> {d}")
                    try:
                        train(run.cfg, d, resume=latest_checkpoint(d) is not None, store=store, progress=False)
                    except TrainingDiverged as e:
                        from .. import provenance
                        atomic_write_text(diverged_path(store, run.cfg.hash()), json.dumps(
                            {"hash": run.cfg.hash(), "name": run.cfg.name, "profile": run.cfg.profile,
                             "config": run.cfg.to_dict(), "error": str(e),
                             "provenance": provenance.stamp(None, source_of_numbers="computed now")}, indent=1))
                        if log:
                            log(f"diverged {run.label}: {e}")
                        if retrain_bf16_softmax:    # the run it retrained is no longer a result either
                            from .store import result_path
                            result_path(store, run.cfg.hash()).unlink(missing_ok=True)
                    stored = held(run.cfg)
                    if stored is not None:     # a divergence record of an earlier attempt no longer holds
                        diverged_path(store, run.cfg.hash()).unlink(missing_ok=True)
                    if log and stored:
                        r = stored["result"]
                        log(f"stored {run.label}: Sink_1 {r['sink_k']['1']:.1f}%, val loss {r['val_loss']:.3f}, "
                            f"{r['provenance'].get('wall_seconds', 0):.0f} s")
            except Exception as e:  # noqa: BLE001 -- only with keep_going; the run is left unstored
                if not keep_going:
                    raise
                if log:
                    log(f"failed {run.label}: {type(e).__name__}: {e}")
            finally:
                release(store, run.cfg.hash())
        elif stored is None and log:
            log(f"skipping {run.label}: claimed by another worker")
        if stored is not None:
            payloads.append(stored)
        if bar is not None:
            bar.set_postfix(point=run.point, seed=run.seed)
            bar.update(1)
    if bar is not None:
        bar.close()
    return payloads


def run_state(store: str | Path, cfg) -> str:
    """Where one run stands: "done" (stored), "diverged" (recorded as such: a result, not retried), "running"
    (claimed by a live process) or "left"."""
    if read_result(store, cfg) is not None:
        return "done"
    if read_diverged(store, cfg) is not None:
        return "diverged"
    held = read_claim(store, cfg.hash())
    return "running" if held is not None and _alive(held) else "left"


STATES = ("done", "running", "diverged", "left")


def status(configs: list[str | Path], profile: str, store: str | Path, seeds=(0, 1, 2)) -> list[dict]:
    """Per family: how many runs are done (in the store), running (claimed by a live process) and left. The first
    row also carries `unique`: the same counts over distinct runs (one config shared by two families counts once)."""
    rows, seen = [], {}
    for config in configs:
        runs = plan([config], profile, None, list(seeds))
        states = [run_state(store, run.cfg) for run in runs]
        seen.update((run.cfg.hash(), state) for run, state in zip(runs, states))
        rows.append({"family": Path(config).stem, "profile": profile, "runs": len(runs),
                     **{k: states.count(k) for k in STATES}})
    if rows:
        states = list(seen.values())
        rows[0]["unique"] = {"runs": len(states), **{k: states.count(k) for k in STATES}}
    return rows


def pending(configs: list[str | Path], profile: str, store: str | Path, entries: list[str], seeds=(0, 1, 2),
            overrides: dict | None = None) -> list[str]:
    """The entries of a run queue (``POINT`` for ``seeds``, or ``POINT@3,4`` for those seeds) that still have a
    run to train: neither stored nor recorded as diverged. A worker that walks only these starts training at
    once, instead of starting a process per stored point to find it done (minutes of a lease). Every entry is
    validated first: an unknown point raises, listing the valid ones."""
    parsed = []
    for entry in entries:
        point, _, listed = entry.partition("@")
        try:
            wanted = [int(x) for x in listed.split(",")] if listed else list(seeds)
        except ValueError:
            raise ValueError(f"queue entry {entry!r}: seeds after '@' are integers separated by commas") from None
        parsed.append((entry, plan(configs, profile, [point], wanted, overrides)))
    return [entry for entry, runs in parsed if any(run_state(store, r.cfg) in ("running", "left") for r in runs)]


def format_status(rows: list[dict]) -> str:
    keys = ("runs", *STATES)
    lines = [f"{'family':<16}{'profile':<9}" + "".join(f"{k:>10}" for k in keys)]
    for r in rows:
        lines.append(f"{r['family']:<16}{r['profile']:<9}" + "".join(f"{r[k]:>10}" for k in keys))
    lines.append(f"{'all':<16}{'':<9}" + "".join(f"{sum(r[k] for r in rows):>10}" for k in keys))
    if rows and "unique" in rows[0]:
        u = rows[0]["unique"]
        lines.append(f"{'distinct runs':<25}" + "".join(f"{u[k]:>10}" for k in keys)
                     + "   (a family's base is another family's point: one run)")
    return "\n".join(lines)
