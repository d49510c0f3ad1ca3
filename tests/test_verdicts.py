"""Verdicts on stored runs: each run read on its plateau, runs that did not learn left out, and the seed spread
deciding between agrees, disagrees and inconclusive (sinkpaper.paper.judge). References are plain formulas
written out here, and stores built here: a test that pins a verdict, a value or a note reads runs made for it; a test
of the committed store (whose runs are retrained and replaced) checks invariants only."""
from __future__ import annotations

import itertools
import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from sinkpaper import paper
from sinkpaper.data.sources import TokenData, unigram_loss
from sinkpaper.results import reading

REPO = Path(__file__).resolve().parents[1]
A, D, I, N, R = paper.AGREES, paper.DISAGREES, paper.INCONCLUSIVE, paper.NOT_COMPARABLE, paper.NO_RESULT


def _payload(evals, steps=None, name="x/y", seed=0, config=None):
    """A store-shaped run whose curve holds the given evaluations [(step, sink_1, val_loss, loss)]."""
    curve = [{"step": st, "loss": lo, "val_loss": vl, "sink_k": {"1": s1}, "alpha_1_mean": s1 / 100}
             for st, s1, vl, lo in evals]
    cfg = config or {"data": {"source": "corpus", "path": "data/corpus/tokens.u16.xz"}, "run": {"seed": seed}}
    return {"name": name, "hash": "h", "config": cfg, "curve": curve,
            "result": {"step": steps or evals[-1][0], "sink_k": {"1": evals[-1][1]}}}


# ------------------------------------------------------------------------------------------------ the plateau
def test_plateau_is_the_mean_over_the_last_fifth_of_the_steps():
    evals = [(s, float(s % 7), 5.0, 5.0) for s in range(100, 2600, 100)]
    p = reading.plateau_of(_payload(evals), "Sink_1", 0.2, 3)
    window = [v for s, v, _, _ in evals if s >= 0.8 * 2500]          # steps 2000 .. 2500
    assert p["n"] == len(window) == 6 and p["from_step"] == 2000 and p["to_step"] == 2500
    assert p["mean"] == pytest.approx(sum(window) / len(window))
    assert (p["min"], p["max"]) == (min(window), max(window))


def test_a_run_without_enough_evaluations_is_named_never_read_as_its_last_value():
    few = _payload([(100, 1.0, 5, 5), (2400, 30.0, 5, 5), (2500, 40.0, 5, 5)], name="optimization/default", seed=4)
    with pytest.raises(reading.NotEnoughEvaluations, match=r"optimization/default seed 4 .* has 2 in the last 20 %"):
        reading.plateau_of(few, "Sink_1", 0.2, 3)
    bare = {**few, "curve": []}
    with pytest.raises(reading.NotEnoughEvaluations, match="has 0 in"):
        reading.plateau_of(bare, "Sink_1", 0.2, 3)


def test_in_the_registry_a_run_without_its_curve_reads_not_enough_evaluations(tmp_path):
    store = tmp_path / "store"
    shutil.copytree(REPO / "results/store", store)
    payload, _ = paper.store_lookup(str(REPO / "configs/optimization.yaml"), "text", "default", 1, str(store))
    from sinkpaper.train.store import write_entry

    write_entry(store / f"{payload['hash']}.json.gz", {**payload, "curve": []})
    r = paper.result(paper.claim("opt_batch"), "real text (CPU)", {}, str(store))
    assert r["verdict"] == R and r["status"] == "too few seeds"
    assert "not enough evaluations: optimization/default seed 1" in r["note"]


# ------------------------------------------------------------------------------------- runs that did not learn
def test_unigram_loss_is_the_plain_cross_entropy_of_training_frequencies():
    rng = np.random.default_rng(0)
    train, val = rng.integers(0, 5, 400), rng.integers(0, 6, 100)
    data = TokenData(train=train, val=val, vocab_size=6, eos_id=None, bos_id=None, name="t")
    counts = {t: 1 + sum(int(x) == t for x in train) for t in range(6)}
    total = sum(counts.values())
    want = -sum(math.log(counts[int(v)] / total) for v in val) / len(val)
    assert unigram_loss(data) == pytest.approx(want, rel=1e-12)


def test_a_run_at_the_unigram_loss_did_not_learn(tmp_path):
    cache = tmp_path / "unigram.json"
    cfg = {"data": {"source": "corpus", "path": "somewhere"}, "run": {"seed": 0}}
    cache.write_text(json.dumps({reading.stream_key(cfg): {"loss": 7.0}}))
    flat = _payload([(s, 0.0, 7.01, 7.02) for s in range(100, 2600, 100)], config=cfg)
    why = reading.training_failure(flat, 0.1, 0.2, cache)
    assert why and "unigram loss 7.00" in why and "did not learn" in why
    learned = _payload([(s, 0.0, 7.0 - s / 1000, 7.0 - s / 1000) for s in range(100, 2600, 100)], config=cfg)
    assert reading.training_failure(learned, 0.1, 0.2, cache) is None
    # a run that memorises a small set: held-out loss rises, training loss falls far below: it learned
    memorised = _payload([(s, 0.0, 7.0 + s / 1000, 7.0 - s / 500) for s in range(100, 2600, 100)], config=cfg)
    assert reading.training_failure(memorised, 0.1, 0.2, cache) is None
    nan = _payload([(100, 0.0, 7.0, 7.0), (200, 0.0, float("nan"), 3.0)], config=cfg)
    assert reading.training_failure(nan, 0.1, 0.2, cache) == "a loss is not finite"


def test_the_unigram_cache_covers_every_stream_of_the_committed_store():
    """The registry reads the committed cache, so CI never decompresses the corpus to list the claims."""
    known = json.loads((REPO / reading.UNIGRAM).read_text())
    from sinkpaper.train.store import entries

    streams = {reading.stream_key(p["config"]) for _, p in entries(REPO / "results/store")}
    assert streams <= set(known), streams - set(known)


def test_post_norm_runs_that_did_not_learn_are_not_a_result():
    """Post-norm at the text profile's LR: 2 of 3 seeds never learned, so the point gives no result (the claim
    reads post-norm at a quarter of the LR instead, where it learns)."""
    from sinkpaper.paper.claim import Runs
    from sinkpaper.paper.lookup import _store_result

    r = _store_result(Runs(str(REPO / "configs/architecture.yaml"), {"post_norm": ("post_norm", "Sink_1")}), "text",
                      str(REPO / "results/store"))
    assert r["status"] == "too few seeds" and r["values"] == {"post_norm": None}
    assert "post_norm seed 0:" in r["note"] and "post_norm seed 1:" in r["note"] and "did not learn" in r["note"]
    assert paper.claim("arch_norm").measure["real text (CPU)"].points == {"post_norm": ("post_norm_lr_x0.25", "Sink_1")}


