"""Pre-training: the run configuration (`config`), the loop with sink tracking and atomic checkpoints
(`trainer`), a trained run directory opened for analysis (`run`: its config, model and held-out inputs), and
the results store the book reads (`store`)."""
from .config import PROFILES, TrainConfig, build, load, parse_sets, sweep_points
from .store import DEFAULT_STORE, list_results, read_result, write_result
from .trainer import TrainingDiverged, evaluate, latest_checkpoint, read_log, train
from .run import Run, open_run

__all__ = ["TrainConfig", "PROFILES", "build", "load", "parse_sets", "sweep_points", "train", "evaluate",
           "TrainingDiverged", "latest_checkpoint", "read_log", "DEFAULT_STORE", "write_result", "read_result",
           "list_results", "Run", "open_run"]
