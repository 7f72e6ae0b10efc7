"""The models: BPE (GPT-2-style byte-level, and classic with ``</w>``, ``unk_token``,
``fuse_unk``, ``byte_fallback``, ``continuing_subword_prefix``, ``ignore_merges``) and WordPiece.
Each is built with ``tokenizers``' Python API, loaded by toktools from ``tokenizer.json`` and
compared on the shared English, Chinese and mixed samples."""

from __future__ import annotations

import json

import pytest
from conftest import read_corpus_sample, ref_vocab_dir
from parts_parity import check_all, corpus_lines, load_in_toktools
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

from toktools.errors import ToktoolsError
from toktools.formats import from_tokenizer_json
from toktools.models.wordpiece.model import read_vocab_txt
from toktools.parts.models import BPE


@pytest.fixture(scope="module")
def training_text() -> list[str]:
    """English only: Chinese characters stay out of the alphabet, so they are unknown."""
    return read_corpus_sample("en_wiki.txt.gz", 200_000).split("\n")


def _classic(training_text: list[str], **model: object) -> tuple[dict[str, int], list[tuple[str, str]]]:
    """A classic (not byte-level) BPE trained by tokenizers on the BERT split of English."""
    trainer_options = {k: v for k, v in model.items() if k in ("continuing_subword_prefix", "end_of_word_suffix")}
    hf = Tokenizer(models.BPE(unk_token="<unk>", **trainer_options))
    hf.normalizer = normalizers.BertNormalizer(lowercase=False)
    hf.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    hf.train_from_iterator(
        training_text,
        trainers.BpeTrainer(
            vocab_size=2000, special_tokens=["<unk>"], limit_alphabet=80, show_progress=False, **trainer_options
        ),
    )
    saved = json.loads(hf.to_str())["model"]
    return saved["vocab"], [tuple(m) for m in saved["merges"]]


def _tokenizer(bpe: models.BPE, decoder: object | None = None) -> Tokenizer:
    hf = Tokenizer(bpe)
    hf.normalizer = normalizers.BertNormalizer(lowercase=False)
    hf.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    if decoder is not None:
        hf.decoder = decoder
    return hf


@pytest.mark.parametrize("fuse_unk", [False, True])
def test_classic_bpe_with_end_of_word_suffix_and_unk(training_text, fuse_unk):
    """``</w>`` on the last symbol, Chinese characters unknown: one ``<unk>`` each, or one per
    run with ``fuse_unk``; no decoder, so decode joins tokens with spaces."""
    vocab, merges = _classic(training_text, end_of_word_suffix="</w>")
    check_all(_tokenizer(models.BPE(vocab, merges, unk_token="<unk>", end_of_word_suffix="</w>", fuse_unk=fuse_unk)))


def test_classic_bpe_with_continuing_subword_prefix(training_text):
    """``##`` on every symbol after the first, WordPiece-style, decoded by the WordPiece decoder."""
    vocab, merges = _classic(training_text, continuing_subword_prefix="##")
    check_all(
        _tokenizer(models.BPE(vocab, merges, unk_token="<unk>", continuing_subword_prefix="##"), decoders.WordPiece())
    )


def test_classic_bpe_without_unk_drops_unknown_characters(training_text):
    """No unk token: unknown characters vanish, and the offsets of what follows in the word
    shift as tokenizers counts them."""
    vocab, merges = _classic(training_text, end_of_word_suffix="</w>")
    check_all(_tokenizer(models.BPE(vocab, merges, end_of_word_suffix="</w>")))


@pytest.mark.parametrize("unk", [None, "<unk>"])
def test_byte_fallback(training_text, unk):
    """``<0xNN>`` tokens for an unknown character when all its bytes have one (here: all 256).
    (No decoder: ByteFallback is tested with the other decoders.)"""
    vocab, merges = _classic(training_text)
    for byte in range(256):
        vocab.setdefault(f"<0x{byte:02X}>", len(vocab))
    check_all(_tokenizer(models.BPE(vocab, merges, unk_token=unk, byte_fallback=True, fuse_unk=True)))


