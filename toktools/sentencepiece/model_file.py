"""Read and write sentencepiece ``.model`` files (the ``ModelProto`` protobuf) in pure Python.

Only the wire format is needed: varint keys ``field << 3 | wire_type``, varints, 32/64-bit
little-endian values and length-delimited bytes. Known fields are decoded by a small schema
(numbers and defaults from sentencepiece's ``sentencepiece_model.proto``); unknown fields are
kept as raw bytes, so reading then writing a file gives back the same bytes.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toktools.errors import ToktoolsError

# SentencePiece.Type
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6
TYPE_NAMES = {
    NORMAL: "NORMAL",
    UNKNOWN: "UNKNOWN",
    CONTROL: "CONTROL",
    USER_DEFINED: "USER_DEFINED",
    UNUSED: "UNUSED",
    BYTE: "BYTE",
}
# TrainerSpec.ModelType
UNIGRAM, BPE, WORD, CHAR = 1, 2, 3, 4
MODEL_TYPE_NAMES = {UNIGRAM: "unigram", BPE: "bpe", WORD: "word", CHAR: "char"}

# field number -> (name, kind, default); kind "s" string, "b" bytes, "f" float, "i" int32,
# "u" uint64, "?" bool; a trailing "*" marks a repeated field.
TRAINER_FIELDS: dict[int, tuple[str, str, Any]] = {
    1: ("input", "s*", None),
    7: ("input_format", "s", ""),
    2: ("model_prefix", "s", ""),
    3: ("model_type", "i", UNIGRAM),
    4: ("vocab_size", "i", 8000),
    5: ("accept_language", "s*", None),
    6: ("self_test_sample_size", "i", 0),
    50: ("enable_differential_privacy", "?", False),
    51: ("differential_privacy_noise_level", "f", 0.0),
    52: ("differential_privacy_clipping_threshold", "u", 0),
    10: ("character_coverage", "f", 0.9995),
    11: ("input_sentence_size", "u", 0),
    19: ("shuffle_input_sentence", "?", True),
    12: ("mining_sentence_size", "i", 0),
    13: ("training_sentence_size", "i", 0),
    14: ("seed_sentencepiece_size", "i", 1000000),
    15: ("shrinking_factor", "f", 0.75),
    18: ("max_sentence_length", "i", 4192),
    16: ("num_threads", "i", 16),
    17: ("num_sub_iterations", "i", 2),
    20: ("max_sentencepiece_length", "i", 16),
    21: ("split_by_unicode_script", "?", True),
    23: ("split_by_number", "?", True),
    22: ("split_by_whitespace", "?", True),
    24: ("treat_whitespace_as_suffix", "?", False),
    26: ("allow_whitespace_only_pieces", "?", False),
    25: ("split_digits", "?", False),
    53: ("pretokenization_delimiter", "s", ""),
    30: ("control_symbols", "s*", None),
    31: ("user_defined_symbols", "s*", None),
    36: ("required_chars", "s", ""),
    35: ("byte_fallback", "?", False),
    32: ("vocabulary_output_piece_score", "?", True),
    33: ("hard_vocab_limit", "?", True),
    34: ("use_all_vocab", "?", False),
    40: ("unk_id", "i", 0),
    41: ("bos_id", "i", 1),
    42: ("eos_id", "i", 2),
    43: ("pad_id", "i", -1),
    45: ("unk_piece", "s", "<unk>"),
    46: ("bos_piece", "s", "<s>"),
    47: ("eos_piece", "s", "</s>"),
    48: ("pad_piece", "s", "<pad>"),
    44: ("unk_surface", "s", " \u2047 "),
    49: ("train_extremely_large_corpus", "?", False),
    54: ("seed_sentencepieces_file", "s", ""),
}
NORMALIZER_FIELDS: dict[int, tuple[str, str, Any]] = {
    1: ("name", "s", ""),
    2: ("precompiled_charsmap", "b", b""),
    3: ("add_dummy_prefix", "?", True),
    4: ("remove_extra_whitespaces", "?", True),
    5: ("escape_whitespaces", "?", True),
    6: ("normalization_rule_tsv", "s", ""),
}
PIECE_FIELDS: dict[int, tuple[str, str, Any]] = {
    1: ("piece", "s", ""),
    2: ("score", "f", 0.0),
    3: ("type", "i", NORMAL),
}
_WIRE = {"s": 2, "b": 2, "f": 5, "i": 0, "u": 0, "?": 0}


class _Reader:
    """Walks one message's bytes; every error names the file and what was being read."""

    def __init__(self, data: bytes, where: str) -> None:
        self.data, self.pos, self.where = data, 0, where

    def fail(self, what: str) -> ToktoolsError:
        return ToktoolsError(f"{self.where}: not a sentencepiece model ({what} at byte {self.pos})")

    def varint(self) -> int:
        result = shift = 0
        data = self.data
        while True:
            if self.pos >= len(data):
                raise self.fail("truncated varint")
            byte = data[self.pos]
            self.pos += 1
            result |= (byte & 0x7F) << shift
            if byte < 0x80:
                return result
            shift += 7
            if shift > 63:
                raise self.fail("varint longer than 10 bytes")

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise self.fail("truncated field")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def fields(self):
        """``(number, wire_type, raw value)`` for every field, in file order."""
        while self.pos < len(self.data):
            key = self.varint()
            number, wire = key >> 3, key & 7
            if number == 0:
                raise self.fail("field number 0")
            if wire == 0:
                yield number, wire, self.varint()
            elif wire == 1:
                yield number, wire, self.take(8)
            elif wire == 2:
                yield number, wire, self.take(self.varint())
            elif wire == 5:
                yield number, wire, self.take(4)
            else:
                raise self.fail(f"unsupported wire type {wire}")


