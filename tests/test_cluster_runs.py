"""`--cluster` on count, train and compare: the same counts file, the same vocabularies and the
same corpus report as a local run.

A real ``distributed.LocalCluster`` with two worker processes on the loopback (no other address
is ever used). As in ``test_distributed.py``, the cluster tests run in a fresh child pytest
process: importing ``distributed`` in the main pytest process made later forked pools hang.
"""

from __future__ import annotations

import functools
import gzip
import importlib.util
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import IN_DASK_CHILD, read_corpus_sample, ref_vocab_dir, run_in_fresh_process

from toktools.cli import main
from toktools.errors import ToktoolsError

if (
    importlib.util.find_spec("distributed") is None
):  # not imported here: the parent process stays free of Dask's threads
    pytest.skip("Dask is an optional extra: pip install 'toktools[dask]'", allow_module_level=True)

IN_CHILD = IN_DASK_CHILD
CHILD_TESTS = 10


@pytest.mark.skipif(IN_CHILD, reason="this is the child run")
def test_the_cluster_tests_pass_in_a_fresh_process(request: pytest.FixtureRequest) -> None:
    run_in_fresh_process(request, CHILD_TESTS)


child_only = pytest.mark.skipif(not IN_CHILD, reason="runs in the fresh child process of the test above")


@pytest.fixture
def client(dask_client):
    """The child run's one LocalCluster (conftest ``dask_client``: ``cluster_client("local:2")``)."""
    return dask_client


@pytest.fixture(scope="module")
def corpus_files(tmp_path_factory) -> list[Path]:
    """English (plain) and Chinese (gzip, so one block) text: several blocks at small sizes."""
    folder = tmp_path_factory.mktemp("corpus")
    english = folder / "en.txt"
    english.write_text(read_corpus_sample("en_wiki.txt.gz", 300_000), encoding="utf-8")
    chinese = folder / "zh.txt.gz"
    with gzip.open(chinese, "wt", encoding="utf-8") as handle:
        handle.write(read_corpus_sample("zh_novels.txt", 150_000))
    return [english, chinese]


def _invoke(*args: str):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


@child_only
@pytest.mark.parametrize("model", ["bytebpe", "wordpiece"])
def test_count_on_the_cluster_writes_the_local_counts_file_and_trains_the_same_vocabulary(
    client, corpus_files: list[Path], tmp_path: Path, model: str
) -> None:
    address = client.scheduler.address  # the fixture's LocalCluster: tcp://127.0.0.1:PORT
    local = _invoke("count", *corpus_files, "--model", model, "-o", tmp_path / "local.counts", "--workers", "2")
    remote = _invoke(
        "count",
        *corpus_files,
        "--model",
        model,
        "-o",
        tmp_path / "remote.counts",
        "--cluster",
        address,
        "--block-size",
        "40KB",
        "--cluster-timeout",
        "20",
    )
    assert local.exit_code == 0 and remote.exit_code == 0, local.output + remote.output
    assert (tmp_path / "remote.counts").read_bytes() == (tmp_path / "local.counts").read_bytes()

    for name in ("local", "remote"):
        trained = _invoke(
            "train",
            model,
            "--from-counts",
            tmp_path / f"{name}.counts",
            "-o",
            tmp_path / f"{name}-vocab",
            "--vocab-size",
            "1500",
            "--special-tokens",
            "[UNK]",
        )
        assert trained.exit_code == 0, trained.output
    vocab_file = "vocab.json" if model == "bytebpe" else "vocab.txt"
    for file in (vocab_file, "tokenizer.json"):
        assert (tmp_path / "remote-vocab" / file).read_bytes() == (tmp_path / "local-vocab" / file).read_bytes()


