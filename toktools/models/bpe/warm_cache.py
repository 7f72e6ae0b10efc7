"""Filling a byte-level BPE model's word cache for a whole batch with one bulk merge.

``Tokenizer.encode_batch`` builds full encodings through the model's word cache
(:meth:`toktools.parts.models._CachedWords.encode_words`), which merges each word it has not seen
in Python, one by one: on held-out text (a cold cache, Chinese runs) that was 40 % of the time.
The ids-only path merges the new words of a batch all at once (numpy, or the compiled merge:
:mod:`toktools.models.bpe.bulk_merge`); here its ids become the cache's entries (tokens and
character offsets), before the batch is encoded. Only for plain byte-level BPE
(:func:`toktools.engines.ids_words.byte_level_ready`: one token per id, every merge between
byte symbols), where a token's length in symbols is its length in bytes, so the entries are
exactly those :meth:`~toktools.parts.models._CachedWords._cache_entry` computes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

#: Fewest new words worth a bulk merge (numpy's steps have a fixed cost; see ``bulk_merge``).
MIN_NEW_WORDS = 512


def _entry(word: str, ids: tuple[int, ...], token_of: dict[int, str]) -> Any:
    """The cache entry of ``word`` merged into ``ids``: ``(id, token)`` when it is one token,
    else ``(id, token, start, end)`` per token in characters of ``word``."""
    tokens = [token_of[i] for i in ids]
    if len(ids) == 1:
        return (ids[0], tokens[0])
    out = []
    b0 = 0
    if word.isascii():
        for token_id, token in zip(ids, tokens):
            b1 = b0 + len(token)
            out.append((token_id, token, b0, b1))
            b0 = b1
        return out
    data = word.encode("utf-8")
    for token_id, token in zip(ids, tokens):
        b1 = b0 + len(token)
        # the character holding byte p: the lead bytes up to it, less one (the tokens cover the
        # word's bytes exactly, so b0 and b1 - 1 are inside it)
        start = len(data[: b0 + 1].translate(None, _CONTINUATION)) - 1
        end = len(data[:b1].translate(None, _CONTINUATION))
        out.append((token_id, token, start, end))
        b0 = b1
    return out


#: UTF-8 continuation bytes: deleting them leaves one byte per character
_CONTINUATION = bytes(range(0x80, 0xC0))


def warm(tokenizer: Any, texts: Sequence[str]) -> None:
    """Put the words of ``texts`` new to the model's byte-level cache into it, merged in bulk.
    Does nothing for other pipelines (a normaliser, another model or pre-tokeniser) or when few
    words are new; the words it leaves are merged on lookup as before."""
    merger = _merger(tokenizer)
    if merger is None:
        return
    splitter, bpe = merger
    model = tokenizer.model
    cache = model._byte_cache
    new: set[str] = set()
    for text in texts:
        new.update(splitter(text))
    new.difference_update(cache)
    if len(new) < MIN_NEW_WORDS:
        return
    found = bpe.many(list(new))
    if len(cache) + len(found) > model._cache_capacity:
        cache.clear()  # as the model's own store does when full
    token_of = model.id_to_token_map
    for word, ids in found:
        if ids:
            cache[word] = _entry(word, ids, token_of)


def _merger(tokenizer: Any) -> tuple[Any, Any] | None:
    """The ids-only word splitter and bulk merger of ``tokenizer``'s model (kept on the model),
    or None where the entries would not be exact."""
    from toktools.parts import models, pre_tokenizers

    model, pre = tokenizer.model, tokenizer.pre_tokenizer
    if type(model) is not models.BPE or type(pre) is not pre_tokenizers.ByteLevel or tokenizer.normalizer is not None:
        return None
    if tokenizer.added and tokenizer.added.has_normalized:
        return None
    key = (pre.add_prefix_space, pre.use_regex, id(model.merge_map))
    held = model.__dict__.get("_warm_merger")
    if held is not None and held[0] == key:
        return held[1]  # type: ignore[no-any-return]
    from toktools.engines import ids_words

    merger = None
    if ids_words.byte_level_ready(model):
        merger = (ids_words.ByteLevelWords(pre.add_prefix_space, pre.use_regex), ids_words.ByteLevelBPE(model))
    model.__dict__["_warm_merger"] = (key, merger)
    return merger
