"""Tests of `draw_graph`: valid SVG, one box per node, deterministic text, any Variable, tensors by shape and summary."""
import xml.etree.ElementTree as ElementTree

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from minitorch import GraphDrawing, Scalar, draw_graph, tensor
from minitorch.graph import BOX_WIDTH, CHAR_WIDTH, SHOWN_VALUES, format_value, node_derivatives, summarise

SVG = "{http://www.w3.org/2000/svg}"


def expression():
    x, y = Scalar(1.5, name="x"), Scalar(-2.0, name="y")
    hidden = (x * y + 1.0).relu() + (x / 3.0).exp()
    return hidden * x


@pytest.mark.task("1.3")
def test_drawing_is_valid_svg_with_a_box_per_node():
    output = expression()
    drawing = draw_graph(output)
    tree = ElementTree.fromstring(drawing.svg)
    assert isinstance(drawing, GraphDrawing) and drawing._repr_svg_() == drawing.svg
    assert len(tree.findall(f"{SVG}rect")) == drawing.node_count == 11
    texts = [text.text for text in tree.iter(f"{SVG}text")]
    assert "x" in texts and "Mul" in texts and "ReLU" in texts and "constant" in texts


@pytest.mark.task("1.3")
def test_same_graph_gives_identical_text():
    assert draw_graph(expression()).svg == draw_graph(expression()).svg


@pytest.mark.task("1.6")
def test_derivatives_appear_after_backward():
    output = expression()
    assert "grad" not in draw_graph(output).svg
    output.backward()
    assert "grad" in draw_graph(output).svg


@pytest.mark.task("1.6")
def test_all_grads_labels_every_node_and_leaves_the_leaves_alone():
    x, y = Scalar(1.5, name="x"), Scalar(-2.0, name="y")
    output = (x * y + 1.0).relu() + (x / 3.0).exp() * x
    output.backward()
    stored = (x.derivative, y.derivative)
    drawing = draw_graph(output, all_grads=True)
    texts = [text.text for text in ElementTree.fromstring(drawing.svg).iter(f"{SVG}text")]
    assert (x.derivative, y.derivative) == stored                    # drawing backpropagates nothing
    for leaf in (x, y):
        assert f"grad {format_value(leaf.derivative)}" in texts
    constants = texts.count("constant")
    assert sum(text.startswith("grad") for text in texts) == drawing.node_count - constants
    assert node_derivatives(output)[output.unique_id] == 1.0


@pytest.mark.task("2.7")
def test_all_grads_on_tensors_match_backward():
    x = tensor([[1.0, -2.0], [3.0, 4.0]], requires_grad=True)
    w = tensor([0.5, -1.0], requires_grad=True)
    total = (x * w).relu().sum()
    total.backward()
    found = node_derivatives(total)
    np.testing.assert_allclose(found[x.unique_id].to_numpy(), x.grad.to_numpy())
    np.testing.assert_allclose(found[w.unique_id].to_numpy(), w.grad.to_numpy())
    texts = tensor_texts(draw_graph(total, all_grads=True))
    assert f"grad (2, 2) norm {np.linalg.norm(x.grad.to_numpy()):.4g}" in texts

def edge_paths(drawing):
    return [path.get("d") for path in ElementTree.fromstring(drawing.svg).iter(f"{SVG}path") if path.get("marker-end")]


@pytest.mark.task("1.3")
def test_every_use_of_a_node_gets_its_own_arrow():
    x = Scalar(3.0, name="x")
    paths = edge_paths(draw_graph(x * x * x))
    assert len(paths) == 4 and len(set(paths)) == 4


@pytest.mark.task("1.3")
def test_edges_that_skip_columns_run_below_the_boxes():
    x, y = Scalar(2.0, name="x"), Scalar(3.0, name="y")
    drawing = draw_graph((x * y + x).relu())
    lanes = [path for path in edge_paths(drawing) if " L" in path]
    assert len(lanes) == 1                                   # only x -> Add skips a column
    before, after = lanes[0].split(" L")
    lane_start = [float(value) for value in before.split()[-1].split(",")]
    lane_end = [float(value) for value in after.split()[0].split(",")]
    assert lane_start[1] == lane_end[1]
    crossed = [rect for rect in ElementTree.fromstring(drawing.svg).iter(f"{SVG}rect")
               if lane_start[0] < float(rect.get("x")) < lane_end[0]]
    assert crossed and all(float(rect.get("y")) + float(rect.get("height")) < lane_start[1] for rect in crossed)


