"""sentencepiece's own ``encode`` for Unigram and BPE models, in pure Python: the reference for
the places where a ``tokenizer.json`` cannot follow it (``spec/unigram.md`` §6):

* normalisation by the *longest* charsmap match (``spm_normalize``), user-defined symbols verbatim;
* Viterbi sums in float32, over the whole normalised line; ``min_score`` over NORMAL pieces
  only;
* only NORMAL and USER_DEFINED pieces are matched from text (never ``<s>``, ``<unk>``, bytes);
  USER_DEFINED pieces get a score that always wins;
* the rules that changed between sentencepiece versions follow :class:`SentencePieceRules`
  (by default those of the installed ``sentencepiece``, else the newest known):

  - 0.2.3: each sum rounded to float32 before it is compared; a USER_DEFINED piece of ``n``
    UTF-8 bytes scores ``0.1 * (n - 1)``; when the score where a piece starts is beyond ±1e5,
    it is subtracted from every score set from there on (long lines keep their precision);
    BPE turns a piece that is not NORMAL, USER_DEFINED or UNUSED into ``<unk>``;
  - 0.2.1: sums in ``double`` compared with the stored float32 score; a USER_DEFINED piece
    scores ``n * max_score - 0.1``; no rescaling;
* runs of unknown characters give one ``<unk>``, or their UTF-8 bytes with byte fallback;
* BPE (``bpe_model.cc``): from characters (user-defined symbols whole and frozen), merge the
  adjacent pair whose concatenation is a piece with the highest score (ties: leftmost), then
  split UNUSED pieces back into the pair they were merged from.
"""

from __future__ import annotations

import heapq
import math
import random
from bisect import bisect_right
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path
from typing import Any

from toktools.errors import ToktoolsError
from toktools.parts.precompiled import CharsMap
from toktools.parts.unigram import UNK_PENALTY, PieceIndex, best_paths, byte_piece, f32
from toktools.sentencepiece.model_file import (
    CONTROL,
    NORMAL,
    UNKNOWN,
    UNUSED,
    USER_DEFINED,
    SentencePieceModel,
    read_model,
)

FLT_MIN = 1.1754943508222875e-38
USER_DEFINED_EPSILON = 0.1
#: sentencepiece 0.2.3's ``kScoreResetThreshold``
SCORE_RESET = 100000.0


@dataclass(frozen=True)
class SentencePieceRules:
    """What differs between sentencepiece versions' encoders (see the module docstring)."""

    #: the first sentencepiece version these rules are the ones of
    version: str
    #: 1: each sum rounded to float32, then compared; 2: the double sum compared, then stored
    float32: int
    #: rescale the scores beyond ±reset (0: never)
    reset: float
    #: USER_DEFINED pieces score ``0.1 * (bytes - 1)`` (else ``bytes * max_score - 0.1``)
    user_defined_by_length: bool
    #: BPE outputs a CONTROL, UNKNOWN or BYTE piece formed from text as ``<unk>``
    bpe_reserved_as_unknown: bool

    def user_defined_score(self, nbytes: int, max_score: float) -> float:
        if self.user_defined_by_length:
            return f32(0.1 * (nbytes - 1))
        return f32(nbytes * max_score) - USER_DEFINED_EPSILON


RULES = {
    "0.2.3": SentencePieceRules("0.2.3", 1, SCORE_RESET, True, True),
    "0.2.1": SentencePieceRules("0.2.1", 2, 0.0, False, False),
}


def version_rules(version: str | None = None) -> SentencePieceRules:
    """The rules of sentencepiece ``version`` (``"0.2.1"``, ``"0.2.3"``, ...; None: the installed
    ``sentencepiece``'s, or the newest known when it is not installed). Versions before 0.2.3
    follow 0.2.1's rules."""
    if version is None:
        version = installed_version()
    if version is None:
        return RULES["0.2.3"]
    try:
        parts = tuple(int(x) for x in version.split(".")[:3])
    except ValueError:
        raise ToktoolsError(f"not a sentencepiece version: {version!r} (e.g. 0.2.3)") from None
    return RULES["0.2.3"] if parts >= (0, 2, 3) else RULES["0.2.1"]


