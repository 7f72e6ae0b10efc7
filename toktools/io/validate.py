"""Checks on loaded tokenizer files: refuse at load time, in one line, what ``tokenizers`` refuses.

A wrongly typed field must not load and fail later (a ``TypeError`` at encode time, ``101 x 102``
printed for a string id, a ``MemoryError`` for a list as long as the largest id). ``tokenizers``
0.23.3 reads ids as ``u32`` and counts as ``usize``: it refuses string, float, boolean and
negative ids, ids of 2**32 or more in ``tokenizer.json``, and any field of the wrong JSON type.
(From a ``vocab.json`` it reads ids up to 2**64 - 1 but silently wraps them modulo 2**32, so two
tokens can end up with one id: we refuse those too, saying why.)

Every function here is self-contained and takes a ``source`` (a file name) for its message.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from itertools import chain
from typing import Any

from toktools.errors import ToktoolsError

MAX_ID = 2**32 - 1  # u32, as tokenizers stores ids
#: The deepest nesting of a ``tokenizer.json`` (objects and lists): serde_json, which reads it in
#: ``tokenizers``, refuses a 128th level ("recursion limit exceeded").
MAX_DEPTH = 127
_TOO_DEEP = "JSON nested too deeply to be a tokenizer file"


def parse_json(text: str, source: str) -> Any:
    """``json.loads`` with one-line errors, also for absurdly deep nesting (a RecursionError).
    Numbers with a fraction or an exponent are read as ``tokenizers`` reads them
    (:mod:`toktools.io.serde_floats`), so a Unigram score is the one ``tokenizers`` holds."""
    from toktools.io.serde_floats import loads

    try:
        return loads(text)
    except json.JSONDecodeError as err:
        raise ToktoolsError(f"{source}: not valid JSON ({err.msg} at line {err.lineno}, column {err.colno})") from None
    except RecursionError:
        raise ToktoolsError(f"{source}: {_TOO_DEEP}") from None


def check_depth(document: object, source: str, flat: Iterable[object] = ()) -> None:
    """Refuse nesting deeper than :data:`MAX_DEPTH`, as ``tokenizers`` does, before anything
    recurses over the document (a ``Sequence`` 300 deep is a RecursionError otherwise). The walk
    is iterative; the containers in ``flat`` (a vocabulary, merges: checked flat elsewhere) are
    not entered."""
    skip = {id(value) for value in flat}
    stack: list[tuple[object, int]] = [(document, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ToktoolsError(f"{source}: {_TOO_DEEP} (more than {MAX_DEPTH} levels, the most tokenizers reads)")
        children = value.values() if isinstance(value, dict) else value
        for child in children:  # type: ignore[attr-defined]
            if isinstance(child, (dict, list)) and id(child) not in skip:
                stack.append((child, depth + 1))


def is_id(value: object) -> bool:
    """A valid token id: an integer (not a boolean) from 0 to 2**32 - 1."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_ID


def _describe_id_problem(value: object) -> str:
    if isinstance(value, bool) or not isinstance(value, int):
        return f"{type(value).__name__} {json.dumps(value, ensure_ascii=False)[:40]}"
    return f"{value}" + (" (tokenizers would wrap it modulo 2**32)" if value > MAX_ID else "")


def validate_vocab(vocab: object, source: str, field: str = "vocabulary") -> dict[str, int]:
    """A ``token -> id`` mapping whose ids are all integers from 0 to 2**32 - 1 (several tokens
    may share an id, as ``tokenizers`` allows). Nothing is allocated per id value."""
    if not isinstance(vocab, dict):
        raise ToktoolsError(
            f"{source}: the {field} must be a JSON object mapping tokens to ids, not {type(vocab).__name__}"
        )
    ids = vocab.values()
    if (
        set(map(type, vocab)) <= {str}
        and set(map(type, ids)) <= {int}
        and (not ids or 0 <= min(ids) <= max(ids) <= MAX_ID)
    ):
        return vocab  # checked in C calls; the loop below only names the first bad entry
    for token, token_id in vocab.items():
        if not isinstance(token, str):
            raise ToktoolsError(f"{source}: {field} token {token!r} is not a string")
        if not is_id(token_id):
            raise ToktoolsError(
                f"{source}: {field} token {token!r} has id {_describe_id_problem(token_id)}; "
                f"ids must be integers from 0 to {MAX_ID}"
            )
    return vocab


