"""The toy datasets: seeded, labelled by their rule, inside the unit square."""
import pytest
from hypothesis import given
from hypothesis import strategies as st

import minitorch


@pytest.mark.parametrize("name", list(minitorch.datasets))
@given(size=st.integers(min_value=1, max_value=60), seed=st.integers(min_value=0, max_value=10**6))
def test_datasets_are_seeded_and_well_formed(name, size, seed):
    graph = minitorch.datasets[name](size, seed=seed)
    assert graph == minitorch.datasets[name](size, seed=seed)
    assert graph.N == size == len(graph.X) == len(graph.y)
    assert set(graph.y) <= {0, 1}
    assert all(0.0 <= value <= 1.0 for point in graph.X for value in point)


@pytest.mark.parametrize("name, rule", [
    ("Simple", lambda x1, x2: x1 < 0.5),
    ("Diag", lambda x1, x2: x1 + x2 < 0.5),
    ("Split", lambda x1, x2: x1 < 0.2 or x1 > 0.8),
    ("Xor", lambda x1, x2: (x1 < 0.5) != (x2 < 0.5)),
    ("Circle", lambda x1, x2: (x1 - 0.5) ** 2 + (x2 - 0.5) ** 2 > 0.1),
])
def test_labels_follow_the_rule(name, rule):
    graph = minitorch.datasets[name](200, seed=7)
    assert graph.y == [int(rule(x1, x2)) for x1, x2 in graph.X]
    assert 0 < sum(graph.y) < 200


def test_spiral_has_balanced_arms():
    graph = minitorch.datasets["Spiral"](101, seed=0)
    assert graph.y.count(0) == 50 and graph.y.count(1) == 51
