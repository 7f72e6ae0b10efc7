"""The Tokenizer that runs the parts: added tokens matched in raw and in normalised text,
truncation and padding read from ``tokenizer.json``, batches over worker processes, the
presets, and a clear error for a part toktools does not know."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from conftest import ref_vocab_dir
from parts_parity import assert_same_encodings, check_all, corpus_lines, load_in_toktools
from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

from toktools.cli import main
from toktools.errors import ToktoolsError
from toktools.formats import from_tokenizer_json
from toktools.models.wordpiece.model import read_vocab_txt
from toktools.parts import decoders as our_decoders
from toktools.parts import models as our_models
from toktools.parts import post_processors as our_post_processors
from toktools.parts import pre_tokenizers as our_pre_tokenizers
from toktools.parts.registry import supported
from toktools.presets import bert_wordpiece, byte_level_bpe


def _bert() -> Tokenizer:
    vocab = read_vocab_txt(ref_vocab_dir("bert-base-uncased") / "vocab.txt")
    hf = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    hf.normalizer = normalizers.BertNormalizer()
    hf.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    hf.decoder = decoders.WordPiece()
    hf.post_processor = processors.BertProcessing(("[SEP]", vocab["[SEP]"]), ("[CLS]", vocab["[CLS]"]))
    hf.add_special_tokens(["[CLS]", "[SEP]", "[PAD]", "[MASK]", "[UNK]"])
    return hf


def _gpt2() -> Tokenizer:
    directory = ref_vocab_dir("gpt2")
    hf = Tokenizer(models.BPE.from_file(str(directory / "vocab.json"), str(directory / "merges.txt")))
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    hf.decoder = decoders.ByteLevel()
    return hf


EXTRA_LINES = [
    "Hello HELLO hello there",
    "the Hello-world of [MASK]s",
    "<mask> and <MASK>",
    " <|endoftext|>  x",
    "ÉCOLE école",
    "北京 北京大学",
    "word<|endoftext|>word",
]


def test_normalized_added_tokens_match_in_normalized_text():
    """``add_tokens`` makes normalised tokens: with a lower-casing normaliser ``HELLO`` and
    ``Hello`` match the token ``Hello`` (its content lower-cased too), with offsets in the
    original text; special tokens still match the raw text only."""
    hf = _bert()
    hf.add_tokens(
        ["Hello", AddedToken("École", normalized=True), AddedToken("北京", normalized=True, single_word=True)]
    )
    ours = check_all(hf, EXTRA_LINES + corpus_lines(10_000))
    assert ours.encode("HELLO").tokens == hf.encode("HELLO").tokens == ["[CLS]", "hello", "[SEP]"]


def test_lstrip_rstrip_single_word_tokens():
    hf = _gpt2()
    hf.add_special_tokens([AddedToken("<|endoftext|>", lstrip=True, rstrip=True)])
    hf.add_tokens([AddedToken("<mask>", single_word=True, normalized=False), AddedToken("world", normalized=True)])
    check_all(hf, EXTRA_LINES + corpus_lines(10_000))


def test_truncation_and_padding_come_from_tokenizer_json():
    hf = _bert()
    hf.enable_truncation(16, strategy="longest_first", direction="left")
    hf.enable_padding(pad_id=hf.token_to_id("[PAD]"), pad_token="[PAD]", pad_to_multiple_of=8)
    ours = load_in_toktools(hf)
    assert ours.to_tokenizer_json()["truncation"] == json.loads(hf.to_str())["truncation"]
    assert ours.to_tokenizer_json()["padding"] == json.loads(hf.to_str())["padding"]
    assert_same_encodings(ours, hf, corpus_lines(5_000))


def test_worker_processes_give_the_same_encodings():
    """The packed parallel path, with added tokens whose text differs from their content."""
    hf = _bert()
    hf.add_tokens(["Hello"])
    ours = load_in_toktools(hf)
    lines = (EXTRA_LINES + corpus_lines(10_000)) * 3
    assert ours.encode_batch(lines, workers=2) == ours.encode_batch(lines, workers=1)
    assert [e.tokens for e in ours.encode_batch(lines, workers=2)] == [e.tokens for e in hf.encode_batch(lines)]


def test_presets_are_the_parts_of_tokenizers_implementations():
    """``bert_wordpiece`` = BertWordPieceTokenizer, ``byte_level_bpe`` = ByteLevelBPETokenizer."""
    from tokenizers import BertWordPieceTokenizer, ByteLevelBPETokenizer

    vocab_path = ref_vocab_dir("bert-base-uncased") / "vocab.txt"
    ours = bert_wordpiece(read_vocab_txt(vocab_path))
    theirs = BertWordPieceTokenizer(str(vocab_path))
    assert ours.to_tokenizer_json() == json.loads(theirs._tokenizer.to_str())
    assert_same_encodings(ours, theirs._tokenizer, corpus_lines(5_000))

    directory = ref_vocab_dir("gpt2")
    gpt2 = Tokenizer.from_file(str(directory / "tokenizer.json"))
    model = json.loads(gpt2.to_str())["model"]
    ours = byte_level_bpe(model["vocab"], [tuple(m) for m in model["merges"]], add_prefix_space=True)
    theirs = ByteLevelBPETokenizer(str(directory / "vocab.json"), str(directory / "merges.txt"), add_prefix_space=True)
    mine, reference = ours.to_tokenizer_json(), json.loads(theirs._tokenizer.to_str())
    for key in ("normalizer", "pre_tokenizer", "post_processor", "decoder"):
        assert mine[key] == reference[key]
    assert_same_encodings(ours, theirs._tokenizer, corpus_lines(5_000))


def test_every_part_of_this_branch_is_registered():
    assert {"BertNormalizer"} <= set(supported("normalizer"))
    assert {"BertPreTokenizer", "ByteLevel"} <= set(supported("pre_tokenizer"))
    assert {"BPE", "WordPiece"} <= set(supported("model"))
    assert {"BertProcessing", "RobertaProcessing", "TemplateProcessing", "ByteLevel", "Sequence"} <= set(
        supported("post_processor")
    )
    assert {"ByteLevel", "WordPiece"} <= set(supported("decoder"))
    assert our_models.BPE.type == "BPE" and our_pre_tokenizers.ByteLevel.category == "pre_tokenizer"
    assert our_decoders.WordPiece.category == "decoder" and our_post_processors.Sequence.category == "post_processor"


def _with_unknown_pre_tokenizer(tmp_path):
    document = json.loads(_gpt2().to_str())
    document["pre_tokenizer"] = {"type": "Sqeuence", "pretokenizers": []}
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return document, path


def test_unknown_part_type_is_one_clear_error(tmp_path):
    document, _ = _with_unknown_pre_tokenizer(tmp_path)
    with pytest.raises(
        ToktoolsError, match=r"unsupported pre-tokenizer type 'Sqeuence' \(toktools supports: .*ByteLevel"
    ):
        from_tokenizer_json(document)


def test_unknown_part_type_in_the_cli_is_one_stderr_line(tmp_path):
    _, path = _with_unknown_pre_tokenizer(tmp_path)
    result = CliRunner().invoke(main, ["encode", "-t", str(path)], input="hello\n")
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("toktools: error: ") and "'Sqeuence'" in result.stderr
    assert "Traceback" not in result.output


@pytest.mark.parametrize("build", [_bert, _gpt2])
def test_the_general_path_gives_what_the_fast_lane_gives(build, monkeypatch):
    """Pre-tokenisers without a fast lane (a Sequence, Split …) hand the model one Piece per
    word; the result must not depend on which path ran (prefix spaces and normaliser spans
    included)."""
    hf = build()
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True) if build is _gpt2 else hf.pre_tokenizer
    lines = corpus_lines(5_000)
    fast_lane = load_in_toktools(hf).encode_batch(lines, workers=1)
    ours = load_in_toktools(hf)
    monkeypatch.setattr(type(ours.pre_tokenizer), "split_words", lambda self, piece: None)
    assert ours.encode_batch(lines, workers=1) == fast_lane
    assert_same_encodings(ours, hf, lines)
