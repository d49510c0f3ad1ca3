"""Files sinkpaper writes: where its cache lives, and writing a file so that no reader ever sees half of it.
Torch-free, so the data tools can use it."""
from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path


def cache_dir() -> Path:
    """What sinkpaper builds once (dequantized models, tokenizers, token files, corpus downloads):
    $SINKPAPER_CACHE, default ~/.cache/sinkpaper."""
    return Path(os.environ.get("SINKPAPER_CACHE", Path.home() / ".cache" / "sinkpaper"))


def sha256_file(path: str | Path) -> str:
    """sha256 of a file, read in 1 MiB blocks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write to a temporary file in the same folder, flush it to disk, then rename it over `path`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=path.parent, prefix=f".{path.name}.", delete=False,
                                     encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    mask = os.umask(0)
    os.umask(mask)
    os.chmod(f.name, 0o666 & ~mask)  # NamedTemporaryFile creates 0600; the result gets the usual mode
    os.replace(f.name, path)