@child_only
def test_the_python_api_takes_the_cluster_as_one_argument(client, corpus_files: list[Path]) -> None:
    import toktools

    files = [str(p) for p in corpus_files]
    local = toktools.train_wordpiece(files, vocab_size=1200, workers=1, lowercase=False)
    on_client = toktools.train_wordpiece(files, vocab_size=1200, cluster=client, lowercase=False)
    assert on_client.vocab == local.vocab
    seen: list[tuple[str, int, int]] = []
    by_address = toktools.train_bytebpe(
        files,
        vocab_size=600,
        cluster=client.scheduler.address,
        progress=lambda stage, done, total: seen.append((stage, done, total)),
    )
    read = [(done, total) for stage, done, total in seen if stage == "read"]
    assert read[-1] == (sum(p.stat().st_size for p in corpus_files),) * 2  # bytes on disk, all read
    assert by_address.vocab == toktools.train_bytebpe(files, vocab_size=600, workers=1).vocab
    assert by_address.merges == toktools.train_bytebpe(files, vocab_size=600, workers=1).merges


@child_only
def test_merges_on_the_workers_keep_the_first_occurrence_order(
    client, corpus_files: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past a few dozen blocks the workers merge neighbours in a tree before the client does."""
    from toktools.cluster import blocks as distributed
    from toktools.parts import bert_text
    from toktools.training import pipeline as training

    monkeypatch.setattr(distributed, "CLIENT_MERGES", 3)
    splitter = functools.partial(bert_text.iter_words, config=bert_text.BertNormalizerConfig())
    files = [str(p) for p in corpus_files]
    remote = distributed.count_words(client, files, splitter, block_bytes=6_000)  # ~50 blocks: two tree levels
    assert len(distributed.plan_blocks(files, 6_000)) > 3 * distributed.MERGE_FAN_IN
    assert list(remote.items()) == list(training.count_wordpiece_words(files, workers=1).items())


@child_only
def test_train_on_the_cluster_writes_the_local_files(client, corpus_files: list[Path], tmp_path: Path) -> None:
    local = _invoke(
        "train", "bytebpe", *corpus_files, "-o", tmp_path / "local", "--vocab-size", "700", "--workers", "1"
    )
    remote = _invoke(
        "train",
        "bytebpe",
        *corpus_files,
        "-o",
        tmp_path / "remote",
        "--vocab-size",
        "700",
        "--cluster",
        client.scheduler.address,
        "--block-size",
        "64KiB",
    )
    assert local.exit_code == 0 and remote.exit_code == 0, local.output + remote.output
    for file in ("vocab.json", "merges.txt", "tokenizer.json"):
        assert (tmp_path / "remote" / file).read_bytes() == (tmp_path / "local" / file).read_bytes()


@child_only
def test_memory_filesystem_on_a_cluster_that_shares_the_process(corpus_files: list[Path]) -> None:
    """memory:// lives in one process: a cluster of threads in this process reads it, and
    counts what a local run counts from the same bytes on disk."""
    import fsspec
    from distributed import Client, LocalCluster

    from toktools.training import pipeline as training

    text = corpus_files[0].read_bytes()
    cut = text.index(b"\n", len(text) // 2) + 1  # two files of whole lines: together, the corpus
    with fsspec.open("memory://dask-count/part-0.txt", "wb") as handle:
        handle.write(text[:cut])
    with fsspec.open("memory://dask-count/part-1.txt", "wb") as handle:
        handle.write(text[cut:])
    local = training.count_bytebpe_words([str(corpus_files[0])], workers=1)
    with (
        LocalCluster(
            n_workers=1,
            threads_per_worker=2,
            processes=False,
            protocol="tcp://",
            host="127.0.0.1",
            dashboard_address=None,
            scheduler_kwargs={"dashboard_address": "127.0.0.1:0", "dashboard": False},
        ) as cluster,
        Client(cluster) as threads,
    ):
        remote = training.count_bytebpe_words(["memory://dask-count/"], cluster=threads)
    assert list(remote.items()) == list(local.items())


@child_only
def test_a_path_the_workers_cannot_read_is_one_line(client, tmp_path: Path) -> None:
    import fsspec

    with fsspec.open("memory://only-here/corpus.txt", "wb") as handle:  # this process sees it, the workers do not
        handle.write(b"hello world\n")
    from toktools.training import pipeline as training

    with pytest.raises(ToktoolsError, match=r"^memory:///only-here/corpus.txt: cannot read \(.*\)$"):
        training.count_bytebpe_words(["memory://only-here/corpus.txt"], cluster=client)
    missing = _invoke(
        "count",
        "memory://nowhere/corpus.txt",
        "--model",
        "bytebpe",
        "-o",
        tmp_path / "c",
        "--cluster",
        client.scheduler.address,
    )
    assert missing.exit_code == 1
    assert missing.output.splitlines() == ["toktools: error: corpus file not found: memory://nowhere/corpus.txt"]
    unknown = _invoke(
        "count",
        "nosuchfs://bucket/corpus.txt",
        "--model",
        "bytebpe",
        "-o",
        tmp_path / "c",
        "--cluster",
        client.scheduler.address,
    )
    assert unknown.exit_code == 1
    assert len(unknown.output.splitlines()) == 1 and unknown.output.startswith(
        "toktools: error: cannot read nosuchfs://"
    )


@child_only
def test_an_unreachable_scheduler_is_one_line_after_the_timeout(tmp_path: Path) -> None:
    """Run as its own process, as a user runs it: in this one, the failed connection's future
    would be reported ("Future exception was never retrieved") on the event loop that the
    other tests' client shares, in the middle of a later test's output."""
    import subprocess
    import sys

    corpus = tmp_path / "c.txt"
    corpus.write_text("hello world\n", encoding="utf-8")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "toktools.cli",
            "count",
            str(corpus),
            "--model",
            "bytebpe",
            "-o",
            str(tmp_path / "c.counts"),
            "--cluster",
            "tcp://127.0.0.1:1",
            "--cluster-timeout",
            "1",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1
    assert result.stdout == "" and len(result.stderr.splitlines()) == 1
    assert result.stderr.startswith("toktools: error: cannot reach the Dask scheduler at tcp://127.0.0.1:1 within 1 s")
    assert not (tmp_path / "c.counts").exists()


@child_only
def test_compare_on_the_cluster_reports_what_a_local_run_reports(client, tmp_path: Path) -> None:
    english = tmp_path / "en.txt"  # smaller than the counting corpus: compare encodes with two tokenizers
    english.write_text(read_corpus_sample("en_wiki.txt.gz", 60_000), encoding="utf-8")
    chinese = tmp_path / "zh.txt.gz"
    with gzip.open(chinese, "wt", encoding="utf-8") as handle:
        handle.write(read_corpus_sample("zh_wiki_sample.txt", 30_000))
    tokenizers = [str(ref_vocab_dir("gpt2")), str(ref_vocab_dir("bert-base-uncased"))]
    corpus = ["--corpus", str(english), "--corpus", str(chinese)]
    for output in (["--json"], ["--width", "100"]):
        local = _invoke("compare", *tokenizers, *corpus, "--show", "4", *output, "--workers", "2")
        remote = _invoke(
            "compare",
            *tokenizers,
            *corpus,
            "--show",
            "4",
            *output,
            "--cluster",
            client.scheduler.address,
            "--block-size",
            "15KB",
        )
        assert local.exit_code == 0 and remote.exit_code == 0, local.output + remote.output
        assert remote.output == local.output
    assert '"line": ' in local.output or "line " in local.output  # the shown documents name their lines


@child_only
def test_compare_on_the_cluster_names_a_bad_record_by_its_line_in_the_whole_file(client, tmp_path: Path) -> None:
    records = tmp_path / "docs.jsonl"
    lines = [f'{{"text": "document {n}"}}\n' for n in range(400)]
    lines[300] = '{"body": "no text field"}\n'
    records.write_text("".join(lines), encoding="utf-8")
    gpt2 = str(ref_vocab_dir("gpt2"))
    local = _invoke("compare", gpt2, "--corpus", records, "--field", "text", "--workers", "1")
    remote = _invoke(
        "compare",
        gpt2,
        "--corpus",
        records,
        "--field",
        "text",
        "--cluster",
        client.scheduler.address,
        "--block-size",
        "2KB",
    )
    assert local.exit_code == remote.exit_code == 1
    assert (
        remote.output
        == local.output
        == f"toktools: error: {records}, line 301: not a JSON object with a 'text' field\n"
    )
