"""The paper's claims, and the book's results against them: the data of the reproduction scorecard.

Every claim of Gu et al. (2025) the book checks is listed once in ``CLAIMS`` with the paper's own numbers
(typed from the paper, see ../shared/notes/paper.md; nothing here is a result of ours). A chapter that
measures something calls :func:`record` with our value, the setting it was measured in, whether the
direction agrees, and the provenance; the records land in ``results_dir()/<chapter>.json``. The scorecard
page (notebooks/00_scorecard.py, executed after every other chapter) reads them all with :func:`scorecard`.

Two kinds of result per claim: ``"lm"`` (real language models: pretrained models measured now, or
GPU-trained runs from the results store) and ``"miniature"`` (the synthetic Bigram-Backcopy analogue).
"""
from __future__ import annotations

import html
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from ..files import atomic_write_text

KINDS = ("lm", "miniature")
RESULTS_ENV = "SINKPAPER_BOOK_RESULTS"


@dataclass(frozen=True)
class Claim:
    id: str
    chapter: str   # notebook stem of the chapter that checks it
    section: str   # the paper's section
    text: str      # the claim, in the paper's terms
    paper: str     # the paper's number(s), or "figure only" / "qualitative"


CLAIMS: tuple[Claim, ...] = (
    # Section 3, properties
    Claim("s3_massive_activation", "02_section3_properties", "3",
          "The sink token carries a massive activation (hidden-state norm far above the other tokens')",
          "qualitative (Fig. 2; Sun et al. 2024)"),
    Claim("s3_small_value_norm", "02_section3_properties", "3",
          "The sink token's value norm is small", "qualitative"),
    Claim("s3_qk_angle", "02_section3_properties", "3",
          "The sink comes from the angle between queries and the sink's key, not from their norms",
          "qualitative (QK heatmaps)"),
    # Section 3, measuring
    Claim("t1_natural", "03_section3_measuring", "3.2",
          "Open LMs put a sink on the first token of natural text",
          "Sink_1 GPT2-XL 77.00, Mistral-7B 97.49, LLaMA2-7B 92.47, LLaMA3-8B 99.02 %"),
    Claim("t1_random", "03_section3_measuring", "3.2",
          "The sink also appears on random tokens",
          "Sink_1 GPT2-XL 70.29, Mistral-7B 75.21, LLaMA2-7B 90.13, LLaMA3-8B 91.23 %"),
    Claim("t1_repeat", "03_section3_measuring", "3.2",
          "On one repeated token RoPE models have no sink (absolute-PE GPT-2 keeps one)",
          "Sink_1 GPT2-XL 62.28; Mistral-7B, LLaMA2-7B, LLaMA3-8B 0.00 %"),
    Claim("prop_repeat", "03_section3_measuring", "3.1",
          "Repeated tokens: NoPE attention is exactly uniform; RoPE's alpha_1 is bounded and vanishes as t grows",
          "Propositions 1-2 (exact)"),
    Claim("metric_T", "03_section3_measuring", "3.2",
          "Sink_1 falls as the sequence length T grows (hence T = 64 for every comparison)", "qualitative"),
    # Section 4, optimization
    Claim("opt_emergence", "04_optimization", "4",
          "The sink emerges after enough optimization",
          "default 60M: Sink_1 18.18 % at 20k steps; appears between 1k and 2k steps"),
    Claim("opt_lr", "04_optimization", "4",
          "A larger learning rate gives more sink (fixed steps)",
          "20k steps: 8e-4 32.23, 4e-4 18.18, 2e-4 11.21, 1e-4 2.90 %"),
    Claim("opt_lr_steps", "04_optimization", "4",
          "At a fixed LR x steps, a smaller LR with more steps gives less sink",
          "8e-4x10k 23.44, 4e-4x20k 18.18, 2e-4x40k 16.81, 1e-4x80k 6.29 %"),
    Claim("opt_batch", "04_optimization", "4",
          "Batch size matters little", "0.25M/0.5M/1M/2M tokens: 16.45/17.19/18.18/16.19 %"),
    # Section 5, data
    Claim("data_unique", "05_data", "5",
          "More unique training data, more sink", "50M and 100M unique tokens: below 1 % (figure only)"),
    Claim("data_random_first", "05_data", "5",
          "Random tokens at the first positions move or weaken the sink",
          "x1 random: Sink_1 27.03; x1,x2 random: Sink_2 14.08, Sink_1 1.98; x2 only: Sink_1 20.99 %"),
    Claim("data_fixed_pos", "05_data", "5",
          "A fixed token at position k moves the sink to k",
          "Sink_1 74.11 / Sink_2 69.03 / Sink_3 69.64 %, ~0 elsewhere"),
    Claim("data_no_fixed_token", "05_data", "5",
          "Without a fixed first token (windows cut at arbitrary offsets) the sink on token 1 is weaker",
          "default run (no BOS): 18.18 % vs fixed token at 1: 74.11 %"),
    # Section 6, loss
    Claim("loss_wd", "06_loss", "6",
          "Weight decay up to ~0.5 increases the sink; large values remove it",
          "0: 15.20, 0.1: 18.18, 0.5: 41.08, 1: 37.71, 2: 6.13, 5: 0.01 %"),
    Claim("loss_prefix", "06_loss", "6",
          "Prefix LM: the sink lands on one prefix position, not necessarily the first", "figure only"),
    Claim("loss_window", "06_loss", "6",
          "Sliding window: the sink stays on the absolute first token; small windows prevent it", "figure only"),
    # Section 7, architecture
    Claim("arch_pe", "07_architecture", "7.1",
          "The sink emerges with every positional embedding",
          "NoPE 20.35, absolute 32.73, learnable 33.13, relative 35.53, ALiBi 20.78, RoPE 18.18 %"),
    Claim("arch_norm", "07_architecture", "7.1", "Post-norm still has a sink", "post-norm 13.54 vs pre-norm 18.18 %"),
    Claim("arch_ffn", "07_architecture", "7.1", "The FFN type matters little",
          "ReLU 16.90, GeLU 14.76, Swish 17.89, ReGLU 13.88, GeGLU 17.86, SwiGLU 18.18 %"),
    Claim("arch_heads", "07_architecture", "7.1", "The number of heads matters little",
          "8/4/2/1 heads: 18.18/10.68/12.95/19.50 %; heads added instead of concatenated: 21.76 %"),
    # Section 7, biases
    Claim("bias_sink_token", "08_biases", "7.2", "A learnable sink token takes the sink",
          "Sink* 74.12, Sink_1 0.00 %"),
    Claim("bias_kv", "08_biases", "7.2", "KV biases take the sink", "Sink* 72.76, Sink_1 0.04 %"),
    Claim("bias_k", "08_biases", "7.2", "K biases with v* = 0 take the sink", "Sink* 73.34, Sink_1 0.00 %"),
    Claim("bias_v", "08_biases", "7.2", "V biases alone do not move the sink", "Sink_1 17.53 %"),
    Claim("bias_fixed_v", "08_biases", "7.2", "K bias with a large fixed v*: the sink returns to token 1",
          "20v': Sink* 1.51, Sink_1 25.88 %"),
    Claim("bias_low_dim", "08_biases", "7.2", "Low-dimensional K biases still take the sink",
          "d_a = 1..64: Sink* 32.18 ... 69.19, Sink_1 4.74 ... 0.04 %"),
    # Section 7, attention operations
    Claim("ops_scaled", "09_attention_ops", "7.3", "Scores that sum to less than one give less sink",
          "alpha = 2/1/0.2/0.1/0.05: 29.10/18.18/9.41/3.59/4.53 %"),
    Claim("ops_sigmoid", "09_attention_ops", "7.3", "Sigmoid attention without normalization has no sink",
          "Sink* 0.44 %"),
    Claim("ops_sigmoid_norm", "09_attention_ops", "7.3", "Normalized sigmoid attention brings the sink back",
          "Sink_1 30.24 %"),
    Claim("ops_elu", "09_attention_ops", "7.3", "elu+1 without normalization: no sink; normalized: sink",
          "Sink* 0.80 % vs 53.65 %"),
    Claim("ops_1b", "09_attention_ops", "7.3", "At 1B, sigmoid without normalization still has no sink",
          "1B: softmax 45.11 %, sigmoid Sink* ~2.46 %"),
    Claim("ops_softpick", "09_attention_ops", "related",
          "Softpick (rectified softmax) removes the sink (Zuhri et al. 2025, not this paper)",
          "Zuhri et al.: 0 % sink"),
    # Data packing and BOS (Barbero et al. 2025)
    Claim("pack_fixed_bos", "10_packing_bos", "related",
          "A fixed BOS at position 1 receives the sink (Barbero et al. 2025)", "qualitative"),
    Claim("pack_doc_mask", "10_packing_bos", "related",
          "Intra-document masking keeps the sink on each document's first token (Barbero et al. 2025)",
          "qualitative"),
    Claim("pack_bos_inference", "10_packing_bos", "related",
          "A model trained with a BOS depends on it: without it the sink changes (Barbero et al. 2025)",
          "qualitative"),
    # Why the sink matters (StreamingLLM, Xiao et al. 2024)
    Claim("stream_window", "11_why_sink_matters", "related",
          "A window KV cache that evicts the first tokens breaks the model once the text exceeds the window",
          "StreamingLLM: perplexity explodes"),
    Claim("stream_sink_window", "11_why_sink_matters", "related",
          "Keeping a few sink tokens plus the window restores it", "StreamingLLM: 4 sink tokens suffice"),
)
_BY_ID = {c.id: c for c in CLAIMS}


