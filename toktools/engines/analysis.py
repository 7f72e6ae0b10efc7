"""Is tiktoken exact for this ``tokenizer.json``? Decided from the document alone, never from
class internals, and remembered in the user cache.

tiktoken is exact only under the sufficient condition of ``spec/tiktoken-equivalence.md``
(E1-E4 on the vocabulary and merges, a configuration tiktoken can express, special tokens it
matches as ``tokenizers`` does: :func:`analyse`) *and* when a probe of its regular expression on
the code points where Unicode tables are known to differ gives ``tokenizers``' ids
(:func:`probe_tiktoken`). Also here: where a document may be cut without changing its ids
(:func:`cuttable`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toktools.engines.base import DocumentSource, Engine, document_fingerprint, loaded_document
from toktools.engines.tokenizers_engine import TokenizersEngine
from toktools.errors import ToktoolsError

#: tiktoken's spelling of the GPT-2 split (openai/tiktoken ``tiktoken_ext/openai_public.py``);
#: the spec measured it equal to ``tokenizers``' Oniguruma pattern on every code point.
GPT2_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""
ONE_PIECE_PATTERN = r"(?s).+"


# ---------------------------------------------------------------------------------------------
# Analysis: is tiktoken exact for this tokenizer.json?
# ---------------------------------------------------------------------------------------------


@dataclass
class TiktokenPlan:
    """What tiktoken needs: byte ranks, special tokens, the pattern, and the id remap (E3)."""

    mergeable_ranks: dict[bytes, int]
    special_tokens: dict[str, int]
    pattern: str
    #: tiktoken rank -> HF id, when merge order and id order disagree (E3 remap); else None
    rank_to_id: dict[int, int] | None = None


@dataclass
class Analysis:
    """Per engine: None when exact, else the reason (one line) why not."""

    tiktoken_reason: str | None
    plan: TiktokenPlan | None = None
    cuttable: bool = False
    notes: list[str] = field(default_factory=list)
    #: whether tiktoken's regular expression was probed (:func:`probe_tiktoken`), and where it
    #: differed (None: nowhere); kept with the analysis so a cached one needs no probe
    probed: bool = False
    probe: str | None = None
    #: regular tokens of 2+ bytes that fail E4, left out of tiktoken's ranks (``tokenizers``
    #: never makes them without ``ignore_merges``: the amendment of the spec, "E4 as a filter")
    unreachable: list[str] = field(default_factory=list)


def _empty(value: Any) -> bool:
    return value is None or value == "" or value is False


def _merges_of(model: Mapping[str, Any]) -> list[tuple[str, str]]:
    out = []
    for merge in model.get("merges") or []:
        pair = tuple(merge) if isinstance(merge, list) else tuple(str(merge).split(" "))
        if len(pair) != 2:
            raise ValueError(f"merge {merge!r} is not a pair")
        out.append(pair)  # type: ignore[arg-type]
    return out


def _specials_expressible(added: Sequence[Mapping[str, Any]]) -> str | None:
    """Added tokens tiktoken matches exactly as ``tokenizers`` does (spec section 5)."""
    contents = [t["content"] for t in added]
    for token in added:
        for flag in ("lstrip", "rstrip", "single_word"):
            if token.get(flag):
                return f"added token {token['content']!r} has {flag}, which tiktoken cannot express"
        if not token["content"]:
            return "an added token is empty"
    for a in contents:
        for b in contents:
            if a != b and b.startswith(a):
                return f"added token {a!r} is a prefix of {b!r} (tiktoken does not match leftmost-longest)"
    return None


def _configuration_reason(doc: Mapping[str, Any]) -> str | None:
    """Spec section 5: the nodes tiktoken can express; the first one it cannot, in words."""
    model = doc.get("model") or {}
    if model.get("type") != "BPE":
        return f"model {model.get('type')!r} is not BPE"
    if model.get("dropout") not in (None, 0, 0.0):
        return "BPE dropout is on"
    for option in ("continuing_subword_prefix", "end_of_word_suffix", "byte_fallback"):
        if not _empty(model.get(option)):
            return f"BPE option {option} is set"
    if doc.get("normalizer"):
        return f"normalizer {doc['normalizer'].get('type')!r} is not expressible in tiktoken"
    pre = doc.get("pre_tokenizer") or {}
    if pre.get("type") != "ByteLevel":
        return f"pre-tokenizer {pre.get('type')!r} is not ByteLevel"
    if pre.get("add_prefix_space"):
        return "ByteLevel add_prefix_space=true is not expressible in tiktoken"
    return _specials_expressible(doc.get("added_tokens") or [])


_analysis_cache: dict[str, Analysis] = {}

#: The modules whose code decides a verdict (E1-E4, the probe) and the libraries that do: the
#: key of a remembered verdict (:func:`toktools.io.user_cache.entry_path`).
VERDICT_CODE = (
    "toktools.engines.analysis",
    "toktools.engines.base",
    "toktools.engines.tokenizers_engine",
    "toktools.engines.tiktoken_engine",
    "toktools.models.bpe.byte_symbols",
    "toktools.tables.bytelevel",
)
VERDICT_LIBRARIES = ("tokenizers", "tiktoken")


def _verdict_file(fingerprint: str) -> Path | None:
    """Where the verdict of E4 (one BPE run per token) and of the regex probe is kept between
    runs: per tokenizer fingerprint and the code that decides it, in the user cache
    (:mod:`toktools.io.user_cache`: ``TOKTOOLS_CACHE_DIR`` or ``~/.cache/toktools``;
    ``TOKTOOLS_CACHE_DIR=`` (empty) turns it off)."""
    from toktools.io.user_cache import entry_path

    return entry_path("engine-analysis", fingerprint, ".json", modules=VERDICT_CODE, libraries=VERDICT_LIBRARIES)


def _remembered(fingerprint: str) -> dict[str, Any]:
    from toktools.io.user_cache import read_json

    verdicts = read_json(_verdict_file(fingerprint))
    return verdicts if isinstance(verdicts, dict) else {}


def _remember(fingerprint: str, verdict: dict[str, Any]) -> None:
    from toktools.io.user_cache import write_json

    path = _verdict_file(fingerprint)
    if path is not None:
        write_json(path, {**_remembered(fingerprint), **verdict})


def analyse(document: Mapping[str, Any], fingerprint: str | None = None) -> Analysis:
    """Decide from the ``tokenizer.json`` document which engines give the reference's ids
    (remembered per document fingerprint and the code that decides: the E4 check runs BPE once
    per token)."""
    key = fingerprint or document_fingerprint(document)
    if key not in _analysis_cache:
        cached = _remembered(key)
        exact = cached.get("exact")
        unreachable = cached.get("unreachable")
        if not (isinstance(unreachable, list) and all(isinstance(t, str) for t in unreachable)):
            unreachable = None
        if (
            cached.get("e4", "") is None
            and unreachable is not None
            and isinstance(exact, dict)
            and exact.get("remap") is False
            and _configuration_reason(document) is None
        ):
            # every check passed before for this very document: only the plan is rebuilt
            rank_of = _regular(document, set(unreachable))
            _analysis_cache[key] = Analysis(
                None, tiktoken_plan(document, rank_of), cuttable=cuttable(document), unreachable=unreachable
            )
        elif "e4" in cached and cached["e4"] is None and unreachable is not None:
            _analysis_cache[key] = _analyse(document, e4=False, unreachable=unreachable)
        elif cached.get("e4"):
            _analysis_cache[key] = Analysis(cached["e4"], cuttable=cuttable(document))
        else:
            analysis = _analyse(document, e4=True)
            _analysis_cache[key] = analysis
            if analysis.tiktoken_reason is None or "(E4')" in analysis.tiktoken_reason:
                _remember(key, {"e4": analysis.tiktoken_reason, "unreachable": analysis.unreachable})
        analysis = _analysis_cache[key]
        if analysis.tiktoken_reason is None and analysis.plan is not None and "exact" not in cached:
            _remember(key, {"exact": {"remap": analysis.plan.rank_to_id is not None}})
    return _analysis_cache[key]


def tiktoken_plan(
    doc: Mapping[str, Any], rank_of: Mapping[str, int] | None = None, rank_to_id: dict[int, int] | None = None
) -> TiktokenPlan:
    """What tiktoken needs; ``rank_of`` (symbols → rank) defaults to the regular vocabulary.

    All tokens are translated to bytes in one ``str.translate`` over their concatenation
    (one symbol is one byte, so the lengths are the same): a tenth of the time of one call
    per token, which counts on every short run."""
    from itertools import accumulate

    from toktools.models.bpe.byte_symbols import symbols_to_bytes

    added = {t["content"]: t["id"] for t in doc.get("added_tokens") or []}
    if rank_of is None:  # the vocabulary without the added tokens, in its order (a copy in C)
        rank_of = dict(doc["model"].get("vocab") or {})
        for token in added:
            rank_of.pop(token, None)
    symbols = list(rank_of)
    data = symbols_to_bytes("".join(symbols))
    ends = list(accumulate(map(len, symbols)))
    starts = [0, *ends[:-1]]
    ranks_bytes = dict(zip(map(data.__getitem__, map(slice, starts, ends)), rank_of.values()))
    pattern = GPT2_PATTERN if (doc.get("pre_tokenizer") or {}).get("use_regex", True) else ONE_PIECE_PATTERN
    return TiktokenPlan(ranks_bytes, added, pattern, rank_to_id)


def _regular(doc: Mapping[str, Any], leave_out: set[str]) -> dict[str, int]:
    """The regular vocabulary (no added token), in its order, without ``leave_out``."""
    added = {t["content"] for t in doc.get("added_tokens") or []}
    return {s: i for s, i in (doc["model"].get("vocab") or {}).items() if s not in added and s not in leave_out}


def _analyse(doc: Mapping[str, Any], e4: bool = True, unreachable: Sequence[str] = ()) -> Analysis:
    from toktools.models.bpe.byte_symbols import SYMBOL_TO_BYTE

    can_cut = cuttable(doc)
    reason = _configuration_reason(doc)
    if reason is not None:
        return Analysis(reason, cuttable=can_cut)
    model = doc["model"]
    added = {t["content"]: t["id"] for t in doc.get("added_tokens") or []}
    vocab: dict[str, int] = dict(model.get("vocab") or {})
    regular = {s: i for s, i in vocab.items() if s not in added}
    # E1: all 256 byte symbols are regular tokens; every key is made of byte symbols
    missing = [s for s in SYMBOL_TO_BYTE if s not in regular]
    if missing:
        return Analysis(f"byte symbol {missing[0]!r} is not in the vocabulary (E1)", cuttable=can_cut)
    if not set("".join(regular)) <= SYMBOL_TO_BYTE.keys():
        token = next(t for t in regular if any(ch not in SYMBOL_TO_BYTE for ch in t))
        return Analysis(f"token {token!r} is not made of byte symbols", cuttable=can_cut)
    if len(set(regular.values())) != len(regular) or set(regular.values()) & set(added.values()):
        return Analysis("two tokens share an id", cuttable=can_cut)
    # E2: every merge result is a regular token, made by exactly one merge
    merges = _merges_of(model)
    seen: set[str] = set()
    for number, (a, b) in enumerate(merges, start=1):
        result = a + b
        if a not in regular or b not in regular or result not in regular:
            return Analysis(
                f"merge {number} ({a} {b}) uses or makes a token outside the regular vocabulary (E2)", cuttable=can_cut
            )
        if result in seen:
            return Analysis(f"two merges make {result!r} (E2)", cuttable=can_cut)
        seen.add(result)
    # E4' (ignore_merges: a gate): every regular token of 2+ symbols is not split in two by BPE.
    # E4 (a filter): the tokens BPE does not rebuild from their own bytes are never made by
    # tokenizers, so they are left out of tiktoken's ranks with the merges that touch them
    # (spec, "Amendment: E4 as a filter, not a gate"); E2 and E3 are then read on what is left.
    ignore_merges = bool(model.get("ignore_merges", False))
    if e4 and ignore_merges:
        failure = _self_reachability(regular, merges, ignore_merges)
        if failure is not None:
            return Analysis(failure, cuttable=can_cut)
        unreachable = []
    elif e4:
        unreachable = _unreachable(regular, merges)
    left_out = set(unreachable)
    if left_out:
        regular = {s: i for s, i in regular.items() if s not in left_out}
        merges = [(a, b) for a, b in merges if a not in left_out and b not in left_out and a + b not in left_out]
    # E3: ranks of merge results increase with merge index; otherwise remap (still exact)
    result_ids = [regular[a + b] for a, b in merges]
    rank_of: dict[str, int] = dict(regular)
    rank_to_id = None
    if any(x >= y for x, y in zip(result_ids, result_ids[1:])):
        ranks = sorted(result_ids)
        rank_to_id = {}
        for (a, b), rank in zip(merges, ranks):
            rank_of[a + b] = rank
            rank_to_id[rank] = regular[a + b]
    return Analysis(None, tiktoken_plan(doc, rank_of, rank_to_id), cuttable=can_cut, unreachable=list(unreachable))


def _unreachable(regular: dict[str, int], merges: list[tuple[str, str]]) -> list[str]:
    """The regular tokens of 2+ symbols that ``tokenizers``' BPE (no ``ignore_merges``) does not
    rebuild from their own bytes (fail E4), in vocabulary order: it never outputs them."""
    from tokenizers import models

    tokenize = models.BPE(vocab=regular, merges=merges, ignore_merges=False).tokenize
    out = []
    for token, token_id in regular.items():
        if len(token) < 2:
            continue
        pieces = tokenize(token)
        if len(pieces) != 1 or pieces[0].id != token_id:
            out.append(token)
    return out


def _self_reachability(regular: dict[str, int], merges: list[tuple[str, str]], ignore_merges: bool) -> str | None:
    """E4 (or E4' with ``ignore_merges``), checked with ``tokenizers``' own BPE model on each
    token alone (merge priority by merge index, as HF runs it)."""
    from tokenizers import models

    bpe = models.BPE(vocab=regular, merges=merges, ignore_merges=False)
    tokenize = bpe.tokenize
    for token, token_id in regular.items():
        if len(token) < 2:
            continue
        pieces = tokenize(token)
        if ignore_merges:
            if len(pieces) == 2:
                return f"token {token!r} is split by its own merges into two tokens (E4')"
        elif len(pieces) != 1 or pieces[0].id != token_id:
            return f"BPE does not rebuild token {token!r} from its bytes (gets {[t.value for t in pieces[:4]]}) (E4)"
    return None


def cuttable(doc: Mapping[str, Any]) -> bool:
    """True when cutting a text just before a space ``' '`` that follows a non-space character
    provably gives the same ids as the uncut text (see :func:`safe_cut`).

    Byte-level BPE without normaliser: no GPT-2 split piece can hold a non-space character
    followed by a space (letters, numbers and "other" runs stop at a space; space runs hold
    only spaces), the pattern has no look-behind, and its look-ahead ``(?!\\S)`` only follows a
    space run, which never ends at the cut. So the pieces of ``A + B`` are the pieces of ``A``
    followed by those of ``B``, and BPE runs per piece. With ``add_prefix_space`` ``B`` starts
    with ``' '`` and gets no extra space. BERT: the normaliser works per character (NFD never
    reorders across a space, a starter) and the pre-tokeniser always splits at a space.
    In both cases added tokens must hold no whitespace (none can span the cut) and must not
    ``rstrip`` (it would eat ``B``'s leading space).
    """
    model = (doc.get("model") or {}).get("type")
    pre = doc.get("pre_tokenizer") or {}
    normalizer = doc.get("normalizer")
    for token in doc.get("added_tokens") or []:
        if token.get("rstrip") or any(ch.isspace() for ch in token["content"]):
            return False
    if model == "BPE" and pre.get("type") == "ByteLevel" and pre.get("use_regex", True) and not normalizer:
        return True
    if (
        model == "WordPiece"
        and pre.get("type") == "BertPreTokenizer"
        and (normalizer is None or normalizer.get("type") == "BertNormalizer")
    ):
        return True
    return False


# ---------------------------------------------------------------------------------------------
# The regex probe: tiktoken's Unicode tables against tokenizers' on the known risky code points
# ---------------------------------------------------------------------------------------------

#: Code points the spec singled out (Unicode 15-17 additions, odd spaces), besides the ones where
#: Python's ``regex`` differs from ``tokenizers`` (:data:`toktools.tables.bytelevel.REGEX_DISAGREEMENTS`).
_PROBE_EXTRA = (
    0x10940,
    0x323B0,
    0x3D000,
    0x11F04,
    0x2EBF0,
    0x16100,
    0x1C89,
    0x10D4A,
    0x85,
    0xA0,
    0x3000,
    0x1C,
    0x180E,
    0x200B,
    0xFEFF,
    0x2028,
    0x2029,
    0x0B,
    0x0C,
    0x0D,
)
_probe_cache: dict[tuple[str, str], str | None] = {}


def probe_code_points(full: bool = False) -> list[int]:
    """The code points where Python's ``regex`` tables and ``tokenizers``' are known to differ
    (every one with ``full``; else the first, middle and last of each range), plus the spec's."""
    from toktools.tables.bytelevel import REGEX_DISAGREEMENTS

    points = set(_PROBE_EXTRA)
    for ranges in REGEX_DISAGREEMENTS.values():
        for lo, hi in ranges:
            points.update(range(lo, hi + 1) if full else (lo, (lo + hi) // 2, hi))
    return sorted(c for c in points if not 0xD800 <= c <= 0xDFFF)


def probe_text(points: Sequence[int]) -> list[str]:
    """Each code point in the six contexts of the spec's probe (letter, digit, punctuation,
    space and tab before it; a letter after it)."""
    out = []
    for c in points:
        ch = chr(c)
        out.append(f"a{ch} 1{ch} !{ch}  {ch}\t{ch} {ch}a x{ch}{ch}y 's{ch}")
    return out


def probe_tiktoken(engine: Engine, document: DocumentSource, fingerprint: str | None = None) -> str | None:
    """None when tiktoken gives ``tokenizers``' ids on the probe texts, else where it differs.
    Kept per tokenizer and code (:data:`VERDICT_CODE`, with tiktoken's version): the spec found no differing code point for
    tiktoken 0.14.0 against tokenizers 0.23.3, and this keeps checking that on every run."""
    import tiktoken

    fingerprint = fingerprint or document_fingerprint(loaded_document(document))
    key = (fingerprint, getattr(tiktoken, "__version__", "?"))
    if key in _probe_cache:
        return _probe_cache[key]
    cached = _remembered(fingerprint)
    if "probe" in cached:
        _probe_cache[key] = cached["probe"]
        return cached["probe"]
    texts = probe_text(probe_code_points())
    try:
        reference = TokenizersEngine(loaded_document(document)).encode_batch(texts)
    except ToktoolsError:
        _probe_cache[key] = None  # cannot compare; the E1-E4 analysis stands
        return None
    ours = engine.encode_batch(texts)
    result = None
    for text, a, b in zip(texts, ours, reference):
        if a != b:
            result = f"tiktoken splits {text[:12]!r} differently from tokenizers (Unicode tables differ)"
            break
    _probe_cache[key] = result
    _remember(fingerprint, {"probe": result})
    return result
