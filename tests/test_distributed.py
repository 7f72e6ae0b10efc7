"""Counting on a Dask cluster gives the local run's counts, byte for byte.

A real ``distributed.LocalCluster`` with two worker processes on the loopback (no other address
is ever used); skipped with the reason when Dask is not installed.
"""

from __future__ import annotations

import functools
import gzip
import importlib.util
import random
from pathlib import Path

import pytest
from conftest import IN_DASK_CHILD, read_corpus_sample, run_in_fresh_process

from toktools.cluster import blocks as distributed
from toktools.corpus import reading as corpus
from toktools.errors import ToktoolsError
from toktools.models.bpe import bytelevel

if (
    importlib.util.find_spec("distributed") is None
):  # not imported here: the parent process stays free of Dask's threads
    pytest.skip("Dask is an optional extra: pip install 'toktools[dask]'", allow_module_level=True)

#: The cluster tests run in a fresh interpreter: a LocalCluster started late in a long pytest
#: process (after tests that fork worker pools and install signal handlers) was seen to hang.
IN_CHILD = IN_DASK_CHILD


@pytest.mark.skipif(IN_CHILD, reason="this is the child run")
def test_the_cluster_tests_pass_in_a_fresh_process(request: pytest.FixtureRequest) -> None:
    run_in_fresh_process(request, 6)


child_only = pytest.mark.skipif(not IN_CHILD, reason="runs in the fresh child process of the test above")


@pytest.fixture
def client(dask_client):
    """The child run's one LocalCluster (conftest ``dask_client``: ``cluster_client("local:2")``)."""
    return dask_client


def _local_counts(paths, splitter, **options):
    return corpus.count_words(
        corpus.expand_sources([str(p) for p in paths], options.pop("json_field", None)), splitter, workers=1, **options
    )


BYTE_LEVEL = functools.partial(bytelevel.training_pieces, add_prefix_space=False, use_regex=True)


@child_only
def test_block_reading_covers_every_byte_once(tmp_path: Path) -> None:
    rng = random.Random(7)
    for trial in range(200):
        lines = ["é" * rng.randint(0, 5) for _ in range(rng.randint(0, 10))]
        text = "\n".join(lines) + rng.choice(["", "\n"])
        path = tmp_path / f"f{trial}.txt"
        path.write_text(text, encoding="utf-8")
        blocks = distributed.plan_blocks([str(path)], rng.randint(1, 12))
        assert b"".join(b"".join(distributed.read_block(b)) for b in blocks) == text.encode("utf-8")


@child_only
def test_cluster_counts_equal_local_counts_in_content_and_order(client, tmp_path: Path) -> None:
    english = tmp_path / "en.txt"
    english.write_text(read_corpus_sample("en_wiki.txt.gz", 400_000), encoding="utf-8")
    chinese = tmp_path / "zh.txt.gz"
    with gzip.open(chinese, "wt", encoding="utf-8") as handle:
        handle.write(read_corpus_sample("zh_novels.txt", 200_000))
    local = _local_counts([english, chinese], BYTE_LEVEL)
    remote = distributed.count_words(client, [str(english), str(chinese)], BYTE_LEVEL, block_bytes=37_000)
    assert list(remote.items()) == list(local.items())


@child_only
def test_globs_directories_and_json_lines(client, tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    for index in range(3):
        (folder / f"{index}.jsonl").write_text(
            "".join(f'{{"text": "doc {index} line {n} ünïcode"}}\n' for n in range(50)), encoding="utf-8"
        )
    local = _local_counts([folder], BYTE_LEVEL, json_field="text")
    assert distributed.count_words(client, [str(folder)], BYTE_LEVEL, json_field="text", block_bytes=500) == local
    assert distributed.count_words(client, [str(folder / "*.jsonl")], BYTE_LEVEL, json_field="text") == local


@child_only
def test_invalid_utf8_names_the_file_and_the_line_in_the_whole_file(client, tmp_path: Path) -> None:
    path = tmp_path / "bad.txt"
    path.write_bytes(b"".join(b"fine line %d\n" % n for n in range(1000)) + b"bad \xff byte\n")
    with pytest.raises(ToktoolsError, match=r"bad.txt, line 1001: invalid UTF-8 \(byte 0xFF\)"):
        distributed.count_words(client, [str(path)], BYTE_LEVEL, block_bytes=1000)


@child_only
def test_memory_filesystem_inputs(client) -> None:
    fsspec = pytest.importorskip("fsspec")
    # memory:// lives in one process: a LocalCluster's workers cannot see it, so read it here
    with fsspec.open("memory://corpus/a.txt", "wb") as handle:
        handle.write(b"hello world\nhello there\n")
    blocks = distributed.plan_blocks(["memory://corpus/*.txt"], 8)
    assert [b.path for b in blocks] == ["memory:///corpus/a.txt"] * 3  # fsspec's canonical form
    assert b"".join(b"".join(distributed.read_block(b)) for b in blocks) == b"hello world\nhello there\n"
    assert distributed.count_block(blocks[0], BYTE_LEVEL) == {"hello": 1, " world": 1, "\n": 1}


@child_only
def test_bad_cluster_addresses_are_one_line(tmp_path: Path) -> None:
    with pytest.raises(ToktoolsError, match="cannot reach the Dask scheduler at tcp://127.0.0.1:1 within 1 s"):
        with distributed.cluster_client("tcp://127.0.0.1:1", timeout=1):
            pass
    with pytest.raises(ToktoolsError, match="expected local or local:N"):
        with distributed.cluster_client("local:zero"):
            pass
    with pytest.raises(ToktoolsError, match="corpus file not found"):
        distributed.plan_blocks([str(tmp_path / "missing.txt")])
