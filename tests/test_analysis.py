"""The helpers of chapters 10 (sinkpaper.analysis.packing_bos: a model with and without its BOS) and 12
(sinkpaper.fused.testing's seeded cases and error table, the kernels against their references;
sinkpaper.analysis.kernel_checks: the table shown, the stored benchmark read back)."""
from __future__ import annotations

import json
import math

import pytest
import torch

from sinkpaper import fused as K
from sinkpaper.analysis import kernel_checks as kc
from sinkpaper.analysis import packing_bos as pb
from sinkpaper.book import figures
from sinkpaper.fused import testing as KT


# --------------------------------------------------------------------------------------------- pairing
def test_with_bos_and_shared_targets_pair_the_same_text():
    content = torch.arange(10, 22).view(2, 6)            # two windows of T = 6
    ids = pb.with_bos(content, 99)
    assert ids.shape == content.shape
    assert ids[:, 0].tolist() == [99, 99] and torch.equal(ids[:, 1:], content[:, :-1])
    t_on, t_off = pb.shared_targets(content, True), pb.shared_targets(content, False)
    # the same T - 1 targets: tokens 2..T of each window, and each from the same text prefix
    on = [(ids[b, :i + 1].tolist(), t_on[b, i].item()) for b in range(2) for i in range(6) if t_on[b, i] != pb.IGNORE]
    off = [(content[b, :i + 1].tolist(), t_off[b, i].item()) for b in range(2) for i in range(6)
           if t_off[b, i] != pb.IGNORE]
    assert [t for _, t in on] == [t for _, t in off] == [x for b in range(2) for x in content[b, 1:].tolist()]
    assert all(prefix_on[1:] == prefix_off for (prefix_on, _), (prefix_off, _) in zip(on, off))
    with pytest.raises(ValueError, match=r"\[N, T\]"):
        pb.with_bos(torch.arange(5), 1)


def test_nll_sum_ignores_and_counts():
    logits = torch.zeros(1, 3, 4)                         # uniform over 4 tokens: log 4 per target
    targets = torch.tensor([[1, pb.IGNORE, 3]])
    total, count = pb.nll_sum(logits, targets)
    assert count == 2 and total == pytest.approx(2 * math.log(4))


def test_sinks_elsewhere_counts_positions_2_to_half_and_their_tokens():
    alphas = torch.full((2, 1, 2, 8), 0.1)               # N, L, H, T
    alphas[0, 0, 0, 2] = 0.9                              # sample 0, head 0: a sink at position 3
    alphas[1, 0, 1, 0] = 0.9                              # token 1: not "elsewhere"
    alphas[1, 0, 1, 6] = 0.9                              # position 7 > T/2: not counted
    ids = torch.tensor([[5, 6, 7, 8, 9, 10, 11, 12], [1, 2, 3, 4, 5, 6, 7, 8]])
    out = pb.sinks_elsewhere(alphas, ids, 0.3, decode=lambda t: f"<{t}>")
    assert out["k_max"] == 4
    assert out["sink_elsewhere"] == pytest.approx(25.0)   # 1 of 4 (sample, head) pairs
    assert out["sink_tokens"] == [("<7>", 1)] and out["sink_positions"] == [(3, 1)]


class _Tok:
    def __init__(self, bos, first):
        self.bos_token_id, self.first = bos, first

    def __call__(self, text):
        return {"input_ids": ([self.first] if self.first is not None else []) + [42]}


def test_prepends_bos():
    assert pb.prepends_bos(_Tok(2, 2)) is True
    assert pb.prepends_bos(_Tok(2, None)) is False
    assert pb.prepends_bos(_Tok(None, 2)) is False


# ------------------------------------------------------------------------------------ models, end to end
@pytest.fixture(scope="module")
def tiny_bos_run(tmp_path_factory):
    from sinkpaper.book import experiments

    steps = 20
    run = experiments.live_run("configs/miniature.yaml", "cpu", point="recipe", seed=0,
                               overrides={"optim.steps": steps, "eval.every": steps, "eval.n_samples": 10,
                                          "run.checkpoint_every": steps, "data.n_tokens": 200_000},
                               out_root=str(tmp_path_factory.mktemp("live")))
    return run


