"""Property-based fuzzing of model directories and epoch-end checkpoints: :meth:`Word2Vec.load` on
a saved model (and on ``CHECKPOINT_DIR/checkpoint``, the same format) with files deleted, truncated at any byte,
bytes flipped, or replaced by arbitrary JSON.

Outcomes allowed: the saved model exactly (vectors, output weights, vocabulary, counters), or a
:class:`ParvecError` naming the directory or file.  Found by it: a flipped byte in vocab.json loaded as
another word ('the' -> 'uhe'), so models now carry SHA-256 checksums of their array and vocabulary files in
model.json (model.json itself stays editable: an edit that still describes a valid model is used).  Settings:
tests/fuzzing.py (``PARVEC_FUZZ_EXAMPLES`` for a long run).
"""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from fuzzing import fuzz_settings, no_hang
from hypothesis import given
from hypothesis import strategies as st

from parvec import Word2Vec
from parvec.errors import ParvecError

FILES = ["model.json", "vocab.json", "vectors.npy", "syn1neg.npy"]
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=8,
)
CONFIG_KEYS = ["dim", "window", "negative", "sample", "epochs", "alpha", "min_alpha", "threads", "seed", "algo",
               "max_sentence_length", "batch_size", "chunk_words", "device", "ns_exponent"]


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    d = tmp_path_factory.mktemp("model")
    (d / "ckpt").mkdir()
    sentences = [["the", "cat", "sat", "on", "the", "mat"], ["a", "dog", "sat"]] * 20
    model = Word2Vec(sentences=sentences, vector_size=6, min_count=1, epochs=1, workers=1, seed=2,
                     checkpoint_dir=d / "ckpt")
    model.save(d / "model")
    return d, model


def same_model(got: Word2Vec, want: Word2Vec) -> None:
    np.testing.assert_array_equal(got.wv.vectors, want.wv.vectors)
    np.testing.assert_array_equal(got.syn1neg, want.syn1neg)
    assert got.vocab.words == want.vocab.words and got.vocab.counts.tolist() == want.vocab.counts.tolist()
    assert got.epochs_trained == want.epochs_trained


def load(path):
    try:
        with no_hang():
            return Word2Vec.load(path)
    except ParvecError as exc:
        assert str(path) in str(exc), f"the error does not name the model: {exc}"
        return exc


@st.composite
def damages(draw):
    name = draw(st.sampled_from(FILES))
    kind = draw(st.sampled_from(["delete", "truncate", "flip", "json", "config", "empty dir"]))
    return name, kind, draw(st.floats(0, 1)), draw(st.integers(1, 255)), draw(JSON), draw(
        st.sampled_from(CONFIG_KEYS)), draw(JSON)


def damage(directory, name, kind, where, xor, value, key, field_value) -> bool:
    """Apply one damage; True if the data the model is read from may still be intact."""
    f = directory / name
    if kind == "delete":
        f.unlink()
        return False
    if kind == "empty dir":
        for x in FILES:
            (directory / x).unlink()
        return False
    data = bytearray(f.read_bytes())
    if kind == "truncate":
        f.write_bytes(bytes(data[: int(where * (len(data) - 1))]))
        return False
    if kind == "flip":
        i = int(where * (len(data) - 1))
        data[i] ^= xor
        f.write_bytes(bytes(data))
        return False
    if kind == "json":
        f.write_text(json.dumps(value))
        return False
    meta = json.loads((directory / "model.json").read_text())
    meta["config"][key] = field_value
    (directory / "model.json").write_text(json.dumps(meta))
    return False


