"""Where each stored point that trained the reference softmax in bf16 stands (:mod:`sinkpaper.train.recheck`):
trained again, judged beside the rerun of its first affected seed, or waiting for that rerun."""
from __future__ import annotations

from typing import Callable, Mapping

from ..train.recheck import RECHECK_STORE, SPREAD_POINT, judge, margin, trained_bf16_softmax
from ..train.spikes import spikes_of
from .reading import plateau_of, training_failure


def _sink(payload: Mapping, metric: str = "Sink_1") -> float:
    return plateau_of(payload, metric)["mean"]


def _reading(payload: Mapping, metric: str = "Sink_1") -> dict:
    """What :func:`judge` reads of one run: its plateau of ``metric`` (what the claims read of its point), whether
    it learned, whether it spiked."""
    spiked = bool(spikes_of(payload))
    learned = training_failure(payload) is None or spiked   # a spike is judged on its own
    return {"sink": _sink(payload, metric) if learned else 0.0, "learned": learned and not spiked, "spiked": spiked}


def affected(store: str = "results/store") -> dict[str, dict[int, dict]]:
    """The stored runs (and divergence records) that trained the reference softmax in bf16, by point and seed."""
    import json
    from pathlib import Path

    from ..train.store import entry_paths, read_entry
    out: dict[str, dict[int, dict]] = {}
    for path in [*entry_paths(store), *sorted(Path(store, "diverged").glob("*.json"))]:
        payload = read_entry(path) if path.parent.name != "diverged" else json.loads(path.read_text())
        if trained_bf16_softmax(payload):
            out.setdefault(payload["name"], {})[payload["config"]["run"]["seed"]] = payload
    return out


def since_route_change(runs: Mapping[int, dict]) -> bool:
    """A point whose affected runs trained after plain softmax moved to the reference operator (their provenance
    names the route): all of them are trained again, not judged."""
    return any((p.get("result", {}).get("provenance") or {}).get("route") or "error" in p for p in runs.values())


def settings_changed(payload: Mapping) -> str:
    """The result-changing settings in which a stored run's point differs from its config now ("run.dtype
    fp32"), or "" (the same run, or a point no config defines any more)."""
    from ..resources import find_config
    from ..train.config import BOOKKEEPING, TrainConfig, load
    from ..train.store import stored_identity
    family, _, point = str(payload.get("name", "")).partition("/")
    try:
        now = load(find_config(f"configs/{family}.yaml"), payload["profile"],
                   {"seed": payload["config"]["run"]["seed"]}, sweep_point=point)
    except (ValueError, KeyError, FileNotFoundError):
        return ""
    if now.identity() == stored_identity(payload):
        return ""
    # named from the resolved configs, not the identities: an identity leaves out a field at its default value
    # (fp32), so it could say only that bf16 became None; the run's bookkeeping changes no result
    ran, want = TrainConfig.from_dict(payload["config"]).to_dict(), now.to_dict()
    fields = [f"{section}.{k} {v}" for section, values in want.items() if isinstance(values, dict)
              for k, v in values.items() if isinstance(ran.get(section), dict) and ran[section].get(k) != v
              and not (section == "run" and k in BOOKKEEPING)]
    return ", ".join(fields) or "other settings"


def recheck_table(store: str = "results/store", recheck_store: str = RECHECK_STORE,
                  metric_of: Callable[[str], str] = lambda name: "Sink_1") -> list[dict]:
    """Every affected point: "retrain" (trained since the route change), or the rerun of its first affected seed
    in ``recheck_store`` judged against its stored affected seeds ("stands" / "retrain"), or "rerun seed N"
    while there is none. ``metric_of(point name)``: the Sink metric the claims read of that point (the registry's
    :func:`sinkpaper.paper.lookup.claim_metric`; this layer does not read the claims)."""
    from ..train.config import TrainConfig
    from ..train.store import read_result
    base = [_reading(p)["sink"] for p in base_seeds(store)]
    widen = margin(base)
    rows = []
    for name, runs in sorted(affected(store).items()):
        seeds = sorted(runs)
        changed = settings_changed(runs[seeds[0]])
        if changed:
            rows.append({"point": name, "seeds": seeds, "action": "superseded",
                         "why": f"the point now trains with {changed}: these runs are not read; its runs at "
                                f"those settings take their place"})
            continue
        if since_route_change(runs):
            rows.append({"point": name, "seeds": seeds, "action": "retrain", "why": "trained since the route change"})
            continue
        first = runs[seeds[0]]       # the first affected seed is rerun (seeds trained on a GPU are not affected)
        cfg = TrainConfig.from_dict(first["config"])
        rerun = read_result(recheck_store, cfg)
        if rerun is None:
            rows.append({"point": name, "seeds": seeds, "action": f"rerun seed {seeds[0]}", "why": "no rerun yet"})
            continue
        metric = metric_of(name)
        verdict = judge([_reading(p, metric) for p in runs.values()], _reading(rerun, metric), widen)
        verdict["why"] = f"{metric}: {verdict['why']}"
        rows.append({"point": name, "seeds": seeds, "action": "stands" if verdict["stands"] else "retrain",
                     "why": verdict["why"]})
    return rows


def base_seeds(store: str, seeds=range(10)) -> list[dict]:
    """Every stored seed of the base (:data:`SPREAD_POINT`) at the text profile, found by its config whatever name
    it was stored under (an early seed was stored as plain "optimization"), none that trained the faulty softmax."""
    from ..resources import find_config
    from .reading import stored
    family, point = SPREAD_POINT.split("/")
    return [s.payload for s in stored(find_config(f"configs/{family}.yaml"), "text", [point], list(seeds), store)
            if s.found and not trained_bf16_softmax(s.payload)]
