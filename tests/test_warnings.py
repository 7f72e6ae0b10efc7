"""Honest warnings and usage errors (issue 21, items 4 and 5).

Each warning is triggered on a realistic input (a published ``tokenizer.json``, the shapes of
``real_shapes.py``), its numbers checked against ``tokenizers`` / sentencepiece, silenced by
``--quiet``, and absent on ordinary input. Every conflicting pair of options is a usage error
(exit 2, one ``Error:`` line, no traceback); a wrong tokenizer name suggests the shipped ones.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import click
import pytest
import real_shapes
from click.testing import CliRunner
from conftest import read_corpus_sample, ref_vocab_dir

from toktools.cli import main

pytestmark = pytest.mark.shared

WARNING = "toktools: warning:"


def run(*args: str, input: str | None = None):
    return CliRunner().invoke(main, [str(a) for a in args], input=input, catch_exceptions=False)


def warnings_of(result) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith(WARNING)]


@pytest.fixture(scope="module")
def shapes(tmp_path_factory) -> dict[str, Path]:
    """Small versions of the real shapes: long documents, Chinese paragraphs, English lines."""
    folder = tmp_path_factory.mktemp("shapes")
    english = [line for line in real_shapes.english_lines()[:150] if len(line) > 40]
    plain = folder / "english.txt"
    plain.write_text("\n".join(english) + "\n", encoding="utf-8")
    return {
        "long": real_shapes.long_documents(folder / "long.txt", count=2, low=20_000, high=25_000),
        "chinese": real_shapes.chinese_paragraphs(folder / "zh.txt", count=3, low=2_000, high=3_000),
        "english": plain,
    }


def _tokenizers(path: Path, *, truncation: bool = True, padding: bool = True):
    import tokenizers

    tokenizer = tokenizers.Tokenizer.from_file(str(path))
    if not truncation:
        tokenizer.no_truncation()
    if not padding:
        tokenizer.no_padding()
    return tokenizer


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").split("\n")[:-1]


# ---------------------------------------------------------------------------------------------
# 4a. the tokenizer file's own truncation and padding, in the text formats
# ---------------------------------------------------------------------------------------------


def test_the_file_truncation_is_applied_with_one_warning(shapes) -> None:
    """GPT-2's published tokenizer.json truncates to 50 tokens: applied (tokenizers does), said once."""
    gpt2 = ref_vocab_dir("gpt2") / "tokenizer.json"
    result = run("encode", "-t", gpt2, "--verify", "0", shapes["long"])
    assert result.exit_code == 0, result.stderr
    expected = [" ".join(map(str, e.ids)) for e in _tokenizers(gpt2).encode_batch(_lines(shapes["long"]))]
    assert result.stdout.splitlines() == expected and all(len(line.split()) == 50 for line in expected)
    (warning,) = warnings_of(result)
    assert "truncates every encoding to 50 tokens" in warning and "--no-truncation" in warning

    whole = run("encode", "-t", gpt2, shapes["long"], "--no-truncation")
    assert whole.exit_code == 0 and warnings_of(whole) == []
    untruncated = _tokenizers(gpt2, truncation=False).encode_batch(_lines(shapes["long"]))
    assert whole.stdout.splitlines() == [" ".join(map(str, e.ids)) for e in untruncated]
    assert all(len(e.ids) > 1000 for e in untruncated)

    quiet = run("encode", "-t", gpt2, "--verify", "0", shapes["long"], "--quiet")
    assert quiet.exit_code == 0 and quiet.stderr == "" and quiet.stdout == result.stdout
    # --max-length replaces the file's limit: nothing to warn about
    assert warnings_of(run("encode", "-t", gpt2, "--verify", "0", shapes["long"], "--max-length", "20")) == []


