"""`python -m sinkpaper bench kernels`: the smoke run's JSON contract (Triton interpreter) and the no-GPU exit."""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[1]


def run(*args, env=None):
    return subprocess.run([sys.executable, "-m", "sinkpaper", "bench", "kernels", *args], capture_output=True,
                          text=True, cwd=REPO, env={**os.environ, **(env or {})}, timeout=600)


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    path = tmp_path_factory.mktemp("bench") / "kernels.json"
    r = run("--smoke", "--json", str(path), env={"TRITON_INTERPRET": "1"})
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return json.loads(path.read_text()), r.stdout


def test_smoke_provenance(smoke):
    res, _ = smoke
    pv = res["provenance"]
    for key in ["code_version", "hardware", "device_name", "torch", "triton", "cuda", "computed_at", "command",
                "git_commit"]:
        assert key in pv, key
    assert pv["interpreter"] is True and pv["triton"] and pv["torch"] == torch.__version__
    assert pv["command"][:3] == ["bench", "kernels", "--smoke"]
    assert res["smoke"] is True and res["device"] == "cpu" and "FlashAttention" in res["flop_convention"]


def test_smoke_records_every_section(smoke):
    res, out = smoke
    recs = res["records"]
    ok = [r for r in recs if r["status"] == "ok"]
    for r in ok:
        if r["section"] == "accuracy":
            assert math.isfinite(r["max_abs_err"]) and math.isfinite(r["rel_rms_err"]), r
        else:
            assert r["ms"] is not None and math.isfinite(r["ms"]) and r["ms"] > 0, r
    # our kernel ran in every section, for every op and both modes
    for section, op, mode in [("speed", "softmax", "fwd"), ("speed", "softmax", "fwd+bwd"),
                              ("sink", "sink_logit", "fwd"), ("sink", "sink_logit", "fwd+bwd"),
                              *[("ops", op, m) for op in ("sigmoid", "elu", "softpick") for m in ("fwd", "fwd+bwd")],
                              ("column_stats", "softmax", "column_stats"), ("accuracy", "softmax", "out"),
                              ("accuracy", "softmax", "dq")]:
        assert any(r["section"] == section and r["name"] == "ours" and r["op"] == op and r["mode"] == mode
                   for r in ok), (section, op, mode)
    # the eager references and PyTorch's CPU path ran too; the CUDA-only competitors say why they did not
    names = {(r["section"], r["name"]) for r in ok}
    assert {("speed", "ours_atomic"), ("speed", "eager"), ("speed", "sdpa_math"), ("ops", "eager"), ("column_stats", "eager"),
            ("column_stats", "ours_forward"), ("accuracy", "sdpa")} <= names
    for name in ("sdpa_flash", "sdpa_cudnn", "flex"):
        skipped = [r for r in recs if r["name"] == name]
        assert skipped and all(r["status"] == "skipped" and "CUDA" in r["reason"] for r in skipped), name
    # every ratio is a positive finite number and is printed; every goal is judged or says why not
    assert res["ratios"] and all(math.isfinite(x["ratio"]) and x["ratio"] > 0 for x in res["ratios"])
    assert {x["kind"] for x in res["ratios"]} == {"speed", "time", "error"}  # no peak memory on CPU
    assert out.count("x\n") >= len(res["ratios"])
    assert {"ours_atomic/sdpa_math", "ours sink_logit/ours softmax"} <= {x["what"] for x in res["ratios"]}
    assert len(res["goals"]) == 7 and all(g["status"] in ("PASS", "MISS", "n/a") for g in res["goals"])
    assert all(f"{g['status']:<5}{g['goal']}" in out for g in res["goals"])


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only error path; this machine has CUDA")
def test_without_gpu_exits_2_with_one_line():
    r = run()
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        "sinkpaper: error: no CUDA device: the kernel benchmark needs a GPU; use --smoke to exercise the code path "
        "on CPU under TRITON_INTERPRET=1"]


