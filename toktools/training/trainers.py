"""One trainer per trainable model, found by name (``"bytebpe"``, ``"wordpiece"``, ``"unigram"``):
everything the CLI, the counts files and the parity checks need to know about training a model —
its settings (with their types, defaults and help, from which ``toktools train NAME`` is built),
how words are counted, the files it writes, its ``tokenizers`` twin, and :meth:`Trainer.run`,
the one training call behind both backends.

A model names its trainer (``model.kind``); adding a model family is one new :class:`Trainer`
subclass here, registered with :func:`register_trainer`: the CLI needs no edit.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from toktools.errors import ToktoolsError
from toktools.models.wordpiece.model import BERT_SPECIAL_TOKENS

if TYPE_CHECKING:  # pragma: no cover
    from toktools.tokenizer import Tokenizer

TRAINERS: dict[str, Trainer] = {}


def register_trainer(cls: type[Trainer]) -> type[Trainer]:
    TRAINERS[cls.name] = cls()
    return cls


def trainer_names() -> list[str]:
    """The trainable model families (``toktools train NAME``)."""
    return list(TRAINERS)


def get_trainer(name: str) -> Trainer:
    """The trainer called ``name``, or one clear error listing the known ones."""
    found = TRAINERS.get(name)
    if found is None:
        raise ToktoolsError(f"unknown tokenizer kind {name!r} ({' or '.join(TRAINERS)})")
    return found


def train(
    name: str,
    files: Sequence[str] = (),
    *,
    backend: str = "reference",
    word_counts: dict[str, int] | None = None,
    workers: int | None = None,
    errors: str = "strict",
    json_field: str | None = None,
    progress: Any = None,
    **settings: Any,
) -> Tokenizer:
    """Train the ``name`` family on corpus ``files`` as ``toktools train NAME`` does:
    ``toktools.train("unigram", ["corpus.txt"], vocab_size=8000, backend="fast")``. The
    settings are those of the command (``vocab_size``, ``special_tokens`` …, see
    :attr:`Trainer.cli_options`), with its defaults."""
    return get_trainer(name).run(
        files,
        settings,
        backend=backend,
        word_counts=word_counts,
        workers=workers,
        errors=errors,
        json_field=json_field,
        progress=progress,
    )


class OptionConflict(ToktoolsError):
    """Settings that cannot go together (the CLI makes it a usage error, exit 2)."""


@dataclass(frozen=True)
class Option:
    """One training setting as ``toktools train`` offers it.

    ``type`` is ``int``, ``float``, ``str``, ``bool`` (an ``--on/--off`` pair in ``flags``),
    ``list`` (comma-separated strings; ``default`` a tuple) or a tuple of choices.
    """

    name: str
    flags: str
    type: Any
    default: Any
    help: str
    show_default: bool = True
    minimum: int | float | None = None


def vocab_size_option(default: int) -> Option:
    return Option(
        "vocab_size",
        "--vocab-size",
        int,
        default,
        "Size of the vocabulary, special tokens and alphabet included.",
        minimum=1,
    )


MIN_FREQUENCY = Option(
    "min_frequency", "--min-frequency", int, 2, "Stop merging when the best pair is rarer than this.", minimum=0
)


def special_tokens_option(default: tuple[str, ...]) -> Option:
    return Option(
        "special_tokens",
        "--special-tokens",
        list,
        default,
        "Comma-separated special tokens; they get the first ids, in order.",
        show_default=bool(default),
    )


class Trainer(ABC):
    """How to train one model family, with toktools (reference) and with ``tokenizers`` (fast)."""

    #: the family's name, as the CLI spells it
    name: ClassVar[str]
    #: the command's help (``toktools train NAME --help``), examples included
    help: ClassVar[str]
    #: ``--check``'s help: what a difference means for this family
    check_help: ClassVar[str] = "Also train with tokenizers and report parity (exit code 3 if the files differ)."
    #: the model's own files, as ``tokenizers``' ``Model.save`` writes them
    model_files: ClassVar[tuple[str, ...]]
    default_special_tokens: ClassVar[tuple[str, ...]] = ()
    #: the settings of ``toktools train NAME``, in the order ``--help`` lists them
    cli_options: ClassVar[tuple[Option, ...]]
    #: the trainer options both backends take, with their defaults
    options: ClassVar[dict[str, Any]]
    #: the options that shape the counted words (recorded in counts files)
    count_options: ClassVar[tuple[str, ...]]
    #: the function of :mod:`toktools.training.pipeline` that trains the reference from files or counts
    reference_function: ClassVar[str]
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

    # -- settings -------------------------------------------------------------------------------

    def with_defaults(self, options: Mapping[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(options) - set(self.options))
        if unknown:
            raise ToktoolsError(
                f"{self.name}: unknown trainer option(s) {', '.join(unknown)} (it takes: {', '.join(self.options)})"
            )
        return {**self.options, **options}

    def settings(self, given: Mapping[str, Any]) -> dict[str, Any]:
        """Every :attr:`cli_options` setting, the given ones over the defaults (lists as lists)."""
        known = {option.name: option for option in self.cli_options}
        unknown = sorted(set(given) - set(known))
        if unknown:
            raise ToktoolsError(
                f"train {self.name}: unknown setting(s) {', '.join(unknown)} (it takes: {', '.join(known)})"
            )
        merged = {name: given.get(name, option.default) for name, option in known.items()}
        return {name: list(value) if known[name].type is list else value for name, value in merged.items()}

    def shared_options(self, settings: Mapping[str, Any]) -> dict[str, Any]:
        """The settings that both backends take (:attr:`options`)."""
        return {name: value for name, value in settings.items() if name in self.options}

    def count_settings(self, options: Mapping[str, Any]) -> dict[str, Any]:
        """What a counts file records, so that training with other settings refuses it."""
        merged = self.with_defaults({name: value for name, value in options.items() if name in self.options})
        return {name: merged[name] for name in self.count_options}

    def check_settings(
        self,
        settings: Mapping[str, Any],
        *,
        backend: str = "reference",
        check: bool = False,
        corpus: Sequence[str] = (),
        from_counts: bool = False,
        json_field: str | None = None,
        errors: str = "strict",
        cluster: bool = False,
    ) -> None:
        """Every combination of settings, checked before any work: a conflict is an
        :class:`OptionConflict` naming the options (``cluster``: words are to be counted on Dask)."""
        if cluster and (backend == "fast" or from_counts):
            raise OptionConflict(
                "--cluster counts corpus files for the reference backend: not with --backend fast or --from-counts"
            )
        if from_counts and corpus:
            raise OptionConflict("give either CORPUS files or --from-counts, not both")
        if from_counts and (json_field or errors != "strict"):
            raise OptionConflict("--from-counts reads a counts file: it takes no --field or --errors")
        if not from_counts and not corpus:
            raise ToktoolsError(
                "no corpus given: name one or more files (or - for standard input), or use --from-counts"
            )
        if backend == "fast":
            if from_counts:
                raise OptionConflict("--backend fast trains from corpus files only, not from --from-counts")
            if json_field or errors != "strict":
                raise OptionConflict("--backend fast reads text files only: it takes no --field or --errors")
        for problem in self.conflicts(settings, backend=backend, check=check):
            raise OptionConflict(problem)
        if backend == "fast" and check:
            raise OptionConflict(
                "--check compares the reference backend with tokenizers: use it with --backend reference"
            )
        if check and (from_counts or _any_read_once(corpus)):  # --check reads the corpus a second time
            raise OptionConflict("--check needs corpus files (not --from-counts, standard input or a FIFO)")

    def conflicts(self, settings: Mapping[str, Any], *, backend: str, check: bool) -> Iterable[str]:
        """This family's own conflicts between settings (none by default)."""
        return ()

    def smallest_vocab(self, settings: Mapping[str, Any]) -> int:
        """The vocabulary size the settings alone already need (checked before training)."""
        return 0

    # -- training -------------------------------------------------------------------------------

    def run(
        self,
        files: Sequence[str],
        settings: Mapping[str, Any],
        *,
        backend: str = "reference",
        word_counts: dict[str, int] | None = None,
        workers: int | None = None,
        errors: str = "strict",
        json_field: str | None = None,
        progress: Any = None,
        cluster: Any = None,
    ) -> Tokenizer:
        """Train from corpus ``files`` (or ``word_counts``) with ``settings`` (names of
        :attr:`cli_options`; defaults for the others) on either backend — what ``toktools train``
        does. ``progress(stage, done, total)`` is called by the reference backend; ``cluster``
        (an address or :class:`toktools.cluster.settings.Cluster`) counts the words on Dask."""
        settings = self.settings(settings)
        self.check_settings(
            settings,
            backend=backend,
            corpus=list(files),
            from_counts=word_counts is not None,
            json_field=json_field,
            errors=errors,
            cluster=cluster is not None,
        )
        if backend == "fast":
            from toktools.training import tokenizers_backend as fast

            with fast.training_files(files) as paths:
                trained = self.train_fast(
                    paths,
                    settings["vocab_size"],
                    settings.get("min_frequency", 0),
                    settings["special_tokens"],
                    self.shared_options(settings),
                )
            return self.from_fast(trained, settings)
        if backend != "reference":
            raise ToktoolsError(f"unknown backend {backend!r} (reference or fast)")
        from toktools.training import pipeline as training

        train = getattr(training, self.reference_function)
        return train(
            list(files) or None,
            word_counts=word_counts,
            workers=workers,
            errors=errors,
            json_field=json_field,
            progress=progress,
            **({} if cluster is None else {"cluster": cluster}),
            **self.reference_settings(settings),
        )

    def reference_settings(self, settings: Mapping[str, Any]) -> dict[str, Any]:
        """The settings as :attr:`reference_function` takes them."""
        return dict(settings)

    def from_fast(self, trained: Any, settings: Mapping[str, Any]) -> Tokenizer:
        """A toktools tokenizer from the ``tokenizers.Tokenizer`` the fast backend trained."""
        import json

        from toktools.formats import from_tokenizer_json

        return from_tokenizer_json(json.loads(trained.to_str()))

    def train(
        self,
        vocab_size: int,
        min_frequency: int,
        special_tokens: Sequence[str],
        word_counts: dict[str, int],
        options: Mapping[str, Any],
        forced_order: Any = None,
    ) -> Tokenizer:
        """The reference training from word counts, with :attr:`options`."""
        from toktools.training import pipeline as training

        extra = {"forced_order": forced_order} if forced_order is not None else {}
        settings = {
            "vocab_size": vocab_size,
            "special_tokens": list(special_tokens),
            **self.with_defaults(options),
            **extra,
        }
        if any(option.name == "min_frequency" for option in self.cli_options):
            settings["min_frequency"] = min_frequency
        return getattr(training, self.reference_function)(word_counts=word_counts, **settings)

    @abstractmethod
    def count_words(
        self,
        files: Sequence[str] | None,
        options: Mapping[str, Any],
        *,
        texts: Iterable[str] | None = None,
        workers: int | None = None,
        **reading: Any,
    ) -> dict[str, int]:
        """Word counts with this model's normalisation and pre-tokenisation."""

    @abstractmethod
    def train_fast(
        self,
        files: Sequence[str],
        vocab_size: int,
        min_frequency: int,
        special_tokens: Sequence[str],
        options: Mapping[str, Any],
    ) -> Any:
        """The same training with ``tokenizers`` (a ``tokenizers.Tokenizer``)."""

    def save_fast(self, tokenizer: Any, directory: Path) -> None:
        """``tokenizers``' model files and ``tokenizer.json``."""
        directory.mkdir(parents=True, exist_ok=True)
        tokenizer.model.save(str(directory))
        tokenizer.save(str(directory / "tokenizer.json"))

    def decorations(self, options: Mapping[str, Any]) -> tuple[str | None, str | None]:
        """``(continuing-subword prefix, end-of-word suffix)`` the trained tokens carry."""
        return None, None

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
    help = """Train a byte-level BPE (GPT-2 / RoBERTa style) vocabulary.

    Writes vocab.json, merges.txt and tokenizer.json into the output directory. CORPUS is one
    or more files (plain, .gz, .xz, .bz2), directories, or - for standard input.

    \b
    Examples:
      toktools train bytebpe wiki.txt -o my-bpe --vocab-size 8000
      zcat wiki.txt.gz | toktools train bytebpe - -o my-bpe --special-tokens "<|endoftext|>"
    """
    model_files = ("vocab.json", "merges.txt")
    cli_options = (
        vocab_size_option(30000),
        MIN_FREQUENCY,
        special_tokens_option(()),
        Option(
            "limit_alphabet",
            "--limit-alphabet",
            int,
            None,
            "Keep at most this many initial characters (the most frequent).",
            show_default=False,
            minimum=0,
        ),
        Option(
            "max_token_length",
            "--max-token-length",
            int,
            None,
            "Do not create tokens of this many bytes or more (tokenizers' semantics).",
            show_default=False,
            minimum=1,
        ),
        Option(
            "add_prefix_space",
            "--add-prefix-space/--no-add-prefix-space",
            bool,
            False,
            "Prefix every line with a space.",
        ),
        Option(
            "template",
            "--template",
            ("none", "roberta"),
            "none",
            "roberta: encode adds <s> A </s> (needs <s> and </s> in --special-tokens).",
        ),
    )
    options = {
        "limit_alphabet": None,
        "initial_alphabet": None,  # None: the 256 byte symbols
        "add_prefix_space": False,
        "continuing_subword_prefix": None,
        "end_of_word_suffix": None,
        "max_token_length": None,
    }
    count_options = ("add_prefix_space",)
    reference_function = "train_bytebpe"
    pins_tokenizer_json = True
    explains_merges = True

    def count_settings(self, options: Mapping[str, Any]) -> dict[str, Any]:
        return {**super().count_settings(options), "use_regex": True}

    def conflicts(self, settings: Mapping[str, Any], *, backend: str, check: bool) -> Iterable[str]:
        if settings.get("template") == "roberta" and not {"<s>", "</s>"} <= set(settings.get("special_tokens", ())):
            yield "--template roberta needs <s> and </s> among the --special-tokens"

    def smallest_vocab(self, settings: Mapping[str, Any]) -> int:
        if settings.get("limit_alphabet") is not None:
            return 0
        from toktools.models.bpe.bytelevel import ALPHABET  # all 256 byte symbols are kept

        return len(set(settings.get("special_tokens", ())) - set(ALPHABET)) + 256

    def reference_settings(self, settings: Mapping[str, Any]) -> dict[str, Any]:
        return {**settings, "template": None if settings.get("template") == "none" else settings.get("template")}

    def from_fast(self, trained: Any, settings: Mapping[str, Any]) -> Tokenizer:
        tokenizer = super().from_fast(trained, settings)
        if settings.get("template") == "roberta":
            from toktools.presets import roberta_processing

            if not {"<s>", "</s>"} <= set(settings["special_tokens"]):
                raise ToktoolsError("the roberta template needs <s> and </s> among the special tokens")
            tokenizer.post_processor = roberta_processing(tokenizer)
        return tokenizer

    def count_words(
        self,
        files: Sequence[str] | None,
        options: Mapping[str, Any],
        *,
        texts: Iterable[str] | None = None,
        workers: int | None = None,
        **reading: Any,
    ) -> dict[str, int]:
        from toktools.training import pipeline as training

        return training.count_bytebpe_words(
            files,
            texts=texts,
            add_prefix_space=self.with_defaults(options)["add_prefix_space"],
            workers=workers,
            **reading,
        )

    def train_fast(
        self,
        files: Sequence[str],
        vocab_size: int,
        min_frequency: int,
        special_tokens: Sequence[str],
        options: Mapping[str, Any],
    ) -> Any:
        from toktools.training import tokenizers_backend as fast

        return fast.train_bytebpe(list(files), vocab_size, min_frequency, special_tokens, **self.with_defaults(options))

    def decorations(self, options: Mapping[str, Any]) -> tuple[str | None, str | None]:
        merged = self.with_defaults(options)
        return merged["continuing_subword_prefix"], merged["end_of_word_suffix"]

    def initial_alphabet(self, options: Mapping[str, Any]) -> Sequence[str]:
        from toktools.models.bpe import bytelevel

        alphabet = self.with_defaults(options)["initial_alphabet"]
        return bytelevel.ALPHABET if alphabet is None else alphabet

    def read_vocab(self, directory: Path) -> list[str]:
        from toktools.models.bpe import trainer as bpe

        return _in_id_order(bpe.loads_vocab_json((directory / "vocab.json").read_text(encoding="utf-8")))


