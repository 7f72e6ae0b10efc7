"""Training entry points: corpus → word counts → merge engine → a ready tokenizer.

``train_bytebpe`` takes the same arguments, with the same defaults, as
``tokenizers.ByteLevelBPETokenizer.train``, so the same call on both sides gives the same files.
"""
from __future__ import annotations

import functools
from typing import Callable, Iterable, Sequence

from toktools import bpe, bytelevel, corpus
from toktools.bytelevel import ByteLevelBPETokenizer
from toktools.encoding import AddedToken
from toktools.errors import ToktoolsError

Progress = Callable[[str, int, int], None]  # (stage, done, total)


def _stage(progress: Progress | None, stage: str) -> Callable[[int, int], None] | None:
    return None if progress is None else functools.partial(progress, stage)


def count_bytebpe_words(
    files: Sequence[str] | None = None,
    *,
    texts: Iterable[str] | None = None,
    add_prefix_space: bool = False,
    use_regex: bool = True,
    workers: int | None = None,
    errors: corpus.ErrorPolicy = "strict",
    json_field: str | None = None,
    progress: Progress | None = None,
) -> dict[str, int]:
    """Byte-level word counts: files are cut into lines as ``tokenizers`` does; each item of
    ``texts`` is one sequence (like ``train_from_iterator``)."""
    pre = bytelevel.ByteLevelPreTokenizer(add_prefix_space, use_regex)
    if texts is not None:
        counts: dict[str, int] = {}
        for text in texts:
            prepared = pre.prepare(text)
            for piece in (bytelevel.split(prepared) if use_regex else [prepared] if prepared else []):
                counts[piece] = counts.get(piece, 0) + 1
        if not counts:
            raise ToktoolsError("the corpus is empty: no words to learn from")
    else:
        splitter = functools.partial(bytelevel.training_pieces, add_prefix_space=add_prefix_space, use_regex=use_regex)
        sources = corpus.expand_sources(list(files or []), json_field)
        counts = corpus.count_words(sources, splitter, workers=workers, errors=errors, progress=_stage(progress, "read"))
    to_symbols = bytelevel.text_to_symbols
    return {to_symbols(piece): count for piece, count in counts.items()}


def train_bytebpe(
    files: Sequence[str] | None = None,
    vocab_size: int = 30000,
    min_frequency: int = 2,
    special_tokens: Sequence[str] = (),
    *,
    texts: Iterable[str] | None = None,
    word_counts: dict[str, int] | None = None,
    limit_alphabet: int | None = None,
    initial_alphabet: Sequence[str] | None = None,
    add_prefix_space: bool = False,
    continuing_subword_prefix: str | None = None,
    end_of_word_suffix: str | None = None,
    max_token_length: int | None = None,
    workers: int | None = None,
    errors: corpus.ErrorPolicy = "strict",
    json_field: str | None = None,
    progress: Progress | None = None,
) -> ByteLevelBPETokenizer:
    """Train a byte-level BPE tokenizer, identical to ``ByteLevelBPETokenizer().train(...)``.

    ``initial_alphabet`` defaults to the 256 byte symbols, so every byte is in the vocabulary.
    ``word_counts`` (byte-symbol words) skips reading the corpus.
    """
    if word_counts is None:
        word_counts = count_bytebpe_words(files, texts=texts, add_prefix_space=add_prefix_space, workers=workers,
                                          errors=errors, json_field=json_field, progress=progress)
    config = bpe.BpeTrainerConfig(
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        special_tokens=list(special_tokens),
        limit_alphabet=limit_alphabet,
        initial_alphabet=bytelevel.ALPHABET if initial_alphabet is None else list(initial_alphabet),
        continuing_subword_prefix=continuing_subword_prefix,
        end_of_word_suffix=end_of_word_suffix,
        max_token_length=max_token_length,
    )
    result = bpe.train_bpe(word_counts, config, progress=_stage(progress, "merge"))
    vocab = result.vocab_dict()
    added = [AddedToken(t, vocab[t]) for t in dict.fromkeys(special_tokens)]
    tokenizer = ByteLevelBPETokenizer(
        vocab,
        result.merges,
        add_prefix_space=add_prefix_space,
        added_tokens=added,
        continuing_subword_prefix=continuing_subword_prefix,
        end_of_word_suffix=end_of_word_suffix,
    )
    tokenizer.training_result = result  # type: ignore[attr-defined]
    return tokenizer
