"""`python -m sinkpaper bench kernels`: our Triton attention kernels next to PyTorch's, in one run on one device.

Why one run: every goal in the kernel issue is a ratio (ours / competitor), and a ratio only means something
when both sides ran on the same GPU, torch build and shapes. Five sections:
  speed         causal softmax fwd and fwd+bwd: ours (and fwd+bwd with dQ added by atomics, ``ours_atomic``),
                SDPA flash, SDPA cuDNN, FlexAttention, eager PyTorch
  sink          the sink logit (gpt-oss) against our plain softmax, and FlexAttention's equivalent: its
                returned log-sum-exp renormalized by sigmoid(lse - b)
  ops           sigmoid / elu / softpick against our softmax kernel and against their eager references
  column_stats  alpha_k without the T x T map: time and peak memory against one forward and eager maps
  accuracy      bf16 error against an fp64 reference, ours next to PyTorch SDPA's own bf16 error
FLOPs follow FlashAttention for every op (forward 4*B*H*T^2*D, halved when causal; backward 2.5x forward),
so TFLOP/s compare across ops. Goals are printed PASS / MISS, never asserted: the figures are the result.
Nothing here touches torch.cuda or triton at import time; `sinkpaper.fused` is imported inside functions.
"""
from __future__ import annotations

import contextlib
import json
import math
import statistics
import time
from dataclasses import dataclass

import torch

from ..attention import FUSED_OPERATORS

SECTIONS = ("speed", "sink", "ops", "column_stats", "accuracy")
OPS = tuple(name for name in FUSED_OPERATORS if name != "softmax")   # the fused operators SDPA has no match for
FLOP_CONVENTION = "FlashAttention: fwd = 4*B*H*T^2*D, /2 when causal; bwd = 2.5x fwd; fwd+bwd = 3.5x fwd"


@dataclass(frozen=True)
class Plan:
    shapes: tuple        # (B, H, T, D) for speed and ops
    stats_shapes: tuple  # column_stats: growing T until eager runs out of memory, and beyond
    acc_shape: tuple
    goal_min_t: int      # goals judge T >= this only (launch overhead dominates short sequences)
    warmup: float        # do_bench milliseconds on CUDA, iterations on CPU
    rep: float


