"""One registry of parts keyed by (category, ``type``): loading ``tokenizer.json`` is looking
each node's type up here. Modules register their classes with :func:`register` when imported;
:func:`part_from_json` imports them all first, so callers never need to."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, TypeVar

from toktools.errors import ToktoolsError

if TYPE_CHECKING:
    from toktools.parts.base import Part

CATEGORIES = ("normalizer", "pre_tokenizer", "model", "post_processor", "decoder")
_PART_MODULES = (
    "toktools.parts.normalizers",
    "toktools.parts.pre_tokenizers",
    "toktools.parts.models",
    "toktools.parts.wordlevel",
    "toktools.parts.precompiled",
    "toktools.parts.unigram",
    "toktools.parts.post_processors",
    "toktools.parts.decoders",
)
_REGISTRY: dict[tuple[str, str], type[Part]] = {}
_loaded = False

T = TypeVar("T", bound="type[Part]")


def register(cls: T) -> T:
    """Class decorator: make ``cls`` the part for ``(cls.category, cls.type)``."""
    key = (cls.category, cls.type)
    if key[0] not in CATEGORIES or not key[1]:
        raise TypeError(f"{cls.__name__}: category and type must be set")
    if key in _REGISTRY and _REGISTRY[key] is not cls:
        raise TypeError(f"two parts registered for {key}: {_REGISTRY[key].__name__} and {cls.__name__}")
    _REGISTRY[key] = cls
    return cls


def _load_all() -> None:
    global _loaded
    if not _loaded:
        for name in _PART_MODULES:
            importlib.import_module(name)
        _loaded = True


def supported(category: str) -> list[str]:
    """The ``type`` names toktools knows for one category."""
    _load_all()
    return sorted(t for c, t in _REGISTRY if c == category)


def part_class(category: str, type_name: str) -> type[Part]:
    _load_all()
    cls = _REGISTRY.get((category, type_name))
    if cls is None:
        raise ToktoolsError(
            f"unsupported {category.replace('_', '-')} type {type_name!r} "
            f"(toktools supports: {', '.join(supported(category))})"
        )
    return cls


def part_from_json(category: str, node: Any) -> Any:
    """The part for one ``tokenizer.json`` node (``None`` stays ``None``)."""
    if node is None:
        return None
    if not isinstance(node, dict) or not isinstance(node.get("type"), str):
        raise ToktoolsError(f'tokenizer.json: the {category} must be an object with a "type"')
    return part_class(category, node["type"]).from_json(node)


def parts_from_json(category: str, items: list[Any], owner: str, field: str) -> list[Any]:
    """The parts a ``Sequence`` node lists, none of them null."""
    parts = [part_from_json(category, item) for item in items]
    if any(p is None for p in parts):
        raise ToktoolsError(f"{owner}: field {field!r} holds a null")
    return parts
