"""The start-up cache of corpus encoding (:mod:`toktools.corpus.prepared_tokenizer`): a second run on the
same ``tokenizer.json`` takes the document's shape, the exactness analysis and tiktoken's byte
ranks from the user cache instead of parsing and analysing the file, and writes the same bytes.
A corrupt entry is ignored and written again, a changed file misses, so does changed code (not
merely touched code), and a cache that cannot be written changes nothing but the speed."""

from __future__ import annotations

import json
import marshal
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import read_corpus_sample

from toktools.cli import main
from toktools.corpus import prepared_tokenizer as corpus_tokenizer
from toktools.corpus.encode import encode_corpus
from toktools.engines.analysis import tiktoken_plan
from toktools.io.shipped import shipped_path
from toktools.io.user_cache import read_blob

pytest.importorskip("tiktoken")


@pytest.fixture()
def tokenizer(tmp_path: Path) -> Path:
    """bytebpe-50k's tokenizer.json, copied where a test may change it."""
    source = shipped_path("bytebpe-50k")
    assert source is not None
    target = tmp_path / "tok" / "tokenizer.json"
    target.parent.mkdir()
    shutil.copyfile(source / "tokenizer.json", target)
    return target


@pytest.fixture()
def corpus(tmp_path: Path) -> Path:
    text = read_corpus_sample("mixed_sample.txt", 60_000) + read_corpus_sample("zh_novels.txt", 30_000)
    path = tmp_path / "corpus.txt"
    path.write_text(text + "\nend <|endoftext|> of text\n", encoding="utf-8")
    return path


def encoded(corpus: Path, tokenizer: Path, out: Path, engine: str = "auto") -> tuple[str, bytes, bytes]:
    result = encode_corpus([corpus], tokenizer, out, format="megatron", engine=engine, shard_tokens=10_000)
    # --verify 16: at least one document per place (the reference is not checked against itself)
    assert result.verified == 0 if result.engine == "reference" else result.verified >= 16
    data = b"".join(p.read_bytes() for p in result.outputs)
    manifest = json.loads((out.parent / f"{out.name}-manifest.json").read_text())
    shards = [
        (s["documents"], s["tokens"], s["next"], sorted(f["sha256"] for f in s["files"].values()))
        for s in manifest["shards"]
    ]
    return result.engine, data, json.dumps([manifest["tokenizer"], shards]).encode()


def entries(cache: Path) -> list[Path]:
    return sorted(cache.glob("corpus-tokenizer/*.bin"))


def test_a_second_run_reads_the_cache_and_writes_the_same_bytes(tmp_path, monkeypatch, tokenizer, corpus):
    monkeypatch.setenv("TOKTOOLS_CACHE_DIR", "")
    uncached = encoded(corpus, tokenizer, tmp_path / "none", engine="tiktoken")
    monkeypatch.setenv("TOKTOOLS_CACHE_DIR", str(tmp_path / "cache"))
    assert corpus_tokenizer.load_corpus_tokenizer(tokenizer).analysis is None  # cold
    cold = encoded(corpus, tokenizer, tmp_path / "cold", engine="tiktoken")
    assert len(entries(tmp_path / "cache")) == 1
    hit = corpus_tokenizer.load_corpus_tokenizer(tokenizer)
    assert hit.analysis is not None and hit.analysis.tiktoken_reason is None and hit.analysis.probed
    assert hit._document is None  # not parsed: the shape and the ranks come from the cache
    assert hit.vocab_size == 50_000 and "vocab" not in hit.shape["model"]
    document = json.loads(tokenizer.read_text(encoding="utf-8"))
    assert hit.analysis.plan.mergeable_ranks == tiktoken_plan(document, None).mergeable_ranks
    warm = encoded(corpus, tokenizer, tmp_path / "warm", engine="tiktoken")
    assert uncached == cold == warm
    assert uncached[0] == "tiktoken"
    fastest = encoded(corpus, tokenizer, tmp_path / "auto")  # gigatoken, from the same entry
    assert fastest[1:] == warm[1:]
    assert hit.document() == document | {"truncation": None, "padding": None}  # parsed when asked for


def test_the_cli_output_is_the_same_cold_and_warm(tmp_path, monkeypatch, tokenizer, corpus):
    monkeypatch.setenv("TOKTOOLS_CACHE_DIR", str(tmp_path / "cache"))
    outputs = []
    for run in ("cold", "warm"):
        result = CliRunner().invoke(
            main,
            [
                "encode",
                "-t",
                str(tokenizer),
                str(corpus),
                "--format",
                "megatron",
                "-o",
                str(tmp_path / run),
                "--append-eos",
                "--json",
                "--engine",
                "tiktoken",
            ],
            catch_exceptions=False,
        )
        assert result.exit_code == 0, result.stderr
        assert json.loads(result.stdout)["engine"] == "tiktoken"
        outputs.append(((tmp_path / f"{run}.bin").read_bytes(), (tmp_path / f"{run}.idx").read_bytes()))
    assert outputs[0] == outputs[1]
    assert len(entries(tmp_path / "cache")) == 1


