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
