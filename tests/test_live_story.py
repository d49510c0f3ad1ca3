"""Chapter 4's sentences about its live run, read from a curve built for the test."""
from __future__ import annotations

from sinkpaper.book import live_story


def _live(matrices, eps=0.3):
    curve = [{"step": 100 * (i + 1), "tokens": 6400 * (i + 1), "alpha_1_matrix": m, "sink_k": {"1": 10.0 * i},
              "alpha_1_mean": 0.1 * i, "val_loss": 3.0 - 0.1 * i} for i, m in enumerate(matrices)]
    return {"config": {"eval": {"epsilon": eps}}, "curve": curve,
            "result": {"step": curve[-1]["step"], "sink_k": {"1": 60.0}, "alpha_1_mean": 0.5, "val_loss": 2.5,
                       "tokens_seen": curve[-1]["tokens"]}}


def test_a_head_turns_at_the_first_evaluation_above_epsilon_and_never_before():
    live = _live([[[0.1, 0.2]], [[0.31, 0.3]], [[0.2, 0.9]]])   # head 1 at exactly eps is not above it
    assert live_story.heads_turned(live) == {(0, 0): 200, (0, 1): 300}
    text = live_story.heads_turned_text(live)
    assert "head 0 (layer 0): step 200, head 1 (layer 0): step 300 (2 of 2 heads)" in text
    assert live_story.heads_turned_text(_live([[[0.1, 0.1]]])).endswith("none (0 of 2 heads).")


def test_the_run_text_reads_the_first_crossing_of_50_percent():
    live = _live([[[0.1]]] * 7)     # Sink_1 0, 10, ..., 60: 50 % first at the sixth evaluation
    assert "Sink_1 first reached 50 % at step 600 (38,400 tokens)" in live_story.run_text(live)
    assert "never reached 50 %" in live_story.run_text(_live([[[0.1]]] * 3))
