"""Full encodings of an ``encode_batch`` built from the ids-only path: ids at once, tokens and
offsets when first read (:class:`~toktools.encoding.LazyEncoding`).

The reference pipeline (:meth:`toktools.tokenizer.Tokenizer.encode_sequence`) appends three
Python objects per token (id, token, offset) and looks every word up in the model's word cache;
on 1 MB of held-out text that is most of the time, and a caller who wants ids alone pays for
all of it. Here, for plain byte-level BPE (the ids-only path's conditions:
:func:`toktools.engines.ids_words.byte_level_ready`, no normaliser, ByteLevel pre-tokeniser), the
whole batch is done at once:

* every text is split into words by the compiled GPT-2 split (:mod:`toktools.models.bpe.compiled_split`,
  over the batch's code points, in the merge's thread without the GIL) where its machine code is
  kept, else by the ids-only splitter (the same split on stdlib ``re``, proved equal to the
  pre-tokeniser's);
* all the words, every occurrence, are merged by the compiled merge in one call over their UTF-8
  bytes (:class:`toktools.models.bpe.compiled_merge.BulkMerger`), with no cache: no Python code
  runs per word;
* the offsets come from array arithmetic over the batch: a token covers the bytes after the
  previous token's (they tile each word), and its span runs from the character of its first byte
  to that of its last, as :meth:`toktools.parts.models._CachedWords._word_tokens` counts them;
  the prefix space has the span of the first character;
* offsets trimmed by a ``ByteLevel`` / ``RobertaProcessing`` post-processor are computed the
  same way, for the whole batch, when first read (:func:`toktools.parts.post_processors.trim_offsets`
  asks the encoding for them).

A text that holds an added token takes the reference pipeline (``None`` below), as do, without
the compiled split, the few texts of a batch with characters outside the BMP. BERT WordPiece has its own batch builder
(:mod:`toktools.engines.lazy_wordpiece`), chosen here by :func:`_builder` under the same
thresholds; the template around a single text is then built in one step
(:mod:`toktools.engines.lazy_templates`). Truncation,
templates and padding then run on these encodings as on any other: they keep unread fields
unread. ``tests/test_lazy_encodings.py`` checks every field against ``tokenizers``.
"""

from __future__ import annotations

import re
import threading
from array import array
from collections.abc import Callable, Sequence
from functools import partial
from itertools import accumulate, chain
from operator import add
from typing import TYPE_CHECKING, Any

from toktools.encoding import Encoding
from toktools.engines.batch_parts import offsets_per_text, part_chunks, part_encodings
from toktools.engines.ids_words import ASTRAL

if TYPE_CHECKING:
    from toktools.engines.lazy_wordpiece import WordPieceBatches

#: Once the reference path has encoded this many characters in a process (one batch or many
#: small ones, as a data loader's), the cold start (numpy, the compiled merge: ~0.15 s) pays for
#: itself: the reference path takes ~0.4 s per 1 MB, and a loaded path is ahead from 32 texts.
COLD_MIN_CHARS = 250_000
#: Once loaded, a batch of at least this many characters takes this path.
WARM_MIN_CHARS = 2_000
#: Up to this many texts with characters outside the BMP take the reference path: compiling the
#: split's full pattern for them (~0.05 s) would cost more.
ASTRAL_REFERENCE_TEXTS = 32


def lazy_sequences(tokenizer: Any, texts: Sequence[str], type_ids: Sequence[int]) -> list[Encoding | None] | None:
    """The encodings of ``texts`` (``encode_sequence(text, type_id)`` for each), lazily built,
    ``None`` for a text the reference pipeline must encode (it holds an added token); or ``None``
    when this path does not apply (another pipeline, a small batch, no compiled merge)."""
    builder = _builder(tokenizer)
    if builder is None:
        return None
    chars = sum(map(len, texts))
    if not builder.loaded:
        builder.cold_chars += chars  # counted over calls: many small batches load it too
        if builder.cold_chars < COLD_MIN_CHARS:
            return None
    elif chars < WARM_MIN_CHARS:
        return None
    if not builder.load():
        return None
    return builder.encode(texts, type_ids)


