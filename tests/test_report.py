"""The reports of ``toktools.analysis`` (``scripts``, ``vocabulary``, ``token_anatomy``, ``usage``,
``metrics``, ``alignment``, ``comparison``): vocabulary statistics, one token's anatomy, corpus
usage, segmentation metrics and the side-by-side alignment behind ``toktools inspect`` and
``toktools compare``.

Where the expected values come from:

* two tiny tokenizers built here by hand (a 9-entry BERT vocabulary; byte-level BPE with the 256
  byte symbols and 10 merges), so every number below can be checked with pencil and paper;
* published facts about GPT-2 and bert-base-uncased (``shared/vocabs-ref``; those tests skip when
  it is absent): GPT-2 has 50,257 tokens, 50,000 merges, all 256 bytes, `` Hello`` is one token and
  ``我`` (E6 88 91) two; BERT cuts ``unaffable`` into ``una ##ffa ##ble`` (its paper's example).

No expected value is read back from the reports themselves.
"""

from __future__ import annotations

import json
import unicodedata

import pytest
from conftest import ref_vocab_dir
from hypothesis import given, settings
from hypothesis import strategies as st

import toktools
from toktools.analysis.alignment import align_segmentations
from toktools.analysis.comparison import compare
from toktools.analysis.metrics import segment_metrics
from toktools.analysis.scripts import script_of_text
from toktools.analysis.token_anatomy import token_info
from toktools.analysis.usage import corpus_usage
from toktools.analysis.vocabulary import vocab_stats
from toktools.errors import ToktoolsError
from toktools.models.bpe.bytelevel import ALPHABET, BYTE_TO_SYMBOL, text_to_symbols
from toktools.presets import ByteLevelBPETokenizer, WordPieceTokenizer

# ---------------------------------------------------------------------------------------------
# Hand-built tokenizers
# ---------------------------------------------------------------------------------------------

#: A BERT vocabulary small enough to read: "unaffable" → un ##aff ##able, "xyz" → [UNK].
WP_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "un", "##aff", "##able"]

#: Byte-level BPE: the 256 byte symbols (ids 0–255 in code-point order, as GPT-2 has them) and
#: ten merges. " unaffable" → Ġunaff able; "the" → the; " xyz" → Ġ x y z (no merges for them).
BPE_MERGES = [
    ("u", "n"),
    ("a", "f"),
    ("af", "f"),
    ("un", "aff"),
    ("Ġ", "unaff"),
    ("a", "b"),
    ("ab", "l"),
    ("abl", "e"),
    ("t", "h"),
    ("th", "e"),
]


def hand_wordpiece() -> WordPieceTokenizer:
    return WordPieceTokenizer.bert({token: i for i, token in enumerate(WP_TOKENS)})


def hand_bpe() -> ByteLevelBPETokenizer:
    vocab = {symbol: i for i, symbol in enumerate(ALPHABET)}
    for a, b in BPE_MERGES:
        vocab.setdefault(a + b, len(vocab))
    return ByteLevelBPETokenizer(vocab, BPE_MERGES)


def display_width(line: str) -> int:
    """Terminal columns: East Asian wide characters take 2, combining marks 0."""
    return sum(0 if unicodedata.combining(ch) else 2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in line)


def json_round_trip(data):
    return json.loads(json.dumps(data, ensure_ascii=False))


@pytest.fixture(scope="module")
def gpt2():
    return toktools.load(ref_vocab_dir("gpt2"))


@pytest.fixture(scope="module")
def bert():
    return toktools.load(ref_vocab_dir("bert-base-uncased"))


def test_the_hand_built_tokenizers_cut_as_described():
    """The premises of the hand-checked tests below."""
    assert hand_wordpiece().encode("the unaffable xyz", add_special_tokens=False).tokens == [
        "the",
        "un",
        "##aff",
        "##able",
        "[UNK]",
    ]
    assert hand_bpe().encode("the unaffable xyz").tokens == ["the", "Ġunaff", "able", "Ġ", "x", "y", "z"]


