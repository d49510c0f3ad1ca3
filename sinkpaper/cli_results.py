"""`python -m sinkpaper store|report|claims|routes-check|default-plan`: the results store, the blocks quoted from it,
the paper's claims with our results, every CPU training route's trajectory beside an fp32 run, and the next runs of
the paper's default on a CPU."""
from __future__ import annotations

import json
import sys
from .paper.verdicts import SCALES

COMMANDS = ("store", "report", "claims", "routes-check", "default-plan")


def add_parsers(sub) -> None:
    """`store`, `report` and `claims`: the results store, the blocks quoted from it, the paper's claims."""
    r = sub.add_parser("store", help="the results store: list stale runs or runs that did not learn, rename runs "
                                     "to the current key scheme, or replace runs by reruns that reproduce them")
    r.add_argument("action", choices=["stale", "migrate", "untrained", "replace", "recheck", "keep", "park", "restore"],
                   help="stale: list stored runs whose key is not the one their config has today (rerun them); "
                        "migrate: rename every run to its key under the definitions it ran with (compressed); "
                        "untrained: list the runs that did not learn, which no verdict counts; replace: replace "
                        "each stored run that a rerun in --rerun reproduces (every stored value the same, timings "
                        "aside), so it gains what the evaluation records today; recheck: the runs that trained the "
                        "reference softmax in bf16, per point: retrained, judged by their seed-0 rerun in "
                        "results/recheck (sinkpaper.train.recheck), or waiting for it; keep: pack the latest "
                        "checkpoint of every unfinished run under --runs into results/inflight (the end of a "
                        "sitting); park: keep, then commit the kept copies to git and take them off the tracked "
                        "tree in a second commit (the machine does not outlive the sitting); restore: read them "
                        "back (from git where results/inflight is empty) into --runs (the start of the next; a "
                        "sweep does it for each run it trains)")
    r.add_argument("--runs", default="runs", help="with keep / restore: the runs folder (default runs)")
    r.add_argument("--only", metavar="GLOB", action="append", help="with keep / park: only the runs whose path under "
                   "--runs matches (repeat for several, e.g. --only 'default_cpu/*' --only 'text/*'; a chapter's live "
                   "runs under runs/book are throwaway)")
    r.add_argument("--store", default=None, help="results store (default results/store)")
    r.add_argument("--rerun", metavar="DIR", help="with replace: the store folder the reruns were written to "
                                                  "(train --store DIR)")
    rp = sub.add_parser("report", help="regenerate the README / config blocks quoted from the results store")
    rp.add_argument("--write", action="store_true", help="rewrite the blocks (default: show them)")
    rp.add_argument("--check", action="store_true", help="exit 1 when a committed block differs from the store")
    rp.add_argument("--store", default=None, help="results store (default results/store)")
    rc = sub.add_parser("routes-check", help="train the base and a 4-layer point a few hundred steps on every CPU "
                        "route beside an fp32 run, same seed and batches: loss, gradient norms, spikes (JSON)")
    rc.add_argument("--steps", type=int, default=300)
    rc.add_argument("--json", default=None, help="output (default results/routes/routes-check.json)")
    rc.add_argument("--only", metavar="ROUTE", help="train this route alone, keeping the others of the JSON there")
    rc.add_argument("--judge", action="store_true", help="train nothing: judge the JSON there again against the "
                                                         "configs as they are now")
    dp = sub.add_parser("default-plan", help="the paper's default on a CPU (configs/default_cpu.yaml): the runs its "
                        "plan trains next, decided from the store, and the command that trains them")
    dp.add_argument("--store", default=None, help="results store (default results/store)")
    dp.add_argument("--args", action="store_true", help="print only the next runs' sweep arguments (nothing once "
                    "the plan is done), for a worker's loop: scripts/default_cpu_worker.sh")
    c = sub.add_parser("claims", help="the paper's claims with their rules and our results (sinkpaper.paper)")
    c.add_argument("--json", action="store_true", help="print the listing as JSON")
    c.add_argument("--id", metavar="NAME", help="one claim only")
    c.add_argument("--records", default=None, help="folder of chapter records (default book/_results)")
    c.add_argument("--store", default=None, help="results store (default results/store)")
    c.add_argument("--markdown", metavar="SCALE", help="one scale as a Markdown table, ours as mean [min, max] "
                   "over seeds (scales: " + "; ".join(SCALES) + ")")


