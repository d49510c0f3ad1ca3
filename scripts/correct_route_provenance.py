"""Correct the attention route that the code at 7f36984 (and its successors before be08bdf) recorded for plain
causal softmax runs trained compiled under CPU bf16 autocast: the trainer named the reference operator, but the
compiled forward decided the route inside the graph, where a graph break made it read as not compiling, and took
SDPA. Both routes are exact (tests/test_exact_routes.py); only the recorded route was wrong. Each corrected run
keeps what was recorded under ``route_recorded`` and says why; a run resumed over several sittings has each
sitting trained by that code corrected in its ``routes`` (``attention_recorded``, ``note``).

    .venv/bin/python scripts/correct_route_provenance.py [results/store]
"""
from __future__ import annotations

import re
import subprocess
import sys

from sinkpaper.models import SinkModel
from sinkpaper.train.config import TrainConfig
from sinkpaper.train.store import entries, write_entry

FIRST_AFFECTED, FIXED = "7f36984", "be08bdf"     # the commits that introduced and fixed the in-graph decision


def _affected(code_version: str) -> bool:
    """True for a code version (``...+g<hash>[.dirty]``) at or after FIRST_AFFECTED and before FIXED."""
    m = re.search(r"\+g([0-9a-f]{7,})", code_version)
    if not m:
        return False

    def ancestor(a, b):
        return subprocess.run(["git", "merge-base", "--is-ancestor", a, b], capture_output=True).returncode == 0
    return ancestor(FIRST_AFFECTED, m[1]) and not ancestor(FIXED, m[1])


WHY = ("recorded as the reference operator by the code it trained with; its compiled forward decided the route "
       "inside the graph, where a graph break made it read as eager, and took SDPA (both exact)")


def corrected(payload: dict) -> bool:
    """Correct a run's recorded route, and each sitting's (``routes``: a run resumed over several sittings names
    the code of each), where the code that trained it decided the route inside the graph."""
    pv = payload.get("result", {}).get("provenance") or {}
    route = pv.get("route") or {}
    if route.get("attention") != "reference" or not pv.get("compiled") or pv.get("dtype") != "bf16":
        return False
    cfg = TrainConfig.from_dict(payload["config"])
    model = SinkModel(cfg.model_config(16))
    # plain causal softmax: the route it takes outside the compiled bf16 case is SDPA
    if model.training_route(cfg.data.context, "cpu", "fp32", compiled=False)["attention"] != "SDPA":
        return False
    changed = False
    for sitting in pv.get("routes") or []:
        if sitting.get("attention") == "reference" and _affected(str(sitting.get("code", ""))):
            sitting.update(attention_recorded="reference", attention="SDPA", note=WHY)
            changed = True
    if _affected(str(pv.get("code_version", ""))):
        pv["route_recorded"] = dict(route)
        pv["route"] = {**route, "attention": "SDPA"}
        pv["route_note"] = WHY
        changed = True
    return changed


def main() -> None:
    store = sys.argv[1] if len(sys.argv) > 1 else "results/store"
    n = 0
    for path, payload in entries(store):
        if corrected(payload):
            write_entry(path, payload)
            n += 1
            print(f"corrected {path}: {payload['name']} seed {payload['config']['run']['seed']}")
    print(f"{n} run(s) corrected")


if __name__ == "__main__":
    main()
