"""The words of a document for fertility (tokens per word) and continued words, in any script.

One rule, decided per run of characters (so a line mixing Chinese and English gets both):

* text is split at whitespace (``str.split``), as for English;
* inside each such run, every run of Chinese characters (the CJK ideograph blocks BERT pads
  with spaces) is cut into words by jieba's dictionary, the one whole-word masking uses
  (:class:`toktools.pretraining.masking.ChineseWords`; dictionary words only, no HMM guessing
  of new words, so the same text always gets the same words);
* every character of another script written without spaces (kana, Thai, Lao, Khmer, Myanmar)
  is a word of its own, and so is every Chinese character when jieba is not installed;
* what is left of the run between those (Latin letters, digits, punctuation) is one word per
  stretch: ``中文，夹杂English和数字123。`` is ``中文 / ， / 夹杂 / English / 和 / 数字 / 123。``.

Each word is counted under the rule that made it (``whitespace``, ``jieba``, ``per character``),
so a report can say which segmentation its "words" are.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

__all__ = [
    "HAN",
    "HAN_RANGES",
    "BERT_CHINESE_RANGES",
    "NO_SPACE",
    "NO_SPACE_RANGES",
    "SOURCES",
    "WordSpans",
    "word_spans",
    "segmented_starts",
    "in_ranges",
    "needs_segmenter",
    "han_words",
    "load_segmenter",
]

#: The Chinese characters (``toktools.pretraining.masking._is_chinese``): code point ranges,
#: and the same as a regex class.
HAN_RANGES = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0xF900, 0xFAFF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B820, 0x2CEAF),
    (0x2F800, 0x2FA1F),
)
#: The Chinese characters ``tokenizers``' ``BertNormalizer`` pads with spaces (``handle_chinese_chars``):
#: the same blocks but one, Rust's table starting Extension E at 0x2B920 where BERT's Python has 0x2B820.
BERT_CHINESE_RANGES = tuple((0x2B920, hi) if lo == 0x2B820 else (lo, hi) for lo, hi in HAN_RANGES)
HAN = "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in HAN_RANGES)
#: Scripts written without spaces that have no segmenter here: one word per character (code
#: point ranges, and the same as a regex class).
NO_SPACE_RANGES = (
    (0x3040, 0x30FF),
    (0x31F0, 0x31FF),
    (0xFF66, 0xFF9F),
    (0x0E00, 0x0EFF),
    (0x1780, 0x17FF),
    (0x1000, 0x109F),
)
NO_SPACE = "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in NO_SPACE_RANGES)
_SPECIAL = re.compile(f"[{HAN}{NO_SPACE}]")
_PARTS = re.compile(f"([{HAN}]+)|([{NO_SPACE}])")
_WORD = re.compile(r"\S+")
#: The segmentations, in the order reports list them.
SOURCES = ("whitespace", "jieba", "per character")

#: ``(starts, ends, counts)``: word spans of a text and how many words each rule made.
WordSpans = tuple[list[int], list[int], dict[str, int]]


def needs_segmenter(text: str) -> bool:
    """Whether ``text`` holds a character that whitespace does not separate into words."""
    return _SPECIAL.search(text) is not None


@lru_cache(maxsize=1)
def _chinese_words() -> Any:
    """jieba's segmenter, loaded once per process; None when jieba is not installed."""
    try:
        from toktools.pretraining.masking import ChineseWords

        return ChineseWords()
    except Exception:  # ToktoolsError: jieba missing; then per character
        return None


def load_segmenter() -> None:
    """Load jieba's segmenter now (before forking workers that will need it): the compiled one
    (:mod:`toktools.analysis.han_segmenter`), else jieba itself."""
    from toktools.analysis.han_segmenter import segmenter

    if segmenter() is None:
        _chinese_words()


def han_words(run: str) -> list[tuple[int, int]] | None:
    """jieba's dictionary words of a run of Chinese characters, or None without jieba."""
    segmenter = _chinese_words()
    return None if segmenter is None else segmenter.dictionary_words(run)


