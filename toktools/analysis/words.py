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
    "NO_SPACE",
    "SOURCES",
    "WordSpans",
    "word_spans",
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
HAN = "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in HAN_RANGES)
#: Scripts written without spaces that have no segmenter here: one word per character.
NO_SPACE = "\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9f\u0e00-\u0eff\u1780-\u17ff\u1000-\u109f"
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
    """Load jieba's segmenter now (before forking workers that will need it)."""
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
