"""The results-store key and config checking: a canonical identity (fields at their default left out, definition
revisions in), so adding a defaulted field keeps every committed key while a revision bump changes the key and
makes older runs stale; the one-command migration; type checks of every config field against its annotation."""
from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

import sinkpaper.models.config as model_config
import sinkpaper.train.config as C
from sinkpaper.fields import canonical, check_types
from sinkpaper.models.config import ModelConfig
from sinkpaper.train import store as S
from sinkpaper.train.config import build, identity, identity_hash, parse_sets

REPO = Path(__file__).resolve().parent.parent
COMMITTED = REPO / "results" / "store"
TINY = {"name": "tiny", "model": {"d_model": 32, "n_layers": 1, "n_heads": 2, "d_ff": 64, "max_seq_len": 64},
        "data": {"source": "random", "vocab_size": 64, "n_tokens": 4000, "context": 16},
        "optim": {"steps": 4, "batch_size": 4, "warmup": 1}, "eval": {"every": 2, "n_samples": 4, "seq_len": 16}}


def _committed() -> list[tuple[Path, dict]]:
    return list(S.entries(COMMITTED))


def _extend(cls, name="added_later", default=7):
    """A subclass of dataclass `cls` with one more field, at a default: what a future issue's change looks like."""
    return dataclasses.make_dataclass(cls.__name__, [(name, int, dataclasses.field(default=default))], bases=(cls,))


def _old_scheme_key(config: dict) -> str:
    """The key before this scheme: the whole config minus bookkeeping, every field written out."""
    d = json.loads(json.dumps(config))
    for k in C.BOOKKEEPING:
        d.get("run", {}).pop(k, None)
    return identity_hash(d)


# --------------------------------------------------------------------------------------------- the key
def test_every_committed_run_is_named_by_its_key_and_only_old_v_bias_runs_are_stale():
    runs = _committed()
    assert len(runs) >= 70
    stale = {e["key"]: e for e in S.stale_results(COMMITTED)}
    for path, payload in runs:
        assert S.entry_key(path) == payload["hash"] == S.stored_key(payload), path.name  # migrated
        # v_bias runs made before its revision 2 (the paper's form) are stale; the reruns carry the revision
        old_v_bias = (payload["config"]["model"].get("sink") == "v_bias"
                      and payload.get("revisions", {}).get("sink", 1) < 2)
        assert (S.entry_key(path) in stale) == old_v_bias, path.name
    assert stale and all("model.sink='v_bias' revision 1 (now 2); stale, rerun" in e["reason"] for e in stale.values())
    listed = {p["hash"] for p in S.list_results(COMMITTED)}
    assert listed == {S.entry_key(p) for p, _ in runs} - set(stale)  # a stale run is never listed as current


@pytest.mark.parametrize("section", ["data", "optim", "eval", "run", "model"])
def test_a_new_defaulted_field_keeps_every_existing_key(section, monkeypatch):
    """Add a field with a default to one section (as a later change would) and recompute: every committed key and
    a freshly built config's key stay the same, although to_dict() now writes the new field out."""
    before = build(TINY, "cpu").hash()
    if section == "model":
        monkeypatch.setattr(C, "ModelConfig", _extend(ModelConfig))
    else:
        monkeypatch.setitem(C.SECTIONS, section, _extend(C.SECTIONS[section]))
    for path, payload in _committed():
        config = json.loads(json.dumps(payload["config"]))
        (config.setdefault(section, {}))["added_later"] = 7  # what the new code's to_dict() would write
        assert identity_hash(identity(config, S.recorded_revisions(payload))) == S.entry_key(path), path.name
        assert S.current_key({**payload, "config": config}) == S.current_key(payload)
    if section != "model":
        cfg = build(TINY, "cpu")
        assert getattr(getattr(cfg, section), "added_later") == 7 and cfg.hash() == before
        changed = build(TINY, "cpu", {f"{section}.added_later": 8})  # a non-default value is a different run
        assert changed.hash() != before


