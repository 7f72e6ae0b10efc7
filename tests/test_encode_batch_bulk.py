"""``Tokenizer.encode_batch`` with the new words of a byte-level batch merged in bulk
(:mod:`toktools.models.bpe.warm_cache`): full encodings still equal ``tokenizers``', field by
field, on held-out English and Chinese and on random text, single texts and pairs, with a
template, truncation and padding."""

from __future__ import annotations

import json

import pytest
import tokenizers
from conftest import read_corpus_sample, ref_vocab_dir
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toktools.formats import load
from toktools.io.shipped import shipped_path
from toktools.models.bpe import bulk_merge as bpe_bulk
from toktools.models.bpe import vectorized_merge as bpe_vectorized
from toktools.models.bpe import warm_cache

FIELDS = ("ids", "tokens", "offsets", "type_ids", "attention_mask", "special_tokens_mask")


def _pair(name: str) -> tuple:
    """(toktools' tokenizer, tokenizers' from the same document), no truncation or padding."""
    shipped = shipped_path(name)
    directory = shipped if shipped is not None else ref_vocab_dir(name)
    ours = load(directory)
    ours.no_truncation()
    ours.no_padding()
    theirs = tokenizers.Tokenizer.from_str(json.dumps(ours.to_tokenizer_json()))
    return ours, theirs


def assert_same(ours_list, theirs_list, inputs) -> None:
    assert len(ours_list) == len(theirs_list)
    for item, a, b in zip(inputs, ours_list, theirs_list):
        for name in FIELDS:
            x, y = list(getattr(a, name)), list(getattr(b, name))
            if name == "offsets":
                x, y = [tuple(o) for o in x], [tuple(o) for o in y]
            assert x == y, f"{name} differ on {item!r:.100}"


def held_out() -> list[str]:
    en = read_corpus_sample("en_wiki.txt.gz", 40_000, skip_lines=80_000).splitlines()
    zh = read_corpus_sample("zh_wiki_sample.txt", 40_000, skip_lines=5000).splitlines()
    return [line for line in en + zh if line.strip()]


@pytest.mark.parametrize("name", ["gpt2", "bytebpe-50k"])
def test_held_out_batch_on_a_cold_cache_matches_tokenizers(name: str) -> None:
    ours, theirs = _pair(name)
    lines = held_out()
    assert ours.model._byte_cache == {}
    encodings = ours.encode_batch(lines, workers=1)
    assert len(ours.model._byte_cache) >= warm_cache.MIN_NEW_WORDS  # the bulk merge filled it
    assert_same(encodings, theirs.encode_batch(lines), lines)
    # with a template, pairs, truncation and padding, on the warm cache
    ours.enable_truncation(40)
    theirs.enable_truncation(40)
    ours.enable_padding(pad_id=0, pad_token="<pad>", pad_to_multiple_of=8)
    theirs.enable_padding(pad_id=0, pad_token="<pad>", pad_to_multiple_of=8)
    pairs = list(zip(lines[::2], lines[1::2]))
    assert_same(ours.encode_batch(pairs, workers=1), theirs.encode_batch(pairs), pairs)


_POOL = (
    "abcxyz ABC 0129 '.,!?-_\t\n\r\x00\x1f\x7f\u00a0\u3000\u2028\u0301\u0327\u00e9\u00df\u0130"
    "中国人民天地的了是不我你他们大小文字測試한국\u3002\uff0c\U0001f600\U00020000\u200d<|>"
)
_RANDOM_TEXT = st.lists(
    st.one_of(
        st.sampled_from(list(_POOL)),
        st.sampled_from(["<|endoftext|>", "中国", " the", "'s", "  ", "\r\n"]),
        st.characters(blacklist_categories=("Cs",)),
    ),
    max_size=40,
).map("".join)

_fuzzed: dict[str, tuple] = {}


@pytest.mark.full
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(_RANDOM_TEXT, st.tuples(_RANDOM_TEXT, _RANDOM_TEXT)), min_size=1, max_size=20))
def test_random_batches_merged_in_bulk_match_tokenizers(inputs: list) -> None:
    """Every word new and merged in bulk (numpy), whatever the batch's size (10 random batches:
    the default run's budget; test_bytelevel_encode_parity covers large real batches)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(warm_cache, "MIN_NEW_WORDS", 1)
        patch.setattr(bpe_bulk, "VECTOR_MIN_WORDS", 1)
        patch.setattr(bpe_bulk, "VECTOR_MAX_CHARS", 10_000)
        patch.setattr(bpe_bulk, "COMPILED_AFTER_SECONDS", 1e9)
        patch.setattr(bpe_vectorized.VectorMerger, "FINISH_BELOW", 0)
        for name in ("gpt2", "bytebpe-50k"):
            if name not in _fuzzed:
                _fuzzed[name] = _pair(name)
            ours, theirs = _fuzzed[name]
            ours.model._byte_cache.clear()
            assert_same(ours.encode_batch(inputs, workers=1), theirs.encode_batch(inputs), inputs)
