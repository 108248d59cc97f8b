"""The encoded corpus every trainer reads, and the ways to make one: from text files, streams, token lists or
ready arrays; saved and loaded as a directory.

:class:`EncodedCorpus` is a vocabulary, a flat int32 token array and int64 sentence offsets
(:class:`parvec.corpus.arrays.EncodedArrays`, the data the passes and the cache make) with its constructors:
:meth:`EncodedCorpus.from_file` (plain, ``.gz``, ``.bz2``, ``.xz``; several files, a directory or a glob as
one corpus; standard input ``-``, a FIFO or ``<(...)`` as a stream; the on-disk cache with ``cache_dir``),
:meth:`EncodedCorpus.from_sentences` (a restartable iterable of token lists) and
:meth:`EncodedCorpus.from_arrays`.  How text is read: :mod:`parvec.corpus.readers`; how it is counted and
encoded: :mod:`parvec.corpus.encode`; the cache: :mod:`parvec.corpus.cache`.

Example:
    >>> c = EncodedCorpus.from_sentences([["a", "b", "a"], ["b", "a"]], min_count=1)
    >>> c.vocab.words, c.tokens.tolist(), c.offsets.tolist()
    (['a', 'b'], [0, 1, 0, 1, 0], [0, 3, 5])
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from parvec.corpus.arrays import DAMAGE_ERRORS, EncodedArrays, read_arrays, write_arrays, write_header
from parvec.corpus.cache import read_cached
from parvec.corpus.encode import encode_sentences, read_stream
from parvec.corpus.readers import IterableSentences, ReadOptions, TextSentences, expand_inputs
from parvec.errors import ParvecError
from parvec.fileio import STDIN, check_input, is_stream
from parvec.vocab import Vocab

__all__ = ["EncodedCorpus", "load_encoded", "save_encoded"]

_STDIN_NAME = "<stdin>"


class EncodedCorpus(EncodedArrays):
    """Vocabulary + int32 tokens + int64 sentence offsets (``len(offsets) == sentences + 1``).

    Sentence ``i`` is ``tokens[offsets[i]:offsets[i + 1]]``; token ids index ``vocab.words``.
    ``raw_words`` counts every token of the source, out-of-vocabulary ones included.  ``cache_used``
    says where :meth:`from_file` got it: ``True`` from the cache, ``False`` read (a cache was consulted
    and written), ``None`` no cache involved (no cache directory, a stream, or a given vocabulary).

    Example:
        >>> c = EncodedCorpus.from_sentences([["a", "b", "a"], ["b", "a"]], min_count=1)
        >>> c.vocab.words, c.tokens.tolist(), c.offsets.tolist()
        (['a', 'b'], [0, 1, 0, 1, 0], [0, 3, 5])
    """

    @classmethod
    def from_file(
        cls,
        path: str | os.PathLike[str] | list[str | os.PathLike[str]] | tuple[str | os.PathLike[str], ...],
        options: ReadOptions | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        vocab: Vocab | None = None,
        threads: int | None = None,
    ) -> EncodedCorpus:
        """Read and encode a text file (plain, .gz, .bz2 or .xz), using or filling a cache.

        ``-`` is standard input; it, a FIFO and ``<(...)`` are read once as streams and never cached.
        With ``vocab`` given, tokens are encoded against it (continued training) instead of building
        a new vocabulary, and no cache is used.

        A URL (``s3://bucket/corpus/``, an object, a prefix or a glob; :mod:`parvec.storage`) is read from a local
        copy of its objects, removed after the encoding (not cached).
        Several files are one corpus: a list of paths, a directory (its files, by name, hidden ones
        skipped) or a glob pattern (``"shards/*.txt.gz"``, sorted); they are read in order, each file's
        last line ending there.  The cache key covers every file.  The tokens are written to the cache
        (or, for a large corpus without one, a temporary file) block by block and memory-mapped.

        One plain file of 64 MiB or more (:data:`parvec.corpus.encode.PARALLEL_MIN_BYTES`) is counted and
        encoded in ``threads`` parts at once (None: every core, :func:`parvec.config.default_threads`; 1: one
        thread); the corpus is the same for any number of threads.

        Example:
            >>> corpus = EncodedCorpus.from_file("corpus.txt.xz", ReadOptions(min_count=5))  # doctest: +SKIP
            >>> corpus.cache_used is None  # no cache_dir given  # doctest: +SKIP
            True
        """
        from parvec import storage

        with storage.local_inputs(path) as local:  # a URL's objects copied here for the read (no cache for them)
            uncached = local is not path
            return cls.of(_read_file(local, options or ReadOptions(), None if uncached else cache_dir, vocab, threads))

    @classmethod
    def from_sentences(
        cls,
        sentences: Iterable[list[str]],
        min_count: int = 5,
        max_vocab_size: int | None = None,
        max_final_vocab: int | None = None,
        max_sentence_length: int = 10000,
        vocab: Vocab | None = None,
    ) -> EncodedCorpus:
        """Encode a restartable iterable of token lists (a list, or an object whose ``__iter__``
        starts over).  A one-shot generator is refused: the vocabulary pass would consume it.

        Example:
            >>> EncodedCorpus.from_sentences([["a", "a", "b"]], min_count=2).vocab.words
            ['a']
        """
        if iter(sentences) is sentences:
            raise ParvecError(
                "sentences is a one-shot iterator (e.g. a generator): parvec reads the corpus twice "
                "(vocabulary, then encoding). Pass a list or a restartable iterable (an object whose "
                "__iter__ starts over), or a file path via corpus_file."
            )
        options = ReadOptions(
            min_count=min_count,
            max_vocab_size=max_vocab_size,
            max_final_vocab=max_final_vocab,
            max_sentence_length=max_sentence_length,
        )
        options.validate()
        return cls.of(encode_sentences(IterableSentences(sentences, max_sentence_length), options, vocab,
                                       source="<iterable>"))


def _read_file(path: Any, options: ReadOptions, cache_dir: str | os.PathLike[str] | None,
               vocab: Vocab | None, threads: int | None = None) -> EncodedArrays:
    """:meth:`EncodedCorpus.from_file`: files through the cache (with ``cache_dir``, no ``vocab``), or encoded
    here; a stream once."""
    options.validate()
    paths = expand_inputs(path)
    if paths is not None:
        source = " ".join(str(p) for p in paths)
        if len(paths) == 1:
            path = paths[0]
        elif cache_dir is None or vocab is not None:
            return encode_sentences(TextSentences(paths, options, name=source), options, vocab, source=source)
        else:
            return read_cached(paths, options, Path(cache_dir))
    stdin = os.fspath(path) == STDIN
    p = check_input(path, allow_stream=True)
    if not stdin and str(p) == STDIN:
        p = Path.cwd() / STDIN  # "./-" is a file named "-"
    if stdin or is_stream(p):
        return read_stream(p, _STDIN_NAME if stdin else str(p), options, vocab, cache_dir)
    if cache_dir is None or vocab is not None:
        return encode_sentences(TextSentences(p, options), options, vocab, source=str(p), threads=threads)
    return read_cached(p, options, Path(cache_dir), threads)


def save_encoded(corpus: EncodedArrays, directory: str | os.PathLike[str], extra: dict[str, Any] | None = None) -> None:
    """Save an encoded corpus as ``tokens.npy``, ``offsets.npy``, ``vocab.json`` and ``header.json``
    (written last, with the SHA-256 of the other three, which :func:`load_encoded` checks).

    Example:
        >>> save_encoded(corpus, "cache/text8")  # doctest: +SKIP
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    write_arrays(corpus, directory)
    write_header(corpus, directory, extra)


def load_encoded(directory: str | os.PathLike[str], mmap: bool = True, verify: bool = True) -> EncodedCorpus:
    """Load a corpus saved by :func:`save_encoded`; tokens are memory-mapped by default.

    With ``verify`` (the default) the files' checksums are checked (one read of each file) besides
    their shapes, dtypes and id ranges; anything damaged raises :class:`ParvecError` naming it.

    Example:
        >>> corpus = load_encoded("cache/text8")  # doctest: +SKIP
    """
    directory = Path(directory)
    try:
        return EncodedCorpus.of(read_arrays(directory, mmap=mmap, verify=verify)[0])
    except ParvecError:
        raise
    except DAMAGE_ERRORS as exc:
        raise ParvecError(f"{directory}: damaged encoded corpus ({type(exc).__name__}: {exc})") from None
