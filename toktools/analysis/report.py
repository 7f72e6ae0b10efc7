"""Reports about tokenizers: vocabulary statistics, one token's anatomy, corpus usage,
segmentation metrics, and side-by-side alignment of several tokenizers on one text.

Everything here works through the :class:`~toktools.tokenizer.Tokenizer` protocol and returns
dataclasses; each has ``.to_dict()`` giving plain JSON data (string keys, lists, numbers,
strings, ``None``) such that ``json.loads(json.dumps(d)) == d`` — the stable ``--json`` output
of ``toktools inspect`` and ``toktools compare``. The CLI renders the same objects with rich;
:meth:`Alignment.render_plain`, :func:`render_metrics_plain` and :meth:`MergeNode.render` are the
plain-text views for ``NO_COLOR`` / non-terminal output.

Definitions used throughout (they matter for the numbers):

* **surface** of a token: the text it stands for. Byte-level tokens are decoded from their byte
  symbols (``ĠHello`` → ``" Hello"``); a byte-level token whose bytes are not valid UTF-8 on their
  own (``æĪ`` = E6 88, two thirds of ``我``) has no surface, only bytes ("partial bytes").
  WordPiece continuation pieces lose their prefix (``##ing`` → ``ing``). What a token stands
  for, how it is shown and which tokens are unknown or special is asked of
  :mod:`toktools.analysis.token_view`, the one module that knows the models.
* **special tokens** (added tokens flagged special: ``[CLS]``, ``<|endoftext|>``…) are listed on
  their own and left out of the histograms, script coverage, longest tokens and unused counts.
* segmentation metrics (chars/token, bytes/token, tokens/word, split words, UNK rate, byte
  pieces, sequence lengths) have one definition each, in :mod:`toktools.analysis.segstats`.
* Encodings are computed **without special tokens, truncation or padding** (a published
  ``tokenizer.json`` may carry ``truncation: 50`` or ``padding: Fixed(128)``; metrics must see the
  whole text and nothing else). The tokenizer passed in is not modified.
"""

from __future__ import annotations

import bisect
import math
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from toktools.analysis import token_view
from toktools.analysis.segstats import Document, SegmentStats, Tally
from toktools.errors import ToktoolsError
from toktools.models.bpe.bytelevel import BYTE_TO_SYMBOL, SYMBOL_TO_BYTE, text_to_symbols
from toktools.tokenizer import Tokenizer

__all__ = [
    "ScriptName",
    "script_of_char",
    "script_of_text",
    "TokenEntry",
    "VocabStats",
    "vocab_stats",
    "MergeNode",
    "TokenInfo",
    "token_info",
    "merge_tree",
    "UsageStats",
    "corpus_usage",
    "Metrics",
    "segment_metrics",
    "TokenSpan",
    "SegmentationRow",
    "DiffSpan",
    "Alignment",
    "align_segmentations",
    "Comparison",
    "compare",
    "render_metrics_plain",
]

ScriptName = str

# ---------------------------------------------------------------------------------------------
# Unicode scripts (a compact table; no dependency)
# ---------------------------------------------------------------------------------------------

#: (first, last, script) for the main scripts' blocks. Only letters and marks are looked up here:
#: digits, punctuation, symbols, spaces and controls are "Common" by their general category
#: first, so the ASCII punctuation inside "Basic Latin" never counts as Latin.
_SCRIPT_RANGES: tuple[tuple[int, int, str], ...] = (
    (0x0041, 0x005A, "Latin"),
    (0x0061, 0x007A, "Latin"),
    (0x00AA, 0x00AA, "Latin"),
    (0x00B5, 0x00B5, "Common"),
    (0x00BA, 0x00BA, "Latin"),
    (0x00C0, 0x024F, "Latin"),
    (0x0250, 0x02B8, "Latin"),
    (0x02B9, 0x02DF, "Common"),
    (0x02E0, 0x02E4, "Latin"),
    (0x02E5, 0x02FF, "Common"),
    (0x0300, 0x036F, "Inherited"),
    (0x0370, 0x03FF, "Greek"),
    (0x0400, 0x052F, "Cyrillic"),
    (0x0530, 0x058F, "Armenian"),
    (0x0590, 0x05FF, "Hebrew"),
    (0x0600, 0x06FF, "Arabic"),
    (0x0700, 0x074F, "Syriac"),
    (0x0750, 0x077F, "Arabic"),
    (0x0780, 0x07BF, "Thaana"),
    (0x08A0, 0x08FF, "Arabic"),
    (0x0900, 0x097F, "Devanagari"),
    (0x0980, 0x09FF, "Bengali"),
    (0x0A00, 0x0A7F, "Gurmukhi"),
    (0x0A80, 0x0AFF, "Gujarati"),
    (0x0B00, 0x0B7F, "Oriya"),
    (0x0B80, 0x0BFF, "Tamil"),
    (0x0C00, 0x0C7F, "Telugu"),
    (0x0C80, 0x0CFF, "Kannada"),
    (0x0D00, 0x0D7F, "Malayalam"),
    (0x0D80, 0x0DFF, "Sinhala"),
    (0x0E00, 0x0E7F, "Thai"),
    (0x0E80, 0x0EFF, "Lao"),
    (0x0F00, 0x0FFF, "Tibetan"),
    (0x1000, 0x109F, "Myanmar"),
    (0x10A0, 0x10FF, "Georgian"),
    (0x1100, 0x11FF, "Hangul"),
    (0x1200, 0x139F, "Ethiopic"),
    (0x13A0, 0x13FF, "Cherokee"),
    (0x1780, 0x17FF, "Khmer"),
    (0x1800, 0x18AF, "Mongolian"),
    (0x1AB0, 0x1AFF, "Inherited"),
    (0x1C80, 0x1C8F, "Cyrillic"),
    (0x1C90, 0x1CBF, "Georgian"),
    (0x1D00, 0x1DBF, "Latin"),
    (0x1DC0, 0x1DFF, "Inherited"),
    (0x1E00, 0x1EFF, "Latin"),
    (0x1F00, 0x1FFF, "Greek"),
    (0x2070, 0x209F, "Latin"),
    (0x20D0, 0x20FF, "Inherited"),
    (0x2100, 0x214F, "Common"),
    (0x2C60, 0x2C7F, "Latin"),
    (0x2D00, 0x2D2F, "Georgian"),
    (0x2DE0, 0x2DFF, "Cyrillic"),
    (0x2E80, 0x2FDF, "Han"),
    (0x3005, 0x3005, "Han"),
    (0x3007, 0x3007, "Han"),
    (0x3021, 0x3029, "Han"),
    (0x3038, 0x303B, "Han"),
    (0x3040, 0x309F, "Hiragana"),
    (0x30A0, 0x30FF, "Katakana"),
    (0x3100, 0x312F, "Bopomofo"),
    (0x3130, 0x318F, "Hangul"),
    (0x31A0, 0x31BF, "Bopomofo"),
    (0x31F0, 0x31FF, "Katakana"),
    (0x3400, 0x4DBF, "Han"),
    (0x4E00, 0x9FFF, "Han"),
    (0xA640, 0xA69F, "Cyrillic"),
    (0xA720, 0xA7FF, "Latin"),
    (0xA8E0, 0xA8FF, "Devanagari"),
    (0xA960, 0xA97F, "Hangul"),
    (0xAB30, 0xAB6F, "Latin"),
    (0xAC00, 0xD7FF, "Hangul"),
    (0xF900, 0xFAFF, "Han"),
    (0xFB00, 0xFB06, "Latin"),
    (0xFB13, 0xFB17, "Armenian"),
    (0xFB1D, 0xFB4F, "Hebrew"),
    (0xFB50, 0xFDFF, "Arabic"),
    (0xFE00, 0xFE0F, "Inherited"),
    (0xFE20, 0xFE2F, "Inherited"),
    (0xFE70, 0xFEFF, "Arabic"),
    (0xFF21, 0xFF3A, "Latin"),
    (0xFF41, 0xFF5A, "Latin"),
    (0xFF66, 0xFF9F, "Katakana"),
    (0xFFA0, 0xFFDC, "Hangul"),
    (0x1B000, 0x1B0FF, "Hiragana"),
    (0x20000, 0x323AF, "Han"),
    (0xE0100, 0xE01EF, "Inherited"),
)
_SCRIPT_STARTS = [lo for lo, _, _ in _SCRIPT_RANGES]
_script_cache: dict[str, str] = {}