def test_defaults_written_out_and_ints_in_float_fields_do_not_change_the_key():
    base = build(TINY, "cpu").hash()
    assert build(TINY, "cpu", {"optim.grad_clip": 1.0, "model.norm": "pre", "data.bos": False}).hash() == base
    assert build(TINY, "cpu", {"optim.lr_scale": 2}).hash() == build(TINY, "cpu", {"optim.lr_scale": 2.0}).hash()
    assert build(TINY, "cpu", {"optim.lr_scale": 2}).hash() != base
    assert build(TINY, "cpu", {"run.threads": 2, "run.log_every": 1}).hash() == base  # bookkeeping
    assert canonical(ModelConfig, {"rope_base": 10000, "d_model": 768, "sink": "kv_bias"}) == {"sink": "kv_bias"}


def test_a_definition_revision_bump_changes_the_key_and_makes_stored_runs_stale(tmp_path, monkeypatch):
    v_bias = build(TINY, "cpu", {"model.sink": "v_bias"})
    other = build(TINY, "cpu", {"model.sink": "kv_bias"})
    assert v_bias.revisions() == {"sink": 2} and other.revisions() == {}
    assert v_bias.identity()["definitions"] == {"model.sink": 2} and "definitions" not in other.identity()
    S.write_result(tmp_path, v_bias, {"x": 1})
    S.write_result(tmp_path, other, {"x": 2})
    assert S.read_entry(S.result_path(tmp_path, v_bias.hash()))["revisions"] == {"sink": 2}
    key, other_key = v_bias.hash(), other.hash()

    monkeypatch.setitem(model_config.DEFINITION_REVISIONS, "sink", {"v_bias": 3})
    assert v_bias.hash() != key and other.hash() == other_key
    assert S.read_result(tmp_path, v_bias) is None  # the run of the old definition is not returned as current
    assert S.read_result(tmp_path, other)["result"] == {"x": 2}
    (stale,) = S.stale_results(tmp_path)
    assert stale["key"] == key and stale["current_key"] == v_bias.hash()
    assert stale["reason"] == "ran under an older definition: model.sink='v_bias' revision 2 (now 3); stale, rerun"
    assert [p["hash"] for p in S.list_results(tmp_path)] == [other_key]
    # the one lookup: the old run is stale, with the store's reason; the other found; an unstored config missing
    got = S.get(tmp_path, v_bias)
    assert got.status == S.STALE and got.payload["hash"] == key and "revision 2 (now 3)" in got.reason
    assert S.get(tmp_path, other).status == S.FOUND and S.get(tmp_path, other).payload["result"] == {"x": 2}
    assert S.get(tmp_path, build(TINY, "cpu", {"model.sink": "k_bias", "name": "tiny/k_bias"})) == S.Lookup(S.MISSING)
    # the same name and seed with other settings: the point changed after its run was stored
    assert S.get(tmp_path, build(TINY, "cpu", {"model.sink": "k_bias"})).status == S.STALE
    assert S.migrate(tmp_path) == [] and S.result_path(tmp_path, key).exists()  # kept, still stale
    S.write_result(tmp_path, v_bias, {"x": 3})  # the rerun lands next to it, under the new key
    assert S.read_result(tmp_path, v_bias)["result"] == {"x": 3} and len(S.stale_results(tmp_path)) == 1


