"""The tables the chapters build from stored (and live) runs: THE per-point table of a sweep (:func:`points_table`),
when the sink emerged per seed, the paper's rows of a Section-7 family, and the raw weights of the proxy runs.
Numbers come from :mod:`sinkpaper.results` (one metric vocabulary, one formatter set); the rows display as
:class:`.figures.Table`."""
from __future__ import annotations

import statistics
from typing import Any, Mapping, Sequence

from .. import paper as registry
from ..metrics import excess_alpha
from ..results.curves import first_reaching, raw_curve_rows, transient
from ..results.numbers import MISSING, fmt_spread
from ..results.reading import point_of, uniform_floor
from ..results.sweeps import values_of
from .figures import Fold, Table, book_values

# how the tables and dot charts read a run, said once where a chapter shows them
PLATEAU_NOTE = (f"Sink and alpha_1: each run's plateau (its last {100 * registry.PLATEAU:g} % of steps; \"final\": a "
                "curve too short for one), then mean [min, max] over seeds.")


def _shown(ps: Sequence[dict], point: str, name: str) -> tuple[list[float], str]:
    """The values a table shows for one point's runs (each on its plateau) and the mark for those that are not."""
    vals, final = book_values(ps, point, name)
    mark = "" if not final else " (final)" if final == len(vals) else f" (final in {final} of {len(vals)})"
    return [v for _, v in vals], mark


def points_table(payloads: Sequence[dict], points: Sequence[Any], ks: Sequence[int] = (1,), *,
                 changes: Mapping[str, str] | None = None, paper: Mapping[str, str] | bool | None = None,
                 names: Mapping[str, str] | None = None, uniform: bool = False, sink_star: bool | None = None,
                 held_out: bool = False) -> Table:
    """One row per point of ``points`` that has runs, in that order (points without runs are left out): the
    point, what changes, the seeds, Sink_k % for each k of ``ks`` as mean [min, max] over seeds (marked * where
    it is the |w| / sum |w| proxy), Sink* % on the bias or extra position, alpha_1, the loss, tokens seen and the
    paper's number. Sink and alpha_1 are each run's plateau (:data:`PLATEAU_NOTE`); the losses are the final ones.

    * ``points``: point names, or :class:`sinkpaper.book.points.Point`s (a Point says what it changes);
    * ``changes``: {point: what changes} (a Point's own by default; no column for names without it);
    * ``paper``: {point: the paper's number}, or True for the registry's (:func:`sinkpaper.paper.paper_text`);
    * ``names``: {point: the name its runs have in ``payloads``} (e.g. the miniature's "recipe" for the default);
    * ``uniform``: the uniform floor of alpha_1 under the point's mask and the excess over it;
    * ``sink_star``: the Sink* column (by default: when a run of a shown point has one);
    * ``held_out``: the held-out loss (mean [min, max]; the last training loss for runs stored without one)
      instead of the last training loss (mean).

    Tokens seen get a column only where the points differ (else the provenance line says it once)."""
    names = dict(names or {})
    shown = []                                  # (point, its name, its runs' name, its runs), for points with runs
    for pt in points:
        name = getattr(pt, "name", pt)
        run_name = names.get(name, name)
        ps = [p for p in payloads if point_of(p) == run_name]
        if ps:
            shown.append((pt, name, run_name, ps))
    if sink_star is None:
        sink_star = any(p["result"].get("sink_star") is not None for *_, ps in shown for p in ps)
    rows = []
    for pt, name, run_name, ps in shown:
        row = {"point": run_name}
        what = changes.get(name, "") if changes is not None else getattr(pt, "what", None)
        if what is not None:
            row["what changes"] = what
        row["seeds"] = ",".join(str(s) for s in sorted(p["config"]["run"]["seed"] for p in ps))
        proxy = "*" if any(p["result"].get("proxy") for p in ps) else ""
        for k in ks:
            vals, mark = _shown(ps, run_name, f"Sink_{k}")
            row[f"Sink_{k} %"] = fmt_spread(vals) + proxy + mark
        if sink_star:
            vals, mark = _shown(ps, run_name, "Sink*")
            row["Sink* % (bias position)"] = fmt_spread(vals) + (mark if vals else "")
        a1 = statistics.fmean(_shown(ps, run_name, "alpha_1")[0])
        row["alpha_1"] = round(a1, 3)
        if uniform:
            u = uniform_floor(ps[0]["config"])
            row["uniform alpha_1"] = round(u, 3)
            row["excess"] = round(excess_alpha(a1, u), 3) + 0.0  # no "-0.0"
        if held_out:
            val = values_of(ps, run_name, "val_loss")
            loss = val or values_of(ps, run_name, "loss")
            row["held-out loss" if val else "loss"] = fmt_spread(loss, 3) if loss else None
        else:
            row["loss"] = round(statistics.fmean(values_of(ps, run_name, "loss")), 3)
        row["tokens"] = f"{ps[0]['result']['tokens_seen']:,}"
        if paper is True:
            row["paper"] = registry.paper_text(name)
        elif paper:
            row["paper"] = paper.get(name, MISSING)
        rows.append(row)
    if len({r["tokens"] for r in rows}) == 1:   # the same for every point: the provenance line says it once
        rows = [{k: v for k, v in r.items() if k != "tokens"} for r in rows]
    return Table(rows)


