"""The Unigram model part: SentencePiece's Viterbi segmentation, as ``tokenizers`` runs it.

A word is cut into the sequence of vocabulary pieces with the highest total score (log
probability). Ties go to the candidate seen first: candidates for one end position arrive by
increasing start, so among equal paths the one whose last piece is longest wins. Characters
without a one-character piece get an ``<unk>`` node scored ``min_score - 10``; runs of them are
fused into one token, which byte fallback spells as ``<0xNN>`` pieces when all of them exist.

``tokenizers`` adds scores in f64 (Python floats); sentencepiece in float32.
:func:`viterbi` does either, so the sentencepiece reader can reuse it.

:func:`viterbi` is the readable reference. With numba installed (extra ``fast``) the models run
the same loop compiled (:mod:`toktools.models.unigram.compiled_viterbi`, through :func:`best_paths`), which
gives the same paths, ties included; ``TOKTOOLS_PURE_PYTHON=1`` turns it off.
"""

from __future__ import annotations

import heapq
import json
import math
import random
import struct
from bisect import bisect_right
from collections.abc import Iterable
from itertools import accumulate
from typing import Any

from toktools.errors import ToktoolsError
from toktools.parts.base import Model
from toktools.parts.registry import register

UNK_PENALTY = 10.0
CACHE_CAPACITY = 100_000  # words whose tokens a Unigram model keeps (then it stops adding)
WORD_CACHE_CAPACITY = 200_000  # words whose matches a PieceIndex keeps
WORD_CACHE_LENGTH = 48  # longer words are matched in place, not cached
WORD_START = "\u2581"  # "▁", which starts a word in SentencePiece pieces
Path = list[tuple[int, int, int]]  # (start, end, vocab id) in characters

_F32 = struct.Struct("<f")


def f32(x: float) -> float:
    """``x`` rounded to float32 (sums of two float32 values rounded this way are exact float32 sums)."""
    return _F32.unpack(_F32.pack(x))[0]


def byte_piece(byte: int) -> str:
    """The byte-fallback piece for one byte: ``<0x0A>`` (upper-case hex, as both libraries spell it)."""
    return f"<0x{byte:02X}>"


class PieceIndex:
    """Which pieces start at a position: every piece and every prefix of one, for early stopping.

    ``table`` maps each piece to ``(id, score)`` and each other prefix of a piece to ``None``:
    one dict lookup per length tells both "is a piece" and "go on"."""

    def __init__(self, pieces: Iterable[tuple[str, int, float]]) -> None:
        self.lookup: dict[str, tuple[int, float]] = {}
        for piece, piece_id, score in pieces:
            if piece:
                self.lookup[piece] = (piece_id, score)
        self.max_len = max(map(len, self.lookup), default=0)
        self._table: dict[str, tuple[int, float] | None] | None = None
        # no piece holds a "▁" after its first character: then no piece crosses the start of a
        # "▁word", and the pieces at each position of a word depend on the word alone
        self.by_word = not any(WORD_START in piece[1:] for piece in self.lookup)
        self._words: dict[str, tuple[list[tuple[int, int, float]], ...]] = {}
        self._seen: set[str] = set()
        self._compiled: Any = None

    @property
    def table(self) -> dict[str, tuple[int, float] | None]:
        """Pieces → ``(id, score)``, other prefixes of pieces → None: what the pure-Python
        Viterbi looks up (built on first use; the compiled one walks its own trie)."""
        if self._table is None:
            prefixes = {piece[:k] for piece in self.lookup for k in range(1, len(piece))}
            table: dict[str, tuple[int, float] | None] = dict.fromkeys(prefixes)
            table.update(self.lookup)
            self._table = table
        return self._table

    def compiled(self) -> Any:
        """The pieces as arrays for the compiled Viterbi (built on first use), or None
        without numba (see :func:`compiled_viterbi`)."""
        if self._compiled is None:
            kernels = compiled_viterbi()
            if kernels is None:
                return None
            self._compiled = kernels.CompiledIndex(self.lookup.items())
        return self._compiled

    def seen_before(self, word: str) -> bool:
        """Whether ``word`` was met before (its matches are worth caching from the second time)."""
        if word in self._words:
            return True
        if word in self._seen:
            return True
        if len(self._seen) < WORD_CACHE_CAPACITY:
            self._seen.add(word)
        return False

    def word_matches(self, word: str) -> tuple[list[tuple[int, int, float]], ...]:
        """:meth:`matches` at every position of ``word`` (cached)."""
        found = self._words.get(word)
        if found is None:
            found = tuple(self.matches(word, pos) for pos in range(len(word)))
            if len(self._words) < WORD_CACHE_CAPACITY:
                self._words[word] = found
        return found

    def matches(self, text: str, pos: int) -> list[tuple[int, int, float]]:
        """``(length, id, score)`` of the pieces that start at ``pos``, shortest first."""
        out = []
        get = self.table.get
        limit = min(self.max_len, len(text) - pos)
        for length in range(1, limit + 1):
            hit = get(text[pos : pos + length], _MISSING)
            if hit is None:
                continue
            if hit is _MISSING:
                break
            out.append((length, hit[0], hit[1]))
        return out