# ---------------------------------------------------------------------------------------------
# Scripts
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, script",
    [
        ("你好", "Han"),
        ("hello", "Latin"),
        ("Straße", "Latin"),
        ("Жук", "Cyrillic"),
        ("αβγ", "Greek"),
        ("שלום", "Hebrew"),
        ("سلام", "Arabic"),
        ("नमस्ते", "Devanagari"),
        ("สวัสดี", "Thai"),
        ("안녕", "Hangul"),
        ("ひらがな", "Hiragana"),
        ("カタカナ", "Katakana"),
        ("123", "Common"),
        ("...!", "Common"),
        ("😀", "Common"),
        (" ", "Common"),
        (" hello,", "Latin"),  # spaces and punctuation go with any script
        ("日本語です", "Mixed"),  # Han + Hiragana
        ("hi你", "Mixed"),
        ("e\u0301", "Latin"),  # a combining accent is inherited from its base
    ],
)
def test_script_of_text(text, script):
    assert script_of_text(text) == script


# ---------------------------------------------------------------------------------------------
# 1. Vocabulary statistics
# ---------------------------------------------------------------------------------------------


def test_vocab_stats_of_a_hand_built_wordpiece_vocabulary():
    """9 entries, 5 of them special: the histograms are over the 4 others — the (3 chars),
    un (2), ##aff → aff (3), ##able → able (4); 2 of the 4 are ## pieces; all Latin."""
    stats = vocab_stats(hand_wordpiece())
    assert stats.kind == "wordpiece"
    assert stats.vocab_size == 9 and stats.model_vocab_size == 9
    assert stats.special_tokens == [("[PAD]", 0), ("[UNK]", 1), ("[CLS]", 2), ("[SEP]", 3), ("[MASK]", 4)]
    assert stats.counted == 4
    assert stats.length_chars == {2: 1, 3: 2, 4: 1}
    assert stats.length_bytes == {2: 1, 3: 2, 4: 1}
    assert stats.continuation_tokens == 2 and stats.continuation_share == 0.5
    assert stats.scripts == {"Latin": 4}
    assert stats.alphabet == []  # no single-character token
    assert [e.surface for e in stats.longest[:2]] == ["able", "the"]  # 4 chars, then 3 (lowest id first)


def test_script_coverage_puts_chinese_tokens_in_han():
    """ "你好" and the piece "##好" are Han; "日本語です" mixes Han and Hiragana; digits are
    Common; a single Cyrillic letter is Cyrillic (and also part of the alphabet)."""
    vocab = {t: i for i, t in enumerate(["[UNK]", "你好", "##好", "hello", "123", "日本語です", "ж"])}
    stats = vocab_stats(WordPieceTokenizer.bert(vocab))
    assert stats.scripts == {"Han": 2, "Common": 1, "Cyrillic": 1, "Latin": 1, "Mixed": 1}
    assert stats.alphabet == ["ж"]
    assert stats.length_bytes[6] == 1  # 你好 is 6 bytes of UTF-8 and 2 characters
    assert stats.length_chars[2] == 1


def test_vocab_stats_of_byte_level_bpe_decode_symbols_to_surface_text():
    """Byte-level tokens are measured on the text they stand for: "ä½łå¥½" is "你好" (2 chars,
    6 bytes, Han); "æĪ" (E6 88) is two thirds of "我" and not text at all: partial bytes."""
    nihao = text_to_symbols("你好")
    wo_head = text_to_symbols("我")[:2]
    assert (nihao, wo_head) == ("ä½łå¥½", "æĪ")
    vocab = {symbol: i for i, symbol in enumerate(ALPHABET)}
    vocab.update({nihao: 256, wo_head: 257, "Ġthe": 258})
    stats = vocab_stats(ByteLevelBPETokenizer(vocab, []))
    assert stats.byte_symbols_present == 256 and stats.missing_bytes == []
    assert stats.alphabet == BYTE_TO_SYMBOL  # in byte order
    assert stats.partial_byte_tokens == 128 + 1  # 0x80–0xFF alone are not UTF-8, nor is E6 88
    assert stats.scripts["Partial bytes"] == 129
    assert stats.scripts["Han"] == 1
    assert stats.longest[0].surface == " the" and stats.longest[0].bytes == 4
    assert vocab_stats(ByteLevelBPETokenizer(vocab, [])).length_bytes == {1: 256, 2: 1, 4: 1, 6: 1}


