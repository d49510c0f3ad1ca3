"""The pretraining pipeline on CPU: packing and every data intervention on small inputs, config validation,
a cpu-profile run where the loss falls, bit-exact resume, atomic checkpoints under a simulated crash, the
non-finite-loss stop, the results store, and every experiment family's sweep end to end."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from sinkpaper.data import IGNORE, Packing, document_ids, synthetic
from sinkpaper.train import TrainingDiverged, build, latest_checkpoint, load, read_log, sweep_points, train
from sinkpaper.train import store as S

REPO = Path(__file__).resolve().parent.parent
STREAM = np.arange(100, 200, dtype=np.uint16)   # token i at offset i-100: windows are easy to read
FAMILIES = sorted(p.stem for p in (REPO / "configs").glob("[!_]*.yaml"))


# ------------------------------------------------------------------------------------------------ packing
def test_default_window_is_context_plus_one_tokens_from_an_arbitrary_offset():
    b = Packing(context=5).windows(STREAM, np.array([0, 7]))
    assert b["input_ids"].tolist() == [[100, 101, 102, 103, 104], [107, 108, 109, 110, 111]]
    assert b["targets"].tolist() == [[101, 102, 103, 104, 105], [108, 109, 110, 111, 112]]


def test_bos_at_position_1_is_not_a_target():
    b = Packing(context=4, bos_id=7).windows(STREAM, np.array([3]))
    assert b["input_ids"].tolist() == [[7, 103, 104, 105]]
    assert b["targets"].tolist() == [[103, 104, 105, 106]]


def test_fixed_token_at_position_k_and_its_prediction_carries_no_loss():
    b = Packing(context=5, fixed_token=9, fixed_pos=2).windows(STREAM, np.array([0]))
    assert b["input_ids"].tolist() == [[100, 9, 102, 103, 104]]
    assert b["targets"].tolist() == [[IGNORE, 102, 103, 104, 105]]


def test_random_span_replaces_positions_s_to_e_minus_1():
    p = Packing(context=6, random_span=(2, 4), random_vocab=(0, 50))
    b = p.windows(STREAM, np.array([0, 0]), seed=3, step=5)
    ids = b["input_ids"]
    assert ids[:, 0].tolist() == [100, 100] and ids[:, 3:].tolist() == [[103, 104, 105]] * 2
    assert ((ids[:, 1:3] >= 0) & (ids[:, 1:3] < 50)).all()
    assert b["targets"][:, :2].eq(IGNORE).all() and b["targets"][:, 2:].ne(IGNORE).all()
    again = p.windows(STREAM, np.array([0, 0]), seed=3, step=5)["input_ids"]
    assert torch.equal(ids, again)   # a function of (seed, step): resume sees the same batch


def test_unique_tokens_caps_the_sampled_stream_and_offsets_are_reproducible():
    p = Packing(context=4, unique_tokens=20)
    starts = np.concatenate([p.offsets(len(STREAM), 64, seed=0, step=s) for s in range(20)])
    assert starts.max() + p.span <= 20 and starts.min() >= 0
    assert np.array_equal(p.offsets(len(STREAM), 8, 0, 3), p.offsets(len(STREAM), 8, 0, 3))
    assert not np.array_equal(p.offsets(len(STREAM), 8, 0, 3), p.offsets(len(STREAM), 8, 0, 4))


def test_prefix_lm_masks_the_first_p_minus_1_targets():
    b = Packing(context=6, prefix_len=3).windows(STREAM, np.array([0]))
    assert b["targets"].tolist() == [[IGNORE, IGNORE, 103, 104, 105, 106]]


def test_document_ids_start_after_each_eos():
    ids = np.array([[5, 0, 6, 7, 0, 0, 8]])
    assert document_ids(ids, eos_id=0).tolist() == [[0, 0, 1, 1, 1, 2, 3]]
    b = Packing(context=4, eos_id=103).windows(STREAM, np.array([1]))
    assert b["doc_ids"].tolist() == [[0, 0, 0, 1]]  # [101, 102, 103=EOS, 104]


def test_a_bos_before_every_document_under_intra_document_masking():
    """bos_each_document: the window's BOS, and one after each EOS, so each document of the window starts with
    a BOS (its own position 1 under the document mask); nothing predicts a BOS, the window keeps its length."""
    stream = np.array([10, 11, 0, 12, 13, 0, 14, 15, 16, 17], dtype=np.uint16)   # EOS = 0
    p = Packing(context=7, bos_id=1, eos_id=0, bos_each_document=True)
    b = p.windows(stream, np.array([0]))
    win = [1, 10, 11, 0, 1, 12, 13, 0]                                          # 8 = context + 1 tokens
    assert b["input_ids"].tolist() == [win[:-1]]
    assert b["targets"].tolist() == [[10, 11, 0, IGNORE, 12, 13, 0]]            # BOS after the EOS: no loss
    assert b["doc_ids"].tolist() == [[0, 0, 0, 0, 1, 1, 1]]                     # document 1 starts at its BOS
    plain = Packing(context=7, bos_id=1, eos_id=0).windows(stream, np.array([0]))
    assert plain["input_ids"].tolist() == [[1, 10, 11, 0, 12, 13, 0]]          # without it: one BOS only


@pytest.mark.parametrize("kwargs,match", [
    ({"context": 1}, "context"),
    ({"context": 4, "fixed_token": 1, "fixed_pos": 9}, "fixed_pos"),
    ({"context": 4, "fixed_token": 1, "fixed_pos": 1, "bos_id": 2}, "both fix position 1"),
    ({"context": 4, "random_span": (3, 2), "random_vocab": (0, 9)}, "random_span"),
    ({"context": 4, "random_span": (1, 2)}, "random_vocab"),
    ({"context": 4, "unique_tokens": 3}, "unique_tokens"),
    ({"context": 4, "prefix_len": 9}, "prefix_len"),
    ({"context": 4, "eos_id": 0, "bos_each_document": True}, "needs bos_id"),
])
def test_packing_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Packing(**kwargs)


# ------------------------------------------------------------------------------------------------ config
TINY = {"name": "tiny", "model": dict(d_model=32, n_layers=1, n_heads=2, d_ff=64),
        "data": dict(source="repeat", vocab_size=32, n_tokens=20_000, context=32),
        "optim": dict(lr=1e-2, steps=24, batch_size=8, warmup=4), "eval": dict(every=12, n_samples=12, seq_len=16),
        "run": dict(checkpoint_every=6, log_every=3, threads=2)}


@pytest.mark.parametrize("overrides,match", [
    ({"optim.lrr": 1}, "unknown config key 'optim.lrr'; valid: data.source"),
    ({"model.attention": "linear"}, "attention='linear' is not valid; choose one of: softmax"),
    ({"data.source": "pile"}, "data.source='pile'; valid: corpus, random, repeat, bigram_backcopy, hf"),
    ({"optim.schedule": "step"}, "valid: constant, cosine"),
    ({"lr": -1.0}, "optim.lr must be"),
    ({"optim.batch_size": 7, "optim.grad_accum": 2}, "divisible"),
    ({"eval.epsilon": 2}, "epsilon"),
    ({"eval.seq_len": 8}, "too short"),
    ({"data.fixed_token": "cls"}, "'bos' or 'eos'"),
    ({"data.prefix_lm": 4, "data.doc_mask": True}, "use one"),
    ({"data.bos_each_document": True, "data.doc_mask": True}, "needs data.bos and data.doc_mask"),
])
def test_config_errors_before_training(overrides, match):
    with pytest.raises(ValueError, match=match):
        build(TINY, "cpu", overrides)


def test_set_values_parse_like_yaml_and_accept_bare_exponents():
    from sinkpaper.train import parse_sets
    assert parse_sets(["optim.lr=2e-2", "seed=3", "model.sink=kv_bias", "data.random_span=[1, 2]", "data.bos=true"]) \
        == {"optim.lr": 0.02, "seed": 3, "model.sink": "kv_bias", "data.random_span": [1, 2], "data.bos": True}
    with pytest.raises(ValueError, match="key=value"):
        parse_sets(["lr"])


def test_config_profiles_sweeps_short_keys_and_hash():
    cfg = load(REPO / "configs/optimization.yaml", "cpu", {"seed": 3}, "lr_x2_steps_x0.5")
    assert cfg.run.seed == 3 and cfg.name == "optimization/lr_x2_steps_x0.5"
    assert cfg.optim.lr == pytest.approx(2 * 3e-3) and cfg.optim.steps == 75
    paper = load(REPO / "configs/optimization.yaml", "paper", {}, "lr_x2")
    assert paper.optim.lr == pytest.approx(8e-4) and paper.optim.steps == 20000 and paper.optim.batch_size == 512
    assert paper.data.context == 2048 and paper.model["d_model"] == 768
    assert cfg.hash() != load(REPO / "configs/optimization.yaml", "cpu", {"seed": 4}, "lr_x2_steps_x0.5").hash()
    a = build(TINY, "cpu", {"run.log_every": 1})
    assert a.hash() == build(TINY, "cpu").hash()  # bookkeeping does not change the result
    assert build({**TINY, "name": "other/point"}, "cpu").hash() == a.hash()  # nor does the name
    with pytest.raises(ValueError, match="unknown profile 'tpu'; valid: cpu, text, gpu, paper"):
        build(TINY, "tpu")
    with pytest.raises(ValueError, match="unknown sweep point 'nope'; valid: lr_x2_steps_x0.5"):
        load(REPO / "configs/optimization.yaml", "cpu", {}, "nope")
    with pytest.raises(FileNotFoundError, match="valid: a YAML file, or one of the experiment families after_paper, architecture"):
        load(REPO / "configs/missing.yaml")


# ------------------------------------------------------------------------------------------------ runs
def test_cpu_run_loss_falls_and_writes_everything(tmp_path):
    cfg = build(TINY, "cpu")
    result = train(cfg, tmp_path / "run", progress=False, store=tmp_path / "store")
    log = read_log(tmp_path / "run" / "log.jsonl")
    losses = [r["loss"] for r in log]
    assert losses[-1] < 0.7 * losses[0], losses
    evals = [r for r in log if "sink_k" in r]
    assert [r["step"] for r in evals] == [12, 24] and all(set(r["sink_k"]) == {str(k) for k in range(1, 11)} for r in evals)
    # every evaluation records token 1's hidden-state norm against the others', per layer (embeddings + blocks)
    assert all(len(r["massive_activation_ratio_by_layer"]) == cfg.model["n_layers"] + 1 for r in evals)
    assert result["tokens_seen"] == 24 * 8 * 32 and result["provenance"]["source_of_numbers"] == "computed now"
    assert json.loads((tmp_path / "run" / "metrics.json").read_text())["hash"] == cfg.hash()
    stored = S.read_result(tmp_path / "store", cfg)
    assert stored["result"]["val_loss"] == result["val_loss"] and len(stored["curve"]) == len(log)
    with pytest.raises(ValueError, match="pass --resume"):
        train(cfg, tmp_path / "run", progress=False)
    with pytest.raises(ValueError, match="holds a different run"):
        train(build(TINY, "cpu", {"seed": 9}), tmp_path / "run", progress=False)
    # a resume with another result-changing field is refused before any compute, naming the field
    with pytest.raises(ValueError, match=r"optim\.lr: .* -> 0\.123"):
        train(build(TINY, "cpu", {"optim.lr": 0.123}), tmp_path / "run", resume=True, progress=False)


def test_open_run_gives_back_the_config_model_and_heldout_inputs_of_a_trained_run(tmp_path):
    """The run handle rebuilds what the trainer used: the config from config.json, the model from the last
    checkpoint, the held-out sequences; re-measured, they give the run's own final Sink_k."""
    from sinkpaper import metrics
    from sinkpaper.train import open_run

    cfg = build(TINY, "cpu")
    train(cfg, tmp_path / "run", progress=False)
    run = open_run(tmp_path / "run")
    assert run.hash == cfg.hash() == run.config.hash()
    assert run.config.to_dict() == json.loads(json.dumps(cfg.to_dict()))
    assert run.checkpoint() == latest_checkpoint(tmp_path / "run") and run.checkpoint().name == "step-00000024"
    model = run.model()
    state = model.state_dict()
    assert not model.training and all(torch.equal(state[k], v) for k, v in _params(tmp_path / "run").items())
    held = run.heldout_inputs()
    assert held.shape == (cfg.eval.n_samples, cfg.eval.seq_len)
    summary = metrics.summarize(metrics.measure(model.trace, held, batch_size=25, progress=False), cfg.eval.epsilon,
                                range(1, cfg.eval.k_max + 1))
    final = run.final_metrics()
    assert final["hash"] == cfg.hash() and final["step"] == 24
    assert {str(k): v for k, v in summary["sink_k"].items()} == pytest.approx(final["sink_k"], abs=1e-9)
    assert run.log() == read_log(tmp_path / "run" / "log.jsonl")
    with pytest.raises(FileNotFoundError, match="is not a run directory"):
        open_run(tmp_path)
    bad = tmp_path / "bad"
    bad.mkdir()
    d = json.loads((tmp_path / "run" / "config.json").read_text())
    (bad / "config.json").write_text(json.dumps({**d, "data": {**d["data"], "colour": 1}}))
    with pytest.raises(ValueError, match="unknown data field.s. colour"):
        open_run(bad)
    (bad / "config.json").write_text(json.dumps(d))
    assert open_run(bad).final_metrics() == {}
    with pytest.raises(FileNotFoundError, match="has no checkpoint"):
        open_run(bad).model()


