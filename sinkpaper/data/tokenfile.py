"""Token files: the one on-disk format for token streams, used by the corpus builder, the tokenizer and the
token sources (no other module knows the bytes).

Two layouts share a magic prefix and a JSON header (vocabulary size, EOS and BOS ids, the tokenizer's sha256,
the token counts of each split, free-form `meta`):

- **flat** (`SINKTOK2`, what training reads): the header, zero-padded to `data_offset` (64 KiB), then every
  split's tokens one after the other as little-endian uint16 (when the vocabulary fits) or uint32, then the
  tokenizer JSON. The header also records the dtype, the total token count and the sha256 of the token bytes.
  Reading it memory-maps the file: the tokens are never copied into the process, so every torchrun rank of a
  node shares one copy in the page cache. `TokenWriter` writes it incrementally while streaming (memory stays
  at one chunk) under a temporary name, and renames it into place only when it is complete.
- **xz** (`SINKTOK1`, what is shipped: the committed `data/sample/tokens.u16.xz` and the offline corpus
  `data/corpus/tokens.u16.xz`): the header, then one xz stream of train and val as uint16 and the tokenizer
  JSON, with a `<file>.json` sidecar recording the file's sha256. `open_tokens` decompresses such a file once,
  streaming (after checking its sha256), into a flat file in the cache - $SINKPAPER_CACHE/tokens (default
  ~/.cache/sinkpaper/tokens), named after the xz file's sha256 - and maps that; `python -m sinkpaper data
  unpack FILE` does the same by hand.
"""
from __future__ import annotations

import hashlib
import json
import lzma
import mmap
import os
import struct
from pathlib import Path
from typing import Iterable

import numpy as np

from ..files import AtomicWrite, atomic_open, atomic_write_text, cache_dir, sha256_file

TOKEN_FILE = "tokens.u16.xz"     # the offline corpus's token file inside its folder
TOKEN_MAGIC = b"SINKTOK1"        # the xz layout
FLAT_MAGIC = b"SINKTOK2"         # the flat, memory-mappable layout
FLAT_SUFFIX = ".tok"
HEADER_BYTES = 1 << 16           # room reserved for the flat header (the tokens start here)
BUILD_HINT = "run `python -m sinkpaper data build --out DIR` to build it"
_CHUNK = 1 << 20
_XZ_BLOCK = 8 << 20              # decompressed bytes handled at a time when reading an xz file


class TokenFileError(RuntimeError):
    """A token file that is missing, corrupted, or does not match its recorded checksum."""


def dtype_for(vocab_size: int) -> np.dtype:
    """uint16 when every id fits (vocabulary of at most 65,536), else uint32; little-endian either way."""
    if not 0 < vocab_size <= 2 ** 32:
        raise ValueError(f"vocab_size must be in [1, 2**32], got {vocab_size}")
    return np.dtype("<u2") if vocab_size <= 1 << 16 else np.dtype("<u4")