def test_migrate_renames_old_scheme_runs_keeps_changed_definitions_stale_and_is_idempotent(tmp_path):
    store = tmp_path / "store"
    store.mkdir()
    names = {}
    # six runs whose definitions never changed (a run under a revised definition, such as the kernel operators',
    # re-keys elsewhere by design), and one V-bias run, whose definition did
    committed = _committed()
    unrevised = [r for r in committed if not r[1].get("revisions")]
    v_bias = [r for r in committed if r[1]["config"]["model"].get("sink") == "v_bias"][:1]
    for path, payload in unrevised[:6] + v_bias:
        legacy = {k: v for k, v in payload.items() if k != "revisions"}  # as written before this scheme
        legacy["hash"] = _old_scheme_key(payload["config"])
        (store / f"{legacy['hash']}.json").write_text(json.dumps(legacy, indent=1))
        names[legacy["hash"]] = S.entry_key(path)
    assert len(S.stale_results(store)) == len(names)  # all named by the old scheme
    renamed = S.migrate(store)
    assert sorted(renamed) == sorted((f"{old}.json", f"{new}.json.gz") for old, new in names.items())
    assert sorted(S.entry_key(p) for p in S.entry_paths(store)) == sorted(names.values())  # nothing lost or added
    assert not list(store.glob("*.json"))                                  # every entry rewritten compressed
    for p in S.entry_paths(store):
        assert p.read_bytes() == (COMMITTED / p.name).read_bytes()  # the same bytes as the committed migration
    (stale,) = S.stale_results(store)
    assert "v_bias" in stale["name"]
    snapshot = {p.name: p.read_bytes() for p in S.entry_paths(store)}
    assert S.migrate(store) == [] and {p.name: p.read_bytes() for p in S.entry_paths(store)} == snapshot
    # an interrupted migration (an old plain copy left next to the new file) resolves to one file
    some = next(iter(names))
    (store / f"{names[some]}.json").write_text(json.dumps(S.read_entry(store / f"{names[some]}.json.gz")))
    assert S.migrate(store) == [] and {p.name: p.read_bytes() for p in S.entry_paths(store)} == snapshot


def test_store_entries_are_compressed_and_byte_reproducible(tmp_path):
    cfg = build(TINY)
    a = S.write_result(tmp_path / "a", cfg, {"x": 1.5}, curve=[{"step": 1, "loss": 2.0}])
    b = S.write_result(tmp_path / "b", cfg, {"x": 1.5}, curve=[{"step": 1, "loss": 2.0}])
    assert a.name.endswith(".json.gz") and a.read_bytes() == b.read_bytes()
    assert a.read_bytes()[:2] == b"\x1f\x8b"                                # gzip
    assert S.read_result(tmp_path / "a", cfg)["result"] == {"x": 1.5}
    # a plain entry written before the store was compressed is still read, and replaced by a rewrite
    legacy = tmp_path / "c" / f"{cfg.hash()}.json"
    legacy.parent.mkdir()
    legacy.write_text(json.dumps(S.read_entry(a)))
    assert S.read_result(tmp_path / "c", cfg)["result"] == {"x": 1.5}
    S.write_result(tmp_path / "c", cfg, {"x": 1.5})
    assert [p.name for p in S.entry_paths(tmp_path / "c")] == [f"{cfg.hash()}.json.gz"]


