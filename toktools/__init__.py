"""toktools: reference WordPiece, byte-level BPE and Unigram tokenizers in pure Python, checked
against HuggingFace ``tokenizers``.

    >>> import toktools
    >>> tok = toktools.train_bytebpe(["corpus.txt"], vocab_size=8000)   # doctest: +SKIP
    >>> tok.encode("Hello world").ids                                    # doctest: +SKIP
    >>> tok.save("my-vocab")                                             # doctest: +SKIP
    >>> toktools.load("my-vocab").decode(ids)                            # doctest: +SKIP
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from toktools.errors import ToktoolsError

__version__ = "0.1.0"

#: The public API imported on first use, name -> module, so that ``import toktools`` and
#: ``toktools --help`` stay fast. A new public name goes here (and under TYPE_CHECKING below).
_LAZY = {
    "load": "toktools.formats",
    "train_bytebpe": "toktools.training",
    "train_wordpiece": "toktools.training",
    "train_unigram": "toktools.training",
    "train": "toktools.trainers",
    "trainer_names": "toktools.trainers",
    "shipped_names": "toktools.shipped",
    "Tokenizer": "toktools.tokenizer",
    "byte_level_bpe": "toktools.presets",
    "bert_wordpiece": "toktools.presets",
    "encode_corpus": "toktools.encode_dispatch",
    "make_pretraining_data": "toktools.pretrain",
}

__all__ = ["ToktoolsError", "__version__", *_LAZY]

if TYPE_CHECKING:  # pragma: no cover
    from toktools.formats import load
    from toktools.encode_dispatch import encode_corpus
    from toktools.presets import bert_wordpiece, byte_level_bpe
    from toktools.pretrain import make_pretraining_data
    from toktools.shipped import shipped_names
    from toktools.tokenizer import Tokenizer
    from toktools.trainers import train, trainer_names
    from toktools.training import train_bytebpe, train_unigram, train_wordpiece


def __getattr__(name: str) -> Any:
    """Import a public name's module on first use (then it is an ordinary attribute)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'toktools' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public API, the lazily imported names included, and the module's own dunders."""
    return sorted(set(__all__) | {name for name in globals() if name.startswith("__")})