def installed_version() -> str | None:
    """The installed ``sentencepiece``'s version, read from its metadata (no import), or None."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("sentencepiece")
    except PackageNotFoundError:
        return None


class _SentencePieceEncoder:
    """What both model types share: the normaliser (charsmap, whitespace flags, user-defined
    symbols kept verbatim), the ``<unk>`` piece, and ``<s>``/``</s>`` around the pieces."""

    #: the ``model_type`` this encoder reproduces
    model_type = ""

    def __init__(self, model: SentencePieceModel, rules: SentencePieceRules | None = None) -> None:
        self.rules = rules or version_rules()
        if model.model_type != self.model_type:
            raise ToktoolsError(f"sentencepiece_encode: a {model.model_type} model is not a {self.model_type} model")
        self.model = model
        spec = model.normalizer_spec
        blob = spec.get("precompiled_charsmap")
        self.charsmap = CharsMap(blob) if blob else None
        self.flags = dict(
            add_dummy_prefix=spec.get("add_dummy_prefix"),
            remove_extra_whitespaces=spec.get("remove_extra_whitespaces"),
            escape_whitespaces=spec.get("escape_whitespaces"),
            treat_whitespace_as_suffix=model.trainer_spec.get("treat_whitespace_as_suffix"),
        )
        self.user_defined = tuple(p.piece for p in model.pieces if p.type == USER_DEFINED)
        unk_id = next((i for i, p in enumerate(model.pieces) if p.type == UNKNOWN), None)
        if unk_id is None:
            raise ToktoolsError("sentencepiece model has no <unk> piece")
        self.unk_id: int = unk_id
        self.ids = {p.piece: i for i, p in enumerate(model.pieces)}
        self._text: Any = None

    @classmethod
    def load(cls, path: str | Path, rules: SentencePieceRules | None = None):  # -> the subclass
        return cls(read_model(path), rules)

    def normalize(self, text: str) -> str:
        """sentencepiece's normalised text (``▁`` for spaces, the dummy prefix, longest charsmap
        match): :class:`~toktools.sentencepiece.normalize.SpmText`, the same text as
        :func:`~toktools.parts.precompiled.spm_normalize`, fast where units are characters."""
        if self._text is None:
            from toktools.sentencepiece.normalize import SpmText

            self._text = SpmText(self.charsmap, user_defined=self.user_defined, **self.flags)
        return self._text(text)

    def encode(self, text: str, *, add_bos: bool = False, add_eos: bool = False) -> list[int]:
        normalized = self.normalize(text)
        out: list[int] = [_special(self.model, "bos")] if add_bos else []
        if normalized:
            out.extend(self._piece_ids(normalized))
        if add_eos:
            out.append(_special(self.model, "eos"))
        return out

    def _piece_ids(self, normalized: str) -> list[int]:
        """The ids of one non-empty normalised text."""
        raise NotImplementedError

    def _piece_spans(self, normalized: str) -> list[tuple[int, int, int]]:
        """``(id, start, end)`` of the pieces of one non-empty normalised text (characters; a
        run of unknown characters is one span, the ids of its bytes with byte fallback)."""
        raise NotImplementedError

    def encode_with_offsets(self, text: str) -> tuple[list[int], list[str], list[tuple[int, int]]]:
        """Ids, pieces and each piece's ``(start, end)`` in ``text`` (characters), as
        sentencepiece's ``SentencePieceText`` gives them: a piece spans the original characters
        its normalised characters came from; byte pieces of one character share its span."""
        normalized, align = self._aligned(text)
        ids: list[int] = []
        tokens: list[str] = []
        offsets: list[tuple[int, int]] = []
        if not normalized:
            return ids, tokens, offsets
        pieces = self.model.pieces
        size = len(normalized)
        for piece_id, start, end in self._piece_spans(normalized):
            begin = align[start]
            finish = align[end] if end < size else align[end - 1] + 1
            ids.append(piece_id)
            tokens.append(normalized[start:end] if piece_id == self.unk_id else pieces[piece_id].piece)
            offsets.append((begin, max(begin, finish)))
        return ids, tokens, offsets

    def _aligned(self, text: str) -> tuple[str, list[int]]:
        """The normalised text and, per character, the index in ``text`` it came from."""
        from toktools.parts.precompiled import spm_normalize

        return spm_normalize(text, self.charsmap, user_defined=self.user_defined, **self.flags)

    def encode_batch(self, texts: list[str], *, add_bos: bool = False, add_eos: bool = False) -> list[list[int]]:
        """:meth:`encode` of each text."""
        return [self.encode(text, add_bos=add_bos, add_eos=add_eos) for text in texts]

    def _bytes(self, text: str) -> list[int]:
        """Byte fallback: the ``<0xNN>`` pieces of ``text``'s UTF-8 bytes."""
        return [self.ids[byte_piece(b)] for b in text.encode("utf-8")]


