"""How alike the two trained tokenizers are in use: the ids they give held-out lines, and for
Unigram (whose ``tokenizers`` training is not deterministic) the scores and the agreement
bounds."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toktools.parity.corpus_sample import PreparedCorpus
from toktools.parity.results import EXAMPLES, Agreement, Overlap, ScoreAgreement, Tolerance

if TYPE_CHECKING:  # pragma: no cover
    from toktools.tokenizer import Tokenizer

__all__ = ["compare_encodings", "compare_scores", "check_tolerance"]


def compare_encodings(
    reference: Tokenizer, fast_tokenizer: Any, lines: Sequence[str], source: str = "", workers: int | None = None
) -> Agreement:
    """Encode ``lines`` with both tokenizers (no template) and compare the ids line by line."""
    lines = list(lines)
    if not lines:
        return Agreement(source, 0, 0, None, 0, 0, 0)
    ours = reference.encode_batch(lines, add_special_tokens=False, workers=workers)
    theirs = fast_tokenizer.encode_batch(lines, add_special_tokens=False)
    same = same_tokens = 0
    first = None
    for number, (a, b) in enumerate(zip(ours, theirs)):
        same_tokens += list(a.tokens) == list(b.tokens)
        if a.ids == b.ids:
            same += 1
        elif first is None:
            position = next((i for i, (x, y) in enumerate(zip(a.ids, b.ids)) if x != y), min(len(a.ids), len(b.ids)))
            window = slice(position, position + EXAMPLES)
            first = {
                "line": number,
                "text": lines[number][:120],
                "position": position,
                "reference_tokens": list(a.tokens[window]),
                "fast_tokens": list(b.tokens[window]),
                "reference_ids": list(a.ids[window]),
                "fast_ids": list(b.ids[window]),
            }
    return Agreement(
        source,
        len(lines),
        same,
        same / len(lines),
        same_tokens,
        sum(len(e.ids) for e in ours),
        sum(len(e.ids) for e in theirs),
        first,
    )


def compare_scores(
    reference: Sequence[tuple[str, float]], fast: Sequence[tuple[str, float]], rel_tol: float = 1e-9
) -> ScoreAgreement:
    """The scores of the pieces two Unigram vocabularies share (``(piece, score)`` lists)."""
    ours, theirs = dict(reference), dict(fast)
    common = [p for p in ours if p in theirs]
    differences = sorted(((abs(ours[p] - theirs[p]), p) for p in common), reverse=True)
    close = sum(1 for p in common if math.isclose(ours[p], theirs[p], rel_tol=rel_tol, abs_tol=1e-12))
    return ScoreAgreement(
        len(common),
        close,
        rel_tol,
        differences[0][0] if differences else 0.0,
        [(p, ours[p], theirs[p]) for d, p in differences[:EXAMPLES] if d > 0],
    )


def check_tolerance(
    bounds: tuple[float, float],
    reference: Tokenizer,
    fast_tokenizer: Any,
    ours_dir: Path,
    theirs_dir: Path,
    overlap: Overlap,
    agreement: Agreement,
    prepared: PreparedCorpus,
    workers: int | None,
) -> Tolerance:
    """Agreement of a non-deterministic training (Unigram), and exact encoding of each side's
    vocabulary by both libraries."""
    from tokenizers import Tokenizer as FastTokenizer

    from toktools.formats import from_tokenizer_json

    theirs_json = json.loads((theirs_dir / "tokenizer.json").read_text(encoding="utf-8"))
    ours_text = (ours_dir / "tokenizer.json").read_text(encoding="utf-8")
    source = prepared.info.heldout
    encoding = [
        compare_encodings(from_tokenizer_json(theirs_json), fast_tokenizer, prepared.heldout, source, workers),
        compare_encodings(reference, FastTokenizer.from_str(ours_text), prepared.heldout, source, workers),
    ]
    scores = compare_scores(
        [(p, s) for p, s in json.loads(ours_text)["model"]["vocab"]], [(p, s) for p, s in theirs_json["model"]["vocab"]]
    )
    share = agreement.identical_token_lines / agreement.lines if agreement.lines else None
    return Tolerance(bounds[0], bounds[1], overlap.jaccard, share, encoding, scores)