def emergence_table(payloads: Sequence[dict], order: Sequence[str], ks: Mapping[str, int] | None = None,
                    threshold: float = 50.0) -> Table:
    """Per point and seed: the step (and tokens) at which Sink_k first reached ``threshold`` %, or 'not within
    N steps'. ``ks`` maps a point to the position k to follow (default 1)."""
    rows = []
    for point in order:
        for p in sorted((p for p in payloads if point_of(p) == point), key=lambda p: p["config"]["run"]["seed"]):
            k = (ks or {}).get(point, 1)
            e = first_reaching(p["curve"], k, threshold)
            never = f"not within {p['result']['step']}"
            rows.append({"point": point, "seed": p["config"]["run"]["seed"], "k": k,
                         f"first step with Sink_k >= {threshold:g} %": e["step"] if e else never,
                         "tokens seen then": e["tokens"] if e else None,
                         "final Sink_k %": round(p["result"]["sink_k"][str(k)], 1)})
    return Table(rows)


def paper_table(points: Sequence[Any], not_run: Sequence[Any] = ()) -> Table:
    """The paper's numbers for a family (:class:`sinkpaper.book.points.Point`s), the points this book runs first,
    then the paper's other rows."""
    rows = [{"point": p.name, "what changes": p.what, "the paper (%)": p.paper, "in our sweep": "yes"} for p in points]
    rows += [{"point": p.name, "what changes": p.what, "the paper (%)": p.paper, "in our sweep": "no"} for p in not_run]
    return Table(rows)


def raw_evals_table(payload: Mapping, label: str) -> Table:
    """One run's evaluations with raw weights, one row each: tokens, the proxy's Sink*_1 and the raw weights."""
    return Table([{k: (f"{v:,}" if k == "tokens" else round(v, 4) if k.startswith("proxy") else
                       float(f"{v:.3g}") if isinstance(v, float) else v)
                   for k, v in r.items() if k != "run"} for r in raw_curve_rows(payload, label)])


def transient_table(runs: Sequence[tuple[str, Mapping]]) -> Table:
    """One row per (label, payload) with raw weights: the raw weights on token 1 and on the other keys at the
    first evaluation, at the proxy's peak (its step and Sink*_1) and at the end, with the final row sum."""
    rows = []
    for label, p in runs:
        t = transient(p)
        if t is None:
            continue
        f, k, e = t["first"], t["peak"], t["final"]
        g = lambda v: float(f"{v:.3g}")  # noqa: E731
        rows.append({"run": label, "first: token 1 / others": f"{g(f['raw weight on token 1'])} / "
                                                              f"{g(f['raw weight on other keys'])}",
                     "proxy peak: step": k["step"], "peak Sink*_1 %": round(k["proxy Sink*_1 %"], 1),
                     "at peak: token 1 / others": f"{g(k['raw weight on token 1'])} / "
                                                  f"{g(k['raw weight on other keys'])}",
                     "end: token 1 / others": f"{g(e['raw weight on token 1'])} / {g(e['raw weight on other keys'])}",
                     "end: row sum": g(e["raw row sum"]), "end: Sink*_1 %": round(e["proxy Sink*_1 %"], 1)})
    return Table(rows)


