"""Chapter 10 (data packing and BOS, Barbero et al. 2025): a model measured with and without a BOS token.

Two instruments, one pairing rule. The inputs are *paired*: the BOS version of a window is the BOS token
followed by the first T - 1 tokens of the window without BOS, so both see the same text. The loss compares
the same T - 1 targets (tokens 2..T of the window without BOS), each predicted from the same text, with or
without the BOS in front of it.

- :func:`lm_bos_contrast`: a pretrained causal LM (``sinkpaper.lms.load_lm``) on natural-text windows.
- :func:`run_bos_ablation`: a model trained here with a fixed BOS (a miniature run, or a GPU run of
  ``configs/packing.yaml``), on held-out windows of its own data: Barbero et al.'s inference question, "what
  happens when a model trained with a BOS is run without it?".

Plus the chapter's tables of stored runs. The chapter's claims are judged by the rules in :mod:`sinkpaper.paper`.
"""
from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np
import torch

from .. import metrics, provenance

IGNORE = -100
SHOWN_KS = (1, 2, 3, 4, 5)


# ------------------------------------------------------------------------------------------------ pairing
def with_bos(content: torch.Tensor, bos_id: int) -> torch.Tensor:
    """[N, T] windows -> [N, T]: the BOS token, then the first T - 1 tokens of each window."""
    if content.dim() != 2 or content.shape[1] < 2:
        raise ValueError(f"content must be [N, T] with T >= 2, got {tuple(content.shape)}")
    bos = torch.full((content.shape[0], 1), int(bos_id), dtype=content.dtype, device=content.device)
    return torch.cat([bos, content[:, :-1]], dim=1)


def shared_targets(content: torch.Tensor, bos: bool) -> torch.Tensor:
    """[N, T] next-token targets (IGNORE = no loss) of the paired inputs, on the shared targets only:
    tokens 2..T of ``content``. Without BOS position t predicts content[t + 1]; with BOS position t holds
    content[t - 1] and predicts content[t] (its first position, BOS itself, predicts content[0]: not shared)."""
    targets = torch.full_like(content, IGNORE)
    if bos:
        targets[:, 1:] = content[:, 1:]
    else:
        targets[:, :-1] = content[:, 1:]
    return targets


def nll_sum(logits: torch.Tensor, targets: torch.Tensor) -> tuple[float, int]:
    """(summed negative log-likelihood, number of targets) over the targets that are not IGNORE."""
    logits = logits.float()
    nll = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1).to(logits.device),
                                            ignore_index=IGNORE, reduction="sum")
    return float(nll), int((targets != IGNORE).sum())


# ---------------------------------------------------------------------------------------------- measuring
def sinks_elsewhere(alphas: torch.Tensor, ids: torch.Tensor, epsilon: float, k_max: int | None = None,
                    decode: Callable[[int], str] | None = None, top: int = 5) -> dict:
    """Where the sink goes when it is not on token 1: the percentage of (sample, layer, head) with a sink at
    some position 2..k_max (default T/2: later keys are averaged over few queries, so their alpha is high
    for any head), and the tokens most often found at those positions.

    alphas [N, L, H, T] (metrics.TraceStats.alphas); ids [N, T] the inputs they came from."""
    N, _, _, T = alphas.shape
    k_max = k_max or T // 2
    above = alphas[..., 1:k_max] > epsilon                       # positions 2..k_max
    where = above.nonzero()
    tokens = ids.cpu()[where[:, 0], where[:, 3] + 1].tolist() if len(where) else []
    counts = Counter(tokens).most_common(top)
    return {"k_max": k_max, "sink_elsewhere": float(above.any(-1).float().mean()) * 100,
            "sink_tokens": [(decode(t) if decode else int(t), c) for t, c in counts],
            "sink_positions": [(int(k) + 2, c) for k, c in Counter(where[:, 3].tolist()).most_common(top)]}


def _condition(stats: metrics.TraceStats, ids: torch.Tensor, bos: bool, epsilon: float, loss: tuple | None,
               seconds: float, decode=None) -> dict:
    s = metrics.summarize(stats, epsilon)
    out = {"bos": bos, "condition": "with BOS" if bos else "without BOS", "sink_k": s["sink_k"],
           "alpha_1_mean": s["alpha_1_mean"], "alpha_1_matrix": s["alpha_1_matrix"],
           "per_layer_sink_1": s["per_layer_sink_1"], "n_samples": s["n_samples"], "seq_len": s["seq_len"],
           **sinks_elsewhere(stats.alphas, ids, epsilon, decode=decode), "seconds": round(seconds, 1)}
    if loss is not None and loss[1]:
        out.update(loss=loss[0] / loss[1], perplexity=float(np.exp(loss[0] / loss[1])), loss_targets=loss[1])
    else:
        out.update(loss=None, perplexity=None, loss_targets=0)
    return out


