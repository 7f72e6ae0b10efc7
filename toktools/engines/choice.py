"""Which engine encodes a corpus: :func:`make_engine` builds the one asked for, and ``auto`` picks
the fastest of those that give the reference's ids.

``auto`` reads :data:`SPEEDS`, a small table: for each family of tokenizer, the engines in the
order of their measured speed, with the figure behind each entry. It takes the first engine of
the tokenizer's family that is installed, applies and is exact for this tokenizer: proven
(tiktoken: ``spec/tiktoken-equivalence.md``, E1-E4 with E4 as a filter, and its regex probed),
probed (gigatoken: :mod:`toktools.engines.gigatoken_probe`), the reference itself, or
``tokenizers``, the yardstick the reference is tested against. Every engine gives the same
ids, so the choice changes the speed, never the output. The engine made says which it is and
why it was taken (:attr:`Engine.why`, shown by ``--verbose``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from toktools.engines.analysis import Analysis, analyse, probe_tiktoken
from toktools.engines.base import DocumentSource, Engine, loaded_document
from toktools.engines.gigatoken_engine import gigatoken_available
from toktools.engines.reference import ReferenceEngine
from toktools.engines.tiktoken_engine import TiktokenEngine, tiktoken_available
from toktools.engines.tokenizers_engine import TokenizersEngine
from toktools.errors import ToktoolsError

ENGINES = ("auto", "reference", "tokenizers", "tiktoken", "gigatoken", "sentencepiece")

#: How each engine's ids are known to equal the reference's (shown in the run's summary).
EXACTNESS = {
    "reference": "the reference",
    "tokenizers": "the reference's yardstick",
    "tiktoken": "proven",
    "gigatoken": "probed",
    "sentencepiece": "sentencepiece itself",
}


@dataclass(frozen=True)
class Speed:
    """One row of ``auto``'s table: an engine for a family of tokenizers, and how fast it was."""

    family: str
    engine: str
    #: MB of text per second (``toktools encode`` end to end unless said otherwise), this 2-core machine
    mb_per_second: float
    measured: str
    #: seconds the engine costs before its first id (imports, loading the tokenizer), warm caches
    startup_seconds: float = 0.0

    def expected_seconds(self, input_bytes: int | None) -> float:
        """Start-up plus encoding ``input_bytes`` at :attr:`mb_per_second` (unknown size: the
        encoding alone counts, as for a large input)."""
        if input_bytes is None:
            return 1 / self.mb_per_second
        return self.startup_seconds + input_bytes / 1e6 / self.mb_per_second


#: ``auto``'s table, fastest first within each family. The figures are side by side in one run on
#: a loaded 2-core machine (``benchmarks/bench_encode.py``); see docs/performance.md. Where a row
#: has a start-up cost, ``auto`` orders the family's rows by the expected time for the input's
#: size (:meth:`Speed.expected_seconds`): gigatoken's start-up (awkward's import and its
#: ``load_hf_json``, ~0.6 s) is worth paying from ~2 MB of input, below which tiktoken is done first.
SPEEDS: tuple[Speed, ...] = (
    Speed(
        "byte-level BPE",
        "gigatoken",
        23.0,
        "raw encode_batch, GPT-2, 10 MB English (bench_encode.py, loaded machine); start-up: awkward's import "
        "0.2-0.4 s and load_hf_json 0.2-0.8 s (cProfile, issue 23)",
        0.6,
    ),
    Speed(
        "byte-level BPE",
        "tiktoken",
        3.4,
        "raw encode_ordinary_batch, the same run; start-up: its ranks from the start-up cache and Encoding",
        0.15,
    ),
    Speed("byte-level BPE", "reference", 1.5, "encode --engine reference end to end, the same run", 0.3),
    Speed("byte-level BPE", "tokenizers", 0.9, "raw encode_batch, the same run", 0.15),
    Speed("BERT WordPiece", "reference", 1.9, "x tokenizers' encode_batch, 5-40 MB, pool of 2 (performance.md)"),
    Speed("BERT WordPiece", "tokenizers", 1.0, "the yardstick"),
    Speed("Unigram", "reference", 1.3, "x tokenizers, compiled Viterbi, 10 MB, inputs of 8 MB+ (bench_unigram)"),
    Speed("Unigram", "tokenizers", 1.0, "the yardstick"),
    Speed("other", "tokenizers", 1.0, "the yardstick"),
    Speed("other", "reference", 0.1, "pure Python, when tokenizers cannot load the file"),
)


