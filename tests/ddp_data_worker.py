"""Run by tests/test_tokenfile.py under `torchrun --nproc_per_node 2` (gloo, CPU). Each rank: loads the run's
data through the trainer (local rank 0 builds the token cache, the other waits), records its share of the first
steps' batches and its peak RSS, then trains the run uninterrupted and again cut at a step and resumed.
Argument: JSON {out, config, steps, crash_at}."""
import json
import os
import sys
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist

import datasets  # noqa: F401 - imported before the memory baseline (a build imports it)

from sinkpaper.data import sources
from sinkpaper.train import build, train
from sinkpaper.train.trainer import load_data, packing_for

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
from data_scale import memory_status, reset_peak_rss  # noqa: E402 - VmHWM, not ru_maxrss (see there)

args = json.loads(sys.argv[1])
out = Path(args["out"])
out.mkdir(parents=True, exist_ok=True)
dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)

builds = 0
stream_to_file = sources._stream_to_file


def counted(*a, **kw):   # the real build, counted
    global builds
    builds += 1
    return stream_to_file(*a, **kw)


sources._stream_to_file = counted
cfg = build(args["config"], "cpu")
micro = cfg.optim.batch_size // cfg.optim.grad_accum
reset_peak_rss()
rss0 = memory_status()["VmRSS"]
data = load_data(cfg)
packing = packing_for(cfg, data)
shares = [packing.batch(data.train, micro, cfg.run.seed, step, rank=rank, world=world)["input_ids"].numpy()
          for step in range(args["steps"])]
rss1 = memory_status()["VmHWM"]
np.save(out / f"windows-{rank}.npy", np.stack(shares))

train(cfg, out / "full", progress=False)


class Crash(Exception):
    pass


def crash(step, _model):
    if step == args["crash_at"]:
        raise Crash()


try:
    train(cfg, out / "cut", progress=False, on_step=crash)
except Crash:
    pass
train(cfg, out / "cut", resume=True, progress=False)
(out / f"report-{rank}.json").write_text(json.dumps({
    "rank": rank, "local_rank": int(os.environ["LOCAL_RANK"]), "builds": builds, "cache": data.provenance["cache"],
    "data_rss_growth_kib": rss1 - rss0}))
dist.barrier()
dist.destroy_process_group()
