"""`Scalar` on the shared catalogue: forward against the float references, derivatives against central
differences; reuse, deep chains, and bad input."""
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minitorch import Context, Scalar, central_difference, derivative_check, math_cases
from minitorch.scalar import EQ, LT, Add, Exp, Inv, Log, Mul, Neg, ReLU, Sigmoid

values = st.floats(min_value=-100, max_value=100, allow_nan=False)
one_arg = math_cases("one")
two_arg = math_cases("two")
differentiable = [case for case in one_arg + two_arg if case.differentiable]


def case_id(case):
    return case.name


@pytest.mark.task("1.3")
@pytest.mark.parametrize("case", one_arg + two_arg, ids=case_id)
@given(a=values, b=values)
def test_forward_matches_the_float_reference(case, a, b):
    inputs = (a,) if case.arity == "one" else (a, b)
    result = case.variable(*[Scalar(value) for value in inputs])
    assert isinstance(result, Scalar)
    assert math.isclose(result.data, case.reference(*inputs), rel_tol=1e-9, abs_tol=1e-9)


@pytest.mark.task("1.2")
@given(values, values)
def test_floats_on_either_side(a, b):
    x = Scalar(a)
    assert (x + b).data == a + b and (b + x).data == b + a
    assert (x - b).data == a - b and (b - x).data == b - a
    assert (x * b).data == a * b and (b * x).data == b * a
    assert (x < b).data == float(a < b) and (x > b).data == float(a > b) and (x == b).data == float(a == b)
    if abs(b) > 1e-3:
        assert math.isclose((x / b).data, a / b, rel_tol=1e-12)
    if abs(a) > 1e-3:
        assert math.isclose((b / x).data, b / a, rel_tol=1e-12)


@pytest.mark.task("1.5")
@pytest.mark.parametrize("function, low, high", [
    (Add, -100, 100), (Mul, -100, 100), (Inv, 0.5, 100), (Neg, -100, 100), (Sigmoid, -30, 30),
    (ReLU, -100, 100), (Log, 0.5, 100), (Exp, -10, 10), (LT, -100, 100), (EQ, -100, 100)],
    ids=lambda item: getattr(item, "__name__", str(item)))
@given(data=st.data())
def test_one_chain_rule_step_matches_central_differences(function, low, high, data):
    arity = 2 if function in (Add, Mul, LT, EQ) else 1
    inputs = [data.draw(st.floats(min_value=low, max_value=high)) for _ in range(arity)]
    if function is ReLU and abs(inputs[0]) < 1e-3 or function in (LT, EQ) and abs(inputs[0] - inputs[1]) < 1e-3:
        return
    d_output = data.draw(st.floats(min_value=-2, max_value=2))
    leaves = [Scalar(value) for value in inputs]
    pairs = function.apply(*leaves).chain_rule(d_output)
    assert [parent for parent, _ in pairs] == leaves
    for arg, (_, derivative) in enumerate(pairs):
        slope = central_difference(lambda *floats: function.forward(Context(), *floats), *inputs, arg=arg)
        assert math.isclose(derivative, d_output * slope, rel_tol=1e-4, abs_tol=1e-4)


@pytest.mark.task("1.4")
def test_chain_rule_drops_constants():
    x = Scalar(2.0)
    pairs = (x * Scalar(3.0, requires_grad=False)).chain_rule(1.0)
    assert [(parent is x, derivative) for parent, derivative in pairs] == [(True, 3.0)]


@pytest.mark.task("1.6")
@pytest.mark.parametrize("case", differentiable, ids=case_id)
@given(a=values, b=values)
def test_derivatives_match_central_differences(case, a, b):
    inputs = (a,) if case.arity == "one" else (a, b)
    if case.near_kink(*inputs):
        return
    derivative_check(case.variable, *[Scalar(value) for value in inputs])


@pytest.mark.task("1.6")
def test_derivative_check_names_the_argument_that_disagrees():
    def half_hidden(x, y):
        return x * y + x * Scalar(x.data, requires_grad=False)
    with pytest.raises(AssertionError, match=r"half_hidden in argument 0 \(value 3.0\) disagrees: autodiff 2.0, central difference 5.0"):
        derivative_check(half_hidden, Scalar(3.0), Scalar(-1.0))


@pytest.mark.task("1.6")
@given(values)
def test_reused_nodes_and_diamonds_sum_their_derivatives(a):
    x = Scalar(a)
    (x * x).backward()
    assert math.isclose(x.derivative, 2 * a, rel_tol=1e-12, abs_tol=1e-12)
    x = Scalar(a)
    doubled = x * 2.0
    (doubled * x + doubled).backward(d_output=3.0)          # 2x^2 + 2x
    assert math.isclose(x.derivative, 3.0 * (4 * a + 2), rel_tol=1e-12, abs_tol=1e-9)


@pytest.mark.task("1.6")
def test_derivatives_accumulate_until_reset():
    x = Scalar(1.5)
    y = x * 4.0
    y.backward()
    y.backward()
    assert x.derivative == 8.0


@pytest.mark.task("1.6")
def test_a_chain_of_100_000_scalar_operations_backpropagates():
    x = Scalar(0.5)
    y = x
    for _ in range(100_000):
        y = y + 1.0
    y.backward()
    assert x.derivative == 1.0 and y.data == 100_000.5


@pytest.mark.parametrize("bad", ["1.0", None, 2j, [1.0], Scalar(1.0)], ids=repr)
def test_scalar_of_a_non_number_names_it(bad):
    with pytest.raises(TypeError, match=rf"real number, got .* of type {type(bad).__name__}"):
        Scalar(bad)


def test_backward_on_a_constant_says_so():
    constant = Scalar(2.0, requires_grad=False)
    with pytest.raises(RuntimeError, match="constant"):
        constant.backward()


def test_leaves_constants_and_ids():
    leaf, constant = Scalar(1.0), Scalar(1.0, requires_grad=False)
    assert leaf.is_leaf() and not leaf.is_constant() and constant.is_constant() and not constant.is_leaf()
    assert leaf.unique_id != constant.unique_id and leaf.parents == () and constant.parents == ()
    assert leaf.requires_grad_(False).is_constant() and constant.requires_grad_().is_leaf()
