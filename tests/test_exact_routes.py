"""A route is exact or it does not train: every route a training step can take computes the gradients of q, k, v
and of every sink / bias against fp64 within SDPA's own error on the same inputs, at bf16 autocast and at the
logits training reaches (|s| up to ~96: the text recipe's logits pass 50 by step 80).

The inputs are what a training step hands the attention: q, k, v in bf16 (the outputs of bf16 projections; their
values exactly representable, so fp64 sees the same numbers) and the biases as fp32 parameters. The bound is
SDPA's relative error on the same q, k, v (plain causal softmax): about 2-3 % at these logits. A reference
operator that normalizes in bf16 was 12 % off eager and 22 % compiled; these tests fail on it.
"""
import math

import pytest
import torch

from sinkpaper.attention import attention_reference, visible_mask
from sinkpaper.attention.exactness import T, bf16_normalized_softmax, grads, inputs, relative_errors, sdpa
from sinkpaper.attention.operators import OpParams

MAX_LOGIT = 96.0          # the largest |s| of the inputs; most rows reach past 64
WINDOW = 8
DOCS = torch.tensor([[0] * 11 + [1] * 13 + [2] * 8])

# every operator setting a training config can ask for (the model's op_params), by name
OPERATORS = {
    "softmax": ("softmax", OpParams()),
    "softmax_sum_2": ("softmax", OpParams(softmax_sum=2.0)),
    "softmax_p_2": ("softmax_p", OpParams(p_norm=2.0)),
    "sigmoid": ("sigmoid", OpParams()),
    "sigmoid_norm": ("sigmoid", OpParams(normalize=True)),
    "elu": ("elu", OpParams()),
    "elu_norm": ("elu", OpParams(normalize=True)),
    "kernel_z1": ("kernel", OpParams(kernel_z="one")),
    "kernel_rowsum": ("kernel", OpParams(kernel_z="rowsum")),
    "kernel_maxabs": ("kernel", OpParams(kernel_z="maxabs")),
    "softpick": ("softpick", OpParams()),
}
# the sinks and biases of the paper's Section 7.2 and after it, as attention arguments
SINKS = {
    "none": (),
    "k_bias": ("k_bias",),
    "kv_bias": ("k_bias", "v_bias"),
    "v_bias": ("v_bias",),
    "sink_logit": ("sink_logit",),
    "sink_logit_v": ("sink_logit", "v_bias"),
}
MASKS = ("causal", "window", "document", "score_bias")


def _mask(kind):
    if kind == "window":
        return visible_mask(T, window=WINDOW)
    if kind == "document":
        return visible_mask(T, doc_ids=DOCS)
    return visible_mask(T)


def _attend(op, params, mask, sinks):
    visible = _mask(mask)

    def fn(q, k, v, **extra):
        args = {n: extra[n] for n in sinks}
        bias = extra["score_bias"] if mask == "score_bias" else None
        return attention_reference(q, k, v, visible=visible, op=op, params=params, score_bias=bias, **args).out
    return fn


def _extra_for(sinks, mask, extra):
    names = set(sinks) | ({"score_bias"} if mask == "score_bias" else set())
    return {n: x for n, x in extra.items() if n in names}


@pytest.fixture(scope="module")
def sdpa_bound():
    """SDPA's largest relative error (q, k, v gradients) against fp64 on each operator family's inputs."""
    bounds = {}
    for op in ("softmax", "kernel"):
        q, k, v, _ = inputs(MAX_LOGIT, op)
        errors = relative_errors(grads(sdpa, q, k, v, {}, torch.bfloat16), grads(sdpa, q, k, v, {}, torch.float64))
        bounds[op] = max(errors.values())
    return bounds


def _bound(bounds, op):
    return bounds["kernel" if op == "kernel" else "softmax"]


