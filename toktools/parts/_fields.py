"""Reading the fields of a ``tokenizer.json`` node: a wrong or missing field is one readable
:class:`~toktools.errors.ToktoolsError` that names the part and the field."""

from __future__ import annotations

from typing import Any

from toktools.errors import ToktoolsError

_MISSING = object()
_KINDS = {bool: "a boolean", str: "a string", int: "an integer", list: "a list", dict: "an object"}


def field(node: dict[str, Any], name: str, kind: type, part: str, default: Any = _MISSING) -> Any:
    """``node[name]``, checked to be of ``kind`` (``bool`` is not an ``int``)."""
    if name not in node:
        if default is _MISSING:
            raise ToktoolsError(f"{part}: missing field {name!r}")
        return default
    value = node[name]
    ok = isinstance(value, kind) and not (kind is int and isinstance(value, bool))
    if not ok:
        raise ToktoolsError(f"{part}: field {name!r} must be {_KINDS.get(kind, kind.__name__)}, got {value!r}")
    return value


def char_field(node: dict[str, Any], name: str, part: str, default: Any = _MISSING) -> str:
    """A field that ``tokenizers`` reads as one ``char``."""
    value = field(node, name, str, part, default)
    if len(value) != 1:
        raise ToktoolsError(f"{part}: field {name!r} must be a single character, got {value!r}")
    return value


def choice(node: dict[str, Any], name: str, allowed: tuple[str, ...], part: str, default: Any = _MISSING) -> str:
    value = field(node, name, str, part, default)
    if value not in allowed:
        raise ToktoolsError(f"{part}: field {name!r} must be one of {', '.join(allowed)}, got {value!r}")
    return value


def count(node: dict[str, Any], name: str, part: str) -> int:
    value = field(node, name, int, part)
    if value < 0:
        raise ToktoolsError(f"{part}: field {name!r} must be >= 0, got {value!r}")
    return value


class ByteLevelOptions:
    """The three options every ``ByteLevel`` node carries, whether pre-tokeniser, post-processor
    or decoder (each part uses only some of them; all round-trip)."""

    type = "ByteLevel"

    def __init__(self, add_prefix_space: bool = True, trim_offsets: bool = True, use_regex: bool = True) -> None:
        self.add_prefix_space = add_prefix_space
        self.trim_offsets = trim_offsets
        self.use_regex = use_regex

    @classmethod
    def from_json(cls, node: dict[str, Any]) -> Any:
        part = f"{getattr(cls, 'category', '').replace('_', '-')} ByteLevel"
        return cls(*(field(node, name, bool, part, True) for name in ("add_prefix_space", "trim_offsets", "use_regex")))

    def to_json(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "add_prefix_space": self.add_prefix_space,
            "trim_offsets": self.trim_offsets,
            "use_regex": self.use_regex,
        }

    def spelling(self) -> dict[str, Any]:
        return {"byte_level": True}  # tokens in GPT-2's byte symbols


def spelling_of(parts: Any) -> dict[str, Any]:
    """The spelling facts of a ``Sequence``'s members; the first member to tell one wins."""
    facts: dict[str, Any] = {}
    for part in parts:
        for name, value in part.spelling().items():
            facts.setdefault(name, value)
    return facts