def test_a_rerun_replaces_a_stored_run_only_if_it_reproduces_every_stored_value(tmp_path, capsys):
    from sinkpaper.cli import main
    cfg = build(TINY)
    stored_curve = [{"step": 2, "loss": 2.0, "sink_k": {"1": 5.0}, "wall_seconds": 3.0},
                    {"step": 4, "loss": 1.5, "sink_k": {"1": 7.5}, "wall_seconds": 6.0}]
    store = S.write_result(tmp_path / "store", cfg, {"val_loss": 1.4, "provenance": {"wall_seconds": 6.0},
                                                     "data": {"n_train_tokens": 9, "mapped": "/cache/a.tok"}},
                           curve=stored_curve).parent

    def rerun(folder, curve, result=None):
        # today's evaluation records one more value; timings and provenance differ
        result = result or {"val_loss": 1.4, "massive": [1.0, 9.0], "provenance": {"wall_seconds": 60.0},
                            "data": {"n_train_tokens": 9, "mapped": "/other/cache/a.tok"}}
        return S.write_result(tmp_path / folder, cfg, result, curve=curve)
    same = rerun("same", [{**r, "massive": [1.0, 9.0], "wall_seconds": 10 * r["wall_seconds"]} for r in stored_curve])
    renamed = S.read_entry(same)                     # trained under another name (a family's base is another's point)
    S.write_entry(same, {**renamed, "name": "other/default", "result": {**renamed["result"], "name": "other/default"}})
    drifted = rerun("drifted", [stored_curve[0], {**stored_curve[1], "sink_k": {"1": 7.25}}])
    short = rerun("short", stored_curve[:1])
    assert S.rerun_difference(S.read_entry(S.result_path(store, cfg.hash())), S.read_entry(same)) is None
    for path, why in ((drifted, r"curve\[step 4\]\.sink_k\.1: 7\.5 stored, 7\.25 in the rerun"),
                      (short, "curve: step 4 missing in the rerun")):
        with pytest.raises(ValueError, match=why + "; nothing replaced"):
            S.replace_with_reruns(store, [same, path])                 # checked first: same is not written either
    assert "massive" not in S.read_result(store, cfg)["result"]
    other = S.write_result(tmp_path / "other", build({**TINY, "optim": {**TINY["optim"], "steps": 6}}), {})
    with pytest.raises(ValueError, match="no stored run .* to replace"):
        S.replace_with_reruns(store, [other])
    assert main(["store", "replace", "--store", str(store)]) == 2
    assert "needs --rerun DIR" in capsys.readouterr().err
    assert main(["store", "replace", "--store", str(store), "--rerun", str(drifted.parent)]) == 2
    assert "does not reproduce" in capsys.readouterr().err
    assert main(["store", "replace", "--store", str(store), "--rerun", str(same.parent)]) == 0
    assert "replaced" in capsys.readouterr().out
    got = S.read_result(store, cfg)
    assert got["result"]["massive"] == [1.0, 9.0] and got["curve"][1]["massive"] == [1.0, 9.0]
    assert got["name"] == cfg.name and "stored_as" not in got                # the name it was stored under


def test_a_curve_is_stored_at_the_precision_it_was_computed_in_and_a_rerun_at_full_precision_still_reproduces_it(
        tmp_path):
    """Every float of a stored curve reads back as the very fp32 value the trainer computed (the float64 digits
    beyond it are noise), integers and names untouched; the file is smaller; a stored run kept at full precision
    is reproduced by its rerun stored at fp32 precision, and a real difference (one fp32 step) is still one."""
    import numpy as np
    cfg = build(TINY)
    rng = np.random.default_rng(0)
    computed = [float(np.float32(v)) for v in rng.random(400)]                 # fp32 numbers, as float64 reprs
    curve = [{"step": i, "tokens": 2**40 + i, "loss": 6.0 + computed[i], "sink_k": {"1": 100 * computed[i + 100]},
              "alpha_1_matrix": [[computed[i + 200], computed[i + 300]]], "route": "SDPA", "spike": None,
              "huge": 1e300} for i in range(100)]
    path = S.write_result(tmp_path / "a", cfg, {"val_loss": 1.0 / 3.0}, curve=curve)
    got = S.read_entry(path)
    for a, b in zip(curve, got["curve"]):
        assert b["step"] == a["step"] and b["tokens"] == a["tokens"] and b["route"] == "SDPA" and b["spike"] is None
        assert np.float32(b["loss"]) == np.float32(a["loss"]) and np.float32(b["sink_k"]["1"]) == np.float32(
            a["sink_k"]["1"])
        assert np.float32(b["alpha_1_matrix"][0][1]) == np.float32(a["alpha_1_matrix"][0][1])
        assert b["huge"] == 1e300                                                 # outside fp32: kept as it was
    assert len(repr(got["curve"][5]["alpha_1_matrix"][0][0])) <= 12 < len(repr(curve[5]["alpha_1_matrix"][0][0]))
    assert got["result"]["val_loss"] == 1.0 / 3.0                                # the result is kept whole
    full = {**got, "curve": curve}                                                # stored before, at full precision
    assert S.rerun_difference(full, got) is None
    off = [dict(r) for r in got["curve"]]
    off[7]["loss"] = float(np.nextafter(np.float32(off[7]["loss"]), np.float32(9)))
    assert "curve[step 7].loss" in S.rerun_difference(full, {**got, "curve": off})
    # a run stored before, at full precision, is rewritten at fp32 precision by migrate, the rest of it as it was
    S.write_entry(path, full)
    assert S.read_entry(path)["curve"] == curve
    assert S.migrate(tmp_path / "a") == [] and S.read_entry(path) == got


