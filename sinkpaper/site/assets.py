"""Static files that let the built book render altair charts and saved ipywidgets with no network access.

* ``vega-bundle.js``: vl-convert's bundle of vega + vega-lite + vega-embed, wrapped in an IIFE so its
  top-level names do not collide with Sphinx's own scripts (e.g. ``_`` in doctools.js). It defines the globals
  ``window.vegaEmbed``, ``window.vega`` and ``window.vegaLite`` (the last two patched in, see
  :func:`_expose_namespaces`).
* ``vega-debug.js``: defines ``VEGA_DEBUG`` with the versions altair's HTML output asks for, so altair's stock
  renderer takes the globals above instead of loading scripts from a CDN.
* ``widgets/embed.js`` (+ its FontAwesome ``.woff2`` files, licence notices and licences): the standalone
  bundle of the npm package ``@jupyter-widgets/html-manager`` (:data:`HTML_MANAGER_VERSION`, the 1.0.x line that
  matches ipywidgets 8). It renders the widget state papermill saves in each notebook (slider + ``Stack`` views
  wired with ``jslink``, see :mod:`.widgets`). No Python package ships it, so the verified files are committed
  in ``sinkpaper/site/vendor/html-manager-<version>/`` (package data: a ``pip install`` has them too) and every
  build checks each against its pinned sha256 (:data:`VENDORED_SHA256`) before copying it; nothing is fetched at
  build time. They came from the registry's tarball (checked against npm's integrity string
  :data:`HTML_MANAGER_INTEGRITY`) through :func:`refresh_vendored` (``python -m sinkpaper.site.assets
  refresh-vendored``, needs npm; only for a version bump). Licences: html-manager is BSD-3-Clause (Project
  Jupyter; ``LICENSE``), the libraries it bundles are MIT (``embed.js.LICENSE.txt``), the Font Awesome Free
  fonts SIL OFL 1.1 (``LICENSE-fonts-OFL-1.1.txt``); all of them are copied next to ``embed.js`` in the site.

What ``embed.js`` loads at view time (read from its sources and checked in headless Chromium): it renders the
core widget modules (``@jupyter-widgets/base``, ``controls``, ``output``), which it bundles, and nothing else:
the standalone build's ``HTMLManager`` has no module loader, so a third-party widget fails with "Could not load
module" instead of being fetched from a CDN (only ``embed-amd.js``, which we do not use, fetches from jsDelivr).
Its one other request is for FontAwesome fonts (icons on buttons), resolved relative to ``embed.js`` itself;
we copy the ``.woff2`` files next to it, so that stays local too. No configuration global is needed. myst-nb
adds no CDN scripts because ``_config.yml`` sets ``nb_ipywidgets_js: {}`` and lists ``widgets/embed.js`` in
``html_js_files``.
"""
from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import warnings
from pathlib import Path

BUNDLE_NAME = "vega-bundle.js"
DEBUG_NAME = "vega-debug.js"
WIDGETS_SUBDIR = "widgets"                 # book/_static/widgets/: embed.js and the files it loads
WIDGETS_EMBED_NAME = "embed.js"
WIDGETS_EMBED_PATH = f"{WIDGETS_SUBDIR}/{WIDGETS_EMBED_NAME}"  # as listed in _config.yml's html_js_files

# The html-manager release whose standalone bundle renders ipywidgets 8 state. 1.0.15 bundles
# @jupyter-widgets/base ^6.0.12 and controls ^5.0.13, the same ranges as the JupyterLab manager
# (jupyterlab_widgets 3.0.x) that ships with ipywidgets 8.1.
HTML_MANAGER_PACKAGE = "@jupyter-widgets/html-manager"
HTML_MANAGER_VERSION = "1.0.15"
# npm's integrity string for that release's tarball (registry field dist.integrity) ...
HTML_MANAGER_INTEGRITY = (
    "sha512-5thBIV6ymNgmPVOHvzx+gGy8ZSKmSazhtGw4/c4xJDVzRhG9PTeQsRjF3FUTopvFi//SABeNz1yp47bCrJ3CQA=="
)
# ... and the sha256 of package/dist/embed.js inside it.
EMBED_JS_SHA256 = "8f6d2d3f856d8595d1841dec3019d99bbe74d331f2a5178c2a33bfec729e3d6a"
_EMBED_LICENSE = "embed.js.LICENSE.txt"
_FONT_RE = re.compile(r"^[0-9a-f]{20}\.woff2$")  # webpack-hashed FontAwesome fonts next to embed.js
VENDOR_DIR = Path(__file__).resolve().parent / "vendor" / f"html-manager-{HTML_MANAGER_VERSION}"
# Every file of VENDOR_DIR with its sha256: the tarball's dist/ files we use, then the two licence texts we add
# (html-manager's BSD-3-Clause text, from ipywidgets; the fonts' SIL OFL 1.1).
VENDORED_SHA256 = {
    WIDGETS_EMBED_NAME: EMBED_JS_SHA256,
    _EMBED_LICENSE: "aed2008aae8123157c4ae564883166b1af7bab928d504a1fa7de1f67aec11268",
    "1551f4f60c37af51121f.woff2": "9834b82ad26e2a37583d22676a12dd2eb0fe7c80356a2114d0db1aa8b3899537",
    "7a3337626410ca2f4071.woff2": "e42a88444448ac3d60549cc7c1ff2c8a9cac721034c073d80a14a44e79730cca",
    "d878b0a6a1144760244f.woff2": "8ea8791754915a898a3100e63e32978a6d1763be6df8e73a39d3a90d691cdeef",
    "LICENSE": "dbd4a4269fec62a911e15f806cc4af346fad58066d54988b7eb4e08439714570",
    "LICENSE-fonts-OFL-1.1.txt": "a66928bb0b324dedf436523f6366ad42c77de735630c78744187798dd80971e4",
}
_FROM_TARBALL = (WIDGETS_EMBED_NAME, _EMBED_LICENSE)  # plus the fonts (_FONT_RE)


