"""Byte-level BPE for the offline corpus: trained locally with `tokenizers`, cached by what determines it.

The paper's models use their own tokenizers; ours is trained on the corpus it will tokenize, so no hub is
needed. A trained tokenizer is cached under $SINKPAPER_CACHE/tokenizers (default ~/.cache/sinkpaper), keyed by
a hash of (corpus checksums, vocabulary size, special tokens, tokenizers version), and written atomically, so
a second build with the same inputs reuses it and a changed input never reads a stale one.
"""
from __future__ import annotations

import gzip
import hashlib
import itertools
import json
from pathlib import Path
from typing import Iterable, Iterator, Sequence

import numpy as np
import tokenizers
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

from ..files import atomic_path, cache_dir, sha256_file
from .tokenfile import layout, read_token_header

SPECIAL_TOKENS = ("<|endoftext|>", "<|bos|>")
# bump when the training recipe changes, so old cache entries are not reused
_RECIPE = "bytelevel-bpe-v1"

_EOS_NAMES = ("<|endoftext|>", "</s>", "<eos>", "<|end_of_text|>", "<|eot_id|>", "<|im_end|>")
_BOS_NAMES = ("<|bos|>", "<s>", "<bos>", "<|begin_of_text|>", "<|startoftext|>")


class TokenizerUnavailableError(ValueError):
    """A tokenizer that cannot be loaded here (no such file, or a hub id without network)."""


_default_cache = cache_dir  # train_bpe's argument shadows the name


def _is_file_list(docs) -> bool:
    return isinstance(docs, (list, tuple)) and len(docs) > 0 and all(isinstance(d, Path) for d in docs)


def iter_text_files(paths: Sequence[Path]) -> Iterator[str]:
    """Documents from files: .jsonl(.gz) yields each line's "text"; other .txt(.gz) files are one document."""
    for path in paths:
        path = Path(path)
        opener = gzip.open if path.suffix == ".gz" else open
        stem = path.name[:-3] if path.suffix == ".gz" else path.name
        with opener(path, "rt", encoding="utf-8") as f:
            if stem.endswith(".jsonl"):
                for line in f:
                    if line.strip():
                        yield json.loads(line)["text"]
            else:
                yield f.read()