class TensorLike:
    "A Variable with `.grad` and a non-float `.data`, as chapter 2's tensors will have."

    def __init__(self, unique_id, parents=()):
        self.unique_id, self.parents, self.data, self.grad = unique_id, parents, [[1.0, 2.0]], None

    def is_leaf(self):
        return not self.parents

    def is_constant(self):
        return False


def test_any_variable_can_be_drawn():
    leaf = TensorLike(1)
    leaf.grad = [[0.5, 0.5]]
    drawing = draw_graph(TensorLike(2, (leaf, leaf)))
    assert drawing.node_count == 2 and "grad [[0.5, 0.5]]" in drawing.svg and "data [[1.0, 2.0]]" in drawing.svg


def test_large_graphs_are_refused_with_the_count():
    leaf = TensorLike(0)
    node = leaf
    for index in range(1, 10):
        node = TensorLike(index, (node,))
    with pytest.raises(ValueError, match="10 nodes, more than max_nodes=5"):
        draw_graph(node, max_nodes=5)


def tensor_texts(drawing):
    return [text.text for text in ElementTree.fromstring(drawing.svg).iter(f"{SVG}text")]


@pytest.mark.task("2.7")
def test_tensors_are_drawn_by_shape_summary_and_gradient_norm():
    x = tensor(np.arange(6.0).reshape(2, 3) - 2.0, requires_grad=True)
    w = tensor([0.5, -1.0, 2.0], requires_grad=True)
    x.name, w.name = "x", "w"
    total = (x * w).sum()
    assert "grad" not in draw_graph(total).svg
    total.backward()
    texts = tensor_texts(draw_graph(total))
    assert "data None" not in texts and {"x", "w", "Mul", "View", "Sum"} <= set(texts)
    assert "shape (2, 3)" in texts and "shape (3,)" in texts and "shape (6,)" in texts and "shape (1,)" in texts
    assert "data min -2 mean 0.5 max 3" in texts and "data [0.5, -1, 2]" in texts
    x_grad, w_grad = x.grad.to_numpy(), w.grad.to_numpy()
    assert f"grad (2, 3) norm {np.linalg.norm(x_grad):.4g}" in texts
    assert f"grad (3,) norm {np.linalg.norm(w_grad):.4g}" in texts
    assert "grad [" + ", ".join(f"{value:.3g}" for value in w_grad) + "]" in texts


def boxes(drawing):
    "(left, width, text lines) of every box, in drawing order."
    found = []
    for element in ElementTree.fromstring(drawing.svg):
        if element.tag == f"{SVG}rect":
            found.append((float(element.get("x")), float(element.get("width")), []))
        elif element.tag == f"{SVG}text":
            found[-1][2].append(element.text)
    return found


@pytest.mark.task("2.7")
def test_tensor_constants_are_drawn_and_boxes_fit_their_text():
    x = tensor([[1.0, -2.0], [3.0, 4.0]], requires_grad=True)
    drawing = draw_graph((x * 2.0 + 1.0).relu().mean())
    texts = tensor_texts(drawing)
    assert texts.count("constant") == 3 and drawing.node_count == 10
    drawn = boxes(drawing)
    assert all(width >= max(map(len, lines)) * CHAR_WIDTH for _, width, lines in drawn)
    widths_by_left = {}
    for left, width, _ in drawn:
        widths_by_left.setdefault(left, set()).add(width)
    assert all(len(widths) == 1 for widths in widths_by_left.values())       # one width per column
    assert min(width for _, width, _ in drawn) < max(width for _, width, _ in drawn)  # columns differ


def test_scalar_boxes_keep_their_width():
    assert {width for _, width, _ in boxes(draw_graph(expression()))} == {BOX_WIDTH}


@given(st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=40))
def test_summary_lists_few_values_and_describes_many(values):
    array = np.array(values)
    text = summarise(array)
    if len(values) <= SHOWN_VALUES:
        assert [float(part) for part in text.strip("[]").split(", ")] == pytest.approx(values, rel=5e-3, abs=1e-300)
    else:
        words = text.split()
        assert words[0::2] == ["min", "mean", "max"]
        low, mean, high = (float(word) for word in words[1::2])
        assert low == pytest.approx(array.min(), rel=5e-3) and high == pytest.approx(array.max(), rel=5e-3)
        assert mean == pytest.approx(array.mean(), rel=5e-3, abs=1e-9 * np.abs(array).max())
