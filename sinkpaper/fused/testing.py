"""The fused kernels against their fp64 PyTorch references: one comparison, shared by tests/test_fused.py (which
asserts on it) and chapter 12 (which shows it).

- :func:`compare`: given inputs, the Triton kernel's output, row statistic, every gradient and
  ``column_stats`` (alpha, sink column) next to the references computed in fp64 from the same inputs
  (:func:`sinkpaper.fused.reference_attention`, :func:`~sinkpaper.fused.reference_column_stats`). Returns a
  :class:`KernelCheck`: per tensor a :class:`TensorError` (max relative error, and elementwise closeness at any
  atol / rtol), and :meth:`KernelCheck.row`, the error-table row.
- :func:`check_case` / :func:`error_table`: seeded random inputs for named masks and sinks, at a chosen shape,
  through :func:`compare`: the chapter's table.
- :func:`backend`: which Triton the kernels run on for a device, or why they cannot run there.

On CPU the kernels run under the Triton interpreter, which must be switched on (TRITON_INTERPRET=1) before
triton is imported; on a GPU they run compiled. The tolerances are the callers': the tests state theirs, the
chapter flags rows against :data:`TOLERANCE`.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Sequence

import torch

from . import api
from .reference import ColumnStats, reference_attention, reference_column_stats

MASKS = ("causal", "full", "window", "prefix", "document")
SINKS = ("none", "sink_logit", "kv_bias")
SINK_ARGS = ("sink_logit", "k_bias", "v_bias")   # the differentiable extra inputs of `kernels.attention`
TOLERANCE = 1e-5  # max relative error of fp32 kernels against fp64 (tests/test_fused.py asserts the same bound)
CPU_SHAPE = (1, 2, 45, 32)    # T = 45: not a multiple of the interpreter's 32-wide tiles
GPU_SHAPE = (2, 4, 1000, 64)  # T = 1000: not a multiple of the GPU tiles (64, 128)


def backend(device: str | torch.device) -> str:
    """Which Triton the kernels run on for tensors on ``device`` (raises when they cannot run there)."""
    dev = torch.device(device)
    if dev.type == "cuda":
        return f"compiled Triton on {torch.cuda.get_device_name(dev)}"
    if api.interpreting():
        return "the Triton interpreter on the CPU (TRITON_INTERPRET=1)"
    raise RuntimeError("the Triton kernels cannot run on the CPU here: set TRITON_INTERPRET=1 in the environment "
                       "before triton is imported (or use a CUDA device)")


def check_shape(shape: Sequence[int] | None, device: str | torch.device) -> tuple[int, int, int, int]:
    """A check's [B, H, T, D]: ``shape`` if given (positive ints, T >= 4), else the device's default."""
    if shape is None:
        return CPU_SHAPE if str(device) == "cpu" else GPU_SHAPE
    shape = tuple(shape)
    if len(shape) != 4 or not all(isinstance(x, int) and not isinstance(x, bool) and x >= 1 for x in shape) \
            or shape[2] < 4:
        raise ValueError(f"check_shape must be [B, H, T, D] with positive ints and T >= 4, got {list(shape)!r}")
    return shape


def rel_err(a: torch.Tensor, b: torch.Tensor) -> float:
    """max |a - b| / max |b|, b the reference (its scale floored at 1e-12, so an all-zero b gives |a - b| / 1e-12)."""
    a, b = a.detach().double(), b.detach().to(a.device).double()
    if b.numel() == 0:
        return 0.0
    return float((a - b).abs().max() / b.abs().max().clamp_min(1e-12))


@dataclass(frozen=True)
class TensorError:
    """One kernel tensor (``got``, as the kernel returned it) against its reference (``want``, fp64 inputs)."""
    got: torch.Tensor
    want: torch.Tensor

    @property
    def rel(self) -> float:
        """max |got - want| / max |want| (see :func:`rel_err`)."""
        return rel_err(self.got, self.want)

    @property
    def ref_max(self) -> float:
        """max |want|: the reference's scale (a gradient that is ~0 everywhere has no relative error to speak of)."""
        return float(self.want.detach().abs().max()) if self.want.numel() else 0.0

    def allclose(self, atol: float, rtol: float) -> bool:
        """Elementwise |got - want| <= atol + rtol |want| (torch.allclose, in fp64)."""
        return torch.allclose(self.got.detach().double(), self.want.detach().to(self.got.device).double(),
                              atol=atol, rtol=rtol)


