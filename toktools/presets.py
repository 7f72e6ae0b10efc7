"""The usual pipelines, wired from parts as ``tokenizers``' ``implementations/`` wire them.

* :func:`byte_level_bpe`: GPT-2 / RoBERTa (``ByteLevelBPETokenizer``);
* :func:`bert_wordpiece`: BERT (``BertWordPieceTokenizer``);
* :func:`sentencepiece_unigram`: a SentencePiece-style Unigram (``SentencePieceUnigramTokenizer``).

``ByteLevelBPETokenizer`` and ``WordPieceTokenizer`` are the same presets as classes, for code
that constructs them by name.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from toktools.encoding import AddedToken
from toktools.models.wordpiece.model import BERT_SPECIAL_TOKENS as BERT_SPECIAL_TOKENS
from toktools.models.wordpiece.model import read_vocab_txt
from toktools.parts import decoders, models, normalizers, post_processors, pre_tokenizers
from toktools.parts._onig import OnigPattern
from toktools.parts.base import PostProcessor
from toktools.parts.unigram import Unigram
from toktools.tokenizer import Tokenizer

#: the normaliser a WordPieceTokenizer gets by default (one instance, shared as a default argument is)
DEFAULT_BERT_NORMALIZER = normalizers.BertNormalizer()


def roberta_processing(
    tokenizer: Tokenizer, cls: str = "<s>", sep: str = "</s>", add_prefix_space: bool = True
) -> post_processors.RobertaProcessing:
    """RoBERTa's ``<s> A </s></s> B </s>`` with the ids the tokenizer gives both tokens."""
    sep_id, cls_id = tokenizer.token_to_id(sep), tokenizer.token_to_id(cls)
    # callers check that both tokens are in the vocabulary (a missing one would stay None)
    return post_processors.RobertaProcessing(
        (sep, sep_id),  # type: ignore[arg-type]
        (cls, cls_id),  # type: ignore[arg-type]
        add_prefix_space=add_prefix_space,
    )


class ByteLevelBPETokenizer(Tokenizer):
    """GPT-2 / RoBERTa byte-level BPE: ByteLevel pre-tokeniser, BPE, ByteLevel decoder and (by
    default) a ByteLevel post-processor that leaves offsets untouched, as
    ``tokenizers.ByteLevelBPETokenizer`` builds it."""

    def __init__(
        self,
        vocab: dict[str, int],
        merges: Sequence[tuple[str, str]],
        *,
        add_prefix_space: bool = False,
        use_regex: bool = True,
        added_tokens: Sequence[AddedToken] = (),
        post_processor: PostProcessor | None = None,
        **model_options: Any,
    ) -> None:
        super().__init__(
            models.BPE(vocab, merges, **model_options),
            pre_tokenizer=pre_tokenizers.ByteLevel(add_prefix_space=add_prefix_space, use_regex=use_regex),
            post_processor=post_processor or post_processors.ByteLevel(trim_offsets=False),
            decoder=decoders.ByteLevel(),
            added_tokens=added_tokens,
        )


def byte_level_bpe(vocab: dict[str, int], merges: Sequence[tuple[str, str]], **options: Any) -> Tokenizer:
    """``ByteLevelBPETokenizer(vocab, merges)``; see :class:`ByteLevelBPETokenizer`."""
    return ByteLevelBPETokenizer(vocab, merges, **options)


class WordPieceTokenizer(Tokenizer):
    """BERT: BertNormalizer, BertPreTokenizer, WordPiece, WordPiece decoder; ``post_processor``
    as given (:meth:`bert` adds ``[CLS] A [SEP]``)."""

    def __init__(
        self,
        vocab: dict[str, int],
        *,
        unk_token: str = "[UNK]",
        continuing_subword_prefix: str = "##",
        max_input_chars_per_word: int = 100,
        normalizer: normalizers.BertNormalizer | None = DEFAULT_BERT_NORMALIZER,
        added_tokens: Sequence[AddedToken] = (),
        post_processor: PostProcessor | None = None,
    ) -> None:
        super().__init__(
            models.WordPiece(
                vocab,
                unk_token=unk_token,
                continuing_subword_prefix=continuing_subword_prefix,
                max_input_chars_per_word=max_input_chars_per_word,
            ),
            normalizer=normalizer,
            pre_tokenizer=pre_tokenizers.BertPreTokenizer(),
            post_processor=post_processor,
            decoder=decoders.WordPiece(prefix=continuing_subword_prefix),
            added_tokens=added_tokens,
        )

    @classmethod
    def bert(
        cls,
        vocab: dict[str, int],
        *,
        lowercase: bool = True,
        strip_accents: bool | None = None,
        clean_text: bool = True,
        handle_chinese_chars: bool = True,
        unk_token: str = "[UNK]",
        sep_token: str = "[SEP]",
        cls_token: str = "[CLS]",
        pad_token: str = "[PAD]",
        mask_token: str = "[MASK]",
    ) -> WordPieceTokenizer:
        """What ``BertWordPieceTokenizer(vocab)`` builds: the special tokens that the vocabulary
        holds are registered, and ``[CLS] A [SEP]`` is added when both exist."""
        specials = [t for t in (unk_token, sep_token, cls_token, pad_token, mask_token) if t in vocab]
        post = None
        if sep_token in vocab and cls_token in vocab:
            post = post_processors.BertProcessing((sep_token, vocab[sep_token]), (cls_token, vocab[cls_token]))
        return cls(
            vocab,
            unk_token=unk_token,
            added_tokens=[AddedToken(t, vocab[t]) for t in specials],
            normalizer=normalizers.BertNormalizer(clean_text, handle_chinese_chars, strip_accents, lowercase),
            post_processor=post,
        )

    @classmethod
    def from_vocab_file(cls, path: str | Path, **options: Any) -> WordPieceTokenizer:
        """A BERT tokenizer from ``vocab.txt`` (lower-casing unless ``lowercase=False``)."""
        return cls.bert(read_vocab_txt(path), **options)


def bert_wordpiece(vocab: dict[str, int], **options: Any) -> Tokenizer:
    """``BertWordPieceTokenizer(vocab)``; see :meth:`WordPieceTokenizer.bert`."""
    return WordPieceTokenizer.bert(vocab, **options)


def sentencepiece_unigram(
    model: Unigram,
    *,
    replacement: str = "\u2581",
    add_prefix_space: bool = True,
    added_tokens: Sequence[AddedToken] = (),
) -> Tokenizer:
    """``SentencePieceUnigramTokenizer(vocab)``: Nmt, NFKC and runs of spaces made one, then a
    Metaspace pre-tokeniser and decoder (``▁`` prepended always, or never)."""
    scheme = "always" if add_prefix_space else "never"
    return Tokenizer(
        model,
        normalizer=normalizers.Sequence(
            [normalizers.Nmt(), normalizers.NFKC(), normalizers.Replace(OnigPattern(" {2,}"), " ")]
        ),
        pre_tokenizer=pre_tokenizers.Metaspace(replacement, scheme),
        decoder=decoders.Metaspace(replacement, scheme),
        added_tokens=added_tokens,
    )
