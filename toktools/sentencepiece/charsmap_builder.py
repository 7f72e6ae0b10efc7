"""Write a sentencepiece ``precompiled_charsmap`` from a mapping {source string → normalised string}.

The blob is what :class:`toktools.parts.precompiled.CharsMap` reads and what sentencepiece's
``Normalizer`` loads: ``[u32 LE trie size][darts-clone double array of u32 units][pool]``, the pool
being the NUL-terminated replacements, the trie mapping each source's UTF-8 bytes to the offset of
its replacement in the pool (``spec/unigram.md`` §2.1-2.2).

The double array is a plain trie, not darts-clone's DAWG (it does not share suffixes), so the blob
is larger than sentencepiece's own but reads the same way. A unit is laid out as darts-clone's:

* a node: ``label`` in bits 0-7, ``has_leaf`` in bit 8, the XOR ``offset`` to its children's base
  in bits 10-31 (bit 9 set: shifted by 8 more; not needed below 2**21 units, which we stay under);
* a key ending at a node: the unit at ``base ^ 0`` holds ``value | 1 << 31``;
* an unused unit: ``1 << 31``, a label no byte can match.

Bases are distinct per node (two nodes sharing a base would see each other's children), never 0
(the root's place), and children stay in their base's 256-unit block, so the array is padded to a
multiple of 256 units: a walk never indexes past its end.
"""

from __future__ import annotations

import struct
from array import array
from collections.abc import Mapping

from toktools.errors import ToktoolsError

#: offsets below this fit a unit without darts-clone's shifted form; the array stays below it
MAX_UNITS = 1 << 21
#: how many of the last 256-unit blocks the builder still fills (darts-clone keeps 16)
OPEN_BLOCKS = 16
#: a value is 31 bits (bit 31 marks a value unit)
MAX_VALUE = (1 << 31) - 1
#: sentencepiece keeps at most 32 prefix matches per position (``kMaxTrieResultsSize``)
MAX_PREFIX_MATCHES = 32

_LEAF = 1 << 31
_HAS_LEAF = 1 << 8


def build_charsmap(mapping: Mapping[str, str]) -> bytes:
    """The ``precompiled_charsmap`` blob for ``mapping``; an empty mapping gives ``b""`` (identity).

    Raises :class:`ToktoolsError` for what the format cannot hold: an empty source, a NUL or a
    lone surrogate in a source or a replacement, more than 31 nested prefixes, a pool or a trie
    past the offsets a unit can store."""
    if not mapping:
        return b""
    pool, offsets = _pool(mapping)
    keyed = sorted((_utf8(source, "source"), offsets[target]) for source, target in mapping.items())
    for key, _ in keyed:
        if not key:
            raise ToktoolsError("charsmap: an empty source string cannot be a rule")
        if 0 in key:
            raise ToktoolsError(f"charsmap: the source {key.decode()!r} contains NUL, which ends a trie key")
    _check_prefixes([k for k, _ in keyed])
    units = _double_array(keyed)
    trie = units.tobytes() if struct.pack("=I", 1) == struct.pack("<I", 1) else _little_endian(units)
    return struct.pack("<I", len(trie)) + trie + pool