#: Scripts that do not make a token "Mixed": they go with any script.
_NEUTRAL = frozenset({"Common", "Inherited"})


def script_of_char(ch: str) -> ScriptName:
    """The script of one character: "Common" for digits, punctuation, symbols, spaces and
    controls (by general category), "Inherited" for combining marks, the script of its block for
    letters, and "Other" for letters of scripts outside the table."""
    found = _script_cache.get(ch)
    if found is not None:
        return found
    category = unicodedata.category(ch)
    if category[0] in "NPSZC":
        script = "Common"
    else:
        cp = ord(ch)
        index = bisect.bisect_right(_SCRIPT_STARTS, cp) - 1
        if index >= 0 and cp <= _SCRIPT_RANGES[index][1]:
            script = _SCRIPT_RANGES[index][2]
        else:
            script = "Inherited" if category[0] == "M" else "Other"
    _script_cache[ch] = script
    return script


def script_of_text(text: str) -> ScriptName:
    """One script for a piece of text: the single script of its letters ("Common" and
    "Inherited" characters go with any script), "Common" if it has no letters, "Mixed" if its
    letters belong to several scripts (``"漢字かな"`` is Mixed, ``"ab1,"`` is Latin)."""
    scripts = {script_of_char(ch) for ch in text} - _NEUTRAL
    if not scripts:
        return "Common"
    if len(scripts) == 1:
        return scripts.pop()
    return "Mixed"


# ---------------------------------------------------------------------------------------------
# Surfaces of tokens
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Surface:
    text: str | None  # None: bytes that are not valid UTF-8 on their own
    raw: bytes
    continuation: bool  # a "##" piece (or a BPE model's continuing-subword piece)


def _surface(tokenizer: Any, token: str) -> _Surface:
    raw = token_view.token_bytes(tokenizer, token)
    try:
        text: str | None = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    return _Surface(text, raw, token_view.is_continuation(tokenizer, token))


def _script_of_surface(surface: _Surface) -> ScriptName:
    return "Partial bytes" if surface.text is None else script_of_text(surface.text)


def _hex(raw: bytes) -> str:
    return " ".join(f"{b:02X}" for b in raw)


def _encode(tokenizer: Tokenizer, text: str) -> Any:
    return token_view.without_truncation(tokenizer).encode(text, add_special_tokens=False)


def _ratio(numerator: float, denominator: float) -> float | None:
    return numerator / denominator if denominator else None


def _jsonable(value: Any) -> Any:
    """Floats rounded to 6 digits (stable text), NaN/inf → None, tuples → lists, recursively."""
    if isinstance(value, float):
        return round(value, 6) if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


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


# ---------------------------------------------------------------------------------------------
# 1. Vocabulary statistics
# ---------------------------------------------------------------------------------------------


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
        return _jsonable(
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

    def script_share(self, script: str) -> float:
        return self.scripts.get(script, 0) / self.counted if self.counted else 0.0

    def render_plain(self, bar_width: int = 40) -> str:
        """The statistics as plain text (what ``inspect`` prints without colour)."""
        lines = [
            f"kind            {self.kind}",
            f"vocabulary      {self.vocab_size} ({self.model_vocab_size} in the model, {self.added_tokens} added)",
            "special tokens  " + (", ".join(f"{c} ({i})" for c, i in self.special_tokens) or "-"),
        ]
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
        return _jsonable(
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
            }
        )


