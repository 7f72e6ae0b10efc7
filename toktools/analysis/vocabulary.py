"""Vocabulary statistics (``toktools inspect TOK``): size, special tokens, alphabet, length
histograms, continuation pieces, script coverage, the longest tokens, Unigram scores and what
the vocabulary costs in a model's embedding.

Special tokens are listed on their own and left out of the histograms, script coverage and
longest tokens.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from toktools.analysis import token_view
from toktools.analysis.plain_data import jsonable, ratio
from toktools.analysis.token_surface import script_of_surface, surface_of
from toktools.models.bpe.bytelevel import BYTE_TO_SYMBOL
from toktools.tokenizer import Tokenizer

__all__ = ["BERT_BASE_PARAMETERS", "EmbeddingCost", "ScoreStats", "TokenEntry", "VocabStats", "vocab_stats"]


def _bars(histogram: Mapping[Any, int], bar_width: int, total: int | None = None) -> list[str]:
    """``label  count  ####`` lines, bars scaled to the largest count."""
    if not histogram:
        return ["  -"]
    peak = max(histogram.values()) or 1
    label_width = max(len(str(k)) for k in histogram)
    count_width = max(len(str(v)) for v in histogram.values())
    lines = []
    for key, count in histogram.items():
        share = f"  {count / total:6.1%}" if total else ""
        bar = "#" * max(1 if count else 0, round(count / peak * bar_width))
        lines.append(f"  {str(key):>{label_width}}  {count:>{count_width}}{share}  {bar}")
    return lines


@dataclass(frozen=True)
class TokenEntry:
    """One vocabulary entry with its surface: ``surface`` is None for partial bytes."""

    id: int
    token: str
    surface: str | None
    chars: int | None
    bytes: int
    #: the model's score (Unigram log-probability); None for models without scores
    score: float | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {"id": self.id, "token": self.token, "surface": self.surface, "chars": self.chars, "bytes": self.bytes}
        if self.score is not None:
            out["score"] = self.score
        return out


def _piece_score(model: Any, token: str, token_id: int) -> float | None:
    """The score of a piece text can produce: None for models without scores, for the unknown
    piece and for byte-fallback pieces (``<0xE6>``), whose score 0 says nothing."""
    score = model.score(token_id)
    if score is None or token_id == getattr(model, "unk_id", None):
        return None
    if getattr(model, "byte_fallback", False) and len(token) == 6 and token.startswith("<0x") and token.endswith(">"):
        return None
    return score


@dataclass
class ScoreStats:
    """The scores of a Unigram vocabulary (special tokens, the unknown piece and byte-fallback
    pieces left out): range, mean, and the pieces with the highest and the lowest scores (the
    likeliest and the rarest)."""

    min: float
    max: float
    mean: float
    highest: list[TokenEntry]
    lowest: list[TokenEntry]

    def to_dict(self) -> dict[str, Any]:
        return {
            "min": self.min,
            "max": self.max,
            "mean": self.mean,
            "highest": [e.to_dict() for e in self.highest],
            "lowest": [e.to_dict() for e in self.lowest],
        }

    def render_lines(self) -> list[str]:
        def row(e: TokenEntry) -> str:
            return f"  {e.id:>7}  {e.score:>12.6f}  «{token_view.escape_text(e.surface if e.surface is not None else e.token)}»"

        lines = ["", f"scores          {self.min:.6f} to {self.max:.6f}, mean {self.mean:.6f}", "", "highest scores"]
        lines += [row(e) for e in self.highest]
        lines += ["", "lowest scores"]
        lines += [row(e) for e in self.lowest]
        return lines


#: BERT-base's parameter count, as its paper gives it.
BERT_BASE_PARAMETERS = 110_000_000


