"""The module tree: registration, dotted names, train/eval, errors."""
import pytest

from minitorch import Module, Parameter


class Leaf(Module):
    def __init__(self):
        super().__init__()
        self.weight = Parameter(1.0)
        self.bias = Parameter(0.0)


class Branch(Module):
    def __init__(self):
        super().__init__()
        self.left = Leaf()
        self.right = Leaf()
        self.gain = Parameter(2.0)


class Root(Module):
    def __init__(self):
        super().__init__()
        self.branch = Branch()
        self.head = Leaf()

    def forward(self, x):
        return x + 1


@pytest.mark.task("0.4")
def test_named_parameters_use_dotted_paths():
    names = [name for name, _ in Root().named_parameters()]
    assert names == ["branch.gain", "branch.left.weight", "branch.left.bias", "branch.right.weight",
                     "branch.right.bias", "head.weight", "head.bias"]
    assert len(Root().parameters()) == 7


@pytest.mark.task("0.4")
def test_modules_lists_every_descendant():
    root = Root()
    assert root.modules() == [root.branch, root.branch.left, root.branch.right, root.head]
    assert root.children() == [root.branch, root.head]


@pytest.mark.task("0.4")
def test_train_and_eval_reach_every_module():
    root = Root()
    assert root.eval() is root
    assert not any(module.training for module in [root, *root.modules()])
    root.train()
    assert all(module.training for module in [root, *root.modules()])


def test_reassignment_moves_between_registries():
    root = Root()
    root.head = Parameter(3.0)
    assert "head" not in root._modules and root.head.value == 3.0
    root.head = 5
    assert "head" not in root._parameters and root.head == 5


def test_add_parameter_and_call():
    module = Root()
    parameter = module.add_parameter("extra", 4.0)
    assert module.extra is parameter and parameter.name == "extra"
    assert module(1) == 2


def test_missing_attribute_raises_with_name():
    with pytest.raises(AttributeError, match="nonexistent"):
        Root().nonexistent


def test_forward_must_be_defined():
    with pytest.raises(NotImplementedError, match="Leaf"):
        Leaf()(1.0)


def test_repr_shows_the_tree():
    text = repr(Root())
    assert text.splitlines()[0] == "Root(" and "(branch): Branch(" in text and "(left): Leaf()" in text


@pytest.mark.task("1.7")
def test_zero_grad_clears_every_parameter_of_the_tree():
    "model.zero_grad() forgets the gradients of every parameter, in children too, as torch.nn.Module.zero_grad."
    from minitorch import Scalar
    model = Root()
    for parameter in model.parameters():
        parameter.update(Scalar(parameter.value))
    total = sum((parameter.value * parameter.value for parameter in model.parameters()), Scalar(0.0))
    total.backward()
    assert all(parameter.value.derivative is not None for parameter in model.parameters())
    model.zero_grad()
    assert all(parameter.value.derivative is None for parameter in model.parameters())
    assert len(model.parameters()) == 7


def test_apply_visits_every_module_children_first():
    "model.apply(fn) calls fn on each module of the tree, children before their parent, as torch.nn.Module.apply."
    torch = pytest.importorskip("torch")
    ours, theirs = [], []
    root = Root()
    assert root.apply(lambda module: ours.append(type(module).__name__)) is root
    twin = torch.nn.Module()
    twin.branch = torch.nn.Module()
    twin.branch.left, twin.branch.right, twin.head = torch.nn.Module(), torch.nn.Module(), torch.nn.Module()
    twin.apply(lambda module: theirs.append(module))
    assert len(ours) == len(theirs) == 5
    assert ours == ["Leaf", "Leaf", "Branch", "Leaf", "Root"]
    assert [id(module) for module in theirs].index(id(twin.branch)) == 2 and theirs[-1] is twin


def test_a_tensor_attribute_asked_of_a_parameter_points_to_value():
    "PyTorch's `p.grad` on our Parameter (which holds a tensor in `.value`) says to write `p.value.grad`."
    import copy

    import minitorch
    weight = minitorch.Linear(3, 2).weight
    for name in ("grad", "shape", "numel"):
        with pytest.raises(AttributeError, match=rf"write p\.value\.{name}, not p\.{name}$"):
            getattr(weight, name)
    with pytest.raises(AttributeError, match=r"^'Parameter' object has no attribute 'no_such_name'$"):
        weight.no_such_name
    assert not hasattr(weight, "grad") and copy.deepcopy(weight).value.shape == (2, 3)   # (out, in), as PyTorch


def test_reassigning_a_name_in_its_own_registry_keeps_its_place():
    "As PyTorch: a parameter (or child) re-assigned under its name keeps its place in the walk."
    leaf = Leaf()
    leaf.weight = Parameter(5.0)
    assert [name for name, _ in leaf.named_parameters()] == ["weight", "bias"] and leaf.weight.value == 5.0
    root = Root()
    root.branch = Branch()
    assert root.children() == [root.branch, root.head]


def test_a_parameter_replaces_a_plain_attribute_of_the_same_name():
    "A plain attribute, then a Parameter under its name: the Parameter is what the name gives."
    module = Module()
    module.scale = 1.0
    module.scale = Parameter(2.0)
    assert isinstance(module.scale, Parameter) and module.scale.value == 2.0 and "scale" not in module.__dict__
