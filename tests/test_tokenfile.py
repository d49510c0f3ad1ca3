"""Token files (sinkpaper.data.tokenfile) and the streaming path to them: the flat layout against plain numpy
and hashlib, atomic writes, damaged files, the committed xz sample through its flat cache copy, the memory of
a streamed build at two corpus sizes (peak RSS of a child process against a baseline), and two gloo ranks that
build the cache once, read disjoint shares of each batch and resume bit-exactly."""
from __future__ import annotations

import hashlib
import importlib.util
import json
import lzma
import os
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sinkpaper.data import tokenfile as TF
from sinkpaper.data.packing import Packing

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "data" / "sample" / "tokens.u16.xz"   # the path the cpu profile uses


def _scale():
    spec = importlib.util.spec_from_file_location("data_scale", REPO / "scripts" / "data_scale.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture()
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SINKPAPER_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


# ------------------------------------------------------------------------------------------------ flat layout
@pytest.mark.parametrize("vocab,dtype", [(300, "uint16"), (65536, "uint16"), (70_000, "uint32")])
def test_flat_file_round_trips_chunk_by_chunk(tmp_path, vocab, dtype):
    rng = np.random.default_rng(0)
    train = [rng.integers(0, vocab, n) for n in (1, 1000, 0, 4097)]
    val = [rng.integers(0, vocab, 333)]
    path = tmp_path / "t.tok"
    with TF.TokenWriter(path, vocab_size=vocab, eos_id=0, bos_id=1, tokenizer_json='{"tok": 1}',
                        meta={"what": "test"}) as w:
        for c in train:
            w.write("train", c)
        for c in val:
            w.write("val", c)
    tf = TF.open_flat(path, verify=True)
    want_train, want_val = np.concatenate(train), np.concatenate(val)
    assert np.array_equal(tf.split("train"), want_train) and np.array_equal(tf.split("val"), want_val)
    h = tf.header
    assert h["dtype"] == dtype and tf.split("train").dtype == np.dtype(dtype)
    assert h["n_tokens"] == want_train.size + want_val.size and h["splits"] == {"train": [0, 5098], "val": [5098, 333]}
    # the header's sha256 is that of the tokens as little-endian bytes, computed here independently
    le = np.concatenate([want_train, want_val]).astype("<u2" if dtype == "uint16" else "<u4").tobytes()
    assert h["sha256"] == hashlib.sha256(le).hexdigest()
    assert (tf.vocab_size, tf.eos_id, tf.bos_id, tf.meta) == (vocab, 0, 1, {"what": "test"})
    assert tf.tokenizer_json() == '{"tok": 1}' and h["tokenizer_sha256"] == hashlib.sha256(b'{"tok": 1}').hexdigest()
    # the bytes on disk are exactly magic | header | padding | tokens | tokenizer
    raw = path.read_bytes()
    assert raw[:8] == TF.FLAT_MAGIC and json.loads(raw[12:12 + struct.unpack("<I", raw[8:12])[0]]) == h
    assert raw[h["data_offset"]:h["data_offset"] + len(le)] == le and raw.endswith(b'{"tok": 1}')
    assert not tf.split("train").flags.writeable              # a read-only map, not a copy
    assert [p.name for p in tmp_path.iterdir()] == ["t.tok"]   # no temporary file left
    assert TF.read_token_header(path, with_tokenizer=True)["tokenizer"] == '{"tok": 1}'


def test_writer_is_atomic_and_refuses_bad_input(tmp_path):
    path = tmp_path / "t.tok"
    TF.write_tokens(path, {"train": np.arange(10)}, vocab_size=16, eos_id=0)
    before = path.read_bytes()
    with pytest.raises(RuntimeError, match="stream broke"):
        with TF.TokenWriter(path, vocab_size=16, eos_id=0) as w:
            w.write("train", np.arange(5))
            raise RuntimeError("stream broke")
    assert path.read_bytes() == before and [p.name for p in tmp_path.iterdir()] == ["t.tok"]
    with TF.TokenWriter(tmp_path / "u.tok", vocab_size=16, eos_id=0) as w:
        with pytest.raises(ValueError, match=r"token id 16 is outside the vocabulary \[0, 16\)"):
            w.write("train", np.array([3, 16]))
        with pytest.raises(ValueError, match="token id -1"):
            w.write("train", np.array([-1]))
        with pytest.raises(ValueError, match="must be integers"):
            w.write("train", np.array([1.5]))
        w.write("train", np.arange(4))
        w.write("val", np.arange(4))
        with pytest.raises(ValueError, match="split 'train' was already finished"):
            w.write("train", np.arange(4))
    assert TF.open_flat(tmp_path / "u.tok").header["splits"] == {"train": [0, 4], "val": [4, 4]}
    with pytest.raises(ValueError, match="vocab_size must be in"):
        TF.dtype_for(0)


def test_damaged_flat_files_are_refused(tmp_path):
    path = tmp_path / "t.tok"
    TF.write_tokens(path, {"train": np.arange(1000) % 300}, vocab_size=300, eos_id=0)
    raw = bytearray(path.read_bytes())
    (tmp_path / "short.tok").write_bytes(bytes(raw[:-10]))
    with pytest.raises(TF.TokenFileError, match="truncated or corrupted"):
        TF.open_flat(tmp_path / "short.tok")
    raw[TF.HEADER_BYTES + 100] ^= 0xFF                           # one token flipped: same size
    (tmp_path / "flip.tok").write_bytes(bytes(raw))
    TF.open_flat(tmp_path / "flip.tok")                          # the size check alone cannot see it
    with pytest.raises(TF.TokenFileError, match="do not match the sha256"):
        TF.open_flat(tmp_path / "flip.tok", verify=True)
    (tmp_path / "x.tok").write_bytes(b"not a token file")
    with pytest.raises(TF.TokenFileError, match="not a sinkpaper token file"):
        TF.open_tokens(tmp_path / "x.tok")
    with pytest.raises(TF.TokenFileError, match="not found"):
        TF.open_tokens(tmp_path / "missing.tok")


# ------------------------------------------------------------------------------------------------ xz files
def test_committed_sample_is_mapped_through_its_flat_cache_copy(cache, monkeypatch):
    # independent reference: the whole xz stream decompressed at once and cut by the header's counts
    raw = SAMPLE.read_bytes()
    (n,) = struct.unpack("<I", raw[8:12])
    header = json.loads(raw[12:12 + n])
    body = lzma.decompress(raw[12 + n:])
    nt, nv = header["n_train"], header["n_val"]
    want_train = np.frombuffer(body[:2 * nt], "<u2")
    want_val = np.frombuffer(body[2 * nt:2 * (nt + nv)], "<u2")
    monkeypatch.setattr(TF, "_XZ_BLOCK", 4097)                   # odd blocks: tokens split across reads
    from sinkpaper.data.sources import load_source
    data = load_source("corpus", path=str(SAMPLE))
    assert np.array_equal(data.train, want_train) and np.array_equal(data.val, want_val)
    assert (data.vocab_size, data.eos_id, data.bos_id) == (header["vocab_size"], header["eos_id"], header["bos_id"])
    flat = Path(data.provenance["mapped"])
    assert flat.parent == cache / "tokens" and flat.name.startswith("tokens.u16-")
    sha = TF.read_token_header(flat)["meta"]["unpacked_from"]["sha256"]
    assert sha == json.loads((SAMPLE.parent / (SAMPLE.name + ".json")).read_text())["sha256"]
    mtime = flat.stat().st_mtime_ns
    assert TF.unpack(SAMPLE) == flat and flat.stat().st_mtime_ns == mtime     # reused, not rewritten
    from sinkpaper.data.tokenizer import load_tokenizer
    assert load_tokenizer(flat).get_vocab() == load_tokenizer(SAMPLE).get_vocab()   # the copy keeps its tokenizer
    # the one command that migrates by hand
    r = subprocess.run([sys.executable, "-m", "sinkpaper", "data", "unpack", str(SAMPLE), "--out",
                        str(cache / "by-hand.tok")], capture_output=True, text=True, cwd=REPO,
                       env={**os.environ, "PYTHONPATH": str(REPO)})
    assert r.returncode == 0, r.stderr
    assert "2,000,000 train + 100,000 val tokens" in r.stdout
    assert TF.read_token_header(cache / "by-hand.tok")["sha256"] == TF.read_token_header(flat)["sha256"]


def test_xz_file_that_does_not_match_its_checksums_is_refused(tmp_path, cache):
    path = tmp_path / "t.u16.xz"
    TF.write_token_file(path, np.arange(5000) % 300, np.arange(50), eos_id=0, vocab_size=300, tokenizer_json="{}",
                        preset=1)
    assert np.array_equal(TF.open_tokens(path).split("train"), np.arange(5000) % 300)
    raw = bytearray(path.read_bytes())
    raw[-40] ^= 0xFF
    path.write_bytes(bytes(raw))
    with pytest.raises(TF.TokenFileError, match="corrupted or was replaced"):
        TF.open_tokens(path)
    # a header whose token checksum disagrees with the tokens (sidecar rewritten to match the file)
    TF.write_token_file(path, np.arange(5000) % 300, np.arange(50), eos_id=0, vocab_size=300, tokenizer_json="{}",
                        preset=1)
    raw = path.read_bytes()
    (n,) = struct.unpack("<I", raw[8:12])
    header = json.loads(raw[12:12 + n])
    header["train_sha256"] = "0" * 64
    hb = json.dumps(header, sort_keys=True).encode()
    path.write_bytes(raw[:8] + struct.pack("<I", len(hb)) + hb + raw[12 + n:])
    side = json.loads((tmp_path / "t.u16.xz.json").read_text())
    side["sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
    (tmp_path / "t.u16.xz.json").write_text(json.dumps(side))
    with pytest.raises(TF.TokenFileError, match="train tokens do not match their checksum"):
        TF.open_tokens(path)
    assert not list((cache / "tokens").glob("t.u16-*.tok")) or all(
        TF.read_token_header(p)["meta"]["unpacked_from"]["sha256"] != side["sha256"]
        for p in (cache / "tokens").glob("*.tok"))       # nothing half-made was kept for the bad file
    assert not list((cache / "tokens").glob(".*.tmp"))


# ------------------------------------------------------------------------------------------------ streaming
def test_streamed_build_matches_a_plain_tokenization(tmp_path, cache, monkeypatch):
    """The hf source on a local JSON-lines file: the flat cache holds exactly the documents tokenized one by
    one (plain Python split + vocabulary lookup), EOS after each, validation first."""
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    sc = _scale()
    words = sc.word_tokenizer(tmp_path / "tokenizer.json")
    sc.make_corpus(tmp_path / "c.jsonl", words, 30_000, n_unique_docs=50)
    vocab = {w: i + 3 for i, w in enumerate(words)}
    ref = []
    for line in (tmp_path / "c.jsonl").read_text().splitlines():
        ref.extend([vocab[w] for w in json.loads(line)["text"].split()] + [0])
    from sinkpaper.data import sources
    monkeypatch.setattr(os, "cpu_count", lambda: 1)   # 256k-character batches: several of them here
    data = sources.hf_stream(str(tmp_path / "c.jsonl"), tokenizer=str(tmp_path / "tokenizer.json"), n_tokens=25_000,
                             val_tokens=1234)
    assert data.val.dtype == np.uint16 and len(data.val) == 1234 and len(data.train) == 25_000
    assert np.array_equal(np.concatenate([data.val, data.train]), np.array(ref[:26_234]))
    with pytest.raises(ValueError, match="fewer than the"):
        sources.hf_stream(str(tmp_path / "c.jsonl"), tokenizer=str(tmp_path / "tokenizer.json"), n_tokens=10 ** 6)
    assert sorted(p.name for p in (cache / "tokens").iterdir()) == [Path(data.provenance["cache"]).name]


def test_streaming_memory_does_not_grow_with_the_corpus(tmp_path):
    """Peak RSS of a cold-cache build (stream, tokenize, write) and of loading + batching, each in a fresh
    process, at two corpus sizes, against a baseline process that imports the same modules. Held whole as
    int32, the larger corpus would need 4 bytes per token more than the smaller one (the old path: twice that)."""
    sc = _scale()
    tok = tmp_path / "tokenizer.json"
    words = sc.word_tokenizer(tok)
    sizes = (2_000_000, 8_000_000)   # ~20 s of tokenization on 2 loaded cores (0.5-0.7 M tokens/s); 2M: past warm-up
    build, load = {}, {}
    for n in sizes:
        sc.make_corpus(tmp_path / f"c{n}.jsonl", words, n + n // 50 + 1000)
        build[n] = sc.measure("build", tmp_path / f"c{n}.jsonl", tok, n, tmp_path / f"cache-{n}")
        load[n] = sc.measure("load", tmp_path / f"c{n}.jsonl", tok, n, tmp_path / f"cache-{n}", steps=20)
        assert build[n]["n_train"] == load[n]["n_train"] == n
    small, large = sizes
    extra_int32 = 4 * (large - small) / 1024   # KiB the larger corpus would add held whole as int32 (24 MB)
    mib = {n: {"build peak": round(build[n]["growth_kib"] / 1024, 1), "load peak": round(load[n]["growth_kib"] / 1024, 1),
               "load private": round(load[n]["rssanon_growth_kib"] / 1024, 1),
               "load mapped file": round(load[n]["rssfile_growth_kib"] / 1024, 1)} for n in sizes}
    print(f"peak RSS growth over the RSS after imports, MiB: {mib}")
    # Held in memory, the larger corpus adds at least extra_int32 (24 MB; the old path twice that). The bound is
    # half of it: the fixed buffers (tokenizer batches, allocator arenas) vary by ~4 MiB between runs, which
    # made a quarter of a 16 MB gap fail at random.
    assert build[large]["growth_kib"] - build[small]["growth_kib"] < 0.5 * extra_int32, mib
    assert build[large]["growth_kib"] < 96 * 1024, mib                     # fixed buffers only
    assert load[large]["rssanon_growth_kib"] - load[small]["rssanon_growth_kib"] < 0.5 * extra_int32, mib
    # the mapped pages a rank holds: at most 64 KiB of fault-around per window read (20 x 16 windows here)
    assert load[large]["rssfile_growth_kib"] < 20 * 16 * 2 * 64, mib



def test_memory_measurement_does_not_see_the_parent_process(tmp_path):
    """The child's peak is its own (VmHWM since exec), not getrusage's ru_maxrss, which keeps the peak of the
    forked copy of the parent before exec: a parent holding 1 GiB more than the child's imports need must not
    show up in the child's numbers (with ru_maxrss the memory test above measured pytest's 3 GiB at every size)."""
    sc = _scale()
    tok = tmp_path / "tokenizer.json"
    sc.word_tokenizer(tok, n_words=50)
    held = np.ones(2 ** 27)   # 1 GiB, touched
    parent_kib = sc.memory_status()["VmRSS"]
    child = sc.measure("baseline", tmp_path / "none.jsonl", tok, 1, tmp_path / "cache")
    assert held[-1] == 1   # still held
    assert child["peak_kib"] < parent_kib - 512 * 1024, (child["peak_kib"], parent_kib)
    assert child["before"]["VmRSS"] <= child["peak_kib"]

# ------------------------------------------------------------------------------------------------ torchrun
def test_two_gloo_ranks_build_once_read_disjoint_shares_and_resume_bit_exactly(tmp_path):
    """torchrun, 2 CPU processes, the hf source on a local JSON-lines corpus with a cold cache: local rank 0
    builds the token file while rank 1 waits; each rank's windows are its half of each step's batch (their
    union is the one-process batch); a DDP run cut at step 4 and resumed ends with the same weights, bit for
    bit, as the uninterrupted one."""
    sc = _scale()
    words = sc.word_tokenizer(tmp_path / "tokenizer.json")
    sc.make_corpus(tmp_path / "c.jsonl", words, 120_000, n_unique_docs=200)
    config = {"name": "ddp-data", "model": dict(d_model=32, n_layers=1, n_heads=2, d_ff=64),
              "data": dict(source="hf", dataset=str(tmp_path / "c.jsonl"), tokenizer=str(tmp_path / "tokenizer.json"),
                           n_tokens=100_000, context=32),
              "optim": dict(lr=1e-2, steps=8, batch_size=8, warmup=2),
              "eval": dict(every=8, n_samples=8, seq_len=16),
              "run": dict(checkpoint_every=3, log_every=2, threads=1)}
    args = {"out": str(tmp_path / "runs"), "config": config, "steps": 6, "crash_at": 4}
    env = {**os.environ, "PYTHONPATH": str(REPO), "SINKPAPER_CACHE": str(tmp_path / "cache"),
           "HF_DATASETS_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    r = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
                        str(REPO / "tests" / "ddp_data_worker.py"), json.dumps(args)],
                       capture_output=True, text=True, cwd=tmp_path, env=env, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    reports = [json.loads((tmp_path / "runs" / f"report-{k}.json").read_text()) for k in (0, 1)]
    assert [rep["builds"] for rep in reports] == [1, 0]        # one build, by local rank 0
    assert reports[0]["cache"] == reports[1]["cache"]          # both map the same file
    print("data-loading peak RSS growth per rank (MiB):", [rep["data_rss_growth_kib"] / 1024 for rep in reports])

    # the same batches in one process (same cache, no process group)
    os.environ["SINKPAPER_CACHE"] = str(tmp_path / "cache")
    try:
        from sinkpaper.train import build
        from sinkpaper.train.trainer import load_data, packing_for
        cfg = build(config, "cpu")
        data = load_data(cfg)
    finally:
        del os.environ["SINKPAPER_CACHE"]
    assert data.provenance["cache"] == reports[0]["cache"]
    p = packing_for(cfg, data)
    shares = [np.load(tmp_path / "runs" / f"windows-{k}.npy") for k in (0, 1)]   # [steps, 4, 32] each
    for step in range(args["steps"]):
        one = p.batch(data.train, 8, cfg.run.seed, step)["input_ids"].numpy()
        assert np.array_equal(np.concatenate([shares[0][step], shares[1][step]]), one)
        assert not {w.tobytes() for w in shares[0][step]} & {w.tobytes() for w in shares[1][step]}

    from safetensors.torch import load_file
    import torch
    from sinkpaper.train import latest_checkpoint
    full = load_file(str(latest_checkpoint(tmp_path / "runs" / "full") / "model.safetensors"))
    cut = load_file(str(latest_checkpoint(tmp_path / "runs" / "cut") / "model.safetensors"))
    assert latest_checkpoint(tmp_path / "runs" / "cut").name == "step-00000008"
    assert full.keys() == cut.keys() and all(torch.equal(full[k], cut[k]) for k in full)
    m_full = json.loads((tmp_path / "runs" / "full" / "metrics.json").read_text())
    m_cut = json.loads((tmp_path / "runs" / "cut" / "metrics.json").read_text())
    assert m_cut["val_loss"] == m_full["val_loss"] and m_cut["tokens_seen"] == m_full["tokens_seen"] == 8 * 8 * 32


def test_rank_shares_partition_each_batch():
    stream = np.arange(5000)
    p = Packing(context=16, random_span=(3, 5), random_vocab=(0, 50))
    one = p.batch(stream, 12, seed=3, step=7)
    for world in (2, 3, 4):
        parts = [p.batch(stream, 12, seed=3, step=7, rank=r, world=world) for r in range(world)]
        for k in one:
            assert np.array_equal(np.concatenate([q[k].numpy() for q in parts]), one[k].numpy())
    with pytest.raises(ValueError, match="cannot be split evenly over 5"):
        p.batch(stream, 12, seed=3, step=7, rank=0, world=5)
    with pytest.raises(ValueError, match="rank must be in"):
        p.batch(stream, 12, seed=3, step=7, rank=2, world=2)