class WidgetsIntegrityError(RuntimeError):
    """A widgets file does not match its pinned hash (or is missing): never used, always an error."""


def _write_if_changed(path: Path, text: str) -> None:
    """Atomic write that leaves the file (and its mtime) alone when the content is unchanged."""
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def vega_versions() -> dict[str, str]:
    """The versions altair's HTML template compares against ``VEGA_DEBUG`` (keys as in its template)."""
    import altair as alt

    return {
        "vega_version": alt.VEGA_VERSION,
        "vegalite_version": alt.VEGALITE_VERSION,
        "vegaembed_version": alt.VEGAEMBED_VERSION,
    }


def vega_bundle_js() -> str:
    import vl_convert

    try:  # pin the bundle to the vega-lite version altair emits specs for
        import altair as alt

        bundle = vl_convert.javascript_bundle(vl_version=_vl_convert_version(alt.VEGALITE_VERSION))
    except Exception:
        bundle = vl_convert.javascript_bundle()
    if "window.vegaEmbed" not in bundle:
        raise RuntimeError("vl_convert.javascript_bundle() no longer assigns window.vegaEmbed; check vl-convert")
    return "(function(){\n" + bundle + "\n" + _expose_namespaces(bundle) + "})();\n"


def _namespaces(bundle: str) -> dict[str, list[str]]:
    """Bundled ``import * as X`` namespaces: ``const modN=function(){return{key:value,...}}();`` -> keys."""
    out = {}
    for m in re.finditer(r"const (mod\d+)=function\(\)\{return\{(.*?)\};\}\(\);", bundle):
        out[m.group(1)] = re.findall(r"(?:^|,)([A-Za-z_$][\w$]*):", m.group(2))
    return out


def _expose_namespaces(bundle: str) -> str:
    """JS run at the end of the IIFE that sets ``window.vega`` / ``window.vegaLite``.

    vl-convert's default snippet assigns them from the packages' *default* exports, which vega 6 and
    vega-lite 6 do not have, so both end up ``null`` (only ``window.vegaEmbed`` works; that is all altair's
    HTML needs). We find the bundled namespace objects by their keys and assign those instead.
    """
    wanted = {"vega": {"View", "parse", "version", "Dataflow"}, "vegaLite": {"compile", "normalize", "version"}}
    spaces = _namespaces(bundle)
    lines = []
    for glob, keys in wanted.items():
        hits = [name for name, ks in spaces.items() if keys <= set(ks)]
        if len(hits) == 1:
            lines.append(f"if(!window.{glob})window.{glob}={hits[0]};")
        else:
            warnings.warn(f"vega-bundle.js: could not locate the {glob} namespace ({len(hits)} candidates); "
                          f"window.{glob} stays as vl-convert sets it", stacklevel=3)
    return "".join(lines) + "\n"


def _vl_convert_version(vegalite_version: str) -> str:
    major, minor = vegalite_version.split(".")[:2]
    return f"{major}.{minor}"


def vega_debug_js() -> str:
    return (
        "// Generated by sinkpaper.site.assets: tells altair's HTML output that vega-bundle.js already\n"
        "// provides these versions, so it does not load them from a CDN.\n"
        f"var VEGA_DEBUG = {json.dumps(vega_versions(), sort_keys=True)};\n"
    )


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _integrity(data: bytes) -> str:
    """npm's Subresource-Integrity style string for a tarball."""
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode("ascii")


