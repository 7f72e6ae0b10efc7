"""The places where tokenizers disagree most (``compare --corpus --show N``): windows of at
most ±40 characters, found in the streaming pass with bounded memory.

Definitions (one each, also in ``compare --help``):

* a **differing boundary** is a character position where some but not all tokenizers end a
  token inside a word (whitespace-only tokens do not count), or where some but not all start a
  byte piece (a token holding part of a character's UTF-8 bytes). Each counts once.
* a **place** is a stretch of at most 81 characters of one document: the window that starts at a
  differing boundary and holds the most differing boundaries in the next 81 characters (its
  **score**), then centred on the first and last of them and cut at most 40 characters either
  side of that centre (never past the document). Where every tokenizer has a boundary near the
  edge, the window is narrowed to it, so edge tokens are whole; otherwise tokens crossing the
  edge are shown clipped.
* places are ranked by score, then the earlier position, then the earlier document; two places
  of one document never overlap. Chinese needs no spaces: positions are characters.

Each chunk keeps its ``show`` best places with every tokenizer's tokens inside them (ids and
window-relative offsets, read from the chunk's encodings, so they are exact), and the corpus
pass keeps the ``show`` best of all chunks: memory is ``show`` windows, never whole documents.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "RADIUS",
    "WIDTH",
    "LongMarks",
    "StreamedMarks",
    "WindowPicker",
    "Place",
    "PlaceCandidate",
    "chunk_places",
    "document_places",
    "long_document_places",
    "ShownPlace",
    "render_places_plain",
    "render_places_rich",
    "shown_places",
]

#: Characters either side of a place's centre.
RADIUS = 40
#: The widest place: ±RADIUS around one character.
WIDTH = 2 * RADIUS + 1

#: token ids and window-relative character offsets of one tokenizer.
WindowTokens = tuple[list[int], list[tuple[int, int]]]


@dataclass
class Place:
    """A window of one document (``start``..``end`` in its characters) and every tokenizer's
    tokens inside it, offsets relative to the window (tokens crossing its edge are clipped).
    ``first``: its first differing boundary; of two places of one document with the same score,
    the one with the earlier ``first`` ranks higher (``<`` is reversed for ``heapq.nlargest``)."""

    start: int
    end: int
    text: str
    differing: int
    first: int
    tokens: list[WindowTokens] = field(default_factory=list)

    def __lt__(self, other: Place) -> bool:
        return self.first > other.first


#: (score, 0, -document index, (source, line), place): the largest wins; on a tie the earlier
#: document, then the earlier place in it (the same shape as the candidates the cluster path
#: renumbers).
PlaceCandidate = tuple[int, int, int, tuple[str, int], Place]


@dataclass
class _Pick:
    score: int
    document: int  # index in the chunk
    start: int  # window, in the document's characters
    end: int
    first: int  # first and last differing boundary inside it
    last: int


def _window(first: int, last: int, length: int) -> tuple[int, int]:
    centre = (first + last) // 2
    return max(0, centre - RADIUS), min(length, centre + RADIUS + 1)


def _greedy(
    order: Any, firsts: Any, lasts: Any, scores: Any, doc_of: Any, base: Sequence[int], lengths: Sequence[int], n: int
) -> list[_Pick]:
    """Walk window starts best first; keep a window unless it overlaps one kept in its document.
    ``firsts``: each window's start (its first differing boundary), ``lasts`` its last one."""
    picks: list[_Pick] = []
    kept: dict[int, list[tuple[int, int]]] = {}
    for i in order:
        i = int(i)
        if not scores[i]:
            break
        doc = int(doc_of[i])
        first, last = int(firsts[i]) - base[doc], int(lasts[i]) - base[doc]
        start, end = _window(first, last, lengths[doc])
        if any(start < e and s < end for s, e in kept.get(doc, ())):
            continue
        kept.setdefault(doc, []).append((start, end))
        picks.append(_Pick(int(scores[i]), doc, start, end, first, last))
        if len(picks) == n:
            break
    return picks