class Cut(Exception):
    """What :func:`train_until` raises from inside the loop: a run stopped as a killed process would be."""


def train_until(cfg, out, step: int, **kw) -> None:
    """Train ``cfg`` into ``out`` and stop it just after step ``step`` (the checkpoints written before it stay)."""
    def cut(at, _model):
        if at == step:
            raise Cut()
    with pytest.raises(Cut):
        train(cfg, out, progress=False, on_step=cut, **kw)


def _params(run_dir):
    from safetensors.torch import load_file
    return load_file(str(latest_checkpoint(Path(run_dir)) / "model.safetensors"))


def test_a_run_that_outlives_a_sitting_keeps_its_partial_curve_and_its_routes(tmp_path, capsys):
    """run.partial: at each checkpoint the curve so far is written, unfinished, beside the store (never read as a
    result) with a progress line; a resumed run ends stored, its partial curve removed, and a run resumed under
    another route names both in its provenance."""
    from sinkpaper.train.store import partial_path, read_entry
    cfg = build(TINY, "cpu", {"run.partial": True})
    assert cfg.hash() == build(TINY, "cpu").hash()          # bookkeeping: the same run
    store = tmp_path / "store"
    train_until(cfg, tmp_path / "run", 14, store=store)
    part = read_entry(partial_path(store, cfg.hash()))
    assert part["unfinished"] and part["progress"]["step"] == 12 and max(r["step"] for r in part["curve"]) == 12
    assert part["progress"]["projected_seconds_left"] > 0
    assert "step 12/24" in capsys.readouterr().out
    assert S.read_result(store, cfg) is None                 # a partial curve is no result
    # resumed by "another code": the checkpoint's route differs from today's
    state_path = tmp_path / "run" / "checkpoints" / "step-00000012" / "state.pt"
    state = torch.load(state_path, weights_only=False)
    state["routes"] = [{**state["routes"][0], "attention": "reference", "code": "an older version"}]
    torch.save(state, state_path)
    result = train(cfg, tmp_path / "run", resume=True, progress=False, store=store)
    routes = result["provenance"]["routes"]
    assert [r["from_step"] for r in routes] == [0, 12] and routes[0]["code"] == "an older version"
    assert not partial_path(store, cfg.hash()).exists() and S.read_result(store, cfg) is not None


