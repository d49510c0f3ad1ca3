"""Pre-training with the sink tracked along the way (Sections 4-7 of the paper).

A run directory holds `config.json` (the resolved config), `log.jsonl` (one line per log step and per
evaluation: step, tokens seen, loss, LR, validation loss, Sink_k), `checkpoints/step-N/` (model weights in
safetensors, optimizer / scheduler / RNG state) with a `checkpoints/latest` pointer, and at the end
`metrics.json` (final numbers with provenance). Every file is written to a temporary name and renamed, so
a crash at any moment leaves the last good checkpoint; `resume=True` continues exactly where it stopped
(each step's batch is a function of (seed, step), so on CPU the resumed run is bit-identical).
"""
from __future__ import annotations

import json
import math
import os
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from .. import metrics, provenance
from ..data.packing import Packing, document_ids
from ..data.sources import TokenData, load_once_per_node, load_source
from ..files import atomic_path, atomic_write_text
from ..models import SinkModel
from . import accel
from .batches import Batches
from .config import TrainConfig, early_eval_steps, identity
from .spikes import find_spikes
from .store import write_result


class TrainingDiverged(RuntimeError):
    """The loss became NaN or infinite; the last good checkpoint is kept."""


# ------------------------------------------------------------------------------------------------ files
def save_checkpoint(run_dir: Path, step: int, model, optimizer, scheduler, state: dict, keep: int = 2) -> Path:
    """checkpoints/step-N/ written under a temporary name, renamed, then `latest` is switched to it."""
    from safetensors.torch import save_file
    ckpts = run_dir / "checkpoints"
    ckpts.mkdir(parents=True, exist_ok=True)
    final = ckpts / f"step-{step:08d}"
    with atomic_path(final, directory=True) as tmp:
        weights = {k: v.detach().contiguous().cpu() for k, v in _unwrap(model).state_dict().items()}
        save_file(_dedupe_shared(weights), str(tmp / "model.safetensors"))
        torch.save({"optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(), **state,
                    "rng_torch": torch.get_rng_state(),
                    "rng_cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None},
                   tmp / "state.pt")
        if final.exists():
            shutil.rmtree(final)
    atomic_write_text(ckpts / "latest", final.name)
    for old in sorted(p for p in ckpts.glob("step-*") if p.name != final.name)[:-(keep - 1) or None]:
        shutil.rmtree(old, ignore_errors=True)
    return final


def _dedupe_shared(weights: dict) -> dict:
    """safetensors refuses tensors that share memory (tied embeddings): keep the first name."""
    seen, out = {}, {}
    for k, v in weights.items():
        key = (v.data_ptr(), v.shape, v.dtype)
        if key in seen:
            continue
        seen[key] = k
        out[k] = v
    return out


def latest_checkpoint(run_dir: Path) -> Path | None:
    """The newest complete checkpoint (weights and state) of a run directory, or None."""
    pointer = run_dir / "checkpoints" / "latest"
    if not pointer.exists():
        return None
    path = run_dir / "checkpoints" / pointer.read_text().strip()
    return path if (path / "model.safetensors").exists() and (path / "state.pt").exists() else None


def checkpoint_weights(ckpt: Path, device: str | torch.device = "cpu") -> dict[str, torch.Tensor]:
    """A checkpoint's model weights (state-dict names; a tied copy is saved once, so load with strict=False)."""
    from safetensors.torch import load_file
    return load_file(str(Path(ckpt) / "model.safetensors"), device=str(device))


def _unwrap(model):
    model = getattr(model, "module", model)           # DDP
    return getattr(model, "_orig_mod", model)         # torch.compile


# ------------------------------------------------------------------------------------------------ pieces
def lr_lambda(cfg: TrainConfig):
    o = cfg.optim

    def f(step: int) -> float:
        if o.warmup and step < o.warmup:
            return (step + 1) / o.warmup
        if o.schedule == "constant":
            return 1.0
        progress = min(1.0, (step - o.warmup) / max(1, o.steps - o.warmup))
        return o.min_lr_ratio + (1 - o.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * progress))
    return f


