"""Training parity: ``toktools.train_bytebpe`` writes the same files as HuggingFace ``tokenizers``.

For the same corpus and settings, ``toktools`` (pure Python) and ``tokenizers`` 0.23.3
(``toktools.training.tokenizers_backend.train_bytebpe``, i.e. ``BpeTrainer`` with ``ByteLevelBPETokenizer``'s defaults)
must produce byte-identical ``vocab.json`` and ``merges.txt`` and the same ``model`` object in
``tokenizer.json``. The whole ``tokenizer.json`` turned out byte-identical too, so that is pinned.

Expected values are always ``tokenizers``' output, or a rule from ``shared/spec/bytelevel-bpe.md``
(§4–§6) where ``tokenizers`` itself is not deterministic (``limit_alphabet`` ties below the 256
byte symbols; the ids of ``##x`` / ``x</w>`` symbols, which it assigns in hash-map order).

Corpora are sampled (1–2 MB) into a module-scoped temporary directory; each configuration is
trained once per module. The largest vocabularies (50K, 60K) are trained under ``-m full`` only.
"""

from __future__ import annotations

import hashlib
import json
import os
import string
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import pytest
from conftest import read_corpus_sample
from tokenizers import pre_tokenizers

import toktools
from toktools.models.bpe import bytelevel
from toktools.models.bpe import trainer as bpe
from toktools.training import pipeline as training
from toktools.training import tokenizers_backend as fast

FILES = ("vocab.json", "merges.txt", "tokenizer.json")
ROBERTA_SPECIALS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]


# ---------------------------------------------------------------------------------------------
# Corpora and a cache of trained pairs
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("bytelevel-train")


def _write(path: Path, text: str) -> Path:
    path.write_bytes(text.encode("utf-8"))
    return path


@pytest.fixture(scope="module")
def en_file(workdir) -> Path:
    """About 2 MB of English Wikipedia."""
    return _write(workdir / "en.txt", read_corpus_sample("en_wiki.txt.gz", 2_000_000))


@pytest.fixture(scope="module")
def zh_file(workdir) -> Path:
    """About 1.2 MB of Chinese: novels (vernacular prose) then Wikipedia."""
    text = read_corpus_sample("zh_novels.txt", 600_000) + read_corpus_sample("zh_wiki_sample.txt", 600_000)
    return _write(workdir / "zh.txt", text)


@pytest.fixture(scope="module")
def small_file(workdir) -> Path:
    """About 400 KB of English, Chinese and mixed-script text, for the option variants."""
    text = (
        read_corpus_sample("en_wiki.txt.gz", 200_000, skip_lines=20_000)
        + read_corpus_sample("zh_wiki_sample.txt", 120_000, skip_lines=500)
        + read_corpus_sample("mixed_sample.txt", 80_000)
    )
    return _write(workdir / "small.txt", text)


class Trained:
    """One configuration trained on both sides, with the saved files."""

    def __init__(self, ours: Path, theirs: Path, tokenizer) -> None:
        self.ours, self.theirs = ours, theirs
        self.tokenizer = tokenizer

    def read(self, side: str, name: str) -> bytes:
        return ((self.ours if side == "ours" else self.theirs) / name).read_bytes()

    def model(self, side: str) -> dict:
        return json.loads(self.read(side, "tokenizer.json"))["model"]

    def vocab(self, side: str) -> dict[str, int]:
        return json.loads(self.read(side, "vocab.json"))


def train_theirs(
    files: list[str] | None, vocab_size: int, texts: list[str] | None, options: dict, directory: Path
) -> None:
    """``toktools.training.tokenizers_backend.train_bytebpe`` (``tokenizers``) and its files; runs in ``side_process``."""
    theirs = fast.train_bytebpe(files, vocab_size, texts=texts, **options)
    fast.save_bytebpe(theirs, directory)


