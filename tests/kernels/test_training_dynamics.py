"""Training dynamics: small graphs under the default settings, the loss bookkeeping, runs that train nothing.

docs/training.md has the measurements behind each test.
"""

from __future__ import annotations

import numpy as np
import pytest

from parvec.chunks import chunk_bounds
from parvec.config import TrainConfig
from parvec.corpus import EncodedCorpus
from parvec.errors import ParvecError
from parvec.model_tables import init_input_vectors
from parvec.sampling import (
    alias_table,
    chunk_seed,
    draw_noise,
    keep_probabilities,
    noise_distribution,
    rng_below,
    rng_next,
    rng_uniform,
)
from parvec.trainer import Trainer


# --------------------------------------------------------------------------- small graphs
def _mean_pairwise_cosine(v: np.ndarray) -> float:
    u = v / np.linalg.norm(v, axis=1, keepdims=True)
    c = u @ u.T
    n = len(v)
    return float((c.sum() - n) / (n * (n - 1)))


@pytest.fixture(scope="module")
def karate(shared_data):
    from parvec.graph.evaluation import read_labels
    from parvec.graph.graph_io import read_graph

    root = shared_data / "graphs" / "karate"
    return read_graph(root / "karate.edgelist"), read_labels(root / "karate.labels")


@pytest.mark.parametrize("algo", ["classic", "hogbatch", "par"])
def test_deepwalk_defaults_separate_karates_two_clubs(karate, algo):
    # With sample=1e-3 every karate node is above the threshold and 79% of the walks were dropped; one
    # epoch left the vectors collapsed (mean pairwise cosine 0.98-0.999, micro-F1 0.44-0.50 over 5 seeds,
    # chance level) while the graph's defaults should work on a 34-node graph as on BlogCatalog.
    from parvec.graph.evaluation import align_labels, node_classification
    from parvec.graph.node2vec import DeepWalk

    graph, labels = karate
    f1, cos = [], []
    for seed in (1, 2, 3):
        model = DeepWalk(graph, workers=1, seed=seed, algo=algo)  # every other setting: the defaults
        kv = model.fit()
        rows, y = align_labels(kv.index_to_key, labels)
        r = node_classification(kv.vectors[rows], y, [0.5], repeats=5, seed=0)["results"][0]
        f1.append(r["micro_f1_mean"])
        cos.append(_mean_pairwise_cosine(kv.vectors))
    assert np.mean(cos) < 0.8, cos
    assert np.mean(f1) >= 0.85, f1


def test_graph_cli_default_is_the_api_default():
    import inspect

    from parvec.cli import build_parser
    from parvec.graph.node2vec import Node2Vec

    default = inspect.signature(Node2Vec).parameters["sample"].default
    for command in ("node2vec", "deepwalk"):
        assert build_parser().parse_args([command, "g.txt", "-o", "g.emb"]).sample == default
    assert build_parser().parse_args(["link-eval", "g.txt"]).sample == default


# --------------------------------------------------------------------------- loss bookkeeping (item 10)
def _classic_reference(w_in, w_out, tokens, offsets, s_lo, s_hi, keep, prob, alias, window, negative,
                       alpha0, alpha1, seed):
    """classic's train_chunk written out in numpy, same random stream: returns (words, pairs, loss).

    The loss is each term's ``-log sigmoid(+-f)`` taken just before the update that term drives.
    """
    state = np.uint64(seed)
    chunk_words = max(int(offsets[s_hi] - offsets[s_lo]), 1)
    done = pairs = 0
    loss = 0.0
    for s in range(s_lo, s_hi):
        sent = []
        for k in range(offsets[s], offsets[s + 1]):
            w = int(tokens[k])
            if keep[w] < 1.0:
                state = np.uint64(rng_next(state))
                if rng_uniform(state) >= keep[w]:
                    continue
            sent.append(w)
        n = len(sent)
        raw_len = int(offsets[s + 1] - offsets[s])
        for i in range(n):
            alpha = np.float32(alpha0 + (alpha1 - alpha0) * ((done + i * raw_len / n) / chunk_words))
            state = np.uint64(rng_next(state))
            b = int(rng_below(state, window))
            center = sent[i]
            for j in range(max(0, i - window + b), min(n, i + window - b + 1)):
                if j == i:
                    continue
                ctx = sent[j]
                targets = [(center, 1.0)]
                for _ in range(negative):
                    state = np.uint64(rng_next(state))
                    t = int(draw_noise(state, prob, alias))
                    if t != center:
                        targets.append((t, 0.0))
                neu1e = np.zeros(w_in.shape[1], dtype=np.float64)
                for target, label in targets:
                    f = float(np.dot(w_in[ctx].astype(np.float64), w_out[target]))
                    loss += np.logaddexp(0.0, -f) if label else np.logaddexp(0.0, f)
                    sig = 1.0 if f > 6 else 0.0 if f < -6 else 1.0 / (1.0 + np.exp(-f))
                    g = (label - sig) * alpha
                    neu1e += g * w_out[target]
                    w_out[target] += (g * w_in[ctx]).astype(np.float32)
                w_in[ctx] += neu1e.astype(np.float32)
                pairs += 1
        done += raw_len
    return done, pairs, loss