def test_a_byte_level_vocabulary_without_some_bytes_says_which():
    vocab = {"a": 0, "b": 1, "ab": 2}
    stats = vocab_stats(ByteLevelBPETokenizer(vocab, [("a", "b")]))
    assert stats.byte_symbols_present == 2
    assert len(stats.missing_bytes) == 254 and "61" not in stats.missing_bytes and "20" in stats.missing_bytes


def test_vocab_stats_of_gpt2(gpt2):
    stats = vocab_stats(gpt2, top=5)
    assert stats.vocab_size == 50257
    assert stats.special_tokens == [("<|endoftext|>", 50256)]
    assert stats.byte_symbols_present == 256
    assert stats.counted == 50256
    assert sum(stats.length_bytes.values()) == 50256
    assert sum(stats.length_chars.values()) == 50256 - stats.partial_byte_tokens
    assert stats.scripts["Partial bytes"] == stats.partial_byte_tokens > 0
    assert max(stats.scripts, key=stats.scripts.get) == "Latin"
    assert len(stats.longest) == 5 and stats.longest[0].chars == max(stats.length_chars)


def test_vocab_stats_of_bert_counts_continuation_pieces(bert):
    stats = vocab_stats(bert)
    pieces = sum(1 for t in bert.vocab if t.startswith("##") and len(t) > 2)
    assert stats.continuation_tokens == pieces
    assert stats.continuation_share == pytest.approx(pieces / (30522 - 5))
    assert {"a", "z", "0", "!"} <= set(stats.alphabet)
    assert stats.scripts["Han"] > 0


# ---------------------------------------------------------------------------------------------
# 2. One token: bytes, symbols, merge tree
# ---------------------------------------------------------------------------------------------


def test_merge_tree_of_a_hand_built_token():
    """Ġunaff = merge 4 (Ġ + unaff); unaff = merge 3 (un + aff); un = merge 0; aff = merge 2
    (af + f); af = merge 1. The leaves spell the token's bytes."""
    info = token_info(hand_bpe(), "Ġunaff")
    tree = info.merge_tree
    assert (tree.token, tree.rank) == ("Ġunaff", 4)
    assert (tree.left.token, tree.left.rank) == ("Ġ", None)
    assert (tree.right.token, tree.right.rank) == ("unaff", 3)
    assert [(n.token, n.rank) for n in tree.right.children] == [("un", 0), ("aff", 2)]
    assert [(n.token, n.rank) for n in tree.right.right.children] == [("af", 1), ("f", None)]
    assert [leaf.token for leaf in tree.leaves()] == list("Ġunaff")
    assert tree.to_dict()["children"][1]["children"][0] == {
        "token": "un",
        "readable": "un",
        "id": 256,
        "rank": 0,
        "hex": "75 6E",
        "children": [
            {"token": "u", "readable": "u", "id": ALPHABET.index("u"), "rank": None, "hex": "75", "children": []},
            {"token": "n", "readable": "n", "id": ALPHABET.index("n"), "rank": None, "hex": "6E", "children": []},
        ],
    }
    assert info.surface == " unaff" and info.hex == "20 75 6E 61 66 66"


def test_merge_tree_of_a_gpt2_token_reaches_byte_symbols(gpt2):
    """ " Hello" is one GPT-2 token; its tree's leaves are single byte symbols, the bytes of
    " Hello", and every inner node is a merge whose two halves concatenate to it."""
    assert gpt2.encode(" Hello").tokens == ["ĠHello"]
    info = token_info(gpt2, " Hello")  # text is accepted and mapped to byte symbols
    assert (info.token, info.id) == ("ĠHello", gpt2.token_to_id("ĠHello"))
    assert info.hex == "20 48 65 6C 6C 6F" and info.byte_symbols == "ĠHello" and info.script == "Latin"
    leaves = info.merge_tree.leaves()
    assert [leaf.token for leaf in leaves] == ["Ġ", "H", "e", "l", "l", "o"]
    assert all(leaf.rank is None and leaf.token in BYTE_TO_SYMBOL for leaf in leaves)

    def check(node):
        if node.children:
            assert node.left.token + node.right.token == node.token
            assert gpt2.merges[node.rank] == (node.left.token, node.right.token)
            assert all(child.rank is None or child.rank < node.rank for child in node.children)
            for child in node.children:
                check(child)

    check(info.merge_tree)
    assert info.merge_tree.render().splitlines()[0].startswith("ĠHello  « Hello»  id 18435  merge ")


