"""Which engine encodes a corpus: :func:`make_engine` builds the one asked for, and ``auto`` picks
the fastest of those that give the reference's ids.

``auto`` takes the reference where it beats the libraries (BERT WordPiece, see
:func:`reference_is_fastest`; Unigram with its compiled Viterbi, see
:func:`compiled_unigram_reference`), else tiktoken when exact
(:func:`toktools.engines.analysis.analyse` and its probe), else ``tokenizers``, else the
reference. Every engine gives the same ids, so the choice changes the speed, never the output.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from toktools.engines.analysis import Analysis, analyse, probe_tiktoken
from toktools.engines.base import DocumentSource, Engine, loaded_document
from toktools.engines.reference import ReferenceEngine
from toktools.engines.tiktoken_engine import TiktokenEngine, tiktoken_available
from toktools.engines.tokenizers_engine import TokenizersEngine
from toktools.errors import ToktoolsError

ENGINES = ("auto", "reference", "tokenizers", "tiktoken", "sentencepiece")


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
    from toktools.sentencepiece.tokenizer import follows_sentencepiece

    if follows_sentencepiece(document):
        return "sentencepiece" if sentencepiece_available() else "reference"
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
    from toktools.engines.sentencepiece_engine import SentencePieceEngine, sentencepiece_available
    from toktools.sentencepiece.tokenizer import follows_sentencepiece

    if follows_sentencepiece(shape if shape is not None else loaded_document(document)):
        if name in ("tokenizers", "tiktoken"):  # they run the tokenizer.json, as tokenizers does
            raise ToktoolsError(
                f"engine {name} encodes a .model as tokenizers does; for sentencepiece's ids use "
                "--engine sentencepiece or reference (or load it with --model-rule tokenizers)"
            )
        if name == "sentencepiece":
            return SentencePieceEngine(loaded_document(document), workers)
        if name == "auto" and sentencepiece_available():  # sentencepiece's own, on every core
            try:
                return SentencePieceEngine(loaded_document(document), workers)
            except ToktoolsError:
                pass  # other rules than the installed version's: the reference follows them
        return ReferenceEngine(document, workers, input_bytes, fingerprint)
    if name == "sentencepiece":
        raise ToktoolsError("engine sentencepiece encodes sentencepiece .model tokenizers only")
    model_node = (shape if shape is not None else loaded_document(document)).get("model") or {}
    if model_node.get("dropout"):  # BPE-dropout: only the reference draws reproducibly (per text)
        if name in ("tokenizers", "tiktoken"):
            raise ToktoolsError(f"engine {name} cannot reproduce BPE-dropout; use --engine reference")
        return ReferenceEngine(document, workers, input_bytes, fingerprint)
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
