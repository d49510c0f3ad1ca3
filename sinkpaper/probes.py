"""Probe inputs for the sink metric (the paper's Table 1): natural text, random tokens, one repeated token.

BOS is always an explicit choice: with `bos=True` position 1 is the tokenizer's BOS token and the other T-1
positions are content; with `bos=False` all T positions are content. Nothing is added implicitly. `bos_policy`
names every choice a user meets (BOS_POLICIES): what the tokenizer adds by itself, a forced BOS, none, a random
first token, the first content token repeated; each keeps T tokens in all.

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
# what stands before the content: the tokenizer's own special tokens (what `tokenizer(text)` adds; nothing for
# many), its BOS forced (an error for a tokenizer without one: nothing is invented), nothing, one random content
# token, or the content's first token twice
BOS_POLICIES = ("default", "forced", "none", "random", "repeat")

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
    bos_policy: str = ""     # one of BOS_POLICIES when the probe was made with one


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


def default_prefix(tokenizer) -> list[int]:
    """The special tokens the tokenizer puts before a text by itself (``tokenizer(text)`` against the same text
    without special tokens); [] for a tokenizer that adds none in front."""
    probe = "The first token of a text."
    plain = tokenizer(probe, add_special_tokens=False)["input_ids"]
    full = tokenizer(probe)["input_ids"]
    for i in range(len(full) - len(plain) + 1):
        if full[i:i + len(plain)] == plain:
            return [int(t) for t in full[:i]]
    return []


def _prefix_len(tokenizer, policy: str) -> int:
    if policy not in BOS_POLICIES:
        raise ValueError(f"unknown BOS policy {policy!r}; valid: {', '.join(BOS_POLICIES)}")
    if policy == "forced" and tokenizer.bos_token_id is None:
        raise ValueError("this tokenizer has no BOS token, so a forced BOS cannot be measured (nothing is invented); "
                         "measure with bos=False (--no-bos) or another BOS policy")
    return {"default": len(default_prefix(tokenizer)), "none": 0}.get(policy, 1)


def make_inputs(tokenizer, inputs: str = "natural", *, n_samples: int = 100, seq_len: int = 64, bos: bool = False,
                seed: int = 0, bos_policy: str | None = None) -> Probe:
    """N sequences of exactly seq_len tokens (BOS included when bos=True; ``bos_policy``, when given, says what
    stands before the content instead: see BOS_POLICIES)."""
    if inputs not in INPUTS:
        raise ValueError(f"unknown inputs '{inputs}'; valid: {', '.join(INPUTS)}")
    if n_samples < 1:
        raise ValueError(f"n_samples must be >= 1, got {n_samples}")
    if seq_len < 2:
        raise ValueError(f"seq_len must be >= 2, got {seq_len}")
    policy = bos_policy or ("forced" if bos else "none")
    n_prefix = _prefix_len(tokenizer, policy)
    if n_prefix >= seq_len:
        raise ValueError(f"seq_len {seq_len} leaves no content after the {n_prefix} token(s) of BOS policy {policy!r}")
    n_content = seq_len - n_prefix
    gen = torch.Generator().manual_seed(seed)
    prov: dict = {"inputs": inputs, "seed": seed}
    if inputs == "natural":
        text, meta = natural_text()
        prov.update(meta)
        stream = torch.tensor(tokenizer(text, add_special_tokens=False)["input_ids"])
        if stream.numel() < seq_len + 1:
            longest = stream.numel() - 1
            raise ValueError(f"seq_len {seq_len} is longer than the natural text available: {meta['text_source']} "
                             f"(Python {meta['python']}, {meta['text_chars']:,} characters) is {stream.numel():,} "
                             f"tokens with this tokenizer, so seq_len can be at most {longest}; measure longer "
                             "sequences from your own text with token_file (--token-file)")
        # windows start at random offsets, like the paper's fixed-length cuts of a token stream; drawn at the full
        # T whatever stands first, so every BOS policy is followed by the same text
        starts = torch.randint(0, stream.numel() - seq_len, (n_samples,), generator=gen)
        content = torch.stack([stream[s:s + n_content] for s in starts.tolist()])
        prov["text_tokens"] = int(stream.numel())
    else:
        vocab = _content_ids(tokenizer)
        if inputs == "random":  # uniform over the non-special vocabulary (drawn at the full T, as above)
            content = vocab[torch.randint(0, vocab.numel(), (n_samples, seq_len), generator=gen)][:, :n_content]
        else:  # "repeat": one random token repeated, a different token per sample
            tok = vocab[torch.randint(0, vocab.numel(), (n_samples, 1), generator=gen)]
            content = tok.expand(n_samples, n_content).clone()
        prov["vocab_sampled"] = int(vocab.numel())
    content = content.long()
    if policy == "forced":
        front = torch.full((n_samples, 1), int(tokenizer.bos_token_id))
        prov["bos_token_id"] = int(tokenizer.bos_token_id)
    elif policy == "default":
        prefix = default_prefix(tokenizer)
        front = torch.tensor(prefix, dtype=torch.long).expand(n_samples, len(prefix))
        prov["default_prefix"] = prefix
    elif policy == "random":
        vocab = _content_ids(tokenizer)
        front = vocab[torch.randint(0, vocab.numel(), (n_samples, 1), generator=gen)]
    elif policy == "repeat":
        front = content[:, :1]
    else:
        front = content[:, :0]
    if bos_policy is not None:
        prov["bos_policy"] = policy
    ids = torch.cat([front.long(), content], dim=1)
    has_bos = tokenizer.bos_token_id is not None and n_prefix > 0 and bool((ids[:, 0] == tokenizer.bos_token_id).all())
    return Probe(input_ids=ids, inputs=inputs, bos=has_bos if bos_policy is not None else bos, provenance=prov,
                 bos_policy=policy)


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
