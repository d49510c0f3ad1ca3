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
# # Section 5: data distribution — where the sink goes is decided by the data
#
# Gu et al. (2025), Section 5, change what the model is trained on and watch Sink_k^0.3 (the share of heads
# whose importance α_k of position k exceeds 0.3, on 100 held-out 64-token sequences):
#
# 1. **Amount of unique data.** With only 50M or 100M unique tokens (repeated to the same 21B tokens seen) the
#    sink stays below 1 %; more unique data, more sink (a figure, no table).
# 2. **Random tokens at the first positions.** Drawing the first token(s) uniformly from the vocabulary moves
#    or weakens the sink: x1 random → Sink_1 27.03 %; x1 and x2 random → Sink_2 14.08 %, Sink_1 1.98 %;
#    only x2 random → Sink_1 20.99 %.
# 3. **A fixed token at position k** moves the sink to k: Sink_1 74.11 % / Sink_2 69.03 % / Sink_3 69.64 %
#    for a fixed token at position 1 / 2 / 3, and ~0 at the other positions. The default run (windows cut at
#    arbitrary offsets, so position 1 holds an arbitrary token) ends at Sink_1 18.18 %.
#
# As in the other Sections 4-7 chapters: the real-LM runs of `configs/data.yaml` (GPU, read from the
# results store), a CPU check that every variant trains, and the same interventions in miniature, one of
# them trained live.

# %% tags=["parameters"]
profile = "cpu"  # cpu | gpu | paper: cpu reads the real-LM runs from the results store; gpu and paper train them
gpu_seeds = [0]  # seeds of the real-LM sweep (configs/data.yaml) that are read or trained
miniature_seeds = [0, 1, 2]  # seeds of the stored miniature sweep
live_point = "fixed_pos2"  # trained live: fixed_pos2 | fixed_pos3 | random_first | no_fixed_token | recipe
live_seed = 0  # seed of the live miniature run
live_steps = None  # None: the 1500 steps of the point (~60 s on 2 cores); tests pass fewer

# %%
import torch
from IPython.display import Markdown, display

from sinkpaper import provenance
from sinkpaper.book import claims, experiments, figures, sections

FAMILY = "configs/data.yaml"
MINIATURE = "configs/miniature.yaml"
PROFILES = ("cpu", "gpu", "paper")
MINI_ORDER = ["recipe", "fixed_pos2", "fixed_pos3", "random_first", "no_fixed_token"]
if profile not in PROFILES:
    raise ValueError(f"unknown profile {profile!r}; valid: {', '.join(PROFILES)}")
if profile != "cpu" and not torch.cuda.is_available():
    raise ValueError(f"profile {profile!r} trains the real-LM sweep on a CUDA GPU; none here: use profile='cpu'")
if live_point not in MINI_ORDER:
    raise ValueError(f"unknown live_point {live_point!r}; valid: {', '.join(MINI_ORDER)}")
for name, value in (("gpu_seeds", gpu_seeds), ("miniature_seeds", miniature_seeds)):
    if not value or not all(isinstance(s, int) and s >= 0 for s in value):
        raise ValueError(f"{name} must be a non-empty list of seeds (ints >= 0), got {value!r}")
for name, value, low in (("live_seed", live_seed, 0)):
    if not isinstance(value, int) or value < low:
        raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
if live_steps is not None and (not isinstance(live_steps, int) or live_steps < 1):
    raise ValueError(f"live_steps must be None (the point's steps) or an int >= 1, got {live_steps!r}")

run_stamp = provenance.stamp("cuda" if profile != "cpu" else "cpu", profile=profile)
display(Markdown(figures.provenance_line(run_stamp)))

# %% [markdown]
# ## Real language models: the data sweep
#
# `configs/data.yaml`: `unique_f` samples training windows from only the first fraction f of the token
# stream (the paper's amount of unique data); `fixed_posK` replaces the input at position K with one fixed
# token (the BOS id); `random_first` draws position 1 uniformly from the vocabulary and puts the fixed token
# at position 2. At the `cpu` profile the runs are read from the store (`gpu` profile); at `gpu` or `paper`
# they are trained.