def packing_for(cfg: TrainConfig, data: TokenData, context: int | None = None) -> Packing:
    d = cfg.data
    if (d.bos or d.fixed_token == "bos") and data.bos_id is None:
        raise ValueError(f"data.bos needs a BOS token, and source {data.name} has none")
    fixed = {"bos": data.bos_id, "eos": data.eos_id}.get(d.fixed_token, d.fixed_token)
    if isinstance(fixed, int) and not 0 <= fixed < data.vocab_size:
        raise ValueError(f"data.fixed_token={fixed} is outside the vocabulary (size {data.vocab_size})")
    return Packing(context=context or d.context, bos_id=data.bos_id if d.bos else None, fixed_token=fixed,
                   fixed_pos=d.fixed_pos, random_span=tuple(d.random_span) if d.random_span else None,
                   random_vocab=data.random_vocab if d.random_span else None,
                   unique_tokens=d.unique_tokens if context is None else None, prefix_len=d.prefix_lm,
                   eos_id=data.eos_id if d.doc_mask else None, bos_each_document=d.bos_each_document)


def heldout_batch(cfg: TrainConfig, data: TokenData, n_samples: int | None = None) -> dict[str, torch.Tensor]:
    """The held-out sequences the evaluation measures the sink on: ``n_samples`` (default eval.n_samples)
    windows of the validation stream, evenly spread, eval.seq_len tokens each, packed like the training data."""
    return packing_for(cfg, data, context=cfg.eval.seq_len).eval_batch(data.val, n_samples or cfg.eval.n_samples)


def load_data(cfg: TrainConfig) -> TokenData:
    """The run's token source; under torchrun one rank per node builds any token cache, then all map it."""
    d = cfg.data
    return load_once_per_node(lambda: load_source(
        d.source, path=d.path, dataset=d.dataset, tokenizer=d.tokenizer, n_tokens=d.n_tokens,
        vocab_size=d.vocab_size, seed=cfg.run.seed, n_triggers=d.n_triggers, concentration=d.concentration,
        data_seed=d.data_seed, doc_len=tuple(d.doc_len)))


def device_of(cfg: TrainConfig) -> torch.device:
    """The device a run trains on, checked before anything is loaded or computed: a one-line ValueError when this
    machine does not have it (for a GPU profile on a machine without CUDA, naming the profiles that run here)."""
    if cfg.run.device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    from ..devices import check_device
    from .config import PROFILES, load

    def gpu_profile(p):
        return str(load(_BASE_FAMILY, p).run.device).startswith("cuda")
    if str(cfg.run.device).startswith("cuda") and not torch.cuda.is_available() and gpu_profile(cfg.profile):
        here = [p for p in PROFILES if not gpu_profile(p)]
        raise ValueError(f"profile {cfg.profile!r} trains on a CUDA GPU (run.device={cfg.run.device}) and this machine "
                         f"has none (torch {torch.__version__}); profiles that run here: {', '.join(here)} "
                         "(or --set run.device=cpu to run its shapes on the CPU anyway)")
    return check_device(cfg.run.device, what="run.device", also=("auto",))  # one-line ValueError naming the devices here


_BASE_FAMILY = "optimization"   # a family whose profiles are _base.yaml's own


