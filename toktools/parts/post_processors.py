"""Post-processors: the special tokens of a template (``[CLS] A [SEP]``, ``<s> A </s>``) and the
byte-level offset trimming, as ``tokenizers``' ``process_encodings`` — each takes the list of
sequences and returns the list of parts of the result, so a :class:`Sequence` chains them."""

from __future__ import annotations

from functools import partial
from typing import Any

from toktools.encoding import Encoding, LazyEncoding
from toktools.errors import ToktoolsError
from toktools.models.wordpiece.model import RUST_WHITESPACE
from toktools.parts._fields import ByteLevelOptions
from toktools.parts.base import PostProcessor, Span
from toktools.parts.registry import part_from_json, register

_SPACE_SYMBOL = "\u0120"  # the byte-level symbol of " "
#: what byte-level offset trimming skips at either end of a token
TRIMMED = _SPACE_SYMBOL + RUST_WHITESPACE


def _trim_of(token: str) -> tuple[int, int]:
    """How many trimmed characters ``token`` starts and ends with (remembered: tokens repeat)."""
    trim = (len(token) - len(token.lstrip(TRIMMED)), len(token) - len(token.rstrip(TRIMMED)))
    if len(_TRIMS) >= _TRIMS_KEPT:
        _TRIMS.clear()
    _TRIMS[token] = trim
    return trim


#: token → (leading, trailing) trimmed characters, for :func:`trim_offsets`' per-token loop
_TRIMS: dict[str, tuple[int, int]] = {}
_TRIMS_KEPT = 1 << 17


def trim_offsets(encoding: Encoding, add_prefix_space: bool) -> Encoding:
    """``process_offsets``: offsets skip a token's leading and trailing spaces, except the one
    prefix space that ``add_prefix_space`` put before the first token. Unread offsets of a lazy
    encoding stay unread (trimmed when read)."""
    overflowing = [trim_offsets(piece, add_prefix_space) for piece in encoding.overflowing]
    if isinstance(encoding, LazyEncoding) and (
        callable(encoding.field("offsets")) or callable(encoding.field("tokens"))
    ):
        trim = encoding.__dict__.get("trimmed_offsets")  # the batch's own, vectorised
        offsets: Any = (
            partial(trim, add_prefix_space) if trim is not None else partial(_trim_fields, encoding, add_prefix_space)
        )
        return encoding.replaced(offsets=offsets, overflowing=overflowing)
    return encoding.replaced(
        offsets=trimmed_offsets(encoding.tokens, encoding.offsets, add_prefix_space), overflowing=overflowing
    )


def _trim_fields(encoding: Encoding, add_prefix_space: bool) -> list[Span]:
    return trimmed_offsets(encoding.tokens, encoding.offsets, add_prefix_space)


def trimmed_offsets(tokens: list[str], old: list[Span], add_prefix_space: bool) -> list[Span]:
    """The offsets of ``tokens`` trimmed (see :func:`trim_offsets`)."""
    offsets: list[Span] = []
    append = offsets.append
    get = _TRIMS.get
    for i, token in enumerate(tokens):
        trim = get(token) or _trim_of(token)
        if trim == (0, 0):
            append(old[i])
            continue
        leading, trailing = trim
        start, end = old[i]
        if leading and (i == 0 or start == 0) and add_prefix_space and leading == 1:
            leading = 0
        if leading:
            start = min(start + leading, end)
        if trailing and end >= trailing:
            end = max(end - trailing, start)
        append((start, end))
    return offsets


def _special(token: str, ids: list[int], type_id: int) -> Encoding:
    n = len(ids)
    return Encoding(list(ids), [token] * n, [(0, 0)] * n, [type_id] * n, [1] * n, [1] * n)


def _token_pair(node: dict[str, Any], name: str, processor: str) -> tuple[str, int]:
    value = node.get(name)
    if (
        not isinstance(value, list)
        or len(value) != 2
        or not isinstance(value[0], str)
        or not isinstance(value[1], int)
        or isinstance(value[1], bool)
    ):
        raise ToktoolsError(f"tokenizer.json: {processor} {name!r} must be [token, id], not {value!r}")
    return value[0], value[1]


