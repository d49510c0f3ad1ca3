"""Every notebook executes end to end with papermill at a smoke size (the `cpu` profile, few samples)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("papermill")
from sinkpaper.book import runner  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SMOKE = {"02_section3_properties": {"n_samples": 4}}


@pytest.mark.parametrize("stem", sorted(p.stem for p in (REPO / "notebooks").glob("*.py")))
def test_notebook_executes(stem, tmp_path, smollm2, gemma3):  # fixtures: offline caches built once per session
    results = runner.run_notebooks("cpu", only=[stem], params=SMOKE.get(stem, {}), timeout=600,
                                   notebooks_dir=REPO / "notebooks", out_dir=tmp_path, cwd=REPO,
                                   static_assets=False)
    assert [r.status for r in results] == ["ok"], results[0].error
    nb = json.loads((tmp_path / f"{stem}.ipynb").read_text())
    text = json.dumps(nb["cells"])
    assert "Provenance" in text and "Traceback" not in text
    assert "application/vnd.jupyter.widget-view+json" not in text  # static pages cannot show widget progress bars
