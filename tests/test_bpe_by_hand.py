"""Tiny examples worked out by hand: BPE training, BPE encoding, WordPiece, byte-level.

Read these with pen and paper. Every expected value is derived in the comments, step by step,
from the rules (``tokenizers``' ``BpeTrainer``: the most frequent pair wins, ties go to the
smallest ``(left id, right id)``); the code's output was not consulted. ``tokenizers`` itself is
asked too where it numbers tokens the same way. Nothing here needs ``../shared``.
"""

from __future__ import annotations

import json
from pathlib import Path

import tokenizers

import toktools
from toktools.models.bpe import trainer as bpe
from toktools.models.bpe.merges import build_merge_map, merge_symbols
from toktools.models.bpe.naive import train_bpe_naive

# --- 1. Training: "low lower lowest newer wider", each word once ----------------------------------
#
# Alphabet, sorted by code point: d e i l n o r s t w  ->  ids d=0 e=1 i=2 l=3 n=4 o=5 r=6 s=7 t=8 w=9
#
# Pairs (count): l o 3 (low, lower, lowest)   o w 3   w e 3 (lower, lowest, newer)
#                e r 3 (lower, newer, wider)  e s 1   s t 1   n e 1   e w 1   w i 1   i d 1   d e 1
# Merge 1: four pairs have 3. As ids: (l,o)=(3,5) (o,w)=(5,9) (w,e)=(9,1) (e,r)=(1,6);
#          the smallest is (1,6)                                  -> "er" = 10
#   words: l o w | l o w er | l o w e s t | n e w er | w i d er
#   pairs: l o 3   o w 3   w er 2 (lower, newer)   w e 1   e s 1   s t 1   n e 1   e w 1   w i 1
#          i d 1   d er 1
# Merge 2: (l,o)=(3,5) before (o,w)=(5,9)                          -> "lo" = 11
# Merge 3: lo w 3 (every "lo" is followed by w)                    -> "low" = 12
#   words: low | low er | low e s t | n e w er | w i d er
#   (w er is down to 1: the w of "lower" went into "low"); every pair left has 1:
#          low er (12,10)  low e (12,1)  e s (1,7)  s t (7,8)  n e (4,1)  e w (1,9)  w er (9,10)
#          w i (9,2)  i d (2,0)  d er (0,10)
# Merge 4: the smallest is (0,10) = d er                           -> "der" = 13
#   pairs left, all 1: (12,10) (12,1) (1,7) (7,8) (4,1) (1,9) (9,10) (9,2) (2,13)
# Merge 5: the smallest is (1,7) = e s                             -> "es" = 14
#   pairs left, all 1: (12,10) (12,14) (14,8) (4,1) (1,9) (9,10) (9,2) (2,13)
# Merge 6: the smallest is (1,9) = e w                             -> "ew" = 15
# vocab_size=16 stops here: 10 characters + 6 merges.

LOW_WORDS = {"low": 1, "lower": 1, "lowest": 1, "newer": 1, "wider": 1}
LOW_VOCAB = ["d", "e", "i", "l", "n", "o", "r", "s", "t", "w", "er", "lo", "low", "der", "es", "ew"]
LOW_MERGES = [("e", "r"), ("l", "o"), ("lo", "w"), ("d", "er"), ("e", "s"), ("e", "w")]
LOW_COUNTS = [3, 3, 3, 1, 1, 1]


def test_training_low_lower_lowest_newer_wider_by_hand() -> None:
    result = bpe.train_bpe(LOW_WORDS, bpe.BpeTrainerConfig(vocab_size=16))
    assert (result.vocab, result.merges, result.merge_counts) == (LOW_VOCAB, LOW_MERGES, LOW_COUNTS)
    assert train_bpe_naive(LOW_WORDS, vocab_size=16) == (LOW_VOCAB, LOW_MERGES, LOW_COUNTS)