# -------------------------------------------------------------------------------------------- the seed spread
def test_a_separated_comparison_is_decided_and_an_overlapping_one_is_not():
    up = paper.Change("t", "c", up=True)
    assert paper.judge(up, {"t": [50, 60, 55], "c": [10, 20, 15]}) == (A, "")
    assert paper.judge(up, {"t": [10, 20, 15], "c": [50, 60, 55]}) == (D, "")
    v, why = paper.judge(up, {"t": [30, 40, 45], "c": [20, 30, 28]})     # t above c on every seed, ranges overlap
    assert v == I and "overlap" in why
    v, why = paper.judge(up, {"t": [40, 20, 45], "c": [20, 30, 28]})     # the paired differences change sign
    assert v == I and "seeds disagree in sign" in why and "seeds split" in why


def test_a_threshold_holds_only_with_every_seed_on_the_same_side():
    rule = paper.Sinks(["wd_1"])
    assert paper.judge(rule, {"wd_1": [12, 30, 45]}) == (A, "")
    assert paper.judge(rule, {"wd_1": [0, 1, 2]}) == (D, "")
    v, why = paper.judge(rule, {"wd_1": [0.1, 4.9, 29.1]})
    assert v == I and "wd_1: a sink (>= 10 %) in 1 of 3 seeds" in why
    assert paper.judge(rule, {"wd_1": [12, None, 45]})[0] == R


def test_a_verdict_that_a_later_comparison_decides_is_not_lost():
    """Monotone: the first step is inside the spread, a later one falls on every seed with separated ranges:
    "never rises" is false whatever the first step does."""
    rule = paper.Monotone(["a", "b", "c"], up=True)
    assert paper.judge(rule, {"a": [10, 14, 12], "b": [12, 11, 13], "c": [1, 2, 0]}) == (D, "")


def _comparison_rules(rule) -> bool:
    """Rules that claim a difference between points (no threshold part): on one run's seeds they must not decide."""
    if isinstance(rule, paper.Both):
        return _comparison_rules(rule.first) and _comparison_rules(rule.second)
    return isinstance(rule, paper.Monotone) or (isinstance(rule, paper.Change) and not rule.treated_no_sink)


def test_points_that_are_seeds_of_one_run_read_inconclusive_for_every_comparison():
    """Every point of a claim gets the three base seeds' plateaus in another order: no effect at all. A comparison
    claim must read inconclusive, a "matters little" claim agrees (no effect is what it claims)."""
    base = paper.result(paper.claim("opt_emergence"), "real text (CPU)")["seed_values"]["default"]
    assert len(base) == 3 and len(set(base)) == 3
    orders = list(itertools.permutations(base))
    seen = {"comparison": 0, "matters little": 0}
    for c in paper.CLAIMS:
        m = c.measure.get("real text (CPU)")
        if c.rule is None or not isinstance(m, paper.Runs):
            continue
        values = {label: list(orders[i % len(orders)]) for i, label in enumerate(m.points)}
        verdict, why = paper.judge(c.rule, values)
        if _comparison_rules(c.rule):
            seen["comparison"] += 1
            # no effect never agrees with a claimed change: inconclusive, or disagrees where every pairing of the
            # seeds excludes the claimed size (the reason says so)
            assert (verdict == I and why) or (verdict == D and "is short of" in paper.lookup._reason(c.rule, values)), \
                (c.id, verdict)
        elif isinstance(c.rule, paper.MattersLittle):
            seen["matters little"] += 1
            assert verdict == A, c.id
    assert seen["comparison"] >= 6 and seen["matters little"] >= 3, seen


def test_every_stored_claims_rule_reads_the_papers_numbers_and_not_no_effect_as_one_seed():
    for c in paper.CLAIMS:
        chk = paper.rule_check(c)
        if chk is None or not any(isinstance(m, paper.Runs) for m in c.measure.values()):
            continue        # chapter-measured claims are read on one measurement, never on seeds
        paper_values = {**c.figure, **c.paper_values()}
        null = c.rule.null(paper_values)
        as_seeds = paper.judge(c.rule, {k: [v] for k, v in paper_values.items() if v is not None})
        assert chk["paper"] == A and as_seeds[0] == A, c.id
        assert chk["no_effect"] != A, c.id
        assert paper.judge(c.rule, {k: [v] for k, v in null.items() if v is not None})[0] != A, c.id


def test_no_stored_verdict_rests_on_a_run_that_did_not_learn(tmp_path):
    """A store built for it: the base run's seed 0 rewritten so that neither loss ever falls below the unigram
    loss of its data. The registry lists it as not counted, reads no plateau from it, and the claim has too few
    seeds left for a verdict."""
    from sinkpaper.train.store import read_entry, write_entry
    store = tmp_path / "store"
    shutil.copytree(REPO / "results/store", store, ignore=shutil.ignore_patterns(".claims"))
    claim = paper.claim("opt_emergence")
    payload, _ = paper.store_lookup(str(REPO / "configs/optimization.yaml"), "text", "default", 0, str(store))
    path = store / f"{payload['hash']}.json.gz"
    entry = read_entry(path)
    floor = reading.unigram_floor(entry["config"])
    for c in entry["curve"]:
        for k in ("loss", "val_loss"):
            if c.get(k) is not None:
                c[k] = floor + 0.5
    write_entry(path, entry)
    r = paper.result(claim, "real text (CPU)", {}, str(store))
    assert [x.split(":")[0] for x in r["excluded"]] == ["default seed 0"], r["excluded"]
    assert "it did not learn" in r["excluded"][0]
    assert all("0" not in per_seed for per_seed in r["plateaus"].values()), r["plateaus"]
    assert r["status"] == "too few seeds" and r["verdict"] == R
    # on the committed store, every run a verdict reads learned: no excluded run sits in a plateau
    for e in paper.listing():
        res = e["results"]["real text (CPU)"]
        for line in res.get("excluded", []):
            point, seed = line.split(" seed ")[0].split(": ")[-1], line.split(" seed ")[1].split(" ")[0].rstrip(":")
            for label, per_seed in res.get("plateaus", {}).items():
                spec = paper.claim(e["id"]).measure["real text (CPU)"].points[label]
                assert not (spec[0] == point and seed in per_seed), (e["id"], line)


