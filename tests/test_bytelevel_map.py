"""The byte <-> symbol map and the GPT-2 split of ``toktools.models.bpe.bytelevel``.

What is pinned here, and where the expected values come from:

* the 256-entry byte map (spec ``shared/spec/bytelevel-bpe.md`` §1, OpenAI's ``encoder.json`` and
  ``tokenizers``' own ByteLevel pre-tokenizer / alphabet);
* the split pattern's documented semantics (spec §2: contractions, ``\\s+(?!\\S)``, digits vs CJK),
  checked on the spec's examples and against ``tokenizers.pre_tokenizers.ByteLevel``;
* ``split_lines`` (used for training, one ``findall`` over many lines) gives exactly the pieces
  of ``tokenizers``' pre-tokenizer applied line by line, with and without ``add_prefix_space``;
* ``split`` agrees with ``tokenizers`` on every Unicode scalar value in several contexts (the
  regex classes ``\\p{L}``, ``\\p{N}``, ``\\s`` are where pure-Python ports usually drift).

No expected value is taken from toktools' own output.
"""

from __future__ import annotations

import gc
import itertools
import json
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor

import pytest
from conftest import read_corpus_sample, ref_vocab_dir
from tokenizers import decoders, pre_tokenizers

from toktools.models.bpe import bytelevel
from toktools.models.bpe.bytelevel import (
    BYTE_TO_SYMBOL,
    byte_view,
    split,
    split_lines,
    symbols_to_bytes,
    text_to_symbols,
)


def hf_pieces(text: str, add_prefix_space: bool = False) -> list[str]:
    """Byte-mapped pieces of one sequence according to ``tokenizers``."""
    pre = pre_tokenizers.ByteLevel(add_prefix_space=add_prefix_space, use_regex=True)
    return [piece for piece, _ in pre.pre_tokenize_str(text)]


def our_pieces(text: str) -> list[str]:
    return [text_to_symbols(piece) for piece in split(text)]


# ---------------------------------------------------------------------------------------------
# 1. The byte map
# ---------------------------------------------------------------------------------------------


def test_byte_map_is_a_bijection_of_256_printable_symbols():
    """Every byte gets exactly one symbol, no two bytes share one, and no symbol is whitespace or
    a control character: that is the whole point of the map (BPE never sees raw bytes)."""
    assert len(BYTE_TO_SYMBOL) == 256
    assert all(len(symbol) == 1 for symbol in BYTE_TO_SYMBOL)
    assert len(set(BYTE_TO_SYMBOL)) == 256
    assert all(symbol.isprintable() and not symbol.isspace() for symbol in BYTE_TO_SYMBOL)
    everything = bytes(range(256))
    assert symbols_to_bytes(bytelevel.bytes_to_symbols(everything)) == everything


def test_printable_bytes_keep_their_code_point():
    """Spec §1: the 188 bytes 0x21–0x7E, 0xA1–0xAC, 0xAE–0xFF map to the same code point."""
    printable = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    assert len(printable) == 188
    for b in printable:
        assert BYTE_TO_SYMBOL[b] == chr(b), hex(b)


def test_other_68_bytes_take_consecutive_code_points_from_U0100():
    """Spec §1: the remaining bytes, in increasing order, get U+0100, U+0101, ...; the spec's
    named examples (Ġ for space, Ċ for newline, ...) are pinned one by one."""
    others = [b for b in range(256) if not (0x21 <= b <= 0x7E or 0xA1 <= b <= 0xAC or 0xAE <= b <= 0xFF)]
    assert len(others) == 68
    assert [BYTE_TO_SYMBOL[b] for b in others] == [chr(0x100 + i) for i in range(68)]
    named = {0x00: "Ā", 0x09: "ĉ", 0x0A: "Ċ", 0x0D: "č", 0x20: "Ġ", 0x7F: "ġ", 0x80: "Ģ", 0xA0: "ł", 0xAD: "Ń"}
    for b, symbol in named.items():
        assert BYTE_TO_SYMBOL[b] == symbol, hex(b)


@pytest.mark.parametrize(
    "text, symbols",
    [
        ("我", "æĪĳ"),
        ("你好", "ä½łå¥½"),
        ("\u00a0", "Âł"),
        ("é", "Ã©"),
        ("😀", "ðŁĺĢ"),
        (" ", "Ġ"),
        ("\n", "Ċ"),
        ("Hello world\n", "HelloĠworldĊ"),
    ],
)
def test_spec_examples_of_text_to_symbols(text, symbols):
    """Spec §1 examples: UTF-8 bytes of the text, each shown as its symbol; and back."""
    assert text_to_symbols(text) == symbols
    assert symbols_to_bytes(symbols) == text.encode("utf-8")


