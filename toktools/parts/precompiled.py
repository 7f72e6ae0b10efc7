"""The ``Precompiled`` normaliser: sentencepiece's ``precompiled_charsmap``, read in pure Python.

The blob is ``[u32 trie size][darts-clone double array][NUL-terminated replacement strings]``;
the trie maps UTF-8 byte strings to offsets of their replacement. Two libraries apply it
differently, and both are here:

* ``tokenizers`` (:meth:`Precompiled.normalize`): per extended grapheme cluster: a cluster of
  fewer than 6 bytes is replaced whole by the *shortest* trie match of its bytes, if any;
  otherwise each character is replaced by its own shortest match (or kept).
* sentencepiece (:func:`spm_normalize_chars`): greedy *longest* match over the byte stream,
  copying a character through when nothing matches.

They agree on almost all text; they differ on a combining mark after a mapped character and on
six-byte clusters (see ``spec/unigram.md`` §2.4 and the tests).
"""

from __future__ import annotations

import base64
import binascii
import struct
from functools import cache
from typing import Any

from toktools.errors import ToktoolsError
from toktools.parts.base import Normalizer, Piece, Span
from toktools.parts.registry import register


class CharsMap:
    """The decoded ``precompiled_charsmap``: a double-array trie plus the replacement pool."""

    def __init__(self, blob: bytes) -> None:
        if len(blob) < 4:
            raise ToktoolsError("precompiled_charsmap: shorter than its 4-byte header")
        (trie_size,) = struct.unpack_from("<I", blob, 0)
        if trie_size % 4 or 4 + trie_size > len(blob) or trie_size == 0:
            raise ToktoolsError(f"precompiled_charsmap: trie size {trie_size} does not fit a blob of {len(blob)} bytes")
        self.blob = bytes(blob)
        self.units = struct.unpack_from(f"<{trie_size // 4}I", blob, 4)
        self.pool = blob[4 + trie_size :]
        try:
            self.pool.decode("utf-8")
        except UnicodeDecodeError:
            raise ToktoolsError("precompiled_charsmap: the replacement strings are not valid UTF-8") from None
        self._strings: dict[int, str] = {}
        self._plain: dict[str, Any] = {}  # character -> char_state

    def prefix_matches(self, key: bytes, stop_at_nul: bool = True, start: int = 0) -> list[tuple[int, int]]:
        """``(length in bytes, pool offset)`` of every prefix of ``key[start:]`` in the trie,
        shortest first (darts-clone ``commonPrefixSearch``; ``tokenizers`` stops at a NUL byte,
        sentencepiece, which passes the key length, does not)."""
        units = self.units
        size = len(units)
        out = []
        node = unit_offset(units[0])
        for k in range(start, len(key)):
            c = key[k]
            if c == 0 and stop_at_nul:
                break
            node ^= c
            if node >= size:
                break
            unit = units[node]
            if unit & 0x800000FF != c:
                break
            node ^= unit_offset(unit)
            if (unit >> 8) & 1:
                if node >= size:
                    break
                out.append((k + 1 - start, units[node] & 0x7FFFFFFF))
        return out

    def plain(self, ch: str) -> bool:
        """Whether no rule can start with the character ``ch`` (cached per character)."""
        return self.char_state(ch) is None

    def char_state(self, ch: str) -> tuple[int, list[tuple[int, int]], int] | None:
        """The trie walk over ``ch``'s bytes, cached per character: None when it fails inside
        them without a hit (no match starts at ``ch``, whatever follows), else ``(node or -1
        if the walk ended, hits so far, bytes of ch)`` for :meth:`longest_at` to go on from."""
        state = self._plain.get(ch, _UNSEEN)
        if state is _UNSEEN:
            key = ch.encode("utf-8", "surrogatepass")
            units = self.units
            size = len(units)
            node = unit_offset(units[0])
            hits: list[tuple[int, int]] = []
            for k, c in enumerate(key):
                node ^= c
                if node >= size:
                    node = -1
                    break
                unit = units[node]
                if unit & 0x800000FF != c:
                    node = -1
                    break
                node ^= unit_offset(unit)
                if (unit >> 8) & 1:
                    if node >= size:
                        node = -1
                        break
                    hits.append((k + 1, units[node] & 0x7FFFFFFF))
            state = None if node < 0 and not hits else (node, hits, len(key))
            self._plain[ch] = state
        return state

    def longest_at(
        self, data: bytes, pos: int, state: tuple[int, list[tuple[int, int]], int]
    ) -> tuple[int, str] | None:
        """:meth:`longest` at ``pos``, where the character ``state`` (:meth:`char_state`) starts:
        the walk goes on after that character's bytes."""
        node, hits, skip = state
        best = hits[-1] if hits else None
        if node >= 0:
            units = self.units
            size = len(units)
            for k in range(pos + skip, len(data)):
                c = data[k]
                node ^= c
                if node >= size:
                    break
                unit = units[node]
                if unit & 0x800000FF != c:
                    break
                node ^= unit_offset(unit)
                if (unit >> 8) & 1:
                    if node >= size:
                        break
                    best = (k + 1 - pos, units[node] & 0x7FFFFFFF)
        if best is None:
            return None
        return best[0], self.replacement(best[1])

    def replacement(self, value: int) -> str:
        text = self._strings.get(value)
        if text is None:
            end = self.pool.find(b"\0", value)
            raw = self.pool[value : end if end >= 0 else len(self.pool)]
            text = raw.decode("utf-8", errors="replace")
            self._strings[value] = text
        return text

    def shortest(self, text: str) -> str | None:
        """``tokenizers``' ``transform``: the replacement of the shortest match of ``text``'s bytes."""
        hits = self.prefix_matches(text.encode("utf-8"))
        return self.replacement(hits[0][1]) if hits else None

    def longest(self, data: bytes, pos: int) -> tuple[int, str] | None:
        """sentencepiece: ``(bytes consumed, replacement)`` of the longest match at ``pos``."""
        hits = self.prefix_matches(data, stop_at_nul=False, start=pos)
        if not hits:
            return None
        length, value = hits[-1]
        return length, self.replacement(value)