@fuzz_settings(120)
@given(d=damages(), checkpoint=st.booleans())
def test_a_damaged_model_or_checkpoint_loads_exactly_or_says_why(saved, tmp_path_factory, d, checkpoint):
    root, model = saved
    src = root / "ckpt" / "checkpoint" if checkpoint else root / "model"
    work = tmp_path_factory.mktemp("w") / "m"
    shutil.copytree(src, work)
    damage(work, *d)
    got = load(work)
    if isinstance(got, ParvecError):
        return
    # Loaded: it must be the saved model (a flipped byte in an array's data would be a silent wrong result).
    assert got.wv.vectors.shape == (len(got.vocab), got.config.dim)
    assert got.syn1neg.shape == got.wv.vectors.shape
    reference = Word2Vec.load(src)
    if d[0] == "model.json" or d[1] == "config":
        # model.json carries no checksum (users edit it, e.g. its epochs to extend a run): an edit that
        # still describes a valid model is used as written; the arrays and vocabulary must be the saved ones.
        reference.epochs_trained = got.epochs_trained
    try:
        same_model(got, reference)
    except AssertionError:
        raise AssertionError(f"a damaged model loaded as another model: {d}") from None


def test_missing_and_unreadable_model_directories_are_named(tmp_path):
    for path in (tmp_path / "nothing", tmp_path):
        with pytest.raises(ParvecError, match="not a parvec model"):
            Word2Vec.load(path)


# ---------------------------------------------------------------------- regressions (crashes fuzzing found)
def _edit_json(name, change):
    def edit(d):
        data = json.loads((d / name).read_text())
        change(data)
        (d / name).write_text(json.dumps(data))

    return edit


REGRESSIONS = {  # each raised the exception named before the fix
    "vectors.npy deleted (FileNotFoundError)": lambda d: (d / "vectors.npy").unlink(),
    "vocab.json deleted (FileNotFoundError)": lambda d: (d / "vocab.json").unlink(),
    "vocab.json empty (JSONDecodeError)": lambda d: (d / "vocab.json").write_text(""),
    "vocab.json a string of the right length (read as letters)": lambda d: (d / "vocab.json").write_text(
        json.dumps({"words": "abcdefg", "counts": [1] * 7})),
    "config.dim null (TypeError, a message without the path)": _edit_json(
        "model.json", lambda m: m["config"].__setitem__("dim", None)),
    "read_options null (AttributeError)": _edit_json("model.json", lambda m: m.__setitem__("read_options", None)),
    "model.json a list (AttributeError)": lambda d: (d / "model.json").write_text("[]"),
    "epochs_trained not a number (ValueError)": _edit_json(
        "model.json", lambda m: m.__setitem__("epochs_trained", "many")),
    "vectors.npy truncated (ValueError)": lambda d: (d / "vectors.npy").write_bytes(
        (d / "vectors.npy").read_bytes()[:100]),
    "a byte of vocab.json flipped ('the' read as 'uhe')": lambda d: (d / "vocab.json").write_bytes(
        (d / "vocab.json").read_bytes().replace(b'"the"', b'"uhe"', 1)),
    "a float of vectors.npy flipped": lambda d: (d / "vectors.npy").write_bytes(
        (d / "vectors.npy").read_bytes()[:-1] + bytes([(d / "vectors.npy").read_bytes()[-1] ^ 1])),
}


@pytest.mark.parametrize("damage_it", REGRESSIONS.values(), ids=REGRESSIONS.keys())
def test_regression_damaged_models_are_named_errors(saved, tmp_path, damage_it):
    root, _ = saved
    for src in (root / "model", root / "ckpt" / "checkpoint"):
        work = tmp_path / src.name
        shutil.copytree(src, work)
        damage_it(work)
        with pytest.raises(ParvecError, match=str(work)):
            Word2Vec.load(work)


def test_regression_npy_header_with_an_unclosed_parenthesis(tmp_path):
    """Found by the short run: a flipped byte turned vectors.npy's shape ``(7, 6)`` into ``(7, 6(``, and numpy's
    header parser raised tokenize.TokenError through Word2Vec.load."""
    model = Word2Vec(sentences=[["a", "b", "c", "d"]] * 20, min_count=1, vector_size=6, workers=1, epochs=1, sample=0)
    model.save(tmp_path / "m")
    data = (tmp_path / "m" / "vectors.npy").read_bytes()
    assert b"6), }" in data
    (tmp_path / "m" / "vectors.npy").write_bytes(data.replace(b"6), }", b"6(, }", 1))
    with pytest.raises(ParvecError, match="vectors.npy"):
        Word2Vec.load(tmp_path / "m")
