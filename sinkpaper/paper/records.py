"""The chapters' records: results measured on the pretrained LMs, written by the notebooks."""
from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any, Mapping

from ..files import atomic_write_text
from .claim import Chapter
from .claims import CLAIMS, claim
from .verdicts import SCALES

# ------------------------------------------------------------------------------- chapter records (real LMs)
RESULTS_ENV = "SINKPAPER_BOOK_RESULTS"


def results_dir() -> Path:
    """Where chapter records go: $SINKPAPER_BOOK_RESULTS (the book runner sets it), else book/_results in a
    checkout, else ./sinkpaper_results (e.g. on Colab)."""
    env = os.environ.get(RESULTS_ENV)
    if env:
        return Path(env)
    return Path("book/_results") if Path("book").is_dir() else Path("sinkpaper_results")


def _clean(values: Mapping[str, Any]) -> dict[str, float | None]:
    out = {}
    for k, v in values.items():
        if v is not None and not isinstance(v, (int, float)):
            raise ValueError(f"value {k!r} must be a number or None, not {v!r}")
        out[str(k)] = None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)
    return out


def write_record(claim_id: str, *, values: Mapping[str, float | None], measurement: str,
                 provenance: Mapping[str, Any], setting: str = "", note: str = "", scale: str = "real LMs",
                 directory: str | os.PathLike | None = None) -> None:
    """Store a chapter's measurement for one claim (its numbers, not a verdict), atomically. ``values``: {label: number}, labels as the claim's rule reads them;
    ``measurement``: what was measured (models, inputs, samples); ``note``: what a reader should see beside the
    verdict (the other BOS setting, a model without a sink, ...)."""
    c = claim(claim_id)
    if scale not in SCALES:
        raise ValueError(f"unknown scale {scale!r}; valid: {', '.join(SCALES)}")
    if not isinstance(c.measure.get(scale), Chapter):
        raise ValueError(f"{claim_id} at {scale!r} is not measured by a chapter; chapters record: "
                         + ", ".join(f"{x.id} ({s})" for x in CLAIMS for s, m in x.measure.items()
                                     if isinstance(m, Chapter)))
    path = Path(directory or results_dir()) / f"{c.chapter}.json"
    data = json.loads(path.read_text()) if path.exists() else {"chapter": c.chapter, "records": {}}
    rec = {"measurement": str(measurement), "values": _clean(values), "setting": setting, "note": note,
           "provenance": json.loads(json.dumps(dict(provenance), default=str))}
    data["records"].setdefault(claim_id, {})[scale] = rec
    atomic_write_text(path, json.dumps(data, indent=1, sort_keys=True) + "\n")


def load_records(directory: str | os.PathLike | None = None) -> dict[str, dict[str, dict]]:
    """{claim id: {scale: record}} from every chapter file in the results directory (records in an older
    format, without "values", are skipped: their verdicts were decided elsewhere)."""
    out: dict[str, dict[str, dict]] = {}
    d = Path(directory or results_dir())
    for p in sorted(d.glob("*.json")) if d.is_dir() else []:
        for cid, scales in json.loads(p.read_text()).get("records", {}).items():
            for scale, rec in scales.items():
                if scale in SCALES and isinstance(rec, dict) and "values" in rec:
                    out.setdefault(cid, {})[scale] = rec
    return out