# FlashAttention's benchmark grid: batch*T = 16k tokens, hidden H*D = 2048, so work per T stays comparable.
FULL = Plan(shapes=tuple((16384 // T, 2048 // D, T, D) for D in (64, 128) for T in (1024, 4096, 16384)),
            stats_shapes=tuple((1, 16, T, 64) for T in (1024, 2048, 4096, 8192, 16384, 32768)),
            acc_shape=(2, 8, 1024, 64), goal_min_t=4096, warmup=25, rep=100)
# Small enough for the Triton interpreter on a 2-core CPU (about 4 ms per 64x64 tile).
SMOKE = Plan(shapes=((1, 2, 64, 32), (1, 2, 96, 32)), stats_shapes=((1, 2, 64, 32), (1, 2, 96, 32)),
             acc_shape=(1, 2, 64, 32), goal_min_t=0, warmup=2, rep=3)


def flops(B, H, T, D, mode, causal=True) -> float:
    fwd = 4.0 * B * H * T * T * D / (2 if causal else 1)
    return fwd * {"fwd": 1.0, "fwd+bwd": 3.5}[mode]


def _why(e: BaseException) -> str:
    lines = str(e).strip().splitlines()
    return f"{type(e).__name__}: {lines[0][:200] if lines else ''}"


class _Bench:
    def __init__(self, device: torch.device, plan: Plan):
        self.device, self.plan, self.cuda = device, plan, device.type == "cuda"
        self.records: list[dict] = []
        self.ratios: list[dict] = []
        if self.cuda:
            from triton.testing import do_bench
            self._do_bench = do_bench

    # ---------------------------------------------------------------- timing and memory
    def time_ms(self, fn, grads=None) -> float:
        if self.cuda:
            return self._do_bench(fn, warmup=self.plan.warmup, rep=self.plan.rep, grad_to_none=grads,
                                  return_mode="median")
        # do_bench needs a GPU driver (it fails under TRITON_INTERPRET): a plain median of wall times
        for _ in range(int(self.plan.warmup)):
            fn()
        ts = []
        for _ in range(int(self.plan.rep)):
            for g in grads or ():
                g.grad = None
            t0 = time.perf_counter()
            fn()
            ts.append((time.perf_counter() - t0) * 1e3)
        return statistics.median(ts)

    def peak_mib(self, fn) -> float | None:
        """Memory the call allocates above its inputs (outputs included), from max_memory_allocated."""
        if not self.cuda:
            return None
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        fn()
        torch.cuda.synchronize()
        return (torch.cuda.max_memory_allocated() - base) / 2**20

    def maps_wont_fit(self, shape, n_maps: int) -> str | None:
        """Eager references hold ~n_maps fp32 T x T maps; skip instead of thrashing when they cannot fit."""
        if not self.cuda:
            return None
        B, H, T, _ = shape
        need, free = n_maps * 4 * B * H * T * T, torch.cuda.mem_get_info(self.device)[0]
        if need > free:
            return f"OOM predicted: ~{need / 2**30:.0f} GiB of T x T maps > {free / 2**30:.0f} GiB free"
        return None

    def qkv(self, shape, dtype=torch.bfloat16, grad=False, n=3, seed=0):
        gen = torch.Generator(device=self.device).manual_seed(seed)
        return [torch.randn(*shape, generator=gen, device=self.device, dtype=dtype).requires_grad_(grad)
                for _ in range(n)]

    def run(self, section, name, op, mode, shape, call, *, context=contextlib.nullcontext, skip=None,
            peak=False) -> dict:
        """Time `call(q, k, v)` (mode fwd, fwd+bwd) or `call(q, k)` (mode column_stats); one record."""
        B, H, T, D = shape
        rec = dict(section=section, name=name, op=op, mode=mode, B=B, H=H, T=T, D=D, dtype="bf16",
                   ms=None, tflops=None, peak_mib=None, status="ok", reason=None)
        self.records.append(rec)
        if skip:
            rec.update(status="OOM" if skip.startswith("OOM") else "skipped", reason=skip)
            return rec
        try:
            with context():
                grad = mode == "fwd+bwd"
                inputs = self.qkv(shape, grad=grad, n=2 if mode == "column_stats" else 3)
                if grad:
                    dout = torch.randn_like(inputs[0])
                    fn = lambda: call(*inputs).backward(dout)  # noqa: E731
                else:
                    fn = lambda: call(*inputs)  # noqa: E731
                if peak:
                    rec["peak_mib"] = self.peak_mib(fn)
                rec["ms"] = self.time_ms(fn, inputs if grad else None)
            if mode != "column_stats":
                rec["tflops"] = flops(B, H, T, D, mode) / rec["ms"] * 1e-9
        except torch.cuda.OutOfMemoryError:
            rec.update(status="OOM", reason="torch.cuda.OutOfMemoryError", ms=None, peak_mib=None)
        except Exception as e:  # a competitor that does not run on this device/version is a result, not a crash
            rec.update(status="error", reason=_why(e), ms=None, peak_mib=None)
        finally:
            inputs = fn = None
            if self.cuda:
                torch.cuda.empty_cache()
        return rec

    def ratio(self, kind, what, num: dict, den: dict, value_key="ms", invert=False):
        """kind speed: den.ms / num.ms (ours faster > 1); time, memory, error: num / den (ours smaller < 1)."""
        a, b = num.get(value_key), den.get(value_key)
        if not a or not b:
            return None
        r = dict(section=num["section"], kind=kind, what=what, op=num["op"], mode=num["mode"], T=num["T"],
                 D=num["D"], ratio=(b / a) if invert else (a / b))
        self.ratios.append(r)
        return r

    def find(self, **kw) -> dict | None:
        return next((r for r in self.records if all(r.get(k) == v for k, v in kw.items())), None)


# -------------------------------------------------------------------------------------------------- sections
def _speed(b: _Bench, K):
    import torch.nn.functional as F
    sdpa = lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True)  # noqa: E731
    why_sdpa = None
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError as e:  # torch < 2.3
        sdpa_kernel, why_sdpa = None, _why(e)
    flex, why_flex = _flex(b)
    for shape in b.plan.shapes:
        T = shape[2]
        for mode in ("fwd", "fwd+bwd"):
            ours = b.run("speed", "ours", "softmax", mode, shape,
                         lambda q, k, v: K.attention(q, k, v, causal=True, impl="triton"))
            variants = [ours]
            if mode == "fwd+bwd":
                variants.append(b.run("speed", "ours_atomic", "softmax", mode, shape,
                                      lambda q, k, v: K.attention(q, k, v, causal=True, impl="triton",
                                                                  deterministic=False)))
            others = []
            backends = [("sdpa_flash", "FLASH_ATTENTION"), ("sdpa_cudnn", "CUDNN_ATTENTION")]
            if not b.cuda:  # on CPU only the math backend exists; keep it so the smoke run exercises SDPA
                backends = [("sdpa_math", "MATH")] + backends
            for name, backend in backends:
                skip = why_sdpa if sdpa_kernel is None else (
                    None if b.cuda or backend == "MATH" else "needs CUDA")
                ctx = (lambda be=backend: sdpa_kernel([getattr(SDPBackend, be)])) if sdpa_kernel else None
                others.append(b.run("speed", name, "softmax", mode, shape, sdpa, context=ctx, skip=skip))
            if flex is not None:
                from torch.nn.attention.flex_attention import create_block_mask
                mask = create_block_mask(lambda bb, h, qi, ki: qi >= ki, None, None, T, T, device=b.device)
                call = lambda q, k, v, m=mask: flex(q, k, v, block_mask=m)  # noqa: E731
            else:
                call = None
            others.append(b.run("speed", "flex", "softmax", mode, shape, call, skip=why_flex))
            others.append(b.run("speed", "eager", "softmax", mode, shape,
                                lambda q, k, v: K.reference_attention(q, k, v, causal=True),
                                skip=b.maps_wont_fit(shape, 3 if mode == "fwd" else 6)))
            for mine in variants:
                for o in others:
                    b.ratio("speed", f"{mine['name']}/{o['name']}", mine, o, invert=True)


def _flex(b: _Bench):
    """FlexAttention compiled for this GPU (None and why not, elsewhere)."""
    if not b.cuda:
        return None, "needs CUDA (FlexAttention is compared compiled for the GPU)"
    try:
        import torch._dynamo
        from torch.nn.attention.flex_attention import flex_attention
        # one static graph per (shape, grad mode): more than dynamo's default of 8 recompiles, after which it
        # would silently fall back to eager FlexAttention
        for knob in ("recompile_limit", "cache_size_limit"):
            if hasattr(torch._dynamo.config, knob):
                setattr(torch._dynamo.config, knob, max(64, getattr(torch._dynamo.config, knob)))
        return torch.compile(flex_attention, dynamic=False), None
    except Exception as e:
        return None, _why(e)


def _sink(b: _Bench, K):
    """A per-head sink logit b_h (gpt-oss) against our plain causal softmax, fwd and fwd+bwd; FlexAttention has no
    sink column, so its equivalent is plain attention renormalized with its returned log-sum-exp:
    out * sigmoid(lse - b_h) (the identity the book's chapter 13 checks)."""
    flex, why_flex = _flex(b)
    for shape in b.plan.shapes:
        B, H, T, D = shape
        gen = torch.Generator(device=b.device).manual_seed(2)
        logit = torch.randn(H, generator=gen, device=b.device).requires_grad_()
        for mode in ("fwd", "fwd+bwd"):
            plain = b.find(name="ours", op="softmax", mode=mode, B=B, H=H, T=T, D=D) or b.run(
                "sink", "ours", "softmax", mode, shape, lambda q, k, v: K.attention(q, k, v, impl="triton"))
            ours = b.run("sink", "ours", "sink_logit", mode, shape,
                         lambda q, k, v: K.attention(q, k, v, sink_logit=logit, impl="triton"))
            b.ratio("speed", "ours sink_logit/ours softmax", ours, plain, invert=True)
            if flex is not None:
                from torch.nn.attention.flex_attention import create_block_mask
                mask = create_block_mask(lambda bb, h, qi, ki: qi >= ki, None, None, T, T, device=b.device)

                def call(q, k, v, m=mask):
                    out, lse = flex(q, k, v, block_mask=m, return_lse=True)
                    return out * torch.sigmoid(lse - logit.view(1, H, 1)).unsqueeze(-1).to(out.dtype)
            else:
                call = None
            other = b.run("sink", "flex", "sink_logit", mode, shape, call, skip=why_flex)
            b.ratio("speed", "ours sink_logit/flex sink_logit", ours, other, invert=True)


def _ops(b: _Bench, K):
    for shape in b.plan.shapes:
        for mode in ("fwd", "fwd+bwd"):
            softmax = b.find(name="ours", op="softmax", mode=mode, B=shape[0], H=shape[1], T=shape[2],
                             D=shape[3]) or b.run("ops", "ours", "softmax", mode, shape,
                                                  lambda q, k, v: K.attention(q, k, v, impl="triton"))
            for op in OPS:
                ours = b.run("ops", "ours", op, mode, shape,
                             lambda q, k, v, op=op: K.attention(q, k, v, op=op, causal=True, impl="triton"))
                eager = b.run("ops", "eager", op, mode, shape,
                              lambda q, k, v, op=op: K.reference_attention(q, k, v, op=op, causal=True),
                              skip=b.maps_wont_fit(shape, 3 if mode == "fwd" else 6))
                b.ratio("speed", f"ours {op}/ours softmax", ours, softmax, invert=True)
                b.ratio("speed", f"ours {op}/eager {op}", ours, eager, invert=True)


def _column_stats(b: _Bench, K):
    for shape in b.plan.stats_shapes:
        stats = b.run("column_stats", "ours", "softmax", "column_stats", shape,
                      lambda q, k: K.column_stats(q, k, causal=True, impl="triton"), peak=True)
        fwd = b.run("column_stats", "ours_forward", "softmax", "fwd", shape,
                    lambda q, k, v: K.attention(q, k, v, causal=True, impl="triton"), peak=True)
        eager = b.run("column_stats", "eager", "softmax", "column_stats", shape,
                      lambda q, k: K.reference_column_stats(q, k, causal=True), peak=True,
                      skip=b.maps_wont_fit(shape, 3))
        b.ratio("time", "column_stats/ours forward", stats, fwd)
        b.ratio("time", "column_stats/eager column_stats", stats, eager)
        b.ratio("memory", "column_stats/ours forward", stats, fwd, value_key="peak_mib")
        b.ratio("memory", "column_stats/eager column_stats", stats, eager, value_key="peak_mib")


def _accuracy(b: _Bench, K):
    """Max |error| of bf16 output and gradients against fp64, ours next to PyTorch SDPA (its default backend)."""
    import torch.nn.functional as F
    B, H, T, D = shape = b.plan.acc_shape
    *x64, dout = b.qkv(shape, dtype=torch.float64, n=4, seed=1)

    def grads(call, dtype):
        leaves = [x.detach().to(dtype).requires_grad_() for x in x64]
        out = call(*leaves)
        out.backward(dout.to(dtype))
        return dict(zip(("out", "dq", "dk", "dv"), (out.detach(), *(x.grad for x in leaves))))

    try:
        exact = grads(lambda q, k, v: K.reference_attention(q, k, v, causal=True), torch.float64)
    except Exception:  # a reference limited to fp32/16: PyTorch's math path is exact enough in fp64
        exact = grads(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), torch.float64)
    tried = {"ours": lambda q, k, v: K.attention(q, k, v, causal=True, impl="triton"),
             "sdpa": lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True)}
    errs = {}
    for name, call in tried.items():
        try:
            got = grads(call, torch.bfloat16)
        except Exception as e:
            b.records.append(dict(section="accuracy", name=name, op="softmax", mode="fwd+bwd", B=B, H=H, T=T,
                                  D=D, dtype="bf16", status="error", reason=_why(e)))
            continue
        for t, ref in exact.items():
            d = got[t].double() - ref
            rec = dict(section="accuracy", name=name, op="softmax", mode=t, B=B, H=H, T=T, D=D, dtype="bf16",
                       max_abs_err=d.abs().max().item(), rel_rms_err=(d.norm() / ref.norm()).item(),
                       status="ok", reason=None)
            b.records.append(rec)
            errs[name, t] = rec
    for t in exact:
        if ("ours", t) in errs and ("sdpa", t) in errs:
            b.ratio("error", "ours/sdpa bf16 max|err|", errs["ours", t], errs["sdpa", t], value_key="max_abs_err")


