"""``encode`` in blocks: each block of the input is one shard, written here or on a Dask cluster.

The first half runs here, without Dask: block-sharded output holds the documents of an ordinary
local run, resumes, and never leaves a manifest that claims a missing shard. The second half runs
a real ``distributed.LocalCluster`` (two worker processes on the loopback, no other address) in a
fresh child pytest process, as tests/test_distributed.py does: the cluster writes the very bytes
of the local block run, also when one of its worker processes is killed mid-run.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import IN_DASK_CHILD, read_corpus_sample, run_in_fresh_process

from toktools.cli import main
from toktools.cluster import encode as distributed_encode
from toktools.corpus.encode import encode_corpus
from toktools.corpus.writers import read_megatron_documents
from toktools.errors import ToktoolsError

IN_CHILD = IN_DASK_CHILD
HAVE_DASK = importlib.util.find_spec("distributed") is not None  # never imported in the parent process
TOKENIZER = "bytebpe-50k"
CHILD_TESTS = 3

in_parent = pytest.mark.skipif(IN_CHILD, reason="runs in the parent pytest process")
child_only = pytest.mark.skipif(
    not IN_CHILD, reason="runs in the fresh child process of test_the_cluster_tests_pass_in_a_fresh_process"
)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """English with blank lines and CRLF line ends, and gzipped Chinese: ~150 KB."""
    folder = tmp_path_factory.mktemp("inputs")
    english = read_corpus_sample("mixed_sample.txt", 100_000).splitlines()
    for at in range(0, len(english), 7):
        english[at] = ""  # paragraph breaks for --document blank-line
    english[3] = english[3] + "\r"
    plain = folder / "en.txt"
    plain.write_text("\n".join(english) + "\n", encoding="utf-8")
    packed = folder / "zh.txt.gz"
    with gzip.open(packed, "wt", encoding="utf-8") as handle:
        handle.write(read_corpus_sample("zh_novels.txt", 40_000))
    return [plain, packed]


def documents(prefix: Path, fmt: str = "megatron") -> list[list[int]]:
    """Every document of a single output, or of all shards ``prefix-NNNNN`` in order."""
    import numpy

    def one(base: str) -> list[list[int]]:
        if fmt == "megatron":
            return read_megatron_documents(base)
        data, offsets = numpy.load(base + ".npy"), numpy.load(base + ".offsets.npy")
        return [data[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])]

    shards = sorted(
        prefix.parent.glob(
            prefix.name + "-[0-9][0-9][0-9][0-9][0-9].idx"
            if fmt == "megatron"
            else prefix.name + "-[0-9][0-9][0-9][0-9][0-9].npy"
        )
    )
    if not shards:
        return one(str(prefix))
    return [doc for shard in shards for doc in one(str(shard)[: -len(shard.suffix)])]


def digests(folder: Path) -> dict[str, str]:
    """Every file in ``folder`` (hidden temporaries included) by name → sha256."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


# ---------------------------------------------------------------------------------------------
# Here, without Dask
# ---------------------------------------------------------------------------------------------


@in_parent
@pytest.mark.parametrize("mode", ["line", "blank-line", "file", "jsonl"])
def test_block_shards_hold_the_documents_of_a_local_run(corpus: list[Path], tmp_path: Path, mode: str) -> None:
    inputs = corpus
    if mode == "jsonl":
        lines = corpus[0].read_text(encoding="utf-8").splitlines()
        records = tmp_path / "docs.jsonl"
        records.write_text(
            "".join(
                json.dumps({"text": line, "n": n}, ensure_ascii=False) + "\n" for n, line in enumerate(lines) if line
            ),
            encoding="utf-8",
        )
        inputs = [records]
    whole = encode_corpus(inputs, TOKENIZER, tmp_path / "whole", document=mode, verify=0)
    blocks = encode_corpus(inputs, TOKENIZER, tmp_path / "blocks", document=mode, block_bytes=9_000, verify=2)
    assert documents(tmp_path / "blocks") == documents(tmp_path / "whole")
    assert (blocks.documents, blocks.tokens) == (whole.documents, whole.tokens)
    manifest = json.loads((tmp_path / "blocks-manifest.json").read_text())
    assert manifest["complete"] and manifest["settings"]["block_bytes"] == 9_000
    expected_shards = len(inputs) if mode == "file" else None
    if expected_shards:
        assert len(manifest["shards"]) == expected_shards  # a document never spans two blocks
    else:
        assert len(manifest["shards"]) > 10
    # file: both places fall in en.txt, one document; else each place's block is checked (>= 1 document each)
    assert blocks.verified == 1 if mode == "file" else blocks.verified >= 2
    assert not (tmp_path / "blocks-manifest.partial.json").exists()
    assert "distributed" not in sys.modules or IN_CHILD


