"""Static files that let the built book render altair charts and saved ipywidgets with no network access.

* ``vega-bundle.js``: vl-convert's bundle of vega + vega-lite + vega-embed, wrapped in an IIFE so its
  top-level names do not collide with Sphinx's own scripts (e.g. ``_`` in doctools.js). It defines the globals
  ``window.vegaEmbed``, ``window.vega`` and ``window.vegaLite`` (the last two patched in, see
  :func:`_expose_namespaces`).
* ``vega-debug.js``: defines ``VEGA_DEBUG`` with the versions altair's HTML output asks for, so altair's stock
  renderer takes the globals above instead of loading scripts from a CDN.
* ``widgets/embed.js`` (+ its FontAwesome ``.woff2`` files and license notice): the standalone bundle of the npm
  package ``@jupyter-widgets/html-manager`` (:data:`HTML_MANAGER_VERSION`, the 1.0.x line that matches
  ipywidgets 8). It renders the widget state papermill saves in each notebook (slider + ``Stack`` views wired
  with ``jslink``, see :mod:`.widgets`). No Python package ships it, so :func:`widgets_embed_files` fetches it
  once with ``npm pack`` (the registry's ordinary client), checks the tarball against a pinned integrity hash
  and ``embed.js`` against a pinned sha256, and keeps the verified files under
  ``sinkpaper.files.cache_dir()/jupyter-widgets/``; later builds reuse them without npm.

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
REQUIRE_WIDGETS_ENV = "SINKPAPER_REQUIRE_WIDGETS"


class WidgetsAssetWarning(UserWarning):
    """embed.js could not be obtained: the book builds, but its widgets stay blank."""


class WidgetsAssetError(RuntimeError):
    """embed.js could not be obtained (an error only in strict mode, see :func:`write_static_assets`)."""


class WidgetsIntegrityError(WidgetsAssetError):
    """What the registry served does not match the pinned hashes: always an error, the bytes are not used."""


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
        "// Generated by sinkpaper.book.assets: tells altair's HTML output that vega-bundle.js already\n"
        "// provides these versions, so it does not load them from a CDN.\n"
        f"var VEGA_DEBUG = {json.dumps(vega_versions(), sort_keys=True)};\n"
    )


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _integrity(data: bytes) -> str:
    """npm's Subresource-Integrity style string for a tarball."""
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode("ascii")


def widgets_cache_dir() -> Path:
    from sinkpaper.files import cache_dir

    return cache_dir() / "jupyter-widgets" / f"html-manager-{HTML_MANAGER_VERSION}"


def _cached_files(cache: Path) -> list[Path] | None:
    """The verified files in ``cache``, or None when the cache is missing or does not verify."""
    embed = cache / WIDGETS_EMBED_NAME
    try:
        if _sha256(embed.read_bytes()) != EMBED_JS_SHA256:
            return None
    except OSError:
        return None
    return [embed] + sorted(p for p in cache.iterdir() if p.name == _EMBED_LICENSE or _FONT_RE.match(p.name))


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


def _extract_verified(tarball: Path, cache: Path) -> list[Path]:
    """Check the tarball's integrity, take embed.js (checked too), its license notice and fonts into ``cache``."""
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
                    name in (WIDGETS_EMBED_NAME, _EMBED_LICENSE) or _FONT_RE.match(name)):
                files[name] = tar.extractfile(member).read()
    if _sha256(files.get(WIDGETS_EMBED_NAME, b"")) != EMBED_JS_SHA256:
        raise WidgetsIntegrityError(f"{tarball.name}: dist/{WIDGETS_EMBED_NAME} is missing or its sha256 is not "
                                    f"the pinned {EMBED_JS_SHA256}")
    cache.mkdir(parents=True, exist_ok=True)
    for name, blob in files.items():  # embed.js last: its presence marks a complete cache
        if name != WIDGETS_EMBED_NAME:
            _write_bytes_atomic(cache / name, blob)
    _write_bytes_atomic(cache / WIDGETS_EMBED_NAME, files[WIDGETS_EMBED_NAME])
    return _cached_files(cache) or []


def _write_bytes_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def widgets_embed_files() -> list[Path]:
    """The verified html-manager files (``embed.js`` first), from the cache or fetched once with npm.

    Raises :class:`WidgetsAssetError` when they cannot be had; the message says what to install.
    """
    cache = widgets_cache_dir()
    cached = _cached_files(cache)
    if cached:
        return cached
    npm = shutil.which("npm")
    spec = f"{HTML_MANAGER_PACKAGE}@{HTML_MANAGER_VERSION}"
    if npm is None:
        raise WidgetsAssetError(
            f"npm was not found, so {spec} (the widgets' embed.js) could not be fetched. Install Node.js with "
            f"npm (Debian/Ubuntu: `apt-get install npm`) and rerun `python -m sinkpaper.book run`; it is fetched "
            f"once into {cache}.")
    with tempfile.TemporaryDirectory(prefix="sinkpaper-npm-") as tmp:
        try:
            tarball = _npm_pack(npm, Path(tmp))
        except OSError as exc:
            raise WidgetsAssetError(f"{exc}\nCheck that npm can reach its registry (`npm view {spec} dist`), "
                                    f"then rerun `python -m sinkpaper.book run`.") from None
        return _extract_verified(tarball, cache)


def _require_widgets_default() -> bool:
    return os.environ.get(REQUIRE_WIDGETS_ENV, "").strip().lower() in ("1", "true", "yes")


def write_static_assets(static_dir: str | os.PathLike, require_widgets: bool | None = None) -> list[Path]:
    """Write the offline assets into ``static_dir`` (created if needed); return the paths written.

    The chart files always come from installed Python packages. The widgets' ``embed.js`` needs npm the first
    time (see :func:`widgets_embed_files`). When it cannot be had this is a **warning** by default
    (:class:`WidgetsAssetWarning`): the book still builds and everything in it that is text, a table or a chart
    renders; only the widgets (sliders switching between pre-rendered views) stay blank. npm is not a Python
    package, ``make book`` promises to work with the Python registries alone, and a missing viewer for an
    optional navigation aid should not cost the reader the whole book. Publishing must not ship inert widgets,
    so ``require_widgets=True`` (or ``SINKPAPER_REQUIRE_WIDGETS=1`` in the environment, as the Pages workflow
    sets it) turns that into a :class:`WidgetsAssetError`. Bytes that fail the pinned hashes are always an
    error, never used.
    """
    static = Path(static_dir)
    static.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in ((DEBUG_NAME, vega_debug_js()), (BUNDLE_NAME, vega_bundle_js())):
        _write_if_changed(static / name, text)
        written.append(static / name)
    if require_widgets is None:
        require_widgets = _require_widgets_default()
    try:
        sources = widgets_embed_files()
    except WidgetsAssetError as exc:
        if require_widgets or isinstance(exc, WidgetsIntegrityError):
            raise
        warnings.warn(f"{exc}\nThe book builds without it, but its widgets will be blank.", WidgetsAssetWarning,
                      stacklevel=2)
        return written
    dest = static / WIDGETS_SUBDIR
    dest.mkdir(exist_ok=True)
    for src in sources:
        target = dest / src.name
        data = src.read_bytes()
        if not (target.exists() and target.read_bytes() == data):
            _write_bytes_atomic(target, data)
        written.append(target)
    return written
