"""Flat memory on one long line (issue 21): every corpus command on a line of tens of megabytes.

Long documents are cut where the tokenizer provably restarts (the rule of
``toktools.corpus.documents.safe_cut``) and encoded piece by piece; a tokenizer that may never
be cut refuses a document past a documented size. The default run checks, on lines of a few
hundred kilobytes cut into small pieces, that the pieces give the library's result for the whole
line, and that no engine ever sees more than a piece. The ``full`` tests run each command on a
generated 30 MB line without a newline and measure the peak memory of the process (≤ 1 GiB).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import read_corpus_sample

import toktools
from toktools.corpus import documents, long_documents, long_lines
from toktools.corpus.documents import DocumentReader, safe_cut, safe_segments, unigram_may_end
from toktools.corpus.reading import CorpusSource
from toktools.errors import ToktoolsError

GIB = 1 << 30
PIECE = 1_500  # the segment size the default tests cut at


@pytest.fixture(scope="module")
def long_line() -> str:
    """About 30,000 characters of real text in one line: English, Chinese, digits, odd spaces."""
    text = read_corpus_sample("mixed_sample.txt", 24_000) + read_corpus_sample("zh_novels.txt", 9_000)
    return " ".join(text.split("\n")) + " 我们  x\u3000 y \t z's 'll\u00a0 ok  12 34 \u200b end"


@pytest.fixture
def small_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    """Cut long documents into pieces of :data:`PIECE` characters (the real size is 1 Mi)."""
    monkeypatch.setattr(long_documents, "SEGMENT_CHARS", PIECE)
    monkeypatch.setattr(long_lines, "SEGMENT_CHARS", PIECE)
    monkeypatch.setattr(documents, "SEGMENT_CHARS", PIECE)


def hf(name: str):
    import tokenizers

    return tokenizers.Tokenizer.from_str(json.dumps(toktools.load(name).to_tokenizer_json()))


# ---------------------------------------------------------------------------------------------
# The cut rule
# ---------------------------------------------------------------------------------------------


@pytest.mark.shared
def test_safe_segments_cover_the_text_and_end_at_safe_cuts(long_line: str) -> None:
    spans = list(safe_segments(long_line, PIECE))
    assert len(spans) > 10
    assert "".join(long_line[s:e] for s, e in spans) == long_line
    assert all(e - s <= PIECE for s, e in spans[:-1] if long_line[s:e].count(" ") > 1)
    for _, end in spans[:-1]:
        assert safe_cut(long_line, end) == end  # each cut is one safe_cut itself would choose


def test_a_text_without_a_safe_cut_is_one_piece() -> None:
    assert list(safe_segments("我" * 5_000, PIECE)) == [(0, 5_000)]
    assert list(safe_segments("a" * 3_000 + " b", PIECE)) == [(0, 3_000), (3_000, 3_002)]


def test_a_document_that_cannot_be_cut_is_refused_past_the_documented_size(monkeypatch, tmp_path: Path) -> None:
    """megatron/npy/bin: 8 MB by default for a tokenizer that may never be cut (64 MB otherwise)."""
    monkeypatch.setattr(documents, "MAX_UNCUT_DOCUMENT_BYTES", 1 << 20)
    source = tmp_path / "long.txt"
    source.write_text("word " * 500_000, encoding="utf-8")  # 2.5 MB, one line
    with pytest.raises(ToktoolsError, match=r"long\.txt, line 1: document longer than 1 MB and this tokenizer"):
        list(DocumentReader([CorpusSource(str(source))], "line", cuttable=False))
    pieces = list(DocumentReader([CorpusSource(str(source))], "line", cuttable=True))
    assert "".join(p.text for p in pieces) == "word " * 500_000 and len(pieces) > 1
    with pytest.raises(ToktoolsError, match=r"line 7: document longer than 0 Mi characters"):
        list(documents.bounded_segments("x" * 1000, False, "f.txt, line 7", max_chars=999))


# ---------------------------------------------------------------------------------------------
# Each command: the pieces give the library's result for the whole line
# ---------------------------------------------------------------------------------------------


@pytest.mark.shared
@pytest.mark.parametrize(
    "name, fmt, engine, specials, max_length",
    [
        pytest.param("bytebpe-50k", "ids", "tokenizers", True, None, marks=pytest.mark.full),
        pytest.param("bytebpe-50k", "tokens", "tiktoken", False, None, marks=pytest.mark.full),
        ("bytebpe-50k", "jsonl", "reference", True, None),  # offsets at the cuts (ByteLevel trimming)
        pytest.param("bytebpe-50k", "ids", "auto", True, 1_000, marks=pytest.mark.full),
        pytest.param("wordpiece-30k", "jsonl", "tokenizers", True, None, marks=pytest.mark.full),
        ("wordpiece-30k", "tokens", "reference", True, 900),
    ],
)
def test_text_formats_write_a_long_line_piece_by_piece(
    long_line: str, small_pieces, tmp_path: Path, name: str, fmt: str, engine: str, specials: bool, max_length
) -> None:
    from toktools.corpus import text_outputs

    source = tmp_path / "in.txt"
    source.write_text("a short line\n" + long_line + "\n\n", encoding="utf-8")
    seen: list[int] = []
    real = long_lines._piece_rows

    def watched(engine_, text, **options):
        for start, row in real(engine_, text, **options):
            seen.append(len(row.ids))
            yield start, row

    long_lines._piece_rows = watched
    try:
        text_outputs.encode_text(
            [source],
            name,
            tmp_path / "out",
            format=fmt,
            engine=engine,
            add_special_tokens=specials,
            max_length=max_length,
            verify=0,
        )
    finally:
        long_lines._piece_rows = real
    library = hf(name)
    if max_length is not None:
        library.enable_truncation(max_length)
    lines = (tmp_path / "out").read_text(encoding="utf-8").split("\n")
    assert len(lines) == 4 and lines[3] == ""
    for text, written in zip(["a short line", long_line, ""], lines):
        encoding = library.encode(text, add_special_tokens=specials)
        if fmt == "ids":
            assert written == " ".join(map(str, encoding.ids))
        elif fmt == "tokens":
            assert written == " ".join(encoding.tokens)
        else:
            assert json.loads(written) == {
                "ids": encoding.ids,
                "tokens": encoding.tokens,
                "offsets": [list(o) for o in encoding.offsets],
                "type_ids": encoding.type_ids,
            }
    if max_length is None:
        assert len(seen) > 10 and max(seen) < PIECE  # the engine only ever saw pieces


@pytest.mark.full
@pytest.mark.shared
def test_compare_and_inspect_count_a_long_line_as_a_whole(
    long_line: str, small_pieces, tmp_path: Path, monkeypatch
) -> None:
    from toktools.analysis.corpus_compare import compare_corpus
    from toktools.analysis.usage import corpus_usage

    source = tmp_path / "in.txt"
    source.write_text("a short line of five words\n" + long_line + "\n", encoding="utf-8")
    tokenizers = {"b": toktools.load("bytebpe-50k"), "w": toktools.load("wordpiece-30k")}
    cut = compare_corpus(tokenizers, [str(source)], show=2, workers=1).to_dict()
    usage = corpus_usage(tokenizers["b"], source.read_text(encoding="utf-8").splitlines(keepends=True))
    for module in (long_documents, long_lines, documents):
        monkeypatch.setattr(module, "SEGMENT_CHARS", 1 << 20)
    whole = compare_corpus(tokenizers, [str(source)], show=2, workers=1).to_dict()
    assert cut["metrics"] == whole["metrics"]
    # a long document shows the places it shows counted whole (issue 27)
    assert 2 in [s["line"] for s in whole["shown"]] and cut["shown"] == whole["shown"]
    for name, stats in cut["metrics"].items():
        library = hf("bytebpe-50k" if name == "b" else "wordpiece-30k")
        assert stats["tokens"] == sum(
            len(library.encode(t, add_special_tokens=False).ids) for t in ("a short line of five words", long_line)
        )
    ids = hf("bytebpe-50k").encode(long_line, add_special_tokens=False).ids
    assert usage.tokens == len(ids) + 6 and usage.distinct_used >= len(set(ids))


@pytest.mark.shared
def test_pretrain_data_encodes_a_long_sentence_piece_by_piece(long_line: str, small_pieces, tmp_path: Path) -> None:
    from toktools.pretraining.examples import encode_documents

    corpus = encode_documents(iter([["short one", long_line]]), toktools.load("wordpiece-30k"), workers=1)
    library = hf("wordpiece-30k")
    expected = [library.encode(t, add_special_tokens=False).ids for t in ("short one", long_line)]
    assert corpus.ids.tolist() == expected[0] + expected[1]
    assert corpus.sentence_bounds.tolist() == [0, len(expected[0]), len(expected[0]) + len(expected[1])]


@pytest.mark.shared
def test_unigram_training_words_of_a_long_line_are_the_library_words(long_line: str, small_pieces) -> None:
    import tokenizers

    from toktools.training.pipeline import unigram_training_words

    chunk = "first line\n" + long_line + "\n" + long_line[:2000]
    library = tokenizers.SentencePieceUnigramTokenizer()._tokenizer
    expected = []
    for line in ("first line\n", long_line + "\n", long_line[:2000]):
        normalized = library.normalizer.normalize_str(line)
        expected += [word for word, _ in library.pre_tokenizer.pre_tokenize_str(normalized)]
    assert list(unigram_training_words(chunk)) == expected


@pytest.mark.shared
@pytest.mark.parametrize("prefix_space", [False, True])
def test_bytebpe_and_wordpiece_training_words_of_a_long_line_are_the_library_words(
    long_line: str, small_pieces, prefix_space: bool
) -> None:
    from tokenizers import normalizers, pre_tokenizers

    from toktools.models.bpe.bytelevel import text_to_symbols, training_pieces
    from toktools.parts.bert_text import iter_words

    lines = ["first line\n", long_line + "\n", long_line[:2000]]
    chunk = "".join(lines)
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=prefix_space)
    expected = [piece for line in lines for piece, _ in byte_level.pre_tokenize_str(line)]
    assert [text_to_symbols(piece) for piece in training_pieces(chunk, prefix_space)] == expected
    bert, split = normalizers.BertNormalizer(), pre_tokenizers.BertPreTokenizer()
    expected = [word for line in lines for word, _ in split.pre_tokenize_str(bert.normalize_str(line))]
    assert list(iter_words(chunk)) == expected


def _alnum_points(step: int) -> list[int]:
    return [cp for cp in range(0, 0x110000, step) if not 0xD800 <= cp < 0xE000 and chr(cp).isalnum()]


@pytest.mark.parametrize("step", [97, pytest.param(1, marks=pytest.mark.full)])
def test_unigram_pieces_may_end_with_any_letter_or_digit(step: int) -> None:
    """The claim of :func:`unigram_may_end`: Nmt, NFKC and the space collapse never delete a
    letter or digit or turn it into a trailing space, so the words on both sides of the cut stay."""
    from toktools.training.pipeline import unigram_words

    for cp in _alnum_points(step):
        ch = chr(cp)
        assert unigram_may_end(ch)
        for before in ("a", " ", "\u200b"):
            assert unigram_words(before + ch + "  b") == unigram_words(before + ch) + unigram_words("  b"), hex(cp)


# ---------------------------------------------------------------------------------------------
# Peak memory of every command on a 30 MB line (full)
# ---------------------------------------------------------------------------------------------

_PEAK = (
    "import resource, subprocess, sys; "
    "r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True); "
    "print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024, "
    "repr(r.stderr.strip().splitlines()[-1:]))"
)


def peak_memory(*args: str) -> tuple[int, int, str]:
    """Exit code, peak resident memory in bytes and last stderr line of ``toktools ARGS``, run
    from a fresh process whose only child it is."""
    done = subprocess.run(
        [sys.executable, "-c", _PEAK, sys.executable, "-m", "toktools.cli", *args],
        capture_output=True,
        text=True,
        check=True,
    )
    code, peak, last = done.stdout.split(" ", 2)
    return int(code), int(peak), last


@pytest.fixture(scope="module")
def line_30mb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from real_shapes import single_line

    return single_line(tmp_path_factory.mktemp("line") / "line.txt", 30_000_000)


@pytest.fixture(scope="module")
def spm_model() -> Path:
    from _spm_models import train

    return train("unigram")


COMMANDS = {
    "compare": ["compare", "bytebpe-50k", "wordpiece-30k", "--corpus", "{line}"],
    "train-bytebpe": ["train", "bytebpe", "{line}", "-o", "{out}/bpe", "--vocab-size", "5000"],
    "train-wordpiece": ["train", "wordpiece", "{line}", "-o", "{out}/wp", "--vocab-size", "5000"],
    "train-unigram": ["train", "unigram", "{line}", "-o", "{out}/uni", "--vocab-size", "8000"],
    "count-unigram": ["count", "--model", "unigram", "{line}", "-o", "{out}/c.tsv"],
    "count-bytebpe": ["count", "--model", "bytebpe", "{line}", "-o", "{out}/c.tsv"],
    "count-wordpiece": ["count", "--model", "wordpiece", "{line}", "-o", "{out}/c.tsv"],
    "encode-ids": ["encode", "-t", "bytebpe-50k", "{line}", "-o", "{out}/ids.txt"],
    "encode-tokens-tiktoken": [
        "encode",
        "-t",
        "bytebpe-50k",
        "--engine",
        "tiktoken",
        "--no-add-special-tokens",
        "--format",
        "tokens",
        "{line}",
        "-o",
        "{out}/t.txt",
    ],
    "encode-jsonl-reference": [
        "encode",
        "-t",
        "wordpiece-30k",
        "--engine",
        "reference",
        "--format",
        "jsonl",
        "{line}",
        "-o",
        "{out}/t.jsonl",
    ],
    "encode-npy": ["encode", "-t", "bytebpe-50k", "--format", "npy", "{line}", "-o", "{out}/ids.npy"],
    "encode-megatron": ["encode", "-t", "bytebpe-50k", "--format", "megatron", "{line}", "-o", "{out}/m"],
    "encode-megatron-tokenizers": [
        "encode",
        "-t",
        "bytebpe-50k",
        "--format",
        "megatron",
        "--engine",
        "tokenizers",
        "{line}",
        "-o",
        "{out}/m",
    ],
    "encode-megatron-wordpiece": ["encode", "-t", "wordpiece-30k", "--format", "megatron", "{line}", "-o", "{out}/m"],
    "encode-megatron-model": ["encode", "-t", "{model}", "--format", "megatron", "{line}", "-o", "{out}/m"],
    "encode-ids-model": ["encode", "-t", "{model}", "{line}", "-o", "{out}/ids.txt"],
    "pretrain-data": ["pretrain-data", "-t", "wordpiece-30k", "{line}", "-o", "{out}/p.parquet"],
    "inspect": ["inspect", "bytebpe-50k", "--corpus", "{line}"],
}
#: A .model cannot be cut: the 30 MB line is refused in one line, past the documented sizes.
REFUSED = {"encode-megatron-model": "document longer than 8 MB", "encode-ids-model": "longer than 4 Mi characters"}


@pytest.mark.full
@pytest.mark.shared
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_peak_memory_on_a_30_mb_line(command: str, line_30mb: Path, spm_model: Path, tmp_path: Path) -> None:
    args = [a.format(line=line_30mb, out=tmp_path, model=spm_model) for a in COMMANDS[command]]
    code, peak, last = peak_memory(*args)
    if command in REFUSED:
        assert code == 1 and REFUSED[command] in last, last
    else:
        assert code == 0, last
    assert peak <= GIB, f"{command}: {peak / 2**20:.0f} MiB"