def vocab_stats(tokenizer: Tokenizer, top: int = 20) -> VocabStats:
    """Size, special tokens, alphabet, length histograms (characters and bytes of the surface),
    share of continuation pieces, coverage by script and the ``top`` longest tokens.

    Alphabet: for byte-level BPE, the byte symbols present as tokens (in byte order) and the
    bytes missing (hex; GPT-2 has all 256); for WordPiece, the single-character tokens (not
    ``##c``), sorted by code point.
    """
    vocab = tokenizer.get_vocab()
    specials = token_view.special_tokens(tokenizer)
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
        s = _surface(tokenizer, token)
        score = _piece_score(model, token, token_id) if token in model_vocab else None
        length_bytes[len(s.raw)] += 1
        scripts[_script_of_surface(s)] += 1
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
        present = [b for b in range(256) if BYTE_TO_SYMBOL[b] in model_vocab]
        alphabet = [BYTE_TO_SYMBOL[b] for b in present]
        missing = [f"{b:02X}" for b in range(256) if BYTE_TO_SYMBOL[b] not in model_vocab]
        byte_symbols_present: int | None = len(present)
    else:
        alphabet = sorted(singles)
        missing, byte_symbols_present = [], None

    entries.sort(key=lambda e: (-(e.chars or 0), -e.bytes, e.id))
    scores = None
    if scored:
        values = [e.score for e in scored]
        by_score = sorted(scored, key=lambda e: (-e.score, e.id))  # type: ignore[operator]
        scores = ScoreStats(
            min(values),
            max(values),
            math.fsum(values) / len(values),  # type: ignore[arg-type]
            by_score[:top],
            by_score[::-1][:top],
        )
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
            else _ratio(continuation, counted)
        ),
        partial_byte_tokens=partial,
        length_chars=dict(sorted(length_chars.items())),
        length_bytes=dict(sorted(length_bytes.items())),
        scripts=dict(sorted(scripts.items(), key=lambda item: (-item[1], item[0]))),
        longest=entries[:top],
        embedding=EmbeddingCost(tokenizer.vocab_size),
        scores=scores,
    )


# ---------------------------------------------------------------------------------------------
# 2. One token: bytes, symbols, merge tree
# ---------------------------------------------------------------------------------------------


@dataclass
class MergeNode:
    """A node of a BPE merge tree. ``rank`` is the 0-based index of the merge that produced
    ``token`` in the merges list (line ``rank + 1`` of ``merges.txt`` after its header); leaves
    (no merge produced them: the byte symbols) have ``rank`` None and no children."""

    token: str
    id: int | None
    rank: int | None
    hex: str
    readable: str = ""
    left: MergeNode | None = None
    right: MergeNode | None = None

    @property
    def children(self) -> list[MergeNode]:
        return [c for c in (self.left, self.right) if c is not None]

    def leaves(self) -> list[MergeNode]:
        """The leaves from left to right (their tokens concatenate to this token)."""
        if not self.children:
            return [self]
        return [leaf for child in self.children for leaf in child.leaves()]

    def depth(self) -> int:
        return 1 + max((c.depth() for c in self.children), default=0)

    def to_dict(self) -> dict[str, Any]:
        return {
            "token": self.token,
            "readable": self.readable,
            "id": self.id,
            "rank": self.rank,
            "hex": self.hex,
            "children": [c.to_dict() for c in self.children],
        }

    def render(self) -> str:
        """A plain-text tree, one node a line::

        ĠHello  id 18435  merge 18171  (20 48 65 6C 6C 6F)
        ├── ĠH  id 367  merge 258  (20 48)
        │   ├── Ġ  id 220  byte 20
        ...
        """
        lines: list[str] = []

        def label(node: MergeNode) -> str:
            ident = f"id {node.id}" if node.id is not None else "not in vocab"
            shown = f"{node.token}  «{node.readable}»" if node.readable and node.readable != node.token else node.token
            if node.rank is None:
                if len(node.token) == 1 and node.token in SYMBOL_TO_BYTE:
                    return f"{shown}  {ident}  byte {node.hex}"
                return f"{shown}  {ident}  (no merge)  ({node.hex})"
            return f"{shown}  {ident}  merge {node.rank}  ({node.hex})"

        def walk(node: MergeNode, lead: str, tail: str) -> None:
            lines.append(lead + label(node))
            children = node.children
            for index, child in enumerate(children):
                last = index == len(children) - 1
                walk(child, tail + ("└── " if last else "├── "), tail + ("    " if last else "│   "))

        walk(self, "", "")
        return "\n".join(lines)


@dataclass
class TokenInfo:
    """What ``toktools inspect TOK --token X`` shows about one token."""

    id: int
    token: str
    kind: str
    readable: str
    special: bool
    added: bool
    continuation: bool
    surface: str | None
    hex: str
    bytes: int
    chars: int | None
    byte_symbols: str
    script: str
    merge_tree: MergeNode | None
    note: str | None = None
    #: the model's score (Unigram log-probability); None for models without scores
    score: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "token": self.token,
            "kind": self.kind,
            "readable": self.readable,
            "special": self.special,
            "added": self.added,
            "continuation": self.continuation,
            "surface": self.surface,
            "hex": self.hex,
            "bytes": self.bytes,
            "chars": self.chars,
            "byte_symbols": self.byte_symbols,
            "script": self.script,
            "merge_tree": self.merge_tree.to_dict() if self.merge_tree is not None else None,
            "note": self.note,
            **({"score": self.score} if self.score is not None else {}),
        }

    def render_plain(self) -> str:
        flags = [
            name
            for name, on in (("special", self.special), ("added", self.added), ("continuation", self.continuation))
            if on
        ]
        lines = [
            f"token         {self.token}" + (f"  ({', '.join(flags)})" if flags else ""),
            f"reads as      {self.readable}",
            f"id            {self.id}",
            f"surface       {self.surface!r}" if self.surface is not None else "surface       (partial UTF-8 bytes)",
            f"bytes         {self.hex}  ({self.bytes} bytes)",
            f"byte symbols  {self.byte_symbols}",
            f"script        {self.script}",
        ]
        if self.score is not None:
            lines.append(f"score         {self.score!r}")
        if self.note:
            lines.append(f"note          {self.note}")
        if self.merge_tree is not None:
            lines += ["", "merge tree", self.merge_tree.render()]
        return "\n".join(lines) + "\n"


def merge_tree(tokenizer: Tokenizer, token: str) -> MergeNode:
    """How BPE built ``token``: the merge ``(a, b)`` with ``a + b == token`` of lowest rank (the
    one that created it while training), then the same for ``a`` and ``b``, down to tokens no
    merge produced (the byte symbols)."""

    def build(t: str) -> MergeNode:
        node = MergeNode(
            t,
            tokenizer.token_to_id(t),
            None,
            _hex(token_view.token_bytes(tokenizer, t)),
            token_view.readable(tokenizer, t),
        )
        found = token_view.merge_of(tokenizer, t)
        if found is not None:
            node.rank = found[0]
            node.left, node.right = build(found[1]), build(found[2])
        return node

    return build(token)


