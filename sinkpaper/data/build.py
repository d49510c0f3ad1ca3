"""Building the offline corpus: dedup and split (`Deduplicator`, `is_validation`), the text corpus with its
manifest (`build_corpus`), the token file (`export_tokens`, in the format of `sinkpaper.data.tokenfile`), a
small sample cut from it (`write_sample`), the whole pipeline (`build_all`), and what `data info` prints
(`describe`).
"""
from __future__ import annotations

import gzip
import hashlib
import json
import lzma
import os
import random
import re
import time
import unicodedata
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterable, Iterator

import numpy as np

from ..files import atomic_open, atomic_path, atomic_write_text, sha256_file
from ..files import cache_dir as default_cache_dir
from . import tokenizer as _tok
from .archives import fetch_archive
from .corpus_sources import CORPUS_SOURCES, source_names
from .extraction import EXTRACT_VERSION, docs_path, extract_source, iter_docs
from .markup import n_words, paragraphs
from .tokenfile import (BUILD_HINT, TOKEN_FILE, TokenFileError, describe_token_file, load_tokens, read_token_header,
                        write_token_file)

DEFAULT_MAX_MIB = 55.0
MIN_DEDUP_PARAGRAPH = 40  # characters of normalized text; shorter lines ("Returns", "Exeunt.") may repeat


def dedup_key(text: str) -> bytes:
    """Near-exact identity: case, punctuation and spacing do not matter."""
    norm = re.sub(r"[\W_]+", " ", unicodedata.normalize("NFKC", text).casefold()).strip()
    return hashlib.blake2b(norm.encode("utf-8"), digest_size=16).digest()


def _norm_len(text: str) -> int:
    return len(re.sub(r"[\W_]+", "", text))


class Deduplicator:
    """Exact + near-exact dedup across the whole corpus, in a fixed order (so the result is reproducible).

    A paragraph of 40+ normalized characters seen before is dropped (licence notices, repeated boilerplate,
    parallel passages); then a document whose remaining text was seen before is dropped.
    """

    def __init__(self, min_paragraph: int = MIN_DEDUP_PARAGRAPH):
        self.min_paragraph = min_paragraph
        self.paras: set[bytes] = set()
        self.docs: set[bytes] = set()

    def __call__(self, text: str) -> str | None:
        whole = dedup_key(text)
        if whole in self.docs:
            return None
        self.docs.add(whole)
        kept = []
        for p in paragraphs(text):
            if _norm_len(p) >= self.min_paragraph:
                k = dedup_key(p)
                if k in self.paras:
                    continue
                self.paras.add(k)
            kept.append(p)
        if not kept:
            return None
        out = "\n\n".join(kept)
        if out != text:
            k = dedup_key(out)
            if k in self.docs:
                return None
            self.docs.add(k)
        return out


def is_validation(text: str, val_fraction: float, seed: int = 0) -> bool:
    """Deterministic split by a hash of the document's normalized text (not of its position or source)."""
    if val_fraction <= 0:
        return False
    h = hashlib.blake2b(dedup_key(text), digest_size=8, key=str(seed).encode()).digest()
    return int.from_bytes(h, "little") / 2.0 ** 64 < val_fraction


@contextmanager
def _gz_writer(path: Path) -> Iterator[gzip.GzipFile]:
    # mtime=0 and no file name in the header: same content -> same bytes -> same sha256
    with atomic_open(path, "wb") as raw, \
            gzip.GzipFile(filename="", fileobj=raw, mode="wb", mtime=0, compresslevel=6) as gz:
        yield gz


def _extract_worker(args):
    name, cache = args
    return extract_source(CORPUS_SOURCES[name], Path(cache))


