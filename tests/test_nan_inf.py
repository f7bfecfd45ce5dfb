"""NaN, ±inf and extreme finite values give PyTorch's float64 answers on every backend, forward and backward.

Two kinds of check: expectations written out here (the operators, NumPy's NaN-propagating `max` and
`argmax`), which run without PyTorch, and parity with PyTorch float64, skipped when torch is missing.
"""
import math

import numpy as np
import pytest
from backends import BACKENDS
from hypothesis import given, settings
from hypothesis import strategies as st

import minitorch
from minitorch import operators, tensor

# Overflow in the simple backend's NumPy scalars (1e308 * 10) warns; here overflow is the point.
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

nan, inf = math.nan, math.inf
EXTREMES = [nan, inf, -inf, 1e308, -1e308, 800.0, -800.0, 710.0, 0.0, -0.0, 5e-324, -5e-324]
"The values that used to go wrong: NaN, the infinities, overflow of exp, zeros of both signs, subnormals."
extreme_or_plain = st.one_of(st.sampled_from(EXTREMES), st.floats(min_value=-5, max_value=5))
summable = st.one_of(st.sampled_from([value for value in EXTREMES if abs(value) != 1e308]), st.floats(-5, 5))
"Without ±1e308, whose sums overflow or not depending on the order of the additions (the CUDA tree's, torch's)."
any_float = st.floats(allow_nan=True, allow_infinity=True)
UNARY = ["relu", "sigmoid", "log", "exp"]


def same(ours, expected, rtol=1e-9, atol=0.0):
    "Assert equal values, NaN where NaN and infinities of the same sign where infinities."
    np.testing.assert_allclose(np.asarray(ours, dtype=float), np.asarray(expected, dtype=float), rtol=rtol, atol=atol,
                               equal_nan=True)


@st.composite
def matrices(draw, max_side=4):
    "A (rows, columns) list of lists drawn from extreme and ordinary floats."
    rows, columns = draw(st.integers(1, max_side)), draw(st.integers(1, max_side))
    return [draw(st.lists(extreme_or_plain, min_size=columns, max_size=columns)) for _ in range(rows)]


@st.composite
def feature_maps(draw, elements=extreme_or_plain):
    "An (N, C, H, W) array of extreme and ordinary floats with H and W multiples of the kernel, and the kernel."
    kernel = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    shape = (draw(st.integers(1, 2)), draw(st.integers(1, 2)), kernel[0] * draw(st.integers(1, 2)),
             kernel[1] * draw(st.integers(1, 2)))
    values = draw(st.lists(elements, min_size=math.prod(shape), max_size=math.prod(shape)))
    return np.array(values).reshape(shape), kernel


# Written-out expectations: no PyTorch needed.

OPERATOR_CASES = [
    (operators.max, (nan, 3.0), nan), (operators.max, (3.0, nan), nan), (operators.max, (nan, nan), nan),
    (operators.max, (-inf, 1e308), 1e308), (operators.max, (inf, 1.0), inf),
    (operators.relu, (nan,), nan), (operators.relu, (inf,), inf), (operators.relu, (-inf,), 0.0),
    (operators.relu, (1e308,), 1e308),
    (operators.sigmoid, (nan,), nan), (operators.sigmoid, (inf,), 1.0), (operators.sigmoid, (-inf,), 0.0),
    (operators.sigmoid, (-800.0,), 0.0), (operators.sigmoid, (800.0,), 1.0),
    (operators.log, (0.0,), -inf), (operators.log, (-0.0,), -inf), (operators.log, (-1.0,), nan),
    (operators.log, (-inf,), nan), (operators.log, (inf,), inf), (operators.log, (nan,), nan),
    (operators.exp, (800.0,), inf), (operators.exp, (710.0,), inf), (operators.exp, (inf,), inf),
    (operators.exp, (-inf,), 0.0), (operators.exp, (-800.0,), 0.0), (operators.exp, (nan,), nan),
    (operators.inv, (0.0,), inf), (operators.inv, (-0.0,), -inf), (operators.inv, (inf,), 0.0),
    (operators.inv, (nan,), nan), (operators.inv, (5e-324,), inf),
    (operators.relu_back, (nan, 2.0), 2.0), (operators.relu_back, (0.0, 2.0), 0.0), (operators.relu_back, (-inf, 2.0), 0.0),
    (operators.log_back, (0.0, 1.0), inf), (operators.log_back, (-0.0, 1.0), -inf), (operators.log_back, (0.0, 0.0), nan),
    (operators.log_back, (inf, 1.0), 0.0), (operators.inv_back, (0.0, 1.0), -inf), (operators.inv_back, (1e308, 1.0), 0.0),
    (operators.inv_back, (0.0, 0.0), nan),
    (operators.lt, (nan, 1.0), 0.0), (operators.lt, (1.0, nan), 0.0), (operators.eq, (nan, nan), 0.0),
    (operators.lt, (-inf, inf), 1.0), (operators.eq, (inf, inf), 1.0),
]