def _resolve_token(tokenizer: Tokenizer, token_or_id: int | str) -> tuple[int, str]:
    if isinstance(token_or_id, int):
        token = tokenizer.id_to_token(token_or_id)
        if token is None:
            raise ToktoolsError(f"no token has id {token_or_id} (vocabulary size {tokenizer.vocab_size})")
        return token_or_id, token
    token_id = tokenizer.token_to_id(token_or_id)
    if token_id is not None:
        return token_id, token_or_id
    if token_view.is_byte_level(tokenizer):
        symbols = text_to_symbols(token_or_id)  # " Hello" → "ĠHello"
        token_id = tokenizer.token_to_id(symbols)
        if token_id is not None:
            return token_id, symbols
    metaspace = token_view.view(tokenizer).metaspace
    if metaspace and " " in token_or_id:
        spelled = token_or_id.replace(" ", metaspace)  # " the" → "▁the" (sentencepiece, Metaspace)
        token_id = tokenizer.token_to_id(spelled)
        if token_id is not None:
            return token_id, spelled
    hint = ""
    if token_or_id:
        pieces = [token_view.readable(tokenizer, t) for t in _encode(tokenizer, token_or_id).tokens]
        if len(pieces) > 1:
            hint = f"; as text it encodes to {len(pieces)} tokens: {' | '.join(pieces)}"
        if token_or_id.isdigit():
            hint += f" (for the token with id {token_or_id}, use --id {token_or_id})"
    raise ToktoolsError(f"{token_or_id!r} is not a token of this vocabulary{hint}")


def token_info(tokenizer: Tokenizer, token_or_id: int | str) -> TokenInfo:
    """Everything about one token, given as an id (an ``int``) or a string: a token string
    (``"ĠHello"``) or — for byte-level BPE — the text it stands for (``" Hello"``). A string is
    never read as an id (``"1990"`` is a token of GPT-2). Raises :class:`ToktoolsError` when
    nothing matches."""
    token_id, token = _resolve_token(tokenizer, token_or_id)
    note = None
    if isinstance(token_or_id, str) and token == token_or_id and token_view.is_byte_level(tokenizer):
        symbols = text_to_symbols(token_or_id)
        if symbols != token_or_id:  # "²" is a byte symbol (B2) and also a text (C2 B2): say which was taken
            other = tokenizer.token_to_id(symbols)
            as_text = (
                f"the token {symbols} (id {other})"
                if other is not None
                else f"{len(_encode(tokenizer, token_or_id).ids)} tokens"
            )
            note = f"taken as a token string; as text, {token_or_id!r} is {as_text}"
    added = token_view.added_tokens(tokenizer)
    specials = token_view.special_tokens(tokenizer)
    s = _surface(tokenizer, token)
    is_added = token in added
    tree = None
    if token_view.merges(tokenizer) is not None and not is_added:
        tree = merge_tree(tokenizer, token)
    return TokenInfo(
        id=token_id,
        token=token,
        kind=token_view.family(tokenizer),
        readable=token_view.readable(tokenizer, token),
        special=token in specials,
        added=is_added,
        continuation=s.continuation,
        surface=s.text,
        hex=_hex(s.raw),
        bytes=len(s.raw),
        chars=len(s.text) if s.text is not None else None,
        byte_symbols="".join(BYTE_TO_SYMBOL[b] for b in s.raw),
        script=_script_of_surface(s),
        merge_tree=tree,
        note=note,
        score=tokenizer.model.score(token_id) if tokenizer.model.id_to_token(token_id) == token else None,
    )


# ---------------------------------------------------------------------------------------------
# 3. Vocabulary use on a corpus
# ---------------------------------------------------------------------------------------------


@dataclass
class UsageStats:
    """What ``--corpus F`` adds to ``inspect``. ``vocab_considered`` is the vocabulary without the
    special tokens; ``unused`` counts those entries never produced on the corpus."""

    lines: int
    characters: int
    words: int
    tokens: int
    distinct_used: int
    vocab_considered: int
    unused: int
    unused_share: float | None
    unused_sample: list[tuple[int, str]]
    unk_token: str | None
    unk_count: int
    unk_rate: float | None
    most_common: list[tuple[int, str, int]]

    def to_dict(self) -> dict[str, Any]:
        return _jsonable(
            {
                "lines": self.lines,
                "characters": self.characters,
                "words": self.words,
                "tokens": self.tokens,
                "distinct_used": self.distinct_used,
                "vocab_considered": self.vocab_considered,
                "unused": self.unused,
                "unused_share": self.unused_share,
                "unused_sample": [{"id": i, "token": t} for i, t in self.unused_sample],
                "unk_token": self.unk_token,
                "unk_count": self.unk_count,
                "unk_rate": self.unk_rate,
                "most_common": [{"id": i, "token": t, "count": c} for i, t, c in self.most_common],
            }
        )

    def render_plain(self) -> str:
        def pct(value: float | None) -> str:
            return "-" if value is None else f"{value:.2%}"

        lines = [
            f"corpus          {self.lines} lines, {self.words} words, {self.characters} characters",
            f"tokens          {self.tokens} ({self.distinct_used} distinct)",
            f"unused          {self.unused} of {self.vocab_considered} ({pct(self.unused_share)})",
            f"unknown         {self.unk_count} ({pct(self.unk_rate)})"
            + (f" {self.unk_token}" if self.unk_token else " (no unk token)"),
        ]
        if self.unused_sample:
            lines.append("unused sample   " + " ".join(f"«{t}»" for _, t in self.unused_sample))
        if self.most_common:
            lines += ["", "most common tokens"]
            width = max(len(str(c)) for _, _, c in self.most_common)
            for token_id, token, count in self.most_common:
                share = f"{count / self.tokens:6.2%}" if self.tokens else ""
                lines.append(f"  {count:>{width}}  {share}  {token_id:>7}  «{token}»")
        return "\n".join(lines) + "\n"


