"""`central_difference` against known derivatives on random inputs, and its errors."""
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minitorch import central_difference

values = st.floats(min_value=-10, max_value=10, allow_nan=False)
task = pytest.mark.task("1.1")


@task
@given(values, values)
def test_polynomial_partials(x, y):
    def f(a, b):
        return a * a * b + 3.0 * b
    assert math.isclose(central_difference(f, x, y, arg=0), 2 * x * y, rel_tol=1e-5, abs_tol=1e-4)
    assert math.isclose(central_difference(f, x, y, arg=1), x * x + 3.0, rel_tol=1e-5, abs_tol=1e-4)


@task
@given(values)
def test_transcendental(x):
    assert math.isclose(central_difference(math.sin, x), math.cos(x), abs_tol=1e-6)
    assert math.isclose(central_difference(math.exp, x / 2), math.exp(x / 2), rel_tol=1e-6)


@task
@given(values, st.floats(min_value=1e-5, max_value=1e-2))
def test_exact_for_linear_functions(x, epsilon):
    assert math.isclose(central_difference(lambda a: 4.0 * a - 1.0, x, epsilon=epsilon), 4.0, rel_tol=1e-6)


@pytest.mark.parametrize("arg", [2, -1, 10])
def test_arg_out_of_range_is_reported(arg):
    with pytest.raises(IndexError, match=rf"arg={arg} is out of range: f was given 2 values \(1\.0, 2\.0\)"):
        central_difference(lambda a, b: a * b, 1.0, 2.0, arg=arg)