def _check_route(fn, op, sinks, mask, bounds, seed=0):
    q, k, v, extra = inputs(MAX_LOGIT, op, seed)
    s = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    assert s.abs().amax() >= 64, "the inputs do not reach the logits training reaches"
    extra = _extra_for(sinks, mask, extra)
    errors = relative_errors(grads(fn, q, k, v, extra, torch.bfloat16), grads(fn, q, k, v, extra, torch.float64))
    bound = _bound(bounds, op)
    worst = max(errors, key=errors.get)
    assert errors[worst] <= bound, (f"gradient of {worst} off by {errors[worst]:.1%} against fp64, over SDPA's "
                                    f"{bound:.1%} on the same q, k, v (all: "
                                    + ", ".join(f"{n} {e:.2%}" for n, e in errors.items()) + ")")
    return errors


def test_the_bound_is_sdpas_few_percent(sdpa_bound):
    """The bound is SDPA's own error here, a few percent: not so loose that a bf16 softmax would pass."""
    assert 0.005 < sdpa_bound["softmax"] < 0.05


@pytest.mark.parametrize("mask", MASKS)
@pytest.mark.parametrize("sink", SINKS)
@pytest.mark.parametrize("name", OPERATORS)
def test_the_eager_reference_is_exact_at_large_logits(name, sink, mask, sdpa_bound):
    op, params = OPERATORS[name]
    _check_route(_attend(op, params, mask, SINKS[sink]), op, SINKS[sink], mask, sdpa_bound)


# Compiled: each case is one inductor compile (seconds), so every operator once, and the softmax family (the
# operators whose sinks and masks the store trains) with each sink and mask.
COMPILED = ([(name, "none", "causal") for name in OPERATORS]
            + [("softmax", sink, "causal") for sink in SINKS if sink != "none"]
            + [("softmax", "none", mask) for mask in MASKS if mask != "causal"]
            + [("softmax_sum_2", "kv_bias", "document"), ("softmax_p_2", "sink_logit", "window")])


@pytest.mark.parametrize("name,sink,mask", COMPILED)
def test_the_compiled_reference_is_exact_at_large_logits(name, sink, mask, sdpa_bound):
    op, params = OPERATORS[name]
    torch._dynamo.reset()
    _check_route(torch.compile(_attend(op, params, mask, SINKS[sink]), dynamic=False), op, SINKS[sink], mask,
                 sdpa_bound)


def test_the_old_bf16_normalization_fails_the_check(sdpa_bound):
    """The check can fail: softmax normalized in bf16 (logsumexp and exp left in bf16 by CPU autocast, as the
    reference operator once did) is several times SDPA's error at these logits."""
    with pytest.raises(AssertionError, match="off by"):
        _check_route(bf16_normalized_softmax, "softmax", (), "causal", sdpa_bound)


def test_every_model_route_is_one_this_file_checks():
    """The model takes one of three attention routes; each is checked here (the reference eager and compiled
    above, SDPA as the bound, the fused kernels below)."""
    from sinkpaper.models import model as M
    import inspect
    src = inspect.getsource(M.Attention.route)
    returned = {line.split("return")[1].strip().strip('"') for line in src.splitlines()
                if line.strip().startswith("return ")}
    assert returned == {"reference", "fused Triton", "SDPA"}


# The fused kernels. On a GPU (compiled Triton), a training step's bf16 inputs. Under the CPU interpreter, fp32
# inputs: the interpreter truncates its fp32 -> bf16 casts instead of rounding (biased, so its bf16 errors add up
# to 3-4x a GPU's) and has no bf16 constants for sigmoid / elu / softpick; in fp32 it checks the kernels' own
# arithmetic (their row statistics, the backward's dS) at these logits against the same bound.
FUSED = ([("softmax", sink, "causal") for sink in ("none", "k_bias", "kv_bias", "v_bias", "sink_logit")]
         + [("softmax", "none", "window"), ("softmax", "none", "document")]
         + [(op, "none", "causal") for op in ("sigmoid", "elu", "softpick")])


