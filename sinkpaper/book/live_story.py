"""What chapter 4 says about its live miniature run, computed from the run: its numbers beside the stored seeds of
its point, the first step each head turns into a sink head, and what the per-head mechanism table shows. Each
function reads a payload of the results store's shape (or the mechanism's rows) and returns what to display;
nothing here trains or knows a result."""
from __future__ import annotations

from typing import Mapping, Sequence

from ..metrics import uniform_alpha_1
from ..results.curves import curve_rows, first_reaching
from ..results.numbers import sig, span
from .figures import Figure, Fold, Table, attention_map_chart, curve_chart, row
from .tables import emergence_table, points_table

UNIFORM_64 = uniform_alpha_1(64)   # the miniature's sequences: 64 tokens after BOS


def numbers_fold(live: Mapping, label: str, point: str, seed: int, stored: Sequence[Mapping]) -> Fold:
    """The live run's final numbers, and the step at which Sink_1 first reached 50 % in it and in each stored
    seed of its point, in one fold."""
    r = live["result"]
    run = Table([{"run": label, "steps": r["step"], "tokens seen": r["tokens_seen"],
                  "Sink_1 %": round(r["sink_k"]["1"], 1), "alpha_1": round(r["alpha_1_mean"], 3),
                  "held-out loss": round(r["val_loss"], 3), "seconds": r["provenance"]["wall_seconds"]}])
    rows = emergence_table(stored, [point]).rows
    e = first_reaching(live["curve"])
    rows.append({"point": point, "seed": f"{seed} (live)", "k": 1,
                 "first step with Sink_k >= 50 %": e["step"] if e else f"not within {r['step']}",
                 "tokens seen then": e["tokens"] if e else None, "final Sink_k %": round(r["sink_k"]["1"], 1)})
    return Fold("The live run's numbers, and when Sink_1 first reached 50 % in it and in each stored seed", run,
                Table(rows))


def run_text(live: Mapping, cite: str = "") -> str:
    """The live run from its first evaluation to its end, in two sentences; ``cite``: the figure that draws it."""
    r = live["result"]
    first = [c for c in live["curve"] if "sink_k" in c][0]
    e = first_reaching(live["curve"])
    return (f"Measured in the live run{f' ({cite})' if cite else ''}: at the first evaluation (step {first['step']}) Sink_1 was "
            f"{first['sink_k']['1']:.0f} % and the mean α_1 {first['alpha_1_mean']:.3f} (uniform over 64 tokens: "
            f"{UNIFORM_64:.3f}); at the end (step {r['step']}) Sink_1 is {r['sink_k']['1']:.0f} % and α_1 "
            f"{r['alpha_1_mean']:.3f}. "
            + (f"Sink_1 first reached 50 % at step {e['step']} ({e['tokens']:,} tokens). " if e else
               "Sink_1 never reached 50 % in this run. ")
            + f"Over the same steps the held-out loss went from {first['val_loss']:.3f} to {r['val_loss']:.3f} "
              f"({r['val_loss'] - first['val_loss']:+.3f} nats per token).")


def heads_turned(live: Mapping) -> dict[tuple[int, int], int]:
    """(layer, head) -> the first evaluated step at which the head's mean α_1 exceeds the run's ε."""
    eps = live["config"]["eval"]["epsilon"]
    turned: dict[tuple[int, int], int] = {}
    for c in live["curve"]:
        for li, row in enumerate(c.get("alpha_1_matrix") or []):
            for hi, a in enumerate(row):
                if a > eps:
                    turned.setdefault((li, hi), c["step"])
    return turned


def heads_turned_text(live: Mapping) -> str:
    eps = live["config"]["eval"]["epsilon"]
    turned = heads_turned(live)
    last = [c for c in live["curve"] if "alpha_1_matrix" in c][-1]["alpha_1_matrix"]
    n_heads = sum(len(row) for row in last)
    return (f"First evaluated step at which a head's mean α_1 exceeds ε = {eps:g}: "
            + (", ".join(f"head {h} (layer {li}): step {s}" for (li, h), s in sorted(turned.items()))
               if turned else "none")
            + f" ({len(turned)} of {n_heads} heads).")


def copy_head(mech: Sequence[Mapping]) -> Mapping:
    """The head that copies most: the largest attention to the previous token from trigger queries."""
    return max(mech, key=lambda r: r["to previous token from trigger queries"])