def test_resume_is_bit_identical_and_survives_a_crash_during_a_checkpoint(tmp_path, monkeypatch):
    cfg = build(TINY, "cpu", {"data.random_span": [2, 3]})
    full = train(cfg, tmp_path / "full", progress=False)
    train_until(cfg, tmp_path / "cut", 14)
    assert latest_checkpoint(tmp_path / "cut").name == "step-00000012"

    # a crash while writing the step-18 checkpoint leaves step 12 as the last good one
    import safetensors.torch as st
    real = st.save_file

    def failing_save(tensors, filename, *a, **kw):
        if "step-00000018" in str(filename):
            Path(filename).write_bytes(b"partial")
            raise OSError("disk full (simulated)")
        return real(tensors, filename, *a, **kw)
    monkeypatch.setattr(st, "save_file", failing_save)
    with pytest.raises(OSError, match="simulated"):
        train(cfg, tmp_path / "cut", resume=True, progress=False)
    ckpts = tmp_path / "cut" / "checkpoints"
    assert latest_checkpoint(tmp_path / "cut").name == "step-00000012"
    assert not any("00000018" in p.name for p in ckpts.iterdir())   # no half-written checkpoint left behind
    monkeypatch.setattr(st, "save_file", real)

    resumed = train(cfg, tmp_path / "cut", resume=True, progress=False)
    a, b = _params(tmp_path / "full"), _params(tmp_path / "cut")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert resumed["val_loss"] == full["val_loss"] and resumed["sink_k"] == full["sink_k"]
    log_steps = [r["step"] for r in read_log(tmp_path / "cut" / "log.jsonl")]
    assert log_steps == [r["step"] for r in read_log(tmp_path / "full" / "log.jsonl")]  # no duplicated lines
    # the evaluations' share covers the whole resumed run (every evaluation in its log), not its last session
    pv = resumed["provenance"]
    took = [r["eval_seconds"] for r in read_log(tmp_path / "cut" / "log.jsonl") if "eval_seconds" in r]
    assert len(took) > 1 and pv["eval_seconds"] == pytest.approx(sum(took), abs=0.01)
    # the share is the log's evaluation seconds over the whole run's wall time (this tiny run's is under 0.1 s on a
    # quiet machine): the wall time the share implies is the stored one, at their roundings (0.01 s; 4 decimals)
    assert pv["eval_share_over"] == "the run"
    implied_wall = sum(took) / pv["eval_share"]
    assert abs(implied_wall - pv["wall_seconds"]) <= 0.005 + implied_wall * 0.5e-4 / pv["eval_share"] + 1e-6
    # the same over the process's CPU time, which the checkpoints carry across the crash: every evaluation's CPU
    # seconds are in the log, and the share is theirs over the run's CPU time
    cpu_took = [r["eval_cpu_seconds"] for r in read_log(tmp_path / "cut" / "log.jsonl") if "eval_seconds" in r]
    assert len(cpu_took) == len(took) and pv["cpu_seconds"] > 0
    assert pv["eval_cpu_share"] == pytest.approx(sum(cpu_took) / pv["cpu_seconds"], abs=1e-4 + 0.005 / pv["cpu_seconds"])

    # cut off before its first checkpoint: the rerun starts from step 0 and its log holds each step once
    train_until(cfg, tmp_path / "early", 4)
    assert latest_checkpoint(tmp_path / "early") is None and read_log(tmp_path / "early" / "log.jsonl")
    train(cfg, tmp_path / "early", resume=True, progress=False)
    assert [r["step"] for r in read_log(tmp_path / "early" / "log.jsonl")] == log_steps


