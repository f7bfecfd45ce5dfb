"""The GPT of chapter 5 (54_gpt): the same weights in PyTorch give the same logits and gradients; sampling, the
key/value cache, checkpoints, the command, and a few training steps on the CUDA backend."""
import math

import numpy as np
import pytest
from backends import BACKENDS
from hypothesis import given, settings
from hypothesis import strategies as st

import minitorch
from minitorch import cuda_available, float32, float64, int64, tensor
from minitorch.cuda_ops import count_transfers
from minitorch.gpt import (GPT, GPTConfig, KVCache, Schedule, cached_forward, generate, generate_cached, load_gpt,
                           main, parameter_count, sample_next, save_gpt, train, train_step, fixed_batches)
from minitorch.text import Vocabulary, sequence_loss
from minitorch.adam import AdamW, weight_decay_groups

pytestmark = pytest.mark.usefixtures("fast_default_backend")   # as the chapter's notebooks set it

try:
    import torch
    import torch.nn.functional as F
except ImportError:   # the parity tests skip without PyTorch
    torch = None
needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
TOLERANCE = {float64: 1e-6, float32: 1e-4}


def torch_gpt(config: GPTConfig):
    "The same GPT written with PyTorch, its parameters named as ours, so that state dicts match."
    nn = torch.nn

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv, self.proj = nn.Linear(config.n_embd, 3 * config.n_embd), nn.Linear(config.n_embd, config.n_embd)

        def forward(self, x):
            batch, time, width = x.shape
            heads = self.qkv(x).view(batch, time, 3, config.n_head, width // config.n_head).permute(2, 0, 3, 1, 4)
            mixed = F.scaled_dot_product_attention(heads[0], heads[1], heads[2], is_causal=True)
            return self.proj(mixed.transpose(1, 2).reshape(batch, time, width))

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc, self.proj = nn.Linear(config.n_embd, 4 * config.n_embd), nn.Linear(4 * config.n_embd, config.n_embd)

        def forward(self, x):
            return self.proj(F.gelu(self.fc(x)))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1, self.attn = nn.LayerNorm(config.n_embd), Attention()
            self.ln_2, self.mlp = nn.LayerNorm(config.n_embd), MLP()

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class TorchGPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(config.vocab_size, config.n_embd), nn.Embedding(config.block_size, config.n_embd)
            self.blocks = nn.Sequential(*[Block() for _ in range(config.n_layer)])
            self.ln_f, self.lm_head = nn.LayerNorm(config.n_embd), nn.Linear(config.n_embd, config.vocab_size, bias=False)

        def forward(self, ids):
            return self.lm_head(self.ln_f(self.blocks(self.wte(ids) + self.wpe(torch.arange(ids.shape[1], device=ids.device)))))

    return TorchGPT()


def twins(config: GPTConfig, backend, dtype, seed: int = 0):
    "Our GPT and PyTorch's with the same weights (ours, randomised further so that biases and norms are not trivial)."
    ours = GPT(config, seed=seed, backend=backend, dtype=dtype)
    rng = np.random.default_rng(seed)
    for parameter in ours.parameters():
        values = parameter.value.to_numpy() + rng.normal(0, 0.05, parameter.value.shape)
        parameter.update(tensor(values, backend=backend, dtype=dtype))
    theirs = torch_gpt(config).to(torch.float64 if dtype == float64 else torch.float32)
    theirs.load_state_dict({name: torch.tensor(parameter.value.to_numpy()) for name, parameter in ours.named_parameters()})
    return ours, theirs


def tiny(backend) -> GPTConfig:
    "A configuration small enough for the CUDA simulator, larger elsewhere."
    on_gpu = getattr(backend, "ops", None) is minitorch.CudaOps
    return GPTConfig(vocab_size=7, block_size=4, n_layer=1, n_head=2, n_embd=4) if on_gpu else \
        GPTConfig(vocab_size=11, block_size=8, n_layer=2, n_head=2, n_embd=8)


@needs_torch
@pytest.mark.task("5.5", "5.8")
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [float64, float32], ids=["float64", "float32"])
@settings(max_examples=3, deadline=None)
@given(seed=st.integers(0, 1000), batch=st.integers(1, 2), time=st.integers(1, 4))
def test_logits_and_gradients_match_pytorch(backend, dtype, seed, batch, time):
    config = tiny(backend)
    ours, theirs = twins(config, backend, dtype, seed)
    rng = np.random.default_rng(seed)
    ids, targets = rng.integers(0, config.vocab_size, (2, batch, time))
    logits = ours(tensor(ids, backend=backend, dtype=int64))
    their_logits = theirs(torch.tensor(ids))
    tolerance = TOLERANCE[dtype]
    np.testing.assert_allclose(logits.to_numpy(), their_logits.detach().numpy(), rtol=tolerance, atol=tolerance)
    sequence_loss(logits, tensor(targets, backend=backend, dtype=int64)).backward()
    F.cross_entropy(their_logits.reshape(-1, config.vocab_size), torch.tensor(targets).reshape(-1)).backward()
    their_grads = dict(theirs.named_parameters())
    for name, parameter in ours.named_parameters():
        np.testing.assert_allclose(parameter.value.grad.to_numpy(), their_grads[name].grad.numpy(),
                                   rtol=tolerance, atol=tolerance, err_msg=name)


