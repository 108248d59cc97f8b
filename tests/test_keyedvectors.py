"""KeyedVectors: mapping, similarity queries (against numpy and gensim), evaluation, persistence."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from parvec import formats
from parvec.errors import ParvecError
from parvec.evaluation import default_eval_paths
from parvec.formats import write_word2vec
from parvec.keyedvectors import KeyedVectors, load_vectors

# Google's analogy set: ../shared/data/eval's, else the copy parvec ships (src/parvec/data, xz-compressed).
ANALOGIES = default_eval_paths()["analogies"]


@pytest.fixture
def toy() -> KeyedVectors:
    # Axes: fruit, royalty, male, female.
    words = ["man", "woman", "king", "queen", "prince", "princess", "apple", "pear", "zero"]
    v = np.array(
        [
            [0.0, 0.1, 1.0, 0.0],  # man
            [0.0, 0.1, 0.0, 1.0],  # woman
            [0.0, 1.0, 1.0, 0.0],  # king
            [0.0, 1.0, 0.0, 1.0],  # queen
            [0.3, 0.8, 1.0, 0.0],  # prince
            [0.3, 0.8, 0.0, 1.0],  # princess
            [1.0, 0.0, 0.0, 0.0],  # apple
            [0.9, 0.0, 0.3, 0.0],  # pear
            [0.0, 0.0, 0.0, 0.0],  # zero vector
        ],
        dtype=np.float32,
    )
    return KeyedVectors(v, words, counts=np.arange(9, 0, -1))


@pytest.fixture
def rand() -> KeyedVectors:
    rng = np.random.default_rng(11)
    v = rng.standard_normal((400, 16)).astype(np.float32)
    return KeyedVectors(v, [f"w{i}" for i in range(400)])


def brute_force(kv: KeyedVectors, pos: list[str], neg: list[str], topn: int, restrict: int | None = None):
    """Reference: normalise with numpy, score every row, sort, drop the query words."""
    n = len(kv) if restrict is None else restrict
    v = kv.vectors.astype(np.float64)
    unit = v / np.linalg.norm(v, axis=1, keepdims=True)
    q = sum(unit[kv.key_to_index[w]] for w in pos) - sum((unit[kv.key_to_index[w]] for w in neg), np.zeros(v.shape[1]))
    scores = unit[:n] @ (q / np.linalg.norm(q))
    order = [i for i in np.argsort(-scores) if kv.index_to_key[i] not in pos + neg]
    return [(kv.index_to_key[i], scores[i]) for i in order[:topn]]


# ---------------------------------------------------------------------- mapping
def test_mapping_attributes(toy):
    assert len(toy) == 9 and toy.vector_size == 4
    assert toy.key_to_index["queen"] == 3 and toy.index_to_key[3] == "queen"
    assert "king" in toy and "emperor" not in toy
    np.testing.assert_array_equal(toy["king"], [0, 1, 1, 0])
    assert toy[["apple", "man"]].shape == (2, 4)
    np.testing.assert_array_equal(toy[["apple", "man"]][1], toy["man"])
    assert toy.get_index(2) == 2 and toy.has_index_for(8) and not toy.has_index_for(9)
    assert toy.get_index("nope", default=-1) == -1
    assert toy.counts.tolist() == list(range(9, 0, -1))


def test_unknown_key_names_the_word(toy):
    with pytest.raises(KeyError, match="emperor"):
        toy["emperor"]
    with pytest.raises(KeyError, match="emperor"):
        toy.most_similar("emperor")
    with pytest.raises(KeyError, match="emperor"):
        toy.similarity("king", "emperor")


def test_constructor_validates():
    with pytest.raises(ValueError, match="3 keys for 2 vectors"):
        KeyedVectors(np.zeros((2, 2)), ["a", "b", "c"])
    with pytest.raises(ValueError, match="duplicate key 'a'"):
        KeyedVectors(np.zeros((2, 2)), ["a", "a"])
    with pytest.raises(ValueError, match="2-D"):
        KeyedVectors(np.zeros(3), ["a", "b", "c"])


def test_norms_and_cache_invalidation(toy):
    normed = toy.get_normed_vectors()
    assert toy.get_normed_vectors() is normed  # cached
    np.testing.assert_allclose(np.linalg.norm(normed[:8], axis=1), 1.0, rtol=1e-6)
    np.testing.assert_array_equal(normed[8], 0.0)  # a zero vector stays zero instead of NaN
    np.testing.assert_allclose(toy.get_vector("king", norm=True), [0, 2**-0.5, 2**-0.5, 0], rtol=1e-6)
    toy.vectors = toy.vectors * 2 + np.float32(1)  # replacing the matrix drops the cache
    new = toy.get_normed_vectors()
    assert new is not normed
    np.testing.assert_allclose(new[0], np.array([1, 1.2, 3, 1]) / np.linalg.norm([1, 1.2, 3, 1]), rtol=1e-6)
    toy.vectors[0] = [5, 0, 0, 0]  # in place: fill_norms(force=True) refreshes
    toy.fill_norms(force=True)
    np.testing.assert_allclose(toy.get_normed_vectors()[0], [1, 0, 0, 0])


# ---------------------------------------------------------------------- queries
def test_most_similar_known_answers(toy):
    assert [w for w, _ in toy.most_similar("apple", topn=1)] == ["pear"]
    assert toy.most_similar("king", topn=1)[0][0] == "prince"
    # king - man + woman = queen, and princess beats the query words (which are excluded).
    top = toy.most_similar(positive=["king", "woman"], negative=["man"], topn=2)
    assert [w for w, _ in top] == ["queen", "princess"]
    assert all(w not in ("king", "woman", "man") for w, _ in toy.most_similar(["king", "woman"], ["man"], topn=8))
    cos = toy.most_similar_cosmul(positive=["king", "woman"], negative=["man"], topn=2)
    assert [w for w, _ in cos] == ["queen", "princess"]


def test_most_similar_matches_brute_force(rand):
    cases = [(["w3"], []), (["w1", "w7"], ["w9"]), (["w100"], ["w5", "w6"])]
    for pos, neg in cases:
        for restrict in (None, 150):
            got = rand.most_similar(positive=pos, negative=neg, topn=12, restrict_vocab=restrict)
            ref = brute_force(rand, pos, neg, 12, restrict)
            assert [w for w, _ in got] == [w for w, _ in ref]
            np.testing.assert_allclose([s for _, s in got], [s for _, s in ref], rtol=1e-5, atol=1e-6)
            if restrict:
                assert all(int(w[1:]) < restrict for w, _ in got)


def test_most_similar_topn_variants(rand):
    assert rand.most_similar("w0", topn=0) == []
    full = rand.most_similar("w0", topn=None)
    assert isinstance(full, np.ndarray) and full.shape == (400,)
    assert full[0] == pytest.approx(1.0, abs=1e-6)  # the full array keeps the query word
    restricted = rand.most_similar("w0", topn=None, restrict_vocab=10)
    assert restricted.shape == (10,)
    everything = rand.most_similar("w0", topn=10000)
    assert len(everything) == 399 and "w0" not in {w for w, _ in everything}
    scores = [s for _, s in everything]
    assert scores == sorted(scores, reverse=True)


def test_most_similar_accepts_vectors_and_weights(rand):
    v = rand["w5"]
    by_vector = rand.most_similar(positive=[v], topn=3)
    assert by_vector[0][0] == "w5"  # a raw vector excludes nothing
    assert rand.similar_by_vector(v, topn=3) == by_vector
    assert rand.most_similar(positive=v, topn=3) == by_vector
    weighted = rand.most_similar(positive=[("w1", 2.0), "w2"], topn=5)
    unit = rand.get_normed_vectors()
    q = 2 * unit[1] + unit[2]
    scores = unit @ (q / np.linalg.norm(q))
    ref = [f"w{i}" for i in np.argsort(-scores) if i not in (1, 2)][:5]
    assert [w for w, _ in weighted] == ref
    with pytest.raises(ValueError, match="no input"):
        rand.most_similar(positive=[], negative=[])


def test_cosmul_matches_formula(rand):
    unit = rand.get_normed_vectors().astype(np.float64)
    a, b, c = unit[1], unit[2], unit[3]
    ref = ((1 + unit @ b) / 2) * ((1 + unit @ c) / 2) / ((1 + unit @ a) / 2 + 1e-6)
    order = [f"w{i}" for i in np.argsort(-ref) if i not in (1, 2, 3)][:10]
    got = rand.most_similar_cosmul(positive=["w2", "w3"], negative=["w1"], topn=10)
    assert [w for w, _ in got] == order
    np.testing.assert_allclose([s for _, s in got], np.sort(ref[[int(w[1:]) for w in order]])[::-1], rtol=1e-5)
    limited = rand.most_similar_cosmul(positive=["w2", "w3"], negative=["w1"], topn=5, restrict_vocab=50)
    assert all(int(w[1:]) < 50 for w, _ in limited)
    assert rand.most_similar_cosmul(positive=["w2"], topn=None).shape == (400,)


def test_top_k_over_a_large_vocabulary():
    # How fast, against gensim's most_similar: benchmarks/bench_vectors.py; here, the answer.
    rng = np.random.default_rng(0)
    v = rng.standard_normal((300_000, 8)).astype(np.float32)
    kv = KeyedVectors(v, [str(i) for i in range(len(v))])
    got = kv.most_similar("42", topn=5)
    unit = kv.get_normed_vectors()
    ref = np.argsort(-(unit @ unit[42]))[1:6]
    assert [w for w, _ in got] == [str(i) for i in ref]


def test_similarity_family(toy):
    assert toy.similarity("king", "king") == pytest.approx(1.0)
    assert toy.similarity("apple", "man") == pytest.approx(0.0, abs=1e-7)
    assert toy.similarity("king", "queen") == pytest.approx(0.5, rel=1e-6)  # (0,1,1,0)·(0,1,0,1) / 2
    assert toy.distance("apple", "pear") == pytest.approx(1 - 0.9 / np.hypot(0.9, 0.3), rel=1e-6)
    m1, m2 = np.array([0, 1, 0.5, 0.5]), np.array([0, 0.1, 0.5, 0.5])
    expected = m1 @ m2 / np.linalg.norm(m1) / np.linalg.norm(m2)
    assert toy.n_similarity(["king", "queen"], ["man", "woman"]) == pytest.approx(expected, rel=1e-6)
    with pytest.raises(ZeroDivisionError):
        toy.n_similarity([], ["man"])
    assert toy.doesnt_match(["king", "queen", "prince", "apple"]) == "apple"
    assert toy.doesnt_match(["king", "queen", "prince", "unknownword", "apple"]) == "apple"
    d = toy.distances("apple", ["pear", "man"])
    np.testing.assert_allclose(d, [toy.distance("apple", "pear"), 1.0], rtol=1e-6)
    assert toy.similar_by_key("apple", topn=1)[0][0] == "pear"


# ---------------------------------------------------------------------- evaluation
def test_evaluate_word_pairs(toy, tmp_path):
    from scipy import stats

    path = tmp_path / "pairs.tsv"
    path.write_text(
        "# comment line\nking\tprince\t9\nKING\tQueen\t5\napple\tpear\t8\nman\tapple\t1\nemperor\tking\t7\n",
        encoding="utf-8",
    )
    (pr, pp), (sr, sp), oov = toy.evaluate_word_pairs(path)
    model = [
        toy.similarity(a, b) for a, b in [("king", "prince"), ("king", "queen"), ("apple", "pear"), ("man", "apple")]
    ]
    gold = [9, 5, 8, 1]
    assert oov == pytest.approx(20.0)
    assert sr == pytest.approx(stats.spearmanr(gold, model)[0])
    assert pr == pytest.approx(stats.pearsonr(gold, model)[0], rel=1e-6)
    assert 0 <= pp <= 1 and 0 <= sp <= 1
    # Case-sensitive: KING/Queen are unknown too.
    *_, oov_cs = toy.evaluate_word_pairs(path, case_insensitive=False)
    assert oov_cs == pytest.approx(40.0)
    # dummy4unknown scores the unknown pair 0 and gensim's ratio is over the scored pairs.
    *_, oov_d = toy.evaluate_word_pairs(path, dummy4unknown=True)
    assert oov_d == pytest.approx(20.0)
    # restrict_vocab=4: only man, woman, king, queen are searched.
    *_, oov_r = toy.evaluate_word_pairs(path, restrict_vocab=4)
    assert oov_r == pytest.approx(80.0)


def _write_analogies(path: Path) -> None:
    path.write_text(
        ": royalty\nman woman king queen\nman woman prince princess\nking queen man woman\n"
        # apple - man + woman lands on princess, not pear: a wrong answer by construction.
        ": broken\nman woman apple pear\nman woman unknownword pear\n",
        encoding="utf-8",
    )


def test_evaluate_word_analogies(toy, tmp_path):
    path = tmp_path / "q.txt"
    _write_analogies(path)
    score, sections = toy.evaluate_word_analogies(path)
    assert [s["section"] for s in sections] == ["royalty", "broken", "Total accuracy"]
    assert sections[0]["correct"] == [
        ("MAN", "WOMAN", "KING", "QUEEN"),
        ("MAN", "WOMAN", "PRINCE", "PRINCESS"),
        ("KING", "QUEEN", "MAN", "WOMAN"),
    ]
    assert sections[1]["correct"] == [] and sections[1]["incorrect"] == [("MAN", "WOMAN", "APPLE", "PEAR")]
    assert score == pytest.approx(3 / 4)
    assert len(sections[2]["correct"]) == 3 and len(sections[2]["incorrect"]) == 1
    score_d, sections_d = toy.evaluate_word_analogies(path, dummy4unknown=True)
    assert score_d == pytest.approx(3 / 5)
    score_m, _ = toy.evaluate_word_analogies(path, method="3cosmul")
    assert score_m == pytest.approx(3 / 4)
    score_r, sections_r = toy.evaluate_word_analogies(path, restrict_vocab=4)
    # Only man/woman/king/queen are searched: prince/princess and apple/pear questions drop out.
    assert score_r == pytest.approx(1.0) and len(sections_r[-1]["correct"]) == 2
    with pytest.raises(ParvecError, match="unknown analogy method"):
        toy.evaluate_word_analogies(path, method="3cosfoo")


def test_analogies_agree_with_per_question_most_similar(tmp_path):
    """The batched solver gives the same answers as one most_similar call per question."""
    rng = np.random.default_rng(5)
    n = 300
    kv = KeyedVectors(rng.standard_normal((n, 10)).astype(np.float32), [f"w{i}" for i in range(n)])
    questions = rng.integers(0, n, size=(200, 4))
    questions = questions[[len(set(q)) == 4 for q in questions.tolist()]]
    lines = [": s1"] + [" ".join(f"w{i}" for i in q) for q in questions[:80]]
    lines += [": s2"] + [" ".join(f"w{i}" for i in q) for q in questions[80:]]
    path = tmp_path / "q.txt"
    path.write_text("\n".join(lines) + "\n")
    for method, query in (("3cosadd", kv.most_similar), ("3cosmul", kv.most_similar_cosmul)):
        _, sections = kv.evaluate_word_analogies(path, restrict_vocab=250, case_insensitive=False, method=method)
        expected_correct = []
        for q in questions.tolist():
            a, b, c, d = (f"w{i}" for i in q)
            if max(q) >= 250:
                continue
            best = query(positive=[b, c], negative=[a], topn=1, restrict_vocab=250)[0][0]
            if best == d:
                expected_correct.append((a, b, c, d))
        assert sections[-1]["correct"] == expected_correct
        assert len(sections[-1]["correct"]) + len(sections[-1]["incorrect"]) == int((questions.max(1) < 250).sum())


def test_case_variants_of_question_words_are_skipped():
    # "QUEEN" vs "queen": case-insensitively the same word, so "Woman" must not be the answer either.
    words = ["man", "woman", "king", "Woman", "queen"]
    v = np.array([[1, 0, 0], [0, 1, 0], [1, 0, 1], [0, 1, 0.99], [0, 1, 1]], dtype=np.float32)
    kv = KeyedVectors(v, words)
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "q.txt"
        path.write_text(": s\nMan Woman King Queen\n")
        score, _ = kv.evaluate_word_analogies(path)
    assert score == 1.0


def test_google_analogies_over_30000_words():
    # How fast, against gensim's evaluate_word_analogies: benchmarks/bench_vectors.py; here, what is counted.
    from parvec.evaluation import read_analogy_questions

    sections = read_analogy_questions(ANALOGIES)
    words = sorted({w.lower() for _, qs in sections for q in qs for w in q})
    vocab = words + [f"filler{i}" for i in range(30000 - len(words))]
    rng = np.random.default_rng(0)
    kv = KeyedVectors(rng.standard_normal((30000, 100)).astype(np.float32), vocab)
    score, secs = kv.evaluate_word_analogies(ANALOGIES, restrict_vocab=30000)
    assert len(secs) == 15 and secs[-1]["section"] == "Total accuracy"
    assert len(secs[-1]["correct"]) + len(secs[-1]["incorrect"]) == 19544
    assert score < 0.05  # random vectors answer (almost) nothing


# ---------------------------------------------------------------------- persistence
@pytest.mark.parametrize("binary", [False, True])
def test_word2vec_round_trip(toy, tmp_path, binary):
    path = tmp_path / "v.bin.gz"
    toy.save_word2vec_format(path, binary=binary)
    back = KeyedVectors.load_word2vec_format(path, binary=binary)
    assert back.index_to_key == toy.index_to_key
    np.testing.assert_array_equal(back.vectors, toy.vectors)
    auto = load_vectors(path)
    np.testing.assert_array_equal(auto.vectors, toy.vectors)


def test_npy_round_trip(toy, tmp_path):
    out = toy.save(tmp_path / "v")
    assert out.name == "v.npy"
    back = KeyedVectors.load(out)
    assert back.index_to_key == toy.index_to_key
    np.testing.assert_array_equal(back.vectors, toy.vectors)
    np.testing.assert_array_equal(back.counts, toy.counts)
    limited = load_vectors(out, limit=3)
    assert limited.index_to_key == toy.index_to_key[:3] and limited.counts.tolist() == [9, 8, 7]
    with pytest.raises(ParvecError, match="nothere.npy: no such file"):
        load_vectors(tmp_path / "nothere.npy")


# ---------------------------------------------------------------------- malformed word2vec files
# A file whose header disagrees with its rows must never be read as the other layout.
# Every case is read with binary unset (gensim's default, text), None (detect), True and False.
MW_WORDS = ["man", "woman", "king", "queen", "prince", "princess", "apple", "pear"]
MW_VECTORS = np.array(
    [
        [0.0, 0.1, 1.0, 0.0],
        [0.0, 0.1, 0.0, 1.0],
        [0.0, 1.0, 1.0, 0.0],
        [0.0, 1.0, 0.0, 1.0],
        [0.3, 0.8, 1.0, 0.0],
        [0.3, 0.8, 0.0, 1.0],
        [1.0, 0.0, 0.0, -0.5],
        [0.9, 0.0, 0.3, 0.25],  # the last value has digits to cut
    ],
    dtype=np.float32,
)
MODES = {"unset": {}, "detect": {"binary": None}, "binary": {"binary": True}, "text": {"binary": False}}
LOOKS_TEXT = [r":2: this looks like a text word2vec file", r"binary=False / --text"]
LOOKS_BINARY = [r":2: ", r"binary=True / --binary"]


def _valid(binary: bool) -> bytes:
    def values(v: np.ndarray) -> bytes:
        return v.astype("<f4").tobytes() if binary else "".join(f"{x:.9g} " for x in v).encode()

    return b"8 4\n" + b"".join(w.encode() + b" " + values(v) + b"\n" for w, v in zip(MW_WORDS, MW_VECTORS, strict=True))


def _row_start(i: int) -> int:
    """Byte offset of binary row ``i`` (0-based) in the valid binary file."""
    return 4 + sum(len(w.encode()) + 2 + 16 for w in MW_WORDS[:i])


def _header(new: bytes):
    return lambda d: new + d[d.index(b"\n") :]


def _line(index: int, edit):
    def mutate(d: bytes) -> bytes:
        lines = d.split(b"\n")
        lines[index] = edit(lines[index])
        return b"\n".join(lines)

    return mutate


# name: (layout of the valid file, mutation, error fragments when read in that layout (None: reads correctly),
#        error fragments when read as the other layout)
MALFORMED = {
    "text header dim larger": (
        "text", _header(b"8 5"), [r":2: dimension mismatch: 4 values, but the header says 5"],
        LOOKS_TEXT + [r"the header says dimension 5"],
    ),
    "text header dim smaller": (
        "text", _header(b"8 3"), [r":2: dimension mismatch: 4 values, but the header says 3"],
        LOOKS_TEXT + [r"the header says dimension 3"],
    ),
    "text header count larger": (
        "text", _header(b"9 4"), [r":10: truncated file: the header promises 9 vectors but only 8 follow"], LOOKS_TEXT,
    ),
    "text header count smaller": (
        "text", _header(b"7 4"), [r":9: the header promises 7 vectors, but more lines follow"], LOOKS_TEXT,
    ),
    "text row missing a value": (
        "text", _line(3, lambda l: l.rsplit(b" ", 2)[0] + b" "),
        [r":4: dimension mismatch: 3 values, but the header says 4"], LOOKS_TEXT,
    ),
    "text row with an extra value": (
        "text", _line(3, lambda l: l + b"7 "), [r":4: dimension mismatch: 5 values, but the header says 4"], LOOKS_TEXT,
    ),
    "text non-numeric value": (
        "text",
        _line(3, lambda l: l.replace(b" 1 ", b" x ", 1)),
        [r":4: non-numeric value 'x' in the vector of 'king'"],
        LOOKS_TEXT,
    ),
    "text cut inside the last value": (
        "text", lambda d: d[:-4], [r":9: the last line ends without a newline.*truncated"], LOOKS_TEXT,
    ),
    "text CRLF": ("text", lambda d: d.replace(b"\n", b"\r\n"), None, LOOKS_TEXT),
    "text UTF-8 BOM": ("text", lambda d: b"\xef\xbb\xbf" + d, None, LOOKS_TEXT),
    "header-less text": (
        "text", lambda d: d[d.index(b"\n") + 1 :], [r":1: malformed header", r"no_header=True / --no-header"],
        [r":1: malformed header", r"no_header=True / --no-header"],
    ),
    "empty file": ("text", lambda d: b"", [r"the file is empty"], [r"the file is empty"]),
    "binary cut inside a vector": (
        "binary", lambda d: d[: _row_start(2) + 10],
        [rf"vector 3 at byte {_row_start(2)}: truncated vector: expected 16 bytes, found 5"], LOOKS_BINARY,
    ),
    "binary header dim larger": (
        "binary", _header(b"8 5"), [r"vector \d+ at byte \d+: ", r"header's dimension 5", r"fit dimension 4"],
        LOOKS_BINARY,
    ),
    "binary header dim smaller": (
        "binary", _header(b"8 3"), [r"vector \d+ at byte \d+: ", r"header's dimension 3", r"fit dimension 4"],
        LOOKS_BINARY,
    ),
    "binary header count larger": (
        "binary", _header(b"9 4"),
        [rf"vector 9 at byte {_row_start(8)}: the file ends: the header promises 9 vectors but only 8 follow"],
        LOOKS_BINARY,
    ),
    "binary header count smaller": (
        "binary", _header(b"7 4"), [rf"byte {_row_start(7)}: data after the 7 vectors the header promises"],
        LOOKS_BINARY,
    ),
    "binary UTF-8 BOM": ("binary", lambda d: b"\xef\xbb\xbf" + d, None, LOOKS_BINARY),
}


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("case", list(MALFORMED))
def test_malformed_word2vec_files(tmp_path, case, mode):
    layout, mutate, own_errors, other_errors = MALFORMED[case]
    path = tmp_path / ("v.bin" if layout == "binary" else "v.txt")
    path.write_bytes(mutate(_valid(layout == "binary")))
    kwargs = MODES[mode]
    binary = kwargs.get("binary", False)
    own_layout = binary is None or binary == (layout == "binary")
    expected = own_errors if own_layout else other_errors
    if expected is None:
        kv = KeyedVectors.load_word2vec_format(path, **kwargs)
        assert kv.index_to_key == MW_WORDS
        np.testing.assert_array_equal(kv.vectors, MW_VECTORS)
        return
    with pytest.raises(ParvecError) as exc:
        KeyedVectors.load_word2vec_format(path, **kwargs)
    msg = str(exc.value)
    assert msg.startswith(str(path)), msg
    for fragment in expected:
        assert re.search(fragment, msg), (fragment, msg)
    wrong = "--binary" if layout == "text" else "--text"
    assert wrong not in msg, msg  # never a suggestion of the wrong layout


@pytest.mark.parametrize("header", [b"100 49", b"100 51"])
@pytest.mark.parametrize("mode", list(MODES))
def test_text_header_dimension_off_by_one_is_never_read_as_binary(tmp_path, header, mode):
    # The reproduction: 100 x 50 values; detection used to read this as binary garbage.
    rng = np.random.default_rng(0)
    path = tmp_path / "v.txt"
    write_word2vec(path, rng.standard_normal((100, 50)).astype(np.float32), [f"w{i}" for i in range(100)])
    path.write_bytes(header + path.read_bytes()[path.read_bytes().index(b"\n") :])
    with pytest.raises(ParvecError) as exc:
        KeyedVectors.load_word2vec_format(path, **MODES[mode])
    msg = str(exc.value)
    dim = int(header.split()[1])
    if MODES[mode].get("binary"):
        assert f"{path}:2: this looks like a text word2vec file" in msg and f"the header says dimension {dim}" in msg
    else:
        assert f"{path}:2: dimension mismatch: 50 values, but the header says {dim}" in msg
    assert "--binary" not in msg
    assert not formats.detect_binary(path)


def test_header_less_text_with_no_header(tmp_path):
    path = tmp_path / "glove.txt"
    path.write_bytes(_valid(False).split(b"\n", 1)[1])
    kv = KeyedVectors.load_word2vec_format(path, no_header=True)
    assert kv.index_to_key == MW_WORDS
    np.testing.assert_array_equal(kv.vectors, MW_VECTORS)
    assert load_vectors(path, no_header=True, limit=3).index_to_key == MW_WORDS[:3]
    with pytest.raises(ParvecError, match="no_header.*text"):
        KeyedVectors.load_word2vec_format(path, binary=True, no_header=True)
    with_header = tmp_path / "v.txt"
    with_header.write_bytes(_valid(False))
    with pytest.raises(ParvecError, match=r"v\.txt:2: dimension mismatch: 4 values, but line 1 has 1.*header"):
        KeyedVectors.load_word2vec_format(with_header, no_header=True)


# ---------------------------------------------------------------------- against gensim
gensim_models = pytest.importorskip("gensim.models")


def _gensim_kv(kv: KeyedVectors):
    g = gensim_models.KeyedVectors(vector_size=kv.vector_size)
    g.add_vectors(kv.index_to_key, kv.vectors)
    return g


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # gensim calls its own deprecated init_sims
def test_queries_match_gensim(rand):
    g = _gensim_kv(rand)
    for pos, neg in [(["w3"], []), (["w1", "w7"], ["w9"])]:
        for restrict in (None, 200):
            ours = rand.most_similar(positive=pos, negative=neg, topn=10, restrict_vocab=restrict)
            theirs = g.most_similar(positive=pos, negative=neg, topn=10, restrict_vocab=restrict)
            assert [w for w, _ in ours] == [w for w, _ in theirs]
            np.testing.assert_allclose([s for _, s in ours], [s for _, s in theirs], rtol=1e-5, atol=1e-6)
        ours = rand.most_similar_cosmul(positive=pos, negative=neg, topn=10)
        theirs = g.most_similar_cosmul(positive=pos, negative=neg, topn=10)
        assert [w for w, _ in ours] == [w for w, _ in theirs]
        np.testing.assert_allclose([s for _, s in ours], [s for _, s in theirs], rtol=1e-5)
    assert rand.similarity("w1", "w2") == pytest.approx(float(g.similarity("w1", "w2")), rel=1e-5)
    assert rand.n_similarity(["w1", "w3"], ["w2"]) == pytest.approx(
        float(g.n_similarity(["w1", "w3"], ["w2"])), rel=1e-5
    )
    assert rand.doesnt_match(["w1", "w2", "w3", "w4"]) == g.doesnt_match(["w1", "w2", "w3", "w4"])


def test_evaluation_matches_gensim(tmp_path):
    rng = np.random.default_rng(9)
    n = 200
    words = [f"w{i}" for i in range(n)]
    kv = KeyedVectors(rng.standard_normal((n, 12)).astype(np.float32), words)
    g = _gensim_kv(kv)
    pairs = tmp_path / "pairs.tsv"
    rows = [f"W{rng.integers(0, 260)}\tw{rng.integers(0, 200)}\t{rng.uniform(0, 10):.2f}" for _ in range(60)]
    pairs.write_text("# header\n" + "\n".join(rows) + "\n")
    ours = kv.evaluate_word_pairs(pairs, restrict_vocab=150)
    theirs = g.evaluate_word_pairs(str(pairs), restrict_vocab=150)
    assert ours[0][0] == pytest.approx(theirs[0][0], rel=1e-5)
    assert ours[1][0] == pytest.approx(theirs[1][0], rel=1e-5)
    assert ours[2] == pytest.approx(theirs[2])
    questions = tmp_path / "q.txt"
    qs = rng.integers(0, 220, size=(300, 4))
    qs = qs[[len(set(q)) == 4 for q in qs.tolist()]]
    text = ": one\n" + "\n".join(" ".join(f"w{i}" for i in q) for q in qs[:150])
    text += "\n: two\n" + "\n".join(" ".join(f"w{i}" for i in q) for q in qs[150:]) + "\n"
    questions.write_text(text)
    for dummy in (False, True):
        score, sections = kv.evaluate_word_analogies(questions, restrict_vocab=180, dummy4unknown=dummy)
        g_score, g_sections = g.evaluate_word_analogies(str(questions), restrict_vocab=180, dummy4unknown=dummy)
        assert score == pytest.approx(g_score)
        for ours_s, theirs_s in zip(sections, g_sections, strict=True):
            assert ours_s["section"] == theirs_s["section"]
            assert ours_s["correct"] == [tuple(q) for q in theirs_s["correct"]]
            assert ours_s["incorrect"] == [tuple(q) for q in theirs_s["incorrect"]]
