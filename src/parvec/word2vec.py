"""``Word2Vec``: the gensim-shaped model (vocabulary, input and output vectors, training, save/load).

The model is a thin layer: text becomes an :class:`~parvec.corpus.EncodedCorpus`, the
:class:`~parvec.trainer.Trainer` runs the chosen kernel, and ``model.wv`` is a
:class:`~parvec.keyedvectors.KeyedVectors` over the input vectors.

A saved model is a directory of arrays and JSON (no pickle): ``model.json`` (parameters, epochs trained, a
CRC-32 of each file and, for checkpoints, the run's id and the exact position to resume from),
``vectors.npy`` (input vectors), ``syn1neg.npy`` (output vectors), ``vocab.json``; with hierarchical softmax
also ``syn1.npy`` (the Huffman tree's inner nodes, ``V-1`` rows).  :mod:`parvec.model_io` writes and reads
it; :mod:`parvec.checkpoints` finds a run's checkpoints.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from parvec import capabilities, checkpoints, drivers, model_io
from parvec.capabilities import mode_of
from parvec.config import TrainConfig, default_algo, default_threads
from parvec.corpus import EncodedCorpus, ReadOptions
from parvec.engine import CorpusDriver, Position, TrainStats
from parvec.errors import ParvecError
from parvec.evaluation import epoch_scorer
from parvec.keyedvectors import KeyedVectors
from parvec.model_tables import init_half_width, init_input_vectors
from parvec.run import KeptRun, Run, RunOptions, RunState, check_resume_corpus, graph_run_refusal
from parvec.schedule import Schedule
from parvec.vocab import Vocab

if TYPE_CHECKING:
    from parvec.distributed.cluster import Cluster


class Word2Vec(KeptRun):
    """Skip-gram (``sg=1``, the default) or CBOW (``sg=0``) with negative sampling.

    Skip-gram is trained by ``classic``, ``hogbatch`` (default) or ``par``; with ``device="cuda"`` on a
    GPU by ``full-w2v`` (the default there) or ``par`` (docs/gpu.md).  CBOW (``sg=0``; ``cbow_mean=1``
    averages the window's input vectors as word2vec.c, ``0`` sums them, as gensim) is trained on the CPU
    by ``hogbatch`` (default: the fast batched CBOW kernel, :mod:`parvec.kernels.cbow_batch`) or
    ``classic`` (word2vec.c's ``-cbow 1`` loop).  ``alpha=None`` starts at 0.025 for skip-gram and 0.05
    for CBOW, as word2vec.c and gensim; ``model.config.alpha`` holds the number used.

    Parameter names follow gensim's ``Word2Vec`` (``vector_size``, ``workers``, ``epochs``, ...).  Give
    ``corpus_file`` (a text file, one sentence per line; .gz/.bz2/.xz read directly; or several: a list of
    paths, a directory or a glob pattern, read as one corpus), ``sentences``
    (a restartable iterable of token lists) or ``corpus`` (an :class:`EncodedCorpus`) to build the
    vocabulary and train at once; or call :meth:`build_vocab` and :meth:`train` yourself.

    gensim's switches ``sg``, ``hs`` and ``cbow_mean`` (0/1) reach the configuration (parvec's default is
    skip-gram, ``sg=1``; gensim's is CBOW); ``callbacks`` are gensim ``CallbackAny2Vec``-shaped objects (or
    ``fn(model, epoch, stats)`` functions) for the training the constructor runs (see :meth:`train`).
    ``hs=1`` trains with hierarchical softmax (word2vec.c's Huffman tree; ``syn1`` holds its inner nodes),
    alone with ``negative=0`` or together with negative sampling; with ``sg=0`` it is CBOW (``cbow_mean``:
    average the window's vectors, else sum them).  It runs word2vec.c's loop (:mod:`parvec.kernels.hs`)
    for ``algo`` classic or hogbatch, on the CPU.

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
        alpha: float | None = None,
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
        cbow_mean: int = 1,
        checkpoint_dir: str | os.PathLike[str] | None = None,
        device: str = "cpu",
        cluster: Cluster | str | None = None,
        checkpoint_every: str | int | None = None,
        callbacks: Iterable[Any] = (),
        on_checkpoint_error: str = "stop",
    ) -> None:
        if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int | np.integer)
                                    or workers < 1):
            raise ParvecError(f"workers must be a positive integer, got {workers!r} (None, the default, uses all "
                              f"cores: {default_threads()} here)")
        self.config = TrainConfig(
            algo=algo or default_algo(device, bool(sg)), dim=vector_size, window=window, negative=negative,
            sample=sample, alpha=alpha,
            min_alpha=min_alpha, epochs=epochs, threads=default_threads() if workers is None else workers, seed=seed,
            ns_exponent=ns_exponent, max_sentence_length=max_sentence_length, batch_size=batch_size,
            par_batch=par_batch, compute_loss=compute_loss, progress=progress, device=device,
            sg=_zero_one("sg", sg), hs=_zero_one("hs", hs), cbow_mean=_zero_one("cbow_mean", cbow_mean),
        ).validate()
        # Where training runs: None = this process; a parvec.Cluster (or "local:2") = a Ray cluster.
        self.cluster: Cluster | None = None
        self.workers_given = workers is not None  # a cluster's replicas say so when they must run fewer threads
        if cluster is not None:
            from parvec.distributed.cluster import as_cluster

            self.cluster = as_cluster(cluster)
            if self.cluster.mode == "sharded" and algo not in (None, "hogbatch"):
                raise capabilities.sharded_algo_refusal(algo, "algo=")
            capabilities.check_placement(device, self.cluster)
            capabilities.check_config(self.config, self.cluster.mode)  # what its mode trains (parvec.capabilities)
        # How its runs are kept (checkpoints, the report's RunLog, per-epoch scores) and what they carry across
        # calls and resumes (parvec.run): read and set as attributes (KeptRun: checkpoint_dir, run_id, ...).
        self.run_options = RunOptions(checkpoint_dir=checkpoint_dir, checkpoint_every=checkpoint_every,
                                      on_checkpoint_error=on_checkpoint_error)
        self.state = RunState()
        self.read_options = ReadOptions(
            min_count=min_count, max_vocab_size=max_vocab_size, max_final_vocab=max_final_vocab,
            max_sentence_length=max_sentence_length, lowercase=lowercase, unicode_errors=unicode_errors,
        )
        self.read_options.validate()
        self.cache_dir = cache_dir
        self.vocab: Vocab | None = None
        self.syn1neg: np.ndarray | None = None
        self.syn1: np.ndarray | None = None  # hierarchical softmax: the Huffman tree's inner nodes (V-1 x dim)
        self.wv: KeyedVectors | None = None
        self.corpus_words = 0
        self.raw_words = 0
        self.stats = TrainStats()
        self.corpus_count = 0  # sentences of the corpus the vocabulary was last built from (gensim's)
        self.running_training_loss = 0.0  # summed loss of the latest train() call (get_latest_training_loss)
        self.callbacks = tuple(callbacks)  # as gensim: used by the training this constructor runs
        if sum(x is not None for x in (sentences, corpus_file, corpus)) > 1:
            raise ParvecError("give only one of sentences, corpus_file and corpus")
        if sentences is not None or corpus_file is not None or corpus is not None:
            encoded = self.build_vocab(sentences=sentences, corpus_file=corpus_file, corpus=corpus)
            self.train(corpus=encoded, callbacks=self.callbacks)

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

    @property
    def sg(self) -> int:
        return int(self.config.sg)

    @property
    def hs(self) -> int:
        return int(self.config.hs)

    @property
    def cbow_mean(self) -> int:
        return int(self.config.cbow_mean)

    @property
    def corpus_total_words(self) -> int:
        """Every token of the corpus the vocabulary was last built from, out-of-vocabulary ones too (gensim's)."""
        return self.raw_words

    def get_latest_training_loss(self) -> float:
        """The loss summed over every positive pair (its negatives' terms included) trained so far by the latest
        :meth:`train` call, as gensim's: read it in an ``on_epoch_end`` callback for the running total.  0.0
        with ``compute_loss=False``.  (``stats.loss_per_epoch`` has the mean per pair.)

        Example:
            >>> Word2Vec(sentences=[["a", "b", "c"]] * 50, min_count=1, vector_size=8, workers=1, sample=0,
            ...          epochs=1).get_latest_training_loss() > 0
            True
        """
        return self.running_training_loss

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
            return EncodedCorpus.from_file(corpus_file, o, cache_dir=self.cache_dir, vocab=vocab, threads=self.workers)
        return EncodedCorpus.from_sentences(
            sentences, min_count=o.min_count, max_vocab_size=o.max_vocab_size,  # type: ignore[arg-type]
            max_final_vocab=o.max_final_vocab, max_sentence_length=o.max_sentence_length, vocab=vocab,
        )

    def build_vocab(
        self,
        sentences: Iterable[list[str]] | None = None,
        corpus_file: str | os.PathLike[str] | list[str | os.PathLike[str]] | None = None,
        corpus: EncodedCorpus | None = None,
        update: bool = False,
        corpus_iterable: Iterable[list[str]] | None = None,
    ) -> EncodedCorpus:
        """Build the vocabulary, allocate the vectors, and return the encoded corpus.

        ``update=True`` grows the vocabulary of a model that has one (gensim's online update): the new
        corpus's words reaching ``min_count`` in it become words; a word already known keeps its index and
        vectors and adds every occurrence in the new corpus to its count, as gensim 4; the new words are
        appended after the existing ones, by descending count among themselves (ties in first-seen order),
        so every existing index stays valid.  A new word's input row is word2vec.c's initial row for its
        index (what a model built with it would have had) and its output row is zero.  With hierarchical
        softmax (``hs=1``) the Huffman tree is rebuilt over the grown vocabulary's counts and ``syn1`` gains one
        zero row per new word (``V-1`` rows, one per inner node), as gensim does.  The returned corpus
        is encoded against the grown vocabulary: pass it to :meth:`train`.  ``corpus_iterable`` is gensim
        4's name for ``sentences``.

        Example:
            >>> m = Word2Vec(min_count=1, vector_size=8); enc = m.build_vocab(sentences=[["a", "b", "a"]])
            >>> m.wv.index_to_key
            ['a', 'b']
            >>> enc = m.build_vocab([["c", "a"]], update=True); m.wv.index_to_key, m.wv.get_vecattr("a", "count")
            (['a', 'b', 'c'], 3)
        """
        sentences = _one_of(sentences, corpus_iterable)
        if update:
            return _grow_vocab(self, sentences, corpus_file, corpus)
        encoded = self.encode(sentences=sentences, corpus_file=corpus_file, corpus=corpus)
        self.vocab = encoded.vocab
        self.check_memory(encoded)
        # word2vec.c's initial vectors (CBOW: twice them, init_half_width), as every trainer starts from (the GPU's
        # algorithms have no CPU Trainer)
        n, dim = len(self.vocab), self.config.dim
        try:
            self._set_vectors(init_input_vectors(n, dim, self.config.seed, half_width=init_half_width(self.config)),
                              np.zeros((n, dim), dtype=np.float32),
                              self._new_syn1(n))
        except MemoryError:
            raise ParvecError(
                f"out of memory allocating the model ({2 * n * dim * 4 / 2**30:.2f} GiB: vectors {n:,} x {dim} x 2); "
                "lower --dim, raise --min-count, or train it column-sharded across processes (--cluster ... "
                "--mode sharded)"
            ) from None
        self.corpus_words = encoded.n_tokens
        self.raw_words = encoded.raw_words
        self.corpus_count = encoded.n_sentences
        self.epochs_trained = 0
        return encoded

    def check_memory(self, encoded: EncodedCorpus) -> int:
        """Bytes the model and encoded corpus take; :class:`ParvecError` if over the available memory
        (:func:`parvec.drivers.check_memory`)."""
        return drivers.check_memory(self.config, encoded, self.cluster)

    def _new_syn1(self, n: int) -> np.ndarray | None:
        # Hierarchical softmax's output layer: one zero row per inner node of the Huffman tree (word2vec.c).
        if not self.config.hs:
            return None
        if n < 2:
            raise ParvecError(f"hierarchical softmax (hs=1) needs at least 2 words in the vocabulary, got {n}")
        return np.zeros((n - 1, self.config.dim), dtype=np.float32)

    def _set_vectors(self, w_in: np.ndarray, w_out: np.ndarray, syn1: np.ndarray | None = None) -> None:
        assert self.vocab is not None
        self.syn1neg = w_out
        self.syn1 = syn1
        self.wv = KeyedVectors(w_in, list(self.vocab.words), counts=self.vocab.counts)

    # ------------------------------------------------------------------ training
    def train(
        self,
        sentences: Iterable[list[str]] | None = None,
        corpus_file: str | os.PathLike[str] | list[str | os.PathLike[str]] | None = None,
        corpus: EncodedCorpus | None = None,
        epochs: int | None = None,
        resume: bool = False,
        callbacks: Iterable[Any] = (),
        total_examples: int | None = None,
        total_words: int | None = None,
        corpus_iterable: Iterable[list[str]] | None = None,
        compute_loss: bool | None = None,
    ) -> TrainStats:
        """Train (or continue training) on a corpus encoded against the model's vocabulary.

        With ``resume=True`` a model loaded from a checkpoint finishes its planned epochs with the
        learning-rate schedule and random streams it would have had uninterrupted; otherwise
        ``epochs`` more epochs run with a fresh linear schedule.  Words outside the vocabulary
        are skipped.

        ``callbacks``: gensim's ``CallbackAny2Vec``-shaped objects (``on_train_begin``, ``on_epoch_begin``,
        ``on_epoch_end``, ``on_train_end``, each called with the model; any may be missing), or plain
        functions called as ``cb(model, epoch, stats)`` after each epoch.

        ``total_examples`` (sentences) or ``total_words`` (every token, out-of-vocabulary ones too) have
        gensim's meaning: the size of one epoch for the learning-rate schedule, which decays from ``alpha``
        to ``min_alpha`` over ``epochs`` of them (a larger total ends the run above ``min_alpha``, a smaller
        one reaches it early).  parvec counts the corpus before training, so they may be left out (the
        corpus's own size is used); given as gensim 4's ``corpus_iterable=``, the corpus needs one of them
        and an explicit ``epochs``, with gensim's errors.  ``compute_loss`` overrides the model's setting.

        Example:
            >>> model.train(corpus_file="more.txt", epochs=1)  # doctest: +SKIP
            >>> model.train(more, total_examples=model.corpus_count, epochs=model.epochs)  # doctest: +SKIP
        """
        _check_gensim_train(corpus_iterable, total_examples, total_words, epochs)
        sentences = _one_of(sentences, corpus_iterable)
        if self.vocab is None or self.wv is None:
            raise ParvecError("build the vocabulary first (build_vocab), or pass the corpus to Word2Vec(...)")
        if compute_loss is not None:
            self.config.compute_loss = bool(compute_loss)
        if resume:
            if self.graph_run is not None:
                raise ParvecError(graph_run_refusal(self.graph_run))
            self.cluster = drivers.resume_cluster(self.cluster, self.state)
            # counted afresh: a resumed run must see the corpus the checkpoint was trained on
            encoded = self.encode(sentences=sentences, corpus_file=corpus_file, corpus=corpus)
            check_resume_corpus(self.vocab, self.corpus_words, encoded)
        else:
            encoded = self.encode(sentences=sentences, corpus_file=corpus_file, corpus=corpus, vocab=self.vocab)
        schedule_words = _schedule_words(encoded, total_examples, total_words)
        base_epochs = 0 if resume else self.epochs_trained
        begin = Run.start(self.config, self.state, resume=resume, epochs=epochs, words_per_epoch=encoded.n_tokens)
        total_epochs = begin.epochs
        if resume:
            if begin.done:
                return TrainStats()
            if schedule_words != encoded.n_tokens:
                raise ParvecError("total_examples/total_words cannot be combined with resume=True: a resumed run "
                                  "keeps its schedule")
        if total_epochs < 1:
            raise ParvecError(f"epochs must be a positive integer, got {total_epochs}")
        options = self.run_options.check()
        capabilities.check(mode_of(self.config, self.cluster),
                           mid_epoch_checkpoints=begin.at is not None or options.interval is not None)
        options.check_checkpoints(resume, self.epochs_trained)
        driver = self._make_driver().use_corpus(encoded)
        self.corpus_words, self.raw_words = encoded.n_tokens, encoded.raw_words
        run = Run(driver, self.config, self.learning_rate_schedule(schedule_words, total_epochs), options, self.state,
                  describe=self.saved_model, start_epoch=begin.epoch, resume_at=begin.at, base_epochs=base_epochs,
                  score=epoch_scorer(self.wv) if options.eval_every_epoch else None)
        return _train_with_callbacks(self, run, callbacks)

    def learning_rate_schedule(self, words_per_epoch: int | None = None, epochs: int | None = None) -> Schedule:
        """The learning-rate schedule this model trains with: linear from ``alpha`` to ``min_alpha`` over
        ``epochs`` (default: the model's) of ``words_per_epoch`` words (default: the corpus it was trained on),
        anchored where a resumed run changed its epochs (:class:`parvec.schedule.Schedule`).

        Example:
            >>> Word2Vec(alpha=0.025, min_alpha=0.0, epochs=2).learning_rate_schedule(100).alpha_at(100)
            0.0125
        """
        words = words_per_epoch if words_per_epoch is not None else self.corpus_words
        if not words:
            raise ParvecError("the schedule needs the words of one epoch: train the model first, or give them")
        return Schedule.of(self.config, int(words), epochs, anchor=self.schedule_anchor)

    # ------------------------------------------------------------------ checkpoints and resume
    def saved_model(self, position: Position | None = None, epochs_trained: int | None = None) -> model_io.SavedModel:
        """This model as :func:`parvec.model_io.save` writes it (``position``: a mid-epoch checkpoint's place;
        ``epochs_trained``: the epochs it records, default the model's).

        Example:
            >>> model.saved_model().vectors is model.wv.vectors  # doctest: +SKIP
            True
        """
        if self.vocab is None or self.wv is None or self.syn1neg is None:
            raise ParvecError("nothing to save: the model has no vocabulary yet")
        if epochs_trained is not None:
            self.epochs_trained = epochs_trained
        return model_io.SavedModel(
            config=self.config, vocab=self.vocab, vectors=self.wv.vectors, syn1neg=self.syn1neg, syn1=self.syn1,
            read_options=self.read_options.__dict__, epochs_trained=self.epochs_trained,
            corpus_words=self.corpus_words, raw_words=self.raw_words, corpus_count=self.corpus_count,
            position=position, run_id=self.run_id,
            checkpoint_every=None if self.checkpoint_every is None else str(self.checkpoint_every),
            schedule_anchor=self.schedule_anchor, graph_run=self.graph_run,
            cluster=drivers.cluster_record(self.cluster, self.state.actor_threads),
        )

    def _make_driver(self) -> CorpusDriver:
        # What trains self.wv.vectors / self.syn1neg in place (parvec.drivers: CPU threads, the GPU, a cluster).
        assert self.vocab is not None and self.wv is not None and self.syn1neg is not None
        return drivers.make_driver(self.config, self.vocab.counts, self.wv.vectors, self.syn1neg, self.syn1,
                                   cluster=self.cluster, read_options=self.read_options,
                                   workers_given=self.workers_given)

    # ------------------------------------------------------------------ persistence
    def save(self, path: str | os.PathLike[str], position: Position | None = None) -> None:
        """Save as a directory of ``.npy`` arrays and JSON (written to a temp dir, synced, then renamed;
        :mod:`parvec.model_io` has the layout).

        ``position`` makes it a mid-epoch checkpoint: training resumes from there
        (``Word2Vec.load(path).train(corpus_file=..., resume=True)``).

        Example:
            >>> model.save("model.parvec")  # doctest: +SKIP
        """
        model_io.save(path, self.saved_model(position))

    @classmethod
    def load(cls, path: str | os.PathLike[str], mmap: str | None = None) -> Word2Vec:
        """Load a model saved by :meth:`save`, a checkpoint, or the latest checkpoint of a checkpoint
        directory (``checkpoint_dir``).  A damaged one (missing or truncated ``.npy``, unreadable JSON, a
        checksum or position that does not match) raises :class:`parvec.errors.CheckpointError` naming the
        file and the previous intact checkpoint beside it, if any.

        The cluster it was trained on (``saved_cluster``) is where ``train(resume=True)`` trains again; a sharded
        run's checkpoint (``parvec train --mode sharded``) is assembled from its shards' column files.

        Example:
            >>> model = Word2Vec.load("model.parvec")  # doctest: +SKIP
            >>> Word2Vec.load("ck").train(corpus_file="corpus.txt", resume=True)  # doctest: +SKIP
        """
        from parvec import storage

        if storage.is_url(path):  # s3://..., gs://...: copied here for the load (gensim's smart_open URLs)
            with storage.local_copy(os.fspath(path)) as local:
                try:
                    return cls.load(local, mmap)  # memory-mapped arrays outlive the copy's removal
                except ParvecError as exc:
                    raise storage.renamed(exc, {str(local): os.fspath(path).rstrip("/")}) from None
        return checkpoints.load_for_resume(path, cls._load, mmap=mmap)[0]

    @classmethod
    def _load(cls, path: str | os.PathLike[str], mmap: str | None = None) -> Word2Vec:
        # One model directory, as it is: ParvecError / CheckpointError naming what is wrong.
        saved = model_io.load(path, mmap)
        with model_io.errors_named(path):
            model = cls._from_saved(saved)
        return model

    @classmethod
    def _from_saved(cls, saved: model_io.SavedModel) -> Word2Vec:
        # The Word2Vec that a read model directory describes (the constructor checks the parameters again).
        config = saved.config
        model = cls(**_init_args(config, dict(saved.read_options or {})))
        model.config.par_h_factor = config.par_h_factor
        model.config.chunk_words = config.chunk_words
        model.corpus_words, model.raw_words = saved.corpus_words, saved.raw_words
        model.corpus_count = saved.corpus_count
        model.state = RunState.from_saved(saved)
        model.workers_given = False
        model.vocab = saved.vocab
        assert saved.vectors is not None and saved.syn1neg is not None
        model._set_vectors(saved.vectors, saved.syn1neg, saved.syn1)
        return model

    def __repr__(self) -> str:
        n = len(self.vocab) if self.vocab is not None else 0
        model = "" if self.config.sg else f", sg=0, cbow_mean={int(self.config.cbow_mean)}"
        return (f"Word2Vec<vocab={n}, vector_size={self.config.dim}{model}, algo={self.config.algo}, "
                f"alpha={self.config.alpha}>")


