"""The ``[CLS] A [SEP]`` / ``<s> A </s>`` template around a lazily built sequence, in one step.

The post-processors build a template from parts: each sequence copied with new type ids and
trimmed offsets (:meth:`toktools.encoding.LazyEncoding.replaced`, twice for RoBERTa), an
:class:`~toktools.encoding.Encoding` per special token, then all joined. Per text of a batch that
was most of what a lazily built encoding cost after its ids. For the two templates batches meet
most, a single sequence with its special tokens and no truncation (truncation sets
``overflowing``), this builds the result directly: its ids at once, each other field as the
sequence's own (unread) field framed by the special tokens' values when read. The generic path
stays for pairs, truncation, other post-processors and an encoding with a field already read;
``tests/test_lazy_encodings.py`` and ``tests/test_lazy_wordpiece.py`` compare both with
``tokenizers``.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from toktools.encoding import Encoding, LazyEncoding, repeated

#: the fields a framed sequence must still have unread
_UNREAD = ("tokens", "offsets", "type_ids", "attention_mask", "special_tokens_mask")


def template_frame(tokenizer: Any, add_special_tokens: bool) -> Callable[[Encoding], Encoding | None] | None:
    """A function: a lazily built single sequence → the post-processor's result for it (None for
    an encoding it does not take); or None when the tokenizer's post-processing is not one of
    these (BertProcessing, RobertaProcessing with special tokens, no truncation)."""
    from toktools.parts import post_processors as pp

    processor = tokenizer.post_processor
    if tokenizer.truncation is not None or not add_special_tokens:
        return None
    if type(processor) is pp.BertProcessing:
        return partial(_framed, _Frame(processor.cls, processor.sep, None, False))
    if type(processor) is pp.RobertaProcessing:
        trim = processor.add_prefix_space if processor.trim_offsets else None
        return partial(_framed, _Frame(processor.cls, processor.sep, trim, True))
    return None


class _Frame:
    """One special token before the sequence and one after (type id 0, attention 1, special 1,
    offsets ``(0, 0)``); the sequence's offsets trimmed (``trim``: ``add_prefix_space``) and its
    type ids made 0 (``zero_types``) as RoBERTa does."""

    def __init__(self, cls: tuple[str, int], sep: tuple[str, int], trim: bool | None, zero_types: bool) -> None:
        self.cls_token, self.cls_id = cls
        self.sep_token, self.sep_id = sep
        self.trim = trim
        self.zero_types = zero_types


def _framed(frame: _Frame, encoding: Encoding) -> Encoding | None:
    state = encoding.__dict__
    pending = state.get("_pending")
    if (
        type(encoding) is not LazyEncoding
        or pending is None
        or state["overflowing"]
        or any(name not in pending for name in _UNREAD)
        or (frame.trim is not None and "trimmed_offsets" not in state)
    ):
        return None
    ids = state["ids"]
    size = len(ids) + 2
    offsets = pending["offsets"] if frame.trim is None else partial(state["trimmed_offsets"], frame.trim)
    fields = {
        "tokens": partial(_around, pending["tokens"], frame.cls_token, frame.sep_token),
        "offsets": partial(_around, offsets, (0, 0), (0, 0)),
        "type_ids": partial(repeated, 0, size) if frame.zero_types else partial(_around, pending["type_ids"], 0, 0),
        "attention_mask": partial(_around, pending["attention_mask"], 1, 1),
        "special_tokens_mask": partial(_around, pending["special_tokens_mask"], 1, 1),
    }
    out = LazyEncoding.__new__(LazyEncoding)
    object.__setattr__(
        out, "__dict__", {"ids": [frame.cls_id, *ids, frame.sep_id], "overflowing": [], "_pending": fields}
    )
    return out


def _around(field: Callable[[], list[Any]], first: Any, last: Any) -> list[Any]:
    values = field()
    return [first, *values, last]
