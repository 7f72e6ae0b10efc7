"""Byte-level BPE (GPT-2, RoBERTa): text as bytes, each byte as one printable symbol.

::

    "我 go"  --UTF-8-->  E6 88 91 20 67 6F  --one symbol a byte-->  "æĪĳĠgo"

Nothing is ever unknown, since each of the 256 bytes has a symbol (``我`` = E6 88 91 → three
symbols, merged back into one token only if training learned them). Before that, a text is cut
into words by GPT-2's regular expression, with its Unicode classes spelled out as ``tokenizers``'
Oniguruma build has them.

* :mod:`toktools.models.bpe.byte_symbols` — the 256-entry byte <-> symbol map (GPT-2's
  ``bytes_to_unicode``);
* :mod:`toktools.models.bpe.bytelevel` — the GPT-2 split, and both together for training.

This module is the front door: it re-exports the public names, and nothing inside toktools
imports it.
"""

from __future__ import annotations

from toktools.models.bpe.byte_symbols import (
    ALPHABET,
    BYTE_TO_SYMBOL,
    SYMBOL_TO_BYTE,
    bytes_to_symbols,
    is_byte_symbols,
    symbols_to_bytes,
    text_to_symbols,
)
from toktools.models.bpe.bytelevel import (
    ByteViewRow,
    byte_view,
    pieces_of_lines,
    prefixed,
    split,
    split_lines,
    splitters,
    training_pieces,
)

__all__ = [
    "ALPHABET",
    "BYTE_TO_SYMBOL",
    "SYMBOL_TO_BYTE",
    "ByteViewRow",
    "byte_view",
    "bytes_to_symbols",
    "is_byte_symbols",
    "pieces_of_lines",
    "prefixed",
    "split",
    "split_lines",
    "splitters",
    "symbols_to_bytes",
    "text_to_symbols",
    "training_pieces",
]
