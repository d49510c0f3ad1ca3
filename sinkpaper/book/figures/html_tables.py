"""The book's HTML tables: :class:`Table` (what every chapter's table renders with), the paper-vs-ours
comparison table, and the one-line provenance of a computation."""
from __future__ import annotations

import html
import math
import os
import re
from typing import Any, Mapping, Sequence

import numpy as np


# ------------------------------------------------------------------------------------------------ provenance
_KNOWN = ("model", "profile", "device", "hardware", "code_version", "torch", "python", "computed_now", "source",
          "loaded_from", "timestamp", "computed_at", "n_samples", "n_tokens", "seq_len")


def _shown(value: Any) -> Any:
    """A provenance value as printed: a path (a Path, or a string naming an absolute path) relative to the
    checkout, never an absolute path of the build machine (:func:`sinkpaper.provenance.shown_path`)."""
    from ...provenance import shown_path

    if isinstance(value, os.PathLike) or (isinstance(value, str) and os.path.isabs(value)):
        return shown_path(value)
    return value


PROVENANCE_PREFIX, PROVENANCE_SEP = "*Provenance:* ", " \u00b7 "   # a line's start, and what joins its parts


def provenance_line(prov: Mapping[str, Any]) -> str:
    """Markdown one-liner describing where a number came from.

    Recognised keys (all optional; :func:`sinkpaper.provenance.stamp` output works as is): ``model``,
    ``profile``, ``device`` (or ``hardware``), ``code_version``, ``torch``, ``python``, ``computed_now`` (bool)
    or ``source`` ("computed"/"loaded"), ``loaded_from`` (implies loaded), ``timestamp`` / ``computed_at``,
    ``n_samples``, ``n_tokens`` / ``seq_len``. Other keys are appended as ``key=value``.
    """
    parts = []
    if prov.get("model") is not None:
        parts.append(f"model `{prov['model']}`")
    if prov.get("profile") is not None:
        parts.append(f"profile `{prov['profile']}`")
    device = prov.get("device", prov.get("hardware"))
    if device is not None:
        parts.append(f"device {device}")
    if prov.get("code_version") is not None:
        versions = str(prov["code_version"]).split(", ")
        # many runs, many versions: the count on the line, the list on hover (one line per page, not a paragraph)
        parts.append(f"code `{versions[0]}`" if len(versions) == 1 else
                     f'<abbr title="{html.escape(", ".join(versions), quote=True)}">{len(versions)} code versions</abbr>')
    libs = [f"{k} {prov[k]}" for k in ("torch", "python") if prov.get(k) is not None]
    if libs:
        parts.append(", ".join(libs))
    computed = prov.get("computed_now")
    if computed is None and prov.get("source") is not None:
        computed = str(prov["source"]).lower().startswith("comp")
    if computed is None and prov.get("loaded_from"):
        computed = False
    stamp = prov.get("timestamp", prov.get("computed_at"))
    if computed is True:
        parts.append("computed now" + (f" ({stamp})" if stamp else ""))
    elif computed is False:
        where = f" from `{_shown(prov['loaded_from'])}`" if prov.get("loaded_from") else ""
        when = f" (computed {stamp})" if stamp else ""
        parts.append(f"**loaded**{where}{when}")
    elif stamp:
        parts.append(f"computed {stamp}")
    size = []
    if prov.get("n_samples") is not None:
        size.append(f"{prov['n_samples']} samples")
    tokens = prov.get("n_tokens", prov.get("seq_len"))
    if tokens is not None:
        size.append(f"{tokens} tokens" + (" each" if prov.get("n_samples") is not None else ""))
    if size:
        parts.append(" × ".join(size))
    parts += [f"{k}={_shown(v)}" for k, v in prov.items() if k not in _KNOWN]
    return PROVENANCE_PREFIX + (PROVENANCE_SEP.join(parts) if parts else "(none recorded)")


# ----------------------------------------------------------------------------------------- paper vs ours
COLUMNS = ("setting", "paper", "ours", "difference", "note")


