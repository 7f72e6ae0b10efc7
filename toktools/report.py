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
  WordPiece continuation pieces lose their prefix (``##ing`` → ``ing``).
* **special tokens** (added tokens flagged special: ``[CLS]``, ``<|endoftext|>``…) are listed on
  their own and left out of the histograms, script coverage, longest tokens and unused counts.
* **word**: a maximal run of non-whitespace characters (``str.split()``). Simple on purpose:
  ``"hello,"`` is one word (BERT cuts it in two tokens, which counts as a split word), and a
  Chinese sentence without spaces is one word — hence ``tokens_per_char`` beside ``fertility``.
* Encodings are computed **without special tokens, truncation or padding** (a published
  ``tokenizer.json`` may carry ``truncation: 50`` or ``padding: Fixed(128)``; metrics must see the
  whole text and nothing else). The tokenizer passed in is not modified.
"""
from __future__ import annotations

import bisect
import copy
import math
import unicodedata
import weakref
from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from toktools.bytelevel import BYTE_TO_SYMBOL, SYMBOL_TO_BYTE, is_byte_symbols, symbols_to_bytes, text_to_symbols
from toktools.errors import ToktoolsError
from toktools.tokenizer import Tokenizer

__all__ = [
    "ScriptName", "script_of_char", "script_of_text",
    "TokenEntry", "VocabStats", "vocab_stats",
    "MergeNode", "TokenInfo", "token_info", "merge_tree",
    "UsageStats", "corpus_usage",
    "Metrics", "segment_metrics",
    "TokenSpan", "SegmentationRow", "DiffSpan", "Alignment", "align_segmentations",
    "Comparison", "compare", "render_metrics_plain", "surface_of",
]

ScriptName = str

# ---------------------------------------------------------------------------------------------
# Unicode scripts (a compact table; no dependency)
# ---------------------------------------------------------------------------------------------

#: (first, last, script) for the main scripts' blocks. Only letters and marks are looked up here:
#: digits, punctuation, symbols, spaces and controls are "Common" by their general category
#: first, so the ASCII punctuation inside "Basic Latin" never counts as Latin.
_SCRIPT_RANGES: tuple[tuple[int, int, str], ...] = (
    (0x0041, 0x005A, "Latin"), (0x0061, 0x007A, "Latin"), (0x00AA, 0x00AA, "Latin"), (0x00B5, 0x00B5, "Common"),
    (0x00BA, 0x00BA, "Latin"),
    (0x00C0, 0x024F, "Latin"), (0x0250, 0x02B8, "Latin"), (0x02B9, 0x02DF, "Common"), (0x02E0, 0x02E4, "Latin"),
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
    (0x3005, 0x3005, "Han"), (0x3007, 0x3007, "Han"), (0x3021, 0x3029, "Han"), (0x3038, 0x303B, "Han"),
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
    (0xFF21, 0xFF3A, "Latin"), (0xFF41, 0xFF5A, "Latin"),
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


def _is_bytelevel(tokenizer: Any) -> bool:
    return getattr(tokenizer, "kind", "") == "bytebpe"


def _special_contents(tokenizer: Any) -> dict[str, int]:
    added = getattr(tokenizer, "added", None)
    return {t.content: t.id for t in getattr(added, "tokens", ()) if t.special}


def _added_contents(tokenizer: Any) -> dict[str, int]:
    added = getattr(tokenizer, "added", None)
    return {t.content: t.id for t in getattr(added, "tokens", ())}


@dataclass(frozen=True)
class _Surface:
    text: str | None  # None: bytes that are not valid UTF-8 on their own
    raw: bytes
    continuation: bool  # a "##" piece (or a byte-level continuing-subword piece)


def surface_of(tokenizer: Any, token: str) -> tuple[str | None, bytes, bool]:
    """``(surface text or None, UTF-8 bytes, is a continuation piece)`` of one token string.

    Byte-level: the byte symbols decoded (None if the bytes are not valid UTF-8 alone);
    WordPiece: the token without its ``##`` prefix. Added tokens stand for their own content.
    """
    s = _surface(tokenizer, token, _added_contents(tokenizer))
    return s.text, s.raw, s.continuation


def _surface(tokenizer: Any, token: str, added: Mapping[str, int]) -> _Surface:
    if token in added and token not in getattr(tokenizer, "vocab", {}):
        return _Surface(token, token.encode("utf-8"), False)
    if _is_bytelevel(tokenizer):
        body, continuation = token, False
        prefix = getattr(tokenizer, "continuing_subword_prefix", None)
        suffix = getattr(tokenizer, "end_of_word_suffix", None)
        if prefix and body.startswith(prefix) and len(body) > len(prefix):
            body, continuation = body[len(prefix):], True
        if suffix and body.endswith(suffix) and len(body) > len(suffix):
            body = body[: -len(suffix)]
        if token in added or not is_byte_symbols(body):
            return _Surface(token, token.encode("utf-8"), False)
        raw = symbols_to_bytes(body)
        try:
            return _Surface(raw.decode("utf-8"), raw, continuation)
        except UnicodeDecodeError:
            return _Surface(None, raw, continuation)
    prefix = getattr(tokenizer, "prefix", "##")
    if token not in added and prefix and token.startswith(prefix) and len(token) > len(prefix):
        body = token[len(prefix):]
        return _Surface(body, body.encode("utf-8"), True)
    return _Surface(token, token.encode("utf-8"), False)


def _script_of_surface(surface: _Surface) -> ScriptName:
    return "Partial bytes" if surface.text is None else script_of_text(surface.text)


def _hex(raw: bytes) -> str:
    return " ".join(f"{b:02X}" for b in raw)


def _unk_id(tokenizer: Any) -> int | None:
    """The id of the unknown token: WordPiece's ``[UNK]``, a BPE model's ``unk_token`` if any."""
    unk_id = getattr(tokenizer, "unk_id", None)
    if unk_id is not None:
        return unk_id
    unk = getattr(tokenizer, "unk_token", None)
    return tokenizer.token_to_id(unk) if unk else None


def _plain(tokenizer: Tokenizer) -> Tokenizer:
    """The tokenizer without truncation and padding (a shallow copy sharing the model and its
    cache when it has any; the caller's object is left as it is)."""
    if getattr(tokenizer, "truncation", None) is None and getattr(tokenizer, "padding", None) is None:
        return tokenizer
    plain = copy.copy(tokenizer)
    plain.truncation = None
    plain.padding = None
    return plain


def _encode(tokenizer: Tokenizer, text: str) -> Any:
    return _plain(tokenizer).encode(text, add_special_tokens=False)


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

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "token": self.token, "surface": self.surface, "chars": self.chars, "bytes": self.bytes}


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

    def script_share(self, script: str) -> float:
        return self.scripts.get(script, 0) / self.counted if self.counted else 0.0

    def render_plain(self, bar_width: int = 40) -> str:
        """The statistics as plain text (what ``inspect`` prints without colour)."""
        lines = [f"kind            {self.kind}",
                 f"vocabulary      {self.vocab_size} ({self.model_vocab_size} in the model, {self.added_tokens} added)",
                 "special tokens  " + (", ".join(f"{c} ({i})" for c, i in self.special_tokens) or "-")]
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
        for title, histogram in (("length in characters", self.length_chars), ("length in bytes", self.length_bytes)):
            lines += ["", title]
            lines += _bars(histogram, bar_width)
        lines += ["", "scripts"]
        lines += _bars(self.scripts, bar_width, total=self.counted)
        lines += ["", "longest tokens"]
        lines += [f"  {e.id:>7}  {e.chars:>3} chars  {e.bytes:>3} bytes  {e.surface!r}" for e in self.longest]
        return "\n".join(lines) + "\n"

    def to_dict(self) -> dict[str, Any]:
        return _jsonable({
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
        })


def vocab_stats(tokenizer: Tokenizer, top: int = 20) -> VocabStats:
    """Size, special tokens, alphabet, length histograms (characters and bytes of the surface),
    share of continuation pieces, coverage by script and the ``top`` longest tokens.

    Alphabet: for byte-level BPE, the byte symbols present as tokens (in byte order) and the
    bytes missing (hex; GPT-2 has all 256); for WordPiece, the single-character tokens (not
    ``##c``), sorted by code point.
    """
    vocab = tokenizer.get_vocab() if hasattr(tokenizer, "get_vocab") else dict(tokenizer.vocab)
    specials = _special_contents(tokenizer)
    added = _added_contents(tokenizer)
    bytelevel = _is_bytelevel(tokenizer)

    length_chars: Counter[int] = Counter()
    length_bytes: Counter[int] = Counter()
    scripts: Counter[str] = Counter()
    continuation = partial = counted = 0
    entries: list[TokenEntry] = []
    singles: set[str] = set()
    for token, token_id in vocab.items():
        if token in specials:
            continue
        counted += 1
        s = _surface(tokenizer, token, added)
        length_bytes[len(s.raw)] += 1
        scripts[_script_of_surface(s)] += 1
        continuation += s.continuation
        if s.text is None:
            partial += 1
        else:
            length_chars[len(s.text)] += 1
            entries.append(TokenEntry(token_id, token, s.text, len(s.text), len(s.raw)))
            if not bytelevel and not s.continuation and len(s.text) == 1:
                singles.add(s.text)

    if bytelevel:
        present = [b for b in range(256) if BYTE_TO_SYMBOL[b] in tokenizer.vocab]
        alphabet = [BYTE_TO_SYMBOL[b] for b in present]
        missing = [f"{b:02X}" for b in range(256) if BYTE_TO_SYMBOL[b] not in tokenizer.vocab]
        byte_symbols_present: int | None = len(present)
    else:
        alphabet = sorted(singles)
        missing, byte_symbols_present = [], None

    entries.sort(key=lambda e: (-(e.chars or 0), -e.bytes, e.id))
    return VocabStats(
        kind=getattr(tokenizer, "kind", ""),
        vocab_size=tokenizer.vocab_size,
        model_vocab_size=len(tokenizer.vocab),
        added_tokens=len(getattr(getattr(tokenizer, "added", None), "tokens", ())),
        special_tokens=sorted(specials.items(), key=lambda item: (item[1], item[0])),
        counted=counted,
        alphabet=alphabet,
        alphabet_size=len(alphabet),
        byte_symbols_present=byte_symbols_present,
        missing_bytes=missing,
        continuation_tokens=continuation,
        continuation_share=(None if bytelevel and not getattr(tokenizer, "continuing_subword_prefix", None)
                            else _ratio(continuation, counted)),
        partial_byte_tokens=partial,
        length_chars=dict(sorted(length_chars.items())),
        length_bytes=dict(sorted(length_bytes.items())),
        scripts=dict(sorted(scripts.items(), key=lambda item: (-item[1], item[0]))),
        longest=entries[:top],
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
    left: "MergeNode | None" = None
    right: "MergeNode | None" = None

    @property
    def children(self) -> list["MergeNode"]:
        return [c for c in (self.left, self.right) if c is not None]

    def leaves(self) -> list["MergeNode"]:
        """The leaves from left to right (their tokens concatenate to this token)."""
        if not self.children:
            return [self]
        return [leaf for child in self.children for leaf in child.leaves()]

    def depth(self) -> int:
        return 1 + max((c.depth() for c in self.children), default=0)

    def to_dict(self) -> dict[str, Any]:
        return {"token": self.token, "id": self.id, "rank": self.rank, "hex": self.hex,
                "children": [c.to_dict() for c in self.children]}

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
            if node.rank is None:
                if len(node.token) == 1 and node.token in SYMBOL_TO_BYTE:
                    return f"{node.token}  {ident}  byte {node.hex}"
                return f"{node.token}  {ident}  (no merge)  ({node.hex})"
            return f"{node.token}  {ident}  merge {node.rank}  ({node.hex})"

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

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "token": self.token, "kind": self.kind, "special": self.special, "added": self.added,
                "continuation": self.continuation, "surface": self.surface, "hex": self.hex, "bytes": self.bytes,
                "chars": self.chars, "byte_symbols": self.byte_symbols, "script": self.script,
                "merge_tree": self.merge_tree.to_dict() if self.merge_tree is not None else None}

    def render_plain(self) -> str:
        flags = [name for name, on in (("special", self.special), ("added", self.added),
                                       ("continuation", self.continuation)) if on]
        lines = [f"token         {self.token}" + (f"  ({', '.join(flags)})" if flags else ""),
                 f"id            {self.id}",
                 f"surface       {self.surface!r}" if self.surface is not None else "surface       (partial UTF-8 bytes)",
                 f"bytes         {self.hex}  ({self.bytes} bytes)",
                 f"byte symbols  {self.byte_symbols}",
                 f"script        {self.script}"]
        if self.merge_tree is not None:
            lines += ["", "merge tree", self.merge_tree.render()]
        return "\n".join(lines) + "\n"


# tokenizer -> (number of merges when built, {product: (rank, left, right)})
_merge_indexes: "weakref.WeakKeyDictionary[Any, tuple[int, dict[str, tuple[int, str, str]]]]" = weakref.WeakKeyDictionary()


def _merge_index(tokenizer: Any) -> dict[str, tuple[int, str, str]]:
    """token → the lowest-rank merge ``(rank, a, b)`` whose result is that token."""
    merges = getattr(tokenizer, "merges", None) or []
    try:
        cached = _merge_indexes.get(tokenizer)
    except TypeError:  # not weak-referenceable
        cached = None
    if cached is not None and cached[0] == len(merges):
        return cached[1]
    prefix = getattr(tokenizer, "continuing_subword_prefix", None)
    index: dict[str, tuple[int, str, str]] = {}
    for rank, (a, b) in enumerate(merges):
        right = b[len(prefix):] if prefix and b.startswith(prefix) else b
        index.setdefault(a + right, (rank, a, b))
    try:
        _merge_indexes[tokenizer] = (len(merges), index)
    except TypeError:
        pass
    return index


def merge_tree(tokenizer: Tokenizer, token: str) -> MergeNode:
    """How BPE built ``token``: the merge ``(a, b)`` with ``a + b == token`` of lowest rank (the
    one that created it while training), then the same for ``a`` and ``b``, down to tokens no
    merge produced (the byte symbols)."""
    index = _merge_index(tokenizer)
    added = _added_contents(tokenizer)

    def build(t: str) -> MergeNode:
        node = MergeNode(t, tokenizer.token_to_id(t), None, _hex(_surface(tokenizer, t, added).raw))
        found = index.get(t)
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
    if _is_bytelevel(tokenizer):
        symbols = text_to_symbols(token_or_id)  # " Hello" → "ĠHello"
        token_id = tokenizer.token_to_id(symbols)
        if token_id is not None:
            return token_id, symbols
    if token_or_id.strip().isdigit():
        return _resolve_token(tokenizer, int(token_or_id.strip()))
    hint = ""
    if token_or_id:
        pieces = _encode(tokenizer, token_or_id).tokens
        hint = f"; as text it encodes to {len(pieces)} tokens: {' '.join(pieces)}" if pieces else ""
    raise ToktoolsError(f"{token_or_id!r} is not a token of this vocabulary{hint}")


def token_info(tokenizer: Tokenizer, token_or_id: int | str) -> TokenInfo:
    """Everything about one token, given as an id, a token string (``"ĠHello"``), or — for
    byte-level BPE — the text it stands for (``" Hello"``); a string of digits that is not a token
    is read as an id. Raises :class:`ToktoolsError` when nothing matches."""
    token_id, token = _resolve_token(tokenizer, token_or_id)
    added = _added_contents(tokenizer)
    specials = _special_contents(tokenizer)
    s = _surface(tokenizer, token, added)
    is_added = token in added
    tree = None
    if _is_bytelevel(tokenizer) and not is_added and getattr(tokenizer, "merges", None) is not None:
        tree = merge_tree(tokenizer, token)
    return TokenInfo(
        id=token_id,
        token=token,
        kind=getattr(tokenizer, "kind", ""),
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
        return _jsonable({
            "lines": self.lines, "characters": self.characters, "words": self.words, "tokens": self.tokens,
            "distinct_used": self.distinct_used, "vocab_considered": self.vocab_considered,
            "unused": self.unused, "unused_share": self.unused_share,
            "unused_sample": [{"id": i, "token": t} for i, t in self.unused_sample],
            "unk_token": self.unk_token, "unk_count": self.unk_count, "unk_rate": self.unk_rate,
            "most_common": [{"id": i, "token": t, "count": c} for i, t, c in self.most_common],
        })

    def render_plain(self) -> str:
        def pct(value: float | None) -> str:
            return "-" if value is None else f"{value:.2%}"

        lines = [f"corpus          {self.lines} lines, {self.words} words, {self.characters} characters",
                 f"tokens          {self.tokens} ({self.distinct_used} distinct)",
                 f"unused          {self.unused} of {self.vocab_considered} ({pct(self.unused_share)})",
                 f"unknown         {self.unk_count} ({pct(self.unk_rate)})" + (f" {self.unk_token}" if self.unk_token else " (no unk token)")]
        if self.unused_sample:
            lines.append("unused sample   " + " ".join(t for _, t in self.unused_sample))
        return "\n".join(lines) + "\n"


def corpus_usage(tokenizer: Tokenizer, lines: Iterable[str], *, sample: int = 20, top: int = 20,
                 workers: int | None = None) -> UsageStats:
    """Encode every line (its trailing ``\\n`` / ``\\r\\n`` removed; no special tokens) and count
    which tokens are used. The unused sample is the ``sample`` lowest ids never seen; lines are
    encoded in batches (in parallel for large corpora, see ``Tokenizer.encode_batch``)."""
    plain = _plain(tokenizer)
    counts: Counter[int] = Counter()
    n_lines = n_chars = n_words = 0
    from toktools.corpus import batched

    for chunk in batched(lines, 20_000):
        chunk = [line[:-2] if line.endswith("\r\n") else line[:-1] if line.endswith("\n") else line for line in chunk]
        n_lines += len(chunk)
        n_chars += sum(len(line) for line in chunk)
        n_words += sum(len(line.split()) for line in chunk)
        for encoding in plain.encode_batch(chunk, add_special_tokens=False, workers=workers):
            counts.update(encoding.ids)
    vocab = tokenizer.get_vocab() if hasattr(tokenizer, "get_vocab") else dict(tokenizer.vocab)
    specials = _special_contents(tokenizer)
    considered = {i: t for t, i in vocab.items() if t not in specials}
    unused_ids = sorted(i for i in considered if i not in counts)
    unk_id = _unk_id(tokenizer)
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
        unused_sample=[(i, considered[i]) for i in unused_ids[:sample]],
        unk_token=tokenizer.id_to_token(unk_id) if unk_id is not None else None,
        unk_count=unk_count,
        unk_rate=_ratio(unk_count, total),
        most_common=[(i, tokenizer.id_to_token(i) or "", c) for i, c in most],
    )


# ---------------------------------------------------------------------------------------------
# 4. Segmentation metrics
# ---------------------------------------------------------------------------------------------


@dataclass
class Metrics:
    """How one tokenizer cuts one text (no special tokens). Ratios are None when undefined.

    * ``chars_per_token`` / ``bytes_per_token``: ``characters`` (every code point, spaces
      included) and UTF-8 ``bytes`` over ``tokens``;
    * ``fertility``: tokens per word (a word is a run of non-whitespace, ``str.split()``);
    * ``tokens_per_char``: tokens per non-whitespace character — the measure that still means
      something for Chinese or Japanese written without spaces;
    * ``split_words`` / ``split_share``: words that got more than one token. A token belongs to
      the word holding its first non-whitespace character (GPT-2's ``" world"`` belongs to
      ``world``); pieces of one character cut inside it (``我`` → 2 byte-level tokens) make a
      split word too;
    * ``unk_count`` / ``unk_rate``: unknown tokens over ``tokens``.
    """

    tokens: int
    characters: int
    bytes: int
    words: int
    nonspace_chars: int
    chars_per_token: float | None
    bytes_per_token: float | None
    fertility: float | None
    tokens_per_char: float | None
    split_words: int
    split_share: float | None
    unk_count: int
    unk_rate: float | None

    def to_dict(self) -> dict[str, Any]:
        return _jsonable({name: getattr(self, name) for name in self.__dataclass_fields__})


def _word_index(text: str) -> tuple[list[int], int]:
    """For each character, the index of its word, or -1 for whitespace; and the word count."""
    index = [-1] * len(text)
    words = 0
    inside = False
    for position, ch in enumerate(text):
        if ch.isspace():
            inside = False
            continue
        if not inside:
            inside = True
            words += 1
        index[position] = words - 1
    return index, words


def _metrics(tokenizer: Tokenizer, text: str, encoding: Any) -> Metrics:
    word_of, words = _word_index(text)
    per_word: Counter[int] = Counter()
    for start, end in encoding.offsets:
        for position in range(start, min(end, len(text))):
            if word_of[position] >= 0:
                per_word[word_of[position]] += 1
                break
    n = len(encoding.ids)
    n_bytes = len(text.encode("utf-8"))
    nonspace = sum(1 for w in word_of if w >= 0)
    unk_id = _unk_id(tokenizer)
    unk = sum(1 for i in encoding.ids if i == unk_id) if unk_id is not None else 0
    split = sum(1 for c in per_word.values() if c > 1)
    return Metrics(
        tokens=n,
        characters=len(text),
        bytes=n_bytes,
        words=words,
        nonspace_chars=nonspace,
        chars_per_token=_ratio(len(text), n),
        bytes_per_token=_ratio(n_bytes, n),
        fertility=_ratio(n, words),
        tokens_per_char=_ratio(n, nonspace),
        split_words=split,
        split_share=_ratio(split, words),
        unk_count=unk,
        unk_rate=_ratio(unk, n),
    )


def segment_metrics(tokenizer: Tokenizer, text: str) -> Metrics:
    """Tokens, characters/token, bytes/token, fertility, tokens per character, share of split
    words and UNK rate of ``tokenizer`` on ``text`` (see :class:`Metrics` for the definitions)."""
    return _metrics(tokenizer, text, _encode(tokenizer, text))


# ---------------------------------------------------------------------------------------------
# 5. Alignment of several segmentations
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TokenSpan:
    """One token located in the text: character offsets (from the encoding) and UTF-8 byte
    offsets. Byte-level tokens cut inside a character share its character offsets but have their
    own byte sub-range; such a token is ``partial``."""

    id: int
    token: str
    char_start: int
    char_end: int
    byte_start: int
    byte_end: int
    partial: bool

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "token": self.token, "char_start": self.char_start, "char_end": self.char_end,
                "byte_start": self.byte_start, "byte_end": self.byte_end, "partial": self.partial}