def test_tokenizers_trains_the_same_merges_by_hand() -> None:
    tokenizer = tokenizers.Tokenizer(tokenizers.models.BPE())
    tokenizer.pre_tokenizer = tokenizers.pre_tokenizers.WhitespaceSplit()
    trainer = tokenizers.trainers.BpeTrainer(vocab_size=16, show_progress=False)
    tokenizer.train_from_iterator(["low lower lowest newer wider"], trainer=trainer)
    model = json.loads(tokenizer.to_str())["model"]
    assert model["vocab"] == {token: i for i, token in enumerate(LOW_VOCAB)}
    assert [tuple(merge) for merge in model["merges"]] == LOW_MERGES


# --- 2. Encoding with those merges --------------------------------------------------------------
#
# Ranks: 0 e r   1 l o   2 lo w   3 d er   4 e s   5 e w.  The lowest-ranked pair present merges
# first; then look again.
#
# "lowest" = l o w e s t = ids 3 5 9 1 7 8
#   pairs present: l o (1), e s (4)                         -> l o first:  lo w e s t
#   now: lo w (2), e s (4)                                  -> lo w:       low e s t
#   now: e s (4)                                            -> e s:        low es t
#   tokens: low es t = ids 12 14 8, starting at symbols 0, 3, 5
#
# "wider" = w i d e r = ids 9 2 0 1 6
#   pairs present: e r (0) only                             -> w i d er
#   now: d er (3), a pair made of a merged token            -> w i der
#   tokens: w i der = ids 9 2 13, starting at symbols 0, 1, 2
#
# "newer" = n e w e r = ids 4 1 9 1 6
#   pairs present: e w (5), e r (0)                         -> e r first:  n e w er
#   now: e w (5)                                            -> n ew er
#   tokens: n ew er = ids 4 15 10, starting at symbols 0, 1, 3


def test_encoding_words_with_the_merges_by_hand() -> None:
    vocab = {token: i for i, token in enumerate(LOW_VOCAB)}
    merge_map = build_merge_map(vocab, LOW_MERGES)
    assert merge_symbols([3, 5, 9, 1, 7, 8], merge_map) == [(12, 0), (14, 3), (8, 5)]
    assert merge_symbols([9, 2, 0, 1, 6], merge_map) == [(9, 0), (2, 1), (13, 2)]
    assert merge_symbols([4, 1, 9, 1, 6], merge_map) == [(4, 0), (15, 1), (10, 3)]
    assert merge_symbols([0], merge_map) == [(0, 0)]  # one symbol: nothing to merge


# --- 3. Training with a "##" prefix (how WordPiece vocabularies are trained) ----------------------
#
# Words (count): hug 10, pug 5, pun 12, bun 4, hugs 5. Inside a word a character carries "##".
# Alphabet, by code point: b g h n p s u -> ids 0..6 (every character, even those only seen inside
# a word). The "##" symbols get ids as first seen, word by word: ##u 7, ##g 8, ##n 9, ##s 10.
#   hug = h ##u ##g   pug = p ##u ##g   pun = p ##u ##n   bun = b ##u ##n   hugs = h ##u ##g ##s
# Pairs: ##u ##g 10+5+5 = 20   p ##u 5+12 = 17   ##u ##n 12+4 = 16   h ##u 10+5 = 15
#        ##g ##s 5   b ##u 4
# Merge 1: ##u ##g 20 -> "##u" + "g" (the right part loses its "##") = "##ug" 11
#   pairs: h ##ug 15   p ##ug 5   p ##u 12   ##u ##n 16   b ##u 4   ##ug ##s 5
# Merge 2: ##u ##n 16 -> "##un" 12
#   pairs: h ##ug 15   p ##ug 5   p ##un 12   b ##un 4   ##ug ##s 5
# Merge 3: h ##ug 15 -> "hug" 13
#   pairs: p ##ug 5   p ##un 12   b ##un 4   hug ##s 5
# Merge 4: p ##un 12 -> "pun" 14
# Merge 5: a tie at 5: p ##ug = (4,11), hug ##s = (13,10); (4,11) is smaller -> "pug" 15
# Merge 6: hug ##s 5 -> "hugs" 16
# Merge 7: b ##un 4 -> "bun" 17