@torch.no_grad()
def evaluate(model, cfg: TrainConfig, data: TokenData, device, dtype: str | None = None) -> dict:
    """Validation loss at the training context, and Sink_k^eps on n_samples held-out sequences of eval.seq_len
    tokens packed like the training data (no BOS unless the run uses a fixed BOS).

    The validation loss is computed in the run's dtype (`dtype`, default cfg.run.dtype where supported), like
    the training loss; the sink metric always in fp32 on the unwrapped (uncompiled) model, whose hooks it reads."""
    net = _unwrap(model)
    dtype = accel.resolve_dtype(cfg.run.dtype, device) if dtype is None else dtype
    was_training = net.training
    net.eval()
    e = cfg.eval
    losses = []
    val = packing_for(cfg, data).eval_batch(data.val, e.n_samples)
    for i in range(0, e.n_samples, 16):
        b = {k: v[i:i + 16].to(device) for k, v in val.items()}
        with accel.autocast(device, dtype):
            loss = net(b["input_ids"], targets=b["targets"], doc_ids=b.get("doc_ids")).loss
        losses.append(float(loss) * len(b["input_ids"]))
    probe = heldout_batch(cfg, data)
    # the paper's maps, as on the CPU, unless the sequences are long enough that T x T maps cost real memory
    use_stats = (device.type == "cuda" and net.fused_supported()
                  and probe["input_ids"].shape[1] > metrics.STATS_ABOVE)

    def trace(ids):
        docs = torch.from_numpy(document_ids(ids.cpu().numpy(), data.eos_id)).to(device) if cfg.data.doc_mask else None
        return net.trace(ids.to(device), doc_ids=docs, method="stats" if use_stats else "maps")
    stats = metrics.measure(trace, probe["input_ids"], batch_size=25, progress=False)
    summary = metrics.summarize(stats, e.epsilon, range(1, e.k_max + 1))
    out = {"val_loss": sum(losses) / e.n_samples, "sink_k": summary["sink_k"],
           "alpha_1_mean": summary["alpha_1_mean"], "alpha_k": summary["alpha_k"], "per_layer_sink_1": summary["per_layer_sink_1"],
           "alpha_1_matrix": summary["alpha_1_matrix"], "sink_star": summary["sink_star"], "proxy": summary["proxy"],
           # token 1's hidden-state norm over the other tokens' mean, per layer (the paper's Section 3)
           "massive_activation_ratio_by_layer": summary["massive_activation_ratio_by_layer"]}
    if summary["gate_quantiles"] is not None:   # gated attention, or a sink that acts as a gate (a sink logit)
        out["gate_quantiles"] = summary["gate_quantiles"]
    if summary["sink_first_key"] is not None:   # a mask under which a query's first key is not position 1
        out["sink_first_key"] = summary["sink_first_key"]
    if summary["proxy"]:  # without normalization the proxy can read high while raw weights are all tiny
        out.update(raw_weights(net, probe["input_ids"][:25].to(device)))
    if cfg.data.doc_mask:
        out.update(doc_start_probe(net, cfg, data, device))
    if e.circuits:
        out.update(circuits_probe(net, cfg, data, device))
    net.train(was_training)
    return out


def doc_start_probe(net, cfg: TrainConfig, data: TokenData, device) -> dict:
    """Under intra-document masking, the sink at the documents that start inside held-out windows: eval.n_samples
    windows each holding a document end a third of the way in (the usual held-out windows rarely hold one, so
    their first-key reading is mostly the window's start), packed like the training windows; the percentage of
    (window, layer, head) whose queries of that document put more than epsilon on its first token
    (``sink_doc_start``), and how many windows held one."""
    from ..data.packing import doc_start_starts, document_ids as doc_ids_of
    packing = packing_for(cfg, data, context=cfg.eval.seq_len)
    starts = doc_start_starts(data.val, cfg.eval.n_samples, data.eos_id, packing.span)
    if len(starts) == 0:
        return {"sink_doc_start": None, "doc_start_samples": 0}
    batch = packing.windows(data.val, starts, seed=1234, step=2**31)

    def trace(ids):
        docs = torch.from_numpy(doc_ids_of(ids.cpu().numpy(), data.eos_id)).to(device)
        return net.trace(ids.to(device), doc_ids=docs, method="maps")
    stats = metrics.measure(trace, batch["input_ids"], batch_size=25, progress=False)
    s = metrics.summarize(stats, cfg.eval.epsilon, range(1, 2))
    return {"sink_doc_start": s.get("sink_doc_start"), "doc_start_samples": s.get("doc_start_samples", 0)}