def corpus_usage(
    tokenizer: Tokenizer, lines: Iterable[str], *, sample: int = 20, top: int = 20, workers: int | None = None
) -> UsageStats:
    """Encode every line (its trailing ``\\n`` / ``\\r\\n`` removed; no special tokens) and count
    which tokens are used. The unused sample is the ``sample`` lowest ids never seen; lines are
    encoded in batches (in parallel for large corpora, see ``Tokenizer.encode_batch``)."""
    plain = token_view.without_truncation(tokenizer)
    counts: Counter[int] = Counter()
    n_lines = n_chars = n_words = 0
    from toktools.corpus.reading import batched

    for chunk in batched(lines, 20_000):
        chunk = [line[:-2] if line.endswith("\r\n") else line[:-1] if line.endswith("\n") else line for line in chunk]
        n_lines += len(chunk)
        n_chars += sum(len(line) for line in chunk)
        n_words += sum(len(line.split()) for line in chunk)
        for encoding in plain.encode_batch(chunk, add_special_tokens=False, workers=workers):
            counts.update(encoding.ids)
    vocab = tokenizer.get_vocab()
    specials = token_view.special_tokens(tokenizer)
    considered = {i: t for t, i in vocab.items() if t not in specials}
    unused_ids = sorted(i for i in considered if i not in counts)
    unk_id = token_view.unk_id(tokenizer)
    unk_count = counts.get(unk_id, 0) if unk_id is not None else 0
    total = sum(counts.values())
    most = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:top]
    return UsageStats(
        lines=n_lines,
        characters=n_chars,
        words=n_words,
        tokens=total,
        distinct_used=len(counts),
        vocab_considered=len(considered),
        unused=len(unused_ids),
        unused_share=_ratio(len(unused_ids), len(considered)),
        unused_sample=[(i, token_view.readable(tokenizer, considered[i])) for i in unused_ids[:sample]],
        unk_token=tokenizer.id_to_token(unk_id) if unk_id is not None else None,
        unk_count=unk_count,
        unk_rate=_ratio(unk_count, total),
        most_common=[(i, token_view.readable(tokenizer, tokenizer.id_to_token(i) or ""), c) for i, c in most],
    )


# ---------------------------------------------------------------------------------------------
# 4. Segmentation metrics
# ---------------------------------------------------------------------------------------------


#: One tokenizer's statistics on a text or a corpus (definitions in :mod:`toktools.analysis.segstats`).
Metrics = SegmentStats


def _metrics(tokenizer: Tokenizer, text: str, encoding: Any) -> Metrics:
    tally = Tally(tokenizer)
    tally.add(Document(text), encoding.ids, encoding.offsets)
    return tally.stats()


def segment_metrics(tokenizer: Tokenizer, text: str) -> Metrics:
    """Tokens, chars/token, bytes/token, tokens/word, split words, UNK rate and byte pieces of
    ``tokenizer`` on ``text``, taken as one document (see :mod:`toktools.analysis.segstats`)."""
    return _metrics(tokenizer, text, _encode(tokenizer, text))


# ---------------------------------------------------------------------------------------------
# 5. Alignment of several segmentations
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TokenSpan:
    """One token located in the text: character offsets (from the encoding) and the UTF-8 byte
    range it stands for, spaces it owns included (GPT-2's ``Ġcut`` covers `` cut``). Byte-level
    tokens cut inside a character share its character offsets but have their own byte
    sub-range; such a token is ``partial``. ``unknown``: the model's UNK token."""

    id: int
    token: str
    readable: str
    char_start: int
    char_end: int
    byte_start: int
    byte_end: int
    partial: bool
    unknown: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "token": self.token,
            "readable": self.readable,
            "char_start": self.char_start,
            "char_end": self.char_end,
            "byte_start": self.byte_start,
            "byte_end": self.byte_end,
            "partial": self.partial,
            "unknown": self.unknown,
        }


@dataclass
class SegmentationRow:
    """One tokenizer's segmentation of the text.

    ``boundaries`` (characters) and ``byte_boundaries`` (bytes) are the positions where a token
    starts or ends, after trimming whitespace from each token's ends: whitespace is neutral, so
    BERT's ``world`` and GPT-2's ``Ġworld`` (which owns the space before it) have the same
    boundaries, and only real differences count. ``byte_boundaries`` also holds cuts inside a
    character; ``boundaries`` does not. ``drawn`` are the character positions where a token
    really starts or ends, spaces it owns included: what the aligned view draws.
    """

    name: str
    kind: str
    spans: list[TokenSpan]
    boundaries: list[int]
    byte_boundaries: list[int]
    drawn: list[int]

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "spans": [s.to_dict() for s in self.spans],
            "boundaries": self.boundaries,
            "byte_boundaries": self.byte_boundaries,
            "drawn": self.drawn,
        }


@dataclass(frozen=True)
class DiffSpan:
    """A minimal region where the tokenizers cut differently: between two consecutive boundaries
    that all tokenizers share, with at least one boundary inside that not all of them have.
    ``tokens`` lists, per tokenizer, the tokens that overlap the region."""

    char_start: int
    char_end: int
    byte_start: int
    byte_end: int
    text: str
    tokens: dict[str, list[str]]

    def to_dict(self) -> dict[str, Any]:
        return {
            "char_start": self.char_start,
            "char_end": self.char_end,
            "byte_start": self.byte_start,
            "byte_end": self.byte_end,
            "text": self.text,
            "tokens": {k: list(v) for k, v in self.tokens.items()},
        }


@dataclass
class Alignment:
    """Several segmentations of one text, on common character and byte offsets."""

    text: str
    rows: list[SegmentationRow]
    diffs: list[DiffSpan]

    @property
    def names(self) -> list[str]:
        return [row.name for row in self.rows]

    def row(self, name: str) -> SegmentationRow:
        for row in self.rows:
            if row.name == name:
                return row
        raise KeyError(name)

    @property
    def multibyte(self) -> bool:
        """True when the text has characters of more than one UTF-8 byte."""
        return not self.text.isascii()

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "rows": [r.to_dict() for r in self.rows], "diffs": [d.to_dict() for d in self.diffs]}

    def render_plain(self, width: int | None = None, byte_view: bool | None = None, legend: bool = True) -> str:
        """Plain text, one row per tokenizer, aligned on characters: ``|`` where a token starts
        or ends (spaces a token owns are drawn inside it: ``| cut|``), ``·`` where only another
        row cuts, ``?`` instead of ``|`` around an unknown token, a character cut between
        byte-level tokens drawn as its UTF-8 bytes with ``¦`` at the cut (``E6 88¦91``), invisible characters escaped (``\\u200d``), and a
        ``^`` row under the regions that differ. ``byte_view`` adds a block with every
        multi-byte character's bytes; ``width`` wraps long lines (None: no wrapping);
        ``legend`` explains the marks that occur."""
        return _render_alignment(self, width, bool(byte_view), legend)