@pytest.fixture(scope="module")
def tiny_text():
    rng = np.random.default_rng(5)
    topics = [[f"a{i}" for i in range(8)], [f"b{i}" for i in range(8)]]
    lines = [list(rng.choice(topics[i % 2], int(rng.integers(1, 15)))) for i in range(60)]
    for i in range(6):  # rare words, kept always (keep probability 1)
        lines[7 * i].append(f"rare{i}")
    return EncodedCorpus.from_sentences(lines, min_count=1)


def test_loss_per_epoch_is_the_numpy_recomputation(tiny_text):
    # Several chunks per epoch, two epochs, subsampling on: the trainer's per-epoch loss and pair counts
    # must be exactly what a plain numpy replay of the same updates adds up.
    corpus = tiny_text
    cfg = TrainConfig(algo="classic", dim=8, window=3, negative=3, sample=0.01, epochs=2, threads=1, seed=11,
                      chunk_words=60, progress=False)
    tr = Trainer(cfg, corpus.vocab.counts)
    stats = tr.train(corpus)

    counts = corpus.vocab.counts
    w_in = init_input_vectors(len(counts), cfg.dim, cfg.seed)
    w_out = np.zeros_like(w_in)
    keep = keep_probabilities(counts, cfg.sample)
    assert (keep < 1).any() and (keep == 1).any()  # both subsampling branches are exercised
    prob, alias = alias_table(noise_distribution(counts, cfg.ns_exponent))
    bounds = chunk_bounds(corpus.offsets, cfg.chunk_words)
    assert len(bounds) > 3  # several chunks per epoch
    total = corpus.n_tokens * cfg.epochs

    def alpha_at(pos):
        return max(cfg.final_alpha, cfg.alpha - (cfg.alpha - cfg.final_alpha) * min(1.0, pos / total))

    want_loss, want_pairs = [], []
    for epoch in range(cfg.epochs):
        pos, pairs, loss = 0, 0, 0.0
        for c in range(len(bounds) - 1):
            lo, hi = int(bounds[c]), int(bounds[c + 1])
            n_words = int(corpus.offsets[hi] - corpus.offsets[lo])
            base = epoch * corpus.n_tokens + pos
            _, p, lsum = _classic_reference(w_in, w_out, corpus.tokens, corpus.offsets, lo, hi, keep, prob, alias,
                                            cfg.window, cfg.negative, alpha_at(base), alpha_at(base + n_words),
                                            chunk_seed(cfg.seed, epoch, c))
            pos += n_words
            pairs += p
            loss += lsum
        want_pairs.append(pairs)
        want_loss.append(loss / pairs)
    assert stats.pairs_per_epoch == want_pairs
    assert stats.pairs == sum(want_pairs)
    np.testing.assert_allclose(stats.loss_per_epoch, want_loss, rtol=1e-4)
    np.testing.assert_allclose(tr.w_in, w_in, rtol=1e-3, atol=1e-5)


def test_pairs_per_epoch_do_not_depend_on_threads(tiny_text):
    # Subsampling and window shrinks come from the chunks' seeds, so the pairs of an epoch are the same
    # whichever thread trains which chunk; the per-thread sums must add up to them.
    got = []
    for threads in (1, 2):
        cfg = TrainConfig(algo="hogbatch", dim=8, window=3, negative=3, sample=0.01, epochs=3, threads=threads,
                          seed=2, chunk_words=40, progress=False)
        got.append(Trainer(cfg, tiny_text.vocab.counts).train(tiny_text))
    assert got[0].pairs_per_epoch == got[1].pairs_per_epoch
    assert got[0].words_per_epoch == got[1].words_per_epoch == [tiny_text.n_tokens] * 3


# --------------------------------------------------------------------------- runs that train nothing
@pytest.mark.parametrize("algo", ["classic", "hogbatch", "par"])
def test_one_word_lines_end_with_an_error_not_random_vectors(algo):
    corpus = EncodedCorpus.from_sentences([["alpha"], ["beta"], ["alpha"], ["gamma"]], min_count=1)
    tr = Trainer(TrainConfig(algo=algo, dim=8, epochs=2, threads=1, progress=False), corpus.vocab.counts)
    with pytest.raises(ParvecError, match=r"no \(context, center\) pair in 2 epoch.*no sentence holds two "
                                          r"in-vocabulary words.*--min-count"):
        tr.train(corpus)


def test_subsampling_everything_away_names_sample():
    corpus = EncodedCorpus.from_sentences([["alpha", "beta"], ["beta", "alpha"]] * 3, min_count=1)
    tr = Trainer(TrainConfig(algo="classic", dim=8, epochs=1, threads=1, sample=1e-9, progress=False),
                 corpus.vocab.counts)
    with pytest.raises(ParvecError, match=r"subsampling \(sample=1e-09\) left no sentence with two words.*--sample"):
        tr.train(corpus)


def test_cli_one_word_lines_exit_2_without_output(tmp_path, capsys):
    from parvec.cli import main

    src = tmp_path / "words.txt"
    src.write_text("".join(f"w{i % 7}\n" for i in range(200)))
    out = tmp_path / "vectors.txt"
    code = main(["train", str(src), "-o", str(out), "--dim", "8", "--epochs", "1", "--threads", "1",
                 "--min-count", "1", "--no-cache"])
    err = capsys.readouterr().err
    assert code == 2
    assert "no sentence holds two in-vocabulary words" in err and "Traceback" not in err
    assert not out.exists() and list(tmp_path.iterdir()) == [src]
