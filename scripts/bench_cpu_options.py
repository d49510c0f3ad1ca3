"""Speed options of a CPU training step, measured before any is adopted: the text profile's base model, compiled,
one thread, fp32 and bf16 autocast, each option against the trainer's own setting in the same process (rows timed
in turn). The options: Q, K, V (and a gated FFN's W1, W3) as one GEMM each (sinkpaper/models/model.py,
FUSED_PROJECTIONS), the chunked loss's softmax and gradient in one inductor kernel per chunk (FUSED_LOSS),
inductor's C++ wrapper, and inductor's max-autotune GEMM choice. Beside them, the GEMMs of
the step's shapes in each dtype: what the machine's matrix units allow (a CPU without AMX may run bf16 GEMMs at
half its fp32 rate). The JSON says whether the machine was quiet.

    python scripts/bench_cpu_options.py --json results/bench/cpu-options.json
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch

from sinkpaper.models import SinkModel
from sinkpaper.models import model as M
from sinkpaper.train import accel
from sinkpaper.train.bench import bench_config, finish_cpu_script, quiet_watch

OPTIONS = {"trainer's setting": {}, "fused projections": {}, "fused loss": {}, "cpp_wrapper": {"cpp_wrapper": True},
           "max_autotune": {"max_autotune": True}}


def step_rows(steps: int, dtypes=("fp32", "bf16")) -> list[dict]:
    cfg = bench_config("configs/optimization.yaml", "text")
    vocab = int(cfg.model.get("vocab_size", 8192))
    ids = torch.randint(0, vocab, (cfg.optim.batch_size, cfg.data.context + 1),
                        generator=torch.Generator().manual_seed(0))
    rows = []
    for dtype in dtypes:
        runs = []
        for name, options in OPTIONS.items():
            torch.manual_seed(0)
            model = SinkModel(cfg.model_config(vocab))
            net = torch.compile(model, options=options or None)
            opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
            runs.append((name, net, opt, accel.autocast(torch.device("cpu"), dtype), []))

        def step(name, net, opt, autocast):
            M.FUSED_PROJECTIONS = name == "fused projections"
            M.FUSED_LOSS = name == "fused loss"
            with autocast:
                loss = net(ids[:, :-1], targets=ids[:, 1:]).loss
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
        try:
            for name, net, opt, autocast, _ in runs:
                for _ in range(3):
                    step(name, net, opt, autocast)
            for _ in range(steps):
                for name, net, opt, autocast, times in runs:
                    t0 = time.perf_counter()
                    step(name, net, opt, autocast)
                    times.append(time.perf_counter() - t0)
        finally:
            M.FUSED_PROJECTIONS = M.FUSED_LOSS = False
        base = statistics.median(runs[0][4])
        for name, *_, times in runs:
            med = statistics.median(times)
            rows.append({"dtype": dtype, "option": name, "median_step_ms": 1e3 * med, "speed_vs_setting": base / med})
            print(f"step {dtype} {name:18s} {1e3 * med:7.1f} ms  x{base / med:.3f}", flush=True)
    return rows


def gemm_rows(tokens: int, d: int, vocab: int, reps: int = 5) -> list[dict]:
    """GFLOP/s of the LM head's three GEMMs (forward, input gradient, weight gradient) and a square one."""
    shapes = {"square 2048": (2048, 2048, 2048), "LM head forward": (tokens, d, vocab),
              "LM head input gradient": (tokens, vocab, d), "LM head weight gradient": (vocab, tokens, d)}
    rows = []
    for dtype, dt in (("fp32", torch.float32), ("bf16", torch.bfloat16)):
        for name, (m, k, n) in shapes.items():
            a, b = torch.randn(m, k).to(dt), torch.randn(k, n).to(dt)
            a @ b
            times = []
            for _ in range(reps):
                t0 = time.perf_counter()
                a @ b
                times.append(time.perf_counter() - t0)
            rows.append({"dtype": dtype, "gemm": name, "mkn": [m, k, n],
                         "gflops": 2 * m * n * k / statistics.median(times) / 1e9})
            print(f"gemm {dtype} {name:24s} {rows[-1]['gflops']:6.1f} GFLOP/s", flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", help="write the rows, with provenance, here")
    ap.add_argument("--steps", type=int, default=15)
    a = ap.parse_args()
    accel.set_threads(1)
    torch._dynamo.config.recompile_limit = 16
    watch = quiet_watch()
    cfg = bench_config("configs/optimization.yaml", "text")
    result = {"benchmark": "cpu-options", "steps": step_rows(a.steps),
              "gemm": gemm_rows(cfg.optim.batch_size * cfg.data.context, int(cfg.model["d_model"]),
                                int(cfg.model.get("vocab_size", 8192))),
              "adopted": {"FUSED_PROJECTIONS": M.FUSED_PROJECTIONS, "FUSED_LOSS": M.FUSED_LOSS,
                          "inductor options": "defaults"}}
    finish_cpu_script(result, watch, a.steps, "scripts/bench_cpu_options.py", a.json)

if __name__ == "__main__":
    main()