@dataclass(frozen=True)
class EmbeddingCost:
    """What the vocabulary costs in a model's input embedding: ``V×H`` for a BERT-style
    embedding at hidden size H = 768 (base) and 1024 (large); ALBERT's factorised ``V×E + E×H``
    at E = 128; and ``V×768`` as a share of BERT-base's 110M parameters."""

    vocab_size: int

    def full(self, hidden: int) -> int:
        return self.vocab_size * hidden

    def factorised(self, hidden: int, embedding: int = 128) -> int:
        return self.vocab_size * embedding + embedding * hidden

    @property
    def bert_base_share(self) -> float:
        return self.full(768) / BERT_BASE_PARAMETERS

    def to_dict(self) -> dict[str, Any]:
        return jsonable(
            {
                "vocab_size": self.vocab_size,
                "full": {"768": self.full(768), "1024": self.full(1024)},
                "albert_e128": {"768": self.factorised(768), "1024": self.factorised(1024)},
                "bert_base_share": self.bert_base_share,
            }
        )

    def render_lines(self) -> list[str]:
        def m(n: int) -> str:
            return f"{n / 1e6:.1f}M"

        return [
            f"embedding       V×H = {m(self.full(768))} at H=768, {m(self.full(1024))} at H=1024 "
            f"(V = {self.vocab_size})",
            f"                ALBERT V×E + E×H at E=128: {m(self.factorised(768))} at H=768, "
            f"{m(self.factorised(1024))} at H=1024",
            f"                V×768 is {self.bert_base_share:.1%} of BERT-base's 110M parameters",
        ]


@dataclass
class VocabStats:
    """What ``toktools inspect TOK`` shows. Histograms map a length to a number of tokens.

    ``counted`` is the number of entries the histograms, scripts and shares are over: the whole
    vocabulary minus the special tokens. ``length_chars`` leaves out partial-byte tokens (they
    have no characters); ``length_bytes`` counts every one.
    """

    kind: str
    vocab_size: int
    model_vocab_size: int
    added_tokens: int
    special_tokens: list[tuple[str, int]]
    counted: int
    alphabet: list[str]
    alphabet_size: int
    byte_symbols_present: int | None
    missing_bytes: list[str]
    continuation_tokens: int
    continuation_share: float | None
    partial_byte_tokens: int
    length_chars: dict[int, int]
    length_bytes: dict[int, int]
    scripts: dict[str, int]
    longest: list[TokenEntry]
    embedding: EmbeddingCost | None = None
    scores: ScoreStats | None = None
    #: a sentencepiece ``.model``: its pieces by type (``CONTROL``, ``UNKNOWN``, ``USER_DEFINED``,
    #: ``BYTE``, ``UNUSED``) as ``(piece, id)``, spelled as sentencepiece spells them
    piece_types: dict[str, list[tuple[str, int]]] | None = None

    def render_plain(self, bar_width: int = 40) -> str:
        """The statistics as plain text (what ``inspect`` prints without colour)."""
        lines = [
            f"kind            {self.kind}",
            f"vocabulary      {self.vocab_size} ({self.model_vocab_size} in the model, {self.added_tokens} added)",
            "special tokens  " + (", ".join(f"{c} ({i})" for c, i in self.special_tokens) or "-"),
        ]
        if self.piece_types is not None:
            lines.append("sentencepiece   " + _piece_types_line(self.piece_types))
        if self.byte_symbols_present is not None:
            missing = f", missing {' '.join(self.missing_bytes)}" if self.missing_bytes else ""
            lines.append(f"alphabet        {self.byte_symbols_present} of 256 byte symbols{missing}")
        else:
            shown = "".join(self.alphabet[:60]) + (" …" if len(self.alphabet) > 60 else "")
            lines.append(f"alphabet        {self.alphabet_size} single characters: {shown}")
        if self.continuation_share is not None:
            lines.append(f"continuation    {self.continuation_tokens} pieces ({self.continuation_share:.1%})")
        if self.partial_byte_tokens:
            lines.append(f"partial bytes   {self.partial_byte_tokens} tokens are not valid UTF-8 on their own")
        if self.embedding is not None:
            lines += self.embedding.render_lines()
        for title, histogram in (("length in characters", self.length_chars), ("length in bytes", self.length_bytes)):
            lines += ["", title]
            lines += _bars(histogram, bar_width)
        lines += ["", "scripts"]
        lines += _bars(self.scripts, bar_width, total=self.counted)
        lines += ["", "longest tokens"]
        lines += [
            f"  {e.id:>7}  {e.chars:>3} chars  {e.bytes:>3} bytes  "
            + (f"score {e.score:>10.4f}  " if e.score is not None else "")
            + f"«{token_view.escape_text(e.surface or '')}»"
            for e in self.longest
        ]
        if self.scores is not None:
            lines += self.scores.render_lines()
        return "\n".join(lines) + "\n"

    def to_dict(self) -> dict[str, Any]:
        return jsonable(
            {
                "kind": self.kind,
                "vocab_size": self.vocab_size,
                "model_vocab_size": self.model_vocab_size,
                "added_tokens": self.added_tokens,
                "special_tokens": [{"content": c, "id": i} for c, i in self.special_tokens],
                "counted": self.counted,
                "alphabet_size": self.alphabet_size,
                "alphabet": self.alphabet,
                "byte_symbols_present": self.byte_symbols_present,
                "missing_bytes": self.missing_bytes,
                "continuation_tokens": self.continuation_tokens,
                "continuation_share": self.continuation_share,
                "partial_byte_tokens": self.partial_byte_tokens,
                "length_chars": self.length_chars,
                "length_bytes": self.length_bytes,
                "scripts": self.scripts,
                "longest": [e.to_dict() for e in self.longest],
                "embedding": self.embedding.to_dict() if self.embedding is not None else None,
                **({"scores": self.scores.to_dict()} if self.scores is not None else {}),
                **(
                    {
                        "piece_types": {
                            kind: [{"piece": piece, "id": i} for piece, i in pieces]
                            for kind, pieces in self.piece_types.items()
                        }
                    }
                    if self.piece_types is not None
                    else {}
                ),
            }
        )


