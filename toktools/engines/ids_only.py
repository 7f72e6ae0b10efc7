"""Ids-only encoding for the two pipelines corpus encoding meets most: byte-level BPE (GPT-2,
RoBERTa, toktools' ``bytebpe``) and BERT WordPiece.

Corpus encoding wants ids alone, but :meth:`Tokenizer.encode` also builds tokens, offsets and an
:class:`~toktools.encoding.Encoding` per text. Here a text becomes its ids with C-speed calls
only: one ``findall`` for its words, one dictionary lookup per word (natural text repeats a few
thousand words over and over), ``chain`` to join the cached id tuples. Python code runs only
for a word not seen before. The result is the ids of ``Tokenizer.encode(text,
add_special_tokens=False)``, for every input: every step is the reference's own (its tables, its
merge engine, its added-token matcher), or is proved equal to it below; ``tests/test_fast_ids.py``
checks it against the reference and against ``tokenizers`` on real and adversarial text.

:func:`ids_encoder` recognises a tokenizer by its parts and returns ``None`` for anything else
(the caller then uses the reference pipeline); Unigram tokenizers after Metaspace have their
own ids-only path in :mod:`toktools.engines.ids_only_unigram`, which it hands them to.

Byte-level BPE
    * The GPT-2 split runs on stdlib ``re`` with ``tokenizers``' own classes
      (``_bytelevel_tables``: Oniguruma's ``\\p{L}``, ``\\p{N}``, ``\\s``) cut to the BMP, for
      text without astral characters: exact by construction and ~2-3x faster than ``regex``.
      Text with astral characters takes the same pattern with every range (slower, and rare).
      Neither needs ``regex``'s tables, so no scan for where they disagree with Oniguruma.
    * A word not seen before is cut where no merge can reach across (see :class:`CutPoints`),
      and each part is merged alone (and cached): long runs of CJK text, which rarely repeat
      whole, cost a few lookups instead of a merge run over every byte.
    * The words (or parts) a batch meets for the first time are merged all at once
      (:mod:`toktools.models.bpe.bulk_merge`: numpy steps over all of them, or a numba kernel, planned for a
      large input or loaded once merging has cost about what loading it does): a cold cache, in
      every worker and in Chinese text, is most of the cost of a Python merge per word.

WordPiece
    * BertNormalizer is :func:`bert_text.normalize` (one ``str.translate``, exact with NFD
      reordering) and BertPreTokenizer one ``findall`` with its classes cut to the BMP, or, for
      non-ASCII text, the padded translate + ``str.split`` of :func:`bert_text.iter_words` when
      that split is proved exact (``split_is_exact``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from itertools import chain
from typing import Any, Protocol

from toktools.engines.ids_words import (
    BertWords,
    ByteLevelBPE,
    ByteLevelWords,
    WordCache,
    byte_level_ready,
)

#: Fewest new words in a batch worth a bulk merge (:mod:`toktools.models.bpe.bulk_merge`; below: one by one).
BULK_MIN_WORDS = 64
#: A batch sets its new words aside for a bulk merge when the batch before had one for every this
#: many characters or fewer (the texts that missed a word are encoded twice: worth it only when
#: merges are many).
DEFER_BELOW_CHARS_PER_MISS = 150

# ---------------------------------------------------------------------------------------------
# The encoder
# ---------------------------------------------------------------------------------------------


class IdsPath(Protocol):
    """What the reference engine (:class:`toktools.engines.reference.ReferenceEngine`) asks of an ids-only
    path: :class:`IdsEncoder` here, :class:`toktools.engines.ids_only_unigram.UnigramIdsEncoder`."""

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        """The ids of each text (as the reference, without special tokens added)."""

    def encode_packed(self, texts: Sequence[str]) -> tuple[bytes, bytes]:
        """The same ids packed as a worker sends them back (:data:`toktools.engines.id_packing.Packed`)."""

    def prepare_for_volume(self, head_share: float, workers: int) -> None:
        """Before forking workers, after encoding the first ``head_share`` of a batch here: load
        what the rest will want, once, for the workers to inherit."""

    def plans_compiled(self, input_bytes: int) -> bool:
        """True when an input this large wants compiled code (decided from the size alone): the
        engine then has it loaded (:meth:`load_compiled`) in a process of its own, which forks
        the workers."""

    def load_compiled(self, own_process: bool = False) -> None:
        """Load that compiled code now (``own_process``: in a process of toktools' own, see
        :func:`toktools.models.bpe.bulk_merge.without_scipy_linalg`)."""


class IdsEncoder:
    """Texts → ids, equal to ``[e.ids for e in tokenizer.encode_batch(texts,
    add_special_tokens=False)]`` (see :func:`ids_encoder` for which tokenizers)."""

    def __init__(
        self,
        tokenizer: Any,
        words: Callable[[str], list[str]],
        ids_of_word: Callable[[str], tuple[int, ...]],
        normalize: Callable[[str], str] | None,
        pre_tokenize: Callable[[str], list[str]],
    ) -> None:
        self.tokenizer = tokenizer
        self.words = words
        self.cache = WordCache(ids_of_word)
        self._defer = True  # the first batch meets a cold cache
        self._normalize = normalize
        self._pre_tokenize = pre_tokenize
        added = tokenizer.added
        self._added = added if added else None
        raw = [t.content for t in added.tokens if not t.normalized]
        # a quick test for "no raw-matched added token here"; the reference's matcher splits
        self._raw_search = re.compile("|".join(map(re.escape, raw))).search if raw else None
        self._has_normalized = bool(added) and added.has_normalized
        # one bound method kept: the matcher of normalised tokens is rebuilt when it changes
        self._normalize_str = tokenizer.normalizer.normalize_str if tokenizer.normalizer is not None else None
        normalized = {
            self._normalize_str(t.content) if self._normalize_str else t.content for t in added.tokens if t.normalized
        }
        normalized.discard("")
        # the same quick test for "no normalised added token in this normalised text"
        self._normalized_search = re.compile("|".join(map(re.escape, normalized))).search if normalized else None

    def encode(self, text: str) -> list[int]:
        """The ids of one text."""
        from toktools.text_check import check_text

        check_text(text)
        if self._raw_search is None or self._raw_search(text) is None:
            return self._fragment(text)
        ids: list[int] = []
        for fragment, _start, token in self._added.split(text):  # type: ignore[union-attr]
            if token is None:
                ids.extend(self._fragment(fragment))
            else:
                ids.append(token.id)
        return ids

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        """The ids of many texts. Where the words are new to this process (a cold cache, Chinese),
        the batch is encoded with its missed words set aside, these are merged all at once
        (:mod:`toktools.models.bpe.bulk_merge`), and the texts that missed one are encoded again; where few
        are new (judged from the previous batch), each miss is merged on lookup."""
        many = getattr(self.cache.compute, "many", None)
        if many is None or not self._defer:
            misses = self.cache.misses
            out: list[list[int]] = [self.encode(text) for text in texts]
            self._defer = (self.cache.misses - misses) * DEFER_BELOW_CHARS_PER_MISS >= sum(map(len, texts))
            return out
        cache = self.cache
        get = cache.__getitem__
        deferred: list[str] = []
        cache.deferred = deferred
        out = []
        again: list[tuple[int, list[str] | None]] = []  # (text, its words if plain) to look up again
        try:
            for text in texts:
                missed = len(deferred)
                words = self._plain_words(text)
                out.append(self.encode(text) if words is None else list(chain.from_iterable(map(get, words))))
                if len(deferred) != missed:
                    again.append((len(out) - 1, words))
        finally:
            cache.deferred = None
        if not again:
            self._defer = False
            return out
        missing = list(set(deferred))
        self._defer = len(missing) * DEFER_BELOW_CHARS_PER_MISS >= sum(map(len, texts))
        if len(missing) >= BULK_MIN_WORDS:
            found = list(many(missing))
            if len(cache) + len(found) > cache.capacity:
                cache.clear()  # as __missing__ does when full
            cache.update(found)
        for i, words in again:  # the words the bulk merge left are merged on lookup now
            out[i] = self.encode(texts[i]) if words is None else list(chain.from_iterable(map(get, words)))
        return out

    def encode_packed(self, texts: Sequence[str]) -> tuple[bytes, bytes]:
        """The ids of many texts packed as a worker sends them back
        (:data:`toktools.engines.id_packing.Packed`: all ids as uint32, each text's count). Once the
        compiled merge is loaded (a corpus whose words rarely repeat: see :mod:`toktools.models.bpe.bulk_merge`),
        every word is merged by it with no cache, no id list per word or text; a text that may
        hold an added token goes the usual way."""

        bpe = self.cache.compute
        compiled = bpe.bulk().compiled(load=False) if isinstance(bpe, ByteLevelBPE) and not bpe.ignore_merges else None
        if compiled is None:
            from toktools.engines.id_packing import pack_id_lists

            return pack_id_lists(self.encode_batch(texts))
        import numpy as np

        words = [self._plain_words(text) for text in texts]
        ids, counts = compiled.ids_of_texts([w if w is not None else [] for w in words])
        if any(w is None for w in words):
            ends = np.cumsum(counts).tolist()
            parts = [
                ids[end - count : end] if w is not None else np.array(self.encode(text), dtype=np.int64)
                for text, w, count, end in zip(texts, words, counts.tolist(), ends)
            ]
            counts = np.array(list(map(len, parts)), dtype=np.int64)
            ids = np.concatenate(parts) if parts else ids
        return ids.astype(np.uint32).tobytes(), counts.astype(np.int64).tobytes()

    def _plain_words(self, text: str) -> list[str] | None:
        """The words of a text that holds no added token (``None`` if it may hold one)."""
        from toktools.text_check import check_text

        check_text(text)
        if self._raw_search is not None and self._raw_search(text) is not None:
            return None
        if not self._has_normalized:
            return self.words(text)
        normalized = self._normalize(text) if self._normalize is not None else text
        if self._normalized_search is not None and self._normalized_search(normalized) is not None:
            return None
        return self._pre_tokenize(normalized)

    def prepare_for_volume(self, head_share: float, workers: int) -> None:
        """Before forking workers, which then inherit them instead of each loading its own: load
        the bulk merges a corpus like the one just encoded will want, judged from its first
        ``head_share`` (e.g. 1/16 of a batch), the Python merge time it took and the ``workers``
        that will share the rest of the batch."""
        if not isinstance(self.cache.compute, ByteLevelBPE):
            return
        from toktools.models.bpe import bulk_merge as bpe_bulk

        merges = self.cache.compute.bulk()
        merges.vector()
        if (
            self.cache.compute.merge_seconds / max(head_share, 1e-9) / max(workers, 1)
            >= bpe_bulk.COMPILED_FORESEEN_SECONDS
        ):
            merges.compiled()

    def plans_compiled(self, input_bytes: int) -> bool:
        """Byte-level BPE (without ``ignore_merges``: its workers would still merge through the
        cache) on at least :data:`toktools.models.bpe.bulk_merge.COMPILED_PLANNED_BYTES` of input, with numba
        installed. A rule on the size, not on timing, so that a loaded machine never changes it."""
        from toktools.models.bpe import bulk_merge as bpe_bulk
        from toktools.runtime.compiled_switch import numba_installed

        bpe = self.cache.compute
        return (
            isinstance(bpe, ByteLevelBPE)
            and not bpe.ignore_merges
            and input_bytes >= bpe_bulk.COMPILED_PLANNED_BYTES
            and numba_installed()
        )

    def load_compiled(self, own_process: bool = False) -> None:
        bpe = self.cache.compute
        if isinstance(bpe, ByteLevelBPE):
            bpe.bulk().compiled(own_process=own_process)

    def _fragment(self, text: str) -> list[int]:
        """Ids of text that holds no raw-matched added token."""
        get = self.cache.__getitem__
        if not self._has_normalized:
            return list(chain.from_iterable(map(get, self.words(text))))
        normalized = self._normalize(text) if self._normalize is not None else text
        if self._normalized_search is None or self._normalized_search(normalized) is None:
            return list(chain.from_iterable(map(get, self._pre_tokenize(normalized))))
        ids: list[int] = []
        for start, end, token in self._added.split_normalized(normalized, self._normalize_str):  # type: ignore[union-attr]
            if token is None:
                ids.extend(chain.from_iterable(map(get, self._pre_tokenize(normalized[start:end]))))
            else:
                ids.append(token.id)
        return ids


def _template_free(processor: Any) -> bool:
    """True if the post-processor adds and changes no id without special tokens."""
    from toktools.parts import post_processors as pp

    if processor is None or type(processor) in (pp.BertProcessing, pp.RobertaProcessing, pp.ByteLevel):
        return True
    if type(processor) is pp.TemplateProcessing:
        return [item[0] for item in processor.single if not item[2]] == ["A"]
    if type(processor) is pp.Sequence:
        return all(_template_free(p) for p in processor.processors)
    return False


def ids_encoder(tokenizer: Any) -> Any:
    """An :class:`IdsEncoder` for ``tokenizer`` if its parts are ones this module knows, else
    ``None``: byte-level BPE (ByteLevel pre-tokeniser, no normaliser) or WordPiece after
    BertPreTokenizer (BertNormalizer or none), or a Unigram after Metaspace
    (:mod:`toktools.engines.ids_only_unigram`); no truncation or padding; a post-processor that adds
    nothing without special tokens."""
    from toktools.parts import models, normalizers, pre_tokenizers

    if not standard_pipeline(tokenizer) or tokenizer.truncation is not None or tokenizer.padding is not None:
        return None  # not a Tokenizer, or a subclass that encodes its own way (the presets only build)
    if not _template_free(tokenizer.post_processor):
        return None
    model, pre, normalizer = tokenizer.model, tokenizer.pre_tokenizer, tokenizer.normalizer
    if getattr(model, "dropout", None):
        return None  # BPE-dropout samples per text: the whole pipeline draws
    if type(model) is models.BPE and type(pre) is pre_tokenizers.ByteLevel and normalizer is None:
        if not byte_level_ready(model):
            return None
        words = ByteLevelWords(pre.add_prefix_space, pre.use_regex)
        return IdsEncoder(tokenizer, words, ByteLevelBPE(model), None, words)
    if (
        type(model) is models.WordPiece
        and type(pre) is pre_tokenizers.BertPreTokenizer
        and (normalizer is None or type(normalizer) is normalizers.BertNormalizer)
    ):
        bert = BertWords(normalizer.config if normalizer is not None else None)
        wordpiece = model

        def ids_of_word(word: str) -> tuple[int, ...]:
            return tuple([token_id for token_id, *_ in wordpiece.tokenize(word)])

        return IdsEncoder(tokenizer, bert, ids_of_word, bert.normalize, bert.pre_tokenize)
    from toktools.engines.ids_only_unigram import unigram_ids_encoder

    return unigram_ids_encoder(tokenizer)  # type: ignore[return-value]


def standard_pipeline(tokenizer: Any) -> bool:
    """Whether ``tokenizer`` is a :class:`~toktools.tokenizer.Tokenizer` that encodes with the
    class's own pipeline, the one the ids-only and lazy paths repeat (a subclass may encode its
    own way). Asked of the object, so that these paths need not import the class."""
    check = getattr(tokenizer, "encodes_with_the_standard_pipeline", None)
    return bool(check()) if callable(check) else False