def _pick_arrays(weights: Any, base: Any, n: int) -> list[_Pick]:
    """The ``n`` best non-overlapping windows of a chunk, from the weight of each character
    position on the chunk's axis (the documents end to end, ``base`` where each starts)."""
    import numpy as np

    positions = np.flatnonzero(weights)
    if not len(positions) or n <= 0:
        return []
    doc_of = np.searchsorted(base, positions, side="right") - 1
    limit = np.minimum(positions + WIDTH, base[doc_of + 1])
    ends = np.searchsorted(positions, limit, side="left")
    cumulative = np.zeros(len(positions) + 1, dtype=np.int64)
    np.cumsum(weights[positions], out=cumulative[1:])
    scores = cumulative[ends] - cumulative[np.arange(len(positions))]
    count = len(positions)
    key = scores * (count + 1) + (count - np.arange(count))  # unique: best score, then earliest
    wanted = min(count, n * (3 * WIDTH + 1))
    top = np.argpartition(-key, wanted - 1)[:wanted] if wanted < count else np.arange(count)
    order = top[np.argsort(-key[top], kind="stable")]
    lengths = np.diff(base).tolist()
    starts = base.tolist()
    lasts = positions[ends - 1]
    picks = _greedy(order, positions, lasts, scores, doc_of, starts, lengths, n)
    if len(picks) < n and wanted < count:  # pragma: no cover - the bound above makes this unreachable
        order = np.argsort(-key, kind="stable")
        picks = _greedy(order, positions, lasts, scores, doc_of, starts, lengths, n)
    return picks


#: Characters of a long document whose window starts are scored at once (:class:`WindowPicker`).
_PICK_BLOCK = 1 << 20


class WindowPicker:
    """:func:`_pick_arrays` for one long document whose weights come a block at a time, in
    order: each block's windows are scored as soon as the next ``WIDTH`` weights are there, and
    only the ``n * (3 * WIDTH + 1)`` best windows so far are kept (the ones :func:`_pick_arrays`
    walks). Memory is a block and those windows, never an array over the document."""

    def __init__(self, length: int, n: int) -> None:
        import numpy as np

        self.length, self.n = length, n
        self.wanted = n * (3 * WIDTH + 1)
        self.count = 0  # windows in all (positions with a weight)
        self.firsts = self.lasts = self.scores = np.zeros(0, dtype=np.int64)
        self.done = 0  # window starts before this are scored
        self.carry = np.zeros(0, dtype=np.int64)  # weights from ``done`` on, not yet scored

    def add(self, weights: Any) -> None:
        """The weights of the next characters (after those already added)."""
        import numpy as np

        window = np.concatenate([self.carry, weights.astype(np.int64)])
        reached = self.done + len(window)
        final = reached >= self.length
        scored = len(window) if final else max(0, len(window) - WIDTH)  # starts with all their weights
        if scored:
            self._score(window, scored)
        self.carry = window[scored:]
        self.done += scored

    def _score(self, window: Any, scored: int) -> None:
        import numpy as np

        local = np.flatnonzero(window)
        inside = int(np.searchsorted(local, scored))
        if not inside:
            return
        a = self.done
        self.count += inside
        limit = np.minimum(local[:inside] + WIDTH, self.length - a)
        ends = np.searchsorted(local, limit, side="left")
        cumulative = np.zeros(len(local) + 1, dtype=np.int64)
        np.cumsum(window[local], out=cumulative[1:])
        firsts = np.concatenate([self.firsts, local[:inside] + a])
        lasts = np.concatenate([self.lasts, local[ends - 1] + a])
        scores = np.concatenate([self.scores, cumulative[ends] - cumulative[:inside]])
        if len(firsts) > self.wanted:  # the best: highest score, then the earliest start
            key = scores * (self.length + 1) - firsts
            keep = np.sort(np.argpartition(key, len(firsts) - self.wanted)[-self.wanted :])
            firsts, lasts, scores = firsts[keep], lasts[keep], scores[keep]
        self.firsts, self.lasts, self.scores = firsts, lasts, scores

    def picks(self) -> list[_Pick]:
        """The best non-overlapping windows, once every weight is added."""
        import numpy as np

        if self.n <= 0 or not self.count:
            return []
        order = np.lexsort((self.firsts, -self.scores))
        doc_of = np.zeros(len(order), dtype=np.int64)
        # n places whenever there are: each kept window rules out fewer than 3 * WIDTH + 1 others
        return _greedy(order, self.firsts, self.lasts, self.scores, doc_of, [0], [self.length], self.n)


