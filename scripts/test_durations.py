"""Where the test suite's time goes: runs pytest with every test's duration (--durations=0) and writes, per test
file, the seconds of its calls and of its set-ups (a set-up that builds a session fixture, such as the executed
book or a pretrained model, is charged to the first test that asked for it), with the machine named.

    .venv/bin/python scripts/test_durations.py [--json results/timings/test-durations-<cpu>.json] [-- PYTEST_ARGS]

The wall time of the whole run is what a user waits for; the per-file sums are CPU-bound work (under xdist two
files run at once, so they add up to more than the wall time).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

ROW = re.compile(r"^\s*([\d.]+)s (call|setup|teardown)\s+(tests/[^:]+)::(\S+)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", default=None)
    ap.add_argument("--from-log", metavar="FILE", help="read the durations of a run already made (its output with "
                    "--durations=0, e.g. runs/time-make-test.log from scripts/time_command.sh) instead of running")
    ap.add_argument("--note", default="", help="the conditions it ran under (quiet or beside what; caches empty)")
    ap.add_argument("pytest_args", nargs="*")
    a = ap.parse_args()
    from sinkpaper import provenance
    from sinkpaper.train import accel
    cpu = accel.cpu_model() or "cpu"
    out = a.json or f"results/timings/test-durations-{re.sub(r'[^a-z0-9]+', '-', cpu.lower()).strip('-')}.json"
    cmd = [sys.executable, "-m", "pytest", "-q", "--durations=0", "-p", "no:cacheprovider", *a.pytest_args]
    load_before = os.getloadavg()
    t0 = time.perf_counter()
    if a.from_log:
        text = Path(a.from_log).read_text()
        run = subprocess.CompletedProcess(cmd, 0 if re.search(r"\d+ passed", text) and " failed" not in text else 1,
                                          text, "")
        cmd = ["(read from)", a.from_log]
        found = re.findall(r"\d+ (?:passed|failed).* in ([\d.]+)s", text)
        wall = float(found[-1]) if found else float("nan")      # pytest's own wall time
    else:
        run = subprocess.run(cmd, capture_output=True, text=True)
        wall = time.perf_counter() - t0
    files: dict[str, dict[str, float]] = defaultdict(lambda: {"call": 0.0, "setup": 0.0, "teardown": 0.0})
    slowest = []
    for line in run.stdout.splitlines():
        m = ROW.match(line)
        if m:
            secs, phase, path, test = float(m[1]), m[2], m[3], m[4]
            files[path][phase] += secs
            slowest.append({"seconds": secs, "phase": phase, "test": f"{path}::{test}"})
    summary = next((ln for ln in reversed(run.stdout.splitlines()) if re.search(r"\d+ (passed|failed)", ln)), "")
    rows = sorted(({"file": f, **{k: round(v, 1) for k, v in t.items()}, "total": round(sum(t.values()), 1)}
                   for f, t in files.items()), key=lambda r: -r["total"])
    result = {"kind": "test-durations", "command": cmd, "wall_seconds": round(wall, 1), "summary": summary.strip(),
              "exit_code": run.returncode, "cpu": cpu, "cores": os.cpu_count(),
              "note": a.note,
              # a run read from its log was made earlier: this machine's load now says nothing about it
              "load_average_before": None if a.from_log else [round(x, 2) for x in load_before],
              "load_average_after": None if a.from_log else [round(x, 2) for x in os.getloadavg()],
              "files": rows, "slowest": sorted(slowest, key=lambda r: -r["seconds"])[:40],
              "provenance": provenance.stamp(None, source_of_numbers="computed now")}
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(json.dumps(result, indent=1))
    print(f"{summary.strip()} in {wall / 60:.1f} min; per file:")
    for r in rows[:25]:
        print(f"  {r['total']:7.1f} s  {r['file']} (calls {r['call']:.1f}, set-ups {r['setup']:.1f})")
    print(out)
    sys.exit(run.returncode)


if __name__ == "__main__":
    main()