def test_token_info_of_partial_bytes_and_of_special_tokens(gpt2):
    head = token_info(gpt2, "æĪ")
    assert head.surface is None and head.hex == "E6 88" and head.script == "Partial bytes"
    assert [leaf.token for leaf in head.merge_tree.leaves()] == ["æ", "Ī"]
    eot = token_info(gpt2, 50256)
    assert eot.token == "<|endoftext|>" and eot.special and eot.merge_tree is None
    with pytest.raises(ToktoolsError, match="use --id 50256"):  # a string is never taken for an id
        token_info(gpt2, "50256")
    assert token_info(gpt2, "1990").token == "1990"  # "1990" is itself a token of GPT-2
    assert token_info(gpt2, 1990).id == 1990
    with pytest.raises(ToktoolsError, match=r"2 tokens: <E6 88> \| <91>"):
        token_info(gpt2, "我")


def test_token_info_of_a_wordpiece_piece():
    info = token_info(hand_wordpiece(), "##able")
    assert (info.id, info.surface, info.continuation, info.merge_tree) == (8, "able", True, None)
    assert info.byte_symbols == "able" and info.hex == "61 62 6C 65"
    with pytest.raises(ToktoolsError):
        token_info(hand_wordpiece(), 99)


# ---------------------------------------------------------------------------------------------
# 3. Corpus usage
# ---------------------------------------------------------------------------------------------


def test_corpus_usage_counts_tokens_unused_entries_and_unknowns():
    """Line 1: the un ##aff ##able [UNK] (5 tokens); line 2: the the (2). 7 tokens, 5 distinct;
    of the 4 non-special entries only "the", "un", "##aff", "##able" exist and all are used."""
    usage = corpus_usage(hand_wordpiece(), ["the unaffable xyz\n", "the the\r\n"])
    assert (usage.lines, usage.words, usage.characters) == (2, 5, 17 + 7)
    assert (usage.tokens, usage.distinct_used) == (7, 5)
    assert (usage.vocab_considered, usage.unused, usage.unused_sample) == (4, 0, [])
    assert (usage.unk_token, usage.unk_count) == ("[UNK]", 1)
    assert usage.unk_rate == pytest.approx(1 / 7)
    assert usage.most_common[0] == (5, "the", 3)


def test_corpus_usage_lists_unused_tokens_by_id():
    usage = corpus_usage(hand_bpe(), ["the"])
    assert usage.tokens == 1 and usage.distinct_used == 1
    assert usage.vocab_considered == 256 + 10 and usage.unused == 265
    assert usage.unused_sample[:2] == [(0, "!"), (1, '"')]
    assert usage.unk_token is None and usage.unk_rate == 0.0


# ---------------------------------------------------------------------------------------------
# 4. Segmentation metrics
# ---------------------------------------------------------------------------------------------


def test_metrics_arithmetic_on_a_tiny_example():
    """ "the unaffable xyz": 17 characters, 3 words, 5 tokens (the | un ##aff ##able | [UNK]);
    one word of three is split; one token of five is unknown; chars/token and bytes/token use
    the same characters (spaces included)."""
    m = segment_metrics(hand_wordpiece(), "the unaffable xyz")
    assert (m.tokens, m.characters, m.bytes, m.words, m.documents) == (5, 17, 17, 3, 1)
    assert m.chars_per_token == pytest.approx(17 / 5)
    assert m.bytes_per_token == pytest.approx(17 / 5)
    assert m.tokens_per_word == pytest.approx(5 / 3)
    assert (m.split_words, m.split_share) == (1, pytest.approx(1 / 3))
    assert (m.unk_count, m.unk_rate) == (1, pytest.approx(1 / 5))
    assert m.tokens_per_word_histogram == {1: 2, 3: 1}
    assert m.sequence_lengths == {5 + m.specials_per_sequence: 1}


