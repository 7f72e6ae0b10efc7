"""What a run over a corpus warns about (issue 21), from what the run computes anyway.

* The tokenizer file's own truncation and padding: ``tokenizers`` applies them, so the text
  formats do too, but a published ``tokenizer.json`` that truncates (GPT-2's sets
  ``max_length: 50``) would otherwise cut every line silently. :func:`file_limits` warns once
  and drops them when the user turns them off.
* Unknown and byte-fallback tokens above a share of what was encoded (:class:`TokenTally`):
  counted from the ids the run already has (the unknown id, the ``<0xNN>`` ids), with list
  counts and NumPy on packed ids, never by encoding again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from toktools.errors import warn

#: Above this share of unknown tokens, a run warns.
UNKNOWN_SHARE = 0.01
#: Above this share of byte-fallback pieces (``<0x41>``), a run warns.
BYTE_PIECE_SHARE = 0.05
#: Ids counted before packed batches are counted with NumPy (~25 ns an id with ``array.count``,
#: ~1 ns with NumPy, whose import costs about as much as 4M ids counted without it).
NUMPY_FROM_IDS = 4_000_000


def file_limits(
    doc: Mapping[str, Any], *, truncation: bool = True, padding: bool = True, max_length: int | None = None
) -> tuple[dict[str, Any], list[str]]:
    """``doc`` as the text formats apply it: its own truncation and padding kept or dropped
    (``truncation`` / ``padding`` False), and one warning for each that stays on, naming the
    option that turns it off (to :func:`toktools.errors.warn` once the run is sure to start).
    ``max_length`` replaces the file's truncation, so that one is not warned about."""
    out = dict(doc)
    warnings: list[str] = []
    cut = doc.get("truncation")
    if cut:
        if not truncation:
            out["truncation"] = None
        elif max_length is None:
            warnings.append(
                f"the tokenizer's file truncates every encoding to {cut.get('max_length')} tokens (its "
                '"truncation"), as tokenizers does: longer lines are cut; --no-truncation turns it off, '
                "--max-length N sets another limit"
            )
    pad = doc.get("padding")
    if pad:
        if not padding:
            out["padding"] = None
        else:
            strategy = pad.get("strategy")
            to = (
                f"to {strategy['Fixed']} tokens"
                if isinstance(strategy, dict) and "Fixed" in strategy
                else "to the longest line of each batch"
            )
            warnings.append(
                f"the tokenizer's file pads every encoding with {pad.get('pad_token', 'its pad token')} {to} "
                '(its "padding"), as tokenizers does; --no-padding turns it off'
            )
    return out, warnings


_BYTE_PIECES = [f"<0x{value:02X}>" for value in range(256)]