def build_corpus(out_dir: str | Path, sources: Iterable[str] | None = None, cache_dir: str | Path | None = None,
                 val_fraction: float = 0.01, seed: int = 0, workers: int | None = None,
                 log: Callable[[str], None] = print) -> dict:
    """Fetch, extract, deduplicate and split the corpus into `out_dir`; returns (and writes) the manifest."""
    t0 = time.time()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir() / "corpus"
    names = list(sources) if sources is not None else source_names()
    unknown = [n for n in names if n not in CORPUS_SOURCES]
    if unknown:
        raise ValueError(f"unknown sources {unknown}; available: {', '.join(CORPUS_SOURCES)}")
    # fetch serially (clear errors, one download at a time), then extract in parallel
    for n in names:
        for a in CORPUS_SOURCES[n].archives:
            fetch_archive(a, cache)
    workers = workers or min(len(names), os.cpu_count() or 1)
    if workers > 1:
        with ProcessPoolExecutor(workers) as ex:
            metas = list(ex.map(_extract_worker, [(n, str(cache)) for n in names]))
    else:
        metas = [extract_source(CORPUS_SOURCES[n], cache) for n in names]
    for m in metas:
        log(f"  extracted {m['source']}: {m['n_extracted_documents']} documents from {m['n_files']} files")

    dedup = Deduplicator()
    stats: dict[str, dict] = {}
    train_p, val_p = out / "train.jsonl.gz", out / "val.jsonl.gz"
    checks_p = out / "file_checksums.tsv.gz"
    with _gz_writer(train_p) as ft, _gz_writer(val_p) as fv, _gz_writer(checks_p) as fc:
        fc.write(b"source\tpackage\tpath\tsha256\tbytes\n")
        # priority order first, so that when paragraphs repeat, the prose source keeps them
        for n in sorted(names, key=lambda n: (CORPUS_SOURCES[n].priority, names.index(n))):
            src, meta = CORPUS_SOURCES[n], metas[names.index(n)]
            for pkg, path, sha, size in meta["files"]:
                fc.write(f"{n}\t{pkg}\t{path}\t{sha}\t{size}\n".encode())
            st = {"raw": {"documents": 0, "characters": 0, "words": 0},
                  "train": {"documents": 0, "characters": 0, "words": 0},
                  "val": {"documents": 0, "characters": 0, "words": 0}}
            for d in iter_docs(docs_path(src, cache)):
                text = d["text"]
                st["raw"]["documents"] += 1
                st["raw"]["characters"] += len(text)
                st["raw"]["words"] += n_words(text)
                kept = dedup(text)
                if kept is None or n_words(kept) < src.min_words:
                    continue
                split = "val" if is_validation(kept, val_fraction, seed) else "train"
                line = json.dumps({"source": n, "id": d["id"], "text": kept}, ensure_ascii=False) + "\n"
                (fv if split == "val" else ft).write(line.encode("utf-8"))
                s = st[split]
                s["documents"] += 1
                s["characters"] += len(kept)
                s["words"] += n_words(kept)
            stats[n] = st
            log(f"  {n}: {st['train']['documents'] + st['val']['documents']} documents, "
                f"{st['train']['words'] + st['val']['words']:,} words after dedup "
                f"({st['raw']['words']:,} before)")

    def total(split, key):
        return sum(s[split][key] for s in stats.values())

    manifest = {
        "format": "sinkpaper-corpus-1",
        "description": "Offline English corpus from registry packages: JSONL documents {source, id, text}, "
                       "gzip; see sinkpaper/data/corpus.py",
        "extract_version": EXTRACT_VERSION,
        "val_fraction": val_fraction,
        "seed": seed,
        "dedup": f"paragraphs of >= {MIN_DEDUP_PARAGRAPH} normalized characters and whole documents, "
                 "case/punctuation/space-insensitive, first occurrence kept (sources in priority order)",
        "sources": {},
        "totals": {split: {k: total(split, k) for k in ("documents", "characters", "words")}
                   for split in ("raw", "train", "val")},
        "outputs": {},
        "build_seconds": None,
    }
    for n, meta in zip(names, metas):
        src = CORPUS_SOURCES[n]
        manifest["sources"][n] = {
            "description": src.description, "license": src.license, "priority": src.priority,
            "archives": meta["archives"], "n_files": meta["n_files"], "files_sha256": meta["files_sha256"],
            **{k: stats[n][k] for k in ("raw", "train", "val")},
        }
    for p in (train_p, val_p, checks_p):
        manifest["outputs"][p.name] = {"sha256": sha256_file(p), "bytes": p.stat().st_size}
    manifest["corpus_id"] = hashlib.sha256(
        (manifest["outputs"]["train.jsonl.gz"]["sha256"] + manifest["outputs"]["val.jsonl.gz"]["sha256"]).encode()
    ).hexdigest()
    manifest["build_seconds"] = round(time.time() - t0, 1)
    write_manifest(out, manifest)
    return manifest