@needs_torch
def test_a_training_step_matches_pytorch_adamw_with_clipping():
    config = GPTConfig(vocab_size=11, block_size=8, n_layer=2, n_head=2, n_embd=8)
    ours, theirs = twins(config, minitorch.FastBackend, float64, seed=5)
    decayed_ids = {id(parameter) for parameter in weight_decay_groups(ours, 0.1)[0]["params"]}   # `in` a list compares
    decayed = {name for name, parameter in ours.named_parameters() if id(parameter) in decayed_ids}   # values, as torch
    optimizer = AdamW(weight_decay_groups(ours, 0.1), lr=0.01, betas=(0.9, 0.99))
    their_params = dict(theirs.named_parameters())
    their_optimizer = torch.optim.AdamW([{"params": [their_params[n] for n in their_params if n in decayed], "weight_decay": 0.1},
                                         {"params": [their_params[n] for n in their_params if n not in decayed], "weight_decay": 0.0}],
                                        lr=0.01, betas=(0.9, 0.99))
    rng = np.random.default_rng(0)
    for _ in range(3):
        ids, targets = rng.integers(0, 11, (2, 3, 8))
        loss = train_step(ours, optimizer, tensor(ids, dtype=int64), tensor(targets, dtype=int64), max_norm=0.5)
        their_optimizer.zero_grad()
        their_loss = F.cross_entropy(theirs(torch.tensor(ids)).reshape(-1, 11), torch.tensor(targets).reshape(-1))
        their_loss.backward()
        torch.nn.utils.clip_grad_norm_(theirs.parameters(), 0.5)
        their_optimizer.step()
        assert loss == pytest.approx(their_loss.item(), rel=1e-6)
    for name, parameter in ours.named_parameters():
        np.testing.assert_allclose(parameter.value.to_numpy(), their_params[name].detach().numpy(), rtol=1e-6, atol=1e-7,
                                   err_msg=name)


def test_a_fresh_model_guesses_uniformly_and_counts_its_parameters():
    config = GPTConfig(vocab_size=84)
    model = GPT(config)
    # 2 embeddings, 4 blocks of (2 norms, attention, MLP), the final norm and the head
    block = 2 * 2 * 128 + (128 * 384 + 384 + 128 * 128 + 128) + (128 * 512 + 512 + 512 * 128 + 128)
    assert parameter_count(model) == 84 * 128 + 64 * 128 + 4 * block + 2 * 128 + 128 * 84
    # 2 x 63 ids: the MLP's (126, 512) activations stay below the threaded kernels' threshold, whose float32 twins
    # no other test needs (2 x 64 would compile three of them, about 10 s)
    ids = tensor(np.random.default_rng(0).integers(0, 84, (2, 63)), dtype=int64)
    assert sequence_loss(model(ids), ids).item() == pytest.approx(math.log(84), abs=0.1)


def test_bad_input_is_refused():
    model = GPT(GPTConfig(vocab_size=5, block_size=4, n_layer=1, n_head=1, n_embd=4))
    with pytest.raises(ValueError, match="at most block_size=4 positions, got 5"):
        model(tensor(np.zeros((1, 5)), dtype=int64))
    with pytest.raises(ValueError, match=r"\(B, T\) ids, got shape \(4,\)"):
        model(tensor(np.zeros(4), dtype=int64))
    with pytest.raises(ValueError, match="temperature >= 0 and top_k >= 1"):
        sample_next(np.zeros(3), temperature=-1.0)
    with pytest.raises(ValueError, match="a prompt of at least one id"):
        generate(model, [], 3)


@pytest.mark.task("5.9")
@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(-5, 5), min_size=2, max_size=8), st.integers(1, 8), st.integers(0, 10 ** 6))
def test_top_k_draws_only_among_the_k_largest(scores, top_k, seed):
    scores = np.array(scores)
    drawn = sample_next(scores, temperature=0.7, top_k=top_k, rng=seed)
    assert scores[drawn] >= np.sort(scores)[-min(top_k, len(scores))]
    assert sample_next(scores, temperature=0) == int(np.argmax(scores))


@pytest.mark.task("5.10")
@pytest.mark.parametrize("backend", BACKENDS)
def test_cached_logits_equal_a_whole_forward_pass(backend):
    config = tiny(backend)
    model = GPT(config, seed=3, backend=backend, dtype=float64)
    ids = np.random.default_rng(1).integers(0, config.vocab_size, config.block_size)
    whole = model(tensor(ids[None], backend=backend, dtype=int64)).to_numpy()
    cache = KVCache(config.n_layer)
    pieces = [cached_forward(model, tensor(ids[None, :2], backend=backend, dtype=int64), cache).to_numpy()]
    pieces += [cached_forward(model, tensor(ids[None, [t]], backend=backend, dtype=int64), cache).to_numpy()
               for t in range(2, config.block_size)]
    np.testing.assert_allclose(np.concatenate(pieces, axis=1), whole, rtol=1e-9, atol=1e-10)
    with pytest.raises(ValueError, match="one id at a time"):
        cached_forward(model, tensor(ids[None, :2], backend=backend, dtype=int64), cache)