def test_non_finite_loss_stops_and_keeps_the_last_good_checkpoint(tmp_path):
    cfg = build(TINY, "cpu")

    def poison(step, model):  # corrupt the weights after step 7 (the step-6 checkpoint is good)
        if step == 7:
            with torch.no_grad():
                model.embed.weight.fill_(float("nan"))
    with pytest.raises(TrainingDiverged, match=r"non-finite loss .* at step 7.*step-00000006"):
        train(cfg, tmp_path / "run", progress=False, on_step=poison)
    from safetensors.torch import load_file
    weights = load_file(str(latest_checkpoint(tmp_path / "run") / "model.safetensors"))
    assert all(torch.isfinite(w).all() for w in weights.values())


def test_store_never_overwrites_a_different_config(tmp_path):
    cfg = build(TINY, "cpu")
    path = S.write_result(tmp_path, cfg, {"x": 1})
    S.write_result(tmp_path, cfg, {"x": 2})   # the same config may be refreshed
    assert S.read_entry(path)["result"] == {"x": 2}
    payload = S.read_entry(path)
    payload["config"]["optim"]["lr"] = 123.0  # pretend another config landed on the same hash
    S.write_entry(path, payload)
    with pytest.raises(ValueError, match="different config"):
        S.write_result(tmp_path, cfg, {"x": 3})
    assert S.read_result(tmp_path, cfg) is None
    # its file key is not its config's key any more: stale, never listed as current
    assert S.list_results(tmp_path, "tiny") == [] and [e["key"] for e in S.stale_results(tmp_path)] == [cfg.hash()]


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_sweep_trains_and_is_measured(family, tmp_path):
    """Every variant of every experiment family trains a few steps at the cpu profile and is measured."""
    path = REPO / "configs" / f"{family}.yaml"
    small = {"data.source": "random", "data.vocab_size": 64, "data.n_tokens": 50_000, "optim.steps": 3,
             "eval.every": 3, "eval.n_samples": 8, "run.checkpoint_every": 3}
    if family == "calibration":   # the GPU calibration's models at a small batch and context: a minute less
        small |= {"optim.batch_size": 4, "data.context": 64}
    for point in sweep_points(path):
        cfg = load(path, "cpu", small, point)
        r = train(cfg, tmp_path / point, progress=False, data=synthetic("random", vocab_size=64, n_tokens=50_000))
        assert np.isfinite(r["final_loss"]) and np.isfinite(r["val_loss"]), point
        assert 0 <= r["sink_k"]["1"] <= 100


