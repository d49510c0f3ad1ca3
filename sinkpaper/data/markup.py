"""Markup to plain prose, for the offline corpus: HTML (and Mallard/DocBook XML), man pages (roff), Perl POD, GNU
info and Vim help, each reduced to its paragraphs of prose (code, navigation and page chrome dropped), and the
text normalization every extractor applies.

Used by the per-source extractors (`sinkpaper.data.extractors`); dedup keys live with the dedup
(`sinkpaper.data.build`).
"""
from __future__ import annotations

import html
import re
import unicodedata
from html.parser import HTMLParser


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


__all__ = ["normalize_text", "unwrap", "paragraphs", "n_words", "html_to_text", "roff_to_text", "pod_to_text",
           "info_to_text", "vimhelp_to_text"]
