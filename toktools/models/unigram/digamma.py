"""The digamma function as ``tokenizers``' (and sentencepiece's) Unigram trainer computes it: an
asymptotic series after shifting ``x`` past 7. The pure-Python trainer calls it, and
:mod:`toktools.models.unigram.kernels` compiles the same function, so both sum in the same order.
"""

from __future__ import annotations

import math


def digamma(x: float) -> float:
    result = 0.0
    while x < 7.0:
        result -= 1.0 / x
        x += 1.0
    x -= 1.0 / 2.0
    xx = 1.0 / x
    xx2 = xx * xx
    xx4 = xx2 * xx2
    result += (
        math.log(x)
        + (1.0 / 24.0) * xx2
        - 7.0 / 960.0 * xx4
        + (31.0 / 8064.0) * xx4 * xx2
        - (127.0 / 30720.0) * xx4 * xx4
    )
    return result