def test_run_bos_ablation_pairs_conditions_and_reproduces_the_trainers_evaluation(tiny_bos_run):
    r = pb.run_bos_ablation(tiny_bos_run.run_dir, n_samples=10)
    on, off = pb.condition(r, True), pb.condition(r, False)
    # the BOS condition measures exactly the trainer's held-out windows
    assert on["sink_k"] == tiny_bos_run.payload["result"]["sink_k"]
    assert on["loss_targets"] == off["loss_targets"] == 10 * 63
    assert math.isfinite(on["loss"]) and math.isfinite(off["loss"])
    assert on["seq_len"] == off["seq_len"] == 64 and len(on["alpha_1_matrix"]) == 1
    assert r["provenance"]["source_of_numbers"] == "computed now" and r["provenance"]["n_samples"] == 10
    rows = pb.condition_rows(r, "live")
    assert [x["BOS"] for x in rows] == ["on", "off"] and "Sink_5 (%)" in rows[0]
    chart_rows = pb.sink_k_chart_rows(r, "mini")
    assert len(chart_rows) == 20 and {x["setting"] for x in chart_rows} == {"mini, BOS on", "mini, BOS off"}
    assert figures.sink_by_position_chart(chart_rows, "t").to_dict()["mark"]["type"] == "line"


def test_run_bos_ablation_refuses_a_run_without_bos(tiny_bos_run, tmp_path):
    import shutil

    d = tmp_path / "run"
    shutil.copytree(tiny_bos_run.run_dir, d)
    cfg = json.loads((d / "config.json").read_text())
    cfg["data"]["bos"] = False
    (d / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match="without a fixed BOS"):
        pb.run_bos_ablation(d, n_samples=2)


def test_lm_bos_contrast_on_smollm2(smollm2):
    r = pb.lm_bos_contrast(smollm2, n_samples=3, seq_len=16, batch_size=3, loss_samples=2)
    assert r["prepends_bos"] is False and r["model"] == "smollm2-135m"
    on, off = pb.condition(r, True), pb.condition(r, False)
    assert on["n_samples"] == off["n_samples"] == 3 and on["seq_len"] == 16
    assert on["loss_targets"] == off["loss_targets"] == 2 * 15
    # without BOS the shared targets are every next-token target: the model's own loss on those windows
    from sinkpaper.probes import make_inputs

    ids = make_inputs(smollm2.tokenizer, "natural", n_samples=3, seq_len=16, bos=False, seed=0).input_ids[:2]
    with torch.no_grad():
        ref = smollm2.model(input_ids=ids, labels=ids).loss.item()
    assert off["loss"] == pytest.approx(ref, rel=1e-4)
    assert r["provenance"]["loss_samples"] == 2 and r["provenance"]["text_sha256"]


# ------------------------------------------------------------------------------------------- kernels
needs_kernels = pytest.mark.skipif(not torch.cuda.is_available() and not K.interpreting(),
                                   reason="no GPU and TRITON_INTERPRET is not 1: the kernels cannot run here")
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def test_mask_kwargs():
    assert KT.mask_kwargs("causal", 2, 30) == {}
    assert KT.mask_kwargs("full", 2, 30) == {"causal": False}
    assert KT.mask_kwargs("window", 2, 30) == {"window": 10}
    assert KT.mask_kwargs("prefix", 2, 30) == {"prefix": 16}
    docs = KT.mask_kwargs("document", 2, 30)["doc_ids"]
    assert docs.shape == (2, 30) and set(docs[0].tolist()) == {0, 1, 2} and not torch.equal(docs[0], docs[1])
    assert (docs.diff(dim=1) >= 0).all()
    with pytest.raises(ValueError, match="valid: causal, full"):
        KT.mask_kwargs("sliding", 1, 8)


@needs_kernels
@pytest.mark.parametrize("op,mask,sink", [("softmax", "document", "kv_bias"), ("sigmoid", "window", "none"),
                                          ("softpick", "prefix", "sink_logit")])
def test_check_one_within_tolerance(op, mask, sink):
    row = KT.check_case(op, mask, sink, shape=(1, 2, 20, 16), device=DEVICE).row()
    assert row["worst"] < KT.TOLERANCE
    expected = {"out", "row statistic", "dq", "dk", "dv", "alpha (column_stats)"}
    expected |= {"dk_bias", "dv_bias", "sink column (column_stats)"} if sink == "kv_bias" else set()
    expected |= {"dsink_logit", "sink column (column_stats)"} if sink == "sink_logit" else set()
    assert expected <= set(row)
    shown = kc.format_errors([{"op": op, "mask": mask, "sink": sink, **row}])[0]
    assert shown["op"] == op and isinstance(shown["out"], str) and "e-" in shown["out"]


@needs_kernels
def test_error_table_flags_tolerance_and_metric_agreement():
    rows = KT.error_table(["elu"], ["causal", "full"], shape=(1, 1, 12, 16), device=DEVICE)
    assert [r["mask"] for r in rows] == ["causal", "full"] and all(r["within tolerance"] for r in rows)
    assert "dk_bias" not in kc.format_errors(rows)[0]  # no sink: no bias columns
    agree = kc.metric_agreement(["softmax", "document"], device=DEVICE, seq_len=20)
    assert [r["variant"] for r in agree] == ["softmax", "document"]
    assert all(r["Sink_k equal (eps 0.05, 0.3)"] for r in agree)
    with pytest.raises(ValueError, match="unknown op"):
        KT.check_case("relu", "causal")