def word_spans(text: str) -> WordSpans:
    """The words of ``text`` by the module's rule, as start and end character offsets."""
    starts: list[int] = []
    ends: list[int] = []
    counts = dict.fromkeys(SOURCES, 0)
    if not needs_segmenter(text):
        for m in _WORD.finditer(text):
            starts.append(m.start())
            ends.append(m.end())
        counts["whitespace"] = len(starts)
        return starts, ends, counts
    for m in _WORD.finditer(text):
        run, base = m.group(), m.start()
        rest = 0  # start of the stretch not yet given to a word
        for part in _PARTS.finditer(run):
            if part.start() > rest:
                starts.append(base + rest)
                ends.append(base + part.start())
                counts["whitespace"] += 1
            if part.group(1) is not None:
                found = han_words(part.group(1))
                if found is None:
                    spans = [(k, k + 1) for k in range(len(part.group(1)))]
                    counts["per character"] += len(spans)
                else:
                    spans = found
                    counts["jieba"] += len(spans)
                for s, e in spans:
                    starts.append(base + part.start() + s)
                    ends.append(base + part.start() + e)
            else:
                starts.append(base + part.start())
                ends.append(base + part.end())
                counts["per character"] += 1
            rest = part.end()
        if rest < len(run):
            starts.append(base + rest)
            ends.append(base + len(run))
            counts["whitespace"] += 1
    return starts, ends, counts


def in_ranges(points: Any, ranges: tuple[tuple[int, int], ...]) -> Any:
    """Which of ``points`` (a numpy array of code points) lie in one of ``ranges`` (inclusive)."""
    import numpy as np

    inside = np.zeros(len(points), dtype=bool)
    for lo, hi in ranges:
        inside |= (points >= lo) & (points <= hi)
    return inside


def segmented_starts(points: Any, space: Any, doc_starts: Any, han: Any | None = None) -> tuple[Any, dict[str, int]]:
    """:func:`word_spans` for many documents laid end to end, with arrays: the word starts the
    segmenters add to the whitespace words (a bool array over ``points``, the documents' code
    points; ``space`` marks whitespace, ``doc_starts`` where each document starts, ``han`` the
    Chinese characters if known), and how many words each segmenter made (``jieba``, ``per
    character``; ``whitespace`` is left at 0 for the caller, who knows all the words).

    The same words as :func:`word_spans` document by document: a character of a script without
    spaces starts a word, and so does the character after it unless it is whitespace or the
    next character of the same run of Chinese characters; a run of Chinese characters (never
    across documents) is cut by jieba's dictionary, in one compiled call for all runs when the
    kernel is there (:mod:`toktools.analysis.han_segmenter`), else run by run
    (:func:`han_words`), else per character."""
    import numpy as np

    n = len(points)
    counts = dict.fromkeys(SOURCES, 0)
    if han is None:
        han = in_ranges(points, HAN_RANGES)
    other = in_ranges(points, NO_SPACE_RANGES)
    starts = other.copy()
    if not n or not (han.any() or other.any()):
        return starts, counts
    first_of_doc = np.zeros(n, dtype=bool)
    first_of_doc[doc_starts[doc_starts < n]] = True
    continues = np.zeros(n, dtype=bool)  # a Chinese character after one of the same document
    continues[1:] = han[1:] & han[:-1]
    continues &= ~first_of_doc
    after = np.zeros(n, dtype=bool)
    after[1:] = han[:-1] | other[:-1]
    starts |= after & ~space & ~continues
    counts["per character"] = int(other.sum())
    run_starts = np.flatnonzero(han & ~continues)
    if not len(run_starts):
        return starts, counts
    last = np.zeros(n, dtype=bool)
    last[:-1] = continues[1:]
    run_ends = np.flatnonzero(han & ~last) + 1
    counts["jieba"], found = _jieba_starts(points, run_starts, run_ends)
    if found is None:  # no jieba: per character
        starts |= han
        counts["per character"] += int(han.sum())
    else:
        starts |= found
    return starts, counts


def _jieba_starts(points: Any, run_starts: Any, run_ends: Any) -> tuple[int, Any]:
    """(words, bool array of their starts) of jieba's dictionary words of the runs; (0, None)
    without jieba."""
    import numpy as np

    from toktools.analysis.han_segmenter import segmenter

    compiled = segmenter()
    if compiled is not None:
        marks = np.zeros(len(points), dtype=np.uint8)
        words = compiled.mark_words(points, run_starts, run_ends, marks)
        return words, marks.view(bool)
    if _chinese_words() is None:
        return 0, None
    found = np.zeros(len(points), dtype=bool)
    words = 0
    for a, b in zip(run_starts.tolist(), run_ends.tolist()):
        spans = han_words(points[a:b].tobytes().decode("utf-32-le", "surrogatepass")) or []
        found[[a + s for s, _ in spans]] = True
        words += len(spans)
    return words, found
