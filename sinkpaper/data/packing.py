"""Packing a token stream into training windows, exactly as the paper describes, plus its data interventions.

The stream is documents joined by EOS. A window is context+1 consecutive tokens starting at an arbitrary
offset (so by default position 1 holds an arbitrary token, no BOS); inputs are window[:-1] and targets
window[1:]. Interventions (Sections 5-6 of the paper and Barbero et al. 2025), all optional:

- `bos`: a fixed BOS at position 1 (the window then holds BOS + context tokens);
- `fixed_token` at position `fixed_pos` (1-based): the input there is replaced by one fixed token id;
- `random_span` = (s, e): inputs at positions s..e-1 (1-based) are replaced by uniform random tokens;
- `unique_tokens`: only the first N tokens of the stream are ever sampled (the paper's amount of unique data);
- `prefix_len` = p (prefix LM): the first p-1 targets carry no loss (the model's mask makes them bidirectional);
- `doc_ids`: document ids per position (for intra-document masking), counted from the EOS tokens.

Targets that predict an inserted token (a fixed or random token) carry no loss (-100): they are not data.
Window offsets are a pure function of (seed, step), so a resumed run sees exactly the batches it would have, and
under data parallelism each process takes a fixed slice of the same batch (`Packing.batch(..., rank, world)`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

IGNORE = -100


@dataclass(frozen=True)
class Packing:
    context: int                       # T: tokens the model sees per window
    bos_id: int | None = None          # fixed BOS at position 1 when set
    fixed_token: int | None = None     # a fixed token id at position fixed_pos
    fixed_pos: int = 1
    random_span: tuple[int, int] | None = None  # (s, e), 1-based, e exclusive
    random_vocab: tuple[int, int] | None = None  # [lo, hi) ids the random tokens come from
    unique_tokens: int | None = None   # cap on the distinct training tokens ever sampled
    prefix_len: int | None = None      # prefix LM: no loss on the first p-1 targets
    eos_id: int | None = None          # for document ids
    bos_each_document: bool = False    # a BOS before every document that starts inside the window too (after each
                                       # EOS), as packing with intra-document masking does (Barbero et al. 2025)

    def __post_init__(self):
        if self.context < 2:
            raise ValueError(f"context must be >= 2 tokens, got {self.context}")
        if self.fixed_token is not None and not 1 <= self.fixed_pos <= self.context:
            raise ValueError(f"fixed_pos must be in [1, context={self.context}], got {self.fixed_pos}")
        if self.fixed_token is not None and self.bos_id is not None and self.fixed_pos == 1:
            raise ValueError("fixed_token at position 1 and bos both fix position 1; use one")
        if self.random_span is not None:
            s, e = self.random_span
            if not 1 <= s < e <= self.context + 1:
                raise ValueError(f"random_span (s, e) needs 1 <= s < e <= context+1, got {self.random_span}")
            if self.random_vocab is None:
                raise ValueError("random_span needs random_vocab = (lo, hi) token ids")
        if self.unique_tokens is not None and self.unique_tokens < self.context + 1:
            raise ValueError(f"unique_tokens must be >= context+1 = {self.context + 1}, got {self.unique_tokens}")
        if self.bos_each_document and (self.bos_id is None or self.eos_id is None):
            raise ValueError("bos_each_document needs bos_id (a BOS at the window's start) and eos_id (where a "
                             "document ends)")
        if self.prefix_len is not None and not 1 <= self.prefix_len <= self.context:
            raise ValueError(f"prefix_len must be in [1, context={self.context}], got {self.prefix_len}")

    @property
    def span(self) -> int:
        """Stream tokens per window (BOS is not taken from the stream)."""
        return self.context + (0 if self.bos_id is not None else 1)

    def offsets(self, stream_len: int, batch: int, seed: int, step: int) -> np.ndarray:
        """[batch] window starts for this step, reproducible from (seed, step) alone."""
        usable = min(stream_len, self.unique_tokens or stream_len)
        if usable < self.span:
            raise ValueError(f"the token stream has {usable} usable tokens, fewer than one window ({self.span})")
        rng = np.random.default_rng([seed, step])
        return rng.integers(0, usable - self.span + 1, size=batch)

    def windows(self, stream: np.ndarray, starts: np.ndarray, seed: int = 0, step: int = 0,
                rows: slice = slice(None)) -> dict:
        """Batch dict: input_ids [B, T], targets [B, T] (IGNORE = no loss), and doc_ids [B, T] when eos_id.
        `rows` keeps only those windows (only they are read from the stream); the random tokens are drawn for
        all of `starts` first, so a window's content does not depend on which rows are kept."""
        n = len(starts)
        starts = starts[rows]
        idx = starts[:, None] + np.arange(self.span)[None, :]
        win = stream[idx].astype(np.int64)
        if self.bos_id is not None:
            win = np.concatenate([np.full((len(starts), 1), self.bos_id, dtype=np.int64), win], axis=1)
        inserted = np.zeros_like(win, dtype=bool)   # positions whose token is not data
        if self.bos_id is not None:
            inserted[:, 0] = True
        if self.bos_each_document:
            win, inserted = self._bos_after_each_eos(win, inserted)
        if self.fixed_token is not None:
            win[:, self.fixed_pos - 1] = self.fixed_token
            inserted[:, self.fixed_pos - 1] = True
        if self.random_span is not None:
            s, e = self.random_span
            lo, hi = self.random_vocab
            rng = np.random.default_rng([seed, step, 1])
            win[:, s - 1:e - 1] = rng.integers(lo, hi, size=(n, e - s))[rows]
            inserted[:, s - 1:e - 1] = True
        inputs, targets = win[:, :-1], win[:, 1:].copy()
        targets[inserted[:, 1:]] = IGNORE
        if self.prefix_len is not None and self.prefix_len > 1:
            targets[:, : self.prefix_len - 1] = IGNORE
        batch = {"input_ids": torch.from_numpy(inputs.copy()), "targets": torch.from_numpy(targets)}
        if self.eos_id is not None:
            batch["doc_ids"] = torch.from_numpy(document_ids(inputs, self.eos_id))
        return batch

    def _bos_after_each_eos(self, win: np.ndarray, inserted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """A BOS inserted after every EOS of each window (the tokens after it move right; the window keeps its
        length, so its last tokens fall off)."""
        out, mark = np.empty_like(win), np.zeros_like(inserted)
        for i, (row, ins) in enumerate(zip(win, inserted)):
            toks, flags = [], []
            for t, f in zip(row, ins):
                toks.append(t)
                flags.append(f)
                if t == self.eos_id:
                    toks.append(self.bos_id)
                    flags.append(True)
            out[i], mark[i] = toks[: win.shape[1]], flags[: win.shape[1]]
        return out, mark

    def batch(self, stream: np.ndarray, batch: int, seed: int, step: int, *, rank: int = 0, world: int = 1) -> dict:
        """The step's batch of `batch` windows, or under data parallelism (`world` processes) this rank's share:
        rows [rank * batch/world, (rank+1) * batch/world) of the same batch. The shares are disjoint, their
        union is the one-process batch, and a rank reads only its own windows from the stream."""
        if not 0 <= rank < world:
            raise ValueError(f"rank must be in [0, world={world}), got {rank}")
        if batch % world:
            raise ValueError(f"a batch of {batch} windows cannot be split evenly over {world} processes")
        per = batch // world
        return self.windows(stream, self.offsets(len(stream), batch, seed, step), seed, step,
                            rows=slice(rank * per, (rank + 1) * per))

    def eval_batch(self, stream: np.ndarray, n: int, seed: int = 1234) -> dict:
        """n fixed held-out windows, evenly spread over the validation stream (the same every evaluation)."""
        if len(stream) < self.span:
            raise ValueError(f"the validation stream has {len(stream)} tokens, fewer than one window ({self.span})")
        starts = np.linspace(0, len(stream) - self.span, num=n).astype(np.int64)
        return self.windows(stream, starts, seed=seed, step=2**31)  # a step no training batch uses


def doc_start_starts(stream: np.ndarray, n: int, eos_id: int, span: int) -> np.ndarray:
    """Starts of ``n`` windows of ``span`` tokens, evenly spread over ``stream``, each holding a document end (EOS)
    a third of the way in, so the next document starts inside the window with two thirds of it left to read;
    fewer when the stream has fewer such ends."""
    at = span // 3
    ends = np.flatnonzero(stream == eos_id)
    ends = ends[(ends >= at) & (ends - at + span <= len(stream))]
    if len(ends) == 0:
        return np.zeros(0, dtype=np.int64)
    pick = ends[np.linspace(0, len(ends) - 1, num=min(n, len(ends))).astype(np.int64)]
    return (pick - at).astype(np.int64)


def document_ids(inputs: np.ndarray, eos_id: int) -> np.ndarray:
    """[B, T] document index per position: a new document starts right after each EOS (the EOS closes its own)."""
    eos = inputs == eos_id
    starts = np.concatenate([np.zeros_like(eos[:, :1]), eos[:, :-1]], axis=1)
    return np.cumsum(starts, axis=1).astype(np.int64)