def write_manifest(corpus_dir: Path, manifest: dict) -> None:
    p = Path(corpus_dir) / "manifest.json"
    atomic_write_text(p, json.dumps(manifest, indent=1, ensure_ascii=False) + "\n")


def read_manifest(corpus_dir: str | Path) -> dict:
    p = Path(corpus_dir) / "manifest.json"
    if not p.exists():
        raise FileNotFoundError(f"no corpus manifest at {p}; {BUILD_HINT}")
    return json.loads(p.read_text())


def iter_corpus(corpus_dir: str | Path, split: str = "train") -> Iterator[dict]:
    """Documents of a built corpus: dicts {source, id, text}."""
    p = Path(corpus_dir) / f"{split}.jsonl.gz"
    if not p.exists():
        raise FileNotFoundError(f"no corpus split at {p}; {BUILD_HINT}")
    yield from iter_docs(p)


def _encode_docs(tok, texts: list[str], eos: int, batch: int = 2048) -> list[np.ndarray]:
    out = []
    for i in range(0, len(texts), batch):
        flat, lengths = _tok.encode_documents(tok, texts[i:i + batch], eos)
        out.extend(np.split(flat.astype(np.uint16), np.cumsum(lengths)[:-1]))
    return out


def export_tokens(corpus_dir: str | Path, tokenizer, out_path: str | Path | None = None,
                  max_mib: float | None = DEFAULT_MAX_MIB, seed: int = 0, preset: int = 9,
                  log: Callable[[str], None] = print) -> dict:
    """Tokenize every document (EOS after each), shuffle documents (seeded) and write ONE compressed token file.

    Token counts per source go into the corpus manifest. If the file would exceed `max_mib`, training
    documents are kept in source priority order (prose first) until it fits; what was left out is recorded.
    """
    corpus_dir = Path(corpus_dir)
    out_path = Path(out_path) if out_path is not None else corpus_dir / TOKEN_FILE
    manifest = read_manifest(corpus_dir)
    eos = _tok.eos_id(tokenizer)
    vocab = tokenizer.get_vocab_size()
    if vocab > 65536:
        raise ValueError(f"vocab_size {vocab} does not fit uint16")

    per: dict[str, dict[str, list[np.ndarray]]] = {}
    for split in ("train", "val"):
        by_src: dict[str, list[str]] = {}
        for d in iter_corpus(corpus_dir, split):
            by_src.setdefault(d["source"], []).append(d["text"])
        for s, texts in by_src.items():
            per.setdefault(s, {"train": [], "val": []})[split] = _encode_docs(tokenizer, texts, eos)
    order = sorted(per, key=lambda s: (CORPUS_SOURCES[s].priority if s in CORPUS_SOURCES else 9,
                                       list(manifest["sources"]).index(s) if s in manifest["sources"] else 0))
    counts = {s: {sp: int(sum(a.size for a in per[s][sp])) for sp in ("train", "val")} for s in order}
    full_train = sum(c["train"] for c in counts.values())
    log(f"  tokenized: {full_train:,} train + {sum(c['val'] for c in counts.values()):,} val tokens")

    budget = None  # train tokens kept, None = all
    fixed = 0
    for attempt in range(4):
        kept: dict[str, int] = {}
        train_docs, val_docs = [], []
        left = budget
        for s in order:
            n_kept = 0
            for a in per[s]["train"]:
                if left is not None and a.size > left:
                    left = 0
                    break
                train_docs.append(a)
                n_kept += a.size
                if left is not None:
                    left -= a.size
            kept[s] = n_kept
            if n_kept > 0:
                val_docs.extend(per[s]["val"])
        # a seeded shuffle of whole documents: a training window mixes sources, never a document's halves
        idx = list(range(len(train_docs)))
        rng_local = random.Random(seed)
        rng_local.shuffle(idx)
        train = np.concatenate([train_docs[i] for i in idx]) if train_docs else np.zeros(0, np.uint16)
        vidx = list(range(len(val_docs)))
        rng_local.shuffle(vidx)
        val = np.concatenate([val_docs[i] for i in vidx]) if val_docs else np.zeros(0, np.uint16)
        meta = {"corpus_id": manifest.get("corpus_id"), "seed": seed,
                "sources_train_tokens": kept, "documents_shuffled": True,
                "tokenizer_sha256": _tok.tokenizer_hash(tokenizer),
                "truncated": budget is not None, "max_mib": max_mib}
        t0 = time.time()
        rec = write_token_file(out_path, train, val, eos, vocab, tokenizer.to_str(), meta=meta, preset=preset,
                               bos_id=_tok.bos_id(tokenizer))
        mib = rec["bytes"] / 2 ** 20
        log(f"  wrote {out_path.name}: {mib:.1f} MiB for {train.size:,} train + {val.size:,} val tokens "
            f"({time.time() - t0:.0f} s)")
        if max_mib is None or mib <= max_mib:
            break
        # shrink train in proportion, not counting the fixed part (header, embedded tokenizer)
        fixed = fixed if attempt else len(lzma.compress(tokenizer.to_str().encode(), preset=preset)) + 1024
        budget = int(train.size * (max_mib * 2 ** 20 * 0.985 - fixed) / max(rec["bytes"] - fixed, 1))
        if budget <= 0:
            raise RuntimeError(f"the token file cannot fit under {max_mib} MiB")
        log(f"  over {max_mib} MiB by {mib - max_mib:.1f} MiB: keeping ~{budget:,} train tokens, prose first")
    else:
        raise RuntimeError(f"could not fit the token file under {max_mib} MiB")

    for s in order:
        if s in manifest["sources"]:
            manifest["sources"][s]["tokens"] = {"train": counts[s]["train"], "val": counts[s]["val"],
                                                "unique": counts[s]["train"] + counts[s]["val"],
                                                "train_in_token_file": kept.get(s, 0)}
    manifest["tokens"] = {
        "unique": int(sum(c["train"] + c["val"] for c in counts.values())),
        "train": int(full_train), "val": int(sum(c["val"] for c in counts.values())),
        "train_in_token_file": int(train.size), "val_in_token_file": int(val.size),
        "eos_appended_per_document": True,
        "left_out_of_token_file": {s: counts[s]["train"] - kept.get(s, 0) for s in order
                                   if counts[s]["train"] - kept.get(s, 0) > 0},
    }
    manifest["tokenizer"] = {"vocab_size": vocab, "sha256": _tok.tokenizer_hash(tokenizer), "eos_id": eos,
                             "bos_id": _tok.bos_id(tokenizer), "file": "tokenizer.json"}
    manifest["outputs"][out_path.name] = {"sha256": rec["sha256"], "bytes": rec["bytes"]}
    write_manifest(corpus_dir, manifest)
    return rec


