"""The compiled GPT-2 split (:mod:`toktools.models.bpe.compiled_split`): its words equal the
``re`` split's and ``tokenizers``' ByteLevel pre-tokeniser's on held-out English and Chinese, the
fuzz corpus, long documents, Chinese without spaces and the pattern's corner cases; and
``encode_batch`` through it (every field) equal to ``tokenizers``, as without it."""

from __future__ import annotations

from array import array

import numpy as np
import pytest
import tokenizers
from real_shapes import _documents, chinese_lines, english_lines
from test_lazy_encodings import SPECIALS, _load, _theirs, assert_same, fuzz, held_out

from toktools.encoding import LazyEncoding
from toktools.engines import batch_parts, lazy_encodings
from toktools.engines.ids_words import ByteLevelWords
from toktools.models.bpe import compiled_split

CORNERS = [
    "don't we'll they're I've she's it'd I'm 'S 'Ll x'y ''s '",
    "a  b   c\t\td \n\n e  \u3000\u3000f \u00a0g\u2009\u2009h   ",
    "   ",
    " ",
    "",
    "'",
    "x'",
    "123abc 4\u00bd\u0661\u0662 \u2167 x\U0001d7d8y \U0001f600\U0001f600 \U00020000\U00020001",
    "?!'s ,.'re  'll\n'd",
    "\r\n\r\nend\n",
    " leading and trailing \n",
]


@pytest.fixture(scope="module")
def split() -> compiled_split.CompiledSplit:
    return compiled_split.CompiledSplit()  # compiled once per machine (the user cache keeps it)


def long_documents() -> list[str]:
    """A 120K-character English document and Chinese paragraphs glued with no space."""
    english = next(_documents(english_lines(), 1, 120_000, 120_000, " ", seed=3))
    chinese = list(_documents(chinese_lines(), 3, 20_000, 60_000, "", seed=4))
    return [english, *chinese]


def kernel_words(split: compiled_split.CompiledSplit, texts: list[str]) -> list[list[str]]:
    joined = "".join(texts)
    text_ends = np.cumsum([len(text) for text in texts], dtype=np.int64)
    words = split.bounds(joined.encode("utf-32-le"), array("q", text_ends.tolist()))
    ends = words.ends[: words.count].tolist()
    out: list[list[str]] = []
    start, position = 0, 0
    for text_end in text_ends.tolist():
        words = []
        while position < len(ends) and ends[position] <= text_end:
            words.append(joined[start : ends[position]])
            start = ends[position]
            position += 1
        out.append(words)
    return out


def test_words_equal_the_re_split_and_tokenizers(split) -> None:
    texts = held_out(8_000) + fuzz(200) + CORNERS + long_documents()
    words = kernel_words(split, texts)
    reference = ByteLevelWords(False, True).full()
    theirs = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    for text, ours in zip(texts, words):
        assert ours == reference.findall(text), f"differ on {text!r:.100}"
        spans = [span for _, span in theirs.pre_tokenize_str(text)]
        mine = []
        start = 0
        for word in ours:
            mine.append((start, start + len(word)))
            start += len(word)
        assert mine == spans, f"differ from tokenizers on {text!r:.100}"


@pytest.mark.parametrize("compiled", [True, False])
def test_batches_with_and_without_it_match_tokenizers(compiled: bool, monkeypatch, split) -> None:
    """Long documents and Chinese without spaces in one batch with held-out lines and the fuzz
    corpus (astral characters included: the compiled split takes them, the re split sends a few
    texts the reference way)."""
    monkeypatch.setattr(lazy_encodings, "COLD_MIN_CHARS", 0)
    monkeypatch.setattr(batch_parts, "OVERLAP_MIN_CHARS", 50_000)
    if not compiled:  # as where its machine code is not kept: the re split, a compile started
        started = []
        monkeypatch.setattr(compiled_split, "kept", lambda: False)
        monkeypatch.setattr(compiled_split, "start_compiling", lambda: started.append(True))
    ours = _load("bytebpe-50k")
    ours.add_special_tokens(SPECIALS)
    theirs = _theirs(ours)
    texts = held_out(4_000) + fuzz(80) + CORNERS + long_documents()
    encodings = ours.encode_batch(texts, workers=1)
    builder = lazy_encodings._builder(ours)
    assert (builder.splitter is not None) is compiled
    if not compiled:
        assert started
    assert isinstance(encodings[-1], LazyEncoding)
    assert_same(encodings, theirs.encode_batch(texts), texts)


@pytest.mark.full
def test_gpt2_without_a_prefix_space_and_roberta_with_one(split) -> None:
    texts = held_out() + fuzz() + CORNERS + long_documents()
    for name, prefix in (("gpt2", False), ("bytebpe-50k", True)):
        ours = _load(name)
        ours.pre_tokenizer.add_prefix_space = prefix
        ours.add_special_tokens(SPECIALS)
        theirs = _theirs(ours)
        encodings = ours.encode_batch(texts, workers=1)
        assert lazy_encodings._builder(ours).splitter is not None
        assert_same(encodings, theirs.encode_batch(texts), texts)


@pytest.mark.parametrize(
    "processor",
    [
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        {
            "type": "RobertaProcessing",
            "sep": ["<|endoftext|>", 50256],
            "cls": ["<|endoftext|>", 50256],
            "trim_offsets": True,
            "add_prefix_space": True,
        },
    ],
    ids=["bytelevel", "roberta"],
)
def test_trimmed_offsets_of_tokens_made_of_spaces(processor: dict, monkeypatch, split) -> None:
    """Tokens of several spaces (``ĠĠĠĠ``): trimming takes every one of them off."""
    import json

    from toktools.formats import from_tokenizer_json

    monkeypatch.setattr(lazy_encodings, "COLD_MIN_CHARS", 0)
    document = _load("gpt2").to_tokenizer_json()
    document["post_processor"] = processor
    model = document["model"]  # tokens of 2 and 4 spaces (this GPT-2 vocabulary has none)
    size = len(model["vocab"]) + len(document["added_tokens"])
    model["vocab"].update({"\u0120\u0120": size, "\u0120" * 4: size + 1})
    pair = isinstance(model["merges"][0], list)
    model["merges"] += (
        [["\u0120", "\u0120"], ["\u0120\u0120"] * 2] if pair else ["\u0120 \u0120", "\u0120\u0120 \u0120\u0120"]
    )
    ours = from_tokenizer_json(document)
    theirs = tokenizers.Tokenizer.from_str(json.dumps(document))
    texts = [
        "a     b",
        "trailing      ",
        "        indented code\n            deeper\n",
        "x  \t  y   \n\n   z",
        *CORNERS,
        *held_out(2_000),
    ]
    encodings = ours.encode_batch(texts, workers=1)
    assert isinstance(encodings[0], LazyEncoding)
    assert any(token.startswith("ĠĠ") for encoding in encodings for token in encoding.tokens)
    assert_same(encodings, theirs.encode_batch(texts), texts)