def test_the_scorecard_and_the_chapter_tables_show_inconclusive_with_its_reason():
    from sinkpaper.book import scorecard

    listing = paper.listing()
    inconclusive = [e for e in listing if e["results"]["real text (CPU)"]["verdict"] == I]
    assert inconclusive, "the committed store has inconclusive claims"
    e = inconclusive[0]
    html = scorecard.Scorecard(listing)._repr_html_()
    # an inconclusive chip carries its reason: the seeds' split or the overlap, in the chip's own line
    assert '>inconclusive</span>' in html and 'class="spx-why"' in html
    assert any(part in html for part in ("seeds split", "overlap", "seeds disagree"))
    assert scorecard.Scorecard(listing).counts()["real text (CPU)"][I] == len(inconclusive)
    row = paper.row(e["id"])
    assert row["verdict (real text (CPU))"].startswith(f"{I}: ")


# ---------------------------------------------------------------------------- hand-made stores for the registry
# A test that pins a verdict, a value or a note reads a store built for it here: the committed store changes as runs
# are retrained (a run that spiked is no longer counted), so a test of it checks invariants only.
_METRIC_FIELDS = {"Sink_first": "sink_first_key", "Sink_doc_start": "sink_doc_start"}


def _text_cfg(config: str, point: str, seed: int):
    """The text-profile config of a family's point and seed: the one the registry looks up (its key is where the run
    is stored)."""
    from sinkpaper.train.sweep import sweep_configs
    [(_, _, cfg)] = sweep_configs(REPO / config, "text", [point], [seed])
    return cfg


def _stored_text_run(store, config: str, point: str, seed: int, metrics: dict[str, float]) -> dict:
    """Store a text-profile run of ``config``'s ``point`` and ``seed`` at the key the registry reads, and return it
    as stored. Its evaluations (every 100 steps) hold each of ``metrics`` ("Sink_k", "Sink_first",
    "Sink_doc_start"), rising over the first half of the steps and flat at the given value after: its plateau is
    that value. Its losses fall smoothly from 7.5 to 5.0 nats (held-out 0.1 above), far below the corpus's unigram
    loss (6.95; the cache's entry for the real data config is read), with no spike: a run that learned."""
    from sinkpaper.models.model import ATTENTION_NUMERICS
    from sinkpaper.train.store import read_entry, write_result
    cfg = _text_cfg(config, point, seed)
    steps, per_step = cfg.optim.steps, cfg.optim.batch_size * cfg.data.context

    def loss(st):
        return 5.0 + 2.5 * math.exp(-4.0 * st / steps)

    def record(st):
        grown = min(1.0, 2.0 * st / steps)
        row = {"step": st, "tokens": per_step * st, "loss": loss(st), "val_loss": loss(st) + 0.1,
               "sink_k": {"1": 0.0}}
        for name, v in metrics.items():
            if name.startswith("Sink_") and name[5:].isdigit():
                row["sink_k"][name[5:]] = v * grown
            else:
                row[_METRIC_FIELDS[name]] = v * grown
        row["alpha_1_mean"] = row["sink_k"]["1"] / 200
        return row

    logs = [{"step": st, "tokens": per_step * st, "loss": loss(st), "lr": 1e-3} for st in range(10, steps, 50)]
    evals = [record(st) for st in range(100, steps + 1, 100)]
    curve = sorted(logs + evals, key=lambda c: c["step"])
    last = evals[-1]
    path = write_result(store, cfg, {**{k: v for k, v in last.items() if k not in ("step", "tokens", "loss")},
                                     "step": steps, "tokens_seen": per_step * steps, "final_loss": last["loss"],
                                     "provenance": {"hardware": "CPU test", "dtype": "bf16", "compiled": True,
                                                    # trained since the operators normalize in fp32
                                                    "route": {"numerics": ATTENTION_NUMERICS},
                                                    "code_version": "v1", "computed_at": "2000-01-01 00:00 UTC"}},
                        curve=curve)
    return read_entry(path)


def _stored_divergence(store, config: str, point: str, seed: int, error: str) -> None:
    """A divergence record for a run, as the sweep writes it (the run itself is not stored)."""
    from sinkpaper.train.sweep import diverged_path
    cfg = _text_cfg(config, point, seed)
    path = diverged_path(store, cfg.hash())
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"hash": cfg.hash(), "name": cfg.name, "profile": cfg.profile,
                                "config": cfg.to_dict(), "error": error}))


def _unstore(store, config: str, point: str, seed: int) -> None:
    from sinkpaper.train.store import result_path
    path = result_path(store, _text_cfg(config, point, seed).hash())
    assert path.exists(), path
    path.unlink()


def test_a_hand_made_run_is_read_by_the_registry_as_a_run_that_learned(tmp_path):
    """The hand-made runs the tests below read are found at their key, learned (no spike, losses far below the
    unigram loss of their data) and read on their plateau."""
    payload = _stored_text_run(tmp_path, "configs/data.yaml", "fixed_pos2", 0, {"Sink_2": 40.0})
    found, status = paper.store_lookup(str(REPO / "configs/data.yaml"), "text", "fixed_pos2", 0, str(tmp_path))
    assert status == "found" and found["hash"] == payload["hash"]
    assert reading.training_failure(found) is None
    from sinkpaper.train.spikes import spikes_of
    assert spikes_of(found) == []
    assert reading.plateau_of(found, "Sink_2")["mean"] == 40.0 and reading.plateau_of(found, "Sink_1")["mean"] == 0.0
    # the same curve one nat up after warm-up, on two log lines, is a spike: the rule is read on these curves
    spiked = {**found, "curve": [{**c, "loss": c["loss"] + 1.5} if c["step"] in (1010, 1060) else c
                                 for c in found["curve"]]}
    assert reading.training_failure(spiked).startswith("a loss spike at steps 1010-1060 (1.5 nats above its running")
    # a gradient norm 50x its median on one log line is a spike by the gradient alone, and is named so
    grads = {**found, "curve": [{**c, "grad_norm_max": 50.0 if c["step"] == 1010 else 1.0} if "loss" in c else c
                                for c in found["curve"]]}
    assert reading.training_failure(grads) == "a gradient spike at step 1010 (gradient norm 50x its median): not counted"


