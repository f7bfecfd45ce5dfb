"""The full training of chapter 5, ours against PyTorch: `python -m minitorch.gpt`, then the same run in PyTorch.

Ours runs as a learner runs it, the command in a process of its own. PyTorch's run is the twin model of
`tests/test_gpt.py` in another process (torch imported first, so it keeps its own OpenMP runtime), from the
same starting weights, on the same batches, with the same schedule, AdamW groups, clipping and validation
windows. Both print the validation loss every 250 steps; the two curves should agree to about three decimals.
About 5 minutes on two idle cores; run it on an idle machine (`make bench-training`).

    python tools/bench/gpt_training.py [--threads 2] [--steps 2000 --eval-every 250]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path


REPO = Path(__file__).parents[2]
sys.path.insert(0, str(REPO))  # run as a script from anywhere: minitorch from this checkout
VALIDATION = re.compile(r"validation ([0-9.]+) nats")
STEPS = 2000
"`Schedule().steps`, written out: this process imports minitorch only after torch, in `torch_training`."


def torch_training(threads: int, steps: int, eval_every: int) -> None:
    "The PyTorch run of the default model for `steps` steps, printing each validation loss as our command does."
    import numpy as np
    import torch  # before minitorch (which the twin's module imports): PyTorch keeps its own OpenMP runtime
    import torch.nn.functional as F

    torch.set_num_threads(threads)
    sys.path.insert(0, str(REPO / "tests"))  # the twin's module imports its neighbours (`backends`)
    import test_gpt
    from minitorch.gpt import GPT, GPTConfig, Schedule
    from minitorch.text import Vocabulary, shakespeare_plays, split_plays
    from minitorch.adam import lr_schedule, weight_decay_groups

    plays = shakespeare_plays()
    train_plays, valid_plays = split_plays(plays)
    vocab = Vocabulary("".join(plays.values()))
    train_ids, valid_ids = (np.array(vocab.encode("\n".join(part.values())), dtype=np.int64)
                            for part in (train_plays, valid_plays))
    config = GPTConfig(vocab_size=len(vocab))
    schedule = Schedule(steps=steps, warmup_steps=min(Schedule.warmup_steps, steps // 10))  # as the command's
    assert Schedule.steps == STEPS, "update STEPS to the default schedule's"
    ours = GPT(config, seed=0, backend="fast")  # the starting weights `python -m minitorch.gpt` trains from
    twin = test_gpt.torch_gpt(config)
    twin.load_state_dict({name: torch.tensor(p.value.to_numpy()) for name, p in ours.named_parameters()})
    decayed = {id(p) for p in weight_decay_groups(ours, schedule.weight_decay)[0]["params"]}
    decayed_names = {name for name, p in ours.named_parameters() if id(p) in decayed}
    named = dict(twin.named_parameters())
    optimizer = torch.optim.AdamW(
        [{"params": [p for n, p in named.items() if n in decayed_names], "weight_decay": schedule.weight_decay},
         {"params": [p for n, p in named.items() if n not in decayed_names], "weight_decay": 0.0}],
        lr=schedule.lr, betas=(0.9, 0.99))

    def windows(ids: np.ndarray, count: int, rng: np.random.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        "As `minitorch.text.get_batch`: the same draws from the same generator give the same windows."
        starts = rng.integers(0, len(ids) - config.block_size, size=count)
        positions = starts[:, None] + np.arange(config.block_size)
        return torch.tensor(ids[positions]), torch.tensor(ids[positions + 1])

    def loss_of(inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(twin(inputs).reshape(-1, config.vocab_size), targets.reshape(-1))

    valid_rng = np.random.default_rng(1)  # as `fixed_batches`: 8 batches of 32 windows
    valid = [windows(valid_ids, 32, valid_rng) for _ in range(8)]
    rng = np.random.default_rng(0)  # as `train`
    for step in range(schedule.steps):
        for group in optimizer.param_groups:
            group["lr"] = lr_schedule(step, schedule.lr, schedule.warmup_steps, schedule.steps, schedule.lr / 10)
        optimizer.zero_grad()
        loss_of(*windows(train_ids, schedule.batch_size, rng)).backward()
        torch.nn.utils.clip_grad_norm_(twin.parameters(), 1.0)
        optimizer.step()
        if (step + 1) % eval_every == 0 or step + 1 == steps:
            with torch.no_grad():
                print(f"validation {np.mean([loss_of(*batch).item() for batch in valid]):.3f} nats", flush=True)


def timed_run(command: list[str]) -> tuple[float, list[str]]:
    "Seconds from start to end of `command`, and its validation losses; stops on a failure."
    environment = {key: value for key, value in os.environ.items()
                   if key not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, cwd=REPO, env=environment)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} failed:\n{done.stderr[-2000:]}")
    return seconds, VALIDATION.findall(done.stdout)


def main() -> None:
    "Run ours, then PyTorch's, and print both curves with their times."
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--threads", type=int, default=2, help="PyTorch's threads (default 2)")
    options.add_argument("--steps", type=int, default=STEPS, help=f"training steps (default {STEPS})")
    options.add_argument("--eval-every", type=int, default=250, help="steps between validation estimates (default 250)")
    options.add_argument("--torch", action="store_true", help=argparse.SUPPRESS)  # the PyTorch process itself
    args = options.parse_args()
    if args.torch:
        torch_training(args.threads, args.steps, args.eval_every)
        return
    print(f"load average before: {os.getloadavg()[0]:.2f}", flush=True)
    steps = ["--steps", str(args.steps), "--eval-every", str(args.eval_every)]
    with tempfile.TemporaryDirectory() as folder:
        ours_seconds, ours = timed_run([sys.executable, "-m", "minitorch.gpt", "--checkpoint", f"{folder}/gpt.npz", *steps])
    print(f"ours     (python -m minitorch.gpt): {ours_seconds:6.1f} s from start to end; validation {' '.join(ours)}")
    torch_seconds, theirs = timed_run([sys.executable, __file__, "--torch", "--threads", str(args.threads), *steps])
    print(f"PyTorch  ({args.threads} threads, same run):    {torch_seconds:6.1f} s from start to end; "
          f"validation {' '.join(theirs)}")
    print(f"PyTorch takes {torch_seconds / ours_seconds:.2f}x our time; load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
