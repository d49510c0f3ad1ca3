"""Real-LM measurements committed to the repository, read for a claim that has no chapter record.

A chapter writes its record when the book's notebooks run (book/_results, not committed), so a fresh clone has
none, and every real-LM claim would read "no result" there although some of their measurements are committed. This
module reads those: each claim a committed file measures, at its scale, turned into a chapter-shaped record
(``values`` labelled as the chapter labels them, so the claim's own rule decides) whose provenance names the file.
A chapter record, where one exists, is read instead (:func:`sinkpaper.paper.lookup.result`): it is computed now.

The committed files:

- ``results/bos/audit-smollm2-gemma3.json``, the BOS audit (``python -m sinkpaper bos-audit --json``: each offline
  model on the same 100 natural-text windows, T = 64, epsilon 0.3, under every BOS policy). Its ``forced`` policy
  (the tokenizer's BOS token at position 1, then T - 1 text tokens) and ``none`` policy (T text tokens) are the
  two settings chapters 03 and 10 measure as "BOS on" and "BOS off" (:func:`sinkpaper.probes.make_inputs` with
  ``bos=True`` / ``False``). It measures ``t1_natural`` (judged with BOS on for a model whose tokenizer has a BOS
  token, as chapter 03 judges it) and ``pack_bos_inference`` (a model whose tokenizer puts its BOS first by default
  was trained with it: with against without; the others are controls, said in the note, as chapter 10 does).
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Callable, Mapping

from .verdicts import NO_SINK

BOS_AUDIT = "results/bos/audit-smollm2-gemma3.json"   # the same file chapter 10 shows (analysis.packing_bos)
BOS_AUDIT_COMMAND = f"python -m sinkpaper bos-audit --json {BOS_AUDIT}"
_ROOT = Path(__file__).resolve().parents[2]


def _path(relative: str) -> Path | None:
    """A committed file: relative to the working directory where it is there, else the repository's own (the
    registry reads the same file whatever the cwd); None where neither exists (an install without the repository)."""
    for p in (Path(relative), _ROOT / relative):
        if p.is_file():
            return p
    return None


def _policies(model: Mapping) -> dict[str, float]:
    """{policy: Sink_1 %} of one audited model, the policies its tokenizer could give."""
    return {r["policy"]: float(r["sink_1"]) for r in model["rows"] if r.get("sink_1") is not None}


def _has_bos(model: Mapping) -> bool:
    """The tokenizer has a BOS token: the audit could force it (a policy it cannot give has no number)."""
    return "forced" in _policies(model)


def _trained_with_bos(model: Mapping) -> bool:
    """The tokenizer puts its BOS first by itself: what the default policy put at position 1 is the forced BOS
    (the input the model was trained and released for; :func:`sinkpaper.analysis.packing_bos.prepends_bos`)."""
    by = {r["policy"]: r for r in model["rows"]}
    first = by.get("default", {}).get("first_token")
    return bool(model.get("default_prefix")) and _has_bos(model) and first == by["forced"].get("first_token")


def _provenance(audit: Mapping, path: str) -> dict:
    models = audit["models"]
    when = sorted(str(m["provenance"].get("computed_at", "")) for m in models if m.get("provenance"))
    return {"read_from": path, "computed_now": False,
            "source_of_numbers": f"read from the committed file {path} (written by `{BOS_AUDIT_COMMAND}`), "
                                 "not computed now: no chapter record here",
            "computed_at": when[-1] if when else None,
            "code_version": ", ".join(dict.fromkeys(str(m["provenance"].get("code_version")) for m in models)),
            "hardware": ", ".join(dict.fromkeys(str(m["provenance"].get("hardware")) for m in models)),
            "models": ", ".join(m["model"] for m in models),
            "per_model": {m["model"]: dict(m.get("provenance", {})) for m in models}}


def _what(audit: Mapping) -> str:
    m = audit["models"][0]
    return (f"{', '.join(x['model'] for x in audit['models'])}, {m['n_samples']} {m['inputs']}-text windows x "
            f"T = {m['seq_len']}, epsilon {m['epsilon']:g}")


def t1_natural(audit: Mapping, path: str = BOS_AUDIT) -> dict | None:
    """``t1_natural`` from a BOS audit: each model's Sink_1 on natural text with BOS on where its tokenizer has a
    BOS token, else off, labelled "<model>: natural", the other setting in the note (as chapter 03 records it:
    :func:`sinkpaper.analysis.section3.table1_values`, which this layer cannot import)."""
    values, other, without = {}, [], []
    for m in audit["models"]:
        if m.get("inputs") != "natural":
            continue
        p, judged = _policies(m), _has_bos(m)
        on_off = {True: p.get("forced"), False: p.get("none")}
        if on_off[judged] is not None:
            values[f"{m['model']}: natural"] = on_off[judged]
        if on_off[not judged] is not None:
            other.append(f"{m['model']} BOS {'off' if judged else 'on'}: {on_off[not judged]:.2f} %")
        if on_off[False] is not None and on_off[False] < NO_SINK:
            without.append(f"{m['model']} has no sink on natural text ({on_off[False]:.2f} %)")
    if not values:
        return None
    if without:
        other.append("without BOS " + ", ".join(without) + ": its sink exists only on the BOS token")
    return {"measurement": _what(audit), "values": values,
            "setting": "the committed BOS audit: BOS on = its forced policy, BOS off = none",
            "note": "; ".join([f"read from the committed {path} (no chapter record)",
                               *(["other BOS setting: " + "; ".join(other)] if other else [])]),
            "provenance": _provenance(audit, path)}


def pack_bos_inference(audit: Mapping, path: str = BOS_AUDIT) -> dict | None:
    """``pack_bos_inference`` from a BOS audit: each model trained with its BOS first, with it (forced) against
    without (none), as chapter 10 labels them; a model trained without one is a control, said in the note."""
    values, controls = {}, []
    for m in audit["models"]:
        p = _policies(m)
        if "forced" not in p or "none" not in p:
            continue
        if _trained_with_bos(m):
            values[f"{m['model']}: with BOS"] = p["forced"]
            values[f"{m['model']}: without BOS"] = p["none"]
        else:
            controls.append(f"control {m['model']} (trained without a BOS): Sink_1 {p['forced']:.2f} % with, "
                            f"{p['none']:.2f} % without")
    if not values:
        return None
    return {"measurement": f"pretrained {_what(audit)}",
            "values": values, "setting": "the committed BOS audit: with BOS = its forced policy, without = none",
            "note": "; ".join([f"read from the committed {path} (no chapter record)", *controls]),
            "provenance": _provenance(audit, path)}


# (claim id, scale) -> (the committed file, what reads the claim's record from it)
COMMITTED: dict[tuple[str, str], tuple[str, Callable[[Mapping, str], dict | None]]] = {
    ("t1_natural", "real LMs"): (BOS_AUDIT, t1_natural),
    ("pack_bos_inference", "real LMs"): (BOS_AUDIT, pack_bos_inference),
}


def committed_record(claim_id: str, scale: str, path: str | os.PathLike | None = None) -> dict | None:
    """The record of ``claim_id`` at ``scale`` read from its committed file (``path`` in place of it), or None
    where no committed file measures it or the file is absent. A file that is not what it should be raises."""
    if (claim_id, scale) not in COMMITTED:
        return None
    relative, read = COMMITTED[(claim_id, scale)]
    p = Path(path) if path is not None else _path(relative)
    if p is None or not p.is_file():
        return None
    data = json.loads(p.read_text())
    if relative == BOS_AUDIT and (data.get("audit") != "bos" or not isinstance(data.get("models"), list)):
        raise ValueError(f"{p} is not a BOS audit ({BOS_AUDIT_COMMAND} writes one)")
    return read(data, relative if path is None else str(path))