def mechanism_text(mech: Sequence[Mapping], eps: float) -> str:
    """What the per-head table shows (mechanism.head_rows): where the heads park, which head copies, and whether
    BOS's value is small enough for parking to be a no-op."""
    copy = copy_head(mech)
    park = [r["to BOS from other queries"] for r in mech]
    prev_t = [r["to previous token from trigger queries"] for r in mech]
    prev_o = [r["to previous token from other queries"] for r in mech]
    vn = [r["BOS value norm / others'"] for r in mech]
    bos_t, bos_o = copy["to BOS from trigger queries"], copy["to BOS from other queries"]
    return (f"What the numbers show. From ordinary queries the heads put {span(park)} of their attention on BOS "
            f"(a uniform head: {UNIFORM_64:.2f} on average). From trigger queries they put {span(prev_t)} on the "
            f"previous token (the one to copy), against {span(prev_o)} from ordinary queries. Head {copy['head']} "
            f"copies most: {copy['to previous token from trigger queries']:.2f} on the previous token after a "
            f"trigger; its attention to BOS is {bos_o:.2f} from ordinary queries and {bos_t:.2f} from trigger "
            f"queries{': it leaves the sink when it has something to copy' if bos_t < bos_o - 0.1 else ''}. "
            f"BOS's value vector has {span(vn)} times the mean norm of the other tokens' values"
            + (", so the attention parked on it adds little to the output." if max(vn) < 0.25 else
               ": not small (yet), so parking on BOS still moves the output.")
            + ("" if min(park) > eps else " Not every head parks on BOS in this run (see the table): the sink has "
               "not fully formed after these steps."))


def text_corpus_fold(tp: Mapping, synthetic_alpha: float | None) -> Fold:
    """The miniature's recipe on the offline text corpus (the stored point text_corpus): its curves, its table
    and what they show, folded under its final Sink_1. ``synthetic_alpha``: the synthetic recipe's mean α_1 over
    its stored seeds, for comparison."""
    from IPython.display import Markdown

    rows = curve_rows(tp, "text_corpus, seed 0")
    r, prov = tp["result"], tp["result"].get("provenance", {})
    earlier = [x["Sink_1 %"] for x in rows[:-1]]
    return Fold(
        f"The same recipe on real text (text_corpus, seed 0): Sink_1 {r['sink_k']['1']:.1f} % after "
        f"{r['tokens_seen']:,} tokens",
        Figure(row(curve_chart(rows, "Sink_1 %", "recipe on real text: Sink_1 (%)"),
                   curve_chart(rows, "alpha_1", "recipe on real text: mean alpha_1", y_title="alpha_1")),
               "The miniature's recipe trained on the real-text corpus (text_corpus, seed 0, stored): Sink_1 and "
               "mean α_1 over training."),
        points_table([tp], ["text_corpus"], held_out=True),
        Markdown(f"On real text the recipe ends, after {r['step']} steps ({r['tokens_seen']:,} tokens), at Sink_1 "
                 f"{r['sink_k']['1']:.1f} % and mean α_1 {r['alpha_1_mean']:.3f} (uniform: {UNIFORM_64:.3f}; the "
                 f"synthetic recipe, mean of its stored seeds: {sig(synthetic_alpha)}). Mean α_1 went from "
                 f"{rows[0]['alpha_1']:.3f} at step {rows[0]['step']} to {r['alpha_1_mean']:.3f}; Sink_1 was at "
                 f"most {max(earlier, default=float('nan')):.1f} % at the earlier evaluations. Held-out loss "
                 f"{r['val_loss']:.2f} nats per token. Stored wall time: "
                 f"{prov.get('wall_seconds', float('nan')) / 60:.0f} min ({prov.get('hardware', 'CPU')}; the machine "
                 "may have been shared)."))


def map_fold(model, held, n_trig: int, head: int) -> Fold:
    """``head``'s attention map (layer 0) on one held-out sequence with triggers, and what it puts where."""
    from IPython.display import Markdown

    from .. import mechanism   # torch: only where a model is read

    i = mechanism.pick_sequence(held, n_trig)
    cells = mechanism.trigger_cells(held[i], n_trig)
    amap = mechanism.head_map(model, held[i], 0, head)
    ordinary = [t for t in range(1, amap.shape[0]) if (t, t - 1) not in cells]
    return Fold(
        f"Head {head}'s map on one held-out sequence",
        Figure(attention_map_chart(amap, cells, f"live model, layer 0, head {head}: held-out sequence {i}"),
               f"The attention map of the live model's layer 0, head {head} on held-out sequence {i} (rows: "
               "queries, columns: keys); red squares: where a copy head must look, from each trigger query to the "
               "token before the trigger."),
        Markdown(f"On this sequence ({len(cells)} trigger queries): at the trigger queries the head puts "
                 f"{', '.join(f'{float(amap[t, j]):.2f}' for t, j in cells)} on the token to copy and "
                 f"{', '.join(f'{float(amap[t, 0]):.2f}' for t, _ in cells)} on BOS; at the other {len(ordinary)} "
                 f"queries it puts on average {sum(float(amap[t, 0]) for t in ordinary) / len(ordinary):.2f} on "
                 "BOS."))