def prepends_bos(tokenizer) -> bool:
    """Whether the tokenizer puts its BOS first by default: the input the model was trained and released for."""
    bos = getattr(tokenizer, "bos_token_id", None)
    ids = tokenizer("a")["input_ids"]
    return bos is not None and len(ids) > 0 and int(ids[0]) == int(bos)


@torch.no_grad()
def lm_bos_contrast(lm, *, n_samples: int = 100, seq_len: int = 64, epsilon: float = metrics.EPSILON,
                    seed: int = 0, batch_size: int = 25, loss_samples: int = 16) -> dict:
    """A pretrained LM on the same natural-text windows without and with BOS at position 1.

    Per condition: Sink_k (k = 1..10), mean alpha_1, the sinks at positions 2..T/2 and their tokens, and the
    loss / perplexity on the shared targets of the first ``loss_samples`` windows (0 = skip the loss: it runs
    the LM head, which for a large vocabulary costs more than the rest of the model)."""
    from ..probes import make_inputs

    metrics.check_epsilon(epsilon)
    metrics.check_seq_len(seq_len)
    if lm.bos_token_id is None:
        raise ValueError(f"{lm.name}'s tokenizer has no BOS token: there is nothing to add or remove")
    if loss_samples < 0:
        raise ValueError(f"loss_samples must be >= 0, got {loss_samples}")
    probe = make_inputs(lm.tokenizer, "natural", n_samples=n_samples, seq_len=seq_len, bos=False, seed=seed)
    content = probe.input_ids
    decode = lambda t: lm.tokenizer.decode([t])  # noqa: E731
    conditions = []
    for bos in (False, True):
        ids = with_bos(content, lm.bos_token_id) if bos else content
        t0 = time.perf_counter()
        stats = metrics.measure(lambda x: lm.trace(x, with_qkv=False), ids, batch_size=batch_size, progress=False)
        loss = None
        if loss_samples:
            total, count = 0.0, 0
            ids_l, tg = ids[:loss_samples], shared_targets(content[:loss_samples], bos)
            for i in range(0, len(ids_l), 8):  # 8 rows: a 262k-way Gemma head is 0.5 GB of fp32 logits
                logits = lm.model(input_ids=ids_l[i:i + 8].to(lm.device), use_cache=False).logits
                s, c = nll_sum(logits, tg[i:i + 8])
                total, count = total + s, count + c
            loss = (total, count)
        conditions.append(_condition(stats, ids, bos, epsilon, loss, time.perf_counter() - t0, decode))
    return {"model": lm.name, "prepends_bos": prepends_bos(lm.tokenizer),
            "bos_token": lm.tokenizer.convert_ids_to_tokens(int(lm.bos_token_id)), "epsilon": epsilon,
            "conditions": conditions,
            "provenance": provenance.stamp(lm.device, **lm.provenance(), **probe.provenance, n_samples=n_samples,
                                           seq_len=seq_len, loss_samples=min(loss_samples, n_samples),
                                           computed_now=True, source_of_numbers="computed now")}


