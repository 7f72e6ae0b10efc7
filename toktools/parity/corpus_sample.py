"""The corpus both backends train on, and the held-out lines their encodings are compared on.

``tokenizers`` reads only plain UTF-8 files, so compressed inputs, directories' contents and
standard input are copied to plain files; held-out lines are withheld from both trainings.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toktools.errors import ToktoolsError
from toktools.parity.results import CorpusInfo

__all__ = ["PreparedCorpus", "prepare_corpus"]


@dataclass
class PreparedCorpus:
    """The files both sides train on, the lines their encodings are compared on, and what to
    say about both."""

    train_files: list[str]
    heldout: list[str]
    info: CorpusInfo


_COMPRESSED = (".gz", ".xz", ".bz2")


def _iter_raw_lines(sources: Sequence[Any]) -> Iterator[bytes]:
    from toktools.corpus.reading import raw_lines

    for source in sources:
        yield from raw_lines(source)  # cut at b"\n" only, like tokenizers; corrupt files named


def _decode_line(raw: bytes, where: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ToktoolsError(f"{where}: invalid UTF-8 (byte 0x{raw[err.start]:02X})") from None


def _strip_eol(line: str) -> str:
    return line[:-1] if line.endswith("\n") else line


def _spread(items: Sequence[str], limit: int) -> list[str]:
    """At most ``limit`` items, evenly spread over ``items`` (deterministic)."""
    if len(items) <= limit:
        return list(items)
    return [items[(i * len(items)) // limit] for i in range(limit)]


def _sample_lines(sources: Sequence[Any], limit: int) -> tuple[list[str], int]:
    """At most ``limit`` non-blank lines evenly spread over the sources (two passes, so memory
    stays small on a big corpus), and how many non-blank lines there are."""
    total = sum(1 for raw in _iter_raw_lines(sources) if raw.strip())
    wanted = {(i * total) // limit for i in range(limit)} if total > limit else None
    picked = []
    index = 0
    for raw in _iter_raw_lines(sources):
        if not raw.strip():
            continue
        if wanted is None or index in wanted:
            picked.append(_strip_eol(_decode_line(raw, "corpus")))
        index += 1
    return picked, total


def _copy_withholding(sources: Sequence[Any], scratch: Path, stride: int, heldout: list[str]) -> tuple[list[str], int]:
    """Copy the sources to plain files in ``scratch``, leaving out every ``stride``-th non-blank
    line (none when ``stride`` is 0), which goes to ``heldout``. Returns the copies and their size."""
    scratch.mkdir(parents=True, exist_ok=True)
    train_files = []
    size = 0
    text_lines = 0  # lines with text (blank lines are never held out: they hold no test)
    for index, source in enumerate(sources):
        target = scratch / f"train-{index:03d}.txt"
        with open(target, "wb") as out:
            for number, raw in enumerate(_iter_raw_lines([source]), start=1):
                # decoded here, so that an error names the given file, not the copy
                line = _decode_line(raw, f"{source.path}, line {number}")
                if stride and line.strip():
                    text_lines += 1
                    if text_lines % stride == 0:
                        heldout.append(_strip_eol(line))
                        continue
                out.write(raw)
                size += len(raw)
        train_files.append(str(target))
    return train_files, size


def prepare_corpus(
    files: Sequence[str],
    scratch: Path,
    heldout_lines: Sequence[str] | None,
    heldout_file: str | None,
    heldout_fraction: float,
    heldout_max_lines: int,
) -> PreparedCorpus:
    """Plain files that both backends can read, and the held-out lines.

    ``tokenizers`` reads only plain UTF-8 files, so compressed inputs, directories' contents
    and standard input are copied to plain files; with ``heldout_fraction`` every n-th line
    is withheld from both trainings (the copy leaves it out).
    """
    from toktools.corpus import reading as corpus

    sources = corpus.expand_sources([str(f) for f in files])
    names = [s.path for s in sources]
    if not 0 <= heldout_fraction < 1:
        raise ToktoolsError(f"heldout_fraction must be in [0, 1), got {heldout_fraction}")
    explicit = heldout_lines is not None or heldout_file is not None
    stride = max(2, round(1 / heldout_fraction)) if heldout_fraction and not explicit else 0
    from toktools.io.inputs import read_once

    plain = all(not read_once(s.path) and not s.path.endswith(_COMPRESSED) for s in sources)  # else both read a copy
    heldout: list[str] = []
    if plain and not stride:
        train_files = names
        size = sum(s.size() for s in sources)
        trained_on = "the given files"
    else:
        train_files, size = _copy_withholding(sources, scratch, stride, heldout)
        trained_on = (
            f"a copy without every {stride}th non-blank line"
            if stride
            else "a plain copy (tokenizers reads only plain UTF-8 files)"
        )
    if heldout_lines is not None:
        heldout = [line for line in heldout_lines if line.strip()]
        source_text = f"{len(heldout):,} given lines"
    elif heldout_file is not None:
        heldout = [line for line in corpus.read_lines([str(heldout_file)]) if line.strip()]
        source_text = f"lines of {heldout_file}"
    elif stride:
        source_text = f"every {stride}th non-blank corpus line, withheld from training"
    total = len(heldout)
    if not explicit and not stride:
        heldout, total = _sample_lines(corpus.expand_sources(train_files), heldout_max_lines)
        source_text = "corpus lines (seen in training: not a true held-out set)"
    heldout = _spread(heldout, heldout_max_lines)
    if total > len(heldout):
        source_text += f", {len(heldout):,} of {total:,} evenly spread"
    info = CorpusInfo(names, size, None, trained_on, source_text)
    return PreparedCorpus(train_files, heldout, info)
