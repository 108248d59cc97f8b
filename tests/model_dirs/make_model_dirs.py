"""Model directories as the code before :mod:`parvec.model_io` (commit 6f3980e) wrote them: tests/test_model_io.py
loads them to show that saved models stay readable.

``PYTHONPATH=src python tests/model_dirs/make_model_dirs.py OUT`` (run in a checkout of that commit) writes

- ``OUT/sg``: a skip-gram model with negative sampling (``Word2Vec.save``);
- ``OUT/cbow_hs``: CBOW with hierarchical softmax and negatives (``syn1.npy`` and the Huffman fingerprint);
- ``OUT/mid``: a mid-epoch checkpoint of a graph run (``position``, ``run_id``, ``schedule_anchor``,
  ``checkpoint_every``, ``graph_run``);
- ``OUT/sharded``: what ``parvec train --mode sharded --save-model`` wrote (``write_model_dir``: no CRC-32s).

Each is a few hundred bytes per file: 9 words, 4 dimensions.  The values the test expects are the constants below.

Example:
    PYTHONPATH=src python tests/model_dirs/make_model_dirs.py tests/model_dirs
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

SENTENCES = [["the", "cat", "sat", "on", "the", "mat"], ["a", "dog", "ran", "to", "the", "cat"]] * 10
COMMON = {"vector_size": 4, "window": 2, "negative": 2, "min_count": 1, "epochs": 1, "workers": 1, "seed": 5}
POSITION = {"epoch": 1, "chunks_done": 3, "words_done": 30, "words": [120, 30], "pairs": [400, 100],
            "losses": [2.5, 2.25], "alpha": 0.0125}
GRAPH_RUN = {"command": "deepwalk", "graph": {"source": "g.txt", "sha256": "ab" * 32, "nodes": 9, "edges": 20,
                                              "weighted": False, "directed": False},
             "walks": {"walk_length": 6, "num_walks": 2, "p": 1.0, "q": 1.0, "seed": 5, "batch_walks": 4,
                       "tokens": 120, "crc32": 12345}}
RUN_ID = "0123456789abcdef0123456789abcdef"


def main(out: Path) -> None:
    from parvec import model_io
    from parvec.corpus import ReadOptions
    from parvec.engine import Position
    from parvec.word2vec import Word2Vec

    out.mkdir(parents=True, exist_ok=True)
    Word2Vec(sentences=SENTENCES, **COMMON).save(out / "sg")
    Word2Vec(sentences=SENTENCES, sg=0, hs=1, **COMMON).save(out / "cbow_hs")
    mid = Word2Vec(sentences=SENTENCES, **COMMON | {"epochs": 2})
    mid.epochs_trained, mid.run_id, mid.graph_run = 1, RUN_ID, GRAPH_RUN
    mid.checkpoint_every, mid.schedule_anchor = "30", (60.0, 0.02)
    mid.save(out / "mid", position=Position.from_json(POSITION))
    src = Word2Vec(sentences=SENTENCES, **COMMON | {"algo": "classic"})
    (out / "sharded").mkdir()
    np.save(out / "vec.npy", src.wv.vectors)
    np.save(out / "syn.npy", src.syn1neg)
    # what the sharded pipeline's --save-model wrote then: its exported matrices moved into a model directory
    model_io.save(out / "sharded", model_io.SavedModel(
        config=src.config, vocab=src.vocab, vectors=np.load(out / "vec.npy", mmap_mode="r"),
        syn1neg=np.load(out / "syn.npy", mmap_mode="r"), read_options=ReadOptions(min_count=1).__dict__,
        epochs_trained=1, corpus_words=src.corpus_words, raw_words=src.raw_words),
        move_files={model_io.VECTORS: out / "vec.npy", model_io.SYN1NEG: out / "syn.npy"})


if __name__ == "__main__":
    main(Path(sys.argv[1]))