def test_cli_train_end_to_end(tmp_path):
    out = tmp_path / "runs"
    cmd = [sys.executable, "-m", "sinkpaper", "train", "--config", "configs/biases.yaml", "--profile", "cpu",
           "--sweep", "kv_bias", "--set", "data.source=repeat", "--set", "optim.steps=4", "--set", "eval.every=4",
           "--set", "eval.n_samples=8", "--out", str(out), "--store", str(tmp_path / "store")]
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "biases/kv_bias: step 4" in r.stdout and (out / "kv_bias" / "metrics.json").exists()
    stored = S.read_entry(next((tmp_path / "store").glob("*.json.gz")))
    assert stored["result"]["sink_star"] is not None   # the KV bias is measured as Sink*
    bad = subprocess.run(cmd[:-4] + ["--set", "optim.lrr=1", "--out", str(out)], capture_output=True, text=True,
                         cwd=REPO, timeout=600)
    assert bad.returncode == 2 and "unknown config key 'optim.lrr'" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1


def test_training_throughput_bench_json_contract(tmp_path):
    """The benchmark's rows and JSON on tiny text-profile shapes, one timed step (a contract, not a timing)."""
    from sinkpaper.train import accel
    from sinkpaper.train.bench import format_training_report, run_training_bench
    tiny = {"model.d_model": 32, "model.n_layers": 1, "model.d_ff": 64, "model.vocab_size": 128, "data.context": 16,
            "optim.batch_size": 4}
    r = run_training_bench(str(REPO / "configs/optimization.yaml"), "text", steps=1, warmup=1, compile=False,
                           overrides=tiny, gemm_n=64, json_path=str(tmp_path / "b.json"))
    assert json.loads((tmp_path / "b.json").read_text()) == json.loads(json.dumps(r))
    bf16 = accel.bf16_support(torch.device("cpu"))[0]
    # transformers at the best row's setting, and at the profile's own dtype (bf16) where that is not the best's
    again = bf16 and r["best"]["dtype"] != "bf16"
    assert [(x["model"], x["dtype"], x["compiled"]) for x in r["rows"]] == (
        [("ours", "fp32", False)] + [("ours", "bf16", False)] * bf16 + [("transformers", r["best"]["dtype"], False)]
        + [("transformers", "bf16", False)] * again)
    assert ("ratio_profile_dtype_vs_transformers" in r) == again
    assert r["runs"] == {"dtype": "bf16" if bf16 else "fp32", "steps": 2500}     # what the profile's runs train at
    if again:
        own = r["ours_profile_dtype_side_by_side_with_transformers"]
        assert r["ratio_profile_dtype_vs_transformers"] == pytest.approx(own["tokens_per_s"] / r["rows"][-1]["tokens_per_s"])
    # the step's own matmuls (each linear's forward and two gradients, attention's products) are its FLOPs
    assert r["gemm_model_shapes"]["fp32"]["step_matmul_flops"] == pytest.approx(r["flops_per_token"] * 4 * 16, rel=0.01)
    assert all(row["mfu_model_shapes"] > 0 for row in r["rows"])
    # eager rows only: plain softmax through SDPA; 4 MiB / (4 x vocab 128) tokens a loss chunk
    assert r["route"] == {"attention": "SDPA", "loss": "chunked by 8192 tokens", "numerics": "fp32 core"}
    for row in r["rows"]:
        assert set(row) >= {"model", "dtype", "compiled", "tokens_per_s", "mfu"}
        assert row["tokens_per_s"] > 0 and row["mfu"] > 0
        assert row["n_parameters"] == r["rows"][0]["n_parameters"]   # the same architecture, counted the same way
        assert row["mfu"] == pytest.approx(row["tokens_per_s"] * r["flops_per_token"] / r["gemm_peak_flops"][row["dtype"]])
    assert set(r["gemm_peak_flops"]) == ({"fp32", "bf16"} if bf16 else {"fp32"})
    ours = [x for x in r["rows"] if x["model"] == "ours"]
    hf = next(x for x in r["rows"] if x["model"] == "transformers")
    best = max(ours, key=lambda x: x["tokens_per_s"])
    assert r["ratio_best_vs_fp32_eager"] == pytest.approx(best["tokens_per_s"] / r["rows"][0]["tokens_per_s"])
    side = r["ours_best_side_by_side_with_transformers"]
    assert r["ratio_best_vs_transformers"] == pytest.approx(side["tokens_per_s"] / hf["tokens_per_s"])
    assert r["provenance"]["source_of_numbers"] == "computed now" and r["provenance"]["steps"] == 1
    assert (r["micro_batch"], r["context"], r["vocab_size"]) == (4, 16, 128)
    text = format_training_report(r)
    assert "ratio ours / transformers" in text and "GEMM peak" in text and text.count("\n  ours ") == 1 + bf16


