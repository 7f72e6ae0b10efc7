"""One trainer per trainable model, found by name (``"bytebpe"``, ``"wordpiece"``): everything the
CLI, the counts files and the parity checks need to know about training a model — its options
and their defaults, how words are counted, the files it writes, and its ``tokenizers`` twin.

A model names its trainer (``model.kind``); adding a model family is one new :class:`Trainer`
subclass here, registered with :func:`register_trainer`.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Iterable, Mapping, Sequence

from toktools.errors import ToktoolsError

if TYPE_CHECKING:  # pragma: no cover
    from toktools.tokenizer import Tokenizer

TRAINERS: dict[str, "Trainer"] = {}


def register_trainer(cls: type["Trainer"]) -> type["Trainer"]:
    TRAINERS[cls.name] = cls()
    return cls


def get_trainer(name: str) -> "Trainer":
    """The trainer called ``name``, or one clear error listing the known ones."""
    found = TRAINERS.get(name)
    if found is None:
        raise ToktoolsError(f"unknown tokenizer kind {name!r} ({' or '.join(TRAINERS)})")
    return found


class Trainer(ABC):
    """How to train one model family, with toktools (reference) and with ``tokenizers`` (fast)."""

    #: the family's name, as the CLI spells it
    name: ClassVar[str]
    #: the model's own files, as ``tokenizers``' ``Model.save`` writes them
    model_files: ClassVar[tuple[str, ...]]
    default_special_tokens: ClassVar[tuple[str, ...]] = ()
    #: the trainer options both backends take, with their defaults
    options: ClassVar[dict[str, Any]]
    #: the options that shape the counted words (recorded in counts files)
    count_options: ClassVar[tuple[str, ...]]
    #: the whole tokenizer.json is byte-identical with ``tokenizers``' (not only the model files)
    pins_tokenizer_json: ClassVar[bool] = False
    #: a difference is explained merge by merge from the two merges files
    explains_merges: ClassVar[bool] = False
    #: ``tokenizers`` breaks some ties at random: a "forced" run replays its choices
    has_forced_mode: ClassVar[bool] = False
    #: ``tokenizers``' training is not deterministic (float sums in hash order): parity is
    #: (minimum token-set Jaccard, minimum share of held-out lines cut into the same tokens)
    #: instead of identical files; None: the files must be identical
    agreement_bounds: ClassVar[tuple[float, float] | None] = None

    def with_defaults(self, options: Mapping[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(options) - set(self.options))
        if unknown:
            raise ToktoolsError(f"{self.name}: unknown trainer option(s) {', '.join(unknown)} "
                                f"(it takes: {', '.join(self.options)})")
        return {**self.options, **options}

    def count_settings(self, options: Mapping[str, Any]) -> dict[str, Any]:
        """What a counts file records, so that training with other settings refuses it."""
        merged = self.with_defaults(options)
        return {name: merged[name] for name in self.count_options}

    @abstractmethod
    def count_words(self, files: Sequence[str] | None, options: Mapping[str, Any], *, texts: Iterable[str] | None = None,
                    workers: int | None = None, **reading: Any) -> dict[str, int]:
        """Word counts with this model's normalisation and pre-tokenisation."""

    @abstractmethod
    def train(self, vocab_size: int, min_frequency: int, special_tokens: Sequence[str], word_counts: dict[str, int],
              options: Mapping[str, Any], forced_order: Any = None) -> "Tokenizer":
        """The reference training from word counts."""

    @abstractmethod
    def train_fast(self, files: Sequence[str], vocab_size: int, min_frequency: int, special_tokens: Sequence[str],
                   options: Mapping[str, Any]) -> Any:
        """The same training with ``tokenizers`` (a ``tokenizers.Tokenizer``)."""

    def save_fast(self, tokenizer: Any, directory: Path) -> None:
        """``tokenizers``' model files and ``tokenizer.json``."""
        directory.mkdir(parents=True, exist_ok=True)
        tokenizer.model.save(str(directory))
        tokenizer.save(str(directory / "tokenizer.json"))

    @abstractmethod
    def decorations(self, options: Mapping[str, Any]) -> tuple[str | None, str | None]:
        """``(continuing-subword prefix, end-of-word suffix)`` the trained tokens carry."""

    def initial_alphabet(self, options: Mapping[str, Any]) -> Sequence[str]:
        return options.get("initial_alphabet") or ()

    @abstractmethod
    def read_vocab(self, directory: Path) -> list[str]:
        """The tokens of the model files in ``directory``, in id order."""