_MISSING = (-1, math.nan)  # sentinel: neither a piece nor a prefix of one


def viterbi(text: str, index: PieceIndex, unk_id: int | None, unk_score: float, *, float32: bool = False) -> Path:
    """The best path over ``text`` (sentencepiece's "optimized" encoder): strict ``>`` so the
    first candidate reaching an end keeps a tie. ``float32`` rounds every sum as sentencepiece does.

    Speed without a change of result: a sum is rounded to float32 only when it could win
    (rounding is monotonic and the score it is compared with is already a float32 value); when
    no piece crosses the start of a ``▁word`` (:attr:`PieceIndex.by_word`), the matches of a
    short word met before come from a cache."""
    n = len(text)
    score = [0.0] * (n + 1)
    start = [-1] * (n + 1)
    ids = [0] * (n + 1)
    if not index.by_word:
        _forward(text, 0, n, index, unk_id, unk_score, float32, score, start, ids)
        return _backtrack(start, ids, n)
    a = 0
    while a < n:
        b = text.find(WORD_START, a + 1)
        if b < 0:
            b = n
        if b - a <= WORD_CACHE_LENGTH and index.seen_before(text[a:b]):
            _forward_word(text, a, b, index, unk_id, unk_score, float32, score, start, ids)
        else:
            _forward(text, a, b, index, unk_id, unk_score, float32, score, start, ids)
        a = b
    return _backtrack(start, ids, n)


def plain_viterbi(
    text: str, index: PieceIndex, unk_id: int | None, unk_score: float, *, float32: int = 1, reset: float = 0.0
) -> Path:
    """sentencepiece's ``EncodeOptimized`` loop as written, without the speed-ups of
    :func:`viterbi`: the readable reference of the rules the compiled kernel follows for
    sentencepiece (``float32`` and ``reset`` as
    :func:`toktools.models.unigram.compiled_viterbi.viterbi_batch` takes them)."""
    pack, unpack = _F32.pack, _F32.unpack
    n = len(text)
    score = [0.0] * (n + 1)
    start = [-1] * (n + 1)
    ids = [0] * (n + 1)
    frontier = 0
    for pos in range(n):
        base = score[pos]
        if reset > 0.0 and (base < -reset or base > reset):
            for i in range(pos, frontier + 1):
                if i == pos or start[i] >= 0:
                    score[i] = unpack(pack(score[i] - base))[0]
            base = 0.0
        candidates = index.matches(text, pos)
        if not any(length == 1 for length, _, _ in candidates):
            if unk_id is None:
                raise ToktoolsError("Unigram: an unknown character but the model has no unk_id")
            candidates.append((1, unk_id, unk_score))
        for length, piece_id, piece_score in candidates:
            end = pos + length
            frontier = max(frontier, end)
            cand = piece_score + base
            if float32 == 1:
                cand = unpack(pack(cand))[0]
            if start[end] < 0 or cand > score[end]:
                if float32 == 2:
                    cand = unpack(pack(cand))[0]
                score[end], start[end], ids[end] = cand, pos, piece_id
    return _backtrack(start, ids, n)


