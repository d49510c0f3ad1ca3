#!/usr/bin/env bash
# Time one of the README's two commands from a fresh clone and store the result in results/timings/<name>.json
# (the README's table is generated from it: python -m sinkpaper report --write).
#   bash scripts/time_command.sh make-test      # or make-book
# TIMING_NOTE says what else ran on the machine meanwhile (stored with the time, shown in the README).
set -euo pipefail
name=${1:?usage: scripts/time_command.sh make-test|make-book}
case "$name" in make-test) target=test ;; make-book) target=book ;; *) echo "unknown: $name (make-test|make-book)" >&2; exit 2 ;; esac
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
git clone -q "$root" "$work/main"
[ -e "$root/../shared" ] && ln -s "$root/../shared" "$work/shared"
# every cache empty, as on a new machine (the offline models, token files, compiled kernels: .ci/fresh-caches.sh)
# shellcheck source=../.ci/fresh-caches.sh
. "$root/.ci/fresh-caches.sh"
fresh_caches "$work/cache"
start=$(date +%s.%N)
# the whole output kept (runs/, not committed): scripts/test_durations.py --from-log reads where the time went
mkdir -p "$root/runs"
set +e   # make's own exit status, not tee's (nor that of a `|| true` after the pipe)
(cd "$work/main" && make "$target") 2>&1 | tee "$root/runs/time-$name.log"
status=${PIPESTATUS[0]}
set -e
end=$(date +%s.%N)
commit=$(git -C "$work/main" rev-parse --short=10 HEAD)
secs=$(python3 -c "print($end - $start)")
note="every cache empty (models, token files, compiled kernels)${TIMING_NOTE:+; $TIMING_NOTE}"; [ "$status" != 0 ] && note="exited $status; $note"
# the values travel as arguments, not inside the Python source: a note may hold any quote
PYTHONPATH="$root" "$root/.venv/bin/python" -c "import sys; from sinkpaper.results import record_timing
print(record_timing(sys.argv[1], float(sys.argv[2]), *sys.argv[3:]))" \
  "$name" "$secs" "make $target" "$note" "$root/results/timings" "$commit"
rm -rf "$work"
exit "$status"