def test_metrics_attribute_a_leading_space_token_to_the_next_word():
    """Byte-level: the | Ġunaff able | Ġ x y z. "Ġunaff" belongs to "unaffable" (its last
    character is in it); the lone "Ġ" is all space and belongs to no word. So "unaffable"
    has 2 tokens and "xyz" 3: 2 split words of 3, 7 tokens for 3 words."""
    m = segment_metrics(hand_bpe(), "the unaffable xyz")
    assert m.tokens == 7 and m.split_words == 2 and m.tokens_per_word == pytest.approx(7 / 3)
    assert m.unk_count == 0 and m.unk_rate == 0.0


def test_cjk_text_without_spaces_is_one_word_and_its_characters_are_byte_pieces():
    """ "你好" has no merges in the hand-built BPE: 6 byte tokens, 1 word, 2 characters, both
    characters in byte pieces."""
    m = segment_metrics(hand_bpe(), "你好")
    assert (m.tokens, m.words, m.characters, m.bytes) == (6, 1, 2, 6)
    assert m.tokens_per_word == 6.0 and m.split_share == 1.0
    assert m.bytes_per_token == 1.0 and m.chars_per_token == pytest.approx(2 / 6)
    assert (m.byte_piece_chars, m.byte_piece_share) == (2, 1.0)


def test_empty_text_has_undefined_ratios():
    m = segment_metrics(hand_bpe(), "")
    assert m.tokens == 0 and m.chars_per_token is None and m.tokens_per_word is None
    assert json_round_trip(m.to_dict())["tokens_per_word"] is None


def test_metrics_of_gpt2_facts(gpt2):
    m = segment_metrics(gpt2, "Hello world")  # Hello | Ġworld
    assert (m.tokens, m.chars_per_token, m.tokens_per_word, m.split_words) == (2, 5.5, 1.0, 0)
    wo = segment_metrics(gpt2, "我")  # E6 88 | 91
    assert (wo.tokens, wo.bytes_per_token, wo.split_words, wo.byte_piece_chars) == (2, 1.5, 1, 1)


def test_metrics_ignore_truncation_and_padding_of_published_tokenizers(gpt2, bert):
    """GPT-2's tokenizer.json truncates to 50 tokens and bert-base-uncased's pads to 128: the
    metrics see the whole text and no padding, and the tokenizers keep their settings."""
    text = " ".join(["word"] * 80)
    assert gpt2.truncation is not None and bert.padding is not None
    assert segment_metrics(gpt2, text).tokens == 80
    assert segment_metrics(bert, text).tokens == 80
    assert segment_metrics(bert, "hello").tokens == 1
    assert gpt2.truncation is not None and bert.padding is not None
    assert len(gpt2.encode(text)) == 50


# ---------------------------------------------------------------------------------------------
# 5. Alignment
# ---------------------------------------------------------------------------------------------


def test_alignment_of_hand_built_tokenizers_marks_the_differing_spans():
    """WordPiece cuts {0,3 | 4,6,9,13 | 14,17}; BPE {0,3 | 4,9,13 | 14,15,16,17} (whitespace is
    neutral: "Ġunaff" starts at u). They differ inside "unaff" (the cut at 6) and inside "xyz"
    (15, 16): two minimal regions between boundaries both share."""
    alignment = align_segmentations("the unaffable xyz", {"wordpiece": hand_wordpiece(), "bpe": hand_bpe()})
    assert alignment.row("wordpiece").boundaries == [0, 3, 4, 6, 9, 13, 14, 17]
    assert alignment.row("bpe").boundaries == [0, 3, 4, 9, 13, 14, 15, 16, 17]
    assert [(d.char_start, d.char_end, d.text) for d in alignment.diffs] == [(4, 9, "unaff"), (14, 17, "xyz")]
    assert alignment.diffs[0].tokens == {"wordpiece": ["un", "##aff"], "bpe": ["Ġunaff"]}
    assert alignment.diffs[1].tokens == {"wordpiece": ["[UNK]"], "bpe": ["x", "y", "z"]}
    ġunaff = alignment.row("bpe").spans[1]
    assert (ġunaff.token, ġunaff.char_start, ġunaff.char_end, ġunaff.byte_start, ġunaff.byte_end) == (
        "Ġunaff",
        3,
        9,
        3,
        9,
    )