def test_a_reading_shown_beside_never_holds_a_verdict_back(tmp_path):
    """pack_doc_mask is judged on its runs with a BOS before every document (Sink_first); the runs with one BOS per
    window are shown beside, and so is the document-start reading until it has three seeds that trained. Without
    the beside runs the verdict stands (their values read None); without a judged run there is none. Read on a
    store built here: Sink_first has a sink in every seed, the document-start reading none in its two trained
    seeds (it would read "disagrees" if it decided), its seed 2 diverged."""
    store = tmp_path / "store"
    claim = paper.claim("pack_doc_mask")
    m = claim.measure["real text (CPU)"]
    judged = "bos_each_doc_mask: Sink_first"
    beside = "bos_doc_mask (one BOS per window): Sink_1"
    doc_start = "bos_each_doc_mask (document starts inside windows, beside): Sink_doc_start"
    assert m.beside == {beside, doc_start} and set(m.points) == {judged, beside, doc_start}
    doc_point, _, doc_config = m.points[doc_start]
    assert (doc_point, doc_config) == ("onsets_bos_each_doc_mask", "configs/onsets.yaml")
    first = {0: 40.0, 1: 38.0, 2: 45.0}
    for seed in (0, 1, 2):
        _stored_text_run(store, "configs/packing.yaml", "bos_each_doc_mask", seed, {"Sink_first": first[seed]})
        _stored_text_run(store, "configs/packing.yaml", "bos_doc_mask", seed, {"Sink_1": 30.0 + seed})
    docs = {0: 2.0, 1: 4.0}
    for seed, v in docs.items():
        _stored_text_run(store, doc_config, doc_point, seed, {"Sink_doc_start": v})
    _stored_divergence(store, doc_config, doc_point, 2, "non-finite loss (first at step 270); stopped")
    got = {s: paper.store_lookup(str(REPO / doc_config), "text", doc_point, s, str(store)) for s in (0, 1, 2)}
    assert [st for _, st in got.values()] == ["found", "found", "diverged"]

    full = paper.result(claim, "real text (CPU)", {}, str(store))
    assert full["status"] == "found" and full["verdict"] == A, full
    assert full["why"] == f"{judged} decides until {doc_start} has 3 seeds that trained"
    assert full["values"][judged] == pytest.approx(sum(first.values()) / 3)
    assert full["values"][beside] == pytest.approx(31.0)
    # the document-start reading: the mean of the seeds of it that trained, said to be theirs only, per-seed values
    # none (too few seeds to decide), the divergence named among the runs not counted (not as missing)
    assert full["values"][doc_start] == pytest.approx(3.0) and doc_start not in full["seed_values"]
    assert full["seeds_of"][doc_start] == [0, 1]
    assert f"{doc_start}: the mean of seeds 0, 1 only (the seeds of it that trained)" in full["note"]
    assert "onsets_bos_each_doc_mask seed 2: diverged, non-finite loss (first at step 270)" in full["note"]
    assert full["excluded"] == ["onsets_bos_each_doc_mask seed 2: diverged, non-finite loss (first at step 270)"]

    # without the runs with one BOS per window: the same verdict, their value None
    for seed in (0, 1, 2):
        _unstore(store, "configs/packing.yaml", "bos_doc_mask", seed)
    r = paper.result(claim, "real text (CPU)", {}, str(store))
    assert r["verdict"] == full["verdict"] == A and r["status"] == "found"
    assert r["values"][beside] is None
    assert r["values"][judged] == full["values"][judged] is not None
    # the document-start reading down to one seed: its value is that seed's, named; the verdict still stands
    _unstore(store, doc_config, doc_point, 1)
    one = paper.result(claim, "real text (CPU)", {}, str(store))
    assert one["values"][doc_start] == pytest.approx(docs[0]) and "the mean of seed 0 only" in one["note"]
    assert one["verdict"] == full["verdict"] == A
    # without a judged run there is no verdict
    _unstore(store, "configs/packing.yaml", "bos_each_doc_mask", 0)
    r = paper.result(claim, "real text (CPU)", {}, str(store))
    assert r["verdict"] == R and r["status"] == "incomplete"


def test_a_second_reading_is_judged_by_the_same_rule_beside_the_verdict(tmp_path):
    """A second reading (other runs of the same points: another depth or budget) is judged by the claim's rule on
    its own runs and said beside the verdict, which it never changes; where one of its runs is not stored it names
    the run and gives no value, and a run that diverged is named with its record. Read on a store built here: the
    2-layer runs have no sink at position 2, the 4-layer 5000-step runs one in every seed."""
    from sinkpaper.book import findings
    from sinkpaper.paper.claim import Claim, at_scales, family
    from sinkpaper.paper.rules import MovesTo

    def moved(pt):
        return family("data", {f"fixed_pos2: Sink_{j}": (pt, f"Sink_{j}") for j in (1, 2, 3)})
    deep = moved("fixed_pos2_layers_4_steps_x2")
    c = Claim("t", "5", "05_data", "moves", "Section 5", rule=MovesTo([2]),
              measure=at_scales(text=family("data", dict(moved("fixed_pos2").points),
                                            readings={"4 layers and 5000 steps": deep})))
    store = tmp_path / "store"
    shallow = {"Sink_1": 30.0, "Sink_2": 2.0, "Sink_3": 1.0}     # the sink stays on token 1
    deeper = {"Sink_1": 5.0, "Sink_2": 40.0, "Sink_3": 2.0}      # it moved to position 2
    for seed in (0, 1, 2):
        _stored_text_run(store, "configs/data.yaml", "fixed_pos2", seed, {k: v + seed for k, v in shallow.items()})
        _stored_text_run(store, "configs/data.yaml", "fixed_pos2_layers_4_steps_x2", seed,
                         {k: v + seed for k, v in deeper.items()})
    r = paper.result(c, "real text (CPU)", {}, str(store))
    alone = paper.result(Claim("t", "5", "05_data", "moves", "Section 5", rule=MovesTo([2]),
                               measure=at_scales(text=moved("fixed_pos2"))), "real text (CPU)", {}, str(store))
    assert r["verdict"] == alone["verdict"] == D                  # the 2-layer runs: no sink at position 2
    assert r["values"] == alone["values"] and r["values"]["fixed_pos2: Sink_2"] == pytest.approx(3.0)
    assert "second_readings" not in alone
    # the 4-layer runs alone, as the rule reads them: a sink at 2 in every seed, above Sink_1 and Sink_3
    assert paper.result(Claim("t", "5", "05_data", "moves", "Section 5", rule=MovesTo([2]),
                              measure=at_scales(text=deep)), "real text (CPU)", {}, str(store))["verdict"] == A
    assert r["second_readings"] == ["the same rule at 4 layers and 5000 steps: agrees"]
    assert paper.verdict_text(r) == "disagrees: the same rule at 4 layers and 5000 steps: agrees"
    e = {"id": "t", "rule": c.rule.sentence, "kind": "reproduction"}
    assert findings.reason(e, r).endswith("; the same rule at 4 layers and 5000 steps: agrees")

    # one of its runs not stored: named, no value, the verdict unchanged
    _unstore(store, "configs/data.yaml", "fixed_pos2_layers_4_steps_x2", 1)
    r = paper.result(c, "real text (CPU)", {}, str(store))
    assert r["verdict"] == D and r["second_readings"] == [
        "the same rule at 4 layers and 5000 steps: no result (not stored: fixed_pos2_layers_4_steps_x2 seed 1)"]
    # a run that diverged is named with its record, not as missing
    _stored_divergence(store, "configs/data.yaml", "fixed_pos2_layers_4_steps_x2", 1,
                       "non-finite loss (first at step 7); stopped")
    r = paper.result(c, "real text (CPU)", {}, str(store))
    assert r["verdict"] == D and r["second_readings"] == [
        "the same rule at 4 layers and 5000 steps: no result (fixed_pos2_layers_4_steps_x2 seed 1: diverged, "
        "non-finite loss (first at step 7))"]


