"""The command line for Unigram: ``toktools train unigram``, built from the trainer registry like
``train bytebpe`` and ``train wordpiece``.

Pinned here, on samples of the shared English and Chinese corpora:

* ``train unigram`` writes ``unigram.json`` and ``tokenizer.json`` (and the transformers config);
  the pipeline around the model is exactly ``tokenizers``' ``SentencePieceUnigramTokenizer``
  (Nmt, NFKC, runs of spaces, Metaspace always) — the whole ``tokenizer.json`` but the model
  node is equal to the one ``--backend fast`` writes;
* ``tokenizers`` itself, loading our ``tokenizer.json``, gives the same ids, offsets and decoded
  text as toktools on held-out lines; ``transformers.AutoTokenizer.from_pretrained(DIR)`` gives
  the same ids;
* the two backends learn nearly the same pieces (``tokenizers``' Unigram training visits words in
  hash order, so near-ties differ from run to run: ``shared/spec/unigram.md`` §5.6) and the
  same characters;
* ``count --model unigram`` then ``train unigram --from-counts`` writes the same files as
  training from the corpus.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import read_corpus_sample

import toktools
from toktools.cli import main

VOCAB = 1200


def run(*args: object):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> list[Path]:
    folder = tmp_path_factory.mktemp("unigram-corpus")
    (folder / "en.txt").write_text(read_corpus_sample("mixed_sample.txt", 40_000), encoding="utf-8")
    (folder / "zh.txt").write_text(read_corpus_sample("zh_novels.txt", 15_000), encoding="utf-8")
    return [folder / "en.txt", folder / "zh.txt"]


@pytest.fixture(scope="module")
def heldout() -> list[str]:
    english = read_corpus_sample("mixed_sample.txt", 12_000, skip_lines=2000).splitlines()
    chinese = read_corpus_sample("zh_novels.txt", 6_000, skip_lines=2000).splitlines()
    return [*english, *chinese, "  Two  spaces\tand a tab ", "ﬁve ① Ｆｕｌｌ", "unseen: ☃ 𝔘", ""]


@pytest.fixture(scope="module")
def trained(corpus, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("unigram") / "reference"
    result = run("train", "unigram", *corpus, "-o", out, "--vocab-size", VOCAB)
    assert result.exit_code == 0, result.stderr
    assert result.stderr.startswith("trained unigram (reference)")
    return out


@pytest.fixture(scope="module")
def trained_fast(corpus, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("unigram") / "fast"
    result = run("train", "unigram", *corpus, "-o", out, "--vocab-size", VOCAB, "--backend", "fast")
    assert result.exit_code == 0, result.stderr
    assert result.stderr.startswith("trained unigram (fast)")
    return out


def test_writes_the_model_file_tokenizer_json_and_transformers_config(trained):
    assert sorted(p.name for p in trained.iterdir()) == [
        "special_tokens_map.json",
        "tokenizer.json",
        "tokenizer_config.json",
        "unigram.json",
    ]
    document = json.loads((trained / "tokenizer.json").read_text(encoding="utf-8"))
    assert json.loads((trained / "unigram.json").read_text(encoding="utf-8")) == document["model"]
    assert len(document["model"]["vocab"]) == VOCAB and document["model"]["unk_id"] == 0
    assert json.loads((trained / "special_tokens_map.json").read_text(encoding="utf-8")) == {"unk_token": "<unk>"}


def test_the_pipeline_is_sentencepiece_unigram_tokenizers(trained, trained_fast):
    """Everything but the learnt pieces is what tokenizers writes for the same training."""
    ours = json.loads((trained / "tokenizer.json").read_text(encoding="utf-8"))
    theirs = json.loads((trained_fast / "tokenizer.json").read_text(encoding="utf-8"))
    assert {k: v for k, v in ours.items() if k != "model"} == {k: v for k, v in theirs.items() if k != "model"}
    assert ours["normalizer"]["normalizers"] == [
        {"type": "Nmt"},
        {"type": "NFKC"},
        {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "},
    ]


def test_both_backends_learn_nearly_the_same_pieces(trained, trained_fast):
    ours = [p for p, _ in json.loads((trained / "unigram.json").read_text(encoding="utf-8"))["vocab"]]
    theirs = [p for p, _ in json.loads((trained_fast / "unigram.json").read_text(encoding="utf-8"))["vocab"]]
    assert len(ours) == len(theirs) == VOCAB
    assert {p for p in ours if len(p) == 1} == {p for p in theirs if len(p) == 1}  # every character, both sides
    assert len(set(ours) & set(theirs)) >= 0.97 * VOCAB


def test_tokenizers_encodes_our_tokenizer_json_identically(trained, heldout):
    from tokenizers import Tokenizer

    theirs = Tokenizer.from_file(str(trained / "tokenizer.json"))
    ours = toktools.load(trained)
    for line in heldout:
        expected, got = theirs.encode(line), ours.encode(line)
        assert got.ids == expected.ids, line
        assert [tuple(o) for o in got.offsets] == expected.offsets, line
        assert ours.decode(got.ids) == theirs.decode(expected.ids), line


def test_transformers_autotokenizer_gives_the_same_ids(trained, heldout):
    transformers = pytest.importorskip("transformers", reason="transformers is not installed")
    auto = transformers.AutoTokenizer.from_pretrained(str(trained))  # a local directory: no download
    ours = toktools.load(trained)
    assert auto.unk_token == "<unk>"
    for line in heldout:
        assert auto(line)["input_ids"] == ours.encode(line).ids, line


def test_albert_roles_go_to_the_transformers_config(corpus, tmp_path):
    """With ALBERT's special tokens, transformers knows each of them by its role."""
    transformers = pytest.importorskip("transformers", reason="transformers is not installed")
    out = tmp_path / "albert"
    result = run(
        "train",
        "unigram",
        corpus[0],
        "-o",
        out,
        "--vocab-size",
        600,
        "--special-tokens",
        "<pad>,<unk>,[CLS],[SEP],[MASK]",
    )
    assert result.exit_code == 0, result.stderr
    auto = transformers.AutoTokenizer.from_pretrained(str(out))
    assert (auto.pad_token, auto.unk_token, auto.cls_token, auto.sep_token, auto.mask_token) == (
        "<pad>",
        "<unk>",
        "[CLS]",
        "[SEP]",
        "[MASK]",
    )
    assert auto.unk_token_id == 1 and auto.mask_token_id == 4
    text = "The [MASK] sat on the mat, 滚滚长江东逝水。"  # (the Chinese characters are unknown here)
    assert auto(text)["input_ids"] == toktools.load(out).encode(text).ids