def test_byte_fallback_with_missing_bytes_falls_back_to_unk(training_text):
    """Only the ASCII bytes have ``<0xNN>`` tokens: a Chinese character becomes ``<unk>``."""
    vocab, merges = _classic(training_text)
    for byte in range(128):
        vocab.setdefault(f"<0x{byte:02X}>", len(vocab))
    check_all(_tokenizer(models.BPE(vocab, merges, unk_token="<unk>", byte_fallback=True)))


def _gpt2() -> tuple[dict[str, int], list[tuple[str, str]]]:
    directory = ref_vocab_dir("gpt2")
    vocab = json.loads((directory / "vocab.json").read_text(encoding="utf-8"))
    lines = (directory / "merges.txt").read_text(encoding="utf-8").split("\n")[1:]
    return vocab, [tuple(line.split(" ")) for line in lines if line]


@pytest.mark.parametrize("ignore_merges", [False, True])
def test_byte_level_bpe_ignore_merges(ignore_merges):
    """Whole words added to GPT-2's vocabulary without merges: taken whole with
    ``ignore_merges``, merged piece by piece without."""
    vocab, merges = _gpt2()
    for word in ("Ġinternationalisation", "ĠBeijing", "Ġthe", "æĪĳ"):
        vocab.setdefault(word, len(vocab))
    hf = Tokenizer(models.BPE(vocab, merges, ignore_merges=ignore_merges))
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    hf.decoder = decoders.ByteLevel()
    ours = check_all(hf)
    text = "internationalisation in Beijing 我"
    assert ours.encode(text).tokens == hf.encode(text).tokens


def test_bpe_without_pre_tokenizer_sees_the_whole_text():
    """No pre-tokeniser: the model gets each fragment whole (here: GPT-2 on raw text, unknown
    characters dropped)."""
    vocab, merges = _gpt2()
    hf = Tokenizer(models.BPE(vocab, merges))
    check_all(hf, corpus_lines(3_000))


@pytest.mark.parametrize("options", [{}, {"max_input_chars_per_word": 5}, {"continuing_subword_prefix": "@@"}])
def test_wordpiece_model(options):
    """WordPiece with its options; ``@@`` with a vocabulary made of ``##`` pieces makes most
    words unknown, which must agree too."""
    vocab = read_vocab_txt(ref_vocab_dir("bert-base-uncased") / "vocab.txt")
    hf = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]", **options))
    hf.normalizer = normalizers.BertNormalizer()
    hf.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    hf.decoder = decoders.WordPiece(prefix=options.get("continuing_subword_prefix", "##"))
    check_all(hf)


def test_bpe_dropout_is_applied_and_an_impossible_one_refused_clearly():
    """A dropout is sampled as tokenizers does (tests/test_subword_sampling.py); one outside
    [0, 1] is one clear error."""
    vocab, merges = _gpt2()
    node = json.loads(Tokenizer(models.BPE(vocab, merges, dropout=0.1)).to_str())
    assert from_tokenizer_json(node).model.dropout == pytest.approx(0.1)
    node["model"]["dropout"] = 1.5
    with pytest.raises(ToktoolsError, match="dropout must be between 0 and 1"):
        from_tokenizer_json(node)


def test_model_files_are_the_ones_tokenizers_saves(tmp_path, training_text):
    """``save`` writes the model's own files as ``Model.save`` does, beside tokenizer.json."""
    vocab, merges = _classic(training_text, end_of_word_suffix="</w>")
    hf = _tokenizer(models.BPE(vocab, merges, unk_token="<unk>", end_of_word_suffix="</w>"))
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    hf.model.save(str(theirs))
    ours = load_in_toktools(hf)
    written = ours.save(tmp_path / "ours")
    assert sorted(p.name for p in written) == ["merges.txt", "tokenizer.json", "vocab.json"]
    for name in ("vocab.json", "merges.txt"):
        assert (tmp_path / "ours" / name).read_bytes() == (theirs / name).read_bytes()
    assert isinstance(ours.model, BPE) and ours.model.end_of_word_suffix == "</w>"
