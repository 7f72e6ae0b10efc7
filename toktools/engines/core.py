"""Encoding engines for corpora: the same ids from toktools' reference, ``tokenizers`` or tiktoken.

An engine turns a batch of texts into lists of ids, with no template (no ``[CLS]``/``<s>``), no
truncation and no padding; special tokens written in the text are matched as tokens, as
``tokenizers`` does. Which engines give the reference's ids is decided from the tokenizer's
``tokenizer.json`` document alone (:func:`analyse`), never from class internals:

* ``tokenizers`` loads that document, so it is exact for every tokenizer it can load;
* tiktoken is exact only under the sufficient condition of ``spec/tiktoken-equivalence.md``
  (E1-E4 on the vocabulary and merges, a configuration tiktoken can express, special tokens
  it matches as ``tokenizers`` does) *and* when a probe of its regular expression on the code
  points where Unicode tables are known to differ gives ``tokenizers``' ids;
* the reference is toktools itself.

``auto`` picks the fastest of the exact ones: the reference where it beats the libraries
(BERT WordPiece, see :func:`reference_is_fastest`; Unigram with its compiled Viterbi, see
:func:`compiled_unigram_reference`), else tiktoken when exact, else ``tokenizers``, else the
reference. Every engine gives the same ids, so the choice changes the speed, never the output.
"""

from __future__ import annotations

import hashlib
import json
import os
from array import array
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Union

from toktools.engines.id_packing import Packed, joined, pack_id_lists, unpack_id_lists
from toktools.errors import ToktoolsError

ENGINES = ("auto", "reference", "tokenizers", "tiktoken")
IdBatch = list[list[int]]

#: tiktoken's spelling of the GPT-2 split (openai/tiktoken ``tiktoken_ext/openai_public.py``);
#: the spec measured it equal to ``tokenizers``' Oniguruma pattern on every code point.
GPT2_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""
ONE_PIECE_PATTERN = r"(?s).+"


