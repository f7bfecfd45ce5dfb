"""Smoke tests of `draw_graph`: valid SVG, one box per node, deterministic text, any Variable."""
import xml.etree.ElementTree as ElementTree

import pytest

from minitorch import GraphDrawing, Scalar, draw_graph

SVG = "{http://www.w3.org/2000/svg}"


def expression():
    x, y = Scalar(1.5, name="x"), Scalar(-2.0, name="y")
    hidden = (x * y + 1.0).relu() + (x / 3.0).exp()
    return hidden * x


@pytest.mark.task("1.2")
def test_drawing_is_valid_svg_with_a_box_per_node():
    output = expression()
    drawing = draw_graph(output)
    tree = ElementTree.fromstring(drawing.svg)
    assert isinstance(drawing, GraphDrawing) and drawing._repr_svg_() == drawing.svg
    assert len(tree.findall(f"{SVG}rect")) == drawing.node_count == 11
    texts = [text.text for text in tree.iter(f"{SVG}text")]
    assert "x" in texts and "Mul" in texts and "ReLU" in texts and "constant" in texts


@pytest.mark.task("1.2")
def test_same_graph_gives_identical_text():
    assert draw_graph(expression()).svg == draw_graph(expression()).svg


@pytest.mark.task("1.4")
def test_derivatives_appear_after_backward():
    output = expression()
    assert "grad" not in draw_graph(output).svg
    output.backward()
    assert "grad" in draw_graph(output).svg


def edge_paths(drawing):
    return [path.get("d") for path in ElementTree.fromstring(drawing.svg).iter(f"{SVG}path") if path.get("marker-end")]


@pytest.mark.task("1.2")
def test_every_use_of_a_node_gets_its_own_arrow():
    x = Scalar(3.0, name="x")
    paths = edge_paths(draw_graph(x * x * x))
    assert len(paths) == 4 and len(set(paths)) == 4


@pytest.mark.task("1.2")
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