def test_a_compiled_row_that_fails_to_compile_is_skipped_with_its_reason_and_an_eager_one_raises():
    """On a lease, one row's failed compilation must not cost the benchmark: the row is dropped, its reason kept;
    a failing eager row is a bug and raises."""
    from sinkpaper.models import ModelConfig
    from sinkpaper.train.bench import _Row, _warm
    mcfg = ModelConfig(vocab_size=64, d_model=16, n_layers=1, n_heads=2, d_ff=32, max_seq_len=16)
    ids = torch.randint(0, 64, (2, 9))
    eager, broken = (_Row("ours", "fp32", False, mcfg, 64, ids, torch.device("cpu")) for _ in range(2))

    def refuse():
        raise RuntimeError("Loop-carried variable acc re-assigned to fp64")
    broken.compiled, broken.step = True, refuse
    skipped = []
    assert _warm([eager, broken], 1, skipped) == [eager]
    assert len(skipped) == 1 and skipped[0].startswith("ours fp32 compiled: RuntimeError: Loop-carried")
    broken.compiled = False
    with pytest.raises(RuntimeError, match="fp64"):
        _warm([broken], 1, [])


# ------------------------------------------------------------------------------------------------ sources
def test_datasets_streaming_from_local_jsonl(tmp_path, monkeypatch):
    """The `hf` source through real `datasets` streaming, on local JSON-lines files and a local BPE."""
    from sinkpaper.data.sources import load_source
    from sinkpaper.data.tokenizer import train_bpe
    monkeypatch.setenv("SINKPAPER_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")   # local files only: nothing may reach the network
    docs = [f"Document {i} tells of the river and the mill, number {i}." for i in range(300)]
    (tmp_path / "corpus.jsonl").write_text("".join(json.dumps({"text": d}) + "\n" for d in docs))
    tok = train_bpe(docs, vocab_size=300, cache_dir=tmp_path / "tok")
    tok.save(str(tmp_path / "tokenizer.json"))
    data = load_source("hf", dataset=str(tmp_path / "corpus.jsonl"), tokenizer=str(tmp_path / "tokenizer.json"),
                       n_tokens=2000)
    assert len(data.train) == 2000 and len(data.val) == 400
    assert data.eos_id is not None and (data.train == data.eos_id).sum() > 10   # documents joined by EOS
    again = load_source("hf", dataset=str(tmp_path / "corpus.jsonl"), tokenizer=str(tmp_path / "tokenizer.json"),
                        n_tokens=2000)
    assert np.array_equal(again.train, data.train)                               # cached token file


