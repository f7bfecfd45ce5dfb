"""`topological_sort` and `backpropagate` on random graphs of a minimal Variable, and on a very deep chain."""
import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minitorch import Context, backpropagate, central_difference, topological_sort

task = pytest.mark.task("1.6")


class Node:
    "A minimal Variable holding local derivatives for its parents."
    created = 0

    def __init__(self, value, parents=(), local=(), constant=False):
        Node.created += 1
        self.unique_id, self.value, self.constant = Node.created, value, constant
        self.parents, self.local, self.derivative = list(parents), list(local), 0.0

    def is_leaf(self):
        return not self.parents and not self.constant

    def is_constant(self):
        return self.constant

    def chain_rule(self, d_output):
        return [(parent, d_output * local) for parent, local in zip(self.parents, self.local)
                if not parent.is_constant()]

    def accumulate_derivative(self, x):
        self.derivative += x


def times(a, b):
    return Node(a.value * b.value, [a, b], [b.value, a.value])


def plus(a, b):
    return Node(a.value + b.value, [a, b], [1.0, 1.0])


def build(values, seed, operations):
    "A random DAG over leaves holding `values`; the output sums every computed node, so each is used."
    rng = random.Random(seed)
    nodes = [Node(value) for value in values]
    for _ in range(operations):
        left, right = rng.choice(nodes), rng.choice(nodes)
        nodes.append((times if rng.random() < 0.5 else plus)(left, right))
    output = nodes[len(values)]
    for node in nodes[len(values) + 1:]:
        output = plus(output, node)
    return nodes[:len(values)], output


leaf_values = st.lists(st.floats(min_value=-1, max_value=1), min_size=1, max_size=4)


@task
@given(leaf_values, st.integers(0, 10_000), st.integers(1, 12))
def test_sort_puts_every_node_before_its_parents(values, seed, operations):
    _, output = build(values, seed, operations)
    order = topological_sort(output)
    position = {node.unique_id: index for index, node in enumerate(order)}
    assert order[0] is output and len(position) == len(order)
    for node in order:
        for parent in node.parents:
            assert position[node.unique_id] < position[parent.unique_id]


@task
@given(leaf_values, st.integers(0, 10_000), st.integers(1, 8))
def test_backpropagate_matches_central_differences(values, seed, operations):
    leaves, output = build(values, seed, operations)
    backpropagate(output, 1.0)

    def rebuilt(*new_values):
        return build(new_values, seed, operations)[1].value
    for index, leaf in enumerate(leaves):
        slope = central_difference(rebuilt, *values, arg=index)
        assert math.isclose(leaf.derivative, slope, rel_tol=1e-4, abs_tol=1e-4)


@task
def test_constants_are_left_out():
    x, constant = Node(2.0), Node(5.0, constant=True)
    output = plus(times(x, constant), constant)
    assert all(not node.is_constant() for node in topological_sort(output))
    backpropagate(output, 1.0)
    assert x.derivative == 5.0 and constant.derivative == 0.0


@task
def test_reused_nodes_get_the_summed_derivative():
    x = Node(3.0)
    square = times(x, x)
    diamond = plus(times(square, x), square)        # x^3 + x^2
    backpropagate(diamond, 2.0)
    assert x.derivative == 2.0 * (3 * 9.0 + 2 * 3.0)


@task
def test_a_chain_of_100_000_operations_does_not_recurse():
    x = Node(1.0)
    node = x
    for _ in range(100_000):
        node = plus(node, Node(0.5, constant=True))
    assert len(topological_sort(node)) == 100_001
    backpropagate(node, 3.0)
    assert x.derivative == 3.0


def test_context_saves_values_unless_gradients_are_off():
    ctx, off = Context(), Context(no_grad=True)
    ctx.save_for_backward(1.0, "a")
    off.save_for_backward(1.0)
    assert ctx.saved_values == (1.0, "a") and off.saved_values == ()