@register
class BertProcessing(PostProcessor):
    """``[CLS] A [SEP]`` and ``[CLS] A [SEP] B [SEP]`` (B and its ``[SEP]`` with type id 1)."""

    type = "BertProcessing"

    def __init__(self, sep: tuple[str, int], cls: tuple[str, int]) -> None:
        self.sep = (sep[0], sep[1])
        self.cls = (cls[0], cls[1])

    @classmethod
    def from_json(cls, node: dict[str, Any]) -> BertProcessing:
        return cls(_token_pair(node, "sep", cls.type), _token_pair(node, "cls", cls.type))

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "sep": list(self.sep), "cls": list(self.cls)}

    def added_tokens(self, is_pair: bool) -> int:
        return 3 if is_pair else 2

    def process_encodings(self, encodings: list[Encoding], add_special_tokens: bool) -> list[Encoding]:
        if not add_special_tokens:
            return encodings
        (cls_token, cls_id), (sep_token, sep_id) = self.cls, self.sep
        out = [_special(cls_token, [cls_id], 0), encodings[0], _special(sep_token, [sep_id], 0)]
        if len(encodings) > 1:
            out += [encodings[1], _special(sep_token, [sep_id], 1)]
        return out


@register
class RobertaProcessing(PostProcessor):
    """``<s> A </s>`` and ``<s> A </s></s> B </s>``, every type id 0; with ``trim_offsets``
    the offsets skip spaces, as :class:`ByteLevel` does."""

    type = "RobertaProcessing"

    def __init__(
        self, sep: tuple[str, int], cls: tuple[str, int], trim_offsets: bool = True, add_prefix_space: bool = True
    ) -> None:
        self.sep = (sep[0], sep[1])
        self.cls = (cls[0], cls[1])
        self.trim_offsets = trim_offsets
        self.add_prefix_space = add_prefix_space

    @classmethod
    def from_json(cls, node: dict[str, Any]) -> RobertaProcessing:
        return cls(
            _token_pair(node, "sep", cls.type),
            _token_pair(node, "cls", cls.type),
            bool(node.get("trim_offsets", True)),
            bool(node.get("add_prefix_space", True)),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "sep": list(self.sep),
            "cls": list(self.cls),
            "trim_offsets": self.trim_offsets,
            "add_prefix_space": self.add_prefix_space,
        }

    def added_tokens(self, is_pair: bool) -> int:
        return 4 if is_pair else 2

    def process_encodings(self, encodings: list[Encoding], add_special_tokens: bool) -> list[Encoding]:
        if self.trim_offsets:
            encodings = [trim_offsets(e, self.add_prefix_space) for e in encodings]
        if not add_special_tokens:
            return [e.with_type_ids(0) for e in encodings]
        # every type id 0, the overflowing pieces' too (tokenizers builds those with zeros)
        encodings = [e.with_type_ids(0, overflowing=True) for e in encodings]
        (cls_token, cls_id), (sep_token, sep_id) = self.cls, self.sep
        out = [_special(cls_token, [cls_id], 0), encodings[0], _special(sep_token, [sep_id], 0)]
        if len(encodings) > 1:
            out += [_special(sep_token, [sep_id], 0), encodings[1], _special(sep_token, [sep_id], 0)]
        return out


@register
class ByteLevel(ByteLevelOptions, PostProcessor):
    """Adds no token; with ``trim_offsets`` the offsets skip spaces (see :func:`trim_offsets`)."""

    def added_tokens(self, is_pair: bool) -> int:
        return 0

    def process_encodings(self, encodings: list[Encoding], add_special_tokens: bool) -> list[Encoding]:
        if self.trim_offsets:
            return [trim_offsets(e, self.add_prefix_space) for e in encodings]
        return encodings


