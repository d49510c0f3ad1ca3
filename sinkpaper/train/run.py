"""A trained run directory, opened: its configuration, its model, its data and its held-out inputs.

    run = open_run("runs/miniature/recipe-seed0-<hash>")
    run.config                      # the TrainConfig it was trained with (config.json, read once)
    model = run.model()             # a SinkModel with the weights of its latest checkpoint, in eval mode
    ids = run.heldout_inputs(100)   # [N, T] the held-out sequences its evaluation measures the sink on
    run.data                        # its token source (TokenData: train / val streams, BOS, EOS), loaded once

The layout of a run directory is the trainer's (:mod:`sinkpaper.train.trainer`); this module only reads it.
"""
from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path

import torch

from ..data.packing import Packing
from ..data.sources import TokenData
from .config import TrainConfig
from .trainer import checkpoint_weights, heldout_batch, latest_checkpoint, load_data, packing_for, read_log


@dataclass(frozen=True)
class Run:
    """One run directory (see the module docstring). Build it with :func:`open_run`."""
    path: Path
    config: TrainConfig
    hash: str | None   # the config hash config.json was written with (the results-store key)

    def checkpoint(self) -> Path:
        """The latest complete checkpoint directory (FileNotFoundError when the run saved none)."""
        ckpt = latest_checkpoint(self.path)
        if ckpt is None:
            raise FileNotFoundError(f"{self.path} has no checkpoint")
        return ckpt

    def model(self, device: str | torch.device = "cpu"):
        """The latest checkpoint's weights as a SinkModel in eval mode (the vocabulary size read from the saved
        embedding, so the token source is not loaded)."""
        from ..models import SinkModel
        weights = checkpoint_weights(self.checkpoint(), device)
        vocab = next(v.shape[0] for k, v in weights.items() if "embed" in k and v.ndim == 2)
        model = SinkModel(self.config.model_config(vocab)).to(device)
        model.load_state_dict(weights, strict=False)
        return model.eval()

    @functools.cached_property
    def data(self) -> TokenData:
        """The run's token source, as the trainer loaded it (loaded on first use, then kept)."""
        return load_data(self.config)

    def packing(self, context: int | None = None) -> Packing:
        """How the run packs its data into windows (of ``context`` tokens; default the training context)."""
        return packing_for(self.config, self.data, context=context)

    def heldout_batch(self, n_samples: int | None = None) -> dict[str, torch.Tensor]:
        """The evaluation's held-out batch (input_ids, targets, ...): ``n_samples`` windows (default
        eval.n_samples) of eval.seq_len tokens of the validation stream, packed like the training data."""
        return heldout_batch(self.config, self.data, n_samples)

    def heldout_inputs(self, n_samples: int | None = None) -> torch.Tensor:
        """[N, T] the held-out sequences the evaluation measures the sink on (the same N windows every time)."""
        return self.heldout_batch(n_samples)["input_ids"]

    def final_metrics(self) -> dict:
        """metrics.json (the final numbers with provenance), or {} while the run has not finished."""
        path = self.path / "metrics.json"
        return json.loads(path.read_text()) if path.exists() else {}

    def log(self) -> list[dict]:
        """log.jsonl: one record per log step and per evaluation."""
        return read_log(self.path / "log.jsonl")


def open_run(run_dir: str | Path) -> Run:
    """Open a run directory written by `sinkpaper.train.train` (its config.json is read here, once)."""
    path = Path(run_dir)
    config_path = path / "config.json"
    if not config_path.is_file():
        raise FileNotFoundError(f"{path} is not a run directory (no config.json): pass the --out of a training run")
    d = json.loads(config_path.read_text())
    return Run(path=path, config=TrainConfig.from_dict(d), hash=d.get("hash"))
