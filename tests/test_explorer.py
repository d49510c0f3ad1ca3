"""The attention explorer (sinkpaper.book.explorer): its payload against the model and the metric, deterministic
self-contained HTML, argument errors before any compute, and a real headless-Chromium run of the page with every
network request blocked (the slider recomputes Sink_1 as Python does, layer/head change the drawn map)."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from sinkpaper import metrics
from sinkpaper.analysis import explorer_payload
from sinkpaper.book import explorer
from sinkpaper.lms import measure_sink
from sinkpaper.probes import make_inputs

CHROMIUM = "/usr/bin/chromium"
SMALL = dict(inputs=("natural", "repeat"), bos=(False, True), n_samples=4, n_map_samples=3, seq_len=16, seed=0,
             batch_size=2)  # 3 map samples over 2 batches of 2: the maps are gathered across batches


@pytest.fixture(scope="module")
def smol_payload(smollm2):
    return explorer_payload.collect(smollm2, "smollm2-135m", **SMALL)


@pytest.fixture(scope="module")
def gemma_payload(gemma3):
    return explorer_payload.collect(gemma3, "gemma3-270m", inputs=("natural",), bos=(False, True), n_samples=3,
                            n_map_samples=1, seq_len=12, seed=1)


# ------------------------------------------------------------------------------------------------ payload
def test_payload_matches_model_and_metric(smollm2, smol_payload):
    p = smol_payload
    assert json.loads(json.dumps(p)) == p  # JSON-able as is
    L, H, T = smollm2.n_layers, smollm2.model.config.num_attention_heads, SMALL["seq_len"]
    assert (p["model"], p["n_layers"], p["n_heads"], p["seq_len"]) == ("smollm2-135m", L, H, T)
    assert p["provenance"]["code_version"] and p["provenance"]["model"] == "smollm2-135m"
    assert [(s["inputs"], s["bos"]) for s in p["settings"]] == [("natural", False), ("repeat", False),
                                                                ("natural", True), ("repeat", True)]
    for n, s in enumerate(p["settings"]):
        probe = make_inputs(smollm2.tokenizer, s["inputs"], n_samples=4, seq_len=T, bos=s["bos"], seed=0)
        got = explorer_payload.decode(p, s["inputs"], s["bos"])
        # alpha_1: exactly the metric's values (same trace, same batching as measure_sink)
        stats = metrics.measure(lambda ids: smollm2.trace(ids, with_qkv=False), probe.input_ids, batch_size=2,
                                progress=False)
        assert got["alpha_1"].dtype == np.float32 and got["alpha_1"].shape == (4, L, H)
        np.testing.assert_array_equal(got["alpha_1"], stats.alphas[..., 0].numpy())
        for eps in (0.3, 0.5):
            assert explorer_payload.sink_1(p, s["inputs"], s["bos"], eps) == metrics.sink_rate(stats.alphas, eps, 1)
        if n in (0, 3):  # and through the public entry point (forward passes are slow here: twice only)
            eps = 0.3 if n == 0 else 0.5
            want = measure_sink(smollm2, probe, epsilon=eps, batch_size=2, progress=False)["sink_k"]["1"]
            assert explorer_payload.sink_1(p, s["inputs"], s["bos"], eps) == want
        # maps: the model's attention of the first 3 samples, within 1/255 (uint8), nothing above the diagonal
        tr = smollm2.trace(probe.input_ids[:3], with_qkv=False)
        want_maps = torch.stack(tr.attentions, dim=1).numpy()
        assert got["maps"].shape == (3, L, H, T, T)
        assert np.abs(got["maps"] - want_maps).max() <= 1 / 255
        assert not np.triu(got["maps"], 1).any()
        # the dequantized maps give back alpha_1 within the quantization error
        a1 = metrics.alpha(torch.from_numpy(got["maps"]), tr.visible[:, None, None])[..., 0].numpy()
        np.testing.assert_allclose(a1, got["alpha_1"][:3], atol=1 / 255)
        assert got["token_ids"] == probe.input_ids[:3].tolist()
        assert [len(t) for t in got["tokens"]] == [T] * 3
        if s["bos"]:
            assert got["token_ids"][0][0] == smollm2.tokenizer.bos_token_id
    with pytest.raises(ValueError, match="no setting"):
        explorer_payload.decode(p, "random", False)


URL_PATTERNS = [r"(?i)\b(?:https?|ftp|wss?|file):", r"(?i)\b(?:src|href|srcset|action|poster)\s*=",
                r"(?i)url\s*\(", r"(?i)@import", r"(?i)\bfetch\s*\(", r"XMLHttpRequest", r"WebSocket",
                r"sendBeacon", r"\bimport\s*\(", r"new\s+Image\b", r"(?i)<link\b", r"(?i)<iframe\b",
                r"(?i)<img\b", r"(?i)@font-face"]


def test_html_is_deterministic_and_self_contained(smol_payload, gemma_payload):
    a = explorer.render([smol_payload, gemma_payload])
    b = explorer.render(json.loads(json.dumps([smol_payload, gemma_payload])))
    assert a._repr_html_() == b._repr_html_() and a.models == ["smollm2-135m", "gemma3-270m"]
    other = explorer.render([smol_payload], epsilon=0.5)
    assert other.html != a.html
    html = a.html
    ids = re.findall(r'\bid="([^"]+)"', html)
    assert len(ids) == 1 and ids[0] not in other.html  # one id, derived from the content
    text = re.sub(r'"[A-Za-z0-9+/]{8,}={0,2}"', '""', html)  # base64 blobs: no ':' or '<' in their alphabet
    for pattern in URL_PATTERNS:
        assert not re.search(pattern, text), pattern
    assert not re.search(r"(?i)\b(?:https?|ftp|wss?|file):", html)
    assert html.count("<script") == 1 and html.count("</script>") == 1 and html.rstrip().endswith("</script>")
    script = html[html.index("<script>") + 8:html.index("</script>")]
    assert script.startswith("(function () {") and script.rstrip().endswith("})();")  # an IIFE, no globals
    assert "<!--" not in script
    assert 0 < a.nbytes < 2_000_000 and "MB of HTML" in repr(a)
    page = a.page()
    assert page.startswith("<!DOCTYPE html>") and html in page


# ------------------------------------------------------------------------------------------------ errors
def test_bad_arguments_fail_before_compute(smollm2, smol_payload, monkeypatch):
    def boom(*a, **k):
        raise AssertionError("the model ran before the arguments were checked")

    monkeypatch.setattr(smollm2, "trace", boom)
    cases = [
        (dict(inputs=("natural", "poetry")), r"unknown input kind 'poetry'; valid: natural, random, repeat"),
        (dict(inputs=()), "at least one input kind"),
        (dict(inputs=("natural", "natural")), "twice"),
        (dict(seq_len=1), "seq_len 1 is too short"),
        (dict(n_samples=3, n_map_samples=4), r"n_map_samples \(4\) cannot exceed n_samples \(3\)"),
        (dict(n_samples=0), "n_samples must be >= 1"),
        (dict(n_map_samples=-1), "n_map_samples must be >= 0"),
        (dict(n_samples=2.5), "n_samples must be an int"),
        (dict(bos=("yes",)), "bos must be"),
        (dict(bos=()), "bos must be"),
        (dict(seq_len=100_000), "context length"),
    ]
    for kwargs, match in cases:
        with pytest.raises(ValueError, match=match):
            explorer_payload.collect(smollm2, "smollm2-135m", **kwargs)
        with pytest.raises(ValueError, match=match):  # every model is checked before the first one runs
            explorer.attention_explorer({"smollm2-135m": smollm2}, **kwargs)
    class NoBos:  # the tokenizer of a model without a BOS token
        bos_token_id = None

        def __init__(self, tok):
            self._tok = tok

        def __getattr__(self, key):
            return getattr(self._tok, key)

        def __len__(self):
            return len(self._tok)

        def __call__(self, *a, **k):
            return self._tok(*a, **k)

    monkeypatch.setattr(smollm2, "tokenizer", NoBos(smollm2.tokenizer))
    with pytest.raises(ValueError, match="no BOS token; use bos=\\(False,\\)"):
        explorer_payload.collect(smollm2, "smollm2-135m", bos=(True,))
    with pytest.warns(UserWarning, match="no BOS token"), pytest.raises(AssertionError, match="model ran"):
        explorer_payload.collect(smollm2, "smollm2-135m", bos=(False, True))  # BOS on is skipped; off goes ahead
    monkeypatch.setattr(smollm2, "tokenizer", smollm2.tokenizer._tok)
    with pytest.raises(ValueError, match="name must be a non-empty string"):
        explorer_payload.collect(smollm2, "")
    with pytest.raises(ValueError, match="sinkpaper.lms.LM"):
        explorer_payload.collect(object(), "x")
    with pytest.raises(ValueError, match="at least one model"):
        explorer.attention_explorer({})
    with pytest.raises(ValueError, match="unknown arguments"):
        explorer.attention_explorer({"smollm2-135m": smollm2}, n_sample=3)
    with pytest.raises(ValueError, match="non-empty list of payloads"):
        explorer.render([])
    with pytest.raises(ValueError, match="not an explorer payload"):
        explorer.render([{"model": "x"}])
    with pytest.raises(ValueError, match="same model name"):
        explorer.render([smol_payload, smol_payload])
    for eps in (0, 1, 1.5, float("nan")):
        with pytest.raises(ValueError, match="epsilon"):
            explorer.render([smol_payload], epsilon=eps)
    broken = json.loads(json.dumps(smol_payload))
    broken["settings"][0]["alpha_1"]["shape"] = [1, 2, 3]
    with pytest.raises(ValueError, match="alpha_1"):
        explorer.render([broken])


def test_attention_explorer_end_to_end(smollm2):
    e = explorer.attention_explorer({"smol": smollm2}, inputs=("repeat",), bos=(True,), n_samples=2,
                                    n_map_samples=0, seq_len=8, epsilon=0.4, title="tiny <explorer>")
    assert e.models == ["smol"] and "tiny &lt;explorer&gt;" in e.html and 'value="0.40"' in e.html


# ------------------------------------------------------------------------------------------------ browser
def _browser():
    if not Path(CHROMIUM).exists() and shutil.which("chromium") is None:
        pytest.skip(f"no Chromium at {CHROMIUM} (Debian package 'chromium'); the browser test needs it")
    pytest.importorskip("playwright.sync_api", reason="playwright (pip install playwright) is not installed; "
                                                      "it drives the system Chromium, no browser download")
    return Path(CHROMIUM) if Path(CHROMIUM).exists() else Path(shutil.which("chromium"))


def test_explorer_in_headless_chromium(tmp_path, smol_payload, gemma_payload):
    chromium = _browser()
    from playwright.sync_api import sync_playwright

    both = explorer.render([smol_payload, gemma_payload])
    single = explorer.render([gemma_payload], epsilon=0.5, title="second explorer")
    page_file = tmp_path / "explorer.html"  # the same snippet twice and another one: no clashes
    page_file.write_text("<!DOCTYPE html><html><head><meta charset='utf-8'><title>t</title></head><body>\n"
                         f"<p>first</p>{both.html}<p>second copy</p>{both.html}<p>third</p>{single.html}"
                         "</body></html>", encoding="utf-8")

    requests, blocked, errors = [], [], []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(chromium), headless=True, args=[
            "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--no-first-run", "--disable-sync"])
        try:
            page = browser.new_page(viewport={"width": 1000, "height": 900})
            page.on("request", lambda r: requests.append(r.url))
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))

            def route(r):
                if r.request.url.startswith("file:"):
                    r.continue_()
                else:
                    blocked.append(r.request.url)
                    r.abort()

            page.route("**/*", route)
            page.goto(page_file.as_uri())
            page.wait_for_function("document.querySelectorAll('[data-spx-ready=\"1\"]').length === 3")
            page.wait_for_function("Array.from(document.querySelectorAll('.spx')).every(r => r.dataset.mapKey)")
            roots = page.locator("div.spx")
            assert roots.count() == 3

            def readout(i):
                el = roots.nth(i).locator('[data-r="readout"]')
                return float(el.get_attribute("data-sink")), el.text_content()

            def shows(text, value):  # the percentage as displayed, to 2 decimals
                m = re.search(r"= ([0-9.]+)%", text)
                return m is not None and abs(float(m[1]) - value) < 0.0051

            # initial readouts: model 1, natural, BOS off, at each explorer's starting epsilon
            for i, (p, eps) in enumerate([(smol_payload, 0.3), (smol_payload, 0.3), (gemma_payload, 0.5)]):
                got, text = readout(i)
                want = explorer_payload.sink_1(p, "natural", False, eps)
                assert abs(got - want) < 1e-9 and shows(text, want), (i, got, want, text)
                assert f"over {p['n_samples']} samples" in text
                assert roots.nth(i).locator('[data-r="prov"]').text_content().startswith("Provenance: model ")
            assert roots.nth(2).locator('[data-r="model"] option').count() == 1

            # move the second copy's slider with the keyboard to an epsilon where Sink_1 differs from 0.3
            base = explorer_payload.sink_1(smol_payload, "natural", False, 0.3)
            target = next(e for e in (0.5, 0.7, 0.9, 0.2, 0.1, 0.05)
                          if explorer_payload.sink_1(smol_payload, "natural", False, e) != base)
            slider = roots.nth(1).locator('[data-r="eps"]')
            slider.focus()
            steps = round((target - 0.3) * 100)
            for _ in range(abs(steps)):
                page.keyboard.press("ArrowRight" if steps > 0 else "ArrowLeft")
            assert float(slider.input_value()) == pytest.approx(target)
            got, text = readout(1)
            want = explorer_payload.sink_1(smol_payload, "natural", False, target)
            assert abs(got - want) < 1e-9 and shows(text, want) and want != base, (got, want, text)
            assert readout(0)[0] == pytest.approx(base)  # the first copy did not move
            # the other settings follow the same slider: repeat, BOS on
            roots.nth(1).locator('[data-r="input"]').select_option("repeat")
            roots.nth(1).locator('[data-r="bos"]').select_option("1")
            assert readout(1)[0] == pytest.approx(explorer_payload.sink_1(smol_payload, "repeat", True, target), abs=1e-9)

            # layer and head change the drawn map
            r0 = roots.nth(0)
            canvas = r0.locator('canvas[data-r="map"]')

            def redraw(action):
                before_key, before = r0.get_attribute("data-map-key"), canvas.evaluate("c => c.toDataURL()")
                action()
                page.wait_for_function("([r, k]) => r.dataset.mapKey !== k", arg=[r0.element_handle(), before_key])
                return before, canvas.evaluate("c => c.toDataURL()")

            layer = int(r0.locator('[data-r="layer"]').input_value())
            before, after = redraw(lambda: r0.locator('[data-r="layer"]').select_option(str((layer + 7) % 30)))
            assert before != after
            head = int(r0.locator('[data-r="head"]').input_value())
            before, after = redraw(lambda: r0.locator('[data-r="head"]').select_option(str((head + 4) % 9)))
            assert before != after

            # clicking a grid cell selects its layer and head (geometry: 26 px left, 16 px top margins)
            grid = r0.locator('canvas[data-r="grid"]')
            cell = min(24, 440 // 30, 240 // 9)
            grid.click(position={"x": 26 + 2.5 * cell, "y": 16 + 4.5 * cell})
            assert r0.locator('[data-r="layer"]').input_value() == "4"
            assert r0.locator('[data-r="head"]').input_value() == "2"
            page.wait_for_function("r => r.dataset.mapKey.endsWith(',4,2,0')", arg=r0.element_handle())

            # hovering the map shows query/key tokens and the embedded value
            dec = explorer_payload.decode(smol_payload, "natural", False)
            box = canvas.bounding_box()
            size = 384 // 16
            canvas.hover(position={"x": 0.5 * size, "y": 9.5 * size})  # query 10, key 1
            hover = r0.locator('[data-r="maphover"]').text_content()
            assert hover.startswith("query 10 ") and " key 1 " in hover and box["width"] == 16 * size
            assert hover.endswith(f"{dec['maps'][0, 4, 2, 9, 0]:.3f}")
            assert json.dumps(dec["tokens"][0][9], ensure_ascii=False) in hover

            # samples beyond the embedded maps say so; the second model redraws the grid with its own shape
            r0.locator('[data-r="sample"]').select_option("3")
            assert "first 3 samples only" in r0.locator('[data-r="mapcap"]').text_content()
            width = grid.evaluate("c => c.width")
            r0.locator('[data-r="model"]').select_option("1")
            page.wait_for_function("r => r.dataset.mapKey.startsWith('1,')", arg=r0.element_handle())
            assert grid.evaluate("c => c.width") != width
            assert readout(0)[0] == pytest.approx(explorer_payload.sink_1(gemma_payload, "natural", False, 0.3), abs=1e-9)
            assert r0.locator('[data-r="sample"]').input_value() == "2"  # clamped to gemma's 3 samples
        finally:
            browser.close()
    assert not blocked, blocked
    assert all(u.startswith("file:") for u in requests), requests
    assert not errors, errors
