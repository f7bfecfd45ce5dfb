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