def _piece_types_line(piece_types: dict[str, list[tuple[str, int]]]) -> str:
    """``3 control (<s> 1, </s> 2), 1 unknown (<unk> 0), 256 byte (<0x00> 3 … <0xFF> 258)``."""
    parts = []
    for kind, pieces in piece_types.items():
        if not pieces:
            continue
        shown = [f"{piece} {i}" for piece, i in pieces]
        if len(shown) > 8:
            shown = [shown[0], "…", shown[-1]]
        parts.append(f"{len(pieces)} {kind.lower().replace('_', '-')} ({', '.join(shown)})")
    return ", ".join(parts) or "-"


def sentencepiece_piece_types(tokenizer: Any) -> dict[str, list[tuple[str, int]]] | None:
    """The non-NORMAL pieces of a ``.model`` by type, or None for other tokenizers."""
    model = getattr(tokenizer, "spm_model", None)
    if model is None:
        return None
    from toktools.sentencepiece.model_file import TYPE_NAMES

    out: dict[str, list[tuple[str, int]]] = {name: [] for code, name in TYPE_NAMES.items() if name != "NORMAL"}
    for i, piece in enumerate(model.pieces):
        name = TYPE_NAMES.get(piece.type)
        if name in out:
            out[name].append((piece.piece, i))
    return out


