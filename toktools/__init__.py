"""toktools: reference WordPiece, byte-level BPE and Unigram (SentencePiece) tokenizers in pure
Python, checked against HuggingFace ``tokenizers`` and sentencepiece.

    >>> import toktools
    >>> tok = toktools.train_bytebpe(["corpus.txt"], vocab_size=8000)   # doctest: +SKIP
    >>> tok.encode("Hello world").ids                                    # doctest: +SKIP
    >>> tok.save("my-vocab")                                             # doctest: +SKIP
    >>> toktools.load("my-vocab").decode(ids)                            # doctest: +SKIP
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from toktools import _moved
from toktools._version import __version__
from toktools.errors import ToktoolsError

_moved.install()  # the module paths from before 0.2.0 (toktools.masking, ...) still import

#: The public API imported on first use, name -> module, so that ``import toktools`` and
#: ``toktools --help`` stay fast. A new public name goes here (and under TYPE_CHECKING below).
_LAZY = {
    "load": "toktools.formats",
    "train_bytebpe": "toktools.training.pipeline",
    "train_wordpiece": "toktools.training.pipeline",
    "train_unigram": "toktools.training.pipeline",
    "train": "toktools.training.trainers",
    "trainer_names": "toktools.training.trainers",
    "shipped_names": "toktools.io.shipped",
    "Tokenizer": "toktools.tokenizer",
    "byte_level_bpe": "toktools.presets",
    "bert_wordpiece": "toktools.presets",
    "encode_corpus": "toktools.corpus.encode",
    "make_pretraining_data": "toktools.pretraining.examples",
}

#: Public subpackages imported on first use; ``toktools.extend`` is also callable.
_SUBPACKAGES = ("extend",)

__all__ = ["ToktoolsError", "__version__", *_LAZY, *_SUBPACKAGES]

if TYPE_CHECKING:  # pragma: no cover - the lazy names for type checkers ("x as x": re-exported)
    from toktools.corpus.encode import encode_corpus as encode_corpus
    from toktools.formats import load as load
    from toktools.io.shipped import shipped_names as shipped_names
    from toktools.presets import bert_wordpiece as bert_wordpiece
    from toktools.presets import byte_level_bpe as byte_level_bpe
    from toktools.pretraining.examples import make_pretraining_data as make_pretraining_data
    from toktools.tokenizer import Tokenizer as Tokenizer
    from toktools.training.pipeline import train_bytebpe as train_bytebpe
    from toktools.training.pipeline import train_unigram as train_unigram
    from toktools.training.pipeline import train_wordpiece as train_wordpiece
    from toktools.training.trainers import train as train
    from toktools.training.trainers import trainer_names as trainer_names


def __getattr__(name: str) -> Any:
    """Import a public name's module on first use (then it is an ordinary attribute)."""
    if name in _SUBPACKAGES:
        return importlib.import_module(f"toktools.{name}")
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'toktools' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public API, the lazily imported names included, and the module's own dunders."""
    return sorted(set(__all__) | {name for name in globals() if name.startswith("__")})