# ----------------------------------------------------------------------------------------------------- goals
def _goals(b: _Bench) -> list[dict]:
    t0 = b.plan.goal_min_t
    at = f"T>={t0}" if t0 else "all T"

    def judge(goal, rs, ok, worst=min):
        if not rs:
            return dict(goal=goal, status="n/a", detail="not measured on this device / in this run")
        w = worst(rs, key=lambda r: r["ratio"])
        return dict(goal=goal, status="PASS" if ok(w["ratio"]) else "MISS",
                    detail=f"worst {w['ratio']:.2f}x at T={w['T']} D={w['D']} ({w['mode']})")

    sel = lambda what, **kw: [r for r in b.ratios if r["what"] == what and r["T"] >= t0  # noqa: E731
                              and all(r[k] == v for k, v in kw.items())]
    goals = [judge(f"softmax fwd+bwd at {at}, D = 64: at least 1.0x SDPA-flash",
                   sel("ours/sdpa_flash", mode="fwd+bwd", D=64), lambda x: x >= 1.0),
             judge(f"softmax fwd+bwd at {at}, D = 128: at least 0.95x SDPA-flash",
                   sel("ours/sdpa_flash", mode="fwd+bwd", D=128), lambda x: x >= 0.95),
             judge(f"the sink logit's fwd+bwd within 5 % of our plain softmax ({at})",
                   sel("ours sink_logit/ours softmax", mode="fwd+bwd"), lambda x: x >= 0.95),
             judge(f"sigmoid fwd faster than our softmax fwd ({at})",
                   sel("ours sigmoid/ours softmax", mode="fwd"), lambda x: x > 1.0),
             judge(f"column_stats at most 1.0x one forward ({at})",
                   [r for r in sel("column_stats/ours forward") if r["kind"] == "time"], lambda x: x <= 1.0,
                   worst=max)]
    # O(T) memory: the growth exponent of column_stats' peak between the shortest and longest T measured
    pts = sorted((r["T"], r["peak_mib"]) for r in b.records
                 if r["section"] == "column_stats" and r["name"] == "ours" and r.get("peak_mib"))
    if len(pts) >= 2 and pts[-1][0] > pts[0][0]:
        e = math.log(pts[-1][1] / pts[0][1]) / math.log(pts[-1][0] / pts[0][0])
        goals.append(dict(goal="column_stats O(T) memory (peak growth exponent <= 1.2)",
                          status="PASS" if e <= 1.2 else "MISS",
                          detail=f"exponent {e:.2f} from T={pts[0][0]} ({pts[0][1]:.1f} MiB) "
                                 f"to T={pts[-1][0]} ({pts[-1][1]:.1f} MiB)"))
    else:
        goals.append(dict(goal="column_stats O(T) memory", status="n/a", detail="peak memory needs CUDA"))
    goals.append(judge("bf16 error no worse than 2x PyTorch's", [r for r in b.ratios if r["kind"] == "error"],
                       lambda x: x <= 2.0, worst=max))
    return goals


