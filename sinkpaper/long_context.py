"""The sink at the length models are used at: Sink_1 and alpha_1 against T, per layer, on natural text.

The paper fixes T = 64 because the metric falls as T grows. `measure_vs_length` measures one pretrained model
at several T up to its context length with the column-statistics route (`LM.trace(method="stats")`: each layer
through `sinkpaper.fused.attention_column_stats`, its own sliding window included, no T x T map; on a CPU the
blocked PyTorch route, memory linear in T), and returns one JSON-ready payload: per T, Sink_k, mean alpha_1,
Sink_1 and mean alpha_1 per layer, the uniform baseline H_T / T, seconds and the process's peak RSS so far.

`python -m sinkpaper sink-vs-length --model smollm2-135m --out results/long_context/smollm2-135m.json` writes it
(atomically, after every T, so an interrupted run keeps what it measured); `load` reads it back for the book.

The natural text is the probes' offline source (`sinkpaper.probes.natural_text`, Python standard-library
docstrings, ~43k tokens with either offline tokenizer): each sample is a window at a random offset, so a long
window spans several docstrings, one after the other.
"""
from __future__ import annotations

import json
import resource
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from .files import atomic_write_text
from .metrics import EPSILON

STORE = Path(__file__).resolve().parent.parent / "results" / "long_context"
DEFAULT_LENGTHS = (64, 128, 256, 512, 1024, 2048, 4096, 8192)
TOKENS = 16384          # tokens measured per T (n_samples = TOKENS // T, at least 1, at most MAX_SAMPLES)
MAX_SAMPLES = 32
BATCH_TOKENS = 8192     # tokens per forward pass


def store_path(model: str, bos: bool) -> Path:
    """Where the committed measurement of one model lives: results/long_context/<model>[-bos].json."""
    return STORE / f"{model.replace('/', '--')}{'-bos' if bos else ''}.json"