class _ByteMap:
    """Character ↔ byte offsets of one text."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.data = text.encode("utf-8")
        self.char_start = [0]  # byte offset of each character start, plus the end
        for ch in text:
            self.char_start.append(self.char_start[-1] + len(ch.encode("utf-8")))
        self.char_of_byte = [i for i, ch in enumerate(text) for _ in range(len(ch.encode("utf-8")))]
        self.starts = set(self.char_start)

    def byte(self, char_offset: int) -> int:
        return self.char_start[min(max(char_offset, 0), len(self.text))]

    def char_floor(self, byte_offset: int) -> int:
        if byte_offset >= len(self.data):
            return len(self.text)
        return self.char_of_byte[byte_offset]

    def char_ceil(self, byte_offset: int) -> int:
        if byte_offset >= len(self.data):
            return len(self.text)
        c = self.char_of_byte[byte_offset]
        return c if self.char_start[c] == byte_offset else c + 1

    def core(self, b0: int, b1: int) -> tuple[int, int]:
        """The byte range without whitespace characters at its ends."""
        while b0 < b1 and b0 in self.starts and self.text[self.char_of_byte[b0]].isspace():
            b0 = self.char_start[self.char_of_byte[b0] + 1]
        while b1 > b0 and b1 in self.starts and self.text[self.char_of_byte[b1 - 1]].isspace():
            b1 = self.char_start[self.char_of_byte[b1 - 1]]
        return b0, b1


def _spans(tokenizer: Tokenizer, encoding: Any, bmap: _ByteMap) -> list[TokenSpan]:
    """Each token's byte range: byte-level tokens by walking their bytes through the text (so
    cuts inside a character and the spaces a token owns are kept, whatever the offsets say);
    other models from their character offsets."""
    bytelevel = token_view.is_byte_level(tokenizer)
    unk = token_view.unk_id(tokenizer)
    spans = []
    cursor = 0
    for token_id, token, (s, e) in zip(encoding.ids, encoding.tokens, encoding.offsets):
        lo, hi = bmap.byte(s), bmap.byte(e)
        b0, b1 = lo, hi
        if bytelevel:
            raw = token_view.token_bytes(tokenizer, token)
            start = cursor if cursor <= hi and bmap.data[cursor:lo].isspace() or lo <= cursor <= hi else lo
            if raw and bmap.data[start : start + len(raw)] == raw:
                b0, b1 = start, start + len(raw)
            elif raw[:1] == b" " and bmap.data[start : start + len(raw) - 1] == raw[1:]:
                b0, b1 = start, start + len(raw) - 1  # the prefix space added by add_prefix_space
            cursor = b1
        spans.append(
            TokenSpan(
                token_id,
                token,
                token_view.readable(tokenizer, token),
                s,
                e,
                b0,
                b1,
                b0 not in bmap.starts or b1 not in bmap.starts,
                token_id == unk,
            )
        )
    return spans


def _row(name: str, tokenizer: Tokenizer, encoding: Any, bmap: _ByteMap) -> SegmentationRow:
    text = bmap.text
    spans = _spans(tokenizer, encoding, bmap)
    byte_bounds: set[int] = set()
    drawn: set[int] = set()
    for span in spans:
        if span.byte_start < span.byte_end:
            drawn.update(b for b in (span.byte_start, span.byte_end) if b in bmap.starts)
        b0, b1 = bmap.core(span.byte_start, span.byte_end)
        if b0 < b1:
            byte_bounds.update((b0, b1))

    def chars(bounds: set[int]) -> list[int]:
        return sorted(bmap.char_of_byte[b] if b < len(bmap.data) else len(text) for b in bounds if b in bmap.starts)

    return SegmentationRow(
        name, token_view.family(tokenizer), spans, chars(byte_bounds), sorted(byte_bounds), chars(drawn)
    )


def _diffs(text: str, rows: list[SegmentationRow], bmap: _ByteMap) -> list[DiffSpan]:
    """The differing regions, in one sweep over each row's tokens (linear in the text)."""
    if len(rows) < 2:
        return []
    sets = [set(r.byte_boundaries) for r in rows]
    common = set.intersection(*sets) | {0, len(bmap.data)}
    differing = set.union(*sets) - common
    if not differing:
        return []
    anchors = sorted(common)
    regions = sorted(
        {(anchors[bisect.bisect_left(anchors, d) - 1], anchors[bisect.bisect_left(anchors, d)]) for d in differing}
    )
    cores = [[bmap.core(s.byte_start, s.byte_end) for s in row.spans] for row in rows]
    cursors = [0] * len(rows)
    out = []
    for b0, b1 in regions:
        c0, c1 = bmap.char_floor(b0), bmap.char_ceil(b1)
        tokens = {}
        for r, row in enumerate(rows):
            spans, core = row.spans, cores[r]
            i = cursors[r]
            while i < len(spans) and core[i][1] <= b0:  # tokens wholly before the region
                i += 1
            cursors[r] = i
            found = []
            while i < len(spans) and core[i][0] < b1:
                if max(b0, core[i][0]) < min(b1, core[i][1]):
                    found.append(spans[i].token)
                i += 1
            tokens[row.name] = found
        out.append(DiffSpan(c0, c1, b0, b1, text[c0:c1], tokens))
    return out


def align_segmentations(text: str, tokenizers: Mapping[str, Tokenizer] | Sequence[tuple[str, Tokenizer]]) -> Alignment:
    """Segment ``text`` with each tokenizer (no special tokens) and line the results up.

    Each token gets character offsets (from the encoding) and byte offsets (byte-level BPE: by
    walking the token strings, so cuts inside a character are kept; other models: from the
    character offsets). Boundaries are compared in bytes; a :class:`DiffSpan` is a minimal
    region between boundaries shared by all tokenizers where their cuts differ.
    """
    items = _items(tokenizers)
    return _align(text, [(name, tok, _encode(tok, text)) for name, tok in items])


def _items(tokenizers: Mapping[str, Tokenizer] | Sequence[tuple[str, Tokenizer]]) -> list[tuple[str, Tokenizer]]:
    items = list(tokenizers.items()) if isinstance(tokenizers, Mapping) else list(tokenizers)
    names = [name for name, _ in items]
    if len(set(names)) != len(names):
        raise ToktoolsError(f"tokenizer names must be distinct: {names}")
    return items