# %% tags=["hide-input"]
ORDER = ["unique_0.005", "unique_0.02", "unique_0.1", "unique_0.25", "fixed_pos1", "fixed_pos2", "fixed_pos3",
         "random_first"]
PAPER = {  # Gu et al. 2025, Section 5 (Sink^0.3 in %)
    "unique_0.005": "< 1 (50M-100M unique tokens, figure)", "unique_0.25": "18.18 (~5B unique: the default)",
    "fixed_pos1": "Sink_1 74.11", "fixed_pos2": "Sink_2 69.03", "fixed_pos3": "Sink_3 69.64",
    "random_first": "x1 random: Sink_1 27.03; x1, x2 random: Sink_2 14.08, Sink_1 1.98"}
lm = sections.lm_sweep(FAMILY, profile, gpu_seeds)
lm_default = sections.lm_sweep("configs/optimization.yaml", profile, gpu_seeds, points=["default"])
if lm.payloads:
    display(sections.points_table(lm.payloads, ORDER, ks=(1, 2, 3), paper=PAPER))
    display(sections.position_profile_chart(lm.payloads, ORDER, f"Real LM ({lm.profile} profile): where the sink sits"))
    display(Markdown(figures.provenance_line(lm.provenance())))
if lm.missing.missing:
    display(Markdown(lm.missing_text() + " Until then this section has no real-LM number of ours; the paper's "
                     "numbers are in the table at the end of the page."))
if lm_default.missing.missing:
    display(Markdown("The comparison without any fixed token uses the default run of the optimization family: "
                     + lm_default.missing_text()))

# %% [markdown]
# ## Live, in miniature: move the fixed token
#
# The synthetic analogue (Bigram-Backcopy, Guo et al. 2024; a 1-layer, 4-head model trained for a minute; see
# the optimization chapter for the task). The recipe puts a fixed BOS at position 1 and grows a sink there.
# Here the fixed token moves: `fixed_pos2` / `fixed_pos3` put it at position 2 / 3 (position 1 then holds an
# ordinary token cut at an arbitrary offset), `random_first` draws position 1 uniformly from the vocabulary
# and keeps the fixed token at 2, and `no_fixed_token` has none at all (the paper's default packing).
# The live run trains one of them now.

# %% tags=["hide-input"]
LIVE_K = {"recipe": 1, "fixed_pos2": 2, "fixed_pos3": 3, "random_first": 2, "no_fixed_token": 1}
k_live = LIVE_K[live_point]
overrides = None
if live_steps is not None:
    overrides = {"optim.steps": live_steps, "eval.every": min(100, live_steps), "run.checkpoint_every": live_steps}
live = experiments.live_run(MINIATURE, "cpu", point=live_point, seed=live_seed, overrides=overrides,
                            out_root="runs/book/05_data")  # this chapter's own directory
lr_ = live.payload["result"]
live_label = f"live {live_point}, seed {live_seed}"
live_prov = {**lr_["provenance"], "computed_now": True, "model": "1 layer x 4 heads, d 64", "point": live_point}
mini = experiments.stored_sweep(MINIATURE, "cpu", points=MINI_ORDER, seeds=tuple(miniature_seeds))
stored_live = mini.by_point().get(live_point, [])
display(figures.Table([{"run": live_label, "steps": lr_["step"], "tokens seen": lr_["tokens_seen"],
                        **{f"Sink_{k} %": round(lr_["sink_k"][str(k)], 1) for k in (1, 2, 3)},
                        "alpha_1": round(lr_["alpha_1_mean"], 3), "held-out loss": round(lr_["val_loss"], 3),
                        "seconds": lr_["provenance"]["wall_seconds"]}]))