def circuits_probe(net, cfg: TrainConfig, data: TokenData, device) -> dict:
    """Induction and previous-token scores and the in-context gain (sinkpaper.circuits) on eval.n_samples
    sequences of random tokens repeated once, packed like the training windows at eval.seq_len."""
    from ..circuits import measure_circuits, repeated_stream
    packing = packing_for(cfg, data, context=cfg.eval.seq_len)
    stream, half = repeated_stream(cfg.eval.n_samples, packing.span, data.random_vocab)
    ids = packing.eval_batch(stream, cfg.eval.n_samples)["input_ids"]
    docs = None
    if cfg.data.doc_mask:   # the documents the model's mask needs, as its packing marks them in the probe
        docs = torch.from_numpy(document_ids(ids.numpy(), data.eos_id)).to(device)
    return measure_circuits(net, ids.to(device), half, doc_ids=docs)


@torch.no_grad()
def raw_weights(net, input_ids) -> dict:
    """Mean raw (unnormalized) attention weight on token 1 and on the other visible keys, and the mean row sum:
    what the |w| / sum|w| proxy of sigmoid / elu attention is made of."""
    seen = []
    handles = [b.attn.hook_weights.register_forward_hook(lambda _m, _i, w: seen.append(w.detach().float()))
               for b in net.blocks]
    try:
        net(input_ids)
    finally:
        for h in handles:
            h.remove()
    extra = net.extra_columns
    first, other, rows = [], [], []
    for w in seen:
        w = w[..., net.n_extra:, extra:]              # real queries x real keys
        T = w.shape[-1]
        vis = net.real_visible(T, None, w.device)[0]
        others = vis.clone()
        others[:, 0] = False
        first.append(w[..., 1:, 0][..., vis[1:, 0]].mean())   # queries after token 1 that see it
        other.append(w[..., others].mean())
        rows.append(w.sum(-1).mean())
    return {"raw_weight_token_1": float(torch.stack(first).mean()), "raw_weight_others": float(torch.stack(other).mean()),
            "raw_row_sum": float(torch.stack(rows).mean())}


