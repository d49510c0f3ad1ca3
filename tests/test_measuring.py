"""sinkpaper.analysis.section3 and sinkpaper.book.measuring (the Section-3 chapters' measurements and
parameters) and sinkpaper.book.colab (every chapter's Colab set-up cell and link)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from sinkpaper import metrics
from sinkpaper.analysis import explorer_payload, section3 as s3
from sinkpaper.book import colab
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
            s3.load_models(ms.parse_models(name))
        assert all(m in str(e.value) for m in available_models()), str(e.value)


# ------------------------------------------------------------------------------------------------ metric
def test_uniform_alpha_1_is_the_harmonic_mean():
    assert metrics.uniform_alpha_1(1) == 1.0
    assert metrics.uniform_alpha_1(64) == pytest.approx(0.0741, abs=1e-4)
    uniform = torch.tril(torch.ones(64, 64)) / torch.arange(1, 65)[:, None]
    vis = torch.ones(64, 64, dtype=torch.bool).tril()
    assert float(metrics.alpha(uniform, vis)[0]) == pytest.approx(metrics.uniform_alpha_1(64), rel=1e-6)


def test_sink_vs_epsilon_matches_the_metric():
    gen = torch.Generator().manual_seed(0)
    alphas = torch.rand(5, 3, 4, 12, generator=gen)
    alphas[0, 0, 0, 0] = 0.3  # exactly at the threshold: not a sink (strict)
    eps = [0.1, 0.3, 0.5, 0.9]
    got = s3.sink_vs_epsilon(alphas[..., 0].numpy(), eps)
    assert got == [metrics.sink_rate(alphas, e, 1) for e in eps]
    assert got == sorted(got, reverse=True)
    with pytest.raises(ValueError, match="0 < epsilon < 1"):
        s3.sink_vs_epsilon(alphas[..., 0].numpy(), [1.0])


def test_inputs_table_equals_measure_sink(smollm2):
    p = explorer_payload.collect(smollm2, "smollm2-135m", inputs=("natural", "repeat"), bos=(False,), n_samples=3,
                         n_map_samples=0, seq_len=16, seed=1)
    rows = ms.inputs_table([p], 0.3)
    assert [(r["inputs"], r["BOS"]) for r in rows] == [("natural", "off"), ("repeat", "off")]
    for r in rows:
        probe = make_inputs(smollm2.tokenizer, r["inputs"], n_samples=3, seq_len=16, bos=False, seed=1)
        ref = measure_sink(smollm2, probe, epsilon=0.3, progress=False)
        assert r["Sink_1 (%)"] == round(ref["sink_k"]["1"], 2)
        assert r["mean alpha_1"] == round(ref["alpha_1_mean"], 3)


def test_sink_vs_seq_len_and_the_models_card(smollm2):
    rows = s3.sink_vs_seq_len(smollm2, [12, 24], bos=False, n_samples=2, seed=0)
    assert [r["T"] for r in rows] == [12, 24] and all(r["skipped"] is None for r in rows)
    assert rows[0]["uniform alpha_1"] > rows[1]["uniform alpha_1"]
    too_long = s3.sink_vs_seq_len(smollm2, [10 ** 6], bos=False, n_samples=1)
    assert too_long[0]["Sink_1 (%)"] is None and "context length" in too_long[0]["skipped"]
    card = s3.model_card(smollm2)
    assert card["layers"] == 30 and card["heads (KV heads)"] == "9 (3)"
    assert card["positional encoding"].startswith("RoPE") and s3.is_rope(smollm2)
    assert card["tokenizer adds BOS"] == "no" and s3.tokenizer_adds_bos(smollm2.tokenizer) is False


def test_positional_encoding_of_configs():
    from transformers import GPT2Config, LlamaConfig

    assert s3.positional_encoding(GPT2Config()) == "learned absolute"
    assert s3.positional_encoding(LlamaConfig()).startswith("RoPE (theta")


# ------------------------------------------------------------------------------------- propositions
def test_proposition_checks_hold():
    out = s3.proposition_checks(seq_len=16, seed=0)
    assert out["all_hold"] is True
    assert [r["holds"] for r in out["rows"]] == ["yes", "yes", "yes", "n/a", "yes"]
    assert out["uniform_alpha_1"] == pytest.approx(metrics.uniform_alpha_1(16), rel=1e-9)


def test_sink_token_profile_on_smollm2(smollm2):
    ids = make_inputs(smollm2.tokenizer, "natural", n_samples=2, seq_len=24, bos=False, seed=0).input_ids
    prof = s3.sink_token_profile(smollm2, ids, 0.3)
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
    s = s3.profile_summary(prof)
    assert s["sink heads"].endswith(f"of {L * H}") and s["token-1 norm ratio (max over layers)"] > 1


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


def test_bootstrap_cell_is_valid_python_and_does_nothing_here(monkeypatch):
    import subprocess as sp
    src = colab.bootstrap_cell()
    ran = []
    monkeypatch.setattr(sp, "run", lambda *a, **k: ran.append(a))     # what an install would call
    monkeypatch.delitem(__import__("sys").modules, "google.colab", raising=False)
    namespace = {}
    exec(compile(src, "<bootstrap>", "exec"), namespace)    # not on Colab: no install, no import of colab.setup
    assert ran == [] and "colab" not in namespace and "subprocess" not in namespace
    assert f'"{colab.pip_spec(None)}"' in src           # on Colab it installs the pinned spec


@pytest.mark.parametrize("stem", ["01_introduction", "02_section3_properties", "03_section3_measuring"])
def test_chapters_carry_the_current_colab_cell_and_link(stem):
    """The chapters of this module's owner: the link under the title and the current set-up cell (installing the
    branch; the runner pins each executed page to its commit). A change of the cell must update these files:
    the failure names the file."""
    text = (REPO / "notebooks" / f"{stem}.py").read_text()
    assert (REPO / colab.colab_path(stem)).is_file(), f"no {colab.colab_path(stem)}: python -m sinkpaper.site colab"
    assert colab.bootstrap_cell() in text, f"notebooks/{stem}.py lacks the current Colab cell: colab.bootstrap_cell()"


def test_table1_values_judge_the_tokenizers_bos_setting_and_show_the_other_beside():
    sink = {("a", "natural", True): 60.0, ("a", "natural", False): 2.0, ("a", "random", True): 50.0,
            ("a", "repeat", False): 90.0, ("b", "natural", False): 40.0, ("b", "repeat", False): 1.0}
    by_T = [{"model": "a", "T": t, "BOS": "on", "skipped": False, "Sink_1 (%)": v} for t, v in ((16, 30.0), (64, 55.0))]
    values, other = s3.table1_values(sink, by_T, ["a", "b"], {"a": True, "b": False}, {"a": True, "b": False})
    assert values["t1_natural"] == {"a: natural": 60.0, "b: natural": 40.0}
    assert values["t1_repeat"] == {"a: repeat": 90.0, "b (absolute PE, not judged): repeat": 1.0}
    assert values["metric_T"] == {"a: smallest T": 30.0, "a: largest T": 55.0}
    assert other["t1_natural"][0] == "a BOS off: 2.00 %" and "a has no sink on natural text" in other["t1_natural"][1]