def test_counting_once_then_training_from_counts_gives_the_same_files(corpus, trained, tmp_path):
    counts = tmp_path / "words.counts"
    assert run("count", *corpus, "--model", "unigram", "-o", counts).exit_code == 0
    out = tmp_path / "from-counts"
    result = run("train", "unigram", "--from-counts", counts, "-o", out, "--vocab-size", VOCAB)
    assert result.exit_code == 0, result.stderr
    for name in ("unigram.json", "tokenizer.json"):
        assert (out / name).read_bytes() == (trained / name).read_bytes(), name


def test_counts_of_another_kind_are_refused(corpus, tmp_path):
    counts = tmp_path / "bpe.counts"
    assert run("count", *corpus, "--model", "bytebpe", "-o", counts).exit_code == 0
    result = run("train", "unigram", "--from-counts", counts, "-o", tmp_path / "out")
    assert result.exit_code == 1 and "holds bytebpe counts; this is a unigram training" in result.stderr


def test_a_vocabulary_smaller_than_the_characters_is_one_line_error(corpus, tmp_path):
    result = run("train", "unigram", corpus[1], "-o", tmp_path / "out", "--vocab-size", 50)
    assert result.exit_code == 1
    assert (
        result.stderr.startswith("toktools: error: vocab size 50 is smaller than the")
        and "Traceback" not in result.stderr
    )
    assert not (tmp_path / "out").exists()


def test_a_shrinking_factor_that_would_never_prune_is_a_usage_error(corpus, tmp_path):
    result = run("train", "unigram", corpus[1], "-o", tmp_path / "out", "--shrinking-factor", "1")
    assert result.exit_code == 2 and "--shrinking-factor must be between 0 and 1" in result.stderr
    assert not (tmp_path / "out").exists()


