#!/usr/bin/env bash
# Commit the runs the background sweeps stored since the last commit, with the README and configs/_base.yaml
# blocks regenerated from the store, and a message naming each run and where it trained. Run it whenever a
# sweep worker logs "stored ..." (a session's sweeps end with the session: what is not committed is lost).
#   bash scripts/commit_store.sh ["what else ran beside the sweeps"]
# It commits results/store, README.md and configs/_base.yaml as they are in the working tree.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
# A landing never breaks the suite: the tests that read the live store run on it first (STORE_TESTS), and
# nothing is committed if one fails.
STORE_TESTS=${STORE_TESTS:-"tests/test_paper.py tests/test_verdicts.py tests/test_sweep_reading.py tests/test_realtext.py
  tests/test_findings.py tests/test_results.py tests/test_rule_history.py"}
# runs trained by code that recorded the wrong attention route get it corrected (idempotent), and the blocks
# quoted from the store are regenerated, before the tests read them
"$PY" scripts/correct_route_provenance.py results/store > /dev/null
"$PY" -m sinkpaper report --write > /dev/null
# shellcheck disable=SC2086
if ! "$PY" -m pytest -q -x -p no:cacheprovider $STORE_TESTS > runs/store-tests.log 2>&1; then
  echo "the store-reading tests fail on the store as it is (runs/store-tests.log); nothing committed"; exit 1
fi
# Stage the store first and name what was staged: a run a worker stores while this script runs waits for the
# next commit instead of being committed under a message that does not name it. The partial curves of runs in
# progress (results/store/partial/) go with them, unnamed.
git add results/store
mapfile -t new < <(git diff --cached --name-status -- results/store \
  | awk '$1 != "D" && $2 ~ /\.json(\.gz)?$/ && $2 !~ /\/partial\// {print $2}')
if [ "${#new[@]}" = 0 ]; then echo "no new runs in results/store"; exit 0; fi
summary=$("$PY" - "${new[@]}" <<'EOF'
import sys
from sinkpaper.train.store import read_entry
runs = []
for path in sys.argv[1:]:
    d = read_entry(path)
    pv = d.get("result", {}).get("provenance", {})
    if "error" in d:   # a divergence record: no result, the step at which it stopped
        runs.append(f"{d['name']} seed {d['config']['run']['seed']} ({d['profile']}; diverged: "
                    f"{d['error'].split(';')[0]})")
        continue
    # the hardware string names the CPU's threads already ('CPU AMD EPYC, 1 threads')
    runs.append(f"{d['name']} seed {d['config']['run']['seed']} ({d['profile']}; {pv.get('hardware', '?')}, "
                f"{pv.get('dtype', '?')}, {pv.get('wall_seconds', 0) / 60:.0f} min)")
print(f"{len(runs)} new run(s): " + "; ".join(sorted(runs)))
EOF
)
"$PY" -m sinkpaper report --write > /dev/null
git add README.md book/measurements.md configs/_base.yaml
git commit -q -m "Results store: $summary${1:+. $1}; generated blocks (README, Measurements page, _base.yaml) regenerated from the store"
git log --oneline -1
