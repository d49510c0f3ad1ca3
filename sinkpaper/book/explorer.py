"""The attention explorer: one self-contained HTML + JavaScript snippet that works in the static book (no kernel,
no network), in Jupyter and in Colab.

Pick model, input kind, BOS, sample, layer and head; see the selected head's T x T attention map (hover: query and
key token, value), the layers x heads alpha_1 grid of the selected sample (click a cell to select it), and
Sink_1^eps recomputed live in the page as the epsilon slider moves, from the embedded alpha_1 of every sample.

Python side::

    from sinkpaper.analysis import explorer_payload
    from sinkpaper.book import explorer
    payload = explorer_payload.collect(lm, "smollm2-135m")  # runs the model; a JSON-able dict
    explorer.render([payload])                               # an Explorer: displays as HTML in a notebook
    explorer.attention_explorer({"smollm2-135m": lm})        # both at once

What the payload holds, for every (input kind, BOS) setting:

* ``alpha_1``: alpha_1 of every sample x layer x head, exactly the float32 values the metric computes
  (:class:`sinkpaper.metrics.TraceStats` through :func:`sinkpaper.metrics.measure`, batched as
  :func:`sinkpaper.lms.measure_sink` batches), little-endian float32, base64;
* ``maps``: the attention maps of the first ``n_map_samples`` samples, lower triangle only (the diagonal
  included), in column-major order (key k = 0..T-1, then query t = k..T-1), quantized as round(255 * A) to uint8
  (error at most 1/510; ``map_scale`` trades precision for size), zlib-compressed, base64; :func:`sinkpaper.analysis.explorer_payload.decode`
  gives back [M, L, H, T, T] float32;
* the token ids and token strings of the map samples, the probe's provenance and the measuring time.

The page recomputes Sink_1^eps exactly as :mod:`sinkpaper.metrics` does: per sample, layer and head the indicator
alpha_1 > eps (strict, compared in float32 as torch compares a float32 tensor with a Python float), averaged, in
percent. :func:`sinkpaper.analysis.explorer_payload.sink_1` does the same in Python from a payload. The maps inflate in the browser with
``DecompressionStream`` (Chromium 80+, Firefox 113+, Safari 16.4+); the alpha_1 grid and the readout need
nothing beyond ``atob``.

The snippet has no external URL of any kind (no CDN, no fonts, no images); all of its code is one inline script
wrapped in an IIFE (no global names, so it coexists with Sphinx's scripts and with itself when it appears
twice on a page); its one element id and the whole output are derived from a hash of the content, so the same
payloads give byte-identical HTML.
"""
from __future__ import annotations

import base64
import hashlib
import html as _html
import json
import math
import numbers
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from sinkpaper.analysis.explorer_payload import FORMAT, MAP_SCALE, check_collect_args, collect

# ------------------------------------------------------------------------------------------------ render
class Explorer:
    """The rendered explorer. Displays as HTML in notebooks (``_repr_html_``); ``html`` is the snippet,
    ``save(path)`` writes it as a standalone page."""

    def __init__(self, html: str, models: list[str]):
        self.html = html
        self.models = models

    def _repr_html_(self) -> str:
        return self.html

    @property
    def nbytes(self) -> int:
        """Size of the snippet in bytes (UTF-8)."""
        return len(self.html.encode("utf-8"))

    def page(self, title: str = "Attention explorer") -> str:
        """The snippet inside a minimal standalone HTML document."""
        return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                f"<title>{_html.escape(title)}</title></head>\n<body>\n{self.html}\n</body></html>\n")

    def save(self, path) -> None:
        from pathlib import Path

        from sinkpaper.files import atomic_write_text

        atomic_write_text(Path(path), self.page())

    def __repr__(self) -> str:
        return f"Explorer(models={self.models}, {self.nbytes / 1e6:.2f} MB of HTML)"


