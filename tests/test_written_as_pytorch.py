"""Code written for PyTorch runs on minitorch: Karpathy's makemore (parts 1 and 2) as a PyTorch user writes it, with
`import minitorch as torch`, `F = minitorch.nn`, and `seed=` for PyTorch's `generator=` (MAINTAINERS, "Using the package")."""
import math

import numpy as np
import pytest

import minitorch as torch
import minitorch.nn as F

nn = torch.nn
WORDS = ["emma", "olivia", "ava", "isabella", "sophia", "mia", "charlotte", "amelia", "harper", "evelyn", "abigail",
         "emily", "ella", "liam", "noah", "oliver", "elijah", "james", "william", "benjamin", "lucas", "henry"]


def vocabulary() -> tuple[dict[str, int], dict[int, str]]:
    "makemore's stoi and itos: '.' is 0, the letters 1 to 26."
    chars = sorted(set("".join(WORDS)))
    stoi = {s: i + 1 for i, s in enumerate(chars)} | {".": 0}
    return stoi, {i: s for s, i in stoi.items()}


@pytest.mark.task("2.7")
def test_makemore_part_1_the_bigram_network():
    stoi, _ = vocabulary()
    xs, ys = [], []
    for w in WORDS:
        chs = ["."] + list(w) + ["."]
        for ch1, ch2 in zip(chs, chs[1:]):
            xs.append(stoi[ch1])
            ys.append(stoi[ch2])
    xs, ys = torch.tensor(xs, dtype=torch.int64), torch.tensor(ys, dtype=torch.int64)
    g = np.random.default_rng(2147483647)
    V = len(stoi)
    W = torch.randn((V, V), seed=g, requires_grad=True)
    losses = []
    for _ in range(20):
        xenc = torch.one_hot(xs, num_classes=V)
        logits = xenc @ W
        counts = logits.exp()
        probs = counts / counts.sum(1, keepdim=True)
        loss = -probs[torch.arange(xs.numel()), ys].log().mean() + 0.01 * (W ** 2).mean()
        W.grad = None
        loss.backward()
        W.data += -50 * W.grad
        losses.append(loss.item())
    assert losses[-1] < losses[0] - 0.5 and math.isfinite(losses[-1])


@pytest.mark.task("4.4")
def test_makemore_part_2_the_mlp():
    stoi, itos = vocabulary()
    X, Y = [], []
    for w in WORDS:
        context = [0] * 3
        for ch in w + ".":
            X.append(context)
            Y.append(stoi[ch])
            context = context[1:] + [stoi[ch]]
    X, Y = torch.tensor(X, dtype=torch.int64), torch.tensor(Y, dtype=torch.int64)
    g = np.random.default_rng(2147483647)
    C = torch.randn((27, 10), seed=g)
    W1 = torch.randn((30, 32), seed=g) * (5 / 3) / 30 ** 0.5   # makemore's 200 hidden units, fewer: the simple backend
    b1 = torch.randn(32, seed=g) * 0.01
    W2 = torch.randn((32, 27), seed=g) * 0.01
    b2 = torch.zeros(27)
    parameters = [C, W1, b1, W2, b2]
    for p in parameters:
        p.requires_grad = True
    lrs = 10 ** torch.linspace(-3, 0, 1000)
    assert math.isclose(lrs.tolist()[0], 1e-3) and math.isclose(lrs.tolist()[-1], 1.0)

    def batch_loss(ix):
        emb = C[X[ix]]
        h = torch.tanh(emb.view(-1, 30) @ W1 + b1)
        return F.cross_entropy(h @ W2 + b2, Y[ix])

    fixed = torch.arange(32)
    first = batch_loss(fixed).item()
    for _ in range(25):
        loss = batch_loss(torch.randint(0, X.shape[0], (32,), seed=g))
        for p in parameters:
            p.grad = None
        loss.backward()
        for p in parameters:
            p.data += -0.1 * p.grad
    assert batch_loss(fixed).item() < first - 0.3
    out, context = [], [0] * 3
    with torch.no_grad():
        while len(out) < 20:
            h = torch.tanh(C[torch.tensor([context], dtype=torch.int64)].view(1, -1) @ W1 + b1)
            probs = F.softmax(h @ W2 + b2, dim=1)
            ix = torch.multinomial(probs, num_samples=1, seed=g).item()
            context = context[1:] + [ix]
            out.append(ix)
            if ix == 0:
                break
    assert all(i in itos for i in out)


@pytest.mark.task("5.7")
def test_a_module_written_as_pytorch():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(5, 4)
            self.blocks = nn.ModuleList([nn.Linear(4, 4, seed=layer) for layer in range(2)])
            self.ln = nn.LayerNorm(4)

        def forward(self, ids):
            x = self.emb(ids)
            for block in self.blocks:
                x = block(x).relu()
            return self.ln(x)

    net = Net()
    kinds = []
    net.apply(lambda module: kinds.append(type(module).__name__))
    assert kinds[-1] == "Net" and kinds.count("Linear") == 2
    optimizer = torch.AdamW(net.parameters(), lr=1e-3)
    optimizer.zero_grad(set_to_none=True)
    net(torch.tensor([[1, 2]], dtype=torch.int64)).sum().backward()
    optimizer.step()
    assert net.float().ln.weight.dtype == torch.float32   # a Parameter acts as its tensor