HUG_WORDS = {"hug": 10, "pug": 5, "pun": 12, "bun": 4, "hugs": 5}
HUG_VOCAB = [
    "b",
    "g",
    "h",
    "n",
    "p",
    "s",
    "u",
    "##u",
    "##g",
    "##n",
    "##s",
    "##ug",
    "##un",
    "hug",
    "pun",
    "pug",
    "hugs",
    "bun",
]
HUG_MERGES = [
    ("##u", "##g"),
    ("##u", "##n"),
    ("h", "##ug"),
    ("p", "##un"),
    ("p", "##ug"),
    ("hug", "##s"),
    ("b", "##un"),
]


def test_training_with_a_continuing_subword_prefix_by_hand() -> None:
    config = bpe.BpeTrainerConfig(vocab_size=100, continuing_subword_prefix="##")
    result = bpe.train_bpe(HUG_WORDS, config)
    assert (result.vocab, result.merges, result.merge_counts) == (HUG_VOCAB, HUG_MERGES, [20, 16, 15, 12, 5, 5, 4])
    vocab, merges, _ = train_bpe_naive(HUG_WORDS, vocab_size=100, continuing_subword_prefix="##")
    assert (vocab, merges) == (HUG_VOCAB, HUG_MERGES)


# --- 4. WordPiece: greedy longest match from the left, [UNK] for a word that cannot be covered ----
#
# vocab.txt (line = id): 0 [PAD] 1 [UNK] 2 [CLS] 3 [SEP] 4 [MASK] 5 un 6 ##aff 7 ##able 8 ##a 9 u
#                        10 ##n 11 play 12 ##ing
# "unaffable playing unx", lower-cased already, split on spaces: unaffable (0-9) playing (10-17)
# unx (18-21).
#   unaffable: from 0 the longest entry that starts the word: "un" (also "u", shorter) -> 0-2
#              from 2 the longest "##" entry: "##aff" -> 2-5; from 5: "##able" (not "##a") -> 5-9
#   playing:   "play" 10-14, "##ing" 14-17
#   unx:       "un" 18-20, then nothing matches "x" ("##x" is no entry): the whole word is [UNK],
#              the "un" found before is dropped -> [UNK] 18-21
# A bare vocab.txt loads as BERT: [CLS] first, [SEP] last, both with offsets (0, 0).

WORDPIECE_VOCAB = [
    "[PAD]",
    "[UNK]",
    "[CLS]",
    "[SEP]",
    "[MASK]",
    "un",
    "##aff",
    "##able",
    "##a",
    "u",
    "##n",
    "play",
    "##ing",
]


def test_wordpiece_greedy_longest_match_by_hand(tmp_path: Path) -> None:
    (tmp_path / "vocab.txt").write_text("".join(token + "\n" for token in WORDPIECE_VOCAB), encoding="utf-8")
    encoding = toktools.load(tmp_path / "vocab.txt").encode("unaffable playing unx")
    assert encoding.tokens == ["[CLS]", "un", "##aff", "##able", "play", "##ing", "[UNK]", "[SEP]"]
    assert encoding.ids == [2, 5, 6, 7, 11, 12, 1, 3]
    assert encoding.offsets == [(0, 0), (0, 2), (2, 5), (5, 9), (10, 14), (14, 17), (18, 21), (0, 0)]
    theirs = tokenizers.BertWordPieceTokenizer(str(tmp_path / "vocab.txt")).encode("unaffable playing unx")
    assert (theirs.ids, theirs.offsets) == (encoding.ids, encoding.offsets)