# ------------------------------------------------------------------------------------------------ the loop
def train(cfg: TrainConfig, out_dir: str | Path, *, resume: bool = False, progress: bool = True,
          store: str | Path | None = None, data: TokenData | None = None, on_step=None) -> dict:
    """Train (or resume) one run into out_dir; returns the final metrics (also written to metrics.json and,
    when `store` is given, to the results store). `on_step(step, model)` is called after each optimizer step
    (tests use it to interrupt a run or corrupt it)."""
    out = Path(out_dir)
    config_path = _check_run_dir(out, cfg, resume)
    device, rank, world = _processes(cfg)
    accel.set_threads(cfg.run.threads)
    dtype = accel.resolve_dtype(cfg.run.dtype, device)   # bf16 where supported, else fp32 and one line why
    if rank == 0:
        atomic_write_text(config_path, json.dumps({"hash": cfg.hash(), **cfg.to_dict()}, indent=1))

    data = data or load_data(cfg)
    packing = packing_for(cfg, data)
    torch.manual_seed(cfg.run.seed)
    model = SinkModel(cfg.model_config(data.vocab_size)).to(device)
    o = cfg.optim
    optimizer = torch.optim.AdamW(model.parameters(), lr=o.lr, betas=tuple(o.betas), weight_decay=o.weight_decay,
                                  fused=True)   # one kernel for all of AdamW, on the CPU too
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda(cfg))
    ckpt = latest_checkpoint(out) if resume else None
    step, tokens, wall, cpu, routes, compact = (_restore(ckpt, model, optimizer, scheduler, device)
                                                if ckpt is not None else (0, 0, 0.0, 0.0, [], None))
    lost = _lost_sitting(store, cfg, step) if rank == 0 else None   # an earlier sitting got further, its checkpoint gone
    # past the step it starts from (0 without a checkpoint: an attempt cut off before its first one) the log's
    # lines are written again
    _truncate_log(out / "log.jsonl", step)
    net = accel.maybe_compile(model, device, cfg.run.compile)   # checkpoints and evaluation use `model`
    compiled = net is not model
    _unwrap(model).set_training_route(dtype, compiled)
    route = _unwrap(model).training_route(cfg.data.context, device, dtype, compiled)   # for the provenance
    # every route the run trained under, from the step it started at (a run resumed on another machine or code)
    here = {**route, "code": provenance.code_version(), "from_step": step,
            **({"earlier_sitting_reached": lost} if lost else {}),
            **({"resumed_from_packed": compact} if compact else {})}   # its moments rounded (sinkpaper.train.compact)
    if compact or not routes or {k: v for k, v in routes[-1].items() if k != "from_step"} != {
            k: v for k, v in here.items() if k != "from_step"}:
        routes = [*routes, here]
    if world > 1:
        net = torch.nn.parallel.DistributedDataParallel(net)
    autocast = accel.autocast(device, dtype)    # fp32 master weights; the loss is computed in fp32
    micro = o.batch_size // o.grad_accum
    if micro % world:
        raise ValueError(f"micro-batch {micro} (batch_size / grad_accum) must be divisible by {world} processes")
    log_path = out / "log.jsonl"
    bar = _progress_bar(cfg, step) if progress and rank == 0 else None
    t_start = time.perf_counter() - wall
    # the process's CPU time beside the wall clock (CPU runs): a machine shared with other runs, or a process
    # stopped for a while, stretches the wall time but not the CPU time, so the evaluations' CPU share is their
    # cost however the machine was used; a checkpoint written before it was kept has none (cpu None)
    c_start = None if cpu is None or device.type != "cpu" else time.process_time() - cpu
    book = _Bookkeeping(out, cfg, model, data, device, dtype, optimizer, scheduler, bar, t_start, c_start, routes,
                        store if rank == 0 and cfg.run.partial else None, step)
    # Nothing in a step waits for the device: the loss stays on it, and whether it was finite is kept there too
    # (`first_bad`, the first step with a non-finite loss). The host reads them only where it must anyway, at
    # the steps that log, evaluate or checkpoint; a non-finite loss is caught there, before any checkpoint
    # could save its weights.
    batches = Batches(packing, data.train, micro, cfg.run.seed, step * o.grad_accum, device, rank=rank, world=world)
    first_bad = torch.full((), -1, dtype=torch.long, device=device)
    grad_max = torch.zeros((), device=device)     # the largest gradient norm since the last log line
    t_sync, steps_since = time.perf_counter(), 0
    early = early_eval_steps(cfg)
    net.train()
    try:
        while step < o.steps:
            optimizer.zero_grad(set_to_none=True)
            loss_sum = torch.zeros((), device=device)
            for m in range(o.grad_accum):
                b = next(batches)
                with autocast:
                    loss = net(b["input_ids"], targets=b["targets"], doc_ids=b.get("doc_ids")).loss
                (loss / o.grad_accum).backward()
                loss_sum += loss.detach().float() / o.grad_accum
            first_bad = torch.where((first_bad < 0) & ~torch.isfinite(loss_sum), step, first_bad)
            grad_max = torch.maximum(grad_max, torch.nn.utils.clip_grad_norm_(net.parameters(), o.grad_clip).float())
            optimizer.step()
            scheduler.step()
            step += 1
            steps_since += 1
            tokens += o.batch_size * cfg.data.context
            if on_step is not None:
                on_step(step, model)
            logs = step % cfg.run.log_every == 0 or step == o.steps
            evals = step % cfg.eval.every == 0 or step == o.steps or step in early
            saves = step % cfg.run.checkpoint_every == 0 or step == o.steps
            if not (logs or evals or saves):
                continue
            bad = int(first_bad)                       # the host waits for the device here, and only here
            if bad >= 0:
                raise TrainingDiverged(
                    f"non-finite loss (first at step {bad}); stopped. The last good checkpoint is "
                    f"{latest_checkpoint(out) or '(none yet)'}; lower optim.lr or check the data")
            now = time.perf_counter()
            rate = o.batch_size * cfg.data.context * steps_since / max(now - t_sync, 1e-9)
            t_sync, steps_since = now, 0
            if rank == 0:
                t_sync = book.at(step, tokens, float(loss_sum), rate, logs=logs, evals=evals, saves=saves,
                                 grad_norm_max=float(grad_max) if logs else None)
            if logs:
                grad_max.zero_()
    finally:
        batches.close()
    if bar is not None:
        bar.close()
    if rank != 0:
        return {}
    # resumed at the very end: evaluate the final weights
    last_eval = book.last_eval or evaluate(model, cfg, data, device, dtype)
    # the evaluations' time over the whole run, resumed or not: the log keeps each evaluation's seconds up to the
    # checkpoint a resumed run restarted from, as the wall clock does (early log-spaced evaluations crowd a run's
    # start, so its last session alone is not its share)
    wall_total = time.perf_counter() - t_start
    evals_logged = [r for r in read_log(log_path) if "eval_seconds" in r]
    eval_total = sum(r["eval_seconds"] for r in evals_logged)
    cpu_share = {}
    if c_start is not None and all("eval_cpu_seconds" in r for r in evals_logged):
        cpu_total, eval_cpu = time.process_time() - c_start, sum(r["eval_cpu_seconds"] for r in evals_logged)
        cpu_share = {"cpu_seconds": round(cpu_total, 2), "eval_cpu_share": round(eval_cpu / max(1e-9, cpu_total), 4)}
    stamp = provenance.stamp(device, wall_seconds=round(wall_total, 2), tokens_seen=tokens,
                             source_of_numbers="computed now", profile=cfg.profile, dtype=dtype, compiled=compiled,
                             eval_seconds=round(eval_total, 2), eval_share=round(eval_total / max(1e-9, wall_total), 4),
                             eval_share_over="the run", **cpu_share,
                             threads=torch.get_num_threads(),
                             route=route, **({"routes": routes} if len(routes) > 1 else {}))
    curve = read_log(log_path)
    result = {"name": cfg.name, "hash": cfg.hash(), "profile": cfg.profile, "step": step, "tokens_seen": tokens,
              "final_loss": _last_loss(log_path), **last_eval, "spikes": find_spikes(curve, o.warmup),
              "n_parameters": _unwrap(model).num_parameters(non_embedding=False),
              "n_parameters_non_embedding": _unwrap(model).num_parameters(), "data": data.provenance,
              "provenance": stamp}
    atomic_write_text(out / "metrics.json", json.dumps(result, indent=1))
    if store is not None:
        write_result(store, cfg, result, curve=curve)
    return result