@torch.no_grad()
def run_bos_ablation(run_dir: str | Path, *, n_samples: int = 100, seq_len: int | None = None,
                     epsilon: float = metrics.EPSILON, device: str = "cpu", batch_size: int = 25) -> dict:
    """A model trained with a fixed BOS (``data.bos``), on ``n_samples`` held-out windows of its own
    validation stream (evenly spread, as the trainer's evaluation), with its BOS and without it.

    Per condition: Sink_k, mean alpha_1, the sinks at positions 2..T/2, and the loss on the shared targets."""
    from ..data.packing import document_ids
    from ..train.run import open_run

    run = open_run(run_dir)
    cfg = run.config
    if not cfg.data.bos:
        raise ValueError(f"{run_dir} was trained without a fixed BOS (data.bos is false): nothing to remove")
    metrics.check_epsilon(epsilon)
    T = int(seq_len or cfg.eval.seq_len)
    metrics.check_seq_len(T)
    model = run.model(device)
    data = run.data
    if len(data.val) < T:
        raise ValueError(f"the validation stream has {len(data.val)} tokens, fewer than one window ({T})")
    # the trainer's evaluation windows (Packing.eval_batch with a BOS: BOS + val[s:s + T - 1]), so the BOS
    # condition reproduces the run's own final Sink_k when n_samples = eval.n_samples and T = eval.seq_len
    starts = np.linspace(0, len(data.val) - T, num=n_samples).astype(np.int64)
    content = torch.from_numpy(np.stack([data.val[s:s + T] for s in starts]).astype(np.int64))

    def docs(ids):
        return (torch.from_numpy(document_ids(ids.cpu().numpy(), data.eos_id)).to(device)
                if cfg.data.doc_mask else None)

    conditions = []
    for bos in (True, False):
        ids = with_bos(content, data.bos_id) if bos else content
        t0 = time.perf_counter()
        stats = metrics.measure(lambda x: model.trace(x.to(device), doc_ids=docs(x)), ids, batch_size=batch_size,
                                progress=False)
        total, count = 0.0, 0
        tg = shared_targets(content, bos)
        for i in range(0, len(ids), batch_size):
            x = ids[i:i + batch_size].to(device)
            s, c = nll_sum(model(x, doc_ids=docs(x)).logits, tg[i:i + batch_size])
            total, count = total + s, count + c
        conditions.append(_condition(stats, ids, bos, epsilon, (total, count), time.perf_counter() - t0))
    trained = run.final_metrics()
    return {"run": cfg.name, "run_dir": str(run_dir), "hash": cfg.hash(), "epsilon": epsilon, "conditions": conditions,
            "trained_sink_1": (trained.get("sink_k") or {}).get("1"),
            "provenance": provenance.stamp(device, profile=cfg.profile, run=cfg.name, config_hash=cfg.hash(),
                                           tokens_seen=trained.get("tokens_seen"), steps=trained.get("step"),
                                           n_samples=n_samples, seq_len=T, data=data.name,
                                           computed_now=True, source_of_numbers="computed now")}


def short_provenance(result: Mapping) -> dict:
    """The provenance of an :func:`lm_bos_contrast` result, trimmed for figures.provenance_line."""
    pv = result["provenance"]
    keep = ("model", "hardware", "code_version", "torch", "python", "transformers", "dtype", "computed_now",
            "computed_at", "n_samples", "seq_len", "loss_samples")
    out = {k: pv[k] for k in keep if k in pv}
    out["weights"] = pv.get("source")
    out["text"] = f"{pv.get('text_source')} (Python {pv.get('python')}, sha256 {pv.get('text_sha256')})"
    out["epsilon"] = result["epsilon"]
    return out


def condition(result: Mapping, bos: bool) -> dict:
    return next(c for c in result["conditions"] if c["bos"] == bos)


def condition_rows(result: Mapping, label: str | None = None, ks: Sequence[int] = SHOWN_KS) -> list[dict]:
    """Table rows: one per condition, Sink_k for the shown k, mean alpha_1, sinks elsewhere, loss."""
    rows = []
    for c in result["conditions"]:
        row = {} if label is None else {"model": label}
        row["BOS"] = "on" if c["bos"] else "off"
        row.update({f"Sink_{k} (%)": round(c["sink_k"][str(k)], 2) for k in ks})
        row["mean alpha_1"] = round(c["alpha_1_mean"], 3)
        row[f"sink at 2..{c['k_max']} (%)"] = round(c["sink_elsewhere"], 2)
        row["tokens at those sinks"] = ", ".join(f"{t!r} x{n}" for t, n in c["sink_tokens"][:3]) or "—"
        row["loss (shared targets)"] = None if c["loss"] is None else round(c["loss"], 3)
        row["perplexity"] = None if c["perplexity"] is None else round(c["perplexity"], 2)
        rows.append(row)
    return rows


def sink_k_chart_rows(result: Mapping, label: str, k_max: int = 10) -> list[dict]:
    """Long-form rows (setting, k, Sink_k %) for a chart of Sink_k over the first k_max positions."""
    return [{"setting": f"{label}, BOS {'on' if c['bos'] else 'off'}", "k": k, "Sink_k (%)": c["sink_k"][str(k)]}
            for c in result["conditions"] for k in range(1, k_max + 1) if str(k) in c["sink_k"]]