def test_missing_sources_say_how_to_get_them(tmp_path, monkeypatch):
    from sinkpaper.data.sources import load_source
    monkeypatch.setenv("SINKPAPER_CACHE", str(tmp_path))
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", True)
    with pytest.raises(ConnectionError, match="offline corpus"):
        load_source("hf", dataset="pile-sample", n_tokens=1000)
    with pytest.raises(FileNotFoundError, match="python -m sinkpaper data build"):
        load_source("corpus", path=tmp_path / "nope.npz")
    with pytest.raises(ValueError, match="valid: corpus, random, repeat, bigram_backcopy, hf"):
        load_source("pile")


def test_torchrun_ddp_matches_one_process(tmp_path):
    """Two processes (gloo on CPU) split each batch; DDP averages their gradients: the same run as one process."""
    args = ["train", "--config", "configs/biases.yaml", "--sweep", "kv_bias", "--set", "data.source=repeat",
            "--set", "optim.steps=6", "--set", "eval.every=6", "--set", "eval.n_samples=8", "--set", "run.threads=1",
            "--no-store"]
    one = subprocess.run([sys.executable, "-m", "sinkpaper", *args, "--out", str(tmp_path / "one")],
                         capture_output=True, text=True, cwd=REPO, timeout=600)
    two = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "-m", "sinkpaper",
                          *args, "--out", str(tmp_path / "two")], capture_output=True, text=True, cwd=REPO, timeout=600)
    assert one.returncode == 0, one.stderr
    assert two.returncode == 0, two.stderr[-2000:]
    m1 = json.loads((tmp_path / "one" / "kv_bias" / "metrics.json").read_text())
    m2 = json.loads((tmp_path / "two" / "kv_bias" / "metrics.json").read_text())
    assert m1["tokens_seen"] == m2["tokens_seen"]
    assert m2["val_loss"] == pytest.approx(m1["val_loss"], abs=1e-4)


