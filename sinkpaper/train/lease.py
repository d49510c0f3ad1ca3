"""One call of a lent GPU kept full: a queue of runs, every slot refilled the moment a run ends, and no run begun
that the call's remaining time cannot finish.

The queue (``scripts/gpu_queue.txt``) is one list in the order the runs matter: the calibration's open seeds,
then seed 0 of every point after it, then seeds 1 and 2. Each line is ``FAMILY POINT[@SEEDS]`` (a family of
``configs/``; SEEDS comma-separated, default 0,1,2), and every entry is resolved and validated before anything
trains. A calibration entry is skipped once it cannot change the answer: its point has a seed below the bar, or
an earlier point of the grid clears it (the rule :func:`sinkpaper.results.calibration.lease_wants`, which the
command passes in: this module only trains).

Each run is one ``python -m sinkpaper sweep`` process (claims, checkpoints, the store entry written atomically,
divergence recorded), so a run here is stored exactly as a sweep stores it. Whether a run may still start is
read from the run time measured on this device: the runs this call finished at the same shape, else the
stored runs of that shape on the same device, else the side-by-side benchmark's steps per second; with none of
them, only the first wave starts, and its runs give the measurement.

What comes back under ``out``: ``store.tgz`` (every store entry and divergence record written in this call,
rewritten whole at each collection), ``lease.json`` (the queue, the device, each run's start, end, wall time
and state, runs per minute), ``logs.tgz`` (each run's own log). ``import_lease`` brings them into a store.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..files import atomic_open, atomic_path, atomic_write_text
from .store import read_entry
from .sweep import DIVERGED, PlannedRun, plan, run_state

REHEARSAL = "REHEARSAL"      # marks an `out` whose runs have tiny shapes: never imported into results/store
MANIFEST = "lease.json"


# ------------------------------------------------------------------------------------------------ the queue
@dataclass(frozen=True)
class Entry:
    family: str
    point: str
    seeds: tuple[int, ...]


def parse_queue(text: str, where: str = "queue") -> list[Entry]:
    """``FAMILY POINT[@SEEDS]`` per line ('#' starts a comment); a malformed line raises naming it."""
    entries = []
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        if len(parts) != 2:
            raise ValueError(f"{where} line {n}: {raw.strip()!r} is not 'FAMILY POINT[@SEEDS]'")
        point, _, listed = parts[1].partition("@")
        try:
            seeds = tuple(int(s) for s in listed.split(",")) if listed else (0, 1, 2)
        except ValueError:
            raise ValueError(f"{where} line {n}: seeds after '@' are integers separated by commas") from None
        entries.append(Entry(parts[0], point, seeds))
    return entries


@dataclass
class QueuedRun:
    run: PlannedRun
    config: str                      # the family's YAML

    @property
    def label(self) -> str:
        return self.run.label

    def shape(self) -> tuple:
        return shape_of(self.run.cfg.to_dict())


def shape_of(config: dict) -> tuple:
    """What sets a run's length on one device, from a config dict (a TrainConfig's to_dict() or a stored
    entry's config): model width and depth, tokens per step, steps, evaluation cadence."""
    m, d, o, e = config["model"], config["data"], config["optim"], config["eval"]
    return (m.get("n_layers"), m.get("d_model"), m.get("d_ff"), d["context"], o["batch_size"], o["steps"], e["every"])


def resolve(entries: list[Entry], profile: str, configs_dir: str | Path = "configs",
            overrides: dict | None = None) -> list[QueuedRun]:
    """Every entry's runs, in queue order, resolved and validated up front (an unknown family or point raises
    listing the valid ones); a run listed twice (one config under two names) is kept once."""
    from ..resources import find_config
    families = sorted(p.stem for p in Path(configs_dir).glob("[a-z]*.yaml"))
    out, seen = [], set()
    for e in entries:
        if e.family not in families:
            raise ValueError(f"unknown family {e.family!r} in the queue; valid: {', '.join(families)}")
        config = str(find_config(Path(configs_dir) / f"{e.family}.yaml"))
        for run in plan([config], profile, [e.point], list(e.seeds), overrides):
            if run.cfg.hash() not in seen:
                seen.add(run.cfg.hash())
                out.append(QueuedRun(run, config))
    return out


def not_done(q: QueuedRun, store: str | Path) -> bool:
    """The plain rule: a run is wanted while it is neither stored nor recorded as diverged. A caller may pass a
    stricter one (the calibration's, in sinkpaper.results.calibration.lease_wants)."""
    return run_state(store, q.run.cfg) not in ("done", "diverged")