def _check_payload(p: Any, i: int) -> None:
    if not isinstance(p, Mapping) or p.get("format") != FORMAT:
        raise ValueError(f"payload {i} is not an explorer payload from collect() (format {FORMAT!r})")
    L, H, T, S, M = (int(p[k]) for k in ("n_layers", "n_heads", "seq_len", "n_samples", "n_map_samples"))
    if not p["settings"]:
        raise ValueError(f"payload {i} ({p['model']!r}) has no settings")
    n_tri = T * (T + 1) // 2
    scale = p.get("map_scale", MAP_SCALE)
    if isinstance(scale, bool) or not isinstance(scale, int) or not 1 <= scale <= 255:
        raise ValueError(f"payload {i} ({p['model']!r}): map_scale must be an int in 1..255, got {scale!r}")
    for s in p["settings"]:
        if list(s["alpha_1"]["shape"]) != [S, L, H] or len(base64.b64decode(s["alpha_1"]["data"])) != 4 * S * L * H:
            raise ValueError(f"payload {i} ({p['model']!r}): alpha_1 of {s['inputs']}/bos={s['bos']} is not "
                             f"[{S}, {L}, {H}] float32")
        if M and (not s.get("maps") or list(s["maps"]["shape"]) != [M, L, H, n_tri]):
            raise ValueError(f"payload {i} ({p['model']!r}): maps of {s['inputs']}/bos={s['bos']} are not "
                             f"[{M}, {L}, {H}, {n_tri}]")
        if M and s["maps"].get("scale", MAP_SCALE) != scale:
            raise ValueError(f"payload {i} ({p['model']!r}): maps of {s['inputs']}/bos={s['bos']} have scale "
                             f"{s['maps'].get('scale')}, the payload says {scale}")


def _prov_line(p: Mapping, s: Mapping) -> str:
    """Plain-text one-liner: where the numbers of one setting came from."""
    g, q = p.get("provenance", {}), s.get("provenance", {})
    parts = [f"model {p['model']}"]
    for key, label in (("code_version", "code"), ("hardware", None)):
        if g.get(key):
            parts.append(f"{label} {g[key]}" if label else str(g[key]))
    libs = [f"{k} {g[k]}" for k in ("torch", "transformers", "python") if g.get(k)]
    if libs:
        parts.append(", ".join(libs))
    if g.get("computed_at"):
        parts.append(f"computed {g['computed_at']}")
    parts.append(f"{p['n_samples']} samples x {p['seq_len']} tokens, seed {p.get('seed')}, BOS "
                 f"{'on' if s['bos'] else 'off'}")
    if q.get("text_sha256"):
        parts.append(f"{q.get('text_source', 'text')} (Python {q.get('python')}, sha256 {q['text_sha256']})")
    elif q.get("vocab_sampled"):
        parts.append(f"tokens drawn from {q['vocab_sampled']} non-special ids")
    parts.append(f"maps: first {p['n_map_samples']} samples, uint8 at 1/{p.get('map_scale', MAP_SCALE)}")
    return "Provenance: " + " · ".join(parts)


def _source_line(p: Mapping) -> str:
    g = p.get("provenance", {})
    return f"{p['model']}: {g.get('source', 'source not recorded')}"


def render(payloads: list[dict], *, epsilon: float = 0.3, title: str = "Attention explorer") -> Explorer:
    """The explorer for one or more payloads from :func:`collect` (one per model), as an :class:`Explorer`.

    `epsilon` is the slider's starting value. The output depends only on the arguments (byte-identical HTML for
    the same payloads)."""
    from sinkpaper import metrics

    if isinstance(payloads, Mapping):
        payloads = [payloads]
    if not isinstance(payloads, (list, tuple)) or not payloads:
        raise ValueError("render needs a non-empty list of payloads from collect()")
    for i, p in enumerate(payloads):
        _check_payload(p, i)
    names = [p["model"] for p in payloads]
    if len(set(names)) != len(names):
        raise ValueError(f"two payloads have the same model name: {names}")
    if isinstance(epsilon, bool) or not isinstance(epsilon, numbers.Real) or not math.isfinite(epsilon):
        raise ValueError(f"epsilon must be a number, got {epsilon!r}")
    metrics.check_epsilon(epsilon)
    if not isinstance(title, str):
        raise ValueError(f"title must be a string, got {title!r}")
    epsilon = min(0.99, max(0.01, round(float(epsilon), 2)))  # on the slider's 0.01 grid
    data = {"eps": epsilon, "models": []}
    text = {"models": []}
    for p in payloads:
        data["models"].append({
            "L": int(p["n_layers"]), "H": int(p["n_heads"]), "T": int(p["seq_len"]), "S": int(p["n_samples"]),
            "M": int(p["n_map_samples"]), "scale": int(p.get("map_scale", MAP_SCALE)),
            "settings": [{"i": s["inputs"], "b": bool(s["bos"]), "a": s["alpha_1"]["data"],
                          "m": s["maps"]["data"] if s.get("maps") else None} for s in p["settings"]],
        })
        text["models"].append({"name": p["model"], "prov": [_prov_line(p, s) for s in p["settings"]],
                               "source": _source_line(p),
                               "tok": [s["tokens"] for s in p["settings"]]})
    # free text (model names, token strings, provenance) travels as base64 UTF-8 JSON: no markup, no URL-like
    # text and nothing that could close the script element ends up in the page
    data["text"] = base64.b64encode(json.dumps(text, ensure_ascii=False, separators=(",", ":"))
                                    .encode("utf-8")).decode("ascii")
    data_js = json.dumps(data, separators=(",", ":"), sort_keys=True)
    data_js = data_js.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    digest = hashlib.sha256("\0".join([FORMAT, _JS, _CSS, title, data_js]).encode("utf-8")).hexdigest()[:16]
    uid = f"spx-{digest}"
    body = (_HTML.replace("__UID__", uid).replace("__HASH__", digest).replace("__CSS__", _CSS)
            .replace("__EPS__", f"{epsilon:.2f}").replace("__TITLE__", _html.escape(title)))
    script = _JS.replace("__HASH__", digest).replace("__DATA__", data_js)
    return Explorer(body + "<script>" + script + "</script>", names)