def cache_key(corpus_id: str, vocab_size: int, special_tokens: Sequence[str]) -> str:
    payload = json.dumps({"corpus": corpus_id, "vocab_size": int(vocab_size), "special": list(special_tokens),
                          "tokenizers": tokenizers.__version__, "recipe": _RECIPE}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()


def _new_bpe(vocab_size: int, special_tokens: Sequence[str], min_frequency: int):
    tok = Tokenizer(models.BPE())
    # GPT-2 style: every byte is a symbol, so any text encodes and decodes back exactly
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=min_frequency,
                                  special_tokens=list(special_tokens), show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    return tok, trainer


def train_bpe(documents: Iterable[str] | Sequence[Path], vocab_size: int,
              special_tokens: Sequence[str] = SPECIAL_TOKENS, cache_dir: str | Path | None = None,
              corpus_id: str | None = None, min_frequency: int = 2) -> Tokenizer:
    """Train (or load from cache) a byte-level BPE with `vocab_size` entries, special tokens first (ids 0, 1, ...).

    `documents` is an iterable of strings or a list of `Path`s (.jsonl[.gz] of {"text": ...} or .txt[.gz]).
    The cache key uses `corpus_id` when given (e.g. the corpus manifest's checksum), else the files' sha256,
    else the sha256 of the documents themselves (which are then held in memory: fine for small corpora).
    """
    special_tokens = tuple(special_tokens)
    if vocab_size < 256 + len(special_tokens):
        raise ValueError(f"vocab_size must be at least {256 + len(special_tokens)} (256 bytes + special tokens)")
    if _is_file_list(documents):
        files = [Path(p) for p in documents]
        missing = [str(p) for p in files if not p.exists()]
        if missing:
            raise FileNotFoundError(f"corpus files not found: {', '.join(missing)}")
        corpus_id = corpus_id or ",".join(sha256_file(p) for p in files)
        texts: Iterable[str] = iter_text_files(files)
    else:
        if corpus_id is None:
            documents = list(documents)
            h = hashlib.sha256()
            for d in documents:
                h.update(hashlib.sha256(d.encode("utf-8")).digest())
            corpus_id = "docs:" + h.hexdigest()
        texts = documents

    key = cache_key(corpus_id, vocab_size, special_tokens)
    root = Path(cache_dir) if cache_dir is not None else _default_cache() / "tokenizers"
    path = root / f"bpe-{vocab_size}-{key[:16]}.json"
    if path.exists():
        return Tokenizer.from_file(str(path))

    tok, trainer = _new_bpe(vocab_size, special_tokens, min_frequency)
    tok.train_from_iterator(texts, trainer=trainer)
    with atomic_path(path) as tmp:  # readers never see a half-written tokenizer
        tok.save(str(tmp))
    return Tokenizer.from_file(str(path))


def tokenizer_hash(tok: Tokenizer) -> str:
    """sha256 of the tokenizer's canonical JSON: identifies the vocabulary and merges a token file was made with."""
    return hashlib.sha256(tok.to_str().encode("utf-8")).hexdigest()


def _offline_choices() -> str:
    root = cache_dir() / "tokenizers"
    cached = sorted(p.name for p in root.glob("*.json")) if root.exists() else []
    parts = ["a tokenizer.json file", "a token file written by `python -m sinkpaper data build` (it embeds its "
             "tokenizer)", "a corpus folder holding tokenizer.json"]
    if cached:
        parts.append(f"cached in {root}: {', '.join(cached)}")
    return "; ".join(parts)


def load_tokenizer(path_or_hf_id: str | Path) -> Tokenizer:
    """A `tokenizers.Tokenizer` from a tokenizer.json, a folder holding one, a sinkpaper token file, or a hub id.

    A hub id needs the Hugging Face hub (online); offline it fails with a list of what is available.
    """
    p = Path(path_or_hf_id)
    if p.is_dir() and (p / "tokenizer.json").exists():
        p = p / "tokenizer.json"
    if p.is_file():
        if layout(p) is not None:
            return Tokenizer.from_str(read_token_header(p, with_tokenizer=True)["tokenizer"])
        return Tokenizer.from_file(str(p))
    name = str(path_or_hf_id)
    if p.suffix in (".json", ".xz") or name.startswith((".", "/", "~")):
        raise TokenizerUnavailableError(f"tokenizer file not found: {name}; available offline: {_offline_choices()}")
    try:
        from transformers import AutoTokenizer
        hf = AutoTokenizer.from_pretrained(name)
    except Exception as e:  # noqa: BLE001 - any failure here means "not available", reported with the cause
        raise TokenizerUnavailableError(
            f"cannot load tokenizer {name!r} from the Hugging Face hub ({type(e).__name__}: {e}). "
            f"Available offline: {_offline_choices()}") from e
    backend = getattr(hf, "backend_tokenizer", None)
    if backend is None:
        raise TokenizerUnavailableError(f"{name!r} has no fast (tokenizers) backend; use a tokenizer.json instead")
    return backend


def encode_documents(tok: Tokenizer, texts: Sequence[str], eos: int | None) -> tuple[np.ndarray, np.ndarray]:
    """Tokenize a batch of documents in parallel (`encode_batch`, on all cores), each followed by `eos` when
    given: (one flat int64 array of every document's ids, the length of each document's part)."""
    encode = getattr(tok, "encode_batch_fast", tok.encode_batch)   # no character offsets: faster when there
    encs = encode(list(texts), add_special_tokens=False)
    tail = [] if eos is None else [eos]
    lengths = np.fromiter((len(e.ids) + len(tail) for e in encs), dtype=np.int64, count=len(encs))
    flat = np.fromiter(itertools.chain.from_iterable(e.ids + tail for e in encs), dtype=np.int64,
                       count=int(lengths.sum()))
    return flat, lengths


def _first_id(tok: Tokenizer, names: Sequence[str]) -> int | None:
    for n in names:
        i = tok.token_to_id(n)
        if i is not None:
            return int(i)
    return None


def eos_id(tok: Tokenizer) -> int:
    """Id of the end-of-document token (`<|endoftext|>` for our BPE); raises if the tokenizer has none."""
    i = _first_id(tok, _EOS_NAMES)
    if i is None:
        raise ValueError(f"tokenizer has none of the end-of-text tokens {_EOS_NAMES}")
    return i


def bos_id(tok: Tokenizer) -> int | None:
    """Id of the beginning-of-sequence token (`<|bos|>` for our BPE), or None if the tokenizer has none."""
    return _first_id(tok, _BOS_NAMES)


__all__ = ["SPECIAL_TOKENS", "TokenizerUnavailableError", "train_bpe", "load_tokenizer", "eos_id", "bos_id",
           "tokenizer_hash", "cache_key", "iter_text_files", "encode_documents", "sha256_file"]
