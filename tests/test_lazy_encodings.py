"""``Tokenizer.encode_batch`` built from the ids-only path with lazy fields
(:mod:`toktools.engines.lazy_encodings`): every field equal to ``tokenizers``' on held-out English
and Chinese and on the suite's fuzz corpus (:func:`toktools.engines.gigatoken_probe.adversarial_texts`),
single texts and pairs, with templates, trimmed offsets, a prefix space, truncation with stride
and padding; and the lazy fields equal to the eager pipeline's whichever is read first."""

from __future__ import annotations

import copy
import json
import pickle

import pytest
import tokenizers
from conftest import read_corpus_sample, ref_vocab_dir

from toktools.encoding import ENCODING_FIELDS, Encoding, LazyEncoding
from toktools.engines import batch_parts, lazy_encodings
from toktools.engines.gigatoken_probe import adversarial_texts
from toktools.engines.ids_words import ByteLevelBPE
from toktools.formats import load
from toktools.io.shipped import shipped_path
from toktools.models.bpe.compiled_split import CompiledSplit
from toktools.runtime import gc_pause

SPECIALS = ["<|endoftext|>", "<s>", "</s>"]


def _load(name: str):
    shipped = shipped_path(name)
    tokenizer = load(shipped if shipped is not None else ref_vocab_dir(name))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    ByteLevelBPE(tokenizer.model).bulk().compiled()  # the compiled merge loaded (compiled once per machine)
    CompiledSplit()  # and the compiled split
    return tokenizer


def _theirs(ours):
    return tokenizers.Tokenizer.from_str(json.dumps(ours.to_tokenizer_json()))


@pytest.fixture(autouse=True)
def every_batch_lazy(monkeypatch) -> None:
    """Small test batches take the lazy path too, merged in several parts (threads)."""
    monkeypatch.setattr(lazy_encodings, "COLD_MIN_CHARS", 0)
    monkeypatch.setattr(lazy_encodings, "WARM_MIN_CHARS", 0)
    monkeypatch.setattr(batch_parts, "OVERLAP_MIN_CHARS", 2_000)


def held_out(size: int = 12_000) -> list[str]:
    en = read_corpus_sample("en_wiki.txt.gz", size, skip_lines=90_000).splitlines()
    zh = read_corpus_sample("zh_wiki_sample.txt", size, skip_lines=3000).splitlines()
    return en + zh + ["", " ", "  leading spaces", "trailing  ", "\u00e9t\u00e9 \U0001f600 emoji", "a\r\nb"]


def fuzz(count: int = 150) -> list[str]:
    """The fuzz corpus of the gigatoken shard test: added tokens cut in half, spaces of every kind."""
    return adversarial_texts(SPECIALS, seed=5, count=count)


def short(texts: list[str]) -> list[str]:
    """Texts cut to 150 characters: with truncation and stride, a pair's overflowing pieces are
    every window of one with every window of the other."""
    return [text[:150] for text in texts]


def assert_same(ours_list, theirs_list, inputs, depth: int = 1) -> None:
    """Every field, and the overflowing pieces' down to ``depth`` levels."""
    assert len(ours_list) == len(theirs_list)
    for item, a, b in zip(inputs, ours_list, theirs_list):
        for name in ENCODING_FIELDS:
            x, y = list(getattr(a, name)), list(getattr(b, name))
            if name == "offsets":
                x, y = [tuple(o) for o in x], [tuple(o) for o in y]
            assert x == y, f"{name} differ on {item!r:.100}"
        if depth:
            pieces = b.overflowing
            assert len(a.overflowing) == len(pieces), f"overflowing differ on {item!r:.100}"
            assert_same(a.overflowing, pieces, [item] * len(pieces), depth - 1)


