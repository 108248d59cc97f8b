"""The sharded mode's kernels and minibatch loop, without Ray: against numpy on tiny inputs."""

from __future__ import annotations

import numpy as np
import pytest

from parvec.config import TrainConfig
from parvec.corpus import EncodedCorpus
from parvec.distributed.shard_kernels import LocalStep, reference_train
from parvec.distributed.units import Step, Unit, UnitRunner, minibatch_seed, plan_units
from parvec.distributed.wire import Minibatch, call_bytes, pack_call, sum_partials, unpack_call
from parvec.kernels import sharded as K
from parvec.model_tables import init_input_vectors
from parvec.sampling import keep_probabilities, word_noise_tables
from parvec.schedule import Schedule


def _form_all(tokens, offsets, keep, window, max_inputs, seed=7, interleave=False):
    """Every minibatch of sentences 0..end."""
    cfg = TrainConfig(window=window, negative=2, dim=4, sample=0)
    runner = UnitRunner(cfg, keep, max_inputs, interleave)
    return list(runner.minibatches(tokens, offsets, 0, len(offsets) - 1, seed, 0.025, 0.0, 100))


def _pairs_of(mb: Minibatch, window: int) -> list[tuple[int, int]]:
    pairs = []
    m = 0
    for start, n, a, b in mb.seg.tolist():
        run = mb.seq[start:start + n]
        for i in range(a, b):
            r = int(mb.shrink[m])
            m += 1
            for j in range(max(0, i - window + r), min(n, i + window - r + 1)):
                if j != i:
                    pairs.append((int(run[i]), int(run[j])))
    return pairs


def test_init_columns_are_the_one_process_columns():
    for seed in (1, 12345):
        full = init_input_vectors(37, 23, seed)
        blocks = [K.init_columns(37, 23, *K.column_range(s, 4, 23), seed) for s in range(4)]
        assert np.array_equal(np.hstack(blocks), full)
        assert np.array_equal(K.init_columns(37, 23, 5, 6, seed), full[:, 5:6])


def test_column_ranges_partition_the_dimensions():
    for dim, shards in ((10, 3), (100, 4), (7, 7)):
        ranges = [K.column_range(s, shards, dim) for s in range(shards)]
        assert ranges[0][0] == 0 and ranges[-1][1] == dim
        assert all(a[1] == b[0] and a[0] < a[1] for a, b in zip(ranges, ranges[1:], strict=False))


def test_minibatches_hold_every_window_pair_whatever_their_size():
    rng = np.random.default_rng(0)
    tokens = rng.integers(0, 20, 400).astype(np.int32)
    offsets = np.array([0, 1, 50, 51, 53, 200, 400], dtype=np.int64)  # one-word sentences give no input
    keep = np.ones(20, dtype=np.float32)
    window = 3
    small = _form_all(tokens, offsets, keep, window, 7)
    big = _form_all(tokens, offsets, keep, window, 10_000)
    assert len(big) == 1 and len(small) > 40
    assert all(mb.inputs <= 7 for mb in small)
    shrinks = np.concatenate([mb.shrink for mb in small])
    assert np.array_equal(shrinks, big[0].shrink)  # the random stream does not depend on the minibatch size
    assert int(shrinks.max()) < window
    # The pairs are exactly word2vec.c's window pairs with these shrinks, sentence by sentence.
    expected = []
    m = 0
    for s in range(len(offsets) - 1):
        sent = tokens[offsets[s]:offsets[s + 1]]
        if len(sent) < 2:
            continue
        for i in range(len(sent)):
            r = int(shrinks[m])
            m += 1
            for j in range(max(0, i - window + r), min(len(sent), i + window - r + 1)):
                if j != i:
                    expected.append((int(sent[i]), int(sent[j])))
    assert m == len(shrinks)
    got = [p for mb in small for p in _pairs_of(mb, window)]
    assert got == expected
    assert sum(mb.pairs for mb in small) == len(expected)
    assert all(int(mb.n_ctx.sum()) == mb.pairs == K.count_pairs(mb.seg, mb.shrink, window) for mb in small)


