"""Training data: token sources (offline corpus, `datasets` streaming, synthetic), the paper's packing and
data interventions (`packing`), the token-file format that the builder, the tokenizer and the sources share
(`tokenfile`), and the offline corpus builder and BPE tokenizer (`corpus`, `tokenizer`)."""
from .packing import IGNORE, Packing, document_ids
from .sources import HF_DATASETS, SOURCES, TokenData, load_source, synthetic

__all__ = ["Packing", "IGNORE", "document_ids", "TokenData", "SOURCES", "HF_DATASETS", "load_source", "synthetic"]