@dataclass
class SegmentationRow:
    """One tokenizer's segmentation of the text.

    ``boundaries`` (characters) and ``byte_boundaries`` (bytes) are the positions where a token
    starts or ends, after trimming whitespace from each token's ends: whitespace is neutral, so
    BERT's ``world`` and GPT-2's ``Ġworld`` (which owns the space before it) have the same
    boundaries. ``byte_boundaries`` also holds cuts inside a character; ``boundaries`` does not.
    """

    name: str
    kind: str
    spans: list[TokenSpan]
    boundaries: list[int]
    byte_boundaries: list[int]

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "spans": [s.to_dict() for s in self.spans],
                "boundaries": self.boundaries, "byte_boundaries": self.byte_boundaries}


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
        return {"char_start": self.char_start, "char_end": self.char_end, "byte_start": self.byte_start,
                "byte_end": self.byte_end, "text": self.text, "tokens": {k: list(v) for k, v in self.tokens.items()}}


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
        """True when the text has characters of more than one UTF-8 byte (a byte view helps)."""
        return not self.text.isascii()

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "rows": [r.to_dict() for r in self.rows], "diffs": [d.to_dict() for d in self.diffs]}

    def render_plain(self, width: int | None = None, byte_view: bool | None = None) -> str:
        """Plain text, one row per tokenizer, tokens between ``|``, aligned on character offsets,
        with a ``^`` row under the regions that differ; for multi-byte text (or ``byte_view``) a
        second block shows each character's UTF-8 bytes with the cuts, including cuts inside a
        character (``E6 88|91``). ``width`` wraps long lines (None: no wrapping)."""
        return _render_alignment(self, width, self.multibyte if byte_view is None else byte_view)


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
    added = _added_contents(tokenizer)
    bytelevel = _is_bytelevel(tokenizer)
    spans = []
    cursor = 0
    for token_id, token, (s, e) in zip(encoding.ids, encoding.tokens, encoding.offsets):
        lo, hi = bmap.byte(s), bmap.byte(e)
        b0, b1 = lo, hi
        if bytelevel:
            # walk the token strings: a token cut inside a character covers only its own bytes
            raw = _surface(tokenizer, token, added).raw
            start = cursor if lo <= cursor <= hi else lo
            if raw and bmap.data[start:start + len(raw)] == raw:
                b0, b1 = start, start + len(raw)
            elif raw[:1] == b" " and bmap.data[start:start + len(raw) - 1] == raw[1:]:
                b0, b1 = start, start + len(raw) - 1  # the prefix space added by add_prefix_space
            cursor = b1
        spans.append(TokenSpan(token_id, token, s, e, b0, b1, b0 not in bmap.starts or b1 not in bmap.starts))
    return spans


