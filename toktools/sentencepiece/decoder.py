"""sentencepiece's ``DecodeIds`` as a decoder part, for tokenizers loaded from a ``.model`` file.

The ``tokenizer.json`` chain transformers writes for a ``.model`` (``Replace("▁", " ")``,
``ByteFallback``, ``Fuse``, ``Strip(" ", 1, 0)``) decodes most ids as sentencepiece does, but not
all (``SentencePieceProcessor::Decode``):

* the unknown piece is the model's ``unk_surface`` (`` ⁇ `` by default), not ``<unk>``;
* at the start of the text a piece loses its leading ``▁`` (only while nothing has been written;
  with ``remove_extra_whitespaces`` every leading ``▁``-only piece goes too);
* a run of byte pieces is decoded character by character: an invalid byte is one U+FFFD and the
  valid characters around it stay (``ByteFallback`` turns the whole run into U+FFFDs).

Control pieces are special added tokens, dropped before the decoder when special tokens are
skipped (the default, and what sentencepiece always does); kept, they are written as they are.
The part has no ``tokenizer.json`` form of its own: it writes the ``tokenizers`` chain it stands
for, so a converted ``tokenizer.json`` still loads in ``tokenizers``.
"""

from __future__ import annotations

from typing import Any

from toktools.errors import ToktoolsError
from toktools.parts.base import Decoder

SPACE = "\u2581"


class SentencePieceDecoder(Decoder):
    """Token strings → text exactly as ``SentencePieceProcessor.decode`` (see the module docstring)."""

    type = "SentencePiece"

    def __init__(
        self,
        *,
        unk_piece: str | None,
        unk_surface: str,
        byte_pieces: dict[str, int],
        add_dummy_prefix: bool,
        remove_extra_whitespaces: bool,
        chain: Decoder,
    ) -> None:
        self.unk_piece = unk_piece
        self.unk_surface = unk_surface
        self.byte_pieces = byte_pieces  # "<0xNN>" -> NN, for the pieces of type BYTE
        self.add_dummy_prefix = add_dummy_prefix
        self.remove_extra_whitespaces = remove_extra_whitespaces
        self.chain = chain  # the tokenizers decoder it stands for, in tokenizer.json and reports

    @classmethod
    def for_model(cls, model: Any, chain: Decoder) -> SentencePieceDecoder:
        """The decoder of a :class:`toktools.sentencepiece.model_file.SentencePieceModel`; ``chain`` is
        the ``tokenizers`` decoder written for it in ``tokenizer.json``."""
        from toktools.sentencepiece.model_file import BYTE, UNKNOWN

        spec = model.normalizer_spec
        unk = next((p.piece for p in model.pieces if p.type == UNKNOWN), None)
        byte_pieces = {
            p.piece: int(p.piece[3:5], 16)
            for p in model.pieces
            if p.type == BYTE and len(p.piece) == 6 and p.piece.startswith("<0x")
        }
        return cls(
            unk_piece=unk,
            unk_surface=model.trainer_spec.get("unk_surface"),
            byte_pieces=byte_pieces,
            add_dummy_prefix=bool(spec.get("add_dummy_prefix")),
            remove_extra_whitespaces=bool(spec.get("remove_extra_whitespaces")),
            chain=chain,
        )

    @classmethod
    def from_json(cls, node: dict[str, Any]) -> SentencePieceDecoder:
        raise ToktoolsError("the sentencepiece decoder is built from a .model file, not from tokenizer.json")

    def to_json(self) -> dict[str, Any]:
        return self.chain.to_json()

    def spelling(self) -> dict[str, Any]:
        return self.chain.spelling()

    def decode_chain(self, tokens: list[str]) -> list[str]:
        text: list[str] = []
        written = False  # anything non-empty in ``text``
        is_bos_ws = True  # a leading ▁ may still be consumed
        bos_ws_seen = False
        run = bytearray()
        strip_first = self.add_dummy_prefix or self.remove_extra_whitespaces
        for token in tokens:
            byte = self.byte_pieces.get(token)
            if byte is not None:
                run.append(byte)
                continue
            if run:
                surface = _decode_bytes(bytes(run))
                run.clear()
                text.append(surface)
                written = written or bool(surface)
            if bos_ws_seen or written:
                is_bos_ws = False
            if token == self.unk_piece:
                piece, bos_ws_seen = self.unk_surface, False
            else:
                piece, bos_ws_seen = token, False
                if is_bos_ws and strip_first:
                    if piece.startswith(SPACE):
                        piece = piece[1:]
                        bos_ws_seen = not self.remove_extra_whitespaces
                piece = piece.replace(SPACE, " ")
            text.append(piece)
            written = written or bool(piece)
        if run:
            text.append(_decode_bytes(bytes(run)))
        return ["".join(text)]


def _decode_bytes(data: bytes) -> str:
    """UTF-8, one character at a time; a byte that starts no valid character is one U+FFFD
    (sentencepiece's ``ProcessBytePieces``; Python's ``errors="replace"`` would merge some)."""
    out: list[str] = []
    i = 0
    n = len(data)
    while i < n:
        lead = data[i]
        size = (
            1
            if lead < 0x80
            else 2
            if 0xC2 <= lead < 0xE0
            else 3
            if 0xE0 <= lead < 0xF0
            else (4 if 0xF0 <= lead < 0xF5 else 0)
        )
        if size:
            try:
                out.append(data[i : i + size].decode("utf-8"))
                i += size
                continue
            except UnicodeDecodeError:
                pass
        out.append("\ufffd")
        i += 1
    return "".join(out)
