"""The column-statistics route against the eager maps at one T, on the offline models (the acceptance of the stats route:
alpha_k within 1e-5 at T <= 1024). Writes results/long_context/routes-agree-T<T>.json.

    .venv/bin/python scripts/routes_agree.py --seq-len 1024
"""
from __future__ import annotations

import argparse

from sinkpaper import long_context
from sinkpaper.lms import load_lm

ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ap.add_argument("--seq-len", type=int, default=1024)
ap.add_argument("--models", nargs="+", default=["smollm2-135m", "gemma3-270m"])
ap.add_argument("--n-samples", type=int, default=1)
args = ap.parse_args()
rows = []
for name in args.models:
    lm = load_lm(name, device="cpu")
    r = long_context.compare_routes(lm, args.seq_len, n_samples=args.n_samples)
    print(f"{name} T={args.seq_len}: max |alpha_k difference| {r['max_abs_alpha_difference']:.2e}; Sink_1 maps "
          f"{r['sink_k_maps'][1]:.2f} %, kernel {r['sink_k_stats'][1]:.2f} %; {r['maps_seconds']} s / "
          f"{r['stats_seconds']} s", flush=True)
    rows.append(r)
    del lm
print(long_context.write({"kind": "routes_agree", "T": args.seq_len, "tolerance": 1e-5, "rows": rows},
                         f"results/long_context/routes-agree-T{args.seq_len}.json"))