@dataclass
class _Bookkeeping:
    """What the first process does at a step where the host reads the device: the log line, the evaluation, the
    checkpoint and the progress bar. Keeps the last evaluation and this session's evaluation time."""
    out: Path
    cfg: TrainConfig
    model: Any
    data: TokenData
    device: torch.device
    dtype: str
    optimizer: Any
    scheduler: Any
    bar: Any
    t_start: float
    c_start: float | None          # the process's CPU clock at the run's start (None: not kept)
    routes: list                   # the routes the run trained under (kept in every checkpoint)
    partial_store: Any = None      # run.partial: the store whose partial/ folder gets the curve at each checkpoint
    start_step: int = 0            # the step this sitting started from (its rate projects the end)
    sitting_start: float = field(default_factory=time.perf_counter)
    last_eval: dict | None = None

    def at(self, step: int, tokens: int, loss: float, rate: float, *, logs: bool, evals: bool, saves: bool,
           grad_norm_max: float | None = None) -> float:
        """Log, evaluate and checkpoint as asked; returns the time the next tokens/s rate counts from (after the
        evaluation: the rate counts training only)."""
        now = time.perf_counter()
        record = None
        if logs:
            record = {"step": step, "tokens": tokens, "loss": loss, "lr": self.scheduler.get_last_lr()[0],
                      "tokens_per_s": rate, "wall_seconds": now - self.t_start,
                      **({"grad_norm_max": grad_norm_max} if grad_norm_max is not None else {})}
        if evals:
            t_eval, c_eval = time.perf_counter(), time.process_time()
            self.last_eval = evaluate(self.model, self.cfg, self.data, self.device, self.dtype)
            took, cpu_took = time.perf_counter() - t_eval, time.process_time() - c_eval
            record = {**(record or {"step": step, "tokens": tokens, "loss": loss}), **self.last_eval,
                      "eval_seconds": took, **({"eval_cpu_seconds": cpu_took} if self.c_start is not None else {})}
            now = time.perf_counter()
        if record is not None:
            with open(self.out / "log.jsonl", "a") as f:
                f.write(json.dumps(record) + "\n")
        if saves and self.partial_store is not None:
            self._partial(step, tokens)
        if saves:
            save_checkpoint(self.out, step, self.model, self.optimizer, self.scheduler,
                            {"step": step, "tokens": tokens, "wall_seconds": time.perf_counter() - self.t_start,
                             "routes": self.routes,
                             **({"cpu_seconds": time.process_time() - self.c_start} if self.c_start is not None
                                else {})})
        if self.bar is not None:
            post = {"loss": f"{loss:.3f}", "tok/s": f"{rate:,.0f}"}
            if self.last_eval:
                post["sink1"] = f"{self.last_eval['sink_k']['1']:.1f}%"
            self.bar.set_postfix(post, refresh=False)
            self.bar.update(step - self.bar.n)
        return now


    def _partial(self, step: int, tokens: int) -> None:
        """The curve so far into the store's partial/ folder, and one progress line."""
        from .store import write_partial
        now = time.perf_counter()
        elapsed, sitting = now - self.t_start, now - self.sitting_start
        rate = (step - self.start_step) / max(sitting, 1e-9)      # this sitting's steps a second
        left = (self.cfg.optim.steps - step) / max(rate, 1e-12)
        progress = {"step": step, "steps": self.cfg.optim.steps, "tokens": tokens,
                    "elapsed_seconds": round(elapsed, 3), "projected_seconds_left": round(left, 3),
                    "routes": self.routes, "code": provenance.code_version(), "hardware": provenance.hardware(self.device)}
        write_partial(self.partial_store, self.cfg, read_log(self.out / "log.jsonl"), progress)
        ev = self.last_eval or {}
        sink = (f"; Sink_1 {ev['sink_k']['1']:.1f} %, alpha_1 {ev['alpha_1_mean']:.3f} at the last evaluation"
                if ev.get("sink_k") and ev.get("alpha_1_mean") is not None else "")
        print(f"{self.cfg.name}: step {step:,}/{self.cfg.optim.steps:,}, {tokens:,} tokens, {elapsed / 3600:.2f} h "
              f"elapsed, about {left / 3600:.1f} h left at this sitting's {rate * 3600:,.0f} steps/h{sink}", flush=True)


