"""The reference tokenizer kept in the user cache (toktools.engines.reference_cache): the second
process that needs it for a tokenizer.json unpickles it instead of reading and building, and
gets the same ids; the document is then not even read. An entry from other code, a damaged
entry or a cache turned off means building it again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from toktools.corpus.prepared_tokenizer import load_corpus_tokenizer
from toktools.engines import reference_cache
from toktools.engines.core import ReferenceEngine

TEXTS = ["Tokenizers cut unaffable words differently.", "我是中国人，我爱北京天安门。", "  odd\tspacing \n", ""]


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TOKTOOLS_CACHE_DIR", str(tmp_path))
    return tmp_path


def _entries(cache: Path) -> list[Path]:
    return sorted(cache.glob(f"reference-v{reference_cache.FORMAT}/*.pickle"))


def _never_read() -> Any:
    raise AssertionError("the document was read although the built tokenizer is cached")


@pytest.mark.parametrize("name", ["bytebpe-50k", "wordpiece-30k"])
def test_a_cached_reference_gives_the_same_ids_without_reading_the_document(name: str, cache: Path) -> None:
    tok = load_corpus_tokenizer(name)
    built = ReferenceEngine(tok.document, workers=1, fingerprint=tok.fingerprint)
    [entry] = _entries(cache)
    assert entry.name.startswith(tok.fingerprint)
    cached = ReferenceEngine(_never_read, workers=1, fingerprint=tok.fingerprint)
    assert cached.tokenizer is not built.tokenizer
    assert cached.encode_batch(TEXTS) == built.encode_batch(TEXTS)
    assert [e.ids for e in cached.tokenizer.encode_batch(TEXTS)] == [e.ids for e in built.tokenizer.encode_batch(TEXTS)]


def test_other_code_or_a_damaged_entry_builds_again(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tok = load_corpus_tokenizer("bytebpe-50k")
    ReferenceEngine(tok.document, workers=1, fingerprint=tok.fingerprint)
    [entry] = _entries(cache)
    good = entry.read_bytes()
    entry.write_bytes(good[:1000])  # cut short: its checksum no longer matches
    reads: list[int] = []

    def counted() -> Any:
        reads.append(1)
        return tok.document()

    engine = ReferenceEngine(counted, workers=1, fingerprint=tok.fingerprint)
    assert reads == [1] and engine.encode_batch(TEXTS[:1])
    assert entry.read_bytes() != good[:1000], "written again"
    monkeypatch.setattr(reference_cache, "code_key", lambda: "another-version-of-toktools")
    ReferenceEngine(counted, workers=1, fingerprint=tok.fingerprint)
    assert reads == [1, 1], "an entry of other code is not used"
    assert len(_entries(cache)) == 2


def test_no_entry_without_a_cache_or_a_fingerprint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tok = load_corpus_tokenizer("bytebpe-50k")
    monkeypatch.setenv("TOKTOOLS_CACHE_DIR", str(tmp_path))
    ReferenceEngine(tok.document, workers=1)  # no fingerprint: nothing names the document
    monkeypatch.setenv("TOKTOOLS_CACHE_DIR", "")
    ReferenceEngine(tok.document, workers=1, fingerprint=tok.fingerprint)
    assert not list(tmp_path.rglob("*.pickle"))


def test_the_code_key_changes_when_a_module_changes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    import toktools

    copy = tmp_path / "toktools"
    shutil.copytree(Path(toktools.__file__).parent, copy, ignore=shutil.ignore_patterns("__pycache__", "vocabs"))
    monkeypatch.setattr(toktools, "__file__", str(copy / "__init__.py"))
    reference_cache.code_key.cache_clear()
    try:
        before = reference_cache.code_key()
        reference_cache.code_key.cache_clear()
        assert reference_cache.code_key() == before
        (copy / "models" / "bpe" / "merges.py").write_text(
            (copy / "models" / "bpe" / "merges.py").read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8"
        )
        reference_cache.code_key.cache_clear()
        assert reference_cache.code_key() != before
    finally:
        reference_cache.code_key.cache_clear()
