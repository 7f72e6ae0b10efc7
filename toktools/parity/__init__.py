"""Parity between toktools' trainers and HuggingFace ``tokenizers``: train both, compare the
files, and explain the first difference.

The modules, in the order a run uses them: :mod:`~toktools.parity.run` (``run_parity``,
``check_trained``), :mod:`~toktools.parity.corpus_sample` (the training files and held-out
lines), :mod:`~toktools.parity.backends` (both trainings), :mod:`~toktools.parity.files`,
:mod:`~toktools.parity.vocabularies` (alphabet, ``##c`` block, token sets),
:mod:`~toktools.parity.merges` (the first differing merge replayed),
:mod:`~toktools.parity.forced` (WordPiece's forced mode), :mod:`~toktools.parity.agreement`
(ids on held-out lines, Unigram's bounds) and :mod:`~toktools.parity.results` (the report).

``toktools.parity`` was one module before 0.2.0; its names still resolve here, imported on
first use.
"""

from __future__ import annotations

from toktools._moved import old_module_names

#: The names of the former module ``toktools.parity`` -> the module that holds each now.
_NAMES: dict[str, str] = {
    **dict.fromkeys(("KINDS", "TRAINER_OPTIONS", "check_trained", "run_parity"), "run"),
    **dict.fromkeys(
        (
            "EXAMPLES",
            "Agreement",
            "AlphabetComparison",
            "CorpusInfo",
            "Divergence",
            "FileComparison",
            "ForcedCheck",
            "MergeStep",
            "Overlap",
            "ParityReport",
            "ScoreAgreement",
            "SymbolBlockComparison",
            "Timing",
            "Tolerance",
        ),
        "results",
    ),
    **dict.fromkeys(("Pair", "explain_merge_divergence", "replay_pair_counts"), "merges"),
    **dict.fromkeys(
        ("char_frequencies", "compare_alphabets", "compare_symbol_blocks", "compare_token_sets"), "vocabularies"
    ),
    **dict.fromkeys(("compare_encodings", "compare_scores"), "agreement"),
    "compare_files": "files",
}


__getattr__ = old_module_names(__name__, _NAMES)


def __dir__() -> list[str]:
    return sorted([*globals(), *_NAMES])