# ------------------------------------------------------------------------------------------------- entry point
def run_kernel_bench(device: str = "cuda", smoke: bool = False, sections=SECTIONS, json_path=None,
                     argv=None) -> dict:
    """Run the sections on one device; return (and optionally write as JSON) provenance, records, ratios, goals."""
    from .. import provenance
    from ..files import atomic_write_text
    from .. import fused as K  # noqa: N812  (lazy: the package imports triton)
    import triton

    dev = torch.device(device)
    if dev.type == "cpu" and not K.interpreting():
        raise RuntimeError("on CPU the kernels run only under the Triton interpreter: set TRITON_INTERPRET=1 "
                           "before triton is imported")
    b = _Bench(dev, SMOKE if smoke else FULL)
    for name, section in (("speed", _speed), ("sink", _sink), ("ops", _ops), ("column_stats", _column_stats),
                          ("accuracy", _accuracy)):
        if name in sections:
            section(b, K)
    version = provenance.code_version()
    result = dict(
        benchmark="kernels", smoke=smoke, device=str(dev), flop_convention=FLOP_CONVENTION,
        provenance=provenance.stamp(dev, triton=triton.__version__, cuda=torch.version.cuda,
                                    device_name=provenance.hardware(dev),
                                    git_commit=version.split("+g")[1].split(".")[0] if "+g" in version else None,
                                    interpreter=K.interpreting(), command=list(argv or [])),
        args=dict(device=str(dev), smoke=smoke, sections=list(sections), json=json_path),
        records=b.records, ratios=b.ratios, goals=_goals(b))
    if json_path:
        atomic_write_text(json_path, json.dumps(result, indent=1))
    return result