_SCORE = struct.Struct("<f")


def _quick_piece(raw: bytes) -> tuple[SentencePiece, tuple[bool, bool]] | None:
    """A piece in the layout sentencepiece writes -- ``piece`` (under 128 bytes), ``score``,
    then an optional ``type`` below 128 -- read without the general parser (a 30K model loads
    in a tenth of the time); None for anything else, which :meth:`Message.parse` then reads
    (and rejects with its message if it must)."""
    if len(raw) < 2 or raw[0] != 0x0A or raw[1] >= 0x80:
        return None
    end = 2 + raw[1]
    tail = len(raw) - end
    if tail not in (5, 7) or raw[end] != 0x15:
        return None
    kind = NORMAL
    if tail == 7:
        if raw[end + 5] != 0x18 or raw[end + 6] >= 0x80 or raw[end + 6] not in TYPE_NAMES:
            return None
        kind = raw[end + 6]
    try:
        text = raw[2:end].decode("utf-8")
    except UnicodeDecodeError:
        return None
    return SentencePiece(text, _SCORE.unpack_from(raw, end + 1)[0], kind), (True, tail == 7)


def _int32(value: int) -> int:
    value &= (1 << 64) - 1
    return value - (1 << 64) if value >= 1 << 63 else value


@dataclass
class Message:
    """One decoded message: known fields by name (only those present in the file), the rest raw.

    ``get(name)`` falls back to the proto2 default, as sentencepiece does.
    """

    schema: dict[int, tuple[str, str, Any]]
    values: dict[str, Any] = field(default_factory=dict)
    unknown: list[tuple[int, int, Any]] = field(default_factory=list)

    def get(self, name: str) -> Any:
        if name in self.values:
            return self.values[name]
        for fname, kind, default in self.schema.values():
            if fname == name:
                return [] if kind.endswith("*") else default
        raise KeyError(name)

    def set(self, name: str, value: Any) -> None:
        if not any(fname == name for fname, _, _ in self.schema.values()):
            raise KeyError(name)
        self.values[name] = value

    @classmethod
    def parse(cls, data: bytes, schema: dict[int, tuple[str, str, Any]], where: str) -> Message:
        reader = _Reader(data, where)
        msg = cls(schema)
        for number, wire, raw in reader.fields():
            spec = schema.get(number)
            if spec is None or _WIRE[spec[1].rstrip("*")] != wire:
                msg.unknown.append((number, wire, raw))
                continue
            name, kind, _ = spec
            base = kind.rstrip("*")
            if base == "s":
                try:
                    value: Any = raw.decode("utf-8")
                except UnicodeDecodeError:
                    raise ToktoolsError(f"{where}: field {name!r} is not valid UTF-8 ({raw[:20]!r})") from None
            elif base == "b":
                value = bytes(raw)
            elif base == "f":
                value = struct.unpack("<f", raw)[0]
            elif base == "i":
                value = _int32(raw)
            elif base == "?":
                value = raw != 0
            else:
                value = raw
            if kind.endswith("*"):
                msg.values.setdefault(name, []).append(value)
            else:
                msg.values[name] = value
        return msg

    def serialize(self) -> bytes:
        """Known fields in field-number order (as protobuf-C++ writes them), then unknown ones."""
        out = bytearray()
        for number in sorted(self.schema):
            name, kind, _ = self.schema[number]
            if name not in self.values:
                continue
            base = kind.rstrip("*")
            values = self.values[name] if kind.endswith("*") else [self.values[name]]
            for value in values:
                _put_varint(out, number << 3 | _WIRE[base])
                if base in "sb":
                    raw = value.encode("utf-8") if base == "s" else bytes(value)
                    _put_varint(out, len(raw))
                    out += raw
                elif base == "f":
                    out += struct.pack("<f", value)
                elif base == "?":
                    _put_varint(out, 1 if value else 0)
                else:
                    _put_varint(out, int(value) & ((1 << 64) - 1))
        for number, wire, raw in self.unknown:
            _put_field(out, number, wire, raw)
        return bytes(out)