def test_the_registry_reads_the_unigram_cache_from_any_working_directory(tmp_path, monkeypatch):
    payload, _ = paper.store_lookup(str(REPO / "configs/optimization.yaml"), "text", "default", 0,
                                    str(REPO / "results/store"))
    here = reading.unigram_floor(payload["config"])
    before = paper.result(paper.claim("opt_lr"), "real text (CPU)", {}, str(REPO / "results/store"))
    monkeypatch.chdir(tmp_path)   # no corpus, cache or configs relative to here: the repository's are read
    assert reading.unigram_floor(payload["config"]) == here
    after = paper.result(paper.claim("opt_lr"), "real text (CPU)", {}, str(REPO / "results/store"))
    assert after["verdict"] == before["verdict"] and after["values"] == before["values"] != {}


# ------------------------------------------------------------------------------------ readings that can fail
def test_a_reading_whose_control_has_no_sink_cannot_decide():
    from sinkpaper.paper.rules import Contrast
    rule = Contrast(["b: Sink*"], ["b: Sink_1"], controls={"b: Sink_1": "control"})
    # token 1 loses nothing it had: the control has no token-1 sink, so "Sink_1 < 5 %" is not a finding
    assert paper.judge(rule, {"b: Sink*": [60, 70, 65], "b: Sink_1": [0, 0, 0], "control": [0, 0, 0]})[0] == N
    assert "cannot fail here: its control control has no sink" in rule.reason(
        {"b: Sink*": 60.0, "b: Sink_1": 0.0, "control": 0.0})
    # the same reading where the control has a sink to lose decides, both ways
    assert paper.judge(rule, {"b: Sink*": [60, 70, 65], "b: Sink_1": [0, 1, 0], "control": [40, 35, 45]})[0] == A
    assert paper.judge(rule, {"b: Sink*": [60, 70, 65], "b: Sink_1": [23, 18, 15], "control": [40, 35, 45]})[0] == D
    # a sink that should return to token 1 where the control never had one: not comparable, never disagrees
    back = Contrast(["v: Sink_1"], ["v: Sink*"], controls={"v: Sink_1": "control"})
    assert paper.judge(back, {"v: Sink_1": [0.8, 20.4, 0.0], "v: Sink*": [1, 2, 1], "control": [0, 0, 0]})[0] == N


def test_the_bias_claims_read_token_1_where_the_control_has_a_sink():
    for cid in ("bias_fixed_v", "bias_sink_token"):
        m = paper.claim(cid).measure["real text (CPU)"]
        pt = cid.replace("bias_", "").replace("fixed_v", "k_bias_fixed_v")
        assert m.points[f"{pt}: Sink_1"] == (pt, "Sink_1")                # with the text profile's BOS
        assert m.points[f"{pt}: Sink*"] == (f"{pt}_no_bos", "Sink*")       # as the paper ran it
        assert m.points["default"] == ("none", "Sink_1")                   # the control, with its token-1 sink
        assert f"{pt} (no BOS): Sink_1" in m.beside                        # cannot fail: shown, not judged
    m = paper.claim("bias_fixed_v_large").measure["real text (CPU)"]
    assert m.points["default"] == ("no_fixed_token", "Sink_1", "configs/data.yaml")


def test_a_pair_stored_at_unequal_budgets_is_not_compared():
    from sinkpaper.paper.lookup import unequal_budgets
    from sinkpaper.paper.rules import Both, Change
    rule = Both(Change("sum_2", "control_x2", up=True), Change("sum_0.1", "control", up=False))
    assert unequal_budgets(rule, {"sum_2": [5000], "control_x2": [5000], "sum_0.1": [2500], "control": [2500]}) == ""
    why = unequal_budgets(rule, {"sum_2": [5000], "control_x2": [2500], "sum_0.1": [2500], "control": [2500]})
    assert why == "unequal budgets, not compared: sum_2 at 5000 steps, control_x2 at 2500"
    # every registered claim compares its pairs at one budget or says why not (the listing would read them)
    for c in paper.CLAIMS:
        m = c.measure.get("real text (CPU)")
        if c.rule is None or not isinstance(m, paper.Runs):
            continue
        for a, b in c.rule.pairs():
            if a in m.points and b in m.points:
                assert "steps_x" not in m.points[a][0] or "steps_x" in m.points[b][0], (c.id, a, b)


def test_an_excluded_claimed_size_reads_disagrees_even_where_the_seeds_overlap():
    from sinkpaper.paper.rules import Change
    fall = Change("t", "c", up=False)
    # the paper's -65 % at LR x1/4 and steps x4: ours 37.8-39.0 against 32.2-42.6 overlap, and no pairing of a
    # treated seed with a control seed falls by 25 %: the claimed size is excluded by every seed
    v, why = paper.judge(fall, {"t": [37.8, 38.5, 39.0], "c": [32.2, 42.6, 40.0]})
    assert v == D
    assert "every seed of t is short of 25 % below every seed of c" in paper.lookup._reason(
        fall, {"t": [37.8, 38.5, 39.0], "c": [32.2, 42.6, 40.0]})
    # overlapping seeds where some pairing does reach the size stay inconclusive
    assert paper.judge(fall, {"t": [20.0, 38.5, 39.0], "c": [32.2, 42.6, 40.0]})[0] == I
    # separated seeds that reach the size agree
    assert paper.judge(fall, {"t": [10.0, 12.0, 11.0], "c": [32.2, 42.6, 40.0]})[0] == A


def test_rising_over_a_control_with_no_sink_needs_a_sink():
    from sinkpaper.paper.rules import Change
    rise = Change("t", "c", up=True)
    assert paper.judge(rise, {"t": [0.1, 0.1, 0.1], "c": [0.0, 0.0, 0.0]})[0] == D     # 0.1 against 0 is not "more"
    assert paper.judge(rise, {"t": [0.0, 0.0, 0.0], "c": [0.0, 0.0, 0.0]})[0] == D
    assert paper.judge(rise, {"t": [30.0, 25.0, 40.0], "c": [0.0, 0.0, 0.0]})[0] == A  # a sink where there was none
    assert paper.judge(rise, {"t": [7.0, 8.0, 6.0], "c": [0.0, 0.0, 0.0]})[0] == I     # in the grey band
    assert rise.reason({"t": 0.1, "c": 0.0}).startswith("c has no sink, so 'more' asks t for a sink")