@register_trainer
class WordPieceTrainer(Trainer):
    """BERT WordPiece (``BertWordPieceTokenizer.train``: BPE merges with ``##`` pieces)."""

    name = "wordpiece"
    help = """Train a BERT WordPiece vocabulary (vocab.txt + tokenizer.json).

    By default this is what tokenizers' BertWordPieceTokenizer.train does: BERT normalisation
    (lower-casing, accent stripping, spaces around CJK characters), punctuation splitting, BPE
    merges with ## continuation pieces. CORPUS is one or more files (plain, .gz, .xz, .bz2),
    directories, or - for standard input.

    \b
    Examples:
      toktools train wordpiece wiki.txt -o my-bert --vocab-size 30000
      toktools train wordpiece zh.txt -o zh-bert --cased --limit-alphabet 8000
      toktools train wordpiece wiki.txt -o lk-bert --algorithm likelihood --min-pair-frequency 5
    """
    check_help = (
        "Also train with tokenizers and report parity (exit code 3 if they differ beyond tokenizers' own randomness)."
    )
    model_files = ("vocab.txt",)
    default_special_tokens = BERT_SPECIAL_TOKENS
    cli_options = (
        vocab_size_option(30000),
        MIN_FREQUENCY,
        special_tokens_option(default_special_tokens),
        Option(
            "limit_alphabet",
            "--limit-alphabet",
            int,
            1000,
            "Keep at most this many initial characters (the most frequent; ties: lower code point).",
            minimum=0,
        ),
        Option(
            "lowercase",
            "--lowercase/--cased",
            bool,
            True,
            "Lower-case (and strip accents) like bert-base-uncased, or keep case.",
        ),
        Option(
            "strip_accents",
            "--strip-accents/--keep-accents",
            bool,
            None,
            "Strip accents (default: same as --lowercase).",
            show_default=False,
        ),
        Option(
            "algorithm",
            "--algorithm",
            ("bpe", "likelihood"),
            "bpe",
            "bpe: what tokenizers trains (merges by pair count); likelihood: the original WordPiece score "
            "f(ab)/(f(a)f(b)).",
        ),
        Option(
            "min_pair_frequency",
            "--min-pair-frequency",
            int,
            None,
            "likelihood only: pairs rarer than this are never merged (default: max(2, --min-frequency)).",
            show_default=False,
            minimum=1,
        ),
    )
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
    reference_function = "train_wordpiece"
    has_forced_mode = True

    def conflicts(self, settings: Mapping[str, Any], *, backend: str, check: bool) -> Iterable[str]:
        likelihood = settings.get("algorithm") == "likelihood"
        if likelihood and backend == "fast":
            yield "--backend fast trains the bpe algorithm only (not --algorithm likelihood)"
        if likelihood and check:
            yield "--check compares with tokenizers, which trains the bpe algorithm only"
        if settings.get("min_pair_frequency") is not None and not likelihood:
            yield "--min-pair-frequency is for --algorithm likelihood only"

    def from_fast(self, trained: Any, settings: Mapping[str, Any]) -> Tokenizer:
        """BERT's tokenizer (with ``[CLS] A [SEP]``) on the vocabulary ``tokenizers`` trained."""
        from toktools.models.wordpiece.model import loads_vocab_txt
        from toktools.presets import WordPieceTokenizer
        from toktools.training import tokenizers_backend as fast

        specials = settings["special_tokens"]
        if trained.get_vocab_size(with_added_tokens=False) <= len(set(specials)):
            raise ToktoolsError("the corpus is empty: no words to learn from")
        tokenizer = WordPieceTokenizer.bert(
            loads_vocab_txt(fast.wordpiece_vocab_txt(trained)),
            lowercase=settings["lowercase"],
            strip_accents=settings["strip_accents"],
        )
        tokenizer.add_special_tokens(specials)
        return tokenizer

    def count_words(
        self,
        files: Sequence[str] | None,
        options: Mapping[str, Any],
        *,
        texts: Iterable[str] | None = None,
        workers: int | None = None,
        **reading: Any,
    ) -> dict[str, int]:
        from toktools.parts.bert_text import BertNormalizerConfig
        from toktools.training import pipeline as training

        merged = self.with_defaults(options)
        normalizer = BertNormalizerConfig(
            clean_text=merged["clean_text"],
            handle_chinese_chars=merged["handle_chinese_chars"],
            strip_accents=merged["strip_accents"],
            lowercase=merged["lowercase"],
        )
        return training.count_wordpiece_words(files, texts=texts, normalizer=normalizer, workers=workers, **reading)

    def train_fast(
        self,
        files: Sequence[str],
        vocab_size: int,
        min_frequency: int,
        special_tokens: Sequence[str],
        options: Mapping[str, Any],
    ) -> Any:
        from toktools.training import tokenizers_backend as fast

        return fast.train_wordpiece(
            list(files), vocab_size, min_frequency, special_tokens, **self.with_defaults(options)
        )

    def decorations(self, options: Mapping[str, Any]) -> tuple[str | None, str | None]:
        return self.with_defaults(options)["wordpieces_prefix"], None

    def read_vocab(self, directory: Path) -> list[str]:
        from toktools.models.wordpiece.model import loads_vocab_txt

        return _in_id_order(loads_vocab_txt((directory / "vocab.txt").read_text(encoding="utf-8")))


