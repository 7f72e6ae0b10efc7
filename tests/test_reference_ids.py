"""The ``--verify`` checker's reference from the ids-only path's state alone
(toktools.engines.reference_ids): the first checker of a byte-level tokenizer builds the whole
reference and keeps the state; later ones load the state only and give ``tokenizers``' ids,
building the whole reference only for a text that holds an added token. A wrong id is still
caught; a tokenizer the state does not cover, or a damaged entry, builds the whole reference."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
import real_shapes

from toktools.corpus.prepared_tokenizer import load_corpus_tokenizer
from toktools.corpus.verify import CheckerThread, InlineChecker, Verifier, _answer, _build_reference, start_checker
from toktools.engines.reference import ReferenceEngine
from toktools.engines.reference_ids import ReferenceIds, _compiled, _pattern_code
from toktools.errors import ToktoolsError

REPO_ROOT = Path(__file__).resolve().parent.parent
GPT2 = REPO_ROOT.parent / "shared" / "vocabs-ref" / "gpt2"
ODD = [
    "",
    " ",
    "Hello world<|endoftext|> and after it",  # GPT-2's added token (normalized: true), inside a text
    "<|endoftext|>",
    "they'll've 'S 1234567 x\u00a0y\u3000z",
    "emoji 😀👍🏽 astral 𝔘𝔫𝔦 and 𠀀",
    "tabs\tand\r\nnew\nlines   ",
    "Ünïcödé çà et là, Ωμέγα, кириллица",
]


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TOKTOOLS_CACHE_DIR", str(tmp_path))
    return tmp_path


def _texts() -> list[str]:
    return real_shapes.english_lines()[:80] + real_shapes.chinese_lines()[:20] + ODD


@pytest.mark.shared
@pytest.mark.parametrize("name", [pytest.param("bytebpe-50k", marks=pytest.mark.full), "gpt2"])
def test_the_kept_state_gives_tokenizers_ids(name: str, cache: Path) -> None:
    from tokenizers import Tokenizer

    source = str(GPT2) if name == "gpt2" else name
    tok = load_corpus_tokenizer(source)
    first, problem = _build_reference(tok.document, tok.fingerprint)
    assert not problem and isinstance(first, ReferenceEngine)  # nothing kept yet: the whole reference
    assert len(list(cache.glob("reference-ids/*.marshal"))) == 1

    def never_read() -> None:
        raise AssertionError("the whole reference was built for a text the state covers")

    lean, problem = _build_reference(never_read, tok.fingerprint)
    assert not problem and isinstance(lean, ReferenceIds)
    texts = _texts()
    hf = Tokenizer.from_str(json.dumps(tok.document()))
    want = [e.ids for e in hf.encode_batch(texts, add_special_tokens=False)]
    plain = [t for t in texts if "<|endoftext|>" not in t]
    assert [lean.encode(t) for t in plain] == [w for t, w in zip(texts, want) if "<|endoftext|>" not in t]
    assert lean._full is None  # the state covered every one of them
    lean._full_build = lambda: first  # a text with an added token goes to the whole reference
    ids, _seconds = _answer(lean, "", texts)
    assert ids == want
    with pytest.raises(TypeError, match="lone surrogate"):  # as the reference (and tokenizers) refuse it
        lean.encode("bad \ud800 text")


@pytest.mark.shared
def test_a_wrong_id_is_caught_with_the_kept_state_and_a_damaged_entry_builds_the_whole_reference(
    cache: Path,
) -> None:
    tok = load_corpus_tokenizer("bytebpe-50k")
    whole, _ = _build_reference(tok.document, tok.fingerprint)
    lean, _ = _build_reference(tok.document, tok.fingerprint)
    assert isinstance(lean, ReferenceIds)
    documents = real_shapes.english_lines()[:20]
    ids = whole.encode_batch(documents)
    items = [SimpleNamespace(text=t, source=0, line=n + 1) for n, t in enumerate(documents)]
    total = sum(len(t.encode()) + 1 for t in documents)

    def verifier() -> Verifier:
        checker = InlineChecker({}, lean)
        return Verifier("fast", {}, 4, total, [SimpleNamespace(path="d.txt")], inline=checker, cuttable=True)

    good = verifier()
    good.check(items, ids, total)
    good.sync()
    assert good.done >= 4
    wrong = [[row[0] + 1, *row[1:]] for row in ids]  # every document's first id
    with pytest.raises(
        ToktoolsError, match=r"engine fast disagrees with the reference on d\.txt, document at line \d+ \(token 0"
    ):
        bad = verifier()
        bad.check(items, wrong, total)
        bad.sync()
    [entry] = cache.glob("reference-ids/*.marshal")
    entry.write_bytes(entry.read_bytes()[:-10])  # cut short: its checksum no longer matches
    again, problem = _build_reference(tok.document, tok.fingerprint)
    assert not problem and isinstance(again, ReferenceEngine)


@pytest.mark.full
def test_no_state_for_other_pipelines(cache: Path) -> None:
    tok = load_corpus_tokenizer("wordpiece-30k")
    reference, _ = _build_reference(tok.document, tok.fingerprint)
    assert isinstance(reference, ReferenceEngine) and not list(cache.glob("reference-ids/*"))


def _checked_run(tok: object, documents: list[str], ids: list[list[int]]) -> Verifier:
    """A run's verifier over ``documents`` (their ``ids`` as an engine gave them), checker
    started as the corpus run starts it, every document a place."""
    items = [SimpleNamespace(text=t, source=0, line=n + 1) for n, t in enumerate(documents)]
    total = sum(len(t.encode()) + 1 for t in documents)
    checker = start_checker(tok.document, len(documents), "fast", fingerprint=tok.fingerprint, input_bytes=total)  # type: ignore[attr-defined]
    verifier = Verifier("fast", tok.document, len(documents), total, [SimpleNamespace(path="d.txt")], process=checker)  # type: ignore[attr-defined]
    verifier.check(items, ids, total)
    return verifier


@pytest.mark.shared
def test_the_checker_thread_checks_and_keeps_its_words_for_the_next(cache: Path) -> None:
    """With the state kept, the run's checker is a thread of the run's process; it catches a
    wrong id; closed with every answer read, it keeps the words it merged, and the next checker
    gives tokenizers' ids for the same texts from those words alone (the merge map is never
    loaded)."""
    from tokenizers import Tokenizer

    tok = load_corpus_tokenizer(str(GPT2))
    _build_reference(tok.document, tok.fingerprint)  # the first checker: keeps the state
    documents = real_shapes.english_lines()[:30]
    hf = Tokenizer.from_str(json.dumps(tok.document()))
    want = [e.ids for e in hf.encode_batch(documents, add_special_tokens=False)]

    wrong = [[row[0] + 1, *row[1:]] for row in want]
    bad = _checked_run(tok, documents, wrong)
    assert isinstance(bad._conn, CheckerThread)
    with pytest.raises(
        ToktoolsError, match=r"engine fast disagrees with the reference on d\.txt, document at line 1 \(token 0"
    ):
        bad.sync()
    bad.close()  # every answer was read: the words merged are kept (the reference's, whatever the engine did)

    good = _checked_run(tok, documents, want)
    good.sync()
    good.close()
    assert good.done == len(documents) and good.bytes_checked == sum(len(t.encode()) for t in documents)
    assert len(list(cache.glob("reference-words/*.marshal"))) == 1

    def never_read() -> None:
        raise AssertionError("the whole reference was built")

    lean, _ = _build_reference(never_read, tok.fingerprint)
    assert isinstance(lean, ReferenceIds) and len(lean.cache) > 1000
    assert [lean.encode(t) for t in documents] == want
    assert lean._merge_map is None and lean.cache.misses == 0  # every word was kept


def test_the_split_pattern_is_built_from_its_kept_code() -> None:
    from toktools.engines.ids_words import ByteLevelWords

    pattern = ByteLevelWords.bmp_pattern()
    kept = _pattern_code(pattern)
    assert kept is not None and _compiled(pattern, kept) == re.compile(pattern)  # patterns compare their code
    damaged = [*kept[:2], kept[2][:-7], *kept[3:]]
    assert _compiled(pattern, damaged) == pattern  # _sre refuses it: compiled from the source instead
    assert _compiled(pattern, [kept[0] + 1, *kept[1:]]) == pattern  # another re engine


@pytest.mark.shared
def test_the_packed_merge_gives_the_merges_of_merge_symbols() -> None:
    """merge_packed (the checker's merge) against the reference's merge_symbols, on every word
    of English and Chinese lines, split as the reference splits them (GPT-2)."""
    from toktools.engines.ids_only import ids_encoder
    from toktools.models.bpe.byte_symbols import BYTE_TO_SYMBOL
    from toktools.models.bpe.merges import merge_packed, merge_symbols, pack_merges

    fast = ids_encoder(ReferenceEngine(load_corpus_tokenizer(str(GPT2)).document, workers=1).tokenizer)
    bpe = fast.cache.compute
    packed = pack_merges(bpe.merge_map)
    assert packed is not None
    shift, pairs = packed
    byte_id = [bpe.vocab[BYTE_TO_SYMBOL[b]] for b in range(256)]
    words = {w for text in _texts() for w in fast.words(text)}
    assert len(words) > 2000
    for word in words:
        ids = [byte_id[b] for b in word.encode("utf-8")]
        assert merge_packed(ids, pairs, shift) == [t for t, _ in merge_symbols(ids, bpe.merge_map)], word
    assert pack_merges({(1, 2): (0, 5), (3, 4): (0, 6)}) is None  # two pairs of one rank