@dataclass
class KernelCheck:
    """The result of :func:`compare`. ``errors`` in the order out, row statistic, dq, dk, dv, d<sink args>,
    alpha (column_stats), sink column (column_stats) (the last one only when both sides have a sink column)."""
    op: str
    errors: dict[str, TensorError]
    column_stats: ColumnStats             # the kernel's
    reference_column_stats: ColumnStats   # from the fp64 maps
    seconds: float                        # the kernel calls: forward, backward, column_stats

    @property
    def worst(self) -> float:
        return max(e.rel for e in self.errors.values())

    def row(self) -> dict:
        """The error-table row: every tensor's max relative error, the worst, the kernel seconds."""
        return {**{name: e.rel for name, e in self.errors.items()}, "worst": self.worst,
                "kernel seconds": round(self.seconds, 2)}


def compare(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, grad_out: torch.Tensor, *, op: str = "softmax",
            deterministic: bool = True, **options) -> KernelCheck:
    """The Triton kernel (``kernels.attention(..., impl="triton")`` forward with its row statistic, backward with
    ``grad_out``, and ``kernels.column_stats``) against the same computations on fp64 copies of the inputs.

    ``options`` are `kernels.attention`'s mask and sink arguments (causal, window, prefix, doc_ids, scale,
    sink_logit, k_bias, v_bias, sigmoid_bias, ...); the sink arguments are differentiated like q, k, v. The
    caller's tensors are not modified. ``column_stats`` gets every option except v_bias (values never enter the
    map: v_bias alone is the paper's V bias, added after the attention, and has no column). ``deterministic``
    picks the backward (False: dQ added with atomics from the key-block programs)."""
    if op not in api.OPS:
        raise ValueError(f"unknown op {op!r}; valid: {', '.join(api.OPS)}")
    sinks = {n: x for n, x in options.items() if n in SINK_ARGS and x is not None}
    rest = {n: x for n, x in options.items() if n not in SINK_ARGS}
    names = ["dq", "dk", "dv"] + [f"d{n}" for n in sinks]
    leaves = [x.detach().requires_grad_() for x in (q, k, v, *sinks.values())]
    t0 = time.perf_counter()
    out, stat = api.attention(*leaves[:3], op=op, return_lse=True, impl="triton", deterministic=deterministic,
                              **rest, **dict(zip(sinks, leaves[3:])))
    grads = torch.autograd.grad(out, leaves, grad_out)
    col_sinks = {n: x.detach() for n, x in sinks.items() if n != "v_bias"}
    cs = api.column_stats(q.detach(), k.detach(), op=op, impl="triton", **rest, **col_sinks)
    seconds = time.perf_counter() - t0

    ref_leaves = [x.detach().double().requires_grad_() for x in (q, k, v, *sinks.values())]
    ref, ref_stat = reference_attention(*ref_leaves[:3], op=op, return_lse=True, **rest,
                                        **dict(zip(sinks, ref_leaves[3:])))
    ref_grads = torch.autograd.grad(ref, ref_leaves, grad_out.double())
    ref_cs = reference_column_stats(q.detach().double(), k.detach().double(), op=op, **rest,
                                    **{n: x.double() for n, x in col_sinks.items()})

    errors = {"out": TensorError(out.detach(), ref.detach()), "row statistic": TensorError(stat, ref_stat.detach())}
    errors.update({n: TensorError(g, rg) for n, g, rg in zip(names, grads, ref_grads)})
    errors["alpha (column_stats)"] = TensorError(cs.alpha, ref_cs.alpha)
    if cs.sink is not None and ref_cs.sink is not None:
        errors["sink column (column_stats)"] = TensorError(cs.sink, ref_cs.sink)
    return KernelCheck(op=op, errors=errors, column_stats=cs, reference_column_stats=ref_cs, seconds=seconds)


