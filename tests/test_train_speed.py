"""Fast training on the CPU (issue 14): bf16 autocast with fp32 master weights, its one-line fallback, the
compile fallback, threads, and the bad-input errors. Correctness only; speed is measured by
`python -m sinkpaper bench training`, never asserted here."""
import os
import subprocess
import sys

import pytest
import torch

from sinkpaper.train import accel, build, read_log, train
from tests.test_train import TINY


def test_invalid_dtype_lists_the_valid_ones():
    with pytest.raises(ValueError, match=r"run.dtype='fp16'; valid: fp32, bf16"):
        build(TINY, "cpu", {"run.dtype": "fp16"})


def test_bf16_cpu_training_loss_falls_with_fp32_master_weights(tmp_path):
    cfg = build(TINY, "cpu", {"run.dtype": "bf16"})
    seen = []
    result = train(cfg, tmp_path / "run", progress=False,
                   on_step=lambda step, model: seen.append({p.dtype for p in model.parameters()}))
    supported, _ = accel.bf16_support(torch.device("cpu"))
    assert result["provenance"]["dtype"] == ("bf16" if supported else "fp32")
    assert all(s == {torch.float32} for s in seen)           # master weights stay fp32
    losses = [r["loss"] for r in read_log(tmp_path / "run" / "log.jsonl")]
    assert losses[-1] < 0.7 * losses[0], losses
    # the same model code in fp32: the first step's loss agrees to bf16 precision (same init, same batch)
    fp32 = train(build(TINY, "cpu"), tmp_path / "fp32", progress=False)
    first32 = read_log(tmp_path / "fp32" / "log.jsonl")[0]["loss"]
    assert first32 == pytest.approx(losses[0], rel=2e-2)
    assert fp32["provenance"]["dtype"] == "fp32"