def n_samples_for(seq_len: int, tokens: int = TOKENS, max_samples: int = MAX_SAMPLES) -> int:
    return max(1, min(max_samples, tokens // seq_len))


def peak_rss_bytes() -> int:
    """This process's peak resident set size so far (ru_maxrss: KiB on Linux, bytes on macOS)."""
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(rss if sys.platform == "darwin" else rss * 1024)


def check_lengths(lm, lengths: Sequence[int], *, bos: bool, method: str = "stats", tokens: int = TOKENS,
                  batch_tokens: int = BATCH_TOKENS) -> list[int]:
    """Every T checked before anything is measured: >= 11 (Sink_k up to k = 10), within the model's context
    length, no longer than the natural text, and within the memory available (the estimate is named)."""
    from . import metrics
    from .probes import make_inputs
    lengths = sorted({int(t) for t in lengths})
    if not lengths:
        raise ValueError("lengths must name at least one T")
    for T in lengths:
        metrics.check_seq_len(T)
        lm.check_seq_len(T, method)
    make_inputs(lm.tokenizer, "natural", n_samples=1, seq_len=lengths[-1], bos=bos)  # text long enough?
    for T in lengths:
        lm.check_memory(_batch(T, tokens, batch_tokens), T, method)
    return lengths


def _batch(T, tokens, batch_tokens):
    return max(1, min(n_samples_for(T, tokens), batch_tokens // T))


def measure_vs_length(lm, lengths: Sequence[int] = DEFAULT_LENGTHS, *, bos: bool = False, epsilon: float = EPSILON,
                      seed: int = 0, method: str = "stats", tokens: int = TOKENS, batch_tokens: int = BATCH_TOKENS,
                      on_point: Callable[[dict], None] | None = None, command: str | None = None,
                      previous: dict | None = None) -> dict:
    """Sink_1 and alpha_1 (overall and per layer) of `lm` at each T of `lengths` (BOS included in T when bos).

    `on_point(payload)` is called after every T with the payload so far (e.g. to write it). Bad input (a T beyond
    the context length, longer than the text, or too large for memory) is refused before any compute.
    `previous`: an earlier payload of the same measurement (model, BOS, method, epsilon, seed, tokens per T);
    the T it already holds are kept (each point carries its own code version and time) and not measured again."""
    from . import provenance
    from .metrics import uniform_alpha_1
    from .lms import measure_sink
    from .probes import make_inputs
    lengths = check_lengths(lm, lengths, bos=bos, method=method, tokens=tokens, batch_tokens=batch_tokens)
    cfg = lm.model.config.get_text_config()
    payload = {"kind": "sink_vs_length", "model": lm.name, "inputs": "natural", "bos": bool(bos), "epsilon": epsilon,
               "method": method, "n_layers": lm.n_layers, "n_heads": cfg.num_attention_heads,
               "layer_windows": lm.layer_windows(), "context_length": lm.context_length, "lengths": lengths,
               "points": [], "complete": False,
               "provenance": provenance.stamp(lm.device, **lm.provenance(), command=command, seed=seed,
                                              tokens_per_length=tokens, source_of_numbers="computed")}
    kept = {}
    if previous is not None:
        same = ("model", "bos", "method", "epsilon", "inputs")
        if any(previous.get(k) != payload[k] for k in same) or previous["provenance"].get("seed") != seed or \
                previous["provenance"].get("tokens_per_length") != tokens:
            raise ValueError("the stored measurement differs in model, BOS, method, epsilon, seed or tokens per T; "
                             "measure it anew (without --resume) or pass the same settings")
        kept = {p["T"]: p for p in previous["points"]}
        payload["provenance"]["resumed_from"] = previous["provenance"].get("computed_at")
    t_start = time.perf_counter()
    for T in lengths:
        if T in kept:
            payload["points"].append(kept[T])
            continue
        n = n_samples_for(T, tokens)
        probe = make_inputs(lm.tokenizer, "natural", n_samples=n, seq_len=T, bos=bos, seed=seed)
        r = measure_sink(lm, probe, epsilon=epsilon, batch_size=_batch(T, tokens, batch_tokens), progress=False,
                         method=method)
        payload["provenance"].setdefault("text", {k: v for k, v in probe.provenance.items() if k != "seed"})
        payload["points"].append({
            "T": T, "n_samples": n, "sink_1": r["sink_k"]["1"], "sink_k": r["sink_k"],
            "alpha_1_mean": r["alpha_1_mean"], "uniform_alpha_1": uniform_alpha_1(T),
            "per_layer_sink_1": r["per_layer_sink_1"],
            "per_layer_alpha_1": [sum(row) / len(row) for row in r["alpha_1_matrix"]],
            "seconds": r["provenance"]["measure_seconds"], "peak_rss_gib_so_far": round(peak_rss_bytes() / 2**30, 3),
            "code_version": r["provenance"]["code_version"], "computed_at": r["provenance"]["computed_at"]})
        payload["complete"] = T == lengths[-1]
        payload["provenance"]["total_seconds"] = round(time.perf_counter() - t_start, 1)
        if on_point is not None:
            on_point(payload)
    payload["complete"] = [p["T"] for p in payload["points"]] == lengths
    return payload


def describe(payload: dict, epsilon_heads: float = 0.3) -> str:
    """Sentences computed from one payload: Sink_1 and mean alpha_1 (against the uniform share) at the smallest
    and largest T, and where alpha_1 falls as T grows: per layer, the global and the sliding-window layers apart.
    Sliding-window layers average alpha_1 over the queries that still see token 1 (the first `window`), so their
    alpha_1 stops changing beyond the window; global layers are seen by all T queries."""
    pts = sorted(payload["points"], key=lambda p: p["T"])
    if not pts:
        return "nothing measured yet"
    lo, hi = pts[0], pts[-1]
    out = [f"`{payload['model']}` (BOS {'on' if payload['bos'] else 'off'}): Sink_1 {lo['sink_1']:.1f} % at "
           f"T = {lo['T']} and {hi['sink_1']:.1f} % at T = {hi['T']}; mean α_1 {lo['alpha_1_mean']:.3f} "
           f"({lo['alpha_1_mean'] / lo['uniform_alpha_1']:.1f}x the uniform share) and {hi['alpha_1_mean']:.3f} "
           f"({hi['alpha_1_mean'] / hi['uniform_alpha_1']:.1f}x uniform)."]
    if len(pts) > 1:
        windows = payload.get("layer_windows") or [None] * len(lo["per_layer_alpha_1"])
        drop = [a - b for a, b in zip(lo["per_layer_alpha_1"], hi["per_layer_alpha_1"])]
        order = sorted(range(len(drop)), key=lambda i: -drop[i])
        out.append("α_1 falls most in layers " + ", ".join(
            f"{i} ({lo['per_layer_alpha_1'][i]:.2f} → {hi['per_layer_alpha_1'][i]:.2f})" for i in order[:3])
                   + "; least in layers " + ", ".join(
            f"{i} ({lo['per_layer_alpha_1'][i]:.2f} → {hi['per_layer_alpha_1'][i]:.2f})" for i in order[-3:]) + ".")
        keep = [i for i, a in enumerate(hi["per_layer_alpha_1"]) if a > epsilon_heads]
        out.append(f"At T = {hi['T']}, {len(keep)} of {len(drop)} layers keep a mean α_1 above {epsilon_heads}"
                   + (f" ({', '.join(map(str, keep))})." if keep else "."))
        kinds = {"global": [i for i, w in enumerate(windows) if w is None],
                 "sliding-window": [i for i, w in enumerate(windows) if w is not None]}
        if kinds["sliding-window"] and kinds["global"]:
            mean = lambda p, idx: sum(p["per_layer_alpha_1"][i] for i in idx) / len(idx)  # noqa: E731
            out.append("Mean α_1 of the " + " and of the ".join(
                f"{k} layers {mean(lo, idx):.3f} → {mean(hi, idx):.3f}" for k, idx in kinds.items()) + ".")
    return " ".join(out)


def provenance_row(payload: dict, computed_now: bool) -> dict:
    """What a chapter's sources ledger records for one measurement: where and how it was computed, and its lengths."""
    prov = {**payload["provenance"], "computed_now": computed_now}
    return ({k: prov.get(k) for k in ("model", "code_version", "hardware", "torch", "python", "computed_now",
                                      "loaded_from", "computed_at")}
            | {"method": payload["method"], "BOS": payload["bos"],
               "T": ", ".join(str(p["T"]) for p in payload["points"]),
               "samples per T": ", ".join(str(p["n_samples"]) for p in payload["points"]),
               "seconds": prov.get("total_seconds")})


def compare_routes(lm, seq_len: int, *, n_samples: int = 1, bos: bool = False, seed: int = 0) -> dict:
    """The column-statistics route against the eager maps on the same natural-text inputs: the largest
    |alpha_k difference| over samples, layers, heads and keys, and Sink_k both ways (the maps route must fit)."""
    from . import metrics, provenance
    from .probes import make_inputs
    ids = make_inputs(lm.tokenizer, "natural", n_samples=n_samples, seq_len=seq_len, bos=bos, seed=seed).input_ids
    out = {"model": lm.name, "T": seq_len, "n_samples": n_samples, "bos": bos}
    by_route = {}
    for method in ("maps", "stats"):
        t0 = time.perf_counter()
        by_route[method] = metrics.TraceStats.from_trace(lm.trace(ids, with_qkv=False, method=method))
        out[f"{method}_seconds"] = round(time.perf_counter() - t0, 1)
    out["max_abs_alpha_difference"] = float((by_route["stats"].alphas - by_route["maps"].alphas).abs().max())
    out["sink_k_maps"] = metrics.sink_rates(by_route["maps"].alphas)
    out["sink_k_stats"] = metrics.sink_rates(by_route["stats"].alphas)
    out["provenance"] = provenance.stamp(lm.device, **lm.provenance())
    return out


def write(payload: dict, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(payload, indent=1) + "\n")
    return path


def load(path: str | Path) -> dict:
    """A stored `measure_vs_length` payload, marked as loaded (provenance `loaded_from`)."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no stored long-context measurement at {path}; produce it with "
                                "`python -m sinkpaper sink-vs-length --model <name> [--bos]`")
    payload = json.loads(path.read_text())
    if payload.get("kind") != "sink_vs_length":
        raise ValueError(f"{path} is not a sink-vs-length measurement (kind={payload.get('kind')!r})")
    try:
        shown = str(path.resolve().relative_to(STORE.parent.parent))
    except ValueError:
        shown = str(path)
    payload["provenance"] = {**payload["provenance"], "loaded_from": shown}
    return payload


# ------------------------------------------------------------------------------------------------ benchmark
BENCH_LENGTHS = (256, 512, 1024, 2048, 4096, 8192)
ROUTES = ("stats", "maps")  # column statistics (ours) | the eager attention maps of every layer (output_attentions)


def run_isolated(cmd: Sequence[str], timeout: float | None = None) -> dict:
    """Run one command in a fresh process: wall seconds, its own peak RSS (os.wait4, so peaks of other routes
    never mix), exit status, stdout and the last line of stderr."""
    import os
    import subprocess
    import tempfile
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(list(cmd), stdout=out, stderr=err)
        try:
            _, status, usage = _wait4(proc.pid, timeout)
        except TimeoutError:
            proc.kill()
            _, status, usage = os.wait4(proc.pid, 0)
            proc.returncode = -9
            return {"status": "timeout", "seconds": round(time.perf_counter() - t0, 1)}
        seconds = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        rss = usage.ru_maxrss if sys.platform == "darwin" else usage.ru_maxrss * 1024
        lines = [ln for ln in err.read().decode(errors="replace").splitlines() if ln.strip()]
        return {"returncode": proc.returncode, "seconds": round(seconds, 1), "peak_rss_gib": round(rss / 2**30, 3),
                "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 1),
                "stdout": out.read().decode(errors="replace"), "stderr_tail": lines[-1] if lines else ""}


def _wait4(pid, timeout):
    import os
    if timeout is None:
        return os.wait4(pid, 0)
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got, status, usage = os.wait4(pid, os.WNOHANG)
        if got:
            return got, status, usage
        time.sleep(0.2)
    raise TimeoutError


def bench_sink(model: str = "smollm2-135m", lengths: Sequence[int] = BENCH_LENGTHS, *, cap_gib: float = 6.0,
               json_path: str | Path | None = None, argv: Sequence[str] | None = None, n_samples: int = 1) -> dict:
    """`python -m sinkpaper sink --method stats` against `--method maps` at each T, side by side, every (T, route)
    in a fresh process: wall time, the measurement's own seconds, and peak RSS (weights included).

    The maps route (eager attention, every layer's T x T map kept, as output_attentions does) runs until its
    memory estimate exceeds `cap_gib` (refused before compute; recorded with the estimate) or it fails; larger
    T are then not attempted. Ratios maps / kernel are reported where both ran."""
    from . import provenance
    if cap_gib <= 0:
        raise ValueError(f"--cap-gib must be > 0, got {cap_gib}")
    lengths = sorted({int(t) for t in lengths})
    from . import metrics
    for T in lengths:
        metrics.check_seq_len(T)
    result = {"kind": "bench_sink", "model": model, "cap_gib": cap_gib, "n_samples": n_samples, "points": [],
              "provenance": provenance.stamp("cpu", command="python -m sinkpaper " + " ".join(argv or []),
                                             note="each (T, route) in a fresh process; peak RSS includes the "
                                                  "model's weights and Python; CPU seconds (user + sys, model "
                                                  "loading included) compare better than wall time on a shared "
                                                  "machine")}
    stopped: dict[str, str] = {}
    for T in lengths:
        point = {"T": T, "routes": {}}
        for route in ROUTES:
            if route in stopped:
                point["routes"][route] = {"status": "not run", "why": stopped[route]}
                continue
            cmd = [sys.executable, "-m", "sinkpaper", "sink", "--model", model, "--seq-len", str(T), "--n-samples",
                   str(n_samples), "--batch-size", "1", "--method", route, "--json", "--max-memory-gib", str(cap_gib)]
            r = run_isolated(cmd)
            rec = {k: r.get(k) for k in ("seconds", "cpu_seconds", "peak_rss_gib", "returncode")}
            if r.get("returncode") == 0:
                out = json.loads(r["stdout"])
                rec.update(status="ok", measure_seconds=out["provenance"]["measure_seconds"],
                           memory_estimate_gib=out["provenance"].get("memory_estimate_gib"),
                           sink_1=out["sink_k"]["1"], alpha_1_mean=out["alpha_1_mean"])
            else:
                why = r.get("stderr_tail") or r.get("status", "")
                refused = "needs about" in why
                rec.update(status="refused" if refused else ("out of memory" if r.get("returncode") in (-9, 137)
                                                             else "error"), why=why)
                stopped[route] = f"{rec['status']} at T={T}"
            point["routes"][route] = rec
        k, m = point["routes"]["stats"], point["routes"]["maps"]
        if k.get("status") == "ok" and m.get("status") == "ok":
            point["ratios_maps_over_stats"] = {
                "measure_seconds": round(m["measure_seconds"] / k["measure_seconds"], 2),
                "cpu_seconds": round(m["cpu_seconds"] / k["cpu_seconds"], 2),
                "peak_rss": round(m["peak_rss_gib"] / k["peak_rss_gib"], 2)}
        result["points"].append(point)
        if json_path:
            write(result, json_path)
        print(_bench_line(point), file=sys.stderr, flush=True)
    return result


def _bench_line(p: dict) -> str:
    def cell(r):
        if r.get("status") != "ok":
            return f"{r.get('status')}: {r.get('why', '')}"[:90]
        return (f"{r['cpu_seconds']:6.0f} CPU s ({r['measure_seconds']:.0f} s measuring, {r['seconds']:.0f} s wall)  "
                f"{r['peak_rss_gib']:5.2f} GiB")
    ratio = p.get("ratios_maps_over_stats")
    tail = (f"   maps/stats: CPU time {ratio['cpu_seconds']:.2f}x, wall {ratio['measure_seconds']:.2f}x, "
            f"RSS {ratio['peak_rss']:.2f}x") if ratio else ""
    return f"T={p['T']:>5}  kernel {cell(p['routes']['stats'])}  |  maps {cell(p['routes']['maps'])}{tail}"


def format_bench(r: dict) -> str:
    lines = [f"sink: column statistics (kernel) vs eager maps, {r['model']}, {r['n_samples']} sample(s), "
             f"cap {r['cap_gib']} GiB; each T and route in a fresh process",
             *[_bench_line(p) for p in r["points"]],
             f"[{r['provenance']['code_version']}, {r['provenance']['hardware']}, {r['provenance']['computed_at']}]"]
    return "\n".join(lines)