class ClaimsTable(Table):
    """A chapter's claims (rows of :func:`sinkpaper.paper.rows`) in a table that fits the text column: the claim,
    the paper's numbers, and per scale our values with the verdict (an inconclusive verdict with its reason);
    the rule and the notes one click away, under the claim. A note that several claims share (a family's
    reading, a scale's setup) is printed once under the table and named by its number in each row. Fixed layout
    at 100 % of the column, every cell wrapped, so it never scrolls sideways."""

    def __init__(self, rows: list[dict[str, Any]]):
        super().__init__(rows)
        self.scales = [c[len("verdict ("):-1] for c in self.columns if c.startswith("verdict (")]
        parts = [n for r in rows for n in dict.fromkeys(self._notes(r))]
        self.shared = [n for n in dict.fromkeys(parts) if parts.count(n) > 1]

    @staticmethod
    def _notes(r: dict[str, Any]) -> list[str]:
        return list(r.get("notes") or ([r["note"]] if r.get("note") else []))

    def _repr_html_(self) -> str:
        import html

        e = html.escape
        width = {1: 44, 2: 29, 3: 21}.get(len(self.scales), 20)
        cols = ('<colgroup><col style="width:26%"><col style="width:14%">'
                + f'<col style="width:{width}%">' * len(self.scales) + "</colgroup>")
        head = "<tr><th>claim (\u25b8 rule, notes)</th><th>paper</th>" + "".join(
            f"<th>ours: {e(s)}</th>" for s in self.scales) + "</tr>"
        body = []
        for r in self.rows:
            own = [e(n) for n in self._notes(r) if n not in self.shared]
            refs = sorted({self.shared.index(n) + 1 for n in self._notes(r) if n in self.shared})
            notes = "; ".join(own + ([f"shared note{'s' if len(refs) > 1 else ''} {', '.join(map(str, refs))} "
                                      "(under the table)"] if refs else []))
            detail = f"<b>Rule:</b> {e(str(r.get('rule', '')))}" + (f"<br><b>Notes:</b> {notes}" if notes else "")
            cells = [f"<td><details><summary>{e(str(r['claim']))}</summary><div>{detail}</div></details></td>",
                     f'<td data-label="paper">{e(str(r.get("paper", "")))}</td>']
            for s in self.scales:
                verdict = str(r.get(f"verdict ({s})", ""))
                word, _, why = verdict.partition(": ")
                cls = word.split(" (")[0].replace(" ", "-")
                ours = str(r.get(f"ours ({s})", ""))
                if "(not run)" in word:   # the chip says it; why this scale does not run it is on hover
                    cells.append(f'<td data-label="ours: {e(s)}"><span class="v {e(cls)}" '
                                 f'title="{e(ours.removeprefix("not run: "))}">{e(word)}</span></td>')
                    continue
                if ours and all(x.rstrip().endswith("\u2014") for x in ours.split(", ")):
                    ours = ""   # every value a dash: nothing measured to list; the chip and its reason say why
                cells.append(f'<td data-label="ours: {e(s)}"><span class="v {e(cls)}">{e(word)}</span>'
                             + (f'<span class="why">{e(why)}</span>' if why else "")
                             + (f'<span class="n">{e(ours)}</span>' if ours else "") + "</td>")
            body.append("<tr>" + "".join(cells) + "</tr>")
        shared = ("" if not self.shared else '<div class="sinkpaper-shared-notes"><b>Shared notes</b><ol>'
                  + "".join(f"<li>{e(n)}</li>" for n in self.shared) + "</ol></div>")
        return (f'<table class="sinkpaper-table sinkpaper-claims">{cols}<thead>{head}</thead>'
                f'<tbody>{"".join(body)}</tbody></table>{shared}')


CLAIMS_FOLD = "Every claim: its rule, the paper's numbers and ours at every scale"


def claims_fold(ids: Sequence[str]) -> Fold:
    """A chapter's claims table (:class:`ClaimsTable`) in a fold under the finding card's verdicts: the card at the
    top leads with the same verdicts, so the table with every rule and note is one click away, not a second copy
    on the page."""
    return Fold(CLAIMS_FOLD, ClaimsTable(registry.rows(list(ids))))
