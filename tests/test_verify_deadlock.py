"""``--verify`` on long documents never waits forever (issue 21).

The bug: the main process sent a batch of long documents to the ``--verify`` checker while the
checker was sending back the ids of the previous batch; both socket buffers full, both ends
writing, neither reading, 0 % CPU forever. It hid because every test document was a ~500
character line. Here the documents are those of ``tests/real_shapes.py`` (20K-200K characters),
the run has two batches or more (the bug needs the main process to send while an answer is on
its way), and every socket pair of the run has the smallest buffers Linux grants
(``SO_SNDBUF``, through the launcher of ``tests/watchdog.py``), so the old protocol deadlocks
on every run, not by timing. Each run is under the watchdog: a hang fails with the stacks of
every process after 30 s without progress.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import real_shapes
from watchdog import SMALL_SNDBUF, run_watched

REPO_ROOT = Path(__file__).resolve().parent.parent
BYTEBPE = REPO_ROOT / "vocabs" / "bytebpe-50k" / "tokenizer.json"
EOS = "</s>"

pytestmark = pytest.mark.shared


@pytest.fixture(scope="module")
def long_corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray]:
    """Twelve documents of 20K-200K characters (about 1.1 MB: several batches), and the ids
    ``tokenizers`` gives them, each followed by EOS, as the Megatron ``.bin`` must hold them.
    (The old protocol hung on this corpus on every run; on 600 KB it did not.)"""
    from tokenizers import Tokenizer

    path = real_shapes.long_documents(tmp_path_factory.mktemp("long") / "long.txt")
    assert path.stat().st_size > 1 << 20
    tokenizer = Tokenizer.from_file(str(BYTEBPE))
    eos = tokenizer.token_to_id(EOS)
    documents = path.read_text(encoding="utf-8").splitlines()
    encodings = tokenizer.encode_batch(documents, add_special_tokens=False)
    expected = np.concatenate([np.array([*e.ids, eos], dtype=np.uint16) for e in encodings])
    return path, expected


def _encode_under_watchdog(corpus: Path, expected: np.ndarray, out: Path, *extra: str) -> None:
    out.mkdir()
    run = run_watched(
        ["encode", "-t", "bytebpe-50k", str(corpus), "--format", "megatron", "-o", str(out / "s"), *extra],
        watch=[out],
        sndbuf=SMALL_SNDBUF,
    )
    assert run.returncode == 0, run.stderr
    assert "verified" in run.stderr and ", 0 verified" not in run.stderr, run.stderr
    bins = [out / "s.bin"] if (out / "s.bin").exists() else sorted(out.glob("s-*.bin"))
    assert bins, sorted(p.name for p in out.iterdir())
    ids = np.concatenate([np.fromfile(path, dtype=np.uint16) for path in bins])
    assert np.array_equal(ids, expected)


@pytest.mark.parametrize("attempt", range(2))
def test_the_default_command_finishes_on_long_documents_with_small_socket_buffers(
    long_corpus: tuple[Path, np.ndarray], tmp_path: Path, attempt: int
) -> None:
    """The issue's command, ``encode -t bytebpe-50k corpus.txt --format megatron -o out/s``,
    with the default ``--verify``: it finishes, and its ids are ``tokenizers``'."""
    corpus, expected = long_corpus
    _encode_under_watchdog(corpus, expected, tmp_path / "out")


@pytest.mark.full
@pytest.mark.parametrize("engine", ["auto", "tiktoken", "tokenizers"])
@pytest.mark.parametrize("attempt", range(20))
def test_every_engine_finishes_twenty_times(
    long_corpus: tuple[Path, np.ndarray], tmp_path: Path, engine: str, attempt: int
) -> None:
    """The hang was timing-dependent: each engine, 20 runs in one session, with more documents
    sampled on some runs and shards on others (a finished shard waits for the checker)."""
    corpus, expected = long_corpus
    extra = ["--engine", engine, "--verify", str(16 + 4 * attempt)]
    if attempt % 2:
        extra += ["--shard-tokens", "100000"]
    _encode_under_watchdog(corpus, expected, tmp_path / "out", *extra)


# ---------------------------------------------------------------------------------------------
# The protocol itself: long texts both ways through the smallest buffers
# ---------------------------------------------------------------------------------------------

LONG_DOCUMENT_CHARS = 160_000


