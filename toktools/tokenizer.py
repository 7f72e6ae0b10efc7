"""One tokenizer made of parts, run in order as ``tokenizers`` runs them:

    added tokens (raw) → normaliser → added tokens (normalised) → pre-tokeniser → model
    → truncation → post-processor → padding;   ids → tokens → decoder

The parts live in :mod:`toktools.parts`; the usual pipelines are :mod:`toktools.presets`.
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Sequence
from itertools import chain, islice
from pathlib import Path
from typing import Any

from toktools.encoding import ENCODING_FIELDS, AddedToken, AddedTokens, Encoding, Padding, Truncation
from toktools.errors import ToktoolsError
from toktools.io.outputs import dumps_tokenizer_json, write_files_atomically
from toktools.parts.base import WHOLE_TEXT, Decoder, Model, Normalizer, Piece, PostProcessor, PreTokenizer, Span, Words
from toktools.text_check import check_text

#: Model settings that older code reads from the tokenizer itself (``tokenizer.merges`` …).
_MODEL_ATTRIBUTES = frozenset(
    {
        "merges",
        "merge_map",
        "unk_token",
        "unk_id",
        "continuing_subword_prefix",
        "end_of_word_suffix",
        "prefix",
        "longest",
        "max_input_chars_per_word",
        "fuse_unk",
        "byte_fallback",
        "ignore_merges",
        "id_to_token_map",
    }
)


#: The methods of :class:`Tokenizer` whose behaviour the ids-only and lazy paths repeat
#: (:mod:`toktools.engines.ids_only`, :mod:`toktools.engines.lazy_encodings`).
PIPELINE_METHODS = (
    "encode",
    "encode_batch",
    "_encode_unpadded_batch",
    "_encode_unpadded",
    "encode_sequence",
    "encode_into",
    "_encode_piece",
)


class Tokenizer:
    """``normalizer → pre_tokenizer → model → post_processor``, and ``decoder`` back; every
    part but the model may be ``None``, as in ``tokenizers``."""

    def __init__(
        self,
        model: Model,
        *,
        normalizer: Normalizer | None = None,
        pre_tokenizer: PreTokenizer | None = None,
        post_processor: PostProcessor | None = None,
        decoder: Decoder | None = None,
        added_tokens: Sequence[AddedToken] = (),
    ) -> None:
        self.normalizer = normalizer
        self.pre_tokenizer = pre_tokenizer
        self.model = model
        self.post_processor = post_processor
        self.decoder = decoder
        self.added = AddedTokens(added_tokens)
        self.truncation: Truncation | None = None
        self.padding: Padding | None = None

    def __getattr__(self, name: str) -> Any:
        if name in _MODEL_ATTRIBUTES and "model" in self.__dict__:
            return getattr(self.__dict__["model"], name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def encodes_with_the_standard_pipeline(self) -> bool:
        """Whether this object encodes with this class's own :data:`PIPELINE_METHODS` (a
        subclass may encode its own way): the fast paths that repeat them ask this."""
        return all(getattr(type(self), method) is getattr(Tokenizer, method) for method in PIPELINE_METHODS)

    @property
    def kind(self) -> str:
        """The model family (``"bytebpe"``, ``"wordpiece"``): the key of its trainer."""
        return self.model.kind

    @property
    def vocab(self) -> dict[str, int]:
        """The model's vocabulary (without added tokens that are not in it)."""
        return self.model.get_vocab()

    # -- the parts, in order ----------------------------------------------------------------

    def encode_into(self, text: str, base: int, ids: list[int], tokens: list[str], offsets: list[Span]) -> None:
        """Append the tokens of ``text`` (which holds no raw-matched added token) to the three
        lists, offsets shifted by ``base``: normaliser, normalised added tokens, pre-tokeniser
        and model. Appending to shared lists keeps the hot path allocation-free."""
        piece = Piece(text, None, base)
        if self.normalizer is not None:
            piece = self.normalizer.normalize(piece)
        if not self.added.has_normalized:
            self._encode_piece(piece, ids, tokens, offsets)
            return
        normalize = self.normalizer.normalize_str if self.normalizer is not None else None
        for start, end, added in self.added.split_normalized(piece.text, normalize):
            if added is None:
                self._encode_piece(piece.slice(start, end), ids, tokens, offsets)
            else:
                ids.append(added.id)
                tokens.append(piece.text[start:end])
                offsets.append(piece.original(start, end))

    def _encode_piece(self, piece: Piece, ids: list[int], tokens: list[str], offsets: list[Span]) -> None:
        pre = self.pre_tokenizer
        if pre is None:
            words: Words | None = Words(WHOLE_TEXT.finditer(piece.text), piece)
        else:
            words = pre.split_words(piece)
        if words is not None:
            self.model.encode_words(words, ids, tokens, offsets)
            return
        for word in pre.pre_tokenize([piece]):  # type: ignore[union-attr]
            self.model.encode_piece(word, ids, tokens, offsets)

    def decode_tokens(self, tokens: list[str]) -> str:
        """Token strings (special ones already removed if asked) → text; without a decoder
        they are joined with spaces, as ``tokenizers`` does."""
        if self.decoder is None:
            return " ".join(tokens)
        return self.decoder.decode(tokens)

    def to_tokenizer_json(self) -> dict[str, Any]:
        """The ``tokenizer.json`` document that ``tokenizers.Tokenizer.from_str`` loads."""

        def node(part: Any) -> Any:
            return None if part is None else part.to_json()

        return {
            "version": "1.0",
            "truncation": self.truncation_json(),
            "padding": self.padding_json(),
            "added_tokens": self.added_tokens_json(),
            "normalizer": node(self.normalizer),
            "pre_tokenizer": node(self.pre_tokenizer),
            "post_processor": node(self.post_processor),
            "decoder": node(self.decoder),
            "model": self.model.to_json(),
        }

    def save(self, directory: str | Path, *, overwrite: bool = True) -> list[Path]:
        """Write the model's own files (``vocab.txt``, or ``vocab.json`` + ``merges.txt`` …)
        and ``tokenizer.json`` into ``directory``, atomically; return their paths."""
        files = dict(self.model.files())
        files["tokenizer.json"] = dumps_tokenizer_json(self.to_tokenizer_json())
        return write_files_atomically(Path(directory), files, overwrite=overwrite)

    # -- vocabulary -------------------------------------------------------------------------

    def token_to_id(self, token: str) -> int | None:
        added = self.added.by_content.get(token)
        return added.id if added else self.model.token_to_id(token)

    def id_to_token(self, token_id: int) -> str | None:
        """The token of an id; a ``normalized`` added token is its content normalised, as
        ``tokenizers`` keeps it (``decode`` shows it that way too)."""
        added = self.added.by_id.get(token_id)
        if added is None:
            return self.model.id_to_token(token_id)
        if added.normalized and self.normalizer is not None:
            return self.normalizer.normalize_str(added.content)
        return added.content

    @property
    def vocab_size(self) -> int:
        """Size with the added tokens, like ``get_vocab_size(with_added_tokens=True)``. Reads the
        model's vocabulary once (``self.vocab`` may be a fresh copy per access: a Unigram's is)."""
        vocab = self.vocab
        return len(vocab) + sum(1 for t in self.added.tokens if t.content not in vocab)

    def get_vocab(self) -> dict[str, int]:
        vocab = dict(self.vocab)
        vocab.update({t.content: t.id for t in self.added.tokens})
        return vocab

    def add_special_tokens(self, tokens: Sequence[str]) -> None:
        """Register special tokens; one missing from the vocabulary gets the next free id."""
        for content in tokens:
            if content in self.added.by_content:
                continue
            token_id = self.model.token_to_id(content)
            if token_id is None:
                token_id = self._next_added_id()
            self.added.add(AddedToken(content, token_id, special=True))

    def _next_added_id(self) -> int:
        """The id ``tokenizers`` gives a new added token: the vocabulary's size, or one past the
        largest added id when that is at or past the size (``AddedVocabulary::add_tokens``)."""
        size = len(self.model.get_vocab())
        largest = max(self.added.by_id, default=None)
        return largest + 1 if largest is not None and (largest >= size or size == 0) else size

    # -- settings ---------------------------------------------------------------------------

    def enable_truncation(
        self, max_length: int, strategy: str = "longest_first", direction: str = "right", stride: int = 0
    ) -> None:
        """Truncate to ``max_length`` tokens, template included; the rest goes to
        ``Encoding.overflowing`` in windows overlapping by ``stride``. Refused, as ``tokenizers``'
        ``enable_truncation`` refuses it, when ``stride`` exceeds ``max_length`` minus the
        template's special tokens."""
        room = self.post_processor.added_tokens(False) if self.post_processor is not None else 0
        if stride and room <= max_length < room + stride:  # below room, tokenizers' subtraction wraps round
            raise ToktoolsError(
                f"truncation stride {stride} is greater than the effective max length {max_length - room} "
                f"(max_length {max_length} minus {room} special tokens)"
            )
        self.truncation = Truncation(max_length, strategy, direction, stride)  # type: ignore[arg-type]

    def no_truncation(self) -> None:
        self.truncation = None

    def enable_padding(
        self,
        length: int | None = None,
        pad_token: str = "[PAD]",
        pad_id: int = 0,
        direction: str = "right",
        pad_to_multiple_of: int | None = None,
        pad_type_id: int = 0,
    ) -> None:
        """Pad to ``length`` (or to the longest of a batch). The defaults are ``tokenizers``':
        id 0 and the string ``[PAD]``, whatever the vocabulary (RoBERTa wants ``pad_id=1,
        pad_token="<pad>"``)."""
        self.padding = Padding(pad_id, pad_token, length, pad_type_id, direction, pad_to_multiple_of)  # type: ignore[arg-type]

    def no_padding(self) -> None:
        self.padding = None

    # -- encoding ---------------------------------------------------------------------------

    def encode_sequence(self, text: str, type_id: int = 0) -> Encoding:
        """One sequence without template, truncation or padding."""
        reseed = getattr(self.model, "reseed", None)
        if reseed is not None:  # BPE-dropout: draws that depend on this text alone
            reseed(text)
        ids: list[int] = []
        tokens: list[str] = []
        offsets: list[tuple[int, int]] = []
        if not self.added:
            self.encode_into(text, 0, ids, tokens, offsets)
        else:
            for fragment, start, added in self.added.split(text):
                if added is None:
                    self.encode_into(fragment, start, ids, tokens, offsets)
                else:
                    ids.append(added.id)
                    tokens.append(fragment)  # with the spaces that lstrip / rstrip took
                    offsets.append((start, start + len(fragment)))
        # like tokenizers, special tokens found in the text are not flagged in special_tokens_mask
        n = len(ids)
        return Encoding(ids, tokens, offsets, [type_id] * n, [1] * n, [0] * n)

    def _encode_unpadded(self, text: str, pair: str | None, add_special_tokens: bool) -> Encoding:
        first = self.encode_sequence(text)
        second = self.encode_sequence(pair, type_id=1) if pair is not None else None
        return self._post_process(first, second, add_special_tokens)

    def _post_process(self, first: Encoding, second: Encoding | None, add_special_tokens: bool) -> Encoding:
        """Truncation, then the post-processor's template (or the two sequences joined)."""
        processor = self.post_processor
        if self.truncation is not None:
            room = processor.added_tokens(second is not None) if processor is not None and add_special_tokens else 0
            first, second = self.truncation.apply(first, second, room)
        if processor is not None:
            return processor.process(first, second, add_special_tokens)
        return first if second is None else Encoding.merge([first, second])

    def encode(self, text: str, pair: str | None = None, add_special_tokens: bool = True) -> Encoding:
        """Encode one text (or a pair) into ids, tokens, offsets, type ids and masks."""
        check_text(text, pair)
        encoding = self._encode_unpadded(text, pair, add_special_tokens)
        if self.padding is not None:
            encoding = self.padding.apply(encoding, self.padding.target(len(encoding)))
        return encoding

    def encode_batch(
        self, inputs: Sequence[str | tuple[str, str]], add_special_tokens: bool = True, workers: int | None = None
    ) -> list[Encoding]:
        """Encode many texts (or ``(a, b)`` pairs); with padding, to the longest of the batch.

        Batches of 5M characters or more are split over ``workers`` processes (default: every core, as
        ``tokenizers`` uses every thread); the result does not depend on the number of workers.
        """
        from toktools.runtime.gc_pause import gc_paused

        with gc_paused():  # millions of small objects, no cycle among them
            return self._encode_batch(inputs, add_special_tokens, workers)

    def _encode_batch(
        self, inputs: Sequence[str | tuple[str, str]], add_special_tokens: bool, workers: int | None
    ) -> list[Encoding]:
        for item in inputs:
            check_text(*((item,) if isinstance(item, str) else item))
        if workers is None:
            size = sum(len(text) for item in inputs for text in ((item,) if isinstance(item, str) else item))
            workers = (os.cpu_count() or 1) if size >= _PARALLEL_CHARS else 1
        if workers > 1 and len(inputs) > 1:
            from toktools.engines.lazy_encodings import prepare

            if not prepare(self):  # the workers inherit the loaded compiled merge, or else:
                # new words merged once, here, in bulk: the forked workers inherit the warm cache
                _warm_word_cache(self, inputs)
            encodings = _encode_in_processes(self, inputs, add_special_tokens, workers)
        else:
            encodings = self._encode_unpadded_batch(inputs, add_special_tokens)
        if self.padding is not None and encodings:
            target = self.padding.target(max(len(e) for e in encodings))
            encodings = [self.padding.apply(e, target) for e in encodings]
        return encodings

    def _encode_unpadded_batch(
        self, inputs: Sequence[str | tuple[str, str]], add_special_tokens: bool
    ) -> list[Encoding]:
        from toktools.engines.lazy_encodings import lazy_sequences

        texts = [text for item in inputs for text in ((item,) if isinstance(item, str) else item)]
        type_ids = [type_id for item in inputs for type_id in ((0,) if isinstance(item, str) else (0, 1))]
        lazy = lazy_sequences(self, texts, type_ids)
        encodings = []
        if lazy is None:  # the reference pipeline, word by word
            _warm_word_cache(self, inputs)
            for item in inputs:
                text, pair = (item, None) if isinstance(item, str) else item
                encodings.append(self._encode_unpadded(text, pair, add_special_tokens))
            return encodings
        from toktools.engines.lazy_templates import template_frame

        frame = template_frame(self, add_special_tokens)
        built = iter(zip(texts, type_ids, lazy))
        for item in inputs:
            sequences = [
                encoding if encoding is not None else self.encode_sequence(text, type_id)
                for text, type_id, encoding in islice(built, 1 if isinstance(item, str) else 2)
            ]
            first, second = sequences[0], sequences[1] if len(sequences) > 1 else None
            framed = frame(first) if frame is not None and second is None else None  # the template in one step
            encodings.append(framed if framed is not None else self._post_process(first, second, add_special_tokens))
        return encodings

    # -- decoding ---------------------------------------------------------------------------

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = True) -> str:
        """Ids → text. Unknown ids are skipped, as ``tokenizers`` does."""
        tokens = []
        specials = self.added.special_contents if skip_special_tokens else ()
        for token_id in ids:
            token = self.id_to_token(token_id)
            if token is not None and token not in specials:
                tokens.append(token)
        return self.decode_tokens(tokens)

    def decode_batch(self, batch: Sequence[Sequence[int]], skip_special_tokens: bool = True) -> list[str]:
        return [self.decode(ids, skip_special_tokens) for ids in batch]

    def added_tokens_json(self) -> list[dict[str, Any]]:
        return [
            {
                "id": t.id,
                "content": t.content,
                "single_word": t.single_word,
                "lstrip": t.lstrip,
                "rstrip": t.rstrip,
                "normalized": t.normalized,
                "special": t.special,
            }
            for t in sorted(self.added.tokens, key=lambda t: t.id)
        ]

    def truncation_json(self) -> dict[str, Any] | None:
        if self.truncation is None:
            return None
        strategy = {"longest_first": "LongestFirst", "only_first": "OnlyFirst", "only_second": "OnlySecond"}
        return {
            "direction": self.truncation.direction.capitalize(),
            "max_length": self.truncation.max_length,
            "strategy": strategy[self.truncation.strategy],
            "stride": self.truncation.stride,
        }

    def padding_json(self) -> dict[str, Any] | None:
        if self.padding is None:
            return None
        p = self.padding
        return {
            "strategy": {"Fixed": p.length} if p.length is not None else "BatchLongest",
            "direction": p.direction.capitalize(),
            "pad_to_multiple_of": p.pad_to_multiple_of,
            "pad_id": p.pad_id,
            "pad_type_id": p.pad_type_id,
            "pad_token": p.pad_token,
        }