def test_the_file_padding_is_applied_with_one_warning(shapes) -> None:
    """bert-base-uncased's published tokenizer.json truncates to 128 and pads to 128."""
    bert = ref_vocab_dir("bert-base-uncased") / "tokenizer.json"
    result = run("encode", "-t", bert, "--verify", "0", shapes["english"], "--format", "tokens")
    assert result.exit_code == 0, result.stderr
    expected = [" ".join(e.tokens) for e in _tokenizers(bert).encode_batch(_lines(shapes["english"]))]
    assert result.stdout.splitlines() == expected
    found = warnings_of(result)
    assert len(found) == 2
    assert "truncates every encoding to 128 tokens" in found[0]
    assert "pads every encoding with [PAD] to 128 tokens" in found[1] and "--no-padding" in found[1]

    plain = run("encode", "-t", bert, shapes["english"], "--no-padding", "--no-truncation")
    assert plain.exit_code == 0 and warnings_of(plain) == []
    bare = _tokenizers(bert, truncation=False, padding=False).encode_batch(_lines(shapes["english"]))
    assert plain.stdout.splitlines() == [" ".join(map(str, e.ids)) for e in bare]
    assert run("encode", "-t", bert, "--verify", "0", shapes["english"], "-q").stderr == ""


def test_a_tokenizer_without_truncation_or_padding_does_not_warn(shapes) -> None:
    result = run("encode", "-t", "bytebpe-50k", "--verify", "0", shapes["long"])
    assert result.exit_code == 0 and result.stderr == ""


# ---------------------------------------------------------------------------------------------
# 4b. unknown and byte-fallback tokens
# ---------------------------------------------------------------------------------------------


def _unk_warning(result) -> tuple[int, int]:
    (warning,) = [w for w in warnings_of(result) if "unknown token" in w]
    unknown, total = re.search(r"warning: ([\d,]+) of ([\d,]+) tokens", warning).groups()
    return int(unknown.replace(",", "")), int(total.replace(",", ""))


def test_unknown_tokens_above_one_percent_warn(shapes, tmp_path) -> None:
    """bert-base-uncased on Chinese paragraphs: most simplified characters are [UNK]."""
    bert = ref_vocab_dir("bert-base-uncased") / "tokenizer.json"
    lines = _lines(shapes["chinese"])
    reference = _tokenizers(bert, truncation=False, padding=False)
    unk = reference.token_to_id("[UNK]")

    text = run("encode", "-t", bert, shapes["chinese"], "--no-truncation", "--no-padding")
    assert text.exit_code == 0, text.stderr
    with_template = [i for e in reference.encode_batch(lines) for i in e.ids]
    assert _unk_warning(text) == (with_template.count(unk), len(with_template))
    assert with_template.count(unk) / len(with_template) > 0.3

    megatron = run(
        "encode", "-t", bert, "--verify", "0", shapes["chinese"], "--format", "megatron", "-o", tmp_path / "zh"
    )
    assert megatron.exit_code == 0, megatron.stderr
    plain = [i for e in reference.encode_batch(lines, add_special_tokens=False) for i in e.ids]
    assert _unk_warning(megatron) == (plain.count(unk), len(plain))
    # in blocks (as on a cluster): each block counts, the client sums
    blocks = run("encode", "-t", bert, "--verify", "0", shapes["chinese"], "--format", "megatron",
                 "-o", tmp_path / "b", "--block-size", "4KB")  # fmt: skip
    assert blocks.exit_code == 0, blocks.stderr
    assert len(list(tmp_path.glob("b-*.idx"))) > 1 and _unk_warning(blocks) == (plain.count(unk), len(plain))

    quiet = run(
        "encode",
        "-t",
        bert,
        "--verify",
        "0",
        shapes["chinese"],
        "--format",
        "megatron",
        "-o",
        tmp_path / "q",
        "--quiet",
    )
    assert quiet.exit_code == 0 and warnings_of(quiet) == []


def test_ordinary_english_does_not_warn_about_unknown_tokens(shapes, tmp_path) -> None:
    for args in (["--format", "ids"], ["--format", "megatron", "-o", tmp_path / "en"]):
        result = run("encode", "-t", "wordpiece-30k", "--verify", "0", shapes["english"], *args)
        assert result.exit_code == 0 and warnings_of(result) == [], result.stderr