class SentencePieceUnigram(_SentencePieceEncoder):
    """``SentencePieceProcessor.encode`` for a Unigram ``.model``."""

    model_type = "unigram"

    def __init__(self, model: SentencePieceModel, rules: SentencePieceRules | None = None) -> None:
        super().__init__(model, rules)
        normal = [f32(p.score) for p in model.pieces if p.type == NORMAL]
        self.min_score = min(normal) if normal else 3.4028234663852886e38  # FLT_MAX
        max_score = max([FLT_MIN] + normal)
        entries = []
        for i, p in enumerate(model.pieces):
            if p.type == NORMAL:
                entries.append((p.piece, i, f32(p.score)))
            elif p.type == USER_DEFINED:
                nbytes = len(p.piece.encode("utf-8"))
                entries.append((p.piece, i, self.rules.user_defined_score(nbytes, max_score)))
        self.index = PieceIndex(entries)
        self.unk_score = f32(self.min_score - UNK_PENALTY)
        self._lattice: PieceIndex | None = None
        self._compiled_text: Any = None

    def _piece_ids(self, normalized: str) -> list[int]:
        return self._batch_piece_ids([normalized])[0]

    def _piece_spans(self, normalized: str) -> list[tuple[int, int, int]]:
        rules = self.rules
        (path,) = best_paths(
            [normalized], self.index, self.unk_id, self.unk_score, float32=rules.float32, fuse=True, reset=rules.reset
        )
        out: list[tuple[int, int, int]] = []
        for start, end, piece_id in path:
            if piece_id == self.unk_id and self.model.byte_fallback:
                out.extend((byte_id, start, end) for byte_id in self._bytes(normalized[start:end]))
            else:
                out.append((piece_id, start, end))
        return out

    def _batch_piece_ids(self, texts: list[str]) -> list[list[int]]:
        """Ids of non-empty normalised texts, one compiled Viterbi call for all when numba is
        there (:func:`~toktools.parts.unigram.best_paths`). Runs of unknown characters are one
        ``<unk>`` (their UTF-8 bytes with byte fallback): only unk nodes carry ``unk_id``, as
        the ``<unk>`` piece is never matched from text here. The compiled path makes no Python
        object per token but the ids themselves."""
        unk_id = self.unk_id
        rules = self.rules
        compiled = self.index.compiled()
        if compiled is not None:
            from toktools.models.unigram.compiled_viterbi import code_points

            return self._ids_of_codes(*code_points(texts))
        found = best_paths(
            texts, self.index, unk_id, self.unk_score, float32=rules.float32, fuse=True, reset=rules.reset
        )
        return [self._ids_of_path(text, path) for text, path in zip(texts, found)]

    def _ids_of_codes(self, codes: Any, offsets: Any) -> list[list[int]]:
        """Ids of the normalised texts ``codes[offsets[t]:offsets[t + 1]]`` (code points; an
        empty one has none), one compiled Viterbi call."""
        import numpy as np

        rules = self.rules
        unk_id = self.unk_id
        ids, _, _, counts = self.index.compiled().paths_of_codes(
            codes, offsets, unk_id, self.unk_score, float32=rules.float32, fuse=True, reset=rules.reset
        )
        flat = ids.tolist()
        bounds = [0, *accumulate(counts.tolist())]
        out = [flat[lo:hi] for lo, hi in zip(bounds, bounds[1:])]
        if self.model.byte_fallback:
            for i in sorted({bisect_right(bounds, k) - 1 for k in np.flatnonzero(ids == unk_id).tolist()}):
                text = codes[offsets[i] : offsets[i + 1]].tobytes().decode("utf-32-le", "surrogatepass")
                out[i] = self._fallback_ids(text)
        return out

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without the compiled normaliser's tables (~5 MB; a copy makes its own)."""
        state = dict(self.__dict__)
        state["_compiled_text"] = None
        return state

    def _compiled_normalizer(self) -> Any:
        """:class:`~toktools.sentencepiece.compiled_normalize.CompiledSpmText` of this model's
        normaliser, or None (no numba, or a normaliser with no fast path)."""
        if self._compiled_text is None:
            self.normalize("")  # builds the SpmText
            compiled = self.index.compiled()
            module = None
            if compiled is not None and self._text.fast:
                from toktools.runtime.compiled_switch import compiled_module

                module = compiled_module("toktools.sentencepiece.compiled_normalize")
            self._compiled_text = module.CompiledSpmText(self._text) if module is not None else False
        return self._compiled_text or None

    def _aligned(self, text: str) -> tuple[str, list[int]]:
        normalizer = self._compiled_normalizer()
        found = normalizer.aligned(text) if normalizer is not None else None
        return found if found is not None else super()._aligned(text)

    def _fallback_ids(self, text: str) -> list[int]:
        """The ids of one text that holds an unknown run, with byte fallback."""
        rules = self.rules
        (path,) = best_paths(
            [text], self.index, self.unk_id, self.unk_score, float32=rules.float32, fuse=True, reset=rules.reset
        )
        return self._ids_of_path(text, path)

    def _ids_of_path(self, text: str, path: list[tuple[int, int, int]]) -> list[int]:
        ids = [piece_id for _, _, piece_id in path]
        if self.model.byte_fallback and self.unk_id in ids:
            ids = []
            for start, end, piece_id in path:
                ids.extend(self._bytes(text[start:end]) if piece_id == self.unk_id else [piece_id])
        return ids

    def sample_encode(
        self, text: str, alpha: float, nbest_size: int = -1, rng: random.Random | None = None
    ) -> list[int]:
        """``SentencePieceProcessor.sample_encode_as_ids``: ``nbest_size`` < 0 draws a path over
        the whole lattice with probability ∝ exp(alpha · score) (forward filtering, backward
        sampling); 0 or 1 is the Viterbi path; > 1 draws among the ``nbest_size`` best paths
        ∝ exp(alpha · score). The lattice scores a user-defined piece by its length in
        characters (sentencepiece's ``PopulateNodes``), not in bytes as the Viterbi does."""
        from toktools.parts.unigram import Lattice

        normalized = self.normalize(text)
        if not normalized:
            return []
        if nbest_size in (0, 1):
            return self._piece_ids(normalized)
        rng = rng or random.Random()
        lattice = Lattice(normalized, self._lattice_index(), self.unk_id, self.unk_score)
        if nbest_size > 1:
            paths = lattice.nbest(nbest_size)
            scores = [alpha * lattice.score(path) for path in paths]
            top = max(scores)
            nodes = rng.choices(paths, [math.exp(score - top) for score in scores])[0]
        else:
            nodes = forward_filtering_backward_sampling(lattice, alpha, rng)
        ids: list[int] = []
        previous_unknown = False
        for start, end, piece_id in lattice.path(nodes):
            unknown = piece_id == self.unk_id
            if unknown and self.model.byte_fallback:
                ids.extend(self._bytes(normalized[start:end]))
            elif not (unknown and previous_unknown):
                ids.append(piece_id)
            previous_unknown = unknown
        return ids

    def _lattice_index(self) -> PieceIndex:
        """The pieces as the lattice scores them (user-defined ones by characters)."""
        if self._lattice is None:
            normal = [f32(p.score) for p in self.model.pieces if p.type == NORMAL]
            max_score = max([FLT_MIN] + normal)
            entries = []
            for i, p in enumerate(self.model.pieces):
                if p.type == NORMAL:
                    entries.append((p.piece, i, f32(p.score)))
                elif p.type == USER_DEFINED:
                    entries.append((p.piece, i, self.rules.user_defined_score(len(p.piece), max_score)))
            self._lattice = PieceIndex(entries)
        return self._lattice

    def encode_batch(self, texts: list[str], *, add_bos: bool = False, add_eos: bool = False) -> list[list[int]]:
        """:meth:`encode` of each text, with one Viterbi call for the whole batch (normalised
        by the compiled normaliser when there is one)."""
        normalizer = self._compiled_normalizer()
        if normalizer is not None:
            found = self._ids_of_codes(*normalizer(texts))
            if add_bos or add_eos:
                bos = [_special(self.model, "bos")] if add_bos else []
                eos = [_special(self.model, "eos")] if add_eos else []
                return [bos + ids + eos for ids in found]
            return found
        normalized = [self.normalize(text) for text in texts]
        found = self._batch_piece_ids([n for n in normalized if n])
        if len(found) == len(normalized) and not (add_bos or add_eos):
            return found
        ids = iter(found)
        bos = [_special(self.model, "bos")] if add_bos else []
        eos = [_special(self.model, "eos")] if add_eos else []
        return [bos + (next(ids) if n else []) + eos for n in normalized]


