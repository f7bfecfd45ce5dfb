"""Hypothesis strategies for chapter 2: shapes, strided storage with random layouts, broadcastable pairs."""
import math

import numpy as np
from hypothesis import strategies as st

from minitorch.tensor_data import TensorData

values = st.floats(min_value=-100, max_value=100, allow_nan=False, allow_infinity=False)
shapes = st.lists(st.integers(min_value=1, max_value=3), min_size=1, max_size=4).map(tuple)


def as_numpy(data: TensorData) -> np.ndarray:
    "The values of `data` as a NumPy array, read through its strides by NumPy itself."
    storage = data._storage
    return np.lib.stride_tricks.as_strided(storage, data.shape, [step * storage.itemsize for step in data.strides])


@st.composite
def tensor_data(draw, shape: tuple[int, ...] | None = None, elements=values, seeded: bool = False) -> TensorData:
    """A `TensorData` of `shape` (random if None) whose strides come from a random permutation of its layout;
    `seeded`: normal values from a drawn seed, for shapes with too many values to draw one by one."""
    shape = draw(shapes) if shape is None else shape
    if seeded:
        storage = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1))).normal(size=math.prod(shape))
    else:
        storage = np.array(draw(st.lists(elements, min_size=math.prod(shape), max_size=math.prod(shape))))
    order = draw(st.permutations(range(len(shape))))
    laid_out = TensorData(storage, tuple(shape[dim] for dim in order))
    return laid_out.permute(*np.argsort(order).tolist())


@st.composite
def broadcast_shapes(draw) -> tuple[tuple[int, ...], tuple[int, ...]]:
    "Two shapes that broadcast: the second drops leading dims of the first and sets some dims to 1."
    big = draw(shapes)
    dropped = draw(st.integers(min_value=0, max_value=len(big) - 1))
    small = tuple(1 if draw(st.booleans()) else size for size in big[dropped:])
    return (big, small) if draw(st.booleans()) else (small, big)


@st.composite
def tensors(draw, backend, shape: tuple[int, ...] | None = None, elements=values):
    "A `Tensor` on `backend` over random strided data (see `tensor_data`)."
    from minitorch import Tensor
    return Tensor(draw(tensor_data(shape, elements)), backend=backend)


SPECIAL = [0.0, 1.5, -2.0, math.nan, math.inf, -math.inf]
"Values that test edge cases: zeros, signs, nan and both infinities."


@st.composite
def arrays(draw, shape: tuple[int, ...], dtype: str = "float64", special: bool = False, share: float = 0.3) -> np.ndarray:
    "Random normal values of `shape` in `dtype`; with `special`, about `share` of them taken from `SPECIAL`."
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    values = rng.normal(size=shape)
    if special and values.size:
        picks = rng.random(shape) < share
        values[picks] = rng.choice(SPECIAL, size=int(picks.sum()))
    return values.astype(dtype)