# ------------------------------------------------------------------------------------------ the run clock
@dataclass
class RunClock:
    """How long a run of a given shape takes on this device, from measurements only."""
    device: str
    measured: dict = field(default_factory=dict)     # shape -> [seconds] finished in this call
    prior: dict = field(default_factory=dict)        # shape -> seconds, from the store or the benchmark

    def estimate(self, shape: tuple) -> float | None:
        if self.measured.get(shape):
            return max(self.measured[shape])
        return self.prior.get(shape)

    def finished(self, shape: tuple, seconds: float) -> None:
        self.measured.setdefault(shape, []).append(seconds)


def stored_seconds(store: str | Path, device: str, queue: list[QueuedRun]) -> dict:
    """shape -> the longest stored wall time of a run of that shape on ``device`` (its hardware string contains
    the device's name), for the shapes of ``queue``."""
    wanted = {q.shape(): q for q in queue}
    got: dict = {}
    for path in Path(store).glob("*.json.gz"):
        try:
            e = read_entry(path)
        except (OSError, ValueError):
            continue
        prov = e.get("result", {}).get("provenance", {})
        if device not in str(prov.get("hardware", "")) or not prov.get("wall_seconds"):
            continue
        shape = shape_of(e["config"])
        if shape in wanted:
            got[shape] = max(got.get(shape, 0.0), float(prov["wall_seconds"]))
    return got


def bench_seconds(bench: dict, width: int, queue: list[QueuedRun]) -> dict:
    """shape -> seconds for a run at ``width`` side by side, from the side-by-side benchmark's JSON (its
    measured seconds per step at that width, evaluations included, times the run's steps, plus its measured
    start-up), for the queue's shapes that have the benchmark's model shape."""
    row = next((r for r in bench.get("widths", []) if r["width"] == width), None)
    if row is None:
        return {}
    s = bench["shape"]
    out = {}
    for q in queue:
        c = q.run.cfg
        if (c.model.get("n_layers"), c.model.get("d_model"), c.data.context, c.optim.batch_size) == \
                (s["n_layers"], s["d_model"], s["context"], s["batch_size"]):
            out[q.shape()] = row["startup_seconds"] + c.optim.steps * row["seconds_per_step"]
    return out


def best_width(bench: dict) -> int | None:
    """The number of runs side by side with the most steps per second in all, from the benchmark's JSON."""
    rows = [r for r in bench.get("widths", []) if r.get("seconds_per_step")]
    return max(rows, key=lambda r: r["width"] / r["seconds_per_step"])["width"] if rows else None


# ------------------------------------------------------------------------------------------------ the lease
@dataclass
class Slot:
    q: QueuedRun
    proc: subprocess.Popen
    started: float
    log: Path


def _launch(q: QueuedRun, profile: str, lease_dir: Path, store: Path, sets: list[str], python: str) -> Slot:
    log = lease_dir / "logs" / f"{q.run.family}-{q.run.point}-seed{q.run.seed}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    cmd = [python, "-m", "sinkpaper", "sweep", "--profile", profile, "--config", q.config, "--points", q.run.point,
           "--seeds", str(q.run.seed), "--out", str(lease_dir / "runs"), "--store", str(store), "--keep-going"]
    for s in sets:
        cmd += ["--set", s]
    with open(log, "w") as f:
        proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, start_new_session=True)
    return Slot(q, proc, time.time(), log)


