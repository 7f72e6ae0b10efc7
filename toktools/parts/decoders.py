"""decoders: see toktools.parts.base for the interface."""

from __future__ import annotations

from typing import Any

from toktools.errors import ToktoolsError
from toktools.models.bpe.bytelevel import is_byte_symbols, symbols_to_bytes
from toktools.models.wordpiece.model import wordpiece_decode_chain
from toktools.parts._fields import ByteLevelOptions, char_field, count, field, spelling_of
from toktools.parts._onig import OnigPattern, pattern_from_json, pattern_to_json
from toktools.parts.base import Decoder, Piece, TypeOnly  # noqa: F401 (used by the other parts)
from toktools.parts.registry import register

# ---------------------------------------------------------------------------------------------
# BERT and byte-level parts (the presets' own)
# ---------------------------------------------------------------------------------------------


@register
class ByteLevel(ByteLevelOptions, Decoder):
    """Byte symbols back to bytes (a token with any other character keeps its own UTF-8), then
    UTF-8 with replacement, as one string. The three options only round-trip the node."""

    def decode_chain(self, tokens: list[str]) -> list[str]:
        data = bytearray()
        for token in tokens:
            data += symbols_to_bytes(token) if is_byte_symbols(token) else token.encode("utf-8")
        return [data.decode("utf-8", errors="replace")]


@register
class WordPiece(Decoder):
    """Glue ``##`` pieces to the previous token, a space before the others, then BERT's cleanup."""

    type = "WordPiece"

    def __init__(self, prefix: str = "##", cleanup: bool = True) -> None:
        self.prefix = prefix
        self.cleanup = cleanup

    @classmethod
    def from_json(cls, node: dict[str, Any]) -> WordPiece:
        prefix = node.get("prefix", "##")
        if not isinstance(prefix, str):
            raise ToktoolsError(f"tokenizer.json: WordPiece decoder prefix must be a string, not {prefix!r}")
        return cls(prefix, bool(node.get("cleanup", True)))

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "prefix": self.prefix, "cleanup": self.cleanup}

    def spelling(self) -> dict[str, Any]:
        return {"continuing_subword_prefix": self.prefix}

    def decode_chain(self, tokens: list[str]) -> list[str]:
        return wordpiece_decode_chain(tokens, self.prefix, self.cleanup)


# ---------------------------------------------------------------------------------------------
# The other tokenizers parts
# ---------------------------------------------------------------------------------------------
# Metaspace, BPEDecoder, ByteFallback, Fuse, Strip, Replace and Sequence: decode_chain equal to
# tokenizers 0.23.3 (token list in, token list out; a Sequence feeds each decoder the last one's).


@register
class Metaspace(Decoder):
    """▁ becomes a space; in the first token every ▁ is dropped unless ``prepend_scheme`` is
    ``never`` (the pre-tokeniser added it)."""

    type = "Metaspace"

    def __init__(self, replacement: str = "\u2581", prepend_scheme: str = "always", split: bool = True) -> None:
        self.replacement, self.prepend_scheme, self.split = replacement, prepend_scheme, split

    @classmethod
    def from_json(cls, node: dict[str, Any]) -> Metaspace:
        from toktools.parts.pre_tokenizers import metaspace_fields

        return cls(*metaspace_fields(node, "decoder Metaspace"))

    def to_json(self) -> dict[str, Any]:
        return {
            "type": "Metaspace",
            "replacement": self.replacement,
            "prepend_scheme": self.prepend_scheme,
            "split": self.split,
        }

    def spelling(self) -> dict[str, Any]:
        return {"metaspace": self.replacement}

    def decode_chain(self, tokens: list[str]) -> list[str]:
        out = []
        for i, token in enumerate(tokens):
            if i == 0 and self.prepend_scheme != "never":
                out.append(token.replace(self.replacement, ""))
            else:
                out.append(token.replace(self.replacement, " "))
        return out


@register
class BPEDecoder(Decoder):
    """The end-of-word ``suffix`` becomes a space (nothing in the last token)."""

    type = "BPEDecoder"

    def __init__(self, suffix: str = "</w>") -> None:
        self.suffix = suffix

    @classmethod
    def from_json(cls, node: dict[str, Any]) -> BPEDecoder:
        return cls(field(node, "suffix", str, "decoder BPEDecoder"))

    def to_json(self) -> dict[str, Any]:
        return {"type": "BPEDecoder", "suffix": self.suffix}

    def decode_chain(self, tokens: list[str]) -> list[str]:
        last = len(tokens) - 1
        return [t.replace(self.suffix, "" if i == last else " ") if self.suffix else t for i, t in enumerate(tokens)]