# ------------------------------------------------------------------------------------------------ the BOS audit
def bos_audit(lm, *, inputs: str = "natural", n_samples: int = 100, seq_len: int = 64,
              epsilon: float = metrics.EPSILON, seed: int = 0, policies: Sequence[str] | None = None,
              batch_size: int = 16) -> dict:
    """One model under every BOS policy (sinkpaper.probes.BOS_POLICIES: the tokenizer's default, a forced BOS, none,
    a random first token, the first token repeated), T tokens in all each time: Sink_1, alpha_1 and what stood at
    position 1. A policy the tokenizer cannot give (a forced BOS without a BOS token) is a row that says so, with
    no number. The answer to "what is Sink_1 of this model?" depends on this choice; here it is one table."""
    from ..lms import measure_sink
    from ..probes import BOS_POLICIES, default_prefix, make_inputs
    rows = []
    for policy in policies or BOS_POLICIES:
        try:
            probe = make_inputs(lm.tokenizer, inputs, n_samples=n_samples, seq_len=seq_len, seed=seed,
                                bos_policy=policy)
        except ValueError as e:
            rows.append({"policy": policy, "sink_1": None, "alpha_1": None, "why": str(e)})
            continue
        r = measure_sink(lm, probe, epsilon=epsilon, batch_size=batch_size, progress=False)
        first = probe.input_ids[:, 0]
        rows.append({"policy": policy, "sink_1": r["sink_k"]["1"], "alpha_1": r["alpha_1_mean"],
                     "first_token": lm.tokenizer.convert_ids_to_tokens(int(first[0])) if bool((first == first[0]).all())
                     else "varies", "measure_seconds": r["provenance"]["measure_seconds"]})
    return {"model": lm.name, "inputs": inputs, "n_samples": n_samples, "seq_len": seq_len, "epsilon": epsilon,
            "default_prefix": default_prefix(lm.tokenizer), "rows": rows,
            "provenance": provenance.stamp(lm.device, **lm.provenance(), seed=seed, source_of_numbers="computed now")}


BOS_AUDIT = "results/bos/audit-smollm2-gemma3.json"   # the stored audit of the two offline models (the CLI's --json)


def load_bos_audit(path: str = BOS_AUDIT) -> dict | None:
    """The stored audit ({"audit": "bos", "models": [bos_audit(...), ...]}), or None where there is none."""
    import json
    from pathlib import Path

    p = Path(path)
    if not p.exists():
        return None
    data = json.loads(p.read_text())
    if data.get("audit") != "bos" or not isinstance(data.get("models"), list):
        raise ValueError(f"{path} is not a BOS audit (python -m sinkpaper bos-audit --json {path} writes one)")
    return data


def bos_audit_rows(audit: Mapping) -> list[dict]:
    """One row per model: Sink_1 % under each policy (a policy the tokenizer cannot give: '-'), and what its
    tokenizer puts in front by itself."""
    from ..probes import BOS_POLICIES

    rows = []
    for m in audit["models"]:
        by = {r["policy"]: r for r in m["rows"]}
        # default_prefix holds token ids; the default policy's row names the token that stood first
        adds = (by.get("default", {}).get("first_token") or f"{len(m['default_prefix'])} token(s)") \
            if m["default_prefix"] else "nothing"
        rows.append({"model": m["model"], "the tokenizer adds": adds,
                     **{f"Sink_1 %, {p}": (f"{by[p]['sink_1']:.1f}" if p in by and by[p]["sink_1"] is not None
                                           else "-") for p in BOS_POLICIES}})
    return rows


def bos_audit_reading(audit: Mapping) -> str:
    """One sentence per model: how far its Sink_1 moves between the policies, and under which it is smallest."""
    out = []
    for m in audit["models"]:
        vals = {r["policy"]: r["sink_1"] for r in m["rows"] if r["sink_1"] is not None}
        if not vals:
            continue
        lo, hi = min(vals, key=vals.get), max(vals, key=vals.get)
        out.append(f"{m['model']}: Sink_1 from {vals[lo]:.1f} % ({lo}) to {vals[hi]:.1f} % ({hi}) on the same "
                   f"{m['n_samples']} windows, T = {m['seq_len']}")
    return ("; ".join(out) + ". The BOS policy is part of a sink number: a table that does not say it cannot be "
            "compared.") if out else ""


def format_bos_audit(result: Mapping) -> str:
    """The audit as a Markdown table, one row per policy."""
    lines = [f"{result['model']} ({result['inputs']} text, T = {result['seq_len']}, {result['n_samples']} samples, "
             f"epsilon {result['epsilon']:g}; the tokenizer adds "
             f"{result['default_prefix'] or 'nothing'} in front by itself)",
             "", "| BOS policy | position 1 | Sink_1 % | alpha_1 |", "|---|---|---|---|"]
    for r in result["rows"]:
        if r["sink_1"] is None:
            lines.append(f"| {r['policy']} | - | - | - ({r['why']}) |")
        else:
            lines.append(f"| {r['policy']} | `{r['first_token']}` | {r['sink_1']:.1f} | {r['alpha_1']:.3f} |")
    return "\n".join(lines)
