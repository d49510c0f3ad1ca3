"""A chart read back from its vega-lite spec, as the tests and the page audit read every chart of the book: the specs
a page embeds, every data row of a spec, lines that join different runs, panels with more series than a reader
can tell apart, and whether a chart carries the paper's value."""
from __future__ import annotations

from typing import Mapping

def joined_lines(spec: Mapping) -> list[str]:
    """The line marks of a chart (its ``to_dict()``, or the spec a page embeds) that join points of different
    runs: within one line (the rows sharing the values of its colour, detail and dash fields) an x value that
    repeats means two runs were drawn as one sawtooth. Returns a description of each."""
    found = []

    def walk(s: Mapping, data: list | None, enc: Mapping) -> None:
        data = s.get("data", {}).get("values", data) if isinstance(s.get("data"), Mapping) else data
        enc = {**enc, **s.get("encoding", {})}
        for key in ("layer", "vconcat", "hconcat", "concat"):
            for sub in s.get(key, []):
                walk(sub, data, enc)
        mark = s.get("mark")
        kind = mark.get("type") if isinstance(mark, Mapping) else mark
        if kind not in ("line", "trail") or not data or "x" not in enc:
            return
        xf = enc["x"].get("field")
        keys = []
        for ch in ("color", "detail", "strokeDash", "strokeWidth", "opacity", "shape"):
            for e in (enc[ch] if isinstance(enc.get(ch), list) else [enc.get(ch)]):
                if isinstance(e, Mapping) and e.get("field"):
                    keys.append(e["field"])
        seen: dict[tuple, set] = {}
        for r in data:
            k = tuple(r.get(f) for f in keys)
            xv = r.get(xf)
            if xv in seen.setdefault(k, set()):
                found.append(f"{s.get('title') or mark}: line {dict(zip(keys, k))} has two points at {xf} = {xv}")
                return
            seen[k].add(xv)

    walk(spec, None, {})
    return found


def embedded_specs(page: str) -> list[dict]:
    """The vega-lite specs a page (a notebook output's or a built page's HTML) embeds through altair's renderer:
    what a test reads to check every chart of the book at once (:func:`joined_lines`, :func:`draws_the_paper`)."""
    import json

    decoder, out, i = json.JSONDecoder(), [], 0
    while (i := page.find("})({", i)) >= 0:
        try:
            spec, _ = decoder.raw_decode(page, i + 3)
        except ValueError:
            spec = None
        if isinstance(spec, dict) and "$schema" in spec and "vega-lite" in spec["$schema"]:
            out.append(spec)
        i += 4
    return out


def chart_values(spec: Mapping) -> list[dict]:
    """Every data row a chart spec embeds, at any level (altair hoists data its layers share to the top)."""
    out = []
    vals = spec.get("data", {}).get("values", []) if isinstance(spec.get("data"), Mapping) else []
    out += [r for r in vals if isinstance(r, Mapping)]
    for key in ("layer", "vconcat", "hconcat", "concat"):
        for sub in spec.get(key, []):
            out += chart_values(sub)
    return out


MAX_SERIES = 6   # series one panel may draw: more, and the reader cannot tell the colours apart (facet instead)


def crowded_panels(spec: Mapping, limit: int = MAX_SERIES) -> list[str]:
    """The panels of a chart spec whose lines, bands or dots have more than ``limit`` colours (series): each as
    "title: n series of field"."""
    found: list[str] = []

    def walk(s: Mapping, data, title) -> None:
        if isinstance(s.get("data"), Mapping) and "values" in s["data"]:
            data = s["data"]["values"]
        t = s.get("title")
        title = (t.get("text") if isinstance(t, Mapping) else t) or title
        for key in ("layer", "hconcat", "vconcat", "concat"):
            for sub in s.get(key, []):
                walk(sub, data, title)
        mark = s.get("mark")
        kind = mark.get("type") if isinstance(mark, Mapping) else mark
        color = s.get("encoding", {}).get("color")
        if kind in ("line", "area", "circle", "point") and isinstance(color, Mapping) and color.get("field") and data:
            n = len({r.get(color["field"]) for r in data if isinstance(r, Mapping)})
            if n > limit:
                found.append(f"{title}: {n} series of {color['field']}")

    walk(spec, None, None)
    return found


def draws_the_paper(spec: Mapping) -> bool:
    """Whether a chart carries a value of the paper in its data (a row whose "who" is "paper")."""
    return any(r.get("who") == "paper" for r in chart_values(spec))