def merge_pairs(merges: list[Any]) -> list[tuple[str, str]] | None:
    """``"a b"`` strings or ``["a", "b"]`` lists as pairs when the list is of one kind and every
    entry a pair of strings, checked in C calls (``map``, type sets); else None, and the caller
    goes entry by entry to name the first bad one."""
    kinds = set(map(type, merges))
    split = [m.split(" ") for m in merges] if kinds == {str} else merges if kinds == {list} else None
    if split is not None and set(map(len, split)) <= {2} and set(map(type, chain.from_iterable(split))) <= {str}:
        return list(map(tuple, split))  # type: ignore[arg-type]
    return None


def validate_merges(merges: object, source: str) -> list[tuple[str, str]]:
    """``tokenizer.json`` merges: ``"a b"`` strings or ``["a", "b"]`` pairs, as pairs."""
    if not isinstance(merges, list):
        raise ToktoolsError(f"{source}: model.merges must be a list, not {type(merges).__name__}")
    checked = merge_pairs(merges)
    if checked is not None:
        return checked
    pairs = []
    for number, merge in enumerate(merges, start=1):
        parts = merge.split(" ") if isinstance(merge, str) else merge
        if not (isinstance(parts, list) and len(parts) == 2 and all(isinstance(p, str) for p in parts)):
            raise ToktoolsError(
                f"{source}: merge {number} is not a pair of tokens: {json.dumps(merge, ensure_ascii=False)[:60]}"
            )
        pairs.append((parts[0], parts[1]))
    return pairs


# ---------------------------------------------------------------------------------------------
# tokenizer.json: the type of every field we read
# ---------------------------------------------------------------------------------------------


def _kind(value: object) -> str:
    return (
        "null"
        if value is None
        else {
            bool: "a boolean",
            int: "an integer",
            float: "a number",
            str: "a string",
            list: "a list",
            dict: "an object",
        }.get(type(value), type(value).__name__)
    )


def _fail(source: str, path: str, expected: str, value: object) -> None:
    shown = json.dumps(value, ensure_ascii=False)
    shown = shown if len(shown) <= 40 else shown[:37] + "..."
    raise ToktoolsError(f"{source}: {path} must be {expected}, got {shown}")


def _count(source: str, path: str, value: object, optional: bool = False) -> None:
    """``usize``: a non-negative integer."""
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        _fail(source, path, "a non-negative integer", value)


def _u32(source: str, path: str, value: object) -> None:
    if not is_id(value):
        _fail(source, path, f"an integer from 0 to {MAX_ID}", value)


def _string(source: str, path: str, value: object, optional: bool = False) -> None:
    if not (isinstance(value, str) or (optional and value is None)):
        _fail(source, path, "a string" + (" or null" if optional else ""), value)


def _boolean(source: str, path: str, value: object, optional: bool = False) -> None:
    if not (isinstance(value, bool) or (optional and value is None)):
        _fail(source, path, "true or false" + (" or null" if optional else ""), value)


def _choice(source: str, path: str, value: object, choices: tuple[str, ...]) -> None:
    if value not in choices:
        _fail(source, path, "one of " + ", ".join(choices), value)


def _object(source: str, path: str, value: object, optional: bool = True) -> Mapping[str, Any]:
    if value is None and optional:
        return {}
    if not isinstance(value, dict):
        _fail(source, path, "an object" + (" or null" if optional else ""), value)
    return value  # type: ignore[return-value]