def _pick_long(weights: Any, n: int) -> list[_Pick]:
    """:func:`_pick_arrays` for one document's weights, scored :data:`_PICK_BLOCK` at a time."""
    picker = WindowPicker(len(weights), n)
    for a in range(0, len(weights), _PICK_BLOCK):
        picker.add(weights[a : a + _PICK_BLOCK])
    return picker.picks()


def _pick_lists(weights: dict[int, int], length: int, n: int) -> list[_Pick]:
    """:func:`_pick_arrays` for one document without numpy (``position -> weight``)."""
    positions = sorted(p for p, w in weights.items() if w)
    if not positions or n <= 0:
        return []
    cumulative = [0]
    for p in positions:
        cumulative.append(cumulative[-1] + weights[p])
    ends, j = [], 0
    for i, p in enumerate(positions):
        j = max(j, i)
        while j < len(positions) and positions[j] < min(p + WIDTH, length):
            j += 1
        ends.append(j)
    scores = [cumulative[ends[i]] - cumulative[i] for i in range(len(positions))]
    order = sorted(range(len(positions)), key=lambda i: (-scores[i], i))
    lasts = [positions[e - 1] for e in ends]
    return _greedy(order, positions, lasts, scores, [0] * len(positions), [0], [length], n)


def _snap(start: int, end: int, first: int, last: int, spans: Sequence[tuple[Any, Any]]) -> tuple[int, int]:
    """Narrow ``start..end`` to where no tokenizer's token crosses the edge, if that keeps the
    differing boundaries ``first..last``; else leave that edge as it is."""
    for _ in range(8):
        moved = start
        for starts, ends in spans:
            crossing = [e for s, e in zip(starts, ends) if s < moved < e]
            if crossing:
                moved = max(crossing)
        if moved == start or moved > first:
            break
        start = moved
    for _ in range(8):
        moved = end
        for starts, ends in spans:
            crossing = [s for s, e in zip(starts, ends) if s < moved < e]
            if crossing:
                moved = min(crossing)
        if moved == end or moved <= last:
            break
        end = moved
    return start, end


def _place(
    text: str, pick: _Pick, per_tokenizer: Sequence[tuple[Sequence[int], Sequence[int], Sequence[int]]]
) -> Place:
    """The picked window of ``text`` with each tokenizer's tokens (``ids, starts, ends`` in the
    document's characters, sorted by start or not) clipped to it."""
    near = []
    for ids, starts, ends in per_tokenizer:
        chosen = [k for k, (s, e) in enumerate(zip(starts, ends)) if s < pick.end + WIDTH and e > pick.start - WIDTH]
        near.append(([ids[k] for k in chosen], [starts[k] for k in chosen], [ends[k] for k in chosen]))
    start, end = _snap(pick.start, pick.end, pick.first, pick.last, [(s, e) for _, s, e in near])
    tokens: list[WindowTokens] = []
    for ids, starts, ends in near:
        inside = [
            (i, (max(s, start) - start, min(e, end) - start))
            for i, s, e in zip(ids, starts, ends)
            if (e > start and s < end) or (s == e and start <= s < end)
        ]
        tokens.append(([i for i, _ in inside], [o for _, o in inside]))
    return Place(start, end, text[start:end], pick.score, pick.first, tokens)


