"""`python -m sinkpaper sink`: the JSON contract and every error path (exit 2, one line on stderr)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def run(*args, env=None):
    return subprocess.run([sys.executable, "-m", "sinkpaper", *args], capture_output=True, text=True, cwd=REPO,
                          env={**os.environ, **(env or {})}, timeout=600)


def test_json_shape(smollm2):  # the fixture makes sure the offline cache is built before the subprocess runs
    r = run("sink", "--model", "smollm2-135m", "--inputs", "random", "--n-samples", "4", "--seq-len", "32",
            "--bos", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    for key in ["model", "inputs", "n_samples", "seq_len", "epsilon", "bos", "sink_k", "alpha_1_mean",
                "per_layer_sink_1", "massive_activation_ratio_by_layer", "provenance"]:
        assert key in out, key
    assert out["model"] == "smollm2-135m" and out["inputs"] == "random" and out["bos"] is True
    assert out["n_samples"] == 4 and out["seq_len"] == 32 and out["epsilon"] == 0.3
    assert sorted(out["sink_k"], key=int) == [str(k) for k in range(1, 11)]
    assert all(0.0 <= v <= 100.0 for v in out["sink_k"].values())
    assert len(out["per_layer_sink_1"]) == 30 and len(out["massive_activation_ratio_by_layer"]) == 31
    assert out["provenance"]["code_version"].startswith("0.")


def test_token_file_and_table(smollm2, tmp_path, capsys):
    """In this process (test_json_shape runs the CLI as a program)."""
    tf = tmp_path / "ids.json"
    tf.write_text(json.dumps([[5, 6, 7, 8] * 5, [9, 10, 11, 12] * 5]))
    code, stdout, stderr = _main_in_process(["sink", "--model", "smollm2-135m", "--token-file", str(tf),
                                             "--seq-len", "16"], capsys)
    assert code == 0, stderr
    assert "Sink_k^eps (%)" in stdout and "inputs=token-file" in stdout and "N=2  T=16" in stdout


def test_method_stats_gives_the_same_numbers(gemma3, tmp_path, capsys):
    """`--method stats` reaches the Triton column-statistics route (in this process, under the interpreter;
    tests/test_lms.py compares the two routes on batches of both models)."""
    tf = tmp_path / "ids.json"
    tf.write_text(json.dumps([[2, 651, 1234, 77, 4005, 9, 310, 88, 12, 5000, 61, 7, 401, 23, 99, 8]]))
    out = {}
    for method in ("maps", "stats"):
        code, stdout, stderr = _main_in_process(["sink", "--model", "gemma3-270m", "--token-file", str(tf),
                                                 "--seq-len", "16", "--method", method, "--json"], capsys)
        assert code == 0, stderr
        out[method] = json.loads(stdout)
        assert out[method]["provenance"]["method"] == method
    assert out["maps"]["sink_k"] == out["stats"]["sink_k"]
    assert abs(out["maps"]["alpha_1_mean"] - out["stats"]["alpha_1_mean"]) < 1e-5


def _main_in_process(argv, capsys):
    """`python -m sinkpaper ARGV` in this process: (exit code, stdout, stderr)."""
    from sinkpaper.cli import main
    try:
        code = main(argv)
    except SystemExit as e:   # argparse's own errors
        code = e.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("args,msg", [
    (["--model", "smollm2-135m", "--method", "flash"], "invalid choice"),
    (["--model", "smollm2"], "models available offline: gemma3-270m, smollm2-135m"),
    (["--model", "no-org/no-model"], "hub is not reachable"),
    (["--model", "smollm2-135m", "--epsilon", "1.2"], "epsilon"),
    (["--model", "smollm2-135m", "--epsilon", "0"], "epsilon"),
    (["--model", "smollm2-135m", "--seq-len", "8"], "too short"),
    (["--model", "smollm2-135m", "--n-samples", "0"], "--n-samples"),
    (["--model", "smollm2-135m", "--inputs", "poetry"], "invalid choice"),
    (["--inputs", "random"], "--model"),
    (["--model", "smollm2-135m", "--token-file", "RAGGED"], "ragged"),
    (["--model", "smollm2-135m", "--token-file", "SHORT", "--seq-len", "64"], "fewer than --seq-len"),
    (["--model", "smollm2-135m", "--token-file", "SHORT", "--bos"], "drop --bos"),
])
def test_errors_exit_2_with_one_line(args, msg, tmp_path, capsys):
    """In this process (`cli.main`), except the two names that are not offline models: they go to the hub, and
    huggingface_hub reads HF_HUB_OFFLINE when imported, so those need a fresh interpreter."""
    files = {"RAGGED": [[1, 2, 3] * 8, [1, 2] * 8], "SHORT": [[1, 2, 3] * 8]}
    for i, a in enumerate(args):
        if a in files:
            p = tmp_path / f"{a}.json"
            p.write_text(json.dumps(files[a]))
            args[i] = str(p)
    if args[:2] in (["--model", "no-org/no-model"], ["--model", "smollm2"]):
        r = run("sink", *args, env={"HF_HUB_OFFLINE": "1"})
        code, stderr = r.returncode, r.stderr
    else:
        code, _, stderr = _main_in_process(["sink", *args], capsys)
    assert code == 2
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    assert msg in lines[0]


# ------------------------------------------------------------------ user mistakes of every command (issue 13)
NO_CUDA = pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="this machine has CUDA")


USER_MISTAKES = [
    pytest.param(["sink", "--model", "smollm2-135m", "--device", "cuda"],
                 "--device='cuda': no CUDA device here", marks=NO_CUDA),
    (["sink", "--model", "smollm2-135m", "--device", "tpu:0"], "valid here: cpu"),
    pytest.param(["bench", "training", "--device", "cuda"], "--device='cuda': no CUDA device here", marks=NO_CUDA),
    pytest.param(["train", "--config", "optimization", "--set", "run.device=cuda", "--out", "OUT"],
                 "run.device='cuda': no CUDA device here (torch", marks=NO_CUDA),
    (["train", "--config", "optimization", "--set", "optim.lr=abc", "--out", "OUT"],
     "optim.lr must be a number, got 'abc' (str)"),
    (["train", "--config", "optimization", "--set", "model.n_heads=2.5", "--out", "OUT"],
     "model.n_heads must be an integer, got 2.5 (float)"),
    (["train", "--config", "optimization", "--set", "optim.betas=[0.9,", "--out", "OUT"],
     "--set optim.betas: '[0.9,' is not a valid YAML value"),
    (["sweep", "--config", "miniature", "--set", "data.bos=yes please", "--out", "OUT"],
     "data.bos must be true or false, got 'yes please'"),
    (["train", "--config", "no_such_family", "--out", "OUT"],
     "valid: a YAML file, or one of the experiment families after_paper, architecture, attention"),
    (["store", "tidy"], "invalid choice: 'tidy' (choose from "),
    (["sweep", "--config", "miniature", "--start-before", "tonight", "--out", "OUT"],
     "--start-before 'tonight' is not an ISO 8601 date and time"),
]


def _assert_one_line_error(returncode, stderr, msg, tmp_path):
    lines = stderr.strip().splitlines()
    assert returncode == 2 and len(lines) == 1 and "Traceback" not in stderr, stderr
    assert lines[0].startswith("sinkpaper: error: ") and msg in lines[0], lines[0]
    assert not (tmp_path / "out").exists()   # nothing ran, nothing written


@pytest.mark.parametrize("args,msg", USER_MISTAKES)
def test_user_mistakes_exit_2_with_one_line_before_any_compute(args, msg, tmp_path, monkeypatch, capsys):
    """Run from an empty directory: `--config optimization` is found among the shipped configs, and nothing is
    written (the run directory is never created). In this process (`cli.main`), which saves a Python start per
    case; the test below runs real `python -m sinkpaper` processes for two of them."""
    args = [str(tmp_path / "out") if a == "OUT" else a for a in args]
    monkeypatch.chdir(tmp_path)
    code, _, stderr = _main_in_process(args, capsys)
    _assert_one_line_error(code, stderr, msg, tmp_path)


@pytest.mark.parametrize("args,msg", [USER_MISTAKES[4], USER_MISTAKES[9]], ids=["bad-value", "bad-choice"])
def test_user_mistakes_in_a_real_process(args, msg, tmp_path):
    """The same contract end to end: a fresh interpreter in an empty directory, stderr exactly one line."""
    args = [str(tmp_path / "out") if a == "OUT" else a for a in args]
    r = subprocess.run([sys.executable, "-m", "sinkpaper", *args], capture_output=True, text=True, cwd=tmp_path,
                       env={**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO)}, timeout=600)
    _assert_one_line_error(r.returncode, r.stderr, msg, tmp_path)


BOOK_RUNNER_MISTAKES = [
    (["-p", "no_such_parameter_xyz", "1"],
     "unknown notebook parameter(s) no_such_parameter_xyz; 01_introduction takes: epsilon, model, n_samples, "
     "profile"),
    (["-p", "n_samples", "[1,"], "-p n_samples: '[1,' is not a valid YAML value"),
    (["--profile", "tpu"], "invalid choice: 'tpu' (choose from "),
    (["-p", "1abc", "2"], "parameter name '1abc' is not a Python identifier"),
]


def _assert_book_runner_refused(code, stderr, msg, out_dir):
    lines = stderr.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "Traceback" not in stderr, stderr
    assert lines[0].startswith("sinkpaper.site: error: ") and msg in lines[0], lines[0]
    assert not out_dir.exists()  # nothing ran, nothing written


@pytest.mark.parametrize("args,msg", BOOK_RUNNER_MISTAKES)
def test_book_runner_mistakes_exit_2_with_one_line_before_running(args, msg, tmp_path, capsys, monkeypatch):
    """In this process (the runner's `main`), run and build alike; the test below runs one as a real process."""
    from sinkpaper.site.runner import main
    monkeypatch.chdir(REPO)
    for command in ("run", "build"):
        try:
            code = main([command, "--only", "01_introduction", *args, "--out-dir", str(tmp_path / "book")])
        except SystemExit as e:   # argparse's own errors
            code = e.code
        _assert_book_runner_refused(code, capsys.readouterr().err, msg, tmp_path / "book")


def test_a_book_runner_mistake_in_a_real_process(tmp_path):
    args, msg = BOOK_RUNNER_MISTAKES[0]
    r = subprocess.run([sys.executable, "-m", "sinkpaper.site", "build", "--only", "01_introduction", *args,
                        "--out-dir", str(tmp_path / "book")], capture_output=True, text=True, cwd=REPO, timeout=600)
    _assert_book_runner_refused(r.returncode, r.stderr, msg, tmp_path / "book")


def test_the_old_name_of_the_site_builder_still_runs_for_one_release_and_says_the_new_one(tmp_path):
    r = subprocess.run([sys.executable, "-m", "sinkpaper.book", "run", "--only", "01_introduction", "--profile", "tpu",
                        "--out-dir", str(tmp_path / "book")], capture_output=True, text=True, cwd=REPO, timeout=600)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 2, r.stderr
    assert lines[0] == "python -m sinkpaper.book is now python -m sinkpaper.site; the old name goes in the next release"
    assert lines[1].startswith("sinkpaper.site: error: argument --profile: invalid choice: 'tpu'")
    import warnings

    import sinkpaper.site.runner
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        from sinkpaper.book import runner
    assert runner is sinkpaper.site.runner
    assert [str(w.message) for w in caught] == [
        "sinkpaper.book.runner is now sinkpaper.site.runner; the old name goes in the next release"]


def test_store_stale_lists_the_runs_of_an_older_definition():
    r = run("store", "stale")
    assert r.returncode == 0, r.stderr
    stale = [line for line in r.stdout.splitlines() if line.startswith("stale ")]
    assert stale and all("miniature/v_bias" in line and "revision 1 (now 2); stale, rerun" in line for line in stale)
    assert r.stdout.strip().endswith(f"results/store: {len(stale)} stale run(s) (kept on disk, never read as current)")
