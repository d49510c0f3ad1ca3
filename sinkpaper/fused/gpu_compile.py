"""Compile the Triton kernels for an NVIDIA GPU on a machine without one.

`triton.compile` lowers a kernel's AST through Triton's IRs and PTX to a cubin with the ptxas that ships in the
triton wheel; no GPU or driver is needed. The CPU interpreter (TRITON_INTERPRET=1, how the tests run the kernels
here) executes the kernels' Python and cannot see what only the GPU compiler refuses: a global that is not a
constexpr, a dot too small for the tensor cores, an operation with no lowering. The first GPU lent to this project
(an H100, 2026-11-25) found the first of these in every kernel; this check would have.

It compiles, for sm_90 (the H100), every kernel the api launches at the block sizes and flags it picks on a GPU:
the forward at every op x mask; the backward and column-statistics kernels at every op (causal) and every mask
(softmax); and fp32, fp16, head dims 128 and 256, documents, a sink logit with v*, the forward without its
output (the column-statistics route), inputs read as views of the model's [B, T, H, D] layout, the backward that
adds dQ with atomics, and the delta pass. Run it in a process where TRITON_INTERPRET is unset:

    python -m sinkpaper.fused.gpu_compile          # exit 1 and the failures when a variant does not compile
"""
from __future__ import annotations

import os
import sys
import time

ARCH = 90                       # sm_90: the H100 and H200 this project's GPU notes and benchmarks name
FP32_POINTERS = ("S0", "V0", "Stat", "Delta", "Alpha", "DQA")
SCALARS = {"H": "i32", "T": "i32", "W": "i32", "scale": "fp32", "sig_bias": "fp32", "softpick_eps": "fp32"}
# what torch.compile passes when it traces the api's launches into a graph: inductor types Python floats as fp64
# and sizes as i64 where it cannot prove they fit in 32 bits (torch._inductor.codegen.triton_utils.signature_of)
INDUCTOR_SCALARS = {"H": "i64", "T": "i64", "W": "i64", "scale": "fp64", "sig_bias": "fp64", "softpick_eps": "fp64"}
KINDS = {"attn_fwd": "fwd", "attn_bwd_dkdv": "dkdv", "attn_bwd_dq": "dq", "column_stats_kernel": "stats"}
FLAGS = {"HAS_DOC": False, "HAS_SINK": False, "HAS_V0": False, "WRITE_OUT": True, "WRITE_STAT": True,
         "ATOMIC_DQ": False, "BTHD": False}  # defaults


def signature(fn, dtype: str, scalars: dict[str, str] = SCALARS) -> dict[str, str]:
    """Triton's signature of a kernel's runtime arguments: tensors of the input dtype, fp32 statistics, int32
    document ids, and the scalars' types: int32 sizes and fp32 floats when sinkpaper.fused.api launches the
    kernel itself, INDUCTOR_SCALARS under torch.compile; constexprs are marked."""
    sig = {}
    for p in fn.params:
        if p.is_constexpr:
            sig[p.name] = "constexpr"
        elif p.name in scalars:
            sig[p.name] = scalars[p.name]
        elif p.name == "DOC":
            sig[p.name] = "*i32"
        else:
            sig[p.name] = "*fp32" if p.name in FP32_POINTERS else f"*{dtype}"   # bf16 | fp16 | fp32: Triton's names
    return sig


