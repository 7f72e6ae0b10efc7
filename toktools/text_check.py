"""The one check every encoder makes of its input before any work: text that has a UTF-8 form,
refused as ``tokenizers`` refuses it."""

from __future__ import annotations


def check_text(*texts: str | None) -> None:
    """Refuse text that is not valid Unicode (a lone surrogate such as ``"\\ud800"``, which
    has no UTF-8 form) with a ``TypeError``, as ``tokenizers`` does, before any work."""
    for text in texts:
        if text is None or (isinstance(text, str) and text.isascii()):
            continue
        if not isinstance(text, str):
            raise TypeError(f"text must be str, not {type(text).__name__}")
        where = lone_surrogate(text)
        if where is not None:
            raise TypeError(f"text is not valid Unicode: lone surrogate {where}")


def lone_surrogate(text: str) -> str | None:
    """Where ``text``'s first lone surrogate is (``"U+D800 at position 2"``), or None.
    JSON can spell one (an unpaired ``\\ud83d`` escape, common where a crawler cut an emoji's
    pair in two); no UTF-8 file holds one, so a reader checks only the records that escape."""
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as err:
        return f"U+{ord(text[err.start]):04X} at position {err.start}"
    return None


def escapes_a_surrogate(line: str) -> bool:
    """Whether a raw JSON line may hold a lone surrogate: only a ``\\uD800``-``\\uDFFF``
    escape makes one (a cheap test before decoding every record again)."""
    return "\\ud" in line or "\\uD" in line