# ----------------------------------------------------------------------------------------------- flat: write
class TokenWriter:
    """Writes a flat token file piece by piece: `write(split, tokens)` appends to the current split (a new split
    name starts the next one; splits are stored in the order first written), `close()` finishes it.

    Used as a context manager, the file appears at `path` only if the block completes; on an exception the
    temporary file is removed and nothing at `path` changes.
    """

    def __init__(self, path: str | Path, *, vocab_size: int, eos_id: int | None, bos_id: int | None = None,
                 tokenizer_json: str | None = None, meta: dict | None = None):
        self.path = Path(path)
        self.dtype = dtype_for(vocab_size)
        self.vocab_size, self.eos_id, self.bos_id = int(vocab_size), eos_id, bos_id
        self.set_tokenizer(tokenizer_json)
        self.meta = meta or {}
        self.splits: dict[str, list[int]] = {}   # name -> [start, count] in tokens
        self.n_tokens = 0
        self._current: str | None = None
        self._sha = hashlib.sha256()
        self._out = AtomicWrite(self.path)
        self._f = self._out.open("wb")
        self._f.seek(HEADER_BYTES)

    def write(self, split: str, tokens) -> None:
        if self._f is None:
            raise ValueError(f"{self.path}: the writer is closed")
        if split != self._current:
            if split in self.splits:
                raise ValueError(f"split {split!r} was already finished; splits are written one after another")
            self.splits[split] = [self.n_tokens, 0]
            self._current = split
        a = np.asarray(tokens)
        if a.size == 0:
            return
        if a.dtype.kind not in "iu":
            raise ValueError(f"token ids must be integers, got dtype {a.dtype}")
        lo, hi = int(a.min()), int(a.max())
        if lo < 0 or hi >= self.vocab_size:
            raise ValueError(f"token id {lo if lo < 0 else hi} is outside the vocabulary [0, {self.vocab_size})")
        buf = np.ascontiguousarray(a.ravel(), dtype=self.dtype)
        self._f.write(memoryview(buf).cast("B"))
        self._sha.update(memoryview(buf).cast("B"))
        self.splits[split][1] += buf.size
        self.n_tokens += buf.size

    def set_tokenizer(self, tokenizer_json: str | None) -> None:
        """The tokenizer JSON stored after the tokens (it may be known only at the end, as when unpacking)."""
        self.tokenizer = tokenizer_json.encode("utf-8") if tokenizer_json is not None else None

    def header(self) -> dict:
        tok = self.tokenizer
        data_bytes = self.n_tokens * self.dtype.itemsize
        return {"format": 2, "dtype": self.dtype.name, "byteorder": "little", "data_offset": HEADER_BYTES,
                "n_tokens": self.n_tokens, "splits": {k: list(v) for k, v in self.splits.items()},
                "sha256": self._sha.hexdigest(), "vocab_size": self.vocab_size,
                "eos_id": None if self.eos_id is None else int(self.eos_id),
                "bos_id": None if self.bos_id is None else int(self.bos_id),
                "tokenizer_offset": HEADER_BYTES + data_bytes if tok is not None else None,
                "tokenizer_bytes": len(tok) if tok is not None else 0,
                "tokenizer_sha256": hashlib.sha256(tok).hexdigest() if tok is not None else None,
                "meta": self.meta}

    def close(self) -> dict:
        """Append the tokenizer, write the header, flush to disk and rename into place; returns the header."""
        if self._f is None:
            raise ValueError(f"{self.path}: the writer is closed")
        try:
            header = self.header()
            if self.tokenizer is not None:
                self._f.write(self.tokenizer)
            hb = json.dumps(header, sort_keys=True).encode()
            if 12 + len(hb) > HEADER_BYTES:
                raise ValueError(f"token file header of {len(hb)} bytes does not fit {HEADER_BYTES}; shorten meta")
            self._f.seek(0)
            self._f.write(FLAT_MAGIC + struct.pack("<I", len(hb)) + hb)
            self._f = None
            self._out.commit()
        except BaseException:
            self.abort()
            raise
        return header

    def abort(self) -> None:
        self._f = None
        if not self._out.done:
            self._out.abort()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.close()
        else:
            self.abort()
        return False


def write_tokens(path: str | Path, splits: dict[str, Iterable], **kw) -> dict:
    """A flat token file from in-memory arrays ({split: tokens}, or {split: iterable of chunks}); returns the
    header. Keywords as `TokenWriter`."""
    with TokenWriter(path, **kw) as w:
        for name, tokens in splits.items():
            chunks = [tokens] if isinstance(tokens, np.ndarray) else tokens
            w.write(name, np.zeros(0, np.int64))   # an empty split is still recorded
            for c in chunks:
                w.write(name, c)
    return w.header()


