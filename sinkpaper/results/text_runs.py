"""The text profile in the results store, beyond the chapters' tables: how much of the mapped sweep is stored,
the base run with seeds the sweep never used (does the sink emerge within 15 minutes for a new seed?),
and the search for a recipe in which the sink emerges without a fixed first token (configs/text_nobos.yaml)."""
from __future__ import annotations

from pathlib import Path

from ..provenance import on_cpu
from ..train.config import read_yaml
from ..train.store import (DEFAULT_STORE, FOUND, entry_paths, get, read_entry, rerun_difference, result_path,
                           stored_key)
from ..train.sweep import plan
from .curves import first_reaching
from .reading import plateau_of, runs, stored

# Reruns of stored runs kept beside the store (same file layout): a rerun that reproduces its run replaces it
# (`python -m sinkpaper store replace --rerun DIR`); one that does not is kept here, read against the stored run
RERUNS = "results/reruns"

# The families mapped onto the text profile, in the sweep's order (scripts/sweep_text.sh lists the same; a test
# holds the two equal). The miniature, calibration and text_nobos families are not among them.
TEXT_FAMILIES = tuple(f"configs/{f}.yaml" for f in
                      ("optimization", "loss", "data", "biases", "attention", "packing", "architecture", "after_paper",
                       "onsets", "layers_4", "budget"))

EMERGED = 20.0   # Sink_1 % that counts as "emerged" for the new-seed check (fixed before its runs)


def new_seed_lines(store: str | Path = DEFAULT_STORE, config: str | Path = "configs/optimization.yaml",
                   point: str = "default", sweep_seeds=(0, 1, 2), seeds=range(3, 100)) -> list[str]:
    """The stored base runs whose seed the sweep does not use: when Sink_1 first reaches EMERGED %, in steps,
    tokens and the trainer's wall seconds (from the start of training), and where it ends."""
    recs = runs(config, "text", [point], [s for s in seeds if s not in sweep_seeds], store)
    if not recs:
        return [f"No base run with a new seed is stored: run `python -m sinkpaper train --config {config} "
                f"--profile text --set run.seed=7 --set run.threads=2 --out runs/new-seed`."]
    lines = []
    for r in recs:
        p, hit = r.provenance, first_reaching(r.curve, 1, EMERGED)
        peak = max(r.curve, key=lambda c: c["sink_1"])
        when = (f"Sink_1 first reached {EMERGED:.0f} % at step {hit['step']} ({hit['tokens']:,} tokens): "
                f"{hit['sink_1']:.1f} %, {hit['wall_seconds'] / 60:.1f} min into training"
                if hit else f"Sink_1 never reached {EMERGED:.0f} %")
        lines.append(f"Seed {r.seed} ({p.get('hardware')}, {p.get('dtype')}, compiled {p.get('compiled')}, code "
                     f"{p.get('code_version')}, computed {p.get('computed_at')}, loaded from the store): {when}; "
                     f"highest {peak['sink_1']:.1f} % at step {peak['step']}; final Sink_1 {r.sink[1]:.1f} %, "
                     f"alpha_1 {r.alpha_1:.3f}, held-out loss {r.val_loss:.3f}, run {p.get('wall_seconds', 0) / 60:.1f} "
                     f"min in all.")
    return lines


def _ran(payload: dict) -> str:
    """Where and how a stored run trained: hardware, code, the trainer's route and its wall time."""
    p = payload["result"]["provenance"]
    route = p.get("route")
    return (f"{p.get('hardware')}, code {p.get('code_version')}, route "
            + (", ".join(f"{k} {v}" for k, v in route.items()) if route else "not recorded")
            + f", {p.get('wall_seconds', 0) / 60:.1f} min")


def rerun_lines(store: str | Path = DEFAULT_STORE, reruns: str | Path = RERUNS, seeds=(0, 1, 2)) -> list[str]:
    """Each kept rerun against the stored run of its config: where each ran, the first value that differs (the
    store's reproduction check) and Sink_1 on both plateaus beside the stored seeds of the same point."""
    paths = entry_paths(reruns)
    if not paths:
        return ["No rerun is kept beside the store."]
    lines = []
    for path in paths:
        rerun = read_entry(path)
        target = result_path(store, stored_key(rerun))
        seed = rerun["config"]["run"]["seed"]
        if not target.exists():
            lines.append(f"{rerun['name']} seed {seed} (`{Path(path).name}`): its run is not in the store.")
            continue
        old = read_entry(target)
        why = rerun_difference(old, rerun)
        name = old["name"]       # the name it is stored under (a family's base run is stored as its point)
        family, _, point = name.partition("/")
        others = [run.payload for run in stored(f"configs/{family}.yaml", rerun["profile"], [point], seeds, store)
                  if run.found] if point else []
        spread = (f"; the point's stored seeds {', '.join(str(o['config']['run']['seed']) for o in others)}: "
                  + " / ".join(f"{plateau_of(o, 'Sink_1')['mean']:.1f}" for o in others) + " %") if others else ""
        lines.append(f"{name} seed {seed}, rerun ({_ran(rerun)}) against the stored run ({_ran(old)}): "
                     + (f"first difference at {why}. Sink_1 on its plateau: {plateau_of(old, 'Sink_1')['mean']:.1f} % "
                        f"stored, {plateau_of(rerun, 'Sink_1')['mean']:.1f} % in the rerun{spread}."
                        if why else "reproduces it bit for bit."))
    return lines


