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
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as err:
            raise TypeError(
                f"text is not valid Unicode: lone surrogate U+{ord(text[err.start]):04X} at position {err.start}"
            ) from None
