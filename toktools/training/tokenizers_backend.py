"""The same tokenizers built with HuggingFace ``tokenizers`` (Rust): the yardstick for parity and
the ``--backend fast`` of the CLI. The only module of toktools that imports ``tokenizers``.

Each function takes the same settings as its reference twin in :mod:`toktools.training.pipeline`, so a
parity test is one call on each side.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import tokenizers
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

from toktools.models.bpe import bytelevel
from toktools.models.wordpiece.model import BERT_SPECIAL_TOKENS

TOKENIZERS_VERSION = tokenizers.__version__


@contextmanager
def plain_files(files: Sequence[str | Path]) -> Iterator[list[str]]:
    """``tokenizers`` reads plain UTF-8 files only, and opens each twice: decompress .gz/.xz/.bz2
    inputs, and copy standard input, FIFOs and devices, into temporary files for the duration
    of the block (:func:`toktools.io.inputs.rereadable`)."""
    from toktools.io.inputs import rereadable

    with rereadable(files, decompress=True, prefix="toktools-fast-") as paths:
        yield paths


@contextmanager
def training_files(corpus: Sequence[str]) -> Iterator[list[str]]:
    """Corpus paths for ``tokenizers``' ``train`` (decompressed as needed), with its errors made
    ours: an empty corpus is refused, and invalid UTF-8 is located (file and line) by our reader."""
    import os

    from toktools.corpus import reading as corpus_module
    from toktools.errors import ToktoolsError

    sources = corpus_module.expand_sources(list(corpus))
    with plain_files([s.path for s in sources]) as paths:
        if all(os.path.getsize(p) == 0 for p in paths):
            raise ToktoolsError("the corpus is empty: no words to learn from")
        try:
            yield paths
        except ToktoolsError:
            raise
        except Exception as err:  # tokenizers raises plain Exceptions
            if "UTF-8" in str(err):
                for _ in corpus_module.iter_chunks(sources):  # raises with the file and line
                    pass
            raise ToktoolsError(f"tokenizers failed: {err}") from None


def bytebpe_trainer(
    vocab_size: int = 30000,
    min_frequency: int = 2,
    special_tokens: Sequence[str] = (),
    *,
    limit_alphabet: int | None = None,
    initial_alphabet: Sequence[str] | None = None,
    continuing_subword_prefix: str | None = None,
    end_of_word_suffix: str | None = None,
    max_token_length: int | None = None,
) -> trainers.BpeTrainer:
    """``BpeTrainer`` with ``ByteLevelBPETokenizer.train``'s defaults."""
    options: dict[str, Any] = dict(
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        special_tokens=list(special_tokens),
        initial_alphabet=bytelevel.ALPHABET if initial_alphabet is None else list(initial_alphabet),
        show_progress=False,
    )
    if limit_alphabet is not None:
        options["limit_alphabet"] = limit_alphabet
    if continuing_subword_prefix is not None:
        options["continuing_subword_prefix"] = continuing_subword_prefix
    if end_of_word_suffix is not None:
        options["end_of_word_suffix"] = end_of_word_suffix
    if max_token_length is not None:
        options["max_token_length"] = max_token_length
    return trainers.BpeTrainer(**options)


def bytebpe_tokenizer(add_prefix_space: bool = False) -> Tokenizer:
    """An untrained tokenizer with ``ByteLevelBPETokenizer``'s pipeline."""
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=add_prefix_space)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.post_processor = processors.ByteLevel(trim_offsets=False)
    return tokenizer


def train_bytebpe(
    files: Sequence[str] | None = None,
    vocab_size: int = 30000,
    min_frequency: int = 2,
    special_tokens: Sequence[str] = (),
    *,
    texts: Iterable[str] | None = None,
    add_prefix_space: bool = False,
    **trainer_options: object,
) -> Tokenizer:
    """Train with ``tokenizers`` exactly as :func:`toktools.train_bytebpe` does with ours."""
    tokenizer = bytebpe_tokenizer(add_prefix_space)
    trainer = bytebpe_trainer(vocab_size, min_frequency, special_tokens, **trainer_options)  # type: ignore[arg-type]
    return _train(tokenizer, trainer, files, texts)


def _train(
    tokenizer: Tokenizer, trainer: trainers.Trainer, files: Sequence[str] | None, texts: Iterable[str] | None
) -> Tokenizer:
    """``train_from_iterator`` for texts; ``train`` for files (decompressed as needed)."""
    if texts is not None:
        tokenizer.train_from_iterator(texts, trainer=trainer)
    else:
        with plain_files(files or []) as paths:
            tokenizer.train(paths, trainer=trainer)
    return tokenizer


