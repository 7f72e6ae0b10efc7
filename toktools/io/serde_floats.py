"""JSON numbers as ``tokenizers`` reads them: serde_json 1.x without its ``float_roundtrip``
feature, which is not correctly rounded.

serde_json gathers the digits into a ``u64`` significand (digits past its capacity are dropped,
those of the integer part counting as a power of ten), then computes ``significand as f64`` times
or divided by the ``f64`` power of ten of the exponent (past 1e308, divided by 1e308 first).
Two roundings instead of one: about one score in five of a Unigram ``tokenizer.json`` is read
one ulp away from Python's ``float()``, and a near-tie then falls the other way.
:func:`loads` reads a document as ``tokenizers`` does, so every engine holds the same scores;
:func:`dumps_for_serde` writes floats as literals that serde_json reads back as the same values
(Python's shortest ``repr`` is not always one).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

_U64_MAX = (1 << 64) - 1
_I32_MAX = (1 << 31) - 1
#: serde_json's ``POW10`` table: the correctly rounded f64 of 1e0..1e308
_POW10 = [float(f"1e{k}") for k in range(309)]


def serde_json_float(literal: str) -> float:
    """The f64 serde_json (no ``float_roundtrip``) reads for a JSON number ``literal`` with a
    fraction or an exponent (what :func:`json.loads` hands ``parse_float``)."""
    text = literal
    positive = not text.startswith("-")
    if not positive:
        text = text[1:]
    mantissa, _, exponent_text = text.replace("E", "e").partition("e")
    integer, _, fraction = mantissa.partition(".")
    significand = 0
    exponent = 0
    overflowed = False
    for ch in integer:  # parse_integer, then parse_long_integer once the u64 is full
        digit = ord(ch) - 48
        if overflowed or _overflows(significand, digit):
            overflowed = True
            exponent += 1
        else:
            significand = significand * 10 + digit
    for ch in fraction:  # parse_decimal, then parse_decimal_overflow (the rest ignored)
        digit = ord(ch) - 48
        if _overflows(significand, digit):
            break
        significand = significand * 10 + digit
        exponent -= 1
    if exponent_text:
        exp_positive = not exponent_text.startswith("-")
        digits = exponent_text.lstrip("+-")
        value = 0
        for ch in digits:
            digit = ord(ch) - 48
            if value >= _I32_MAX // 10 and (value > _I32_MAX // 10 or digit > _I32_MAX % 10):
                if significand != 0 and exp_positive:
                    raise ValueError(f"number out of range: {literal}")
                return 0.0 if positive else -0.0
            value = value * 10 + digit
        exponent = exponent + value if exp_positive else exponent - value
        exponent = max(-(1 << 31), min(_I32_MAX, exponent))  # saturating
    return _from_parts(positive, significand, exponent, literal)


def _overflows(significand: int, digit: int) -> bool:
    return significand >= _U64_MAX // 10 and (significand > _U64_MAX // 10 or digit > _U64_MAX % 10)


def _from_parts(positive: bool, significand: int, exponent: int, literal: str) -> float:
    value = float(significand)  # `as f64`: round to nearest, ties to even
    while True:
        k = abs(exponent)
        if k < len(_POW10):
            if exponent >= 0:
                value *= _POW10[k]
                if math.isinf(value):
                    raise ValueError(f"number out of range: {literal}")
            else:
                value /= _POW10[k]
            break
        if value == 0.0:
            break
        if exponent >= 0:
            raise ValueError(f"number out of range: {literal}")
        value /= 1e308
        exponent += 308
    return value if positive else -value


def loads(text: str) -> Any:
    """``json.loads`` with every fractional or exponent number read as serde_json reads it."""
    return json.loads(text, parse_float=serde_json_float)


def serde_literal(value: float) -> str:
    """A JSON literal serde_json reads back as ``value``: Python's ``repr`` when it does, else
    ``N e-K`` (or ``N e+K``) with an integer ``N`` of about 19 digits that is itself a double (so serde_json's
    ``as f64`` is exact) and one correctly rounded division by ``1e K`` lands on ``value``: such
    ``N`` are spaced closer than ``value``'s ulp, so one of the few nearest does."""
    text = repr(value)
    if not math.isfinite(value) or value == 0.0 or serde_json_float(text) == value:
        return text
    sign = "-" if value < 0 else ""
    magnitude = abs(value)
    top = 18 - math.floor(math.log10(magnitude))
    for k in (top, top - 1, top + 1, top - 2, top - 3):
        if not -len(_POW10) < k < len(_POW10):
            continue
        near = magnitude * _POW10[k] if k >= 0 else magnitude / _POW10[-k]
        if not 1.0 <= near < 1.8e19:
            continue
        candidates = [near]
        up = down = near
        for _ in range(64):
            up, down = math.nextafter(up, math.inf), math.nextafter(down, 0.0)
            candidates += [up, down]
        for candidate in candidates:
            literal = f"{sign}{int(candidate)}e{-k}"
            if serde_json_float(literal) == value:
                return literal
    return repr(value)  # not met in practice: the nearest double it can spell


_PLACEHOLDER = re.compile(r'"\\u0000(\d+)\\u0000"')


def dumps_for_serde(document: Any) -> str:
    """``json.dumps(document)`` with every float written so that serde_json (``tokenizers``)
    reads the very value toktools holds."""
    floats: list[float] = []

    def mark(node: Any) -> Any:
        if isinstance(node, float):
            floats.append(node)
            return f"\x00{len(floats) - 1}\x00"
        if isinstance(node, dict):
            return {key: mark(item) for key, item in node.items()}
        if isinstance(node, (list, tuple)):
            return [mark(item) for item in node]
        return node

    text = json.dumps(mark(document))
    return _PLACEHOLDER.sub(lambda m: serde_literal(floats[int(m.group(1))]), text)