def test_config_files_are_read_again_when_they_change(tmp_path):
    """Parsing is cached by the file's text: an edited family or included base is seen at once, and a caller
    that changes the returned dict does not change the next one."""
    from sinkpaper.train.config import read_yaml
    base, fam = tmp_path / "base.yaml", tmp_path / "fam.yaml"
    base.write_text("optim: {lr: 0.1}\n")
    fam.write_text("include: base.yaml\nname: fam\nsweep: {a: {optim.lr: 0.2}}\n")
    first = read_yaml(fam)
    assert first["optim"]["lr"] == 0.1 and first["sweep"] == {"a": {"optim.lr": 0.2}}
    first["sweep"]["b"] = {}
    assert "b" not in read_yaml(fam)["sweep"]
    base.write_text("optim: {lr: 0.3}\n")                   # same size, maybe the same mtime tick
    fam.write_text("include: base.yaml\nname: fam\nsweep: {c: {optim.lr: 0.2}}\n")
    again = read_yaml(fam)
    assert again["optim"]["lr"] == 0.3 and list(again["sweep"]) == ["c"]
    fam.write_text("name: [unclosed\n")
    with pytest.raises(ValueError, match=r"fam\.yaml line 2: not valid YAML"):
        read_yaml(fam)


@pytest.mark.skipif(torch.cuda.is_available(), reason="a machine without CUDA")
def test_a_gpu_profile_without_cuda_names_the_profiles_that_run_here_before_any_compute(tmp_path):
    cfg = load("configs/optimization.yaml", "gpu")
    with pytest.raises(ValueError, match=r"^profile 'gpu' trains on a CUDA GPU .* profiles that run here: cpu, text"):
        train(cfg, tmp_path / "run", progress=False)
    assert not (tmp_path / "run").exists()          # nothing written, nothing loaded
    r = subprocess.run([sys.executable, "-m", "sinkpaper", "sweep", "--profile", "gpu", "--config",
                        "configs/calibration.yaml", "--out", str(tmp_path / "s")], cwd=REPO, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "profiles that run here: cpu, text" in r.stderr