def _align(text: str, encoded: Sequence[tuple[str, Tokenizer, Any]]) -> Alignment:
    bmap = _ByteMap(text)
    rows = [_row(name, tok, encoding, bmap) for name, tok, encoding in encoded]
    return Alignment(text, rows, _diffs(text, rows, bmap))


# -- plain rendering ---------------------------------------------------------------------------


def _char_width(ch: str) -> int:
    if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me"):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def _text_width(s: str) -> int:
    return sum(_char_width(ch) for ch in s)


def _visible(ch: str, after_cut: bool) -> str:
    """How one character is drawn: a space as a space, invisible characters (other whitespace,
    controls, zero-width and format characters such as ZWJ) as escapes (``\\n``, ``\\u200d``),
    a combining mark that starts a column on a dotted circle."""
    if ch == " ":
        return " "
    escaped = token_view.escape_char(ch)
    if escaped != ch:
        return escaped
    if _char_width(ch) == 0:
        return ("◌" + ch) if after_cut else ch
    return ch


@dataclass
class _Column:
    width: int
    cells: list[str]  # one per line of the block (already padded to ``width``)
    gutter: bool = False  # a place where a line may be wrapped


def _pad(s: str, width: int) -> str:
    return s + " " * (width - _text_width(s))


def _lay_out(labels: list[str], columns: list[_Column], width: int | None, label_width: int) -> list[str]:
    """Label column + the columns, wrapped into blocks of at most ``width`` display columns
    (each block starting at a gutter when one is in reach, so tokens are cut between
    boundaries rather than anywhere)."""
    room = None if width is None else max(width - label_width, 8)
    blocks: list[list[_Column]] = [[]]
    used = 0
    for column in columns:
        block = blocks[-1]
        if room is not None and block and used + column.width > room:
            cut = max((i for i, c in enumerate(block) if c.gutter and i > 0), default=len(block))
            if sum(c.width for c in block[cut:]) + column.width > room:  # no gutter near enough
                cut = len(block)
            blocks[-1], carried = block[:cut], block[cut:]
            blocks.append(carried)
            used = sum(c.width for c in carried)
        blocks[-1].append(column)
        used += column.width
    lines: list[str] = []
    for number, block in enumerate([b for b in blocks if b] or [[]]):
        if number:
            lines.append("")
        for line_index, label in enumerate(labels):
            body = "".join(column.cells[line_index] for column in block)
            lines.append((_pad(label, label_width) + body).rstrip())
    return lines


def _filler(text: str, position: int) -> str:
    """What a row draws in a gutter where it does not cut (another row does): a space next to
    a space, else ``·`` so a word stays visibly one token (``|Anarch·ism|``)."""
    if 0 < position < len(text) and not text[position - 1].isspace() and not text[position].isspace():
        return "·"
    return " "


def _cuts_inside(row: SegmentationRow, bmap: _ByteMap) -> dict[int, set[int]]:
    """Characters a row cuts inside (between byte-level tokens): char → byte offsets of the cuts."""
    cuts: dict[int, set[int]] = {}
    for span in row.spans:
        for b in (span.byte_start, span.byte_end):
            if b not in bmap.starts:
                cuts.setdefault(bmap.char_of_byte[b], set()).add(b)
    return cuts


def _char_block(alignment: Alignment, bmap: _ByteMap) -> tuple[list[str], list[_Column], set[str]]:
    """The main view and the legend entries it needs."""
    text = alignment.text
    rows = alignment.rows
    drawn = [set(r.drawn) for r in rows]
    unknown_bounds = [{b for s in r.spans if s.unknown for b in (s.char_start, s.char_end)} for r in rows]
    cuts = [_cuts_inside(r, bmap) for r in rows]
    cut_chars = set().union(*cuts) if cuts else set()
    gutters = set().union(*drawn) if drawn else set()
    in_diff = [False] * (len(text) + 1)
    diff_gutter: set[int] = set()
    for d in alignment.diffs:
        for c in range(d.char_start, d.char_end):
            in_diff[c] = True
        diff_gutter.update(range(d.char_start + 1, d.char_end))
    used: set[str] = {"|"}
    if alignment.diffs:
        used.add("^")
    if any(unknown_bounds):
        used.add("?")
    if cut_chars:
        used.add("cut")
    labels = [r.name for r in rows] + (["diff"] if alignment.diffs else [])
    columns: list[_Column] = []
    for position in range(len(text) + 1):
        if position in gutters:
            cells = [
                "?" if position in u else "|" if position in b else _filler(text, position)
                for b, u in zip(drawn, unknown_bounds)
            ]
            if alignment.diffs:
                cells.append("^" if position in diff_gutter else " ")
            columns.append(_Column(1, cells, gutter=True))
        if position == len(text):
            break
        glyph = _visible(text[position], position in gutters)
        if glyph != text[position] and text[position] != " " and not glyph.startswith("◌"):
            used.add("escape")
        if position in cut_chars:
            b0, b1 = bmap.char_start[position], bmap.char_start[position + 1]
            hexes = [f"{x:02X}" for x in bmap.data[b0:b1]]
            w = max(_text_width(glyph), 3 * len(hexes) - 1)
            cells = []
            for row_cuts in cuts:
                inside = row_cuts.get(position)
                if inside is None:
                    cells.append(_pad(glyph, w))
                else:
                    cells.append(
                        _pad(
                            hexes[0]
                            + "".join(("¦" if b0 + k in inside else " ") + h for k, h in enumerate(hexes[1:], start=1)),
                            w,
                        )
                    )
        else:
            w = _text_width(glyph)
            cells = [glyph] * len(rows)
        if alignment.diffs:
            cells.append("^" * w if in_diff[position] else " " * w)
        columns.append(_Column(w, cells))
    if any(
        s.byte_start < s.byte_end and bmap.core(s.byte_start, s.byte_end) != (s.byte_start, s.byte_end)
        for r in rows
        for s in r.spans
    ):
        used.add("space")
    return labels, columns, used