def test_library_call_is_the_cli_training(corpus, trained):
    """``toktools.train("unigram", ...)`` is what the command runs."""
    tokenizer = toktools.train("unigram", [str(p) for p in corpus], vocab_size=VOCAB)
    assert tokenizer.to_tokenizer_json() == json.loads((trained / "tokenizer.json").read_text(encoding="utf-8"))


# -- as a sentencepiece .model ---------------------------------------------------------------------


def test_convert_to_spiece_model_gives_the_tokenizer_ids_in_sentencepiece(trained, heldout, tmp_path):
    """``convert --to spiece.model`` turns Nmt + NFKC into a charsmap sentencepiece applies by
    longest match, and runs of spaces into ``remove_extra_whitespaces``. The one rule it cannot
    follow on real text: the tokenizer keeps a trailing space as a ``▁`` piece, sentencepiece trims
    it (``toktools.sentencepiece.to_json.json_to_sentencepiece``)."""
    spm = pytest.importorskip("sentencepiece", reason="sentencepiece is not installed (test extra)")
    result = run("convert", trained, "--to", "spiece.model", "-o", tmp_path / "spm")
    assert result.exit_code == 0, result.stderr
    sp = spm.SentencePieceProcessor(model_file=str(tmp_path / "spm" / "spiece.model"))
    ours = toktools.load(trained)
    assert sp.get_piece_size() == VOCAB and sp.unk_id() == 0
    odd = [
        "Ｆｕｌｌ ｗｉｄｔｈ",
        "cafe\u0301 nai\u0308ve",
        "\u1100\u1161\u11a8",
        "tab\there",
        "zero\u200bwidth",
        "\x01ctl\x7f",
    ]
    lines = heldout + odd
    trailing = {line for line in lines if ours.normalizer.normalize_str(line).endswith(" ")}
    assert trailing == {"  Two  spaces\tand a tab "}
    differ = {line for line in lines if sp.encode(line) != ours.encode(line).ids}
    assert differ == trailing
    from toktools.sentencepiece.model_file import read_model

    spec = read_model(tmp_path / "spm" / "spiece.model").normalizer_spec
    assert spec.get("name") == "nmt_nfkc" and spec.get("remove_extra_whitespaces") and spec.get("add_dummy_prefix")


def test_the_model_written_for_a_lowercasing_normalizer_lowercases(trained, tmp_path):
    """A Lowercase step after NFKC goes into the charsmap too."""
    spm = pytest.importorskip("sentencepiece", reason="sentencepiece is not installed (test extra)")
    document = json.loads((trained / "tokenizer.json").read_text(encoding="utf-8"))
    document["normalizer"]["normalizers"].insert(2, {"type": "Lowercase"})
    (tmp_path / "lower").mkdir()
    (tmp_path / "lower" / "tokenizer.json").write_text(json.dumps(document), encoding="utf-8")
    result = run("convert", tmp_path / "lower", "--to", "spiece.model", "-o", tmp_path / "spm")
    assert result.exit_code == 0, result.stderr
    sp = spm.SentencePieceProcessor(model_file=str(tmp_path / "spm" / "spiece.model"))
    ours = toktools.load(tmp_path / "lower")
    for line in ["The QUICK Ｂｒｏｗｎ ÉCOLE", "ΣΊΣΥΦΟΣ and İstanbul", "ＡＢＣ ① Ⅻ"]:
        assert sp.encode(line) == ours.encode(line).ids, line
    assert sp.normalize("The QUICK") == "▁the▁quick"


def test_a_normalizer_sentencepiece_cannot_express_is_one_line_error(trained, tmp_path):
    document = json.loads((trained / "tokenizer.json").read_text(encoding="utf-8"))
    document["normalizer"]["normalizers"].append({"type": "Replace", "pattern": {"Regex": "[0-9]+"}, "content": "0"})
    (tmp_path / "digits").mkdir()
    (tmp_path / "digits" / "tokenizer.json").write_text(json.dumps(document), encoding="utf-8")
    result = run("convert", tmp_path / "digits", "--to", "spiece.model", "-o", tmp_path / "spm")
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("toktools: error: the normalizer step 'Replace'"), result.stderr
    assert "no sentencepiece equivalent" in lines[0]
    assert not (tmp_path / "spm").exists()