def _init_args(config: TrainConfig, opts: dict[str, Any]) -> dict[str, Any]:
    # The constructor's arguments that rebuild a saved model's configuration and read options.
    return dict(
        vector_size=config.dim, window=config.window, negative=config.negative, sample=config.sample,
        min_count=opts.get("min_count", 5), max_vocab_size=opts.get("max_vocab_size"),
        max_final_vocab=opts.get("max_final_vocab"), epochs=config.epochs, alpha=config.alpha,
        min_alpha=config.min_alpha, workers=config.threads, seed=config.seed, algo=config.algo,
        ns_exponent=config.ns_exponent, max_sentence_length=config.max_sentence_length,
        batch_size=config.batch_size, par_batch=config.par_batch, compute_loss=config.compute_loss,
        progress=config.progress, lowercase=opts.get("lowercase", False), device=config.device,
        unicode_errors=opts.get("unicode_errors", "strict"), sg=int(config.sg), hs=int(config.hs),
        cbow_mean=int(config.cbow_mean),
    )


def _check_gensim_train(corpus_iterable: Any, total_examples: int | None, total_words: int | None,
                        epochs: int | None) -> None:
    # gensim 4's corpus_iterable= needs the size of an epoch and explicit epochs (gensim's _check_training_sanity);
    # total_examples / total_words, when given, are positive integers.
    if corpus_iterable is not None:
        if total_examples is None and total_words is None:
            raise ParvecError(
                "You must specify either total_examples or total_words, for proper learning-rate and progress "
                "calculations. If you've just built the vocabulary using the same corpus, using the count "
                "cached in the model is sufficient: total_examples=model.corpus_count."
            )
        if epochs is None or epochs <= 0:
            raise ParvecError("You must specify an explicit epochs count. The usual value is epochs=model.epochs.")
    for name, value in (("total_examples", total_examples), ("total_words", total_words)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1):
            raise ParvecError(f"{name} must be a positive integer, got {value!r}")