# ----------------------------------------------------------------------------------------------- flat: read
class TokenFile:
    """An open flat token file: `split(name)` is a read-only array over the memory-mapped file (nothing is
    read until it is indexed); `header` and the properties describe it."""

    def __init__(self, path: str | Path, header: dict, mm: mmap.mmap):
        self.path, self.header, self._mm = Path(path), header, mm
        self.dtype = np.dtype(header["dtype"]).newbyteorder("<")

    def split(self, name: str) -> np.ndarray:
        if name not in self.header["splits"]:
            raise KeyError(f"{self.path} has no split {name!r}; it has {', '.join(self.header['splits'])}")
        start, count = self.header["splits"][name]
        return np.frombuffer(self._mm, dtype=self.dtype, count=count,
                             offset=self.header["data_offset"] + start * self.dtype.itemsize)

    @property
    def vocab_size(self) -> int:
        return int(self.header["vocab_size"])

    @property
    def eos_id(self) -> int | None:
        return self.header.get("eos_id")

    @property
    def bos_id(self) -> int | None:
        return self.header.get("bos_id")

    @property
    def meta(self) -> dict:
        return self.header.get("meta", {})

    def tokenizer_json(self) -> str | None:
        off = self.header.get("tokenizer_offset")
        return None if off is None else self._mm[off:off + self.header["tokenizer_bytes"]].decode("utf-8")

    def verify(self) -> None:
        """Hash the token bytes (reading the file in 1 MiB chunks) against the header's sha256."""
        h = hashlib.sha256()
        left = self.header["n_tokens"] * self.dtype.itemsize
        with open(self.path, "rb") as f:
            f.seek(self.header["data_offset"])
            while left > 0:
                block = f.read(min(_CHUNK, left))
                if not block:
                    break
                h.update(block)
                left -= len(block)
        if h.hexdigest() != self.header["sha256"]:
            raise TokenFileError(f"token file {self.path} is corrupted: its tokens do not match the sha256 in "
                                 "its header; delete it (a cache file is rebuilt on the next run)")


def _read_flat_header(f, path: Path) -> dict:
    (n,) = struct.unpack("<I", f.read(4))
    if n > HEADER_BYTES:
        raise TokenFileError(f"token file {path} has a corrupted header")
    try:
        return json.loads(f.read(n))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise TokenFileError(f"token file {path} has a corrupted header ({e})") from e


def open_flat(path: str | Path, verify: bool = False) -> TokenFile:
    """Memory-map a flat token file. Its size is always checked against the header (a truncated file fails);
    `verify` also hashes the tokens against the header's sha256."""
    path = Path(path)
    if not path.exists():
        raise TokenFileError(f"token file {path} not found")
    with open(path, "rb") as f:
        if f.read(8) != FLAT_MAGIC:
            raise TokenFileError(f"{path} is not a flat sinkpaper token file")
        header = _read_flat_header(f, path)
        want = header["data_offset"] + header["n_tokens"] * np.dtype(header["dtype"]).itemsize \
            + header["tokenizer_bytes"]
        size = os.fstat(f.fileno()).st_size
        if size != want:
            raise TokenFileError(f"token file {path} is truncated or corrupted: {size} bytes, its header "
                                 f"describes {want} (a file in {cache_dir() / 'tokens'} may be deleted: it is "
                                 "rebuilt on the next run)")
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    if hasattr(mm, "madvise"):
        mm.madvise(mmap.MADV_RANDOM)   # training reads scattered windows: no read-ahead around each
    tf = TokenFile(path, header, mm)
    if verify:
        tf.verify()
    return tf


# ----------------------------------------------------------------------------------------------- xz layout
#
# Layout: b"SINKTOK1", u32 little-endian header length, header JSON (counts, ids, meta), then one xz stream
# holding train then val as little-endian uint16, then the tokenizer JSON. A sidecar `<file>.json` records the
# file's sha256; readers refuse a file that does not match it.
# Why xz (LZMA2, preset 9, 2-byte alignment hints): measured on this corpus it stores 0.79 bytes/token, against
# 1.07 for zlib (np.savez_compressed) and 1.08 for xz over separated high/low byte planes; decompressing 55M
# tokens takes ~5 s. It is in Python's standard library, so the GPU machine needs nothing installed.
_XZ_FILTERS = [{"id": lzma.FILTER_LZMA2, "preset": 9, "pb": 1, "lp": 1}]


def _le_bytes(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a, dtype="<u2").tobytes()