rows = sections.sink_curve_rows(live.payload, live_label, k_live)
for p in stored_live:
    rows += sections.sink_curve_rows(p, f"stored seed {p['config']['run']['seed']}", k_live)
dashed = [r["run"] for r in rows if r["run"] != live_label]
rows1 = sections.sink_curve_rows(live.payload, live_label, 1)
display(sections.row(sections.curve_chart(rows, f"Sink_{k_live} %", f"{live_point}: Sink_{k_live} (%) over training",
                                          dashed=dashed),
                     sections.curve_chart(rows1, "Sink_1 %", f"{live_point}, live run: Sink_1 (%)")))
display(Markdown(figures.provenance_line(live_prov)))
if stored_live:
    display(Markdown(figures.provenance_line(experiments.payloads_provenance(stored_live, loaded=True))))

# %% [markdown]
# Where the heads of the live model park: the mean attention that ordinary queries (not on a trigger, so with
# nothing to copy) put on each of the first five positions, over the held-out sequences the metric uses.

# %% tags=["hide-input"]
model = experiments.load_model(live.run_dir)
cfg = sections.run_config(live.run_dir)
held = sections.heldout_inputs(live.run_dir)
parking = sections.attention_by_key(model, held, cfg.data.n_triggers)
display(figures.Table(parking))
pos_cols = [c for c in parking[0] if c.startswith("to position")]
means = {c: sum(r[c] for r in parking) / len(parking) for c in pos_cols}
top = max(means, key=means.get)
display(Markdown(
    f"Averaged over the {len(parking)} heads, ordinary queries put "
    + ", ".join(f"{means[c]:.3f} on {c[3:]}" for c in pos_cols)
    + f". The most attended of the first five positions is {top[3:]}"
    + (f", where this run's fixed token sits." if top == f"to position {k_live}" and live_point != "no_fixed_token"
       else ".")))
display(Markdown(figures.provenance_line({**live_prov, "sequences": held.shape[0], "tokens each": held.shape[1]})))

# %% [markdown]
# ## The stored miniature sweep: every position, three seeds
#
# Sink_1, Sink_2 and Sink_3 as mean [min, max] over three seeds; the chart shows Sink_k for k = 1..10 (mean
# over seeds), i.e. where the sink sits. The second table gives, per seed, the step at which the sink at
# the point's own position first reached 50 %.

# %% tags=["hide-input"]
CHANGES = {"recipe": "fixed BOS at position 1", "fixed_pos2": "fixed token at position 2",
           "fixed_pos3": "fixed token at position 3", "random_first": "x1 random, fixed token at 2",
           "no_fixed_token": "no fixed token (arbitrary offsets)"}
display(sections.points_table(mini.payloads, MINI_ORDER, ks=(1, 2, 3), changes=CHANGES))
display(sections.position_profile_chart(mini.payloads, MINI_ORDER, "miniature: Sink_k by position (mean over seeds)"))
display(sections.emergence_table(mini.payloads, MINI_ORDER, ks=LIVE_K))
display(Markdown(figures.provenance_line(experiments.payloads_provenance(mini.payloads, loaded=True))))
if mini.missing:
    display(Markdown(mini.missing_text()))

m = {(p, k): sections.mean_sink(mini.payloads, p, k) for p in MINI_ORDER for k in range(1, 11)}
sig = sections.sig


def steps_range(point):
    steps = [x["step"] for q in mini.payloads if experiments.point_of(q) == point
             if (x := sections.emergence(q["curve"], LIVE_K[point]))]
    return f"at step {sections.span(steps, 0)}" if steps else "in no seed"


def top_any(point):
    return max((m[point, k] or 0) for k in range(1, 11))