@pytest.fixture(scope="module")
def train_both(workdir, side_process):
    """``train_both(key, files=..., texts=..., **options)``: train once per key, on both sides
    (``tokenizers`` in the ``side_process`` meanwhile)."""
    cache: dict[str, Trained] = {}

    def run(key: str, files=None, vocab_size: int = 3000, *, texts=None, **options) -> Trained:
        if key not in cache:
            ours_dir, theirs_dir = workdir / f"{key}-toktools", workdir / f"{key}-tokenizers"
            files = [str(f) for f in files] if files else None
            texts = list(texts) if texts else None
            theirs = side_process.submit(
                train_theirs, files, vocab_size, texts, {k: v for k, v in options.items() if k != "workers"}, theirs_dir
            )
            ours = toktools.train_bytebpe(files, vocab_size, texts=texts, **options)
            ours.save(ours_dir)
            theirs.result()
            cache[key] = Trained(ours_dir, theirs_dir, ours)
        return cache[key]

    return run


def assert_same_files(trained: Trained) -> None:
    """vocab.json and merges.txt byte-identical; tokenizer.json's model equal and the whole
    file byte-identical (checked in that order, so a failure names the first difference)."""
    for name in ("vocab.json", "merges.txt"):
        ours, theirs = trained.read("ours", name), trained.read("theirs", name)
        if ours != theirs:
            _explain_difference(name, ours, theirs)
    assert trained.model("ours") == trained.model("theirs")
    assert trained.read("ours", "tokenizer.json") == trained.read("theirs", "tokenizer.json")


def _explain_difference(name: str, ours: bytes, theirs: bytes) -> None:
    if name == "merges.txt":
        a, b = ours.decode().split("\n"), theirs.decode().split("\n")
        first = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        pytest.fail(
            f"merges.txt differs first at line {first + 1}: toktools {a[first : first + 1]} vs tokenizers {b[first : first + 1]}; "
            f"{len(a)} vs {len(b)} lines"
        )
    a, b = json.loads(ours), json.loads(theirs)
    ids_a, ids_b = sorted(a, key=a.get), sorted(b, key=b.get)
    first = next((i for i, (x, y) in enumerate(zip(ids_a, ids_b)) if x != y), min(len(a), len(b)))
    pytest.fail(
        f"vocab.json differs first at id {first}: toktools {ids_a[first : first + 1]} vs tokenizers {ids_b[first : first + 1]}; "
        f"sizes {len(a)} vs {len(b)}"
    )


def hf_char_counts(path: Path, add_prefix_space: bool = False) -> Counter:
    """Byte-symbol frequencies of a training file as ``tokenizers`` sees it (its own
    pre-tokenizer, line by line): the input to the ``limit_alphabet`` rule (spec §5)."""
    pre = pre_tokenizers.ByteLevel(add_prefix_space=add_prefix_space, use_regex=True)
    counts: Counter = Counter()
    text = path.read_bytes().decode("utf-8")
    for line in text.split("\n"):  # tokenizers cuts only at \n; the \n belongs to the line
        line += "\n"
        for piece, _ in pre.pre_tokenize_str(line):
            counts.update(piece)
    if text.endswith("\n"):  # the loop above added one \n too many
        counts["Ċ"] -= 1
    return +counts


def token_lengths(vocab: dict[str, int], specials=()) -> list[int]:
    return [len(bytelevel.symbols_to_bytes(t)) for t in vocab if t not in specials]


# ---------------------------------------------------------------------------------------------
# Main runs: English and Chinese, vocab 1K / 8K / 50K
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("vocab_size", [8000, *(pytest.param(v, marks=pytest.mark.full) for v in (1000, 50000))])
@pytest.mark.parametrize("corpus", ["en", "zh"])
def test_default_training_is_byte_identical(corpus, vocab_size, request, train_both):
    """``ByteLevelBPETokenizer().train`` defaults (min_frequency 2, all 256 byte symbols as the
    initial alphabet, no specials). 50K is more than these samples allow: both sides must stop at
    the same size when no pair reaches min_frequency any more."""
    path = request.getfixturevalue(f"{corpus}_file")
    trained = train_both(f"{corpus}-{vocab_size}", [path], vocab_size, workers=1)
    assert_same_files(trained)
    vocab = trained.vocab("theirs")
    assert len(vocab) <= vocab_size
    if vocab_size < 50000:
        assert len(vocab) == vocab_size
    # the alphabet (ids 0-255) is GPT-2's byte order (spec §1, §5)
    assert sorted(vocab, key=vocab.get)[:256] == bytelevel.ALPHABET