@register
class TemplateProcessing(PostProcessor):
    """A template of any shape: ``single`` / ``pair`` list ``("A" | "B", type id)`` for the
    sequences and ``(name, type id)`` for special tokens; ``special_tokens`` maps each name to
    its ids and token strings (one name may stand for several tokens)."""

    type = "TemplateProcessing"

    def __init__(
        self,
        single: list[tuple[str, int, bool]],
        pair: list[tuple[str, int, bool]],
        special_tokens: dict[str, tuple[list[int], list[str]]],
    ) -> None:
        #: items (id, type id, is_special)
        self.single = single
        self.pair = pair
        self.special_tokens = special_tokens
        for item in single + pair:
            if item[2] and item[0] not in special_tokens:
                raise ToktoolsError(
                    f"tokenizer.json: TemplateProcessing uses {item[0]!r}, missing from its special_tokens"
                )

    @classmethod
    def from_json(cls, node: dict[str, Any]) -> TemplateProcessing:
        def items(name: str) -> list[tuple[str, int, bool]]:
            out: list[tuple[str, int, bool]] = []
            for item in node.get(name) or []:
                if not isinstance(item, dict) or len(item) != 1:
                    raise ToktoolsError(f"tokenizer.json: TemplateProcessing {name} item {item!r} is not understood")
                ((kind, body),) = item.items()
                if (
                    kind not in ("Sequence", "SpecialToken")
                    or not isinstance(body, dict)
                    or not isinstance(body.get("id"), str)
                ):
                    raise ToktoolsError(f"tokenizer.json: TemplateProcessing {name} item {item!r} is not understood")
                out.append((body["id"], int(body.get("type_id", 0)), kind == "SpecialToken"))
            return out

        specials = {}
        for name, entry in (node.get("special_tokens") or {}).items():
            ids, tokens = entry.get("ids"), entry.get("tokens")
            if not isinstance(ids, list) or not isinstance(tokens, list) or len(ids) != len(tokens):
                raise ToktoolsError(
                    f"tokenizer.json: TemplateProcessing special token {name!r} needs as many ids as tokens"
                )
            specials[name] = (list(ids), list(tokens))
        return cls(items("single"), items("pair"), specials)

    def to_json(self) -> dict[str, Any]:
        def items(template: list[tuple[str, int, bool]]) -> list[dict[str, Any]]:
            return [
                {"SpecialToken" if special else "Sequence": {"id": name, "type_id": type_id}}
                for name, type_id, special in template
            ]

        return {
            "type": self.type,
            "single": items(self.single),
            "pair": items(self.pair),
            "special_tokens": {
                name: {"id": name, "ids": ids, "tokens": tokens} for name, (ids, tokens) in self.special_tokens.items()
            },
        }

    def added_tokens(self, is_pair: bool) -> int:
        return sum(
            len(self.special_tokens[name][0]) for name, _, special in (self.pair if is_pair else self.single) if special
        )

    def process_encodings(self, encodings: list[Encoding], add_special_tokens: bool) -> list[Encoding]:
        out = []
        for name, type_id, special in self.pair if len(encodings) > 1 else self.single:
            if special:
                if add_special_tokens:
                    ids, tokens = self.special_tokens[name]
                    n = len(ids)
                    out.append(Encoding(list(ids), list(tokens), [(0, 0)] * n, [type_id] * n, [1] * n, [1] * n))
            else:
                out.append(encodings[0 if name == "A" else 1].with_type_ids(type_id))
        return out


@register
class Sequence(PostProcessor):
    """Several post-processors, each on the previous one's output."""

    type = "Sequence"

    def __init__(self, processors: list[PostProcessor]) -> None:
        self.processors = processors

    @classmethod
    def from_json(cls, node: dict[str, Any]) -> Sequence:
        return cls([part_from_json("post_processor", item) for item in node.get("processors") or []])

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "processors": [p.to_json() for p in self.processors]}

    def added_tokens(self, is_pair: bool) -> int:
        return sum(p.added_tokens(is_pair) for p in self.processors)

    def process_encodings(self, encodings: list[Encoding], add_special_tokens: bool) -> list[Encoding]:
        for processor in self.processors:
            encodings = processor.process_encodings(encodings, add_special_tokens)
        return encodings