def write_token_file(out_path: str | Path, train: np.ndarray, val: np.ndarray, eos_id: int, vocab_size: int,
                     tokenizer_json: str, meta: dict | None = None, preset: int = 9,
                     bos_id: int | None = None) -> dict:
    """Write an xz token file and its sidecar atomically; returns the sidecar record."""
    if vocab_size > 65536:
        raise ValueError(f"vocab_size {vocab_size} does not fit uint16")
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    train = np.ascontiguousarray(train, dtype=np.uint16)
    val = np.ascontiguousarray(val, dtype=np.uint16)
    tok_bytes = tokenizer_json.encode("utf-8")
    header = {"format": 1, "dtype": "uint16", "layout": "le", "compression": "xz",
              "n_train": int(train.size), "n_val": int(val.size), "eos_id": int(eos_id),
              "bos_id": None if bos_id is None else int(bos_id),
              "vocab_size": int(vocab_size), "tokenizer_bytes": len(tok_bytes),
              "tokenizer_sha256": hashlib.sha256(tok_bytes).hexdigest(),
              "train_sha256": hashlib.sha256(train.astype("<u2").tobytes()).hexdigest(),
              "val_sha256": hashlib.sha256(val.astype("<u2").tobytes()).hexdigest(),
              "meta": meta or {}}
    hb = json.dumps(header, sort_keys=True).encode()
    with atomic_open(out_path, "wb") as f:
        f.write(TOKEN_MAGIC + struct.pack("<I", len(hb)) + hb)
        filters = [{**_XZ_FILTERS[0], "preset": preset}]
        comp = lzma.LZMACompressor(format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC64, filters=filters)
        for chunk in (_le_bytes(train), _le_bytes(val), tok_bytes):
            f.write(comp.compress(chunk))
        f.write(comp.flush())
    sidecar = {"file": out_path.name, "sha256": sha256_file(out_path), "bytes": out_path.stat().st_size,
               **{k: header[k] for k in ("n_train", "n_val", "eos_id", "bos_id", "vocab_size", "tokenizer_sha256")},
               "meta": meta or {}}
    side = out_path.with_name(out_path.name + ".json")
    atomic_write_text(side, json.dumps(sidecar, indent=1) + "\n")
    return sidecar


def _check_sidecar(path: Path) -> str:
    """The xz file's sha256, after checking it against the sidecar's record."""
    side = path.with_name(path.name + ".json")
    if not side.exists():
        raise TokenFileError(f"checksum sidecar {side} not found, cannot verify {path}; {BUILD_HINT}")
    rec = json.loads(side.read_text())
    got = sha256_file(path)
    if got != rec["sha256"]:
        raise TokenFileError(f"token file {path} is corrupted or was replaced: sha256 {got}, recorded "
                             f"{rec['sha256']} in {side.name}; {BUILD_HINT}")
    return got


def read_token_header(path: str | Path, with_tokenizer: bool = False) -> dict:
    """A token file's header (counts, ids, meta; either layout) without reading the tokens; optionally its
    tokenizer JSON (`tokenizer`)."""
    path = Path(path)
    if not path.exists():
        raise TokenFileError(f"token file {path} not found; {BUILD_HINT}")
    with open(path, "rb") as f:
        magic = f.read(8)
        if magic == FLAT_MAGIC:
            header = _read_flat_header(f, path)
            if with_tokenizer and header.get("tokenizer_offset") is not None:
                f.seek(header["tokenizer_offset"])
                header["tokenizer"] = f.read(header["tokenizer_bytes"]).decode("utf-8")
            return header
        if magic != TOKEN_MAGIC:
            raise TokenFileError(f"{path} is not a sinkpaper token file; {BUILD_HINT}")
        (n,) = struct.unpack("<I", f.read(4))
        header = json.loads(f.read(n))
        if with_tokenizer:
            raw = lzma.decompress(f.read())
            off = 2 * (header["n_train"] + header["n_val"])
            header["tokenizer"] = raw[off:off + header["tokenizer_bytes"]].decode("utf-8")
    return header


def layout(path: str | Path) -> str | None:
    """"xz" or "flat" for a sinkpaper token file (by its magic bytes), None for any other file."""
    with open(path, "rb") as f:
        magic = f.read(8)
    return {TOKEN_MAGIC: "xz", FLAT_MAGIC: "flat"}.get(magic)


