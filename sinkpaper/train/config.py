"""A training run's whole configuration: model, data, optimizer, evaluation, run. Loaded from YAML, with a
profile (cpu / gpu / paper) and `--set key=value` overrides; every unknown key or invalid value fails before
training with the list of valid ones. The resolved config's hash names the run in the results store.

YAML layout (one file per experiment family of the paper, in configs/):

    name: optimization
    model: {...ModelConfig fields...}
    data: {...}   optim: {...}   eval: {...}   run: {...}
    profiles: {cpu: {section.key: value, ...}, gpu: {...}, paper: {...}}
    sweep: {label: {section.key: value, ...}, ...}    # the family's settings, one run each
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from ..data.sources import SOURCES
from ..fields import canonical, check_types
from ..resources import find_config
from ..models.config import ModelConfig, definition_revisions

PROFILES = ("cpu", "text", "gpu", "paper")
SCHEDULES = ("constant", "cosine")
DTYPES = ("fp32", "bf16")


@dataclass
class DataConfig:
    source: str = "corpus"            # corpus | random | repeat | bigram_backcopy | hf
    path: str | None = None           # corpus token file (default data/corpus/tokens.u16.xz)
    dataset: str | None = None        # hf: pile-sample | fineweb-edu | any datasets id
    tokenizer: str | None = None      # hf: tokenizer id (default the paper's GPT-NeoX tokenizer via Pythia)
    n_tokens: int = 1_000_000         # synthetic / hf: tokens to generate or stream
    vocab_size: int = 512             # synthetic only (the corpus and hf sources bring their own)
    n_triggers: int = 3               # bigram_backcopy: trigger tokens whose successor copies the token before
    concentration: float = 0.3        # bigram_backcopy: Dirichlet concentration of the transition rows
    data_seed: int = 0                # bigram_backcopy: the task itself (the run's seed varies init and batches)
    doc_len: list = field(default_factory=lambda: [32, 256])  # bigram_backcopy: document lengths [min, max]
    context: int = 64                 # T
    bos: bool = False                 # fixed BOS at position 1 (the paper's default: none)
    fixed_token: int | str | None = None  # a token id, or "bos" / "eos" of the source, at fixed_pos (Section 5)
    fixed_pos: int = 1
    random_span: list | None = None   # [s, e): uniform random tokens at positions s..e-1 (1-based)
    unique_tokens: int | None = None  # cap on distinct training tokens (Section 5, amount of data)
    unique_fraction: float | None = None  # the same cap as a fraction of the tokens the run will see
    prefix_lm: int | None = None      # prefix LM over the first p tokens (Section 6); sets the model's mask
    doc_mask: bool = False            # intra-document causal masking (data packing); sets the model's mask
    bos_each_document: bool = False   # with bos and doc_mask: a BOS before every document in the window, too


@dataclass
class OptimConfig:
    lr: float = 4e-4
    betas: list = field(default_factory=lambda: [0.9, 0.95])
    weight_decay: float = 0.1         # on ALL parameters, as the paper's released code
    warmup: int = 100
    schedule: str = "constant"        # the released config keeps LR constant after warm-up; cosine optional
    min_lr_ratio: float = 0.1         # cosine floor
    steps: int = 1000
    batch_size: int = 32              # sequences per optimizer step (over all devices and micro-batches)
    grad_accum: int = 1               # micro-batches per step
    grad_clip: float = 1.0
    # Sweeps are written as multipliers so one sweep serves every profile (the paper's 8e-4 = 2 x 4e-4):
    lr_scale: float = 1.0             # effective lr = lr * lr_scale
    steps_scale: float = 1.0          # effective steps = round(steps * steps_scale)
    batch_scale: float = 1.0          # effective batch_size = round(batch_size * batch_scale)


@dataclass
class EvalConfig:
    every: int = 100                  # steps between evaluations (and at the end)
    n_samples: int = 100              # held-out sequences
    seq_len: int = 64                 # the paper's T for the metric
    epsilon: float = 0.3
    k_max: int = 10
    # what forms before the sink (sinkpaper.circuits), measured at every evaluation on random tokens repeated
    # once: induction and previous-token scores per head, the in-context gain
    circuits: bool = False
    # extra early evaluations at steps growing by this ratio (1.1: an onset resolved to within 10 % of its step),
    # from every/10 up to 80 % of the steps (the last 20 %, where a run's plateau is read, keeps the regular
    # cadence); None: every `every` steps only
    early_ratio: float | None = None


@dataclass
class RunConfig:
    seed: int = 0
    device: str = "auto"              # auto | cpu | cuda
    dtype: str = "fp32"               # fp32 | bf16 (autocast, fp32 weights; CPU or GPU, see train.accel)
    compile: bool = False             # torch.compile the model (inductor on CPU or GPU)
    threads: int | None = None        # torch CPU threads
    checkpoint_every: int = 500
    log_every: int = 10
    # a run that outlives a sitting: at each checkpoint its curve so far goes to <store>/partial/<key>.json.gz
    # (committed as it grows, never read as a result; removed when the run is stored) and one progress line
    # (tokens, elapsed, projected end) is printed
    partial: bool = False


SECTIONS = {"data": DataConfig, "optim": OptimConfig, "eval": EvalConfig, "run": RunConfig}


@dataclass
class TrainConfig:
    name: str = "run"
    model: dict = field(default_factory=dict)
    data: DataConfig = field(default_factory=DataConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    run: RunConfig = field(default_factory=RunConfig)
    profile: str = "cpu"

    def model_config(self, vocab_size: int) -> ModelConfig:
        """The ModelConfig this run trains: the data decides the vocabulary and the masks."""
        m = dict(self.model)
        m["vocab_size"] = vocab_size
        m["max_seq_len"] = max(int(m.get("max_seq_len", 0)), self.data.context, self.eval.seq_len)
        if self.data.prefix_lm:
            m.update(mask="prefix", prefix_len=self.data.prefix_lm)
        if self.data.doc_mask:
            m["mask"] = "document"
        return ModelConfig.from_dict(m)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> TrainConfig:
        """The inverse of `to_dict` (a run directory's config.json; its "hash" key is ignored). The values were
        validated when the run was configured; a field this code does not know fails in one line."""
        sections = {}
        for name, section in SECTIONS.items():
            valid = [f.name for f in dataclasses.fields(section)]
            bad = sorted(set(d.get(name) or {}) - set(valid))
            if bad:
                raise ValueError(f"unknown {name} field(s) {', '.join(bad)} (a config written by another version "
                                 f"of sinkpaper?); valid: {', '.join(valid)}")
            sections[name] = section(**(d.get(name) or {}))
        return cls(name=d["name"], model=dict(d["model"]), profile=d["profile"], **sections)

    def revisions(self) -> dict[str, int]:
        """The current definition revisions of the model field values this run uses (DEFINITION_REVISIONS)."""
        return definition_revisions(self.model)

    def identity(self) -> dict:
        """Everything that changes the result, canonical: see :func:`identity`."""
        return identity(self.to_dict(), self.revisions())

    def hash(self) -> str:
        """The results-store key: a stable id of `identity()`."""
        return identity_hash(self.identity())


BOOKKEEPING = ("checkpoint_every", "log_every", "threads", "device", "compile", "partial")
_TOP_DEFAULTS = {"name": "run", "profile": "cpu"}


def identity(config: dict, revisions: dict[str, int] | None = None) -> dict:
    """The canonical identity of a config dict (TrainConfig.to_dict()), which the results-store key hashes.

    * The run section's bookkeeping (threads, device, checkpoint cadence, ...) is left out: it cannot change a
      result. So is the run's name: the same config under two sweep points (a family's base is another
      family's point) is one run, trained once.
    * Every field at its dataclass default is left out (model fields at ModelConfig's defaults too), and
      integers in float fields count as floats. A new field added with a default therefore keeps every
      existing key, and so does writing a default value out in a config file.
    * ``revisions`` ({model field: revision}, see sinkpaper.models.config.DEFINITION_REVISIONS) goes in as
      ``definitions``; None means the current revisions of the config's model values. A run stored under an
      older definition of a value thus has another key than the same config run today.
    """
    d = json.loads(json.dumps(config))
    out = {}
    for key, value in d.items():
        if key in SECTIONS and isinstance(value, dict):
            section = {k: v for k, v in value.items() if not (key == "run" and k in BOOKKEEPING)}
            value = canonical(SECTIONS[key], section)
        elif key == "model" and isinstance(value, dict):
            value = canonical(ModelConfig, value)
        elif key == "name" or (key in _TOP_DEFAULTS and value == _TOP_DEFAULTS[key]):
            continue
        if value != {}:
            out[key] = value
    revisions = definition_revisions(d.get("model") or {}) if revisions is None else revisions
    if revisions:
        out["definitions"] = {f"model.{k}": int(v) for k, v in sorted(revisions.items())}
    return out


def identity_hash(ident: dict) -> str:
    """16 hex digits of the sha256 of an identity's sorted JSON."""
    return hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:16]


def _valid_keys() -> tuple[str, ...]:
    return _keys_of(tuple(SECTIONS.items()), ModelConfig)


@functools.lru_cache(maxsize=8)
def _keys_of(sections: tuple, model_config: type) -> tuple[str, ...]:
    """The valid keys of these section classes (computed once per set of classes: every override of every
    config a listing builds resolves its key here)."""
    keys = [f"{s}.{f.name}" for s, cls in sections for f in dataclasses.fields(cls)]
    keys += [f"model.{n}" for n in model_config.field_names()]
    return (*keys, "name")


def parse_yaml_value(text: str, what: str):
    """``yaml.safe_load(text)``, with a YAML mistake as a one-line ValueError that names ``what``."""
    import yaml
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as e:
        problem = " ".join(str(getattr(e, "problem", None) or e).split())
        raise ValueError(f"{what}: {text!r} is not a valid YAML value ({problem}); write strings, numbers, "
                         f"true/false, null or [lists] as in the config files") from None


def _parse_value(text: str, what: str = "--set"):
    """YAML scalars, plus the numbers YAML 1.1 leaves as strings (`2e-2` has no dot)."""
    value = parse_yaml_value(text, what)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return value
    return value


def _resolve_key(key: str) -> str:
    """`optim.lr`, or a short name that is unique across sections (`lr`, `seed`)."""
    valid = _valid_keys()
    if key in valid:
        return key
    matches = [k for k in valid if k.split(".")[-1] == key]
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        raise ValueError(f"{key!r} is ambiguous: {', '.join(matches)}")
    raise ValueError(f"unknown config key {key!r}; valid: {', '.join(valid)}")


def apply_overrides(raw: dict, overrides: dict) -> dict:
    """raw: {section: {key: value}}; overrides: {'section.key' or short key: value}."""
    out = {k: dict(v) if isinstance(v, dict) else v for k, v in raw.items()}
    for key, value in overrides.items():
        full = _resolve_key(key)
        if full == "name":
            out["name"] = value
            continue
        section, name = full.split(".", 1)
        out.setdefault(section, {})[name] = value
    return out


def build(raw: dict, profile: str = "cpu", overrides: dict | None = None, sweep_point: str | None = None
          ) -> TrainConfig:
    """Resolve base -> profile -> sweep point -> --set overrides into a validated TrainConfig."""
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; valid: {', '.join(PROFILES)}")
    raw = dict(raw)
    profiles = raw.pop("profiles", {}) or {}
    sweep = raw.pop("sweep", {}) or {}
    unknown = set(raw) - {"name", "model", *SECTIONS}
    if unknown:
        raise ValueError(f"unknown config section(s) {', '.join(sorted(unknown))}; valid: name, model, "
                         f"{', '.join(SECTIONS)}, profiles, sweep")
    profile_values = dict(profiles.get(profile, {}) or {})
    # A profile may map a point onto its own base (`profiles: {text: {sweep: {point: {...}}}}`): e.g. the text
    # profile's base fixes the first token, so a point that removes or moves it says so there.
    point_maps = profile_values.pop("sweep", {}) or {}
    unknown_maps = sorted(set(point_maps) - set(sweep))
    if unknown_maps:
        raise ValueError(f"profiles.{profile}.sweep maps unknown point(s) {', '.join(unknown_maps)}; "
                         f"valid: {', '.join(sweep) or '(none)'}")
    raw = apply_overrides(raw, profile_values)
    if sweep_point is not None:
        if sweep_point not in sweep:
            raise ValueError(f"unknown sweep point {sweep_point!r}; valid: {', '.join(sweep) or '(none)'}")
        raw = apply_overrides(raw, sweep[sweep_point] or {})
        raw = apply_overrides(raw, point_maps.get(sweep_point) or {})
        raw["name"] = f"{raw.get('name', 'run')}/{sweep_point}"
    raw = apply_overrides(raw, overrides or {})
    sections = {}
    for name, cls in SECTIONS.items():
        values = raw.get(name, {}) or {}
        valid = [f.name for f in dataclasses.fields(cls)]
        if not isinstance(values, dict):
            raise ValueError(f"config section {name!r} must be a mapping of fields, got {values!r}")
        bad = sorted(set(values) - set(valid))
        if bad:
            raise ValueError(f"unknown {name} field(s) {', '.join(bad)}; valid: {', '.join(valid)}")
        check_types(cls, values, prefix=f"{name}.")
        sections[name] = cls(**values)
    model = raw.get("model", {}) or {}
    if not isinstance(model, dict):
        raise ValueError(f"config section 'model' must be a mapping of ModelConfig fields, got {model!r}")
    check_types(ModelConfig, model, prefix="model.")  # unknown model fields fail in validate (from_dict)
    cfg = TrainConfig(name=str(raw.get("name", "run")), model=dict(model), profile=profile, **sections)
    validate(cfg)
    o = cfg.optim
    o.steps = max(1, round(o.steps * o.steps_scale))
    o.batch_size = max(o.grad_accum, round(o.batch_size * o.batch_scale / o.grad_accum) * o.grad_accum)
    o.lr = o.lr * o.lr_scale
    if cfg.data.unique_fraction is not None:
        cfg.data.unique_tokens = max(cfg.data.context + 1,
                                     round(cfg.data.unique_fraction * o.steps * o.batch_size * cfg.data.context))
    return cfg


def early_eval_steps(cfg: "TrainConfig") -> frozenset[int]:
    """The extra early evaluation steps of ``eval.early_ratio`` (empty without it): every/10, then growing by the
    ratio, up to 80 % of the (scaled) steps."""
    e, steps = cfg.eval, cfg.optim.steps
    if not e.early_ratio:
        return frozenset()
    out, x = set(), max(1.0, e.every / 10)
    while x < 0.8 * steps:
        out.add(int(round(x)))
        x *= e.early_ratio
    return frozenset(out)


def validate(cfg: TrainConfig) -> None:
    d, o, e, r = cfg.data, cfg.optim, cfg.eval, cfg.run
    if d.source not in SOURCES:
        raise ValueError(f"data.source={d.source!r}; valid: {', '.join(SOURCES)}")
    if o.schedule not in SCHEDULES:
        raise ValueError(f"optim.schedule={o.schedule!r}; valid: {', '.join(SCHEDULES)}")
    if r.dtype not in DTYPES:
        raise ValueError(f"run.dtype={r.dtype!r}; valid: {', '.join(DTYPES)}")
    if r.device not in ("auto", "cpu", "cuda") and not str(r.device).startswith("cuda:"):
        raise ValueError(f"run.device={r.device!r}; valid: auto, cpu, cuda, cuda:N")
    for name, value, lo in (("optim.lr", o.lr, 0.0), ("optim.steps", o.steps, 1), ("optim.batch_size", o.batch_size, 1),
                            ("optim.grad_accum", o.grad_accum, 1), ("optim.warmup", o.warmup, 0),
                            ("optim.weight_decay", o.weight_decay, 0.0), ("eval.every", e.every, 1),
                            ("eval.n_samples", e.n_samples, 1), ("data.context", d.context, 2),
                            ("run.checkpoint_every", r.checkpoint_every, 1)):
        if not isinstance(value, (int, float)) or value < lo or (name == "optim.lr" and value == 0):
            raise ValueError(f"{name} must be a number >= {lo}{' and > 0' if name == 'optim.lr' else ''}, got {value!r}")
    if o.batch_size % o.grad_accum:
        raise ValueError(f"optim.batch_size={o.batch_size} must be divisible by optim.grad_accum={o.grad_accum}")
    if len(o.betas) != 2 or not all(0 <= b < 1 for b in o.betas):
        raise ValueError(f"optim.betas must be two numbers in [0, 1), got {o.betas}")
    from ..metrics import check_epsilon, check_seq_len
    check_epsilon(e.epsilon)
    check_seq_len(e.seq_len, e.k_max)
    if e.early_ratio is not None and not e.early_ratio > 1.0:
        raise ValueError(f"eval.early_ratio must be > 1 (the growth between early evaluations), got {e.early_ratio}")
    if d.prefix_lm and d.doc_mask:
        raise ValueError("data.prefix_lm and data.doc_mask both set the model's mask; use one")
    if d.bos_each_document and not (d.bos and d.doc_mask):
        raise ValueError("data.bos_each_document puts a BOS before every document under intra-document masking: "
                         "it needs data.bos and data.doc_mask")
    if isinstance(d.fixed_token, str) and d.fixed_token not in ("bos", "eos"):
        raise ValueError(f"data.fixed_token must be a token id, 'bos' or 'eos', got {d.fixed_token!r}")
    if d.unique_fraction is not None and not 0 < d.unique_fraction <= 1:
        raise ValueError(f"data.unique_fraction must be in (0, 1], got {d.unique_fraction}")
    for name in ("lr_scale", "steps_scale", "batch_scale"):
        if getattr(o, name) <= 0:
            raise ValueError(f"optim.{name} must be > 0, got {getattr(o, name)}")
    if d.random_span is not None and (len(d.random_span) != 2):
        raise ValueError(f"data.random_span must be [s, e], got {d.random_span}")
    cfg.model_config(vocab_size=max(int(cfg.model.get("vocab_size", 2)), 2))  # model fields fail here, early


def _merge(base: dict, top: dict) -> dict:
    out = dict(base)
    for k, v in top.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def read_yaml(path: str | Path) -> dict:
    """A config file (a path, or a family name found by sinkpaper.resources.find_config), with
    `include: other.yaml` (relative to it) merged underneath. A fresh dict each call (callers may change it)."""
    path = find_config(path)
    raw = _fresh(_parse_yaml(path, path.read_text()))
    include = raw.pop("include", None)
    return _merge(read_yaml(path.parent / include), raw) if include else raw


def _fresh(value):
    """A copy of parsed YAML (dicts, lists, scalars) that shares no container with it: copy.deepcopy's work for
    these types at a fraction of its time (the registry reads a family's YAML once per stored run)."""
    if isinstance(value, dict):
        return {k: _fresh(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_fresh(v) for v in value]
    return value


@functools.lru_cache(maxsize=64)
def _parse_yaml(path: Path, text: str) -> dict:
    """One file's text parsed once (the text is the key, so an edited file is parsed again): the claims listing
    looks up hundreds of stored runs, each through its family's YAML, and parsing took ~25 s of its ~40 s with
    260 text-profile runs. Includes are merged by read_yaml, so an edited _base.yaml is read again too."""
    import yaml
    try:
        raw = yaml.safe_load(text) or {}
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        problem = " ".join(str(getattr(e, "problem", None) or e).split())
        raise ValueError(f"{path}{where}: not valid YAML ({problem})") from None
    if not isinstance(raw, dict):
        raise ValueError(f"{path}: a config is a mapping (name, model, data, optim, eval, run, profiles, sweep), "
                         f"got {type(raw).__name__}")
    return raw


def load(path: str | Path, profile: str = "cpu", overrides: dict | None = None, sweep_point: str | None = None
         ) -> TrainConfig:
    return build(read_yaml(path), profile, overrides, sweep_point)


def sweep_points(path: str | Path) -> list[str]:
    return list(read_yaml(path).get("sweep", {}) or {})


def parse_sets(items: list[str]) -> dict:
    """['optim.lr=1e-3', 'seed=3'] -> {'optim.lr': 0.001, 'seed': 3} (values parsed as YAML)."""
    out = {}
    for item in items or []:
        if "=" not in item:
            raise ValueError(f"--set expects key=value, got {item!r}")
        k, v = item.split("=", 1)
        out[k.strip()] = _parse_value(v, f"--set {k.strip()}")
    return out