def test_byte_view_shows_bytes_and_symbols_per_character():
    """``byte_view`` is the documentation helper: ``我`` → E6 88 91 → ``æĪĳ`` (spec §1)."""
    rows = byte_view("a我")
    assert [(r.char, r.hex_bytes, r.symbols) for r in rows] == [("a", "61", "a"), ("我", "E6 88 91", "æĪĳ")]


def test_symbol_order_is_gpt2_encoder_ids_0_to_255():
    """Spec §1: sorted by code point, the 256 symbols are exactly OpenAI's ``encoder.json`` ids
    0–255 (the trainer's alphabet order, so ids 0–255 of a vocabulary without specials)."""
    encoder = json.loads((ref_vocab_dir("gpt2") / "encoder.json").read_text(encoding="utf-8"))
    first_256 = [token for token, i in sorted(encoder.items(), key=lambda item: item[1]) if i < 256]
    assert first_256 == sorted(BYTE_TO_SYMBOL)
    assert bytelevel.ALPHABET == first_256


def test_alphabet_is_tokenizers_bytelevel_alphabet():
    """``tokenizers``' own ``ByteLevel.alphabet()`` is the same set of 256 symbols."""
    assert set(pre_tokenizers.ByteLevel.alphabet()) == set(BYTE_TO_SYMBOL)


def _valid_utf8_containing(b: int) -> str | None:
    """A short valid UTF-8 text whose encoding contains byte ``b`` (None for the 13 bytes that
    never occur in UTF-8: C0, C1, F5–FF)."""
    if b < 0x80:
        return chr(b)
    if b < 0xC0:  # continuation byte: C2 xx
        return bytes([0xC2, b]).decode("utf-8")
    if 0xC2 <= b <= 0xDF:
        return bytes([b, 0x80]).decode("utf-8")
    if b == 0xE0:
        return bytes([0xE0, 0xA0, 0x80]).decode("utf-8")
    if 0xE1 <= b <= 0xEF:
        return bytes([b, 0x80, 0x80]).decode("utf-8")
    if b == 0xF0:
        return bytes([0xF0, 0x90, 0x80, 0x80]).decode("utf-8")
    if 0xF1 <= b <= 0xF4:
        return bytes([b, 0x80, 0x80, 0x80]).decode("utf-8")
    return None


def test_byte_map_agrees_with_tokenizers_for_every_byte_that_utf8_can_produce():
    """Per byte, the symbol ``tokenizers``' ByteLevel pre-tokenizer (no regex) writes for it is
    ours; and ``tokenizers``' ByteLevel decoder maps our symbols back to the same text."""
    pre = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    decoder = decoders.ByteLevel()
    checked = 0
    for b in range(256):
        text = _valid_utf8_containing(b)
        if text is None:
            continue
        ((piece, _),) = pre.pre_tokenize_str(text)
        assert piece == text_to_symbols(text), hex(b)
        assert BYTE_TO_SYMBOL[b] in piece
        assert decoder.decode(list(text_to_symbols(text))) == text
        checked += 1
    assert checked == 256 - 13


# ---------------------------------------------------------------------------------------------
# 2. Split semantics (spec §2)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, pieces",
    [
        # contractions are lowercase only: 'S is not one
        ("It'S", ["It", "'", "S"]),
        ("it's", ["it", "'s"]),
        (
            "they're we've I'm you'll he'd don't",
            ["they", "'re", " we", "'ve", " I", "'m", " you", "'ll", " he", "'d", " don", "'t"],
        ),
        ("THEY'RE", ["THEY", "'", "RE"]),
        # \s+(?!\S): a whitespace run leaves its last character to the next word
        ("a  b", ["a", " ", " b"]),
        ("\n\n  It", ["\n\n ", " It"]),
        ("end   ", ["end", "   "]),
        # digits and letters (CJK included) are different classes
        ("2024年", ["2024", "年"]),
        ("abc123def", ["abc", "123", "def"]),
        # a CJK clause without spaces is one word
        ("我是中国人。今天天气很好", ["我是中国人", "。", "今天天气很好"]),
        # one optional space in front of letters, numbers and punctuation runs
        ("Hello, world!!", ["Hello", ",", " world", "!!"]),
        (" 42 ...", [" 42", " ..."]),
    ],
)
def test_split_follows_the_spec_examples(text, pieces):
    """The spec's examples of the GPT-2 pattern, and ``tokenizers`` agrees with each."""
    assert split(text) == pieces
    assert hf_pieces(text) == [text_to_symbols(p) for p in pieces]