def _distinct_sorted(values: Any) -> Any:
    """The distinct values of a sorted array (``np.unique`` without its sort)."""
    import numpy as np

    if len(values) < 2:
        return values
    return np.concatenate([values[:1], values[1:][values[1:] != values[:-1]]])


def marks_weights(marks: Sequence[Any], characters: int, tokenizers: int) -> Any:
    """Per character of a chunk, its differing boundaries (0, 1 or 2), from the
    :class:`~toktools.analysis.chunk_tally.Marks` of each of ``tokenizers`` tokenizers."""
    import numpy as np

    k = tokenizers
    width = characters + 1
    seen = np.bincount(np.concatenate([m.ends for m in marks]).astype(np.int64), minlength=characters)
    weights = ((seen > 0) & (seen < k)).astype(np.int64)
    piece_starts = [_distinct_sorted(m.cuts // width) for m in marks]  # keys are sorted: so are starts
    if any(len(p) for p in piece_starts):
        started = np.bincount(np.concatenate(piece_starts).astype(np.int64), minlength=characters)
        weights += (started > 0) & (started < k)
    return weights[:characters]


def chunk_places(
    chunk: Any, texts: Sequence[str], marks: Sequence[Any], spans: Sequence[tuple[Any, Any, Any, Any]], n: int
) -> list[tuple[int, Place]]:
    """The ``n`` best places of a chunk counted with arrays
    (:mod:`toktools.analysis.chunk_tally`): ``(document index in the chunk, place)``. ``marks``:
    each tokenizer's token ends and byte-piece ranges; ``spans``: its ``(ids, counts, starts,
    ends)`` on the chunk's axis."""
    import numpy as np

    if n <= 0 or len(marks) < 2 or not chunk.characters:
        return []
    picks = _pick_arrays(marks_weights(marks, chunk.characters, len(marks)), chunk.base, n)
    out = []
    texts_base = chunk.base
    token_base = [np.concatenate([[0], np.cumsum(counts)]) for _, counts, _, _ in spans]
    for pick in picks:
        doc = pick.document
        shift = int(texts_base[doc])
        per_tokenizer = []
        for (ids, _, starts, ends), bounds in zip(spans, token_base):
            lo, hi = int(bounds[doc]), int(bounds[doc + 1])
            s, e = starts[lo:hi] - shift, ends[lo:hi] - shift
            near = (s < pick.end + WIDTH) & (e > pick.start - WIDTH)
            per_tokenizer.append((ids[lo:hi][near].tolist(), s[near].tolist(), e[near].tolist()))
        out.append((doc, _place(texts[doc], pick, per_tokenizer)))
    return out


class LongMarks:
    """The boundaries of a document counted in pieces (longer than a segment,
    :mod:`toktools.corpus.long_documents`), every tokenizer's pieces added in turn: per
    character, how many tokenizers end a token there and how many start a byte piece there
    (two small counters per character, never the tokens)."""

    def __init__(self, length: int, tokenizers: int) -> None:
        import numpy as np

        kind = np.uint8 if tokenizers < 255 else np.uint32
        self.tokenizers = tokenizers
        self.ends = np.zeros(length, dtype=kind)
        self.pieces = np.zeros(length, dtype=kind)

    def add(self, start: int, lasts: Sequence[int], covered: set[tuple[int, int]]) -> None:
        """One piece of one tokenizer (what :meth:`~toktools.analysis.segstats.Tally.add_piece`
        returned), the piece starting at character ``start``."""
        import numpy as np

        if len(lasts):
            self.ends[np.unique(np.asarray(lasts, dtype=np.int64)) + start] += 1
        if covered:
            self.pieces[np.array(sorted({s for s, _ in covered}), dtype=np.int64) + start] += 1

    def add_group(self, start: int, marks: Sequence[Any], characters: int) -> None:
        """Some tokenizers' :class:`~toktools.analysis.chunk_tally.Marks` of a chunk of pieces
        (``characters`` long) that starts at character ``start``."""
        import numpy as np

        for each in marks:
            if len(each.ends):
                self.ends[each.ends + start] += 1
            if len(each.cuts):
                self.pieces[np.unique(each.cuts // (characters + 1)) + start] += 1

    def weights(self, start: int = 0, end: int | None = None) -> Any:
        """Per character from ``start`` to ``end``, the differing boundaries there (0, 1 or 2)."""
        import numpy as np

        k = self.tokenizers
        ends, pieces = self.ends[start:end], self.pieces[start:end]
        weights = ((ends > 0) & (ends < k)).astype(np.uint8)
        weights += (pieces > 0) & (pieces < k)
        return weights

    def picks(self, n: int) -> list[_Pick]:
        """The document's ``n`` best places (:func:`_pick_arrays`), its weights made a block at a
        time."""
        picker = WindowPicker(len(self.ends), n)
        for a in range(0, len(self.ends), _PICK_BLOCK):
            picker.add(self.weights(a, a + _PICK_BLOCK))
        return picker.picks()


class StreamedMarks:
    """The boundaries of a document counted in pieces by tokenizers that all count the same
    chunks of pieces together (one cut for all): each chunk's weights, complete once every
    tokenizer's marks of it are in, go to a :class:`WindowPicker` at once, so nothing is kept
    per character of the document."""

    def __init__(self, length: int, tokenizers: int, n: int) -> None:
        self.tokenizers = tokenizers
        self.picker = WindowPicker(length, n)
        self.n = n

    def add_group(self, start: int, marks: Sequence[Any], characters: int) -> None:
        """Every tokenizer's :class:`~toktools.analysis.chunk_tally.Marks` of the next chunk of
        pieces (``characters`` long, starting at character ``start``)."""
        assert start == self.picker.done + len(self.picker.carry) and len(marks) == self.tokenizers
        self.picker.add(marks_weights(marks, characters, self.tokenizers))

    def picks(self, n: int) -> list[_Pick]:
        assert n == self.n
        return self.picker.picks()


def long_document_places(
    text: str,
    tokenizers: Sequence[Any],
    marks: LongMarks | StreamedMarks,
    n: int,
    encoders: Sequence[Callable[[str], tuple[list[int], list[int], list[int]]]] | None = None,
    cuttable: Sequence[bool] | None = None,
) -> list[Place]:
    """The ``n`` best places of a document counted in pieces. Each tokenizer encodes only the
    stretch around a place between two places where it may be cut (the rule its pieces were cut
    by, :func:`toktools.corpus.documents.safe_cut`), so the tokens are the document's own; a
    tokenizer that cannot be cut encodes the document once more, as its one piece (once for all
    places). ``encoders``: per tokenizer, a stretch -> ``(ids, starts, ends)`` giving the same
    tokens as its ``encode`` (:func:`toktools.analysis.long_tally.stretch_encoder`);
    ``cuttable``: :func:`~toktools.corpus.long_documents.tokenizer_cuttable` of each, if known."""

    from toktools.corpus.documents import _first_cut, safe_cut
    from toktools.corpus.long_documents import tokenizer_cuttable

    picks = marks.picks(n)
    if not picks:
        return []
    per_pick: list[list[tuple[list[int], list[int], list[int]]]] = [[] for _ in picks]
    for k, tokenizer in enumerate(tokenizers):
        cut = cuttable[k] if cuttable is not None else tokenizer_cuttable(tokenizer)
        encode = encoders[k] if encoders is not None else _reference_stretch(tokenizer)
        stretches: dict[tuple[int, int], list[int]] = {}  # a stretch encoded once for its places
        for index, pick in enumerate(picks):
            low, high = 0, len(text)
            if cut:
                low = safe_cut(text, max(0, pick.start - WIDTH))
                high = _first_cut(text, min(len(text), pick.end + WIDTH), None) or len(text)
            stretches.setdefault((low, high), []).append(index)
        for (low, high), indices in stretches.items():
            ids, starts, ends = encode(text if (low, high) == (0, len(text)) else text[low:high])
            for index in indices:
                pick = picks[index]
                near = [
                    j
                    for j, (s, e) in enumerate(zip(starts, ends))
                    if s + low < pick.end + WIDTH and e + low > pick.start - WIDTH
                ]
                per_pick[index].append(
                    ([ids[j] for j in near], [starts[j] + low for j in near], [ends[j] + low for j in near])
                )
            del ids, starts, ends
    return [_place(text, pick, found) for pick, found in zip(picks, per_pick)]


def _reference_stretch(tokenizer: Any) -> Callable[[str], tuple[list[int], list[int], list[int]]]:
    def encode(stretch: str) -> tuple[list[int], list[int], list[int]]:
        encoding = tokenizer.encode(stretch, add_special_tokens=False)
        return list(encoding.ids), [s for s, _ in encoding.offsets], [e for _, e in encoding.offsets]

    return encode


def document_places(
    text: str,
    found: Sequence[tuple[Sequence[int], set[tuple[int, int]]]],
    encoded: Sequence[tuple[Sequence[int], Sequence[tuple[int, int]]]],
    n: int,
) -> list[Place]:
    """The ``n`` best places of one document without arrays: ``found`` is what
    :meth:`toktools.analysis.segstats.Tally.add` returned for each tokenizer (token ends, byte
    piece ranges), ``encoded`` each tokenizer's ``(ids, offsets)``."""
    if n <= 0 or len(found) < 2:
        return []
    k = len(found)
    ends = Counter(p for lasts, _ in found for p in set(lasts))
    pieces = Counter(p for _, covered in found for p in {s for s, _ in covered})
    weights: Counter[int] = Counter()
    for counts in (ends, pieces):
        for position, count in counts.items():
            if count < k:
                weights[position] += 1
    picks = _pick_lists(weights, len(text), n)
    per_tokenizer = [(list(ids), [s for s, _ in offsets], [e for _, e in offsets]) for ids, offsets in encoded]
    return [_place(text, pick, per_tokenizer) for pick in picks]


@dataclass
class ShownPlace:
    """A place where the tokenizers disagree, aligned: ``start``..``end`` are its characters in
    the document at ``source``, ``line``; ``differing`` its score."""

    source: str
    line: int
    start: int
    end: int
    differing: int
    alignment: Any

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "line": self.line,
            "start": self.start,
            "end": self.end,
            "differing": self.differing,
            "alignment": self.alignment.to_dict(),
        }


def shown_places(candidates: Sequence[PlaceCandidate], tokenizers: Sequence[tuple[str, Any]]) -> list[ShownPlace]:
    """The kept places, each aligned (:func:`toktools.analysis.alignment.align_encoded`) from the
    tokens the pass kept: nothing is encoded again."""
    from types import SimpleNamespace

    from toktools.analysis.alignment import align_encoded

    out = []
    for differing, _, _, (source, line), place in candidates:
        encoded = [
            (name, tok, SimpleNamespace(ids=ids, offsets=offsets, tokens=[tok.id_to_token(i) or "" for i in ids]))
            for (name, tok), (ids, offsets) in zip(tokenizers, place.tokens)
        ]
        out.append(ShownPlace(source, line, place.start, place.end, differing, align_encoded(place.text, encoded)))
    return out


def _boxes(text: str, spans: Sequence[Any]) -> list[tuple[str, str]]:
    """One row's tokens as ``(shown text, kind)``: kind is ``unk``, ``piece`` (part of a
    character) or ``token``; the text between tokens (whitespace no token holds) is ``gap``.
    Walked in bytes, so the spaces a byte-level token owns (GPT-2's ``Ġun``) are inside its box."""
    from toktools.analysis.token_view import escape_text

    data = text.encode("utf-8")
    out: list[tuple[str, str]] = []
    cursor = 0
    for span in spans:
        start, end = span.byte_start, span.byte_end
        if start > cursor:
            out.append((escape_text(data[cursor:start].decode("utf-8", "replace")), "gap"))
        if span.unknown:
            out.append(("?" + escape_text(data[start:end].decode("utf-8", "replace")) + "?", "unk"))
        else:
            shown = span.readable if span.readable.strip() else span.readable.replace(" ", "␣")
            out.append((shown, "piece" if span.partial else "token"))
        cursor = max(cursor, end)
    if cursor < len(data):
        out.append((escape_text(data[cursor:].decode("utf-8", "replace")), "gap"))
    return out


def _title(place: ShownPlace, with_source: bool) -> str:
    where = f"{place.source}, line {place.line}" if with_source else f"line {place.line}"
    return f"{where}, characters {place.start + 1}-{place.end}: {place.differing} boundaries differ"


LEGEND = (
    "legend: |token| boxes per tokenizer (| cut| a space inside the bars belongs to the token); "
    "␣ a token of spaces only; <E6 88> byte piece (part of a character); ?x? unknown (UNK)"
)


def _rows(places: Sequence[ShownPlace], with_source: bool) -> list[list[tuple[str, str]]]:
    """Every output line as ``(text, kind)`` segments: per place a title, the text, one row of
    token boxes per tokenizer, a blank line between places; the legend last. That is at most
    ``len(places) × (tokenizers + 3)`` lines, whatever the documents' length."""
    from toktools.analysis.token_view import escape_text

    lines: list[list[tuple[str, str]]] = []
    for index, place in enumerate(places):
        rows = place.alignment.rows
        width = max([len("text"), *(len(row.name) for row in rows)])
        if index:
            lines.append([])
        lines.append([(_title(place, with_source), "title")])
        lines.append([("text".ljust(width) + " │ ", "name"), (escape_text(place.alignment.text), "text")])
        for row in rows:
            segments: list[tuple[str, str]] = [(row.name.ljust(width) + " │ ", "name")]
            colour = 0
            for shown, kind in _boxes(place.alignment.text, row.spans):
                if kind == "gap":  # outside the bars: no token holds it
                    segments.append((shown, "gap"))
                    continue
                if segments[-1][1] != "bar":
                    segments.append(("|", "bar"))
                segments.append((shown, kind if kind != "token" else f"token{colour % 2}"))
                segments.append(("|", "bar"))
                colour += 1
            lines.append(segments)
    if places:
        lines.append([(LEGEND, "legend")])
    return lines


def render_places_plain(places: Sequence[ShownPlace], with_source: bool = False) -> str:
    """The places as plain text, ``|`` between token boxes (:func:`_rows` gives the bound)."""
    return "".join("".join(text for text, _ in line) + "\n" for line in _rows(places, with_source))


_STYLE = {
    "title": "bold",
    "name": "bold cyan",
    "bar": "dim",
    "token0": "black on bright_cyan",
    "token1": "black on bright_yellow",
    "piece": "black on magenta",
    "unk": "bold white on red",
    "gap": "dim",
    "legend": "dim",
    "text": "",
}


def render_places_rich(places: Sequence[ShownPlace], with_source: bool = False) -> Any:
    """The places as a ``rich`` Text: tokens as coloured boxes (alternating colours, byte
    pieces magenta, UNK red); the same characters as :func:`render_places_plain`."""
    from rich.text import Text

    out = Text()
    for line in _rows(places, with_source):
        for text, kind in line:
            out.append(text, style=_STYLE.get(kind, ""))
        out.append("\n")
    return out
