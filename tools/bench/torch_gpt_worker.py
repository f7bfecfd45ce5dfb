"""The PyTorch side of `benchmark.py`'s GPT row, in a process of its own; the benchmark starts it, not you.

In the benchmark's own process PyTorch would share the libgomp that Numba loaded first, with minitorch's short
spin, and run its step much slower than it does alone (MAINTAINERS, chapter 5). Here torch is imported first and
keeps its own. Arguments: an .npz file of the starting weights (by parameter name, with `decayed`, the names
AdamW decays) and a thread count. Each line on standard input runs one training step; each reply is its loss.

    python tools/bench/torch_gpt_worker.py WEIGHTS.npz THREADS
"""
import sys
from pathlib import Path

import numpy as np
import torch  # before minitorch (which the twin's module imports): PyTorch keeps its own OpenMP runtime
import torch.nn.functional as F

VOCABULARY = 84
"The default model's vocabulary, as in `benchmark.gpt_step_row`."


def main(weights_path: str, threads: int) -> None:
    "Build the PyTorch twin from the saved weights, then run one step per line read."
    torch.set_num_threads(threads)
    tests = Path(__file__).parents[2] / "tests"
    sys.path.insert(0, str(tests))  # the twin's module imports its neighbours (`backends`)
    import test_gpt
    from minitorch.gpt import GPTConfig

    twin = test_gpt.torch_gpt(GPTConfig(vocab_size=VOCABULARY))
    with np.load(weights_path, allow_pickle=False) as saved:
        decayed = set(saved["decayed"].tolist())
        twin.load_state_dict({name: torch.tensor(saved[name]) for name in saved.files if name != "decayed"})
    named = dict(twin.named_parameters())
    optimizer = torch.optim.AdamW([{"params": [p for n, p in named.items() if n in decayed], "weight_decay": 0.1},
                                   {"params": [p for n, p in named.items() if n not in decayed], "weight_decay": 0.0}],
                                  lr=1e-4, betas=(0.9, 0.99))
    ids, targets = (torch.tensor(v) for v in np.random.default_rng(0).integers(0, VOCABULARY, (2, 12, 64)))
    for _ in sys.stdin:
        optimizer.zero_grad()
        loss = F.cross_entropy(twin(ids).reshape(-1, VOCABULARY), targets.reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(twin.parameters(), 1.0)
        optimizer.step()
        print(loss.item(), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