#: Fields of normalizers, pre-tokenizers, post-processors and decoders whose type we rely on.
_PART_BOOLEANS = (
    "lowercase",
    "clean_text",
    "handle_chinese_chars",
    "add_prefix_space",
    "trim_offsets",
    "use_regex",
    "invert",
    "cleanup",
)
_PART_OPTIONAL_BOOLEANS = ("strip_accents",)
_PART_STRINGS = ("prefix", "suffix", "content", "replacement", "prepend")


def _part(source: str, path: str, node: object) -> None:
    """A normalizer / pre-tokenizer / post-processor / decoder node (and its ``Sequence`` items)."""
    part = _object(source, path, node)
    if not part:
        return
    _string(source, f"{path}.type", part.get("type"))
    for key in _PART_BOOLEANS:
        if key in part:
            _boolean(source, f"{path}.{key}", part[key])
    for key in _PART_OPTIONAL_BOOLEANS:
        if key in part:
            _boolean(source, f"{path}.{key}", part[key], optional=True)
    for key in _PART_STRINGS:
        if key in part:
            _string(source, f"{path}.{key}", part[key])
    for key in ("cls", "sep"):  # BertProcessing / RobertaProcessing: [token, id]
        if key in part:
            pair = part[key]
            if not (isinstance(pair, list) and len(pair) == 2):
                _fail(source, f"{path}.{key}", "a [token, id] pair", pair)
            _string(source, f"{path}.{key}[0]", pair[0])
            _u32(source, f"{path}.{key}[1]", pair[1])
    for key in ("normalizers", "pretokenizers", "processors", "decoders"):
        if key in part:
            items = part[key]
            if not isinstance(items, list):
                _fail(source, f"{path}.{key}", "a list", items)
            for index, item in enumerate(items):
                _part(source, f"{path}.{key}[{index}]", item)


def validate_tokenizer_json(document: object, source: str) -> dict[str, Any]:
    """Check the type of every field of a parsed ``tokenizer.json`` that toktools reads, the
    way ``tokenizers``' deserializer does; return the document unchanged."""
    if not isinstance(document, dict):
        raise ToktoolsError(f"{source}: a tokenizer.json holds a JSON object, not {_kind(document)}")
    model = document.get("model")
    flat = []  # the model's large flat lists, checked flat below
    if isinstance(model, dict):
        flat = [
            model[key]
            for key in ("vocab", "merges")
            if isinstance(model.get(key), (dict, list)) and (key != "vocab" or _vocab_is_checked(model))
        ]
    check_depth(document, source, flat)
    truncation = _object(source, "truncation", document.get("truncation"))
    if truncation:
        _count(source, "truncation.max_length", truncation.get("max_length"))
        if "stride" in truncation:
            _count(source, "truncation.stride", truncation["stride"])
            max_length, stride = truncation["max_length"], truncation["stride"]
            if 0 < max_length <= stride:  # tokenizers panics at the first long input
                raise ToktoolsError(
                    f"{source}: truncation.stride ({stride}) must be smaller than truncation.max_length ({max_length})"
                )
        if "strategy" in truncation:
            _choice(source, "truncation.strategy", truncation["strategy"], ("LongestFirst", "OnlyFirst", "OnlySecond"))
        if "direction" in truncation:
            _choice(source, "truncation.direction", truncation["direction"], ("Left", "Right"))
    padding = _object(source, "padding", document.get("padding"))
    if padding:
        strategy = padding.get("strategy", "BatchLongest")
        if isinstance(strategy, dict) and set(strategy) == {"Fixed"}:
            _count(source, "padding.strategy.Fixed", strategy["Fixed"])
        elif strategy != "BatchLongest":
            _fail(source, "padding.strategy", '"BatchLongest" or {"Fixed": length}', strategy)
        if "direction" in padding:
            _choice(source, "padding.direction", padding["direction"], ("Left", "Right"))
        if "pad_to_multiple_of" in padding:
            _count(source, "padding.pad_to_multiple_of", padding["pad_to_multiple_of"], optional=True)
        for key in ("pad_id", "pad_type_id"):
            if key in padding:
                _u32(source, f"padding.{key}", padding[key])
        if "pad_token" in padding:
            _string(source, "padding.pad_token", padding["pad_token"])
    added = document.get("added_tokens")
    if added is not None:
        if not isinstance(added, list):
            _fail(source, "added_tokens", "a list", added)
        for index, token in enumerate(added):
            where = f"added_tokens[{index}]"
            token = _object(source, where, token, optional=False)
            _u32(source, f"{where}.id", token.get("id"))
            _string(source, f"{where}.content", token.get("content"))
            for key in ("single_word", "lstrip", "rstrip", "normalized", "special"):
                if key in token:
                    _boolean(source, f"{where}.{key}", token[key])
    model = _object(source, "model", document.get("model"), optional=False)
    _string(source, "model.type", model.get("type"), optional=True)
    if isinstance(model.get("vocab"), dict) or model.get("type") in ("BPE", "WordPiece", "WordLevel"):
        validate_vocab(model.get("vocab"), source, "model.vocab")
    elif _vocab_is_checked(model):
        _unigram_vocab(source, model)
    if "merges" in model:
        validate_merges(model["merges"], source)
    for key in ("unk_token", "continuing_subword_prefix", "end_of_word_suffix"):
        if key in model:
            _string(source, f"model.{key}", model[key], optional=True)
    if "max_input_chars_per_word" in model:
        _count(source, "model.max_input_chars_per_word", model["max_input_chars_per_word"])
    for key in ("fuse_unk", "byte_fallback", "ignore_merges"):
        if key in model:
            _boolean(source, f"model.{key}", model[key])
    if model.get("dropout") is not None and (
        isinstance(model["dropout"], bool) or not isinstance(model["dropout"], (int, float))
    ):
        _fail(source, "model.dropout", "a number or null", model["dropout"])
    for key in ("normalizer", "pre_tokenizer", "post_processor", "decoder"):
        _part(source, key, document.get(key))
    return document


