"""`compare --corpus` on the fast path (ids and offsets from ``tokenizers``) reports what the
reference's aligned pipeline reports: the expected value is computed with the fast encoder
switched off (every document encoded by the reference, as before), never copied from the new
code. Sampled corpora in the default run; the shared corpora whole under ``full``."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
from conftest import corpus_path, read_corpus_sample, ref_vocab_dir

import toktools
from toktools.analysis import fast_offsets, token_view
from toktools.analysis.corpus_compare import compare_corpus


@functools.cache
def _tokenizers() -> list[tuple[str, object]]:
    return [
        ("bert-base-uncased", toktools.load(str(ref_vocab_dir("bert-base-uncased")))),
        ("gpt2", toktools.load(str(ref_vocab_dir("gpt2")))),
        ("bytebpe-50k", toktools.load("bytebpe-50k")),
    ]


def _both(paths: list[str], monkeypatch: pytest.MonkeyPatch, **options):
    fast = compare_corpus(_tokenizers(), paths, workers=1, **options).to_dict()
    with monkeypatch.context() as patched:
        patched.setattr(fast_offsets, "_library_encoder", lambda tokenizer: None)
        reference = compare_corpus(_tokenizers(), paths, workers=1, **options).to_dict()
    return fast, reference


def test_fast_statistics_equal_the_reference_pipeline(tmp_path: Path, monkeypatch):
    paths = []
    for name, size in [("mixed_sample.txt", 12_000), ("zh_wiki_sample.txt", 8_000)]:
        paths.append(tmp_path / name)
        paths[-1].write_text(read_corpus_sample(name, size), encoding="utf-8")
    fast, reference = _both([str(p) for p in paths], monkeypatch, show=2)
    assert fast["metrics"]["gpt2"]["tokens"] > 0 and fast["metrics"]["gpt2"]["byte_piece_chars"] > 0
    assert len(fast["shown"]) == 2
    assert fast == reference


def test_fast_offsets_are_the_reference_offsets():
    text = read_corpus_sample("mixed_sample.txt", 3_000).splitlines()
    for _, tokenizer in _tokenizers():
        plain = token_view.without_truncation(tokenizer)
        encode = fast_offsets._library_encoder(plain)
        assert encode is not None
        expected = [(e.ids, [tuple(o) for o in e.offsets]) for e in plain.encode_batch(text, add_special_tokens=False)]
        assert [(ids, [tuple(o) for o in offsets]) for ids, offsets in encode(text)] == expected


@pytest.mark.full
@pytest.mark.parametrize("name", ["mixed_sample.txt", "zh_wiki_sample.txt", "zh_novels.txt"])
def test_fast_statistics_equal_the_reference_pipeline_whole_corpora(name: str, monkeypatch):
    fast, reference = _both([str(corpus_path(name))], monkeypatch, show=3)
    assert fast == reference


def test_labels_of_tokenizer_files_are_their_folders():
    from toktools.commands.compare import _labels

    assert _labels(["../x/gpt2/tokenizer.json", "models/bert/vocab.txt", "bytebpe-50k"]) == [
        "gpt2",
        "bert",
        "bytebpe-50k",
    ]
    assert _labels(["a/gpt2/tokenizer.json", "b/gpt2/tokenizer.json"]) == [
        "a/gpt2/tokenizer.json",
        "b/gpt2/tokenizer.json",
    ]