def describe_token_file(path: str | Path) -> str:
    """One line: a token file's layout, token counts per split, vocabulary, EOS id and size on disk."""
    path = Path(path)
    h = read_token_header(path)
    mib = path.stat().st_size / 2 ** 20
    if "splits" in h:   # flat
        counts = " + ".join(f"{c:,} {name}" for name, (_, c) in h["splits"].items())
        return (f"token file {path} (flat, {h['dtype']}): {counts} tokens, vocab {h['vocab_size']}, "
                f"eos {h['eos_id']}, {mib:.1f} MiB")
    return (f"token file {path}: {h['n_train']:,} train + {h['n_val']:,} val tokens, vocab {h['vocab_size']}, "
            f"eos {h['eos_id']}, {mib:.1f} MiB")


def _xz_records(path: Path):
    """(header, generator of decompressed byte blocks of at most 8 MiB) of an xz token file."""
    f = open(path, "rb")
    if f.read(8) != TOKEN_MAGIC:
        f.close()
        raise TokenFileError(f"{path} is not a sinkpaper token file; {BUILD_HINT}")
    try:
        (n,) = struct.unpack("<I", f.read(4))
        header = json.loads(f.read(n))
    except (struct.error, json.JSONDecodeError, UnicodeDecodeError) as e:
        f.close()
        raise TokenFileError(f"token file {path} is corrupted ({e}); {BUILD_HINT}") from e
    if header.get("layout") != "le" or header.get("dtype") != "uint16":
        f.close()
        raise TokenFileError(f"token file {path} has an unknown layout {header.get('layout')!r}; {BUILD_HINT}")

    def blocks():
        d = lzma.LZMADecompressor(format=lzma.FORMAT_XZ)
        try:
            while not d.eof:
                if d.needs_input:
                    data = f.read(_CHUNK)
                    if not data:
                        raise TokenFileError(f"token file {path} is truncated; {BUILD_HINT}")
                else:
                    data = b""
                out = d.decompress(data, max_length=_XZ_BLOCK)
                if out:
                    yield out
        except lzma.LZMAError as e:
            raise TokenFileError(f"token file {path} is corrupted ({e}); {BUILD_HINT}") from e
        finally:
            f.close()
    return header, blocks()


class _ByteStream:
    """Exact-length reads over a generator of byte blocks."""

    def __init__(self, blocks, path: Path):
        self.blocks, self.path, self.buf = blocks, path, memoryview(b"")

    def pieces(self, n: int):
        while n > 0:
            if not len(self.buf):
                block = next(self.blocks, None)
                if block is None:
                    raise TokenFileError(f"token file {self.path} is truncated or corrupted; {BUILD_HINT}")
                self.buf = memoryview(block)
            piece, self.buf = self.buf[:n], self.buf[n:]
            n -= len(piece)
            yield piece

    def exhausted(self) -> bool:
        return not len(self.buf) and next(self.blocks, None) is None


def _xz_splits(path: Path):
    """Decompress an xz token file as a stream: (header, generator of (split, uint16 chunk)); once the
    generator is exhausted, header["tokenizer"] holds the tokenizer JSON. Memory: one 8 MiB block. Each split's
    sha256 in the header is checked as its tokens pass."""
    header, blocks = _xz_records(path)

    def gen():
        s = _ByteStream(blocks, path)
        for name in ("train", "val"):
            h, odd = hashlib.sha256(), b""
            for piece in s.pieces(2 * header[f"n_{name}"]):
                if odd:   # half a token was left at the previous block's end
                    piece, odd = memoryview(odd + bytes(piece)), b""
                cut = len(piece) - len(piece) % 2
                odd = bytes(piece[cut:])
                if cut:
                    h.update(piece[:cut])
                    yield name, np.frombuffer(piece[:cut], dtype="<u2")
            if h.hexdigest() != header[f"{name}_sha256"]:
                raise TokenFileError(f"token file {path}: {name} tokens do not match their checksum; {BUILD_HINT}")
        header["tokenizer"] = b"".join(bytes(p) for p in s.pieces(header["tokenizer_bytes"])).decode("utf-8")
        if not s.exhausted():
            raise TokenFileError(f"token file {path} holds more data than its header says; {BUILD_HINT}")
    return header, gen()