def claim(claim_id: str) -> Claim:
    try:
        return _BY_ID[claim_id]
    except KeyError:
        raise ValueError(f"unknown claim {claim_id!r}; valid: {', '.join(_BY_ID)}") from None


def results_dir() -> Path:
    """Where chapter records go: $SINKPAPER_BOOK_RESULTS (the book runner sets it), else book/_results in a
    checkout, else ./sinkpaper_results (e.g. on Colab)."""
    env = os.environ.get(RESULTS_ENV)
    if env:
        return Path(env)
    return Path("book/_results") if Path("book").is_dir() else Path("sinkpaper_results")


def record(claim_id: str, *, ours: str, agrees: bool | None, setting: str, provenance: Mapping[str, Any],
           kind: str = "lm", note: str = "", directory: str | os.PathLike | None = None) -> dict:
    """Record this run's result for one claim (replacing an earlier record of the same claim and kind).

    ``ours``: the number(s) as shown (e.g. "Sink_1 74.9 % (SmolLM2-135M)"); ``agrees``: whether the direction
    agrees with the paper (None: not comparable / no result yet); ``setting``: how ours differs from the
    paper's (model, scale, tokens); ``provenance``: sinkpaper.provenance.stamp() or a stored run's.
    """
    c = claim(claim_id)
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}; valid: {', '.join(KINDS)}")
    if agrees not in (True, False, None):
        raise ValueError(f"agrees must be True, False or None, not {agrees!r}")
    path = Path(directory or results_dir()) / f"{c.chapter}.json"
    data = json.loads(path.read_text()) if path.exists() else {"chapter": c.chapter, "records": {}}
    rec = {"ours": str(ours), "agrees": agrees, "setting": setting, "note": note,
           "provenance": json.loads(json.dumps(dict(provenance), default=str))}
    data["records"].setdefault(claim_id, {})[kind] = rec
    atomic_write_text(path, json.dumps(data, indent=1, sort_keys=True) + "\n")
    return rec