def test_backend_says_why_the_kernels_cannot_run(monkeypatch):
    from sinkpaper.fused import api

    monkeypatch.setattr(api, "_INTERPRET", False)
    with pytest.raises(RuntimeError, match="TRITON_INTERPRET=1"):
        KT.backend("cpu")


# ---------------------------------------------------------------------------------------- benchmark
def _fake_result(smoke=False):
    rec = dict(section="speed", op="softmax", B=4, H=16, D=128, dtype="bf16", peak_mib=None, reason=None)
    records = [
        {**rec, "name": "ours", "mode": "fwd", "T": 4096, "ms": 1.0, "tflops": 300.0, "status": "ok"},
        {**rec, "name": "sdpa_flash", "mode": "fwd", "T": 4096, "ms": 1.1, "tflops": 270.0, "status": "ok"},
        {**rec, "name": "eager", "mode": "fwd", "T": 4096, "ms": None, "tflops": None, "status": "OOM",
         "reason": "OOM predicted"},
        {**rec, "section": "ops", "name": "ours", "op": "sigmoid", "mode": "fwd", "T": 4096, "ms": 0.8, "tflops": 1.0,
         "status": "ok"},
        {**rec, "section": "column_stats", "name": "ours", "mode": "column_stats", "T": 8192, "ms": 2.0,
         "tflops": None, "peak_mib": 3.0, "status": "ok"},
        {**rec, "section": "accuracy", "name": "ours", "mode": "out", "T": 1024, "max_abs_err": 2e-3,
         "rel_rms_err": 1e-3, "status": "ok"},
        {**rec, "section": "accuracy", "name": "sdpa", "mode": "out", "T": 1024, "max_abs_err": 1e-3,
         "rel_rms_err": 1e-3, "status": "ok"}]
    ratios = [dict(section="speed", kind="speed", what="ours/sdpa_flash", op="softmax", mode="fwd", T=4096, D=128, ratio=1.1),
              dict(section="ops", kind="speed", what="ours sigmoid/ours softmax", op="sigmoid", mode="fwd", T=4096,
                   D=128, ratio=1.25),
              dict(section="column_stats", kind="time", what="column_stats/ours forward", op="softmax",
                   mode="column_stats", T=8192, D=128, ratio=0.9),
              dict(section="column_stats", kind="memory", what="column_stats/ours forward", op="softmax",
                   mode="column_stats", T=8192, D=128, ratio=0.5)]
    return {"benchmark": "kernels", "smoke": smoke, "device": "cuda", "records": records, "ratios": ratios,
            "goals": [{"goal": "g", "status": "PASS", "detail": "d"}],
            "provenance": {"device_name": "NVIDIA H100 80GB HBM3", "code_version": "0.1.0+gabc", "torch": "2.9",
                           "triton": "3.6", "cuda": "12.8", "computed_at": "2026-01-01 00:00 UTC",
                           "command": ["bench", "kernels", "--json", "x.json"]}}


