"""`toktools pretrain-data` and the pretraining example builders (mlm packing, NSP, SOP).

The corpus is a sample of the shared English Wikipedia in BERT's layout (one sentence per line, a
blank line between articles), written by the tests; outputs are read back with pyarrow (and with
``datasets`` when it is installed).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import corpus_path, read_corpus_sample, ref_vocab_dir

from toktools.cli import main
from toktools.corpus.reading import expand_sources
from toktools.formats import load
from toktools.pretraining.examples import (
    encode_documents,
    iter_documents,
    pack_blocks,
    pair_instances,
    truncate_seq_pair,
)
from toktools.pretraining.masking import MaskingCollator, masking_info, pad_batch

pq = pytest.importorskip("pyarrow.parquet")


def run(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def assert_clean_error(result, *fragments: str) -> None:
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("toktools: error:"), result.stderr
    for fragment in fragments:
        assert fragment in lines[0]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    """Wikipedia articles, one sentence per line, a blank line between articles (~250 KB)."""
    articles = read_corpus_sample("en_wiki.txt.gz", 250_000).split("\n\n")
    out = []
    for article in articles:
        sentences = [s for line in article.splitlines() for s in re.split(r"(?<=[.!?])\s+(?=[A-Z])", line) if s.strip()]
        if sentences:
            out.append("\n".join(sentences))
    path = tmp_path_factory.mktemp("corpus") / "wiki.txt"
    path.write_text("\n\n".join(out) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def small_corpus(corpus, tmp_path_factory) -> Path:
    """The first 30 sentences of each of the first 8 documents (for the slower byte-level runs)."""
    documents = corpus.read_text(encoding="utf-8").split("\n\n")[:8]
    path = tmp_path_factory.mktemp("small") / "wiki-small.txt"
    path.write_text("\n\n".join("\n".join(d.splitlines()[:30]) for d in documents) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def encoded(corpus):
    tokenizer = load("wordpiece-30k")
    return tokenizer, encode_documents(iter_documents(expand_sources([str(corpus)])), tokenizer, workers=1)


def table(path: Path) -> dict[str, list]:
    return pq.read_table(path).to_pydict()


def test_nsp_negatives_come_from_another_document_about_half_the_time(encoded):
    tokenizer, corpus = encoded
    doc_of_token = np.repeat(np.arange(corpus.documents), np.diff(corpus.sentence_bounds[corpus.document_bounds]))
    pairs = []
    for document in range(corpus.documents):
        rng = np.random.default_rng([1, document])
        pairs.extend(pair_instances(corpus, document, rng, 64, 0.1, "mlm+nsp")[0])
    assert len(pairs) > 800
    negatives = [p for p in pairs if p.label == 1]
    assert all(doc_of_token[p.a[0]] != doc_of_token[p.b[0]] for p in negatives)
    assert all(doc_of_token[p.a[0]] == doc_of_token[p.b[0]] and p.a[1] <= p.b[0] for p in pairs if p.label == 0)
    assert abs(len(negatives) / len(pairs) - 0.5) < 0.05


def test_sop_negatives_are_exact_swaps(encoded, monkeypatch):
    """Before truncation, a swapped pair is (B, A) with B starting exactly where A ended."""
    import toktools.pretraining.examples as pretrain

    tokenizer, corpus = encoded
    monkeypatch.setattr(pretrain, "truncate_seq_pair", lambda a, b, limit, rng: (a, b))
    pairs = []
    for document in range(corpus.documents):
        pairs.extend(pair_instances(corpus, document, np.random.default_rng([2, document]), 256, 0.1, "mlm+sop")[0])
    swapped = [p for p in pairs if p.label == 1]
    assert len(pairs) > 150 and abs(len(swapped) / len(pairs) - 0.5) < 0.06
    assert all(p.b[1] == p.a[0] for p in swapped)
    assert all(p.a[1] == p.b[0] for p in pairs if p.label == 0)


def test_truncate_seq_pair_trims_the_longer_segment_from_random_ends():
    a, b = truncate_seq_pair((0, 100), (200, 230), 60, np.random.default_rng(0))
    assert (a[1] - a[0]) + (b[1] - b[0]) == 60
    assert b == (200, 230) and 0 < a[0] and a[1] < 100  # only A (the longer) lost tokens, from both ends
    a, b = truncate_seq_pair((0, 40), (100, 140), 60, np.random.default_rng(1))
    assert (a[1] - a[0], b[1] - b[0]) == (30, 30)


def test_sop_file_rows_are_the_document_in_order_or_swapped(corpus, tmp_path, encoded):
    tokenizer, encoded_corpus = encoded
    out = tmp_path / "sop.parquet"
    result = run(
        "pretrain-data",
        str(corpus),
        "-t",
        "wordpiece-30k",
        "-o",
        str(out),
        "--objective",
        "mlm+sop",
        "--max-length",
        "256",
        "--short-seq-prob",
        "0",
        "--dynamic",
        "--workers",
        "1",
    )
    assert result.exit_code == 0, result.stderr
    rows = table(out)
    text = " " + " ".join(map(str, encoded_corpus.ids.tolist())) + " "

    def position(segment: list[int]) -> int:
        found = text.find(" " + " ".join(map(str, segment)) + " ")
        assert found >= 0, "a segment is not a contiguous piece of the corpus"
        return found

    checked = 0
    for ids, types, label in zip(rows["input_ids"], rows["token_type_ids"], rows["sentence_order_label"]):
        cut = types.index(1)
        first, second = ids[1 : cut - 1], ids[cut:-1]
        if min(len(first), len(second)) < 8:  # too short to locate unambiguously
            continue
        # label 1: the segment shown first comes later in the document (the two were swapped)
        assert (position(first) > position(second)) == (label == 1)
        checked += 1
    assert checked > 100 and 0.4 < sum(rows["sentence_order_label"]) / len(rows["input_ids"]) < 0.6


@pytest.mark.parametrize("objective", ["mlm", "mlm+nsp", "mlm+sop"])
def test_no_example_exceeds_max_length_and_pad_fills_it(small_corpus, tmp_path, objective):
    corpus = small_corpus
    out = tmp_path / "out.parquet"
    assert (
        run(
            "pretrain-data",
            str(corpus),
            "-t",
            "bytebpe-50k",
            "-o",
            str(out),
            "--objective",
            objective,
            "--max-length",
            "24",
            "--workers",
            "1",
        ).exit_code
        == 0
    )
    rows = table(out)
    assert rows["input_ids"] and max(len(r) for r in rows["input_ids"]) <= 24
    assert all(len(a) == len(b) == len(c) for a, b, c in zip(rows["input_ids"], rows["labels"], rows["attention_mask"]))
    assert (
        run(
            "pretrain-data",
            str(corpus),
            "-t",
            "bytebpe-50k",
            "-o",
            str(out),
            "--objective",
            objective,
            "--max-length",
            "24",
            "--pad",
            "--force",
            "--workers",
            "1",
        ).exit_code
        == 0
    )
    assert {len(r) for r in table(out)["input_ids"]} == {24}


def test_mlm_packs_full_sentences_across_documents_with_a_separator(encoded):
    tokenizer, corpus = encoded
    blocks = pack_blocks(corpus, 128)
    assert all(sum(1 if s is None else s[1] - s[0] for s in block) <= 126 for block in blocks)
    # every token is used exactly once, in order
    spans = [s for block in blocks for s in block if s is not None]
    assert spans[0][0] == 0 and spans[-1][1] == len(corpus.ids)
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))
    # separators sit exactly at document boundaries inside a block
    document_starts = set(corpus.sentence_bounds[corpus.document_bounds[1:-1]].tolist())
    separators = [block[i + 1][0] for block in blocks for i in range(len(block) - 1) if block[i] is None]
    assert separators and set(separators) <= document_starts
    assert len(blocks) < len(corpus.ids) / 100  # blocks are full, not one per sentence


def test_static_output_statistics_and_labels(corpus, tmp_path):
    out = tmp_path / "nsp.parquet"
    result = run(
        "pretrain-data",
        str(corpus),
        "-t",
        "wordpiece-30k",
        "-o",
        str(out),
        "--objective",
        "mlm+nsp",
        "--max-length",
        "128",
        "--dupe-factor",
        "2",
        "--json",
        "--workers",
        "1",
    )
    assert result.exit_code == 0, result.stderr
    summary = json.loads(result.stdout)
    rows = table(out)
    assert summary["examples"] == len(rows["input_ids"])
    info = masking_info(load("wordpiece-30k"))
    labels = np.concatenate([np.array(r) for r in rows["labels"]])
    inputs = np.concatenate([np.array(r) for r in rows["input_ids"]])
    chosen = labels != -100
    assert chosen.sum() == summary["masked"]
    assert abs(summary["masked_share"] - 0.15) < 0.003
    assert not info.special[labels[chosen]].any()
    assert abs((inputs[chosen] == info.mask_id).mean() - 0.8) < 0.02
    # token types: 0 up to and including the first [SEP], 1 after
    for ids, types in zip(rows["input_ids"][:50], rows["token_type_ids"][:50]):
        first_sep = ids.index(info.sep_id) if info.sep_id in ids else None
        assert ids[0] == info.cls_id and first_sep is not None
        assert types == [0] * (first_sep + 1) + [1] * (len(ids) - first_sep - 1)
    assert set(rows["next_sentence_label"]) == {0, 1}
    # the two duplicates carry different masks
    half = len(rows["labels"]) // 2
    assert rows["labels"][:half] != rows["labels"][half:]


def test_whole_words_stay_whole_in_written_examples(corpus, tmp_path):
    out = tmp_path / "wwm.parquet"
    assert (
        run(
            "pretrain-data",
            str(corpus),
            "-t",
            "wordpiece-30k",
            "-o",
            str(out),
            "--whole-word",
            "pieces",
            "--max-length",
            "128",
            "--workers",
            "1",
        ).exit_code
        == 0
    )
    tokenizer = load("wordpiece-30k")
    rows = table(out)
    for ids, labels in zip(rows["input_ids"], rows["labels"]):
        original = [l if l != -100 else i for i, l in zip(ids, labels)]
        tokens = [tokenizer.id_to_token(i) for i in original]
        for position in range(1, len(tokens)):
            if tokens[position].startswith("##"):
                assert (labels[position] != -100) == (labels[position - 1] != -100)


def test_chinese_whole_words_with_jieba(tmp_path):
    pytest.importorskip("jieba")
    vocab = ref_vocab_dir("bert-base-chinese") / "vocab.txt"
    source = tmp_path / "zh.txt"
    source.write_text(read_corpus_sample("zh_wiki_sample.txt", 40_000), encoding="utf-8")
    out = tmp_path / "zh.parquet"
    result = run(
        "pretrain-data",
        str(source),
        "-t",
        str(vocab),
        "-o",
        str(out),
        "--whole-word",
        "zh",
        "--max-length",
        "128",
        "--zh-dict",
        str(corpus_path("zh_jieba_dict.txt.gz")),
        "--workers",
        "1",
        "--json",
    )
    assert result.exit_code == 0, result.stderr
    assert abs(json.loads(result.stdout)["masked_share"] - 0.15) < 0.01
    # dynamic: unmasked rows carry chinese_ref, and the collator keeps those words whole
    dynamic = tmp_path / "zh-dynamic.parquet"
    assert (
        run(
            "pretrain-data",
            str(source),
            "-t",
            str(vocab),
            "-o",
            str(dynamic),
            "--whole-word",
            "zh",
            "--dynamic",
            "--max-length",
            "128",
            "--zh-dict",
            str(corpus_path("zh_jieba_dict.txt.gz")),
            "--workers",
            "1",
        ).exit_code
        == 0
    )
    rows = pq.read_table(dynamic).to_pylist()
    assert "labels" not in rows[0] and any(r["chinese_ref"] for r in rows)
    info = masking_info(load(vocab))
    batch = MaskingCollator(info, whole_word=True, mlm_probability=0.3, seed=0)(rows)
    for row, labels in zip(rows, batch["labels"]):
        for position in row["chinese_ref"]:  # a continuation is masked exactly when the token before it is
            if row["input_ids"][position - 1] not in (info.cls_id, info.sep_id):  # a long sentence cut between blocks
                assert (labels[position] != -100) == (labels[position - 1] != -100)


def test_same_output_for_any_worker_count_and_hash_seed(corpus, tmp_path):
    args = [
        "pretrain-data",
        str(corpus),
        "-t",
        "wordpiece-30k",
        "--objective",
        "mlm+nsp",
        "--max-length",
        "64",
        "--whole-word",
        "pieces",
        "--seed",
        "9",
    ]
    outputs = []
    for workers in ("1", "2"):
        out = tmp_path / f"w{workers}.parquet"
        result = run(*args, "-o", str(out), "--workers", workers)
        assert result.exit_code == 0, result.stderr
        outputs.append(out.read_bytes())
    other = tmp_path / "hashseed.parquet"
    subprocess.run(
        [sys.executable, "-m", "toktools.cli", *args, "-o", str(other), "--workers", "2"],
        check=True,
        env={**os.environ, "PYTHONHASHSEED": "12345", "PYTHONPATH": str(Path(__file__).resolve().parent.parent)},
    )
    outputs.append(other.read_bytes())
    assert outputs[0] == outputs[1] == outputs[2]
    different_seed = tmp_path / "seed10.parquet"
    assert run(*args[:-1], "10", "-o", str(different_seed), "--workers", "1").exit_code == 0
    assert different_seed.read_bytes() != outputs[0]


def test_json_lines_documents(tmp_path):
    source = tmp_path / "docs.jsonl"
    records = [
        {"text": "First sentence here.\nSecond one follows.", "id": 1},
        {"text": "Another document.\nWith two lines."},
    ]
    source.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    out = tmp_path / "j.parquet"
    result = run(
        "pretrain-data",
        str(source),
        "--field",
        "text",
        "-t",
        "bytebpe-50k",
        "-o",
        str(out),
        "--objective",
        "mlm+nsp",
        "--max-length",
        "32",
        "--dynamic",
        "--json",
    )
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["documents"] == 2 and json.loads(result.stdout)["sentences"] == 4


def test_written_file_loads_with_datasets_and_the_collator(small_corpus, tmp_path, monkeypatch):
    corpus = small_corpus
    datasets = pytest.importorskip("datasets", reason="datasets is not installed: read back with pyarrow only")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    out = tmp_path / "dyn.parquet"
    assert (
        run(
            "pretrain-data",
            str(corpus),
            "-t",
            "bytebpe-50k",
            "-o",
            str(out),
            "--dynamic",
            "--max-length",
            "128",
            "--workers",
            "1",
        ).exit_code
        == 0
    )
    dataset = datasets.load_dataset("parquet", data_files=str(out), split="train", cache_dir=str(tmp_path / "cache"))
    assert set(dataset.column_names) == {"input_ids", "token_type_ids", "attention_mask"}
    batch = MaskingCollator(load("bytebpe-50k"), seed=0)([dataset[i] for i in range(8)])
    assert batch["input_ids"].shape == batch["labels"].shape == (8, max(len(dataset[i]["input_ids"]) for i in range(8)))


# ---------------------------------------------------------------------------------------------
# Bad input: one line, no partial output
# ---------------------------------------------------------------------------------------------


def test_max_length_below_the_template_is_refused(corpus, tmp_path):
    out = tmp_path / "x.parquet"
    assert_clean_error(
        run(
            "pretrain-data",
            str(corpus),
            "-t",
            "wordpiece-30k",
            "-o",
            str(out),
            "--objective",
            "mlm+nsp",
            "--max-length",
            "4",
        ),
        "--max-length 4",
        "3 special",
    )
    assert not out.exists()


def test_a_tokenizer_without_a_mask_token_is_refused(corpus, tmp_path):
    document = load("wordpiece-30k").to_tokenizer_json()
    document["added_tokens"] = [t for t in document["added_tokens"] if t["content"] != "[MASK]"]
    del document["model"]["vocab"]["[MASK]"]
    (tmp_path / "tokenizer.json").write_text(json.dumps(document), encoding="utf-8")
    out = tmp_path / "x.parquet"
    assert_clean_error(
        run("pretrain-data", str(corpus), "-t", str(tmp_path / "tokenizer.json"), "-o", str(out)), "mask token"
    )
    assert not out.exists()


def test_documents_shorter_than_any_segment_are_refused(tmp_path):
    source = tmp_path / "tiny.txt"
    source.write_text("a\n\nb\n\nc\n", encoding="utf-8")  # three one-token documents
    out = tmp_path / "x.parquet"
    assert_clean_error(
        run("pretrain-data", str(source), "-t", "wordpiece-30k", "-o", str(out), "--objective", "mlm+sop"),
        "shorter than a segment",
    )
    assert not out.exists() and not list(tmp_path.glob(".x.parquet*"))
    single = tmp_path / "one.txt"
    single.write_text("Only one document.\nTwo sentences.\n", encoding="utf-8")
    assert_clean_error(
        run("pretrain-data", str(single), "-t", "wordpiece-30k", "-o", str(out), "--objective", "mlm+nsp"),
        "at least 2 documents",
    )
    assert not out.exists()


def test_existing_output_needs_force(corpus, tmp_path):
    out = tmp_path / "x.parquet"
    out.write_bytes(b"keep me")
    assert_clean_error(run("pretrain-data", str(corpus), "-t", "wordpiece-30k", "-o", str(out)), "--force")
    assert out.read_bytes() == b"keep me"


def test_a_byte_level_sentence_start_is_a_word_start(tmp_path):
    """Byte-level BPE encodes each sentence without a leading Ġ; its first word must not join the
    last word of the sentence before it when blocks are packed."""
    source = tmp_path / "two.txt"
    source.write_text("The cat sat.\nThe dog ran.\n", encoding="utf-8")
    out = tmp_path / "dyn.parquet"
    assert (
        run(
            "pretrain-data",
            str(source),
            "-t",
            "bytebpe-50k",
            "-o",
            str(out),
            "--dynamic",
            "--whole-word",
            "pieces",
            "--max-length",
            "64",
        ).exit_code
        == 0
    )
    row = pq.read_table(out).to_pylist()[0]
    tokenizer = load("bytebpe-50k")
    tokens = [tokenizer.id_to_token(i) for i in row["input_ids"]]
    assert tokens == ["<s>", "The", "Ġcat", "Ġsat", ".", "The", "Ġdog", "Ġran", ".", "</s>"]
    assert row["sentence_starts"] == [1, 5]
    info = masking_info(tokenizer)
    ids = np.array(row["input_ids"])
    starts = np.zeros(len(ids), dtype=bool)
    starts[row["sentence_starts"]] = True
    assert not info.word_starts(ids)[5]  # by the markers alone, the second "The" continues "."
    assert info.word_starts(ids, starts=starts)[5]
    batch = pad_batch([row], info)
    assert batch["sentence_starts"][0].tolist() == starts.tolist()