def _english_spm(folder: Path, name: str, **options) -> Path:
    """A small sentencepiece Unigram model trained on English only."""
    spm = pytest.importorskip("sentencepiece")
    text = folder / "en.txt"
    text.write_text(read_corpus_sample("mixed_sample.txt", 40_000), encoding="utf-8")
    spm.SentencePieceTrainer.train(
        input=str(text),
        model_prefix=str(folder / name),
        num_threads=1,
        vocab_size=500,
        character_coverage=1.0,
        minloglevel=2,
        **options,
    )
    return folder / f"{name}.model"


@pytest.fixture(scope="module")
def byte_fallback_model(tmp_path_factory) -> Path:
    return _english_spm(tmp_path_factory.mktemp("spm"), "bytes", byte_fallback=True)


def test_unigram_unknown_pieces_warn(shapes, tmp_path) -> None:
    """A Unigram model without byte fallback (its unk_id) on Chinese: counted as sentencepiece does."""
    import sentencepiece

    model = _english_spm(tmp_path, "plain")
    processor = sentencepiece.SentencePieceProcessor(model_file=str(model))
    ids = [i for line in _lines(shapes["chinese"]) for i in processor.encode(line)]
    result = run("encode", "-t", model, "--verify", "0", shapes["chinese"], "--format", "megatron", "-o",
                 tmp_path / "zh")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert _unk_warning(result) == (ids.count(processor.unk_id()), len(ids))


def test_byte_fallback_pieces_above_five_percent_warn(shapes, byte_fallback_model, tmp_path) -> None:
    import sentencepiece

    processor = sentencepiece.SentencePieceProcessor(model_file=str(byte_fallback_model))
    pieces = [processor.encode(line, out_type=str) for line in _lines(shapes["chinese"])]
    total = sum(len(p) for p in pieces)
    fallback = sum(1 for p in pieces for piece in p if re.fullmatch(r"<0x[0-9A-F]{2}>", piece))

    result = run(
        "encode",
        "-t",
        byte_fallback_model,
        "--verify",
        "0",
        shapes["chinese"],
        "--format",
        "megatron",
        "-o",
        tmp_path / "zh",
    )
    assert result.exit_code == 0, result.stderr
    (warning,) = [w for w in warnings_of(result) if "byte-fallback" in w]
    assert f"{fallback:,} of {total:,} tokens" in warning and fallback / total > 0.5
    quiet = run("encode", "-t", byte_fallback_model, "--verify", "0", shapes["chinese"], "--format", "megatron",
                "-o", tmp_path / "q", "-q")  # fmt: skip
    assert quiet.exit_code == 0 and warnings_of(quiet) == []
    english = run("encode", "-t", byte_fallback_model, "--verify", "0", shapes["english"], "--format", "megatron",
                  "-o", tmp_path / "en")  # fmt: skip
    assert english.exit_code == 0 and not [w for w in warnings_of(english) if "byte-fallback" in w]