def _lost_sitting(store, cfg: TrainConfig, step: int) -> int | None:
    """The step an earlier sitting of this run reached (its partial curve in the store) where no checkpoint that far
    is here: said in one line, and recorded with the route this sitting trains under; None otherwise."""
    if store is None:
        return None
    from .store import partial_path, read_entry
    path = partial_path(store, cfg.hash())
    if not path.is_file():
        return None
    reached = int((read_entry(path).get("progress") or {}).get("step") or 0)
    if reached <= step:
        return None
    print(f"sinkpaper: {cfg.name} seed {cfg.run.seed}: an earlier sitting reached step {reached:,}, but no checkpoint "
          f"that far is here; training from step {step:,} (restore one first: python -m sinkpaper store restore)",
          file=sys.stderr, flush=True)
    return reached


def _check_run_dir(out: Path, cfg: TrainConfig, resume: bool) -> Path:
    """The run directory's config file; refuses a directory that holds another run, or this run's checkpoints
    without ``resume``, before any compute."""
    config_path = out / "config.json"
    if config_path.exists():
        old = json.loads(config_path.read_text())
        if old.get("hash") != cfg.hash():
            changed = _first_changed_field(identity({k: v for k, v in old.items() if k != "hash"}), cfg.identity())
            raise ValueError(f"{out} holds a different run (config hash {old.get('hash')} != {cfg.hash()}"
                             + (f"; {changed} differs" if changed else "") + "); use another --out")
        if not resume and latest_checkpoint(out) is not None:
            raise ValueError(f"{out} already has checkpoints of this run; pass --resume to continue it")
    return config_path