def load_tokens(path: str | Path, verify: bool = True) -> dict:
    """train/val uint16 arrays (in memory), eos_id, bos_id, vocab_size and meta of an xz token file, after
    checking its sha256. For training use `open_tokens`, which memory-maps instead.

    Fails with how to build it when the file is missing, and refuses a file whose checksum or contents do not
    match its sidecar (`<file>.json`).
    """
    path = Path(path)
    if path.is_dir():
        path = path / TOKEN_FILE
    if not path.exists():
        raise TokenFileError(f"token file {path} not found; {BUILD_HINT}")
    sha = _check_sidecar(path) if verify else sha256_file(path)
    header, parts = _xz_splits(path)
    got = {"train": [], "val": []}
    for name, chunk in parts:
        got[name].append(chunk)
    train = np.concatenate(got["train"] or [np.zeros(0, "<u2")]).astype(np.uint16)
    val = np.concatenate(got["val"] or [np.zeros(0, "<u2")]).astype(np.uint16)
    nt, nv = header["n_train"], header["n_val"]
    return {"train": train, "val": val, "eos_id": header["eos_id"], "vocab_size": header["vocab_size"],
            "bos_id": header.get("bos_id"),
            "meta": {**header["meta"], "path": str(path), "sha256": sha,
                     "tokenizer_sha256": header["tokenizer_sha256"], "bos_id": header.get("bos_id"),
                     "n_train_tokens": nt, "n_val_tokens": nv}}


# ----------------------------------------------------------------------------------------------- xz -> flat
def flat_cache_path(xz_path: str | Path, sha256: str) -> Path:
    """Where the flat copy of an xz token file lives: $SINKPAPER_CACHE/tokens/<name>-<sha256[:16]>.tok."""
    name = Path(xz_path).name
    stem = name[:-3] if name.endswith(".xz") else name
    return cache_dir() / "tokens" / f"{stem}-{sha256[:16]}{FLAT_SUFFIX}"


def unpack(xz_path: str | Path, out: str | Path | None = None) -> Path:
    """Decompress an xz token file (sha256 checked against its sidecar) into a flat one, streaming; returns
    the flat file's path (default `flat_cache_path`). An existing, intact flat file is reused."""
    xz_path = Path(xz_path)
    if not xz_path.exists():
        raise TokenFileError(f"token file {xz_path} not found; {BUILD_HINT}")
    sha = _check_sidecar(xz_path)
    out = Path(out) if out is not None else flat_cache_path(xz_path, sha)
    if out.exists():
        try:
            tf = open_flat(out)
            if tf.meta.get("unpacked_from", {}).get("sha256") == sha:
                return out
        except TokenFileError:
            pass   # a damaged cache entry is rebuilt below
    header, parts = _xz_splits(xz_path)
    meta = {**header.get("meta", {}), "unpacked_from": {"file": xz_path.name, "sha256": sha}}
    w = TokenWriter(out, vocab_size=header["vocab_size"], eos_id=header["eos_id"], bos_id=header.get("bos_id"),
                    meta=meta)
    with w:
        w.write("train", np.zeros(0, np.uint16))
        for name, chunk in parts:
            w.write(name, chunk)
        w.write("val", np.zeros(0, np.uint16))
        w.set_tokenizer(header["tokenizer"])
    return out


def open_tokens(path: str | Path, verify: bool = False) -> TokenFile:
    """Memory-map a token file of either layout: a flat file directly, an xz file through its flat copy in the
    cache (made on first use, see `unpack`)."""
    path = Path(path)
    if not path.exists():
        raise TokenFileError(f"token file {path} not found; {BUILD_HINT}")
    kind = layout(path)
    if kind == "xz":
        return open_flat(unpack(path), verify=verify)
    if kind == "flat":
        return open_flat(path, verify=verify)
    raise TokenFileError(f"{path} is not a sinkpaper token file; {BUILD_HINT}")


__all__ = ["TokenWriter", "TokenFile", "TokenFileError", "write_tokens", "open_tokens", "open_flat", "unpack",
           "flat_cache_path", "write_token_file", "load_tokens", "read_token_header", "layout", "describe_token_file",
           "dtype_for", "TOKEN_MAGIC",
           "FLAT_MAGIC", "TOKEN_FILE", "BUILD_HINT"]
