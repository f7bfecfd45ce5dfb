"""The MLP language model (chapter 5): context examples, tanh, the model against PyTorch, sampling names."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minitorch
from minitorch.mlp_lm import (BOUNDARY, MLPLanguageModel, Tanh, context_examples, example_batch, examples_loss,
                              names_vocabulary, sample_name, split_names, tanh)
from minitorch.nn import cross_entropy

pytestmark = pytest.mark.usefixtures("fast_default_backend")   # as the chapter's notebooks set it

try:
    import torch
except ImportError:   # the parity tests skip without PyTorch
    torch = None
needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")

VOCAB = names_vocabulary(["abcdefghijklmnopqrstuvwxyz"])
LETTERS = "abcdefghijklmnopqrstuvwxyz"
names_strategy = st.lists(st.text(alphabet=LETTERS, min_size=1, max_size=12), max_size=8)


def test_names_vocabulary_and_split():
    assert len(VOCAB) == 27 and VOCAB.stoi[BOUNDARY] == 0 and VOCAB.itos[1:] == list(LETTERS)
    names = [f"name{chr(97 + index % 26)}{index}" for index in range(100)]
    train, valid = split_names(names, valid_fraction=0.2, seed=3)
    assert len(valid) == 20 and sorted(train + valid) == sorted(names) and not set(train) & set(valid)
    assert split_names(names, valid_fraction=0.2, seed=3) == (train, valid)


@pytest.mark.task("5.3")
def test_context_examples_of_one_name():
    contexts, targets = context_examples(["emma"], VOCAB, 3)
    assert contexts.shape == (5, 3) and targets.shape == (5,) and contexts.dtype == targets.dtype == np.int64
    assert [VOCAB.decode(row) for row in contexts] == ["...", "..e", ".em", "emm", "mma"]
    assert VOCAB.decode(targets) == "emma."
    contexts, targets = context_examples(["ab"], VOCAB, 5)   # a context longer than the name: boundaries
    assert [VOCAB.decode(row) for row in contexts] == [".....", "....a", "...ab"] and VOCAB.decode(targets) == "ab."
    with pytest.raises(ValueError, match="block_size"):
        context_examples(["ab"], VOCAB, 0)
    with pytest.raises(ValueError, match="not in the vocabulary"):
        context_examples(["Ab"], VOCAB, 2)


@pytest.mark.task("5.3")
@settings(max_examples=40, deadline=None)
@given(names=names_strategy, block_size=st.integers(1, 5))
def test_context_examples(names, block_size):
    contexts, targets = context_examples(names, VOCAB, block_size)
    assert contexts.shape == (sum(len(name) + 1 for name in names), block_size) and targets.shape == (len(contexts),)
    row = 0
    for name in names:
        padded = BOUNDARY * block_size + name + BOUNDARY
        for position in range(len(name) + 1):   # the example of character `position` (the last: the boundary)
            assert VOCAB.decode(contexts[row]) == padded[position:position + block_size]
            assert VOCAB.itos[targets[row]] == padded[position + block_size]
            row += 1
    assert (targets == 0).sum() == len(names)   # one boundary target per name
    if block_size == 1 and names:   # the bigrams of the names joined by boundaries
        joined = VOCAB.encode(BOUNDARY + BOUNDARY.join(names) + BOUNDARY)
        pairs = {(a, b) for a, b in zip(joined[:-1], joined[1:])}
        assert {(int(context[0]), int(target)) for context, target in zip(contexts, targets)} == pairs


@pytest.mark.task("5.3")
def test_example_batch_is_seeded():
    contexts, targets = context_examples(["emma", "olivia", "ava"], VOCAB, 3)
    inputs, labels = example_batch(contexts, targets, 16, np.random.default_rng(5))
    again, _ = example_batch(contexts, targets, 16, np.random.default_rng(5))
    assert inputs.shape == (16, 3) and labels.shape == (16,) and inputs.dtype == labels.dtype == minitorch.int64
    np.testing.assert_array_equal(again.to_numpy(), inputs.to_numpy())
    rows = {(tuple(context), int(target)) for context, target in zip(contexts.tolist(), targets)}
    assert all((tuple(context), int(target)) in rows for context, target in zip(inputs.to_numpy().tolist(),
                                                                                labels.to_numpy()))


@pytest.mark.parametrize("backend", [minitorch.SimpleBackend, minitorch.FastBackend], ids=["simple", "fast"])
def test_tanh_values_and_gradient(backend):
    values = np.random.default_rng(0).normal(scale=2.0, size=(3, 5))
    a = minitorch.tensor(values, backend=backend)
    np.testing.assert_allclose(tanh(a).to_numpy(), np.tanh(values), rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(a.tanh().to_numpy(), np.tanh(values), rtol=1e-14, atol=1e-15)
    minitorch.grad_check(tanh, minitorch.tensor(values, backend=backend), samples=8)
    b = minitorch.tensor(values, backend=backend, requires_grad=True)
    (tanh(b) * minitorch.tensor(values, backend=backend)).sum().backward()
    np.testing.assert_allclose(b.grad.to_numpy(), values * (1 - np.tanh(values) ** 2), rtol=1e-12)
    assert tanh(a.float()).dtype == minitorch.float32
    assert tanh(minitorch.tensor([0, 1], backend=backend, dtype=minitorch.int64)).dtype == minitorch.float64
    assert Tanh.apply(a).shape == (3, 5)


@needs_torch
@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(-30, 30, allow_nan=False), min_size=1, max_size=20))
def test_tanh_against_torch(values):
    a = minitorch.tensor(values, backend=minitorch.FastBackend, requires_grad=True)
    tanh(a).sum().backward()
    t = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    torch.tanh(t).sum().backward()
    np.testing.assert_allclose(tanh(a.detach()).to_numpy(), torch.tanh(t).detach().numpy(), rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(a.grad.to_numpy(), t.grad.numpy(), rtol=1e-12, atol=1e-15)


def trained_a_little(model: MLPLanguageModel, steps: int = 5) -> MLPLanguageModel:
    "The model after a few Adam steps on a few names (so that no parameter is still zero)."
    contexts, targets = context_examples(["emma", "olivia", "ava", "noah", "liam"], VOCAB, model.block_size)
    optimizer = minitorch.Adam(model.parameters(), lr=0.05)
    rng = np.random.default_rng(0)
    for _ in range(steps):
        inputs, labels = example_batch(contexts, targets, 8, rng)
        loss = cross_entropy(model(inputs), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return model


@pytest.mark.task("5.3")
@needs_torch
@pytest.mark.parametrize("block_size, n_embd, n_hidden", [(3, 10, 20), (1, 2, 5), (4, 3, 7)])
def test_model_against_torch(block_size, n_embd, n_hidden):
    model = trained_a_little(MLPLanguageModel(len(VOCAB), block_size, n_embd, n_hidden, seed=2))
    contexts = np.random.default_rng(1).integers(0, len(VOCAB), size=(6, block_size))
    targets = np.random.default_rng(2).integers(0, len(VOCAB), size=6)
    for parameter in model.parameters():
        parameter.value.zero_grad_()
    logits = model(minitorch.tensor(contexts, backend=minitorch.FastBackend, dtype=minitorch.int64))
    cross_entropy(logits, targets).backward()

    weights = {name: torch.tensor(parameter.value.to_numpy(), dtype=torch.float64, requires_grad=True)
               for name, parameter in model.named_parameters()}
    embedded = weights["embedding.weight"][torch.tensor(contexts)].reshape(6, block_size * n_embd)
    hidden = torch.tanh(embedded @ weights["hidden.weight"].T + weights["hidden.bias"])
    torch_logits = hidden @ weights["output.weight"].T + weights["output.bias"]
    torch.nn.functional.cross_entropy(torch_logits, torch.tensor(targets)).backward()

    np.testing.assert_allclose(logits.to_numpy(), torch_logits.detach().numpy(), rtol=1e-6, atol=1e-6)
    for name, parameter in model.named_parameters():
        np.testing.assert_allclose(parameter.value.grad.to_numpy(), weights[name].grad.numpy(), rtol=1e-6, atol=1e-6,
                                   err_msg=name)


@pytest.mark.task("5.3")
def test_model_starts_uniform_and_keeps_its_dtype():
    model = MLPLanguageModel(len(VOCAB), block_size=2, n_embd=3, n_hidden=4, dtype=minitorch.float32)
    assert all(parameter.value.dtype == minitorch.float32 for parameter in model.parameters())
    contexts, targets = context_examples(["emma", "ava"], VOCAB, 2)
    assert math.isclose(examples_loss(model, contexts, targets), math.log(27), rel_tol=1e-6)
    logits = model(minitorch.tensor(contexts, backend=minitorch.FastBackend, dtype=minitorch.int64))
    assert logits.shape == (len(targets), 27) and logits.dtype == minitorch.float32
    with pytest.raises(ValueError, match=r"\(B, 2\) contexts"):
        model(minitorch.tensor([[0, 0, 0]], backend=minitorch.FastBackend, dtype=minitorch.int64))


@pytest.mark.task("5.3")
def test_sample_name_is_seeded_and_ends_at_the_boundary():
    model = trained_a_little(MLPLanguageModel(len(VOCAB), block_size=3, n_embd=4, n_hidden=16), steps=20)
    names = [sample_name(model, VOCAB, np.random.default_rng(seed)) for seed in range(10)]
    assert names == [sample_name(model, VOCAB, np.random.default_rng(seed)) for seed in range(10)]
    assert all(set(name) <= set(LETTERS) for name in names)
    assert all(len(name) < 30 for name in names)   # each stopped because the model drew the boundary
    assert len(sample_name(model, VOCAB, np.random.default_rng(0), max_length=2)) <= 2


@pytest.mark.task("5.3")
def test_sample_name_of_a_model_that_always_ends():
    model = MLPLanguageModel(len(VOCAB), block_size=2, n_embd=2, n_hidden=3)
    bias = np.full(27, -50.0)
    bias[0] = 50.0   # the boundary, always
    model.output.bias.update(minitorch.tensor(bias, backend=minitorch.FastBackend))
    assert sample_name(model, VOCAB, np.random.default_rng(0)) == ""
    bias[0], bias[VOCAB.stoi["z"]] = -50.0, 50.0   # never the boundary: stops at max_length
    model.output.bias.update(minitorch.tensor(bias, backend=minitorch.FastBackend))
    assert sample_name(model, VOCAB, np.random.default_rng(0), max_length=7) == "zzzzzzz"
