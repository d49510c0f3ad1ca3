"""Files sinkpaper writes: where its cache lives, and writing a file (or a folder) so that no reader ever sees
half of it. Torch-free, so the data tools can use it.

Every writer in the package goes through `AtomicWrite`: the content is written under a temporary name in the
destination's folder, flushed to disk, given the usual mode, and renamed over the destination only when it is
complete; on an error the temporary is removed and the destination is untouched. The shapes:

- `atomic_write_text`: a whole text;
- `atomic_open`: a file object, for binary or streamed writes (gzip, xz, token files);
- `atomic_path`: a temporary path, for a writer that takes a name (`Tokenizer.save`, `save_pretrained` with
  ``directory=True``);
- `AtomicWrite` itself, with `commit()` / `abort()`, for an object that keeps the file open between calls.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Iterator


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


def _usual_mode(directory: bool) -> int:
    """What open()/mkdir() would give under the current umask (mkstemp/mkdtemp create 0600/0700)."""
    mask = os.umask(0)
    os.umask(mask)
    return (0o777 if directory else 0o666) & ~mask


class AtomicWrite:
    """`path` written under a temporary name beside it (``.<name>.<random>.tmp``, or an empty folder with
    ``directory=True``) and renamed over it by `commit()`; `abort()` removes the temporary.

    `open(mode)` opens the temporary file (at most once); otherwise the caller writes to `tmp` by name. As a
    context manager it commits when the block completes and aborts when it raises.
    """

    def __init__(self, path: str | Path, *, directory: bool = False):
        self.path, self.directory = Path(path), directory
        self.path.parent.mkdir(parents=True, exist_ok=True)
        prefix = f".{self.path.name}."
        if directory:
            self.tmp = Path(tempfile.mkdtemp(dir=self.path.parent, prefix=prefix))
        else:
            fd, name = tempfile.mkstemp(dir=self.path.parent, prefix=prefix, suffix=".tmp")
            os.close(fd)
            self.tmp = Path(name)
        self.file: IO | None = None
        self.done = False

    def open(self, mode: str = "wb", **kw) -> IO:
        if self.directory or self.file is not None or self.done:
            raise ValueError(f"{self.path}: open() is for a file, once, before commit")
        self.file = open(self.tmp, mode, **kw)
        return self.file

    def commit(self) -> Path:
        """Flush the temporary to disk, give it the usual mode and rename it over `path`; returns `path`."""
        if self.done:
            raise ValueError(f"{self.path}: already committed or aborted")
        try:
            if self.file is not None:
                self.file.flush()
                os.fsync(self.file.fileno())
                self.file.close()
            elif not self.directory:
                with open(self.tmp, "rb") as f:  # written by name: make its bytes durable before the rename
                    os.fsync(f.fileno())
            os.chmod(self.tmp, _usual_mode(self.directory))
            os.replace(self.tmp, self.path)
        except BaseException:
            self.abort()
            raise
        self.done = True
        return self.path

    def abort(self) -> None:
        if self.file is not None:
            self.file.close()
        self.done = True
        if self.directory:
            shutil.rmtree(self.tmp, ignore_errors=True)
        elif os.path.lexists(self.tmp):
            os.unlink(self.tmp)

    def __enter__(self) -> AtomicWrite:
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        if self.done:  # committed or aborted inside the block
            return False
        if exc_type is None:
            self.commit()
        else:
            self.abort()
        return False


@contextmanager
def atomic_path(path: str | Path, *, directory: bool = False) -> Iterator[Path]:
    """A temporary path beside `path` for a writer that takes a name; renamed over `path` when the block
    completes, removed when it raises."""
    with AtomicWrite(path, directory=directory) as w:
        yield w.tmp


@contextmanager
def atomic_open(path: str | Path, mode: str = "wb", **kw) -> Iterator[IO]:
    """A file object for a streamed write of `path` (open() arguments); `path` appears only when the block
    completes."""
    with AtomicWrite(path) as w:
        yield w.open(mode, **kw)


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write `text` (UTF-8) to `path` atomically."""
    with atomic_open(path, "w", encoding="utf-8") as f:
        f.write(text)