def test_the_onset_is_checked_against_the_window_the_paper_states():
    from sinkpaper.paper.lookup import onset_of
    from sinkpaper.paper.onsets import Onset
    on = Onset("default: onset step", 1000, 2000)
    assert paper.judge(on, {"default: onset step": [1500, 1100, 1200]})[0] == A
    assert paper.judge(on, {"default: onset step": [300, 400, 200]})[0] == D
    assert on.apply({"default": 30.0}) == N          # a scale that does not measure the onset
    run = {"config": {"optim": {"steps": 2500}, "eval": {"every": 100}},
           "curve": [{"step": s, "sink_k": {"1": v}} for s, v in ((900, 0.0), (1000, 9.9), (1100, 10.0), (1200, 40.0))]}
    assert onset_of(run, "onset: sink")["mean"] == 1100.0          # the first evaluation at SINK (10 %) or above
    run["curve"] = run["curve"][:2]
    assert onset_of(run, "onset: sink")["mean"] == 2600.0          # never: one evaluation past the end


def test_an_onset_that_did_not_last_is_named_beside_the_verdict_with_the_rule_read_as_never():
    """A quantity that crossed its threshold and is below it again at the run's end and on its plateau (a sink that
    flickers during a loss spike) keeps its registered onset; beside the verdict it is named, with the rule's
    verdict when it is read as never formed. A late onset that holds to the end is not flagged."""
    from sinkpaper.paper.lookup import _unlasting
    from sinkpaper.paper.onsets import After, did_not_last

    def run(curve):
        return {"config": {"optim": {"steps": 2500}, "eval": {"every": 100}},
                "curve": [{"step": st, "sink_k": {"1": v}} for st, v in curve]}
    flicker = run([(400, 0.0), (498, 11.5), (500, 12.1), (600, 0.8)] + [(st, 0.2) for st in range(700, 2600, 100)])
    assert did_not_last(flicker, "sink") == {"step": 498.0, "last": 0.2, "plateau": pytest.approx(0.2),
                                             "threshold": 10.0}
    late = run([(st, 0.0) for st in range(100, 2500, 100)] + [(2500, 12.0)])   # forms at the last evaluation
    assert did_not_last(late, "sink") is None and did_not_last(run([(100, 0.0), (2500, 1.0)]), "sink") is None
    rule = After("b: onset: sink", "b: onset: induction", end="b: steps")
    out = {"seeds": [0, 1, 2], "transient": [{"label": "b: onset: sink", "seed": 1, "never": 2600.0,
                                              **did_not_last(flicker, "sink")}],
           "seed_values": {"b: onset: sink": [1800.0, 498.0, 1800.0], "b: onset: induction": [300.0] * 3,
                           "b: steps": [2500.0] * 3}}
    assert paper.judge(rule, out["seed_values"])[0] == A        # as registered: the sink after the induction heads
    text = _unlasting(rule, out)
    assert text.startswith("with the 1 onset that did not last read as never formed, the same rule reads "
                           "inconclusive: b: onset: sink of seed 1 (step 498; 0.2 on its plateau, 0.2 at its end, "
                           "below 10)")


def test_the_base_rate_counts_points_that_keep_a_sink_in_the_paper_and_have_none_here():
    from sinkpaper.paper.report import removal_base_rate

    def e(cid, seeds):
        c = paper.claim(cid)
        return {"id": cid, "paper": {"values": c.paper_values()}, "results": {"real text (CPU)": {"seed_values": seeds}}}
    listing = [e("arch_pe", {"pos_rope": [40, 45, 38], "pos_nope": [0, 0, 0.1], "pos_alibi": [0, 6, 0],
                             "pos_absolute": [20, 0, 0]}),
               e("ops_sigmoid", {"sigmoid": [0, 0, 0], "softmax": [40, 40, 40]})]    # a Contrast: not counted
    got = removal_base_rate(listing)
    assert got == {"none": ["pos_nope"], "kept": ["pos_rope"],
                   "kept_in_paper": ["pos_absolute", "pos_alibi", "pos_nope", "pos_rope"]}
    assert paper.report.base_rate_sentence(listing, "real text (CPU)") == (
        "real text (CPU): of the 4 points that keep a sink in the paper and are read here, 1 keep one in every seed "
        "and 1 have none in any seed (2 in between); none: pos_nope.")
    assert paper.report.base_rate_sentence(listing, paper.LAYERS_4_SCALE) == ""   # nothing read there


def test_the_base_rate_at_4_layers_reads_the_claims_rule_over_the_points_run_there():
    """At 4 layers arch_pe's rule is Sinks over the five encodings run there; its labels are the 2-layer ones, so
    the paper's numbers stand beside them, and a label the 4-layer rule does not read is not counted."""
    from sinkpaper.paper.report import removal_base_rate

    c = paper.claim("arch_pe")
    assert paper.scale_rule(c, paper.LAYERS_4_SCALE).labels == ["pos_rope", "pos_nope", "pos_absolute",
                                                                 "pos_learnable", "pos_alibi"]
    assert paper.scale_rule(c, "real text (CPU)") is c.rule
    seeds = {"pos_rope": [70, 74, 68], "pos_nope": [30, 25, 40], "pos_relative": [0, 0, 0]}
    listing = [{"id": "arch_pe", "paper": {"values": c.paper_values()},
                "results": {paper.LAYERS_4_SCALE: {"seed_values": seeds}}}]
    assert removal_base_rate(listing, paper.LAYERS_4_SCALE) == {"kept_in_paper": ["pos_nope", "pos_rope"],
                                                                 "kept": ["pos_nope", "pos_rope"], "none": []}


def test_onsets_are_read_as_registered_and_after_asks_every_seed():
    from sinkpaper.paper.onsets import ONSETS, onset_step
    from sinkpaper.paper.onsets import After
    curve = [{"step": s, "sink_k": {"1": s1}, "induction_max": ind, "previous_token_max": 0.1,
              "in_context_gain": g, "massive_activation_ratio_by_layer": [1.0, m]}
             for s, s1, ind, g, m in ((100, 0.0, 0.05, 0.0, 2.0), (200, 2.0, 0.31, 0.6, 4.0),
                                      (300, 12.0, 0.5, 1.0, 11.0))]
    run = {"config": {"optim": {"steps": 300}, "eval": {"every": 100}}, "curve": curve}
    assert {q: onset_step(run, q) for q in ONSETS} == {"sink": 300.0, "induction": 200.0, "previous token": 400.0,
                                                       "in-context gain": 200.0, "massive activation": 300.0}
    assert onset_step({"config": run["config"], "curve": [{"step": 100, "sink_k": {"1": 0.0}}]}, "induction") is None
    with pytest.raises(ValueError, match="unknown onset 'attention'; valid: sink, induction"):
        onset_step(run, "attention")
    rule = After("sink", "induction")
    assert paper.judge(rule, {"sink": [1200, 1500, 1100], "induction": [200, 300, 250]})[0] == A
    assert paper.judge(rule, {"sink": [100, 150, 110], "induction": [200, 300, 250]})[0] == D
    v, why = paper.judge(rule, {"sink": [1200, 150, 1100], "induction": [200, 300, 250]})
    assert v == I and "after induction in 2 of 3 seeds" in why