def test_split_keeps_every_character():
    """The pattern matches every character, so the pieces concatenate to the input (spec §2)."""
    text = "  a\t\tb\r\n 'S 'll\u3000中文 😀\u00a0x \x0b"
    assert "".join(split(text)) == text


# ---------------------------------------------------------------------------------------------
# 3. split_lines == split of each line (what training does)
# ---------------------------------------------------------------------------------------------


def hf_pieces_per_line(chunk: str, add_prefix_space: bool) -> list[str]:
    """``tokenizers``' training view of a file: cut only at ``\\n`` (kept), pre-tokenize each line."""
    pre = pre_tokenizers.ByteLevel(add_prefix_space=add_prefix_space, use_regex=True)
    parts = chunk.split("\n")
    lines = [part + "\n" for part in parts[:-1]] + ([parts[-1]] if parts[-1] else [])
    out: list[str] = []
    for line in lines:
        out.extend(piece for piece, _ in pre.pre_tokenize_str(line))
    return out


def our_pieces_of_lines(chunk: str, add_prefix_space: bool) -> list[str]:
    return [text_to_symbols(p) for p in split_lines(chunk, add_prefix_space)]


TRICKY_LINES = [
    "a  \n",  # trailing spaces
    "\r\n",  # CRLF alone
    "x\r\n",  # CRLF after a word
    "\n",  # blank line
    "   \n",  # only spaces
    "\t \t\n",  # only tabs and spaces
    " lead\n",  # already starts with a space (no second prefix space)
    "\ttab\n",  # starts with a non-space whitespace (gets a prefix space)
    "a\u3000\n",  # ideographic space before the line end
    "\u00a0x\n",  # NBSP is \s
    "It'S it's\n",
    "\x0b\x0c\n",  # vertical tab / form feed: not line ends for tokenizers
    "a\u2028b\n",  # LINE SEPARATOR: not a line end either
    "\u0085\n",  # NEL
    "2024年\n",
    "  ",  # last line: spaces, no newline
    "tail",  # last line without newline
]


@pytest.mark.parametrize("add_prefix_space", [False, True])
def test_split_lines_on_tricky_synthetic_lines(add_prefix_space):
    """Every ordered pair (and the whole list) of tricky lines: trailing spaces, CRLF, blank
    lines, lines of only spaces, non-LF line separators, with and without ``add_prefix_space``.
    Lines without a final ``\\n`` are only used last, as in a file."""
    with_newline = [line for line in TRICKY_LINES if line.endswith("\n")]
    chunks = ["".join(TRICKY_LINES[:-2]) + TRICKY_LINES[-1], "", "\n\n\n", "   \n   "]
    chunks += ["".join(pair) for pair in itertools.product(with_newline, TRICKY_LINES)]
    for chunk in chunks:
        assert our_pieces_of_lines(chunk, add_prefix_space) == hf_pieces_per_line(chunk, add_prefix_space), repr(chunk)


@pytest.mark.parametrize("add_prefix_space", [False, True])
@pytest.mark.parametrize(
    "name, max_bytes",
    [
        ("en_wiki.txt.gz", 400_000),
        ("zh_novels.txt", 250_000),
        ("zh_wiki_sample.txt", 250_000),
        ("mixed_sample.txt", 1_000_000),
    ],
)
def test_split_lines_on_real_text(name, max_bytes, add_prefix_space):
    """Real corpora (mixed_sample in full: emoji, many scripts, code indentation)."""
    chunk = read_corpus_sample(name, max_bytes)
    assert our_pieces_of_lines(chunk, add_prefix_space) == hf_pieces_per_line(chunk, add_prefix_space)


# ---------------------------------------------------------------------------------------------
# 4. Every Unicode scalar value
# ---------------------------------------------------------------------------------------------

CONTEXTS = ("a{c}b", " {c}1", "{c}{c} x")
BATCH = 4096  # consecutive code points per comparison: batches of one Unicode block stay together


def _same_pieces(text: str) -> bool:
    """``our_pieces(text) == hf_pieces(text)``, without byte-mapping each of our pieces (most of
    the cost): ``split`` returns consecutive slices of ``text`` and every byte maps to one
    symbol, so the pieces are equal exactly when ``tokenizers``' pieces join to the mapped
    text and each one is as long as the UTF-8 bytes of ours."""
    theirs = [
        piece for piece, _ in pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True).pre_tokenize_str(text)
    ]
    return "".join(theirs) == text_to_symbols(text) and [len(piece) for piece in theirs] == [
        len(piece.encode("utf-8")) for piece in split(text)
    ]


