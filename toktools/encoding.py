"""What every tokenizer does around its model: special tokens in the input, the ``[CLS]``/``<s>``
templates, truncation and padding, and the :class:`Encoding` they produce.

These follow ``tokenizers`` 0.23.3: special tokens are cut out of the raw input first
(leftmost-longest, case-sensitive); truncation runs before the template is added and leaves room
for it; padding runs last.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Iterable, Literal, Sequence

import regex

from toktools.errors import ToktoolsError

#: One token of a sequence: (id, token string, start, end), offsets in characters.
Piece = tuple[int, str, int, int]


@dataclass
class Encoding:
    """The output of ``encode``: ids plus everything a model input pipeline needs."""

    ids: list[int] = field(default_factory=list)
    tokens: list[str] = field(default_factory=list)
    offsets: list[tuple[int, int]] = field(default_factory=list)
    type_ids: list[int] = field(default_factory=list)
    attention_mask: list[int] = field(default_factory=list)
    special_tokens_mask: list[int] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.ids)

    @classmethod
    def from_pieces(cls, pieces: Sequence[Piece], type_id: int = 0) -> "Encoding":
        return cls(
            ids=[p[0] for p in pieces],
            tokens=[p[1] for p in pieces],
            offsets=[(p[2], p[3]) for p in pieces],
            type_ids=[type_id] * len(pieces),
            attention_mask=[1] * len(pieces),
            special_tokens_mask=[0] * len(pieces),
        )

    def truncated(self, length: int, direction: str = "right") -> "Encoding":
        keep = slice(0, length) if direction == "right" else slice(max(len(self.ids) - length, 0), None)
        return Encoding(*(list(getattr(self, name)[keep]) for name in _FIELDS))

    def __add__(self, other: "Encoding") -> "Encoding":
        return Encoding(*(getattr(self, name) + getattr(other, name) for name in _FIELDS))


_FIELDS = ("ids", "tokens", "offsets", "type_ids", "attention_mask", "special_tokens_mask")


# ---------------------------------------------------------------------------------------------
# Special tokens in the input
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AddedToken:
    """A token matched in the raw input before normalisation (``special`` ones are dropped by
    ``decode(skip_special_tokens=True)``). ``lstrip`` / ``rstrip`` make the match swallow the
    whitespace before / after it; ``single_word`` only matches it between non-word characters.
    ``normalized`` is carried through files but matching is always on the raw text."""

    content: str
    id: int
    special: bool = True
    single_word: bool = False
    lstrip: bool = False
    rstrip: bool = False
    normalized: bool = False


_ENDS_WITH_WORD = regex.compile(r"\w$")
_STARTS_WITH_WORD = regex.compile(r"\w")  # used with .match(text, pos): anchored at pos
_SPACES_AT_END = regex.compile(r"\s*$")
_SPACES_AT_START = regex.compile(r"\s*")  # used with .match(text, pos)


class AddedTokens:
    """The tokens a tokenizer cuts out of the raw text, as ``tokenizers``' AddedVocabulary does
    for ``normalized=False`` tokens: leftmost-longest matches, case-sensitive, then the
    ``single_word`` / ``lstrip`` / ``rstrip`` rules."""

    def __init__(self, tokens: Iterable[AddedToken] = ()) -> None:
        self.tokens: list[AddedToken] = []
        self.by_content: dict[str, AddedToken] = {}
        self.by_id: dict[int, AddedToken] = {}
        self._pattern: regex.Pattern[str] | None = None
        for token in tokens:
            self.add(token)

    def add(self, token: AddedToken) -> None:
        if token.content in self.by_content or not token.content:
            return
        self.tokens.append(token)
        self.by_content[token.content] = token
        self.by_id[token.id] = token
        self._pattern = None  # rebuilt on the next split: adding many tokens stays linear

    def __bool__(self) -> bool:
        return bool(self.tokens)

    def _matcher(self) -> regex.Pattern[str]:
        if self._pattern is None:
            # longest first: at a given start the longest token wins (leftmost-longest)
            alternatives = sorted(self.by_content, key=len, reverse=True)
            self._pattern = regex.compile("|".join(regex.escape(t) for t in alternatives))
        return self._pattern

    def split(self, text: str) -> list[tuple[str, int, AddedToken | None]]:
        """``text`` as (fragment, start offset, added token or None) in order."""
        if not self.tokens:
            return [(text, 0, None)] if text else []
        out: list[tuple[str, int, AddedToken | None]] = []
        position = 0
        for match in self._matcher().finditer(text):
            token = self.by_content[match.group()]
            start, stop = match.start(), match.end()
            if token.single_word and (_ENDS_WITH_WORD.search(text, 0, start) or _STARTS_WITH_WORD.match(text, stop)):
                continue
            if token.lstrip:  # the previous match may have taken those spaces already
                start = max(_SPACES_AT_END.search(text, 0, start).start(), position)  # type: ignore[union-attr]
            if token.rstrip:
                stop = _SPACES_AT_START.match(text, stop).end()  # type: ignore[union-attr]
            if start > position:
                out.append((text[position:start], position, None))
            out.append((text[start:stop], start, token))
            position = stop
        if position < len(text):
            out.append((text[position:], position, None))
        return out


# ---------------------------------------------------------------------------------------------
# Templates: [CLS] A [SEP] B [SEP]  and  <s> A </s></s> B </s>
# ---------------------------------------------------------------------------------------------


#: One item of a template: ("A" | "B", type id) for a sequence, or (token, id, type id) for a special.
TemplateItem = tuple


@dataclass(frozen=True)
class TemplateProcessor:
    """The post-processor that adds special tokens: ``BertProcessing``, ``RobertaProcessing`` or
    a ``TemplateProcessing`` of any shape.

    ``single`` and ``pair`` list the template items: ``("A", type_id)`` / ``("B", type_id)`` for
    the sequences, ``(token, id, type_id)`` for special tokens. ``style`` says which JSON form
    it came from (and is written back); with ``style="roberta"`` and ``trim_offsets`` the
    offsets exclude surrounding spaces, as ``RobertaProcessing`` does.
    """

    style: Literal["bert", "roberta", "template", "bytelevel"]
    single: tuple[TemplateItem, ...]
    pair: tuple[TemplateItem, ...]
    trim_offsets: bool = True
    add_prefix_space: bool = True

    @classmethod
    def bert(cls, cls_token: tuple[str, int], sep_token: tuple[str, int]) -> "TemplateProcessor":
        """``[CLS] A [SEP]`` / ``[CLS] A [SEP] B [SEP]`` with type ids 0 then 1."""
        c, s = (*cls_token, 0), (*sep_token, 0)
        return cls("bert", (c, ("A", 0), s), (c, ("A", 0), s, ("B", 1), (*sep_token, 1)))

    @classmethod
    def roberta(cls, cls_token: tuple[str, int], sep_token: tuple[str, int], trim_offsets: bool = True,
                add_prefix_space: bool = True) -> "TemplateProcessor":
        """``<s> A </s>`` / ``<s> A </s> </s> B </s>``, all type ids 0."""
        c, s = (*cls_token, 0), (*sep_token, 0)
        return cls("roberta", (c, ("A", 0), s), (c, ("A", 0), s, s, ("B", 0), s), trim_offsets, add_prefix_space)

    @classmethod
    def bytelevel(cls, trim_offsets: bool = True, add_prefix_space: bool = True) -> "TemplateProcessor":
        """``processors.ByteLevel``: no special tokens; with ``trim_offsets`` the offsets
        exclude surrounding spaces, as with RoBERTa."""
        return cls("bytelevel", (("A", 0),), (("A", 0), ("B", 1)), trim_offsets, add_prefix_space)

    @property
    def cls(self) -> tuple[str, int]:
        return self.single[0][:2]

    @property
    def sep(self) -> tuple[str, int]:
        return self.single[-1][:2]

    def added_tokens(self, is_pair: bool) -> int:
        return sum(1 for item in (self.pair if is_pair else self.single) if len(item) == 3)

    def process(self, first: Encoding, second: Encoding | None, add_special_tokens: bool = True) -> Encoding:
        """The template applied to the sequences. Without special tokens the sequences are just
        joined (type ids 0 then 1), except that RoBERTa still trims offsets and uses type id 0."""
        if self.style in ("roberta", "bytelevel") and self.trim_offsets:
            first = _trim_space_offsets(first, self.add_prefix_space)
            second = _trim_space_offsets(second, self.add_prefix_space) if second is not None else None
        if not add_special_tokens:
            if second is None:
                return first
            return first + replace(second, type_ids=[0 if self.style == "roberta" else 1] * len(second))
        out = Encoding()
        for item in self.pair if second is not None else self.single:
            if len(item) == 3:
                token, token_id, type_id = item
                parts = ([token_id], [token], [(0, 0)], [type_id], [1], [1])
            else:
                sequence = first if item[0] == "A" else second
                assert sequence is not None
                n = len(sequence)
                parts = (sequence.ids, sequence.tokens, sequence.offsets, [item[1]] * n, sequence.attention_mask,
                         sequence.special_tokens_mask)
            for name, part in zip(_FIELDS, parts):
                getattr(out, name).extend(part)
        return out

    def to_json(self) -> dict[str, object]:
        if self.style == "bytelevel":
            return {"type": "ByteLevel", "add_prefix_space": self.add_prefix_space, "trim_offsets": self.trim_offsets,
                    "use_regex": True}
        if self.style == "bert":
            return {"type": "BertProcessing", "sep": list(self.sep), "cls": list(self.cls)}
        if self.style == "roberta":
            return {"type": "RobertaProcessing", "sep": list(self.sep), "cls": list(self.cls),
                    "trim_offsets": self.trim_offsets, "add_prefix_space": self.add_prefix_space}

        def items(template: tuple[TemplateItem, ...]) -> list[dict[str, object]]:
            return [{"SpecialToken": {"id": i[0], "type_id": i[2]}} if len(i) == 3 else {"Sequence": {"id": i[0], "type_id": i[1]}}
                    for i in template]

        specials = {i[0]: {"id": i[0], "ids": [i[1]], "tokens": [i[0]]} for i in self.single + self.pair if len(i) == 3}
        return {"type": "TemplateProcessing", "single": items(self.single), "pair": items(self.pair), "special_tokens": specials}

    @classmethod
    def from_json(cls, post: dict) -> "TemplateProcessor | None":
        """Our processor for a ``tokenizer.json`` post-processor; None for ``ByteLevel``/none."""
        kind = post.get("type") if post else None
        if kind is None or (kind == "ByteLevel" and not post.get("trim_offsets", True)):
            return None  # nothing to do: no template, offsets untouched
        if kind == "ByteLevel":
            return cls.bytelevel(True, post.get("add_prefix_space", True))
        if kind == "BertProcessing":
            return cls.bert(tuple(post["cls"]), tuple(post["sep"]))
        if kind == "RobertaProcessing":
            return cls.roberta(tuple(post["cls"]), tuple(post["sep"]), post.get("trim_offsets", True),
                               post.get("add_prefix_space", True))
        if kind == "TemplateProcessing":
            specials = post.get("special_tokens", {})

            def parse(template: list[dict]) -> tuple[TemplateItem, ...]:
                out: list[TemplateItem] = []
                for item in template:
                    if "Sequence" in item:
                        out.append((item["Sequence"]["id"], item["Sequence"]["type_id"]))
                    else:
                        special = item["SpecialToken"]
                        entry = specials[special["id"]]
                        if len(entry["ids"]) != 1:
                            raise ValueError("template special tokens made of several ids are not supported")
                        out.append((entry["tokens"][0], entry["ids"][0], special["type_id"]))
                return tuple(out)

            return cls("template", parse(post["single"]), parse(post["pair"]))
        raise ValueError(f"post-processor {kind!r} is not supported")


_SPACE_SYMBOL = "\u0120"  # byte-level symbol of " "


def _trim_space_offsets(encoding: Encoding, add_prefix_space: bool) -> Encoding:
    """``process_offsets`` of the byte-level post-processors: offsets skip leading and trailing
    spaces of a token, except the one prefix space added to the first token."""
    offsets = []
    for i, (token, (start, end)) in enumerate(zip(encoding.tokens, encoding.offsets)):
        leading = len(token) - len(token.lstrip(_SPACE_SYMBOL + " "))
        trailing = len(token) - len(token.rstrip(_SPACE_SYMBOL + " "))
        if leading and (i == 0 or start == 0) and add_prefix_space and leading == 1:
            leading = 0
        if leading:
            start = min(start + leading, end)
        if trailing and end >= trailing:
            end = max(end - trailing, start)
        offsets.append((start, end))
    return replace(encoding, offsets=offsets)


# ---------------------------------------------------------------------------------------------
# Truncation and padding
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Truncation:
    """``enable_truncation``: ``max_length`` counts the template's special tokens too."""

    max_length: int
    strategy: Literal["longest_first", "only_first", "only_second"] = "longest_first"
    direction: Literal["right", "left"] = "right"

    def apply(self, first: Encoding, second: Encoding | None, room_for_specials: int) -> tuple[Encoding, Encoding | None]:
        budget = self.max_length - room_for_specials
        if budget < 0:
            # tokenizers subtracts in unsigned arithmetic: the budget wraps round and nothing is cut
            return first, second
        if budget == 0:  # every sequence is emptied, whatever the strategy
            return first.truncated(0), (second.truncated(0) if second is not None else None)
        total = len(first) + (len(second) if second is not None else 0)
        if total <= budget:
            return first, second
        if second is None:
            if self.strategy == "only_second":
                raise ToktoolsError("truncation strategy only_second needs a pair of sequences")
            if self.strategy == "longest_first":
                return first.truncated(budget, self.direction), None
        if self.strategy == "longest_first":
            n1, n2 = len(first), len(second)
            swapped = n1 > n2
            if swapped:
                n1, n2 = n2, n1
            if n1 > budget:
                n2 = n1
            else:
                n2 = max(n1, budget - n1)
            if n1 + n2 > budget:
                n1 = budget // 2
                n2 = n1 + budget % 2
            if swapped:
                n1, n2 = n2, n1
            return first.truncated(n1, self.direction), second.truncated(n2, self.direction)
        target, other = (first, second) if self.strategy == "only_first" else (second, first)
        assert target is not None
        excess = total - budget
        if len(target) <= excess:
            raise ToktoolsError(f"truncation {self.strategy}: the sequence is too short to remove {excess} tokens")
        cut = target.truncated(len(target) - excess, self.direction)
        return (cut, other) if self.strategy == "only_first" else (other, cut)  # type: ignore[return-value]


@dataclass(frozen=True)
class Padding:
    """``enable_padding``: to a fixed ``length``, or to the longest of a batch when None."""

    pad_id: int
    pad_token: str
    length: int | None = None
    pad_type_id: int = 0
    direction: Literal["right", "left"] = "right"
    pad_to_multiple_of: int | None = None

    def target(self, longest: int) -> int:
        target = self.length if self.length is not None else longest
        if self.pad_to_multiple_of and target % self.pad_to_multiple_of:
            target += self.pad_to_multiple_of - target % self.pad_to_multiple_of
        return target

    def apply(self, encoding: Encoding, target: int) -> Encoding:
        missing = target - len(encoding)
        if missing <= 0:
            return encoding
        pad = Encoding(
            [self.pad_id] * missing,
            [self.pad_token] * missing,
            [(0, 0)] * missing,
            [self.pad_type_id] * missing,
            [0] * missing,
            [1] * missing,
        )
        return encoding + pad if self.direction == "right" else pad + encoding
