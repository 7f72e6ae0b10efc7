"""The block path's UTF-8 check says what Python's strict decoder says, on every short
sequence that starts with a non-ASCII byte and on mutated mixed text."""

from __future__ import annotations

import random

import pytest

from toktools.corpus.utf8_check import is_utf8

pytest.importorskip("numpy")


def decodes(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


TAILS = (b"", b"a", b"\x80", b"\x8f", b"\x90", b"\x9f", b"\xa0", b"\xbf", b"\xc0", b"\x80\x80", b"\xbf\xbf")
#: second bytes at the edges of every range UTF-8's rules draw
EDGES = (0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC2, 0xE0, 0xF0, 0xF4, 0xF5, 0xFF)


def disagreements(seconds: range | tuple[int, ...]) -> list[bytes]:
    blocks = (b"ab" + bytes([x, y]) + tail + b"\n" for x in range(0x80, 0x100) for y in seconds for tail in TAILS)
    return [block for block in blocks if is_utf8(block) != decodes(block)]


def test_every_non_ascii_start_with_second_bytes_at_the_edges() -> None:
    assert not disagreements(EDGES)


@pytest.mark.full
def test_every_two_byte_start() -> None:
    assert not disagreements(range(0x100))


def test_mutated_mixed_text() -> None:
    pieces = [b"a", b" ", b"\n", "é".encode(), "中".encode(), "😀".encode(), "\ud7ff".encode(), "\uffff".encode()]
    pieces.append("\U0010ffff".encode())
    rnd = random.Random(7)
    for _ in range(20_000):
        data = bytearray(b"".join(rnd.choice(pieces) for _ in range(rnd.randint(0, 8))))
        for _ in range(rnd.randint(0, 2)):
            if data:
                at = rnd.randrange(len(data))
                data[at] = rnd.choice([0x80, 0xBF, 0xC0, 0xC1, 0xC2, 0xE0, 0xED, 0xF0, 0xF4, 0xF5, rnd.randrange(256)])
        block = bytes(data)
        assert is_utf8(block) == decodes(block), block
    dense = "中文".encode() * 1000  # the decode path (most bytes non-ASCII)
    assert is_utf8(dense) and not is_utf8(dense[:-1])
