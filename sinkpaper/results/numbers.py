"""How a number is written in the book's prose and tables and in the generated README blocks: one formatter set.
A missing number (None, NaN) is written "—" by every one of them."""
from __future__ import annotations

import math
import statistics
from typing import Mapping, Sequence

MISSING = "—"


def _missing(x) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def fmt(x: float | None, digits: int = 1, unit: str = " %") -> str:
    """Fixed decimals and a unit: fmt(87.5) = '87.5 %', fmt(0.1234, 3, '') = '0.123'."""
    return MISSING if _missing(x) else f"{x:.{digits}f}{unit}"


def sig(x: float | None, digits: int = 3) -> str:
    """Significant digits, for prose: sig(0.07412) = '0.0741'."""
    return MISSING if _missing(x) else f"{x:.{digits}g}"


def span(values: Sequence[float], digits: int = 2) -> str:
    """'a-b' (min-max) for prose, or one number when they round to the same."""
    lo, hi = f"{min(values):.{digits}f}", f"{max(values):.{digits}f}"
    return lo if lo == hi else f"{lo}-{hi}"


def fmt_spread(values: Sequence[float] | Mapping, digits: int = 1) -> str:
    """Numbers over seeds as 'mean [min, max]'; one number alone when there is one; '—' when there is none.
    ``values`` is the numbers, or their :func:`sinkpaper.results.reading.spread`."""
    if isinstance(values, Mapping):
        mean, lo, hi, n = values["mean"], values["min"], values["max"], values["n"]
    elif not values:
        return MISSING
    else:
        mean, lo, hi, n = statistics.fmean(values), min(values), max(values), len(values)
    if n == 1:
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


def markdown_line(line: str) -> str:
    """A generated block's line as Markdown: a table row or a blank line as it is, any other line a bullet."""
    return line if line.startswith("|") or not line else "- " + line


def seeds_text(items: Sequence, word: str = "seed") -> str:
    """"seed 0" or "seeds 0, 1, 2" (or any other word: "steps 1,200, 1,400")."""
    return f"{word}{'s' if len(items) > 1 else ''} {', '.join(map(str, items))}"


def runs_by_point(runs: Sequence[tuple[str, int, str]]) -> str:
    """Runs (point, seed, what of it) said once per point: "a seeds 0, 2 (Sink_1 +23.2, +9.2); b seed 1"; a
    point's values keep their metric's name only where the metric is not the same for all of them."""
    by: dict[str, list[tuple[int, str]]] = {}
    for point, seed, what in sorted(set(runs)):
        by.setdefault(point, []).append((seed, what))
    out = []
    for point, xs in by.items():
        whats = [w for _, w in xs if w]
        names = {w.split(" ")[0] for w in whats}
        if len(names) == 1 and len(whats) > 1:
            name = names.pop()
            whats = [name + " " + ", ".join(w.split(" ", 1)[1] for w in whats)]
        out.append(f"{point} {seeds_text([s for s, _ in xs])}" + (f" ({', '.join(whats)})" if whats else ""))
    return "; ".join(out)


def values_said_once(text: str) -> str:
    """Adjacent clauses joined by "; " that end in the same parenthesis (the seeds' values both read): the
    parenthesis kept on the last of them only: "a in 1 of 3 seeds (1 / 2 / 9); b in 2 of 3 seeds (1 / 2 / 9)"
    reads "a in 1 of 3 seeds; b in 2 of 3 seeds (1 / 2 / 9)". Text without such clauses comes back as it is."""
    parts = text.split("; ")
    tails = [p[p.rindex(" ("):] if p.endswith(")") and " (" in p else None for p in parts]
    out = [p[:-len(t)] if t and t == next(iter(tails[i + 1:]), None) else p
           for i, (p, t) in enumerate(zip(parts, tails))]
    return "; ".join(out)
