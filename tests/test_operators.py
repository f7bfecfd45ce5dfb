"""Algebraic laws of `minitorch.operators`, checked on random floats with hypothesis."""
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minitorch import operators
from minitorch.operators import (add, addLists, eq, exp, id, inv, inv_back, is_close, log, log_back, lt, max, mul,
                                 neg, negList, prod, relu, relu_back, sigmoid)

small = st.floats(min_value=-100, max_value=100, allow_nan=False)
positive = st.floats(min_value=1e-3, max_value=100)
lists = st.lists(small, min_size=0, max_size=10)

task_1 = pytest.mark.task("0.1")
task_2 = pytest.mark.task("0.2")
task_3 = pytest.mark.task("0.3")


@task_1
@given(small, small)
def test_arithmetic_matches_python(x, y):
    assert mul(x, y) == x * y and add(x, y) == x + y and neg(x) == -x and id(x) == x


@task_1
@given(small, small)
def test_comparisons_are_floats(x, y):
    assert lt(x, y) == float(x < y) and eq(x, y) == float(x == y)
    assert max(x, y) == (x if x > y else y)
    assert lt(x, y) + lt(y, x) + eq(x, y) == 1.0


@task_1
@given(small, small)
def test_commutativity(x, y):
    assert add(x, y) == add(y, x) and mul(x, y) == mul(y, x) and max(x, y) == max(y, x)


@task_1
@given(small, small, small)
def test_distributivity(x, y, z):
    assert is_close(mul(z, add(x, y)), add(mul(z, x), mul(z, y)))


@task_2
@given(small)
def test_sigmoid_range_symmetry_and_monotonicity(x):
    assert 0.0 <= sigmoid(x) <= 1.0
    assert math.isclose(1.0 - sigmoid(x), sigmoid(-x), abs_tol=1e-12)
    assert sigmoid(x + 1.0) >= sigmoid(x)


@task_2
@pytest.mark.parametrize("x", [1e4, -1e4, 745.0, -745.0])
def test_sigmoid_does_not_overflow(x):
    assert sigmoid(x) == (1.0 if x > 0 else 0.0) or 0.0 < sigmoid(x) < 1e-300


@task_2
@given(small)
def test_relu(x):
    assert relu(x) == (x if x > 0 else 0.0) and relu(x) >= 0.0


@task_2
@given(positive)
def test_log_exp_inv(x):
    assert math.isclose(exp(log(x)), x, rel_tol=1e-9)
    assert math.isclose(inv(inv(x)), x, rel_tol=1e-9)


@task_2
@given(positive, small)
def test_backward_helpers_match_central_differences(x, d):
    step = 1e-6 * x
    for forward, backward in [(log, log_back), (inv, inv_back), (relu, relu_back)]:
        slope = (forward(x + step) - forward(x - step)) / (2 * step)
        assert math.isclose(backward(x, d), d * slope, rel_tol=1e-4, abs_tol=1e-4)


@task_2
def test_relu_back_is_zero_at_the_kink():
    assert relu_back(0.0, 5.0) == 0.0 and relu_back(-1.0, 5.0) == 0.0


@task_3
@given(lists)
def test_sum_and_neglist(values):
    assert math.isclose(operators.sum(values), math.fsum(values), abs_tol=1e-9)
    assert negList(values) == [-value for value in values]


@task_3
@given(lists, lists)
def test_sum_distributes_over_addlists(left, right):
    size = min(len(left), len(right))
    left, right = left[:size], right[:size]
    assert math.isclose(operators.sum(addLists(left, right)), operators.sum(left) + operators.sum(right),
                        abs_tol=1e-9)


@task_3
@given(st.lists(st.floats(min_value=-3, max_value=3), max_size=6))
def test_prod(values):
    assert math.isclose(prod(values), math.prod(values), rel_tol=1e-12, abs_tol=1e-300)


@task_3
def test_map_zip_reduce_are_higher_order():
    double = operators.map(lambda x: 2 * x)
    assert double([1.0, 2.0]) == [2.0, 4.0]
    assert operators.zipWith(max)([1.0, 5.0], [3.0, 2.0]) == [3.0, 5.0]
    assert operators.reduce(max, -math.inf)([3.0, 7.0, 1.0]) == 7.0