def prepare(tokenizer: Any) -> bool:
    """Before workers are forked for a large batch: True if it will take this path, its compiled
    merge now loaded here for the workers to inherit."""
    builder = _builder(tokenizer)
    return builder is not None and builder.load()


def _builder(tokenizer: Any) -> ByteLevelBatches | WordPieceBatches | None:
    """The builder for ``tokenizer`` (kept on its model), or None where this path is not exact."""
    from toktools.engines.ids_only import standard_pipeline
    from toktools.parts import models, pre_tokenizers

    if not standard_pipeline(tokenizer):
        return None  # a subclass that encodes its own way
    model, pre = tokenizer.model, tokenizer.pre_tokenizer
    if type(model) is models.WordPiece:
        from toktools.engines.lazy_wordpiece import wordpiece_builder

        return wordpiece_builder(tokenizer)
    if type(model) is not models.BPE or type(pre) is not pre_tokenizers.ByteLevel or tokenizer.normalizer is not None:
        return None
    added = tuple(sorted(t.content for t in tokenizer.added.tokens))
    key = (pre.add_prefix_space, pre.use_regex, id(model.merge_map), added)
    held = model.__dict__.get("_lazy_batches")
    if held is not None and held[0] == key:
        return held[1]  # type: ignore[no-any-return]
    from toktools.engines.ids_words import byte_level_ready
    from toktools.models.bpe.bytelevel import SYMBOL_TO_BYTE
    from toktools.parts.post_processors import TRIMMED

    token_of = model.id_to_token_map
    dense = min(token_of, default=0) >= 0 and max(token_of, default=0) < 4 * len(token_of) + 65_536  # a table by id
    builder = None
    if (
        dense
        and byte_level_ready(model)
        and not model.ignore_merges
        and set(SYMBOL_TO_BYTE) & set(TRIMMED) == {"\u0120"}
    ):
        builder = ByteLevelBatches(model, pre.add_prefix_space, pre.use_regex, added)
    model.__dict__["_lazy_batches"] = (key, builder)
    return builder


class ByteLevelBatches:
    """Batches of texts → lazy encodings, for one byte-level BPE model and pre-tokeniser."""

    def __init__(self, model: Any, add_prefix_space: bool, use_regex: bool, added: Sequence[str]) -> None:
        from toktools.engines.ids_words import ByteLevelBPE, ByteLevelWords

        self.words = ByteLevelWords(add_prefix_space, use_regex)
        self.bpe = ByteLevelBPE(model)
        self.add_prefix_space = add_prefix_space
        self.token_of: dict[int, str] = model.id_to_token_map
        # any added token (raw or normalised: there is no normaliser) sends its text the reference way
        self.has_added = re.compile("|".join(map(re.escape, added))).search if added else None
        self.merger: Any = None
        self.splitter: Any = None  # the compiled split, where its machine code is kept
        self.offsetter: Any = None  # the compiled offsets (with the compiled split), where kept
        self.cold_chars = 0  # characters the reference path has encoded before this one loaded
        self._lengths: Any = None  # token id -> length in symbols (= bytes), an array.array

    @property
    def loaded(self) -> bool:
        return self.merger is not None

    def load(self) -> bool:
        """Load the compiled merge if that is cheap here (its machine code is kept); False if not."""
        if self.merger is None:
            from toktools.runtime.compiled_switch import numba_installed

            if not numba_installed():
                return False
            from toktools.models.bpe import compiled_merge

            if not compiled_merge.kept():
                return False
            merger = self.bpe.bulk().compiled()  # no NumPy: only the offsets read it
            if merger is None:
                return False
            self.merger = merger
            if self.words.use_regex:
                self.splitter = _compiled_split()
            if self.splitter is not None:
                self.offsetter = _compiled_offsets(self.token_lengths)
        return True

    def token_lengths(self) -> Any:
        """Token id → its length in symbols (= bytes), an ``array.array`` (made on first use)."""
        if self._lengths is None:
            from toktools.models.bpe.compiled_offsets import token_lengths

            self._lengths = token_lengths(self.token_of)
        return self._lengths

    def lengths(self) -> Any:
        """:meth:`token_lengths` as a NumPy array (a view), for the NumPy offsets."""
        import numpy as np

        return np.frombuffer(self.token_lengths(), dtype=np.int64)

    def encode(self, texts: Sequence[str], type_ids: Sequence[int]) -> list[Encoding | None]:
        search = self.has_added
        plain = [i for i, text in enumerate(texts) if search is None or search(text) is None]
        astral = (
            []
            if self.splitter is not None
            else [i for i in plain if not texts[i].isascii() and ASTRAL.search(texts[i])]
        )
        if astral and len(astral) <= ASTRAL_REFERENCE_TEXTS:  # not worth compiling the re split's full pattern
            plain = sorted(set(plain) - set(astral))
        out: list[Encoding | None] = [None] * len(texts)
        if not plain:
            return out
        # in parts, each merged in a thread while this one splits the next part and builds the
        # previous part's encodings (the compiled merge runs without the GIL: a second core)
        chunks = part_chunks(texts, plain)
        threaded = len(chunks) > 1  # one part: nothing to overlap, no thread to start and join
        batches = [_Batch(self, [texts[i] for i in chunk], threaded) for chunk in chunks]
        for i, n, batch, encoding in part_encodings(chunks, batches, self.token_of.__getitem__, type_ids):
            encoding.__dict__["trimmed_offsets"] = partial(batch.trimmed_offsets, n)
            out[i] = encoding
        return out