def _schedule_words(encoded: EncodedCorpus, total_examples: int | None, total_words: int | None) -> int:
    # The words of one epoch of the schedule: the corpus's in-vocabulary tokens, or gensim's total_words (every
    # token, out-of-vocabulary ones too) or total_examples (sentences) scaled to them.
    if total_words is not None:
        return max(1, round(int(total_words) * encoded.n_tokens / max(1, encoded.raw_words)))
    if total_examples is not None:
        return max(1, round(int(total_examples) * encoded.n_tokens / max(1, encoded.n_sentences)))
    return encoded.n_tokens


def _grow_vocab(model: Word2Vec, sentences: Iterable[list[str]] | None,
                corpus_file: str | os.PathLike[str] | list[str | os.PathLike[str]] | None,
                corpus: EncodedCorpus | None) -> EncodedCorpus:
    # build_vocab(update=True): see its docstring for the rule.
    if model.vocab is None or model.wv is None or model.syn1neg is None:
        raise ParvecError("build_vocab(update=True) grows an existing vocabulary, and this model has none: "
                          "call build_vocab(...) without update first (gensim: \"You cannot do an online "
                          "vocabulary-update of a model which has no prior vocabulary\")")
    if isinstance(corpus_file, str | os.PathLike) and os.fspath(corpus_file) == "-":
        raise ParvecError("build_vocab(update=True) reads the corpus twice (count, then encode against the "
                          "grown vocabulary): standard input cannot be; save it to a file")
    fresh = model.encode(sentences=sentences, corpus_file=corpus_file, corpus=corpus)  # its own min_count
    old = model.vocab
    keep = max(1, model.read_options.min_count)  # an EncodedCorpus given may have been built with a lower one
    added = [(w, c) for w, c in zip(fresh.vocab.words, fresh.vocab.counts.tolist(), strict=True)
             if w not in old.index and c >= keep]
    n_old, n = len(old), len(old) + len(added)
    grown = Vocab(old.words + [w for w, _ in added], np.concatenate([old.counts, [c for _, c in added]]))
    if corpus is not None:
        encoded = _remap(corpus, grown)
    else:
        encoded = model.encode(sentences=sentences, corpus_file=corpus_file, vocab=grown)
        if fresh.inputs != encoded.inputs:  # read twice: the new words were chosen from the first read
            raise ParvecError(f"{fresh.source}: the input changed between its two reads (the new words were "
                              "counted, then the corpus encoded with them); the vocabulary was not grown: train "
                              "on a copy that nothing writes to")
    # Every occurrence in the new corpus adds to a known word's count, rare in it or not (gensim 4's rule);
    # a new word's count is its count in the new corpus.
    seen = np.bincount(encoded.tokens, minlength=n).astype(np.int64)
    grown.counts[:n_old] += seen[:n_old]
    grown.counts[n_old:] = seen[n_old:]
    model.check_memory(encoded)
    dim = model.config.dim
    w_in = np.concatenate([model.wv.vectors, init_input_vectors(n, dim, model.config.seed, start=n_old,
                                                                half_width=init_half_width(model.config))])
    w_out = np.concatenate([model.syn1neg, np.zeros((n - n_old, dim), dtype=np.float32)])
    if model.syn1 is not None:
        # Hierarchical softmax, as gensim's update: the Huffman tree is rebuilt over the whole grown vocabulary
        # and its counts (each Trainer builds it from ``vocab.counts``; saves fingerprint it), and syn1 gains one
        # zero row per new word, so it keeps one row per inner node (V-1).  The old rows stay as they were, now
        # serving the rebuilt tree's inner nodes of the same index (gensim does the same).
        model.syn1 = np.ascontiguousarray(
            np.concatenate([model.syn1, np.zeros((n - n_old, dim), dtype=np.float32)]), dtype=np.float32)
    model.vocab = grown
    model.syn1neg = np.ascontiguousarray(w_out, dtype=np.float32)
    # The same KeyedVectors object, grown in place (a reference to model.wv taken before stays valid).
    wv = model.wv
    wv.index_to_key.extend(w for w, _ in added)
    wv.key_to_index.update((w, n_old + j) for j, (w, _) in enumerate(added))
    wv.counts = grown.counts
    wv.vectors = np.ascontiguousarray(w_in, dtype=np.float32)
    model.corpus_words = encoded.n_tokens
    model.raw_words = encoded.raw_words
    model.corpus_count = encoded.n_sentences
    return encoded