def attention_explorer(lms, *, epsilon: float = 0.3, title: str = "Attention explorer", **collect_kwargs) -> Explorer:
    """Collect every model of `lms` ({label: LM}, or a list of LMs labelled by their names), then render.

    All arguments are checked for every model before the first one runs."""
    if not isinstance(lms, Mapping):
        if isinstance(lms, (str, bytes)) or not isinstance(lms, Sequence):
            raise ValueError("lms must be a mapping {label: LM} or a list of LMs from sinkpaper.lms.load_lm")
        lms = {lm.name: lm for lm in lms}
    if not lms:
        raise ValueError("attention_explorer needs at least one model")
    from sinkpaper import metrics

    metrics.check_epsilon(epsilon)
    valid = ("inputs", "bos", "n_samples", "n_map_samples", "seq_len", "seed", "batch_size", "map_scale")
    unknown = set(collect_kwargs) - set(valid)
    if unknown:
        raise ValueError(f"unknown arguments {sorted(unknown)}; valid: {', '.join(valid)}, epsilon, title")
    args = {"inputs": ("natural", "random", "repeat"), "bos": (False, True), "n_samples": 20, "n_map_samples": 2,
            "seq_len": 64, "seed": 0, "batch_size": 16, "map_scale": MAP_SCALE, **collect_kwargs}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # collect() itself warns below, once per model
        for label, lm in lms.items():
            check_collect_args(lm, label, args["inputs"], args["bos"], args["n_samples"], args["n_map_samples"],
                                args["seq_len"], args["seed"], args["batch_size"], args["map_scale"])
    return render([collect(lm, label, **collect_kwargs) for label, lm in lms.items()], epsilon=epsilon, title=title)


# ------------------------------------------------------------------------------------------------ page
_CSS = """
.spx{font:13px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:#1f2328;background:#fff;
border:1px solid #d0d7de;border-radius:6px;padding:10px 12px;margin:8px 0;max-width:100%;overflow-x:auto}
.spx .spx-title{font-weight:600;font-size:14px;margin-bottom:6px}
.spx .spx-controls{display:flex;flex-wrap:wrap;gap:6px 14px;align-items:center;margin-bottom:6px}
.spx label{white-space:nowrap}
.spx select{font:inherit;padding:1px 2px}
.spx input[type=range]{vertical-align:middle;width:160px}
.spx .spx-readout{font-size:15px;font-weight:600;margin:4px 0 2px}
.spx .spx-prov{font-size:11px;color:#57606a;margin-bottom:8px;word-break:break-word}
.spx .spx-panels{display:flex;flex-wrap:wrap;gap:18px;align-items:flex-start}
.spx .spx-cap{font-size:12px;margin-bottom:3px;max-width:420px}
.spx canvas{display:block;image-rendering:pixelated;cursor:crosshair}
.spx .spx-hover{font-size:12px;min-height:2.9em;max-width:420px;color:#1f2328;word-break:break-all}
.spx .spx-legend{font-size:11px;color:#57606a;margin-top:4px}
.spx .spx-bar{display:inline-block;width:140px;height:9px;vertical-align:middle;margin:0 4px;
background:linear-gradient(90deg,#440154,#482878,#3e4989,#31688e,#26828e,#1f9e89,#35b779,#6ece58,#fde725)}
.spx .spx-note{color:#9a6700}
"""

