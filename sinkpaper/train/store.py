"""The results store the book reads: one JSON per run, `<store>/<config hash>.json`, holding the resolved
config, the final metrics with provenance and the logged curve. Writes are atomic, and a file is only ever
replaced by a run of the same config (a hash collision with another config is refused)."""
from __future__ import annotations

import json
from pathlib import Path

from ..files import atomic_write_text
from .config import identity

DEFAULT_STORE = "results/store"


def result_path(store: str | Path, config_hash: str) -> Path:
    return Path(store) / f"{config_hash}.json"


def write_result(store: str | Path, cfg, result: dict, curve: list[dict] | None = None) -> Path:
    path = result_path(store, cfg.hash())
    config = cfg.to_dict()
    if path.exists():
        old = json.loads(path.read_text())
        if identity(old.get("config", {})) != cfg.identity():
            raise ValueError(f"{path} holds a different config with the same hash; refusing to overwrite it")
    payload = {"hash": cfg.hash(), "name": cfg.name, "profile": cfg.profile, "config": config, "result": result,
               "curve": curve or []}
    atomic_write_text(path, json.dumps(payload, indent=1))
    return path


def read_result(store: str | Path, cfg) -> dict | None:
    """The stored run of exactly this config, or None."""
    path = result_path(store, cfg.hash())
    if not path.exists():
        return None
    payload = json.loads(path.read_text())
    # threads, checkpoint cadence and the like do not change a result: a run stored with other bookkeeping counts
    return payload if identity(payload.get("config", {})) == cfg.identity() else None


def list_results(store: str | Path, name_prefix: str = "") -> list[dict]:
    """Every stored run whose name starts with name_prefix (e.g. an experiment family)."""
    out = []
    for p in sorted(Path(store).glob("*.json")):
        payload = json.loads(p.read_text())
        if payload.get("name", "").startswith(name_prefix):
            out.append(payload)
    return out