# ---------------------------------------------------------------------------------------------
# 4c. pretrain-data: NSP/SOP on single-line documents, truncation
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def paragraphs(tmp_path_factory) -> Path:
    """One Wikipedia paragraph per line, a blank line between them: every document is one line."""
    lines = [line for line in read_corpus_sample("en_wiki.txt.gz", 150_000).splitlines() if len(line) > 80]
    path = tmp_path_factory.mktemp("para") / "paragraphs.txt"
    path.write_text("\n\n".join(lines[:300]) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def sentences(tmp_path_factory) -> Path:
    """BERT's layout: one sentence per line, a blank line between articles."""
    articles = read_corpus_sample("en_wiki.txt.gz", 150_000).split("\n\n")
    out = []
    for article in articles:
        split = [s for line in article.splitlines() for s in re.split(r"(?<=[.!?])\s+(?=[A-Z])", line) if s.strip()]
        if split:
            out.append("\n".join(split))
    path = tmp_path_factory.mktemp("sent") / "sentences.txt"
    path.write_text("\n\n".join(out) + "\n", encoding="utf-8")
    return path


def test_nsp_on_single_line_documents_warns(paragraphs, tmp_path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    out = tmp_path / "nsp.parquet"
    args = ["pretrain-data", paragraphs, "-t", "wordpiece-30k", "-o", out, "--objective", "mlm+nsp"]
    result = run(*args, "--max-length", "128")
    assert result.exit_code == 0, result.stderr
    labels = pq.read_table(out).column("next_sentence_label").to_pylist()
    assert sum(labels) == len(labels)  # every pair random: a one-line document has no next sentence
    found = warnings_of(result)
    assert any("100% of the next_sentence_label pairs are random" in w and "single line" in w for w in found)
    assert any("truncation to --max-length 128 dropped" in w for w in found)
    quiet = run(*args, "--max-length", "128", "--force", "--quiet")
    assert quiet.exit_code == 0 and warnings_of(quiet) == []


def test_sop_truncation_share_matches_tokenizers(paragraphs, tmp_path) -> None:
    """A one-line document is one SOP pair cut to max_length - 3 text tokens: what is dropped is
    what each line has beyond that, counted here with tokenizers."""
    result = run(
        "pretrain-data", paragraphs, "-t", "wordpiece-30k", "-o", tmp_path / "sop.parquet",
        "--objective", "mlm+sop", "--max-length", "64",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    reference = _tokenizers(Path(__file__).parents[1] / "vocabs" / "wordpiece-30k" / "tokenizer.json")
    reference.no_truncation()
    reference.no_padding()
    texts = [line for line in paragraphs.read_text(encoding="utf-8").splitlines() if line.strip()]
    lengths = [len(e.ids) for e in reference.encode_batch(texts, add_special_tokens=False)]
    dropped = sum(max(0, n - 61) for n in lengths if n >= 2)
    (warning,) = [w for w in warnings_of(result) if "truncation" in w]
    assert f"dropped {dropped:,} tokens" in warning
    assert any("sentence_order_label pairs are mostly one line cut" in w for w in warnings_of(result))


def test_bert_layout_does_not_warn(sentences, tmp_path) -> None:
    for objective in ("mlm+nsp", "mlm+sop"):
        result = run(
            "pretrain-data", sentences, "-t", "wordpiece-30k", "-o", tmp_path / f"{objective}.parquet",
            "--objective", objective, "--max-length", "512",
        )  # fmt: skip
        assert result.exit_code == 0 and warnings_of(result) == [], (objective, result.stderr)


def test_pretrain_data_warns_about_unknown_tokens(shapes, tmp_path) -> None:
    bert = ref_vocab_dir("bert-base-uncased")
    text = shapes["chinese"].read_text(encoding="utf-8")
    corpus = tmp_path / "zh.txt"
    corpus.write_text("\n\n".join(text.splitlines()) + "\n", encoding="utf-8")
    result = run("pretrain-data", corpus, "-t", bert, "-o", tmp_path / "zh.parquet")
    assert result.exit_code == 0, result.stderr
    reference = _tokenizers(bert / "tokenizer.json", truncation=False, padding=False)
    ids = [i for e in reference.encode_batch(text.splitlines(), add_special_tokens=False) for i in e.ids]
    assert _unk_warning(result) == (ids.count(reference.token_to_id("[UNK]")), len(ids))


# ---------------------------------------------------------------------------------------------
# 4d. train: the --limit-alphabet hint (the Chinese case is in test_cli_report.py)
# ---------------------------------------------------------------------------------------------


def test_chinese_wordpiece_names_limit_alphabet_and_quiet_silences_it(shapes, tmp_path) -> None:
    """Every Chinese character is a word of its own: the hint is the alphabet limit that keeps
    every character, and training again with it drops none (and does not say to raise it)."""
    args = ["train", "wordpiece", shapes["chinese"], "--vocab-size", "30000", "--no-progress"]
    result = run(*args, "-o", tmp_path / "a")
    assert result.exit_code == 0, result.stderr
    (warning,) = warnings_of(result)
    assert "a larger corpus would not help" in warning
    every = int(re.search(r"--limit-alphabet (\d+) keeps all \1$", warning).group(1))
    again = run(*args, "-o", tmp_path / "b", "--limit-alphabet", str(every), "--quiet")
    assert again.exit_code == 0 and warnings_of(again) == [], again.stderr
    assert f"alphabet of {every} characters" in again.stderr
    fewer = run(*args, "-o", tmp_path / "c", "--limit-alphabet", str(every - 1))
    assert f"--limit-alphabet {every - 1} dropped 1 characters" in fewer.stderr


def test_a_full_vocabulary_does_not_warn(shapes, tmp_path) -> None:
    result = run("train", "bytebpe", shapes["english"], "-o", tmp_path / "bpe", "--vocab-size", "400", "--no-progress")
    assert result.exit_code == 0 and warnings_of(result) == [], result.stderr


# ---------------------------------------------------------------------------------------------
# 4e. a rerun that keeps every shard
# ---------------------------------------------------------------------------------------------


def test_a_finished_sharded_run_says_nothing_to_do(shapes, tmp_path) -> None:
    args = ["encode", "-t", "bytebpe-50k", shapes["english"], "--format", "megatron", "-o", tmp_path / "s"]
    first = run(*args, "--shard-tokens", "5000")
    assert first.exit_code == 0, first.stderr
    shards = len(json.loads((tmp_path / "s-manifest.json").read_text())["shards"])
    assert shards > 1 and "nothing to do" not in first.stderr
    again = run(*args, "--shard-tokens", "5000")
    assert again.exit_code == 0, again.stderr
    assert again.stderr.startswith(f"nothing to do: {shards} shards kept")
    assert "MB/s" not in again.stderr and "engine" not in again.stderr


# ---------------------------------------------------------------------------------------------
# 5. usage errors
# ---------------------------------------------------------------------------------------------

#: (arguments after the command, a fragment of the one Error: line); {out} is a fresh path
CONFLICTS = [
    # encode: training formats with the text formats' options, and the reverse
    (
        ["encode", "-t", "bytebpe-50k", "--format", "megatron", "-o", "{out}", "--pair"],
        "--pair is for ids/tokens/jsonl",
    ),
    (["encode", "-t", "bytebpe-50k", "--format", "npy", "-o", "{out}", "--max-length", "8"], "--max-length is for"),
    (["encode", "-t", "bytebpe-50k", "--format", "bin", "-o", "{out}", "--no-truncation"], "--no-truncation is for"),
    (["encode", "-t", "bytebpe-50k", "--format", "megatron", "-o", "{out}", "--no-padding"], "--no-padding is for"),
    (["encode", "-t", "bytebpe-50k", "--format", "megatron", "-o", "{out}", "--no-add-special-tokens"], "is for ids"),
    (["encode", "-t", "bytebpe-50k", "--format", "megatron", "-o", "{out}", "--batch-lines", "5"], "--batch-lines is"),
    (["encode", "-t", "bytebpe-50k", "--format", "megatron"], "give an output file with -o"),
    (
        ["encode", "-t", "bytebpe-50k", "--format", "megatron", "-o", "{out}", "--append-eos", "--no-append-eos"],
        "--append-eos and --no-append-eos contradict",
    ),
    (["encode", "-t", "bytebpe-50k", "--format", "megatron", "-o", "{out}", "--field", "x"], "--document jsonl"),
    (
        [
            "encode",
            "-t",
            "bytebpe-50k",
            "--format",
            "megatron",
            "-o",
            "{out}",
            "--shard-tokens",
            "9",
            "--block-size",
            "1MB",
        ],
        "--shard-tokens and --block-size contradict",
    ),
    (["encode", "-t", "bytebpe-50k", "--format", "megatron", "-o", "{out}", "--dtype", "uint32"], "not available"),
    (["encode", "-t", "bytebpe-50k", "--force"], "--force replaces the output file: give it with -o"),
    (["encode", "-t", "bytebpe-50k", "--cluster", "local:1"], "--cluster is for --format megatron"),
    (["encode", "-t", "bytebpe-50k", "--block-size", "1MB"], "--block-size is for --format megatron"),
    (["encode", "-t", "bytebpe-50k", "--document", "file"], "--document is for --format megatron"),
    (["encode", "-t", "bytebpe-50k", "--field", "text"], "--field is for --format megatron"),
    (["encode", "-t", "bytebpe-50k", "--append-eos"], "--append-eos is for --format megatron"),
    (["encode", "-t", "bytebpe-50k", "--no-append-eos"], "--no-append-eos is for --format megatron"),
    (["encode", "-t", "bytebpe-50k", "--prepend-bos"], "--prepend-bos is for --format megatron"),
    (["encode", "-t", "bytebpe-50k", "--shard-tokens", "10"], "--shard-tokens is for --format megatron"),
    (["encode", "-t", "bytebpe-50k", "--dtype", "uint32"], "--dtype is for --format megatron"),
    (["encode", "-t", "bytebpe-50k", "--max-document-mb", "2"], "--max-document-mb is for --format megatron"),
    (["encode", "-t", "bytebpe-50k", "--json"], "--json is for --format megatron"),
    (["encode", "-t", "bytebpe-50k", "--no-truncation", "--max-length", "5"], "--no-truncation and --max-length"),
    (["encode", "-t", "bytebpe-50k", "--engine", "tiktoken", "--format", "jsonl"], "--engine tiktoken cannot"),
    (["encode", "-t", "bytebpe-50k", "--engine", "tiktoken", "--pair"], "--engine tiktoken cannot write --pair"),
    (["encode", "-t", "bytebpe-50k", "--cluster-timeout", "5"], "--cluster-timeout only applies with --cluster"),
    (
        [
            "encode",
            "-t",
            "bytebpe-50k",
            "--format",
            "megatron",
            "-o",
            "{out}",
            "--cluster",
            "local:1",
            "--workers",
            "1",
        ],
        "--workers does not apply",
    ),
    # count
    (["count", "{corpus}", "--model", "bytebpe", "-o", "{out}", "--lowercase"], "does not apply to --model bytebpe"),
    (["count", "{corpus}", "--model", "bytebpe", "-o", "{out}", "--block-size", "1MB"], "only applies with --cluster"),
    # train
    (["train", "bytebpe", "{corpus}", "-o", "{out}", "--from-counts", "{corpus}"], "not both"),
    (["train", "bytebpe", "-o", "{out}", "--from-counts", "{corpus}", "--field", "text"], "--from-counts reads"),
    (["train", "bytebpe", "-o", "{out}", "--from-counts", "{corpus}", "--errors", "skip"], "--from-counts reads"),
    (["train", "bytebpe", "-o", "{out}", "--from-counts", "{corpus}", "--workers", "1"], "--workers sets"),
    (["train", "bytebpe", "{corpus}", "-o", "{out}", "--backend", "fast", "--workers", "1"], "--workers sets"),
    (["train", "bytebpe", "{corpus}", "-o", "{out}", "--backend", "fast", "--field", "t"], "--backend fast reads"),
    (["train", "bytebpe", "{corpus}", "-o", "{out}", "--backend", "fast", "--check"], "--check compares"),
    (["train", "bytebpe", "-o", "{out}", "--from-counts", "{corpus}", "--cluster", "local:1"], "--cluster counts"),
    (["train", "wordpiece", "{corpus}", "-o", "{out}", "--min-pair-frequency", "3"], "--algorithm likelihood only"),
    (
        ["train", "wordpiece", "{corpus}", "-o", "{out}", "--algorithm", "likelihood", "--backend", "fast"],
        "bpe algorithm",
    ),
    (
        ["train", "bytebpe", "{corpus}", "-o", "{out}", "--template", "roberta", "--special-tokens", "<pad>"],
        "needs <s>",
    ),
    # pretrain-data
    (["pretrain-data", "{corpus}", "-t", "wordpiece-30k", "-o", "{out}", "--zh-dict", "{corpus}"], "--zh-dict is for"),
    (
        ["pretrain-data", "{corpus}", "-t", "wordpiece-30k", "-o", "{out}", "--short-seq-prob", "0.2"],
        "--short-seq-prob is",
    ),
    (
        ["pretrain-data", "{corpus}", "-t", "wordpiece-30k", "-o", "{out}", "--dynamic", "--mask-prob", "0.2"],
        "--mask-prob and",
    ),
    (
        ["pretrain-data", "{corpus}", "-t", "wordpiece-30k", "-o", "{out}", "--dynamic", "--max-predictions", "5"],
        "--max-predictions",
    ),
    (
        ["pretrain-data", "{corpus}", "-t", "wordpiece-30k", "-o", "{out}", "--dynamic", "--dupe-factor", "2"],
        "--dupe-factor and",
    ),
    # (values out of range are usage errors too)
    (["pretrain-data", "{corpus}", "-t", "wordpiece-30k", "-o", "{out}", "--mask-prob", "1.5"], "'--mask-prob'"),
    (["pretrain-data", "{corpus}", "-t", "wordpiece-30k", "-o", "{out}", "--dupe-factor", "0"], "'--dupe-factor'"),
    # compare
    (["compare", "bytebpe-50k", "wordpiece-30k", "text", "--sample", "3"], "need --corpus"),
    (["compare", "bytebpe-50k", "wordpiece-30k", "text", "--show", "3"], "--show needs --corpus"),
    (["compare", "bytebpe-50k", "wordpiece-30k", "text", "--errors", "skip"], "--errors needs --corpus"),
    (["compare", "bytebpe-50k", "wordpiece-30k", "text", "--workers", "1"], "--workers needs --corpus"),
    (["compare", "bytebpe-50k", "wordpiece-30k", "text", "--json", "--width", "40"], "does not go with --json"),
    (["compare", "bytebpe-50k", "wordpiece-30k", "text", "--json", "--bytes"], "does not go with --json"),
    (["compare", "bytebpe-50k", "--corpus", "{corpus}", "--cluster", "local:1", "--sample", "2"], "--sample reads"),
    (["compare", "bytebpe-50k", "wordpiece-30k", "text", "--cluster", "local:1"], "--cluster works on a corpus"),
    # inspect
    (["inspect", "bytebpe-50k", "--token", "a", "--id", "3"], "not both"),
    (["inspect", "bytebpe-50k", "--token", "a", "--corpus", "{corpus}"], "--corpus is for vocabulary statistics"),
    (["inspect", "bytebpe-50k", "--id", "3", "--top", "5"], "--top is for vocabulary statistics"),
    (["inspect", "bytebpe-50k", "--id", "3", "--plot", "{out}"], "--plot is for vocabulary statistics"),
    # parity
    (["parity", "bytebpe", "{corpus}", "--force"], "give --keep DIR"),
]


@pytest.mark.parametrize(("args", "fragment"), CONFLICTS, ids=lambda v: " ".join(v[:6]) if isinstance(v, list) else "")
def test_conflicting_options_are_usage_errors(args, fragment, tmp_path) -> None:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("Hello world.\n", encoding="utf-8")
    filled = [a.format(out=tmp_path / "out", corpus=corpus) for a in args]
    result = CliRunner().invoke(main, filled, input="")
    assert result.exit_code == 2, (result.exit_code, result.stderr, result.exception)
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and fragment in errors[0], result.stderr
    assert "Traceback" not in result.stderr and result.exception is None or isinstance(result.exception, SystemExit)
    assert not (tmp_path / "out").exists()


def _commands() -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = []
    for name, command in main.commands.items():
        if isinstance(command, click.Group):
            out += [(name, sub) for sub in command.commands]
        else:
            out.append((name,))
    return out


@pytest.mark.parametrize("command", _commands(), ids=" ".join)
def test_every_command_has_quiet(command) -> None:
    result = run(*command, "--help")
    assert result.exit_code == 0 and "-q, --quiet" in result.stdout


WRONG_NAMES = [
    ["encode", "-t", "bytebpe-5k"],
    ["decode", "-t", "bytebpe-5k"],
    ["inspect", "bytebpe-5k"],
    ["convert", "bytebpe-5k", "--to", "vocab.txt", "-o", "{out}"],
    ["compare", "bytebpe-5k", "wordpiece-30k", "some text"],
    ["pretrain-data", "{corpus}", "-t", "bytebpe-5k", "-o", "{out}.parquet"],
]


@pytest.mark.parametrize("args", WRONG_NAMES, ids=lambda a: a[0])
def test_a_wrong_tokenizer_name_suggests_the_closest_shipped_one(args, tmp_path) -> None:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("Hello world.\n", encoding="utf-8")
    result = CliRunner().invoke(main, [a.format(out=tmp_path / "out", corpus=corpus) for a in args], input="1 2\n")
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines() == [
        "toktools: error: no tokenizer at bytebpe-5k: no such file or directory, and not a vocabulary shipped "
        "with toktools (did you mean bytebpe-50k?)"
    ]


def test_a_name_far_from_any_shipped_one_lists_them() -> None:
    result = run("inspect", "gpt5")
    assert result.exit_code == 1 and "(shipped: bytebpe-50k, wordpiece-30k)" in result.stderr


def test_the_library_issues_python_warnings(shapes, tmp_path) -> None:
    """Library users get the same warnings through the warnings module."""
    import toktools
    from toktools.errors import ToktoolsWarning

    with pytest.warns(ToktoolsWarning, match="truncates every encoding to 50 tokens"):
        toktools.encode_corpus([shapes["english"]], ref_vocab_dir("gpt2"), tmp_path / "ids.txt", format="ids", verify=0)


def test_quiet_silences_notes_too() -> None:
    """--quiet is parsed first, so the --workers note (a callback) sees it, wherever it is given."""
    loud = run("encode", "-t", "bytebpe-50k", "--workers", "9999", "--verify", "0", input="hello\n")
    assert loud.exit_code == 0 and "capped at the" in loud.stderr
    quiet = run("encode", "--workers", "9999", "-t", "bytebpe-50k", "--verify", "0", "-q", input="hello\n")
    assert quiet.exit_code == 0 and quiet.stderr == "" and quiet.stdout == loud.stdout


@pytest.mark.parametrize("numpy_from", [0, 10**12])
def test_packed_ids_count_the_same_with_and_without_numpy(numpy_from, monkeypatch) -> None:
    """The packed path (array.count, or NumPy past NUMPY_FROM_IDS) against a plain count."""
    import random
    from array import array

    from toktools.corpus import diagnostics
    from toktools.engines.base import PackedIds

    monkeypatch.setattr(diagnostics, "NUMPY_FROM_IDS", numpy_from)
    rng = random.Random(5)
    rows = [[rng.randrange(300) for _ in range(rng.randrange(50))] for _ in range(40)]
    flat = [i for row in rows for i in row]
    for byte_ids in (frozenset(range(3, 259)), frozenset(range(3, 259, 2))):
        packed = diagnostics.TokenTally(0, byte_ids)
        packed.add(PackedIds(array("I", flat).tobytes(), [len(row) for row in rows]))
        listed = diagnostics.TokenTally(0, byte_ids)
        listed.add(rows)
        expected = [len(flat), flat.count(0), sum(i in byte_ids for i in flat)]
        assert packed.counts() == listed.counts() == expected
