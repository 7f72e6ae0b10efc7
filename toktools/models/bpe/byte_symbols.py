"""The 256-entry byte <-> symbol map of byte-level BPE (GPT-2's ``bytes_to_unicode``).

A module of its own, without ``regex`` or the Unicode tables of :mod:`toktools.models.bpe.bytelevel`
(which re-exports everything here): corpus encoding with tiktoken needs only this map, and
its start-up time counts on every run.
"""

from __future__ import annotations


def _build_byte_symbols() -> list[str]:
    """Printable bytes keep their own code point; the other 68 get U+0100, U+0101, … in order."""
    printable = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    symbols = {b: chr(b) for b in printable}
    next_code_point = 0x100
    for b in range(256):
        if b not in symbols:
            symbols[b] = chr(next_code_point)
            next_code_point += 1
    return [symbols[b] for b in range(256)]


BYTE_TO_SYMBOL: list[str] = _build_byte_symbols()
SYMBOL_TO_BYTE: dict[str, int] = {s: b for b, s in enumerate(BYTE_TO_SYMBOL)}
#: The 256 symbols in code-point order: GPT-2's ids 0–255, and the trainer's initial alphabet.
ALPHABET: list[str] = sorted(BYTE_TO_SYMBOL)

# str.translate tables: latin-1 code point (= byte value) -> symbol, and back.
LATIN1_TO_SYMBOL = {b: s for b, s in enumerate(BYTE_TO_SYMBOL)}
SYMBOL_TO_LATIN1 = {ord(s): b for b, s in enumerate(BYTE_TO_SYMBOL)}


def bytes_to_symbols(data: bytes) -> str:
    """Raw bytes → their byte-level symbols, one symbol per byte."""
    return data.decode("latin-1").translate(LATIN1_TO_SYMBOL)


def text_to_symbols(text: str) -> str:
    """Text → the byte-level symbols of its UTF-8 bytes (``"我"`` → ``"æĪĳ"``)."""
    return text.encode("utf-8").decode("latin-1").translate(LATIN1_TO_SYMBOL)


def is_byte_symbols(token: str) -> bool:
    """True if every character of ``token`` is one of the 256 byte symbols."""
    return all(ch in SYMBOL_TO_BYTE for ch in token)


def symbols_to_bytes(symbols: str) -> bytes:
    """Byte-level symbols → the bytes they stand for (the inverse of :func:`bytes_to_symbols`)."""
    return symbols.translate(SYMBOL_TO_LATIN1).encode("latin-1")
