# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Kernels and performance: are the fused kernels right, and how fast are they?
#
# The book trains attention operators that PyTorch has no fused kernel for (sigmoid without normalization, elu + 1,
# softpick, the paper's KV biases and sink logits) and measures the sink where a T x T attention map does not fit in
# memory. `sinkpaper.fused` holds Triton kernels for both, forward and backward, under causal, full, sliding-window,
# prefix-LM and intra-document masks, plus `column_stats`, which returns α_k without building the map. This page
# checks their **correctness** now against fp64 PyTorch, and shows their **speed and memory** from
# `python -m sinkpaper bench kernels` on a GPU. The paper makes no claim about kernels: nothing here is scored.
#
# ````{dropdown} What the interpreter checks, and what it cannot
# The Triton interpreter runs the kernel program's exact semantics, at small shapes, but cannot see what only the GPU
# compiler refuses: the test suite also compiles every kernel variant to an H100 (sm_90) binary on the CPU
# (`python -m sinkpaper.fused.gpu_compile`).
# ````

# %% tags=["parameters"]
profile = "cpu"  # cpu | gpu | paper: cpu checks the kernels under the Triton interpreter; gpu and paper compile them
check_shape = None  # [B, H, T, D] of the correctness checks; None: [1, 2, 45, 32] on the interpreter, [2, 4, 1000, 64] on a GPU
ops = "softmax,sigmoid,elu,softpick"  # operators checked, comma-separated
masks = "causal,full,window,prefix,document"  # masks checked with every operator, comma-separated
sinks = "kv_bias"  # sink variants checked with every operator under the causal mask: sink_logit, kv_bias ("" for none)
seed = 0  # seeds the random inputs
smoke_sections = "accuracy"  # cpu: benchmark sections run live as a code-path check (speed,ops,column_stats,accuracy; "" for none)
run_benchmark = True  # gpu / paper: run the full benchmark now (FlashAttention's grid, T up to 32k; minutes on a GPU)
save_benchmark = True  # gpu / paper: also write it to results/bench/kernels-<device>.json, where later builds read it

# %%
# The Triton interpreter is chosen when triton is imported: switch it on before anything imports triton.
import os
import sys
import time

import torch

if not torch.cuda.is_available():
    if "triton" in sys.modules and os.environ.get("TRITON_INTERPRET") != "1":
        raise RuntimeError("triton was imported before TRITON_INTERPRET=1 could be set: restart the kernel")
    os.environ["TRITON_INTERPRET"] = "1"

from IPython.display import Markdown, display  # noqa: E402

from sinkpaper import fused, provenance  # noqa: E402
from sinkpaper.analysis import kernel_checks as kc  # noqa: E402
from sinkpaper.book import figures, parameters, sources  # noqa: E402
from sinkpaper.fused import bench  # noqa: E402
from sinkpaper.fused import testing as kt  # noqa: E402

sources.begin("12_kernels")

# %%
parameters.device_of(profile)  # an unknown profile, or gpu / paper without CUDA, stops here
device = "cuda" if torch.cuda.is_available() else "cpu"  # with CUDA the checks run compiled, at any profile
op_list = parameters.listed(ops, "ops", fused.OPS, empty=False)
mask_list = parameters.listed(masks, "masks", kt.MASKS, empty=False)
sink_list = parameters.listed(sinks, "sinks", [s for s in kt.SINKS if s != "none"])
section_list = parameters.listed(smoke_sections, "smoke_sections", bench.SECTIONS)
shape = kt.check_shape(check_shape, device)

run_stamp = provenance.stamp(device, profile=profile, kernels=kt.backend(device))
sources.record(run_stamp)
display(Markdown(f"The kernels run on **{kt.backend(device)}**"
                 + (": TRITON_INTERPRET=1 was set by the cell above, before triton was imported, because this "
                    "machine has no CUDA device." if device == "cpu" else ".")))

# %% [markdown]
# ## Correctness: every operator x mask against fp64
#
# ````{dropdown} How each case is compared
# Random fp32 inputs go through the kernel, forward and backward, and the same inputs in fp64 through the eager
# reference (`sinkpaper.fused.reference_attention`). Each entry is max |kernel − reference| / max |reference|.
# `row statistic` is the per-row normalizer the kernel stores for its backward pass (log-sum-exp for softmax);
# `alpha (column_stats)` is the kernel's α_k against the metric on the fp64 map; `sink column` the mean attention
# on the bias / sink position. Masks: `window` = T / 3 keys, `prefix` = T / 2 + 1 tokens, `document` = three
# documents per row. The tolerance is the test suite's, 1e-5 (fp32 rounding is ~6e-8).
# ````

# %% tags=["hide-input", "full-width"]
t0 = time.perf_counter()
errors = kt.error_table(op_list, mask_list, ("none",), shape=shape, seed=seed, device=device)
if sink_list:
    errors += kt.error_table(op_list, ["causal"], sink_list, shape=shape, seed=seed + 1000, device=device)
