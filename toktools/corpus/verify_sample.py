"""What ``--verify`` checks: a byte budget cut from documents spread over the input, priced in
the time of the run (issue 23).

The reference engine is pure Python, and checking whole documents made it the slowest part of
a run on long documents (16 documents of 40K characters: 1.9x the time of ``--verify 0``). So
the sample is counted in bytes, not documents:

* **the minimum**: at least :data:`MIN_SAMPLE_BYTES` (64 KB, or the whole input when it is
  smaller), cut from ``places`` marks spread evenly over the input bytes, each mark's share
  taken from the documents there (``--verify N`` gives N places, so at least N documents when
  they can be cut or are short enough; see below);
* **the time budget**: more as the run goes, as long as the checker's CPU time stays within
  :data:`TIME_SHARE` (5 %) of the CPU time the run's process has spent since encoding began
  (all its threads: gigatoken's and tiktoken's pools too). The checker says how much CPU each
  answer took, which gives its speed on this tokenizer, this text and this machine, so the
  budget holds whatever the engine beside it and however loaded the machine (wall time would
  count the waits of a busy machine as work). 5 %, so that with the checker's start-up and the
  main process's own part (sending the texts, comparing) verifying costs at most ~15 % (the
  caller passes the bytes the budget allows so far): at 8 %, 100 MB of long documents on
  gigatoken (a 1.3 s run) measured 1.19x the CPU of ``--verify 0`` on a quiet machine, at 4 %
  1.09x.

A long document is checked on a prefix that ends where the pre-tokeniser provably restarts: the
cut :func:`toktools.corpus.documents.safe_cut` that corpus encoding uses to split long documents
into segments, when :func:`toktools.engines.analysis.cuttable` accepts the tokenizer. The ids of
the prefix are then the first ids of the document's. A document that cannot be cut (no such
place in it, or a tokenizer that allows none, or an output line of the text formats) is checked
whole when it fits the share of its place; a place where nothing fits passes its share on to
the next one, and the very first piece is taken whole if need be (up to
:data:`MAX_WHOLE_CHARS`), so a run never checks nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from toktools.corpus.documents import safe_cut

#: The smallest sample: 64 KB (or the whole input, when smaller).
MIN_SAMPLE_BYTES = 64 << 10
#: Each place takes at least this much of the minimum (many places: a larger minimum).
MIN_PLACE_BYTES = 1 << 10
#: The share of the run's CPU time the checker may take.
TIME_SHARE = 0.05
#: A prefix is at most this long (characters), so that every request stays small.
MAX_PREFIX_CHARS = 64 << 10
#: A document that cannot be cut is checked whole only up to this many characters.
MAX_WHOLE_CHARS = 1 << 18


def minimum_bytes(places: int) -> int:
    """The smallest sample for ``places`` places (``--verify N``): 64 KB, or 1 KB per place."""
    return max(MIN_SAMPLE_BYTES, places * MIN_PLACE_BYTES)


@dataclass(frozen=True)
class Piece:
    """One text to check: item ``index`` of the batch, whole or a prefix of it (``size`` bytes)."""

    index: int
    text: str
    whole: bool
    size: int


def utf8_size(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", errors="surrogatepass"))


class Sample:
    """Decides, batch by batch, which texts are checked (see the module docstring).

    ``places``: the marks the minimum is spread over; ``total``: the input's bytes (0 when
    unknown, as on standard input: the minimum is then taken from the first documents);
    ``cuttable``: a document may be checked on a prefix that ends at a safe cut;
    ``min_bytes``: the minimum (default :func:`minimum_bytes` of ``places``)."""

    def __init__(self, places: int, total: int, *, cuttable: bool, min_bytes: int | None = None) -> None:
        self.places = max(1, places)
        self.min_bytes = minimum_bytes(self.places) if min_bytes is None else min_bytes
        self.place_bytes = max(1, -(-self.min_bytes // self.places))
        self.marks = [total * (k + 0.5) / self.places for k in range(self.places)] if total else None
        self.next_mark = 0
        self.cuttable = cuttable
        self.sent_bytes = 0
        self.sent_pieces = 0
        self._due = 0  # bytes of the minimum due at the marks reached so far

    def pieces(self, texts: Sequence[str], bytes_done: int, budget_bytes: float = 0.0) -> list[Piece]:
        """The pieces of this batch (``texts``, read up to ``bytes_done`` of the input) to check.
        ``budget_bytes``: what the time budget allows in all so far (0: not known yet)."""
        reached = self._reached(bytes_done)
        self._due += reached * self.place_bytes
        want = max(self._due - self.sent_bytes, int(budget_bytes) - self.sent_bytes, reached * self.place_bytes)
        if not texts or (not reached and want < self.place_bytes):
            return []
        windows = min(len(texts), max(reached, -(-want // self.place_bytes)))
        quota = -(-want // windows)
        step = len(texts) / windows
        picked: list[Piece] = []
        for k in range(windows):
            window = range(int(k * step), int((k + 1) * step) if k + 1 < windows else len(texts))
            picked += self._fill(texts, window, quota, first=not self.sent_pieces and not picked)
        self.sent_bytes += sum(p.size for p in picked)
        self.sent_pieces += len(picked)
        return picked

    def _reached(self, bytes_done: int) -> int:
        """Marks passed since the last batch (every mark at once when the total is unknown)."""
        if self.marks is None:
            reached, self.next_mark = self.places - self.next_mark, self.places
            return reached
        start = self.next_mark
        while self.next_mark < len(self.marks) and self.marks[self.next_mark] <= bytes_done:
            self.next_mark += 1
        return self.next_mark - start

    def _fill(self, texts: Sequence[str], window: range, quota: int, first: bool) -> list[Piece]:
        """Pieces from the start of ``window`` worth about ``quota`` bytes: whole texts that fit,
        then a prefix of the first one that does not (if it can be cut)."""
        pieces: list[Piece] = []
        for index in window:
            if quota <= 0:
                break
            text = texts[index]
            if not text:
                continue
            if len(text) <= quota:
                size = utf8_size(text)
                if size <= quota:
                    pieces.append(Piece(index, text, True, size))
                    quota -= size
                    continue
            if self.cuttable:
                cut = safe_cut(text, min(quota, MAX_PREFIX_CHARS))
                if cut > 0:
                    prefix = text[:cut]
                    pieces.append(Piece(index, prefix, False, utf8_size(prefix)))
                    break
        if not pieces and first:  # never check nothing: the shortest text there, whole
            candidates = [i for i in window if texts[i] and len(texts[i]) <= MAX_WHOLE_CHARS]
            if candidates:
                index = min(candidates, key=lambda i: len(texts[i]))
                pieces.append(Piece(index, texts[index], True, utf8_size(texts[index])))
        return pieces