_HTML = """<div class="spx" id="__UID__" data-spx="__HASH__">
<style>__CSS__</style>
<div class="spx-title">__TITLE__</div>
<div class="spx-controls">
<label>model <select data-r="model"></select></label>
<label>input <select data-r="input"></select></label>
<label>BOS <select data-r="bos"></select></label>
<label>sample <select data-r="sample"></select></label>
<label>layer <select data-r="layer"></select></label>
<label>head <select data-r="head"></select></label>
<label>&epsilon; <input type="range" min="0" max="1" step="0.01" value="__EPS__" data-r="eps"> <b data-r="epsv">__EPS__</b></label>
<label><input type="checkbox" data-r="sqrt"> &radic; colour scale (map)</label>
</div>
<div class="spx-readout" data-r="readout">Sink<sub>1</sub><sup>&epsilon;</sup>: needs JavaScript</div>
<div class="spx-prov" data-r="prov"></div>
<div class="spx-panels">
<div><div class="spx-cap" data-r="mapcap"></div><canvas data-r="map" width="64" height="64"></canvas><div class="spx-hover" data-r="maphover"></div></div>
<div><div class="spx-cap" data-r="gridcap"></div><canvas data-r="grid" width="64" height="64"></canvas><div class="spx-hover" data-r="gridhover"></div></div>
</div>
<div class="spx-legend">colour: 0<span class="spx-bar"></span>1 (viridis); grid cells with &alpha;<sub>1</sub> &gt; &epsilon; are outlined in orange; positions are 1-based as in the paper, layers and heads 0-based</div>
</div>
"""