# --- 5. Byte level: "我" is three bytes, hence three symbols ---------------------------------------
#
# UTF-8 of U+6211 (0110 0010 0001 0001): 1110·0110 10·001000 10·010001 = E6 88 91.
# GPT-2's byte map keeps the printable bytes (! to ~, ¡ to ¬, ® to ÿ) as their own character and
# gives the others 256, 257, ... in byte order: 0-32 -> 256-288, then 127-160 -> 289-322, 173 -> 323.
#   E6 = 230 is printable                    -> chr(230) = "æ"
#   88 = 136 is the 10th of 127..160         -> 289 + 9  = 298 = U+012A "Ī"
#   91 = 145 is the 19th of 127..160         -> 289 + 18 = 307 = U+0133 "ĳ"
# With vocab æ 0, Ī 1, ĳ 2, æĪ 3 and the one merge "æ Ī": æ Ī ĳ -> æĪ ĳ = ids 3 2. Both tokens
# are parts of the one character 我, so both point at it: offsets (0, 1).


def test_byte_level_splits_a_chinese_character_into_its_bytes_by_hand(tmp_path: Path) -> None:
    assert "我".encode() == bytes([0xE6, 0x88, 0x91])
    (tmp_path / "vocab.json").write_text(json.dumps({"æ": 0, "Ī": 1, "ĳ": 2, "æĪ": 3}), encoding="utf-8")
    (tmp_path / "merges.txt").write_text("#version: 0.2\næ Ī\n", encoding="utf-8")
    encoding = toktools.load(tmp_path).encode("我")
    assert encoding.tokens == ["æĪ", "ĳ"]
    assert encoding.ids == [3, 2]
    assert encoding.offsets == [(0, 1), (0, 1)]
    assert toktools.load(tmp_path).decode([3, 2]) == "我"
    theirs = tokenizers.ByteLevelBPETokenizer(str(tmp_path / "vocab.json"), str(tmp_path / "merges.txt")).encode("我")
    assert (theirs.tokens, theirs.ids, theirs.offsets) == (encoding.tokens, encoding.ids, encoding.offsets)


# --- Loading merges: the fast path (all in C) and the errors it leaves to the slow one ---------


def test_merge_map_by_hand() -> None:
    # vocab a=0 b=1 ab=2 ba=3; merges "a b" (rank 0), "b a" (rank 1), "a b" again (rank 2):
    # a pair listed twice keeps its last rank, as tokenizers does
    vocab = {"a": 0, "b": 1, "ab": 2, "ba": 3}
    assert build_merge_map(vocab, [("a", "b"), ("b", "a"), ("a", "b")]) == {(0, 1): (2, 2), (1, 0): (1, 3)}
    assert build_merge_map(vocab, []) == {}
    # "##" prefix: the right side loses it in the result ("a" + "##b" -> "ab")
    assert build_merge_map({"a": 0, "##b": 1, "ab": 2}, [("a", "##b")], "##") == {(0, 1): (0, 2)}


def test_merges_with_unknown_tokens_or_bad_shapes_are_one_line_errors() -> None:
    import pytest

    from toktools.errors import ToktoolsError
    from toktools.parts.models import BPE

    vocab = {"a": 0, "b": 1, "ab": 2}
    with pytest.raises(ToktoolsError, match=r"merge 2 \('b' 'c'\) uses a token missing from the vocabulary: 'bc'"):
        build_merge_map(vocab, [("a", "b"), ("b", "c")])
    with pytest.raises(ToktoolsError, match=r"BPE merge 2 is not a pair of tokens: 'a b c'"):
        BPE.from_json({"vocab": vocab, "merges": ["a b", "a b c"]})
    with pytest.raises(ToktoolsError, match=r"BPE merge 1 is not a pair of tokens: \['a', 1\]"):
        BPE.from_json({"vocab": vocab, "merges": [["a", 1]]})
    with pytest.raises(ToktoolsError, match="must map token strings to integer ids"):
        BPE.from_json({"vocab": {"a": True}, "merges": []})
    # both spellings, and a mix of them, give the same merges
    for merges in (["a b"], [["a", "b"]]):
        assert BPE.from_json({"vocab": vocab, "merges": merges}).merges == [("a", "b")]
    assert BPE.from_json({"vocab": vocab, "merges": ["a b", ["a", "b"]]}).merges == [("a", "b"), ("a", "b")]
