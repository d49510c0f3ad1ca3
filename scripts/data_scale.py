"""Memory and speed of the token-file pipeline at two corpus sizes: a JSON-lines corpus made here, streamed
through `datasets` and a tokenizer into a flat token file (the `hf` source with data.dataset = a local path),
then memory-mapped and batched as training reads it.

Each measurement runs in a fresh Python process: after importing the modules and loading the tokenizer it
resets its peak-RSS mark (/proc/self/clear_refs), does the work, and reports its peak RSS (VmHWM in
/proc/self/status) against its RSS before the work (where the mark cannot be reset, against a baseline process
that only imports): the growth is what the data costs. Not getrusage's ru_maxrss: it is the process's peak over
every address space it had, including the forked copy of its parent before exec (Python's subprocess forks), so
a child of a 3 GiB pytest process reports >= 3 GiB whatever it does, and clear_refs does not reset it.
Loading also reports its private (anonymous) memory and its resident pages of the mapped token file, which the kernel maps in up to 64 KiB around each window read ("fault-around"):
they are page cache, shared by every process that maps the file and dropped under memory pressure, so over a
long run a rank's RSS approaches the file's size while the node holds one copy. The reference it competes with is what the tokens would cost held whole
in memory as int32 (the stream before this change: a list of int32 arrays, then np.concatenate, so about
2 x 4 bytes per token at the peak); the report prints the growth as a share of tokens x 4 bytes.

    python scripts/data_scale.py --sizes 2e6 2e7 [--tokenizer word|PATH] [--workdir DIR]

The test suite (tests/test_tokenfile.py) imports `make_corpus`, `word_tokenizer` and `measure` from here.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent


def word_tokenizer(path: str | Path, n_words: int = 2000, seed: int = 0) -> list[str]:
    """A word-level tokenizer over `n_words` random lowercase words (ids 0 = <|endoftext|>, 1 = <|bos|>,
    2 = <unk>, then the words), saved as tokenizer.json at `path`; returns the words. One word = one token, so
    a corpus's token count is known exactly from its text."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    rng = np.random.default_rng(seed)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    words: list[str] = []
    seen = set()
    while len(words) < n_words:
        w = "".join(rng.choice(letters, int(rng.integers(2, 9))))
        if w not in seen:
            seen.add(w)
            words.append(w)
    vocab = {"<|endoftext|>": 0, "<|bos|>": 1, "<unk>": 2, **{w: i + 3 for i, w in enumerate(words)}}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.save(str(path))
    return words


def make_corpus(path: str | Path, words: list[str], n_tokens: int, seed: int = 0, n_unique_docs: int = 2000,
                doc_len: tuple[int, int] = (50, 400)) -> int:
    """A JSON-lines corpus ({"text": ...} per line) of documents of `doc_len` words drawn from `words`, until the
    documents plus one EOS each hold at least `n_tokens` tokens under `word_tokenizer`; returns that count.
    (`n_unique_docs` distinct documents are made, then written in a seeded random order: fast to write.)"""
    rng = np.random.default_rng(seed)
    W = np.array(words)
    lens = rng.integers(doc_len[0], doc_len[1] + 1, size=n_unique_docs)
    lines = [json.dumps({"text": " ".join(W[rng.integers(0, len(W), n)])}) + "\n" for n in lens]
    total = 0
    with open(path, "w") as f:
        while total < n_tokens:
            order = rng.integers(0, n_unique_docs, size=4096)
            for i in order:
                f.write(lines[i])
                total += int(lens[i]) + 1
                if total >= n_tokens:
                    break
    return total


def memory_status() -> dict[str, int]:
    """This process's VmRSS, VmHWM (peak RSS of its address space since exec or the last `reset_peak_rss`),
    RssAnon and RssFile in KiB, from /proc/self/status."""
    with open("/proc/self/status") as f:
        return {line.split(":")[0]: int(line.split()[1]) for line in f
                if line.startswith(("VmRSS:", "VmHWM:", "RssAnon:", "RssFile:"))}


def reset_peak_rss() -> bool:
    """Reset this process's peak-RSS mark (VmHWM) to its current RSS (Linux >= 4.0); False where it cannot."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


_CHILD = r"""
import json, os, sys, time
args = json.loads(sys.argv[1])
os.environ["SINKPAPER_CACHE"] = args["cache"]
import numpy as np
from sinkpaper.data import sources
from sinkpaper.data.packing import Packing
from sinkpaper.data.tokenizer import load_tokenizer
import datasets, tqdm  # noqa: F401 - imported before the measurement starts
sys.path.insert(0, args["scripts"])
from data_scale import memory_status, reset_peak_rss
load_tokenizer(args["tokenizer"])

out = {"before": memory_status()}
out["reset"] = reset_peak_rss()   # so that VmHWM below is the peak of the work alone
t0 = time.perf_counter()
if args["what"] in ("build", "load"):
    kw = dict(tokenizer=args["tokenizer"], n_tokens=args["n_tokens"])
    warm = sources.hf_cache_path(args["dataset"], **kw).exists()
    assert warm == (args["what"] == "load"), f"{args['what']}: the cache must be {'cold' if warm else 'warm'}"
    data = sources.hf_stream(args["dataset"], **kw)
    out["n_train"], out["n_val"] = len(data.train), len(data.val)
    if args["what"] == "load":   # what a training rank does with it: batches of windows
        p = Packing(context=args["context"])
        for step in range(args["steps"]):
            b = p.batch(data.train, args["batch"], seed=0, step=step)
        out["checksum"] = int(b["input_ids"].sum())