def write_sample(src: str | Path, out_path: str | Path, n_train: int, n_val: int) -> dict:
    """A small token file cut from a built one: its first n_train training and n_val validation tokens (the
    documents are already shuffled, so the cut mixes every source), same tokenizer, provenance in meta."""
    if n_train < 0 or n_val < 0:
        raise ValueError(f"token counts must be >= 0, got n_train={n_train}, n_val={n_val}")
    data = load_tokens(src)
    if n_train > data["train"].size or n_val > data["val"].size:
        raise ValueError(f"{src} has {data['train'].size:,} train / {data['val'].size:,} val tokens; "
                         f"asked for {n_train:,} / {n_val:,}")
    header = read_token_header(data["meta"]["path"], with_tokenizer=True)
    meta = {"sample_of": {"sha256": data["meta"]["sha256"], "n_train": int(data["train"].size),
                          "n_val": int(data["val"].size), "corpus_id": data["meta"].get("corpus_id")},
            "sources_train_tokens_full": data["meta"].get("sources_train_tokens")}
    return write_token_file(out_path, data["train"][:n_train], data["val"][:n_val], data["eos_id"],
                            data["vocab_size"], header["tokenizer"], meta=meta, bos_id=data["bos_id"])



def build_all(out: str | Path, sources: Iterable[str] | None = None, *, vocab_size: int = 8192,
              cache_dir: str | Path | None = None, val_fraction: float = 0.01, seed: int = 0,
              max_mib: float | None = DEFAULT_MAX_MIB, tokens: bool = True,
              log: Callable[[str], None] = print) -> dict:
    """The whole offline corpus into `out`: the text corpus (`build_corpus`), then unless `tokens` is false its
    BPE tokenizer (`tokenizer.json`) and token file (`export_tokens`); returns the manifest. The arguments are
    checked before anything is fetched."""
    names = list(sources) if sources is not None else source_names()
    unknown = [n for n in names if n not in CORPUS_SOURCES]
    if unknown or not names:
        raise ValueError(f"unknown sources {unknown or '(none given)'}; available: {', '.join(CORPUS_SOURCES)}")
    lo = 256 + len(_tok.SPECIAL_TOKENS)
    if tokens and not lo <= vocab_size <= 1 << 16:
        raise ValueError(f"vocab_size must be in [{lo}, 65536] (256 bytes + special tokens; uint16 ids), "
                         f"got {vocab_size}")
    if not 0 <= val_fraction < 1:
        raise ValueError(f"val_fraction must be in [0, 1), got {val_fraction}")
    if max_mib is not None and max_mib <= 0:
        raise ValueError(f"max_mib must be > 0 (or None for no cap), got {max_mib}")
    t0 = time.time()
    out = Path(out)
    log(f"building corpus into {out}")
    m = build_corpus(out, names, cache_dir=cache_dir, val_fraction=val_fraction, seed=seed, log=log)
    log(f"corpus: {m['totals']['train']['words'] + m['totals']['val']['words']:,} words ({time.time() - t0:.0f} s)")
    if not tokens:
        return m
    t1 = time.time()
    tok = _tok.train_bpe([out / "train.jsonl.gz"], vocab_size, corpus_id=m["corpus_id"])
    with atomic_path(out / "tokenizer.json") as tmp:
        tok.save(str(tmp))
    log(f"tokenizer: vocab {tok.get_vocab_size()} ({time.time() - t1:.0f} s)")
    export_tokens(out, tok, max_mib=max_mib, seed=seed, log=log)
    m = read_manifest(out)
    m["build_seconds_total"] = round(time.time() - t0, 1)
    write_manifest(out, m)
    return m


