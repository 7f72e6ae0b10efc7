"""The reference tokenizer kept in the user cache (toktools.engines.reference_cache): the second
process that needs it for a tokenizer.json unpickles it instead of reading and building, and
gets the same ids; the document is then not even read. An entry from other code, a damaged
entry or a cache turned off means building it again. Other code is told by the content of its
sources (toktools.io.user_cache.code_fingerprint), never by their modification times."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from toktools.corpus.prepared_tokenizer import load_corpus_tokenizer
from toktools.engines import reference_cache
from toktools.engines.reference import ReferenceEngine
from toktools.io import user_cache

TEXTS = ["Tokenizers cut unaffable words differently.", "我是中国人，我爱北京天安门。", "  odd\tspacing \n", ""]


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TOKTOOLS_CACHE_DIR", str(tmp_path))
    return tmp_path


def _entries(cache: Path) -> list[Path]:
    return sorted(cache.glob("reference/*.pickle"))


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
    monkeypatch.setattr(user_cache, "code_fingerprint", lambda *modules: "another-version-of-toktools")
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


def _fake_package(root: Path, name: str) -> Path:
    """A package ``name`` with a module and a subpackage, importable from ``root``."""
    package = root / name
    (package / "inner").mkdir(parents=True)
    for path, text in {"__init__.py": "", "a.py": "A = 1\n", "inner/__init__.py": "", "inner/b.py": "B = 2\n"}.items():
        (package / path).write_text(text, encoding="utf-8")
    return package


def test_the_code_key_follows_the_sources_content_not_their_times(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = _fake_package(tmp_path, "toktools_test_code_key")
    monkeypatch.syspath_prepend(str(tmp_path))
    modules = (f"{package.name}.a", f"{package.name}.inner")  # a module, and a package (all its files)

    def key() -> str:
        user_cache.code_fingerprint.cache_clear()  # as a new process would
        return user_cache.code_key(modules)

    try:
        before = key()
        for path in package.rglob("*.py"):  # touched (a checkout, a copy), not changed
            os.utime(path, ns=(1_000_000_000, 1_000_000_000))
        assert key() == before
        (package / "inner" / "b.py").write_text("B = 3\n", encoding="utf-8")  # same size, other content
        os.utime(package / "inner" / "b.py", ns=(1_000_000_000, 1_000_000_000))  # and the old time
        assert key() != before
        (package / "inner" / "b.py").write_text("B = 2\n", encoding="utf-8")
        assert key() == before
        (package / "inner" / "c.py").write_text("C = 3\n", encoding="utf-8")  # a new file in the package
        assert key() != before
        (package / "inner" / "c.py").unlink()
        (package / "a.py").write_text("A = 1\n# edited\n", encoding="utf-8")
        assert key() != before
    finally:
        user_cache.code_fingerprint.cache_clear()


def test_an_edit_to_the_code_that_builds_it_misses_and_a_touch_does_not(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = _fake_package(tmp_path / "code", "toktools_test_reference_code")
    monkeypatch.syspath_prepend(str(tmp_path / "code"))
    monkeypatch.setattr(reference_cache, "BUILT_BY", (*reference_cache.BUILT_BY, package.name))
    tok = load_corpus_tokenizer("bytebpe-50k")
    try:
        user_cache.code_fingerprint.cache_clear()
        ReferenceEngine(tok.document, workers=1, fingerprint=tok.fingerprint)
        [entry] = _entries(cache)
        os.utime(package / "a.py", ns=(1_000_000_000, 1_000_000_000))
        user_cache.code_fingerprint.cache_clear()
        ReferenceEngine(_never_read, workers=1, fingerprint=tok.fingerprint)  # a hit: only touched
        (package / "inner" / "b.py").write_text("B = 3\n", encoding="utf-8")
        user_cache.code_fingerprint.cache_clear()
        ReferenceEngine(tok.document, workers=1, fingerprint=tok.fingerprint)
        assert len(_entries(cache)) == 2 and entry in _entries(cache), "edited code builds its own entry"
    finally:
        user_cache.code_fingerprint.cache_clear()


def test_the_key_covers_every_class_in_an_entry(cache: Path) -> None:
    """Every class pickled with a reference tokenizer comes from a module whose source is part of the key."""
    import io
    import pickle

    covered = set()

    class Unpickler(pickle.Unpickler):
        def find_class(self, module: str, name: str) -> Any:
            if module.startswith("toktools"):
                covered.add(module)
            return super().find_class(module, name)

    for name in ("bytebpe-50k", "wordpiece-30k"):
        tok = load_corpus_tokenizer(name)
        ReferenceEngine(tok.document, workers=1, fingerprint=tok.fingerprint)
    for entry in _entries(cache):
        payload = user_cache.read_blob(entry)
        assert payload is not None
        Unpickler(io.BytesIO(payload)).load()
    assert covered and all(
        any(module == m or module.startswith(f"{m}.") for m in reference_cache.BUILT_BY) for module in covered
    ), covered