def test_plain_rendering_of_the_hand_built_alignment():
    """The plain view: one row per tokenizer, | at its cuts, · where only another row cuts,
    spaces a token owns inside its bars (bpe's "Ġunaff" is drawn "  un·aff|"), ? around the
    unknown token, ^ under the regions that differ, and a legend for the marks used."""
    alignment = align_segmentations("the unaffable xyz", {"wordpiece": hand_wordpiece(), "bpe": hand_bpe()})
    lines = alignment.render_plain().splitlines()
    assert lines[0] == "wordpiece  |the| |un|aff|able| ?x·y·z?"
    assert lines[1] == "bpe        |the|  un·aff|able| |x|y|z|"
    assert lines[2].startswith("diff") and lines[2].strip("dif ") == "^^^^^^        ^^^^^"
    assert lines[2].index("^") == lines[0].index("un") and lines[2].rindex("^") == lines[0].index("z")
    legend = "\n".join(lines[4:])
    assert lines[4].startswith("legend") and "unknown token" in legend and "inside bars belongs" in legend


def test_alignment_of_unaffable_between_bert_and_gpt2(bert, gpt2):
    """BERT: una ##ffa ##ble (cuts at 3 and 6 inside the word); GPT-2: Ġunaff able (cut at 5).
    Only "unaffable" differs; "an" and "man" are cut alike."""
    text = "an unaffable man"
    alignment = align_segmentations(text, {"bert": bert, "gpt2": gpt2})
    assert [s.token for s in alignment.row("bert").spans] == ["an", "una", "##ffa", "##ble", "man"]
    assert [s.token for s in alignment.row("gpt2").spans] == ["an", "Ġunaff", "able", "Ġman"]
    assert [(d.char_start, d.char_end, d.text) for d in alignment.diffs] == [(3, 12, "unaffable")]
    lines = alignment.render_plain().splitlines()
    assert lines[0] == "bert  |an| |una|ff·a|ble| |man|"
    assert lines[1] == "gpt2  |an|  una·ff|a·ble|  man|"
    assert lines[2].index("^") == lines[0].index("una") and lines[2].rstrip().endswith("^")


def test_a_character_cut_between_byte_tokens_is_drawn_as_its_bytes(gpt2, bert):
    """我 = E6 88 91; GPT-2 cuts it E6 88 | 91: two tokens sharing character offsets (0, 1),
    with byte ranges (0, 2) and (2, 3). BERT keeps it whole, so the character is a difference;
    the main view shows GPT-2's cut inside the character, and --bytes adds every byte."""
    alignment = align_segmentations("我", {"bert": bert, "gpt2": gpt2})
    spans = alignment.row("gpt2").spans
    assert [(s.token, s.char_start, s.char_end, s.byte_start, s.byte_end, s.partial) for s in spans] == [
        ("æĪ", 0, 1, 0, 2, True),
        ("ĳ", 0, 1, 2, 3, True),
    ]
    assert [s.readable for s in spans] == ["<E6 88>", "<91>"]
    assert alignment.row("gpt2").byte_boundaries == [0, 2, 3]
    assert alignment.row("gpt2").boundaries == [0, 1]  # no character-level cut inside
    assert [(d.byte_start, d.byte_end, d.text) for d in alignment.diffs] == [(0, 3, "我")]
    lines = alignment.render_plain().splitlines()
    assert lines[:3] == ["bert  |我      |", "gpt2  |E6 88¦91|", "diff   ^^^^^^^^"]
    assert "a character cut between byte-level tokens" in alignment.render_plain()
    with_bytes = alignment.render_plain(byte_view=True, legend=False)
    assert with_bytes.endswith("bytes   我\nbert   |E6 88 91|\ngpt2   |E6 88|91|\n")