def test_a_cpu_benchmark_under_load_says_so():
    import torch

    from sinkpaper.train.bench import quiet_machine
    cpu = torch.device("cpu")
    assert quiet_machine(cpu, [1.2, 1.9], cpus=2) == {"quiet": True, "why": "load average 1.90 <= 2 cores"}
    loud = quiet_machine(cpu, [4.8, 1.0], cpus=2)
    assert loud["quiet"] is False and loud["why"].startswith("load average 4.80 > 2 cores: other work shared")
    assert quiet_machine(torch.device("cuda"), [9.0], cpus=2)["quiet"] is True


def test_a_benchmark_is_quiet_by_what_others_used_during_it_not_by_the_minute_before():
    """Workers paused just before a run leave a load average above the cores for a minute; the CPU time other
    processes used during the run (every core's busy time from /proc/stat less this process's) is what decides."""
    import torch

    from sinkpaper.train.bench import OTHERS_QUIET, cpu_clock, others_busy, quiet_machine
    cpu = torch.device("cpu")
    # 100 s of wall clock; the machine busy for 103 core-seconds, of which 100 this process's: others used 0.03 cores
    before, after = (0.0, 5000.0, 40.0), (100.0, 5103.0, 140.0)
    assert others_busy(before, after) == 0.03
    calm = quiet_machine(cpu, [2.77, 1.1], cpus=1, others=others_busy(before, after))
    assert calm == {"quiet": True, "why": f"other processes kept 0.03 cores busy on average during the run (<= "
                                          f"{OTHERS_QUIET})"}
    shared = quiet_machine(cpu, [0.5, 0.5], cpus=1, others=others_busy(before, (100.0, 5190.0, 140.0)))
    assert shared["quiet"] is False and shared["why"].startswith("other processes kept 0.90 cores busy")
    assert others_busy(None, after) is None and others_busy(after, after) is None
    reading = cpu_clock()
    assert reading is not None and len(reading) == 3 and all(isinstance(x, float) for x in reading)


def test_the_cli_offers_every_section_of_the_benchmark():
    """The CLI writes the sections out (importing sinkpaper.fused before the device is chosen would fix whether the
    kernels interpret); they are the benchmark's own."""
    from sinkpaper.cli import build_parser
    from sinkpaper.fused.bench import SECTIONS
    bench = next(a for a in build_parser()._subparsers._group_actions[0].choices["bench"]._actions
                 if "--only" in a.option_strings)
    assert tuple(bench.choices) == SECTIONS


def test_a_step_profile_puts_each_operator_in_a_phase_and_a_kind():
    """The profile's kinds come from operator names (the loss's log-softmax is not attention; inductor's kernels
    are fused elementwise work), and one profiled eager step of the cpu profile's base accounts for all of its
    self time in the four phases, the loss's matmuls under the loss."""
    from sinkpaper.train import step_profile as P
    assert P.kind_of("aten::mm") == P.kind_of("aten::addmm") == "matmul"
    assert P.kind_of("aten::_log_softmax") == "elementwise or reduction (aten)"
    assert P.kind_of("aten::_scaled_dot_product_flash_attention_for_cpu_backward") == "attention"
    assert P.kind_of("graph_0_cpp_fused_add_mul_0") == "fused elementwise (inductor)"
    assert P.kind_of("aten::_fused_adamw_") == "optimizer kernel"
    assert P.kind_of("Optimizer.step#AdamW.step") == P.FRAMEWORK
    r = P.profile_case("configs/optimization.yaml", "default", "fp32", False, steps=1, warmup=1, profile="cpu")
    assert set(r["by_phase_ms"]) == set(P.PHASES) and all(r["by_phase_ms"][p] > 0 for p in P.PHASES), r["by_phase_ms"]
    assert abs(sum(r["by_phase_ms"].values()) - r["profiled_ms_per_step"]) < 0.01 * r["profiled_ms_per_step"]
    assert abs(sum(r["by_kind_share"].values()) - 1) < 0.01
    assert any(c["phase"] == "loss" and c["kind"] == "matmul" and c["ms"] > 0 for c in r["cells_ms"])
    assert r["route"]["loss"].startswith("chunked") and r["step_ms"] > 0
