"""Why the sink forms, in the Bigram-Backcopy miniature (Guo et al. 2024, "active-dormant" heads): a head
that must copy the token before a trigger has nothing to do at every other position, and parks its
attention on the fixed first token; the first token's value is small, so parking changes nothing.

`trigger_attention` measures this for every (layer, head) of a trained `SinkModel`; `head_rows` is the same
numbers as one table row per head, and `attention_by_key` shows where the ordinary queries park. For one
head on one held-out sequence: its map (`head_map`), the cells a copy must look at (`trigger_cells`) and a
sequence with enough triggers to show them (`pick_sequence`).
"""
from __future__ import annotations

import numpy as np
import torch


@torch.no_grad()
def trigger_attention(model, input_ids: torch.Tensor, n_triggers: int) -> dict:
    """Per layer x head [L][H]: mean attention to token 1 from queries on a trigger token ("active": it must
    copy) and from the other queries ("dormant"), mean attention to the previous token from trigger queries and
    (the contrast for the copy) from the other queries, and the value norm of token 1 over the mean value norm
    of the other tokens. Query position 1 is excluded (it can only see itself)."""
    trace = model.trace(input_ids)
    ids = input_ids.to(trace.attentions[0].device)
    trig = ids[:, 1:] < n_triggers                         # [B, T-1]: queries at positions 2..T
    if not trig.any() or trig.all():
        raise ValueError("the inputs need both trigger and non-trigger positions")
    out = {k: [] for k in ("bos_from_trigger", "bos_from_other", "previous_from_trigger", "previous_from_other",
                           "value_norm_ratio")}
    for attn, v in zip(trace.attentions, trace.values):
        a = attn.float()                                    # [B, H, T, T]
        to_bos = a[:, :, 1:, 0]                             # [B, H, T-1]
        prev = torch.diagonal(a, offset=-1, dim1=-2, dim2=-1)  # a[t, t-1]: [B, H, T-1]
        m = trig[:, None, :].expand_as(to_bos)
        mean = lambda x, mask: (x * mask).sum((0, 2)) / mask.sum((0, 2)).clamp_min(1)  # noqa: E731
        out["bos_from_trigger"].append(mean(to_bos, m).tolist())
        out["bos_from_other"].append(mean(to_bos, ~m).tolist())
        out["previous_from_trigger"].append(mean(prev, m).tolist())
        out["previous_from_other"].append(mean(prev, ~m).tolist())
        norms = v.float().norm(dim=-1)                      # [B, H, T]
        out["value_norm_ratio"].append((norms[..., 0].mean(0) / norms[..., 1:].mean((0, 2))).tolist())
    out["trigger_fraction"] = float(trig.float().mean())
    return out


# the table columns of `head_rows`, each from one entry of `trigger_attention`
HEAD_COLUMNS = {"to BOS from trigger queries": "bos_from_trigger",
                "to BOS from other queries": "bos_from_other",
                "to previous token from trigger queries": "previous_from_trigger",
                "to previous token from other queries": "previous_from_other",
                "BOS value norm / others'": "value_norm_ratio"}


def head_rows(model, input_ids: torch.Tensor, n_triggers: int, digits: int = 3) -> list[dict]:
    """`trigger_attention` as one row per (layer, head): {"layer", "head", *HEAD_COLUMNS}, rounded."""
    m = trigger_attention(model, input_ids, n_triggers)
    return [{"layer": layer, "head": head,
             **{col: round(m[key][layer][head], digits) for col, key in HEAD_COLUMNS.items()}}
            for layer in range(len(m["bos_from_trigger"])) for head in range(len(m["bos_from_trigger"][layer]))]


@torch.no_grad()
def attention_by_key(model, input_ids: torch.Tensor, n_triggers: int, n_keys: int = 5, digits: int = 3
                     ) -> list[dict]:
    """Per (layer, head): the mean attention that ordinary (non-trigger) queries put on each of the first
    ``n_keys`` key positions (over the queries after that position): where a head parks when it has
    nothing to copy."""
    trace = model.trace(input_ids)
    ordinary = input_ids >= n_triggers                                        # [B, T] non-trigger queries
    rows = []
    for layer, attn in enumerate(trace.attentions):
        a = attn.float()                                                      # [B, H, T, T]
        for head in range(a.shape[1]):
            row = {"layer": layer, "head": head}
            for k in range(n_keys):
                q = ordinary.clone()
                q[:, : k + 1] = False                                         # queries after key k
                row[f"to position {k + 1}"] = round(float(a[:, head, :, k][q].mean()), digits)
            rows.append(row)
    return rows


# ---------------------------------------------------------------------------------- one head, one sequence
@torch.no_grad()
def head_map(model, input_ids: torch.Tensor, layer: int, head: int) -> np.ndarray:
    """[T, T] attention map of one head on one sequence (input_ids [T] or [1, T])."""
    ids = input_ids.reshape(1, -1)
    return model.trace(ids).attentions[layer][0, head].float().numpy()


def trigger_cells(input_ids: torch.Tensor, n_triggers: int) -> list[tuple[int, int]]:
    """(query, key) = (t, t-1) for every trigger query t >= 1 (0-based) of one sequence: where a copy looks."""
    ids = input_ids.reshape(-1).tolist()
    return [(t, t - 1) for t in range(1, len(ids)) if ids[t] < n_triggers]


def pick_sequence(input_ids: torch.Tensor, n_triggers: int, want: int = 3) -> int:
    """Index of the first held-out sequence with at least ``want`` trigger queries (else the one with most)."""
    counts = (input_ids[:, 1:] < n_triggers).sum(1)
    hits = (counts >= want).nonzero().flatten()
    return int(hits[0]) if len(hits) else int(counts.argmax())