def test_invisible_characters_are_escaped_and_unknown_tokens_marked():
    tokenizers = {"wordpiece": hand_wordpiece(), "bpe": hand_bpe()}
    view = align_segmentations("the\u200dthe\tthe", tokenizers).render_plain()
    assert "\\u200d" in view and "\\t" in view and "\u200d" not in view and "\t" not in view
    assert "invisible characters" in view
    view = align_segmentations("the 你", tokenizers).render_plain()
    assert "bpe        |the| |E4¦BD¦A0|" in view  # no merge: one token per byte
    assert "wordpiece  |the| ?你" in view  # [UNK] for the whole character


def test_diff_regions_list_the_overlapping_tokens_of_every_row_on_a_long_line(bert, gpt2):
    """The sweep that matches regions to tokens (linear; see benchmarks/bench_align.py) gives,
    for each region, exactly the tokens whose trimmed byte range overlaps it."""
    text = "The unaffable anarchists reorganised Fédération syndicaliste 我是 in 1945. " * 30
    alignment = align_segmentations(text, {"bert": bert, "gpt2": gpt2})
    assert len(alignment.diffs) > 100
    data = text.encode("utf-8")
    for diff in alignment.diffs:
        for row in alignment.rows:
            expected = []
            for span in row.spans:
                raw = data[span.byte_start : span.byte_end]
                b0 = span.byte_start + (len(raw) - len(raw.lstrip()))
                b1 = span.byte_end - (len(raw) - len(raw.rstrip()))
                if max(diff.byte_start, b0) < min(diff.byte_end, b1):
                    expected.append(span.token)
            assert diff.tokens[row.name] == expected


def test_rows_differ_only_in_their_bars_and_wrapping_respects_the_width(bert, gpt2):
    text = "Tokenizers disagree: 北京 is 2 characters and 6 bytes, naïve has a diaeresis."
    alignment = align_segmentations(text, {"bert": bert, "gpt2": gpt2})
    for view in (alignment.render_plain(legend=False), alignment.render_plain(width=40, legend=False)):
        lines = view.split("\n")
        for first, second in zip(lines, lines[1:]):
            if first.startswith("bert ") and second.startswith("gpt2 "):
                assert display_width(first.rstrip(" |")) <= display_width(second) + 1
                assert abs(display_width(first.rstrip()) - display_width(second.rstrip())) <= 1
    assert all(display_width(line) <= 40 for line in alignment.render_plain(width=40, legend=False).splitlines())
    assert max(display_width(line) for line in alignment.render_plain().splitlines()) > 40


def test_comparison_bundles_metrics_and_alignment_and_is_json(gpt2, bert):
    comparison = compare({"bert": bert, "gpt2": gpt2}, "我爱北京 hello")
    assert list(comparison.metrics) == ["bert", "gpt2"]
    assert comparison.metrics["gpt2"].tokens == len(gpt2.encode("我爱北京 hello").ids)
    data = comparison.to_dict()
    assert json_round_trip(data) == data
    assert data["metrics"]["gpt2"]["tokens"] == comparison.metrics["gpt2"].tokens
    assert data["alignment"]["rows"][1]["spans"][0] == {
        "id": gpt2.token_to_id("æĪ"),
        "token": "æĪ",
        "readable": "<E6 88>",
        "char_start": 0,
        "char_end": 1,
        "byte_start": 0,
        "byte_end": 2,
        "partial": True,
        "unknown": False,
    }
    table = comparison.render_plain().splitlines()
    assert table[-3].split()[:3] == ["tokenizer", "tokens", "chars/token"]
    assert table[-1].split()[:2] == ["gpt2", str(comparison.metrics["gpt2"].tokens)]


def test_every_report_is_json_serialisable():
    """to_dict() gives plain JSON data: string keys, and a JSON round trip changes nothing."""
    wp, bpe = hand_wordpiece(), hand_bpe()
    for item in (
        vocab_stats(wp),
        vocab_stats(bpe),
        token_info(bpe, "Ġunaff"),
        token_info(wp, "[CLS]"),
        corpus_usage(wp, ["the unaffable xyz"]),
        segment_metrics(bpe, "the unaffable xyz"),
        align_segmentations("the 我", {"wp": wp, "bpe": bpe}),
        compare([("wp", wp), ("bpe", bpe)], "the unaffable xyz"),
    ):
        data = item.to_dict()
        assert json_round_trip(data) == data, type(item).__name__
    assert vocab_stats(wp).to_dict()["length_chars"] == {"2": 1, "3": 2, "4": 1}