def configure(tokenizer, theirs, settings: str) -> None:
    """The same truncation and padding on both sides."""
    if "truncate" in settings:
        tokenizer.enable_truncation(40, stride=4)
        theirs.enable_truncation(40, stride=4)
    if "pad" in settings:
        tokenizer.enable_padding(pad_id=1, pad_token="<pad>", pad_to_multiple_of=8)
        theirs.enable_padding(pad_id=1, pad_token="<pad>", pad_to_multiple_of=8)


@pytest.mark.parametrize(
    ("name", "settings"),
    [
        ("bytebpe-50k", "plain"),
        ("gpt2", "truncate+pad"),
        pytest.param("gpt2", "plain", marks=pytest.mark.full),
        pytest.param("bytebpe-50k", "truncate+pad", marks=pytest.mark.full),
    ],
)
def test_held_out_and_fuzz_batches_match_tokenizers(name: str, settings: str) -> None:
    ours = _load(name)
    ours.add_special_tokens(SPECIALS)
    theirs = _theirs(ours)
    configure(ours, theirs, settings)
    texts = held_out() + fuzz() if "truncate" not in settings else short(held_out(5_000) + fuzz(60))
    encodings = ours.encode_batch(texts, workers=1)
    assert isinstance(encodings[0], LazyEncoding)  # the lazy path was taken
    assert_same(encodings, theirs.encode_batch(texts), texts)
    if settings == "plain":  # forked workers take it too, and send back the same encodings
        assert ours.encode_batch(texts, workers=2) == encodings
    pairs = list(zip(texts[::2], texts[1::2]))
    assert_same(ours.encode_batch(pairs, workers=1), theirs.encode_batch(pairs), pairs)
    plain = texts[:200]
    assert_same(
        ours.encode_batch(plain, add_special_tokens=False, workers=1),
        theirs.encode_batch(plain, add_special_tokens=False),
        plain,
    )


@pytest.mark.parametrize("trim", [True, pytest.param(False, marks=pytest.mark.full)])
def test_prefix_space_and_trimming_match_tokenizers(trim: bool) -> None:
    """RoBERTa with ``add_prefix_space`` in its pre-tokeniser: the prefix space has the first
    character's span, and trimming keeps it before each sequence's first token."""
    ours = _load("bytebpe-50k")
    ours.pre_tokenizer.add_prefix_space = True
    ours.post_processor.add_prefix_space = True
    ours.post_processor.trim_offsets = trim
    theirs = _theirs(ours)
    texts = held_out()[:100] + fuzz()
    encodings = ours.encode_batch(texts, workers=1)
    assert isinstance(encodings[0], LazyEncoding)
    assert_same(encodings, theirs.encode_batch(texts), texts)
    pairs = list(zip(short(texts[::2]), short(texts[1::2])))
    configure(ours, theirs, "truncate")
    assert_same(ours.encode_batch(pairs, workers=1), theirs.encode_batch(pairs), pairs)


def _eager(tokenizer, inputs, **options):
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(lazy_encodings, "lazy_sequences", lambda *args: None)
        return tokenizer.encode_batch(inputs, workers=1, **options)


@pytest.mark.parametrize(
    "first", ["offsets", *(pytest.param(f, marks=pytest.mark.full) for f in ("ids", "tokens", "overflowing"))]
)
def test_lazy_fields_equal_eager_ones_whichever_is_read_first(first: str) -> None:
    ours = _load("bytebpe-50k")
    ours.enable_truncation(16, stride=3)
    ours.enable_padding(pad_id=1, pad_token="<pad>")
    texts = short(held_out())[:120]
    items = texts[:40] + list(zip(texts[40::2], texts[41::2]))
    lazy, eager = ours.encode_batch(items, workers=1), _eager(ours, items)
    assert any(isinstance(e, LazyEncoding) for e in lazy)
    for a, b in zip(lazy, eager):
        assert type(b) is Encoding
        getattr(a, first)
        assert a == b and b == a
        assert [list(getattr(p, "offsets")) for p in a.overflowing] == [p.offsets for p in b.overflowing]