def describe(path: str | Path) -> str:
    """What `python -m sinkpaper data info` prints: a corpus folder's sources (documents, words, tokens,
    packages), outputs and token file, or a token file's header."""
    path = Path(path)
    if not path.exists():
        raise TokenFileError(f"{path} not found; {BUILD_HINT}")
    if not path.is_dir():
        return describe_token_file(path)
    if not (path / "manifest.json").exists():
        raise TokenFileError(f"{path} is a folder without a corpus manifest.json; {BUILD_HINT}")
    m = read_manifest(path)
    lines = [f"corpus {path}  (corpus_id {m.get('corpus_id', '?')[:16]})",
             f"{'source':<20} {'docs':>9} {'words':>12} {'tokens':>12}  packages"]
    for n, s in m["sources"].items():
        docs = s["train"]["documents"] + s["val"]["documents"]
        words = s["train"]["words"] + s["val"]["words"]
        toks = s.get("tokens", {}).get("unique")
        pk = ", ".join(f"{a['package']} {a['version']}" for a in s["archives"])
        lines.append(f"{n:<20} {docs:>9,} {words:>12,} {toks if toks is None else format(toks, ','):>12}  {pk}")
    t = m.get("tokens", {})
    tot_w = m["totals"]["train"]["words"] + m["totals"]["val"]["words"]
    lines.append(f"{'total':<20} {m['totals']['train']['documents'] + m['totals']['val']['documents']:>9,} "
                 f"{tot_w:>12,} {t.get('unique', 0):>12,}")
    for name, o in m["outputs"].items():
        lines.append(f"  {name}: {o['bytes'] / 2 ** 20:.1f} MiB sha256 {o['sha256'][:16]}")
    if t.get("left_out_of_token_file"):
        lines.append(f"  left out of the token file (train tokens): {t['left_out_of_token_file']}")
    if (path / TOKEN_FILE).exists():
        lines.append(describe_token_file(path / TOKEN_FILE))
    return "\n".join(lines)


__all__ = ["DEFAULT_MAX_MIB", "MIN_DEDUP_PARAGRAPH", "dedup_key", "Deduplicator", "is_validation", "build_corpus",
           "write_manifest", "read_manifest", "iter_corpus", "export_tokens", "write_sample", "build_all", "describe"]
