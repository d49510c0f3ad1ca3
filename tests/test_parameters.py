"""The one check of a chapter's papermill parameters (sinkpaper.book.parameters): each rule accepts what the
chapters pass and rejects the rest with the valid values named, before any compute."""
from __future__ import annotations

import pytest
import torch

from sinkpaper.book import parameters


def test_the_chapters_standard_parameters_pass_and_give_the_stamp():
    stamp = parameters.check("cpu", gpu_seeds=[0], miniature_seeds=(0, 1, 2), live_seed=0, live_steps=None,
                             n_samples=50, loss_samples=0, batch_size=25, epsilon=0.3, seq_len=64, seed=3,
                             choices={"live_point": ("recipe", ["recipe", "wd_0"])}, minimum={"loss_samples": 0})
    assert stamp["profile"] == "cpu" and "code_version" in stamp and "CPU" in stamp["hardware"]


@pytest.mark.parametrize("kwargs, message", [
    ({"gpu_seeds": []}, "gpu_seeds must be a non-empty list of seeds"),
    ({"miniature_seeds": [0, -1]}, "miniature_seeds must be a non-empty list"),
    ({"miniature_seeds": "0,1"}, "miniature_seeds must be a non-empty list"),
    ({"live_seed": -1}, "live_seed must be an int >= 0"),
    ({"seed": True}, "seed must be an int >= 0"),
    ({"live_steps": 0}, "live_steps must be None"),
    ({"live_steps": 2.5}, "live_steps must be None"),
    ({"n_samples": 0}, "n_samples must be an int >= 1"),
    ({"mechanism_samples": 1, "minimum": {"mechanism_samples": 2}}, "mechanism_samples must be an int >= 2"),
    ({"epsilon": 1.5}, "epsilon must satisfy 0 < epsilon < 1"),
    ({"seq_len": 5}, "sequences of length 5 are too short for Sink_k"),
    ({"choices": {"live_point": ("nope", ["recipe", "wd_0"])}}, "unknown live_point 'nope'; valid: recipe, wd_0"),
])
def test_a_wrong_parameter_is_named_with_what_is_valid(kwargs, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parameters.check("cpu", **kwargs)


def test_profiles():
    with pytest.raises(ValueError, match="unknown profile 'laptop'; valid: cpu, gpu, paper"):
        parameters.check("laptop")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="profile 'gpu' trains on a CUDA GPU; none here"):
            parameters.check("gpu")
    assert parameters.device_of("cpu") == "cpu"


def test_a_parameter_without_a_rule_is_the_chapters_mistake():
    with pytest.raises(TypeError, match="no rule for 'colour'"):
        parameters.check("cpu", colour="red")


def test_a_listed_parameter_is_split_and_each_entry_checked():
    assert parameters.listed(" softmax, sigmoid ,", "ops", ("softmax", "sigmoid", "relu")) == ["softmax", "sigmoid"]
    assert parameters.listed("", "sinks", ("kv_bias",)) == [] and parameters.listed("a,b", "models") == ["a", "b"]
    with pytest.raises(ValueError, match=r"unknown ops \['nope'\]; valid: softmax, sigmoid"):
        parameters.listed("softmax,nope", "ops", ("softmax", "sigmoid"))
    with pytest.raises(ValueError, match="masks must name at least one entry; valid: causal, window"):
        parameters.listed(" , ", "masks", ("causal", "window"), empty=False)


def test_chapter_11_sizes_come_from_the_profile_and_each_mistake_is_said_first():
    from sinkpaper.book import measuring as ms

    ok = dict(n_tokens=None, window=None, removal_tokens=None, sink_counts=None, n_sink=4, bin_size=64, bos="auto")
    assert ms.streaming_sizes("cpu", **ok) == (1024, 128, 512, [1])
    assert ms.streaming_sizes("gpu", **{**ok, "n_sink": 2}) == (4096, 512, 2048, [1, 8, 16])
    for change, message in [({"window": 2000}, "must be shorter than the text"),
                            ({"n_sink": 128}, r"n_sink \(128\) and every sink_counts entry"),
                            ({"n_sink": "4"}, "n_sink must be an int"),
                            ({"bos": "yes"}, "bos must be True, False or 'auto'"),
                            ({"sink_counts": [0]}, "sink_counts entry must be a positive int"),
                            ({"removal_tokens": 8}, "too short for the sink-removal table")]:
        with pytest.raises(ValueError, match=message):
            ms.streaming_sizes("cpu", **{**ok, **change})


def test_chapter_12_check_shape_is_the_devices_default_or_a_valid_bhtd():
    from sinkpaper.fused import testing as kt

    assert kt.check_shape(None, "cpu") == kt.CPU_SHAPE and kt.check_shape(None, "cuda") == kt.GPU_SHAPE
    assert kt.check_shape([1, 1, 8, 16], "cpu") == (1, 1, 8, 16)
    for bad in ([1, 1, 3, 16], [1, 1, 8], [1, 1, 8, True], [1, 0, 8, 16]):
        with pytest.raises(ValueError, match=r"check_shape must be \[B, H, T, D\]"):
            kt.check_shape(bad, "cpu")