@register_trainer
class UnigramTrainer(Trainer):
    """SentencePiece-style Unigram (``SentencePieceUnigramTokenizer.train``: Nmt + NFKC, Metaspace
    words, EM and pruning as ``tokenizers``' ``UnigramTrainer``; :mod:`toktools.models.unigram.trainer`).

    ``tokenizers`` visits words in hash order, so its vocabulary differs from run to run on
    near-ties (``shared/spec/unigram.md`` §5.6): parity is the same algorithm, not the same bytes.
    """

    name = "unigram"
    help = """Train a SentencePiece-style Unigram vocabulary (unigram.json + tokenizer.json).

    This is what tokenizers' SentencePieceUnigramTokenizer.train does: NMT and NFKC
    normalisation, spaces as ▁ (prepended to every line), EM over the piece probabilities,
    pruning to the vocabulary size. CORPUS is one or more files (plain, .gz, .xz, .bz2),
    directories, or - for standard input.

    \b
    Examples:
      toktools train unigram wiki.txt -o my-unigram --vocab-size 8000
      toktools train unigram zh.txt -o zh-unigram --vocab-size 30000 --special-tokens "<pad>,<unk>,[CLS],[SEP],[MASK]"
    """
    check_help = (
        "Also train with tokenizers and report parity (tokenizers' Unigram training is not deterministic: "
        "exit code 3 only if they differ beyond that)."
    )
    model_files = ("unigram.json",)
    default_special_tokens = ("<unk>",)
    cli_options = (
        vocab_size_option(8000),
        special_tokens_option(default_special_tokens),
        Option(
            "unk_token", "--unk-token", str, "<unk>", "The unknown token (id 0 unless it is one of --special-tokens)."
        ),
        Option(
            "shrinking_factor",
            "--shrinking-factor",
            float,
            0.75,
            "Each pruning round keeps this share of the pieces (between 0 and 1).",
        ),
        Option("max_piece_length", "--max-piece-length", int, 16, "Longest piece, in characters.", minimum=1),
        Option("n_sub_iterations", "--n-sub-iterations", int, 2, "EM steps between two pruning rounds.", minimum=1),
        Option(
            "initial_alphabet",
            "--initial-alphabet",
            list,
            (),
            "Comma-separated characters kept in the vocabulary even if the corpus lacks them.",
            show_default=False,
        ),
    )
    options = {
        "unk_token": "<unk>",  # tokenizers' UnigramTrainer: none (then an unseen character cannot be encoded)
        "initial_alphabet": (),
        "shrinking_factor": 0.75,
        "max_piece_length": 16,
        "n_sub_iterations": 2,
    }
    count_options = ()
    agreement_bounds = (0.99, 0.95)
    reference_function = "train_unigram"

    def count_settings(self, options: Mapping[str, Any]) -> dict[str, Any]:
        return {"normalizer": "Nmt+NFKC", "prepend_scheme": "always"}

    def conflicts(self, settings: Mapping[str, Any], *, backend: str, check: bool) -> Iterable[str]:
        if not 0 < settings.get("shrinking_factor", 0.75) < 1:  # at 1 or more, pruning never ends
            yield "--shrinking-factor must be between 0 and 1: the share of pieces each pruning round keeps"

    def count_words(
        self,
        files: Sequence[str] | None,
        options: Mapping[str, Any],
        *,
        texts: Iterable[str] | None = None,
        workers: int | None = None,
        **reading: Any,
    ) -> dict[str, int]:
        from toktools.training import pipeline as training

        return training.count_unigram_words(files, texts=texts, workers=workers, **reading)

    def train_fast(
        self,
        files: Sequence[str],
        vocab_size: int,
        min_frequency: int,
        special_tokens: Sequence[str],
        options: Mapping[str, Any],
    ) -> Any:
        from toktools.training import tokenizers_backend as fast

        return fast.train_unigram(list(files), vocab_size, special_tokens, **self.with_defaults(options))

    def read_vocab(self, directory: Path) -> list[str]:
        import json

        return [piece for piece, _ in json.loads((directory / "unigram.json").read_text(encoding="utf-8"))["vocab"]]


def _any_read_once(corpus: Sequence[str]) -> bool:
    from toktools.io.inputs import any_read_once

    return any_read_once(corpus)
