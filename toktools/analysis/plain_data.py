"""Numbers made ready for the stable ``--json`` output of the reports."""

from __future__ import annotations

import math
from typing import Any

__all__ = ["jsonable", "ratio"]


def ratio(numerator: float, denominator: float) -> float | None:
    """``numerator / denominator``, or None where the ratio is undefined (a zero denominator)."""
    return numerator / denominator if denominator else None


def jsonable(value: Any) -> Any:
    """Floats rounded to 6 digits (stable text), NaN/inf → None, tuples → lists, recursively."""
    if isinstance(value, float):
        return round(value, 6) if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return value