def _byte_block(alignment: Alignment, bmap: _ByteMap) -> tuple[list[str], list[_Column]]:
    """The byte view: each multi-byte character as its hex bytes (under the character), with
    ``|`` where a tokenizer cuts — between characters in the gutters, inside a character in
    place of the space between two bytes (``E6 88|91``). One-byte characters stay as they are."""
    text = alignment.text
    rows = alignment.rows
    bounds = [set(r.byte_boundaries) for r in rows]
    gutter_bytes = {b for s in bounds for b in s if b in bmap.starts}
    labels = ["bytes"] + [r.name for r in rows]

    def multi(position: int) -> bool:
        return bmap.char_start[position + 1] - bmap.char_start[position] > 1

    columns: list[_Column] = []
    for position in range(len(text) + 1):
        b = bmap.char_start[position]
        if b in gutter_bytes:
            columns.append(_Column(1, [" "] + ["|" if b in s else " " for s in bounds], gutter=True))
        elif 0 < position < len(text) and (multi(position - 1) or multi(position)):
            columns.append(_Column(1, [" "] * (len(bounds) + 1)))  # keeps neighbours' hex apart
        if position == len(text):
            break
        raw = bmap.data[b : bmap.char_start[position + 1]]
        glyph = _visible(text[position], b in gutter_bytes)
        if len(raw) == 1:
            columns.append(_Column(_text_width(glyph), [glyph] * (len(bounds) + 1)))
            continue
        w = max(_text_width(glyph), 3 * len(raw) - 1)
        cells = [_pad(glyph, w)]
        hexes = [f"{x:02X}" for x in raw]
        for s in bounds:
            drawn = hexes[0] + "".join(("|" if b + k in s else " ") + h for k, h in enumerate(hexes[1:], start=1))
            cells.append(_pad(drawn, w))
        columns.append(_Column(w, cells))
    return labels, columns


_LEGEND = (
    ("|", "| token boundary   · no boundary here (another tokenizer cuts)"),
    ("space", "| cut| a space drawn inside bars belongs to that token (GPT-2's Ġ)"),
    ("^", "^ the tokenizers cut this region differently"),
    ("?", "?…? an unknown token (UNK): the text between ? is lost"),
    ("cut", "E6 88¦91 a character cut between byte-level tokens (at ¦), shown as its UTF-8 bytes"),
    ("escape", "\\n \\u200d invisible characters, escaped"),
)


def legend_lines(used: set[str]) -> list[str]:
    """The legend for the marks in ``used`` (``|``, ``space``, ``^``, ``?``, ``cut``, ``escape``)."""
    entries = [text for key, text in _LEGEND if key in used]
    return [("legend  " if i == 0 else "        ") + entry for i, entry in enumerate(entries)]


def _render_alignment(alignment: Alignment, width: int | None, byte_view: bool, legend: bool = True) -> str:
    if not alignment.rows:
        return ""
    bmap = _ByteMap(alignment.text)
    labels, columns, used = _char_block(alignment, bmap)
    blocks = [(labels, columns)]
    if byte_view:
        blocks.append(_byte_block(alignment, bmap))
    label_width = max(_text_width(label) for labels, _ in blocks for label in labels) + 2
    lines: list[str] = []
    for labels, columns in blocks:
        if lines:
            lines.append("")
        lines.extend(_lay_out(labels, columns, width, label_width))
    if legend:
        lines += [""] + legend_lines(used)
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# 6. Comparison: metrics + alignment
# ---------------------------------------------------------------------------------------------


_METRIC_COLUMNS = (
    ("tokens", "tokens", "{:d}"),
    ("chars_per_token", "chars/token", "{:.2f}"),
    ("bytes_per_token", "bytes/token", "{:.2f}"),
    ("tokens_per_word", "tokens/word", "{:.2f}"),
    ("split_share", "split words", "{:.1%}"),
    ("unk_rate", "UNK", "{:.2%}"),
    ("byte_piece_share", "byte pieces", "{:.2%}"),
)


def _table(header: list[str], body: list[list[str]]) -> str:
    widths = [max(_text_width(r[i]) for r in [header, *body]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        first = _pad(cells[0], widths[0])
        rest = [" " * (w - _text_width(c)) + c for c, w in zip(cells[1:], widths[1:])]
        return "  ".join([first, *rest]).rstrip()

    return "\n".join([line(header), *[line(r) for r in body]]) + "\n"


def render_metrics_plain(metrics: Mapping[str, Metrics], lengths: bool = False) -> str:
    """A plain-text table, one row per tokenizer (``-`` where a ratio is undefined); with
    ``lengths``, a second table of sequence lengths per document (special tokens included)."""
    header = ["tokenizer"] + [title for _, title, _ in _METRIC_COLUMNS]
    body = []
    for name, m in metrics.items():
        row = [name]
        for attribute, _, fmt in _METRIC_COLUMNS:
            value = getattr(m, attribute)
            row.append("-" if value is None else fmt.format(value))
        body.append(row)
    out = _table(header, body)
    if lengths:
        from toktools.analysis.segstats import THRESHOLDS

        header = ["sequence length", "documents", "+specials", "p50", "p90", "p99", "max"] + [
            f">{n}" for n in THRESHOLDS
        ]
        body = []
        for name, m in metrics.items():
            cells = [
                m.length_percentile(50),
                m.length_percentile(90),
                m.length_percentile(99),
                max(m.sequence_lengths, default=None),
            ]
            row = [name, str(m.documents), str(m.specials_per_sequence)] + ["-" if c is None else str(c) for c in cells]
            row += ["-" if m.over(n) is None else f"{m.over(n):.1%}" for n in THRESHOLDS]
            body.append(row)
        out += "\n" + _table(header, body)
    return out


@dataclass
class Comparison:
    """What ``toktools compare`` shows on one text: metrics per tokenizer and the alignment."""

    text: str
    metrics: dict[str, Metrics]
    alignment: Alignment

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "metrics": {name: m.to_dict() for name, m in self.metrics.items()},
            "alignment": self.alignment.to_dict(),
        }

    def render_plain(self, width: int | None = None, byte_view: bool | None = None) -> str:
        return self.alignment.render_plain(width, byte_view) + "\n" + render_metrics_plain(self.metrics)


def compare(tokenizers: Mapping[str, Tokenizer] | Sequence[tuple[str, Tokenizer]], text: str) -> Comparison:
    """Segment ``text`` with every tokenizer once; return the metrics of each and the alignment."""
    encoded = [(name, tok, _encode(tok, text)) for name, tok in _items(tokenizers)]
    metrics = {name: _metrics(tok, text, encoding) for name, tok, encoding in encoded}
    return Comparison(text, metrics, _align(text, encoded))