def _row(name: str, tokenizer: Tokenizer, encoding: Any, bmap: _ByteMap) -> SegmentationRow:
    text = bmap.text
    spans = _spans(tokenizer, encoding, bmap)
    byte_bounds: set[int] = set()
    for span in spans:
        b0, b1 = bmap.core(span.byte_start, span.byte_end)
        if b0 < b1:
            byte_bounds.update((b0, b1))
    chars = sorted(bmap.char_of_byte[b] if b < len(bmap.data) else len(text) for b in byte_bounds if b in bmap.starts)
    return SegmentationRow(name, getattr(tokenizer, "kind", ""), spans, chars, sorted(byte_bounds))


def _diffs(text: str, rows: list[SegmentationRow], bmap: _ByteMap) -> list[DiffSpan]:
    if len(rows) < 2:
        return []
    sets = [set(r.byte_boundaries) for r in rows]
    common = set.intersection(*sets) | {0, len(bmap.data)}
    differing = set.union(*sets) - common
    if not differing:
        return []
    anchors = sorted(common)
    regions = sorted({(anchors[bisect.bisect_left(anchors, d) - 1], anchors[bisect.bisect_left(anchors, d)])
                      for d in differing})
    out = []
    for b0, b1 in regions:
        c0, c1 = bmap.char_floor(b0), bmap.char_ceil(b1)
        tokens = {}
        for row in rows:
            tokens[row.name] = [s.token for s in row.spans
                                if max(b0, bmap.core(s.byte_start, s.byte_end)[0]) < min(b1, bmap.core(s.byte_start, s.byte_end)[1])]
        out.append(DiffSpan(c0, c1, b0, b1, text[c0:c1], tokens))
    return out