def run_store(a) -> int:
    from .train import store as S
    root = a.store or S.DEFAULT_STORE
    if a.action in ("keep", "park", "restore"):
        from .train import inflight
        if a.action == "restore":
            done = inflight.restore(a.runs, store=root)
            print(f"{len(done)} run(s) restored from {inflight.INFLIGHT}")
            return 0
        done = inflight.keep(a.runs, store=root, only=a.only)
        print(f"{len(done)} run(s) kept in {inflight.INFLIGHT}")
        if a.action == "park":
            inflight.park()
        return 0
    if a.action == "untrained":
        from .results.reading import training_failure
        n = 0
        for p, payload in S.entries(root):
            why = training_failure(payload)
            if why:
                n += 1
                print(f"untrained  {S.entry_key(p)}  {payload.get('name')} seed "
                      f"{payload.get('config', {}).get('run', {}).get('seed')} ({payload.get('profile')}): {why}")
        print(f"{root}: {n} run(s) that did not learn (kept on disk, never counted in a verdict)")
        return 0
    if a.action == "recheck":
        from .paper.lookup import claim_metric
        from .results.recheck import RECHECK_STORE, recheck_table
        rows = recheck_table(root, RECHECK_STORE, metric_of=claim_metric)
        for r in rows:
            print(f"{r['action']:13s} {r['point']} (seeds {', '.join(map(str, r['seeds']))}): {r['why']}")
        print(f"{root}: {len(rows)} point(s) trained the reference softmax in bf16; "
              f"{sum(r['action'] == 'stands' for r in rows)} stand beside their rerun, "
              f"{sum(r['action'] == 'superseded' for r in rows)} superseded by their point's settings now")
        return 0
    if a.action == "replace":
        if not a.rerun:
            raise ValueError("store replace needs --rerun DIR: the store folder a rerun wrote (train --store DIR)")
        reruns = S.entry_paths(a.rerun)
        if not reruns:
            raise ValueError(f"no store file in {a.rerun}")
        for path, rerun in zip(S.replace_with_reruns(root, reruns), reruns):
            print(f"replaced  {path}  by its rerun {rerun}")
        return 0
    if a.action == "migrate":
        renamed = S.migrate(root)
        print(f"{root}: {len(renamed)} run(s) renamed to their key under the definitions they ran with")
    stale = S.stale_results(root)
    for e in stale:
        print(f"stale  {e['key']}  {e['name']}  ({e['profile']}): {e['reason']}")
    print(f"{root}: {len(stale)} stale run(s) (kept on disk, never read as current)")
    return 0


def run_report(a) -> int:
    from .results import blocks, write_blocks
    from .train.store import DEFAULT_STORE
    store = a.store or DEFAULT_STORE
    if a.write or a.check:
        changed = write_blocks(".", store, check=a.check)
        verb = "differ from the store" if a.check else "rewritten"
        print(f"{', '.join(changed) or 'nothing'} {verb}")
        return 1 if a.check and changed else 0
    for name, lines in blocks(store).items():
        print(f"[{name}]")
        print("\n".join(lines))
    return 0


def run_claims(a) -> int:
    from . import paper

    ids = [c.id for c in paper.CLAIMS]
    if a.id is not None and a.id not in ids:
        print(f"sinkpaper: error: unknown claim {a.id!r}; valid: {', '.join(ids)}", file=sys.stderr)
        return 2
    if a.markdown is not None and a.markdown not in paper.SCALES:
        print(f"sinkpaper: error: unknown scale {a.markdown!r}; valid: {', '.join(paper.SCALES)}", file=sys.stderr)
        return 2
    records = paper.load_records(a.records)
    from .train.store import DEFAULT_STORE
    store = a.store or DEFAULT_STORE
    entries = [paper.entry(c, records, store) for c in paper.CLAIMS if a.id in (None, c.id)]
    if a.markdown is not None:
        print(paper.markdown_table(entries, a.markdown))
        return 0
    print(json.dumps(entries if a.id is None else entries[0], indent=1) if a.json else paper.text_table(entries))
    return 0


def run_default_plan(a) -> int:
    from .results import default_cpu as D
    from .train.store import DEFAULT_STORE
    nxt = D.next_runs(a.store or DEFAULT_STORE)
    args = "" if nxt.point is None else (f"--profile {D.PROFILE} --config {D.CONFIG} --points {nxt.point} --seeds "
                                         + " ".join(map(str, nxt.seeds)))
    if a.args:
        print(args)
    else:
        print(nxt.why + "." + (f"\nnext: python -m sinkpaper sweep {args} --out runs/default_cpu" if args else ""))
    return 0


def run_routes_check(a) -> int:
    from .train import routes_check as RC
    if a.steps < 1:
        raise ValueError("--steps must be >= 1")
    path = a.json or RC.DEFAULT_JSON
    if a.judge and a.only:
        raise ValueError("--judge trains nothing; it takes no --only")
    previous = json.loads(open(path).read()) if a.only or a.judge else None
    if a.judge:
        from . import provenance
        result = RC.conclude(previous)
        result["judged"] = provenance.stamp("cpu", threads=1, source_of_numbers="judged again, nothing trained")
    else:
        result = RC.routes_check(a.steps, only=a.only, previous=previous)
    print(RC.write(result, path))
    return 0 if result["passes"] else 1


def run(a) -> int:
    """One of :data:`COMMANDS`; a bad argument is one line on stderr and status 2."""
    if a.command == "claims":
        return run_claims(a)
    try:
        return {"store": run_store, "report": run_report, "routes-check": run_routes_check,
                "default-plan": run_default_plan}[a.command](a)
    except (ValueError, OSError) as e:
        print(f"sinkpaper: error: {e}", file=sys.stderr)
        return 2