def _train_with_callbacks(model: Word2Vec, run: Run, callbacks: Iterable[Any]) -> TrainStats:
    # The run with the model's epoch-end work (its running loss, the callbacks) around it.
    epoch_fns, gensim_cbs = _split_callbacks(callbacks)
    model.running_training_loss = 0.0
    total_epochs = run.schedule.epochs

    def on_epoch_end(epoch: int, stats: TrainStats) -> None:
        if model.config.compute_loss:
            model.running_training_loss = float(sum(
                lv * pv for lv, pv in zip(stats.loss_per_epoch, stats.pairs_per_epoch, strict=True) if pv))
        for fn in epoch_fns:
            fn(model, epoch, stats)
        for cb in gensim_cbs:
            _call(cb, "on_epoch_end", model)
        if epoch + 1 < total_epochs:
            for cb in gensim_cbs:
                _call(cb, "on_epoch_begin", model)

    run.on_epoch_end = on_epoch_end
    for hook in ("on_train_begin", "on_epoch_begin"):
        for cb in gensim_cbs:
            _call(cb, hook, model)
    stats = run.execute()
    for cb in gensim_cbs:
        _call(cb, "on_train_end", model)
    assert model.wv is not None
    model.wv.fill_norms(force=True)  # vectors changed in place: drop cached unit vectors
    model.stats = stats
    return stats