def test_unread_fields_are_never_computed() -> None:
    """Reading ids (and lengths) leaves tokens and offsets uncomputed, through the template."""
    ours = _load("bytebpe-50k")
    encodings = ours.encode_batch(held_out()[:50], workers=1)
    assert all(isinstance(e, LazyEncoding) for e in encodings)
    assert sum(len(e.ids) for e in encodings) > 0
    for e in encodings:
        assert {"tokens", "offsets"} <= set(e.__dict__["_pending"])
    encodings[0].offsets
    assert "offsets" not in encodings[0].__dict__["_pending"]
    assert "tokens" in encodings[1].__dict__["_pending"]


def test_lazy_encodings_copy_and_pickle_as_plain_ones() -> None:
    ours = _load("gpt2")
    lazy = ours.encode_batch(held_out()[:10], workers=1)
    assert all(isinstance(e, LazyEncoding) for e in lazy)
    eager = _eager(ours, held_out()[:10])
    for a, b in zip(lazy, eager):
        assert pickle.loads(pickle.dumps(a)) == b
        assert copy.deepcopy(a) == b
        assert repr(a).endswith(repr(b)[len("Encoding") :])


def test_garbage_collector_state_is_the_callers_after_a_batch() -> None:
    """``gc_paused`` turns the collector back on (or leaves it off if the caller had it off),
    moves what the batch made to the oldest generation, and never thaws objects the caller
    froze."""
    import gc

    ours = _load("gpt2")
    texts = held_out()[:20]
    assert gc.isenabled()
    with gc_pause.gc_paused():
        made = [[i] for i in range(2 * gc_pause.PROMOTE_MIN_OBJECTS)]
        assert not gc.isenabled()
    assert gc.isenabled() and gc.get_count()[0] < 1000
    assert all(gc.is_tracked(x) for x in made) and not any(x is made for x in gc.get_objects(generation=0))
    ours.encode_batch(texts, workers=1)
    assert gc.isenabled()
    gc.disable()
    try:
        ours.encode_batch(texts, workers=1)
        assert not gc.isenabled()
    finally:
        gc.enable()
    kept = [[1]]
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        ours.encode_batch(texts, workers=1)
        assert gc.get_freeze_count() == frozen and gc.isenabled()
    finally:
        gc.unfreeze()
    assert kept


def test_a_loop_of_big_batches_still_collects_the_callers_cycles() -> None:
    """Moving a batch's objects to the oldest generation moves the caller's young ones too: a
    cycle the caller dropped must still be collected, without the caller calling ``gc``."""
    import gc
    import weakref

    class Node:
        pass

    gc.collect()
    dropped = []
    for _ in range(gc_pause.PROMOTIONS_PER_FULL_COLLECTION + 1):
        node = Node()
        node.me = node  # a cycle, garbage once dropped
        dropped.append(weakref.ref(node))
        del node
        with gc_pause.gc_paused():
            made = [[i] for i in range(2 * gc_pause.PROMOTE_MIN_OBJECTS)]
        del made
    assert gc.isenabled()
    assert all(ref() is None for ref in dropped[:-1])


@pytest.mark.parametrize("name", ["bytebpe-50k", "wordpiece-30k"])
def test_many_small_batches_load_the_lazy_path_too(monkeypatch, name) -> None:
    """A data loader's batches are each too small to pay the cold start alone; the characters
    they hold are counted over calls, and once they are worth it, the batches take the lazy path
    (with the same encodings as tokenizers' before and after)."""
    tokenizer = load(shipped_path(name))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    texts = held_out(4_000)
    monkeypatch.setattr(lazy_encodings, "COLD_MIN_CHARS", sum(map(len, texts)) * 2 + 1)
    monkeypatch.setattr(lazy_encodings, "WARM_MIN_CHARS", 0)
    from toktools.engines import lazy_wordpiece

    monkeypatch.setattr(lazy_wordpiece, "_CLASS_TABLE", None)  # a process that has not loaded it
    tokenizer.model.__dict__.pop("_lazy_batches", None)
    builder = lazy_encodings._builder(tokenizer)
    assert builder is not None and not builder.loaded
    expected = _theirs(tokenizer).encode_batch(texts)
    for call in range(3):
        assert_same(tokenizer.encode_batch(texts), expected, texts, depth=0)
        assert builder.loaded == (call == 2), call  # the third call has seen enough characters