@pytest.mark.parametrize("fn, arguments, expected", [
    pytest.param(fn, arguments, expected, id=f"{fn.__name__}{arguments}",
                 marks=pytest.mark.task("0.1" if fn in (operators.max, operators.lt, operators.eq) else "0.2"))
    for fn, arguments, expected in OPERATOR_CASES])
def test_operator_at_an_extreme(fn, arguments, expected):
    same(fn(*arguments), expected)


@pytest.mark.task("0.1")
@given(any_float, any_float)
def test_max_is_nan_exactly_when_an_input_is(x, y):
    expected = nan if math.isnan(x) or math.isnan(y) else (x if x > y else y)
    same(operators.max(x, y), expected)
    same(operators.max(y, x), expected)


@pytest.mark.task("0.2")
@given(any_float, any_float)
def test_operators_never_raise_and_keep_nan(x, d):
    for fn in (operators.relu, operators.sigmoid, operators.log, operators.exp, operators.inv):
        assert math.isnan(fn(x)) == (math.isnan(x) or (fn is operators.log and x < 0))
    for back in (operators.log_back, operators.inv_back, operators.relu_back):
        back(x, d)


@pytest.mark.task("2.3")
@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=25)
@given(values=matrices())
def test_maps_match_the_operators_on_every_backend(backend, values):
    "Each backend computes what the operators compute, element by element (Numba and CUDA compile them)."
    x = tensor(values, backend=backend)
    for name in UNARY:
        same(getattr(x, name)().to_numpy(), [[getattr(operators, name)(v) for v in row] for row in values])
    same((1.0 / x).to_numpy(), [[operators.inv(v) for v in row] for row in values])


@pytest.mark.task("4.3")
@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=25)
@given(values=matrices(), dim=st.integers(0, 1))
def test_max_and_argmax_match_numpy(backend, values, dim):
    "NumPy's `max` keeps NaN and its `argmax` points at the first NaN, as PyTorch's do."
    array = np.array(values)
    same(minitorch.max(tensor(values, backend=backend), dim).to_numpy(), array.max(axis=dim))
    positions = minitorch.argmax(tensor(values, backend=backend), dim).to_numpy()
    np.testing.assert_array_equal(positions, array.argmax(axis=dim))


@pytest.mark.task("4.4")
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_diverged_row_shows_nan_forward_and_backward(backend):
    x = tensor([[1.0, nan, 3.0], [2.0, inf, -inf]], backend=backend, requires_grad=True)
    out = minitorch.max(x, 1)
    out.sum().backward()
    same(out.to_numpy(), [nan, inf])
    same(x.grad.to_numpy(), [[nan, nan, nan], [0.0, 1.0, 0.0]])
    same(minitorch.argmax(x, 1).to_numpy(), [1.0, 1.0])
    same(minitorch.softmax(x, 1).to_numpy()[0], [nan, nan, nan])
    same(minitorch.logsoftmax(x, 1).to_numpy()[0], [nan, nan, nan])
    relu_input = tensor([nan, -1.0, 2.0], backend=backend, requires_grad=True)
    relu_out = relu_input.relu()
    relu_out.sum().backward()
    same(relu_out.to_numpy(), [nan, 0.0, 2.0])
    same(relu_input.grad.to_numpy(), [1.0, 0.0, 1.0])


@pytest.mark.task("4.3")
@pytest.mark.parametrize("backend", BACKENDS)
def test_pooling_a_nan_gives_nan(backend):
    maps = tensor([[[[1.0, nan, 5.0, 2.0], [nan, 0.0, inf, 3.0]]]], backend=backend, requires_grad=True)
    pooled = minitorch.maxpool2d(maps, 2)
    pooled.sum().backward()
    same(pooled.to_numpy(), [[[[nan, inf]]]])
    same(maps.grad.to_numpy(), [[[[0, 0, 0, 0], [1, 0, 1, 0]]]])   # the last NaN of a block, as PyTorch's CPU kernel
    same(minitorch.avgpool2d(maps, 2).to_numpy(), [[[[nan, inf]]]])


