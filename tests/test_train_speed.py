"""Fast training on the CPU (issue 14): bf16 autocast with fp32 master weights, its one-line fallback, the
compile fallback, threads, and the bad-input errors. Correctness only; speed is measured by
`python -m sinkpaper bench training`, never asserted here."""
import pytest
import torch

from sinkpaper.train import accel, build, read_log, train
from tests.test_train import TINY


def test_invalid_dtype_lists_the_valid_ones():
    with pytest.raises(ValueError, match=r"run.dtype='fp16'; valid: fp32, bf16"):
        build(TINY, "cpu", {"run.dtype": "fp16"})


def test_bf16_cpu_training_loss_falls_with_fp32_master_weights(tmp_path):
    cfg = build(TINY, "cpu", {"run.dtype": "bf16"})
    seen = []
    result = train(cfg, tmp_path / "run", progress=False,
                   on_step=lambda step, model: seen.append({p.dtype for p in model.parameters()}))
    supported, _ = accel.bf16_support(torch.device("cpu"))
    assert result["provenance"]["dtype"] == ("bf16" if supported else "fp32")
    assert all(s == {torch.float32} for s in seen)           # master weights stay fp32
    losses = [r["loss"] for r in read_log(tmp_path / "run" / "log.jsonl")]
    assert losses[-1] < 0.7 * losses[0], losses
    # the same model code in fp32: the first step's loss agrees to bf16 precision (same init, same batch)
    fp32 = train(build(TINY, "cpu"), tmp_path / "fp32", progress=False)
    first32 = read_log(tmp_path / "fp32" / "log.jsonl")[0]["loss"]
    assert first32 == pytest.approx(losses[0], rel=2e-2)
    assert fp32["provenance"]["dtype"] == "fp32"


def test_bf16_on_a_cpu_without_it_says_so_in_one_line_and_runs_fp32(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(accel, "cpu_flags", lambda: frozenset({"avx2", "fma"}))
    ok, why = accel.bf16_support(torch.device("cpu"))
    assert not ok and "amx_bf16, avx512_bf16" in why
    cfg = build(TINY, "cpu", {"run.dtype": "bf16", "optim.steps": 3, "eval.every": 3})
    result = train(cfg, tmp_path / "run", progress=False)
    err = [line for line in capsys.readouterr().err.splitlines() if "bf16" in line]
    assert len(set(err)) == 1 and "running fp32" in err[0] and "amx_bf16" in err[0], err
    assert result["provenance"]["dtype"] == "fp32"


def test_compile_without_a_compiler_falls_back_to_eager_in_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(accel, "inductor_cpu_support",
                        lambda: (False, "no C++ compiler found (g++, clang++ or $CXX): simulated"))
    cfg = build(TINY, "cpu", {"run.compile": True, "optim.steps": 3, "eval.every": 3})
    result = train(cfg, tmp_path / "run", progress=False)
    err = [line for line in capsys.readouterr().err.splitlines() if "compile" in line]
    assert err == ["sinkpaper: run.compile=true falls back to eager: no C++ compiler found (g++, clang++ or $CXX): "
                   "simulated"]
    assert result["provenance"]["compiled"] is False and torch.isfinite(torch.tensor(result["val_loss"]))


def test_inductor_support_check_reads_the_compiler(monkeypatch):
    import shutil
    monkeypatch.setattr(shutil, "which", lambda name: None)
    ok, why = accel.inductor_cpu_support()
    assert not ok and "no C++ compiler" in why


def test_threads_are_set_intra_and_inter_op():
    before = torch.get_num_threads()
    try:
        accel.set_threads(1)
        assert torch.get_num_threads() == 1
        accel.set_threads(2)   # the inter-op setting is once per process; calling again must not raise
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