@pytest.mark.task("5.10")
def test_cached_generation_writes_what_generate_writes_within_a_window():
    config = GPTConfig(vocab_size=11, block_size=16, n_layer=2, n_head=2, n_embd=8)
    model = GPT(config, seed=2)
    prompt = [1, 2, 3]
    assert generate_cached(model, prompt, 13, rng=4) == generate(model, prompt, 13, rng=4)
    longer = generate_cached(model, prompt, 40, top_k=3, rng=4)   # past a full cache: restarts from the last half
    assert len(longer) == 40 and all(0 <= i < 11 for i in longer)


def test_checkpoint_round_trip_and_the_command(tmp_path, capsys, monkeypatch):
    vocab = Vocabulary("abc\n")
    model = GPT(GPTConfig(vocab_size=4, block_size=4, n_layer=1, n_head=1, n_embd=4), seed=1)
    path = save_gpt(model, vocab, tmp_path / "m.npz")
    loaded, loaded_vocab = load_gpt(path)
    ids = tensor(np.array([[0, 1, 2]]), dtype=int64)
    np.testing.assert_array_equal(loaded(ids).to_numpy(), model(ids).to_numpy())
    assert loaded.config == model.config and loaded_vocab.itos == vocab.itos
    text = main(["--sample", "--checkpoint", str(path), "--prompt", "ab", "--length", "5", "--top-k", "2"])
    assert text.startswith("ab") and len(text) == 7 and set(text) <= set("abc\n")
    with pytest.raises(SystemExit):
        main(["--sample", "--checkpoint", str(tmp_path / "missing.npz")])
    assert "no checkpoint at" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--steps", "0"])
    assert "expected a positive int" in capsys.readouterr().err
    np.savez(tmp_path / "other.npz", weight=np.zeros(3))
    with pytest.raises(ValueError, match="not of a GPT"):
        load_gpt(tmp_path / "other.npz")
    (tmp_path / "damaged.npz").write_bytes(b"not a zip")
    for options, message in [(["--checkpoint", str(tmp_path / "damaged.npz")], "is not a checkpoint"),
                             (["--checkpoint", str(tmp_path / "other.npz")], "not of a GPT"),
                             (["--checkpoint", str(path), "--prompt", "xyz"], "character 'x' at position 0 is not in"),
                             (["--checkpoint", str(path), "--temperature", "-1"], "--temperature: expected a number >= 0")]:
        with pytest.raises(SystemExit) as stopped:
            main(["--sample", *options])
        error = capsys.readouterr().err
        assert stopped.value.code == 2 and message in error and "Traceback" not in error
        assert options[-1] == "-1" or error.count("\n") == 1   # one line, but for argparse's usage


def test_training_lowers_the_loss_on_a_repeating_text():
    vocab = Vocabulary("abcd")
    ids = np.array(vocab.encode("abcd" * 200))
    model = GPT(GPTConfig(vocab_size=4, block_size=8, n_layer=1, n_head=2, n_embd=16), seed=0)
    batches = fixed_batches(ids, 2, 8, 8)
    log = train(model, ids, batches, Schedule(steps=60, batch_size=8, lr=1e-2, warmup_steps=5), eval_every=30,
                progress=False)
    assert log.valid[0][1] < 1.0 and log.valid[-1][1] < 0.1   # the next letter of "abcd..." is certain


@pytest.mark.skipif(not cuda_available(), reason="no CUDA GPU and NUMBA_ENABLE_CUDASIM unset")
def test_training_steps_on_the_gpu_copy_only_the_loss_to_the_host():
    gpu = minitorch.backend("cuda")
    config = GPTConfig(vocab_size=5, block_size=3, n_layer=1, n_head=1, n_embd=4)
    model = GPT(config, seed=0, backend=gpu, dtype=float32)
    optimizer = AdamW(weight_decay_groups(model, 0.1), lr=0.01)
    rng = np.random.default_rng(0)
    losses = []
    for _ in range(2):   # the first step makes the optimiser state; the second shows the steady state
        ids, targets = (tensor(values, backend=gpu, dtype=int64) for values in rng.integers(0, 5, (2, 2, 3)))
        with count_transfers() as copies:
            losses.append(train_step(model, optimizer, ids, targets))
        assert copies.to_host_calls == 1, copies   # the loss, and nothing else
    host = GPT(config, seed=0, dtype=float32)
    host_optimizer = AdamW(weight_decay_groups(host, 0.1), lr=0.01)
    rng = np.random.default_rng(0)
    for loss in losses:
        ids, targets = (tensor(values, dtype=int64) for values in rng.integers(0, 5, (2, 2, 3)))
        assert train_step(host, host_optimizer, ids, targets) == pytest.approx(loss, rel=1e-4)