def document_fingerprint(document: Mapping[str, Any]) -> str:
    """sha256 of the canonical JSON of a ``tokenizer.json`` document: same pipeline, same hash."""
    canonical = json.dumps(document, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def corpus_document(document: Mapping[str, Any]) -> dict[str, Any]:
    """The document as corpus encoding uses it: no truncation, no padding (whole documents)."""
    doc = dict(document)
    doc["truncation"] = None
    doc["padding"] = None
    return doc


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


def _cache_file(fingerprint: str) -> Any:
    """Where the verdict of E4 (one BPE run per token) and of the regex probe is kept between
    runs: per tokenizer fingerprint and library versions, in the user cache
    (:mod:`toktools.io.user_cache`: ``TOKTOOLS_CACHE_DIR`` or ``~/.cache/toktools``;
    ``TOKTOOLS_CACHE_DIR=`` (empty) turns it off)."""
    from toktools.io.user_cache import cache_file

    try:
        import tiktoken
        import tokenizers

        versions = f"{tokenizers.__version__}-{getattr(tiktoken, '__version__', '?')}"
    except ImportError:
        return None
    return cache_file("engine-analysis-v1", f"{fingerprint}-{versions}.json")


def _cached(fingerprint: str) -> dict[str, Any] | None:
    path = _cache_file(fingerprint)
    try:
        return json.loads(path.read_text()) if path is not None and path.is_file() else None
    except (OSError, ValueError):
        return None


def _remember(fingerprint: str, verdict: dict[str, Any]) -> None:
    path = _cache_file(fingerprint)
    if path is None:
        return
    verdict = {**(_cached(fingerprint) or {}), **verdict}
    try:
        from toktools.io.outputs import write_files_atomically

        write_files_atomically(path.parent, {path.name: json.dumps(verdict)})
    except (OSError, ToktoolsError):
        pass  # a cache only: a read-only home is fine


def analyse(document: Mapping[str, Any], fingerprint: str | None = None) -> Analysis:
    """Decide from the ``tokenizer.json`` document which engines give the reference's ids
    (remembered per document fingerprint and library versions: the E4 check runs BPE once per
    token)."""
    key = fingerprint or document_fingerprint(document)
    if key not in _analysis_cache:
        cached = _cached(key) or {}
        exact = cached.get("exact")
        if (
            cached.get("e4", "") is None
            and isinstance(exact, dict)
            and exact.get("version") == _EXACT_VERSION
            and exact.get("remap") is False
            and _configuration_reason(document) is None
        ):
            # every check passed before for this very document: only the plan is rebuilt
            _analysis_cache[key] = Analysis(None, _plan(document, None), cuttable=cuttable(document))
        elif "e4" in cached and cached["e4"] is None:
            _analysis_cache[key] = _analyse(document, e4=False)
        elif cached.get("e4"):
            _analysis_cache[key] = Analysis(cached["e4"], cuttable=cuttable(document))
        else:
            analysis = _analyse(document, e4=True)
            _analysis_cache[key] = analysis
            if (
                analysis.tiktoken_reason is None
                or analysis.tiktoken_reason.endswith("(E4)")
                or "(E4')" in analysis.tiktoken_reason
            ):
                _remember(key, {"e4": analysis.tiktoken_reason})
        analysis = _analysis_cache[key]
        if analysis.tiktoken_reason is None and analysis.plan is not None and "exact" not in cached:
            _remember(key, {"exact": {"version": _EXACT_VERSION, "remap": analysis.plan.rank_to_id is not None}})
    return _analysis_cache[key]


#: Bumped whenever the E1-E4 checks change: older "exact" verdicts in the cache are then ignored.
_EXACT_VERSION = 1


def _plan(
    doc: Mapping[str, Any], rank_of: Mapping[str, int] | None, rank_to_id: dict[int, int] | None = None
) -> TiktokenPlan:
    """What tiktoken needs; ``rank_of`` (symbols → rank) defaults to the regular vocabulary.

    All tokens are translated to bytes in one ``str.translate`` over their concatenation
    (one symbol is one byte, so the lengths are the same): a tenth of the time of one call
    per token, which counts on every short run."""
    from itertools import accumulate

    from toktools.models.bpe.byte_symbols import SYMBOL_TO_LATIN1

    added = {t["content"]: t["id"] for t in doc.get("added_tokens") or []}
    if rank_of is None:  # the vocabulary without the added tokens, in its order (a copy in C)
        rank_of = dict(doc["model"].get("vocab") or {})
        for token in added:
            rank_of.pop(token, None)
    symbols = list(rank_of)
    data = "".join(symbols).translate(SYMBOL_TO_LATIN1).encode("latin-1")
    ends = list(accumulate(map(len, symbols)))
    starts = [0, *ends[:-1]]
    ranks_bytes = dict(zip(map(data.__getitem__, map(slice, starts, ends)), rank_of.values()))
    pattern = GPT2_PATTERN if (doc.get("pre_tokenizer") or {}).get("use_regex", True) else ONE_PIECE_PATTERN
    return TiktokenPlan(ranks_bytes, added, pattern, rank_to_id)


def _analyse(doc: Mapping[str, Any], e4: bool = True) -> Analysis:
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
    # E4 / E4': every regular token of 2+ symbols is what BPE makes of it alone
    ignore_merges = bool(model.get("ignore_merges", False))
    failure = _self_reachability(regular, merges, ignore_merges) if e4 else None
    if failure is not None:
        return Analysis(failure, cuttable=can_cut)
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
    return Analysis(None, _plan(doc, rank_of, rank_to_id), cuttable=can_cut)


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
# Engines
# ---------------------------------------------------------------------------------------------


class Engine:
    """Texts → lists of ids (no template, no truncation, special tokens in the text matched)."""

    name = ""
    #: The characters of a batch this engine prefers at most (None: as large as the caller
    #: allows). The libraries' threads need no large batch, and smaller ones overlap reading,
    #: encoding and writing better (a 5 MB Chinese file is under 2 M characters).
    batch_chars: int | None = None

    def encode_batch(self, texts: Sequence[str]) -> IdBatch:  # pragma: no cover - interface
        raise NotImplementedError

    def close(self) -> None:
        """Release worker processes or threads."""


class TokenizersEngine(Engine):
    name = "tokenizers"
    batch_chars = 1 << 18

    def __init__(self, document: Mapping[str, Any]) -> None:
        import tokenizers

        try:
            self.tokenizer = tokenizers.Tokenizer.from_str(json.dumps(corpus_document(document)))
        except Exception as err:  # tokenizers raises plain Exception subclasses
            raise ToktoolsError(f"engine tokenizers cannot load this tokenizer: {str(err).splitlines()[0]}") from None

    def encode_batch(self, texts: Sequence[str]) -> IdBatch:
        encode = getattr(self.tokenizer, "encode_batch_fast", self.tokenizer.encode_batch)
        return [e.ids for e in encode(list(texts), add_special_tokens=False)]


class TiktokenEngine(Engine):
    name = "tiktoken"
    batch_chars = 1 << 18

    def __init__(self, plan: TiktokenPlan, threads: int | None = None) -> None:
        import tiktoken

        self.encoding = tiktoken.Encoding(
            "toktools", pat_str=plan.pattern, mergeable_ranks=plan.mergeable_ranks, special_tokens=plan.special_tokens
        )
        self.threads = threads or os.cpu_count() or 1
        self.remap = plan.rank_to_id
        self._pool: Any = None
        self._ordinary = self.encoding.encode_ordinary
        # tokenizers always splits added tokens out of the text; tiktoken's encode does too, but
        # scans every text for them: a text that holds none takes encode_ordinary (the same ids)
        self._has_special: Callable[[str], Any] | None = None
        # tiktoken's encode into a buffer of uint32 (no list of ints), for encode_packed
        core = getattr(self.encoding, "_core_bpe", None)
        self._buffer: Callable[[str, Any], Any] | None = getattr(core, "encode_to_tiktoken_buffer", None)
        self._allowed = set(plan.special_tokens)
        if self._buffer is not None:  # uint32 ids, as tiktoken 0.14 gives them (else: lists only)
            view = memoryview(self._buffer("a", self._allowed))
            if view.itemsize != 4 or view.format.lstrip("@=<") not in ("I", "L") or array("I").itemsize != 4:
                self._buffer = None
            view.release()
        if plan.special_tokens:
            encode, allowed = self.encoding.encode, frozenset(plan.special_tokens)
            self._special: Callable[[str], list[int]] = lambda text: encode(
                text, allowed_special=allowed, disallowed_special=()
            )
            if len(allowed) == 1:
                token = next(iter(allowed))
                self._has_special = lambda text: token in text
            else:
                import re

                self._has_special = re.compile("|".join(map(re.escape, sorted(allowed)))).search

    def _chunk(self, texts: Sequence[str]) -> IdBatch:
        ordinary, has_special = self._ordinary, self._has_special
        if has_special is None:
            return [ordinary(text) for text in texts]
        special = self._special
        return [special(text) if has_special(text) else ordinary(text) for text in texts]

    def encode_batch(self, texts: Sequence[str]) -> IdBatch:
        """Contiguous chunks on a few threads (the Rust core releases the GIL): one Python call
        per text, not one future per text as ``Encoding.encode_batch`` makes."""
        texts = list(texts)
        if self.threads <= 1 or len(texts) < 2:
            out = self._chunk(texts)
        else:
            if self._pool is None:
                from concurrent.futures import ThreadPoolExecutor

                self._pool = ThreadPoolExecutor(self.threads)
            size = max(1, -(-len(texts) // (self.threads * 4)))
            out = []
            for part in self._pool.map(self._chunk, [texts[i : i + size] for i in range(0, len(texts), size)]):
                out.extend(part)
        if self.remap:
            remap = self.remap
            out = [[remap.get(i, i) for i in ids] for ids in out]
        return out

    def encode_packed(self, texts: Sequence[str]) -> PackedIds | None:
        """The ids of ``texts`` as one array of native uint32 (see :class:`PackedIds`), the
        same ids as :meth:`encode_batch` without a Python int per id: tiktoken's own buffers
        (``encode_to_tiktoken_buffer``, its ``encode`` with every special token allowed: what
        :meth:`_chunk` gives) joined in C. None where that path does not apply (a rank remap,
        or a tiktoken without it): then :meth:`encode_batch`."""
        if self._buffer is None or self.remap:
            return None
        texts = list(texts)
        if self.threads <= 1 or len(texts) < 2:
            data, counts = self._packed_chunk(texts)
            return PackedIds(data, counts)
        if self._pool is None:
            from concurrent.futures import ThreadPoolExecutor

            self._pool = ThreadPoolExecutor(self.threads)
        size = max(1, -(-len(texts) // (self.threads * 4)))
        parts = list(self._pool.map(self._packed_chunk, [texts[i : i + size] for i in range(0, len(texts), size)]))
        return PackedIds(b"".join([data for data, _ in parts]), [n for _, counts in parts for n in counts])

    def _packed_chunk(self, texts: Sequence[str]) -> tuple[bytes, list[int]]:
        encode, allowed = self._buffer, self._allowed
        try:
            buffers = [encode(text, allowed) for text in texts]  # type: ignore[misc]
        except UnicodeEncodeError:  # a lone surrogate: Encoding.encode's repair, text by text
            buffers = [array("I", ids) for ids in self._chunk(texts)]
        # only the buffers' byte length is sound (tiktoken 0.14 gives a shape in bytes, not ids):
        # joined through the plain buffer interface, counted by nbytes
        counts = [memoryview(buffer).nbytes >> 2 for buffer in buffers]
        return b"".join(buffers), counts

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None


class PackedIds:
    """The ids of a batch of texts as one array: ``data`` holds every id as a native uint32,
    text after text, and ``counts`` how many each text has. Writers take ``data`` in one piece
    (:meth:`toktools.corpus.writers.DocumentWriter.write_uint32`); indexing gives one text's
    ids as a list (for the few that are checked)."""

    def __init__(self, data: bytes, counts: list[int]) -> None:
        self.data = data
        self.counts = counts
        self._starts: list[int] | None = None

    def __len__(self) -> int:
        return len(self.counts)

    def __getitem__(self, index: int) -> list[int]:
        if index < 0:
            index += len(self.counts)
        if self._starts is None:
            from itertools import accumulate

            self._starts = list(accumulate(self.counts, initial=0))
        start = self._starts[index]
        return array("I", self.data[4 * start : 4 * self._starts[index + 1]]).tolist()

    def lists(self) -> IdBatch:
        """Every text's ids as a list."""
        return [self[i] for i in range(len(self))]


#: What a forked worker encodes with: the engine's ids function, inherited with its caches.
_worker_ids: Callable[[list[str]], IdBatch] | None = None
#: Or, where the engine has an ids-only path, its function giving the packed arrays directly.
_worker_packed: Callable[[list[str]], tuple[bytes, bytes]] | None = None
#: Characters in a batch below which the reference stays in this process (forking costs more).
PARALLEL_CHARS = 1 << 17


def _set_worker_ids(
    ids: Callable[[list[str]], IdBatch], packed: Callable[[list[str]], tuple[bytes, bytes]] | None = None
) -> None:
    global _worker_ids, _worker_packed
    _worker_ids, _worker_packed = ids, packed


def _ready() -> None:
    """A task that only makes the pool fork its workers (which then run their set-up)."""


#: In a zygote (see :class:`ReferenceEngine`): its pool of workers, forked once compiled code is loaded.
_zygote_pool: Any = None


def _start_zygote(
    ids: Callable[[list[str]], IdBatch],
    packed: Callable[[list[str]], tuple[bytes, bytes]] | None,
    prepare: Callable[[], None],
    workers: int,
) -> None:
    """A zygote's set-up: load the compiled code, then fork the workers, which inherit it."""
    global _zygote_pool
    from multiprocessing import util

    from toktools.runtime.workers import start_pool, stop_pool

    prepare()
    _zygote_pool = start_pool(workers, initializer=_set_worker_ids, initargs=(ids, packed))
    # when the zygote leaves (its pool shut down without _stop_zygote: an engine never closed),
    # its workers are stopped first: multiprocessing would otherwise wait for them to exit
    util.Finalize(_zygote_pool, stop_pool, args=(_zygote_pool,), exitpriority=10)
    for _ in range(workers):
        _zygote_pool.submit(_ready)


def _encode_in_zygote(chunks: list[list[str]]) -> list[tuple[bytes, bytes]]:
    """The chunks spread over the zygote's workers: their packed results, in order."""
    return list(_zygote_pool.map(_encode_in_worker, chunks))


def _stop_zygote() -> None:
    """The zygote's workers stopped and waited for (so that their CPU time is counted as its
    children's, and so as this engine's)."""
    _zygote_pool.shutdown(wait=True)


def _encode_in_worker(texts: list[str]) -> tuple[bytes, bytes]:
    """Ids of a chunk, packed (:mod:`toktools.engines.id_packing`) to be sent back cheaply."""
    if _worker_packed is not None:
        return _worker_packed(texts)
    assert _worker_ids is not None
    return pack_id_lists(_worker_ids(texts))


class ReferenceEngine(Engine):
    """toktools' own tokenizer, in a pool of forked processes kept for the whole corpus
    (forking per batch would cost more than small batches take).

    Tokenizers whose parts :mod:`toktools.engines.ids_only` knows (byte-level BPE, BERT WordPiece,
    Unigram) take its ids-only path (:class:`toktools.engines.ids_only.IdsPath`), which gives the same
    ids without building encodings; others encode whole encodings and keep the ids. Large
    batches go to one pool of worker processes from :func:`toktools.runtime.workers.start_pool`,
    whichever way the ids are made.

    ``input_bytes``, when known, is the size of what will be encoded. An input large enough for
    compiled code (:meth:`~toktools.engines.ids_only.IdsPath.plans_compiled`: the BPE merge, for
    byte-level BPE) goes through a zygote: one process forked at once, which loads the compiled
    code while this process reads the first batch, then forks the workers, which inherit it.
    Loading is ~0.05 s from the machine code kept in the user cache
    (:mod:`toktools.runtime.machine_code`); the first time on a machine, numba compiles it there (as a
    process of toktools' own, without ``scipy.linalg``: see
    :func:`toktools.models.bpe.bulk_merge.without_scipy_linalg`), so numba never enters the caller's process.
    The batches go to the zygote, which spreads them over its workers; their ids come back as
    packed uint32 arrays (:meth:`encode_packed`)."""

    name = "reference"

    def __init__(
        self,
        document: DocumentSource,
        workers: int | None = None,
        input_bytes: int | None = None,
        fingerprint: str | None = None,
    ) -> None:
        """``fingerprint``, when given, names ``document`` (the sha256 of its file): the built
        tokenizer is then kept in, or taken from, the user cache (:mod:`toktools.engines.reference_cache`)."""
        from toktools.engines.ids_only import IdsPath, ids_encoder
        from toktools.engines.reference_cache import reference_tokenizer

        try:
            self.tokenizer = reference_tokenizer(lambda: corpus_document(loaded_document(document)), fingerprint)
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise ToktoolsError(f"the reference engine cannot load this tokenizer ({err})") from None
        self.workers = workers or os.cpu_count() or 1
        self._pool: Any = None
        #: the pool is a zygote (one process that spreads chunks over the workers it forked)
        self._zygote = False
        self._busy = False
        self._closed = False
        self.fast: IdsPath | None = ids_encoder(self.tokenizer)
        from toktools.runtime.workers import start_pool, worth_starting

        if (
            self.fast is not None
            and input_bytes is not None
            and worth_starting(self.workers, input_bytes, PARALLEL_CHARS) > 1
            and self.fast.plans_compiled(input_bytes)
        ):
            prepare = partial(self.fast.load_compiled, own_process=True)
            self._pool = start_pool(
                1, initializer=_start_zygote, initargs=(self._ids, self.fast.encode_packed, prepare, self.workers)
            )
            self._zygote = True
            self._pool.submit(_ready)  # forks it now

    def _ids(self, texts: list[str]) -> IdBatch:
        """The ids of ``texts`` in this process: the ids-only path where there is one."""
        if self.fast is not None:
            return self.fast.encode_batch(texts)
        return [e.ids for e in self.tokenizer.encode_batch(texts, add_special_tokens=False, workers=1)]

    def encode_batch(self, texts: Sequence[str]) -> IdBatch:
        here, packed = self._encode(texts)
        return here + unpack_id_lists(packed)

    def encode_packed(self, texts: Sequence[str]) -> PackedIds:
        """The same ids as :meth:`encode_batch` in one array (:class:`PackedIds`): the workers'
        packed uint32 ids joined as they come, with no Python int made per id."""
        here, packed = self._encode(texts)
        data, counts = joined([pack_id_lists(here), *packed] if here else packed)
        return PackedIds(data, counts)

    def _encode(self, texts: Sequence[str]) -> tuple[IdBatch, list[Packed]]:
        """The ids of ``texts``: those of the first ones encoded here, then the packed results
        of the workers for the rest, in order."""
        from toktools.runtime.workers import worth_starting

        texts = list(texts)
        chars = sum(map(len, texts))
        if not texts or (
            not self._zygote and (len(texts) < 2 or worth_starting(self.workers, chars, PARALLEL_CHARS // 2) <= 1)
        ):
            return self._ids(
                texts
            ), []  # small batches stay here, except with a zygote (its workers are ready; no cache here)
        warm: IdBatch = []
        if self._pool is None:
            if self._closed:  # a batch that started after close (an interrupt) must not fork a new pool
                raise RuntimeError("the reference engine is closed")
            # the first texts here: the workers are forked with the words they hold cached, so
            # frequent words are not missed (and merged) once per worker
            head = max(1, len(texts) // 32)
            warm, texts = self._ids(texts[:head]), texts[head:]
            if self.fast is not None:  # bulk merges loaded once here, not once per worker
                self.fast.prepare_for_volume((chars - sum(map(len, texts))) / max(chars, 1), self.workers)
            chars = sum(map(len, texts))
            from toktools.runtime.workers import start_pool

            # workers that die with this process and leave signals to it (forked on first use)
            packed = self.fast.encode_packed if self.fast is not None else None
            self._pool = start_pool(self.workers, initializer=_set_worker_ids, initargs=(self._ids, packed))
        # contiguous chunks of about equal characters, a few per worker
        target = max(1, -(-chars // (self.workers * 2)))
        chunks, chunk, size = [], [], 0
        for text in texts:
            chunk.append(text)
            size += len(text)
            if size >= target:
                chunks.append(chunk)
                chunk, size = [], 0
        if chunk:
            chunks.append(chunk)
        if self._zygote:
            self._busy = True
            try:
                return [], self._pool.submit(_encode_in_zygote, chunks).result()
            finally:
                self._busy = False
        return warm, list(self._pool.map(_encode_in_worker, chunks))

    def close(self) -> None:
        """Kill the workers (also from another thread while a batch is in flight: it then
        fails with ``BrokenProcessPool`` instead of finishing)."""
        self._closed = True
        pool, self._pool = self._pool, None
        if pool is not None and self._zygote and not self._busy:
            try:  # idle: a clean stop, every process waited for
                pool.submit(_stop_zygote).result(timeout=10)
                pool.shutdown(wait=True)
                return
            except Exception:  # noqa: BLE001 - it is stopped the hard way below
                pass
        if pool is not None:
            from toktools.runtime.workers import stop_pool

            stop_pool(pool)


#: The tokenizer's document, or a function that gives it when first needed (a cached start-up
#: parses ``tokenizer.json`` only when an engine needs more than its shape: see
#: :mod:`toktools.corpus.prepared_tokenizer`).
DocumentSource = Union[Mapping[str, Any], Callable[[], Mapping[str, Any]]]


def loaded_document(document: DocumentSource) -> Mapping[str, Any]:
    """The document a :data:`DocumentSource` stands for (calling it parses it, the first time)."""
    return document() if callable(document) else document  # type: ignore[no-any-return]


def reference_is_fastest(document: Mapping[str, Any], workers: int | None = None) -> bool:
    """True for the tokenizers whose ids the reference makes faster than ``tokenizers``: BERT
    WordPiece (BertNormalizer or none, BertPreTokenizer), where the ids-only path
    (:mod:`toktools.engines.ids_only`: one translate, one findall, cached words) on a pool of worker
    processes beats ``encode_batch`` in wall and CPU time on English and Chinese, 5 MB and 40 MB
    (``benchmarks/bench_encode.py``: 1.2-2.6x), and no ``--verify`` checker is needed. Not with a
    single worker (``tokenizers`` always uses every core), and byte-level BPE stays with the
    libraries (tiktoken is several times faster)."""
    if (workers or os.cpu_count() or 1) < 2:
        return False
    model = (document.get("model") or {}).get("type")
    pre = (document.get("pre_tokenizer") or {}).get("type")
    normalizer = document.get("normalizer")
    return (
        model == "WordPiece"
        and pre == "BertPreTokenizer"
        and (normalizer is None or normalizer.get("type") == "BertNormalizer")
    )


def likely_engine(
    name: str, document: Mapping[str, Any], workers: int | None = None, input_bytes: int | None = None
) -> str:
    """The engine :func:`make_engine` is expected to give, from the document's shape alone
    (cheap: no analysis, no engine built): ``reference`` when asked for or when ``auto`` takes it
    (:func:`fastest_reference`'s rules: BERT WordPiece; Unigram on ``input_bytes`` of at least
    :data:`UNIGRAM_REFERENCE_MIN_BYTES` with numba installed), else ``name``. Used to fork the
    ``--verify`` checker early, which the reference does not need."""
    if name != "auto":
        return name
    if reference_is_fastest(document, workers) or unigram_reference_likely(document, input_bytes):
        return "reference"
    return name


def unigram_reference_likely(document: Mapping[str, Any], input_bytes: int | None = None) -> bool:
    """Whether :func:`compiled_unigram_reference` will take the reference, judged without loading
    numba or building the engine: a Unigram model, input of known size large enough, numba
    installed. (When its ids-only path then declines the tokenizer, ``auto`` goes on to
    ``tokenizers`` and the ``--verify`` checker is forked at that point instead.)"""
    if (document.get("model") or {}).get("type") != "Unigram":
        return False
    if input_bytes is None or input_bytes < UNIGRAM_REFERENCE_MIN_BYTES:
        return False
    from toktools.runtime.compiled_switch import numba_installed, pure_python_forced

    return not pure_python_forced() and numba_installed()  # what compiled_viterbi will say


def tiktoken_available() -> bool:
    try:
        import tiktoken  # noqa: F401
    except ImportError:
        return False
    return True


def tokenizers_loads(document: Mapping[str, Any]) -> str | None:
    try:
        TokenizersEngine(document)
    except ToktoolsError as err:
        return str(err)
    return None


#: Input below which ``auto`` keeps ``tokenizers`` for Unigram: numba's start (~0.5-1 s once per
#: process) costs more than the compiled reference saves on less (bench_unigram, 1 and 10 MB).
UNIGRAM_REFERENCE_MIN_BYTES = 8_000_000


def compiled_unigram_reference(
    document: DocumentSource,
    workers: int | None = None,
    input_bytes: int | None = None,
    shape: Mapping[str, Any] | None = None,
    fingerprint: str | None = None,
) -> ReferenceEngine | None:
    """``auto``'s engine for a Unigram tokenizer: the reference, when its ids-only path takes
    this tokenizer (:mod:`toktools.engines.ids_only_unigram`) and the compiled Viterbi is installed (numba,
    extra ``fast``); None otherwise (then ``auto`` goes on to ``tokenizers`` as for any model).

    The rule, and why: ``auto`` is the fastest engine proven to give the reference's ids. The
    reference is exact by definition, and ``tokenizers`` is exact by the premise of this module
    (the reference follows it, tested on real text). For a tokenizer.json Unigram the two do run
    the same algorithm (f64 sums, strict ``>`` ties, per-grapheme shortest-match Precompiled,
    Metaspace), so ``tokenizers`` is exact except where its grapheme tables (the
    unicode-segmentation crate) and ``regex``'s ``\\X`` differ, which no test has shown on
    real text -- the reference has no such doubt at all. Speed settles it: measured side by side
    (``benchmarks/bench_unigram.py``, 10 MB of English and of Chinese), the compiled ids path
    in the worker pool takes less CPU per MB than ``tokenizers``' ``encode_batch`` and less
    time with every core, while without numba the reference runs at about half the speed of
    ``tokenizers``. So: compiled reference when available, else ``tokenizers``; and
    ``tokenizers`` too when the caller knows the input is small (``input_bytes`` below
    :data:`UNIGRAM_REFERENCE_MIN_BYTES`), as numba's own start then costs more than it saves.
    ``document`` may be a :data:`DocumentSource`; ``shape``, when given, is checked instead."""
    model = ((shape if shape is not None else loaded_document(document)).get("model") or {}).get("type")
    if model != "Unigram" or (input_bytes is not None and input_bytes < UNIGRAM_REFERENCE_MIN_BYTES):
        return None
    from toktools.engines.ids_only_unigram import UnigramIdsEncoder
    from toktools.parts.unigram import compiled_viterbi

    if compiled_viterbi() is None:
        return None
    try:
        engine = ReferenceEngine(document, workers, fingerprint=fingerprint)
    except ToktoolsError:
        return None
    if not isinstance(engine.fast, UnigramIdsEncoder):
        engine.close()
        return None
    return engine


def fastest_reference(
    document: DocumentSource,
    workers: int | None = None,
    input_bytes: int | None = None,
    shape: Mapping[str, Any] | None = None,
    fingerprint: str | None = None,
) -> ReferenceEngine | None:
    """The reference engine when ``auto`` should take it (it beats the libraries for this
    tokenizer: :func:`compiled_unigram_reference`, :func:`reference_is_fastest`), else None.
    ``document`` may be a :data:`DocumentSource`; ``shape``, when given, is checked instead;
    ``fingerprint`` as :class:`ReferenceEngine` takes it."""
    shape = shape if shape is not None else loaded_document(document)
    unigram = compiled_unigram_reference(document, workers, input_bytes, shape, fingerprint)
    if unigram is not None or not reference_is_fastest(shape, workers):
        return unigram
    try:
        reference = ReferenceEngine(document, workers, fingerprint=fingerprint)
    except ToktoolsError:
        return None
    if reference.fast is None:  # no ids-only path after all: the libraries are faster
        reference.close()
        return None
    return reference


def make_engine(
    name: str,
    document: DocumentSource,
    *,
    workers: int | None = None,
    analysis: Analysis | None = None,
    fingerprint: str | None = None,
    input_bytes: int | None = None,
    shape: Mapping[str, Any] | None = None,
) -> Engine:
    """The engine called ``name`` (``auto`` = the fastest exact one) for this tokenizer, or a
    one-line :class:`ToktoolsError` saying why it cannot be used. ``input_bytes``, when known,
    is the size of what will be encoded (``auto`` weighs start-up costs against it).

    ``document`` may be a :data:`DocumentSource` (a function giving the document): with the
    ``analysis`` (probed, see :class:`Analysis`) and the document's ``shape`` at hand, a tiktoken
    engine is made without it."""
    if name not in ENGINES:
        raise ToktoolsError(f"unknown engine {name!r}; choose one of {', '.join(ENGINES)}")
    if name == "reference":
        return ReferenceEngine(document, workers, input_bytes, fingerprint)
    if name == "tokenizers":
        return TokenizersEngine(loaded_document(document))
    if name == "auto":
        reference = fastest_reference(document, workers, input_bytes, shape, fingerprint)
        if reference is not None:
            return reference
    analysis = analysis or analyse(loaded_document(document), fingerprint)
    if name == "tiktoken" or (name == "auto" and analysis.tiktoken_reason is None and tiktoken_available()):
        if not tiktoken_available():
            raise ToktoolsError("engine tiktoken is not installed (pip install 'toktools[corpus]')")
        if analysis.tiktoken_reason is not None:
            raise ToktoolsError(f"engine tiktoken is not exact for this tokenizer: {analysis.tiktoken_reason}")
        assert analysis.plan is not None
        engine = TiktokenEngine(analysis.plan, workers)
        if not analysis.probed:
            analysis.probe, analysis.probed = probe_tiktoken(engine, document, fingerprint), True
        mismatch = analysis.probe
        if mismatch is None:
            return engine
        engine.close()
        if name == "tiktoken":
            raise ToktoolsError(f"engine tiktoken is not exact for this tokenizer: {mismatch}")
    try:
        return TokenizersEngine(loaded_document(document))
    except ToktoolsError:
        return ReferenceEngine(document, workers, fingerprint=fingerprint)


# ---------------------------------------------------------------------------------------------
# The regex probe: tiktoken's Unicode tables against tokenizers' on the known risky code points
# ---------------------------------------------------------------------------------------------

#: Code points the spec singled out (Unicode 15-17 additions, odd spaces), besides the ones where
#: Python's ``regex`` differs from ``tokenizers`` (``_bytelevel_tables.REGEX_DISAGREEMENTS``).
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


def probe_tiktoken(engine: TiktokenEngine, document: DocumentSource, fingerprint: str | None = None) -> str | None:
    """None when tiktoken gives ``tokenizers``' ids on the probe texts, else where it differs.
    Cached per (tokenizer, tiktoken version): the spec found no differing code point for
    tiktoken 0.14.0 against tokenizers 0.23.3, and this keeps checking that on every run."""
    import tiktoken

    fingerprint = fingerprint or document_fingerprint(loaded_document(document))
    key = (fingerprint, getattr(tiktoken, "__version__", "?"))
    if key in _probe_cache:
        return _probe_cache[key]
    cached = _cached(fingerprint) or {}
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