@pytest.mark.parametrize(
    # one damage by default, every kind under -m full (each is two cold encodes)
    "damage",
    ["flip a byte", *(pytest.param(d, marks=pytest.mark.full) for d in ["truncate", "empty", "not an entry"])],
)
def test_a_corrupt_entry_is_ignored_and_written_again(tmp_path, monkeypatch, tokenizer, corpus, damage):
    monkeypatch.setenv("TOKTOOLS_CACHE_DIR", str(tmp_path / "cache"))
    first = encoded(corpus, tokenizer, tmp_path / "first")
    [entry] = entries(tmp_path / "cache")
    data = entry.read_bytes()
    original = read_blob(entry)
    broken = {
        "flip a byte": data[:-100] + bytes([data[-100] ^ 0x01]) + data[-99:],
        "truncate": data[: len(data) // 2],
        "empty": b"",
        "not an entry": b"toktools-cache-blob-1\n" + b"\x00" * 64,
    }[damage]
    entry.write_bytes(broken)
    assert corpus_tokenizer.load_corpus_tokenizer(tokenizer).analysis is None  # ignored: parsed and analysed again
    again = encoded(corpus, tokenizer, tmp_path / "again")
    assert again == first
    # written again, whole: the same entry (marshal's bytes may differ in which objects they
    # share, which depends on what this process computed before, not in what they hold)
    rewritten = read_blob(entry)
    assert rewritten is not None and original is not None
    assert marshal.loads(rewritten) == marshal.loads(original)
    assert corpus_tokenizer.load_corpus_tokenizer(tokenizer).analysis is not None


def test_an_entry_that_checks_out_but_holds_nonsense_is_ignored(tmp_path, monkeypatch, tokenizer, corpus):
    """The checksum guards against damage; the layout check against an entry of another shape."""
    from toktools.io.user_cache import write_blob

    monkeypatch.setenv("TOKTOOLS_CACHE_DIR", str(tmp_path / "cache"))
    first = encoded(corpus, tokenizer, tmp_path / "first")
    [entry] = entries(tmp_path / "cache")
    write_blob(entry, marshal.dumps({"shape": [], "vocab_size": "x"}))
    assert corpus_tokenizer.load_corpus_tokenizer(tokenizer).analysis is None
    assert encoded(corpus, tokenizer, tmp_path / "again") == first


def test_a_changed_tokenizer_file_misses_the_cache(tmp_path, monkeypatch, tokenizer, corpus):
    """Another file (here: the same vocabulary with its last merges dropped, which changes the
    ids) has another key: its own analysis, its own ranks, its own output."""
    monkeypatch.setenv("TOKTOOLS_CACHE_DIR", str(tmp_path / "cache"))
    before = encoded(corpus, tokenizer, tmp_path / "before")
    document = json.loads(tokenizer.read_text(encoding="utf-8"))
    merges = document["model"]["merges"]
    dropped = merges[len(merges) // 2 :]
    document["model"]["merges"] = merges[: len(merges) // 2]
    results = {
        (a + b) if isinstance(a, str) else "" for a, b in (m if isinstance(m, list) else m.split(" ") for m in dropped)
    }
    for token in results:  # tokens no merge makes any more leave the vocabulary (E2 holds)
        document["model"]["vocab"].pop(token, None)
    tokenizer.write_text(json.dumps(document), encoding="utf-8")
    assert corpus_tokenizer.load_corpus_tokenizer(tokenizer).analysis is None  # a miss
    after = encoded(corpus, tokenizer, tmp_path / "after")
    assert len(entries(tmp_path / "cache")) == 2
    monkeypatch.setenv("TOKTOOLS_CACHE_DIR", "")
    assert after == encoded(corpus, tokenizer, tmp_path / "uncached")
    assert after[1] == encoded(corpus, tokenizer, tmp_path / "ref", "reference")[1]
    assert after[1] != before[1]


def test_changed_code_misses_the_cache_and_touched_code_does_not(tmp_path, monkeypatch, tokenizer, corpus):
    """The key holds the sources of the code that derives an entry: a module added to it here
    (from a directory of the test's own) stands for any of them."""
    import os

    from toktools.io import user_cache

    monkeypatch.setenv("TOKTOOLS_CACHE_DIR", str(tmp_path / "cache"))
    code = tmp_path / "code" / "toktools_test_entry_code.py"
    code.parent.mkdir()
    code.write_text("RULE = 1\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(code.parent))
    monkeypatch.setattr(corpus_tokenizer, "ENTRY_CODE", (*corpus_tokenizer.ENTRY_CODE, code.stem))

    def fresh_load() -> corpus_tokenizer.CorpusTokenizer:
        user_cache.code_fingerprint.cache_clear()  # as a new process would
        return corpus_tokenizer.load_corpus_tokenizer(tokenizer)

    try:
        first = encoded(corpus, tokenizer, tmp_path / "first")
        [entry] = entries(tmp_path / "cache")
        os.utime(code, ns=(1_000_000_000, 1_000_000_000))
        assert fresh_load().analysis is not None, "a touched module keeps the entry"
        code.write_text("RULE = 2\n", encoding="utf-8")
        os.utime(code, ns=(1_000_000_000, 1_000_000_000))
        assert fresh_load().analysis is None, "an edited module misses"
        assert encoded(corpus, tokenizer, tmp_path / "again") == first
        assert len(entries(tmp_path / "cache")) == 2 and entry in entries(tmp_path / "cache")
    finally:
        user_cache.code_fingerprint.cache_clear()


def test_a_cache_that_cannot_be_written_changes_nothing(tmp_path, monkeypatch, tokenizer, corpus):
    monkeypatch.setenv("TOKTOOLS_CACHE_DIR", "")
    expected = encoded(corpus, tokenizer, tmp_path / "expected")
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("TOKTOOLS_CACHE_DIR", str(blocker / "cache"))  # below a file: mkdir fails
    assert encoded(corpus, tokenizer, tmp_path / "first") == expected
    assert encoded(corpus, tokenizer, tmp_path / "second") == expected
    assert blocker.read_text() == "not a directory"