def compiled_viterbi() -> Any:
    """:mod:`toktools.models.unigram.compiled_index` (the compiled Viterbi's entry) when numba is
    installed (extra ``fast``), else None. ``TOKTOOLS_PURE_PYTHON=1`` forces the pure-Python
    :func:`viterbi` (same paths, slower)."""
    from toktools.runtime.compiled_switch import compiled_module

    return compiled_module("toktools.models.unigram.compiled_index")


def best_paths(
    texts: list[str],
    index: PieceIndex,
    unk_id: int | None,
    unk_score: float,
    *,
    float32: bool | int = False,
    fuse: bool = False,
    reset: float = 0.0,
) -> list[Path]:
    """:func:`viterbi` of each text, compiled when numba is there; with ``fuse`` each run of
    ``unk_id`` nodes is one ``(start, end, unk_id)`` step, as :meth:`Unigram.encode` fuses them.
    ``float32`` 2 and ``reset`` are sentencepiece's rules (:func:`plain_viterbi`)."""
    compiled = index.compiled()
    if compiled is None:
        if reset or float32 == 2:
            paths = [plain_viterbi(text, index, unk_id, unk_score, float32=int(float32), reset=reset) for text in texts]
        else:
            paths = [viterbi(text, index, unk_id, unk_score, float32=bool(float32)) for text in texts]
        return [_fused(path, unk_id) for path in paths] if fuse and unk_id is not None else paths
    ids, starts, ends, counts = compiled.paths(texts, unk_id, unk_score, float32=float32, fuse=fuse, reset=reset)
    steps = list(zip(starts.tolist(), ends.tolist(), ids.tolist()))
    out: list[Path] = []
    k = 0
    for count in counts.tolist():
        out.append(steps[k : k + count])
        k += count
    return out


def best_ids(
    texts: list[str], index: PieceIndex, unk_id: int | None, unk_score: float, *, float32: bool = False
) -> tuple[list[tuple[int, ...]], dict[int, Path]]:
    """The ids of each text's best path with runs of ``unk_id`` fused (as :func:`best_paths`
    with ``fuse``), and the whole path of the texts that hold ``unk_id`` (their caller looks
    the runs up): no per-token Python objects for the others."""
    compiled = index.compiled()
    if compiled is None:
        paths = best_paths(texts, index, unk_id, unk_score, float32=float32, fuse=True)
        out = [tuple([step[2] for step in path]) for path in paths]
        return out, {i: path for i, path in enumerate(paths) if unk_id is not None and unk_id in out[i]}
    ids, starts, ends, counts = compiled.paths(texts, unk_id, unk_score, float32=float32, fuse=True)
    flat = ids.tolist()
    bounds = [0, *accumulate(counts.tolist())]
    out = list(map(tuple, map(flat.__getitem__, map(slice, bounds[:-1], bounds[1:]))))
    unknown: dict[int, Path] = {}
    if unk_id is not None:
        import numpy as np

        for k in np.flatnonzero(ids == unk_id).tolist():
            i = bisect_right(bounds, k) - 1
            if i not in unknown:
                lo, hi = bounds[i], bounds[i + 1]
                unknown[i] = list(zip(starts[lo:hi].tolist(), ends[lo:hi].tolist(), flat[lo:hi]))
    return out, unknown


def _fused(path: Path, unk_id: int) -> Path:
    """``path`` with each run of consecutive ``unk_id`` steps made one step (the kernel's ``fuse``)."""
    out: Path = []
    for step in path:
        if step[2] == unk_id and out and out[-1][2] == unk_id:
            out[-1] = (out[-1][0], step[1], unk_id)
        else:
            out.append(step)
    return out


