"""The two CPU route choices of the trainer, measured (sinkpaper/models/model.py, CPU_REFERENCE_MAX_T and
CPU_LOSS_CHUNK_BYTES): forward + backward of plain causal softmax attention through the reference operator and
through SDPA at T = 64 .. 1024 (4096 tokens a batch, 4 heads of 32, bf16 autocast, eager and compiled), and a
full training step of the text profile's base model (compiled bf16) at several loss chunk sizes. One thread,
rows timed in turn; the JSON says whether the machine was quiet.

    python scripts/bench_cpu_routes.py --json results/bench/cpu-routes.json
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

import torch
import torch.nn.functional as F

from sinkpaper.attention import attention_reference
from sinkpaper.attention.masks import visible_mask
from sinkpaper.models import SinkModel
from sinkpaper.models import model as M
from sinkpaper.train import accel
from sinkpaper.train.bench import bench_config, finish_cpu_script


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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", help="write the rows, with provenance, here")
    ap.add_argument("--steps", type=int, default=15)
    a = ap.parse_args()
    accel.set_threads(1)
    load_before = os.getloadavg()[0]
    result = {"benchmark": "cpu-routes", "attention": attention_rows(a.steps), "loss_chunks": loss_chunk_rows(a.steps),
              "chosen": {"CPU_REFERENCE_MAX_T": M.CPU_REFERENCE_MAX_T, "CPU_LOSS_CHUNK_BYTES": M.CPU_LOSS_CHUNK_BYTES}}
    finish_cpu_script(result, load_before, a.steps, "scripts/bench_cpu_routes.py", a.json)

if __name__ == "__main__":
    main()