def _vocab_is_checked(model: Mapping[str, Any]) -> bool:
    """Whether :func:`validate_tokenizer_json` checks ``model.vocab`` entry by entry."""
    return isinstance(model.get("vocab"), dict) or model.get("type") in ("BPE", "WordPiece", "WordLevel", "Unigram")


def _unigram_vocab(source: str, model: Mapping[str, Any]) -> None:
    """A Unigram vocabulary: a non-empty list of ``[piece, score]`` (``tokenizers`` panics on an
    empty one), and an ``unk_id`` inside it."""
    vocab = model.get("vocab")
    if not isinstance(vocab, list):
        _fail(source, "model.vocab", "a list of [piece, score]", vocab)
    if not vocab:
        raise ToktoolsError(f"{source}: model.vocab is empty; a Unigram model needs at least one piece")
    for index, entry in enumerate(vocab):
        if not (
            isinstance(entry, list)
            and len(entry) == 2
            and isinstance(entry[0], str)
            and isinstance(entry[1], (int, float))
            and not isinstance(entry[1], bool)
        ):
            _fail(source, f"model.vocab[{index}]", "a [piece, score] pair", entry)
    unk_id = model.get("unk_id")
    if unk_id is not None:
        _count(source, "model.unk_id", unk_id)
        if unk_id >= len(vocab):
            raise ToktoolsError(f"{source}: model.unk_id {unk_id} is not in the vocabulary of {len(vocab)} pieces")


#: A sentencepiece byte piece, as sentencepiece spells the 256 of them (``PieceToByte``).
_BYTE_PIECE = re.compile(r"<0x[0-9A-F]{2}>")


def validate_byte_pieces(byte_pieces: Iterable[tuple[int, str]], source: str) -> None:
    """The ``(id, piece)`` of a ``.model``'s pieces of type BYTE: each must be ``<0xNN>`` (two
    upper-case hex digits), or sentencepiece refuses the model ("byte piece ... is invalid")."""
    for piece_id, piece in byte_pieces:
        if not _BYTE_PIECE.fullmatch(piece):
            raise ToktoolsError(
                f"{source}: byte piece {piece!r} (id {piece_id}) is invalid; byte pieces are <0x00> to <0xFF>"
            )