def _forward(
    text: str,
    lo: int,
    hi: int,
    index: PieceIndex,
    unk_id: int | None,
    unk_score: float,
    float32: bool,
    score: list[float],
    start: list[int],
    ids: list[int],
) -> None:
    """The forward pass over positions ``lo..hi-1``, pieces ending by ``hi``."""
    get = index.table.get
    max_len = index.max_len
    pack, unpack = _F32.pack, _F32.unpack
    for pos in range(lo, hi):
        base = score[pos]
        single = False
        limit = hi - pos if hi - pos < max_len else max_len
        for length in range(1, limit + 1):
            hit = get(text[pos : pos + length], _MISSING)
            if hit is None:
                continue
            if hit is _MISSING:
                break
            if length == 1:
                single = True
            end = pos + length
            cand = hit[1] + base
            if start[end] < 0 or cand > score[end]:
                if float32:
                    cand = unpack(pack(cand))[0]
                    if start[end] >= 0 and not cand > score[end]:
                        continue
                score[end], start[end], ids[end] = cand, pos, hit[0]
        if not single:
            end = pos + 1
            cand = unpack(pack(unk_score + base))[0] if float32 else unk_score + base
            if start[end] < 0 or cand > score[end]:
                if unk_id is None:
                    raise ToktoolsError("Unigram: an unknown character but the model has no unk_id")
                score[end], start[end], ids[end] = cand, pos, unk_id


def _forward_word(
    text: str,
    lo: int,
    hi: int,
    index: PieceIndex,
    unk_id: int | None,
    unk_score: float,
    float32: bool,
    score: list[float],
    start: list[int],
    ids: list[int],
) -> None:
    """:func:`_forward` over one ``▁word`` with its matches from the cache: the same candidates
    in the same order, the same sums and comparisons."""
    pack, unpack = _F32.pack, _F32.unpack
    for pos, candidates in enumerate(index.word_matches(text[lo:hi]), lo):
        base = score[pos]
        single = False
        for length, piece_id, piece_score in candidates:
            if length == 1:
                single = True
            end = pos + length
            cand = piece_score + base
            if start[end] < 0 or cand > score[end]:
                if float32:
                    cand = unpack(pack(cand))[0]
                    if start[end] >= 0 and not cand > score[end]:
                        continue
                score[end], start[end], ids[end] = cand, pos, piece_id
        if not single:
            end = pos + 1
            cand = unpack(pack(unk_score + base))[0] if float32 else unk_score + base
            if start[end] < 0 or cand > score[end]:
                if unk_id is None:
                    raise ToktoolsError("Unigram: an unknown character but the model has no unk_id")
                score[end], start[end], ids[end] = cand, pos, unk_id


def _backtrack(start: list[int], ids: list[int], n: int) -> Path:
    path: Path = []
    end = n
    while end > 0:
        begin = start[end]
        if begin < 0:
            raise ToktoolsError("Unigram: no segmentation reaches the end of the word (no unk_id)")
        path.append((begin, end, ids[end]))
        end = begin
    path.reverse()
    return path


