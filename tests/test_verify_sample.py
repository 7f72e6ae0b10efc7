"""What ``--verify`` checks: a byte budget spread over the input, priced in time (issue 23).

The sample is at least 64 KB (or the whole of a smaller input), cut from N places spread over
the input (``--verify N``); a long document is checked on a prefix that ends where the
pre-tokeniser provably restarts, so the prefix's ids are the first ids of the document's
(checked here against ``tokenizers``); more is checked while the checker's measured time stays
within 8 % of the run's CPU time (verifying then costs at most ~15 %).
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import real_shapes

from toktools.corpus.documents import _is_space
from toktools.corpus.verify import InlineChecker, Verifier
from toktools.corpus.verify_sample import MAX_PREFIX_CHARS, MIN_SAMPLE_BYTES, TIME_SHARE, Sample
from toktools.errors import ToktoolsError

REPO_ROOT = Path(__file__).resolve().parent.parent
BYTEBPE = REPO_ROOT / "vocabs" / "bytebpe-50k" / "tokenizer.json"

pytestmark = pytest.mark.shared


def _batches(texts: list[str], batch_chars: int) -> list[tuple[list[int], int]]:
    """Indices of ``texts`` in batches of about ``batch_chars`` (as corpus encoding cuts them),
    each with the input bytes read once it is (one newline per text)."""
    batches, current, size, done = [], [], 0, 0
    for index, text in enumerate(texts):
        current.append(index)
        size += len(text)
        done += len(text.encode()) + 1
        if size >= batch_chars:
            batches.append((current, done))
            current, size = [], 0
    if current:
        batches.append((current, done))
    return batches


def _run(sample: Sample, texts: list[str], batch_chars: int = 1 << 20) -> list[tuple[int, str, bool]]:
    """Every piece the sample takes: (text number, piece, whole)."""
    taken = []
    for indices, done in _batches(texts, batch_chars):
        for piece in sample.pieces([texts[i] for i in indices], done):
            taken.append((indices[piece.index], piece.text, piece.whole))
    return taken


@pytest.fixture(scope="module")
def hf_tokenizer():
    """``tokenizers``' own bytebpe-50k: the ids every check here is measured against."""
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(BYTEBPE))