def load_records(directory: str | os.PathLike | None = None) -> dict[str, dict[str, dict]]:
    """{claim id: {kind: record}} from every chapter file in the results directory."""
    out: dict[str, dict[str, dict]] = {}
    for p in sorted(Path(directory or results_dir()).glob("*.json")):
        for cid, kinds in json.loads(p.read_text()).get("records", {}).items():
            out.setdefault(cid, {}).update(kinds)
    return out


def _verdict(rec: dict | None) -> str:
    if rec is None:
        return "no result yet"
    return {True: "agrees", False: "disagrees", None: "not comparable"}[rec["agrees"]]


def _prov_short(p: Mapping[str, Any]) -> str:
    parts = [f"profile {p['profile']}" if p.get("profile") else None,
             p.get("hardware") or p.get("device"),
             f"{p['tokens_seen']:,} tokens" if isinstance(p.get("tokens_seen"), int) else None,
             f"code {p['code_version']}" if p.get("code_version") else None,
             p.get("source_of_numbers") or ("computed now" if p.get("computed_now") else None)]
    return "; ".join(x for x in parts if x)


def scorecard_rows(directory: str | os.PathLike | None = None) -> list[dict]:
    """One row per claim, in the paper's order; a claim with no record says so."""
    records = load_records(directory)
    rows = []
    for c in CLAIMS:
        lm, mini = records.get(c.id, {}).get("lm"), records.get(c.id, {}).get("miniature")
        rows.append({"section": c.section, "claim": c.text, "paper": c.paper,
                     "ours": lm["ours"] if lm else "—", "setting": lm["setting"] if lm else "",
                     "provenance": _prov_short(lm["provenance"]) if lm else "",
                     "direction": _verdict(lm),
                     "miniature": mini["ours"] if mini else "—", "miniature direction": _verdict(mini),
                     "chapter": c.chapter, "id": c.id})
    return rows