class Lattice:
    """Every candidate node of one word, for n-best and sampling (``tokenizers``' ``Lattice``).

    Node 0 is BOS (ends at 0), node 1 is EOS (starts at ``n``); others in insertion order.
    """

    def __init__(self, text: str, index: PieceIndex, unk_id: int | None, unk_score: float) -> None:
        n = len(text)
        self.text = text
        self.n = n
        # node: [vocab id, start, length, score]
        self.nodes: list[tuple[int, int, int, float]] = [(-1, 0, 0, 0.0), (-2, n, 0, 0.0)]
        self.begin: list[list[int]] = [[] for _ in range(n + 1)]
        self.end: list[list[int]] = [[] for _ in range(n + 1)]
        self.begin[n].append(1)
        self.end[0].append(0)
        for pos in range(n):
            single = False
            for length, piece_id, piece_score in index.matches(text, pos):
                self._insert(pos, length, piece_score, piece_id)
                single = single or length == 1
            if not single and unk_id is not None:
                self._insert(pos, 1, unk_score, unk_id)

    def _insert(self, pos: int, length: int, score: float, piece_id: int) -> None:
        node = len(self.nodes)
        self.nodes.append((piece_id, pos, length, score))
        self.begin[pos].append(node)
        self.end[pos + length].append(node)

    def viterbi(self) -> tuple[list[int], list[float]]:
        """Best path as node ids, and every node's best backtrace score (used by n-best)."""
        back = [0.0] * len(self.nodes)
        prev: list[int | None] = [None] * len(self.nodes)
        for pos in range(self.n + 1):
            if not self.begin[pos]:
                return [], back
            for r in self.begin[pos]:
                best, best_score = None, 0.0
                for left in self.end[pos]:
                    cand = back[left] + self.nodes[r][3]
                    if best is None or cand > best_score:
                        best, best_score = left, cand
                if best is None:
                    return [], back
                prev[r], back[r] = best, best_score
        out = []
        node = prev[1]
        while node is not None and node != 0:
            out.append(node)
            node = prev[node]
        if node is None:
            return [], back
        out.reverse()
        return out, back

    def nbest(self, size: int) -> list[list[int]]:
        """Up to ``size`` best paths, best first (A* backwards from EOS over Viterbi scores)."""
        if size <= 0:
            return []
        best, back = self.viterbi()
        if size == 1:
            return [best]
        # agenda entries: (-fx, seq, node, gx, parent entry); seq keeps pops deterministic
        agenda: list[tuple[float, int, int, float, Any]] = []
        seq = 0
        heapq.heappush(agenda, (-0.0, seq, 1, 0.0, None))
        out: list[list[int]] = []
        while agenda:
            top = heapq.heappop(agenda)
            _, _, node, gx, _ = top
            if node == 0:
                path = []
                link = top[4]
                while link is not None and link[2] != 1:
                    path.append(link[2])
                    link = link[4]
                out.append(path)
                if len(out) == size:
                    break
                continue
            for left in self.end[self.nodes[node][1]]:
                seq += 1
                fx = back[left] + gx
                heapq.heappush(agenda, (-fx, seq, left, self.nodes[left][3] + gx, top))
            if len(agenda) > 100_000:
                agenda = heapq.nsmallest(min(512, size * 10), agenda)
                heapq.heapify(agenda)
        return out

    def sample(self, theta: float, rng: random.Random) -> list[int]:
        """One path drawn with probability ∝ exp(theta · score) (forward filtering, backward sampling)."""
        if self.n == 0:
            return []
        alpha = [0.0] * len(self.nodes)
        for pos in range(self.n + 1):
            for r in self.begin[pos]:
                acc = None
                for left in self.end[pos]:
                    acc = _log_sum_exp(acc, theta * (self.nodes[left][3] + alpha[left]))
                alpha[r] = acc if acc is not None else 0.0
        out: list[int] = []
        z = alpha[1]
        node = 1
        while True:
            lefts = self.end[self.nodes[node][1]]
            weights = [math.exp(alpha[left] + theta * self.nodes[left][3] - z) for left in lefts]
            node = rng.choices(lefts, weights)[0]
            if node == 0:
                break
            z = alpha[node]
            out.append(node)
        out.reverse()
        return out

    def path(self, nodes: list[int]) -> Path:
        return [(self.nodes[k][1], self.nodes[k][1] + self.nodes[k][2], self.nodes[k][0]) for k in nodes]

    def score(self, nodes: list[int]) -> float:
        return sum(self.nodes[k][3] for k in nodes)


def _log_sum_exp(acc: float | None, y: float) -> float:
    if acc is None:
        return y
    lo, hi = (y, acc) if acc > y else (acc, y)
    if hi > lo + 50.0:
        return hi
    return hi + math.log(math.exp(lo - hi) + 1.0)