@pytest.fixture(scope="module")
def long_texts(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """Twelve documents of 20K-200K characters (1.1 MB), from the shared corpora."""
    path = real_shapes.long_documents(tmp_path_factory.mktemp("long") / "long.txt")
    return path.read_text(encoding="utf-8").splitlines()


def test_long_documents_give_64_kb_of_prefixes_from_every_place(long_texts: list[str]) -> None:
    total = sum(len(t.encode()) + 1 for t in long_texts)
    sample = Sample(16, total, cuttable=True)
    taken = _run(sample, long_texts)
    assert MIN_SAMPLE_BYTES <= sample.sent_bytes < MIN_SAMPLE_BYTES + 16 * 64
    checked = sorted({number for number, _, _ in taken})  # 16 places over 12 documents: nearly all of them
    assert len(checked) >= 11 and checked[0] == 0 and checked[-1] >= len(long_texts) - 2
    for number, piece, whole in taken:
        document = long_texts[number]
        assert not whole and len(piece) <= MAX_PREFIX_CHARS and document.startswith(piece)
        # the cut is a space that follows a non-space: where the byte-level split restarts
        assert document[len(piece)] == " " and not _is_space(piece[-1])


def test_a_prefix_has_the_first_ids_of_its_document(tmp_path: Path, hf_tokenizer) -> None:
    """What the verifier relies on, checked with ``tokenizers`` on real long documents."""
    texts = real_shapes.long_documents(tmp_path / "docs.txt", count=4, low=20_000, high=30_000).read_text(
        encoding="utf-8"
    )
    documents = texts.splitlines()
    sample = Sample(4, len(texts.encode()), cuttable=True)
    taken = _run(sample, documents)
    assert len(taken) == 4 and not any(whole for _, _, whole in taken)
    whole_ids = [e.ids for e in hf_tokenizer.encode_batch(documents, add_special_tokens=False)]
    for number, piece, _ in taken:
        ids = hf_tokenizer.encode(piece, add_special_tokens=False).ids
        assert ids == whole_ids[number][: len(ids)]


def test_lines_that_cannot_be_cut_are_checked_whole_and_an_input_under_64_kb_entirely() -> None:
    lines = [f"line {n} " + "word " * (n % 40) for n in range(400)]  # ~40 KB
    total = sum(len(line) + 1 for line in lines)
    sample = Sample(8, total, cuttable=False)
    taken = _run(sample, lines)
    assert all(whole for _, _, whole in taken)
    assert sorted(number for number, _, _ in taken) == list(range(len(lines)))


def test_a_place_whose_documents_cannot_be_cut_passes_its_share_on() -> None:
    """Four places over four batches of 45 KB: short lines, a Chinese paragraph with no space
    (no safe cut: whole or nothing), another, short lines. The shares of the two middle places
    are taken by the last one."""
    lines = [f"line {n:04d} of a few words; {'x' * 20}" for n in range(1000)]  # 45 bytes each
    chinese = "字" * 15_000  # 45 KB
    batches = [lines, [chinese], [chinese], lines]
    sample = Sample(4, 4 * 45_000, cuttable=False, min_bytes=4 * 4096)
    first, *middle, last = [sum(p.size for p in sample.pieces(b, 45_000 * (k + 1))) for k, b in enumerate(batches)]
    assert 4096 - 45 < first <= 4096 and middle == [0, 0]
    assert 4 * 4096 - first - 4 * 45 < last <= 4 * 4096 - first  # (the last place is cut in 4 windows)


def test_the_first_piece_is_taken_whole_if_nothing_can_be_cut() -> None:
    """A run never checks nothing: a document with no safe cut is checked whole at the first
    place when nothing fits its share (up to 256K characters)."""
    texts = ["字" * 30_000, "字" * 25_000, "字" * 300_000]
    sample = Sample(1, sum(len(t.encode()) + 1 for t in texts), cuttable=True)
    assert _run(sample, texts) == [(1, texts[1], True)]  # the shortest there


def test_standard_input_takes_the_minimum_from_the_first_documents(long_texts: list[str]) -> None:
    sample = Sample(16, 0, cuttable=True)  # total unknown
    first = sample.pieces(long_texts[:3], 0)
    assert sample.sent_bytes >= MIN_SAMPLE_BYTES and {p.index for p in first} == {0, 1, 2}
    assert sample.pieces(long_texts[3:], 0) == []  # the time budget alone would add more


def test_the_time_budget_adds_more_in_the_share_of_the_run_the_checker_may_take(long_texts: list[str]) -> None:
    """The checker's speed comes from its answers (seconds per byte); the budget is TIME_SHARE
    (8 %) of the time since the encoding started, less the checker's start-up, at that speed. A
    fake checker answers in "0.1 s per 100 KB" (1 MB/s) after a start-up of 0.1 s, and a fake
    clock says 3.75 s have passed: the budget is (0.08 x 3.75 - 0.1) s x 1 MB/s = 200 KB."""

    class Timed(InlineChecker):
        def __init__(self) -> None:
            super().__init__({})

        def send(self, texts: list[str]) -> None:
            size = sum(len(t.encode()) for t in texts)
            build = 0.0 if self.reference else 0.1  # the first answer says the start-up took 0.1 s
            self.reference = True
            self._answers.append(([list(t.encode()) for t in texts], size / 1e6, build))

    now = [0.0]
    total = sum(len(t.encode()) + 1 for t in long_texts)
    verifier = Verifier(
        "fast", {}, 16, total, [SimpleNamespace(path="docs")], inline=Timed(), cuttable=True, clock=lambda: now[0]
    )
    items = [SimpleNamespace(text=t, source=0, line=n + 1) for n, t in enumerate(long_texts)]
    ids = [list(t.encode()) for t in long_texts]
    half = len(items) // 2
    verifier.check(items[:half], ids[:half], total // 2)
    first = verifier.sample.sent_bytes
    assert first < MIN_SAMPLE_BYTES  # half the places, and no speed known yet
    now[0] = (0.2 + 0.1) / TIME_SHARE  # the run's CPU at which the budget allows 0.3 s of checking
    verifier.check(items[half:], ids[half:], total)
    verifier.sync()
    # one piece per document of the batch (six): the budget binds, not the minimum
    assert first + 100_000 < verifier.bytes_checked <= 200_000 + MAX_PREFIX_CHARS
    assert verifier.done == verifier.sent


def test_a_wrong_id_in_a_checked_prefix_stops_the_run_and_names_the_document(tmp_path: Path, hf_tokenizer) -> None:
    """With the real reference (in this process, as on a cluster block) against ``tokenizers``'
    ids: the right ids pass, one id changed inside the first prefix is named."""
    documents = (
        real_shapes.long_documents(tmp_path / "d.txt", count=3, low=20_000, high=25_000)
        .read_text(encoding="utf-8")
        .splitlines()
    )
    ids = [e.ids for e in hf_tokenizer.encode_batch(documents, add_special_tokens=False)]
    items = [SimpleNamespace(text=t, source=0, line=n + 1) for n, t in enumerate(documents)]
    total = sum(len(t.encode()) + 1 for t in documents)
    document = json.loads(BYTEBPE.read_text(encoding="utf-8"))
    checker = InlineChecker(document)

    def verifier() -> Verifier:
        return Verifier("fast", document, 3, total, [SimpleNamespace(path="d.txt")], inline=checker, cuttable=True)

    good = verifier()
    good.check(items, ids, total)
    good.sync()
    assert good.done == 3 and good.bytes_checked >= 3 * 20_000 * 0.5
    wrong = [list(row) for row in ids]
    wrong[1][10] += 1
    bad = verifier()
    with pytest.raises(ToktoolsError, match=r"engine fast disagrees with the reference on d\.txt, document at line 2"):
        bad.check(items, wrong, total)
        bad.sync()
