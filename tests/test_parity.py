"""``toktools.parity``: train with both backends and explain any difference.

What the parity report promises, checked here:

* byte-level BPE on real text: identical ``vocab.json`` / ``merges.txt`` / ``tokenizer.json``,
  and 100% id agreement on held-out lines;
* WordPiece: ``tokenizers`` itself is random (alphabet ties at ``limit_alphabet``, the order of
  the ``##c`` block); the report names those causes, and forced mode (``tokenizers``' order
  replayed in the reference) is byte-identical with 100% id agreement;
* a divergence in the merge lists is explained at its first merge: a *tie* (equal counts; the
  smaller ``(left id, right id)`` wins) or a *count that differs* (a bug), with the counts the
  trainer saw at that step, replayed from the word counts;
* the report is plain data: ``to_dict()`` survives JSON, ``summary_lines()`` reads as text.

Real corpora are sampled (300 KB) into a module-scoped temporary directory; each configuration
is run once per module.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import read_corpus_sample

from toktools import presets
from toktools.errors import ToktoolsError
from toktools.models.bpe import bytelevel
from toktools.parity.merges import explain_merge_divergence, replay_pair_counts
from toktools.parity.results import ParityReport
from toktools.parity.run import check_trained, run_parity
from toktools.parity.vocabularies import compare_alphabets, compare_symbol_blocks, compare_token_sets
from toktools.training import pipeline as training


def _write(path: Path, text: str) -> Path:
    path.write_bytes(text.encode("utf-8"))
    return path


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("parity")


@pytest.fixture(scope="module")
def en_file(workdir) -> Path:
    return _write(workdir / "en.txt", read_corpus_sample("en_wiki.txt.gz", 300_000))


@pytest.fixture(scope="module")
def zh_file(workdir) -> Path:
    return _write(workdir / "zh.txt", read_corpus_sample("zh_novels.txt", 300_000))


@pytest.fixture(scope="module")
def reports(workdir):
    """``reports(kind, corpus_file, vocab_size, **options)``: one run per configuration, holding
    out every 20th non-blank line (the Chinese sample has few, long lines)."""
    cache: dict[tuple, ParityReport] = {}

    def run(kind: str, path: Path, vocab_size: int, **options) -> ParityReport:
        key = (kind, path.name, vocab_size, tuple(sorted(options.items())))
        if key not in cache:
            cache[key] = run_parity(
                kind,
                [str(path)],
                vocab_size,
                workers=1,
                heldout_fraction=0.05,
                output_dir=workdir / f"{kind}-{path.stem}-{vocab_size}",
                **options,
            )
        return cache[key]

    return run


def byte_words(counts: dict[str, int]) -> dict[str, int]:
    """Word counts in the byte-symbol form the byte-level trainer sees."""
    return {bytelevel.text_to_symbols(word): count for word, count in counts.items()}


# ---------------------------------------------------------------------------------------------
# Real samples
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("corpus", ["en", "zh"])
def test_bytebpe_parity_on_real_text_is_identical_with_full_id_agreement(corpus, request, reports):
    report = reports("bytebpe", request.getfixturevalue(f"{corpus}_file"), 3000)
    assert report.identical and report.ok
    assert [(f.name, f.identical) for f in report.files] == [
        ("vocab.json", True),
        ("merges.txt", True),
        ("tokenizer.json model", True),
        ("tokenizer.json", True),
    ]
    # nothing to explain when the files are equal
    assert report.first_difference is None and report.merge is None and report.alphabet is None
    assert report.overlap.common == report.overlap.reference_size == report.overlap.fast_size == 3000
    assert report.overlap.jaccard == 1.0 and report.overlap.same_id == 3000
    # every 20th non-blank line was withheld from both trainings and encoded by both tokenizers
    agreement = report.agreement
    assert agreement.lines >= 10 and agreement.identical_lines == agreement.lines and agreement.share == 1.0
    assert agreement.reference_tokens == agreement.fast_tokens > 0 and agreement.first_mismatch is None
    assert "withheld" in agreement.source and "without every 20th non-blank line" in report.corpus.trained_on
    assert report.timing.reference_seconds > 0 and report.timing.fast_seconds > 0 and report.timing.ratio > 0
    assert report.summary_lines()[-1] == "verdict: PARITY"


def test_wordpiece_forced_mode_is_byte_identical(reports, en_file):
    """The normal WordPiece run may differ (tokenizers' ``##c`` order is random per process);
    when it does, the report says why, and forced mode must be byte-identical with every
    held-out line encoded to the same ids."""
    report = reports("wordpiece", en_file, 2000)
    assert report.ok
    if report.identical:  # tokenizers happened to draw our order: nothing to force
        assert not report.forced.ran and report.agreement.share == 1.0
        return
    # the known causes, and only those, explain the normal run
    assert report.alphabet is None or report.alphabet.reason == "tie"
    assert report.symbols is not None and report.symbols.reason == "order" and report.symbols.same_set
    assert report.first_difference.stage == "symbols"
    # the real check: the same alphabet and ##c order give the same vocab.txt
    forced = report.forced
    assert forced.ran and forced.identical and forced.first_difference is None and forced.merge is None
    assert [(f.name, f.identical) for f in forced.files] == [("vocab.txt", True), ("tokenizer.json model", True)]
    assert forced.agreement.share == 1.0 and forced.agreement.lines == report.agreement.lines
    # the normal run: same segmentation nearly everywhere, but ids are numbered differently
    assert report.overlap.jaccard > 0.95
    assert report.agreement.identical_token_lines >= report.agreement.identical_lines
    assert report.summary_lines()[-1].startswith("verdict: PARITY (in forced mode")


def test_report_round_trips_through_json(reports, en_file):
    for kind in ("bytebpe", "wordpiece"):
        report = reports(kind, en_file, 3000 if kind == "bytebpe" else 2000)
        document = report.to_dict()
        assert json.loads(json.dumps(document)) == document
        assert list(document)[:4] == ["ok", "kind", "tokenizers_version", "settings"]
        assert document["ok"] is report.ok and document["kind"] == kind
        assert document["settings"]["vocab_size"] == report.settings["vocab_size"]
        assert all(isinstance(line, str) and "\n" not in line for line in report.summary_lines())


def test_train_check_compares_an_already_trained_tokenizer(en_file):
    """``train --check``: the reference was trained already; only tokenizers trains."""
    ours = training.train_bytebpe([str(en_file)], 1500, workers=1)
    report = check_trained(
        "bytebpe",
        ours,
        [str(en_file)],
        1500,
        reference_seconds=1.0,
        heldout_lines=["Hello world!", "", "A second line, with numbers 12345."],
    )
    assert report.ok and report.identical
    assert report.agreement.lines == 2  # empty lines are skipped
    assert report.timing.reference_count_seconds is None and report.timing.ratio > 0
    assert report.corpus.trained_on == "the given files"


def test_unknown_options_and_kinds_are_refused(en_file):
    with pytest.raises(ToktoolsError, match="lowercase"):
        run_parity("bytebpe", [str(en_file)], 1000, lowercase=True)
    with pytest.raises(ToktoolsError, match="unknown tokenizer kind"):
        run_parity("wordlevel", [str(en_file)], 1000)


# ---------------------------------------------------------------------------------------------
# Explaining a merge divergence (constructed)
# ---------------------------------------------------------------------------------------------

#: A tiny corpus built for one tie after two distinct merges: "x y" is merged first (count 11),
#: then "c d" (5); then "xy a" and "a b" both have count 1 (both in "xyab"), and the smaller
#: (left id, right id) wins: 'a' (an alphabet id) is older than 'xy' (the first merged id).
TIE_TEXTS = ["xy"] * 10 + ["xyab"] + ["cd"] * 5


@pytest.fixture(scope="module")
def tie_case():
    counts = byte_words(training.count_bytebpe_words(texts=TIE_TEXTS))
    assert counts == {"xy": 10, "xyab": 1, "cd": 5}
    tokenizer = training.train_bytebpe(word_counts=counts, vocab_size=256 + 4, min_frequency=1)
    return counts, tokenizer


def test_trainer_takes_the_smaller_ids_on_a_tie(tie_case):
    """The premise of the constructed case, as tokenizers' rule says (spec §6)."""
    _, tokenizer = tie_case
    assert tokenizer.merges == [("x", "y"), ("c", "d"), ("a", "b"), ("xy", "ab")]
    assert tokenizer.training_result.merge_counts == [11, 5, 1, 1]


def test_swapped_tied_merges_are_explained_as_a_tie(tie_case):
    counts, tokenizer = tie_case
    swapped = [("x", "y"), ("c", "d"), ("xy", "a"), ("xya", "b")]  # "xy a" taken first
    vocab = dict(tokenizer.vocab)
    fast_vocab = {**{t: i for t, i in vocab.items() if t not in ("ab", "xyab")}, "xya": 258, "xyab": 259}
    step = explain_merge_divergence(counts, vocab, tokenizer.merges, swapped, min_frequency=1, fast_vocab=fast_vocab)
    assert step.index == 2 and step.reason == "tie"
    assert step.reference_pair == ["a", "b"] and step.fast_pair == ["xy", "a"]
    assert step.reference_count == step.fast_count == step.best_count == 1
    a, b = vocab["a"], vocab["b"]
    assert step.reference_ids == [a, b] and step.fast_ids == [vocab["xy"], a] and a < vocab["xy"]
    # the rule picks the smaller (left id, right id): the reference followed it
    assert step.rule_pair == ["a", "b"] and step.rule_followed_by == "reference"
    assert "tie: both pairs had count 1" in step.message
    assert "smaller (left id, right id)" in step.message and f"({a}, {b})" in step.message
    assert "merge #3 (line 4 of merges.txt)" in step.message


def test_the_same_lists_need_no_explanation(tie_case):
    counts, tokenizer = tie_case
    assert explain_merge_divergence(counts, dict(tokenizer.vocab), tokenizer.merges, tokenizer.merges) is None


def test_a_pair_taken_with_a_lower_count_is_a_bug(tie_case):
    counts, tokenizer = tie_case
    wrong = [("x", "y"), ("a", "b")]  # "a b" (count 1) taken while "c d" has 5
    step = explain_merge_divergence(counts, dict(tokenizer.vocab), tokenizer.merges, wrong, min_frequency=1)
    assert step.index == 1 and step.reason == "count-differs"
    assert (step.reference_count, step.fast_count, step.best_count) == (5, 1, 5)
    assert step.rule_pair == ["c", "d"] and step.rule_followed_by == "reference"
    assert "count differs" in step.message and "bug" in step.message


def test_a_side_that_stops_early_is_named(tie_case):
    counts, tokenizer = tie_case
    step = explain_merge_divergence(
        counts, dict(tokenizer.vocab), tokenizer.merges, tokenizer.merges[:2], min_frequency=1
    )
    assert step.index == 2 and step.reason == "stopped" and step.fast_pair is None
    assert "tokenizers stopped too early" in step.message
    # with min_frequency 2 the pair left (count 1) is too rare: stopping there was right
    step = explain_merge_divergence(
        counts, dict(tokenizer.vocab), tokenizer.merges, tokenizer.merges[:2], min_frequency=2
    )
    assert step.reason == "stopped" and step.rule_followed_by == "fast" and "right to stop" in step.message


def test_replayed_counts_match_the_trainer_at_every_step(en_file):
    """The replay (segmenting words with the first k merges by rank) gives the count the
    trainer recorded for merge k, on real text, without touching the engine."""
    counts = training.count_bytebpe_words([str(en_file)], workers=1)
    tokenizer = training.train_bytebpe(word_counts=counts, vocab_size=256 + 60)
    vocab, merges = tokenizer.vocab, tokenizer.merges
    recorded = tokenizer.training_result.merge_counts
    for k in (0, 1, 7, 30, 59):
        pairs = replay_pair_counts(counts, vocab, merges[:k])
        best = max(pairs.values())
        chosen = (vocab[merges[k][0]], vocab[merges[k][1]])
        assert pairs[chosen] == recorded[k] == best
        assert chosen == min(p for p, c in pairs.items() if c == best)


# ---------------------------------------------------------------------------------------------
# Alphabet cut and ##c block (WordPiece's known randomness)
# ---------------------------------------------------------------------------------------------


def test_alphabet_difference_at_the_cut_is_a_tie():
    """limit_alphabet=2 over a (3), b (1), c (1): b and c tie at the cut; toktools keeps the
    lower code point, tokenizers may keep either."""
    counts = {"aab": 1, "ac": 1}
    alphabet = compare_alphabets(["a", "b"], ["a", "c"], counts, limit_alphabet=2)
    assert alphabet.reason == "tie" and alphabet.all_at_cut and alphabet.cut_frequency == 1
    assert alphabet.only_reference == [["b", 1]] and alphabet.only_fast == [["c", 1]]
    assert "tie at the limit_alphabet=2 cut" in alphabet.message
    # dropping a more frequent char is no tie
    wrong = compare_alphabets(["a", "b"], ["b", "c"], counts, limit_alphabet=2)
    assert wrong.reason == "not-a-tie" and not wrong.all_at_cut and "bug" in wrong.message
    assert compare_alphabets(["a", "b"], ["a", "b"], counts, limit_alphabet=2) is None


def test_symbol_block_order_versus_set():
    order = compare_symbol_blocks(["##a", "##b", "##c"], ["##b", "##a", "##c"])
    assert order.reason == "order" and order.same_set and order.first_difference == 0
    assert order.positions_differing == 2 and "hash-map order" in order.message
    different = compare_symbol_blocks(["##a", "##b"], ["##a", "##z"])
    assert different.reason == "set" and not different.same_set
    assert compare_symbol_blocks(["##a"], ["##a"]) is None


def test_token_set_overlap():
    overlap = compare_token_sets(["[UNK]", "a", "b", "ab"], ["[UNK]", "a", "b", "ba", "abc"])
    assert (overlap.common, overlap.only_reference, overlap.only_fast) == (3, 1, 2)
    assert overlap.jaccard == pytest.approx(3 / 6) and overlap.same_id == 3
    assert overlap.examples_only_reference == ["ab"] and overlap.examples_only_fast == ["ba", "abc"]


def test_a_real_tie_broken_the_other_way_is_caught_end_to_end(workdir, en_file):
    """``train --check`` on a tokenizer whose merge list breaks one real tie the other way
    (two tied, independent merges swapped, with their new tokens' ids): the files differ and
    the report names the tie, its count, and that tokenizers followed the rule."""
    counts = training.count_bytebpe_words([str(en_file)], workers=1)
    good = training.train_bytebpe(word_counts=counts, vocab_size=1000)
    vocab, merges = dict(good.vocab), list(good.merges)
    k = next(
        k
        for k in range(len(merges) - 1)
        if _tied_and_independent(replay_pair_counts(counts, vocab, merges[:k]), vocab, merges[k], merges[k + 1])
    )
    first, second = ("".join(merges[k]), "".join(merges[k + 1]))
    vocab[first], vocab[second] = vocab[second], vocab[first]
    merges[k], merges[k + 1] = merges[k + 1], merges[k]
    swapped = presets.ByteLevelBPETokenizer(vocab, merges)

    report = check_trained("bytebpe", swapped, [str(en_file)], 1000, word_counts=counts, heldout_max_lines=300)
    assert not report.identical and not report.ok
    assert report.first_difference.stage == "merges" and report.first_difference.index == 256 + k
    step = report.merge
    assert step.index == k and step.reason == "tie" and step.rule_followed_by == "fast"
    assert step.reference_pair == list(good.merges[k + 1]) and step.fast_pair == list(good.merges[k])
    assert step.reference_count == step.fast_count == good.training_result.merge_counts[k]
    assert f"tie: both pairs had count {step.fast_count}" in step.message
    # the two vocabularies hold the same tokens; only two ids are exchanged
    assert report.overlap.jaccard == 1.0 and report.overlap.same_id == 998
    assert any("tie" in line for line in report.summary_lines())


def _tied_and_independent(pairs, vocab, a, b) -> bool:
    """Merges ``a`` then ``b`` could be swapped: same count before ``a``, and ``a`` leaves
    ``b`` untouched (no shared token)."""
    ids_a, ids_b = (vocab[a[0]], vocab[a[1]]), (vocab[b[0]], vocab[b[1]])
    return pairs[ids_a] == pairs[ids_b] and not set(a) & set(b)


def test_compressed_corpus_and_held_out_file(workdir, en_file):
    """tokenizers reads only plain UTF-8 files: a .gz corpus is trained from a plain copy by
    both sides; a held-out file's non-blank lines are the sample (nothing is withheld)."""
    import gzip

    packed = workdir / "en-small.txt.gz"
    text = en_file.read_text(encoding="utf-8")[:60_000]
    packed.write_bytes(gzip.compress(text[: text.rfind("\n") + 1].encode("utf-8")))
    heldout = _write(workdir / "heldout.txt", "First held-out line.\n\nSecond one, with 2 numbers: 3.14\n")
    report = run_parity("bytebpe", [str(packed)], 600, heldout_file=str(heldout), workers=1)
    assert report.ok and report.identical
    assert report.corpus.trained_on.startswith("a plain copy") and report.corpus.files == [str(packed)]
    assert report.agreement.lines == 2 and report.agreement.share == 1.0


def test_in_sample_lines_when_nothing_is_held_out(en_file):
    report = run_parity("bytebpe", [str(en_file)], 600, heldout_fraction=0, heldout_max_lines=50, workers=1)
    assert report.corpus.trained_on == "the given files"
    assert report.agreement.lines == 50 and report.agreement.share == 1.0
    assert "not a true held-out set" in report.agreement.source and "50 of" in report.agreement.source


def test_more_held_out_lines_than_the_limit_are_evenly_spread(workdir, en_file):
    """``heldout_max_lines`` keeps that many of the held-out lines, evenly spread over them."""
    text = en_file.read_text(encoding="utf-8")[:30_000]
    small = _write(workdir / "en-30k.txt", text[: text.rfind("\n") + 1])
    lines = [f"held-out line number {number}" for number in range(40)]
    report = run_parity("bytebpe", [str(small)], 300, heldout_lines=lines, heldout_max_lines=8, workers=1)
    assert report.agreement.lines == 8 and report.agreement.share == 1.0
    assert report.agreement.source.endswith("8 of 40 evenly spread")


def test_invalid_utf8_is_reported_against_the_given_file(workdir):
    bad = workdir / "bad.txt"
    bad.write_bytes(b"fine line\n\xe4 broken\n")
    with pytest.raises(ToktoolsError, match=r"bad\.txt, line 2: invalid UTF-8"):
        run_parity("bytebpe", [str(bad)], 300)


def test_the_names_of_the_former_parity_module_still_resolve() -> None:
    """``toktools.parity`` was one module before 0.2.0: every public name it had still resolves
    on the package, as the object of the module that holds it now."""
    import toktools.parity as package
    from toktools.parity import agreement, merges, results, run, vocabularies

    names = {
        "KINDS", "TRAINER_OPTIONS", "EXAMPLES", "Pair", "Agreement", "AlphabetComparison", "CorpusInfo",
        "Divergence", "FileComparison", "ForcedCheck", "MergeStep", "Overlap", "ParityReport", "ScoreAgreement",
        "SymbolBlockComparison", "Timing", "Tolerance", "char_frequencies", "check_trained", "compare_alphabets",
        "compare_encodings", "compare_files", "compare_scores", "compare_symbol_blocks", "compare_token_sets",
        "explain_merge_divergence", "replay_pair_counts", "run_parity",
    }  # fmt: skip
    assert all(getattr(package, name) is not None for name in names)
    assert names <= set(dir(package))
    assert package.run_parity is run.run_parity and package.ParityReport is results.ParityReport
    assert (
        package.replay_pair_counts is merges.replay_pair_counts and package.compare_scores is agreement.compare_scores
    )
    assert package.compare_alphabets is vocabularies.compare_alphabets
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        package.nope  # noqa: B018
