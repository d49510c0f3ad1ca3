"""The registry's scales beyond the 2-layer text recipe: the same recipe at 4 layers (configs/layers_4.yaml, its
claims and rules registered before its runs) and the paper's default packing on a CPU (configs/default_cpu.yaml),
each read from stores built for the test."""
from __future__ import annotations

import pytest

from sinkpaper import paper
from sinkpaper.book import findings
from tests.test_verdicts import _stored_text_run

FOUR = paper.LAYERS_4_SCALE


def test_every_point_a_4_layer_reading_names_is_registered_in_the_configs():
    from sinkpaper.train.config import sweep_points

    for c in paper.CLAIMS:
        for scale in (FOUR, paper.DEFAULT_CPU_SCALE):
            m = c.measure[scale]
            if isinstance(m, paper.Runs):
                for label, (point, *rest) in m.points.items():
                    config = rest[1] if len(rest) > 1 else m.config
                    assert point in sweep_points(config), f"{c.id} at {scale}: {label} -> {point} not in {config}"
                rule = paper.scale_rule(c, scale)
                labels = set(getattr(rule, "labels", ())) | {getattr(rule, "base", None)} - {None}
                assert labels <= set(m.points), f"{c.id} at {scale}: the rule reads {labels - set(m.points)}"


def test_a_point_not_stored_at_4_layers_reads_no_result_naming_the_run_and_its_command(tmp_path):
    r = paper.result(paper.claim("arch_norm"), FOUR, store=str(tmp_path))
    assert r["verdict"] == paper.NO_RESULT and r["values"] == {"post_norm": None}
    assert r["note"].startswith("not stored: post_norm_layers_4 seeds 0, 1, 2 (run: python -m sinkpaper sweep "
                                "--profile text --config configs/layers_4.yaml --points post_norm_layers_4 "
                                "--seeds 0 1 2)")


def test_the_4_layer_column_reads_its_own_runs_by_the_claims_rule_over_its_points(tmp_path):
    """arch_heads at 4 layers: heads added against the 4-layer base, both at the budget plan's 10,000 steps
    (configs/budget.yaml; MattersLittle over the one point run there),
    each seed read on its plateau: every seed within a factor 2 of the base's agrees, one seed outside it is
    inconclusive, every seed outside it disagrees. The 2-layer column, with nothing stored, reads no result."""
    store = str(tmp_path)
    c = paper.claim("arch_heads")
    for seed, (base, added) in enumerate([(70.0, 60.0), (74.0, 55.0), (68.0, 50.0)]):
        _stored_text_run(store, "configs/budget.yaml", "base_layers_4_steps_x4", seed, {"Sink_1": base})
        _stored_text_run(store, "configs/budget.yaml", "heads_add_layers_4_steps_x4", seed, {"Sink_1": added})
    r = paper.result(c, FOUR, store=store)
    assert r["verdict"] == paper.AGREES, r
    assert r["rule"] == "default has a sink (>= 10 %) and heads_add are each within a factor 2 of it."
    assert r["seed_values"] == {"heads_add": [60.0, 55.0, 50.0], "default": [70.0, 74.0, 68.0]}
    assert paper.result(c, "real text (CPU)", store=store)["verdict"] == paper.NO_RESULT
    _stored_text_run(store, "configs/budget.yaml", "heads_add_layers_4_steps_x4", 2, {"Sink_1": 20.0})
    assert paper.result(c, FOUR, store=store)["verdict"] == paper.INCONCLUSIVE     # one seed out: not every seed
    for seed in (0, 1):
        _stored_text_run(store, "configs/budget.yaml", "heads_add_layers_4_steps_x4", seed, {"Sink_1": 20.0})
    assert paper.result(c, FOUR, store=store)["verdict"] == paper.DISAGREES


