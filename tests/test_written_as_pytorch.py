"""Code written for PyTorch runs on minitorch: Karpathy's makemore (parts 1 and 2) as a PyTorch user writes it, with
`import minitorch as torch`, `from minitorch.nn import functional as F`, and `seed=` for PyTorch's `generator=`
(README, "Coming from PyTorch"); and a GPT in nanoGPT's layout, run on both and compared."""
import math

import numpy as np
import pytest

import minitorch as torch
from minitorch.nn import functional as F

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
        xenc = F.one_hot(xs, num_classes=V).double()   # makemore: .float(), its default float; ours is float64
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


@pytest.mark.task("5.6")
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


# --- a GPT written for PyTorch (nanoGPT's layout, our own code), run on minitorch and on PyTorch ---------------

def gpt_written_for(torch, nn, F):
    "A GPT class written against `torch`, `torch.nn` and `torch.nn.functional`, whichever modules are passed in."

    class SelfAttention(nn.Module):
        def __init__(self, n_embd, n_head, block_size):
            super().__init__()
            self.c_attn = nn.Linear(n_embd, 3 * n_embd)
            self.c_proj = nn.Linear(n_embd, n_embd)
            self.n_head = n_head
            mask = torch.tril(torch.ones(block_size, block_size)).view(1, 1, block_size, block_size)
            self.register_buffer("bias", mask)

        def forward(self, x):
            B, T, C = x.size()
            q, k, v = self.c_attn(x).split(C, dim=2)
            q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
            y = F.softmax(att, dim=-1) @ v
            return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))

    class Block(nn.Module):
        def __init__(self, n_embd, n_head, block_size):
            super().__init__()
            self.ln_1, self.ln_2 = nn.LayerNorm(n_embd), nn.LayerNorm(n_embd)
            self.attn = SelfAttention(n_embd, n_head, block_size)
            self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(), nn.Linear(4 * n_embd, n_embd))

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class GPT(nn.Module):
        def __init__(self, vocab_size, block_size, n_layer, n_head, n_embd):
            super().__init__()
            self.block_size = block_size
            self.transformer = nn.ModuleDict(dict(
                wte=nn.Embedding(vocab_size, n_embd), wpe=nn.Embedding(block_size, n_embd),
                h=nn.ModuleList([Block(n_embd, n_head, block_size) for _ in range(n_layer)]),
                ln_f=nn.LayerNorm(n_embd)))
            self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
            self.transformer.wte.weight = self.lm_head.weight   # tied
            self.apply(self._init_weights)

        def _init_weights(self, module):
            if isinstance(module, (nn.Linear, nn.Embedding)):
                torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if isinstance(module, nn.Linear) and module.bias is not None:
                torch.nn.init.zeros_(module.bias)

        def forward(self, idx, targets=None):
            b, t = idx.size()
            pos = torch.arange(0, t, dtype=torch.long)
            x = self.transformer.wte(idx) + self.transformer.wpe(pos)
            for block in self.transformer.h:
                x = block(x)
            logits = self.lm_head(self.transformer.ln_f(x))
            if targets is None:
                return logits, None
            return logits, F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)

        def configure_optimizers(self, weight_decay, learning_rate, betas):
            params = {name: p for name, p in self.named_parameters() if p.requires_grad}
            groups = [{"params": [p for p in params.values() if p.dim() >= 2], "weight_decay": weight_decay},
                      {"params": [p for p in params.values() if p.dim() < 2], "weight_decay": 0.0}]
            return torch.optim.AdamW(groups, lr=learning_rate, betas=betas)

        @torch.no_grad()
        def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None):
            for _ in range(max_new_tokens):
                idx_cond = idx if idx.size(1) <= self.block_size else idx[:, -self.block_size:]
                logits, _ = self(idx_cond)
                logits = logits[:, -1, :] / temperature
                if top_k is not None:
                    v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
                    logits[logits < v[:, [-1]]] = -float("Inf")
                probs = F.softmax(logits, dim=-1)
                idx = torch.cat((idx, torch.multinomial(probs, num_samples=1)), dim=1)
            return idx

    return GPT


@pytest.mark.parametrize("dtype, tolerance", [("float64", 1e-10), ("float32", 1e-4)])
def test_a_gpt_written_for_pytorch_gives_pytorchs_numbers(fast_default_backend, dtype, tolerance):
    real = pytest.importorskip("torch")
    import minitorch.nn.functional as ours_F
    sizes = dict(vocab_size=11, block_size=8, n_layer=2, n_head=2, n_embd=16)
    torch.manual_seed(0)
    ours = gpt_written_for(torch, torch.nn, ours_F)(**sizes)
    theirs = gpt_written_for(real, real.nn, real.nn.functional)(**sizes)
    names = [name for name, _ in ours.named_parameters()]
    assert names == [name for name, _ in theirs.named_parameters()] and "lm_head.weight" not in names   # tied: once
    if dtype == "float32":
        ours, theirs = ours.float(), theirs.float()
    else:
        ours, theirs = ours.double(), theirs.double()
    theirs.load_state_dict({name: real.tensor(value.to_numpy()) for name, value in ours.state_dict().items()})   # in dtype
    rng = np.random.default_rng(1)
    idx, targets = rng.integers(0, 11, size=(3, 8)), rng.integers(0, 11, size=(3, 8))
    optimizers = [model.configure_optimizers(0.1, 1e-2, (0.9, 0.99)) for model in (ours, theirs)]
    for step in range(2):
        for optimizer in optimizers:
            optimizer.zero_grad(set_to_none=True)
        (logits, loss), (their_logits, their_loss) = ours(torch.tensor(idx), torch.tensor(targets)), \
            theirs(real.tensor(idx), real.tensor(targets))
        np.testing.assert_allclose(logits.detach().numpy(), their_logits.detach().numpy(), rtol=tolerance, atol=tolerance)
        assert abs(loss.item() - their_loss.item()) < tolerance
        loss.backward()
        their_loss.backward()
        for (name, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
            np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=tolerance, atol=tolerance, err_msg=name)
        for optimizer in optimizers:
            optimizer.step()
    start = torch.tensor([[1, 2]])
    greedy = ours.generate(start, 5, top_k=1).tolist()   # top-k of 1: no randomness left
    assert greedy == theirs.generate(real.tensor([[1, 2]]), 5, top_k=1).tolist() and len(greedy[0]) == 7
    assert ours.generate(start, 3, temperature=0.8, top_k=3).shape == (1, 5)
