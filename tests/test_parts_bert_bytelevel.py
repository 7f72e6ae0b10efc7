"""The BERT and byte-level parts (BertNormalizer, BertPreTokenizer, ByteLevel pre-tokeniser and
decoder, WordPiece decoder): each in a tokenizer built with ``tokenizers``' Python API, loaded
by toktools from its ``tokenizer.json``, gives the same encodings and decoding on the shared
English, Chinese and mixed samples, and writes the same JSON node."""

from __future__ import annotations

import pytest
from conftest import ref_vocab_dir
from parts_parity import check_all, corpus_lines, load_in_toktools
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers

from toktools.models.wordpiece.model import read_vocab_txt
from toktools.parts.base import Piece
from toktools.parts.normalizers import BertNormalizer
from toktools.parts.pre_tokenizers import BertPreTokenizer, ByteLevel


def _gpt2_bpe() -> models.BPE:
    directory = ref_vocab_dir("gpt2")
    return models.BPE.from_file(str(directory / "vocab.json"), str(directory / "merges.txt"))


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"lowercase": False},
        {"lowercase": False, "strip_accents": True},
        {"handle_chinese_chars": False, "clean_text": False},
    ],
)
def test_bert_normalizer_with_wordpiece(options):
    """Every option of BertNormalizer, with offsets through accents, CJK spacing and controls."""
    vocab = read_vocab_txt(ref_vocab_dir("bert-base-uncased") / "vocab.txt")
    hf = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    hf.normalizer = normalizers.BertNormalizer(**options)
    hf.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    hf.decoder = decoders.WordPiece()
    check_all(hf)


def test_bert_pre_tokenizer_without_normalizer():
    """BertPreTokenizer alone: the raw text is split, nothing is lower-cased."""
    vocab = read_vocab_txt(ref_vocab_dir("bert-base-chinese") / "vocab.txt")
    hf = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    hf.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    hf.decoder = decoders.WordPiece(prefix="##", cleanup=False)
    check_all(hf)


@pytest.mark.parametrize("add_prefix_space", [False, True])
@pytest.mark.parametrize("use_regex", [True, False])
def test_byte_level_pre_tokenizer_and_decoder(add_prefix_space, use_regex):
    """GPT-2's BPE under every ByteLevel setting: prefix-space offsets, the split, and bytes
    back to text (with replacement characters for cut UTF-8)."""
    hf = Tokenizer(_gpt2_bpe())
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=add_prefix_space, use_regex=use_regex)
    hf.decoder = decoders.ByteLevel()
    lines = corpus_lines(10_000 if not use_regex else 30_000)  # without the split, words are whole lines
    check_all(hf, lines)


def test_byte_level_after_a_normalizer_maps_offsets_through_both():
    """BertNormalizer then ByteLevel: each byte symbol keeps the span of its normalised
    character, which keeps the span of its original one."""
    hf = Tokenizer(_gpt2_bpe())
    hf.normalizer = normalizers.BertNormalizer(lowercase=True)
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    hf.decoder = decoders.ByteLevel()
    check_all(hf)


def test_sequence_of_two_pre_tokenizers_uses_the_general_path():
    """A pre-tokeniser Sequence is the other helper's part; here the two parts of this module
    chained by hand give what tokenizers gives for BertPreTokenizer then ByteLevel."""
    hf = Tokenizer(_gpt2_bpe())
    hf.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.BertPreTokenizer(), pre_tokenizers.ByteLevel()])
    ours = ByteLevel().pre_tokenize(BertPreTokenizer().pre_tokenize([Piece(text) for text in ["Héllo, wörld! 你好"]]))
    theirs = hf.pre_tokenizer.pre_tokenize_str("Héllo, wörld! 你好")
    assert [(p.text, p.original(0, len(p.text))) for p in ours] == [(t, tuple(o)) for t, o in theirs]


def test_part_methods_match_the_python_api():
    """``normalize_str`` and ``pre_tokenize_str`` as tokenizers' objects have them."""
    text = "Héllo,\tWORLD! 北京 a\u0301"
    assert BertNormalizer().normalize_str(text) == normalizers.BertNormalizer().normalize_str(text)
    assert BertPreTokenizer().pre_tokenize_str(text) == [
        (t, tuple(o)) for t, o in pre_tokenizers.BertPreTokenizer().pre_tokenize_str(text)
    ]
    for options in ({}, {"add_prefix_space": False}, {"use_regex": False}):
        theirs = pre_tokenizers.ByteLevel(**options).pre_tokenize_str(text)
        assert ByteLevel(**options).pre_tokenize_str(text) == [(t, tuple(o)) for t, o in theirs]


def test_byte_level_decoder_keeps_tokens_that_are_not_byte_symbols():
    """A token with characters outside the 256 symbols (an added ``【特殊】``) is its own UTF-8."""
    hf = Tokenizer(_gpt2_bpe())
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    hf.decoder = decoders.ByteLevel()
    hf.add_tokens(["【特殊】"])
    ours = load_in_toktools(hf)
    ids = hf.encode("a 【特殊】 b ä½ł").ids
    assert ours.decode(ids) == hf.decode(ids)
