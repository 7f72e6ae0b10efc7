"""The reference Unigram trainer: ``tokenizers``' ``UnigramTrainer`` step for step, in Python.

1. Seeds: every character (weighted by word count), then the substrings that are internal nodes
   of the suffix tree of ``word\\0word\\0...`` (repeated, right-branching; not weighted), scored
   ``occurrences × length``, best first; log-probabilities of those scores.
2. EM: the E-step sums each piece's expected count over the lattice of every word
   (forward-backward in log space); the M-step drops pieces under 0.5 and scores the rest
   ``digamma(count) - digamma(total)`` (sentencepiece's Bayesian EM). ``n_sub_iterations`` times.
3. Pruning: each piece's loss if it were replaced by its second-best segmentation; keep the
   best ``max(1.1 × vocab_size, shrinking_factor × size)``; back to 2 until small enough.
4. Finalize: every required character, then pieces by model order to ``vocab_size``, sorted by
   score; special tokens (and the unk token) first.

Determinism: ``tokenizers`` visits words in hash-map order and sums per thread, so its floats
(and, on near-ties, its vocabulary) vary from run to run. Here words are visited in code-point
order of the word, sums are sequential, and required characters are taken in code-point order:
the same input always gives the same vocabulary.

Speed: with numba installed (extra ``fast``) the loops run compiled
(:mod:`toktools.models.unigram.kernels`: the same floating-point operations in the same order, so the
same vocabulary byte for byte; ``TOKTOOLS_PURE_PYTHON=1`` turns them off). The seeds then come
from a suffix array sorted on ``max_piece_length + 1`` characters only, and every word's lattice
candidates are found once, in a trie of the seed pieces, then filtered as pieces are dropped.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from toktools.errors import ToktoolsError
from toktools.models.unigram.digamma import digamma
from toktools.parts.unigram import UNK_PENALTY, Lattice, PieceIndex, Unigram

NAN = float("nan")
TRAIN_UNK = "<UNK>"


def _log(x: float) -> float:
    if x > 0:
        return math.log(x)
    return -math.inf if x == 0 else NAN


# -- suffix array seeds ------------------------------------------------------------------------


def suffix_array(text: list[int]) -> list[int]:
    """Suffix array by prefix doubling (ranks of pairs, one sort per round)."""
    n = len(text)
    if n == 0:
        return []
    rank = text[:]
    sa = list(range(n))
    k = 1
    while True:
        key = [(rank[i], rank[i + k] if i + k < n else -1) for i in range(n)]
        sa.sort(key=key.__getitem__)
        new_rank = [0] * n
        for j in range(1, n):
            new_rank[sa[j]] = new_rank[sa[j - 1]] + (key[sa[j]] != key[sa[j - 1]])
        rank = new_rank
        if rank[sa[-1]] == n - 1:
            return sa
        k *= 2


def suffix_tree_nodes(text: list[int]) -> Iterable[tuple[int, int, int]]:
    """``(start, depth, occurrences)`` of every internal node of the suffix tree (esaxx's output:
    substrings seen at least twice whose next characters differ)."""
    n = len(text)
    sa = suffix_array(text)
    rank = [0] * n
    for i, s in enumerate(sa):
        rank[s] = i
    lcp = [0] * n  # lcp[i] = common prefix of suffixes sa[i-1] and sa[i] (Kasai)
    h = 0
    for i in range(n):
        if rank[i] > 0:
            j = sa[rank[i] - 1]
            while i + h < n and j + h < n and text[i + h] == text[j + h]:
                h += 1
            lcp[rank[i]] = h
            if h:
                h -= 1
        else:
            h = 0
    stack: list[tuple[int, int]] = [(-1, -1)]
    for i in range(n + 1):
        cur_first, cur_depth = i, (-1 if i == n else lcp[i])
        cand = stack[-1]
        while cand[1] > cur_depth:
            if i - cand[0] > 1:
                yield sa[cand[0]], cand[1], i - cand[0]
            cur_first = cand[0]
            stack.pop()
            cand = stack[-1]
        if cand[1] < cur_depth:
            stack.append((cur_first, cur_depth))
        if i == n:
            break
        stack.append((i, n - sa[i] + 1))


def seed_pieces(
    words: list[tuple[str, int]], max_piece_length: int = 16, seed_size: int = 1_000_000
) -> list[tuple[str, float]]:
    """``make_seed_sentence_pieces``: characters, then suffix-tree substrings, as log-probs."""
    seeds, flat = _char_seeds(words)
    codes = list(map(ord, flat))
    substrings = []
    for start, depth, freq in suffix_tree_nodes(codes):
        if depth <= 1 or depth > max_piece_length:
            continue
        if 0 in codes[start : start + depth]:
            continue
        substrings.append((freq * depth, flat[start : start + depth]))
    substrings.sort(reverse=True)
    return _log_probs(seeds, substrings, seed_size)


def _char_seeds(words: list[tuple[str, int]]) -> tuple[list[tuple[str, float]], str]:
    """Every character with its count (weighted by word count), most frequent first (ties:
    higher code point first), and the text ``word\0word\0...`` of the suffix array."""
    chars: dict[str, int] = {}
    parts = []
    for word, count in words:
        if not word:
            continue
        parts.append(word)
        parts.append("\0")
        for ch in word:
            if ch != "\0":
                chars[ch] = chars.get(ch, 0) + count
    seeds = [(ch, float(c)) for c, ch in sorted(((c, ch) for ch, c in chars.items()), reverse=True)]
    return seeds, "".join(parts)


def _log_probs(
    seeds: list[tuple[str, float]], substrings: list[tuple[int, str]], seed_size: int
) -> list[tuple[str, float]]:
    """The characters, then the best substrings up to ``seed_size`` seeds, as log-probabilities."""
    for count, piece in substrings:
        if len(seeds) >= seed_size:
            break
        seeds.append((piece, float(count)))
    total = 0.0
    for _, score in seeds:
        total += score
    logsum = math.log(total)
    return [(piece, math.log(score) - logsum) for piece, score in seeds]


# -- the model during training ---------------------------------------------------------------


class _Model:
    """The training-time model: pieces in order, id 0 = ``<UNK>`` (score NaN)."""

    def __init__(self, pieces: list[tuple[str, float]]) -> None:
        self.pieces = pieces
        self._index: PieceIndex | None = None
        self._lookup: dict[str, tuple[int, float]] | None = None  # piece -> (id, score), as index.lookup
        scores = [s for _, s in pieces if not math.isnan(s)]
        self.min_score = min(scores) if scores else math.inf
        self.unk_score = self.min_score - UNK_PENALTY

    @property
    def index(self) -> PieceIndex:
        """The pieces by string (built on first use: the compiled steps do not need it)."""
        if self._index is None:
            self._index = PieceIndex((p, i, s) for i, (p, s) in enumerate(self.pieces))
        return self._index

    def nodes(self, rows: list[list[tuple[int, str]]]) -> list[list[tuple[int, int, float]]]:
        """``begin[pos]`` = ``(end, id, score)`` in lattice insertion order, from the word's
        matches against the seed pieces (pieces are only ever removed, so they are a superset)."""
        if self._lookup is None:
            self._lookup = {p: (i, s) for i, (p, s) in enumerate(self.pieces) if p}
        lookup = self._lookup
        unk = self.unk_score
        begin: list[list[tuple[int, int, float]]] = []
        for pos, candidates in enumerate(rows):
            row = []
            single = False
            for end, piece in candidates:
                hit = lookup.get(piece)
                if hit is not None:
                    row.append((end, hit[0], hit[1]))
                    if end == pos + 1:
                        single = True
            if not single:
                row.append((pos + 1, 0, unk))
            begin.append(row)
        return begin

    def lattice(self, word: str) -> Lattice:
        return Lattice(word, self.index, 0, self.unk_score)


def _viterbi(begin: list[list[tuple[int, int, float]]], n: int) -> list[int]:
    """Vocab ids of ``Lattice::viterbi``'s path: per node, the best incoming path (strict ``>``,
    candidates in insertion order)."""
    ends: list[list[tuple[int, float]]] = [[] for _ in range(n + 1)]  # (node, backtrace score)
    prev: list[int] = []
    ids: list[int] = []
    starts: list[int] = []
    for pos in range(n):
        incoming = ends[pos] if pos else [(-1, 0.0)]
        for end, pid, score in begin[pos]:
            best, best_score = None, 0.0
            for left, back in incoming:
                cand = back + score
                if best is None or cand > best_score:
                    best, best_score = left, cand
            node = len(ids)
            ids.append(pid)
            prev.append(best)  # type: ignore[arg-type]  # never None: every position has an edge to the next
            starts.append(pos)
            ends[end].append((node, best_score))
    best, best_score = None, 0.0
    for left, back in ends[n]:
        if best is None or back > best_score:
            best, best_score = left, back
    path: list[int] = []
    at = best
    while at is not None and at >= 0:
        path.append(ids[at])
        at = prev[at]
    path.reverse()
    return path


def _marginal(begin: list[list[tuple[int, int, float]]], n: int, freq: float, expected: list[float]) -> float:
    """``Lattice::populate_marginal``: adds ``freq ×`` each node's posterior to ``expected``.
    (log-sum-exp inline, with Rust's operations in Rust's order, so the floats are the same.)"""
    exp, log = math.exp, math.log
    ends: list[list[tuple[int, float]]] = [[] for _ in range(n + 1)]  # (start, score)
    for pos in range(n):
        for end, _, score in begin[pos]:
            ends[end].append((pos, score))
    forward = [0.0] * (n + 1)  # alpha of every node starting at pos
    for pos in range(1, n + 1):
        acc = None
        for start, score in ends[pos]:
            y = score + forward[start]
            if acc is None:
                acc = y
                continue
            lo, hi = (y, acc) if acc > y else (acc, y)
            acc = hi if hi > lo + 50.0 else hi + log(exp(lo - hi) + 1.0)
        forward[pos] = acc if acc is not None else 0.0
    backward = [0.0] * (n + 1)  # beta of every node ending at pos
    for pos in range(n - 1, -1, -1):
        acc = None
        for end, _, score in begin[pos]:
            y = score + backward[end]
            if acc is None:
                acc = y
                continue
            lo, hi = (y, acc) if acc > y else (acc, y)
            acc = hi if hi > lo + 50.0 else hi + log(exp(lo - hi) + 1.0)
        backward[pos] = acc if acc is not None else 0.0
    z = forward[n]
    for pos in range(n):
        a = forward[pos]
        for end, pid, score in begin[pos]:
            expected[pid] += freq * exp(a + score + backward[end] - z)
    return freq * z


class UnigramTrainer:
    """Settings of ``tokenizers.trainers.UnigramTrainer`` (same names and defaults)."""

    def __init__(
        self,
        vocab_size: int = 8000,
        *,
        n_sub_iterations: int = 2,
        shrinking_factor: float = 0.75,
        special_tokens: Iterable[str] = (),
        unk_token: str | None = None,
        initial_alphabet: Iterable[str] = (),
        max_piece_length: int = 16,
        seed_size: int = 1_000_000,
        progress: Callable[[str, int, int], None] | None = None,
    ) -> None:
        self.vocab_size = vocab_size
        self.n_sub_iterations = n_sub_iterations
        self.shrinking_factor = shrinking_factor
        self.special_tokens = list(special_tokens)
        self.unk_token = unk_token
        self.initial_alphabet = {s[0] for s in initial_alphabet if s}
        self.max_piece_length = max_piece_length
        self.seed_size = seed_size
        self.progress = progress

    def train(self, word_counts: Mapping[str, int]) -> Unigram:
        """Train on ``word -> count`` (the pre-tokenised words) and return the model."""
        words = sorted((w, c) for w, c in word_counts.items())
        kernels = compiled_kernels()
        if kernels is not None:
            return self._train_compiled(words, kernels)
        pieces: list[tuple[str, float]] = [(TRAIN_UNK, NAN)] + seed_pieces(words, self.max_piece_length, self.seed_size)
        desired = self.vocab_size * 11 // 10
        required = self._required(words)
        seeds = PieceIndex((p, i, 0.0) for i, (p, _) in enumerate(pieces))
        rows = [
            [
                [(pos + length, word[pos : pos + length]) for length, _, _ in seeds.matches(word, pos)]
                for pos in range(len(word))
            ]
            for word, _ in words
        ]
        model = _Model(pieces)
        step = 0
        while True:
            for _ in range(self.n_sub_iterations):
                expected = self._e_step(model, words, rows)
                pieces = self._m_step(pieces, expected)
                model = _Model(pieces)
                step += 1
                if self.progress:
                    self.progress("EM", step, len(pieces))
            if len(pieces) <= desired:
                break
            pieces = self._prune(model, pieces, words, rows)
            model = _Model(pieces)
        return self._finalize(model, required)

    def _required(self, words: list[tuple[str, int]]) -> set[str]:
        required = {ch for w, _ in words for ch in w} | self.initial_alphabet
        if len(required) > self.vocab_size:
            raise ToktoolsError(
                f"vocab size {self.vocab_size} is smaller than the {len(required)} characters the corpus needs"
            )
        return required

    def _train_compiled(self, words: list[tuple[str, int]], kernels: Any) -> Unigram:
        """:meth:`train` with the compiled steps of :mod:`toktools.models.unigram.kernels`: the same
        operations in the same order over flat arrays, so the same vocabulary. The current
        pieces are ``piece_seed`` (their seed ids) and ``scores``."""
        import numpy as np

        seeds: list[tuple[str, float]] = [(TRAIN_UNK, NAN)] + _seed_pieces_compiled(
            words, self.max_piece_length, self.seed_size, kernels
        )
        desired = self.vocab_size * 11 // 10
        required = self._required(words)
        lattice = _Candidates([p for p, _ in seeds], [w for w, _ in words], kernels)
        counts = np.array([float(c) for _, c in words], dtype=np.float64)
        piece_seed = np.arange(len(seeds), dtype=np.int64)
        scores = np.array([sc for _, sc in seeds], dtype=np.float64)
        step = 0
        while True:
            for _ in range(self.n_sub_iterations):
                ids = lattice.current(piece_seed)
                expected, nan = kernels.e_step(
                    lattice.word_off,
                    counts,
                    lattice.starts,
                    lattice.lengths,
                    ids,
                    scores[ids],
                    _unk_score(scores),
                    len(piece_seed),
                )
                if nan:
                    raise ToktoolsError("Unigram training: the likelihood is NaN (a word may be too long)")
                keep, new_scores = kernels.m_step(expected)
                piece_seed, scores = piece_seed[keep], new_scores[keep]
                step += 1
                if self.progress:
                    self.progress("EM", step, len(piece_seed))
            if len(piece_seed) <= desired:
                break
            order = self._prune_compiled(piece_seed, scores, counts, lattice, kernels)
            piece_seed, scores = piece_seed[order], scores[order]
        strings = lattice.seed_strings
        return self._finalize(
            _Model([(strings[s], sc) for s, sc in zip(piece_seed.tolist(), scores.tolist())]), required
        )

    def _prune_compiled(self, piece_seed: Any, scores: Any, counts: Any, lattice: _Candidates, kernels: Any) -> Any:
        """:meth:`_prune` compiled: the ids kept, in their new order."""

        ids = lattice.current(piece_seed)
        unk_score = _unk_score(scores)
        codes, offsets = kernels.gather_pieces(lattice.seed_codes, lattice.seed_off, piece_seed)
        status, first_len, alt_off, alt = kernels.two_best(
            codes, offsets, lattice.children, lattice.terminal, lattice.seed_cur, scores, unk_score
        )
        if (status < 0).any():  # agendas too large for the compiled 2-best: the Python lattice decides
            alt_off, alt = self._two_best_fallback(piece_seed, scores, lattice, status, first_len, alt_off, alt)
        always_keep = ~((status == 2) & (first_len >= 2))  # only one path: the piece itself, kept
        always_keep[0] = False
        freq, vsum = kernels.viterbi_counts(
            lattice.word_off, counts, lattice.starts, lattice.lengths, ids, scores[ids], unk_score, len(piece_seed)
        )
        desired = self.vocab_size * 11 // 10
        pruned_size = max(desired, int(len(piece_seed) * self.shrinking_factor))
        return kernels.prune_select(freq, always_keep, alt_off, alt, vsum, pruned_size)

    @staticmethod
    def _two_best_fallback(
        piece_seed: Any, scores: Any, lattice: _Candidates, status: Any, first_len: Any, alt_off: Any, alt: Any
    ) -> tuple[Any, Any]:
        import numpy as np

        strings = lattice.seed_strings
        model = _Model([(strings[s], sc) for s, sc in zip(piece_seed.tolist(), scores.tolist())])
        alternatives = [alt[alt_off[i] : alt_off[i + 1]].tolist() for i in range(len(piece_seed))]
        for pid in np.flatnonzero(status < 0).tolist():
            piece_lattice = model.lattice(model.pieces[pid][0])
            nbests = piece_lattice.nbest(2)
            status[pid], first_len[pid] = len(nbests), (len(nbests[0]) if nbests else 0)
            if len(nbests) == 2 and len(nbests[0]) == 1:
                alternatives[pid] = [piece_lattice.nodes[node][0] for node in nbests[1]]
        new_off = np.zeros(len(alternatives) + 1, dtype=np.int64)
        np.cumsum([len(a) for a in alternatives], out=new_off[1:])
        return new_off, np.array([n for a in alternatives for n in a], dtype=np.int64)

    # -- the steps ------------------------------------------------------------------------------
    def _e_step(self, model: _Model, words: list[tuple[str, int]], rows: list) -> list[float]:
        expected = [0.0] * len(model.pieces)
        for (word, count), word_rows in zip(words, rows):
            z = _marginal(model.nodes(word_rows), len(word), float(count), expected)
            if math.isnan(z):
                raise ToktoolsError("Unigram training: the likelihood is NaN (a word may be too long)")
        return expected

    @staticmethod
    def _m_step(pieces: list[tuple[str, float]], expected: list[float]) -> list[tuple[str, float]]:
        kept: list[tuple[str, float]] = []
        total = 0.0
        for i, ((piece, _), freq) in enumerate(zip(pieces, expected)):
            if i == 0:
                kept.append((piece, NAN))
                continue
            if freq < 0.5:
                continue
            kept.append((piece, freq))
            total += freq
        logsum = digamma(total)
        return [(piece, digamma(freq) - logsum) for piece, freq in kept]

    def _prune(
        self, model: _Model, pieces: list[tuple[str, float]], words: list[tuple[str, int]], rows: list
    ) -> list[tuple[str, float]]:
        always_keep = [True] * len(pieces)
        alternatives: list[list[int]] = [[] for _ in pieces]
        for pid, (token, _) in enumerate(pieces):
            if pid == 0:
                always_keep[pid] = False
                continue
            lattice = model.lattice(token)
            nbests = lattice.nbest(2)
            if len(nbests) == 1:
                always_keep[pid] = True
            elif len(nbests[0]) >= 2:
                always_keep[pid] = False
            elif len(nbests[0]) == 1:
                always_keep[pid] = True
                alternatives[pid] = [lattice.nodes[node][0] for node in nbests[1]]
        vsum = 0.0
        freq = [0.0] * len(pieces)
        for (word, count), word_rows in zip(words, rows):
            vsum += count
            for pid in _viterbi(model.nodes(word_rows), len(word)):
                freq[pid] += count
        return self._prune_by_loss(pieces, always_keep, alternatives, freq, vsum)

    def _prune_by_loss(
        self,
        pieces: list[tuple[str, float]],
        always_keep: list[bool],
        alternatives: list[list[int]],
        freq: list[float],
        vsum: float,
    ) -> list[tuple[str, float]]:
        """Keep the pieces whose removal would cost the most likelihood (``prune_sentence_pieces``).

        ``tokenizers`` sums the counts of the words listed in ``inverted[id]`` (one entry per
        occurrence on a best path): that is ``freq[id]`` itself, an exact sum of integers."""
        total = 0.0
        for f in freq:
            total += f
        logsum = _log(total)
        candidates: list[tuple[int, float]] = []
        new_pieces = [pieces[0]]
        for pid, (token, score) in enumerate(pieces):
            if pid == 0:
                continue
            if freq[pid] == 0.0 and not always_keep[pid]:
                continue
            if not alternatives[pid]:
                new_pieces.append((token, score))
                continue
            f = freq[pid]
            if f == 0.0 or math.isnan(f):
                continue
            f /= vsum
            logprob_sp = _log(freq[pid]) - logsum
            # as tokenizers (and sentencepiece): the size of the whole table, not of alternatives[pid]
            logsum_alt = _log(total + freq[pid] * (len(alternatives) - 1))
            logprob_alt = 0.0
            for n in alternatives[pid]:
                logprob_alt += _log(freq[n] + freq[pid]) - logsum_alt
            candidates.append((pid, f * (logprob_sp - logprob_alt)))
        desired = self.vocab_size * 11 // 10
        pruned_size = max(desired, int(len(pieces) * self.shrinking_factor))
        candidates.sort(key=lambda c: c[1], reverse=True)  # stable, like Rust's sort_by
        for pid, _ in candidates:
            if len(new_pieces) == pruned_size:
                break
            new_pieces.append(pieces[pid])
        return new_pieces

    def _finalize(self, model: _Model, required: set[str]) -> Unigram:
        existing = dict(model.pieces)
        inserted = {TRAIN_UNK}
        final: list[tuple[str, float]] = []
        penalty = 0.0
        for ch in sorted(required):
            inserted.add(ch)
            if ch in existing:
                final.append((ch, existing[ch]))
            else:
                final.append((ch, model.min_score + penalty))
                penalty += 0.0001
        unk_id = None
        need_unk = False
        if self.unk_token is not None:
            if self.unk_token in self.special_tokens:
                unk_id = self.special_tokens.index(self.unk_token)
            else:
                unk_id, need_unk = 0, True
        target = self.vocab_size - len(self.special_tokens) - (1 if need_unk else 0)
        for token, score in model.pieces:
            if token in inserted:
                continue
            inserted.add(token)
            final.append((token, 0.0 if math.isnan(score) else score))
            if len(final) == target:
                break
        final.sort(key=lambda p: p[1], reverse=True)  # stable, ties keep their order
        specials = [(t, 0.0) for t in self.special_tokens]
        if need_unk and self.unk_token is not None:  # need_unk implies an unk_token
            specials.insert(0, (self.unk_token, 0.0))
        return Unigram(specials + final, unk_id, False)


# -- the compiled steps ------------------------------------------------------------------------


def compiled_kernels() -> Any:
    """:mod:`toktools.models.unigram.kernels` when numba is installed (extra ``fast``), else None.
    ``TOKTOOLS_PURE_PYTHON=1`` forces the pure-Python steps (same results, slower)."""
    from toktools.runtime.compiled_switch import compiled_module

    return compiled_module("toktools.models.unigram.kernels")


def _code_points(strings: list[str]) -> tuple[Any, Any]:
    """All the strings' code points in one ``int32`` array, and where each string starts."""
    import numpy as np

    codes = np.frombuffer("".join(strings).encode("utf-32-le", "surrogatepass"), dtype=np.uint32).astype(np.int32)
    offsets = np.zeros(len(strings) + 1, dtype=np.int64)
    np.cumsum([len(s) for s in strings], out=offsets[1:])
    return codes, offsets