def _zero_one(name: str, value: Any) -> bool:
    """gensim's 0/1 switches (``sg``, ``hs``, ``cbow_mean``) as a bool; anything else is a ParvecError."""
    if isinstance(value, bool | int | np.integer) and int(value) in (0, 1):
        return bool(value)
    raise ParvecError(f"{name} must be 0 or 1, got {value!r}")


def _one_of(sentences: Any, corpus_iterable: Any) -> Any:
    # gensim 4 calls the iterable corpus_iterable (build_vocab, train); parvec and gensim 3 call it sentences.
    if sentences is not None and corpus_iterable is not None:
        raise ParvecError("give the sentences once: sentences= or corpus_iterable= (gensim 4's name), not both")
    return corpus_iterable if sentences is None else sentences


_GENSIM_HOOKS = ("on_train_begin", "on_epoch_begin", "on_epoch_end", "on_train_end")


def _split_callbacks(callbacks: Iterable[Any]) -> tuple[list[Callable[..., Any]], list[Any]]:
    """(plain ``fn(model, epoch, stats)`` functions, gensim ``CallbackAny2Vec``-shaped objects)."""
    plain, gensim_style = [], []
    for cb in callbacks:
        if any(callable(getattr(cb, hook, None)) for hook in _GENSIM_HOOKS):
            gensim_style.append(cb)
        elif callable(cb):
            plain.append(cb)
        else:
            raise ParvecError(f"callback {cb!r} is neither a function fn(model, epoch, stats) nor an object with "
                              f"gensim's {', '.join(_GENSIM_HOOKS)} methods")
    return plain, gensim_style