@pytest.mark.parametrize("op,sink,mask", FUSED)
def test_the_fused_kernels_are_exact_at_large_logits(op, sink, mask, sdpa_bound):
    from sinkpaper import fused
    on_gpu = torch.cuda.is_available()
    if not (fused.interpreting() or on_gpu):
        pytest.skip("no GPU and TRITON_INTERPRET is not 1: the kernels cannot run here")
    masks = {"window": {"window": WINDOW}, "document": {"doc_ids": DOCS}}.get(mask, {})
    device = "cuda" if on_gpu else "cpu"

    def fn(q, k, v, **extra):
        if q.dtype == torch.float64:
            return fused.attention(q, k, v, op=op, impl="reference", **extra, **masks)
        args = {n: x.to(device) if isinstance(x, torch.Tensor) else x
                for n, x in {"q": q, "k": k, "v": v, **extra, **masks}.items()}
        if on_gpu:
            return fused.attention(op=op, impl="triton", **args).cpu()
        with torch.autocast("cpu", enabled=False):
            args.update(q=q.float(), k=k.float(), v=v.float())
            return fused.attention(op=op, impl="triton", **args)
    _check_route(fn, op, SINKS[sink], mask, sdpa_bound)


def test_the_routes_check_fails_a_spike_or_a_gap_past_its_tolerance_and_names_the_seeds_it_fails_at(tmp_path):
    """The trajectories' verdict (sinkpaper.train.routes_check.judge) and the Measurements page's line for a point
    checked at several seeds, on rows whose gaps are known."""
    import json

    from sinkpaper.results.measured import routes_check_lines
    from sinkpaper.train.routes_check import TOLERANCE, judge

    def rows(gap_ref, gap_sdpa, spike=False):
        return judge({"fp32": {"loss": [6.0, 5.0], "spikes": []},
                      "reference": {"loss": [6.0, 5.0 + gap_ref], "spikes": [{"step": 150}] if spike else []},
                      "SDPA": {"loss": [6.1, 5.0 + gap_sdpa], "spikes": []}})
    r = rows(0.02, -0.03)
    assert r["reference"]["loss_gap_at_end"] == 0.02 and r["SDPA"]["loss_gap_at_end"] == -0.03
    assert r["fp32"]["passes"] and r["reference"]["passes"] and r["SDPA"]["passes"]
    assert not rows(TOLERANCE + 0.01, 0.0)["reference"]["passes"]          # too far from fp32 at the end
    assert not rows(-TOLERANCE - 0.01, 0.0)["reference"]["passes"]         # either side
    assert not rows(0.0, 0.0, spike=True)["reference"]["passes"]           # a spike fails a route that ends well
    points = [{"point": "base", "seed": 1, "routes": rows(0.01, 0.0)}]
    points += [{"point": "deep", "seed": s, "routes": rows(g, h)} for s, g, h in ((1, 0.08, 0.03), (0, 0.02, 0.06))]
    result = {"steps": 2, "tolerance_nats": TOLERANCE, "points": points,
              "provenance": {"hardware": "CPU x", "torch": "t", "code_version": "c", "computed_at": "now"}}
    (tmp_path / "rc.json").write_text(json.dumps(result))
    lines = routes_check_lines("rc.json", root=tmp_path)
    by_seed = [ln for ln in lines if ln.startswith("deep, seeds 1 / 0")]
    assert by_seed == ["deep, seeds 1 / 0, gap to fp32 at the end: reference +0.080 / +0.020 (fails at seed 1); "
                       "SDPA +0.030 / +0.060 (fails at seed 0)."]
    assert not any(ln.startswith("base, seeds") for ln in lines)           # one seed: its rows say it all