def test_a_quarter_batch_at_4_layers_is_read_at_the_base_s_steps_and_shown_at_its_tokens(tmp_path):
    """opt_batch at 4 layers: the quarter batch's run of 40,000 steps (the base's tokens) is read on its prefix of
    10,000 steps, the base's, so the rule compares equal steps as at 2 layers; its full run is shown beside."""
    store = str(tmp_path)
    for seed in (0, 1, 2):
        _stored_text_run(store, "configs/budget.yaml", "base_layers_4_steps_x4", seed, {"Sink_1": 70.0})
        _stored_text_run(store, "configs/budget.yaml", "batch_x0.25_layers_4_steps_x16", seed, {"Sink_1": 80.0})
    r = paper.result(paper.claim("opt_batch"), FOUR, store=store)
    assert r["steps"] == {"batch_x0.25": [10_000], "default": [10_000],
                          "batch_x0.25 (the base's tokens, beside)": [40_000]}
    assert r["verdict"] == paper.AGREES, r      # a sink within a factor 2 of the base's, at equal steps
    # the prefix holds the run as it stood at step 10,000 (its sink still growing there), not its end
    assert r["values"]["batch_x0.25"] < r["values"]["batch_x0.25 (the base's tokens, beside)"] == pytest.approx(80.0)


def _entry(two: str, four: str) -> dict:
    res = {s: {"verdict": paper.NO_RESULT, "status": paper.NOT_RUN, "values": {}} for s in paper.SCALES}
    res["real text (CPU)"] = {"verdict": two, "status": "found", "values": {"x": 1.0}}
    res[FOUR] = {"verdict": four, "status": "found", "values": {"x": 1.0}}
    return {"id": "arch_heads", "claim": "c", "kind": "reproduction", "rule": "r",
            "paper": {"source": "s", "values": {}}, "results": res}


@pytest.mark.parametrize("two,four,said", [
    (paper.DISAGREES, paper.AGREES, "At 4 layers this reads agrees, where the 2-layer recipe reads disagrees."),
    (paper.AGREES, paper.AGREES, ""),
    (paper.DISAGREES, paper.NO_RESULT, ""),             # a 4-layer reading not made yet says nothing
    (paper.NOT_COMPARABLE, paper.AGREES, ""),           # nor one the 2-layer rule could not judge
])
def test_a_card_says_in_one_sentence_where_the_4_layer_verdict_differs(two, four, said):
    assert findings.depth_note(_entry(two, four)) == said
    assert (said in findings.card_row(_entry(two, four))) and (bool(said) == ("spx-depth" in findings.card_row(
        _entry(two, four))))


def test_the_paper_default_on_a_cpu_reads_a_run_in_progress_from_its_partial_curve(tmp_path):
    """A run still training is read from the curve it keeps beside the store (unfinished: a last value, never a
    plateau); once stored whole its partial curve is gone and it is read as a result."""
    from sinkpaper.book import default_lead
    from sinkpaper.results import default_cpu as D
    from sinkpaper.train import store as S
    from sinkpaper.train.sweep import sweep_configs

    [(point, seed, cfg)] = sweep_configs(D.CONFIG, D.PROFILE, [D.POINTS[0]], [0])
    per = cfg.optim.batch_size * cfg.data.context
    curve = [{"step": st, "tokens": per * st, "loss": 6.0, "val_loss": 6.1, "sink_k": {"1": 2.0 * st / 100},
              "alpha_1_mean": 0.074, "per_layer_sink_1": [0.0, 0.0, 1.0, 3.0]} for st in (100, 200, 300)]
    S.write_partial(tmp_path, cfg, curve, {"step": 300, "steps": cfg.optim.steps, "tokens": per * 300})
    [run] = D.runs(store=str(tmp_path))
    assert (run.point, run.seed, run.finished, run.progress["step"]) == (point, 0, False, 300)
    f = D.facts(run.payload, run.finished)
    assert f["plateau"] is None and f["last_sink_1"] == 6.0 and f["leaves_uniform"] is None and f["sink_layers"] == []
    got = default_lead.lead(store=str(tmp_path))
    chart, text = got.chart, got.text
    # one short clause on the lead while it trains; alpha_1 and the pace in its tooltip
    assert (f"d {cfg.model['d_model']}, seed 0: {per * 300 / 1e6:.0f}M of {per * cfg.optim.steps / 1e6:.0f}M tokens, "
            "Sink_1 6 %</span>") in text
    assert f'title="{point} (running); alpha_1 still uniform' in text
    assert chart is not None and "18.18 %" in text
    assert paper.result(paper.claim("opt_emergence"), paper.DEFAULT_CPU_SCALE, store=str(tmp_path))["verdict"] \
        == paper.NO_RESULT   # a run in progress is no result