def _utf8(text: str, what: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        raise ToktoolsError(f"charsmap: the {what} {text!r} is not valid Unicode (a lone surrogate)") from None


def _pool(mapping: Mapping[str, str]) -> tuple[bytes, dict[str, int]]:
    """The NUL-terminated replacements, each once (sorted, as sentencepiece writes them)."""
    pool = bytearray()
    offsets: dict[str, int] = {}
    for target in sorted(set(mapping.values())):
        raw = _utf8(target, "replacement")
        if b"\0" in raw:
            raise ToktoolsError(f"charsmap: the replacement {target!r} contains NUL, which ends a pool string")
        if len(pool) > MAX_VALUE:
            raise ToktoolsError(
                f"charsmap: the replacement pool passes {MAX_VALUE} bytes, past what a unit value can point to"
            )
        offsets[target] = len(pool)
        pool += raw + b"\0"
    return bytes(pool), offsets


def _check_prefixes(keys: list[bytes]) -> None:
    """sentencepiece looks at no more than 32 matches at one position: no key may have 32 keys
    (itself included) among its prefixes. ``keys`` are sorted, so a key's prefixes come before it."""
    chain: list[bytes] = []  # the keys that are prefixes of the current one
    for key in keys:
        while chain and not key.startswith(chain[-1]):
            chain.pop()
        chain.append(key)
        if len(chain) >= MAX_PREFIX_MATCHES:
            raise ToktoolsError(
                f"charsmap: {len(chain)} rules are prefixes of {key.decode()!r}; sentencepiece "
                f"reads fewer than {MAX_PREFIX_MATCHES}"
            )


def _double_array(keyed: list[tuple[bytes, int]]) -> array:
    """The units of a trie over the sorted ``(key, value)`` pairs (see the module docstring)."""
    size = 1 << 16
    units = array("I", [_LEAF]) * size
    used = bytearray(size)  # 1 where a unit is taken
    base_used = bytearray(size)  # 1 where a base is taken
    blocked = bytearray(size)  # 1 where either is
    used[0] = blocked[0] = 1
    units[0] = 0
    top = 1  # one past the highest unit taken
    stack = [(0, 0, len(keyed), 0)]  # (unit of the node, keys from, keys to, depth)
    while stack:
        node, begin, end, depth = stack.pop()
        # children: the key ending here (label 0, first when sorted), then one per next byte
        labels: list[int] = []
        ranges: list[tuple[int, int]] = []
        value = None
        i = begin
        if len(keyed[i][0]) == depth:
            value = keyed[i][1]
            labels.append(0)
            i += 1
        while i < end:
            label = keyed[i][0][depth]
            j = i + 1
            while j < end and keyed[j][0][depth] == label:
                j += 1
            labels.append(label)
            ranges.append((i, j))
            i = j
        # the lowest base whose children's units are all free, looking only at the last
        # OPEN_BLOCKS blocks (darts-clone's rule too): older holes are left unused. A node with a
        # key ending at it needs the unit at its base itself: ``blocked`` finds those directly.
        first = labels[0]
        rest = labels[1:]
        floor = max(1, top - OPEN_BLOCKS * 256)
        free = blocked if first == 0 else used
        probe = free.find(0, floor)
        while True:
            if probe < 0:
                probe = size
            base = probe ^ first
            if base and (base >= size or not base_used[base]):
                for label in rest:
                    at = base ^ label
                    if at < size and used[at]:
                        break
                else:
                    break
            probe = free.find(0, probe + 1)
        need = (base | 0xFF) + 1
        if need > MAX_UNITS:
            raise ToktoolsError(
                f"charsmap: the trie needs more than {MAX_UNITS} units, past what a unit offset can address"
            )
        while need > size:
            units.extend(array("I", [_LEAF]) * size)
            used.extend(bytes(size))
            base_used.extend(bytes(size))
            blocked.extend(bytes(size))
            size *= 2
        base_used[base] = blocked[base] = 1
        units[node] |= (node ^ base) << 10
        if value is not None:
            if value > MAX_VALUE:
                raise ToktoolsError(f"charsmap: a pool offset ({value}) past what a unit value can hold")
            units[node] |= _HAS_LEAF
            units[base] = value | _LEAF
            used[base] = 1
        for label, (lo, hi) in zip(labels[1:] if value is not None else labels, ranges):
            child = base ^ label
            units[child] = label
            used[child] = blocked[child] = 1
            stack.append((child, lo, hi, depth + 1))
        top = max(top, need)
    return units[:top]


def _little_endian(units: array) -> bytes:
    swapped = array("I", units)
    swapped.byteswap()
    return swapped.tobytes()