def test_tokenizer_names_must_be_distinct():
    with pytest.raises(ToktoolsError):
        align_segmentations("x", [("a", hand_bpe()), ("a", hand_wordpiece())])


def test_trained_vocabularies_work_end_to_end():
    """Vocabularies trained by toktools itself go through every report."""
    texts = ["unaffable affable unable able"] * 5 + ["你好 你好 世界"] * 5
    bpe = toktools.train_bytebpe(texts=texts, vocab_size=300)
    wp = toktools.train_wordpiece(texts=texts, vocab_size=200)
    assert vocab_stats(bpe).byte_symbols_present == 256
    assert vocab_stats(wp).scripts.get("Han", 0) >= 2  # 你, 好 (and 世, 界) are characters of the alphabet
    comparison = compare({"bpe": bpe, "wp": wp}, "unaffable 你好")
    assert json_round_trip(comparison.to_dict()) == comparison.to_dict()
    assert "bytes" in comparison.render_plain(byte_view=True)


# ---------------------------------------------------------------------------------------------
# Properties
# ---------------------------------------------------------------------------------------------

_WP, _BPE = hand_wordpiece(), hand_bpe()


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.sampled_from(list("the unaffablexyz\n\t") + ["我", "é", "e\u0301", "😀", "\u3000", "\x00"]), max_size=20
    ).map("".join)
)
def test_alignment_properties(text):
    """For any text: byte-level spans tile the UTF-8 bytes exactly; every span lies inside the
    text; each diff lies between boundaries that all rows share; the plain rows only differ
    in their bars."""
    alignment = align_segmentations(text, {"wp": _WP, "bpe": _BPE})
    data = text.encode("utf-8")
    position = 0
    for span in alignment.row("bpe").spans:
        assert span.byte_start == position
        position = span.byte_end
    assert position == len(data)
    for row in alignment.rows:
        for span in row.spans:
            assert 0 <= span.byte_start <= span.byte_end <= len(data)
            assert 0 <= span.char_start <= span.char_end <= len(text)
    common = set.intersection(*(set(r.byte_boundaries) for r in alignment.rows)) | {0, len(data)}
    for diff in alignment.diffs:
        assert diff.byte_start in common and diff.byte_end in common
        inside = [set(b for b in r.byte_boundaries if diff.byte_start < b < diff.byte_end) for r in alignment.rows]
        assert inside[0] != inside[1]
    wp_line, bpe_line = alignment.render_plain().split("\n")[:2]
    assert wp_line.startswith("wp") and bpe_line.startswith("bpe")
    assert "\x00" not in alignment.render_plain()  # controls are escaped


# ---------------------------------------------------------------------------------------------
# The old module path
# ---------------------------------------------------------------------------------------------


def test_the_old_report_module_still_gives_every_public_name() -> None:
    """``toktools.analysis.report`` (and ``toktools.report``, its alias from before 0.2.0) was one
    module; its public names still import from it, as the objects of the modules they moved to."""
    import warnings

    from toktools.analysis import alignment, alignment_layout, scripts, vocabulary

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import toktools.report as old
    names = {
        "Alignment", "BERT_BASE_PARAMETERS", "Comparison", "DiffSpan", "EmbeddingCost", "MergeNode", "Metrics",
        "ScoreStats", "ScriptName", "SegmentationRow", "TokenEntry", "TokenInfo", "TokenSpan", "UsageStats",
        "VocabStats", "align_segmentations", "compare", "corpus_usage", "legend_lines", "merge_tree",
        "render_metrics_plain", "script_of_char", "script_of_text", "segment_metrics", "token_info", "vocab_stats",
    }  # fmt: skip
    assert names <= set(dir(old)) and set(old.__all__) <= names
    assert old.Alignment is alignment.Alignment and old.vocab_stats is vocabulary.vocab_stats
    assert old.script_of_char is scripts.script_of_char and old.legend_lines is alignment_layout.legend_lines