class Scorecard:
    """The scorecard table: HTML with a link to each claim's chapter (Markdown outside notebooks)."""

    columns = ("section", "claim", "paper", "ours", "setting", "direction", "miniature", "miniature direction",
               "chapter")

    def __init__(self, rows: list[dict]):
        self.rows = rows

    def counts(self, kind: str = "direction") -> dict[str, int]:
        out: dict[str, int] = {}
        for r in self.rows:
            out[r[kind]] = out.get(r[kind], 0) + 1
        return out

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{c}</th>" for c in self.columns)
        body = []
        for r in self.rows:
            cells = []
            for c in self.columns:
                if c == "chapter":
                    cells.append(f'<td><a href="{r["chapter"]}.html">{html.escape(r["chapter"])}</a></td>')
                elif c == "setting":
                    title = html.escape(r["provenance"], quote=True)
                    cells.append(f'<td title="{title}">{html.escape(r["setting"])}'
                                 + (f'<br><small>{html.escape(r["provenance"])}</small>' if r["provenance"] else "")
                                 + "</td>")
                else:
                    cls = f' class="verdict-{r[c].replace(" ", "-")}"' if "direction" in c else ""
                    cells.append(f"<td{cls}>{html.escape(str(r[c]))}</td>")
            body.append("<tr>" + "".join(cells) + "</tr>")
        return (f'<table class="sinkpaper-table sinkpaper-scorecard"><thead><tr>{head}</tr></thead>'
                f'<tbody>{"".join(body)}</tbody></table>')

    def to_markdown(self) -> str:
        esc = lambda s: str(s).replace("|", "\\|")  # noqa: E731
        lines = ["| " + " | ".join(self.columns) + " |", "|" + "---|" * len(self.columns)]
        lines += ["| " + " | ".join(esc(r[c]) for c in self.columns) + " |" for r in self.rows]
        return "\n".join(lines)


def scorecard(directory: str | os.PathLike | None = None) -> Scorecard:
    return Scorecard(scorecard_rows(directory))