moved = {p: sections.moves_to(mini.payloads, p, LIVE_K[p]) for p in ("recipe", "fixed_pos2", "fixed_pos3")}
display(Markdown(
    f"Measured (mean over seeds; “first ≥ 50 %” is the range over seeds). Fixed BOS at 1 (the recipe): Sink_1 "
    f"{sig(m['recipe', 1])} %, first ≥ 50 % {steps_range('recipe')}. Fixed token at 2: Sink_2 "
    f"{sig(m['fixed_pos2', 2])} %, Sink_1 {sig(m['fixed_pos2', 1])} %, first ≥ 50 % {steps_range('fixed_pos2')}"
    + (" — the sink moved with the token." if moved["fixed_pos2"] else " — the sink did not move to position 2.")
    + f" Fixed token at 3: Sink_3 {sig(m['fixed_pos3', 3])} %, first ≥ 50 % {steps_range('fixed_pos3')}, and at "
    f"most {sig(top_any('fixed_pos3'))} % at any position 1-10"
    + (" — the sink moved with the token." if moved["fixed_pos3"] else
       ": within the recipe's steps the miniature grew no sink at all, at position 3 or elsewhere.")
    + f" Position 1 random with the fixed token at 2: Sink_1 {sig(m['random_first', 1])} %, Sink_2 "
    f"{sig(m['random_first', 2])} %. No fixed token: Sink_1 {sig(m['no_fixed_token', 1])} % (at most "
    f"{sig(top_any('no_fixed_token'))} % at any position 1-10)."))

# %% [markdown]
# The miniature has no unique-data point: its stream of 2M synthetic tokens is drawn from one fixed bigram
# table, so there is no "amount of data" to vary in the paper's sense. That claim rests on the real-LM
# sweep alone.
#
# ## Paper vs this run
#
# Rules (`sinkpaper.book.sections`), the same for the real LM and the miniature:
# - *unique data*: Sink_1 never decreases as the unique fraction grows and ends above where it started;
# - *random first tokens*: Sink_1 with position 1 random is below Sink_1 with a fixed token at position 1;
# - *fixed token at k*: for each k, the point's Sink_k is the largest of Sink_1..Sink_10 and at least 10 %
#   (all k must hold; the miniature tests k = 1, 2, 3 with the recipe as k = 1);
# - *no fixed token*: Sink_1 without a fixed token is below Sink_1 with a fixed token at position 1 (real LM:
#   the optimization family's default run vs `fixed_pos1`; miniature: `no_fixed_token` vs the recipe).

# %% tags=["hide-input"]
ls = {(p, k): sections.mean_sink(lm.payloads, p, k) for p in ORDER for k in (1, 2, 3)}
ls_default = sections.mean_sink(lm_default.payloads, "default")


def below(a, b):
    return None if a is None or b is None else a < b


def all_hold(vals):
    return None if any(v is None for v in vals) else all(vals)


lm_verdicts = {
    "data_unique": sections.increasing([ls[p, 1] for p in ORDER[:4]]),
    "data_random_first": below(ls["random_first", 1], ls["fixed_pos1", 1]),
    "data_fixed_pos": all_hold([sections.moves_to(lm.payloads, f"fixed_pos{k}", k) for k in (1, 2, 3)]),
    "data_no_fixed_token": below(ls_default, ls["fixed_pos1", 1]),
}


def fmt(pairs):
    vals = [f"{label} {v:.2f}" for label, v in pairs if v is not None]
    return ("Sink % " + ", ".join(vals)) if vals else "no stored GPU run"