def _first_changed_field(old: dict, new: dict, where: str = "") -> str | None:
    """The first result-changing field (dotted, e.g. "optim.lr: 0.02 -> 0.04") where two identities differ."""
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key), new.get(key)
        name = f"{where}.{key}" if where else key
        if isinstance(a, dict) and isinstance(b, dict):
            found = _first_changed_field(a, b, name)
            if found:
                return found
        elif a != b:
            return f"{name}: {a!r} -> {b!r}"
    return None


def _processes(cfg: TrainConfig) -> tuple[torch.device, int, int]:
    """(device, rank, world size): one process, or one of torchrun's (its process group started here)."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    device = device_of(cfg)
    if world > 1:
        import torch.distributed as dist
        if not dist.is_initialized():
            dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
        if device.type == "cuda":
            device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
            torch.cuda.set_device(device)
    return device, rank, world


def _restore(ckpt: Path, model, optimizer, scheduler, device) -> tuple[int, int, float, float | None, list, dict | None]:
    """Load a checkpoint into the model, optimizer, scheduler and the random state; (step, tokens, wall seconds,
    CPU seconds or None where the checkpoint kept none, the routes it trained under: [] where it kept none, what
    was rounded where it was unpacked from a packed copy: None otherwise)."""
    _unwrap(model).load_state_dict(checkpoint_weights(ckpt, device), strict=False)
    st = torch.load(ckpt / "state.pt", map_location="cpu", weights_only=False)
    optimizer.load_state_dict(st["optimizer"])
    scheduler.load_state_dict(st["scheduler"])
    torch.set_rng_state(st["rng_torch"])
    if st.get("rng_cuda") is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(st["rng_cuda"])
    return (st["step"], st["tokens"], st["wall_seconds"], st.get("cpu_seconds"), list(st.get("routes") or []),
            st.get("compact"))


def _progress_bar(cfg: TrainConfig, step: int):
    from ..progress import bar

    return bar(total=cfg.optim.steps, initial=step, desc=cfg.name, unit="step")


def _truncate_log(path: Path, step: int) -> None:
    """Drop log lines past the checkpoint a resumed run restarts from (they will be written again)."""
    if path.exists():
        keep = [line for line in path.read_text().splitlines() if line and json.loads(line)["step"] <= step]
        atomic_write_text(path, "".join(line + "\n" for line in keep))


def read_log(path: str | Path) -> list[dict]:
    path = Path(path)
    return [json.loads(line) for line in path.read_text().splitlines() if line] if path.exists() else []


def _last_loss(path: Path) -> float | None:
    losses = [r["loss"] for r in read_log(path) if "loss" in r]
    return losses[-1] if losses else None