def test_interleaved_minibatches_hold_the_same_inputs_and_pairs_spread_over_the_unit():
    rng = np.random.default_rng(3)
    tokens = rng.integers(0, 20, 600).astype(np.int32)
    offsets = np.array([0, 1, 50, 51, 53, 200, 420, 600], dtype=np.int64)
    keep = np.full(20, 0.7, dtype=np.float32)  # subsampling uses the stream too
    window = 3
    contiguous = _form_all(tokens, offsets, keep, window, 16)
    interleaved = _form_all(tokens, offsets, keep, window, 16, interleave=True)
    whole = _form_all(tokens, offsets, keep, window, 100_000)[0]
    n = whole.inputs
    assert sum(mb.inputs for mb in contiguous) == sum(mb.inputs for mb in interleaved) == n
    assert all(mb.inputs <= 16 for mb in interleaved) and len(interleaved) == -(-n // 16)
    # The same (input, context) pairs with the same shrinks, only in another order.
    assert sorted(p for mb in interleaved for p in _pairs_of(mb, window)) == sorted(_pairs_of(whole, window))
    assert sum(mb.pairs for mb in interleaved) == whole.pairs
    assert all(int(mb.n_ctx.sum()) == mb.pairs == K.count_pairs(mb.seg, mb.shrink, window) for mb in interleaved)
    # Minibatch k holds the k-th run of LANE_WORDS kept words of every lane: runs n/4 apart, not consecutive.
    from parvec.distributed.units import LANE_WORDS

    lanes = K.lane_bounds(n, 16 // LANE_WORDS)
    first = interleaved[0]
    assert first.inputs == 16 and len(lanes) - 1 == 16 // LANE_WORDS
    picked = np.concatenate([np.arange(a, a + LANE_WORDS) for a in lanes[:-1]])
    np.testing.assert_array_equal(first.shrink, whole.shrink[picked])
    assert np.array_equal(first.alpha, whole.alpha[picked])
    assert np.array_equal(np.concatenate([mb.shrink for mb in contiguous]), whole.shrink)


@pytest.mark.parametrize("minibatch_words", [1, 3, 7, 13, 1365])
def test_interleaved_minibatches_never_exceed_minibatch_words(minibatch_words):
    # 1365 = 4096 // 3, the default for one client with three threads: it used to take one lane more than fits
    # (ceil(1365 / 4) lanes of 4 words), write three inputs past the buffers and crash the client and the shard.
    rng = np.random.default_rng(5)
    tokens = rng.integers(0, 30, 20_000).astype(np.int32)
    offsets = np.concatenate([np.arange(0, 20_000, 37), [20_000]]).astype(np.int64)
    keep = np.full(30, 0.8, dtype=np.float32)
    window = 3
    whole = _form_all(tokens, offsets, keep, window, 100_000)[0]
    mbs = _form_all(tokens, offsets, keep, window, minibatch_words, interleave=True)
    assert max(mb.inputs for mb in mbs) <= minibatch_words
    assert sum(mb.inputs for mb in mbs) == whole.inputs and sum(mb.pairs for mb in mbs) == whole.pairs
    assert sorted(p for mb in mbs for p in _pairs_of(mb, window)) == sorted(_pairs_of(whole, window))


def test_interleaving_spreads_a_burst_of_one_word_over_many_minibatches():
    # A table or markup ("em width one em em height ...") repeats one rare word hundreds of times; summed
    # from one start-of-call state, its updates made sharded training diverge on the Wikipedia corpus.
    rng = np.random.default_rng(4)
    tokens = rng.integers(1, 500, 4000).astype(np.int32)
    tokens[2000:2300] = 0  # the burst
    offsets = np.array([0, 1000, 2000, 3000, 4000], dtype=np.int64)
    keep = np.ones(500, dtype=np.float32)

    def most_repeats(mbs):  # the most inputs of one minibatch that are the burst's word
        return max(sum(int(np.sum(mb.seq[a + i0:a + i1] == 0)) for a, _, i0, i1 in mb.seg.tolist()) for mb in mbs)

    assert most_repeats(_form_all(tokens, offsets, keep, 5, 256)) >= 250
    assert most_repeats(_form_all(tokens, offsets, keep, 5, 256, interleave=True)) <= 256 * 300 // 4000 + 2


def _burst_corpus() -> tuple[EncodedCorpus, TrainConfig, int]:
    # 300 random sentences of 200 words and, in the middle, one burst of markup: "em" 240 times in 400 words
    rng = np.random.default_rng(1)
    words = [f"w{i}" for i in range(200)]
    sentences = [list(rng.choice(words, 60)) for _ in range(300)]
    sentences[150] = ["em", "width", "em", "em", "height"] * 80
    corpus = EncodedCorpus.from_sentences(sentences, min_count=1)
    cfg = TrainConfig(dim=16, window=3, negative=3, epochs=3, sample=0, seed=2)
    return corpus, cfg, corpus.vocab.index["em"]


@pytest.mark.parametrize("negatives_per", ["pair", "window"])
def test_interleaved_formation_trains_a_large_minibatch_that_contiguous_formation_spoils(negatives_per):
    # The one-process reference of the sharded algorithm on a corpus with one burst of markup: contiguous
    # minibatches of 1024 words push the burst word ~300 times with coefficients from one state, its output
    # vector grows far beyond the rest and the loss stays high (per pair: it climbs again in the last epoch);
    # interleaved ones keep both in line (docs/benchmarks/clusters.md has the full-corpus figures).  The updates
    # summed (update_cap=0, the paper's adjust): the cap on a row's updates per minibatch is a second guard
    # (test_capped_updates_keep_a_contiguous_burst_in_line).
    corpus, cfg, em = _burst_corpus()
    ratio, loss = {}, {}
    for interleave in (False, True):
        _, w_out, stats = reference_train(cfg, corpus.vocab.counts, [(corpus.tokens, corpus.offsets)],
                                          minibatch_words=1024, interleave=interleave, negatives_per=negatives_per,
                                          update_cap=0)
        ratio[interleave] = float(np.linalg.norm(w_out[em]) / np.median(np.linalg.norm(w_out, axis=1)))
        loss[interleave] = stats.loss_per_epoch
    if negatives_per == "pair":
        assert loss[False][2] > loss[False][1]  # contiguous: the loss climbs again
    assert loss[True][0] > loss[True][1] > loss[True][2]
    assert all(i < c for i, c in zip(loss[True][1:], loss[False][1:], strict=True))
    assert ratio[True] < ratio[False] / 2


def test_capped_updates_keep_a_contiguous_burst_in_line():
    # the burst above in contiguous minibatches of 1024 words, window batches: with each row's updates from one
    # minibatch capped (the default) the burst word's output vector stays near the rest and the loss falls
    corpus, cfg, em = _burst_corpus()
    ratio = {}
    for cap in (0, 16):
        _, w_out, stats = reference_train(cfg, corpus.vocab.counts, [(corpus.tokens, corpus.offsets)],
                                          minibatch_words=1024, interleave=False, update_cap=cap)
        ratio[cap] = float(np.linalg.norm(w_out[em]) / np.median(np.linalg.norm(w_out, axis=1)))
    assert stats.loss_per_epoch[0] > stats.loss_per_epoch[1] > stats.loss_per_epoch[2]
    assert ratio[16] < ratio[0] / 2


def _tiny_minibatch(rng, vocab=12, window=2, inputs=6):
    tokens = rng.integers(0, vocab, 30).astype(np.int32)
    offsets = np.array([0, 9, 30], dtype=np.int64)
    return _form_all(tokens, offsets, np.ones(vocab, np.float32), window, inputs)[1]


def _expected_dots(w_in, w_out, mb, window, negs):
    out = []
    for p, (center, ctx) in enumerate(_pairs_of(mb, window)):
        out.append(w_in[center] @ w_out[ctx])
        out += [w_in[center] @ w_out[t] for t in negs[p]]
    return np.array(out)


def test_dotprod_matches_numpy_and_sums_over_column_blocks():
    rng = np.random.default_rng(1)
    vocab, dim, window, negative = 12, 10, 2, 3
    counts = rng.integers(1, 50, vocab)
    prob, alias = word_noise_tables(counts, TrainConfig().ns_exponent)
    w_in = rng.standard_normal((vocab, dim)).astype(np.float32)
    w_out = rng.standard_normal((vocab, dim)).astype(np.float32)
    mb = _tiny_minibatch(rng, vocab, window)
    negs = K.minibatch_negatives(mb.seq, mb.seg, mb.shrink, window, negative, prob, alias, mb.seed)
    pairs = _pairs_of(mb, window)
    assert negs.shape == (len(pairs), negative)
    assert all(t != ctx for (_, ctx), row in zip(pairs, negs, strict=True) for t in row)  # never the positive
    out = np.empty(len(pairs) * (1 + negative), np.float32)
    assert K.dotprod(w_in, w_out, mb.seq, mb.seg, mb.shrink, window, negative, prob, alias, mb.seed, out) == len(out)
    np.testing.assert_allclose(out, _expected_dots(w_in, w_out, mb, window, negs), rtol=1e-5, atol=1e-5)
    # Partial dot products over column blocks sum to the whole ones.
    total = np.zeros_like(out)
    for s in range(3):
        lo, hi = K.column_range(s, 3, dim)
        part = np.empty_like(out)
        K.dotprod(np.ascontiguousarray(w_in[:, lo:hi]), np.ascontiguousarray(w_out[:, lo:hi]), mb.seq, mb.seg,
                  mb.shrink, window, negative, prob, alias, mb.seed, part)
        total += part
    np.testing.assert_allclose(total, out, rtol=1e-5, atol=1e-5)


def test_adjust_reads_the_vectors_as_they_were_at_the_start_of_the_call():
    rng = np.random.default_rng(2)
    vocab, dim, window, negative = 6, 8, 2, 4  # a small vocabulary: rows repeat inside the minibatch
    prob, alias = word_noise_tables(rng.integers(1, 9, vocab), TrainConfig().ns_exponent)
    w_in = rng.standard_normal((vocab, dim)).astype(np.float32)
    w_out = rng.standard_normal((vocab, dim)).astype(np.float32)
    mb = _tiny_minibatch(rng, vocab, window)
    pairs = _pairs_of(mb, window)
    negs = K.minibatch_negatives(mb.seq, mb.seg, mb.shrink, window, negative, prob, alias, mb.seed)
    coef = rng.standard_normal(len(pairs) * (1 + negative)).astype(np.float32)
    u0, v0 = w_in.astype(np.float64), w_out.astype(np.float64)
    du, dv = np.zeros_like(u0), np.zeros_like(v0)
    k = 0
    for p, (center, ctx) in enumerate(pairs):
        for t in [ctx, *negs[p]]:
            du[center] += coef[k] * v0[t]
            dv[t] += coef[k] * u0[center]
            k += 1
    assert K.adjust(w_in, w_out, mb.seq, mb.seg, mb.shrink, window, negative, prob, alias, mb.seed, coef) == len(pairs)
    np.testing.assert_allclose(w_in, u0 + du, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(w_out, v0 + dv, rtol=1e-5, atol=1e-5)


def test_a_step_is_minus_alpha_times_the_gradient_of_the_minibatch_loss():
    # Gradient check: dotprod -> coefficients -> adjust moves the vectors by -alpha * dLoss/dvector.
    rng = np.random.default_rng(3)
    vocab, dim, window, negative, alpha = 7, 5, 2, 2, 0.01
    prob, alias = word_noise_tables(rng.integers(1, 9, vocab), TrainConfig().ns_exponent)
    w_in = (0.3 * rng.standard_normal((vocab, dim))).astype(np.float32)  # |f| < 6: no saturation
    w_out = (0.3 * rng.standard_normal((vocab, dim))).astype(np.float32)
    mb = _tiny_minibatch(rng, vocab, window)
    mb.alpha[:] = alpha
    negs = K.minibatch_negatives(mb.seq, mb.seg, mb.shrink, window, negative, prob, alias, mb.seed)
    pairs = _pairs_of(mb, window)

    def loss(u, v):
        total = 0.0
        for p, (center, ctx) in enumerate(pairs):
            total += np.logaddexp(0, -(u[center] @ v[ctx]))
            total += sum(np.logaddexp(0, u[center] @ v[t]) for t in negs[p])
        return total

    u0, v0 = w_in.astype(np.float64), w_out.astype(np.float64)
    grad_u, grad_v = np.zeros_like(u0), np.zeros_like(v0)
    eps = 1e-6
    for g, w in ((grad_u, u0), (grad_v, v0)):
        for idx in np.ndindex(w.shape):
            old = w[idx]
            w[idx] = old + eps
            up = loss(u0, v0)
            w[idx] = old - eps
            down = loss(u0, v0)
            w[idx] = old
            g[idx] = (up - down) / (2 * eps)
    f = np.empty(len(pairs) * (1 + negative), np.float32)
    K.dotprod(w_in, w_out, mb.seq, mb.seg, mb.shrink, window, negative, prob, alias, mb.seed, f)
    coef = np.empty_like(f)
    reported = K.coefficients(f, mb.n_ctx, mb.alpha, negative, coef)
    assert reported == pytest.approx(loss(u0, v0), rel=1e-5)
    K.adjust(w_in, w_out, mb.seq, mb.seg, mb.shrink, window, negative, prob, alias, mb.seed, coef)
    np.testing.assert_allclose(w_in - u0, -alpha * grad_u, atol=1e-6)
    np.testing.assert_allclose(w_out - v0, -alpha * grad_v, atol=1e-6)


@pytest.mark.parametrize("wire", ["float32", "float16"])
def test_pack_and_unpack_a_call(wire):
    rng = np.random.default_rng(4)
    prev = _tiny_minibatch(rng)
    prev.alpha[:] = np.linspace(0.001, 0.002, len(prev.alpha))
    nxt = _tiny_minibatch(rng)
    coef = (0.002 * rng.uniform(-1, 1, prev.pairs * 4)).astype(np.float32)
    buf = pack_call((prev, coef), nxt, 3, wire)
    assert buf.nbytes == call_bytes((prev, coef), nxt, wire)
    call = unpack_call(buf)
    assert call.adjust is not None and call.dots is not None
    (p_seq, p_seg, p_shrink, p_seed, p_coef), (n_seq, n_seg, n_shrink, n_seed, n_out), half = call
    for a, b in ((p_seq, prev.seq), (p_seg, prev.seg), (p_shrink, prev.shrink), (n_seq, nxt.seq),
                 (n_seg, nxt.seg), (n_shrink, nxt.shrink)):
        assert a.dtype == b.dtype and np.array_equal(a, b)
    assert p_coef.dtype == np.float32 and half == (wire == "float16")
    if wire == "float32":
        assert np.array_equal(p_coef, coef)
    else:  # scaled by the largest rate: float16's 11 bits relative to it, not its subnormals
        assert not np.array_equal(p_coef, coef)
        np.testing.assert_allclose(p_coef, coef, rtol=0, atol=0.002 * 2**-11)
        small = np.abs(coef) < 1e-4  # subnormal in float16 without the scale
        assert small.any()
        np.testing.assert_allclose(p_coef[small], coef[small], rtol=2**-10, atol=0.002 * 2**-24)
    assert p_seed == prev.seed and n_seed == nxt.seed and n_out == nxt.pairs * 4
    only = unpack_call(pack_call(None, nxt, 3, wire))
    assert only.adjust is None and only.dots is not None and np.array_equal(only.dots.seq, nxt.seq)
    assert only.dots.seed == nxt.seed and only.dots.n_out == nxt.pairs * 4


def test_half_the_bytes_on_a_float16_wire():
    rng = np.random.default_rng(4)
    prev, nxt = _tiny_minibatch(rng), _tiny_minibatch(rng)
    coef = rng.standard_normal(prev.pairs * 4).astype(np.float32)
    index_bytes = call_bytes((prev, coef[:0]), nxt)
    assert call_bytes((prev, coef), nxt, "float16") - index_bytes == pytest.approx(coef.nbytes / 2, abs=8)
    assert call_bytes((prev, coef), nxt) - index_bytes == pytest.approx(coef.nbytes, abs=8)


def _halves_and_ties():
    """Floats over float16's whole range and beyond: random magnitudes, every half, the midpoints between
    neighbouring halves (the round-to-nearest-even ties) and the edges (zeros, infinities, NaN, overflow)."""
    rng = np.random.default_rng(5)
    spread = rng.standard_normal(200_000) * 10.0 ** rng.uniform(-9, 6, 200_000)
    halves = np.arange(0x7C00, dtype=np.uint16).view(np.float16).astype(np.float64)
    ties = (halves[:-1] + halves[1:]) / 2
    edges = [0.0, -0.0, np.inf, -np.inf, np.nan, 65504.0, 65519.99, 65520.0, 2.0 ** -14, 2.0 ** -24, 2.0 ** -25,
             1.5 * 2.0 ** -25, 1e-30]
    return np.concatenate([spread, halves, ties, -ties, edges]).astype(np.float32)


def test_float16_wire_conversions_round_as_numpy_does():
    x = _halves_and_ties()
    with np.errstate(over="ignore"):
        want = x.astype(np.float16).view(np.uint16)
    got = K.float_to_half(x, x.view(np.uint32), np.empty(len(x), np.uint16))
    assert np.array_equal(got, want)
    bits = np.arange(65536, dtype=np.uint16)
    for scale in (1.0, 0.0173):
        with np.errstate(invalid="ignore", over="ignore"):
            want_f = bits.view(np.float16).astype(np.float32) * np.float32(scale)
        got_f = K.half_to_float(bits, np.float32(scale), np.empty(65536, np.float32), False)
        assert np.array_equal(got_f, want_f, equal_nan=True)
    acc = np.ones(65536, np.float32)
    K.half_to_float(bits[:0x7C00], np.float32(1.0), acc[:0x7C00], True)
    assert np.array_equal(acc[:0x7C00], 1 + bits[:0x7C00].view(np.float16).astype(np.float32))


def test_partials_summed_from_float16_as_from_float32():
    rng = np.random.default_rng(6)
    parts = [(rng.standard_normal(1000) * 3).astype(np.float16) for _ in range(3)]
    want = np.sum(parts, axis=0, dtype=np.float32)
    assert np.array_equal(sum_partials(parts), want)
    assert np.array_equal(sum_partials([p.astype(np.float32) for p in parts]), want)
    assert sum_partials([parts[0]]).dtype == np.float32


class _BlockStep(Step):
    """S column blocks in this process, partials summed by the runner: the shards without Ray."""

    def __init__(self, w_in, w_out, config, prob, alias, shards):
        self.shards = shards
        self.blocks = [LocalStep(np.ascontiguousarray(w_in[:, lo:hi]), np.ascontiguousarray(w_out[:, lo:hi]), config,
                                 prob, alias) for lo, hi in (K.column_range(s, shards, w_in.shape[1])
                                                             for s in range(shards))]

    def submit(self, prev, nxt):
        out = [b.submit(prev, nxt) for b in self.blocks]
        self.sent = self.blocks[0].sent
        return [x[0] for x in out if x]

    def result(self, handle):
        return handle


def test_column_blocks_train_the_reference_model():
    words = [f"w{i}" for i in range(30)]
    rng = np.random.default_rng(5)
    corpus = EncodedCorpus.from_sentences([list(rng.choice(words, 40)) for _ in range(60)], min_count=1)
    cfg = TrainConfig(dim=12, window=3, negative=3, epochs=2, sample=1e-2, seed=3)
    ref_in, ref_out, stats = reference_train(cfg, corpus.vocab.counts, [(corpus.tokens, corpus.offsets)],
                                             minibatch_words=16, unit_words=500)
    assert stats.epochs == 2 and stats.pairs > 0 and stats.loss_per_epoch[1] < stats.loss_per_epoch[0]
    assert not np.array_equal(ref_in, init_input_vectors(len(corpus.vocab), 12, 3))
    counts = corpus.vocab.counts
    prob, alias = word_noise_tables(counts, cfg.ns_exponent)
    units = plan_units([corpus.offsets], 500)
    schedule = Schedule.of(cfg, sum(u.words for u in units), 2)
    for shards in (1, 2, 3):
        w_in = init_input_vectors(len(counts), 12, 3)
        w_out = np.zeros_like(w_in)
        step = _BlockStep(w_in, w_out, cfg, prob, alias, shards)
        runner = UnitRunner(cfg, keep_probabilities(counts, cfg.sample), 16)
        for epoch in range(2):
            for unit in units:
                runner.run(corpus.tokens, corpus.offsets, unit, epoch, schedule, step)
        got_in = np.hstack([b.w_in for b in step.blocks])
        got_out = np.hstack([b.w_out for b in step.blocks])
        np.testing.assert_allclose(got_in, ref_in, atol=1e-5)
        np.testing.assert_allclose(got_out, ref_out, atol=1e-5)
        if shards == 1:
            assert np.array_equal(got_in, ref_in)


def test_units_and_seeds():
    units = plan_units([np.array([0, 5, 10, 15]), np.array([0, 4, 8])], 8)
    assert [(u.part, u.s_lo, u.s_hi, u.index, u.base) for u in units] == [
        (0, 0, 2, 0, 0), (0, 2, 3, 1, 10), (1, 0, 2, 2, 15)]
    assert sum(u.words for u in units) == 23
    assert isinstance(Unit(0, 0, 1, 0, 0, 1), Unit)
    assert len({int(minibatch_seed(9, i)) for i in range(1000)}) == 1000


def test_range_reader_reads_what_the_corpus_reader_reads(tmp_path):
    import gzip
    import zlib

    from parvec.corpus import RangeSentences, ReadOptions, TextSentences, byte_ranges

    rng = np.random.default_rng(7)
    words = [f"wörd{i}" for i in range(50)]
    lines = [" ".join(rng.choice(words, n)) for n in (3, 0, 25, 7, 1)] + ["  lead  and trail  "]
    path = tmp_path / "c.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    opts = ReadOptions(min_count=1, max_sentence_length=10, lowercase=True)
    expected = list(TextSentences(path, opts))
    assert [s for a, b in byte_ranges(path, 1) for s in RangeSentences(path, a, b, opts)] == expected
    for n in (2, 3, 7):  # a boundary may cut a line in two sentences; no token is lost, split or doubled
        got = [s for a, b in byte_ranges(path, n) for s in RangeSentences(path, a, b, opts)]
        assert sorted(w for s in got for w in s) == sorted(w for s in expected for w in s)
        assert all(0 < len(s) <= 10 for s in got)
    gz = tmp_path / "c.txt.gz"
    gz.write_bytes(gzip.compress(path.read_bytes()))
    # a compressed file is one range, read whole (decompressed) by one worker: what the corpus reader reads
    reader = RangeSentences(gz, 0, None, opts)
    assert list(reader) == list(TextSentences(gz, opts)) == expected
    assert reader.fingerprint == (len(path.read_bytes()), zlib.crc32(path.read_bytes()))


def test_minibatch_left_out_keeps_the_words_in_flight():
    # interleaved: 4096 words in flight over all client threads matched one process (3 seeds) at sample 1e-4, but
    # exploded at 1e-3 (parvec's default), where 1024 kept one process's loss; contiguous: 2 clients x 2 threads x
    # 256 words made the loss climb on the 17M-token corpus, 2 x 1 x 256 did not
    from parvec.config import TrainConfig
    from parvec.distributed import Cluster
    from parvec.distributed.sharded_settings import resolve

    def mb(clients, threads, given=None, formation="interleaved", sample=1e-4):
        # split calls: the rule bounds how stale their dot products get (fused calls have none: test_fused_calls)
        cluster = Cluster("local:4", mode="sharded", clients=clients, threads_per_actor=threads,
                          minibatch_words=given, minibatch_formation=formation, shard_calls="split")
        return resolve(cluster, TrainConfig(sample=sample))

    assert mb(2, 2).minibatch_words == 1024 and mb(2, 2).minibatch_words_in_flight == 4096
    assert mb(2, 1).minibatch_words == 2048 and mb(1, 1).minibatch_words == 4096
    assert mb(2, 2, sample=1e-3).minibatch_words == 256 and mb(1, 1, sample=1e-3).minibatch_words == 1024
    assert mb(1, 1, sample=0).minibatch_words == 1024  # no subsampling: the light rule
    assert mb(64, 8).minibatch_words == 16  # at least 16
    contiguous = {(c, t): mb(c, t, formation="contiguous") for c, t in ((2, 2), (2, 1), (1, 1))}
    assert contiguous[2, 2].minibatch_words == 128 and contiguous[2, 2].minibatch_words_in_flight == 512
    assert contiguous[2, 1].minibatch_words == 256 and contiguous[1, 1].minibatch_words == 256
    assert mb(2, 2, given=256).minibatch_words == 256  # a given size is kept


# --------------------------------------------------------------------------- negatives per window (Ji et al.'s batches)
def _window_batches(mb: Minibatch, window: int, outs: np.ndarray, negative: int):
    """(contexts, [center, negatives]) of every input word, from the minibatch and the drawn rows."""
    stride = 1 + negative
    batches = []
    m = 0
    for start, n, a, b in mb.seg.tolist():
        run = mb.seq[start:start + n]
        for i in range(a, b):
            r = int(mb.shrink[m])
            ctx = [int(run[j]) for j in range(max(0, i - window + r), min(n, i + window - r + 1)) if j != i]
            batches.append((ctx, [int(t) for t in outs[m * stride:(m + 1) * stride]]))
            assert batches[-1][1][0] == int(run[i])  # the shared outputs start with the center
            m += 1
    return batches


def _window_rows(mb, window, negative, prob, alias):
    n_in = len(mb.shrink)
    ins = np.empty(mb.pairs, np.int64)
    outs = np.empty(n_in * (1 + negative), np.int64)
    first = np.empty(n_in + 1, np.int64)
    n = K.window_rows(mb.seq, mb.seg, mb.shrink, window, negative, prob, alias, mb.seed, ins, outs, first)
    assert n == mb.pairs
    return ins, outs, first


@pytest.mark.parametrize("negative", [5, 3])  # 5: the six-row blocks; 3: the rows one by one
def test_window_dotprod_matches_numpy_in_the_pair_layout(negative):
    rng = np.random.default_rng(11)
    vocab, dim, window = 12, 10, 2
    prob, alias = word_noise_tables(rng.integers(1, 50, vocab), TrainConfig().ns_exponent)
    w_in = rng.standard_normal((vocab, dim)).astype(np.float32)
    w_out = rng.standard_normal((vocab, dim)).astype(np.float32)
    mb = _tiny_minibatch(rng, vocab, window)
    ins, outs, first = _window_rows(mb, window, negative, prob, alias)
    batches = _window_batches(mb, window, outs, negative)
    # The pairs are the per-pair algorithm's (input m's context words in order), only the orientation flips.
    assert [(c, x) for x_list, (c, *_) in batches for x in x_list] == [(c, x) for c, x in _pairs_of(mb, window)]
    assert all(t != center for _, (center, *negs) in batches for t in negs)  # never the center
    expected = [w_in[x] @ w_out[t] for ctx, rows in batches for x in ctx for t in rows]
    out = np.empty(mb.pairs * (1 + negative), np.float32)
    assert K.dotprod_window(w_in, w_out, mb.seq, mb.seg, mb.shrink, window, negative, prob, alias, mb.seed,
                            out) == len(out)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)
    again = np.empty_like(out)
    K.dotprod_window_rows(w_in, w_out, ins, outs, first, again)
    assert np.array_equal(again, out)
    # Column blocks sum to the whole.
    total = np.zeros_like(out)
    for s in range(3):
        lo, hi = K.column_range(s, 3, dim)
        part = np.empty_like(out)
        K.dotprod_window(np.ascontiguousarray(w_in[:, lo:hi]), np.ascontiguousarray(w_out[:, lo:hi]), mb.seq,
                         mb.seg, mb.shrink, window, negative, prob, alias, mb.seed, part)
        total += part
    np.testing.assert_allclose(total, out, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("negative", [5, 4])
def test_window_adjust_applies_each_batch_from_the_rows_as_they_were_at_its_start(negative):
    rng = np.random.default_rng(12)
    vocab, dim, window = 6, 8, 2  # rows repeat inside a batch and across batches
    prob, alias = word_noise_tables(rng.integers(1, 9, vocab), TrainConfig().ns_exponent)
    w_in = rng.standard_normal((vocab, dim)).astype(np.float32)
    w_out = rng.standard_normal((vocab, dim)).astype(np.float32)
    mb = _tiny_minibatch(rng, vocab, window)
    ins, outs, first = _window_rows(mb, window, negative, prob, alias)
    coef = rng.standard_normal(mb.pairs * (1 + negative)).astype(np.float32)
    u, v = w_in.astype(np.float64), w_out.astype(np.float64)
    k = 0
    batches = _window_batches(mb, window, outs, negative)
    rows_of = [set(ctx + rows) for ctx, rows in batches]
    assert len(batches) > 1 and any(a & b for a, b in zip(rows_of[:-1], rows_of[1:], strict=True))  # shared rows
    for ctx, rows in batches:  # Ji et al.'s batches in order, each from the rows at its start
        du, dv = np.zeros_like(u), np.zeros_like(v)
        for x in ctx:
            for t in rows:
                du[x] += coef[k] * v[t]
                dv[t] += coef[k] * u[x]
                k += 1
        u, v = u + du, v + dv
    a_in, a_out = w_in.copy(), w_out.copy()
    assert K.adjust_window(w_in, w_out, mb.seq, mb.seg, mb.shrink, window, negative, prob, alias, mb.seed,
                           coef) == mb.pairs
    np.testing.assert_allclose(w_in, u, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(w_out, v, rtol=1e-5, atol=1e-5)
    K.adjust_window_rows(a_in, a_out, ins, outs, first, coef)  # the kept rows: the same update
    assert np.array_equal(a_in, w_in) and np.array_equal(a_out, w_out)


def test_a_window_step_is_minus_alpha_times_the_gradient_of_its_loss():
    rng = np.random.default_rng(13)
    vocab, dim, window, negative, alpha = 7, 5, 2, 2, 0.01
    prob, alias = word_noise_tables(rng.integers(1, 9, vocab), TrainConfig().ns_exponent)
    w_in = (0.3 * rng.standard_normal((vocab, dim))).astype(np.float32)
    w_out = (0.3 * rng.standard_normal((vocab, dim))).astype(np.float32)
    mb = _tiny_minibatch(rng, vocab, window, inputs=1)  # one batch: later batches would see its update
    assert mb.inputs == 1 and mb.pairs >= 2
    mb.alpha[:] = alpha
    _, outs, _ = _window_rows(mb, window, negative, prob, alias)
    batches = _window_batches(mb, window, outs, negative)

    def loss(u, v):
        return sum(np.logaddexp(0, -(u[x] @ v[c])) + sum(np.logaddexp(0, u[x] @ v[t]) for t in negs)
                   for ctx, (c, *negs) in batches for x in ctx)

    u0, v0 = w_in.astype(np.float64), w_out.astype(np.float64)
    grads = []
    for w in (u0, v0):
        g = np.zeros_like(w)
        for idx in np.ndindex(w.shape):
            old = w[idx]
            w[idx] = old + 1e-6
            up = loss(u0, v0)
            w[idx] = old - 1e-6
            g[idx] = (up - loss(u0, v0)) / 2e-6
            w[idx] = old
        grads.append(g)
    f = np.empty(mb.pairs * (1 + negative), np.float32)
    K.dotprod_window(w_in, w_out, mb.seq, mb.seg, mb.shrink, window, negative, prob, alias, mb.seed, f)
    coef = np.empty_like(f)
    assert K.coefficients(f, mb.n_ctx, mb.alpha, negative, coef) == pytest.approx(loss(u0, v0), rel=1e-5)
    K.adjust_window(w_in, w_out, mb.seq, mb.seg, mb.shrink, window, negative, prob, alias, mb.seed, coef)
    np.testing.assert_allclose(w_in - u0, -alpha * grads[0], atol=1e-6)
    np.testing.assert_allclose(w_out - v0, -alpha * grads[1], atol=1e-6)


def test_window_column_blocks_train_the_window_reference_and_rank_related_words():
    words = [f"w{i}" for i in range(30)]
    rng = np.random.default_rng(5)
    corpus = EncodedCorpus.from_sentences([list(rng.choice(words, 40)) for _ in range(60)], min_count=1)
    cfg = TrainConfig(dim=12, window=3, negative=3, epochs=2, sample=1e-2, seed=3)
    ref_in, ref_out, stats = reference_train(cfg, corpus.vocab.counts, [(corpus.tokens, corpus.offsets)],
                                             minibatch_words=16, unit_words=500, negatives_per="window")
    pair_in, _, _ = reference_train(cfg, corpus.vocab.counts, [(corpus.tokens, corpus.offsets)],
                                    minibatch_words=16, unit_words=500, negatives_per="pair")
    assert stats.pairs > 0 and stats.loss_per_epoch[1] < stats.loss_per_epoch[0]
    assert not np.allclose(ref_in, pair_in)  # another algorithm, not the per-pair one under a new name
    counts = corpus.vocab.counts
    prob, alias = word_noise_tables(counts, cfg.ns_exponent)
    units = plan_units([corpus.offsets], 500)
    schedule = Schedule.of(cfg, sum(u.words for u in units), 2)
    w_in = init_input_vectors(len(counts), 12, 3)
    w_out = np.zeros_like(w_in)
    blocks = [LocalStep(np.ascontiguousarray(w_in[:, lo:hi]), np.ascontiguousarray(w_out[:, lo:hi]), cfg, prob,
                        alias, "window") for lo, hi in (K.column_range(s, 2, 12) for s in range(2))]
    step = _BlockStep.__new__(_BlockStep)
    step.shards, step.blocks = 2, blocks
    runner = UnitRunner(cfg, keep_probabilities(counts, cfg.sample), 16)
    for epoch in range(2):
        for unit in units:
            runner.run(corpus.tokens, corpus.offsets, unit, epoch, schedule, step)
    np.testing.assert_allclose(np.hstack([b.w_in for b in blocks]), ref_in, atol=1e-5)
    np.testing.assert_allclose(np.hstack([b.w_out for b in blocks]), ref_out, atol=1e-5)


def test_window_batches_learn_topics_as_the_pair_algorithm_does():
    # Two topics whose words never meet: after training, a word's nearest neighbour is from its own topic.
    rng = np.random.default_rng(8)
    topics = [[f"a{i}" for i in range(8)], [f"b{i}" for i in range(8)]]
    sents = [list(rng.choice(topics[k % 2], 12)) for k in range(400)]
    corpus = EncodedCorpus.from_sentences(sents, min_count=1)
    cfg = TrainConfig(dim=16, window=3, negative=5, epochs=5, sample=0, seed=2, alpha=0.05)
    w_in, _, _ = reference_train(cfg, corpus.vocab.counts, [(corpus.tokens, corpus.offsets)], minibatch_words=32,
                                 unit_words=2000, negatives_per="window")
    unit = w_in / np.linalg.norm(w_in, axis=1, keepdims=True)
    sim = unit @ unit.T
    np.fill_diagonal(sim, -2)
    topic = np.array([w[0] for w in corpus.vocab.words])
    assert np.mean(topic[sim.argmax(axis=1)] == topic) == 1.0


def test_a_float16_wire_trains_what_float32_trains_to_its_rounding():
    words = [f"w{i}" for i in range(30)]
    rng = np.random.default_rng(5)
    corpus = EncodedCorpus.from_sentences([list(rng.choice(words, 40)) for _ in range(60)], min_count=1)
    cfg = TrainConfig(dim=12, window=3, negative=3, epochs=2, sample=1e-2, seed=3)
    part = [(corpus.tokens, corpus.offsets)]
    full = reference_train(cfg, corpus.vocab.counts, part, minibatch_words=16, unit_words=500)
    half = reference_train(cfg, corpus.vocab.counts, part, minibatch_words=16, unit_words=500, wire="float16")
    assert not np.array_equal(half[0], full[0])  # the rounding is applied
    np.testing.assert_allclose(half[0], full[0], atol=2e-3)
    assert half[2].loss_per_epoch == pytest.approx(full[2].loss_per_epoch, rel=1e-3)


def test_negatives_per_is_checked():
    from parvec.distributed.shard_kernels import shard_kernels
    from parvec.errors import ParvecError

    with pytest.raises(ParvecError, match="negatives_per must be one of pair, window; got 'row'"):
        shard_kernels("row")
    with pytest.raises(ParvecError, match="wire_floats must be one of float32, float16; got 'bf16'"):
        reference_train(TrainConfig(), np.ones(3, np.int64), [], wire="bf16")
