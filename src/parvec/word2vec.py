"""``Word2Vec``: the gensim-shaped model (vocabulary, input and output vectors, training, save/load).

The model is a thin layer: text becomes an :class:`~parvec.corpus.EncodedCorpus`, the
:class:`~parvec.trainer.Trainer` runs the chosen kernel, and ``model.wv`` is a
:class:`~parvec.keyedvectors.KeyedVectors` over the input vectors.

A saved model is a directory of arrays and JSON (no pickle): ``model.json`` (parameters, vocabulary
counts, epochs trained), ``vectors.npy`` (input vectors), ``syn1neg.npy`` (output vectors),
``vocab.json``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np

from parvec.config import TrainConfig, default_algo, default_threads
from parvec.corpus import EncodedCorpus, ReadOptions
from parvec.errors import ParvecError
from parvec.keyedvectors import KeyedVectors
from parvec.trainer import Trainer, TrainStats, available_memory, estimate_memory, init_input_vectors
from parvec.vocab import Vocab

MODEL_FORMAT = "parvec-word2vec"
MODEL_VERSION = 1


_MODEL_FILES = ("vectors.npy", "syn1neg.npy", "vocab.json")


def _sha256(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def _rlimit_headroom() -> int | None:
    """Bytes this process may still allocate under its RLIMIT_DATA/RLIMIT_AS caps (None: not capped)."""
    import resource

    room = None
    for limit, field_name in ((resource.RLIMIT_DATA, "VmData:"), (resource.RLIMIT_AS, "VmSize:")):
        soft = resource.getrlimit(limit)[0]
        if soft == resource.RLIM_INFINITY:
            continue
        used = 0
        try:
            with open("/proc/self/status") as f:
                used = next((int(line.split()[1]) * 1024 for line in f if line.startswith(field_name)), 0)
        except OSError:
            pass
        room = max(0, soft - used) if room is None else min(room, max(0, soft - used))
    return room


class Word2Vec:
    """Skip-gram with negative sampling, trained by ``classic``, ``hogbatch`` (default) or ``par``; with
    ``device="cuda"`` on a GPU by ``full-w2v`` (the default there) or ``par`` (docs/gpu.md).

    Parameter names follow gensim's ``Word2Vec`` (``vector_size``, ``workers``, ``epochs``, ...).  Give
    ``corpus_file`` (a text file, one sentence per line; .gz/.bz2/.xz read directly; or several: a list of
    paths, a directory or a glob pattern, read as one corpus), ``sentences``
    (a restartable iterable of token lists) or ``corpus`` (an :class:`EncodedCorpus`) to build the
    vocabulary and train at once; or call :meth:`build_vocab` and :meth:`train` yourself.

    With ``workers=1`` and a fixed ``seed`` a run repeats bit for bit.  With more workers, threads
    update shared vectors without locks (Hogwild, as word2vec.c), so runs differ slightly.

    Example:
        >>> model = Word2Vec(sentences=[["the", "cat", "sat"]] * 50, vector_size=16, min_count=1,
        ...                  epochs=2, workers=1)
        >>> model.wv["cat"].shape
        (16,)
    """

    def __init__(
        self,
        sentences: Iterable[list[str]] | None = None,
        corpus_file: str | os.PathLike[str] | list[str | os.PathLike[str]] | None = None,
        corpus: EncodedCorpus | None = None,
        vector_size: int = 100,
        window: int = 5,
        negative: int = 5,
        sample: float = 1e-3,
        min_count: int = 5,
        max_vocab_size: int | None = None,
        max_final_vocab: int | None = None,
        epochs: int = 5,
        alpha: float = 0.025,
        min_alpha: float | None = None,
        workers: int | None = None,
        seed: int = 1,
        algo: str | None = None,
        ns_exponent: float = 0.75,
        max_sentence_length: int = 10000,
        batch_size: int = 0,
        par_batch: int = 24,
        compute_loss: bool = True,
        progress: bool | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        lowercase: bool = False,
        unicode_errors: str = "strict",
        sg: int = 1,
        hs: int = 0,
        checkpoint_dir: str | os.PathLike[str] | None = None,
        device: str = "cpu",
        cluster: Any = None,
    ) -> None:
        if sg != 1 or hs != 0:
            raise ParvecError("parvec trains skip-gram with negative sampling only (sg=1, hs=0)")
        if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int | np.integer)
                                    or workers < 1):
            raise ParvecError(f"workers must be a positive integer, got {workers!r} (None, the default, uses all "
                              f"cores: {default_threads()} here)")
        self.config = TrainConfig(
            algo=algo or default_algo(device), dim=vector_size, window=window, negative=negative, sample=sample,
            alpha=alpha,
            min_alpha=min_alpha, epochs=epochs, threads=default_threads() if workers is None else workers, seed=seed,
            ns_exponent=ns_exponent, max_sentence_length=max_sentence_length, batch_size=batch_size,
            par_batch=par_batch, compute_loss=compute_loss, progress=progress, device=device,
        ).validate()
        # Where training runs: None = this process; a parvec.Cluster (or "local:2") = a Ray cluster.
        self.cluster = None
        if cluster is not None:
            from parvec.distributed.cluster import as_cluster

            self.cluster = as_cluster(cluster)
            if device != "cpu":
                raise ParvecError("cluster= and device='cuda' cannot be combined yet: choose one")
        self.run_report: dict[str, Any] = {}  # the last run's driver figures (cluster/GPU), for --report
        # A parvec.runlog.RunLog here records the time series and epoch records `parvec report` draws;
        # with eval_every_epoch the word-similarity and analogy sets are scored after every epoch.
        self.run_log: Any = None
        self.eval_every_epoch = False
        self.read_options = ReadOptions(
            min_count=min_count, max_vocab_size=max_vocab_size, max_final_vocab=max_final_vocab,
            max_sentence_length=max_sentence_length, lowercase=lowercase, unicode_errors=unicode_errors,
        )
        self.read_options.validate()
        self.cache_dir = cache_dir
        self.vocab: Vocab | None = None
        self.syn1neg: np.ndarray | None = None
        self.wv: KeyedVectors | None = None
        self.epochs_trained = 0
        self.corpus_words = 0
        self.raw_words = 0
        self.stats = TrainStats()
        self.checkpoint_dir = checkpoint_dir
        if sum(x is not None for x in (sentences, corpus_file, corpus)) > 1:
            raise ParvecError("give only one of sentences, corpus_file and corpus")
        if sentences is not None or corpus_file is not None or corpus is not None:
            encoded = self.build_vocab(sentences=sentences, corpus_file=corpus_file, corpus=corpus)
            self.train(corpus=encoded)

    # ------------------------------------------------------------------ gensim-style attributes
    @property
    def vector_size(self) -> int:
        return self.config.dim

    @property
    def epochs(self) -> int:
        return self.config.epochs

    @property
    def workers(self) -> int:
        return self.config.threads

    # ------------------------------------------------------------------ vocabulary
    def encode(
        self,
        sentences: Iterable[list[str]] | None = None,
        corpus_file: str | os.PathLike[str] | list[str | os.PathLike[str]] | None = None,
        corpus: EncodedCorpus | None = None,
        vocab: Vocab | None = None,
    ) -> EncodedCorpus:
        """Turn whichever input was given into an :class:`EncodedCorpus` (against ``vocab`` if given).

        Example:
            >>> Word2Vec(min_count=1).encode(sentences=[["a", "b"]]).n_tokens
            2
        """
        given = [x is not None for x in (sentences, corpus_file, corpus)]
        if sum(given) != 1:
            raise ParvecError("give exactly one of sentences, corpus_file and corpus")
        o = self.read_options
        if corpus is not None:
            if vocab is not None and corpus.vocab.words != vocab.words:
                raise ParvecError("the encoded corpus was built with a different vocabulary than the model's")
            return corpus
        if corpus_file is not None:
            return EncodedCorpus.from_file(corpus_file, o, cache_dir=self.cache_dir, vocab=vocab)
        return EncodedCorpus.from_sentences(
            sentences, min_count=o.min_count, max_vocab_size=o.max_vocab_size,  # type: ignore[arg-type]
            max_final_vocab=o.max_final_vocab, max_sentence_length=o.max_sentence_length, vocab=vocab,
        )

    def build_vocab(
        self,
        sentences: Iterable[list[str]] | None = None,
        corpus_file: str | os.PathLike[str] | list[str | os.PathLike[str]] | None = None,
        corpus: EncodedCorpus | None = None,
    ) -> EncodedCorpus:
        """Build the vocabulary, allocate the vectors, and return the encoded corpus.

        Example:
            >>> m = Word2Vec(min_count=1, vector_size=8); enc = m.build_vocab(sentences=[["a", "b", "a"]])
            >>> m.wv.index_to_key
            ['a', 'b']
        """
        encoded = self.encode(sentences=sentences, corpus_file=corpus_file, corpus=corpus)
        self.vocab = encoded.vocab
        self.check_memory(encoded)
        # word2vec.c's initial vectors, as every trainer starts from (the GPU's algorithms have no CPU Trainer)
        n, dim = len(self.vocab), self.config.dim
        try:
            self._set_vectors(init_input_vectors(n, dim, self.config.seed), np.zeros((n, dim), dtype=np.float32))
        except MemoryError:
            raise ParvecError(
                f"out of memory allocating the model ({2 * n * dim * 4 / 2**30:.2f} GiB: vectors {n:,} x {dim} x 2); "
                "lower --dim, raise --min-count, or train it column-sharded across processes (--cluster ... "
                "--mode sharded)"
            ) from None
        self.corpus_words = encoded.n_tokens
        self.raw_words = encoded.raw_words
        self.epochs_trained = 0
        return encoded

    def check_memory(self, encoded: EncodedCorpus) -> int:
        """Bytes the model and encoded corpus take; :class:`ParvecError` if over the available memory."""
        # A memory-mapped token array (a large corpus, or one from the cache) is read from disk, not held.
        in_memory_tokens = 0 if isinstance(encoded.tokens, np.memmap) else encoded.n_tokens
        need = estimate_memory(len(encoded.vocab), self.config.dim, in_memory_tokens, encoded.n_sentences)
        avail = available_memory()
        if avail is not None and need > avail:
            raise ParvecError(
                f"training needs about {need / 2**30:.1f} GiB (vectors {len(encoded.vocab)} x {self.config.dim} x 2, "
                f"plus the encoded corpus) but only {avail / 2**30:.1f} GiB is available; "
                "lower --dim, raise --min-count or set --max-final-vocab"
            )
        # A process capped below the model (ulimit -d / -v, prlimit; RLIMIT_DATA or RLIMIT_AS) stops here, before
        # training, with the numbers, rather than failing inside an allocation.
        # The vectors, the per-word tables beside them (counts, keep, alias) and some working room.
        vectors = 2 * len(encoded.vocab) * self.config.dim * 4
        vectors_and_tables = vectors + 24 * len(encoded.vocab) + (64 << 20)
        room = _rlimit_headroom()
        if room is not None and vectors_and_tables > room:
            raise ParvecError(
                f"out of memory: the model needs {vectors / 2**30:.2f} GiB (vectors {len(encoded.vocab):,} x "
                f"{self.config.dim} x 2) but this process's memory limit (RLIMIT_DATA/RLIMIT_AS, e.g. ulimit -d) "
                f"leaves {room / 2**30:.2f} GiB; raise the limit, lower --dim, raise --min-count, or train it "
                "column-sharded across processes (--cluster ... --mode sharded)"
            )
        return need

    def _set_vectors(self, w_in: np.ndarray, w_out: np.ndarray) -> None:
        assert self.vocab is not None
        self.syn1neg = w_out
        self.wv = KeyedVectors(w_in, list(self.vocab.words), counts=self.vocab.counts)

    # ------------------------------------------------------------------ training
    def train(
        self,
        sentences: Iterable[list[str]] | None = None,
        corpus_file: str | os.PathLike[str] | list[str | os.PathLike[str]] | None = None,
        corpus: EncodedCorpus | None = None,
        epochs: int | None = None,
        resume: bool = False,
        callbacks: Iterable[Callable[[Word2Vec, int, TrainStats], None]] = (),
    ) -> TrainStats:
        """Train (or continue training) on a corpus encoded against the model's vocabulary.

        With ``resume=True`` a model loaded from a checkpoint finishes its planned epochs with the
        learning-rate schedule and random streams it would have had uninterrupted; otherwise
        ``epochs`` more epochs run with a fresh linear schedule.  Words outside the vocabulary
        are skipped.  ``callbacks`` are called as ``cb(model, epoch, stats)`` after each epoch.

        Example:
            >>> model.train(corpus_file="more.txt", epochs=1)  # doctest: +SKIP
        """
        if self.vocab is None or self.wv is None:
            raise ParvecError("build the vocabulary first (build_vocab), or pass the corpus to Word2Vec(...)")
        encoded = self.encode(sentences=sentences, corpus_file=corpus_file, corpus=corpus, vocab=self.vocab)
        total_epochs = self.config.epochs if epochs is None else epochs
        start = 0
        if resume:
            total_epochs = self.config.epochs
            start = self.epochs_trained
            if start >= total_epochs:
                return TrainStats()
        if total_epochs < 1:
            raise ParvecError(f"epochs must be a positive integer, got {total_epochs}")
        trainer = self._make_trainer()
        callbacks = list(callbacks)
        base_epochs = 0 if resume else self.epochs_trained
        eval_files = self._eval_files() if self.eval_every_epoch else None
        run_log = self.run_log
        if run_log is not None:
            run_log.new_call()
            if hasattr(trainer, "on_progress"):
                trainer.on_progress = run_log.progress
        eval_seconds = 0.0
        started = time.perf_counter()

        def on_epoch_end(epoch: int, stats: TrainStats) -> None:
            nonlocal eval_seconds
            self.epochs_trained = base_epochs + epoch + 1
            if run_log is not None:
                scores, t_eval = None, None
                if eval_files is not None:
                    t0 = time.perf_counter()
                    scores = self._epoch_scores(eval_files)
                    t_eval = time.perf_counter() - t0
                    eval_seconds += t_eval
                    run_log.pause(t_eval)
                # The schedule's rate at this epoch's end (a resumed run's epochs count from the first).
                done = (epoch + 1) / total_epochs
                lr = self.config.alpha - (self.config.alpha - self.config.final_alpha) * min(1.0, done)
                run_log.epoch_end(epoch=base_epochs + epoch, words=stats.words_per_epoch[-1] if stats.words_per_epoch
                                  else 0, loss=stats.loss_per_epoch[-1] if stats.loss_per_epoch else None,
                                  seconds=time.perf_counter() - started - eval_seconds, lr=lr, scores=scores,
                                  eval_seconds=t_eval)
            if self.checkpoint_dir is not None:
                self.save(Path(self.checkpoint_dir) / "checkpoint")
            for cb in callbacks:
                cb(self, epoch, stats)

        stats = trainer.train(encoded, epochs=total_epochs, on_epoch_end=on_epoch_end, start_epoch=start)
        self.epochs_trained = base_epochs + total_epochs
        self.corpus_words = encoded.n_tokens
        self.raw_words = encoded.raw_words
        self.wv.fill_norms(force=True)  # vectors changed in place: drop cached unit vectors
        if eval_seconds:
            stats.seconds = max(0.0, stats.seconds - eval_seconds)  # words/s is training's, not evaluation's
        self.stats = stats
        self.run_report = trainer.report() if hasattr(trainer, "report") else {}
        return stats

    def _eval_files(self) -> dict[str, Path]:
        # Checked before training: a run asked to evaluate every epoch must not find out at epoch 1.
        from parvec.evaluation import EVAL_FILES, default_eval_paths

        files = default_eval_paths()
        if not files:
            raise ParvecError(
                "eval_every_epoch: no evaluation files found (looked for "
                f"{', '.join(EVAL_FILES.values())} in $PARVEC_EVAL_DIR and shared/data/eval)"
            )
        return files

    def _epoch_scores(self, files: dict[str, Path]) -> dict[str, float | None]:
        from parvec.evaluation import evaluate
        from parvec.runlog import headline_scores

        assert self.wv is not None
        self.wv.fill_norms(force=True)  # the vectors moved since the norms were cached
        return headline_scores(evaluate(self.wv, **{k: str(v) for k, v in files.items()}))

    def _make_trainer(self) -> Any:
        # The one choice of driver: this process's CPU Trainer, the GPU driver, or a cluster driver.
        # Each trains self.wv.vectors / self.syn1neg in place and returns TrainStats.
        assert self.vocab is not None and self.wv is not None and self.syn1neg is not None
        args = (self.config, self.vocab.counts, self.wv.vectors, self.syn1neg)
        if self.cluster is not None:
            from parvec.distributed import make_trainer

            driver = make_trainer(self.cluster, *args)
            driver.read_options = self.read_options  # how a node that cannot see the cache re-reads the input
            return driver
        if self.config.device == "cuda":
            from parvec.gpu import make_trainer as make_gpu_trainer

            return make_gpu_trainer(*args)
        return Trainer(self.config, self.vocab.counts, w_in=self.wv.vectors, w_out=self.syn1neg)

    # ------------------------------------------------------------------ persistence
    def save(self, path: str | os.PathLike[str]) -> None:
        """Save as a directory of ``.npy`` arrays and JSON (written to a temp dir, then renamed).

        Example:
            >>> model.save("model.parvec")  # doctest: +SKIP
        """
        if self.vocab is None or self.wv is None or self.syn1neg is None:
            raise ParvecError("nothing to save: the model has no vocabulary yet")
        path = Path(path)
        parent = path.parent if str(path.parent) else Path(".")
        if not parent.is_dir():
            raise ParvecError(f"{parent}: the output directory does not exist")
        tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.tmp-", dir=parent))
        try:
            np.save(tmp / "vectors.npy", self.wv.vectors)
            np.save(tmp / "syn1neg.npy", self.syn1neg)
            (tmp / "vocab.json").write_text(self.vocab.to_json(), encoding="utf-8")
            meta: dict[str, Any] = {
                "format": MODEL_FORMAT,
                "version": MODEL_VERSION,
                "config": self.config.to_dict() | {"min_alpha": self.config.min_alpha},
                "read_options": self.read_options.__dict__,
                "epochs_trained": self.epochs_trained,
                "corpus_words": self.corpus_words,
                "raw_words": self.raw_words,
                # Checksums: a flipped byte in the arrays or the vocabulary is refused at load, not used
                # (model.json itself is not covered: users edit it, e.g. its epochs to extend a run).
                "files": {name: _sha256(tmp / name) for name in _MODEL_FILES},
            }
            (tmp / "model.json").write_text(json.dumps(meta, indent=1), encoding="utf-8")
            if path.exists():
                old = Path(tempfile.mkdtemp(prefix=f".{path.name}.old-", dir=parent))
                os.replace(path, old / "x")
                os.replace(tmp, path)
                shutil.rmtree(old, ignore_errors=True)
            else:
                os.replace(tmp, path)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)

    @classmethod
    def load(cls, path: str | os.PathLike[str], mmap: str | None = None) -> Word2Vec:
        """Load a model saved by :meth:`save` (or an epoch-end checkpoint, ``CHECKPOINT_DIR/checkpoint``).

        A missing, truncated or damaged file, or a model.json that does not describe a model, raises
        :class:`ParvecError` naming the directory (found by tests/test_fuzz_model.py).

        Example:
            >>> model = Word2Vec.load("model.parvec")  # doctest: +SKIP
        """
        path = Path(path)
        try:
            return cls._load(path, mmap)
        except ParvecError as exc:
            if str(path) in str(exc):
                raise
            raise ParvecError(f"{path}: not a usable parvec model: {exc}") from None
        except (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError, EOFError, SyntaxError,
                OverflowError, MemoryError, UnicodeDecodeError, RecursionError) as exc:
            raise ParvecError(
                f"{path}: damaged or incomplete parvec model ({type(exc).__name__}: {exc})"[:600]
            ) from None

    @classmethod
    def _load(cls, path: Path, mmap: str | None) -> Word2Vec:
        meta_path = path / "model.json"
        if not meta_path.exists():
            raise ParvecError(f"{path}: not a parvec model directory (no model.json)")
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise ParvecError(f"{meta_path}: unreadable model description: {exc}") from None
        if not isinstance(meta, dict) or meta.get("format") != MODEL_FORMAT:
            raise ParvecError(f"{meta_path}: not a parvec Word2Vec model")
        if not isinstance(meta.get("config"), dict) or not isinstance(meta.get("read_options", {}), dict):
            raise ParvecError(f"{meta_path}: damaged model description (config or read_options not an object)")
        files = meta.get("files")
        if files is not None:
            if not isinstance(files, dict):
                raise ParvecError(f"{meta_path}: damaged model description (files)")
            for name in _MODEL_FILES:
                if _sha256(path / name) != files.get(name):
                    raise ParvecError(f"{path / name}: damaged (its SHA-256 differs from model.json's)")
        config = TrainConfig.from_dict(meta["config"])
        opts = meta.get("read_options", {})
        model = cls(
            vector_size=config.dim, window=config.window, negative=config.negative, sample=config.sample,
            min_count=opts.get("min_count", 5), max_vocab_size=opts.get("max_vocab_size"),
            max_final_vocab=opts.get("max_final_vocab"), epochs=config.epochs, alpha=config.alpha,
            min_alpha=config.min_alpha, workers=config.threads, seed=config.seed, algo=config.algo,
            ns_exponent=config.ns_exponent, max_sentence_length=config.max_sentence_length,
            batch_size=config.batch_size, par_batch=config.par_batch, compute_loss=config.compute_loss,
            progress=config.progress, lowercase=opts.get("lowercase", False), device=config.device,
            unicode_errors=opts.get("unicode_errors", "strict"),
        )
        model.config.par_h_factor = config.par_h_factor
        model.config.chunk_words = config.chunk_words
        data = json.loads((path / "vocab.json").read_text(encoding="utf-8"))
        words = data.get("words") if isinstance(data, dict) else None
        counts = data.get("counts") if isinstance(data, dict) else None
        if (not isinstance(words, list) or not isinstance(counts, list) or len(words) != len(counts)
                or not all(isinstance(w, str) for w in words) or len(set(words)) != len(words)
                or not all(isinstance(c, int) and not isinstance(c, bool) and 0 <= c < 2**63 for c in counts)):
            raise ParvecError(f"{path / 'vocab.json'}: damaged vocabulary (words and counts)")
        model.vocab = Vocab(list(words), np.array(counts, dtype=np.int64))
        w_in = np.load(path / "vectors.npy", mmap_mode=mmap, allow_pickle=False)
        w_out = np.load(path / "syn1neg.npy", mmap_mode=mmap, allow_pickle=False)
        if w_in.shape != (len(model.vocab), config.dim) or w_out.shape != w_in.shape:
            raise ParvecError(f"{path}: array shapes do not match the vocabulary and dimension")
        if w_in.dtype != np.float32 or w_out.dtype != np.float32:
            raise ParvecError(f"{path}: vectors.npy and syn1neg.npy must hold float32")
        model._set_vectors(np.ascontiguousarray(w_in), np.ascontiguousarray(w_out))
        model.epochs_trained = int(meta.get("epochs_trained", 0))
        model.corpus_words = int(meta.get("corpus_words", 0))
        model.raw_words = int(meta.get("raw_words", 0))
        return model

    def __repr__(self) -> str:
        n = len(self.vocab) if self.vocab is not None else 0
        return f"Word2Vec<vocab={n}, vector_size={self.config.dim}, algo={self.config.algo}, alpha={self.config.alpha}>"