def test_stored_benchmarks_and_their_tables(tmp_path):
    assert kc.stored_benchmarks(tmp_path) == []
    path = kc.save_benchmark(_fake_result(), tmp_path / "kernels")
    assert path.name == "kernels-nvidia-h100-80gb-hbm3.json"
    (tmp_path / "kernels" / "kernels-smoke.json").write_text(json.dumps(_fake_result(smoke=True)))
    (tmp_path / "kernels" / "training-text.json").write_text("{}")   # another benchmark's file beside: not read
    found = kc.stored_benchmarks(tmp_path / "kernels")
    assert [p.name for p, _ in found] == ["kernels-nvidia-h100-80gb-hbm3.json"]
    assert len(kc.stored_benchmarks(tmp_path / "kernels", include_smoke=True)) == 2
    result = found[0][1]
    speed = kc.speed_rows(result)
    assert speed == [{"mode": "fwd", "T": 4096, "D": 128, "B x H": "4 x 16", "ours ms": 1.0, "ours TFLOP/s": 300.0,
                      "vs SDPA flash": "1.10x", "vs eager": "OOM"}]
    assert kc.ops_rows(result)[0]["vs our softmax"] == "1.25x"
    cs = kc.column_stats_rows(result)[0]
    assert cs["time / one forward"] == "0.90x" and cs["memory / one forward"] == "0.50x" and cs["peak MiB"] == 3.0
    assert kc.accuracy_rows(result)[0]["ours / SDPA"] == "2.00x"
    assert kc.goal_rows(result) == [{"goal": "g", "status": "PASS", "detail": "d"}]
    prov = kc.bench_provenance(result, found[0][0])
    assert prov["hardware"] == "NVIDIA H100 80GB HBM3" and prov["computed_now"] is False
    assert prov["loaded_from"].endswith("kernels-nvidia-h100-80gb-hbm3.json")
    assert prov["command"] == "python -m sinkpaper bench kernels --json x.json"
    # a path of the machine it ran on is shown by its file name only
    elsewhere = {**result, "provenance": {**result["provenance"], "command": ["bench", "kernels", "--json",
                                                                               "/root/out/kernels-gpu.json"]}}
    assert kc.bench_provenance(elsewhere)["command"] == "python -m sinkpaper bench kernels --json kernels-gpu.json"
    with pytest.raises(ValueError, match="not performance"):
        kc.save_benchmark(_fake_result(smoke=True), tmp_path)
    (tmp_path / "kernels" / "kernels-other.json").write_text("{}")
    with pytest.raises(ValueError, match="not a kernel benchmark"):
        kc.stored_benchmarks(tmp_path / "kernels")
    assert kc.bench_command().startswith("mkdir -p results/bench && python -m sinkpaper bench kernels --json "
                                         "results/bench/kernels-<device>.json")
    assert kc.device_slug("  ") == "device"
    # what the chapter shows of it: the provenance line, then a title and a table per part that has rows
    items = figures.benchmark_items(result, found[0][0])
    assert "NVIDIA H100 80GB HBM3" in items[0].data and "**loaded**" in items[0].data
    titles = [i.data for i in items[1::2]]
    assert titles == [f"**{t}**" for t, rows_of in kc.BENCHMARK_TABLES if rows_of(result)] and len(titles) == 5
    assert [i.rows for i in items[2::2]] == [rows_of(result) for _, rows_of in kc.BENCHMARK_TABLES]


@needs_kernels
@pytest.mark.skipif(torch.cuda.is_available(), reason="the smoke benchmark path is the CPU interpreter's")
def test_smoke_accuracy_section_through_the_tables():
    from sinkpaper.fused.bench import run_kernel_bench

    result = run_kernel_bench("cpu", smoke=True, sections=("accuracy",))
    rows = kc.accuracy_rows(result)
    assert [r["tensor"] for r in rows] == ["out", "dq", "dk", "dv"] and all(r["ours / SDPA"].endswith("x") for r in rows)
    assert kc.speed_rows(result) == [] and kc.bench_provenance(result)["computed_now"] is True
    assert "smoke" in kc.bench_provenance(result)


def test_doc_start_windows_hold_a_document_end_a_third_of_the_way_in():
    import numpy as np

    from sinkpaper.data.packing import doc_start_starts
    stream = np.arange(1, 1001) % 97 + 1
    stream[[50, 300, 700, 990]] = 0                   # EOS = 0; the one at 990 leaves no room for a window after it
    starts = doc_start_starts(stream, 10, eos_id=0, span=30)
    assert list(starts) == [40, 290, 690]             # each EOS at position 10 (a third of 30) of its window
    assert all(stream[s + 10] == 0 for s in starts)
    assert len(doc_start_starts(stream, 2, eos_id=0, span=30)) == 2
    assert len(doc_start_starts(stream[:40], 5, eos_id=0, span=30)) == 0


def test_a_document_masked_run_reads_the_sink_at_document_starts_inside_its_windows(tmp_path):
    from sinkpaper.train import config as C
    from sinkpaper.train.trainer import read_log, train
    cfg = C.load("configs/packing.yaml", "cpu", {"optim.steps": 4, "eval.every": 2, "eval.n_samples": 6}, "bos_each_doc_mask")
    train(cfg, tmp_path / "run", progress=False)
    evals = [r for r in read_log(tmp_path / "run" / "log.jsonl") if "sink_k" in r]
    assert evals and all(r["doc_start_samples"] == 6 and 0.0 <= r["sink_doc_start"] <= 100.0 for r in evals)


def test_every_operator_row_of_the_benchmark_has_the_same_columns():
    """A table's columns are its first row's: each operator's ratio to its eager version sits in one column."""
    result = _fake_result()
    result["records"] += [{**r, "op": "elu"} for r in result["records"] if r.get("op") == "sigmoid"]
    result["ratios"] += [{**r, "what": r["what"].replace("sigmoid", "elu"), "op": "elu"} for r in result["ratios"]
                         if "sigmoid" in r["what"]]
    rows = kc.ops_rows(result)
    assert {r["op"] for r in rows} >= {"sigmoid", "elu"} and len({tuple(r) for r in rows}) == 1
    figures.Table(rows)._repr_html_()   # renders: no row lacks a column
