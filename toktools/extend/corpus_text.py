"""The extension corpus as lines: which lines train, which are held out for the report, and the
words a base tokenizer's own pre-tokeniser makes of them."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from toktools.corpus.reading import read_lines
from toktools.tokenizer import Tokenizer


@dataclass
class CorpusLines:
    """The non-blank lines of the corpus, split into training lines and a held-out slice."""

    training: list[str]
    held_out: list[str]


def split_corpus(paths: Sequence[str], held_out_every: int = 20, max_lines: int | None = None) -> CorpusLines:
    """Every ``held_out_every``-th non-blank line is held out (0: none), so that the report measures
    text that did not shape the new tokens, spread over the whole corpus rather than its end."""
    training: list[str] = []
    held_out: list[str] = []
    kept = 0
    for line in read_lines(list(paths)):
        if not line.strip():
            continue
        if held_out_every and kept % held_out_every == held_out_every - 1:
            held_out.append(line)
        else:
            training.append(line)
        kept += 1
        if max_lines is not None and kept >= max_lines:
            break
    return CorpusLines(training, held_out)


def read_text_lines(paths: Sequence[str]) -> list[str]:
    """All lines of ``paths`` (blank ones too: a line is a line of the file)."""
    return list(read_lines(list(paths)))


def count_words(tokenizer: Tokenizer, lines: Iterable[str]) -> Counter[str]:
    """The words the model of ``tokenizer`` sees (after its normaliser and pre-tokeniser), counted.

    Added tokens written in the text are cut out first, as the tokenizer itself does, so that
    ``<|endoftext|>`` in a corpus is not learned from."""
    counts: Counter[str] = Counter()
    normalizer, pre_tokenizer = tokenizer.normalizer, tokenizer.pre_tokenizer
    for line in lines:
        for text in _outside_added_tokens(tokenizer, line):
            if normalizer is not None:
                text = normalizer.normalize_str(text)
            if pre_tokenizer is None:
                if text:
                    counts[text] += 1
                continue
            counts.update(word for word, _ in pre_tokenizer.pre_tokenize_str(text))
    return counts


def _outside_added_tokens(tokenizer: Tokenizer, line: str) -> list[str]:
    """The stretches of ``line`` that are not added tokens."""
    contents = [t.content for t in tokenizer.added.tokens if t.content]
    if not contents or not any(c in line for c in contents):
        return [line]
    pieces = [line]
    for content in contents:
        pieces = [part for piece in pieces for part in piece.split(content)]
    return pieces