def _stop(slot: Slot) -> None:
    try:
        os.killpg(slot.proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        slot.proc.wait(10)
    except subprocess.TimeoutExpired:
        os.killpg(slot.proc.pid, signal.SIGKILL)
        slot.proc.wait()


def collect(out: Path, store: Path, lease_dir: Path, since: float, manifest: dict) -> int:
    """Every store entry and divergence record written since ``since``, and the runs' logs, each as one
    tarball written whole (a call cut at its limit returns the last complete one); the manifest beside them."""
    files = sorted(p for p in [*store.glob("*.json.gz"), *(store / DIVERGED).glob("*.json")]
                   if p.stat().st_mtime >= since)
    for name, members, base in (("store.tgz", files, store), ("logs.tgz", sorted((lease_dir / "logs").glob("*.log")),
                                                               lease_dir)):
        if not members:
            continue
        with atomic_path(out / name) as tmp, tarfile.open(tmp, "w:gz") as t:
            for p in members:
                t.add(p, arcname=str(p.relative_to(base)))
    atomic_write_text(out / MANIFEST, json.dumps(manifest, indent=1))
    return len(files)


def run_lease(queue: list[QueuedRun], *, profile: str, seconds: float, slots: int, out: str | Path,
              lease_dir: str | Path, store: str | Path, clock: RunClock, sets: list[str] = (),
              python: str = sys.executable, poll: float = 1.0, log=print, manifest: dict | None = None,
              wanted=not_done) -> dict:
    """Train ``queue`` in ``slots`` processes side by side until ``seconds`` have passed: a slot is refilled as
    soon as its run ends, with the first run ``wanted(run, store)`` accepts whose measured length fits in the time
    left. At the end the runs still in flight are stopped (lost: a run cannot outlive its call). Returns the
    manifest."""
    out, lease_dir, store = Path(out), Path(lease_dir), Path(store)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    end = t0 + seconds
    manifest = {**(manifest or {}), "profile": profile, "slots": slots, "budget_seconds": seconds,
                "device": clock.device, "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(t0)),
                "queue": [q.label for q in queue], "runs": []}
    running: list[Slot] = []
    first_wave = True            # with no run time measured, only the first fill starts: its runs measure it
    last_collect = 0.0
    pending = list(queue)

    def record(slot: Slot, state: str) -> None:
        took = time.time() - slot.started
        manifest["runs"].append({"run": slot.q.label, "hash": slot.q.run.cfg.hash(), "state": state,
                                 "started_s": round(slot.started - t0, 1), "wall_s": round(took, 1),
                                 "beside": len(running)})
        log(f"{state} {slot.q.label} after {took:.0f} s ({len(running)} other run(s) beside it)")

    rescan = True                # the queue is read again only when a slot has freed (reading it costs store reads)
    while True:
        now = time.time()
        for slot in [s for s in running if s.proc.poll() is not None]:
            rescan = True
            running.remove(slot)
            state = run_state(store, slot.q.run.cfg)
            state = {"done": "stored", "diverged": "diverged"}.get(state, "failed")
            if state != "failed":
                clock.finished(slot.q.shape(), time.time() - slot.started)
            record(slot, state)
        while rescan and len(running) < slots:
            nxt, est = None, None
            for q in pending:
                if any(s.q.run.cfg.hash() == q.run.cfg.hash() for s in running) or not wanted(q, store):
                    continue
                est = clock.estimate(q.shape())
                if (now + est <= end) if est is not None else first_wave:
                    nxt = q
                    break
            if nxt is None:
                rescan = False
                break
            pending.remove(nxt)
            log(f"starting {nxt.label} ({len(running) + 1} of {slots} slots; "
                + (f"measured {est:.0f} s, {end - now:.0f} s left)" if est is not None
                   else "no run time measured on this device yet: first wave)"))
            running.append(_launch(nxt, profile, lease_dir, store, list(sets), python))
        first_wave = False
        if now - last_collect >= 20:
            collect(out, store, lease_dir, t0, manifest)
            last_collect = now
        if not running:
            break
        if now >= end:
            log(f"time is up: stopping {len(running)} run(s) in flight (lost)")
            for slot in running:
                _stop(slot)
                record(slot, "stopped")
            running.clear()
            break
        time.sleep(poll)
    elapsed = time.time() - t0
    done = [r for r in manifest["runs"] if r["state"] in ("stored", "diverged")]
    manifest.update(elapsed_seconds=round(elapsed, 1), finished=len(done),
                    runs_per_minute=round(len(done) / max(elapsed, 1e-9) * 60, 3))
    collect(out, store, lease_dir, t0, manifest)
    log(f"{len(done)} run(s) finished in {elapsed:.0f} s ({manifest['runs_per_minute']:.2f} a minute)")
    return manifest


# ------------------------------------------------------------------------------------------------ import
def import_lease(src: str | Path, dest: str | Path, *, allow_rehearsal: bool = False) -> tuple[int, list[str]]:
    """Bring a lease's store entries and divergence records into ``dest``, never overwriting one. Refused, each
    with one line naming it: a rehearsal's runs (tiny shapes) unless ``allow_rehearsal``; an entry whose code
    version or profile is not the lease manifest's. Returns (how many were brought in, the refusals)."""
    src, dest = Path(src), Path(dest)
    if (src / REHEARSAL).exists() and not allow_rehearsal:
        raise ValueError(f"{src} holds a rehearsal's runs (tiny shapes, same names): they never go into a results "
                         "store; import them elsewhere with DEST")
    if not (src / "store.tgz").exists():
        return 0, []
    manifest = json.loads((src / MANIFEST).read_text()) if (src / MANIFEST).exists() else {}
    version, profile = manifest.get("code_version"), manifest.get("profile")
    import tempfile
    n, refused = 0, []
    with tempfile.TemporaryDirectory() as tmp, tarfile.open(src / "store.tgz") as t:
        t.extractall(tmp, filter="data")
        for f in sorted(Path(tmp).rglob("*.json*")):
            rel = f.relative_to(tmp)
            if f.name.endswith(".json.gz"):
                e = read_entry(f)
                got_v = e.get("result", {}).get("provenance", {}).get("code_version")
                what = f"{e.get('name')} seed {e['config']['run']['seed']}"
            else:
                e = json.loads(f.read_text())
                got_v = e.get("provenance", {}).get("code_version")
                what = f"{e.get('name')} seed {e['config']['run']['seed']} (diverged)"
            if version is not None and got_v != version:
                refused.append(f"{rel}: {what} names code {got_v}, the lease ran {version}")
                continue
            if profile is not None and e.get("profile") != profile:
                refused.append(f"{rel}: {what} is a {e.get('profile')}-profile run, the lease ran {profile}")
                continue
            target = dest / rel
            if target.exists():
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            with atomic_open(target, "wb") as w:
                w.write(f.read_bytes())
            n += 1
    return n, refused


# ------------------------------------------------------------------------------------- the width, measured
def _log_lines(run_dir: Path) -> list[dict]:
    from .trainer import read_log
    try:
        return [r for r in read_log(run_dir / "log.jsonl") if "wall_seconds" in r]
    except (OSError, ValueError):     # a line being written
        return []


def measure_widths(config: str, profile: str, widths: list[int], seconds: float, work: str | Path, *,
                   overrides: list[str] = (), python: str = sys.executable, poll: float = 0.5) -> dict:
    """For each width K, K real training processes of ``config``'s base at ``profile`` side by side (evaluations
    included, nothing stored): the seconds from launch to each process's first log line (start-up: data, model,
    compilation) and, over the next ``seconds``, the seconds per step read from the runs' own logs (median over
    the K processes). The lease takes its width from this: the K with the most steps per second in all."""
    import statistics

    from .. import provenance
    from .config import load, parse_sets
    cfg = load(config, profile, parse_sets(list(overrides)))
    rows = []
    for k in widths:
        procs, dirs = [], []
        t0 = time.time()
        for i in range(k):
            d = Path(work) / f"width-{k}" / f"run-{i}"
            dirs.append(d)
            cmd = [python, "-m", "sinkpaper", "train", "--config", config, "--profile", profile, "--out", str(d),
                   "--no-store", "--set", "optim.steps=1000000", "--set", "run.checkpoint_every=1000000"]
            for s in overrides:
                cmd += ["--set", s]
            procs.append(subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                          start_new_session=True))
        first: dict[int, float] = {}
        deadline = None
        give_up = t0 + 20 * max(seconds, 1) + 600     # a width whose runs never log is reported as unmeasured
        while any(p.poll() is None for p in procs) and time.time() < give_up:
            for i, d in enumerate(dirs):
                if i not in first and (d / "log.jsonl").exists() and (d / "log.jsonl").stat().st_size:
                    first[i] = time.time() - t0
            if deadline is None and len(first) == k:
                deadline = time.time() + seconds
            # past the deadline, until every run has logged three times (two intervals after the compiled one)
            if deadline is not None and time.time() >= deadline and all(
                    len(_log_lines(d)) >= 3 for d in dirs):
                break
            time.sleep(poll)
        for p in procs:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()
        per_step = []
        for d in dirs:
            recs = _log_lines(d)
            if len(recs) >= 3:       # the first logged interval holds the compilation: read from the second on
                a, b = recs[1], recs[-1]
                per_step.append((b["wall_seconds"] - a["wall_seconds"]) / max(1, b["step"] - a["step"]))
        rows.append({"width": k, "startup_seconds": round(max(first.values()), 1) if first else None,
                     "seconds_per_step": statistics.median(per_step) if per_step else None,
                     "runs_measured": len(per_step)})
    m = cfg.model
    return {"benchmark": "side-by-side", "config": config, "profile": profile,
            "shape": {"n_layers": m.get("n_layers"), "d_model": m.get("d_model"), "context": cfg.data.context,
                      "batch_size": cfg.optim.batch_size, "steps": cfg.optim.steps, "eval_every": cfg.eval.every},
            "seconds_per_width": seconds, "widths": rows, "best_width": best_width({"widths": rows}),
            "provenance": provenance.stamp(cfg.run.device if cfg.run.device else None,
                                           source_of_numbers="computed now", overrides=list(overrides))}