class SentencePieceBPE(_SentencePieceEncoder):
    """``SentencePieceProcessor.encode`` for a BPE ``.model``."""

    model_type = "bpe"

    def __init__(self, model: SentencePieceModel, rules: SentencePieceRules | None = None) -> None:
        super().__init__(model, rules)
        # pieces that text can form (NORMAL, USER_DEFINED, UNUSED); reserved ones by name only
        self.pieces = {p.piece: i for i, p in enumerate(model.pieces) if p.type in (NORMAL, USER_DEFINED, UNUSED)}
        self.reserved = {p.piece: i for i, p in enumerate(model.pieces) if p.type not in (NORMAL, USER_DEFINED, UNUSED)}
        self.reserved_ids = frozenset(self.reserved.values())

    def _symbols(self, text: str) -> list[tuple[str, bool]]:
        """Characters, with user-defined symbols (longest first) kept whole and frozen."""
        users = sorted(self.user_defined, key=len, reverse=True)
        out, pos = [], 0
        while pos < len(text):
            symbol = next((u for u in users if u and text.startswith(u, pos)), None)
            if symbol is None:
                out.append((text[pos], False))
                pos += 1
            else:
                out.append((symbol, True))
                pos += len(symbol)
        return out

    def pieces_of(self, text: str) -> list[str]:
        """The merged pieces of one normalised text (before unknown handling)."""
        symbols = self._symbols(text)
        piece = [s for s, _ in symbols]
        frozen = [f for _, f in symbols]
        prev = list(range(-1, len(symbols) - 1))
        nxt = list(range(1, len(symbols))) + [-1]
        model = self.model.pieces
        agenda: list[tuple[float, bool, int, int, int]] = []
        rev_merge: dict[str, tuple[str, str]] = {}

        def maybe_add(left: int, right: int) -> None:
            if left == -1 or right == -1 or frozen[left] or frozen[right]:
                return
            merged = piece[left] + piece[right]
            pid = self.pieces.get(merged)
            if pid is None:
                return
            score = f32(model[pid].score)
            # 0.2.3 orders scores by their bits: +0.0 before -0.0, else as floats
            negative_zero = score == 0.0 and math.copysign(1.0, score) < 0
            heapq.heappush(agenda, (-score, negative_zero, left, right, len(merged)))
            if model[pid].type == UNUSED:
                rev_merge[merged] = (piece[left], piece[right])

        for i in range(1, len(symbols)):
            maybe_add(i - 1, i)
        while agenda:
            _, _, left, right, size = heapq.heappop(agenda)
            if not piece[left] or not piece[right] or len(piece[left]) + len(piece[right]) != size:
                continue
            piece[left] += piece[right]
            nxt[left] = nxt[right]
            if nxt[right] >= 0:
                prev[nxt[right]] = left
            piece[right] = ""
            maybe_add(prev[left], left)
            maybe_add(left, nxt[left])

        out: list[str] = []

        def resegment(word: str) -> None:
            pid = self.reserved.get(word, self.pieces.get(word))
            if pid is None or model[pid].type != UNUSED or word not in rev_merge:
                out.append(word)
                return
            resegment(rev_merge[word][0])
            resegment(rev_merge[word][1])

        for p in piece:
            if p:
                resegment(p)
        return out

    def _piece_ids(self, normalized: str) -> list[int]:
        return [piece_id for piece_id, _, _ in self._piece_spans(normalized)]

    def _piece_spans(self, normalized: str) -> list[tuple[int, int, int]]:
        out: list[tuple[int, int, int]] = []
        prev_unk = False
        start = 0
        for p in self.pieces_of(normalized):
            end = start + len(p)
            pid = self.reserved.get(p, self.pieces.get(p, self.unk_id))
            if pid in self.reserved_ids and self.rules.bpe_reserved_as_unknown:
                pid = self.unk_id
            unk = pid == self.unk_id
            if self.model.pieces[pid].type == CONTROL:
                pass  # sentencepiece drops control pieces from the output
            elif unk and self.model.byte_fallback:
                out.extend((byte_id, start, end) for byte_id in self._bytes(p))
            elif unk and prev_unk:
                out[-1] = (pid, out[-1][1], end)
            else:
                out.append((pid, start, end))
            prev_unk = unk
            start = end
        return out