def test_migrate_refuses_two_files_of_one_config_with_different_results(tmp_path):
    (path, payload), = _committed()[:1]
    a = dict(payload, hash="a" * 16)
    b = dict(payload, hash="b" * 16, result={"changed": True})
    (tmp_path / f"{a['hash']}.json").write_text(json.dumps(a))
    (tmp_path / f"{b['hash']}.json").write_text(json.dumps(b))
    with pytest.raises(ValueError, match="hold the same config .* with different results"):
        S.migrate(tmp_path)
    assert sorted(p.stem for p in tmp_path.glob("*.json")) == ["a" * 16, "b" * 16]  # nothing changed


# ------------------------------------------------------------------------------------------- the types
@pytest.mark.parametrize("overrides,match", [
    ({"optim.lr": "abc"}, r"optim\.lr must be a number, got 'abc' \(str\)"),
    ({"optim.steps": 2.5}, r"optim\.steps must be an integer, got 2\.5"),
    ({"data.bos": 1}, r"data\.bos must be true or false, got 1"),
    ({"data.fixed_token": [1]}, r"data\.fixed_token must be an integer or a string or null"),
    ({"run.seed": "x"}, r"run\.seed must be an integer"),
    ({"eval.epsilon": True}, r"eval\.epsilon must be a number, got True"),
    ({"model.d_model": 64.5}, r"model\.d_model must be an integer, got 64\.5"),
    ({"model.sink": 3}, r"model\.sink must be a string, got 3"),
    ({"model.window": "16"}, r"model\.window must be an integer or null, got '16'"),
    ({"model.no_such_field": 1}, r"unknown config key 'model\.no_such_field'"),
])
def test_wrong_typed_values_fail_with_one_line_naming_the_type(overrides, match):
    with pytest.raises(ValueError, match=match) as info:
        build(TINY, "cpu", overrides)
    assert "\n" not in str(info.value)


def test_model_config_checks_its_annotations_and_sections_are_mappings():
    with pytest.raises(ValueError, match=r"^n_heads must be an integer, got '4' \(str\)$"):
        ModelConfig(n_heads="4")
    assert ModelConfig(rope_base=500000).rope_base == 500000  # an int where a float is expected is fine
    with pytest.raises(ValueError, match="config section 'optim' must be a mapping"):
        build({**TINY, "optim": [1, 2]}, "cpu")
    check_types(C.OptimConfig, {"lr": 1, "betas": (0.9, 0.95)})  # ints for floats, tuples for lists


def test_yaml_mistakes_in_set_are_one_line_value_errors():
    with pytest.raises(ValueError, match=r"--set optim\.betas: '\[0\.9,' is not a valid YAML value") as info:
        parse_sets(["optim.betas=[0.9,"])
    assert "\n" not in str(info.value)
    with pytest.raises(ValueError, match="is not a valid YAML value"):
        parse_sets(["name={a: [}"])



def test_a_result_from_a_checkout_with_uncommitted_changes_names_them(monkeypatch):
    import hashlib
    import subprocess as sp

    from sinkpaper import provenance
    monkeypatch.setattr(provenance, "_checkout", lambda: ("a" * 40, True))
    monkeypatch.setattr(provenance.subprocess, "run",
                        lambda *a, **k: sp.CompletedProcess(a, 0, stdout=b"--- a/x\n+++ b/x\n+changed\n"))
    provenance.uncommitted_diff.cache_clear()
    try:
        assert provenance.stamp(None)["diff_sha256"] == hashlib.sha256(b"--- a/x\n+++ b/x\n+changed\n").hexdigest()
        monkeypatch.setattr(provenance, "_checkout", lambda: ("a" * 40, False))
        provenance.uncommitted_diff.cache_clear()
        assert "diff_sha256" not in provenance.stamp(None)       # a clean checkout: its commit says it all
    finally:
        provenance.uncommitted_diff.cache_clear()
