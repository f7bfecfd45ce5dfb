"""The module tree: registration, dotted names, train/eval, errors; a Parameter acting as its value (against
torch where it imports); a parameter shared by two paths listed once."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minitorch
from minitorch import Module, Parameter, tensor


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


def test_a_missing_name_is_named_with_the_value_kind():
    "A name neither the Parameter nor its value has: an AttributeError naming both; copies stay Parameters."
    import copy
    import pickle

    weight = minitorch.Linear(3, 2).weight
    with pytest.raises(AttributeError, match=r"^neither 'Parameter' nor its value, a Tensor, has an attribute 'nope'$"):
        weight.nope
    assert not hasattr(Parameter(1.5), "grad") and not hasattr(Parameter(), "shape")
    duplicate = copy.deepcopy(weight)
    assert type(duplicate) is Parameter and duplicate.shape == (2, 3) and duplicate.value is not weight.value
    restored = pickle.loads(pickle.dumps(Parameter(0.5, "gain")))
    assert restored.value == 0.5 and restored.name == "gain"


def test_writes_go_to_the_value_unless_the_parameter_owns_the_name():
    "p.grad = ..., p.requires_grad = ... set the tensor's; name, value and new names are the Parameter's own."
    parameter = Parameter(tensor([1.0, 2.0]), "w")
    parameter.grad = tensor([3.0, 4.0])
    assert parameter.value.grad is parameter.grad and parameter.grad.tolist() == [3.0, 4.0]
    parameter.requires_grad = False
    assert not parameter.value.requires_grad and not parameter.requires_grad
    parameter.grad = None
    assert parameter.value.grad is None
    parameter.no_decay = True   # a name the tensor lacks: the Parameter's, so it outlives update()
    parameter.update(tensor([0.0]))
    assert parameter.no_decay and not hasattr(parameter.value, "no_decay")
    assert parameter.name == "w" == parameter.value.name and parameter.requires_grad


def test_parameters_hash_by_identity_and_compare_by_value():
    "As PyTorch's: hash by identity (optimisers key state on them, sets hold them), `==` and `!=` elementwise."
    first, second = Parameter(tensor([1.0, 2.0])), Parameter(tensor([1.0, 3.0]))
    assert (first == second).tolist() == [1.0, 0.0] and (first != second).tolist() == [0.0, 1.0]
    assert (first == tensor([1.0, 2.0])).tolist() == [1.0, 1.0] == (tensor([1.0, 2.0]) == first).tolist()
    assert hash(first) == object.__hash__(first) and len({first, second, first}) == 2
    assert second not in {first} and {first: "state"}[first] == "state"
    assert Parameter(0.5) == 0.5 and Parameter(0.5) != Parameter(0.25) and len({Parameter(0.5), Parameter(0.5)}) == 2


SIDES = {
    "p @ x": lambda p, x: p @ x,
    "x @ p": lambda p, x: x @ p,
    "p.T @ x": lambda p, x: p.T @ x,
    "p[ids]": lambda p, x: p[tensor([len(p) - 1, 0, 0], dtype=minitorch.int64)],
    "p[1:] and p[0]": lambda p, x: p[1:].sum() + p[0],
    "p.expand": lambda p, x: p[:1].expand((3, p.shape[1])) * 1.0,
    "p * 2 + 2 * p - x / p": lambda p, x: p * 2 + 2 * p - x / (p * p + 1) + 1 / (p * p + 1),
    "x - p, x * p, p ** 2, 2 ** p": lambda p, x: (x - p) * (x * p) + p ** 2 + 2 ** p + x ** Parameter(2.0) * p,
    "-p, abs(p), comparisons": lambda p, x: -p + abs(p) * (p < x) + (x <= p) * p + (p > 0) * (p >= x) * (p == x) * p,
    "methods": lambda p, x: p.exp() + p.sigmoid() + p.relu() + p.sum(1) * p.mean() + p.view(p.numel()).sum(),
    "functions": lambda p, x: minitorch.Exp.apply(p) + minitorch.where(p > 0, p, 0.0) + minitorch.tanh(p),
}


@pytest.mark.task("2.7")
@settings(max_examples=20)
@given(st.integers(1, 4), st.sampled_from(sorted(SIDES)), st.integers(0, 2**16))
def test_a_parameter_acts_as_its_tensor_with_the_same_gradient(size, use, seed):
    "Every use of a Parameter (either side of an operator, its methods, indexing, functions) is that of its tensor."
    values, other = np.random.default_rng(seed).normal(size=(2, size, size))
    parameter = Parameter(tensor(values))
    plain = tensor(values, requires_grad=True)
    x = tensor(other)
    ours, expected = SIDES[use](parameter, x), SIDES[use](plain, x)
    np.testing.assert_array_equal(ours.to_numpy(), expected.to_numpy())
    ours.sum().backward()
    expected.sum().backward()
    assert parameter.grad is parameter.value.grad
    np.testing.assert_array_equal(parameter.grad.to_numpy(), plain.grad.to_numpy())
    assert parameter.numel() == size * size and parameter.shape == (size, size) and parameter.dim() == 2
    assert len(parameter) == size and parameter.dtype == minitorch.float64 and parameter.requires_grad


def tiny_loss(model, x, ids):
    "The loss of a model written as PyTorch code: its parameters used as tensors."
    hidden = (x @ model.weight) * model.logits[ids] + 2 * model.weight[0]
    return (hidden @ model.weight.T).exp().sum() / model.weight.numel()


@pytest.mark.task("2.7")
def test_a_module_using_its_parameters_as_tensors_matches_torch():
    "Forward and backward of `x @ self.weight`, `self.logits[ids]`, `self.weight.T`: torch's loss and gradients."
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    weight, logits, x = rng.normal(size=(3, 4)) * 0.3, rng.normal(size=(5, 4)), rng.normal(size=(2, 3))
    ids = [4, 1]
    ours, theirs = Module(), torch.nn.Module()
    ours.weight, ours.logits = Parameter(tensor(weight)), Parameter(tensor(logits))
    theirs.weight, theirs.logits = torch.nn.Parameter(torch.tensor(weight)), torch.nn.Parameter(torch.tensor(logits))
    loss = tiny_loss(ours, tensor(x), tensor(ids, dtype=minitorch.int64))
    their_loss = tiny_loss(theirs, torch.tensor(x), torch.tensor(ids))
    loss.backward()
    their_loss.backward()
    np.testing.assert_allclose(loss.item(), their_loss.item(), rtol=1e-12)
    for name in ("weight", "logits"):
        ours_parameter, their_parameter = getattr(ours, name), getattr(theirs, name)
        assert ours_parameter.grad is ours_parameter.value.grad
        np.testing.assert_allclose(ours_parameter.grad.to_numpy(), their_parameter.grad.numpy(), rtol=1e-10)
    assert [name for name, _ in ours.named_parameters()] == [name for name, _ in theirs.named_parameters()]


@pytest.mark.task("2.7")
def test_in_place_updates_keep_the_parameter_registered_in_its_place():
    "`self.weight -= lr * self.weight.grad` under no_grad changes the tensor in place; the Parameter stays, in its place."
    model = Module()
    model.weight, model.bias = Parameter(tensor([1.0, 2.0])), Parameter(tensor([0.5]))
    weight, tensor_before = model.weight, model.weight.value
    (model.weight * model.weight).sum().backward()
    with minitorch.no_grad():
        model.weight -= 0.5 * model.weight.grad
        model.bias += 1.0
    assert model.weight is weight and weight.value is tensor_before and weight.tolist() == [0.0, 0.0]
    assert model.bias.tolist() == [1.5] and [name for name, _ in model.named_parameters()] == ["weight", "bias"]
    with pytest.raises(RuntimeError, match="x -= y changes x in place"):
        model.weight -= 1.0   # recording history: refused, as PyTorch refuses


@pytest.mark.task("1.6")
def test_scalar_parameters_act_as_their_scalars():
    "Chapter 1's parameters: `p.value` and `update` as before; the Scalar's operators and names through `p`."
    from minitorch import Scalar
    parameter = Parameter(Scalar(2.0))
    product = 3 * parameter * parameter + parameter
    product.backward()
    assert product.data == 14.0 and parameter.derivative == parameter.value.derivative == 13.0
    assert parameter.data == 2.0 and float(parameter) == 2.0 and (parameter * 1.0).data == 2.0
    parameter.update(Scalar(1.0))
    assert parameter.value.data == 1.0 and parameter.derivative is None and parameter.value.history is not None


def torch_twin(module: Module, torch, made: dict | None = None):
    "A torch.nn.Module tree with the same paths, a torch Parameter for each of ours (one for a shared one)."
    made = {} if made is None else made
    twin = torch.nn.Module()
    for name, parameter in module._parameters.items():
        made.setdefault(parameter, torch.nn.Parameter(torch.tensor(float(parameter.value))))
        twin.register_parameter(name, made[parameter])
    for name, child in module._modules.items():
        twin.add_module(name, torch_twin(child, torch, made))
    return twin


PATHS = ["branch.gain", "branch.left.weight", "branch.left.bias", "branch.right.weight", "branch.right.bias",
         "head.weight", "head.bias"]
"Root's parameter paths, written out: computing them at import would need task 0.4 before any test could be collected."


def located(root, path: str):
    "The module that holds `path`'s last name, and that name."
    *parents, name = path.split(".")
    for parent in parents:
        root = getattr(root, parent)
    return root, name


@pytest.mark.task("0.4")
def test_a_parameter_under_two_paths_is_listed_once():
    "Tied weights (`self.lm_head.weight = self.wte.weight`): once, under the first path; every path on request."
    root = Root()
    assert [name for name, _ in root.named_parameters()] == PATHS
    root.head.weight = root.branch.left.weight
    assert [name for name, _ in root.named_parameters()] == ["branch.gain", "branch.left.weight", "branch.left.bias",
                                                             "branch.right.weight", "branch.right.bias", "head.bias"]
    assert [name for name, _ in root.named_parameters(remove_duplicate=False)][-2:] == ["head.weight", "head.bias"]
    assert len(root.parameters()) == 6 and len(set(root.parameters())) == 6


@pytest.mark.task("0.4")
@settings(max_examples=40)
@given(st.lists(st.tuples(st.sampled_from(PATHS), st.sampled_from(PATHS)), max_size=5))
def test_tied_parameters_are_listed_as_torch_lists_them(ties):
    "After any ties (`target = source`, one after another), the paths of torch's named_parameters, either way."
    torch = pytest.importorskip("torch")
    ours = Root()
    theirs = torch_twin(ours, torch)
    for source, target in ties:
        for root in (ours, theirs):
            module, name = located(root, target)
            setattr(module, name, getattr(*located(root, source)))
    for remove_duplicate in (True, False):
        assert [name for name, _ in ours.named_parameters(remove_duplicate=remove_duplicate)] == \
            [name for name, _ in theirs.named_parameters(remove_duplicate=remove_duplicate)]
    assert len(ours.parameters()) == len(list(theirs.parameters()))


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