def test_a_card_names_the_scales_with_no_result_yet_on_one_line_with_their_reasons():
    e = _entry(paper.AGREES, paper.NO_RESULT)
    e["results"][paper.DEFAULT_CPU_SCALE] = {"verdict": paper.NO_RESULT, "status": "missing", "values": {},
                                             "note": "not stored: default_cpu_d128 seed 0 (run: python -m ...)"}
    e["results"][FOUR]["status"] = "too few seeds"
    html = findings.card_row(e)
    assert html.count("spx-pending") == 1 and html.count(">no result<") == 1   # one line, one grey chip
    line = html[html.index("spx-pending"):]
    assert f">{FOUR}<" in line and "(fewer than 3 seeds that trained)" in line
    assert ">real text, paper&#x27;s default (CPU)<" in line and "(not stored yet)" in line
    assert "default_cpu_d128 seed 0 (run: python -m ...)" in line       # the note, in the tooltip
    assert html.count('class="spx-verdict"') == 1                        # the one scale with a verdict: its chip
    assert findings.pending_line(e, []) == ""


def test_a_stale_point_at_4_layers_reads_no_result_naming_each_run_once_and_its_command(tmp_path):
    """Runs stored under settings the point no longer has (here an older learning rate) are shown, never read:
    the reading names each run once, however many labels read it (data_fixed_pos reads Sink_1-3 of one run),
    and the sweep that trains them; the Markdown listing shows that in place of a value."""
    import gzip
    import json

    from sinkpaper.train.store import read_entry, result_path
    from tests.test_verdicts import _text_cfg

    store = str(tmp_path)
    for point in ("fixed_pos2_layers_4", "fixed_pos3_layers_4"):
        for seed in (0, 1, 2):
            _stored_text_run(store, "configs/data.yaml", point, seed, {"Sink_2": 60.0, "Sink_3": 60.0})
            path = result_path(store, _text_cfg("configs/data.yaml", point, seed).hash())
            payload = read_entry(path)
            payload["config"]["optim"]["lr"] *= 2          # the point's settings changed after it ran
            path.write_bytes(gzip.compress(json.dumps(payload).encode()))
    r = paper.result(paper.claim("data_fixed_pos"), FOUR, store=store)
    assert r["verdict"] == paper.NO_RESULT and r["values"] == {}
    assert r["note"] == ("stale, rerun: fixed_pos2_layers_4 seeds 0, 1, 2, fixed_pos3_layers_4 seeds 0, 1, 2 were "
                         "stored under an older definition or settings of the point (run: python -m sinkpaper sweep "
                         "--profile text --config configs/data.yaml --points fixed_pos2_layers_4 fixed_pos3_layers_4 "
                         "--seeds 0 1 2)")
    e = {"id": "data_fixed_pos", "claim": "c", "section": "5", "paper": {"values": {}}, "results": {FOUR: r}}
    assert r["note"] in paper.markdown_table([e], FOUR)


def test_the_default_plan_s_run_time_is_its_steps_at_the_step_time_measured_for_it(tmp_path):
    """Chapter 4's lead says how long the plan's first run takes before it exists: its steps at the step time
    measured for its shape, dtype and route, scaled from the measured batch to the plan's; nothing where the
    step is not measured (never a remembered figure)."""
    import json
    import shutil
    from pathlib import Path

    from sinkpaper.results import default_cpu as D
    from sinkpaper.results.measured import CPU_ROUTES

    shutil.copytree(Path(__file__).parents[1] / "configs", tmp_path / "configs")
    assert D.planned_hours(tmp_path) is None
    row = {"T": 256, "batch": 32, "compiled": True}
    rows = [{**row, "profile": "paper's default on a CPU (fp32, compiled)", "dtype": "fp32", "reference_ms": 2000.0,
             "sdpa_ms": 1000.0, "route_taken": "SDPA"},
            {**row, "profile": "paper's default on a CPU (bf16, compiled)", "dtype": "bf16", "reference_ms": 7000.0,
             "sdpa_ms": 5000.0, "route_taken": "SDPA"},
            {**row, "T": 64, "profile": "text, 4 layers (fp32, compiled)", "dtype": "fp32", "reference_ms": 9.0,
             "sdpa_ms": 9.0, "route_taken": "SDPA"}]
    (tmp_path / CPU_ROUTES).parent.mkdir(parents=True)
    (tmp_path / CPU_ROUTES).write_text(json.dumps({"profile_steps": rows}))
    # the plan trains fp32: 10,000 steps of 128 x 256 tokens, each 4 measured steps of 32 x 256 at 1 s
    assert D.planned_hours(tmp_path) == pytest.approx(10_000 * 4 * 1.0 / 3600)
    from sinkpaper.book import default_lead
    text = default_lead.lead(store=str(tmp_path / "store")).text        # no run stored: the time the plan takes
    assert f"no run yet (about {D.planned_hours():.0f} hours of one thread)</span>" in text