def _call(cb: Any, hook: str, model: Word2Vec) -> None:
    method = getattr(cb, hook, None)
    if callable(method):
        method(model)


def _remap(corpus: EncodedCorpus, vocab: Vocab) -> EncodedCorpus:
    """``corpus`` re-encoded against ``vocab`` (its words missing from ``vocab`` dropped, sentences kept)."""
    ids = np.array([vocab.index.get(w, -1) for w in corpus.vocab.words], dtype=np.int32)
    mapped = ids[corpus.tokens] if len(corpus.tokens) else np.zeros(0, dtype=np.int32)
    kept = mapped >= 0
    before = np.concatenate([[0], np.cumsum(kept, dtype=np.int64)])
    return EncodedCorpus(vocab, np.ascontiguousarray(mapped[kept], dtype=np.int32),
                         before[corpus.offsets].astype(np.int64), raw_words=corpus.raw_words, source=corpus.source)


def load_for_resume(path: str | os.PathLike[str], mmap: str | None = None) -> tuple[Word2Vec, Path, str | None]:
    """The model or checkpoint to resume, as :meth:`Word2Vec.load` reads it: ``path`` itself, or the latest
    checkpoint in it when it is a checkpoint directory (:func:`parvec.checkpoints.load_for_resume`).  Returns
    ``(model, the path loaded, a note to show or None)``; a damaged one raises
    :class:`parvec.errors.CheckpointError` that names the previous intact checkpoint, if any.

    Example:
        >>> model, where, note = load_for_resume("ck")  # doctest: +SKIP
        >>> where.name  # doctest: +SKIP
        'mid-e0002-c000000040'
    """
    return checkpoints.load_for_resume(path, Word2Vec._load, mmap=mmap)
