"""`python -m sinkpaper bench training`: training throughput of our model against transformers'
LlamaForCausalLM with the same configuration, side by side in one run on one device.

Both get the same shapes (the profile's model, context and micro-batch), the same optimizer (AdamW, fused on
GPU), bf16 autocast on GPU, and random token batches. Reported: tokens/s of a full step (forward, backward,
optimizer), model FLOP utilization on GPU (6 N + 12 L d T FLOPs per token, PaLM's convention, against the
device's dense bf16 peak), and the ratio ours / transformers.
"""
from __future__ import annotations

import json
import statistics
import time

import torch

# dense bf16 peak (no sparsity), FLOP/s, by device-name substring
PEAK_BF16 = {"H100": 989.4e12, "H200": 989.4e12, "A100": 312e12, "L4": 121e12}


def _peak(device) -> float | None:
    if device.type != "cuda":
        return None
    name = torch.cuda.get_device_name(device)
    return next((v for k, v in PEAK_BF16.items() if k in name), None)


def _llama(cfg, vocab: int):
    from transformers import LlamaConfig, LlamaForCausalLM
    hf = LlamaConfig(vocab_size=vocab, hidden_size=cfg.d_model, intermediate_size=cfg.d_ff,
                     num_hidden_layers=cfg.n_layers, num_attention_heads=cfg.n_heads,
                     num_key_value_heads=cfg.n_heads, max_position_embeddings=cfg.max_seq_len,
                     rms_norm_eps=cfg.norm_eps, rope_theta=cfg.rope_base, tie_word_embeddings=False,
                     attention_bias=False, mlp_bias=False)
    return LlamaForCausalLM(hf)


def _time_steps(step, steps: int, warmup: int, device) -> list[float]:
    for _ in range(warmup):
        step()
    times = []
    for _ in range(steps):
        if device.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        step()
        if device.type == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return times


def run_training_bench(config: str = "configs/optimization.yaml", profile: str = "cpu", steps: int = 10,
                       warmup: int = 3, device: str | None = None, json_path: str | None = None) -> dict:
    from .. import provenance
    from ..models import SinkModel
    from .config import load
    cfg = load(config, profile)
    dev = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    vocab = int(cfg.model.get("vocab_size", 8192))
    mcfg = cfg.model_config(vocab)
    if dev.type != "cuda" and mcfg.backend == "triton":
        mcfg = type(mcfg).from_dict({**mcfg.to_dict(), "backend": "eager"})
    T, micro = cfg.data.context, cfg.optim.batch_size // cfg.optim.grad_accum
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(0, vocab, (micro, T + 1), generator=g).to(dev)
    autocast = (torch.autocast("cuda", dtype=torch.bfloat16) if dev.type == "cuda" and cfg.run.dtype == "bf16"
                else torch.autocast("cpu", enabled=False))
    rows = []
    for name in ("ours", "transformers"):
        torch.manual_seed(0)
        model = (SinkModel(mcfg) if name == "ours" else _llama(mcfg, vocab)).to(dev)
        if cfg.run.compile and dev.type == "cuda":
            model = torch.compile(model)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=dev.type == "cuda")

        def step(model=model, opt=opt, name=name):
            with autocast:
                if name == "ours":
                    loss = model(ids[:, :-1], targets=ids[:, 1:]).loss
                else:
                    loss = model(input_ids=ids[:, :-1], labels=ids[:, :-1]).loss  # HF shifts labels itself
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
        times = _time_steps(step, steps, warmup, dev)
        n_params = sum(p.numel() for p in model.parameters())
        tokens_per_s = micro * T / statistics.median(times)
        flops_per_token = 6 * n_params + 12 * mcfg.n_layers * mcfg.d_model * T
        peak = _peak(dev)
        rows.append({"model": name, "n_parameters": n_params, "median_step_s": statistics.median(times),
                     "tokens_per_s": tokens_per_s,
                     "mfu": None if peak is None else tokens_per_s * flops_per_token / peak})
        del model, opt
        if dev.type == "cuda":
            torch.cuda.empty_cache()
    result = {"benchmark": "training", "config": str(config), "profile": profile, "micro_batch": micro, "context": T,
              "model": {k: getattr(mcfg, k) for k in ("d_model", "n_layers", "n_heads", "d_ff", "backend")},
              "vocab_size": vocab, "dtype": cfg.run.dtype if dev.type == "cuda" else "fp32", "rows": rows,
              "ratio_tokens_per_s": rows[0]["tokens_per_s"] / rows[1]["tokens_per_s"],
              "provenance": provenance.stamp(dev, steps=steps, warmup=warmup, source_of_numbers="computed now")}
    if json_path:
        with open(json_path, "w") as f:
            json.dump(result, f, indent=1)
    return result


def format_training_report(r: dict) -> str:
    pv = r["provenance"]
    lines = [f"training throughput, {r['profile']} profile: {r['model']}, vocab {r['vocab_size']}, "
             f"micro-batch {r['micro_batch']} x {r['context']} tokens, {r['dtype']}",
             f"[{pv['hardware']}, torch {pv['torch']}, {pv['code_version']}, {pv['steps']} timed steps]"]
    for row in r["rows"]:
        mfu = "" if row["mfu"] is None else f"  MFU {100 * row['mfu']:.1f}%"
        lines.append(f"  {row['model']:<13}{row['n_parameters']:>12,} params  {row['tokens_per_s']:>12,.0f} tokens/s{mfu}")
    lines.append(f"  ratio ours / transformers: {r['ratio_tokens_per_s']:.2f}x tokens/s")
    return "\n".join(lines)