@pytest.mark.full
def test_vocab_beyond_55296_ids_with_min_frequency_1(train_both, zh_file):
    """min_frequency=1 lets the Chinese sample reach 60,000 tokens: ids then pass 0xD800–0xDFFF
    and beyond, which matters for an engine that stores ids as characters (``chr(id)``); the
    files must still be identical to tokenizers'."""
    trained = train_both("zh-60000-minf1", [zh_file], 60000, min_frequency=1, workers=1)
    assert_same_files(trained)
    assert len(trained.vocab("theirs")) == 60000


def test_smaller_vocab_is_a_prefix_of_the_larger_one(train_both, en_file):
    """The merge loop only stops earlier for a smaller vocab_size: the 1K merges are the first
    merges of the 8K run (on both sides, so this holds for tokenizers too)."""
    small, large = train_both("en-1000", [en_file], 1000, workers=1), train_both("en-8000", [en_file], 8000, workers=1)
    for side in ("ours", "theirs"):
        a = small.read(side, "merges.txt").decode().splitlines()
        b = large.read(side, "merges.txt").decode().splitlines()
        assert b[: len(a)] == a


# ---------------------------------------------------------------------------------------------
# Trainer options, one at a time (small sample, vocab 3000)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("min_frequency", [0, 5, 50])
def test_min_frequency(min_frequency, train_both, small_file):
    """Merging stops when the best pair occurs fewer than ``min_frequency`` times (spec §6 step 4);
    with 50 it stops well before vocab 3000."""
    trained = train_both(f"minf{min_frequency}", [small_file], 3000, min_frequency=min_frequency, workers=1)
    assert_same_files(trained)
    if min_frequency == 50:
        assert len(trained.vocab("theirs")) < 3000


@pytest.mark.parametrize(
    "specials, expected_ids",
    [
        (ROBERTA_SPECIALS, {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3, "<mask>": 4}),
        (["<s>", "<pad>", "<s>", "</s>"], {"<s>": 0, "<pad>": 1, "</s>": 2}),
        (["<|endoftext|>"], {"<|endoftext|>": 0}),
    ],
    ids=["roberta", "repeated", "endoftext"],
)
def test_special_tokens_take_the_first_ids(specials, expected_ids, train_both, small_file):
    """Spec §5: specials first, in order; a repeated one is skipped so ids stay dense; the byte
    alphabet follows at id len(unique specials)."""
    trained = train_both("specials-" + "-".join(specials), [small_file], 3000, special_tokens=specials, workers=1)
    assert_same_files(trained)
    vocab = trained.vocab("theirs")
    assert {t: vocab[t] for t in expected_ids} == expected_ids
    assert vocab[bytelevel.ALPHABET[0]] == len(expected_ids)


def test_special_token_in_the_corpus_is_not_extracted_during_training(train_both, workdir):
    """Spec §3: trainer special tokens are registered after training; a literal
    ``<|endoftext|>`` between documents is split like any text (``<|``, ``endoftext``, ``|>``), so
    merges are learned from its pieces. Both sides must agree on that."""
    lines = read_corpus_sample("en_wiki.txt.gz", 300_000, skip_lines=5000).split("\n")
    docs = ["\n".join(lines[i : i + 3]) + "\n" for i in range(0, len(lines), 3)]
    path = _write(workdir / "eot.txt", "<|endoftext|>\n".join(docs))
    trained = train_both("eot-in-corpus", [path], 2000, special_tokens=["<|endoftext|>"], workers=1)
    assert_same_files(trained)
    vocab = trained.vocab("theirs")
    assert vocab["<|endoftext|>"] == 0
    assert {"<|", "endoftext", "|>"} <= set(vocab)


def test_limit_alphabet_above_the_alphabet_size_changes_nothing(train_both, small_file):
    """With the 256 byte symbols as initial alphabet, ``limit_alphabet=300`` drops nothing, and
    tokenizers is deterministic there."""
    trained = train_both("limit300", [small_file], 3000, limit_alphabet=300, workers=1)
    assert_same_files(trained)
    assert trained.vocab("theirs") == train_both("minf2-default", [small_file], 3000, workers=1).vocab("theirs")


def _tie_free_cuts(counts: Counter) -> list[int]:
    values = sorted(counts.values(), reverse=True)
    return [k for k in range(1, len(values)) if values[k - 1] > values[k]]


