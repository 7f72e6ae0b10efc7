"""``vocab.json`` / ``merges.txt`` as ``tokenizers``' ``save_model`` writes them, and reading
text files with errors that name the file."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path

from toktools.errors import ToktoolsError

MERGES_HEADER = "#version: 0.2\n"


def dumps_vocab_json(vocab: Mapping[str, int]) -> str:
    """``vocab.json`` exactly as ``tokenizers``' ``save_model``: one line, keys in id order."""
    ordered = dict(sorted(vocab.items(), key=lambda item: item[1]))
    return json.dumps(ordered, ensure_ascii=False, separators=(",", ":"))


def dumps_merges_txt(merges: Iterable[tuple[str, str]]) -> str:
    """``merges.txt``: the version header, then ``left right`` per line, every line ending in ``\\n``."""
    return MERGES_HEADER + "".join(f"{a} {b}\n" for a, b in merges)


def loads_vocab_json(text: str, source: str = "vocab.json") -> dict[str, int]:
    """Parse a ``vocab.json`` (or OpenAI ``encoder.json``) with a readable error on garbage."""
    from toktools.io.validate import parse_json, validate_vocab

    return validate_vocab(parse_json(text, source), source)


def loads_merges_txt(text: str, source: str = "merges.txt") -> list[tuple[str, str]]:
    """Parse ``merges.txt`` / ``vocab.bpe``: ``#version`` lines skipped, ``a b`` per line."""
    merges = []
    for number, line in enumerate(text.split("\n"), start=1):
        line = line[:-1] if line.endswith("\r") else line  # CRLF line endings, as tokenizers reads them
        if line.startswith("#version") or not line:
            continue
        parts = line.split(" ")
        if len(parts) != 2:
            raise ToktoolsError(f"{source}, line {number}: expected two tokens separated by one space, got {line!r}")
        merges.append((parts[0], parts[1]))
    return merges


def read_text_file(path: Path, what: str) -> str:
    """A UTF-8 text file, or a :class:`ToktoolsError` that says which file and why."""
    return decode_utf8(read_file_bytes(path, what), path)


def read_file_bytes(path: Path, what: str) -> bytes:
    """A file's bytes, or a :class:`ToktoolsError` that says which file (``what``) and why."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise ToktoolsError(f"{what} not found: {path}") from None
    except OSError as err:
        raise ToktoolsError(f"cannot read {path}: {err.strerror}") from None


def decode_utf8(raw: bytes, path: Path) -> str:
    """The text of ``path``'s bytes, or a :class:`ToktoolsError` naming the first bad byte."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ToktoolsError(f"{path}: not valid UTF-8 at byte {err.start}") from None
