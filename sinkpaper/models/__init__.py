"""The configurable LLaMA-style model: `ModelConfig` (every paper variant is a field) and `SinkModel`."""
from .config import (BACKENDS, FFNS, FIXED_V, HEAD_COMBINES, KERNEL_PHIS, NORMS, POS_ENCODINGS, SINKS,
                     ModelConfig)
from .model import HookPoint, ModelOutput, SinkModel

__all__ = ["ModelConfig", "SinkModel", "ModelOutput", "HookPoint", "POS_ENCODINGS", "NORMS", "FFNS",
           "HEAD_COMBINES", "KERNEL_PHIS", "SINKS", "FIXED_V", "BACKENDS"]