def variants():
    """(kernel name, dtype, constexprs, launch options) for every variant checked (see the module's docstring)."""
    from . import api
    from .triton_kernels import MASK_CAUSAL, MASK_NONE, MASK_PREFIX, MASK_WINDOW, OPS
    masks = (MASK_NONE, MASK_CAUSAL, MASK_WINDOW, MASK_PREFIX)
    out = []

    def add(name, dtype="bf16", D=64, op=0, mask=MASK_CAUSAL, doc=False, scalars=SCALARS, **flags):
        blocks = api._blocks(KINDS[name], D, interpret=False)
        opts = {k: blocks.pop(k) for k in ("num_warps", "num_stages")}
        const = dict(D=D, BLOCK_D=api._pow2(D), OP=op, MASK=mask, HAS_DOC=doc, F32_DOT=False,
                     IEEE=dtype == "fp32", BTHD=False, **blocks)
        if name != "column_stats_kernel":
            const.update(DV=D, BLOCK_DV=api._pow2(D))
        if name == "attn_fwd":
            const.update({k: v for k, v in FLAGS.items() if k not in ("HAS_DOC", "ATOMIC_DQ", "BTHD")})
        if name == "attn_bwd_dkdv":
            const["ATOMIC_DQ"] = FLAGS["ATOMIC_DQ"]
        const.update(flags)
        out.append((name, dtype, const, opts, scalars))
    for op in OPS.values():
        for mask in masks:
            add("attn_fwd", op=op, mask=mask)
    for name in ("attn_bwd_dkdv", "attn_bwd_dq", "column_stats_kernel"):
        for op in OPS.values():
            add(name, op=op)
        for mask in masks:
            if mask != MASK_CAUSAL:
                add(name, mask=mask)
    for name in KINDS:
        for dtype in ("fp32", "fp16"):
            add(name, dtype=dtype)
        for D in (128, 256):
            add(name, D=D)
        add(name, doc=True)
    add("attn_fwd", HAS_SINK=True, HAS_V0=True)
    add("attn_fwd", op=OPS["sigmoid"], HAS_SINK=True, HAS_V0=True)
    add("attn_fwd", WRITE_OUT=False)
    for name in KINDS:                      # a model compiled with torch.compile launches them with inductor's types
        for op in OPS.values():
            add(name, op=op, scalars=INDUCTOR_SCALARS)
    for op in OPS.values():                 # the backward that adds dQ with atomics (deterministic=False)
        add("attn_bwd_dkdv", op=op, ATOMIC_DQ=True)
    add("attn_bwd_dkdv", D=128, ATOMIC_DQ=True)
    for name in KINDS:                      # inputs read in place as views of [B, T, H, D] (the model's layout)
        add(name, BTHD=True)
        add(name, D=128, BTHD=True)
    # the delta pre-pass over O and dO: each head dim and V-bias choice in bf16, the other dtypes and the model's
    # layout once each (it is one elementwise pass: what differs between variants is only the tile's width)
    delta = [("bf16", D, sub, False) for D in (64, 128, 256) for sub in (False, True)]
    delta += [("fp16", 64, False, False), ("fp32", 64, False, False),
              ("bf16", 64, False, True), ("bf16", 64, True, True)]
    for dtype, D, sub, bthd in delta:
        out.append(("bwd_delta", dtype, dict(DV=D, BLOCK_DV=api._pow2(D), BLOCK_M=64, SUB_V0=sub, BTHD=bthd),
                    {"num_warps": 4, "num_stages": 1}, SCALARS))
    return out


def compile_kernel(fn, dtype: str, constexprs: dict, options: dict, arch: int = ARCH,
                   scalars: dict[str, str] = SCALARS):
    """Compile one variant to a cubin for sm_`arch`; raises what Triton raises when it does not compile."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    src = ASTSource(fn=fn, signature=signature(fn, dtype, scalars), constexprs=constexprs)
    return triton.compile(src, target=GPUTarget("cuda", arch, 32), options=options)


def _reason(e: BaseException) -> str:
    """The innermost error of Triton's chain of CompilationErrors (one per jit function on the call path)."""
    while e.__cause__ is not None:
        e = e.__cause__
    msg = getattr(e, "error_message", None) or str(e)
    return f"{type(e).__name__}: {' '.join(str(msg).split())[:300]}"


def check(arch: int = ARCH, log=print) -> list[str]:
    """Compile every variant; returns one line per failure (empty when all compile)."""
    if os.environ.get("TRITON_INTERPRET") == "1":
        raise RuntimeError("TRITON_INTERPRET=1 turns @triton.jit into the interpreter: unset it to compile")
    from . import triton_kernels as tk
    failures, t0 = [], time.perf_counter()
    todo = variants()
    for name, dtype, const, opts, scalars in todo:
        label = f"{name} {dtype} " + " ".join(f"{k}={v}" for k, v in const.items()
                                               if k in ("D", "DV", "OP", "MASK", "SUB_V0") or FLAGS.get(k, v) != v)
        label += " (inductor's scalar types)" if scalars is INDUCTOR_SCALARS else ""
        try:
            compile_kernel(getattr(tk, name), dtype, const, opts, arch, scalars)
        except Exception as e:  # noqa: BLE001 -- every failure is reported, not only the first
            failures.append(f"{label}: {_reason(e)}")
    log(f"{len(todo) - len(failures)} of {len(todo)} kernel variants compile for sm_{arch} "
        f"({time.perf_counter() - t0:.0f} s)")
    return failures


def main() -> int:
    failures = check()
    for line in failures:
        print(line, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
