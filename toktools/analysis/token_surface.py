"""The surface of a token: the text it stands for, its bytes, and whether it continues a word.

Byte-level tokens are decoded from their byte symbols (``ĠHello`` → ``" Hello"``); a byte-level
token whose bytes are not valid UTF-8 on their own (``æĪ`` = E6 88) has no text, only bytes
("partial bytes"). WordPiece continuation pieces lose their prefix (``##ing`` → ``ing``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from toktools.analysis import token_view
from toktools.analysis.scripts import ScriptName, script_of_text

__all__ = ["Surface", "hex_bytes", "script_of_surface", "surface_of"]


@dataclass(frozen=True)
class Surface:
    """What one token stands for."""

    text: str | None  # None: bytes that are not valid UTF-8 on their own
    raw: bytes
    continuation: bool  # a "##" piece (or a BPE model's continuing-subword piece)


def surface_of(tokenizer: Any, token: str) -> Surface:
    """The surface of ``token`` (asked of :mod:`toktools.analysis.token_view`)."""
    raw = token_view.token_bytes(tokenizer, token)
    try:
        text: str | None = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    return Surface(text, raw, token_view.is_continuation(tokenizer, token))


def script_of_surface(surface: Surface) -> ScriptName:
    """The script of the token's text, or "Partial bytes" when it has none."""
    return "Partial bytes" if surface.text is None else script_of_text(surface.text)


def hex_bytes(raw: bytes) -> str:
    """``E6 88 91``: bytes as upper-case hex pairs."""
    return " ".join(f"{b:02X}" for b in raw)
