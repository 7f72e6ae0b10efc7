"""``toktools parity unigram``: ``tokenizers``' Unigram training is not deterministic (hash-map
order and per-thread float sums, ``shared/spec/unigram.md`` §5.6), so parity is agreement — the
same token set (Jaccard), the same tokens on held-out lines, scores equal up to summation order —
and exact encoding: each side's trained vocabulary gives the same ids in both libraries.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import read_corpus_sample

from toktools.cli import main
from toktools.parity.agreement import compare_scores
from toktools.parity.results import Agreement, Tolerance

pytest.importorskip("tokenizers")


def run(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> tuple[Path, Path]:
    directory = tmp_path_factory.mktemp("unigram-parity")
    train = directory / "train.txt"
    train.write_text(read_corpus_sample("mixed_sample.txt", 40_000), encoding="utf-8")
    heldout = directory / "heldout.txt"
    heldout.write_text(
        read_corpus_sample("mixed_sample.txt", 20_000, skip_lines=2000) + "\n中文 unseen ∰ 😀\n", encoding="utf-8"
    )
    return train, heldout


def test_parity_unigram_agrees_within_the_bounds_and_encodes_exactly(corpus, tmp_path):
    train, heldout = corpus
    result = run(
        "parity",
        "unigram",
        str(train),
        "--vocab-size",
        "1200",
        "--heldout",
        str(heldout),
        "--json",
        "--keep",
        str(tmp_path / "kept"),
    )
    assert result.exit_code == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["ok"] is True and report["kind"] == "unigram"
    assert report["settings"]["special_tokens"] == ["<unk>"]
    tolerance = report["tolerance"]
    assert tolerance["jaccard"] >= 0.99 and tolerance["token_agreement"] >= 0.95
    assert report["agreement"]["lines"] > 50
    # exact encoding: the same vocabulary gives the same ids in toktools and in tokenizers
    assert [a["share"] for a in tolerance["encoding"]] == [1.0, 1.0]
    assert [a["lines"] for a in tolerance["encoding"]] == [report["agreement"]["lines"]] * 2
    scores = tolerance["scores"]
    assert scores["close"] >= 0.9 * scores["common"]
    for side in ("reference", "fast"):
        vocab = json.loads((tmp_path / "kept" / side / "unigram.json").read_text(encoding="utf-8"))["vocab"]
        assert len(vocab) == 1200 and vocab[0][0] == "<unk>"


def test_parity_unigram_plain_report(corpus):
    train, heldout = corpus
    result = run("parity", "unigram", str(train), "--vocab-size", "1200", "--heldout", str(heldout))
    assert result.exit_code == 0, result.stderr
    text = result.stdout
    assert "agreement: Jaccard" in text and "encoding with tokenizers' vocabulary" in text
    assert text.rstrip().splitlines()[-1].startswith("verdict: PARITY")


def test_the_verdict_needs_every_bound():
    exact = Agreement("held-out", 10, 10, 1.0, 10, 50, 50)
    wrong = Agreement("held-out", 10, 9, 0.9, 9, 50, 50)
    assert Tolerance(0.99, 0.95, 0.995, 0.96, [exact, exact]).ok
    assert not Tolerance(0.99, 0.95, 0.98, 1.0, [exact, exact]).ok  # token sets too far apart
    assert not Tolerance(0.99, 0.95, 1.0, 0.9, [exact, exact]).ok  # segmentations too far apart
    assert not Tolerance(0.99, 0.95, 1.0, 1.0, [exact, wrong]).ok  # an encoding bug is never tolerated


def test_scores_are_compared_on_common_pieces():
    ours = [("<unk>", 0.0), ("a", -1.0), ("b", -2.0), ("only-ours", -5.0)]
    theirs = [("<unk>", 0.0), ("a", -1.0 * (1 + 1e-12)), ("b", -2.0003), ("only-theirs", -6.0)]
    scores = compare_scores(ours, theirs)
    assert (scores.common, scores.close) == (3, 2)
    assert scores.max_difference == pytest.approx(3e-4)
    assert scores.examples[0][0] == "b"
