"""A run's training batches, in order, on its device.

A batch is a pure function of (seed, step) (:meth:`sinkpaper.data.packing.Packing.batch`), so it can be built
before the step that uses it. On a GPU the model's step is queued asynchronously, and a batch built on the host
after it would leave the GPU idle meanwhile: :class:`Batches` builds ``ahead`` batches on a background thread, in
pinned memory, and copies each to the device without blocking. On the CPU (``ahead=0``) a batch is built when it
is asked for: a thread would take the core the step runs on.
"""
from __future__ import annotations

from collections import deque
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch

from ..data.packing import Packing


class Batches:
    """Iterator over the micro-batches from ``start`` on: each a dict of tensors on ``device``.

    ``index`` counts micro-batches (step x grad_accum + micro-step), as :meth:`Packing.batch` does."""

    def __init__(self, packing: Packing, stream: np.ndarray, micro: int, seed: int, start: int, device: torch.device,
                 *, rank: int = 0, world: int = 1, ahead: int | None = None):
        self.packing, self.stream, self.micro, self.seed = packing, stream, micro, seed
        self.rank, self.world, self.device = rank, world, device
        self.ahead = (4 if device.type == "cuda" else 0) if ahead is None else ahead
        self.pin = device.type == "cuda"
        self.next_index = start
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="batches") if self.ahead else None
        self._queue: deque = deque()

    def _build(self, index: int) -> dict[str, torch.Tensor]:
        b = self.packing.batch(self.stream, self.micro, self.seed, index, rank=self.rank, world=self.world)
        return {k: (v.pin_memory() if self.pin else v) for k, v in b.items()}

    def __iter__(self) -> Batches:
        return self

    def __next__(self) -> dict[str, torch.Tensor]:
        if self._pool is None:
            b = self._build(self.next_index)
        else:
            while len(self._queue) <= self.ahead:
                i = self.next_index + len(self._queue)
                self._queue.append(self._pool.submit(self._build, i))
            b = self._queue.popleft().result()
        self.next_index += 1
        return {k: v.to(self.device, non_blocking=self.pin) for k, v in b.items()}

    def close(self) -> None:
        if self._pool is not None:
            for f in self._queue:
                f.cancel()
            self._pool.shutdown(wait=True)
            self._pool = None