def test_after_reads_no_order_where_the_later_quantity_never_formed():
    """A quantity that never forms (its onset one evaluation past the run's end) would come "after" anything: a run
    in which either onset never came shows no order (not comparable in every seed, inconclusive in some)."""
    from sinkpaper.paper.onsets import After
    rule = After("sink", "induction", end="steps")
    steps = [2500, 2500, 2500]
    assert paper.judge(rule, {"sink": [1200, 1500, 1100], "induction": [200, 300, 250], "steps": steps})[0] == A
    assert paper.judge(rule, {"sink": [2600] * 3, "induction": [200, 300, 250], "steps": steps})[0] == N
    assert "no first-token sink forms in any seed" in rule.reason({"sink": 2600.0, "induction": 200.0, "steps": 2500.0})
    v, why = paper.judge(rule, {"sink": [2600, 1500, 1100], "induction": [200, 300, 250], "steps": steps})
    assert v == I and "sink never formed in 1 of 3 seeds" in why
    assert paper.judge(rule, {"sink": [1200, 1500, 1100], "induction": [2600] * 3, "steps": steps})[0] == N
    # not strict: the same step is no earlier; its null (the later at half the earlier's step) reads disagrees
    loose = After("sink", "massive", end="steps", strict=False)
    assert paper.judge(loose, {"sink": [1100, 1500, 900], "massive": [1100, 1400, 900], "steps": steps})[0] == A
    assert loose.null({"sink": 1100.0, "massive": 1100.0, "steps": 2500.0})["sink"] == 550.0
    assert paper.judge(loose, {"sink": [550.0] * 3, "massive": [1100.0] * 3, "steps": steps})[0] == D
    assert paper.judge(rule, {"sink": [1200] * 3, "induction": [200] * 3, "steps": [None] * 3})[0] == R


# ------------------------------------------------------------------------ the readings of issue 59, rules first
def test_the_grey_band_reads_inconclusive_never_not_comparable():
    """A value between NO_SINK and SINK is neither a sink nor none: inconclusive, with the band as the reason.
    "Not comparable" is kept for a reading that cannot fail (a control with no sink)."""
    assert paper.sink_verdict(7.0) == paper.no_sink_verdict(7.0) == I
    v, why = paper.judge(paper.Sinks(["x"]), {"x": [6.0, 7.0, 8.0]})
    assert (v, why) == (I, "x in the grey band (5-10 %) in every seed (6 / 7 / 8)")
    # a part in the band holds the whole back, unless another part fails outright
    assert paper.all_of([A, I]) == paper.all_of([I, N]) == I and paper.all_of([I, D]) == D
    from sinkpaper.paper.rules import Contrast
    rule = Contrast(["b: Sink*"], ["b: Sink_1"], controls={"b: Sink_1": "control"})
    grey = {"b: Sink*": [60.0, 70.0, 65.0], "b: Sink_1": [6.0, 7.0, 9.0], "control": [40.0, 35.0, 45.0]}
    assert paper.judge(rule, grey)[0] == I
    assert paper.judge(rule, {**grey, "control": [0.0, 0.0, 0.0]})[0] == N     # cannot fail: not comparable


def test_an_order_claim_reads_not_comparable_when_an_event_never_forms_and_says_what_did():
    from sinkpaper.paper.onsets import After
    rule = After("base: onset: sink", "base: onset: induction", end="base: steps")
    steps = [2500.0] * 3
    formed_sink = {"base: onset: sink": [1200.0, 1500.0, 1100.0], "base: onset: induction": [2600.0] * 3,
                   "base: steps": steps}
    # the sink forms, no induction head does: no order to read (it read "disagrees" before)
    assert paper.judge(rule, formed_sink) == (N, "")
    assert paper.lookup._reason(rule, formed_sink) == ("a first-token sink forms in every seed; no induction head "
                                                       "forms in any seed: no order to read")
    # an earlier event missing in some seeds only: inconclusive, the seeds named
    v, why = paper.judge(rule, {**formed_sink, "base: onset: induction": [300.0, 2600.0, 400.0]})
    assert v == I and "base: onset: induction never formed in 1 of 3 seeds" in why
    # both formed: the order is read as before
    assert paper.judge(rule, {**formed_sink, "base: onset: induction": [300.0, 200.0, 400.0]})[0] == A


def _runs(points, seeds=(0, 1, 2)):
    from sinkpaper.paper.claim import Runs
    return Runs("configs/data.yaml", {k: (v if isinstance(v, tuple) else (v, "Sink_1")) for k, v in points.items()},
                seeds)


def test_a_per_run_threshold_is_read_on_each_runs_own_trained_seeds(monkeypatch):
    """data_fixed_pos: position 2 and position 3 are different runs, each judged on its own trained seeds. Pairing
    their seeds by number would leave one seed (0) and no result."""
    from sinkpaper.paper import lookup
    from sinkpaper.paper.rules import MovesTo
    m = _runs({f"fixed_pos{k}: Sink_{j}": (f"fixed_pos{k}", f"Sink_{j}") for k in (2, 3) for j in (1, 2, 3)})
    got = {f"fixed_pos2: Sink_{j}": {0: v, 1: v, 2: v} for j, v in ((1, 1.0), (2, 60.0), (3, 2.0))}
    got.update({f"fixed_pos3: Sink_{j}": {0: v, 3: v, 4: v} for j, v in ((1, 1.0), (2, 2.0), (3, 0.0))})
    assert MovesTo([2, 3]).per_run
    paired, seed_values, _, _ = lookup._paired(m, got)                    # paired by seed number: seed 0 alone
    assert paired == [0] and seed_values == {}
    paired, seed_values, values, seeds_of = lookup._paired(m, got, per_run=True)
    assert seeds_of["fixed_pos2: Sink_2"] == [0, 1, 2] and seeds_of["fixed_pos3: Sink_3"] == [0, 3, 4]
    assert values["fixed_pos2: Sink_2"] == 60.0
    assert paper.judge(MovesTo([2, 3]), seed_values) == (D, "")          # position 3 has no sink in its 3 seeds
    assert paper.judge(MovesTo([2]), {k: v for k, v in seed_values.items() if k.startswith("fixed_pos2")})[0] == A
    # through the registry: found, each run's seeds named where they are not the claim's
    r = lookup._Read(got=got, plateaus={k: {} for k in got})
    monkeypatch.setattr(lookup, "_read_runs", lambda *a, **k: r)
    out = lookup._store_result(m, "text", "nowhere", per_run=True)
    assert out["status"] == "found" and out["seeds_of"]["fixed_pos3: Sink_1"] == [0, 3, 4]
    assert "fixed_pos3: seeds 0, 3, 4" in out["note"] and "fixed_pos2: seeds" not in out["note"]
    got["fixed_pos3: Sink_3"] = {0: 0.0}                                   # one trained seed of position 3: none
    assert lookup._store_result(m, "text", "nowhere", per_run=True)["status"] == "too few seeds"