def family(shape: Mapping[str, Any]) -> str:
    """The row family of :data:`SPEEDS` a tokenizer belongs to."""
    model = (shape.get("model") or {}).get("type")
    pre = (shape.get("pre_tokenizer") or {}).get("type")
    if model == "BPE" and pre == "ByteLevel":
        return "byte-level BPE"
    if model == "WordPiece" and pre == "BertPreTokenizer":
        return "BERT WordPiece"
    if model == "Unigram":
        return "Unigram"
    return "other"


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
    from toktools.engines.sentencepiece_engine import sentencepiece_available
    from toktools.sentencepiece.rule_marker import follows_sentencepiece

    if follows_sentencepiece(document):
        return "sentencepiece" if sentencepiece_available() else "reference"
    if reference_is_fastest(document, workers) or unigram_reference_likely(document, input_bytes):
        return "reference"
    return name


def first_tried(name: str, shape: Mapping[str, Any], workers: int | None = None, input_bytes: int | None = None) -> str:
    """The engine :func:`make_engine` tries first for ``name`` (``auto``: the first row of the
    family's rows by expected time, unless :func:`likely_engine` says the reference), judged from
    the document's shape and the input's size alone (used to prepare it early)."""
    likely = likely_engine(name, shape, workers, input_bytes)
    if likely != "auto":
        return likely
    kind = family(shape)
    rows = sorted((row for row in SPEEDS if row.family == kind), key=lambda row: row.expected_seconds(input_bytes))
    return rows[0].engine if rows else "tokenizers"


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
    raw: bytes | None = None,
) -> Engine:
    """The engine called ``name`` (``auto`` = the fastest exact one, by :data:`SPEEDS`) for this
    tokenizer, or a one-line :class:`ToktoolsError` saying why it cannot be used. ``input_bytes``,
    when known, is the size of what will be encoded (``auto`` weighs start-up costs against it).

    ``document`` may be a :data:`DocumentSource` (a function giving the document): with the
    ``analysis`` (probed, see :class:`Analysis`) and the document's ``shape`` at hand, a tiktoken
    engine is made without it, and with ``raw`` (the ``tokenizer.json`` bytes) and a remembered
    verdict, a gigatoken engine too. The engine's :attr:`Engine.why` says why it was taken."""
    if name not in ENGINES:
        raise ToktoolsError(f"unknown engine {name!r}; choose one of {', '.join(ENGINES)}")
    shape = shape if shape is not None else loaded_document(document)
    special = _sentencepiece_or_dropout(name, document, workers, input_bytes, fingerprint, shape)
    if special is not None:
        return special
    builders: dict[str, Callable[[], Engine]] = {
        "gigatoken": lambda: _gigatoken(document, shape, fingerprint, raw),
        "tiktoken": lambda: _tiktoken(document, workers, analysis, fingerprint),
        "reference": lambda: ReferenceEngine(document, workers, input_bytes, fingerprint),
        "tokenizers": lambda: TokenizersEngine(loaded_document(document)),
    }
    if name != "auto":
        engine = builders[name]()
        engine.why = f"asked for (--engine {name})"
        return engine
    builders["reference"] = lambda: _fastest_reference_or_fail(document, workers, input_bytes, shape, fingerprint)
    kind = family(shape)
    skipped: list[str] = []
    rows = sorted((row for row in SPEEDS if row.family == kind), key=lambda row: row.expected_seconds(input_bytes))
    for row in rows:
        try:
            engine = builders[row.engine]()
        except ToktoolsError as err:
            skipped.append(f"{row.engine}: {err}")
            continue
        expected = (
            f", expected {row.expected_seconds(input_bytes):.2f} s for {input_bytes / 1e6:.1f} MB with "
            f"{row.startup_seconds:g} s start-up"
            if input_bytes is not None
            else ""
        )
        engine.why = (
            f"auto: {row.engine} is the fastest exact engine for this {kind} tokenizer "
            f"({row.mb_per_second:g} MB/s{expected}: {row.measured}); {EXACTNESS[row.engine]}"
            + (f"; passed over: {'; '.join(skipped)}" if skipped else "")
        )
        return engine
    raise ToktoolsError("no engine can encode with this tokenizer: " + "; ".join(skipped))


#: The engines that encode without BPE-dropout (their ids would be dropout 0's).
_NO_DROPOUT = ("gigatoken", "tiktoken", "tokenizers")