lm_ours = {
    "data_unique": fmt([(f"{p}: Sink_1", ls[p, 1]) for p in ORDER[:4]]),
    "data_random_first": fmt([("random_first: Sink_1", ls["random_first", 1]), ("Sink_2", ls["random_first", 2]),
                              ("fixed_pos1: Sink_1", ls["fixed_pos1", 1])]),
    "data_fixed_pos": fmt([(f"fixed_pos{k}: Sink_{k}", ls[f"fixed_pos{k}", k]) for k in (1, 2, 3)]),
    "data_no_fixed_token": fmt([("default: Sink_1", ls_default), ("fixed_pos1: Sink_1", ls["fixed_pos1", 1])]),
}
mini_moves = {LIVE_K[p]: v for p, v in moved.items()}
mini_verdicts = {
    "data_random_first": below(m["random_first", 1], m["recipe", 1]),
    "data_fixed_pos": all_hold(list(mini_moves.values())),
    "data_no_fixed_token": below(m["no_fixed_token", 1], m["recipe", 1]),
}
mini_ours = {
    "data_random_first": f"x1 random + fixed token at 2: Sink_1 {sig(m['random_first', 1])}, Sink_2 "
                         f"{sig(m['random_first', 2])} % vs fixed BOS at 1: Sink_1 {sig(m['recipe', 1])} %",
    "data_fixed_pos": f"Sink_1 {sig(m['recipe', 1])} / Sink_2 {sig(m['fixed_pos2', 2])} / Sink_3 "
                      f"{sig(m['fixed_pos3', 3])} % for a fixed token at 1 / 2 / 3",
    "data_no_fixed_token": f"Sink_1 {sig(m['no_fixed_token', 1])} % without vs {sig(m['recipe', 1])} % with a "
                           f"fixed BOS",
}
SETTING_LM = (f"{lm.profile}-profile runs of configs/data.yaml (smaller model, context and token budget than the "
              "paper's 60M x 20k x 1M tokens; fixed token = the BOS id)")
SETTING_MINI = "Bigram-Backcopy, 1 layer x 4 heads, d 64, 1500 steps x 64 x 64 tokens, 2 CPU cores, 3 seeds"
verdict = {True: "agrees", False: "disagrees", None: "—"}
CLAIM_IDS = ("data_unique", "data_random_first", "data_fixed_pos", "data_no_fixed_token")
display(figures.Table([{"claim": claims.claim(cid).text, "paper": claims.claim(cid).paper,
                        "ours (real LM)": lm_ours[cid], "direction (real LM)": verdict[lm_verdicts[cid]],
                        "ours (miniature)": mini_ours.get(cid, "no miniature point"),
                        "direction (miniature)": verdict[mini_verdicts.get(cid)]} for cid in CLAIM_IDS]))
display(Markdown(f"Setting differences: real LM — {SETTING_LM}; miniature — {SETTING_MINI}. “—” means there "
                 "is no result to compare yet."
                 + ("" if mini_verdicts["data_fixed_pos"] is not False else
                    " The miniature's fixed-position result is a partial disagreement: "
                    + ", ".join(f"fixed token at {k}: {'sink there' if v else 'no sink there'}"
                                for k, v in mini_moves.items())
                    + f" (after {max(p['result']['step'] for p in mini.payloads)} steps).")))

lm_prov = lm.provenance() if lm.payloads else {"profile": "gpu", "source_of_numbers": "not in the results store"}
mini_prov = experiments.payloads_provenance(mini.payloads, loaded=True) if mini.payloads else live_prov
for cid in CLAIM_IDS:
    claims.record(cid, ours=lm_ours[cid], agrees=lm_verdicts[cid], setting=SETTING_LM, provenance=lm_prov,
                  kind="lm", note="" if lm.payloads else lm.missing_text())
for cid, ours in mini_ours.items():
    claims.record(cid, ours=ours, agrees=mini_verdicts[cid], setting=SETTING_MINI, provenance=mini_prov,
                  kind="miniature",
                  note=f"live run ({live_point}, seed {live_seed}): Sink_{k_live} {lr_['sink_k'][str(k_live)]:.0f} % "
                       f"after {lr_['step']} steps")
display(Markdown(f"Recorded {len(CLAIM_IDS) + len(mini_ours)} results for the scorecard "
                 f"(`{provenance.shown_path(claims.results_dir())}/05_data.json`)."))

# %% [markdown]
# ## Rerun it
#
# ```bash
# python -m sinkpaper.book run --only 05_data -p live_point fixed_pos3 -p live_steps 3000
# python -m sinkpaper sweep --config configs/data.yaml --profile gpu --seeds 0 --out runs/data
# ```
