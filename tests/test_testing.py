"""The shared catalogue itself: complete, consistent, and its float references agree with Python math."""
import math

from hypothesis import given
from hypothesis import strategies as st

from minitorch import MathTest, math_cases

inputs = st.floats(min_value=-100, max_value=100, allow_nan=False)

python_references = {
    "neg": lambda a: -a, "add_constant": lambda a: a + 5, "sub_constant": lambda a: a - 5,
    "mult_constant": lambda a: 5 * a, "div_constant": lambda a: a / 5, "square": lambda a: a * a,
    "cube": lambda a: a ** 3, "inv": lambda a: 1 / (a + 101), "sig": lambda a: 1 / (1 + math.exp(-a)),
    "log": lambda a: math.log(a + 101), "relu": lambda a: max(a + 5.17, 0.0), "exp": lambda a: math.exp(a / 10),
    "explog": lambda a: math.log1p(math.exp(a / 10)),
    "composite": lambda a: math.log(1 / (1 + math.exp(-a / 10)) + max(a + 1.3, 0.0) / 20),
}


def test_catalogue_lists_every_function_once():
    names = [case.name for case in math_cases()]
    assert len(names) == len(set(names)) == 24
    assert all(hasattr(MathTest, name) for name in names)


@given(inputs)
def test_one_argument_references_match_python_math(a):
    for case in math_cases("one"):
        assert math.isclose(case.reference(a), python_references[case.name](a), rel_tol=1e-9, abs_tol=1e-12), case.name


@given(inputs, inputs)
def test_two_argument_references(a, b):
    cases = {case.name: case for case in math_cases("two")}
    assert cases["add2"].reference(a, b) == a + b and cases["mul2"].reference(a, b) == a * b
    assert math.isclose(cases["div2"].reference(a, b), a / (b + 101), rel_tol=1e-12, abs_tol=1e-300)
    shift = 7 / 6
    assert cases["lt2"].reference(a, b) == float(a < b + shift) and cases["eq2"].reference(a, b) == float(a == b + shift)