def vocab_stats(tokenizer: Tokenizer, top: int = 20) -> VocabStats:
    """Size, special tokens, alphabet, length histograms (characters and bytes of the surface),
    share of continuation pieces, coverage by script and the ``top`` longest tokens.

    Alphabet: for byte-level BPE, the byte symbols present as tokens (in byte order) and the
    bytes missing (hex; GPT-2 has all 256); for WordPiece, the single-character tokens (not
    ``##c``), sorted by code point.
    """
    vocab = tokenizer.get_vocab()
    specials = token_view.special_tokens(tokenizer)
    piece_types = sentencepiece_piece_types(tokenizer)
    if piece_types is not None:  # sentencepiece never produces these from text: <unk> too
        specials = {**specials, **dict(piece_types["CONTROL"] + piece_types["UNKNOWN"])}
    bytelevel = token_view.is_byte_level(tokenizer)
    model_vocab = token_view.model_vocab(tokenizer)

    length_chars: Counter[int] = Counter()
    length_bytes: Counter[int] = Counter()
    scripts: Counter[str] = Counter()
    continuation = partial = counted = 0
    entries: list[TokenEntry] = []
    scored: list[TokenEntry] = []
    singles: set[str] = set()
    model = tokenizer.model
    for token, token_id in vocab.items():
        if token in specials:
            continue
        counted += 1
        s = surface_of(tokenizer, token)
        score = _piece_score(model, token, token_id) if token in model_vocab else None
        length_bytes[len(s.raw)] += 1
        scripts[script_of_surface(s)] += 1
        continuation += s.continuation
        if score is not None:
            scored.append(
                TokenEntry(token_id, token, s.text, len(s.text) if s.text is not None else None, len(s.raw), score)
            )
        if s.text is None:
            partial += 1
        else:
            length_chars[len(s.text)] += 1
            entries.append(TokenEntry(token_id, token, s.text, len(s.text), len(s.raw), score))
            if not bytelevel and not s.continuation and len(s.text) == 1:
                singles.add(s.text)

    if bytelevel:
        alphabet, missing, byte_symbols_present = _byte_alphabet(model_vocab)
    else:
        alphabet, missing, byte_symbols_present = sorted(singles), [], None
    entries.sort(key=lambda e: (-(e.chars or 0), -e.bytes, e.id))
    return VocabStats(
        kind=token_view.family(tokenizer),
        vocab_size=tokenizer.vocab_size,
        model_vocab_size=len(model_vocab),
        added_tokens=len(token_view.added_tokens(tokenizer)),
        special_tokens=sorted(specials.items(), key=lambda item: (item[1], item[0])),
        counted=counted,
        alphabet=alphabet,
        alphabet_size=len(alphabet),
        byte_symbols_present=byte_symbols_present,
        missing_bytes=missing,
        continuation_tokens=continuation,
        continuation_share=(
            None
            if bytelevel and not token_view.view(tokenizer).continuing_subword_prefix
            else ratio(continuation, counted)
        ),
        partial_byte_tokens=partial,
        length_chars=dict(sorted(length_chars.items())),
        length_bytes=dict(sorted(length_bytes.items())),
        scripts=dict(sorted(scripts.items(), key=lambda item: (-item[1], item[0]))),
        longest=entries[:top],
        embedding=EmbeddingCost(tokenizer.vocab_size),
        scores=_score_stats(scored, top),
        piece_types=piece_types,
    )


def _byte_alphabet(model_vocab: Mapping[str, int]) -> tuple[list[str], list[str], int | None]:
    """Byte-level BPE: the byte symbols present as tokens (in byte order), the bytes missing
    (hex), and how many are present."""
    present = [b for b in range(256) if BYTE_TO_SYMBOL[b] in model_vocab]
    missing = [f"{b:02X}" for b in range(256) if BYTE_TO_SYMBOL[b] not in model_vocab]
    return [BYTE_TO_SYMBOL[b] for b in present], missing, len(present)


def _score_stats(scored: list[TokenEntry], top: int) -> ScoreStats | None:
    """The scores' range and mean, and the ``top`` pieces at either end (None without scores)."""
    if not scored:
        return None
    values = [e.score for e in scored if e.score is not None]  # all of them
    by_score = sorted(scored, key=lambda e: (-e.score, e.id))  # type: ignore[operator]
    return ScoreStats(min(values), max(values), math.fsum(values) / len(values), by_score[:top], by_score[::-1][:top])
