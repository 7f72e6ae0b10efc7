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
    """Twelve documents of 20K-200K characters (about 1.1 MB: two batches), and the ids
    ``tokenizers`` gives them, each followed by EOS, as the Megatron ``.bin`` must hold them."""
    from tokenizers import Tokenizer

    path = real_shapes.long_documents(tmp_path_factory.mktemp("long") / "long.txt")
    assert path.stat().st_size > 1 << 20  # more than one batch
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