_JS = r"""(function () {
"use strict";
var HASH = "__HASH__";
var D = __DATA__;
var VIR = [[68,1,84],[72,40,120],[62,73,137],[49,104,142],[38,130,142],[31,158,137],[53,183,121],[110,206,88],[253,231,37]];
function color(v) {
  v = v < 0 ? 0 : v > 1 ? 1 : v;
  var x = v * 8, i = Math.min(7, Math.floor(x)), f = x - i, a = VIR[i], b = VIR[i + 1];
  return [Math.round(a[0] + (b[0] - a[0]) * f), Math.round(a[1] + (b[1] - a[1]) * f), Math.round(a[2] + (b[2] - a[2]) * f)];
}
function bytesOf(s) {
  var bin = atob(s), n = bin.length, out = new Uint8Array(n);
  for (var i = 0; i < n; i++) out[i] = bin.charCodeAt(i);
  return out;
}
function floats(s) {
  var b = bytesOf(s), dv = new DataView(b.buffer), n = b.length / 4, out = new Float32Array(n);
  for (var i = 0; i < n; i++) out[i] = dv.getFloat32(4 * i, true);
  return out;
}
function inflate(s) {
  if (typeof DecompressionStream === "undefined") {
    return Promise.reject(new Error("this browser has no DecompressionStream (needs Chromium 80+, Firefox 113+ or Safari 16.4+)"));
  }
  var stream = new Blob([bytesOf(s)]).stream().pipeThrough(new DecompressionStream("deflate"));
  return new Response(stream).arrayBuffer().then(function (buf) { return new Uint8Array(buf); });
}
function show(tok) { return JSON.stringify(tok); }
function findRoot() {
  var s = document.currentScript, el = s && s.previousElementSibling;
  if (el && el.getAttribute("data-spx") === HASH && !el.hasAttribute("data-spx-ready")) return el;
  var all = document.querySelectorAll('div[data-spx="' + HASH + '"]');
  for (var i = 0; i < all.length; i++) if (!all[i].hasAttribute("data-spx-ready")) return all[i];
  return null;
}
function init(root) {
  root.setAttribute("data-spx-ready", "0");
  var TXT = JSON.parse(new TextDecoder("utf-8").decode(bytesOf(D.text)));
  function q(r) { return root.querySelector('[data-r="' + r + '"]'); }
  var el = {model: q("model"), input: q("input"), bos: q("bos"), sample: q("sample"), layer: q("layer"), head: q("head"),
            eps: q("eps"), epsv: q("epsv"), sqrt: q("sqrt"), readout: q("readout"), prov: q("prov"), map: q("map"),
            mapcap: q("mapcap"), maphover: q("maphover"), grid: q("grid"), gridcap: q("gridcap"), gridhover: q("gridhover")};
  var alphas = D.models.map(function (m) { return m.settings.map(function (s) { return floats(s.a); }); });
  var mapCache = {};
  var st = {m: 0, s: 0, sample: 0, layer: 0, head: 0, eps: D.eps};
  var cur = {key: null, bytes: null};
  function M() { return D.models[st.m]; }
  function S() { return M().settings[st.s]; }
  function a1(sample, l, h) { var m = M(); return alphas[st.m][st.s][(sample * m.L + l) * m.H + h]; }
  function options(sel, items, value) {
    while (sel.firstChild) sel.removeChild(sel.firstChild);
    items.forEach(function (it) {
      var o = document.createElement("option"); o.value = String(it[0]); o.textContent = it[1]; sel.appendChild(o);
    });
    sel.value = String(value);
  }
  function range(n) { var r = []; for (var i = 0; i < n; i++) r.push(i); return r; }
  function setting(input, bos) {
    var ss = M().settings;
    for (var i = 0; i < ss.length; i++) if (ss[i].i === input && ss[i].b === bos) return i;
    for (i = 0; i < ss.length; i++) if (ss[i].i === input) return i;
    return 0;
  }
  function fillControls() {
    var m = M(), seen = {}, inputs = [], boss = [];
    m.settings.forEach(function (s) { if (!seen[s.i]) { seen[s.i] = 1; inputs.push([s.i, s.i]); } });
    m.settings.forEach(function (s) { if (s.i === S().i) boss.push([s.b ? "1" : "0", s.b ? "on" : "off"]); });
    options(el.model, TXT.models.map(function (t, i) { return [i, t.name]; }), st.m);
    options(el.input, inputs, S().i);
    options(el.bos, boss, S().b ? "1" : "0");
    options(el.sample, range(m.S).map(function (i) { return [i, i < m.M ? String(i) : i + " (no map)"]; }), st.sample);
    options(el.layer, range(m.L).map(function (i) { return [i, String(i)]; }), st.layer);
    options(el.head, range(m.H).map(function (i) { return [i, String(i)]; }), st.head);
  }
  function clamp() {
    var m = M();
    st.sample = Math.min(st.sample, m.S - 1); st.layer = Math.min(st.layer, m.L - 1); st.head = Math.min(st.head, m.H - 1);
  }
  function readout() {
    var m = M(), a = alphas[st.m][st.s], e = Math.fround(st.eps), n = 0;
    for (var i = 0; i < a.length; i++) if (a[i] > e) n++;
    var pct = 100 * n / a.length;
    el.readout.setAttribute("data-sink", String(pct));
    el.readout.setAttribute("data-eps", String(st.eps));
    el.readout.setAttribute("data-count", n + "/" + a.length);
    el.readout.textContent = "";
    el.readout.appendChild(document.createTextNode("Sink"));
    var sub = document.createElement("sub"); sub.textContent = "1"; el.readout.appendChild(sub);
    var sup = document.createElement("sup"); sup.textContent = "\u03b5"; el.readout.appendChild(sup);
    el.readout.appendChild(document.createTextNode(" = " + pct.toFixed(2) + "% (" + n + " of " + a.length +
      " layer-head pairs over " + m.S + " samples; \u03b5 = " + st.eps.toFixed(2) + ", \u03b1\u2081 > \u03b5 per sample)"));
    el.epsv.textContent = st.eps.toFixed(2);
    el.prov.textContent = TXT.models[st.m].prov[st.s];
    el.prov.title = TXT.models[st.m].source;
  }
  function gridGeom() {
    var m = M(), cell = Math.max(6, Math.min(24, Math.floor(440 / m.L), Math.floor(240 / m.H)));
    return {cell: cell, left: 26, top: 16, w: 26 + cell * m.H + 2, h: 16 + cell * m.L + 2};
  }
  function drawGrid() {
    var m = M(), g = gridGeom(), c = el.grid, ctx = c.getContext("2d"), e = Math.fround(st.eps), n = 0;
    c.width = g.w; c.height = g.h;
    ctx.fillStyle = "#fff"; ctx.fillRect(0, 0, g.w, g.h);
    ctx.fillStyle = "#57606a"; ctx.font = "10px sans-serif"; ctx.textAlign = "center"; ctx.textBaseline = "middle";
    for (var h = 0; h < m.H; h++) ctx.fillText(String(h), g.left + (h + 0.5) * g.cell, g.top / 2);
    ctx.textAlign = "right";
    var every = g.cell >= 12 ? 1 : g.cell >= 8 ? 2 : 5;
    for (var l = 0; l < m.L; l++) if (l % every === 0) ctx.fillText(String(l), g.left - 4, g.top + (l + 0.5) * g.cell);
    for (l = 0; l < m.L; l++) for (h = 0; h < m.H; h++) {
      var v = a1(st.sample, l, h), rgb = color(v), x = g.left + h * g.cell, y = g.top + l * g.cell;
      ctx.fillStyle = "rgb(" + rgb[0] + "," + rgb[1] + "," + rgb[2] + ")"; ctx.fillRect(x, y, g.cell, g.cell);
      if (v > e) { n++; ctx.strokeStyle = "#ff7f0e"; ctx.lineWidth = 2; ctx.strokeRect(x + 1.5, y + 1.5, g.cell - 3, g.cell - 3); }
    }
    ctx.strokeStyle = "#000"; ctx.lineWidth = 2;
    ctx.strokeRect(g.left + st.head * g.cell + 1, g.top + st.layer * g.cell + 1, g.cell - 2, g.cell - 2);
    el.gridcap.textContent = "\u03b1\u2081 per layer (rows) \u00d7 head (columns), sample " + st.sample + ": " + n + " of " +
      (m.L * m.H) + " heads with \u03b1\u2081 > " + st.eps.toFixed(2) + "; click a cell to select it";
  }
  function mapGeom() { var T = M().T, cell = Math.max(1, Math.floor(384 / T)); return {cell: cell, size: cell * T}; }
  function mapKey() { return [st.m, st.s, st.sample, st.layer, st.head, el.sqrt.checked ? 1 : 0].join(","); }
  function drawMap() {
    var m = M(), g = mapGeom(), c = el.map, key = mapKey(), s = S();
    var head = "layer " + st.layer + ", head " + st.head + ", sample " + st.sample + " (" + s.i + ", BOS " + (s.b ? "on" : "off") +
      "): \u03b1\u2081 = " + a1(st.sample, st.layer, st.head).toFixed(4);
    c.width = g.size; c.height = g.size;
    var ctx = c.getContext("2d");
    if (st.sample >= m.M || !s.m) {
      ctx.fillStyle = "#f6f8fa"; ctx.fillRect(0, 0, g.size, g.size);
      el.mapcap.textContent = head + ". The attention map is embedded for the first " + m.M + " samples only.";
      cur.key = key; cur.bytes = null; root.setAttribute("data-map-key", key);
      return;
    }
    el.mapcap.textContent = head + "; attention map (query rows \u2193, key columns \u2192), loading\u2026";
    var id = st.m + "," + st.s;
    if (!mapCache[id]) mapCache[id] = inflate(s.m);
    mapCache[id].then(function (bytes) {
      if (mapKey() !== key) return;
      var T = m.T, ntri = T * (T + 1) / 2, base = ((st.sample * m.L + st.layer) * m.H + st.head) * ntri;
      var img = ctx.createImageData(T, T), px = img.data, sq = el.sqrt.checked;
      for (var t = 0; t < T; t++) for (var k = 0; k < T; k++) {
        var o = 4 * (t * T + k);
        if (k > t) { px[o] = 238; px[o + 1] = 238; px[o + 2] = 238; px[o + 3] = 255; continue; }
        var v = bytes[base + k * T - k * (k - 1) / 2 + (t - k)] / m.scale, rgb = color(sq ? Math.sqrt(v) : v);
        px[o] = rgb[0]; px[o + 1] = rgb[1]; px[o + 2] = rgb[2]; px[o + 3] = 255;
      }
      var off = document.createElement("canvas"); off.width = T; off.height = T; off.getContext("2d").putImageData(img, 0, 0);
      ctx.imageSmoothingEnabled = false; ctx.drawImage(off, 0, 0, g.size, g.size);
      el.mapcap.textContent = head + "; attention map (query rows \u2193, key columns \u2192; uint8, \u00b1" +
        (0.5 / m.scale).toFixed(4) + ")" + (sq ? ", \u221a colour scale" : "");
      cur.key = key; cur.bytes = bytes; cur.base = base; root.setAttribute("data-map-key", key);
    }, function (err) {
      el.mapcap.textContent = head + ". The map cannot be shown: " + err.message;
      el.mapcap.className = "spx-cap spx-note";
    });
  }
  function drawAll() { readout(); drawGrid(); drawMap(); }
  el.model.addEventListener("change", function () {
    var prev = S(); st.m = +el.model.value; st.s = setting(prev.i, prev.b); clamp(); fillControls(); drawAll();
  });
  el.input.addEventListener("change", function () { st.s = setting(el.input.value, S().b); fillControls(); drawAll(); });
  el.bos.addEventListener("change", function () { st.s = setting(S().i, el.bos.value === "1"); drawAll(); });
  el.sample.addEventListener("change", function () { st.sample = +el.sample.value; drawGrid(); drawMap(); });
  el.layer.addEventListener("change", function () { st.layer = +el.layer.value; drawGrid(); drawMap(); });
  el.head.addEventListener("change", function () { st.head = +el.head.value; drawGrid(); drawMap(); });
  el.sqrt.addEventListener("change", drawMap);
  el.eps.addEventListener("input", function () { st.eps = parseFloat(el.eps.value); readout(); drawGrid(); });
  el.grid.addEventListener("click", function (ev) {
    var g = gridGeom(), r = el.grid.getBoundingClientRect();
    var h = Math.floor((ev.clientX - r.left - g.left) / g.cell), l = Math.floor((ev.clientY - r.top - g.top) / g.cell);
    if (h < 0 || l < 0 || h >= M().H || l >= M().L) return;
    st.layer = l; st.head = h; el.layer.value = String(l); el.head.value = String(h); drawGrid(); drawMap();
  });
  el.grid.addEventListener("mousemove", function (ev) {
    var g = gridGeom(), r = el.grid.getBoundingClientRect();
    var h = Math.floor((ev.clientX - r.left - g.left) / g.cell), l = Math.floor((ev.clientY - r.top - g.top) / g.cell);
    el.gridhover.textContent = (h < 0 || l < 0 || h >= M().H || l >= M().L) ? "" :
      "layer " + l + ", head " + h + ": \u03b1\u2081 = " + a1(st.sample, l, h).toFixed(4) + " (sample " + st.sample + ")";
  });
  el.map.addEventListener("mousemove", function (ev) {
    if (!cur.bytes || cur.key !== mapKey()) { el.maphover.textContent = ""; return; }
    var m = M(), g = mapGeom(), r = el.map.getBoundingClientRect(), T = m.T;
    var k = Math.floor((ev.clientX - r.left) / g.cell), t = Math.floor((ev.clientY - r.top) / g.cell);
    if (k < 0 || t < 0 || k >= T || t >= T) { el.maphover.textContent = ""; return; }
    var toks = TXT.models[st.m].tok[st.s][st.sample];
    var what = "query " + (t + 1) + " " + show(toks[t]) + " \u2192 key " + (k + 1) + " " + show(toks[k]) + ": ";
    el.maphover.textContent = what + (k > t ? "not visible (causal mask)" :
      (cur.bytes[cur.base + k * T - k * (k - 1) / 2 + (t - k)] / m.scale).toFixed(3));
  });
  el.map.addEventListener("mouseleave", function () { el.maphover.textContent = ""; });
  el.grid.addEventListener("mouseleave", function () { el.gridhover.textContent = ""; });
  // start in the middle layer, on its head with the largest alpha_1 in the first sample
  var best = -1;
  st.layer = Math.floor(M().L / 2);
  for (var h = 0; h < M().H; h++) { var v = a1(0, st.layer, h); if (v > best) { best = v; st.head = h; } }
  el.eps.value = String(st.eps);
  fillControls(); drawAll();
  root.setAttribute("data-spx-ready", "1");
}
function start(tries) {
  var root = findRoot();
  if (root) {
    try { init(root); } catch (err) {
      root.setAttribute("data-spx-ready", "error");
      var p = document.createElement("div"); p.className = "spx-note";
      p.textContent = "The attention explorer failed to start: " + err.message; root.appendChild(p);
      throw err;
    }
  } else if (tries < 50) {
    setTimeout(function () { start(tries + 1); }, 100);
  }
}
start(0);
})();
"""