# ------------------------------------------------------------------------------ seeded cases, the error table
def mask_kwargs(mask: str, batch: int, seq_len: int, device="cpu") -> dict:
    """The kernels' mask arguments for one named mask at this T: window T/3, prefix T/2 + 1, and three
    documents per row with boundaries that differ between rows."""
    if mask not in MASKS:
        raise ValueError(f"unknown mask {mask!r}; valid: {', '.join(MASKS)}")
    if mask == "causal":
        return {}
    if mask == "full":
        return {"causal": False}
    if mask == "window":
        return {"window": max(1, seq_len // 3)}
    if mask == "prefix":
        return {"prefix": seq_len // 2 + 1}
    rows = []
    for b in range(batch):
        cut1, cut2 = max(1, seq_len // 3 - b), max(2, (2 * seq_len) // 3 + b)
        rows.append([0 if t < cut1 else 1 if t < min(cut2, seq_len) else 2 for t in range(seq_len)])
    return {"doc_ids": torch.tensor(rows, dtype=torch.long, device=device)}


def sink_tensors(sink: str, H: int, D: int, gen: torch.Generator) -> dict:
    """Random sink arguments for one named sink variant: a per-head sink logit, or a per-head KV bias."""
    if sink not in SINKS:
        raise ValueError(f"unknown sink {sink!r}; valid: {', '.join(SINKS)}")
    if sink == "sink_logit":
        return {"sink_logit": torch.randn(H, generator=gen)}
    if sink == "kv_bias":
        return {"k_bias": torch.randn(H, D, generator=gen), "v_bias": torch.randn(H, D, generator=gen)}
    return {}


def check_case(op: str, mask: str, sink: str = "none", shape: Sequence[int] = CPU_SHAPE, seed: int = 0,
               device: str | torch.device = "cpu") -> KernelCheck:
    """:func:`compare` on seeded random fp32 inputs of ``shape`` [B, H, T, D] for one (operator, named mask,
    named sink)."""
    if op not in api.OPS:
        raise ValueError(f"unknown op {op!r}; valid: {', '.join(api.OPS)}")
    B, H, T, D = (int(x) for x in shape)
    gen = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(B, H, T, D, generator=gen) for _ in range(3))
    extra = sink_tensors(sink, H, D, gen)
    dout = torch.randn(B, H, T, D, generator=gen)
    return compare(*(x.to(device) for x in (q, k, v)), dout.to(device), op=op, **mask_kwargs(mask, B, T, device),
                   **{n: x.to(device) for n, x in extra.items()})


def error_table(ops: Sequence[str] | None = None, masks: Sequence[str] = MASKS, sinks: Sequence[str] = ("none",),
                shape: Sequence[int] = CPU_SHAPE, seed: int = 0, device: str | torch.device = "cpu",
                tolerance: float = TOLERANCE) -> list[dict]:
    """:func:`check_case` for every op x mask x sink (case i seeded ``seed + i``), one :meth:`KernelCheck.row`
    each, with "op", "mask", "sink" first and "within tolerance" (the worst error <= ``tolerance``). Raises when
    the kernels cannot run on ``device`` (see :func:`backend`)."""
    backend(device)
    rows = []
    for i, (op, mask, sink) in enumerate((o, m, s) for o in (ops or api.OPS) for m in masks for s in sinks):
        check = check_case(op, mask, sink, shape, seed + i, device)
        rows.append({"op": op, "mask": mask, "sink": sink, **check.row(),
                     "within tolerance": check.worst <= tolerance})
    return rows