def _sentencepiece_or_dropout(
    name: str,
    document: DocumentSource,
    workers: int | None,
    input_bytes: int | None,
    fingerprint: str | None,
    shape: Mapping[str, Any],
) -> Engine | None:
    """The engine for the two cases :data:`SPEEDS` does not cover, or None: a ``.model`` under
    the sentencepiece rule (sentencepiece's own encoder, else the reference, which follows the
    rule; the libraries run the ``tokenizer.json`` as ``tokenizers`` does), and BPE-dropout
    (only the reference draws reproducibly, per text)."""
    from toktools.engines.sentencepiece_engine import SentencePieceEngine, sentencepiece_available
    from toktools.sentencepiece.rule_marker import follows_sentencepiece

    engine: Engine
    if follows_sentencepiece(shape):
        if name in ("tokenizers", "tiktoken", "gigatoken"):
            raise ToktoolsError(
                f"engine {name} encodes a .model as tokenizers does; for sentencepiece's ids use "
                "--engine sentencepiece or reference (or load it with --model-rule tokenizers)"
            )
        if name == "sentencepiece" or (name == "auto" and sentencepiece_available()):
            try:
                engine = SentencePieceEngine(loaded_document(document), workers)
                engine.why = (
                    "asked for (--engine sentencepiece)"
                    if name == "sentencepiece"
                    else "auto: sentencepiece's own encoder, on every core, for a .model under the sentencepiece rule"
                )
                return engine
            except ToktoolsError:
                if name == "sentencepiece":
                    raise
                # other rules than the installed version's: the reference follows them
        engine = ReferenceEngine(document, workers, input_bytes, fingerprint)
        engine.why = f"{'asked for' if name == 'reference' else 'auto'}: the reference follows the sentencepiece rule"
        return engine
    if name == "sentencepiece":
        raise ToktoolsError("engine sentencepiece encodes sentencepiece .model tokenizers only")
    if (shape.get("model") or {}).get("dropout"):
        if name in _NO_DROPOUT:
            raise ToktoolsError(
                f"engine {name} is not exact for this tokenizer: it cannot reproduce BPE-dropout (dropout); "
                "use --engine reference"
            )
        engine = ReferenceEngine(document, workers, input_bytes, fingerprint)
        engine.why = (
            "asked for (--engine reference)"
            if name == "reference"
            else "auto: the reference, the one engine that draws BPE-dropout reproducibly (per text); passed over: "
            + "; ".join(f"{other}: engine {other} is not exact for this tokenizer (dropout)" for other in _NO_DROPOUT)
        )
        return engine
    return None


def _gigatoken(
    document: DocumentSource, shape: Mapping[str, Any], fingerprint: str | None, raw: bytes | None
) -> Engine:
    if not gigatoken_available():
        raise ToktoolsError("engine gigatoken is not installed (pip install 'toktools[corpus]')")
    from toktools.engines.gigatoken_probe import gigatoken_engine

    return gigatoken_engine(document, shape, fingerprint, raw)


def _tiktoken(
    document: DocumentSource, workers: int | None, analysis: Analysis | None, fingerprint: str | None
) -> Engine:
    if not tiktoken_available():
        raise ToktoolsError("engine tiktoken is not installed (pip install 'toktools[corpus]')")
    analysis = analysis or analyse(loaded_document(document), fingerprint)
    if analysis.tiktoken_reason == "not analysed":
        analysis = analyse(loaded_document(document), fingerprint)
    if analysis.tiktoken_reason is not None:
        raise ToktoolsError(f"engine tiktoken is not exact for this tokenizer: {analysis.tiktoken_reason}")
    assert analysis.plan is not None
    engine = TiktokenEngine(analysis.plan, workers)
    if not analysis.probed:
        analysis.probe, analysis.probed = probe_tiktoken(engine, document, fingerprint), True
    if analysis.probe is not None:
        engine.close()
        raise ToktoolsError(f"engine tiktoken is not exact for this tokenizer: {analysis.probe}")
    return engine


def _fastest_reference_or_fail(
    document: DocumentSource,
    workers: int | None,
    input_bytes: int | None,
    shape: Mapping[str, Any],
    fingerprint: str | None,
) -> Engine:
    """``auto``'s reference: where its fast path beats ``tokenizers`` (see
    :func:`fastest_reference`; for byte-level BPE, its ids-only path with the compiled merge),
    else a :class:`ToktoolsError` saying why not."""
    kind = family(shape)
    if kind == "byte-level BPE":
        from toktools.runtime.compiled_switch import numba_installed, pure_python_forced

        if pure_python_forced() or not numba_installed():
            raise ToktoolsError("the reference is faster than tokenizers here only with its compiled merge (numba)")
        try:
            engine = ReferenceEngine(document, workers, input_bytes, fingerprint)
        except ToktoolsError as err:
            raise ToktoolsError(f"the reference cannot take this tokenizer: {err}") from None
        if engine.fast is None:
            engine.close()
            raise ToktoolsError("the reference has no ids-only path for this tokenizer")
        return engine
    if kind == "other":
        return ReferenceEngine(document, workers, fingerprint=fingerprint)
    found = fastest_reference(document, workers, input_bytes, shape, fingerprint)
    if found is None:
        why = (
            "a single worker"
            if kind == "BERT WordPiece"
            else f"input under {UNIGRAM_REFERENCE_MIN_BYTES >> 20} MB, or no compiled Viterbi (numba)"
        )
        raise ToktoolsError(f"the reference is not faster than tokenizers here ({why})")
    return found