def test_each_model_of_a_bias_claim_is_read_on_its_own():
    """The bias's Sink* (a run without BOS) and token 1's Sink_1 (a run with it) are two models: no seed of one is
    paired with a seed of the other, so neither a seed one of them lacks nor a per-seed tally joins them."""
    for cid in ("bias_sink_token", "bias_kv", "bias_k", "bias_fixed_v", "bias_fixed_v_large"):
        assert paper.claim(cid).rule.per_run, cid
    rule = paper.claim("bias_sink_token").rule
    star, one = "sink_token: Sink*", "sink_token: Sink_1"
    # the Sink_1 model's seed 1 did not train: it is read on 0, 2, 3; the others on 0, 1, 2
    assert paper.judge(rule, {star: [60.0, 70.0, 65.0], one: [0.0, 1.0, 0.5], "default": [40.0, 35.0, 45.0]}) == (A, "")
    v, why = paper.judge(rule, {star: [60.0, 70.0, 65.0], one: [3.4, 8.3, 12.4], "default": [40.0, 35.0, 45.0]})
    assert v == I and "seeds split" not in why and why.startswith(f"{one} < 5 in 1 of 3 seeds")
    # a pairing rule still refuses labels of different lengths
    with pytest.raises(ValueError, match="one value per seed"):
        paper.judge(paper.Change("t", "c"), {"t": [1.0, 2.0, 3.0], "c": [1.0, 2.0]})
    # per run, labels of different lengths are fine
    assert paper.judge(rule, {star: [60.0, 70.0, 65.0, 61.0], one: [0.0, 1.0, 0.5],
                              "default": [40.0, 35.0, 45.0]}) == (A, "")


def test_pack_doc_mask_is_decided_by_the_document_start_once_it_has_three_seeds(monkeypatch):
    from sinkpaper.paper import lookup
    c = paper.claim("pack_doc_mask")
    first, doc = "bos_each_doc_mask: Sink_first", c.rule.decided_by["bos_each_doc_mask: Sink_first"]
    assert doc in c.measure["real text (CPU)"].beside
    v, why = paper.judge(c.rule, {first: [40.0, 39.0, 44.0]})
    assert v == A and lookup._reason(c.rule, {first: [40.0, 39.0, 44.0]}) == (
        f"{first} decides until {doc} has 3 seeds that trained")
    both = {first: [40.0, 39.0, 44.0], doc: [2.0, 1.0, 0.0]}
    assert paper.judge(c.rule, both) == (D, "") and lookup._reason(c.rule, both) == f"decided by {doc}"
    # through the registry: two trained seeds of the document start are shown beside, named, and decide nothing
    m = c.measure["real text (CPU)"]
    got = {first: {0: 40.0, 1: 39.0, 2: 44.0}, "bos_doc_mask (one BOS per window): Sink_1": {0: 29.0, 1: 30.0, 2: 29.0},
           doc: {0: 47.8, 1: 49.4}}
    monkeypatch.setattr(lookup, "_read_runs", lambda *a, **k: lookup._Read(got=got, plateaus={k: {} for k in got}))
    out = lookup._store_result(m, "text", "nowhere", per_run=True)
    assert out["values"][doc] == pytest.approx(48.6) and doc not in out["seed_values"]
    assert f"{doc}: the mean of seeds 0, 1 only (the seeds of it that trained)" in out["note"]
    out["verdict"], out["why"] = lookup._verdict(c.rule, out)
    assert out["verdict"] == A and out["why"].startswith(first)
    e = {"id": c.id, "claim": c.claim, "section": c.section, "paper": {"values": {}},
         "results": {"real text (CPU)": out}}
    from sinkpaper.paper.report import markdown_table
    assert f"{doc} 48.6 (seeds 0, 1 only)" in markdown_table([e], "real text (CPU)")
    got[doc][2] = 1.0                                      # a third seed, without a sink: now it decides
    v, why = lookup._verdict(c.rule, lookup._store_result(m, "text", "nowhere", per_run=True))
    assert v == I and f"{doc}: a sink (>= 10 %) in 2 of 3 seeds (47.8 / 49.4 / 1)" in why


def test_budgets_print_as_whole_steps_and_the_uniform_induction_value_is_computed():
    from sinkpaper.circuits import uniform_induction_score
    from sinkpaper.paper.report import fmt_values, markdown_table
    res = {"status": "found", "verdict": N, "values": {"base: steps": 2500.0},
           "seed_values": {"base: steps": [2500.0, 2500.0, 2500.0]}}
    e = {"id": "onset_sink_after_induction", "claim": "c", "section": "when", "paper": {"values": {}},
         "results": {"real text (CPU)": res}}
    table = markdown_table([e], "real text (CPU)")
    assert "base: steps 2500 (all 3 seeds)" in table and "2500.0" not in table and "[2500" not in table
    res["seed_values"]["base: steps"][1], res["values"]["base: steps"] = 5000.0, 10000 / 3
    assert " [2500, 5000]" in markdown_table([e], "real text (CPU)")   # values that differ keep their range
    assert fmt_values({"base: steps": 2500.0}) == "base: steps 2500"
    assert fmt_values({"default: onset step": 1266.7}) == "default: onset step 1267"   # a mean of onset steps
    # a uniform causal head on r ++ r at T = 64: the mean of 1/t over the second copy's queries, not 1/T
    assert uniform_induction_score(64, 32) == pytest.approx(sum(1 / t for t in range(33, 65)) / 32)
    assert round(uniform_induction_score(64, 32), 4) == 0.0214
    chapter = (REPO / "notebooks/14_when_the_sink_forms.py").read_text()
    assert "0.016" not in chapter and "uniform_induction_score(64, 32)" in chapter