_SPREAD = re.compile(r"(-?\d[\d.,]*)( \[-?\d[\d.,]*, -?\d[\d.,]*\])(\*?)")
_PAIRS = re.compile(r"\S+ -?\d[\d.]*(, \S+ -?\d[\d.]*)+")


def _cell_html(text: str) -> str:
    """A cell's text as HTML; a spread over seeds, 'mean [min, max]' (sinkpaper.results.numbers.fmt_spread),
    keeps each number whole: the mean on its line, the range under it, smaller, never broken mid-number; a list of
    'label number' pairs breaks only between pairs."""
    m = _SPREAD.fullmatch(text)
    if not m:
        if _PAIRS.fullmatch(text):     # "Sink* 32.18, Sink_1 4.74": a line break only between the pairs
            return ", ".join(f'<span class="mean">{html.escape(p)}</span>' for p in text.split(", "))
        return html.escape(text)
    mean, rng, mark = (html.escape(g) for g in m.groups())
    return f'<span class="mean">{mean}{mark}</span><span class="range">{rng.strip()}</span>'


def _fmt(v: Any) -> str:
    if v is None:
        return "—"
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        return "—" if not math.isfinite(float(v)) else f"{float(v):.4g}"
    return str(v)


class Table:
    """Rows of dicts shown as a table: HTML in notebooks and the book, Markdown elsewhere (no pandas needed)."""

    numeric: frozenset = frozenset()

    def __init__(self, rows: list[dict[str, Any]], columns: Sequence[str] | None = None):
        self.rows = rows
        self.columns = tuple(columns) if columns is not None else tuple(rows[0]) if rows else ()
        self.numeric = frozenset(c for c in self.columns
                                 if rows and all(isinstance(r.get(c), (int, float, np.number)) for r in rows))

    def to_markdown(self) -> str:
        head = "| " + " | ".join(self.columns) + " |\n|" + "---|" * len(self.columns) + "\n"
        esc = lambda s: s.replace("|", "\\|")  # noqa: E731
        return head + "".join("| " + " | ".join(esc(_fmt(r[c])) for c in self.columns) + " |\n" for r in self.rows)

    def _repr_markdown_(self) -> str:
        return self.to_markdown()

    def _repr_html_(self) -> str:
        num = self.numeric
        th = "".join(f"<th>{c}</th>" for c in self.columns)
        body = "".join(
            "<tr>" + "".join(
                f'<td style="text-align:{"right" if c in num else "left"}">{_cell_html(_fmt(r[c]))}</td>'
                for c in self.columns) + "</tr>"
            for r in self.rows
        )
        return (f'<div class="spx-scroll"><table class="sinkpaper-table"><thead><tr>{th}</tr></thead>'
                f'<tbody>{body}</tbody></table></div>')

    def to_pandas(self):
        import pandas as pd

        return pd.DataFrame(self.rows, columns=list(self.columns))


class ComparisonTable(Table):
    """Rows of (setting, paper, ours, difference, note)."""

    def __init__(self, rows: list[dict[str, Any]]):
        super().__init__(rows, COLUMNS)
        self.numeric = frozenset({"paper", "ours", "difference"})


def paper_vs_ours(rows: list[dict[str, Any]]) -> ComparisonTable:
    """Paper-vs-ours table. Each row needs ``setting``, ``paper`` and ``ours``; ``note`` is optional and
    ``difference`` defaults to ``ours - paper`` when both are numbers (else left blank). The paper's values
    must be typed in by the caller from the paper itself - this helper invents nothing.

    Returns a :class:`ComparisonTable` (HTML/Markdown in notebooks; ``.to_pandas()`` if pandas is installed).
    """
    out = []
    for r in rows:
        missing = {"setting", "paper", "ours"} - set(r)
        if missing:
            raise ValueError(f"row {r!r} lacks {sorted(missing)}")
        diff = r.get("difference")
        p, o = r["paper"], r["ours"]
        if diff is None and all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)
                                for v in (p, o)):
            diff = float(o) - float(p)
        out.append({"setting": r["setting"], "paper": p, "ours": o, "difference": diff, "note": r.get("note", "")})
    return ComparisonTable(out)
