"""A graph is freed by reference counting as soon as its output goes: no function leaves a reference cycle."""
import gc
import weakref

import numpy as np
import pytest

import minitorch
from minitorch import float32, int64, tensor
from minitorch.gpt import GPT, GPTConfig, train_step
from minitorch.adam import AdamW, weight_decay_groups

OPERATIONS = {
    "exp": lambda x: x.exp(), "sigmoid": lambda x: x.sigmoid(), "log": lambda x: (x * x + 1).log(),
    "tanh": lambda x: minitorch.tanh(x), "rsqrt": lambda x: minitorch.rsqrt(x * x + 1),
    "gelu": lambda x: minitorch.gelu(x), "max": lambda x: minitorch.max(x, 1),
    "softmax": lambda x: minitorch.softmax(x, 1), "layer_norm": lambda x: minitorch.layer_norm(x, (3,)),
    "getitem": lambda x: x[1:, ::2], "matmul": lambda x: x @ x.permute(1, 0),
}


class NoGarbageCollector:
    "Turn the cyclic garbage collector off inside the block, so that only reference counting frees objects."

    def __enter__(self):
        gc.collect()
        gc.disable()

    def __exit__(self, *exc):
        gc.enable()


@pytest.mark.parametrize("name", OPERATIONS)
def test_the_graph_of_each_operation_is_freed_with_its_output(name):
    with NoGarbageCollector():
        x = tensor(np.linspace(-1.0, 1.0, 6).reshape(2, 3), requires_grad=True)
        out = OPERATIONS[name](x)
        out.sum().backward()
        context = weakref.ref(out.history.ctx)
        del out
        assert context() is None, f"the graph of {name} outlived its output"


def test_a_gpt_training_step_leaves_no_cyclic_garbage():
    config = GPTConfig(vocab_size=11, block_size=8, n_layer=1, n_head=2, n_embd=8)
    model = GPT(config, dtype=float32)
    optimizer = AdamW(weight_decay_groups(model, 0.1), lr=1e-3)
    inputs, targets = (tensor(np.random.default_rng(0).integers(0, 11, (2, 8)), dtype=int64) for _ in range(2))
    train_step(model, optimizer, inputs, targets)
    with NoGarbageCollector():
        train_step(model, optimizer, inputs, targets)
        assert gc.collect() == 0, "a training step left reference cycles for the garbage collector"
