"""Corpora in the shapes users have, built from the shared corpora (issue 21).

The last wave's deadlock hid because every test document was a ~500-character line. These
builders write the shapes that real pretraining data has, so that every corpus command can be
run on each of them:

- ``long_documents``: one document per line, each 20K-200K characters (whole articles, speeches);
- ``jsonl_long``: the same documents as JSON Lines records ``{"id": ..., "text": ...}``;
- ``chinese_paragraphs``: Chinese paragraphs without spaces, thousands of characters per line;
- ``crlf``: Windows line ends;
- ``blank_documents``: empty and whitespace-only documents among ordinary ones;
- ``mixed``: all of the above interleaved (English, Chinese, blank, CRLF);
- ``single_line``: one line of ``size`` bytes with no newline at all (a dump, minified JSON, a
  language without spaces).

Everything is deterministic (a fixed seed), so a failure reproduces. Text comes from
``../shared/corpora`` through :func:`conftest.read_corpus_sample`, which skips the test when the
shared corpora are absent.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from pathlib import Path

from conftest import read_corpus_sample

#: Bytes of each source read for the generators (read once per session, then cached).
_SOURCE_BYTES = 2_000_000


def english_lines() -> list[str]:
    """Non-empty English Wikipedia lines (paragraphs), newlines stripped."""
    return [line for line in read_corpus_sample("en_wiki.txt.gz", _SOURCE_BYTES).splitlines() if line.strip()]


def chinese_lines() -> list[str]:
    """Non-empty Chinese lines (novels and Wikipedia), newlines stripped."""
    text = read_corpus_sample("zh_novels.txt", _SOURCE_BYTES // 2) + read_corpus_sample(
        "zh_wiki_sample.txt", _SOURCE_BYTES // 2
    )
    return [line for line in text.splitlines() if line.strip()]


def _documents(lines: list[str], count: int, low: int, high: int, joiner: str, seed: int) -> Iterator[str]:
    """``count`` documents of ``low``..``high`` characters, each glued from consecutive lines."""
    rng = random.Random(seed)
    for _ in range(count):
        target = rng.randint(low, high)
        position = rng.randrange(len(lines))
        parts: list[str] = []
        size = 0
        while size < target:
            line = lines[position % len(lines)]
            parts.append(line)
            size += len(line) + len(joiner)
            position += 1
        yield joiner.join(parts)[:target]


def long_documents(path: Path, count: int = 12, low: int = 20_000, high: int = 200_000) -> Path:
    """One English document per line, each ``low``..``high`` characters (paragraphs joined by spaces)."""
    docs = _documents(english_lines(), count, low, high, " ", seed=21)
    path.write_text("".join(doc + "\n" for doc in docs), encoding="utf-8")
    return path


def jsonl_long(path: Path, count: int = 12, low: int = 20_000, high: int = 200_000) -> Path:
    """JSON Lines records whose ``text`` is a long document that keeps its paragraph newlines."""
    docs = _documents(english_lines(), count, low, high, "\n", seed=22)
    with path.open("w", encoding="utf-8") as handle:
        for index, doc in enumerate(docs):
            handle.write(json.dumps({"id": index, "text": doc}, ensure_ascii=False) + "\n")
    return path


def chinese_paragraphs(path: Path, count: int = 40, low: int = 2_000, high: int = 60_000) -> Path:
    """Chinese paragraphs with no spaces at all, one per line."""
    docs = (doc.replace(" ", "").replace("\u3000", "") for doc in _documents(chinese_lines(), count, low, high, "", 23))
    path.write_text("".join(doc + "\n" for doc in docs), encoding="utf-8")
    return path


def crlf(path: Path, count: int = 2_000) -> Path:
    """Ordinary lines, English and Chinese, ended by ``\\r\\n``."""
    lines = english_lines()[:count] + chinese_lines()[: count // 4]
    path.write_bytes("".join(line + "\r\n" for line in lines).encode("utf-8"))
    return path


def blank_documents(path: Path, count: int = 600) -> Path:
    """Ordinary lines with empty, space-only, tab-only and ideographic-space-only lines among them."""
    rng = random.Random(24)
    blanks = ["", " ", "   ", "\t", "\u3000", " \t "]
    lines = english_lines()[:count]
    out: list[str] = []
    for line in lines:
        out.append(line)
        if rng.random() < 0.3:
            out.append(rng.choice(blanks))
    path.write_text("\n".join(["", *out, "", ""]) + "\n", encoding="utf-8")
    return path


def mixed(path: Path, count: int = 8) -> Path:
    """Long English documents, Chinese paragraphs, blank lines and CRLF line ends interleaved."""
    rng = random.Random(25)
    english = list(_documents(english_lines(), count, 20_000, 120_000, " ", seed=26))
    chinese = list(_documents(chinese_lines(), count, 2_000, 40_000, "", seed=27))
    pieces: list[str] = []
    for en_doc, zh_doc in zip(english, chinese):
        pieces.append(en_doc + rng.choice(["\n", "\r\n"]))
        pieces.append(rng.choice(["", " ", "\t"]) + "\n")
        pieces.append(zh_doc + rng.choice(["\n", "\r\n"]))
    path.write_bytes("".join(pieces).encode("utf-8"))
    return path


def single_line(path: Path, size: int = 30_000_000, *, chinese_share: float = 0.2) -> Path:
    """One line of ``size`` bytes (UTF-8) with no newline: English with Chinese runs, spaces between.

    Written in blocks, so building a 30 MB line costs little memory in the test process itself.
    The last character is never cut in half.
    """
    rng = random.Random(28)
    english = english_lines()
    chinese = chinese_lines()
    written = 0
    with path.open("wb") as handle:
        while written < size:
            block = []
            for _ in range(256):
                source = chinese if rng.random() < chinese_share else english
                block.append(source[rng.randrange(len(source))])
            data = (" ".join(block) + " ").encode("utf-8")
            if written + len(data) > size:
                data = data[: size - written].decode("utf-8", errors="ignore").encode("utf-8")
                if not data:
                    break
            handle.write(data)
            written += len(data)
    return path


#: Every shape that is a normal-sized file (the 30 MB line is separate: it is slow to build).
SHAPES: dict[str, Callable[[Path], Path]] = {
    "long_documents": long_documents,
    "jsonl_long": jsonl_long,
    "chinese_paragraphs": chinese_paragraphs,
    "crlf": crlf,
    "blank_documents": blank_documents,
    "mixed": mixed,
}


def build_shape(name: str, folder: Path) -> Path:
    """Write shape ``name`` into ``folder`` (``.jsonl`` for JSON Lines, else ``.txt``) and return its path."""
    suffix = ".jsonl" if name.startswith("jsonl") else ".txt"
    return SHAPES[name](folder / f"{name}{suffix}")