check_seconds = time.perf_counter() - t0
worst = max(errors, key=lambda r: r["worst"])
n_ok = sum(r["within tolerance"] for r in errors)
display(figures.Fold(f"Every case: {n_ok} of {len(errors)} within tolerance", figures.Table(kc.format_errors(errors))))
display(Markdown(
    f"Measured now: **{n_ok} of {len(errors)}** cases within {kt.TOLERANCE:g} on every tensor; the largest "
    f"relative error is {worst['worst']:.1e} ({worst['op']}, {worst['mask']} mask, sink {worst['sink']}). "
    f"Shape B, H, T, D = {', '.join(map(str, shape))} (T is not a multiple of the kernels' tile size, so the "
    f"boundary tiles are exercised); {check_seconds:.0f} s in all."))
sources.record({**run_stamp, "shape [B, H, T, D]": list(shape), "dtype": "fp32 vs fp64",
                "seed": seed})

# %% [markdown]
# ## The sink metric from `column_stats` against the metric from the maps
#
# Small random models traced from their attention maps (as the paper) and with `method="stats"` (no T x T map)
# should give the same α_k up to fp32 rounding, hence the same Sink_k.

# %% tags=["hide-input"]
agreement = kc.metric_agreement(seed=seed, device=device)
display(figures.Fold("Every model variant, both routes", figures.Table(agreement)))
display(Markdown(f"{sum(r['Sink_k equal (eps 0.05, 0.3)'] for r in agreement)} of {len(agreement)} model variants "
                 "give identical Sink_k from both routes."))
sources.record({**run_stamp, "models": "random SinkModel, d 32, 2 layers, 2 heads, T 36"})

# %% [markdown]
# ## The benchmark
#
# Speed ratios are competitor time / our time (> 1: ours faster); time, memory and error ratios are ours /
# competitor (< 1: ours smaller). Goals are reported, not asserted.
#
# ````{dropdown} What the benchmark times
# Our causal softmax kernel against PyTorch SDPA (flash and cuDNN), FlexAttention (compiled) and eager attention,
# forward and forward + backward, on FlashAttention's grid (batch x T = 16k tokens, H x D = 2048); our sigmoid /
# elu / softpick kernels against our softmax and their eager references; `column_stats` against one forward pass
# and the eager maps (time and peak memory, T up to 32k); bf16 error against fp64, ours next to SDPA's.
# ````

# %% tags=["hide-input"]
stored = kc.stored_benchmarks()
for path, result in stored:
    display(figures.Fold(f"Stored: {path}", *figures.benchmark_items(result, path)))
if not stored:
    display(Markdown(
        f"**No stored benchmark**: `{kc.BENCH_DIR}/` holds no result. No GPU has run the benchmark for this "
        f"book yet, so there is no speed or memory number of ours to show. On a machine with a CUDA GPU, "
        f"produce one with `{kc.bench_command()}`; this page then shows it here, with its device, "
        "versions and date."))

# %% [markdown]
# ### Run now
#
# On a GPU (`gpu` / `paper` profile) the full benchmark runs here. On the CPU the selected sections run in their
# `--smoke` form under the interpreter: **these timings are not performance numbers**, and the bf16 error is
# slightly larger than a GPU's (the interpreter's fp32 → bf16 cast truncates instead of rounding).

# %% tags=["hide-input"]
if device == "cuda" and profile != "cpu" and run_benchmark:
    live_bench = bench.run_kernel_bench("cuda", smoke=False, argv=["bench", "kernels", "--json", "(book)"])
    if save_benchmark:
        saved = kc.save_benchmark(live_bench)
        display(Markdown(f"Written to `{saved}`."))
    figures.show_benchmark(live_bench)
elif device == "cpu" and section_list:
    live_bench = bench.run_kernel_bench("cpu", smoke=True, sections=tuple(section_list),
                                        argv=["bench", "kernels", "--smoke", "--only", *section_list])
    display(figures.Fold(f"Smoke run of section(s) {', '.join(section_list)} under the Triton interpreter: a "
                         "code-path check, not a performance number", *figures.benchmark_items(live_bench)))
else:
    display(Markdown("Nothing run now: " + ("the `cpu` profile on a GPU machine does not benchmark (use "
                                            "profile `gpu`)." if device == "cuda" else "`smoke_sections` is empty.")))

# %% [markdown]
# ````{dropdown} Rerun it: the commands
# ```bash
# python -m sinkpaper.site run --only 12_kernels -p sinks sink_logit,kv_bias -p smoke_sections speed,accuracy
# mkdir -p results/bench && python -m sinkpaper bench kernels --json results/bench/kernels-h100.json   # on a GPU
# TRITON_INTERPRET=1 python -m pytest tests/test_fused.py   # the full correctness suite on the CPU
# ```
# ````