out["seconds"] = time.perf_counter() - t0
out["after"] = memory_status()
out["peak_kib"] = out["after"]["VmHWM"]
print(json.dumps(out))
"""


def measure(what: str, dataset: str | Path, tokenizer: str | Path, n_tokens: int, cache: str | Path,
            context: int = 256, batch: int = 16, steps: int = 50, threads: int | None = None) -> dict:
    """Run one measurement in a fresh process: what = "baseline" (imports and the tokenizer only), "build" (a
    cold cache: stream, tokenize, write) or "load" (map the built file, draw `steps` batches). Returns the
    child's report: `growth_kib`, its peak RSS during the work over its RSS before (after the imports); its
    private (RssAnon) and mapped-file (RssFile) growth; seconds and counts. Where the peak mark cannot be reset,
    `growth_kib` is measured against a baseline process instead."""
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
           "HF_DATASETS_OFFLINE": "1"}
    if threads:
        env["RAYON_NUM_THREADS"] = str(threads)
    args = {"what": what, "dataset": str(dataset), "tokenizer": str(tokenizer), "n_tokens": int(n_tokens),
            "cache": str(cache), "context": context, "batch": batch, "steps": steps, "scripts": str(REPO / "scripts")}
    r = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(args)], capture_output=True, text=True, env=env,
                       timeout=1800)
    if r.returncode != 0:
        raise RuntimeError(f"{what} failed:\n{r.stderr[-3000:]}")
    out = json.loads(r.stdout.strip().splitlines()[-1])
    if out["reset"]:
        out["growth_kib"] = out["peak_kib"] - out["before"]["VmRSS"]
    elif what != "baseline":
        out["growth_kib"] = out["peak_kib"] - measure("baseline", dataset, tokenizer, 1, cache)["peak_kib"]
    for k in ("RssAnon", "RssFile"):
        out[k.lower() + "_growth_kib"] = out["after"][k] - out["before"][k]
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=float, nargs="+", default=[2e6, 2e7], help="corpus sizes in tokens")
    ap.add_argument("--tokenizer", default="word", help="'word' (made here) or a tokenizer.json")
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--json", default=None, help="also write the rows with provenance here (atomically), e.g. "
                    "results/data/token-file-memory.json")
    a = ap.parse_args(argv)
    work = Path(a.workdir or tempfile.mkdtemp(prefix="sinkpaper-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    if a.tokenizer == "word":
        tok = work / "tokenizer.json"
        words = word_tokenizer(tok)
    else:
        tok = Path(a.tokenizer)
        words = word_tokenizer(work / "words.json")
    load_before = os.getloadavg()
    print(f"load on this machine while measuring: {load_before[0]:.1f} (1-minute average, {os.cpu_count()} cores)")
    rows = []
    for size in a.sizes:
        n = int(size)
        corpus = work / f"corpus-{n}.jsonl"
        if not corpus.exists():
            make_corpus(corpus, words, int(n * 1.02) + 1000)
        cache = work / f"cache-{n}"
        shutil.rmtree(cache, ignore_errors=True)   # a cold cache: the build below streams and writes
        build = measure("build", corpus, tok, n, cache)
        load = measure("load", corpus, tok, n, cache)
        load["what_steps"] = 50
        rows.append({"tokens": build["n_train"] + build["n_val"], "rss_before_mib": build["before"]["VmRSS"] / 1024,
                     "build_growth_mib": build["growth_kib"] / 1024, "load_growth_mib": load["growth_kib"] / 1024,
                     "load_private_mib": load["rssanon_growth_kib"] / 1024,
                     "load_mapped_mib": load["rssfile_growth_kib"] / 1024,
                     "int32_mib": 4 * n / 2 ** 20, "build_s": build["seconds"],
                     "rate_tok_s": (build["n_train"] + build["n_val"]) / build["seconds"]})
        r = rows[-1]
        print(f"{r['tokens']:>13,} tokens: RSS after imports {r['rss_before_mib']:.0f} MiB; peak growth: build "
              f"+{r['build_growth_mib']:.1f} MiB, load + {load['what_steps']} batches +{r['load_growth_mib']:.1f} MiB "
              f"(private +{r['load_private_mib']:.1f}, mapped file pages +{r['load_mapped_mib']:.1f}); tokens x 4 "
              f"bytes = {r['int32_mib']:.0f} MiB; build {r['build_s']:.1f} s = {r['rate_tok_s'] / 1e6:.2f} M tokens/s")
    print(json.dumps(rows, indent=1))
    if a.json:
        sys.path.insert(0, str(REPO))
        from sinkpaper import provenance
        from sinkpaper.files import atomic_write_text
        Path(a.json).parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(a.json, json.dumps({
            "provenance": {**provenance.stamp(None, cpu=provenance.cpu_model(), cores=os.cpu_count()),
                           "load_before": [round(x, 2) for x in load_before],
                           "load_after": [round(x, 2) for x in os.getloadavg()],
                           "tokenizer": a.tokenizer, "note": os.environ.get("NOTE", "")},
            "rows": rows}, indent=1) + "\n")
        print(f"wrote {a.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