def test_bf16_on_a_cpu_without_it_says_so_in_one_line_and_runs_fp32(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(accel, "cpu_flags", lambda: frozenset({"avx2", "fma"}))
    ok, why = accel.bf16_support(torch.device("cpu"))
    assert not ok and "amx_bf16, avx512_bf16" in why
    cfg = build(TINY, "cpu", {"run.dtype": "bf16", "optim.steps": 3, "eval.every": 3})
    result = train(cfg, tmp_path / "run", progress=False)
    err = [line for line in capsys.readouterr().err.splitlines() if "bf16" in line]
    assert len(set(err)) == 1 and "running fp32" in err[0] and "amx_bf16" in err[0], err
    assert result["provenance"]["dtype"] == "fp32"


def test_compile_without_a_compiler_falls_back_to_eager_in_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(accel, "inductor_cpu_support",
                        lambda: (False, "no C++ compiler found (g++, clang++ or $CXX): simulated"))
    cfg = build(TINY, "cpu", {"run.compile": True, "optim.steps": 3, "eval.every": 3})
    result = train(cfg, tmp_path / "run", progress=False)
    err = [line for line in capsys.readouterr().err.splitlines() if "compile" in line]
    assert err == ["sinkpaper: run.compile=true falls back to eager: no C++ compiler found (g++, clang++ or $CXX): "
                   "simulated"]
    assert result["provenance"]["compiled"] is False and torch.isfinite(torch.tensor(result["val_loss"]))


def test_inductor_support_check_reads_the_compiler(monkeypatch):
    import shutil
    monkeypatch.setattr(shutil, "which", lambda name: None)
    ok, why = accel.inductor_cpu_support()
    assert not ok and "no C++ compiler" in why


def test_threads_are_set_intra_and_inter_op():
    before = torch.get_num_threads()
    try:
        accel.set_threads(1)
        assert torch.get_num_threads() == 1
        accel.set_threads(2)   # the inter-op setting is once per process; calling again must not raise
        assert torch.get_num_threads() == min(2, accel.usable_cpus())
    finally:
        torch.set_num_threads(before)


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs os.sched_setaffinity (Linux)")
def test_threads_are_capped_at_the_cpus_a_process_may_use():
    """A run pinned to one CPU (taskset, a cpuset, a book chapter under --jobs) trains on one thread, whatever
    run.threads says, and its provenance says so."""
    code = ("import os, torch; os.sched_setaffinity(0, [sorted(os.sched_getaffinity(0))[0]]); "
            "from sinkpaper.train import accel; from sinkpaper import provenance; accel.set_threads(8); "
            "print(torch.get_num_threads(), accel.usable_cpus(), provenance.hardware(torch.device('cpu')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    threads, cpus, hardware = out.stdout.split(maxsplit=2)
    assert (threads, cpus) == ("1", "1") and hardware.strip().endswith("1 threads"), out.stdout


# ------------------------------------------------------------------------------------------------ chunked loss
def _plain(h, w, t):
    logits = h @ w.T                                      # the model's plain path: softmax in fp32 at least
    return torch.nn.functional.cross_entropy(logits.to(torch.promote_types(logits.dtype, torch.float32)), t,
                                             ignore_index=-100)


def _grads(fn, h, w, t, scale=1.0):
    h = h.detach().clone().requires_grad_()
    w = w.detach().clone().requires_grad_()
    loss = fn(h, w, t)
    (loss * scale).backward()
    return loss.detach(), h.grad, w.grad


@pytest.mark.parametrize("dtype,tol", [(torch.float64, 1e-12), (torch.float32, 2e-5)])
@pytest.mark.parametrize("chunk", [1, 8, 37, 1024])
def test_chunked_cross_entropy_equals_the_plain_one(dtype, tol, chunk):
    from sinkpaper.models.loss import linear_cross_entropy
    g = torch.Generator().manual_seed(0)
    N, d, V = 37, 16, 53
    h = torch.randn(N, d, generator=g, dtype=dtype)
    w = torch.randn(V, d, generator=g, dtype=dtype) * 0.5
    t = torch.randint(0, V, (N,), generator=g)
    t[::5] = -100                                         # ignored targets count neither in loss nor mean
    ref = _grads(_plain, h, w, t, scale=0.5)              # a scaled backward (gradient accumulation)
    got = _grads(lambda a, b, c: linear_cross_entropy(a, b, c, chunk=chunk), h, w, t, scale=0.5)
    assert got[0].dtype == dtype
    torch.testing.assert_close(got[0], ref[0], atol=tol, rtol=tol)
    torch.testing.assert_close(got[1], ref[1], atol=tol, rtol=tol)
    torch.testing.assert_close(got[2], ref[2], atol=tol, rtol=tol)
    with torch.no_grad():                                 # evaluation: the same value, nothing kept for backward
        torch.testing.assert_close(linear_cross_entropy(h, w, t, chunk=chunk), got[0])


def test_chunked_cross_entropy_all_ignored_is_nan_like_the_plain_one():
    from sinkpaper.models.loss import linear_cross_entropy
    h, w, t = torch.randn(4, 3), torch.randn(5, 3), torch.full((4,), -100)
    assert torch.isnan(_plain(h, w, t)) and torch.isnan(linear_cross_entropy(h, w, t))


def test_chunked_cross_entropy_under_bf16_autocast_matches_the_plain_path():
    from sinkpaper.models.loss import linear_cross_entropy
    g = torch.Generator().manual_seed(1)
    h, w = torch.randn(300, 64, generator=g), torch.randn(500, 64, generator=g) * 0.2
    t = torch.randint(0, 500, (300,), generator=g)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        ref = _grads(_plain, h, w, t)
        got = _grads(lambda a, b, c: linear_cross_entropy(a, b, c, chunk=64), h, w, t)
    assert got[0].dtype == torch.float32 and got[1].dtype == torch.float32 and got[2].dtype == torch.float32
    torch.testing.assert_close(got[0], ref[0], atol=1e-5, rtol=1e-5)   # the same bf16 logits, fp32 softmax
    for a, b in zip(got[1:], ref[1:]):                                  # bf16 gradient matmuls
        assert (a - b).norm() <= 1e-2 * b.norm()


@pytest.mark.parametrize("chunk", [8, 1024])
def test_the_fused_chunked_loss_equals_the_plain_one_in_fp64(chunk):
    """The fused route (each chunk's softmax and gradient in one inductor kernel): the same loss and gradients as
    the plain cross-entropy in fp64, ignored targets included, a scaled backward too."""
    from sinkpaper.models.loss import linear_cross_entropy
    g = torch.Generator().manual_seed(0)
    N, d, V = 37, 16, 53
    h, w = torch.randn(N, d, generator=g, dtype=torch.float64), torch.randn(V, d, generator=g, dtype=torch.float64)
    t = torch.randint(0, V, (N,), generator=g)
    t[::5] = -100
    ref = _grads(_plain, h, w, t, scale=0.5)
    got = _grads(lambda a, b, c: linear_cross_entropy(a, b, c, chunk=chunk, fused=True), h, w, t, scale=0.5)
    for a, b in zip(got, ref):
        torch.testing.assert_close(a, b, atol=1e-12, rtol=1e-12)


def _large_logit_inputs(seed=0, N=512, d=64, V=1024):
    """What a training step hands the loss: h and the head's weight in bf16 values (fp64 sees the same numbers),
    logits past 30 in every row, targets half at each row's top logit (a confident, right model), half anywhere."""
    g = torch.Generator().manual_seed(seed)
    h = torch.randn(N, d, generator=g).bfloat16().float()
    w = (torch.randn(V, d, generator=g) * 2.0).bfloat16().float()
    logits = h @ w.T
    assert logits.abs().amax(-1).min() > 30, "the inputs do not reach the logits training reaches"
    t = torch.where(torch.arange(N) % 2 == 0, logits.argmax(-1), torch.randint(0, V, (N,), generator=g))
    return h, w, t


def _errors_against_fp64(fn, h, w, t):
    """Relative errors of (loss, dh, dw) under bf16 autocast against the plain loss in fp64."""
    with torch.autocast("cpu", dtype=torch.bfloat16):
        got = _grads(fn, h, w, t)
    ref = _grads(_plain, h.double(), w.double(), t)
    return [((a.double() - b).norm() / b.norm()).item() for a, b in zip(got, ref)]


def test_the_fused_chunked_loss_is_as_exact_as_the_trainers_route_at_large_logits(monkeypatch):
    """Against fp64 at the logits training reaches, the fused route's loss and gradients are within the error of
    the route the trainer takes now (the same bf16 products; its softmax in fp32 in another order), and the check
    fails a loss normalized in bf16."""
    from sinkpaper.models import loss as L
    h, w, t = _large_logit_inputs()
    now = _errors_against_fp64(lambda a, b, c: L.linear_cross_entropy(a, b, c, chunk=128), h, w, t)
    fused = _errors_against_fp64(lambda a, b, c: L.linear_cross_entropy(a, b, c, chunk=128, fused=True), h, w, t)
    bound = [1.25 * e + 1e-6 for e in now]
    assert all(f <= b for f, b in zip(fused, bound)), (fused, now)
    assert now[1] < 0.03 and now[2] < 0.03, now               # bf16 products at these logits: about 2 %

    def bf16_normalized(logits, targets, valid, acc):         # what the check must catch
        return L.chunk_nll_grad(logits, targets, valid, torch.bfloat16)
    compiled = torch.compile(bf16_normalized, dynamic=False)
    monkeypatch.setattr(L, "_fused_chunk", lambda: compiled)
    bad = _errors_against_fp64(lambda a, b, c: L.linear_cross_entropy(a, b, c, chunk=128, fused=True), h, w, t)
    assert any(x > b for x, b in zip(bad, bound)), (bad, bound)


@pytest.mark.parametrize("overrides", [{}, {"tie_embeddings": True}, {"sink": "sink_token"}])
def test_model_loss_and_gradients_equal_the_plain_cross_entropy_in_fp64(overrides):
    from sinkpaper.models import ModelConfig, SinkModel
    torch.manual_seed(0)
    cfg = ModelConfig(vocab_size=61, d_model=32, n_layers=2, n_heads=4, d_ff=48, max_seq_len=32, **overrides)
    model = SinkModel(cfg).double()
    x = torch.randint(0, 61, (3, 12), generator=torch.Generator().manual_seed(0))
    y = x.roll(-1, 1)
    y[:, -1] = -100
    out = model(x, targets=y)
    assert out.logits is None                              # training does not materialise the logits
    out.loss.backward()
    chunked = {n: p.grad.clone() for n, p in model.named_parameters()}
    model.zero_grad()
    full = model(x, targets=y, return_logits=True)
    plain = torch.nn.functional.cross_entropy(full.logits.reshape(-1, 61), y.reshape(-1), ignore_index=-100)
    plain.backward()
    torch.testing.assert_close(out.loss, plain, atol=1e-12, rtol=1e-12)
    torch.testing.assert_close(full.loss, plain)
    for n, p in model.named_parameters():
        torch.testing.assert_close(chunked[n], p.grad, atol=1e-12, rtol=1e-10, msg=n)


def test_the_model_takes_the_fused_loss_where_asked_and_names_it_in_its_route(monkeypatch):
    from sinkpaper.models import ModelConfig, SinkModel
    from sinkpaper.models import model as M
    torch.manual_seed(0)
    model = SinkModel(ModelConfig(vocab_size=61, d_model=32, n_layers=2, n_heads=4, d_ff=48, max_seq_len=32)).double()
    x = torch.randint(0, 61, (3, 12), generator=torch.Generator().manual_seed(0))
    y = x.roll(-1, 1)
    model(x, targets=y).loss.backward()
    ref = {n: p.grad.clone() for n, p in model.named_parameters()}
    model.zero_grad()
    monkeypatch.setattr(M, "FUSED_LOSS", True)
    assert model.training_route(12, "cpu", "fp32")["loss"].endswith(" tokens, fused")
    model(x, targets=y).loss.backward()
    for n, p in model.named_parameters():
        torch.testing.assert_close(p.grad, ref[n], atol=1e-12, rtol=1e-10, msg=n)


@pytest.mark.parametrize("dtype,tol", [(torch.float64, 1e-12), (torch.float32, 1e-5)])
def test_fused_attention_path_equals_the_reference_path(dtype, tol, monkeypatch):
    """Plain causal softmax trains through F.scaled_dot_product_attention (on the CPU above
    CPU_REFERENCE_MAX_T, here set below the test's T); a listener on the attention weights routes the same model
    through the reference operator: the same loss and gradients."""
    from sinkpaper.models import ModelConfig, SinkModel
    from sinkpaper.models import model as M
    monkeypatch.setattr(M, "CPU_REFERENCE_MAX_T", 8)
    torch.manual_seed(0)
    model = SinkModel(ModelConfig(vocab_size=61, d_model=32, n_layers=2, n_heads=4, d_ff=48, max_seq_len=32)).to(dtype)
    x = torch.randint(0, 61, (3, 12), generator=torch.Generator().manual_seed(0))

    def loss_and_grads():
        model.zero_grad()
        loss = model(x, targets=x.roll(-1, 1))
        loss.loss.backward()
        return loss.loss.detach(), {n: p.grad.clone() for n, p in model.named_parameters()}
    used = []
    real = torch.nn.functional.scaled_dot_product_attention
    try:
        torch.nn.functional.scaled_dot_product_attention = lambda *a, **k: used.append(1) or real(*a, **k)
        fused = loss_and_grads()
    finally:
        torch.nn.functional.scaled_dot_product_attention = real
    assert len(used) == 2                                    # one call per layer
    handles = [b.attn.hook_weights.register_forward_hook(lambda *_: None) for b in model.blocks]
    try:
        reference = loss_and_grads()
    finally:
        for h in handles:
            h.remove()
    torch.testing.assert_close(fused[0], reference[0], atol=tol, rtol=tol)
    for n in reference[1]:
        torch.testing.assert_close(fused[1][n], reference[1][n], atol=tol, rtol=tol, msg=n)


def test_short_contexts_on_the_cpu_train_through_the_reference_when_compiled_in_bf16(monkeypatch):
    """On the CPU plain causal softmax takes the reference operator only compiled under bf16 autocast at T <=
    CPU_REFERENCE_MAX_T (measured faster there); eager, in fp32 or above that T it takes SDPA. The loss is chunked
    there, compiled or not; training_route names both and the attention's fp32 core, as a run's provenance."""
    from sinkpaper.models import ModelConfig, SinkModel
    from sinkpaper.models import model as M
    model = SinkModel(ModelConfig(vocab_size=61, d_model=32, n_layers=2, n_heads=4, d_ff=48, max_seq_len=256))
    used = []
    real = torch.nn.functional.scaled_dot_product_attention
    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention", lambda *a, **k: used.append(1) or real(*a, **k))
    loss = f"chunked by {2 ** 22 // (4 * 61)} tokens"

    def sdpa_calls(T, compiled: bool, net=None) -> int:
        used.clear()
        model.set_training_route("bf16", compiled)
        x = torch.randint(0, 61, (2, T), generator=torch.Generator().manual_seed(T))
        with torch.autocast("cpu", torch.bfloat16):
            (model if net is None else net)(x, targets=x.roll(-1, 1)).loss.backward()
        return len(used)
    T = M.CPU_REFERENCE_MAX_T
    assert sdpa_calls(T, compiled=True) == 0 and sdpa_calls(T + 1, compiled=True) == 2
    assert sdpa_calls(T, compiled=False) == 2
    # compiled for real: the route is the model's setting, not read inside the graph (where a graph break would
    # run it eagerly and take SDPA while the provenance named the reference)
    torch._dynamo.reset()
    assert sdpa_calls(T, compiled=True, net=torch.compile(model)) == 0
    for T, attn in ((M.CPU_REFERENCE_MAX_T, "reference"), (M.CPU_REFERENCE_MAX_T + 1, "SDPA")):
        assert model.training_route(T, "cpu", "bf16", True) == {"attention": attn, "loss": loss,
                                                                "numerics": M.ATTENTION_NUMERICS}
    assert model.training_route(64, "cpu", "fp32", True)["attention"] == "SDPA"
    assert model.training_route(64, "cpu", "bf16", False)["attention"] == "SDPA"
    # a variant the fused SDPA does not compute is named as the reference at any T
    kv = SinkModel(ModelConfig(vocab_size=61, d_model=32, n_layers=1, n_heads=4, d_ff=48, sink="kv_bias"))
    assert kv.training_route(200, "cpu")["attention"] == "reference"
    assert SinkModel(ModelConfig(vocab_size=8192, d_model=32, n_layers=1, n_heads=4, d_ff=48)).loss_chunk("cpu") == 128
    assert model.training_route(64, "cuda") == {"attention": "SDPA", "loss": "plain when compiled, chunked when eager",
                                                "numerics": M.ATTENTION_NUMERICS}


def test_on_a_gpu_plain_softmax_trains_through_sdpa_and_every_variant_it_lacks_through_the_kernels(monkeypatch):
    """The fastest exact route per operator (the routes are named, not run: no GPU is needed): with backend triton
    on a GPU, plain causal softmax goes to SDPA while GPU_PLAIN_SOFTMAX_ROUTE says SDPA is faster, a sink logit,
    sigmoid, softpick or a document mask to the fused kernels; on the CPU (the interpreter) everything the kernels
    cover stays on them."""
    from sinkpaper.models import ModelConfig, SinkModel
    from sinkpaper.models import model as M

    def route(device, **kw):
        cfg = dict(vocab_size=61, d_model=32, n_layers=1, n_heads=4, d_ff=48, max_seq_len=256, backend="triton")
        return SinkModel(ModelConfig(**{**cfg, **kw})).training_route(256, device)["attention"]
    assert route("cuda") == "SDPA" and route("cpu") == "fused Triton"
    for variant in ({"sink": "sink_logit"}, {"attention": "sigmoid"}, {"attention": "softpick"}):
        assert route("cuda", **variant) == "fused Triton", variant
    monkeypatch.setattr(M, "GPU_PLAIN_SOFTMAX_ROUTE", "fused Triton")
    assert route("cuda") == "fused Triton"


def test_compiled_on_the_cpu_the_chunked_loss_and_reference_attention_give_the_eager_loss_and_gradients():
    """Compiled on the CPU, the attention runs through the reference operator inside inductor's graph and the loss
    chunked, eagerly, between graphs: the same loss and gradients as the eager model (fp32)."""
    from sinkpaper.models import ModelConfig, SinkModel
    torch.manual_seed(0)
    model = SinkModel(ModelConfig(vocab_size=300, d_model=32, n_layers=2, n_heads=4, d_ff=48, max_seq_len=32))
    x = torch.randint(0, 300, (4, 24), generator=torch.Generator().manual_seed(1))

    def loss_and_grads(net):
        model.zero_grad()
        loss = net(x, targets=x.roll(-1, 1)).loss
        loss.backward()
        return loss.detach(), {n: p.grad.clone() for n, p in model.named_parameters()}
    eager = loss_and_grads(model)
    compiled = loss_and_grads(torch.compile(model))
    torch.testing.assert_close(compiled[0], eager[0], atol=1e-5, rtol=1e-5)
    for n in eager[1]:
        torch.testing.assert_close(compiled[1][n], eager[1][n], atol=1e-5, rtol=1e-4, msg=n)


def _reference_losses(cfg, n):
    """The first n training losses of a plain loop written here: eager fp32, one batch per step, no prefetch,
    a host read of the loss at every step (the trainer's path before it kept everything on the device)."""
    from torch.optim.lr_scheduler import LambdaLR

    from sinkpaper.models import SinkModel
    from sinkpaper.train.trainer import load_data, lr_lambda, packing_for

    data = load_data(cfg)
    packing = packing_for(cfg, data)
    torch.manual_seed(cfg.run.seed)
    model = SinkModel(cfg.model_config(data.vocab_size))
    o = cfg.optim
    opt = torch.optim.AdamW(model.parameters(), lr=o.lr, betas=tuple(o.betas), weight_decay=o.weight_decay)
    sched = LambdaLR(opt, lr_lambda(cfg))
    out = []
    for step in range(n):
        b = packing.batch(data.train, o.batch_size, cfg.run.seed, step)
        loss = model(b["input_ids"], targets=b["targets"]).loss
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), o.grad_clip)
        opt.step()
        sched.step()
        out.append(loss.item())
    return out