@pytest.mark.task("4.3")
@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=20)
@given(maps_and_kernel=feature_maps())
def test_maxpool2d_matches_numpy(backend, maps_and_kernel):
    array, (kh, kw) = maps_and_kernel
    n, c, h, w = array.shape
    expected = array.reshape(n, c, h // kh, kh, w // kw, kw).max(axis=(3, 5))
    same(minitorch.maxpool2d(tensor(array.tolist(), backend=backend), (kh, kw)).to_numpy(), expected)


@pytest.mark.task("1.4")
def test_scalars_at_the_extremes():
    x = minitorch.Scalar(nan)
    y = x.relu()
    y.backward()
    assert math.isnan(y.data) and x.derivative == 1.0
    for value, fn, expected in [(0.0, "log", -inf), (-1.0, "log", nan), (800.0, "exp", inf), (-inf, "sigmoid", 0.0)]:
        same(getattr(minitorch.Scalar(value), fn)().data, expected)


# Parity with PyTorch float64.

@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def leaves(torch, backend, values):
    "A minitorch leaf and a torch float64 leaf over the same values."
    return (tensor(values, backend=backend, requires_grad=True),
            torch.tensor(values, dtype=torch.float64, requires_grad=True))


def compare(torch, backend, ours_fn, torch_fn, values, seed=0):
    "Forward values and the input's gradient under random weights agree with torch's (NaN where NaN)."
    ours_in, theirs_in = leaves(torch, backend, values)
    ours, theirs = ours_fn(ours_in), torch_fn(theirs_in)
    same(ours.to_numpy(), theirs.detach().numpy().reshape(ours.shape), rtol=1e-6, atol=1e-12)
    weights = np.random.default_rng(seed).normal(size=theirs.shape)
    ours.backward(tensor(weights.reshape(ours.shape).tolist(), backend=backend))
    theirs.backward(torch.tensor(weights))
    same(ours_in.grad.to_numpy(), theirs_in.grad.numpy(), rtol=1e-6, atol=1e-12)


@pytest.mark.task("2.7")
@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=25)
@given(values=matrices())
def test_elementwise_like_torch(torch, backend, values):
    for name in UNARY:
        compare(torch, backend, lambda x: getattr(x, name)(), lambda x: getattr(x, name)(), values)
    compare(torch, backend, lambda x: 1.0 / x, lambda x: 1.0 / x, values)
    flipped = [row[::-1] for row in values]
    ours, other = tensor(values, backend=backend), tensor(flipped, backend=backend)
    theirs, their_other = (torch.tensor(rows, dtype=torch.float64) for rows in (values, flipped))
    same((ours < other).to_numpy(), (theirs < their_other).double().numpy())
    same((ours == other).to_numpy(), (theirs == their_other).double().numpy())


@pytest.mark.task("4.4")
@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=25)
@given(values=matrices(), dim=st.integers(0, 1))
def test_max_argmax_softmax_like_torch(torch, backend, values, dim):
    "`max` is torch's `amax` (ties share the gradient); softmax and log-softmax keep NaN and inf as torch does."
    compare(torch, backend, lambda x: minitorch.max(x, dim), lambda x: torch.amax(x, dim), values)
    ours = minitorch.argmax(tensor(values, backend=backend), dim).to_numpy()
    np.testing.assert_array_equal(ours, torch.argmax(torch.tensor(values, dtype=torch.float64), dim).numpy())
    compare(torch, backend, lambda x: minitorch.softmax(x, dim), lambda x: torch.softmax(x, dim), values)
    compare(torch, backend, lambda x: minitorch.logsoftmax(x, dim), lambda x: torch.log_softmax(x, dim), values)


@pytest.mark.task("4.3")
@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=20)
@given(maps_and_kernel=feature_maps(), summable_maps=feature_maps(summable))
def test_pooling_like_torch(torch, backend, maps_and_kernel, summable_maps):
    functional = torch.nn.functional
    array, kernel = maps_and_kernel
    compare(torch, backend, lambda x: minitorch.maxpool2d(x, kernel), lambda x: functional.max_pool2d(x, kernel),
            array.tolist())
    array, kernel = summable_maps
    compare(torch, backend, lambda x: minitorch.avgpool2d(x, kernel), lambda x: functional.avg_pool2d(x, kernel),
            array.tolist())


@pytest.mark.task("1.4")
@pytest.mark.parametrize("name", UNARY + ["inv"])
@given(value=extreme_or_plain)
def test_scalar_functions_like_torch(torch, name, value):
    x, t = minitorch.Scalar(value), torch.tensor(value, dtype=torch.float64, requires_grad=True)
    y, u = (1.0 / x, 1.0 / t) if name == "inv" else (getattr(x, name)(), getattr(t, name)())
    y.backward()
    u.backward()
    same(y.data, u.item(), rtol=1e-9)
    same(x.derivative, t.grad.item(), rtol=1e-9)
