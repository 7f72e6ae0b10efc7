"""toktools: reference WordPiece and byte-level BPE tokenizers in pure Python, byte-identical to
HuggingFace ``tokenizers``.

    >>> import toktools
    >>> tok = toktools.train_bytebpe(["corpus.txt"], vocab_size=8000)   # doctest: +SKIP
    >>> tok.encode("Hello world").ids                                    # doctest: +SKIP
    >>> tok.save("my-vocab")                                             # doctest: +SKIP
    >>> toktools.load("my-vocab").decode(ids)                            # doctest: +SKIP
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["train_bytebpe", "train_wordpiece", "load", "encode_corpus", "ToktoolsError", "__version__"]

from toktools.errors import ToktoolsError

if TYPE_CHECKING:  # pragma: no cover
    from toktools.encode_corpus import encode_corpus
    from toktools.formats import load
    from toktools.training import train_bytebpe, train_wordpiece


def __getattr__(name: str) -> Any:
    """Import the heavy modules only when used, so ``toktools --help`` starts fast."""
    if name in ("train_bytebpe", "train_wordpiece"):
        from toktools import training

        return getattr(training, name)
    if name == "encode_corpus":
        from toktools.encode_corpus import encode_corpus

        return encode_corpus
    if name == "load":
        from toktools.formats import load

        return load
    raise AttributeError(f"module 'toktools' has no attribute {name!r}")
