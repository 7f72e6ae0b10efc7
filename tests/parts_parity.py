"""Shared checks for the parts tests: a tokenizer built with ``tokenizers``' own Python API is
loaded by toktools from its ``tokenizer.json``, then both must agree on real text (ids, tokens,
offsets, type ids, masks, decode — single sequences and pairs), the JSON nodes must be equal,
and what toktools writes back must load in ``tokenizers`` to the same behaviour."""

from __future__ import annotations

import json
from functools import cache

from conftest import read_corpus_sample
from tokenizers import Tokenizer as HFTokenizer

from toktools.formats import from_tokenizer_json
from toktools.tokenizer import Tokenizer

FIELDS = ("ids", "tokens", "offsets", "type_ids", "attention_mask", "special_tokens_mask")
PART_KEYS = ("normalizer", "pre_tokenizer", "model", "post_processor", "decoder", "added_tokens")

#: A few lines chosen to hit edges: leading spaces and newlines, accents, CJK, emoji, controls.
EDGE_LINES = [
    "",
    " ",
    "Hello, world!",
    "  two  spaces",
    "\nfoo",
    "\tTab and\r\nCRLF",
    "naïve café — déjà vu",
    "Straße İstanbul ǅ",
    "我爱北京天安门。",
    "混合 text 和 中文123",
    "emoji 🤗👍🏽 done",
    "don't you're I'm",
    "x\u0301y\u0300",
    "\u200bzero\u200dwidth",
    "a" * 120,
    "12345 67.89",
]


@cache
def sample_lines(name: str, max_bytes: int = 30_000) -> tuple[str, ...]:
    return tuple(line for line in read_corpus_sample(name, max_bytes).split("\n") if line.strip())


def corpus_lines(max_bytes: int = 30_000) -> list[str]:
    """English, Chinese and mixed samples of the shared corpora, plus the edge lines."""
    lines = list(EDGE_LINES)
    for name in ("en_wiki.txt.gz", "zh_wiki_sample.txt", "mixed_sample.txt"):
        lines += sample_lines(name, max_bytes)
    return lines


def load_in_toktools(hf: HFTokenizer) -> Tokenizer:
    return from_tokenizer_json(json.loads(hf.to_str()))


def assert_same_encodings(
    ours: Tokenizer, theirs: HFTokenizer, lines: list[str], pairs: bool = True, memo: dict | None = None
) -> None:
    """Every field of every encoding equal (singles, then consecutive lines as pairs), and decode.

    ``memo`` keeps ``ours``' answers for a later check of the same tokenizer on the same lines
    (``check_all``'s round trip): its decodes, and its encodings when it pads nothing (then an
    item's encoding does not depend on the rest of its batch)."""
    memo = {} if memo is None else memo
    batches: list[list] = [lines]
    if pairs:
        batches.append([(a, b) for a, b in zip(lines[::2], lines[1::2])])
    for batch in batches:
        mine = _our_encodings(ours, batch, memo)
        reference = theirs.encode_batch(batch)
        for item, a, b in zip(batch, mine, reference):
            for name in FIELDS:
                got, want = list(getattr(a, name)), [tuple(x) if name == "offsets" else x for x in getattr(b, name)]
                assert got == want, f"{name} differ for {item!r}:\n  toktools:   {got}\n  tokenizers: {want}"
    for line in lines:
        ids = theirs.encode(line).ids
        for skip in (True, False):
            key = ("decode", tuple(ids), skip)
            if key not in memo:
                memo[key] = ours.decode(ids, skip_special_tokens=skip)
            assert memo[key] == theirs.decode(ids, skip_special_tokens=skip), (
                f"decode differs for {line!r} (skip_special_tokens={skip})"
            )


def _our_encodings(ours: Tokenizer, batch: list, memo: dict) -> list:
    if ours.padding is not None:
        return ours.encode_batch(batch, workers=1)
    missing = list(dict.fromkeys(item for item in batch if ("encode", item) not in memo))
    for item, encoding in zip(missing, ours.encode_batch(missing, workers=1) if missing else []):
        memo[("encode", item)] = encoding
    return [memo[("encode", item)] for item in batch]


def assert_same_json(ours: Tokenizer, theirs: HFTokenizer) -> None:
    """Each part's node equal to the one ``tokenizers`` wrote."""
    mine, reference = ours.to_tokenizer_json(), json.loads(theirs.to_str())
    for key in PART_KEYS:
        assert mine[key] == reference[key], (
            f"{key} node differs:\n  toktools:   {mine[key]}\n  tokenizers: {reference[key]}"
        )


def assert_round_trip(ours: Tokenizer, lines: list[str], memo: dict | None = None) -> None:
    """What toktools writes, ``tokenizers`` loads to the same behaviour."""
    reloaded = HFTokenizer.from_str(json.dumps(ours.to_tokenizer_json()))
    assert_same_encodings(ours, reloaded, lines, pairs=False, memo=memo)


def check_all(hf: HFTokenizer, lines: list[str] | None = None) -> Tokenizer:
    """Load ``hf`` in toktools and run every check; return our tokenizer for more."""
    ours = load_in_toktools(hf)
    lines = corpus_lines() if lines is None else lines
    assert_same_json(ours, hf)
    memo: dict = {}  # ours' encodings and decodes of these lines, computed once for both checks
    assert_same_encodings(ours, hf, lines, memo=memo)
    assert_round_trip(ours, lines[:200], memo)
    return ours