@pytest.mark.parametrize("dtype,compile_,rel", [("fp32", False, 1e-5), ("bf16", True, 3e-2)],
                         ids=["fp32-eager", "bf16-compiled"])
def test_the_training_path_gives_the_reference_loop_s_losses(tmp_path, dtype, compile_, rel):
    """The trainer (batches built ahead, the loss kept on the device, fused AdamW; compiled bf16 for the GPU's
    path) against the plain loop: the same losses step by step, to fp32 rounding (fused vs. unfused AdamW) or to
    bf16 precision."""
    n = 8
    cfg = build(TINY, "cpu", {"optim.steps": n, "run.log_every": 1, "eval.every": n, "run.checkpoint_every": n,
                              "run.dtype": dtype, "run.compile": compile_})
    train(cfg, tmp_path / "run", progress=False)
    got = [r["loss"] for r in read_log(tmp_path / "run" / "log.jsonl")]
    assert got == pytest.approx(_reference_losses(cfg, n), rel=rel)


def test_batches_built_ahead_on_a_thread_are_the_batches_in_order():
    from sinkpaper.train.batches import Batches
    from sinkpaper.train.trainer import load_data, packing_for

    cfg = build(TINY, "cpu")
    data = load_data(cfg)
    packing = packing_for(cfg, data)
    cpu = torch.device("cpu")
    plain, ahead = (Batches(packing, data.train, 4, 3, 5, cpu, ahead=k) for k in (0, 3))
    try:
        for i in range(7):
            a, b = next(plain), next(ahead)
            want = packing.batch(data.train, 4, 3, 5 + i)
            assert a.keys() == b.keys() == want.keys()
            assert all(torch.equal(a[k], want[k]) and torch.equal(b[k], want[k]) for k in want)
    finally:
        ahead.close()