@register
class Unigram(Model):
    """``{"type": "Unigram", "unk_id": ..., "vocab": [[piece, score], ...], "byte_fallback": ...}``.

    ``alpha``/``nbest_size`` switch on subword regularisation (sampling), as in ``tokenizers``'
    Python constructor; they are not serialised. Sampling draws from ``random.Random(seed)``, so
    it is reproducible given ``seed``.
    """

    type = "Unigram"
    #: the trainer that makes this model (see :mod:`toktools.training.trainers`)
    kind = "unigram"

    def __init__(
        self,
        vocab: list[tuple[str, float]] | None = None,
        unk_id: int | None = None,
        byte_fallback: bool = False,
        *,
        alpha: float | None = None,
        nbest_size: int | None = None,
        seed: int | None = 0,
    ) -> None:
        if vocab is None:  # tokenizers' Unigram(): just <unk>
            vocab, unk_id = [("<unk>", 0.0)], 0
        if unk_id is not None:
            if not vocab:
                raise ToktoolsError("Unigram: the vocabulary is empty but at least <unk> is needed")
            if not 0 <= unk_id < len(vocab):
                raise ToktoolsError(f"Unigram: unk_id {unk_id} is not in the vocabulary of {len(vocab)} pieces")
        self.vocab = [(str(p), float(s)) for p, s in vocab]
        self.unk_id = unk_id
        self.byte_fallback = bool(byte_fallback)
        self.alpha = alpha
        self.nbest_size = nbest_size
        self._rng = random.Random(seed)
        self.token_ids: dict[str, int] = {}
        for i, (piece, _) in enumerate(self.vocab):
            self.token_ids[piece] = i  # a repeated piece keeps its last id, as in tokenizers
        # the trie holds each string once; its id is looked up by string
        self.index = PieceIndex((p, i, self.vocab[i][1]) for p, i in self.token_ids.items())
        self.min_score = min((s for _, s in self.vocab), default=math.inf)
        self.unk_score = self.min_score - UNK_PENALTY
        self._cache: dict[str, tuple[tuple[int, str, int, int], ...]] = {}

    # -- tokenizer.json ---------------------------------------------------------------------
    @classmethod
    def from_json(cls, node: dict[str, Any]) -> Unigram:
        vocab = node.get("vocab")
        if not isinstance(vocab, list):
            raise ToktoolsError('tokenizer.json: Unigram "vocab" must be a list of [piece, score]')
        pairs = []
        for k, item in enumerate(vocab):
            if (
                not isinstance(item, (list, tuple))
                or len(item) != 2
                or not isinstance(item[0], str)
                or isinstance(item[1], bool)
                or not isinstance(item[1], (int, float))
            ):
                raise ToktoolsError(f"tokenizer.json: Unigram vocab entry {k} must be [piece, score], got {item!r}")
            pairs.append((item[0], float(item[1])))
        unk_id = node.get("unk_id")
        if unk_id is not None and (isinstance(unk_id, bool) or not isinstance(unk_id, int)):
            raise ToktoolsError(f'tokenizer.json: Unigram "unk_id" must be an integer or null, got {unk_id!r}')
        byte_fallback = node.get("byte_fallback", False)
        if not isinstance(byte_fallback, bool):
            raise ToktoolsError('tokenizer.json: Unigram "byte_fallback" must be true or false')
        return cls(pairs, unk_id, byte_fallback)

    def to_json(self) -> dict[str, Any]:
        return {
            "type": "Unigram",
            "unk_id": self.unk_id,
            "vocab": [[p, s] for p, s in self.vocab],
            "byte_fallback": self.byte_fallback,
        }

    def files(self) -> dict[str, str]:
        """``unigram.json``, as ``tokenizers``' ``Model.save`` writes it (the model node, pretty-printed)."""
        return {"unigram.json": json.dumps(self.to_json(), ensure_ascii=False, indent=2)}

    def spelling(self) -> dict[str, Any]:
        unk = self.vocab[self.unk_id][0] if self.unk_id is not None else None
        return {"unk_token": unk, "byte_fallback": self.byte_fallback}

    def transformers_config(self, tokenizer: Any) -> tuple[dict[str, Any], dict[str, str]]:
        """ALBERT's special-token roles, with the generic class: transformers 5's ``AlbertTokenizer``
        rebuilds its own pipeline from the vocabulary (its normaliser, ``unk_id`` 1, ``[CLS] A
        [SEP]``), which would encode differently; the generic class runs ``tokenizer.json``."""
        return {"tokenizer_class": "PreTrainedTokenizerFast"}, {
            "bos_token": "[CLS]",
            "eos_token": "[SEP]",
            "unk_token": "<unk>",
            "sep_token": "[SEP]",
            "pad_token": "<pad>",
            "cls_token": "[CLS]",
            "mask_token": "[MASK]",
        }

    # -- the model interface ----------------------------------------------------------------
    def get_vocab(self) -> dict[str, int]:
        return dict(self.token_ids)

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    def token_to_id(self, token: str) -> int | None:
        return self.token_ids.get(token)

    def id_to_token(self, token_id: int) -> str | None:
        return self.vocab[token_id][0] if 0 <= token_id < len(self.vocab) else None

    def score(self, token_id: int) -> float:
        return self.vocab[token_id][1]

    def best_path(self, word: str) -> Path:
        """The Viterbi path ``(start, end, id)`` with unk nodes not yet fused."""
        return best_paths([word], self.index, self.unk_id, self.unk_score)[0]

    def word_ids(self, words: list[str]) -> list[tuple[int, ...]]:
        """The ids of each word's :meth:`tokenize` (Viterbi only, no sampling), in one compiled
        call for all of them when numba is there (no tokens or offsets are built)."""
        if self.alpha:
            raise ToktoolsError("Unigram.word_ids: sampling (alpha) is on; use tokenize")
        if not words:
            return []
        out, unknown = best_ids(words, self.index, self.unk_id, self.unk_score)
        for i, path in unknown.items():  # a fused run: its id is looked up by string
            out[i] = tuple([token_id for token_id, *_ in self._tokens_of(words[i], [(a, b) for a, b, _ in path])])
        return out

    def nbest(self, word: str, size: int) -> list[tuple[list[str], float]]:
        """The ``size`` best segmentations (pieces, total score), best first; unk nodes unfused."""
        lattice = Lattice(word, self.index, self.unk_id, self.unk_score)
        return [([word[s:e] for s, e, _ in lattice.path(p)], lattice.score(p)) for p in lattice.nbest(size)]

    def sample_path(self, word: str, rng: random.Random | None = None) -> Path:
        """A path drawn as ``tokenizers`` does when ``alpha`` is set: among the ``nbest_size`` best
        (∝ exp(alpha·score)) when ``nbest_size`` > 0, else over the whole lattice."""
        rng = rng or self._rng
        alpha = self.alpha or 0.0
        lattice = Lattice(word, self.index, self.unk_id, self.unk_score)
        if self.nbest_size is not None and self.nbest_size > 0:
            paths = lattice.nbest(self.nbest_size)
            if not paths:
                return []
            scores = [alpha * lattice.score(p) for p in paths]
            top = max(scores)
            chosen = rng.choices(paths, [math.exp(s - top) for s in scores])[0]
            return lattice.path(chosen)
        return lattice.path(lattice.sample(alpha, rng))

    def encode(self, word: str) -> list[tuple[int, int]]:
        """Token spans of ``word``: the best (or sampled) path with runs of unk nodes fused."""
        if not word:
            return []
        path = self.sample_path(word) if self.alpha else self.best_path(word)
        spans: list[tuple[int, int]] = []
        run_start = None
        for start, end, piece_id in path:
            if self.unk_id is not None and piece_id == self.unk_id:
                if run_start is None:
                    run_start = start
                continue
            if run_start is not None:
                spans.append((run_start, start))
                run_start = None
            spans.append((start, end))
        if run_start is not None:
            spans.append((run_start, len(word)))
        return spans

    def tokenize(self, word: str) -> list[tuple[int, str, int, int]]:
        """``(id, token, start, end)`` of ``word``'s tokens; the Viterbi ones are cached per word
        (as ``tokenizers`` does: a pure function of the word), sampled ones are not."""
        if self.alpha:
            return self._tokenize(word)
        found = self._cache.get(word)
        if found is None:
            found = tuple(self._tokenize(word))
            if len(self._cache) < CACHE_CAPACITY:
                self._cache[word] = found
        return list(found)

    def _tokenize(self, word: str) -> list[tuple[int, str, int, int]]:
        return self._tokens_of(word, self.encode(word))

    def _tokens_of(self, word: str, spans: list[tuple[int, int]]) -> list[tuple[int, str, int, int]]:
        """Tokens of the (unk-fused) spans: the id of each is looked up by its string, as
        ``tokenizers`` does; a string not in the vocabulary is an unknown run (byte fallback)."""
        out: list[tuple[int, str, int, int]] = []
        for start, end in spans:
            token = word[start:end]
            token_id = self.token_ids.get(token)
            if token_id is None:
                if self.byte_fallback:
                    pieces = [byte_piece(b) for b in token.encode("utf-8")]
                    ids = [self.token_ids.get(p) for p in pieces]
                    if all(i is not None for i in ids):
                        out.extend((i, p, start, end) for i, p in zip(ids, pieces))  # type: ignore[misc]
                        continue
                if self.unk_id is None:
                    raise ToktoolsError("Unigram: an unknown character but the model has no unk_id")
                token_id = self.unk_id
            out.append((token_id, token, start, end))
        return out