def _compiled_split() -> Any:
    """The compiled split if its machine code is kept here, else None (the ``re`` split) and its
    compilation started in a detached process for the next runs."""
    from toktools.models.bpe import compiled_split

    if not compiled_split.kept():
        compiled_split.start_compiling()
        return None
    try:
        return compiled_split.CompiledSplit()
    except ImportError:
        return None


def _compiled_offsets(token_lengths: Callable[[], Any]) -> Any:
    """The compiled offsets if their machine code is kept here, else None (NumPy computes them)
    and their compilation started in a detached process for the next runs."""
    from toktools.models.bpe import compiled_offsets

    if not compiled_offsets.kept():
        compiled_offsets.start_compiling()
        return None
    try:
        return compiled_offsets.CompiledOffsets(token_lengths())
    except ImportError:
        return None


class _Batch:
    """One batch's ids and, when first asked, its offsets (plain and trimmed), as arrays over all
    its tokens; text ``n``'s are those from ``bounds[n]`` to ``bounds[n + 1]``.

    With the compiled split, the ids need no NumPy (buffers of ``array.array`` and ``bytes``):
    a first call that reads only ids never imports it (~45 ms); the offsets do."""

    def __init__(self, batches: ByteLevelBatches, texts: list[str], threaded: bool = True) -> None:
        prefixed = [batches.add_prefix_space and bool(text) and not text.startswith(" ") for text in texts]
        self.batches = batches
        self._prefixed_flags = prefixed
        self._text_lengths = list(map(len, texts))
        self._merged: list[Any] = []
        self._lists: dict[Any, dict[int, list[tuple[int, int]]]] = {}
        self._arrays: Any = None
        self._views: Any = None  # NumPy views of the part, made when the offsets are first read
        self.ids: list[int] = []
        self.bounds: list[int] = []
        joined = "".join([" " + text if prefix else text for text, prefix in zip(texts, prefixed)])
        points: bytes | None = None
        if batches.splitter is not None and batches.words.use_regex:
            try:
                points = joined.encode("utf-32-le")
            except UnicodeEncodeError:  # a lone surrogate: the re split's way (and its error)
                points = None
        self._points = points
        if points is not None:  # the split runs in the thread too, compiled (no GIL, no string per word)
            self._data = joined.encode("utf-8")
            text_ends = array("q", accumulate(map(add, self._text_lengths, prefixed)))
            work: Any = partial(self._split_and_merge, points, text_ends)
        else:
            import numpy as np

            from toktools.models.bpe.compiled_merge import utf8_words

            word_lists = list(map(batches.words, texts))
            data, bounds, char_bytes, char_ends = utf8_words(list(chain.from_iterable(word_lists)))
            word_ends = np.zeros(len(texts) + 1, dtype=np.int64)
            np.cumsum(np.fromiter(map(len, word_lists), dtype=np.int64, count=len(word_lists)), out=word_ends[1:])
            self._word_ends = word_ends.tolist()
            # where each text starts in the words end to end (characters)
            self._views = {"text_starts": char_ends[word_ends[:-1]], "char_bytes": char_bytes, "data": data}
            self._data = data
            work = partial(self._merge_words, data, bounds)
        self._merging: threading.Thread | None = None
        if threaded:
            self._merging = threading.Thread(target=self._run, args=(work,), daemon=True)
            self._merging.start()
        else:
            self._run(work)

    def _split_and_merge(self, points: bytes, text_ends: Any) -> tuple[Any, Any, int]:
        """In the thread: the compiled split (with each word's UTF-8 bounds), then the compiled
        merge; ``array.array`` buffers throughout."""
        words = self.batches.splitter.bounds(points, text_ends)  # type: ignore[union-attr]
        self._word_ends = words.text_words.tolist()
        data = self._data
        return self.batches.merger.merge_at(data, len(data), words.byte_bounds, words.count, words.longest)

    def _merge_words(self, data: Any, bounds: Any) -> tuple[Any, Any, int]:
        ids, id_starts = self.batches.merger.merge(data, bounds)
        return ids, id_starts, len(ids)

    def _run(self, work: Any) -> None:
        try:
            self._merged.append(work())
        except BaseException as error:  # noqa: BLE001 - raised again by finish, in the caller's thread
            self._merged.append(error)

    def finish(self) -> None:
        """Wait for the merge; the ids and each text's bounds."""
        if self._merging is not None:
            self._merging.join()
        merged = self._merged[0]
        if isinstance(merged, BaseException):
            raise merged
        ids, id_starts, written = merged
        self._ids_buffer = ids
        self.ids = ids[:written].tolist()
        self.bounds = [id_starts[w] for w in self._word_ends]

    def _numpy(self) -> dict[str, Any]:
        """The part as NumPy arrays, for the offsets: ids, each character's UTF-8 length, where
        each text starts (characters, its prefix space included), the prefix flags, the bytes."""
        views = self._views
        if views is None:
            views = self._views = {}
        if "ids" not in views:
            import numpy as np

            views["ids"] = np.frombuffer(self._ids_buffer, dtype=np.int64)[: len(self.ids)]
            views["prefixed"] = np.array(self._prefixed_flags, dtype=np.int64)
            if self._points is not None:
                points = np.frombuffer(self._points, dtype=np.uint32)
                views["char_bytes"] = 1 + (points >= 0x80).astype(np.int64) + (points >= 0x800) + (points >= 0x10000)
                text_ends = np.cumsum(np.array(self._text_lengths, dtype=np.int64) + views["prefixed"])
                views["text_starts"] = np.concatenate(([0], text_ends[:-1])).astype(np.int64)
                views["data"] = np.frombuffer(self._data, dtype=np.uint8)
        return views

    def _offset_arrays(self) -> Any:
        """Starts and ends of every token in characters of its text (before trimming), its byte
        length and where it ends in the batch's UTF-8 bytes, and each text's number of tokens."""
        if self._arrays is None:
            import numpy as np

            views = self._numpy()
            ids, char_bytes = views["ids"], views["char_bytes"]
            lengths = self.batches.lengths()[ids]
            byte_ends = np.cumsum(lengths)
            char_of_byte = np.repeat(np.arange(len(char_bytes), dtype=np.int64), char_bytes)
            starts = char_of_byte[byte_ends - lengths]
            ends = char_of_byte[byte_ends - 1] + 1 if len(ids) else starts
            counts: Any = np.diff(np.array(self.bounds, dtype=np.int64))
            text_start = np.repeat(views["text_starts"], counts)
            shift = np.repeat(views["prefixed"], counts)  # the prefix space has the first character's span
            starts = np.maximum(starts - text_start - shift, 0)
            ends = np.maximum(ends - text_start - shift, shift)
            self._arrays = (starts, ends, lengths, byte_ends, counts)
        return self._arrays

    def _compiled_spans(self, trim: int) -> dict[int, list[tuple[int, int]]] | None:
        """Every text's offsets from the compiled kernel (no NumPy), or None without it."""
        offsetter = self.batches.offsetter
        if offsetter is None or self._points is None:
            return None
        lengths, prefixed = self._text_lengths, self._prefixed_flags
        text_starts = array("q", accumulate(map(add, lengths, prefixed), initial=0))[: len(lengths)]
        ids = self._ids_buffer[: len(self.ids)]
        starts, ends = offsetter.spans(
            ids, self._data, array("q", self.bounds), text_starts, array("q", prefixed), trim
        )
        return self._per_text(starts, ends)

    def offsets(self, n: int) -> list[tuple[int, int]]:
        """Text ``n``'s offsets (every text's built on the first call, GC paused)."""
        lists = self._lists.get("plain")
        if lists is None:
            from toktools.models.bpe.compiled_offsets import PLAIN

            lists = self._compiled_spans(PLAIN)
            if lists is None:
                starts, ends, *_ = self._offset_arrays()
                lists = self._per_text(starts, ends)
            self._lists["plain"] = lists
        return lists.pop(n)

    def trimmed_offsets(self, n: int, add_prefix_space: bool) -> list[tuple[int, int]]:
        """:func:`toktools.parts.post_processors.trim_offsets` of text ``n``'s offsets, every
        text's computed on the first call. A byte-level token's only trimmed character is the
        space's symbol ``Ġ`` (checked by :func:`_builder`), one byte ``0x20``: its leading and
        trailing ones are counted in the batch's bytes."""
        lists = self._lists.get(add_prefix_space)
        if lists is None:
            from toktools.models.bpe.compiled_offsets import TRIMMED, TRIMMED_AFTER_PREFIX_SPACE

            lists = self._compiled_spans(TRIMMED_AFTER_PREFIX_SPACE if add_prefix_space else TRIMMED)
        if lists is None:
            import numpy as np

            starts, ends, lengths, byte_ends, counts = self._offset_arrays()
            data = self._numpy()["data"]
            # the spaces a token starts (ends) with: counted from its first (last) byte, only over
            # the tokens still in a run of spaces (few go past one)
            leading, trailing = np.zeros(len(lengths), dtype=np.int64), np.zeros(len(lengths), dtype=np.int64)
            for spaces, step, at in ((leading, 1, byte_ends - lengths), (trailing, -1, byte_ends - 1)):
                index = np.flatnonzero(data[at] == 0x20)
                k = 0
                while len(index):
                    spaces[index] += 1
                    k += 1
                    index = index[lengths[index] > k]
                    index = index[data[at[index] + step * k] == 0x20]
            if add_prefix_space:  # the one prefix space before a sequence's first token stays
                first = np.zeros(len(starts), dtype=bool)
                first[np.array(self.bounds[:-1], dtype=np.int64)[counts > 0]] = True
                leading = np.where((leading == 1) & (first | (starts == 0)), 0, leading)
            new_starts = np.where(leading > 0, np.minimum(starts + leading, ends), starts)
            new_ends = np.where((trailing > 0) & (ends >= trailing), np.maximum(ends - trailing, new_starts), ends)
            lists = self._per_text(new_starts, new_ends)
        self._lists[add_prefix_space] = lists
        return lists.pop(n)

    def _per_text(self, starts: Any, ends: Any) -> dict[int, list[tuple[int, int]]]:
        return offsets_per_text(starts, ends, self.bounds)