def _in_id_order(vocab: Mapping[str, int]) -> list[str]:
    return [token for token, _ in sorted(vocab.items(), key=lambda item: item[1])]


@register_trainer
class ByteBpeTrainer(Trainer):
    """Byte-level BPE (``ByteLevelBPETokenizer.train``)."""

    name = "bytebpe"
    model_files = ("vocab.json", "merges.txt")
    options = {
        "limit_alphabet": None,
        "initial_alphabet": None,  # None: the 256 byte symbols
        "add_prefix_space": False,
        "continuing_subword_prefix": None,
        "end_of_word_suffix": None,
        "max_token_length": None,
    }
    count_options = ("add_prefix_space",)
    pins_tokenizer_json = True
    explains_merges = True

    def count_settings(self, options: Mapping[str, Any]) -> dict[str, Any]:
        return {**super().count_settings(options), "use_regex": True}

    def count_words(self, files: Sequence[str] | None, options: Mapping[str, Any], *, texts: Iterable[str] | None = None,
                    workers: int | None = None, **reading: Any) -> dict[str, int]:
        from toktools import training

        return training.count_bytebpe_words(files, texts=texts, add_prefix_space=self.with_defaults(options)["add_prefix_space"],
                                            workers=workers, **reading)

    def train(self, vocab_size: int, min_frequency: int, special_tokens: Sequence[str], word_counts: dict[str, int],
              options: Mapping[str, Any], forced_order: Any = None) -> "Tokenizer":
        from toktools import training

        return training.train_bytebpe(vocab_size=vocab_size, min_frequency=min_frequency, special_tokens=special_tokens,
                                      word_counts=word_counts, **self.with_defaults(options))

    def train_fast(self, files: Sequence[str], vocab_size: int, min_frequency: int, special_tokens: Sequence[str],
                   options: Mapping[str, Any]) -> Any:
        from toktools import fast

        return fast.train_bytebpe(list(files), vocab_size, min_frequency, special_tokens, **self.with_defaults(options))

    def decorations(self, options: Mapping[str, Any]) -> tuple[str | None, str | None]:
        merged = self.with_defaults(options)
        return merged["continuing_subword_prefix"], merged["end_of_word_suffix"]

    def initial_alphabet(self, options: Mapping[str, Any]) -> Sequence[str]:
        from toktools import bytelevel

        alphabet = self.with_defaults(options)["initial_alphabet"]
        return bytelevel.ALPHABET if alphabet is None else alphabet

    def read_vocab(self, directory: Path) -> list[str]:
        from toktools import bpe

        return _in_id_order(bpe.loads_vocab_json((directory / "vocab.json").read_text(encoding="utf-8")))


@register_trainer
class WordPieceTrainer(Trainer):
    """BERT WordPiece (``BertWordPieceTokenizer.train``: BPE merges with ``##`` pieces)."""

    name = "wordpiece"
    model_files = ("vocab.txt",)
    default_special_tokens = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
    options = {
        "limit_alphabet": 1000,
        "initial_alphabet": (),
        "wordpieces_prefix": "##",
        "lowercase": True,
        "strip_accents": None,
        "clean_text": True,
        "handle_chinese_chars": True,
    }
    count_options = ("lowercase", "strip_accents", "clean_text", "handle_chinese_chars")
    has_forced_mode = True

    def count_words(self, files: Sequence[str] | None, options: Mapping[str, Any], *, texts: Iterable[str] | None = None,
                    workers: int | None = None, **reading: Any) -> dict[str, int]:
        from toktools import training
        from toktools.bert_text import BertNormalizerConfig

        merged = self.with_defaults(options)
        normalizer = BertNormalizerConfig(clean_text=merged["clean_text"], handle_chinese_chars=merged["handle_chinese_chars"],
                                          strip_accents=merged["strip_accents"], lowercase=merged["lowercase"])
        return training.count_wordpiece_words(files, texts=texts, normalizer=normalizer, workers=workers, **reading)

    def train(self, vocab_size: int, min_frequency: int, special_tokens: Sequence[str], word_counts: dict[str, int],
              options: Mapping[str, Any], forced_order: Any = None) -> "Tokenizer":
        from toktools import training

        return training.train_wordpiece(vocab_size=vocab_size, min_frequency=min_frequency, special_tokens=special_tokens,
                                        word_counts=word_counts, forced_order=forced_order, **self.with_defaults(options))

    def train_fast(self, files: Sequence[str], vocab_size: int, min_frequency: int, special_tokens: Sequence[str],
                   options: Mapping[str, Any]) -> Any:
        from toktools import fast

        return fast.train_wordpiece(list(files), vocab_size, min_frequency, special_tokens, **self.with_defaults(options))

    def decorations(self, options: Mapping[str, Any]) -> tuple[str | None, str | None]:
        return self.with_defaults(options)["wordpieces_prefix"], None

    def read_vocab(self, directory: Path) -> list[str]:
        from toktools.wordpiece import loads_vocab_txt

        return _in_id_order(loads_vocab_txt((directory / "vocab.txt").read_text(encoding="utf-8")))