_UNSEEN = object()


def unit_offset(unit: int) -> int:
    """The offset a double-array unit holds (darts-clone's ``offset()``): XOR it into the node index."""
    return (unit >> 10) << ((unit & 0x200) >> 6)


@cache
def grapheme_regex() -> Any:
    """Extended grapheme clusters (``\\X``), the units ``tokenizers`` normalises one at a time."""
    import regex

    return regex.compile(r"\X")


SPACE = "\u2581"


def spm_normalize(
    text: str,
    charsmap: CharsMap | None,
    *,
    add_dummy_prefix: bool = True,
    remove_extra_whitespaces: bool = True,
    escape_whitespaces: bool = True,
    treat_whitespace_as_suffix: bool = False,
    user_defined: tuple[str, ...] = (),
) -> tuple[str, list[int]]:
    """sentencepiece's ``Normalizer::Normalize``: the normalised text and, per output character,
    the index in ``text`` of the character that produced it.

    Units are the *longest* trie match (user-defined symbols first, copied verbatim); spaces
    are collapsed and trimmed only as U+0020 *after* the charsmap; ``▁`` replaces spaces.
    A character that no rule can start with (:meth:`CharsMap.char_state`, cached) is
    copied without walking the trie.
    """
    data = text.encode("utf-8")
    users = sorted(user_defined, key=len, reverse=True)
    user_first = {symbol[0] for symbol in users if symbol}
    size = len(text)

    def unit(i: int, b: int) -> tuple[str, int, int]:
        """The unit at character ``i`` (byte ``b``): output, characters and bytes consumed."""
        ch = text[i]
        if ch in user_first:
            for symbol in users:
                if symbol and text.startswith(symbol, i):
                    return symbol, len(symbol), len(symbol.encode("utf-8"))
        state = charsmap.char_state(ch) if charsmap is not None else None
        if state is not None:
            hit = charsmap.longest_at(data, b, state)  # type: ignore[union-attr]  # a state implies a charsmap
            if hit is not None:
                try:
                    consumed = data[b : b + hit[0]].decode("utf-8")
                except UnicodeDecodeError:
                    raise ToktoolsError("precompiled_charsmap: a rule ends inside a UTF-8 character") from None
                return hit[1], len(consumed), hit[0]
        return ch, 1, _utf8_len(ch)

    i = b = 0
    if remove_extra_whitespaces:
        while i < size:
            out, used, used_bytes = unit(i, b)
            if out != " ":
                break
            i += used
            b += used_bytes
    if i >= size:
        return "", []
    chars: list[str] = []
    origin: list[int] = []
    space = SPACE if escape_whitespaces else " "
    if add_dummy_prefix and not treat_whitespace_as_suffix:
        chars.append(space)
        origin.append(i)
    prev_space = remove_extra_whitespaces
    add_char, add_origin = chars.append, origin.append
    known = charsmap._plain.get if charsmap is not None else None
    while i < size:
        ch = text[i]
        if ch != " " and ch not in user_first:
            state = known(ch, _UNSEEN) if known is not None else None
            if state is _UNSEEN:
                state = charsmap.char_state(ch)  # type: ignore[union-attr]  # _UNSEEN implies a charsmap
            if state is None:  # no rule starts with it: copied as it is
                add_char(ch)
                add_origin(i)
                prev_space = False
                i += 1
                b += 1 if ch < "\x80" else 2 if ch < "\u0800" else 3 if ch < "\U00010000" else 4
                continue
        out, used, used_bytes = unit(i, b)
        if prev_space:
            out = out.lstrip(" ")
        if out:
            for ch in out:
                add_char(space if ch == " " and escape_whitespaces else ch)
                add_origin(i)
            prev_space = out.endswith(" ")
        i += used
        b += used_bytes
        if not remove_extra_whitespaces:
            prev_space = False
    if remove_extra_whitespaces:
        while chars and chars[-1] == space:
            chars.pop()
            origin.pop()
    if add_dummy_prefix and treat_whitespace_as_suffix:
        chars.append(space)
        origin.append(len(text))
    return "".join(chars), origin


