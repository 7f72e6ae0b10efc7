"""The post-processors (BertProcessing, RobertaProcessing, TemplateProcessing, ByteLevel,
Sequence): built with ``tokenizers``' Python API, loaded by toktools, the same special tokens,
type ids, masks and trimmed offsets for single sequences and pairs, with and without special
tokens and under truncation."""

from __future__ import annotations

import pytest
from conftest import ref_vocab_dir
from parts_parity import assert_same_encodings, check_all, corpus_lines, load_in_toktools
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

from toktools.models.wordpiece.model import read_vocab_txt
from toktools.tokenizer import Tokenizer as OurTokenizer


def _bert() -> Tokenizer:
    vocab = read_vocab_txt(ref_vocab_dir("bert-base-uncased") / "vocab.txt")
    hf = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    hf.normalizer = normalizers.BertNormalizer()
    hf.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    hf.decoder = decoders.WordPiece()
    hf.add_special_tokens(["[CLS]", "[SEP]", "[PAD]", "[MASK]", "[UNK]"])
    return hf


def _gpt2(add_prefix_space: bool = True) -> Tokenizer:
    directory = ref_vocab_dir("gpt2")
    hf = Tokenizer(models.BPE.from_file(str(directory / "vocab.json"), str(directory / "merges.txt")))
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=add_prefix_space)
    hf.decoder = decoders.ByteLevel()
    hf.add_special_tokens(["<|endoftext|>"])
    return hf


#: Bytes of each shared corpus the checks read: a sample by default (post-processing is about the
#: special tokens, type ids and offsets around the model's tokens, which every line exercises),
#: the parts suite's full 30 KB per corpus under -m full.
SIZES = [5_000, pytest.param(30_000, marks=pytest.mark.full)]


def _check_without_specials_and_truncated(hf: Tokenizer, ours: OurTokenizer) -> None:
    """The same with ``add_special_tokens=False`` and with truncation leaving room for them
    (``ours``: ``hf`` as ``check_all`` loaded it, so not loaded a second time)."""
    lines = corpus_lines(5_000)
    pairs = list(zip(lines[::2], lines[1::2]))
    for item in lines[:50] + pairs[:50]:
        text, pair = (item, None) if isinstance(item, str) else item
        a, b = ours.encode(text, pair, add_special_tokens=False), hf.encode(text, pair, add_special_tokens=False)
        assert (a.ids, a.type_ids, a.offsets) == (b.ids, b.type_ids, [tuple(o) for o in b.offsets]), item
    hf.enable_truncation(12)
    ours = load_in_toktools(hf)
    # every field, overflowing windows included (a long line cut to 12 makes dozens of them)
    assert_same_encodings(ours, hf, lines[:30])


@pytest.mark.parametrize("size", SIZES)
def test_bert_processing(size):
    hf = _bert()
    hf.post_processor = processors.BertProcessing(
        ("[SEP]", hf.token_to_id("[SEP]")), ("[CLS]", hf.token_to_id("[CLS]"))
    )
    _check_without_specials_and_truncated(hf, check_all(hf, corpus_lines(size)))


@pytest.mark.parametrize(
    "trim_offsets, add_prefix_space, size",
    # ~9 s each at full size since truncation compares every overflowing window of a pair (their
    # number multiplies): one combination on a sample by default, all four whole under -m full
    [
        (True, True, 5_000),
        *(
            pytest.param(*c, 30_000, marks=pytest.mark.full)
            for c in [(True, True), (True, False), (False, True), (False, False)]
        ),
    ],
)
def test_roberta_processing(trim_offsets, add_prefix_space, size):
    """``<s> A </s></s> B </s>``, all type ids 0, offsets trimmed of spaces (one prefix space kept)."""
    hf = _gpt2(add_prefix_space)
    hf.add_special_tokens(["<s>", "</s>"])
    hf.post_processor = processors.RobertaProcessing(
        ("</s>", hf.token_to_id("</s>")),
        ("<s>", hf.token_to_id("<s>")),
        trim_offsets=trim_offsets,
        add_prefix_space=add_prefix_space,
    )
    _check_without_specials_and_truncated(hf, check_all(hf, corpus_lines(size)))


@pytest.mark.parametrize("trim_offsets", [True, False])
@pytest.mark.parametrize("size", SIZES)
def test_byte_level_processing(trim_offsets, size):
    hf = _gpt2()
    hf.post_processor = processors.ByteLevel(trim_offsets=trim_offsets)
    check_all(hf, corpus_lines(size))


@pytest.mark.parametrize("size", SIZES)
def test_template_processing_of_any_shape(size):
    """Type ids from the template (B:1), a special token made of two ids, and a pair template
    that starts with a special token of type 1."""
    hf = _bert()
    cls, sep, mask = (hf.token_to_id(t) for t in ("[CLS]", "[SEP]", "[MASK]"))
    hf.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] [TWO]:1 $B:1 [SEP]:1",
        special_tokens=[
            ("[CLS]", cls),
            ("[SEP]", sep),
            {"id": "[TWO]", "ids": [mask, sep], "tokens": ["[MASK]", "[SEP]"]},
        ],
    )
    _check_without_specials_and_truncated(hf, check_all(hf, corpus_lines(size)))


@pytest.mark.parametrize("size", SIZES)
def test_sequence_of_byte_level_and_template(size):
    """Trim offsets, then add ``<|endoftext|>`` at the end (the Llama-3 shape)."""
    hf = _gpt2(add_prefix_space=False)
    eot = hf.token_to_id("<|endoftext|>")
    hf.post_processor = processors.Sequence(
        [
            processors.ByteLevel(trim_offsets=True),
            processors.TemplateProcessing(
                single="$A <|endoftext|>",
                pair="$A <|endoftext|> $B:1 <|endoftext|>:1",
                special_tokens=[("<|endoftext|>", eot)],
            ),
        ]
    )
    _check_without_specials_and_truncated(hf, check_all(hf, corpus_lines(size)))