# ---------------------------------------------------------------------------------------------
# Parallel batches
# ---------------------------------------------------------------------------------------------

#: Batches of at least this many characters are worth starting worker processes for: below,
#: forking and sending the encodings back cost more than a second core saves (1 MB of byte-level
#: text takes ~0.3 s of CPU in this process, where forking a loaded machine took seconds).
_PARALLEL_CHARS = 5_000_000
#: Fewer inputs than this per worker are encoded in this process (forking costs more).
_MIN_PER_WORKER = 64
_worker_tokenizer: Tokenizer | None = None


def _encode_chunk(chunk: Sequence[str | tuple[str, str]], add_special_tokens: bool) -> list[tuple[Any, ...] | Encoding]:
    """Encode in a worker and pack each encoding into flat integer arrays: pickling millions of
    small Python lists and tuples would cost more than the encoding itself. Token strings are
    rebuilt from the ids in the parent; only those that may differ (an added token that took
    spaces with it, with ``lstrip`` / ``rstrip``, or matched in normalised text) travel as text."""
    assert _worker_tokenizer is not None
    tokenizer = _worker_tokenizer
    stripping = {t.id for t in tokenizer.added.tokens if t.lstrip or t.rstrip or t.normalized}
    packed: list[tuple[Any, ...] | Encoding] = []
    for e in tokenizer._encode_unpadded_batch(chunk, add_special_tokens):
        if e.overflowing:  # truncation kept pieces: rare, sent whole
            packed.append(e)
            continue
        odd = [(i, e.tokens[i]) for i, token_id in enumerate(e.ids) if token_id in stripping] if stripping else []
        packed.append(
            (
                array("q", e.ids).tobytes(),
                array("q", chain.from_iterable(e.offsets)).tobytes(),
                bytes(e.type_ids),
                bytes(e.attention_mask),
                bytes(e.special_tokens_mask),
                odd,
            )
        )
    return packed


