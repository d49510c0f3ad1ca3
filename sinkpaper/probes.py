"""Probe inputs for the sink metric (the paper's Table 1): natural text, random tokens, one repeated token.

BOS is always an explicit choice: with `bos=True` position 1 is the tokenizer's BOS token and the other T-1
positions are content; with `bos=False` all T positions are content. Nothing is added implicitly.

Natural text, offline: the docstrings of a fixed list of Python standard-library modules (English prose about
programs; it needs no download and is the same on every machine with the same Python). Its provenance (Python
version, character count, sha256) is reported with every measurement, because a different Python gives a
slightly different text. On a machine with the hub, `token_file` measures any corpus the user tokenizes.
"""
from __future__ import annotations

import functools
import hashlib
import importlib
import inspect
import json
import platform
import warnings
from dataclasses import dataclass
from pathlib import Path

import torch

INPUTS = ("natural", "random", "repeat")

# Modules whose docstrings are mostly prose; fixed so the text is reproducible for a given Python version.
TEXT_MODULES = ("argparse", "asyncio", "collections", "contextlib", "csv", "dataclasses", "datetime",
                "email", "functools", "http.client", "inspect", "json", "logging", "pathlib", "pickle",
                "shutil", "socket", "subprocess", "tarfile", "threading", "typing", "unittest", "urllib.request",
                "zipfile")


@dataclass
class Probe:
    """Input ids [N, T] and where they came from."""
    input_ids: torch.Tensor
    inputs: str
    bos: bool
    provenance: dict


@functools.lru_cache(maxsize=1)
def natural_text() -> tuple[str, dict]:
    """The offline natural-text source: stdlib docstrings, joined in a fixed order."""
    with warnings.catch_warnings():  # reading typing's deprecated aliases warns; the text is unaffected
        warnings.simplefilter("ignore", DeprecationWarning)
        parts = _docstrings()
    text = "\n\n".join(parts)
    return text, {"text_source": "Python standard-library docstrings", "python": platform.python_version(),
                  "text_chars": len(text), "text_sha256": hashlib.sha256(text.encode()).hexdigest()[:16]}


def _docstrings() -> list[str]:
    parts = []
    for name in TEXT_MODULES:
        mod = importlib.import_module(name)
        members = [mod] + [obj for _, obj in sorted(vars(mod).items())
                           if (inspect.isclass(obj) or inspect.isfunction(obj))
                           and getattr(obj, "__module__", "") == mod.__name__]
        for obj in members:
            doc = inspect.getdoc(obj)
            if doc and len(doc.split()) >= 20:  # skip one-liners: they are signatures, not prose
                parts.append(doc)
    return parts


def _content_ids(tokenizer) -> torch.Tensor:
    special = set(int(i) for i in tokenizer.all_special_ids)
    ids = torch.tensor([i for i in range(len(tokenizer)) if i not in special])
    if ids.numel() == 0:
        raise ValueError("the tokenizer has no non-special tokens")
    return ids


def make_inputs(tokenizer, inputs: str = "natural", *, n_samples: int = 100, seq_len: int = 64, bos: bool = False,
                seed: int = 0) -> Probe:
    """N sequences of exactly seq_len tokens (BOS included when bos=True)."""
    if inputs not in INPUTS:
        raise ValueError(f"unknown inputs '{inputs}'; valid: {', '.join(INPUTS)}")
    if n_samples < 1:
        raise ValueError(f"n_samples must be >= 1, got {n_samples}")
    if seq_len < 2:
        raise ValueError(f"seq_len must be >= 2, got {seq_len}")
    if bos and tokenizer.bos_token_id is None:
        raise ValueError("this tokenizer has no BOS token; measure with bos=False (--no-bos)")
    n_content = seq_len - 1 if bos else seq_len
    gen = torch.Generator().manual_seed(seed)
    prov: dict = {"inputs": inputs, "seed": seed}
    if inputs == "natural":
        text, meta = natural_text()
        prov.update(meta)
        stream = torch.tensor(tokenizer(text, add_special_tokens=False)["input_ids"])
        if stream.numel() < n_content + 1:
            longest = stream.numel() - 1 + (1 if bos else 0)
            raise ValueError(f"seq_len {seq_len} is longer than the natural text available: {meta['text_source']} "
                             f"(Python {meta['python']}, {meta['text_chars']:,} characters) is {stream.numel():,} "
                             f"tokens with this tokenizer, so seq_len can be at most {longest}; measure longer "
                             "sequences from your own text with token_file (--token-file)")
        # windows start at random offsets, like the paper's fixed-length cuts of a token stream
        starts = torch.randint(0, stream.numel() - n_content, (n_samples,), generator=gen)
        content = torch.stack([stream[s:s + n_content] for s in starts.tolist()])
        prov["text_tokens"] = int(stream.numel())
    else:
        vocab = _content_ids(tokenizer)
        if inputs == "random":  # uniform over the non-special vocabulary
            content = vocab[torch.randint(0, vocab.numel(), (n_samples, n_content), generator=gen)]
        else:  # "repeat": one random token repeated, a different token per sample
            tok = vocab[torch.randint(0, vocab.numel(), (n_samples, 1), generator=gen)]
            content = tok.expand(n_samples, n_content).clone()
        prov["vocab_sampled"] = int(vocab.numel())
    if bos:
        content = torch.cat([torch.full((n_samples, 1), tokenizer.bos_token_id), content], dim=1)
        prov["bos_token_id"] = int(tokenizer.bos_token_id)
    return Probe(input_ids=content.long(), inputs=inputs, bos=bos, provenance=prov)


def token_file_inputs(path: str | Path, seq_len: int | None = None, vocab_size: int | None = None) -> Probe:
    """Exactly the sequences in a JSON file: a list of equal-length lists of token ids (nothing added).

    With seq_len, rows longer than seq_len are cut to it and shorter rows are an error."""
    path = Path(path)
    try:
        rows = json.loads(path.read_text())
    except FileNotFoundError:
        raise ValueError(f"token file {path} does not exist") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"token file {path} is not valid JSON: {e.msg} (line {e.lineno})") from None
    if not isinstance(rows, list) or not rows or not all(isinstance(r, list) for r in rows):
        raise ValueError(f"token file {path} must hold a non-empty JSON list of lists of token ids")
    lengths = sorted({len(r) for r in rows})
    if len(lengths) > 1:
        raise ValueError(f"token file {path} has ragged rows (lengths {lengths[0]}..{lengths[-1]}); "
                         "all rows must have the same length")
    if not all(isinstance(t, int) and not isinstance(t, bool) and t >= 0 for r in rows for t in r):
        raise ValueError(f"token file {path} must contain non-negative integer token ids only")
    ids = torch.tensor(rows, dtype=torch.long)
    if seq_len is not None:
        if ids.shape[1] < seq_len:
            raise ValueError(f"token file {path} rows have {ids.shape[1]} tokens, fewer than --seq-len {seq_len}")
        ids = ids[:, :seq_len]
    if vocab_size is not None and int(ids.max()) >= vocab_size:
        raise ValueError(f"token file {path} has token id {int(ids.max())} >= the vocabulary size {vocab_size}")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    return Probe(input_ids=ids, inputs="token-file", bos=False,
                 provenance={"inputs": "token-file", "token_file": str(path), "token_file_sha256": digest})