def forward_filtering_backward_sampling(lattice: Any, theta: float, rng: random.Random) -> list[int]:
    """sentencepiece's ``Lattice::Sample``: one path drawn with probability ∝ exp(theta · score).
    Forward: ``alpha[r] = logsumexp over the nodes l ending where r starts of theta · score(l) +
    alpha[l]`` (``tokenizers``' lattice scales ``alpha[l]`` by theta too, which differs unless
    theta is 1); backward from EOS, each step drawn ∝ exp(alpha[l] + theta · score(l) - Z)."""
    nodes = lattice.nodes
    alpha = [0.0] * len(nodes)
    for pos in range(lattice.n + 1):
        for right in lattice.begin[pos]:
            terms = [theta * nodes[left][3] + alpha[left] for left in lattice.end[pos]]
            top = max(terms)
            alpha[right] = top + math.log(sum(math.exp(t - top) for t in terms))
    out: list[int] = []
    z = alpha[1]
    node = 1
    while True:
        lefts = lattice.end[nodes[node][1]]
        weights = [math.exp(alpha[left] + theta * nodes[left][3] - z) for left in lefts]
        node = rng.choices(lefts, weights)[0]
        if node == 0:
            break
        z = alpha[node]
        out.append(node)
    out.reverse()
    return out


def _special(model: SentencePieceModel, which: str) -> int:
    token_id = model.special_id(which)
    if token_id is None:
        raise ToktoolsError(f"the sentencepiece model has no {which} piece")
    return token_id


def load_encoder(path: str | Path, rules: SentencePieceRules | None = None) -> SentencePieceUnigram | SentencePieceBPE:
    """The pure-Python sentencepiece encoder for a ``.model`` of either type."""
    return encoder_for(read_model(path), rules)


def encoder_for(
    model: SentencePieceModel, rules: SentencePieceRules | None = None
) -> SentencePieceUnigram | SentencePieceBPE:
    """The sentencepiece encoder of a model already read."""
    return SentencePieceBPE(model, rules) if model.model_type == "bpe" else SentencePieceUnigram(model, rules)
