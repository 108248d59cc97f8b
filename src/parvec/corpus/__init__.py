"""The encoded corpus: a vocabulary, a flat int32 token array and int64 sentence offsets.

Every trainer reads only this.  Text files (plain, .gz, .bz2, .xz), streams (standard input ``-``, a FIFO,
bash's ``<(...)``), restartable iterables of token lists, ready numpy arrays and graph walks all become an
:class:`EncodedCorpus`.  The modules, from the front:

- :mod:`parvec.corpus.encoded`: :class:`EncodedCorpus` and its constructors (``from_file``,
  ``from_sentences``, ``from_arrays``), :func:`save_encoded`/:func:`load_encoded`;
- :mod:`parvec.corpus.readers`: :class:`ReadOptions`, reading text (files, directories, globs, compressed
  inputs, streams: :class:`TextSentences`; one byte range of a file: :class:`RangeSentences`,
  :func:`byte_ranges`), and the checks that a file read twice did not change (:func:`file_state`,
  :func:`input_changed`, :func:`check_input_unchanged`);
- :mod:`parvec.corpus.encode`: the counting and encoding passes (:func:`encode_sentences`,
  :func:`count_vocabulary`, on bytes by :mod:`parvec.corpus.textscan`), streams read once;
- :mod:`parvec.corpus.cache`: the on-disk cache (``--cache-dir``);
- :mod:`parvec.corpus.arrays`: the arrays (:class:`EncodedArrays`) and their files;
- :mod:`parvec.corpus.pages`: :func:`release_pages`, the trained pages of a memory-mapped token file dropped.

Reading follows word2vec.c and gensim's ``LineSentence``: one sentence per line, tokens split on
whitespace (a NUL byte counts as whitespace, as word2vec.c's C strings end a word there), no lowercasing
unless asked.  A line longer than ``max_sentence_length`` tokens is split into consecutive pieces (never
truncated); the input is streamed in blocks, so a 100 MB single-line text8-style file is never read whole.
Out-of-vocabulary words are dropped from the token array, as word2vec.c skips them.

A file is read twice, as word2vec.c does: count the vocabulary, then encode, both on bytes by a numba
kernel (:mod:`parvec.corpus.textscan`, :mod:`parvec.kernels.wordtable`: a hash table of the words' bytes, ids
in first-seen order) that gives exactly what the reader in Python (``str.split``, a ``Counter``) gives, 3-5
times faster (benchmarks/bench_encode.py); when the distinct words pass ``max_vocab_size`` it stops and
word2vec.c's pruning runs in Python, whose result depends on when it prunes.  The two reads must see the same
file: its identity (device, inode, size, mtime, ctime) is compared before and after each pass, a recently
changed file's bytes are hashed in each pass, and the encoding pass counts each vocabulary word's tokens, which
must be the counting pass's counts (at least them after pruning); a file that changed is refused, named
(docs/big_corpora.md).  A stream cannot be read twice, so it is encoded in one pass (or, with
``max_vocab_size``, spooled to a temporary file): the result is the same as the two passes give.

An encoded corpus of a file can be cached on disk (``tokens.npy``, ``offsets.npy``, ``vocab.json``,
``header.json``), keyed on the file's path, device, inode, size, modification time and inode change time, and
on the reading options; a large corpus is encoded into it block by block and memory-mapped.  Streams are
never cached.

Example:
    >>> c = EncodedCorpus.from_sentences([["a", "b", "a"], ["b", "a"]], min_count=1)
    >>> c.vocab.words, c.tokens.tolist(), c.offsets.tolist()
    (['a', 'b'], [0, 1, 0, 1, 0], [0, 3, 5])
"""

from parvec.corpus.arrays import CACHE_FORMAT_VERSION, EncodedArrays
from parvec.corpus.encode import (
    IdLookup,
    NoTokensError,
    TokenBlocks,
    count_text,
    count_vocabulary,
    encode_sentences,
    pruning_note,
)
from parvec.corpus.encoded import EncodedCorpus, load_encoded, save_encoded
from parvec.corpus.pages import release_pages
from parvec.corpus.readers import (
    WHITESPACE,
    InputFile,
    IterableSentences,
    RangeSentences,
    ReadOptions,
    TextSentences,
    byte_ranges,
    check_input_unchanged,
    expand_inputs,
    file_state,
    input_changed,
    line_cuts,
    range_cuts,
)

__all__ = [
    "CACHE_FORMAT_VERSION",
    "WHITESPACE",
    "EncodedArrays",
    "EncodedCorpus",
    "IdLookup",
    "InputFile",
    "IterableSentences",
    "NoTokensError",
    "RangeSentences",
    "ReadOptions",
    "TextSentences",
    "TokenBlocks",
    "byte_ranges",
    "check_input_unchanged",
    "count_text",
    "count_vocabulary",
    "encode_sentences",
    "expand_inputs",
    "file_state",
    "input_changed",
    "line_cuts",
    "load_encoded",
    "pruning_note",
    "range_cuts",
    "release_pages",
    "save_encoded",
]