@in_parent
def test_npy_blocks_and_the_command_line(corpus: list[Path], tmp_path: Path) -> None:
    whole = tmp_path / "whole.npy"
    encode_corpus(corpus, TOKENIZER, whole, format="npy", verify=0)
    command, library = tmp_path / "command", tmp_path / "library"
    command.mkdir()
    library.mkdir()
    result = CliRunner().invoke(
        main,
        [
            "encode",
            "-t",
            TOKENIZER,
            "--format",
            "npy",
            "-o",
            str(command / "ids.npy"),
            "--block-size",
            "20KB",
            "--verify",
            "1",
            *map(str, corpus),
        ],
    )
    assert result.exit_code == 0, result.output
    assert documents(command / "ids", "npy") == documents(tmp_path / "whole", "npy")
    encode_corpus(corpus, TOKENIZER, library / "ids.npy", format="npy", block_bytes=20_000, verify=1)
    assert digests(command) == digests(library)  # the CLI's --block-size is the library's block_bytes


@in_parent
def test_a_rerun_keeps_the_good_shards_and_rewrites_the_rest(corpus: list[Path], tmp_path: Path) -> None:
    first = encode_corpus(corpus, TOKENIZER, tmp_path / "out", block_bytes=15_000, verify=0)
    before = digests(tmp_path)
    (tmp_path / "out-00002.bin").write_bytes(b"damaged")
    (tmp_path / "out-00004.idx").unlink()
    again = encode_corpus(corpus, TOKENIZER, tmp_path / "out", block_bytes=15_000, verify=0)
    assert (again.shards_written, again.shards_kept) == (2, len(first.outputs) // 2 - 2)
    assert digests(tmp_path) == before
    done = encode_corpus(corpus, TOKENIZER, tmp_path / "out", block_bytes=15_000, verify=0)
    assert (done.shards_written, done.tokens) == (0, first.tokens)


@in_parent
def test_a_failed_run_records_only_finished_shards_and_the_rerun_completes_it(
    corpus: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clean = tmp_path / "clean"
    clean.mkdir()
    encode_corpus(corpus, TOKENIZER, clean / "out", block_bytes=15_000, verify=0)
    real = distributed_encode.encode_block

    def fail_on_the_fifth(job, task, *args, **kwargs):
        if task.index == 4:
            raise ToktoolsError("disk full (simulated)")
        return real(job, task, *args, **kwargs)

    monkeypatch.setattr(distributed_encode, "encode_block", fail_on_the_fifth)
    monkeypatch.setattr(distributed_encode, "PARTIAL_SECONDS", 0.0)  # the record is rewritten as each block ends
    with pytest.raises(ToktoolsError, match="simulated"):
        encode_corpus(corpus, TOKENIZER, tmp_path / "out", block_bytes=15_000, verify=0)
    assert not (tmp_path / "out-manifest.json").exists()
    partial = json.loads((tmp_path / "out-manifest.partial.json").read_text())
    assert not partial["complete"] and [s["index"] for s in partial["shards"]] == [0, 1, 2, 3]
    for shard in partial["shards"]:  # every shard it names is there, with the recorded bytes
        for entry in shard["files"].values():
            assert hashlib.sha256((tmp_path / entry["name"]).read_bytes()).hexdigest() == entry["sha256"]
    monkeypatch.setattr(distributed_encode, "encode_block", real)
    resumed = encode_corpus(corpus, TOKENIZER, tmp_path / "out", block_bytes=15_000, verify=0)
    assert resumed.shards_kept == 4
    assert digests(tmp_path) == digests(clean)


@in_parent
def test_refusals_are_one_line(corpus: list[Path], tmp_path: Path) -> None:
    encode_corpus(corpus, TOKENIZER, tmp_path / "out", block_bytes=15_000, verify=0)
    with pytest.raises(ToktoolsError, match=r"other settings \(block_bytes: 15000, now 16000\)"):
        encode_corpus(corpus, TOKENIZER, tmp_path / "out", block_bytes=16_000, verify=0)
    with pytest.raises(ToktoolsError, match="--shard-tokens cannot be combined with --cluster or --block-size"):
        encode_corpus(corpus, TOKENIZER, tmp_path / "other", block_bytes=15_000, shard_tokens=1000)
    with pytest.raises(ToktoolsError, match="standard input cannot be cut into blocks"):
        encode_corpus(["-"], TOKENIZER, tmp_path / "other", block_bytes=15_000)
    with pytest.raises(ToktoolsError, match="--workers is for local runs"):
        encode_corpus(corpus, TOKENIZER, tmp_path / "other", cluster="local:2", workers=2)
    (tmp_path / "taken-00000.bin").write_bytes(b"someone else's")
    with pytest.raises(ToktoolsError, match="taken-00000.bin already exists"):
        encode_corpus(corpus, TOKENIZER, tmp_path / "taken", block_bytes=15_000)
    runner = CliRunner()
    result = runner.invoke(main, ["encode", "-t", TOKENIZER, "--block-size", "10KB", str(corpus[0])])
    assert result.exit_code == 2 and "--block-size is for --format megatron, npy or bin" in result.output
    result = runner.invoke(
        main,
        [
            "encode",
            "-t",
            TOKENIZER,
            "--format",
            "megatron",
            "-o",
            str(tmp_path / "x"),
            "--cluster-timeout",
            "3",
            str(corpus[0]),
        ],
    )
    assert result.exit_code == 2 and "--cluster-timeout only applies with --cluster" in result.output


@in_parent
def test_an_error_names_the_line_in_the_whole_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.txt"
    path.write_bytes(b"".join(b"fine line %d\n" % n for n in range(2000)) + b"bad \xff byte\n")
    with pytest.raises(ToktoolsError, match=r"bad.txt, line 2001: invalid UTF-8 \(byte 0xFF\)"):
        encode_corpus([path], TOKENIZER, tmp_path / "out", block_bytes=1000, verify=0)
    assert not (tmp_path / "out-manifest.json").exists()


# ---------------------------------------------------------------------------------------------
# On a LocalCluster, in a fresh child process
# ---------------------------------------------------------------------------------------------


@in_parent
@pytest.mark.skipif(not HAVE_DASK, reason="Dask is an optional extra: pip install 'toktools[dask]'")
def test_the_cluster_tests_pass_in_a_fresh_process(request: pytest.FixtureRequest) -> None:
    run_in_fresh_process(request, CHILD_TESTS)


@pytest.fixture
def cluster(dask_client):
    """The child run's one LocalCluster (conftest ``dask_client``): two worker processes on the
    loopback, which pause in each block while the pause file exists."""
    return dask_client.cluster, dask_client


@child_only
@pytest.mark.parametrize("fmt", ["megatron", "npy"])
def test_the_cluster_writes_the_bytes_of_the_local_block_run(
    cluster, corpus: list[Path], tmp_path: Path, fmt: str
) -> None:
    local_cluster, _client = cluster
    here, there = tmp_path / "here", tmp_path / "there"
    here.mkdir()
    there.mkdir()
    name = "out" if fmt == "megatron" else "out.npy"
    local = encode_corpus(corpus, TOKENIZER, here / name, format=fmt, block_bytes=25_000, verify=3)
    if fmt == "megatron":
        remote = encode_corpus(
            corpus,
            TOKENIZER,
            there / name,
            format=fmt,
            block_bytes=25_000,
            verify=3,
            cluster=local_cluster.scheduler_address,
        )
        assert (remote.documents, remote.tokens, remote.engine) == (local.documents, local.tokens, local.engine)
        assert remote.verified >= 3  # --verify 3: at least one document per place (more as time allows)
    else:  # the command line: --cluster ADDRESS --block-size SIZE
        result = CliRunner().invoke(
            main,
            [
                "encode",
                "-t",
                TOKENIZER,
                "--format",
                fmt,
                "-o",
                str(there / name),
                "--verify",
                "3",
                "--cluster",
                local_cluster.scheduler_address,
                "--block-size",
                "25000",
                "--json",
                *map(str, corpus),
            ],
        )
        assert result.exit_code == 0, result.output
        remote = json.loads(result.stdout)
        assert (remote["documents"], remote["tokens"]) == (local.documents, local.tokens)
        assert remote["verified"] >= 3
        remote = encode_corpus(
            corpus,
            TOKENIZER,
            there / name,
            format=fmt,
            block_bytes=25_000,
            verify=3,
            cluster=local_cluster.scheduler_address,
        )  # nothing left to do
    assert digests(there) == digests(here)  # shards and manifest, byte for byte; no temporaries left
    again = encode_corpus(
        corpus, TOKENIZER, there / name, format=fmt, block_bytes=25_000, cluster=local_cluster.scheduler_address
    )
    assert (again.shards_written, again.shards_kept) == (0, len(remote.outputs) // 2)


def _holds_a_shard(pid: int, directory: Path) -> bool:
    """Whether process ``pid`` has a shard being written in ``directory`` open (Linux /proc)."""
    try:
        descriptors = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for descriptor in descriptors:
        try:
            target = Path(os.readlink(f"/proc/{pid}/fd/{descriptor}"))
        except OSError:  # closed meanwhile
            continue
        if target.parent == directory.resolve() and target.name.startswith(".out-"):
            return True
    return False


@child_only
def test_a_killed_worker_is_replaced_and_the_output_is_still_identical(
    cluster, corpus: list[Path], tmp_path: Path
) -> None:
    local_cluster, client = cluster
    here, there = tmp_path / "here", tmp_path / "there"
    here.mkdir()
    there.mkdir()
    encode_corpus(corpus, TOKENIZER, here / "out", block_bytes=12_000, verify=0)
    ours = set(client.run(os.getpid).values())  # the worker processes this test started
    assert len(ours) == 2 and os.getpid() not in ours
    # each block pauses 0.3 s with its shard open (re-reading the pause file while it waits)
    pause = Path(os.environ[distributed_encode.TEST_PAUSE_VARIABLE])
    pause.write_text("0.3")
    outcome: dict[str, object] = {}

    def run() -> None:
        try:
            outcome["result"] = encode_corpus(
                corpus, TOKENIZER, there / "out", block_bytes=12_000, verify=0, cluster=client
            )  # a Client the caller holds is used as it is
        except BaseException as err:  # handed to the test thread
            outcome["error"] = err

    thread = threading.Thread(target=run)
    thread.start()
    deadline = time.monotonic() + 120
    while len(list(there.glob("out-*.bin"))) < 2 and time.monotonic() < deadline and thread.is_alive():
        time.sleep(0.05)
    # two shards are done: from now on a block that has opened its shard holds it (the blocks
    # waiting already too), so the worker that holds one cannot finish before it is killed
    pause.write_text("600")
    victim = None
    while victim is None and time.monotonic() < deadline and thread.is_alive():
        victim = next((pid for pid in sorted(ours) if _holds_a_shard(pid, there)), None)
        if victim is None:
            time.sleep(0.05)
    assert victim in ours, f"no worker was caught mid-task (run finished: {not thread.is_alive()}, {outcome})"
    os.kill(victim, signal.SIGKILL)
    pause.write_text("0")  # the other worker, and the block the victim held, go on
    thread.join(300)
    assert not thread.is_alive()
    assert "error" not in outcome, outcome.get("error")
    assert victim not in set(client.run(os.getpid).values())  # it really died (the nanny started a new one)
    pause.unlink()
    assert digests(there) == digests(here)  # complete, identical, and the dead worker's temporaries are gone