# ------------------------------------------------------------------------------------------------ the command
def _device_name(profile_device: str | None) -> str:
    import torch

    from .. import provenance
    dev = "cuda" if profile_device == "cuda" and torch.cuda.is_available() else "cpu"
    return provenance.hardware(torch.device(dev))


def run_lease_command(a, wanted=not_done) -> int:
    """`python -m sinkpaper lease run|import|width` (see the module's docstring); ``wanted`` decides, each time a
    slot frees, whether a queued run is still worth training."""
    import shutil

    from .. import provenance
    from .config import parse_sets
    if a.action == "import":
        if not a.source:
            raise ValueError("lease import needs the folder a call returned (its store.tgz and lease.json)")
        dest = a.store or "results/store"
        n, refused = import_lease(a.source, dest, allow_rehearsal=a.rehearsal)
        for line in refused:
            print(f"refused: {line}", file=sys.stderr)
        print(f"{n} new run(s) in {dest}")
        return 1 if refused else 0
    if a.action == "width":
        bench = measure_widths("configs/calibration.yaml", a.profile, a.widths, a.width_seconds,
                               Path(a.lease_dir) / "width", overrides=a.set)
        atomic_write_text(a.width_json, json.dumps(bench, indent=1))
        for r in bench["widths"]:
            print(f"{r['width']} side by side: start-up {r['startup_seconds']} s, {r['seconds_per_step']} s a step")
        print(f"best width: {bench['best_width']}")
        return 0
    if not a.out or not a.seconds or a.seconds <= 0:
        raise ValueError("lease run needs --out DIR and --seconds N > 0 (this call's time for runs)")
    overrides = parse_sets(a.set)
    queue = resolve(parse_queue(Path(a.queue).read_text(), a.queue), a.profile, overrides=overrides)
    out, lease_dir = Path(a.out), Path(a.lease_dir)
    store = lease_dir / "store"
    (store / DIVERGED).mkdir(parents=True, exist_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    if a.rehearsal:
        (out / REHEARSAL).touch()
    src = Path(a.store or "results/store")
    for f in [*src.glob("*.json.gz"), *(src / DIVERGED).glob("*.json")]:   # stored runs are skipped, not collected
        target = store / f.relative_to(src)
        if not target.exists():
            shutil.copy2(f, target)
    time.sleep(1.0)    # copied entries keep their times: only files written from now on are this call's
    bench = json.loads(Path(a.width_json).read_text()) if Path(a.width_json).is_file() else {}
    if a.slots == "auto":
        slots = best_width(bench)
        why = f"the best width of {a.width_json}" if slots else None
        if slots is None:
            slots, why = 3, f"no width measured ({a.width_json} missing): 3, the width of the last lease's runs"
    else:
        slots, why = int(a.slots), "--slots"
    device = _device_name(queue[0].run.cfg.run.device if queue else None)
    clock = RunClock(device)
    for src_prior in (bench_seconds(bench, slots, queue), stored_seconds(store, device, queue)):
        for shape, sec in src_prior.items():
            clock.prior[shape] = max(sec, clock.prior.get(shape, 0.0))

    def log(msg: str) -> None:
        line = f"[{time.strftime('%H:%M:%S')}] {msg}"
        print(line, flush=True)
        with open(out / "lease.log", "a") as f:
            f.write(line + "\n")
    log(f"{len(queue)} run(s) queued from {a.queue}; {slots} slots ({why}); {a.seconds:.0f} s; device {device}")
    import torch
    try:
        import triton
        triton_version = triton.__version__
    except ImportError:
        triton_version = None
    manifest = {"code_version": provenance.code_version(), "torch": torch.__version__, "triton": triton_version,
                "queue_file": a.queue, "rehearsal": bool(a.rehearsal), "slots_from": why, "overrides": a.set}
    run_lease(queue, profile=a.profile, seconds=a.seconds, slots=slots, out=out, lease_dir=lease_dir, store=store,
              clock=clock, sets=a.set, log=log, manifest=manifest, wanted=wanted)
    return 0