def align_segmentations(text: str, tokenizers: Mapping[str, Tokenizer] | Sequence[tuple[str, Tokenizer]]) -> Alignment:
    """Segment ``text`` with each tokenizer (no special tokens) and line the results up.

    Each token gets character offsets (from the encoding) and byte offsets (byte-level BPE: by
    walking the token strings, so cuts inside a character are kept; WordPiece: from the
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


def _align(text: str, encoded: list[tuple[str, Tokenizer, Any]]) -> Alignment:
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


_VISIBLE = {"\n": "⏎", "\r": "␍", "\t": "→"}


def _visible(ch: str, after_cut: bool) -> str:
    """How one character is drawn: spaces as spaces, other whitespace and controls as visible
    stand-ins, a combining mark that starts a column on a dotted circle."""
    if ch == " ":
        return " "
    if ch in _VISIBLE:
        return _VISIBLE[ch]
    if ch.isspace():
        return "·" if _char_width(ch) < 2 else "··"
    category = unicodedata.category(ch)
    if category in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"):
        return "�"
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
    for column in columns:
        block = blocks[-1]
        if room is not None and block and sum(c.width for c in block) + column.width > room:
            cut = max((i for i, c in enumerate(block) if c.gutter and i > 0), default=len(block))
            if sum(c.width for c in block[cut:]) + column.width > room:  # no gutter near enough
                cut = len(block)
            blocks[-1], carried = block[:cut], block[cut:]
            blocks.append(carried)
        blocks[-1].append(column)
    lines: list[str] = []
    for number, block in enumerate([b for b in blocks if b] or [[]]):
        if number:
            lines.append("")
        for line_index, label in enumerate(labels):
            body = "".join(column.cells[line_index] for column in block)
            lines.append((_pad(label, label_width) + body).rstrip())
    return lines


def _char_block(alignment: Alignment, bmap: _ByteMap) -> tuple[list[str], list[_Column]]:
    text = alignment.text
    rows = alignment.rows
    bounds = [set(r.boundaries) for r in rows]
    gutters = set().union(*bounds) if bounds else set()
    in_diff = [False] * (len(text) + 1)
    diff_gutter: set[int] = set()
    for d in alignment.diffs:
        for c in range(d.char_start, d.char_end):
            in_diff[c] = True
        diff_gutter.update(range(d.char_start + 1, d.char_end))
    labels = [r.name for r in rows] + (["diff"] if alignment.diffs else [])
    columns: list[_Column] = []
    for position in range(len(text) + 1):
        if position in gutters:
            cells = ["|" if position in b else " " for b in bounds]
            if alignment.diffs:
                cells.append("^" if position in diff_gutter else " ")
            columns.append(_Column(1, cells, gutter=True))
        if position == len(text):
            break
        glyph = _visible(text[position], position in gutters)
        w = _text_width(glyph)
        cells = [glyph] * len(rows)
        if alignment.diffs:
            cells.append("^" * w if in_diff[position] else " " * w)
        columns.append(_Column(w, cells))
    return labels, columns


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
        raw = bmap.data[b:bmap.char_start[position + 1]]
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


def _render_alignment(alignment: Alignment, width: int | None, byte_view: bool) -> str:
    if not alignment.rows:
        return ""
    bmap = _ByteMap(alignment.text)
    blocks = [_char_block(alignment, bmap)]
    if byte_view:
        blocks.append(_byte_block(alignment, bmap))
    label_width = max(_text_width(label) for labels, _ in blocks for label in labels) + 2
    lines: list[str] = []
    for labels, columns in blocks:
        if lines:
            lines.append("")
        lines.extend(_lay_out(labels, columns, width, label_width))
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# 6. Comparison: metrics + alignment
# ---------------------------------------------------------------------------------------------


_METRIC_COLUMNS = (
    ("tokens", "tokens", "{:d}"),
    ("chars_per_token", "chars/token", "{:.2f}"),
    ("bytes_per_token", "bytes/token", "{:.2f}"),
    ("fertility", "fertility", "{:.2f}"),
    ("tokens_per_char", "tokens/char", "{:.2f}"),
    ("split_share", "split words", "{:.1%}"),
    ("unk_rate", "UNK rate", "{:.1%}"),
)


def render_metrics_plain(metrics: Mapping[str, Metrics]) -> str:
    """A plain-text table, one row per tokenizer (``-`` where a ratio is undefined)."""
    header = ["tokenizer"] + [title for _, title, _ in _METRIC_COLUMNS]
    body = []
    for name, m in metrics.items():
        row = [name]
        for attribute, _, fmt in _METRIC_COLUMNS:
            value = getattr(m, attribute)
            row.append("-" if value is None else fmt.format(value))
        body.append(row)
    widths = [max(_text_width(r[i]) for r in [header, *body]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        first = _pad(cells[0], widths[0])
        rest = ["" + " " * (w - _text_width(c)) + c for c, w in zip(cells[1:], widths[1:])]
        return "  ".join([first, *rest]).rstrip()

    return "\n".join([line(header), *[line(r) for r in body]]) + "\n"


@dataclass
class Comparison:
    """What ``toktools compare`` shows: metrics per tokenizer and the alignment."""

    text: str
    metrics: dict[str, Metrics]
    alignment: Alignment

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "metrics": {name: m.to_dict() for name, m in self.metrics.items()},
                "alignment": self.alignment.to_dict()}

    def render_plain(self, width: int | None = None, byte_view: bool | None = None) -> str:
        return self.alignment.render_plain(width, byte_view) + "\n" + render_metrics_plain(self.metrics)


def compare(tokenizers: Mapping[str, Tokenizer] | Sequence[tuple[str, Tokenizer]], text: str) -> Comparison:
    """Segment ``text`` with every tokenizer once; return the metrics of each and the alignment."""
    encoded = [(name, tok, _encode(tok, text)) for name, tok in _items(tokenizers)]
    metrics = {name: _metrics(tok, text, encoding) for name, tok, encoding in encoded}
    return Comparison(text, metrics, _align(text, encoded))
