"""Per-source extractors of the offline corpus: each turns an archive's members (path, bytes) into documents
(id, plain text): a Bible chapter, a literary work, a Wikipedia lead section, dictionary pages, WordNet
glosses, a fortune, a man page, an HTML or POD page, a Vim help file. `chain` routes the members of one
archive to several extractors by path.
"""
from __future__ import annotations

import json
import re
from typing import Callable, Iterable, Iterator

from .archives import Member
from .markup import html_to_text, info_to_text, n_words, normalize_text, paragraphs, pod_to_text, roff_to_text, \
    unwrap, vimhelp_to_text

Doc = tuple[str, str]  # (document id, text)


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


def extract_vimhelp(members: Iterable[Member]) -> Iterator[Doc]:
    for path, blob in members:
        text = vimhelp_to_text(_decode(blob))
        if n_words(text) >= 30:
            yield path, text


def chain(*extractors: tuple[Callable[[str], bool], Callable[[Iterable[Member]], Iterator[Doc]]]):
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


__all__ = ["Doc", "extract_html", "extract_roff", "extract_pod", "extract_info", "extract_kjv", "extract_plain_works",
           "extract_wiki_summaries", "extract_dictd", "extract_gcide", "extract_wordnet", "extract_fortunes",
           "extract_jargon", "extract_vimhelp", "chain"]