def _put_varint(out: bytearray, value: int) -> None:
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)


def _put_field(out: bytearray, number: int, wire: int, raw: Any) -> None:
    _put_varint(out, number << 3 | wire)
    if wire == 0:
        _put_varint(out, raw)
    elif wire == 2:
        _put_varint(out, len(raw))
        out += raw
    else:
        out += raw


@dataclass
class SentencePiece:
    piece: str
    score: float = 0.0
    type: int = NORMAL


@dataclass
class SentencePieceModel:
    """A ``ModelProto``: the pieces (id = position), the trainer and normaliser specs."""

    pieces: list[SentencePiece]
    trainer_spec: Message = field(default_factory=lambda: Message(TRAINER_FIELDS))
    normalizer_spec: Message = field(default_factory=lambda: Message(NORMALIZER_FIELDS))
    denormalizer_spec: Message | None = None
    #: (field, wire type, raw) of ModelProto fields kept verbatim (self_test_data, extensions)
    other: list[tuple[int, int, Any]] = field(default_factory=list)
    #: per piece: whether score/type were present in the file (for byte-exact rewriting)
    _present: list[tuple[bool, bool]] = field(default_factory=list, repr=False)

    # -- convenient views -------------------------------------------------------------------
    @property
    def model_type(self) -> str:
        return MODEL_TYPE_NAMES.get(self.trainer_spec.get("model_type"), str(self.trainer_spec.get("model_type")))

    @property
    def byte_fallback(self) -> bool:
        return bool(self.trainer_spec.get("byte_fallback"))

    def piece_id(self, piece: str, *types: int) -> int | None:
        for i, p in enumerate(self.pieces):
            if p.piece == piece and (not types or p.type in types):
                return i
        return None

    def special_id(self, which: str) -> int | None:
        """Id of ``unk``/``bos``/``eos``/``pad`` when the model has it (sentencepiece looks the
        piece up by its ``*_piece`` name; a negative ``*_id`` means disabled)."""
        if self.trainer_spec.get(f"{which}_id") < 0:
            return None
        return self.piece_id(self.trainer_spec.get(f"{which}_piece"))

    @property
    def unk_id(self) -> int | None:
        for i, p in enumerate(self.pieces):
            if p.type == UNKNOWN:
                return i
        return None

    # -- bytes ------------------------------------------------------------------------------
    @classmethod
    def from_bytes(cls, data: bytes, where: str = "model") -> SentencePieceModel:
        reader = _Reader(data, where)
        pieces: list[SentencePiece] = []
        present: list[tuple[bool, bool]] = []
        model = cls(pieces)
        seen_trainer = False
        for number, wire, raw in reader.fields():
            if number == 1 and wire == 2:
                quick = _quick_piece(raw)
                if quick is not None:
                    pieces.append(quick[0])
                    present.append(quick[1])
                    continue
                msg = Message.parse(raw, PIECE_FIELDS, f"{where}: piece {len(pieces)}")
                if "piece" not in msg.values:
                    raise ToktoolsError(f"{where}: piece {len(pieces)} has no text: not a sentencepiece model")
                kind = msg.get("type")
                if kind not in TYPE_NAMES:
                    raise ToktoolsError(f"{where}: piece {len(pieces)} has an unknown type {kind}")
                pieces.append(SentencePiece(msg.get("piece"), msg.get("score"), kind))
                present.append(("score" in msg.values, "type" in msg.values))
            elif number == 2 and wire == 2:
                model.trainer_spec = Message.parse(raw, TRAINER_FIELDS, f"{where}: trainer_spec")
                seen_trainer = True
            elif number == 3 and wire == 2:
                model.normalizer_spec = Message.parse(raw, NORMALIZER_FIELDS, f"{where}: normalizer_spec")
            elif number == 5 and wire == 2:
                model.denormalizer_spec = Message.parse(raw, NORMALIZER_FIELDS, f"{where}: denormalizer_spec")
            elif number in (1, 2, 3, 5):
                raise reader.fail(f"field {number} has wire type {wire}")
            else:
                model.other.append((number, wire, raw))
        if not pieces:
            raise ToktoolsError(f"{where}: not a sentencepiece model (no pieces)")
        model._present = present
        if seen_trainer and model.model_type not in ("unigram", "bpe"):
            raise ToktoolsError(
                f"{where}: sentencepiece model type {model.model_type!r} is not supported "
                "(toktools reads unigram and bpe models)"
            )
        return model

    def to_bytes(self) -> bytes:
        out = bytearray()
        for k, p in enumerate(self.pieces):
            has_score, has_type = self._present[k] if k < len(self._present) else (True, p.type != NORMAL)
            msg = Message(PIECE_FIELDS, {"piece": p.piece})
            if has_score or p.score != 0.0:
                msg.values["score"] = p.score
            if has_type or p.type != NORMAL:
                msg.values["type"] = p.type
            _put_field(out, 1, 2, msg.serialize())
        _put_field(out, 2, 2, self.trainer_spec.serialize())
        _put_field(out, 3, 2, self.normalizer_spec.serialize())
        for number, wire, raw in self.other:
            if number == 4:
                _put_field(out, number, wire, raw)
        if self.denormalizer_spec is not None:
            _put_field(out, 5, 2, self.denormalizer_spec.serialize())
        for number, wire, raw in self.other:
            if number != 4:
                _put_field(out, number, wire, raw)
        return bytes(out)


def read_model(path: str | Path) -> SentencePieceModel:
    """Parse a ``.model`` file; bad input raises one :class:`ToktoolsError` line."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ToktoolsError(f"{path}: cannot read ({exc.strerror})") from None
    return SentencePieceModel.from_bytes(data, str(path))


def write_model(model: SentencePieceModel, path: str | Path) -> None:
    """Write atomically, as every output is written (:mod:`toktools.io.outputs`)."""
    from toktools.io.outputs import atomic_file

    data = model.to_bytes()
    with atomic_file(path, binary=True) as handle:
        handle.write(data)
