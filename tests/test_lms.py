"""Real pretrained models (the two offline GGUF models) through sinkpaper.lms, and the probe inputs."""
from __future__ import annotations

import json

import pytest
import torch

from sinkpaper import metrics
from sinkpaper.lms import ModelUnavailableError, available_models, load_lm, measure_sink
from sinkpaper.probes import INPUTS, make_inputs, natural_text, token_file_inputs


def test_unknown_and_unreachable_models_list_the_offline_ones(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import huggingface_hub.constants as c
    monkeypatch.setattr(c, "HF_HUB_OFFLINE", True)
    for name in ["SmolLM2-135M", "no-such-org/no-such-model", ""]:
        with pytest.raises(ModelUnavailableError) as e:
            load_lm(name)
        for offline in available_models():
            assert offline in str(e.value)


def test_trace_contract_smollm2(smollm2):
    ids = make_inputs(smollm2.tokenizer, "natural", n_samples=2, seq_len=16, bos=True).input_ids
    tr = smollm2.trace(ids)
    L, H, T = smollm2.n_layers, smollm2.model.config.num_attention_heads, 16
    assert tr.n_layers == L and tr.n_heads == H and tr.seq_len == T
    assert len(tr.hidden_states) == L + 1
    for a in tr.attentions:  # probabilities, causal
        torch.testing.assert_close(a.sum(-1), torch.ones(2, H, T))
        assert float(a.triu(1).abs().max()) == 0.0
    # keys are repeated to every query head (3 KV heads -> 9 heads) and q.k reproduces the attention logits
    q, k = tr.queries[0], tr.keys[0]
    assert q.shape == k.shape == (2, H, T, smollm2.model.config.head_dim)
    logits = (q @ k.transpose(-1, -2)) * smollm2.model.config.head_dim ** -0.5
    logits = logits.masked_fill(~tr.visible[:, None], float("-inf"))
    torch.testing.assert_close(logits.softmax(-1), tr.attentions[0], atol=1e-5, rtol=1e-4)
    # the last hidden state is the last block's output, before the final norm (HF's last entry is after it)
    out = smollm2.model.base_model(input_ids=ids, output_hidden_states=True)
    torch.testing.assert_close(smollm2.model.base_model.norm(tr.hidden_states[-1]), out.hidden_states[-1].float())
    torch.testing.assert_close(tr.hidden_states[3], out.hidden_states[3].float())


def test_probes_are_explicit_about_bos(smollm2):
    tok = smollm2.tokenizer
    special = set(tok.all_special_ids)
    for inputs in INPUTS:
        off = make_inputs(tok, inputs, n_samples=3, seq_len=12, bos=False, seed=1)
        on = make_inputs(tok, inputs, n_samples=3, seq_len=12, bos=True, seed=1)
        assert off.input_ids.shape == on.input_ids.shape == (3, 12)
        assert (on.input_ids[:, 0] == tok.bos_token_id).all()
        assert not any(int(t) in special for t in off.input_ids.flatten())
    rep = make_inputs(tok, "repeat", n_samples=4, seq_len=10).input_ids
    assert (rep == rep[:, :1]).all() and rep[:, 0].unique().numel() > 1
    text, meta = natural_text()
    assert len(text.split()) > 20000 and meta["text_sha256"]
    with pytest.raises(ValueError, match="valid: natural, random, repeat"):
        make_inputs(tok, "poetry")


def test_token_file_errors(tmp_path):
    def write(obj):
        p = tmp_path / "t.json"
        p.write_text(json.dumps(obj))
        return p
    ok = token_file_inputs(write([[1, 2, 3, 4]] * 2), seq_len=3)
    assert ok.input_ids.tolist() == [[1, 2, 3]] * 2 and ok.bos is False
    for bad, msg in [([[1, 2], [1]], "ragged"), ([], "non-empty"), ([[1, "a"]], "integer"),
                     ([[1, 2]], "fewer than --seq-len")]:
        with pytest.raises(ValueError, match=msg):
            token_file_inputs(write(bad), seq_len=3)
    with pytest.raises(ValueError, match="does not exist"):
        token_file_inputs(tmp_path / "missing.json")


def test_smollm2_sink_on_natural_text_not_on_repeats(smollm2):
    """Table 1's pattern on a real LM: a sink on token 1 for natural text, none when one token repeats."""
    kw = dict(n_samples=16, seq_len=64, bos=False, seed=0)
    nat = measure_sink(smollm2, make_inputs(smollm2.tokenizer, "natural", **kw), progress=False)
    rep = measure_sink(smollm2, make_inputs(smollm2.tokenizer, "repeat", **kw), progress=False)
    assert nat["sink_k"]["1"] > 40.0, nat["sink_k"]
    assert rep["sink_k"]["1"] < 5.0 and rep["sink_k"]["1"] < nat["sink_k"]["1"] / 10
    # massive activation on token 1 of natural text in the middle layers, none on repeats
    assert max(nat["massive_activation_ratio_by_layer"]) > 5.0
    assert max(rep["massive_activation_ratio_by_layer"]) < 2.0
    assert nat["provenance"]["source_of_numbers"] == "computed now" and nat["provenance"]["tokens_measured"] == 1024


def test_gemma3_sink_lives_on_bos(gemma3):
    """Gemma 3 270M puts its sink on BOS: with BOS at position 1 natural text has a sink there; without BOS,
    none (Barbero et al. 2025's observation that a model trained with a fixed BOS relies on it)."""
    kw = dict(n_samples=8, seq_len=64, seed=0)
    with_bos = measure_sink(gemma3, make_inputs(gemma3.tokenizer, "natural", bos=True, **kw), progress=False)
    no_bos = measure_sink(gemma3, make_inputs(gemma3.tokenizer, "natural", bos=False, **kw), progress=False)
    assert with_bos["sink_k"]["1"] > 40.0 and no_bos["sink_k"]["1"] < 5.0
    assert with_bos["n_layers"] == gemma3.n_layers


def test_measure_rejects_bad_input_before_compute(smollm2):
    probe = make_inputs(smollm2.tokenizer, "random", n_samples=2, seq_len=8)
    with pytest.raises(ValueError, match="too short"):
        measure_sink(smollm2, probe)
    with pytest.raises(ValueError, match="epsilon"):
        measure_sink(smollm2, make_inputs(smollm2.tokenizer, "random", n_samples=2, seq_len=16), epsilon=0)
    big = make_inputs(smollm2.tokenizer, "random", n_samples=1, seq_len=16)
    big.input_ids[0, 3] = 10 ** 7
    with pytest.raises(ValueError, match="vocabulary"):
        measure_sink(smollm2, big)
    assert metrics.EPSILON == 0.3


def test_other_families_from_a_local_directory(smollm2, tmp_path):
    """`load_lm` on a local directory: a small randomly initialised GPT-2 (absolute positions, fused QKV, its own
    eager attention) traces with the same contract, so families beyond the offline two work the same way."""
    from transformers import GPT2Config, GPT2LMHeadModel
    torch.manual_seed(0)
    GPT2LMHeadModel(GPT2Config(vocab_size=len(smollm2.tokenizer), n_positions=64, n_embd=32, n_layer=2,
                               n_head=4)).save_pretrained(tmp_path)
    smollm2.tokenizer.save_pretrained(tmp_path)
    lm = load_lm(str(tmp_path))
    probe = make_inputs(lm.tokenizer, "natural", n_samples=3, seq_len=16, bos=True)
    tr = lm.trace(probe.input_ids)
    assert tr.n_layers == 2 and tr.n_heads == 4 and len(tr.hidden_states) == 3
    for a in tr.attentions:
        torch.testing.assert_close(a.sum(-1), torch.ones(3, 4, 16))
    r = measure_sink(lm, probe, progress=False)
    assert len(r["per_layer_sink_1"]) == 2 and r["provenance"]["model"] == str(tmp_path)
    with pytest.raises(ValueError, match="context length 64"):
        lm.trace(torch.zeros(1, 65, dtype=torch.long))


@pytest.mark.parametrize("name,n_samples", [("smollm2", 1), ("gemma3", 2)])
def test_stats_route_gives_the_maps_alphas(name, n_samples, request):
    """LM.trace(method="stats") runs each layer through sinkpaper.fused and keeps only alpha_k: the same
    numbers as the eager maps (Gemma 3's query scaling included; its 512-token windows are not reached here).
    A batch of two on the smaller model; SmolLM2's 30 layers x 9 heads under the interpreter take one row."""
    from sinkpaper import metrics
    from sinkpaper.probes import make_inputs
    lm = request.getfixturevalue(name)
    ids = make_inputs(lm.tokenizer, "natural", n_samples=n_samples, seq_len=24, bos=True, seed=0).input_ids
    maps = metrics.TraceStats.from_trace(lm.trace(ids, with_qkv=False))
    cols = metrics.TraceStats.from_trace(lm.trace(ids, with_qkv=False, method="stats"))
    assert torch.allclose(cols.alphas, maps.alphas, atol=1e-5)
    assert torch.allclose(cols.hidden_norms, maps.hidden_norms, rtol=1e-4)
    assert metrics.sink_rates(cols.alphas) == metrics.sink_rates(maps.alphas)


def test_every_bos_policy_keeps_t_tokens_and_says_what_stands_first(smollm2, gemma3):
    import copy

    from sinkpaper.probes import BOS_POLICIES, default_prefix
    tok = smollm2.tokenizer
    none = make_inputs(tok, "natural", n_samples=3, seq_len=12, seed=1, bos_policy="none").input_ids
    for policy in BOS_POLICIES:
        p = make_inputs(tok, "natural", n_samples=3, seq_len=12, seed=1, bos_policy=policy)
        assert p.input_ids.shape == (3, 12) and p.bos_policy == policy and p.provenance["bos_policy"] == policy
        if policy == "forced":
            assert (p.input_ids[:, 0] == tok.bos_token_id).all() and p.bos
            assert torch.equal(p.input_ids[:, 1:], none[:, :11])          # the same text after it
        if policy == "repeat":
            assert torch.equal(p.input_ids[:, 0], p.input_ids[:, 1]) and torch.equal(p.input_ids[:, 1:], none[:, :11])
        if policy == "random":
            assert int(p.input_ids[0, 0]) not in set(tok.all_special_ids)
    # SmolLM2's tokenizer adds nothing in front by itself; Gemma 3's puts its <bos> first
    assert default_prefix(tok) == []
    assert torch.equal(make_inputs(tok, "natural", n_samples=3, seq_len=12, seed=1, bos_policy="default").input_ids, none)
    g = make_inputs(gemma3.tokenizer, "natural", n_samples=2, seq_len=12, seed=1, bos_policy="default")
    assert default_prefix(gemma3.tokenizer) == [gemma3.tokenizer.bos_token_id] and g.bos
    # a tokenizer without a BOS: the forced row says so, nothing is invented
    no_bos = copy.deepcopy(tok)
    no_bos.bos_token = None
    with pytest.raises(ValueError, match="no BOS token, so a forced BOS cannot be measured"):
        make_inputs(no_bos, "natural", n_samples=2, seq_len=12, bos_policy="forced")
    with pytest.raises(ValueError, match="unknown BOS policy 'sometimes'; valid: default, forced, none, random, repeat"):
        make_inputs(tok, "natural", bos_policy="sometimes")


def test_the_bos_audit_is_one_table_per_model(smollm2):
    from sinkpaper.analysis.packing_bos import bos_audit, format_bos_audit
    r = bos_audit(smollm2, n_samples=4, seq_len=16)
    assert [x["policy"] for x in r["rows"]] == ["default", "forced", "none", "random", "repeat"]
    assert all(0.0 <= x["sink_1"] <= 100.0 for x in r["rows"])
    by = {x["policy"]: x for x in r["rows"]}
    assert by["default"]["sink_1"] == by["none"]["sink_1"]          # SmolLM2's tokenizer adds nothing by itself
    assert by["forced"]["first_token"] == smollm2.tokenizer.bos_token and by["random"]["first_token"] == "varies"
    table = format_bos_audit(r)
    assert table.count("\n| ") == 6 and "adds nothing in front by itself" in table


def test_the_stored_bos_audit_reads_as_one_row_per_model_and_a_wrong_file_is_named(tmp_path):
    from sinkpaper.analysis import packing_bos as pb

    audit = {"audit": "bos", "models": [
        {"model": "m", "default_prefix": [2], "n_samples": 10, "seq_len": 64,
         "rows": [{"policy": "default", "sink_1": 70.0, "alpha_1": 0.5, "first_token": "<bos>"},
                  {"policy": "none", "sink_1": 0.0, "alpha_1": 0.07, "first_token": "varies"},
                  {"policy": "forced", "sink_1": None, "alpha_1": None, "why": "no BOS token"}]}]}
    path = tmp_path / "audit.json"
    path.write_text(json.dumps(audit))
    [row] = pb.bos_audit_rows(pb.load_bos_audit(str(path)))
    assert row["the tokenizer adds"] == "<bos>" and row["Sink_1 %, default"] == "70.0"
    assert row["Sink_1 %, forced"] == "-" and row["Sink_1 %, repeat"] == "-"    # not given / not measured: no number
    assert pb.bos_audit_reading(audit).startswith("m: Sink_1 from 0.0 % (none) to 70.0 % (default)")
    assert pb.load_bos_audit(str(tmp_path / "absent.json")) is None
    path.write_text(json.dumps({"models": {}}))
    with pytest.raises(ValueError, match="is not a BOS audit"):
        pb.load_bos_audit(str(path))


@pytest.mark.slow
def test_a_model_cache_that_is_not_whole_is_rebuilt_never_read(tmp_path, monkeypatch):
    """`models prepare` on a cache of its own: prepared once, one line when ready, and a weights file cut short (a
    killed copy) is found before anything is loaded from it and built again."""
    from sinkpaper.lms import prepare_offline
    pytest.importorskip("gguf")
    monkeypatch.setenv("SINKPAPER_CACHE", str(tmp_path))
    lines = []
    path = prepare_offline("smollm2-135m", say=lines.append)
    assert "prepared" in lines[-1] and "$SINKPAPER_CACHE/models/smollm2-135m" in lines[-1]
    prepare_offline("smollm2-135m", say=lines.append)
    assert lines[-1] == "smollm2-135m: ready ($SINKPAPER_CACHE/models/smollm2-135m)"
    weights = next(path.glob("*.safetensors"))
    weights.write_bytes(weights.read_bytes()[:4096])
    prepare_offline("smollm2-135m", say=lines.append)
    assert "rebuilt (the cached copy was not whole)" in lines[-1]
    assert load_lm("smollm2-135m").n_layers > 0


def test_models_prepare_names_the_valid_models_for_an_unknown_one(capsys):
    from sinkpaper.cli import main
    assert main(["models", "prepare", "--model", "smollm3"]) == 2
    err = capsys.readouterr().err
    assert "unknown offline model(s) smollm3; valid: gemma3-270m, smollm2-135m" in err