def _unk_score(scores: Any) -> float:
    """``_Model.unk_score`` of these scores (the minimum over the non-NaN ones, minus 10)."""
    import numpy as np

    finite = scores[~np.isnan(scores)]
    return (float(finite.min()) if len(finite) else math.inf) - UNK_PENALTY


class _Candidates:
    """Every word's lattice candidates ``(start, length, seed id)`` from the trie of the seed
    pieces, kept to the live pieces.

    Pieces are only ever removed, so the seed pieces' candidates are a superset of any later
    model's. ``_Model.nodes`` looks pieces up by string; a string held by two seeds (a word
    containing ``<UNK>``) maps to the last current piece with that string, as a dict would."""

    def __init__(self, seed_strings: list[str], words: list[str], kernels: Any) -> None:
        import numpy as np

        self.seed_strings = seed_strings
        self.seed_codes, self.seed_off = _code_points(seed_strings)
        self.children, self.terminal = kernels.build_trie(self.seed_codes, self.seed_off)
        codes, self.word_off = _code_points(words)
        self.starts, self.lengths, self.seeds = kernels.lattice_candidates(
            codes, self.word_off, self.children, self.terminal
        )
        self.seed_cur = np.arange(len(seed_strings), dtype=np.int64)
        first: dict[str, list[int]] = {}
        for i, piece in enumerate(seed_strings):
            first.setdefault(piece, []).append(i)
        self.shared = [np.array(group, dtype=np.int64) for group in first.values() if len(group) > 1]

    def current(self, piece_seed: Any) -> Any:
        """Current ids of the live candidates (dropping the dead ones for good); sets ``seed_cur``."""
        import numpy as np

        seed_cur = np.full(len(self.seed_strings), -1, dtype=np.int64)
        seed_cur[piece_seed] = np.arange(len(piece_seed), dtype=np.int64)
        for group in self.shared:  # the trie's entry (the last seed) stands for the last live piece
            seed_cur[group[-1]] = seed_cur[group].max()
        self.seed_cur = seed_cur
        ids = seed_cur[self.seeds]
        live = ids >= 0
        if not live.all():
            self.starts, self.lengths, self.seeds, ids = (
                self.starts[live],
                self.lengths[live],
                self.seeds[live],
                ids[live],
            )
        return ids


