"""A checkpoint small enough to travel in git: the weights exact, AdamW's moments rounded to bf16, one xz file.

A trainer checkpoint (``checkpoints/step-N/``: ``model.safetensors`` and ``state.pt``) of the 4-layer d 128 models
is 35-38 MB, two thirds of it AdamW's two moments in fp32; xz saves 8 % of that, because an fp32 mantissa's low
bytes are noise. Here the weights stay fp32 bit for bit (an evaluation of a restored run reads the same numbers),
the moments are rounded to bf16 (fp32's exponent range, so no second moment underflows), and every tensor is
split into byte planes before xz (the sign-and-exponent bytes of neighbouring values compress together). The
scheduler, the random state and the run's bookkeeping are kept whole.

A run resumed from such a file is not bit-identical to one that never stopped: its moments differ by at most
one bf16 rounding (2^-9 relative) at one step. ``unpack`` marks the state it writes (``compact``), and the
trainer records the resumption in the run's routes, beside the machine and code of each sitting.
"""
from __future__ import annotations

import io
import json
import lzma
import struct
from pathlib import Path

import numpy as np
import torch

from ..files import atomic_open, atomic_path

MAGIC = b"sinkpaper-checkpoint-1\n"
MOMENTS = ("exp_avg", "exp_avg_sq")
ROUNDED = {"moments": "bf16", "weights": "fp32 (exact)"}   # what `unpack` records in the state it writes


def _planes(t: torch.Tensor) -> bytes:
    """The tensor's bytes, byte 0 of every value first, then byte 1, ... (little-endian)."""
    return t.detach().contiguous().cpu().view(torch.uint8).numpy().reshape(-1, t.element_size()).T.tobytes()


def _from_planes(buf: bytes, dtype: str, shape: list[int]) -> torch.Tensor:
    torch_dtype = getattr(torch, dtype)
    size = torch.empty((), dtype=torch_dtype).element_size()
    flat = np.frombuffer(buf, dtype=np.uint8).reshape(size, -1).T.copy()
    return torch.from_numpy(flat.reshape(-1)).view(torch_dtype).reshape(shape)


def pack(ckpt: str | Path, out: str | Path) -> Path:
    """Write checkpoint directory ``ckpt`` as one file ``out`` (written atomically); returns ``out``."""
    from safetensors.torch import load_file
    ckpt, out = Path(ckpt), Path(out)
    weights = load_file(str(ckpt / "model.safetensors"))
    state = torch.load(ckpt / "state.pt", map_location="cpu", weights_only=False)
    tensors = {f"model/{k}": v for k, v in weights.items()}
    opt = state["optimizer"]
    kept_state = {}
    for idx, s in opt["state"].items():
        kept_state[idx] = {k: v for k, v in s.items() if k not in MOMENTS}
        for k in MOMENTS:
            if k in s:
                tensors[f"optim/{idx}/{k}"] = s[k].to(torch.bfloat16)
    rest = io.BytesIO()
    torch.save({**state, "optimizer": {**opt, "state": kept_state}}, rest)
    index = [[name, str(t.dtype).removeprefix("torch."), list(t.shape), t.numel() * t.element_size()]
             for name, t in tensors.items()]
    header = json.dumps({"tensors": index, "rest": rest.getbuffer().nbytes}).encode()
    body = lzma.LZMACompressor(preset=9)
    with atomic_open(out, "wb") as f:
        f.write(MAGIC)
        for chunk in (struct.pack("<Q", len(header)), header, rest.getvalue(),
                      *(_planes(t) for t in tensors.values())):
            f.write(body.compress(chunk))
        f.write(body.flush())
    return out


def unpack(packed: str | Path, ckpt: str | Path) -> Path:
    """Write the checkpoint directory ``ckpt`` (model.safetensors, state.pt: the trainer's layout) from a file
    ``pack`` wrote; the state says it came from one (``compact``). Refuses a file that is not one, before writing."""
    from safetensors.torch import save_file
    packed, ckpt = Path(packed), Path(ckpt)
    raw = packed.read_bytes()
    if not raw.startswith(MAGIC):
        raise ValueError(f"{packed} is not a packed sinkpaper checkpoint (it does not start with {MAGIC!r})")
    try:
        data = lzma.decompress(raw[len(MAGIC):])
    except lzma.LZMAError as e:
        raise ValueError(f"{packed} is cut short or damaged ({e}); an earlier copy is needed") from e
    (n,) = struct.unpack_from("<Q", data)
    head = json.loads(data[8:8 + n])
    at = 8 + n
    state = torch.load(io.BytesIO(data[at:at + head["rest"]]), map_location="cpu", weights_only=False)
    at += head["rest"]
    weights = {}
    for name, dtype, shape, nbytes in head["tensors"]:
        t = _from_planes(data[at:at + nbytes], dtype, shape)
        at += nbytes
        kind, _, key = name.partition("/")
        if kind == "model":
            weights[key] = t
        else:
            idx, _, moment = key.rpartition("/")
            state["optimizer"]["state"][_key(idx, state["optimizer"]["state"])][moment] = t.float()
    if at != len(data):
        raise ValueError(f"{packed}: {len(data) - at} bytes more than its index names")
    state["compact"] = dict(ROUNDED)
    with atomic_path(ckpt, directory=True) as tmp:
        save_file(weights, str(tmp / "model.safetensors"))
        torch.save(state, tmp / "state.pt")
    return ckpt


def _key(idx: str, states: dict):
    """The optimizer state's own key for ``idx`` (an int in AdamW's state dict; json made it a string)."""
    return next(k for k in states if str(k) == idx)