def where(provenance: dict) -> str:
    """Where a run trained, short: the GPU's name, or "CPU, N thread(s)"."""
    hw, n = str(provenance.get("hardware", "?")), provenance.get("threads")
    if not on_cpu(provenance):
        return hw
    return f"CPU, {n} thread{'s' if n != 1 else ''}" if n is not None else hw


def _knobs(spec: dict) -> str:
    """What a search point changes against the text profile's base (its entry in the family's YAML)."""
    return ", ".join(f"{k.split('.', 1)[1]} {v}" for k, v in spec.items() if k != "data.fixed_token")


def nobos_search_lines(store: str | Path = DEFAULT_STORE, config: str | Path = "configs/text_nobos.yaml",
                       seed: int = 0) -> list[str]:
    """One row per point of the no-fixed-token search: what it changes, tokens, the highest Sink_1 and alpha_1
    over training and where, the final values and the wall time; points not stored yet are named."""
    lines = ["| point | changes (no fixed first token) | tokens | highest Sink_1 % (step) | highest mean alpha_1 "
             "| final Sink_1 % | held-out loss | wall, where |", "|---|---|---|---|---|---|---|---|"]
    specs = read_yaml(config)["sweep"]
    missing, best = [], None
    for run in stored(config, "text", None, [seed], store):
        point = run.point
        if not run.found:
            missing.append(point)
            continue
        r = run.record()
        peak = max(r.curve, key=lambda c: c["sink_1"])
        a_peak = max(c["alpha_1"] for c in r.curve)
        p = r.provenance
        lines.append(f"| {point} | {_knobs(specs[point])} | {p.get('tokens_seen', 0):,} | {peak['sink_1']:.1f} "
                     f"({peak['step']}) | {a_peak:.3f} | {r.sink[1]:.1f} | {r.val_loss:.3f} | "
                     f"{p.get('wall_seconds', 0) / 60:.0f} min, {where(p)} |")
        if best is None or peak["sink_1"] > best[1]:
            best = (point, peak["sink_1"])
    if len(lines) == 2:
        lines = ["No run of the search is stored yet."]
    lines.append("")
    lines.append(f"Seed {seed}, text profile, each point within a budget of about 60 minutes of one CPU thread (a run "
                 "trained on a lent GPU names it in the last column and took minutes there). "
                 + (f"Best so far: {best[0]}, highest Sink_1 {best[1]:.1f} %. " if best else "")
                 + ("Not stored yet: " + ", ".join(missing) + "." if missing else "Every point is stored."))
    return lines


def sweep_progress_lines(store: str | Path = DEFAULT_STORE, families=TEXT_FAMILIES, seeds=(0, 1, 2)) -> list[str]:
    """How much of the text-profile mapping is stored: per family, its distinct runs (point x seed) stored and
    not, the points not fully stored with their missing seeds, and the total over distinct runs (a family's
    base is another family's point: one run). Runs in flight count as not stored."""
    lines = ["| family | runs | stored | not stored | points not fully stored (missing seeds) |", "|---|---|---|---|---|"]
    seen: dict[str, bool] = {}
    for config in families:
        missing: dict[str, list[int]] = {}
        hashes = set()
        for run in plan([config], "text", None, list(seeds)):
            h = run.cfg.hash()
            if h in hashes:
                continue
            hashes.add(h)
            seen[h] = seen.get(h) or get(store, run.cfg).status == FOUND
            if not seen[h]:
                missing.setdefault(run.point or "base", []).append(run.seed)
        n_left = sum(map(len, missing.values()))
        lines.append(f"| {Path(config).stem} | {len(hashes)} | {len(hashes) - n_left} | {n_left} | "
                     + (", ".join(f"{p} ({', '.join(map(str, s))})" for p, s in missing.items()) or "none") + " |")
    done = sum(seen.values())
    lines += ["", f"Distinct runs stored: {done} of {len(seen)} ({100 * done / max(len(seen), 1):.0f} %), "
              f"seeds {', '.join(map(str, seeds))} of every point."]
    return lines