def _utf8_len(ch: str) -> int:
    return 1 if ch < "\x80" else 2 if ch < "\u0800" else 3 if ch < "\U00010000" else 4


@register
class Precompiled(Normalizer):
    """``{"type": "Precompiled", "precompiled_charsmap": base64}`` as ``tokenizers`` applies it."""

    type = "Precompiled"

    def __init__(self, precompiled_charsmap: bytes | None) -> None:
        self.charsmap_bytes = bytes(precompiled_charsmap or b"")
        self.charsmap = CharsMap(self.charsmap_bytes) if self.charsmap_bytes else None
        self._plans: dict[str, Any] = {}

    @classmethod
    def from_json(cls, node: dict[str, Any]) -> Precompiled:
        raw = node.get("precompiled_charsmap")
        if raw is None:
            return cls(b"")
        if not isinstance(raw, str):
            raise ToktoolsError('tokenizer.json: Precompiled "precompiled_charsmap" must be a base64 string')
        try:
            blob = base64.b64decode(raw, validate=True)
        except (binascii.Error, ValueError):
            raise ToktoolsError('tokenizer.json: Precompiled "precompiled_charsmap" is not valid base64') from None
        return cls(blob)

    def to_json(self) -> dict[str, Any]:
        return {"type": "Precompiled", "precompiled_charsmap": base64.b64encode(self.charsmap_bytes).decode("ascii")}

    def normalize(self, piece: Piece) -> Piece:
        """Per grapheme, as ``tokenizers``, with its alignments (see :func:`_apply_changes`)."""
        cmap = self.charsmap
        if cmap is None or not piece.text:
            return piece
        changes: list[list] = []  # [char, change] as tokenizers' NormalizedString.transform takes them
        modified = False
        plans = self._plans
        for match in grapheme_regex().finditer(piece.text):
            grapheme = match.group()
            plan = plans.get(grapheme)
            if plan is None:
                plan = plans[grapheme] = self.plan(grapheme)
            if plan is KEEP:
                changes.extend([ch, 0] for ch in grapheme)
                continue
            modified = True
            for repl, count, ch in plan:
                if repl is None:
                    changes.append([ch, 0])
                else:
                    _replace(changes, repl, count)
        if not modified:
            return piece
        return _apply_changes(piece, changes)

    def plan(self, grapheme: str) -> Any:
        """What becomes of one grapheme (cached: it depends on nothing else): ``KEEP``, or
        ``(replacement, characters replaced, None)`` / ``(None, 1, kept character)`` steps."""
        cmap = self.charsmap
        assert cmap is not None  # normalize plans only with a charsmap
        if len(grapheme.encode("utf-8")) < 6:
            repl = cmap.shortest(grapheme)
            if repl is not None:
                return ((repl, len(grapheme), None),)
        steps = []
        found = False
        for ch in grapheme:
            repl = cmap.shortest(ch)
            found = found or repl is not None
            steps.append((repl, 1, None) if repl is not None else (None, 1, ch))
        return tuple(steps) if found else KEEP


KEEP: tuple[()] = ()  # a grapheme the charsmap leaves as it is


def _replace(changes: list[list], repl: str, count: int) -> None:
    """``count`` characters become ``repl``: position by position, the first ``count`` new
    characters replace old ones, extra ones are insertions (+1), and missing ones are removals
    charged to the last new character -- or, for an empty ``repl``, to the character before it
    (lost at the very start: ``tokenizers`` then shifts the following spans, which we copy)."""
    if not repl:
        if changes:
            changes[-1][1] -= count
        return
    for i, ch in enumerate(repl):
        changes.append([ch, 0 if i < count else 1])
    if len(repl) < count:
        changes[-1][1] -= count - len(repl)


def _apply_changes(piece: Piece, changes: list[list]) -> Piece:
    """``NormalizedString.transform`` in characters: a change <= 0 takes the span of the next
    unconsumed character (and skips ``-change`` more); a positive one is an insertion that takes
    the span of the character before."""
    out: list[str] = []
    spans: list[Span] = []
    consumed = 0
    n = len(piece.text)
    for ch, change in changes:
        if change > 0:
            span = piece.span_of(consumed - 1) if consumed >= 1 else (0, 0)
        else:
            span = piece.span_of(consumed) if consumed < n else piece.original(n, n)
            consumed += 1 - change
        out.append(ch)
        spans.append(span)
    return Piece("".join(out), spans, piece.base)
