"""The charsmap rules {source → normalised} that make sentencepiece normalise like toktools'
character-level normalisers (``Nmt``, ``NFKC``, ``Lowercase``, in the tokenizer's order).

sentencepiece can only apply a table by *longest match*, left to right. Its own builder
(``builder.cc`` ``BuildNFKCMap``) turns NFKC into such a table, and so does this module:

* every code point the parts change, mapped to what the parts make of it;
* every multi-character NFKD sequence that composes (``NFC(nfkd) != nfkd``), in all spellings
  that decompose to it character by character (``Ａ`` + U+0301 as well as ``A`` + U+0301),
  mapped to what the parts make of it -- so decomposed text still composes;
* then ``RemoveRedundantMap``: a rule that the shorter rules already give is dropped.

Keys and values come from the tokenizer's own parts and tables (toktools' NFKC follows
``tokenizers``' Unicode 12 tables, whatever Python's ``unicodedata`` version), so the charsmap
is the same on every Python. What a longest-match table cannot do is left undone: canonical
reordering of several combining marks (``a`` U+0302 U+0323 stays ``â`` U+0323, NFKC gives ``ậ``),
a mark composing with the end of a multi-character replacement (``ﬁ`` U+0300: ``fi`` U+0300,
NFKC ``fì``), a composition across a character ``Nmt`` drops. ``benchmarks/charsmap_agreement.py``
measures how often that matters.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from itertools import product
from typing import Any

from toktools.errors import ToktoolsError

#: the part types a table can follow, and the name each contributes to ``NormalizerSpec.name``
SUPPORTED = {"Nmt": "nmt", "NFKC": "nfkc", "Lowercase": "lowercase"}

_SEPARATOR = "\x00"  # left alone by every supported part, and never a key


def rule_name(parts: Sequence[Any]) -> str:
    """The ``NormalizerSpec.name`` for these parts (``nmt_nfkc`` for ``Nmt`` + ``NFKC``)."""
    return "_".join(SUPPORTED[part.type] for part in parts)


def _check(parts: Sequence[Any]) -> None:
    for part in parts:
        if part.type not in SUPPORTED:
            raise ToktoolsError(
                f"the normalizer {part.type!r} has no sentencepiece charsmap equivalent "
                f"(supported: {', '.join(SUPPORTED)}, or a Precompiled charsmap)"
            )


def charsmap_rules(parts: Sequence[Any]) -> dict[str, str]:
    """The rules for normaliser ``parts`` (each ``Nmt``, ``NFKC`` or ``Lowercase``); see the module
    docstring. A part of another type is one :class:`ToktoolsError` naming it."""
    _check(parts)

    def apply(texts: list[str], steps: Sequence[Any] = parts) -> list[str]:
        """``steps`` applied to each text (one pass over them all, joined by NUL)."""
        joined = _SEPARATOR.join(texts)
        for step in steps:
            joined = step.normalize_str(joined)
        out = joined.split(_SEPARATOR)
        if len(out) != len(texts):  # cannot happen with the supported parts
            raise ToktoolsError("charsmap rules: a normalizer changed the NUL separator")
        return out

    from toktools.parts.normalizers import NFC, NFKD

    rules: dict[str, str] = {}
    # single code points
    singles = _candidates()
    for source, target in zip(singles, apply(singles)):
        if target != source:
            rules[source] = target
    # composing NFKD sequences, in every spelling that decomposes to them
    spellings: dict[str, list[str]] = {}  # one character -> the characters whose NFKD it is
    decomposed: set[str] = set()
    for ch, nfkd in zip(singles, apply(singles, [NFKD()])):
        if nfkd == ch:
            continue
        if len(nfkd) == 1:
            spellings.setdefault(nfkd, [nfkd]).append(ch)
        else:
            decomposed.add(nfkd)
    ordered = sorted(decomposed)
    composing = [d for d, nfc in zip(ordered, apply(ordered, [NFC()])) if nfc != d]
    for nfkd, target in zip(composing, apply(composing)):
        for chars in product(*[spellings.get(ch) or (ch,) for ch in nfkd]):
            source = "".join(chars)
            if source != target:
                rules[source] = target
    return _remove_redundant(rules)


#: the ``Nmt`` characters: controls it drops, spaces it maps (``toktools.parts.normalizers``)
_NMT_CHARS = (
    *range(0x01, 0x20),
    0x7F,
    0x8F,
    0x9F,
    0x1680,
    *range(0x200B, 0x2010),
    0x2028,
    0x2029,
    0x2581,
    0xFEFF,
    0xFFFD,
)


def _candidates() -> list[str]:
    """Every character a supported part may change alone, from toktools' own tables (so the
    rules do not depend on Python's Unicode version): the ``Nmt`` characters, those with a
    (compatibility) decomposition, Hangul syllables, and those with a lowercase mapping."""
    from toktools.parts import unicode_forms
    from toktools.tables import bert as bert_tables

    chars = {chr(cp) for cp in _NMT_CHARS}
    chars.update(unicode_forms.tables().compat)
    chars.update(chr(cp) for cp in range(0xAC00, 0xD7A4))
    chars.update(chr(cp) for cp in bert_tables.LOWERCASE)
    chars.update(chr(cp) for cp in range(ord("A"), ord("Z") + 1))
    return sorted(chars)


def _remove_redundant(rules: dict[str, str]) -> dict[str, str]:
    """sentencepiece's ``RemoveRedundantMap``: keep every one-character rule, and a longer rule
    only when the rules shorter than it (kept so far) would not give the same result."""
    kept = {k: v for k, v in rules.items() if len(k) == 1}
    longest = max((len(k) for k in rules), default=0)
    for size in range(2, longest + 1):
        for source, target in rules.items():
            if len(source) == size and _longest_match(kept, source, size - 1) != target:
                kept[source] = target
    return kept


def _longest_match(rules: dict[str, str], text: str, max_len: int) -> str:
    """``text`` normalised by longest match over ``rules`` (keys of at most ``max_len`` chars)."""
    out = ""
    i = 0
    n = len(text)
    get = rules.get
    while i < n:
        size = min(max_len, n - i)
        while size:
            target = get(text[i : i + size])
            if target is not None:
                out += target
                i += size
                break
            size -= 1
        else:
            out += text[i]
            i += 1
    return out


def compile_charsmap(parts: Sequence[Any]) -> bytes:
    """The ``precompiled_charsmap`` blob for ``parts`` (:func:`charsmap_rules`, then
    :func:`toktools.sentencepiece.charsmap_builder.build_charsmap`); a second call in the process is free."""
    _check(parts)
    return _compiled(tuple(part.type for part in parts))


@lru_cache(maxsize=8)
def _compiled(types: tuple[str, ...]) -> bytes:
    from toktools.parts.registry import part_from_json
    from toktools.sentencepiece.charsmap_builder import build_charsmap

    return build_charsmap(charsmap_rules([part_from_json("normalizer", {"type": t}) for t in types]))
