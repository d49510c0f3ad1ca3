"""sinkpaper.book.measuring (the Section-3 chapters' helpers) and sinkpaper.book.colab (every chapter's Colab
set-up cell and link)."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch

from sinkpaper import metrics
from sinkpaper.book import colab, explorer
from sinkpaper.book import measuring as ms
from sinkpaper.lms import ModelUnavailableError, available_models, measure_sink
from sinkpaper.probes import make_inputs

REPO = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------------------------------------ parameters
def test_parameter_parsers_give_clear_errors():
    assert ms.parse_models(" smollm2-135m , gpt2-xl ") == ["smollm2-135m", "gpt2-xl"]
    with pytest.raises(ValueError, match="available offline: gemma3-270m, smollm2-135m"):
        ms.parse_models(" , ")
    with pytest.raises(ValueError, match="twice"):
        ms.parse_models("a,a")
    assert ms.parse_bos("both") == [False, True] and ms.parse_bos(True) == [True] and ms.parse_bos("false") == [False]
    with pytest.raises(ValueError, match="True, False or 'both'"):
        ms.parse_bos("maybe")
    assert ms.parse_inputs("repeat, natural") == ["natural", "repeat"]
    with pytest.raises(ValueError, match="natural, random, repeat"):
        ms.parse_inputs("poetry")
    assert ms.by_profile(None, "cpu", {"cpu": 20}) == 20 and ms.by_profile(7, "cpu", {"cpu": 20}) == 7
    for bad in (0, -1, 2.5, True, "3"):
        with pytest.raises(ValueError, match="positive int"):
            ms.by_profile(bad, "cpu", {"cpu": 20}, "n_samples")
    with pytest.raises(ValueError, match="valid: cpu, gpu, paper"):
        ms.check_profile("laptop")
    assert ms.check_profile("cpu") == "cpu"


def test_unknown_or_unreachable_model_names_say_what_is_offline(monkeypatch):
    """A chapter's `model` parameter goes through load_models: the error is sinkpaper.lms's, listing the offline
    models, for a wrong offline name, a mis-cased one and an id the (offline) hub cannot give."""
    import huggingface_hub.constants as c

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(c, "HF_HUB_OFFLINE", True)
    for name in ("smollm2-1b", "SmolLM2-135M", "no-such-org/no-such-model"):
        with pytest.raises(ModelUnavailableError) as e:
            ms.load_models(ms.parse_models(name))
        assert all(m in str(e.value) for m in available_models()), str(e.value)


# ------------------------------------------------------------------------------------------------ metric
def test_uniform_alpha_1_is_the_harmonic_mean():
    assert ms.uniform_alpha_1(1) == 1.0
    assert ms.uniform_alpha_1(64) == pytest.approx(0.0741, abs=1e-4)
    uniform = torch.tril(torch.ones(64, 64)) / torch.arange(1, 65)[:, None]
    vis = torch.ones(64, 64, dtype=torch.bool).tril()
    assert float(metrics.alpha(uniform, vis)[0]) == pytest.approx(ms.uniform_alpha_1(64), rel=1e-6)


def test_sink_vs_epsilon_matches_the_metric():
    gen = torch.Generator().manual_seed(0)
    alphas = torch.rand(5, 3, 4, 12, generator=gen)
    alphas[0, 0, 0, 0] = 0.3  # exactly at the threshold: not a sink (strict)
    eps = [0.1, 0.3, 0.5, 0.9]
    got = ms.sink_vs_epsilon(alphas[..., 0].numpy(), eps)
    assert got == [metrics.sink_rate(alphas, e, 1) for e in eps]
    assert got == sorted(got, reverse=True)
    with pytest.raises(ValueError, match="0 < epsilon < 1"):
        ms.sink_vs_epsilon(alphas[..., 0].numpy(), [1.0])


def test_inputs_table_equals_measure_sink(smollm2):
    p = explorer.collect(smollm2, "smollm2-135m", inputs=("natural", "repeat"), bos=(False,), n_samples=3,
                         n_map_samples=0, seq_len=16, seed=1)
    rows = ms.inputs_table([p], 0.3)
    assert [(r["inputs"], r["BOS"]) for r in rows] == [("natural", "off"), ("repeat", "off")]
    for r in rows:
        probe = make_inputs(smollm2.tokenizer, r["inputs"], n_samples=3, seq_len=16, bos=False, seed=1)
        ref = measure_sink(smollm2, probe, epsilon=0.3, progress=False)
        assert r["Sink_1 (%)"] == round(ref["sink_k"]["1"], 2)
        assert r["mean alpha_1"] == round(ref["alpha_1_mean"], 3)


def test_sink_vs_seq_len_and_the_models_card(smollm2):
    rows = ms.sink_vs_seq_len(smollm2, [12, 24], bos=False, n_samples=2, seed=0)
    assert [r["T"] for r in rows] == [12, 24] and all(r["skipped"] is None for r in rows)
    assert rows[0]["uniform alpha_1"] > rows[1]["uniform alpha_1"]
    too_long = ms.sink_vs_seq_len(smollm2, [10 ** 6], bos=False, n_samples=1)
    assert too_long[0]["Sink_1 (%)"] is None and "context length" in too_long[0]["skipped"]
    card = ms.model_card(smollm2)
    assert card["layers"] == 30 and card["heads (KV heads)"] == "9 (3)"
    assert card["positional encoding"].startswith("RoPE") and ms.is_rope(smollm2)
    assert card["tokenizer adds BOS"] == "no" and ms.tokenizer_adds_bos(smollm2.tokenizer) is False


def test_positional_encoding_of_configs():
    from transformers import GPT2Config, LlamaConfig

    assert ms.positional_encoding(GPT2Config()) == "learned absolute"
    assert ms.positional_encoding(LlamaConfig()).startswith("RoPE (theta")


# ------------------------------------------------------------------------------------------------ verdicts
def test_table1_verdicts_follow_the_stated_rule():
    sink = {("a", "natural", True): 70.0, ("a", "natural", False): 75.0, ("a", "random", True): 68.0,
            ("a", "repeat", False): 0.0, ("a", "repeat", True): 44.0,
            ("g", "natural", True): 77.0, ("g", "natural", False): 0.0, ("g", "random", True): 78.0,
            ("g", "repeat", False): 0.0, ("g", "repeat", True): 63.0,
            ("gpt", "natural", False): 70.0, ("gpt", "repeat", False): 60.0}
    v = ms.table1_verdicts(sink, rope={"a": True, "g": True, "gpt": False}, has_bos={"a": True, "g": True,
                                                                                       "gpt": False})
    assert v["t1_natural"]["agrees"] is True and "g with BOS off: 0.00 %" in v["t1_natural"]["note"]
    assert v["t1_random"]["agrees"] is True and "gpt: BOS off not measured" in v["t1_random"]["note"]
    assert v["t1_repeat"]["agrees"] is True and "not RoPE, not judged" in v["t1_repeat"]["note"]
    assert "g with BOS on: 63.00 %" in v["t1_repeat"]["note"]
    v = ms.table1_verdicts({**sink, ("g", "natural", True): 10.0, ("a", "repeat", False): 20.0},
                           rope={"a": True, "g": True}, has_bos={"a": True, "g": True})
    assert v["t1_natural"]["agrees"] is False and v["t1_repeat"]["agrees"] is False
    assert ms.table1_verdicts({("x", "natural", True): 50.0}, {}, {})["t1_natural"]["agrees"] is None


def test_seq_len_verdict():
    rows = [{"model": "a", "BOS": "off", "T": t, "Sink_1 (%)": s} for t, s in ((16, 88.0), (64, 75.0), (256, 55.0))]
    rows += [{"model": "g", "BOS": "off", "T": t, "Sink_1 (%)": s} for t, s in ((16, 2.0), (256, 0.0))]
    v = ms.seq_len_verdict(rows)
    assert v["agrees"] is True and "88.00 % at T=16 -> 55.00 % at T=256" in v["ours"] and "g BOS off" in v["note"]
    rows.append({"model": "b", "BOS": "on", "T": 16, "Sink_1 (%)": 10.0})
    rows.append({"model": "b", "BOS": "on", "T": 64, "Sink_1 (%)": 12.0})
    assert ms.seq_len_verdict(rows)["agrees"] is False
    assert ms.seq_len_verdict(rows[3:5])["agrees"] is None
    for r in rows:
        r["mean alpha_1"], r["uniform alpha_1"], r["skipped"] = 0.5, 0.25, None
    assert ms.seq_len_trend(rows).startswith("`a, BOS off`: Sink_1 88.00 % at T = 16, 55.00 % at T = 256; mean α_1 "
                                             "0.500 (2.0x uniform)")


def test_proposition_checks_hold():
    out = ms.proposition_checks(seq_len=16, seed=0)
    assert out["agrees"] is True
    assert [r["holds"] for r in out["rows"]] == ["yes", "yes", "yes", "n/a", "yes"]
    assert out["uniform_alpha_1"] == pytest.approx(ms.uniform_alpha_1(16), rel=1e-9)


def test_sink_token_profile_on_smollm2(smollm2):
    ids = make_inputs(smollm2.tokenizer, "natural", n_samples=2, seq_len=24, bos=False, seed=0).input_ids
    prof = ms.sink_token_profile(smollm2, ids, 0.3)
    L, H = smollm2.n_layers, 9
    for key in ("alpha_1", "value_ratio", "key_ratio", "cos_first", "cos_others", "normprod_ratio",
                "attention_share", "value_share"):
        assert prof[key].shape == (L, H), key
    assert prof["hidden_ratio"].shape == prof["hidden_first"].shape == (L + 1,)
    # alpha_1 is the metric's own
    ref = metrics.TraceStats.from_trace(smollm2.trace(ids, with_qkv=False)).alphas[..., 0].mean(0).numpy()
    np.testing.assert_allclose(prof["alpha_1"], ref, rtol=1e-5, atol=1e-6)
    assert ((prof["attention_share"] >= 0) & (prof["attention_share"] <= 1)).all()
    assert ((prof["value_share"] >= 0) & (prof["value_share"] <= 1 + 1e-6)).all()
    s = ms.profile_summary(prof)
    assert s["sink heads"].endswith(f"of {L * H}") and s["token-1 norm ratio (max over layers)"] > 1


def test_property_verdicts_judge_only_settings_with_a_sink():
    good = {"token-1 norm ratio (max over layers)": 150.0, "value-norm ratio |v_1|/|v_t|": 0.2,
            "cos(q, k_1) - cos(q, k_j)": 0.4, "norm-product ratio": 0.3}
    none = {"token-1 norm ratio (max over layers)": 1.1, "value-norm ratio |v_1|/|v_t|": math.nan,
            "cos(q, k_1) - cos(q, k_j)": math.nan, "norm-product ratio": math.nan}
    v = ms.property_verdicts({"m, BOS off": good, "g, BOS off": none}, {"m, BOS off": 75.0, "g, BOS off": 0.0})
    assert all(x["agrees"] is True for x in v.values())
    assert "g, BOS off (no sink heads)" in v["s3_qk_angle"]["note"]
    assert "g, BOS off (token-1 norm 1.1x" in v["s3_massive_activation"]["note"]
    bad = {**good, "norm-product ratio": 1.5, "value-norm ratio |v_1|/|v_t|": 2.0}
    v = ms.property_verdicts({"m": bad}, {"m": 75.0})
    assert v["s3_qk_angle"]["agrees"] is False and v["s3_small_value_norm"]["agrees"] is False
    assert ms.property_verdicts({"g": none}, {"g": 0.0})["s3_massive_activation"]["agrees"] is None


def test_xy_chart_drops_missing_points():
    chart = ms.xy_chart([{"T": 16, "s": 1.0, "m": "a"}, {"T": 32, "s": None, "m": "a"}], "T", "s", "m", "t",
                        log_x=True, rule_x=20, rule_y=0.5)
    spec = chart.to_dict()
    assert len(spec["layer"][0]["data"]["values"]) == 1


# ------------------------------------------------------------------------------------------------ colab
def test_colab_link_and_pin():
    assert colab.colab_url("03_section3_measuring") == (
        "https://colab.research.google.com/github/sinkpaper/sinkpaper/blob/main/notebooks/ipynb/03_section3_measuring.ipynb")
    assert colab.badge("01_introduction").startswith("[Open in Colab](https://colab.research.google.com/")
    for bad in ("", "book/x", "x.ipynb"):
        with pytest.raises(ValueError):
            colab.colab_url(bad)
    # the sources install the branch (it exists); no tag is assumed
    assert colab.pip_spec() == "sinkpaper[offline-models] @ git+https://github.com/sinkpaper/sinkpaper@main"
    sha = "0123456789abcdef0123456789abcdef01234567"
    assert f'@{sha}"' in colab.bootstrap_cell(sha)
    for bad in ("", "a b", "--upgrade"):
        with pytest.raises(ValueError, match="git commit or branch"):
            colab.pip_spec(bad)


def test_executed_pages_pin_the_commit_that_ran_them():
    import subprocess

    import nbformat

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Title"),
                                         nbformat.v4.new_code_cell(colab.bootstrap_cell())])
    sha = "0123456789abcdef0123456789abcdef01234567"
    assert colab.pin_bootstrap_cell(nb, sha)
    assert nb.cells[1].source == colab.bootstrap_cell(sha) and "@main" not in nb.cells[1].source
    assert not colab.pin_bootstrap_cell(nb, sha)  # already pinned: nothing of the source's cell left
    assert not colab.pin_bootstrap_cell(nbformat.v4.new_notebook(), sha)
    ref = colab.pinned_ref()  # what the runner pins here: the checkout's HEAD, a commit that exists
    if ref is None:
        pytest.skip("not running from a git checkout: the runner keeps the branch")
    assert len(ref) == 40
    assert subprocess.run(["git", "-C", str(REPO), "cat-file", "-e", f"{ref}^{{commit}}"]).returncode == 0


def test_colab_setup_runs_only_on_colab(monkeypatch):
    ran = []
    monkeypatch.delitem(__import__("sys").modules, "google.colab", raising=False)
    assert colab.setup(run=lambda cmd, check: ran.append(cmd)) == [] and ran == []
    cmds = colab.setup(force=True, run=lambda cmd, check: ran.append(cmd), packages=("surely-not-installed-pkg",))
    assert ran == cmds and cmds[0][-2:] == ["--no-deps", "surely-not-installed-pkg"]


def test_bootstrap_cell_is_valid_python_and_does_nothing_here():
    src = colab.bootstrap_cell()
    compile(src, "<bootstrap>", "exec")
    exec(compile(src, "<bootstrap>", "exec"), {})  # not on Colab: no install, no import of colab.setup


@pytest.mark.parametrize("stem", ["01_introduction", "02_section3_properties", "03_section3_measuring"])
def test_chapters_carry_the_current_colab_cell_and_link(stem):
    """The chapters of this module's owner: the link under the title and the current set-up cell (installing the
    branch; the runner pins each executed page to its commit). A change of the cell must update these files:
    the failure names the file."""
    text = (REPO / "notebooks" / f"{stem}.py").read_text()
    assert (REPO / colab.colab_path(stem)).is_file(), f"no {colab.colab_path(stem)}: python -m sinkpaper.book colab"
    assert colab.bootstrap_cell() in text, f"notebooks/{stem}.py lacks the current Colab cell: colab.bootstrap_cell()"