class _PackedEncoding(Encoding):
    """An :class:`Encoding` that came back from a worker as flat arrays and unpacks each field
    only when it is first read: a pipeline that wants the ids alone never pays for tokens and
    offsets. It compares, prints and behaves as a plain ``Encoding``."""

    def __init__(self, *fields: Any, packed: tuple[Any, ...] | None = None, **named: Any) -> None:
        if packed is None:  # built from fields, e.g. by dataclasses.replace
            Encoding.__init__(self, *fields, **named)
        else:  # no fields yet: __getattr__ unpacks them on demand
            self.__dict__["_packed"] = packed

    def __getattr__(self, name: str) -> Any:
        if name == "overflowing" and "_packed" in self.__dict__:  # packed only without pieces
            self.__dict__[name] = []
            return self.__dict__[name]
        if name not in ENCODING_FIELDS:
            raise AttributeError(name)
        if "_packed" not in self.__dict__:
            raise AttributeError(name)
        token_of, (ids_raw, offsets_raw, type_raw, attention_raw, special_raw, odd) = self.__dict__["_packed"]
        if name == "ids":
            value: Any = array("q", ids_raw).tolist()
        elif name == "tokens":
            value = list(map(token_of.__getitem__, self.ids))
            for index, token in odd:
                value[index] = token
        elif name == "offsets":
            flat = array("q", offsets_raw).tolist()
            value = list(zip(flat[0::2], flat[1::2]))
        else:
            value = list(
                {"type_ids": type_raw, "attention_mask": attention_raw, "special_tokens_mask": special_raw}[name]
            )
        self.__dict__[name] = value
        return value

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Encoding):
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in (*ENCODING_FIELDS, "overflowing"))

    __hash__ = None  # type: ignore[assignment]  # mutable, like Encoding