def _pieces_are_byte_symbols(model) -> bool:
    """The definition, scanned the long way: every piece of every merge is byte symbols."""
    from toktools.models.bpe.bytelevel import SYMBOL_TO_BYTE

    return all(set(left + right) <= set(SYMBOL_TO_BYTE) for left, right in model.merges)


def test_byte_level_ready_finds_a_merge_of_other_characters_from_the_vocabulary() -> None:
    """The check reads the vocabulary's tokens, not the merges: a vocabulary whose only other
    characters are in tokens no merge makes passes; one merge that uses such a token fails."""
    from toktools.engines.ids_words import byte_level_ready
    from toktools.parts.models import BPE

    shipped = load(shipped_path("bytebpe-50k")).model
    gpt2 = load(ref_vocab_dir("gpt2")).model
    for model in (shipped, gpt2):
        assert byte_level_ready(model) and _pieces_are_byte_symbols(model)
    vocab = dict(shipped.vocab)
    merges = list(shipped.merges)
    base = len(vocab)
    vocab.update({"<mask>": base, "中": base + 1, "文": base + 2, "中文": base + 3, "Ġ中": base + 4})
    plain = BPE(vocab, merges)
    assert byte_level_ready(plain) and _pieces_are_byte_symbols(plain)
    for extra in ([("中", "文")], [("Ġ", "中")]):
        planted = BPE(vocab, merges + extra)
        assert not byte_level_ready(planted) and not _pieces_are_byte_symbols(planted)


_WITHOUT_NUMPY = """
import json, sys
sys.modules["numpy"] = None  # any import of NumPy raises ImportError
import toktools
from toktools.engines import lazy_encodings
from toktools.io.shipped import shipped_path

name, texts = sys.argv[1], json.loads(sys.argv[2])
lazy_encodings.COLD_MIN_CHARS = 0  # this small batch takes the fast path at once
tokenizer = toktools.load(shipped_path(name))
tokenizer.no_padding()
tokenizer.no_truncation()
encodings = tokenizer.encode_batch(texts)
builder = lazy_encodings._builder(tokenizer)
assert builder.loaded and (builder.splitter if name == "bytebpe-50k" else builder.compiled) is not None
print(json.dumps([[e.ids, e.offsets] for e in encodings]))
"""


@pytest.mark.parametrize("name", ["bytebpe-50k", "wordpiece-30k"])
def test_a_first_batch_needs_no_numpy(name: str) -> None:
    """A first ``encode_batch`` never imports NumPy (~45 ms of start-up): the parts split and
    merge, or look up their pieces, over plain buffers, and kernels compute the offsets. Here
    NumPy cannot be imported at all, the fast path is taken, and the ids and offsets are
    ``tokenizers``'."""
    import subprocess
    import sys

    texts = [*held_out(3_000), "emoji \U0001f600 and \U00020000", "中文" * 3_000]
    ours = load(shipped_path(name))
    theirs = _theirs(ours)
    theirs.no_padding()
    theirs.no_truncation()
    expected = [[e.ids, e.offsets] for e in theirs.encode_batch(texts)]
    lazy_encodings._builder(ours).load()  # the kernels kept in the user cache
    run = subprocess.run(
        [sys.executable, "-c", _WITHOUT_NUMPY, name, json.dumps(texts)], capture_output=True, text=True, check=False
    )
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout) == json.loads(json.dumps(expected))  # offsets as lists, both sides