def test_limit_alphabet_without_initial_alphabet_at_a_tie_free_cut(train_both, small_file):
    """Without the default alphabet (``initial_alphabet=[]``), the alphabet is the corpus' byte
    symbols; ``limit_alphabet`` drops the least frequent ones. At a cut where no two symbols tie,
    tokenizers is deterministic and both sides must agree exactly. The kept set is also checked
    against frequencies computed with tokenizers' own pre-tokenizer."""
    counts = hf_char_counts(small_file)
    cuts = [k for k in _tie_free_cuts(counts) if 60 <= k < len(counts) - 5]
    assert cuts, "no tie-free cut in this sample"
    limit = cuts[len(cuts) // 2]
    trained = train_both(
        f"limit{limit}-noinit", [small_file], 2500, limit_alphabet=limit, initial_alphabet=[], workers=1
    )
    assert_same_files(trained)
    vocab = trained.vocab("theirs")
    kept = sorted(counts, key=lambda ch: -counts[ch])[:limit]
    assert sorted(vocab, key=vocab.get)[:limit] == sorted(kept)


def test_limit_alphabet_below_256_is_deterministic_and_keeps_the_lowest_code_points(small_file):
    """Below 256 with the default alphabet every symbol counts as infinitely frequent, so all tie
    and tokenizers picks at random (spec §5: 4 runs, 4 vocabularies). toktools documents its rule
    (README): most frequent first, ties to the lower code point; here that is the 100 lowest code
    points of the byte alphabet, i.e. GPT-2 ids 0–99. Two runs must be identical."""
    runs = [toktools.train_bytebpe([str(small_file)], 1000, limit_alphabet=100, workers=1) for _ in range(2)]
    assert runs[0].vocab == runs[1].vocab and runs[0].merges == runs[1].merges
    by_id = sorted(runs[0].vocab, key=runs[0].vocab.get)
    assert by_id[:100] == bytelevel.ALPHABET[:100]
    assert all(ch in set(bytelevel.ALPHABET[:100]) for token in by_id[100:] for ch in token)


def test_limit_alphabet_at_a_tie_follows_the_documented_rule(small_file):
    """A cut inside a group of equally frequent symbols (initial alphabet off): toktools keeps the
    more frequent symbols and, among the tied ones, the lower code points. tokenizers may pick any
    of the tied ones, so it is only asked to agree on the strictly more frequent part."""
    counts = hf_char_counts(small_file)
    values = sorted(counts.values(), reverse=True)
    tied_cuts = [k for k in range(60, len(values) - 1) if values[k - 1] == values[k]]
    if not tied_cuts:
        pytest.skip("this sample has no tie in its symbol frequencies")
    limit = tied_cuts[0]
    expected = sorted(sorted(counts, key=lambda ch: (-counts[ch], ord(ch)))[:limit])
    ours = toktools.train_bytebpe([str(small_file)], 600, limit_alphabet=limit, initial_alphabet=[], workers=1)
    assert sorted(ours.vocab, key=ours.vocab.get)[:limit] == expected
    theirs = fast.train_bytebpe([str(small_file)], 600, limit_alphabet=limit, initial_alphabet=[])
    their_alphabet = set(sorted(theirs.get_vocab(), key=theirs.get_vocab().get)[:limit])
    tie_value = values[limit - 1]
    assert {ch for ch in expected if counts[ch] > tie_value} <= their_alphabet


def test_initial_alphabet_of_ascii_letters_replaces_the_byte_alphabet(train_both, small_file):
    """``initial_alphabet`` = ASCII letters plus ``"€uro"`` instead of the 256 byte symbols:
    the alphabet is the corpus' symbols plus these; only the first character of each entry is
    used (spec §4), even when it is not a byte symbol."""
    initial = list(string.ascii_letters) + ["€uro"]
    trained = train_both("init-ascii", [small_file], 3000, initial_alphabet=initial, workers=1)
    assert_same_files(trained)
    vocab = trained.vocab("theirs")
    assert "€" in vocab and "€uro" not in vocab
    assert all(letter in vocab for letter in string.ascii_letters)
    # byte symbols that never occur in the corpus (e.g. byte 0x00 = Ā) are not in the vocabulary
    assert "Ā" not in vocab


@pytest.mark.parametrize("max_token_length", [2, 4, 6])
def test_max_token_length(max_token_length, train_both, small_file):
    """Spec §6: the length test is strict and initial pairs are never filtered, so the longest
    token has max(2, N-1) bytes."""
    trained = train_both(f"maxlen{max_token_length}", [small_file], 3000, max_token_length=max_token_length, workers=1)
    assert_same_files(trained)
    for side in ("ours", "theirs"):
        assert max(token_lengths(trained.vocab(side))) == max(2, max_token_length - 1)


def test_add_prefix_space(train_both, small_file):
    """Every line gets its own leading space (spec §2 step 1, §3): more ``Ġ``-words."""
    trained = train_both("prefix-space", [small_file], 3000, add_prefix_space=True, workers=1)
    assert_same_files(trained)
    assert json.loads(trained.read("theirs", "tokenizer.json"))["pre_tokenizer"]["add_prefix_space"] is True
    plain = train_both("minf2-default", [small_file], 3000, workers=1)
    assert trained.vocab("theirs") != plain.vocab("theirs")


@pytest.mark.parametrize("add_prefix_space", [False, True])
def test_texts_iterator_matches_train_from_iterator(add_prefix_space, train_both, small_file):
    """``texts=``: each item is one sequence, no line splitting (spec §3), compared with
    ``train_from_iterator``. Items are multi-line documents, plus empty / space-only items."""
    lines = small_file.read_text(encoding="utf-8").split("\n")
    docs = ["\n".join(lines[i : i + 5]) for i in range(0, len(lines), 5)] + ["", " ", "   x", "y   ", "\r\n"]
    trained = train_both(f"texts-{add_prefix_space}", None, 2500, texts=docs, add_prefix_space=add_prefix_space)
    assert_same_files(trained)


def test_line_endings_and_unicode_separators_in_training_files(train_both, workdir):
    """Spec §2–§3: tokenizers cuts a training file only at ``\\n`` and keeps the line ending, so
    ``\\r\\n`` is a word ``čĊ``, while a lone ``\\r``, form feed, NEL (U+0085) and LINE SEPARATOR
    (U+2028) stay inside their line (Python's ``splitlines`` would cut there). Also a BOM at the
    start and a last line without ``\\n``."""
    lines = read_corpus_sample("en_wiki.txt.gz", 150_000, skip_lines=40_000).split("\n")[:-1]
    endings = ["\r\n", "\n", "\r\n", "\u2028x\n", "\n", "\r\r\n", "\x0c\n", "\x85\n", "  \r\n"]
    text = "\ufeff" + "".join(line.replace(". ", ".\r", 1) + endings[i % len(endings)] for i, line in enumerate(lines))
    path = _write(workdir / "line-endings.txt", text + "last line without a newline")
    trained = train_both("line-endings", [path], 1500, workers=1)
    assert_same_files(trained)
    assert "čĊ" in trained.vocab("theirs")


# ---------------------------------------------------------------------------------------------
# continuing_subword_prefix / end_of_word_suffix: tokenizers numbers the symbols in hash order
# ---------------------------------------------------------------------------------------------


def _decorated_symbol_order(hf_model: dict, prefix: str | None) -> list[str]:
    """The ``##x`` / ``x</w>`` symbols in the order tokenizers gave them ids: the ids between the
    alphabet and the first merged token."""
    vocab = hf_model["vocab"]
    left, right = hf_model["merges"][0]
    if prefix and right.startswith(prefix):
        right = right[len(prefix) :]
    by_id = sorted(vocab, key=vocab.get)
    return by_id[256 : vocab[left + right]]


@pytest.mark.parametrize(
    "option", [{"continuing_subword_prefix": "##"}, {"end_of_word_suffix": "</w>"}], ids=["prefix", "suffix"]
)
def test_subword_prefix_and_suffix(option, train_both, small_file):
    """tokenizers assigns the ids of decorated symbols (``##a``, ``a</w>``) in hash-map order, so
    its own vocab differs between runs (spec §5, issue #1794) and cannot be compared file to file.
    Pinned instead:

    * the same set of decorated symbols on both sides;
    * toktools is deterministic (a second run gives the same vocab and merges);
    * given tokenizers' symbol order, toktools' merge engine reproduces tokenizers' vocab and
      merges exactly (``BpeTrainerConfig.forced_symbol_order``, meant for this parity check).
    """
    trained = train_both("decorated-" + "-".join(option.values()), [small_file], 3000, workers=1, **option)
    theirs = trained.model("theirs")
    prefix = option.get("continuing_subword_prefix")
    their_symbols = _decorated_symbol_order(theirs, prefix)
    ours = trained.tokenizer
    our_symbols = [t for t in sorted(ours.vocab, key=ours.vocab.get)[256 : 256 + len(their_symbols)]]
    assert sorted(our_symbols) == sorted(their_symbols)
    again = toktools.train_bytebpe([str(small_file)], 3000, workers=1, **option)
    assert again.vocab == ours.vocab and again.merges == ours.merges
    # the merge engine, given tokenizers' numbering
    counts = training.count_bytebpe_words([str(small_file)], workers=1)
    config = bpe.BpeTrainerConfig(
        vocab_size=3000,
        min_frequency=2,
        initial_alphabet=bytelevel.ALPHABET,
        forced_symbol_order=their_symbols,
        **option,
    )
    result = bpe.train_bpe(counts, config)
    assert result.vocab == sorted(theirs["vocab"], key=theirs["vocab"].get)
    assert [list(m) for m in result.merges] == theirs["merges"]


# ---------------------------------------------------------------------------------------------
# Determinism: worker processes and hash seeds
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def three_files(workdir) -> list[Path]:
    """Three files, so that two workers really count chunks in parallel."""
    parts = [
        read_corpus_sample("en_wiki.txt.gz", 150_000, skip_lines=30_000),
        read_corpus_sample("zh_novels.txt", 100_000, skip_lines=3000),
        read_corpus_sample("mixed_sample.txt", 100_000, skip_lines=3000),
    ]
    return [_write(workdir / f"part{i}.txt", text) for i, text in enumerate(parts)]


def _digest(directory: Path) -> dict[str, str]:
    return {name: hashlib.sha256((directory / name).read_bytes()).hexdigest() for name in FILES}


@pytest.mark.parametrize("option", [{}, {"continuing_subword_prefix": "##"}], ids=["default", "prefix"])
def test_same_files_for_one_and_two_workers(option, three_files, tmp_path):
    """Word counting in 1 or 2 processes gives the same files, also with ``##`` where the order
    of first occurrence decides symbol ids."""
    digests = []
    for workers in (1, 2):
        tok = toktools.train_bytebpe([str(p) for p in three_files], 2000, workers=workers, **option)
        tok.save(tmp_path / f"w{workers}")
        digests.append(_digest(tmp_path / f"w{workers}"))
    assert digests[0] == digests[1]


_SEED_SCRIPT = textwrap.dedent(
    """
    import hashlib, json, sys
    import toktools
    files, out = json.loads(sys.argv[1]), sys.argv[2]
    for name, option in (("default", {}), ("prefix", {"continuing_subword_prefix": "##"})):
        toktools.train_bytebpe(files, 2000, workers=2, **option).save(f"{out}/{name}")
    """
)


@pytest.mark.parametrize(
    "seeds", [pytest.param(("4242",), id="one"), pytest.param(("0", "4242"), id="two", marks=pytest.mark.full)]
)
def test_same_files_under_different_hash_seeds(three_files, tmp_path, seeds):
    """Interpreters with another ``PYTHONHASHSEED`` than this process (set/dict iteration of str
    keys changes; two of them under ``-m full``) produce byte-identical files to this process's:
    no result depends on hash order, unlike tokenizers."""
    digests = []
    for seed in seeds:
        out = tmp_path / f"seed{seed}"
        env = {**os.environ, "PYTHONHASHSEED": seed}
        subprocess.run(
            [sys.executable, "-c", _SEED_SCRIPT, json.dumps([str(p) for p in three_files]), str(out)],
            check=True,
            env=env,
            capture_output=True,
            timeout=300,
        )
        digests.append({name: _digest(out / name) for name in ("default", "prefix")})
    here = {}
    for name, option in (("default", {}), ("prefix", {"continuing_subword_prefix": "##"})):
        toktools.train_bytebpe([str(p) for p in three_files], 2000, workers=1, **option).save(tmp_path / name)
        here[name] = _digest(tmp_path / name)
    assert all(digest == here for digest in digests)