def _compare_batch(context: str, scalars: list[int]) -> list[int]:
    """Code points of ``scalars`` for which ``split`` and ``tokenizers`` disagree in ``context``.

    The whole batch is compared as one string first (fast); only a failing batch is re-checked
    one code point at a time to name the culprits."""
    text = "".join(context.replace("{c}", chr(c)) for c in scalars)
    if _same_pieces(text):
        return []
    bad = []
    for c in scalars:
        one = context.replace("{c}", chr(c))
        if our_pieces(one) != hf_pieces(one):
            bad.append(c)
    return bad or scalars[:1]  # a disagreement only visible in the long string still fails


def test_split_matches_tokenizers_on_every_unicode_scalar(unicode_scalars):
    """All 1,112,064 scalar values (a sample of them but under ``-m full``), each in three contexts (between letters, after a space and
    before a digit, doubled before a space and a letter): identical pieces to ``tokenizers``.

    This pins the ``\\p{L}`` / ``\\p{N}`` / ``\\s`` classes to the Oniguruma build of
    ``tokenizers`` 0.23.3 (spec §2: 17,480 code points where the ``regex`` module disagrees).
    The full sweep runs in two processes to stay fast."""
    jobs = [
        (context, list(unicode_scalars[start : start + BATCH]))
        for context in CONTEXTS
        for start in range(0, len(unicode_scalars), BATCH)
    ]
    workers = min(2, os.cpu_count() or 1) if len(unicode_scalars) > 100_000 else 1  # a sample: no pool
    if workers == 1:
        results = [_compare_batch(context, scalars) for context, scalars in jobs]
    else:
        results = _compare_in_processes(jobs, workers)
    failures = {}
    for (context, _), bad in zip(jobs, results):
        if bad:
            failures.setdefault(context, []).extend(bad)
    summary = {ctx: (len(cps), [f"U+{c:04X}" for c in cps[:10]]) for ctx, cps in failures.items()}
    assert not failures, f"split differs from tokenizers for: {summary}"


def _compare_in_processes(jobs: list[tuple[str, list[int]]], workers: int) -> list[list[int]]:
    """``_compare_batch`` of each job in forked processes. The objects the test process holds
    are frozen (``gc.freeze``) before the fork, so that the children's garbage collector does
    not walk (and copy) the heap they inherit from a long pytest run."""
    gc.freeze()
    try:
        with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("fork")) as pool:
            results = list(pool.map(_compare_batch, *zip(*jobs), chunksize=8))
    finally:
        gc.unfreeze()
    return results


def test_an_unlisted_regex_version_is_measured_once_and_cached_on_disk(tmp_path, monkeypatch):
    """A ``regex`` version the generated table does not list costs one scan of every code point
    (~0.7 s), then is read from the user cache; the answer is the same scan the table holds."""
    import regex

    from toktools.models.bpe import bytelevel

    monkeypatch.setenv("TOKTOOLS_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(bytelevel, "REGEX_DISAGREEMENTS", {})
    measured = bytelevel._Splitters().risky
    assert list(tmp_path.glob("regex-disagreements-v1/bytelevel-*.json"))
    monkeypatch.setattr(bytelevel, "measure_regex_disagreements", lambda: pytest.fail("measured again"))
    assert bytelevel._Splitters().risky == measured
    from toktools.tables.bytelevel import REGEX_DISAGREEMENTS

    listed = REGEX_DISAGREEMENTS.get(regex.__version__)
    if listed is not None:  # the generated table holds the installed version: it must agree
        assert measured == frozenset(chr(c) for lo, hi in listed for c in range(lo, hi + 1))


def test_split_lines_matches_tokenizers_on_every_unicode_scalar(unicode_scalars):
    """``split_lines`` runs lines without astral characters through the standard ``re`` module
    (classes cut to the Basic Multilingual Plane), the others through ``regex``: every scalar
    value (a sample but under ``-m full``), each in two line contexts, 4096 lines per chunk so
    that most chunks mix both kinds of lines: the pieces ``tokenizers`` makes line by line."""
    for context in ("a{c}b \n", " {c}{c}1\r\n"):
        for start in range(0, len(unicode_scalars), BATCH):
            scalars = unicode_scalars[start : start + BATCH]
            chunk = "".join(context.replace("{c}", chr(c)) for c in scalars) + "\U0001f600 tail"
            assert our_pieces_of_lines(chunk, False) == hf_pieces_per_line(chunk, False), (context, hex(scalars[0]))