def wordpiece_tokenizer(
    lowercase: bool = True,
    strip_accents: bool | None = None,
    clean_text: bool = True,
    handle_chinese_chars: bool = True,
) -> Tokenizer:
    """An untrained tokenizer with ``BertWordPieceTokenizer``'s normaliser and pre-tokeniser."""
    tokenizer = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(
        clean_text=clean_text,
        handle_chinese_chars=handle_chinese_chars,
        strip_accents=strip_accents,
        lowercase=lowercase,
    )
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.decoder = decoders.WordPiece(prefix="##")
    return tokenizer


def train_wordpiece(
    files: Sequence[str] | None = None,
    vocab_size: int = 30000,
    min_frequency: int = 2,
    special_tokens: Sequence[str] = BERT_SPECIAL_TOKENS,
    *,
    texts: Iterable[str] | None = None,
    limit_alphabet: int | None = 1000,
    initial_alphabet: Sequence[str] = (),
    wordpieces_prefix: str = "##",
    lowercase: bool = True,
    strip_accents: bool | None = None,
    clean_text: bool = True,
    handle_chinese_chars: bool = True,
) -> Tokenizer:
    """``BertWordPieceTokenizer().train(...)`` with the settings of :func:`toktools.train_wordpiece`."""
    tokenizer = wordpiece_tokenizer(lowercase, strip_accents, clean_text, handle_chinese_chars)
    options: dict[str, Any] = dict(
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        special_tokens=list(special_tokens),
        initial_alphabet=list(initial_alphabet),
        continuing_subword_prefix=wordpieces_prefix,
        show_progress=False,
    )
    if limit_alphabet is not None:
        options["limit_alphabet"] = limit_alphabet
    return _train(tokenizer, trainers.WordPieceTrainer(**options), files, texts)


def unigram_tokenizer(add_prefix_space: bool = True) -> Tokenizer:
    """An untrained tokenizer with ``SentencePieceUnigramTokenizer``'s pipeline."""
    from tokenizers import SentencePieceUnigramTokenizer

    return SentencePieceUnigramTokenizer(add_prefix_space=add_prefix_space)._tokenizer


def train_unigram(
    files: Sequence[str] | None = None,
    vocab_size: int = 8000,
    special_tokens: Sequence[str] = (),
    *,
    texts: Iterable[str] | None = None,
    add_prefix_space: bool = True,
    **trainer_options: Any,
) -> Tokenizer:
    """``SentencePieceUnigramTokenizer().train(...)`` with the settings of :func:`toktools.train_unigram`
    (``unk_token``, ``initial_alphabet``, ``shrinking_factor``, ``max_piece_length``, ``n_sub_iterations``)."""
    if "initial_alphabet" in trainer_options:
        trainer_options["initial_alphabet"] = list(trainer_options["initial_alphabet"])
    trainer = trainers.UnigramTrainer(
        vocab_size=vocab_size, special_tokens=list(special_tokens), show_progress=False, **trainer_options
    )
    return _train(unigram_tokenizer(add_prefix_space), trainer, files, texts)


def wordpiece_vocab_txt(tokenizer: Tokenizer) -> str:
    """The ``vocab.txt`` that ``save_model`` writes for a trained WordPiece tokenizer."""
    vocab = tokenizer.get_vocab(with_added_tokens=False)
    return "".join(token + "\n" for token, _ in sorted(vocab.items(), key=lambda item: item[1]))


def load(path: str | Path) -> Tokenizer:
    """A ``tokenizers.Tokenizer`` from a ``tokenizer.json`` (file or directory holding one)."""
    path = Path(path)
    if path.is_dir():
        path = path / "tokenizer.json"
    return Tokenizer.from_file(str(path))


def save_bytebpe(tokenizer: Tokenizer, directory: str | Path) -> None:
    """``vocab.json`` + ``merges.txt`` (via ``save_model``) and ``tokenizer.json``."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    tokenizer.model.save(str(directory))
    tokenizer.save(str(directory / "tokenizer.json"))


__all__ = [
    "TOKENIZERS_VERSION",
    "bytebpe_trainer",
    "bytebpe_tokenizer",
    "train_bytebpe",
    "load",
    "save_bytebpe",
    "train_wordpiece",
    "train_unigram",
    "training_files",
    "unigram_tokenizer",
    "wordpiece_tokenizer",
    "wordpiece_vocab_txt",
    "normalizers",
]
