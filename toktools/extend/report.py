"""The report of an extension: what the new tokens do on text they were not learned from (the
held-out slice of the corpus) and on the text whose cut was to be kept (``--keep-segmentation-of``)."""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from toktools.tokenizer import Tokenizer


@dataclass
class TextStats:
    """One text measured with the base and the extended tokenizer."""

    name: str
    lines: int
    characters: int
    tokens_before: int
    tokens_after: int
    #: lines whose ids differ between the two tokenizers
    lines_changed: int
    #: how many tokens of the extended tokenizer's output are new ones
    new_token_uses: int
    #: how many distinct new tokens occur
    new_tokens_seen: int
    #: unknown tokens (``[UNK]``, ``<unk>``) in the output of each tokenizer
    unknown_before: int = 0
    unknown_after: int = 0
    #: the most used new tokens: (text, uses)
    top_new: list[tuple[str, int]] = field(default_factory=list)

    @property
    def per_char_before(self) -> float:
        return self.tokens_before / self.characters if self.characters else 0.0

    @property
    def per_char_after(self) -> float:
        return self.tokens_after / self.characters if self.characters else 0.0

    @property
    def fewer(self) -> float:
        """The share of tokens saved (0.55: 55 % fewer)."""
        return 1 - self.tokens_after / self.tokens_before if self.tokens_before else 0.0

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out.update(
            per_char_before=round(self.per_char_before, 4),
            per_char_after=round(self.per_char_after, 4),
            fewer=round(self.fewer, 4),
        )
        return out


@dataclass
class Report:
    base: str
    added: int
    base_size: int
    vocab_size: int
    texts: list[TextStats]
    notes: list[str]

    def to_json(self) -> dict[str, Any]:
        return {
            "base": self.base,
            "added": self.added,
            "base_vocab_size": self.base_size,
            "vocab_size": self.vocab_size,
            "texts": [t.to_json() for t in self.texts],
            "notes": self.notes,
        }

    def lines(self) -> list[str]:
        """The report as plain lines (what ``toktools extend`` prints)."""
        out = [f"{self.base}: {self.added:,} new tokens, vocabulary {self.base_size:,} -> {self.vocab_size:,}"]
        for t in self.texts:
            out.append(
                f"{t.name}: {t.lines:,} lines, {t.characters:,} characters; tokens per character "
                f"{t.per_char_before:.3f} -> {t.per_char_after:.3f} ({t.fewer:.1%} fewer); "
                f"ids changed on {t.lines_changed:,} of {t.lines:,} lines; "
                f"new tokens: {t.new_tokens_seen:,} distinct, {t.new_token_uses:,} uses"
                + (f"; unknown tokens {t.unknown_before:,} -> {t.unknown_after:,}" if t.unknown_before else "")
            )
            if t.top_new:
                out.append("  most used new tokens: " + ", ".join(f"{text!r} {n:,}" for text, n in t.top_new))
        out.extend(self.notes)
        return out


def untruncated(tokenizer: Tokenizer) -> Tokenizer:
    """A shallow copy of ``tokenizer`` that neither truncates nor pads."""
    plain = copy.copy(tokenizer)
    plain.truncation = None
    plain.padding = None
    return plain


def measure(
    name: str, lines: Sequence[str], base: Tokenizer, extended: Tokenizer, new_ids: set[int], texts: dict[int, str]
) -> TextStats:
    """``lines`` encoded with both tokenizers (without special tokens around them, truncation or
    padding: a ``tokenizer.json`` may carry them, GPT-2's cuts at 50 tokens)."""
    base, extended = untruncated(base), untruncated(extended)
    before = base.encode_batch(list(lines), add_special_tokens=False) if lines else []
    after = extended.encode_batch(list(lines), add_special_tokens=False) if lines else []
    uses: Counter[int] = Counter()
    unknown_before, unknown_after = unknown_id(base), unknown_id(extended)
    unknown = [0, 0]
    changed = 0
    tokens_before = tokens_after = 0
    for old, new in zip(before, after):
        tokens_before += len(old.ids)
        tokens_after += len(new.ids)
        if old.ids != new.ids:
            changed += 1
        uses.update(i for i in new.ids if i in new_ids)
        unknown[0] += old.ids.count(unknown_before)
        unknown[1] += new.ids.count(unknown_after)
    top = [(texts.get(i, str(i)), n) for i, n in uses.most_common(10)]
    return TextStats(
        name,
        len(lines),
        sum(map(len, lines)),
        tokens_before,
        tokens_after,
        changed,
        sum(uses.values()),
        len(uses),
        unknown[0],
        unknown[1],
        top,
    )


def unknown_id(tokenizer: Tokenizer) -> int:
    """The id of the unknown token (-1: none)."""
    model = tokenizer.model
    found = getattr(model, "unk_id", None)
    if isinstance(found, int):
        return found
    token = getattr(model, "unk_token", None)
    found = tokenizer.token_to_id(token) if isinstance(token, str) else None
    return -1 if found is None else found
