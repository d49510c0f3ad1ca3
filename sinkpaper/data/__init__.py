"""Training data: token sources (`sources`: offline corpus, `datasets` streaming, synthetic; `SOURCES` names
them), the paper's packing and data interventions (`packing`), the token-file format that the builder, the
tokenizer and the sources share (`tokenfile`), the BPE tokenizer (`tokenizer`), and the offline corpus, one
module per job (`markup`, `archives`, `extractors`, `corpus_sources`, `extraction`, `build`; `corpus` re-exports
them)."""
from .packing import IGNORE, Packing, document_ids
from .sources import HF_DATASETS, SOURCES, TokenData, load_source, synthetic

__all__ = ["Packing", "IGNORE", "document_ids", "TokenData", "SOURCES", "HF_DATASETS", "load_source", "synthetic"]