def _seed_pieces_compiled(
    words: list[tuple[str, int]], max_piece_length: int, seed_size: int, kernels: Any
) -> list[tuple[str, float]]:
    """:func:`seed_pieces` over a suffix array sorted on ``max_piece_length + 1`` characters
    (the nodes no deeper than ``max_piece_length`` are all it keeps)."""
    import numpy as np

    seeds, flat = _char_seeds(words)
    room = max(0, seed_size - len(seeds))
    text, _ = _code_points([flat])
    order = kernels.prefix_sorted_suffixes(text, max_piece_length + 1)
    starts, depths, freqs = kernels.suffix_tree_seeds(text, order, max_piece_length)
    scores = freqs * depths
    if room < len(scores):  # only the best `room` can be seeds: sort those with the ties at the cut
        if room == 0:
            keep = np.zeros(0, dtype=np.int64)
        else:
            threshold = np.partition(scores, len(scores) - room)[len(scores) - room]
            keep = np.flatnonzero(scores >= threshold)
        starts, depths, scores = starts[keep], depths[keep], scores[keep]
    substrings = sorted(
        zip(scores.tolist(), (flat[s : s + d] for s, d in zip(starts.tolist(), depths.tolist()))), reverse=True
    )
    return _log_probs(seeds, substrings, seed_size)