@dataclass
class TokenTally:
    """Counts of the unknown id and of byte-fallback ids among the ids encoded, for the warning
    at the end of a run. Inactive (and free) for a tokenizer that has neither (byte-level BPE)."""

    unk_id: int | None
    byte_ids: frozenset[int]
    tokens: int = 0
    unknown: int = 0
    byte_pieces: int = 0

    @classmethod
    def for_model(cls, model: Mapping[str, Any], token_id: Callable[[str], int | None]) -> TokenTally:
        """From a ``tokenizer.json`` model node (its vocabulary need not be there) and a lookup
        of token ids (which is asked for the 256 byte pieces only when the model falls back to
        bytes)."""
        unk_id: int | None = None
        if model.get("type") == "Unigram":
            unk_id = model.get("unk_id") if isinstance(model.get("unk_id"), int) else None
        elif isinstance(model.get("unk_token"), str):
            unk_id = token_id(model["unk_token"])
        byte_ids: frozenset[int] = frozenset()
        if model.get("byte_fallback"):
            found = [token_id(piece) for piece in _BYTE_PIECES]
            byte_ids = frozenset(i for i in found if i is not None)
        return cls(unk_id, byte_ids)

    @classmethod
    def for_document(cls, doc: Mapping[str, Any]) -> TokenTally:
        """From a whole ``tokenizer.json`` document (its vocabulary indexed only when asked)."""
        from functools import cache

        from toktools.corpus.prepared_tokenizer import token_ids

        every = cache(lambda: token_ids(doc))
        return cls.for_model(doc.get("model") or {}, lambda token: every().get(token))

    @classmethod
    def for_tokenizer(cls, tokenizer: Any) -> TokenTally:
        """From a toktools :class:`~toktools.tokenizer.Tokenizer`."""
        from toktools.analysis import token_view

        byte_ids: frozenset[int] = frozenset()
        if getattr(getattr(tokenizer, "model", None), "byte_fallback", False):
            found = [tokenizer.token_to_id(piece) for piece in _BYTE_PIECES]
            byte_ids = frozenset(i for i in found if i is not None)
        return cls(token_view.unk_id(tokenizer), byte_ids)

    @property
    def active(self) -> bool:
        return self.unk_id is not None or bool(self.byte_ids)

    def add_lists(self, rows: Iterable[list[int]]) -> None:
        """Count the ids of a batch given as lists (one per text)."""
        if not self.active:
            return
        for ids in rows:
            self.tokens += len(ids)
            if self.unk_id is not None:
                self.unknown += ids.count(self.unk_id)
            if self.byte_ids:
                self.byte_pieces += sum(map(self.byte_ids.__contains__, ids))

    def add_array(self, ids: Any) -> None:
        """Count the ids of a NumPy array (pretraining's corpus)."""
        if not self.active:
            return
        import numpy as np

        self.tokens += int(ids.size)
        if self.unk_id is not None:
            self.unknown += int(np.count_nonzero(ids == self.unk_id))
        if self.byte_ids:
            self.byte_pieces += _count_byte_ids(np.asarray(ids), self.byte_ids)

    def add_packed(self, ids: Any) -> None:
        """Count the ids of a :class:`toktools.engines.base.PackedIds` (native uint32s). NumPy
        (an optional extra) counts once the run is large enough to pay for importing it (a tenth
        of a second); before that, and without it, :class:`array.array` does."""
        if not self.active:
            return
        from array import array

        values: Any = array("I")
        values.frombytes(ids.data)
        self.tokens += len(values)
        numpy = _numpy() if self.tokens >= NUMPY_FROM_IDS else None
        if numpy is not None:
            values = numpy.frombuffer(values, dtype=numpy.uint32)
        if self.unk_id is not None:
            self.unknown += (
                int(numpy.count_nonzero(values == self.unk_id)) if numpy is not None else values.count(self.unk_id)
            )
        if self.byte_ids:
            self.byte_pieces += (
                _count_byte_ids(values, self.byte_ids)
                if numpy is not None
                else sum(map(self.byte_ids.__contains__, values))
            )

    def add(self, ids: Any) -> None:
        """A batch as an engine gives it: packed (:class:`~toktools.engines.base.PackedIds`) or lists."""
        if _packed(ids):
            self.add_packed(ids)
        else:
            self.add_lists(ids)

    def counts(self) -> list[int]:
        """``[tokens, unknown, byte_pieces]``: what a cluster block sends back to be summed."""
        return [self.tokens, self.unknown, self.byte_pieces]

    def add_counts(self, counts: Sequence[int] | None) -> None:
        """Add a block's :meth:`counts` (nothing for None)."""
        if counts:
            tokens, unknown, byte_pieces = counts
            self.tokens += tokens
            self.unknown += unknown
            self.byte_pieces += byte_pieces

    def warn(self) -> None:
        """One warning per share above its threshold."""
        if not self.tokens:
            return
        if self.unknown / self.tokens > UNKNOWN_SHARE:
            warn(
                f"{self.unknown:,} of {self.tokens:,} tokens ({self.unknown / self.tokens:.1%}) are the unknown "
                f"token (id {self.unk_id}): this vocabulary does not cover much of this text"
            )
        if self.byte_pieces / self.tokens > BYTE_PIECE_SHARE:
            warn(
                f"{self.byte_pieces:,} of {self.tokens:,} tokens ({self.byte_pieces / self.tokens:.1%}) are "
                "byte-fallback pieces (<0xNN>): this vocabulary covers little of this text's characters"
            )


def _packed(ids: Any) -> bool:
    """A :class:`toktools.engines.base.PackedIds` (its ``data``: native uint32 ids), without importing it."""
    return hasattr(ids, "counts") and hasattr(ids, "data")


def _count_byte_ids(array: Any, byte_ids: frozenset[int]) -> int:
    """How many of ``array``'s ids are byte pieces (one range in sentencepiece models)."""
    import numpy as np

    low, high = min(byte_ids), max(byte_ids)
    if high - low + 1 == len(byte_ids):
        return int(np.count_nonzero((array >= low) & (array <= high)))
    return int(np.count_nonzero(np.isin(array, np.fromiter(byte_ids, np.int64))))


def _numpy() -> Any:
    """NumPy, or None when it is not installed (it is the ``corpus`` extra)."""
    try:
        import numpy
    except ImportError:  # pragma: no cover - the test extra installs it
        return None
    return numpy