@register_trainer
class UnigramTrainer(Trainer):
    """SentencePiece-style Unigram (:mod:`toktools.unigram_trainer`, ``tokenizers``' ``UnigramTrainer``):
    ``▁word`` pieces (Metaspace), EM and pruning.

    ``tokenizers`` visits words in hash order and sums per thread, so its vocabulary varies from
    run to run on near-ties (``shared/spec/unigram.md`` §5.6): parity is agreement within
    :attr:`agreement_bounds`, not identical bytes. (A minimal entry for ``parity unigram``; the
    ``train unigram`` trainer with its full pipeline comes with the generic ``train``.)
    """

    name = "unigram"
    model_files = ("unigram.json",)
    default_special_tokens = ("<unk>",)
    options = {
        "unk_token": "<unk>",
        "initial_alphabet": (),
        "shrinking_factor": 0.75,
        "max_piece_length": 16,
        "n_sub_iterations": 2,
    }
    count_options = ()
    agreement_bounds = (0.99, 0.95)

    @staticmethod
    def _texts(files: Sequence[str]) -> Iterable[str]:
        from toktools.corpus import read_lines

        return read_lines(list(files))

    def count_words(self, files: Sequence[str] | None, options: Mapping[str, Any], *, texts: Iterable[str] | None = None,
                    workers: int | None = None, **reading: Any) -> dict[str, int]:
        from toktools.parts.pre_tokenizers import Metaspace

        split = Metaspace()
        counts: dict[str, int] = {}
        for text in texts if texts is not None else self._texts(files or ()):
            for word, _ in split.pre_tokenize_str(text):
                counts[word] = counts.get(word, 0) + 1
        if not counts:
            raise ToktoolsError("the corpus is empty: no words to learn from")
        return counts

    def train(self, vocab_size: int, min_frequency: int, special_tokens: Sequence[str], word_counts: dict[str, int],
              options: Mapping[str, Any], forced_order: Any = None) -> "Tokenizer":
        from toktools.encoding import AddedToken
        from toktools.parts import decoders, pre_tokenizers
        from toktools.tokenizer import Tokenizer
        from toktools.unigram_trainer import UnigramTrainer as Engine

        merged = self.with_defaults(options)
        model = Engine(vocab_size, special_tokens=special_tokens, unk_token=merged["unk_token"],
                       initial_alphabet=merged["initial_alphabet"], shrinking_factor=merged["shrinking_factor"],
                       max_piece_length=merged["max_piece_length"], n_sub_iterations=merged["n_sub_iterations"]
                       ).train(word_counts)
        vocab = model.get_vocab()
        return Tokenizer(model, pre_tokenizer=pre_tokenizers.Metaspace(), decoder=decoders.Metaspace(),
                         added_tokens=[AddedToken(t, vocab[t], special=True) for t in dict.fromkeys(special_tokens)])

    def train_fast(self, files: Sequence[str], vocab_size: int, min_frequency: int, special_tokens: Sequence[str],
                   options: Mapping[str, Any]) -> Any:
        from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

        merged = self.with_defaults(options)
        tokenizer = Tokenizer(models.Unigram())
        tokenizer.pre_tokenizer = pre_tokenizers.Metaspace()
        tokenizer.decoder = decoders.Metaspace()
        trainer = trainers.UnigramTrainer(vocab_size=vocab_size, special_tokens=list(special_tokens),
                                          unk_token=merged["unk_token"], initial_alphabet=list(merged["initial_alphabet"]),
                                          shrinking_factor=merged["shrinking_factor"],
                                          max_piece_length=merged["max_piece_length"],
                                          n_sub_iterations=merged["n_sub_iterations"], show_progress=False)
        tokenizer.train_from_iterator(self._texts(files), trainer)
        return tokenizer

    def decorations(self, options: Mapping[str, Any]) -> tuple[str | None, str | None]:
        return None, None

    def read_vocab(self, directory: Path) -> list[str]:
        import json

        return [piece for piece, _ in json.loads((directory / "unigram.json").read_text(encoding="utf-8"))["vocab"]]