def _warm_word_cache(tokenizer: Tokenizer, inputs: Sequence[str | tuple[str, str]]) -> None:
    """Merge the batch's words new to a byte-level BPE model in bulk, before encoding
    (:mod:`toktools.models.bpe.warm_cache`; nothing for other models)."""
    from toktools.models.bpe.warm_cache import warm

    warm(tokenizer, [text for item in inputs for text in ((item,) if isinstance(item, str) else item)])


def _encode_in_processes(
    tokenizer: Tokenizer, inputs: Sequence[str | tuple[str, str]], add_special_tokens: bool, workers: int
) -> list[Encoding]:
    """Encode in forked worker processes that inherit the tokenizer (no pickling of the model);
    chunks come back in order, so the result is the same as a single process's."""
    import multiprocessing

    from toktools.runtime.workers import process_pool, worth_starting

    global _worker_tokenizer
    try:
        multiprocessing.get_context("fork")  # process_pool forks: is there fork here?
    except ValueError:  # no fork on this platform: stay in this process
        return tokenizer._encode_unpadded_batch(inputs, add_special_tokens)
    workers = worth_starting(workers, len(inputs), per_worker=_MIN_PER_WORKER)
    if workers <= 1:  # a tiny batch: forking would cost more than it saves
        return tokenizer._encode_unpadded_batch(inputs, add_special_tokens)
    size = max(1, -(-len(inputs) // (workers * 4)))
    chunks = [inputs[i : i + size] for i in range(0, len(inputs), size)]
    _worker_tokenizer = tokenizer
    try:
        with process_pool(workers) as pool:
            results = list(pool.map(_encode_chunk, chunks, [add_special_tokens] * len(chunks)))
    finally:
        _worker_tokenizer = None
    token_of = {i: tokenizer.id_to_token(i) for i in set(tokenizer.get_vocab().values())}  # ids may be sparse
    return [
        packed if isinstance(packed, Encoding) else _PackedEncoding(packed=(token_of, packed))
        for chunk in results
        for packed in chunk
    ]