class _Echo:
    """A stand-in reference with long answers and no work: one id per character."""

    name = "echo"

    def encode_batch(self, texts: list[str]) -> list[list[int]]:
        return [list(text.encode("ascii")) for text in texts]


def _echo_build(document: object) -> tuple[_Echo, str]:
    return _Echo(), ""


def long_documents_both_ways(per_batch: str) -> None:
    """Run in a process of its own by the tests below (``call_watched``): two batches of
    ``per_batch`` documents of 160,000 characters, every one checked whole, each answer 160,000
    ids, through socket buffers of ~4 KB. The old protocol deadlocked here on the second batch."""
    from types import SimpleNamespace

    from toktools.corpus.verify import CheckerProcess, Verifier

    count = int(per_batch)
    words = " ".join(f"word{n}, and{n % 97}." for n in range(LONG_DOCUMENT_CHARS // 8))[:LONG_DOCUMENT_CHARS]
    documents = [words[k * 101 :] + words[: k * 101] for k in range(count)]
    total = 2 * count * LONG_DOCUMENT_CHARS
    checker = CheckerProcess({}, _echo_build)
    verifier = Verifier("fast", {}, count, total, [SimpleNamespace(path="docs.txt")], process=checker, min_bytes=total)
    try:
        for batch_number in range(2):
            batch = [
                SimpleNamespace(text=text, source=0, line=batch_number * count + k) for k, text in enumerate(documents)
            ]
            verifier.check(batch, _Echo().encode_batch(documents), (batch_number + 1) * total // 2)
        verifier.sync()
    finally:
        verifier.close()
    assert (verifier.done, verifier.bytes_checked) == (2 * count, total), (
        verifier.done,
        verifier.bytes_checked,
    )
    print("checked", verifier.done, verifier.bytes_checked)


def _long_documents_both_ways(per_batch: int) -> None:
    from watchdog import call_watched

    run = call_watched("test_verify_deadlock:long_documents_both_ways", str(per_batch), sndbuf=SMALL_SNDBUF)
    assert run.returncode == 0, run.stderr
    assert run.stdout.decode().split() == ["checked", str(2 * per_batch), str(2 * per_batch * LONG_DOCUMENT_CHARS)]


def test_documents_of_160000_characters_go_through_the_smallest_buffers() -> None:
    _long_documents_both_ways(4)


@pytest.mark.full
def test_batches_of_fifty_documents_of_160000_characters_go_through_the_smallest_buffers() -> None:
    _long_documents_both_ways(50)


def test_no_request_holds_more_than_64_kb_of_text_unless_it_is_one_text() -> None:
    from toktools.corpus.verify import REQUEST_BYTES, _requests
    from toktools.corpus.verify_sample import Piece

    sizes = [10, 30_000, 40_000, 200_000, 5, 64 << 10, 1, 1, 70_000]
    pieces = [Piece(k, "x" * size, True, size) for k, size in enumerate(sizes)]
    requests = list(_requests(pieces))
    assert [p.index for request in requests for p in request] == list(range(len(sizes)))  # all, in order
    assert all(len(r) == 1 or sum(p.size for p in r) <= REQUEST_BYTES for r in requests)
    assert [[p.index for p in r] for r in requests] == [[0, 1], [2], [3], [4], [5], [6, 7], [8]]


def _failing_build() -> tuple[object, str]:
    raise RuntimeError("a bug in the build")


def test_a_checker_thread_that_dies_stops_the_run_instead_of_waiting_forever() -> None:
    """The checker thread (a kept ids-only state) hands on its end whatever ends it: the run's
    wait for the answers raises at once."""
    from types import SimpleNamespace

    from toktools.corpus.verify import CheckerThread, Verifier
    from toktools.errors import ToktoolsError

    documents = ["one document", "and another"]
    items = [SimpleNamespace(text=text, source=0, line=k + 1) for k, text in enumerate(documents)]
    total = sum(len(text) + 1 for text in documents)
    checker = CheckerThread(_failing_build)
    verifier = Verifier("fast", {}, 2, total, [SimpleNamespace(path="docs.txt")], process=checker)
    try:
        with pytest.raises(ToktoolsError, match="the --verify process stopped unexpectedly"):
            verifier.check(items, [[1], [2]], total)  # raised here if the end has arrived already
            verifier.sync()
    finally:
        verifier.close()
