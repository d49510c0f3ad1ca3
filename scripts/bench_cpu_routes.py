"""The two CPU route choices of the trainer, measured (sinkpaper/models/model.py, CPU_REFERENCE_MAX_T and
CPU_LOSS_CHUNK_BYTES): a full training step of every CPU profile's model through each attention route at the
profile's own shape, dtype and compile mode; forward + backward of plain causal softmax attention through the
reference operator and through SDPA at T = 64 .. 1024 (4096 tokens a batch, 4 heads of 32, bf16 autocast, eager
and compiled); and a full training step of the text profile's base model (compiled bf16) at several loss chunk
sizes. One thread,
rows timed in turn; the JSON says whether the machine was quiet.

    python scripts/bench_cpu_routes.py --json results/bench/cpu-routes.json
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch
import torch.nn.functional as F

from sinkpaper.attention import attention_reference
from sinkpaper.attention.masks import visible_mask
from sinkpaper.models import SinkModel
from sinkpaper.models import model as M
from sinkpaper.train import accel
from sinkpaper.train.bench import bench_config, finish_cpu_script, quiet_watch


def attention_rows(reps: int) -> list[dict]:
    def sdpa(q, k, v, vis):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    def reference(q, k, v, vis):
        return attention_reference(q, k, v, visible=vis, op="softmax").out
    routes = {"SDPA": sdpa, "reference": reference}
    routes.update({f"{k}, compiled": torch.compile(f) for k, f in list(routes.items())})
    rows = []
    for T in (64, 128, 256, 512, 1024):
        B, H, D = 4096 // T, 4, 32
        vis = visible_mask(T)
        for name, f in routes.items():
            q, k, v = (torch.randn(B, H, T, D, requires_grad=True) for _ in range(3))
            times = []
            for _ in range(reps + 3):
                t0 = time.perf_counter()
                with torch.autocast("cpu", torch.bfloat16):
                    out = f(q, k, v, vis)
                out.float().sum().backward()
                times.append(time.perf_counter() - t0)
            rows.append({"T": T, "batch": B, "route": name, "median_ms": 1e3 * statistics.median(times[3:])})
            print(f"attention T {T:5d} {name:22s} {rows[-1]['median_ms']:7.1f} ms", flush=True)
    return rows


def loss_chunk_rows(steps: int, chunks=(64, 128, 256, 512, 1024, 4096)) -> list[dict]:
    cfg = bench_config("configs/optimization.yaml", "text")
    vocab = int(cfg.model.get("vocab_size", 8192))
    model = SinkModel(cfg.model_config(vocab))
    model.set_training_route("bf16", True)
    net = torch.compile(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    ids = torch.randint(0, vocab, (cfg.optim.batch_size, cfg.data.context + 1), generator=torch.Generator().manual_seed(0))
    times = {c: [] for c in chunks}
    default = M.CPU_LOSS_CHUNK_BYTES

    def step(c):
        M.CPU_LOSS_CHUNK_BYTES = c * 4 * vocab
        with torch.autocast("cpu", torch.bfloat16):
            loss = net(ids[:, :-1], targets=ids[:, 1:]).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    try:
        torch._dynamo.config.recompile_limit = max(16, len(chunks) + 2)
        for c in chunks:
            for _ in range(3):
                step(c)
        for _ in range(steps):
            for c in chunks:
                t0 = time.perf_counter()
                step(c)
                times[c].append(time.perf_counter() - t0)
    finally:
        M.CPU_LOSS_CHUNK_BYTES = default
    rows = [{"chunk_tokens": c, "median_step_ms": 1e3 * statistics.median(t)} for c, t in times.items()]
    for r in rows:
        print(f"loss chunk {r['chunk_tokens']:5d} tokens: {r['median_step_ms']:7.1f} ms a step", flush=True)
    return rows


# The shapes, dtypes and compile modes the CPU profiles train at: (name, config, profile, sweep point, overrides)
# (each row's name gets the dtype and compile mode its config says); the default's step also in bf16, the dtype
# it was planned at, since its plan's time was first measured there
PROFILE_STEPS = (
    ("miniature", "configs/miniature.yaml", "cpu", None, {}),
    ("text, 2 layers", "configs/optimization.yaml", "text", None, {}),
    ("text, 4 layers", "configs/data.yaml", "text", "fixed_pos1_layers_4", {}),
    ("paper's default on a CPU", "configs/default_cpu.yaml", "text", "default_cpu_d128", {"optim.batch_size": 32}),
    ("paper's default on a CPU", "configs/default_cpu.yaml", "text", "default_cpu_d128",
     {"optim.batch_size": 32, "run.dtype": "bf16"}),
)


def profile_step_rows(steps: int) -> list[dict]:
    """A full training step of each CPU profile's model, plain causal softmax through the reference operator and
    through SDPA, at the profile's own shape, dtype and compile mode, timed in turn in one process."""
    from sinkpaper.train.config import load
    rows = []
    for name, config, profile, point, over in PROFILE_STEPS:
        cfg = load(config, profile, over, sweep_point=point)
        name = f"{name} ({cfg.run.dtype}, {'compiled' if cfg.run.compile else 'eager'})"
        vocab = int(cfg.model.get("vocab_size", 8192)) if cfg.data.source != "bigram_backcopy" else cfg.data.vocab_size
        model_cfg = cfg.model_config(vocab)
        ids = torch.randint(0, vocab, (cfg.optim.batch_size, cfg.data.context + 1),
                            generator=torch.Generator().manual_seed(0))
        times = {}
        for route, max_t in (("reference", 1 << 30), ("SDPA", 0)):
            M.CPU_REFERENCE_MAX_T = max_t
            torch._dynamo.reset()
            model = SinkModel(model_cfg)
            model.set_training_route(cfg.run.dtype, cfg.run.compile)
            net = torch.compile(model) if cfg.run.compile else model
            opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
            cast = accel.autocast(torch.device("cpu"), cfg.run.dtype)

            def step():
                with cast:
                    loss = net(ids[:, :-1], targets=ids[:, 1:]).loss
                loss.backward()
                opt.step()
                opt.zero_grad(set_to_none=True)
            for _ in range(3):
                step()
            t = []
            for _ in range(steps):
                t0 = time.perf_counter()
                step()
                t.append(time.perf_counter() - t0)
            times[route] = 1e3 * statistics.median(t)
        M.CPU_REFERENCE_MAX_T = 128
        chosen = SinkModel(model_cfg).training_route(cfg.data.context, "cpu", cfg.run.dtype, cfg.run.compile)
        rows.append({"profile": name, "T": cfg.data.context, "batch": cfg.optim.batch_size, "dtype": cfg.run.dtype,
                     "compiled": cfg.run.compile, "reference_ms": times["reference"], "sdpa_ms": times["SDPA"],
                     "route_taken": chosen["attention"]})
        print(f"{name}: reference {times['reference']:.0f} ms, SDPA {times['SDPA']:.0f} ms a step; the trainer "
              f"takes {chosen['attention']}", flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", help="write the rows, with provenance, here")
    ap.add_argument("--steps", type=int, default=15)
    a = ap.parse_args()
    accel.set_threads(1)
    watch = quiet_watch()
    result = {"benchmark": "cpu-routes", "profile_steps": profile_step_rows(a.steps),
              "attention": attention_rows(a.steps), "loss_chunks": loss_chunk_rows(a.steps),
              "chosen": {"CPU_REFERENCE_MAX_T": M.CPU_REFERENCE_MAX_T, "CPU_LOSS_CHUNK_BYTES": M.CPU_LOSS_CHUNK_BYTES}}
    finish_cpu_script(result, watch, a.steps, "scripts/bench_cpu_routes.py", a.json)

if __name__ == "__main__":
    main()