def format_report(r: dict) -> str:
    pv = r["provenance"]
    out = [f"kernel benchmark on {pv['device_name']}  torch {pv['torch']}  triton {pv['triton']}  "
           f"CUDA {pv['cuda']}  {pv['code_version']}  {pv['computed_at']}", f"FLOPs: {r['flop_convention']}"]
    if pv["interpreter"]:
        out.append("TRITON_INTERPRET=1: these timings exercise the code path; they are not performance.")
    out.append(f"{'section':<13}{'name':<14}{'op':<9}{'mode':<13}{'B':>3}{'H':>4}{'T':>7}{'D':>5}"
               f"{'ms':>11}{'TFLOP/s':>9}{'peak MiB':>10}")
    for x in r["records"]:
        head = (f"{x['section']:<13}{x['name']:<14}{x['op']:<9}{x['mode']:<13}{x['B']:>3}{x['H']:>4}"
                f"{x['T']:>7}{x['D']:>5}")
        if x["status"] != "ok":
            out.append(f"{head}  {x['status']}: {x['reason']}")
        elif x["section"] == "accuracy":
            out.append(f"{head}  max|err| {x['max_abs_err']:.3g}  rel rms err {x['rel_rms_err']:.3g}")
        else:
            f = lambda v, w, p: f"{'-':>{w}}" if v is None else f"{v:{w}.{p}f}"  # noqa: E731
            out.append(f"{head}{f(x['ms'], 11, 4)}{f(x['tflops'], 9, 1)}{f(x['peak_mib'], 10, 1)}")
    out.append("ratios (speed: competitor ms / ours ms, > 1 = ours faster; time, memory, error: ours / "
               "competitor, < 1 = ours smaller)")
    for x in r["ratios"]:
        out.append(f"  {x['kind']:<7}{x['what']:<34}{x['op']:<9}{x['mode']:<13}T={x['T']:<6}D={x['D']:<4}"
                   f"{x['ratio']:8.2f}x")
    out.append("goals (reported, not asserted)")
    out += [f"  {g['status']:<5}{g['goal']}: {g['detail']}" for g in r["goals"]]
    return "\n".join(out)