def test_the_default_plan_trains_next_what_its_config_decided_from_each_stored_seed_0(tmp_path, capsys):
    """configs/default_cpu.yaml's decision, read from the store: seed 0 of each configuration in turn, seeds 1-2 of
    the first whose seed 0 reaches the bar (20 % on it clears), and nothing after two configurations below it."""
    from sinkpaper.book import default_lead
    from sinkpaper.cli import main
    from sinkpaper.results import default_cpu as D
    d128, d256 = D.POINTS

    def next_of(store):
        n = D.next_runs(store=str(store))
        return n.point, n.seeds, n.why

    assert next_of(tmp_path)[:2] == (d128, (0,))
    _stored_text_run(tmp_path, D.CONFIG, d128, 0, {"Sink_1": 19.9})
    point, seeds, why = next_of(tmp_path)
    assert (point, seeds) == (d256, (0,))
    assert f"{d128} seed 0 read Sink_1 19.9 % on its plateau, below the 20 % bar" in why
    lead = default_lead.lead(store=str(tmp_path)).text
    assert "below the 20 % bar</span>" in lead and f"<b>Next, as planned</b>: {d256} seed 0 is the plan" in lead
    # until a configuration clears the bar, the scale says the plan's decision, never "run d128's seeds 1-2"
    emergence = paper.result(paper.claim("opt_emergence"), paper.DEFAULT_CPU_SCALE, store=str(tmp_path))
    assert emergence["verdict"] == paper.NO_RESULT and f"default={d128}" in emergence["measurement"]
    assert emergence["note"].startswith("read once a configuration's seed 0 clears the 20 % bar")
    assert f"{d256} seed 0 is the plan's next run" in emergence["note"] and "seeds 1, 2" not in emergence["note"]
    _stored_text_run(tmp_path, D.CONFIG, d256, 0, {"Sink_1": 20.0})
    assert next_of(tmp_path)[:2] == (d256, (1, 2))
    assert f"<b>Next, as planned</b>: seeds 1 and 2 of {d256} are" in default_lead.lead(store=str(tmp_path)).text
    # the registry's scale reads the configuration that cleared the bar, and asks for its seeds 1-2
    emergence = paper.result(paper.claim("opt_emergence"), paper.DEFAULT_CPU_SCALE, store=str(tmp_path))
    assert f"default={d256}" in emergence["measurement"] and f"not stored: {d256} seeds 1, 2" in emergence["note"]
    assert main(["default-plan", "--args", "--store", str(tmp_path)]) == 0
    assert capsys.readouterr().out.split() == ["--profile", "text", "--config", D.CONFIG, "--points", d256, "--seeds",
                                               "1", "2"]
    for seed in (1, 2):
        _stored_text_run(tmp_path, D.CONFIG, d256, seed, {"Sink_1": 5.0})
    point, seeds, why = next_of(tmp_path)
    assert (point, seeds) == (None, ()) and why.endswith("its seeds 1 and 2 are stored: the plan is done")
    assert main(["default-plan", "--args", "--store", str(tmp_path)]) == 0 and capsys.readouterr().out.strip() == ""

    below = tmp_path / "below"   # neither clears: no third configuration
    for pt in (d128, d256):
        _stored_text_run(below, D.CONFIG, pt, 0, {"Sink_1": 3.0})
    point, seeds, why = next_of(below)
    assert (point, seeds) == (None, ()) and "no configuration cleared the bar" in why
    cleared = tmp_path / "cleared"   # the first clears: its own seeds, never the second configuration
    _stored_text_run(cleared, D.CONFIG, d128, 0, {"Sink_1": 25.0})
    _stored_text_run(cleared, D.CONFIG, d128, 2, {"Sink_1": 25.0})
    assert next_of(cleared)[:2] == (d128, (1,))