def _fallback_byte(token: str) -> int | None:
    """The byte of a ``<0xNN>`` token (Rust ``u8::from_str_radix``, so ``<0x+F>`` is 15)."""
    raw = token.encode("utf-8")
    if len(raw) != 6 or not raw.startswith(b"<0x") or not raw.endswith(b">"):
        return None
    digits = raw[3:5]
    body = digits[1:] if digits[:1] == b"+" else digits
    if not body or any(b not in b"0123456789abcdefABCDEF" for b in body):
        return None
    return int(body, 16)


@register
class ByteFallback(TypeOnly, Decoder):
    """Runs of ``<0xNN>`` tokens become the text of their bytes; a run that is not valid UTF-8
    becomes one U+FFFD per token."""

    type = "ByteFallback"

    def decode_chain(self, tokens: list[str]) -> list[str]:
        out: list[str] = []
        run = bytearray()

        def flush() -> None:
            if run:
                try:
                    out.append(run.decode("utf-8"))
                except UnicodeDecodeError:
                    out.extend("\ufffd" for _ in run)
                run.clear()

        for token in tokens:
            byte = _fallback_byte(token)
            if byte is None:
                flush()
                out.append(token)
            else:
                run.append(byte)
        flush()
        return out


@register
class Fuse(TypeOnly, Decoder):
    """All tokens into one."""

    type = "Fuse"

    def decode_chain(self, tokens: list[str]) -> list[str]:
        return ["".join(tokens)]


@register
class Strip(Decoder):
    """Removes up to ``start`` leading and ``stop`` trailing ``content`` chars of each token."""

    type = "Strip"

    def __init__(self, content: str = " ", start: int = 0, stop: int = 0) -> None:
        self.content, self.start, self.stop = content, start, stop

    @classmethod
    def from_json(cls, node: dict[str, Any]) -> Strip:
        where = "decoder Strip"
        return cls(char_field(node, "content", where), count(node, "start", where), count(node, "stop", where))

    def to_json(self) -> dict[str, Any]:
        return {"type": "Strip", "content": self.content, "start": self.start, "stop": self.stop}

    def _one(self, token: str) -> str:
        start_cut = 0
        for i, ch in enumerate(token[: self.start]):
            if ch != self.content:
                break
            start_cut = i + 1
        stop_cut = len(token)
        for i in range(self.stop):
            index = len(token) - i - 1
            if index < 0:
                raise ToktoolsError(f"decoder Strip: cannot strip {self.stop} chars from {token!r}")
            if token[index] != self.content:
                break
            stop_cut = index
        if start_cut > stop_cut:  # tokenizers panics here
            raise ToktoolsError(f"decoder Strip: start and stop overlap in {token!r}")
        return token[start_cut:stop_cut]

    def decode_chain(self, tokens: list[str]) -> list[str]:
        return [self._one(t) for t in tokens]


@register
class Replace(Decoder):
    """Replaces every match of a string or Oniguruma regex in each token."""

    type = "Replace"

    def __init__(self, pattern: OnigPattern | str, content: str) -> None:
        self.pattern = pattern if isinstance(pattern, OnigPattern) else OnigPattern(pattern, literal=True)
        self.content = content

    @classmethod
    def from_json(cls, node: dict[str, Any]) -> Replace:
        where = "decoder Replace"
        if "pattern" not in node:
            raise ToktoolsError(f"{where}: missing field 'pattern'")
        return cls(pattern_from_json(node["pattern"], f"{where}: field 'pattern'"), field(node, "content", str, where))

    def to_json(self) -> dict[str, Any]:
        return {"type": "Replace", "pattern": pattern_to_json(self.pattern), "content": self.content}

    def decode_chain(self, tokens: list[str]) -> list[str]:
        out = []
        for token in tokens:
            parts = [self.content if is_match else token[s:e] for (s, e), is_match in self.pattern.find_matches(token)]
            out.append("".join(parts))
        return out


@register
class Sequence(Decoder):
    """Decoders chained: each gets the token list the previous one returned."""

    type = "Sequence"

    def __init__(self, decoders: list[Decoder]) -> None:
        self.decoders = list(decoders)

    @classmethod
    def from_json(cls, node: dict[str, Any]) -> Sequence:
        from toktools.parts.registry import parts_from_json

        return cls(
            parts_from_json(
                "decoder", field(node, "decoders", list, "decoder Sequence"), "decoder Sequence", "decoders"
            )
        )

    def to_json(self) -> dict[str, Any]:
        return {"type": "Sequence", "decoders": [d.to_json() for d in self.decoders]}

    def spelling(self) -> dict[str, Any]:
        return spelling_of(self.decoders)

    def decode_chain(self, tokens: list[str]) -> list[str]:
        for decoder in self.decoders:
            tokens = decoder.decode_chain(tokens)
        return tokens