def test_the_routes_check_widens_its_bar_to_the_floor_two_exact_runs_set_and_names_the_dtype_a_shape_trains_at():
    """Where the check trains the fp32 compiled run (FLOOR), a seed's bar is the larger of TOLERANCE and that
    run's gap to the eager fp32 run; a shape whose bf16 routes all fail at some seed trains in fp32."""
    from sinkpaper.train.routes_check import FLOOR, TOLERANCE, judge, verdicts

    def rows(floor, gap_ref, gap_sdpa, spike_floor=False):
        return judge({"fp32": {"loss": [6.0, 5.0], "spikes": []},
                      FLOOR: {"loss": [6.0, 5.0 + floor], "spikes": [{"step": 9}] if spike_floor else []},
                      "bf16, reference": {"loss": [6.0, 5.0 + gap_ref], "spikes": []},
                      "bf16, SDPA": {"loss": [6.0, 5.0 + gap_sdpa], "spikes": []}})
    r = rows(0.09, 0.08, -0.10)
    assert r["bf16, reference"]["bar_nats"] == 0.09 and r["bf16, reference"]["passes"]   # inside the floor
    assert not r["bf16, SDPA"]["passes"]                                                # past it, either side
    r = rows(0.01, 0.06, 0.04)                                  # a small floor leaves the bar at TOLERANCE
    assert r["bf16, SDPA"]["bar_nats"] == TOLERANCE and r["bf16, SDPA"]["passes"]
    assert not r["bf16, reference"]["passes"]
    assert r[FLOOR]["passes"] and not rows(0.3, 0.0, 0.0, spike_floor=True)[FLOOR]["passes"]
    v = verdicts([{"point": "deep", "seed": 0, "routes": rows(0.0, 0.08, 0.01)},
                  {"point": "deep", "seed": 1, "routes": rows(0.0, 0.01, 0.08)},
                  {"point": "base", "seed": 0, "routes": rows(0.0, 0.01, 0.08)}])
    assert v["deep"]["trains_at"] == "fp32" and v["deep"]["seeds"] == [0, 1]   # each bf16 route fails one seed
    assert v["base"]["trains_at"] == "bf16" and v["base"]["routes"]["bf16, reference"]


def test_a_stored_routes_check_passes_only_where_each_points_config_trains_at_the_dtype_its_verdict_names():
    """conclude() reads the configs as they are: the 4-layer point's config trains in fp32 (its bf16 routes left
    the floor), the base's in bf16 on the reference operator; a verdict that says otherwise, the trainer's own
    route failing where another bf16 route passes, or a spike anywhere, fails the check."""
    from sinkpaper.train.routes_check import FLOOR, ROUTES, conclude
    eager, _, reference, sdpa = ROUTES

    def point(config, name, gap_ref, gap_sdpa=None, spike=False):
        gap_sdpa = gap_ref if gap_sdpa is None else gap_sdpa
        return {"config": config, "point": name, "seed": 0,
                "routes": {eager: {"loss": [5.0], "spikes": []}, FLOOR: {"loss": [5.0], "spikes": []},
                           reference: {"loss": [5.0 + gap_ref], "spikes": [{"step": 3}] if spike else []},
                           sdpa: {"loss": [5.0 + gap_sdpa], "spikes": []}}}
    base, deep = ("configs/optimization.yaml", "default"), ("configs/data.yaml", "fixed_pos3_layers_4_steps_x2")
    out = conclude({"points": [point(*base, 0.01), point(*deep, 0.09)]})
    assert out["passes"] and out["verdicts"]["default"]["route_taken"] == reference
    assert out["verdicts"]["fixed_pos3_layers_4_steps_x2"]["route_taken"] == FLOOR
    assert not conclude({"points": [point(*base, 0.01), point(*deep, 0.01)]})["passes"]   # deep would train bf16
    assert not conclude({"points": [point(*base, 0.09), point(*deep, 0.09)]})["passes"]   # the base would not
    assert not conclude({"points": [point(*base, 0.09, 0.01), point(*deep, 0.09)]})["passes"]  # its route fails
    assert not conclude({"points": [point(*base, 0.01, spike=True), point(*deep, 0.09)]})["passes"]


def test_the_routes_check_refuses_judge_with_only_before_reading_anything(tmp_path, capsys):
    from sinkpaper.cli import main
    assert main(["routes-check", "--judge", "--only", "x", "--json", str(tmp_path / "none.json")]) == 2
    assert "--judge trains nothing" in capsys.readouterr().err
