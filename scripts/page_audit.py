"""How the built book reads, page by page, the way a reader meets it: a table of words, screens (at 1280 x 900 and at
390 x 800), charts and charts that carry the paper's value, and a screenshot of each page's first screen at both
widths.

    .venv/bin/python scripts/page_audit.py _build/html runs/audit      # after `make book`
    .venv/bin/python scripts/page_audit.py /tmp/x/built_book0/_build/html runs/audit --pages book/00_scorecard

It drives Debian's Chromium through Playwright, as tests/test_site.py does; the counts of charts come from the specs
each page embeds (sinkpaper.book.figures.embedded_specs), the same reading the tests apply.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from sinkpaper.book import figures
from sinkpaper.site import pages, toc

REPO = Path(__file__).resolve().parents[1]
WIDE = pages.SCREEN
PHONE = {"width": 390, "height": 800}
TEXT_JS, HEIGHT_JS = pages.MAIN_TEXT_JS, pages.PAGE_HEIGHT_JS
# the blocks a page's height is made of: every child of a section that is not itself a section, with its height
BLOCKS_JS = """() => { const m = document.querySelector('main article') || document.querySelector('main');
  const out = []; const walk = (el) => { for (const c of el.children) {
    if (c.tagName === 'SECTION') { walk(c); continue; }
    const h = c.getBoundingClientRect().height; if (h < 1) continue;
    out.push({px: Math.round(h), what: (c.className || c.tagName).toString().slice(0, 40),
              text: c.innerText.replace(/\\s+/g, ' ').slice(0, 70)}); } };
  walk(m); return out; }"""


def audit(html_dir: Path, out: Path, pages: list[str], blocks: int = 0) -> list[dict]:
    from playwright.sync_api import sync_playwright

    out.mkdir(parents=True, exist_ok=True)
    rows = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=os.environ.get("SINKPAPER_CHROMIUM", "/usr/bin/chromium"),
                                    args=["--no-sandbox", "--disable-gpu"])
        for doc in pages:
            html = html_dir / f"{doc}.html"
            if not html.exists():
                rows.append({"page": doc, "missing": True})
                continue
            specs = figures.embedded_specs(html.read_text())
            row = {"page": doc, "charts": len(specs), "paper_charts": sum(map(figures.draws_the_paper, specs)),
                   "joined_seed_lines": sum(bool(figures.joined_lines(s)) for s in specs)}
            for name, vp in (("wide", WIDE), ("phone", PHONE)):
                page = browser.new_page(viewport=vp)
                page.goto(html.as_uri(), wait_until="load", timeout=60_000)
                page.wait_for_timeout(2500)  # charts draw after load
                if name == "wide":
                    row["words"] = len(page.evaluate(TEXT_JS).split())
                    if blocks:
                        row["blocks"] = sorted(page.evaluate(BLOCKS_JS), key=lambda b: -b["px"])[:blocks]
                row[f"screens_{name}"] = round(page.evaluate(HEIGHT_JS) / vp["height"], 1)
                page.screenshot(path=str(out / f"{doc.replace('/', '_')}-{name}.png"))
                page.close()
            rows.append(row)
        browser.close()
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("html_dir", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--pages", nargs="+", default=None, help="docnames (default: every page of _toc.yml)")
    ap.add_argument("--blocks", type=int, default=0, metavar="N",
                    help="also list each page's N tallest blocks at 1280 px: where its screens go")
    a = ap.parse_args(argv)
    pages = a.pages or toc.docnames(REPO / "_toc.yml")
    rows = audit(a.html_dir.resolve(), a.out, pages, a.blocks)   # a file URI needs an absolute path
    (a.out / "audit.json").write_text(json.dumps(rows, indent=1))
    print(f"{'page':28} {'words':>6} {'scr1280':>7} {'scr390':>6} {'charts':>6} {'paper':>5}")
    for r in rows:
        if r.get("missing"):
            print(f"{r['page']:28} (not built)")
            continue
        print(f"{r['page']:28} {r['words']:6d} {r['screens_wide']:7.1f} {r['screens_phone']:6.1f} {r['charts']:6d} "
              f"{r['paper_charts']:5d}")
        for b in r.get("blocks", []):
            print(f"    {b['px']:6d} px  {b['what'][:24]:24} {b['text']}")
    built = [r for r in rows if not r.get("missing")]
    n, k = sum(r["charts"] for r in built), sum(r["paper_charts"] for r in built)
    print(f"{'all':28} {sum(r['words'] for r in built):6d} {sum(r['screens_wide'] for r in built):7.1f} "
          f"{sum(r['screens_phone'] for r in built):6.1f} {n:6d} {k:5d}  ({100 * k / max(n, 1):.0f} % of charts draw "
          f"the paper)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
