"""`manual_seed` as PyTorch's: unseeded draws repeat after it, seeded ones and generators are left alone."""
import numpy as np
import pytest
from backends import BACKENDS
from hypothesis import given, settings
from hypothesis import strategies as st

import minitorch
from minitorch import manual_seed


def unseeded_draws(backend) -> list:
    "One draw of each constructor that takes a seed, given none."
    weights = minitorch.tensor([[1.0, 2.0, 3.0], [3.0, 0.0, 1.0]], backend=backend)
    return [minitorch.rand((2, 3), backend).tolist(), minitorch.randn(4, backend).tolist(),
            minitorch.randint(0, 100, (5,), backend).tolist(), minitorch.multinomial(weights, 2).tolist()]


@pytest.mark.task("2.1")
@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**63 - 1))
def test_unseeded_draws_repeat_after_the_same_seed(backend, seed):
    manual_seed(seed)
    first = unseeded_draws(backend)
    manual_seed(seed)
    assert unseeded_draws(backend) == first
    assert unseeded_draws(backend) != first       # the shared generator moves on


@pytest.mark.task("2.1")
def test_the_shared_generator_is_restarted_in_place():
    generator = manual_seed(3)
    assert manual_seed(4) is generator             # whoever holds it sees the new seed
    first = generator.random(3)
    manual_seed(4)
    np.testing.assert_array_equal(generator.random(3), first)
    np.testing.assert_array_equal(np.random.default_rng(4).random(3), first)   # the seed means what NumPy's does


@pytest.mark.task("2.1")
def test_seeds_and_generators_given_are_not_the_shared_one():
    manual_seed(0)
    seeded = minitorch.rand(3, seed=5).tolist()
    manual_seed(1)
    assert minitorch.rand(3, seed=5).tolist() == seeded
    mine = np.random.default_rng(9)
    shared = manual_seed(2)
    state = shared.bit_generator.state
    minitorch.randn(3, seed=mine)
    assert shared.bit_generator.state == state                                       # the shared one did not move
    assert mine.bit_generator.state != np.random.default_rng(9).bit_generator.state  # the one given did


@pytest.mark.task("2.1")
@pytest.mark.parametrize("seed", [-1, 2.5, True, "0", None])
def test_a_bad_seed_is_named(seed):
    with pytest.raises(ValueError, match="manual_seed takes a whole number >= 0"):
        manual_seed(seed)


@pytest.mark.task("4.4")
def test_dropout_and_initialisers_repeat_after_manual_seed():
    x = minitorch.ones((4, 8))
    layer = minitorch.Dropout(0.5)                 # made before the seed: it holds the shared generator
    manual_seed(11)
    first = (layer(x).tolist(), minitorch.dropout(x, 0.5).tolist(), minitorch.kaiming_uniform((3, 5)).tolist())
    manual_seed(11)
    assert (layer(x).tolist(), minitorch.dropout(x, 0.5).tolist(), minitorch.kaiming_uniform((3, 5)).tolist()) == first


@pytest.mark.task("4.5")
@pytest.mark.parametrize("make", [lambda: minitorch.Linear(4, 3), lambda: minitorch.Conv2d(2, 3, 3),
                                  lambda: minitorch.Embedding(5, 4), lambda: minitorch.CausalSelfAttention(8, 2),
                                  lambda: minitorch.Block(8, 2)],
                         ids=["Linear", "Conv2d", "Embedding", "CausalSelfAttention", "Block"])
def test_layers_without_a_seed_draw_from_the_shared_generator(make):
    "As in PyTorch: two layers differ, and the same manual_seed gives the same model; a seed= keeps its own draws."
    def weights(layer):
        return [parameter.value.tolist() for parameter in layer.parameters()]
    manual_seed(3)
    first, second = weights(make()), weights(make())
    assert first != second
    manual_seed(3)
    assert weights(make()) == first


def test_seeded_layers_ignore_the_shared_generator():
    manual_seed(0)
    def seeded():
        return [minitorch.Block(8, 2, seed=4).mlp.proj.weight.value.tolist(), minitorch.Linear(3, 2, seed=4).weight.value.tolist()]
    first = seeded()
    manual_seed(1)
    assert seeded() == first


@pytest.mark.task("5.9")
def test_sampling_repeats_after_manual_seed():
    from minitorch.gpt import sample_next
    logits = np.linspace(-1.0, 1.0, 20)
    manual_seed(5)
    first = [sample_next(logits) for _ in range(30)]
    manual_seed(5)
    assert [sample_next(logits) for _ in range(30)] == first and len(set(first)) > 1


def generator_draws(backend, generator) -> list:
    "One draw of each function that takes `generator=`, as torch's do, from `generator`."
    weights = minitorch.tensor([[1.0, 2.0, 3.0], [3.0, 0.0, 1.0]], backend=backend)
    target = minitorch.zeros(2, 3)
    init = minitorch.nn.init
    return [minitorch.rand((2, 3), backend=backend, generator=generator).tolist(),
            minitorch.randn(4, backend=backend, generator=generator).tolist(),
            minitorch.randint(0, 100, (5,), backend=backend, generator=generator).tolist(),
            minitorch.multinomial(weights, 2, generator=generator).tolist(),
            init.uniform_(target, generator=generator).tolist(), init.normal_(target, generator=generator).tolist(),
            init.xavier_uniform_(target, generator=generator).tolist(),
            init.xavier_normal_(target, generator=generator).tolist(),
            init.kaiming_uniform_(target, generator=generator).tolist(),
            init.kaiming_normal_(target, generator=generator).tolist()]


@pytest.mark.task("2.1")
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_generator_repeats_its_draws_and_leaves_the_shared_one_alone(backend):
    manual_seed(5)
    expected = unseeded_draws(backend)
    manual_seed(5)
    first = generator_draws(backend, minitorch.Generator().manual_seed(3))
    assert generator_draws(backend, minitorch.Generator().manual_seed(3)) == first   # the same seed, the same draws
    assert unseeded_draws(backend) == expected   # the shared generator did not move
    generator = minitorch.Generator().manual_seed(3)
    assert generator_draws(backend, generator) == first and generator_draws(backend, generator) != first  # moves on


def test_generator_as_torch():
    torch = pytest.importorskip("torch")
    ours, theirs = minitorch.Generator(), torch.Generator()
    assert ours.initial_seed() == theirs.initial_seed()   # a new generator's seed
    assert ours.manual_seed(7) is ours and theirs.manual_seed(7) is theirs
    assert ours.initial_seed() == theirs.initial_seed() == 7
    seed = ours.seed()
    assert isinstance(seed, int) and ours.initial_seed() == seed and seed >= 0
    with pytest.raises(ValueError, match="whole number >= 0"):
        ours.manual_seed(2.5)
    with pytest.raises(ValueError, match="seed= or generator=, not both"):
        minitorch.rand(2, seed=1, generator=ours)
    with pytest.raises(TypeError, match="generator must be a minitorch.Generator"):
        minitorch.randn(2, generator=np.random.default_rng(0))
