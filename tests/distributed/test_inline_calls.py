"""A sharded minibatch call and its answer travel as Ray arguments and return values of at most
``wire.INLINE_BYTES`` each (inside Ray's messages, not through its object store), and arrive whole."""

from __future__ import annotations

import numpy as np
import pytest

from parvec.distributed.client_actor import RayStep
from parvec.distributed.wire import (
    INLINE_BYTES,
    Minibatch,
    answer_parts,
    join_parts,
    pack_call,
    split_answer,
    split_call,
)


def _minibatch(inputs: int, seed: int = 3) -> Minibatch:
    # ``inputs`` words in runs of 4 with 2 context words on each side, 4 positives each.
    runs = inputs // 4
    seq = np.arange(runs * 8, dtype=np.int32) % 97
    seg = np.array([[8 * r, 8, 2, 6] for r in range(runs)], dtype=np.int32).reshape(-1, 4)
    return Minibatch(seq, seg, np.zeros(inputs, np.uint16), np.uint64(seed), np.full(inputs, 4, np.int32),
                     np.full(inputs, 0.025, np.float32), 4 * inputs)


@pytest.mark.parametrize("nbytes", [1, 1000, INLINE_BYTES, INLINE_BYTES + 1, 300_001])
def test_a_call_split_into_inline_parts_joins_back_to_itself(nbytes):
    buf = np.random.default_rng(nbytes).integers(0, 256, nbytes).astype(np.uint8)
    parts = split_call(buf)
    assert all(len(p) <= INLINE_BYTES for p in parts) and len(parts) == -(-nbytes // INLINE_BYTES)
    assert np.array_equal(join_parts(parts), buf)


@pytest.mark.parametrize(("n_out", "half"), [(0, True), (10, False), (49_152, True), (49_153, True), (73_728, False)])
def test_an_answer_takes_the_parts_the_client_asks_for(n_out, half):
    out = np.arange(n_out, dtype=np.float16 if half else np.float32)
    k = answer_parts(n_out, half)
    got = split_answer(out, k)
    parts = [got] if k == 1 else got
    assert len(parts) == k and all(p.nbytes <= INLINE_BYTES for p in parts)
    assert np.array_equal(join_parts(parts), out)


class _Method:
    # A shard method's handle as RayStep uses it: records each call's arguments and return values asked for.
    def __init__(self, calls: list, returns: int = 1) -> None:
        self.calls, self.returns = calls, returns

    def options(self, num_returns: int) -> _Method:
        return _Method(self.calls, num_returns)

    def remote(self, *args):
        self.calls.append((args, self.returns))
        return [f"ref{i}" for i in range(self.returns)] if self.returns > 1 else "ref"


class _Shard:
    def __init__(self) -> None:
        self.calls: list = []
        self.step = _Method(self.calls)


def test_a_step_sends_every_shard_its_call_in_inline_parts_and_asks_for_its_answer_in_inline_parts():
    shards = [_Shard(), _Shard()]
    step = RayStep(None, shards, negative=5, timeout_s=10.0, wire="float16")
    prev, nxt = _minibatch(2048, seed=1), _minibatch(4096, seed=2)
    coef = np.zeros(prev.pairs * 6, np.float32)
    step.submit((prev, coef), nxt)
    whole = pack_call((prev, coef), nxt, 5, "float16")
    assert whole.nbytes > INLINE_BYTES  # over Ray's inline limit
    for shard in shards:
        [(args, returns)] = shard.calls
        assert all(a.nbytes <= INLINE_BYTES for a in args) and np.array_equal(join_parts(args), whole)
        assert returns == answer_parts(nxt.pairs * 6, True) == 2  # 98,304 float16 dot products: two parts
    assert step.sent == whole.nbytes


@pytest.mark.ray
def test_a_shard_answers_a_call_in_parts_as_it_answers_it_whole(ray_session):
    from parvec.distributed.shard_actor import ShardActor, ShardSpec

    spec = ShardSpec(index=0, shards=2, n_words=97, dim=8, lo=0, hi=4, window=2, negative=5, seed=1)
    prob, alias = np.full(97, 1.0, np.float64), np.arange(97, dtype=np.int64)
    shard = ray_session.remote(ShardActor).options(max_concurrency=2).remote(spec, [prob, alias, None, None])
    step = RayStep(ray_session, [shard, shard], negative=5, timeout_s=60.0, wire="float16")
    nxt = _minibatch(2048)
    partials = step.result(step.submit(None, nxt))
    assert len(partials) == 2 and partials[0].dtype == np.float16 and len(partials[0]) == nxt.pairs * 6
    assert np.array_equal(partials[0], partials[1])  # the same shard, the same rows: the same dot products
    coef = np.zeros(nxt.pairs * 6, np.float32)
    assert step.result(step.submit((nxt, coef), None)) == []
    ray_session.kill(shard)