def widgets_embed_files(directory: Path | None = None) -> list[Path]:
    """The vendored html-manager files (``embed.js`` first), each checked against :data:`VENDORED_SHA256`.

    Raises :class:`WidgetsIntegrityError` naming the file when one is missing or altered.
    """
    d = VENDOR_DIR if directory is None else Path(directory)
    for name, digest in VENDORED_SHA256.items():
        try:
            got = _sha256((d / name).read_bytes())
        except OSError as exc:
            raise WidgetsIntegrityError(f"{d / name} is missing ({exc.strerror}); reinstall sinkpaper or restore "
                                        f"it from git") from None
        if got != digest:
            raise WidgetsIntegrityError(f"{d / name}: sha256 {got} differs from the pinned {digest}; not using it "
                                        "(restore the file from git)")
    return [d / WIDGETS_EMBED_NAME] + sorted(d / n for n in VENDORED_SHA256 if n != WIDGETS_EMBED_NAME)


def _npm_pack(npm: str, workdir: Path) -> Path:
    spec = f"{HTML_MANAGER_PACKAGE}@{HTML_MANAGER_VERSION}"
    try:
        proc = subprocess.run([npm, "pack", spec, "--silent"], cwd=workdir, capture_output=True, text=True,
                              timeout=600, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise OSError(f"`npm pack {spec}` could not run: {exc}") from exc
    tarballs = sorted(workdir.glob("*.tgz"))
    if proc.returncode != 0 or len(tarballs) != 1:
        tail = (proc.stderr or proc.stdout or "").strip()[-1500:]
        raise OSError(f"`npm pack {spec}` failed (exit {proc.returncode}): {tail}")
    return tarballs[0]


def _extract_verified(tarball: Path, dest: Path) -> list[Path]:
    """Check the tarball's integrity, then write embed.js (checked too), its licence notice and fonts to ``dest``."""
    data = tarball.read_bytes()
    got = _integrity(data)
    if got != HTML_MANAGER_INTEGRITY:
        raise WidgetsIntegrityError(
            f"{tarball.name}: integrity {got} differs from the pinned {HTML_MANAGER_INTEGRITY}; the registry "
            f"served other bytes for {HTML_MANAGER_PACKAGE}@{HTML_MANAGER_VERSION}. Not using it.")
    files: dict[str, bytes] = {}
    with tarfile.open(tarball, "r:gz") as tar:
        for member in tar.getmembers():  # read by name; nothing is extracted to a path the archive chooses
            name = member.name.removeprefix("package/dist/")
            if member.isfile() and member.name.startswith("package/dist/") and "/" not in name and (
                    name in _FROM_TARBALL or _FONT_RE.match(name)):
                files[name] = tar.extractfile(member).read()
    if _sha256(files.get(WIDGETS_EMBED_NAME, b"")) != EMBED_JS_SHA256:
        raise WidgetsIntegrityError(f"{tarball.name}: dist/{WIDGETS_EMBED_NAME} is missing or its sha256 is not "
                                    f"the pinned {EMBED_JS_SHA256}")
    dest.mkdir(parents=True, exist_ok=True)
    for name, blob in sorted(files.items()):
        _write_bytes_atomic(dest / name, blob)
    return [dest / n for n in sorted(files)]


def _write_bytes_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def refresh_vendored(dest: Path | None = None) -> list[Path]:
    """Maintainers only (a version bump): fetch the pinned release with ``npm pack`` and write its verified
    ``dist/`` files into ``dest`` (default :data:`VENDOR_DIR`). Update :data:`VENDORED_SHA256` afterwards."""
    npm = shutil.which("npm")
    if npm is None:
        raise OSError("npm was not found; refreshing the vendored embed.js needs Node.js with npm")
    with tempfile.TemporaryDirectory(prefix="sinkpaper-npm-") as tmp:
        return _extract_verified(_npm_pack(npm, Path(tmp)), VENDOR_DIR if dest is None else Path(dest))


def write_static_assets(static_dir: str | os.PathLike) -> list[Path]:
    """Write the offline assets into ``static_dir`` (created if needed); return the paths written.

    The chart files come from installed Python packages; the widgets' ``embed.js`` and its companions from the
    vendored, hash-checked copy (:func:`widgets_embed_files`; an altered file is an error, never used).
    """
    static = Path(static_dir)
    static.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in ((DEBUG_NAME, vega_debug_js()), (BUNDLE_NAME, vega_bundle_js())):
        _write_if_changed(static / name, text)
        written.append(static / name)
    dest = static / WIDGETS_SUBDIR
    dest.mkdir(exist_ok=True)
    for src in widgets_embed_files():
        target = dest / src.name
        data = src.read_bytes()
        if not (target.exists() and target.read_bytes() == data):
            _write_bytes_atomic(target, data)
        written.append(target)
    return written


if __name__ == "__main__":
    import sys

    if sys.argv[1:] != ["refresh-vendored"]:
        print("usage: python -m sinkpaper.site.assets refresh-vendored", file=sys.stderr)
        sys.exit(2)
    for path in refresh_vendored():
        print(f"{_sha256(path.read_bytes())}  {path}")
