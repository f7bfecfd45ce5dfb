"""The training program of 45_mnist_train: the command end to end, its checkpoints, its options, and its parts."""
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from minitorch import Adam
from minitorch.checkpoint import load_checkpoint
from minitorch.mnist_train import batches, build_model, confusion_matrix, load_splits, main, predict, train_step
from minitorch.scalar_train import accuracy

pytestmark = pytest.mark.usefixtures("fast_default_backend")   # as the chapter's notebooks set it

ROOT = Path(__file__).resolve().parent.parent
EPOCH_LINE = re.compile(r"^epoch (\d+)/(\d+): [\d.]+ s, training loss [\d.]+, validation accuracy ([\d.]+)$")


def run_command(*options: str) -> subprocess.CompletedProcess:
    "`python -m minitorch.mnist_train` with `options`, from the repository root."
    return subprocess.run([sys.executable, "-m", "minitorch.mnist_train", *options], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)


@pytest.mark.task("4.9")
@pytest.mark.parametrize("model", ["lenet", "mlp"])
def test_command_trains_and_its_checkpoint_predicts_the_same(tmp_path, model):
    checkpoint = tmp_path / f"{model}.npz"
    result = run_command("--dataset", "digits", "--model", model, "--epochs", "2", "--batch-size", "32",
                         "--lr", "0.005", "--checkpoint", str(checkpoint))
    assert result.returncode == 0, result.stderr[-2000:]
    lines = result.stdout.strip().splitlines()
    epochs = [EPOCH_LINE.match(line) for line in lines if line.startswith("epoch ")]
    assert [match.group(1, 2) for match in epochs] == [("1", "2"), ("2", "2")]
    best = float(re.fullmatch(r"best validation accuracy: ([\d.]+)", lines[-1]).group(1))
    assert best == max(float(match.group(3)) for match in epochs) and best > 0.5
    _, valid = load_splits("digits")
    reloaded = load_checkpoint(checkpoint, build_model(model, 8, seed=123))
    assert round(accuracy(predict(reloaded, valid.images), valid.labels), 4) == best


@pytest.mark.parametrize("options, message", [
    (["--epochs", "0"], "--epochs: expected a positive int, got '0'"),
    (["--batch-size", "ten"], "--batch-size: expected a positive int, got 'ten'"),
    (["--lr", "-0.1"], "--lr: expected a positive float, got '-0.1'"),
    (["--dataset", "cifar"], "--dataset: invalid choice: 'cifar'"),
    (["--model", "resnet"], "--model: invalid choice: 'resnet'"),
    (["--backend", "tpu"], "--backend: invalid choice: 'tpu'"),
    (["--checkpoint", "/no/such/folder/model.npz"], "--checkpoint: folder '/no/such/folder' does not exist"),
    (["--checkpoint", "/"], "--checkpoint: '/' is a folder"),
])
def test_bad_options_stop_with_a_message_naming_them(capsys, options, message):
    with pytest.raises(SystemExit) as stopped:
        main(["--dataset", "digits", *options])
    assert stopped.value.code == 2
    assert message in capsys.readouterr().err


def test_errors_while_running_end_in_one_line(capsys, monkeypatch):
    "A failure the user can cause after the options are read (here the backend refusing) is one line, exit 2."
    import minitorch.mnist_train as program

    def no_gpu(name):
        raise program.CudaUnavailableError("minitorch's CUDA backend needs a CUDA GPU")
    monkeypatch.setattr(program, "backend", no_gpu)
    with pytest.raises(SystemExit) as stopped:
        main(["--dataset", "digits", "--limit", "40"])
    error = capsys.readouterr().err
    assert stopped.value.code == 2 and error == "python -m minitorch.mnist_train: error: minitorch's CUDA backend needs a CUDA GPU\n"


def test_unknown_names_raise_clear_errors():
    with pytest.raises(ValueError, match="dataset must be one of .*'cifar'"):
        load_splits("cifar")
    with pytest.raises(ValueError, match="model must be one of .*'resnet'"):
        build_model("resnet", 28)


def test_splits_are_standardised_with_training_statistics():
    train, valid = load_splits("digits", limit=400)
    assert train.images.shape == (400, 1, 8, 8) and valid.images.shape == (100, 1, 8, 8)
    assert abs(train.images.mean()) < 1e-9 and abs(train.images.std() - 1.0) < 1e-9
    assert len(train.labels) == 400 and set(train.labels) <= set(range(10))


@pytest.mark.parametrize("name, image_size", [("lenet", 28), ("lenet", 8), ("mlp", 28), ("mlp", 8)])
def test_models_give_ten_scores_per_image(name, image_size):
    images = np.random.default_rng(0).normal(size=(3, 1, image_size, image_size))
    assert predict(build_model(name, image_size), images, batch_size=2).shape == (3,)


@given(st.integers(1, 50), st.integers(1, 20), st.integers(0, 3))
def test_batches_cover_every_index_once(count, batch_size, seed):
    parts = list(batches(count, batch_size, np.random.default_rng(seed)))
    assert sorted(np.concatenate(parts).tolist()) == list(range(count))
    assert all(len(part) == batch_size for part in parts[:-1]) and 1 <= len(parts[-1]) <= batch_size


@given(st.lists(st.tuples(st.integers(0, 9), st.integers(0, 9)), min_size=1, max_size=40))
def test_confusion_matrix_counts_every_pair(pairs):
    labels, predictions = (np.array(column) for column in zip(*pairs))
    counts = confusion_matrix(predictions, labels)
    assert counts.sum() == len(pairs) and np.trace(counts) == (predictions == labels).sum()
    assert counts[labels[0], predictions[0]] == pairs.count(pairs[0])
    assert accuracy(predictions, labels) == np.trace(counts) / len(pairs)


@pytest.mark.task("4.9")
def test_train_step_lowers_the_loss_and_predict_learns_the_batch():
    train, _ = load_splits("digits")
    model = build_model("mlp", 8, seed=2)
    optimizer = Adam(model.parameters(), lr=0.01)
    images, labels = train.images[:40], train.labels[:40]
    losses = [train_step(model, optimizer, images, labels) for _ in range(20)]
    assert losses[-1] < 0.3 * losses[0]
    assert accuracy(predict(model, images, batch_size=7), labels) > 0.9


@pytest.mark.task("4.9")
def test_command_on_an_mnist_subset():
    from minitorch.mnist_data import find_mnist
    if find_mnist() is None:
        pytest.skip("MNIST not found: set MINITORCH_DATA to a folder holding mnist/")
    result = run_command("--dataset", "mnist", "--model", "mlp", "--epochs", "1", "--limit", "400")
    assert result.returncode == 0, result.stderr[-2000:]
    assert "400 training, 100 validation images" in result.stdout
    assert float(result.stdout.strip().splitlines()[-1].split(": ")[1]) > 0.3


@pytest.mark.task("4.9")  # with your kernels of tasks 3.2 and 4.2
@pytest.mark.parametrize("model", ["lenet", "mlp"])
def test_your_kernels_train_to_the_losses_of_the_tuned_ones(model):
    options = ["--dataset", "digits", "--model", model, "--epochs", "2", "--batch-size", "32", "--limit", "640"]
    yours, tuned = (main([*options, "--backend", backend]) for backend in ("course", "fast"))
    assert len(yours.step_loss) == 40
    np.testing.assert_allclose(yours.step_loss, tuned.step_loss, rtol=1e-9, atol=0)
    assert yours.valid_accuracy == tuned.valid_accuracy
