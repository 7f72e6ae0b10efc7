"""Training entry points: corpus → word counts → training engine → a ready tokenizer.

``train_bytebpe`` takes the same arguments, with the same defaults, as
``tokenizers.ByteLevelBPETokenizer.train``, so the same call on both sides gives the same files
(likewise ``train_wordpiece`` / ``BertWordPieceTokenizer`` and ``train_unigram`` /
``SentencePieceUnigramTokenizer``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from toktools.corpus import reading as corpus
from toktools.encoding import AddedToken
from toktools.errors import ToktoolsError
from toktools.models.bpe import bytelevel
from toktools.models.bpe import trainer as bpe
from toktools.models.wordpiece.model import BERT_SPECIAL_TOKENS
from toktools.presets import ByteLevelBPETokenizer, WordPieceTokenizer, roberta_processing, sentencepiece_unigram

if TYPE_CHECKING:  # pragma: no cover
    from toktools.cluster.settings import Cluster
    from toktools.parts.bert_text import BertNormalizerConfig
    from toktools.tokenizer import Tokenizer

Progress = Callable[[str, int, int], None]  # (stage, done, total)


def _stage(progress: Progress | None, stage: str) -> Callable[[int, int], None] | None:
    return None if progress is None else functools.partial(progress, stage)


def _count_texts(texts: Iterable[str], words_of: Callable[[str], Iterable[str]]) -> dict[str, int]:
    """Word counts of in-memory sequences (``train_from_iterator``: each text is one sequence),
    in first-occurrence order."""
    counts: dict[str, int] = {}
    for text in texts:
        for word in words_of(text):
            counts[word] = counts.get(word, 0) + 1
    if not counts:
        raise ToktoolsError("the corpus is empty: no words to learn from")
    return counts


def _count_files(
    files: Sequence[str] | None,
    splitter: Callable[[str], Iterable[str]],
    *,
    workers: int | None = None,
    errors: corpus.ErrorPolicy = "strict",
    json_field: str | None = None,
    progress: Progress | None = None,
    cluster: Cluster | str | None = None,
) -> dict[str, int]:
    """Word counts of corpus files, cut into lines as ``tokenizers`` does, on ``workers`` processes
    or on a Dask ``cluster`` (the same counts, in the same order; ``splitter`` takes a chunk of
    whole lines; it must be picklable)."""
    if cluster is not None:
        from toktools.cluster import blocks as distributed

        return distributed.count_corpus(
            cluster,
            list(files or []),
            splitter,
            errors=errors,
            json_field=json_field,
            progress=_stage(progress, "read"),
        )
    sources = corpus.expand_sources(list(files or []), json_field)
    return corpus.count_words(sources, splitter, workers=workers, errors=errors, progress=_stage(progress, "read"))


def count_bytebpe_words(
    files: Sequence[str] | None = None,
    *,
    texts: Iterable[str] | None = None,
    add_prefix_space: bool = False,
    use_regex: bool = True,
    workers: int | None = None,
    errors: corpus.ErrorPolicy = "strict",
    json_field: str | None = None,
    progress: Progress | None = None,
    cluster: Cluster | str | None = None,
) -> dict[str, int]:
    """Byte-level word counts: files are cut into lines as ``tokenizers`` does; each item of
    ``texts`` is one sequence (like ``train_from_iterator``)."""
    if texts is not None and cluster is not None:
        raise ToktoolsError("a cluster reads files: count texts given in Python without cluster=")
    if texts is not None:

        def pieces(text: str) -> list[str]:
            prepared = bytelevel.prefixed(text, add_prefix_space)
            return bytelevel.split(prepared) if use_regex else [prepared] if prepared else []

        counts = _count_texts(texts, pieces)
    else:
        splitter = functools.partial(bytelevel.training_pieces, add_prefix_space=add_prefix_space, use_regex=use_regex)
        counts = _count_files(
            files, splitter, workers=workers, errors=errors, json_field=json_field, progress=progress, cluster=cluster
        )
    return _as_byte_symbols(counts)


def _as_byte_symbols(counts: dict[str, int]) -> dict[str, int]:
    """The counts keyed by the byte symbols of each piece: all pieces mapped in one call when
    none holds a NUL (joined by NUL, whose symbol then splits them again)."""
    joined = "\x00".join(counts)
    if joined.count("\x00") == len(counts) - 1:
        return dict(zip(bytelevel.text_to_symbols(joined).split(bytelevel.BYTE_TO_SYMBOL[0]), counts.values()))
    to_symbols = bytelevel.text_to_symbols
    return {to_symbols(piece): count for piece, count in counts.items()}


def train_bytebpe(
    files: Sequence[str] | None = None,
    vocab_size: int = 30000,
    min_frequency: int = 2,
    special_tokens: Sequence[str] = (),
    *,
    texts: Iterable[str] | None = None,
    word_counts: dict[str, int] | None = None,
    limit_alphabet: int | None = None,
    initial_alphabet: Sequence[str] | None = None,
    add_prefix_space: bool = False,
    continuing_subword_prefix: str | None = None,
    end_of_word_suffix: str | None = None,
    max_token_length: int | None = None,
    template: str | None = None,
    workers: int | None = None,
    errors: corpus.ErrorPolicy = "strict",
    json_field: str | None = None,
    progress: Progress | None = None,
    cluster: Cluster | str | None = None,
) -> ByteLevelBPETokenizer:
    """Train a byte-level BPE tokenizer, identical to ``ByteLevelBPETokenizer().train(...)``.

    ``initial_alphabet`` defaults to the 256 byte symbols, so every byte is in the vocabulary.
    ``word_counts`` (byte-symbol words) skips reading the corpus; ``cluster`` (an address such
    as ``"tcp://host:8786"`` or ``"local:4"``, or a :class:`toktools.cluster.settings.Cluster`) counts
    the files on a Dask cluster instead of local processes, with the same result.
    ``template="roberta"`` adds RoBERTa's ``<s> A </s>`` / ``<s> A </s></s> B </s>`` (both tokens must be special tokens).
    """
    if template not in (None, "roberta"):
        raise ToktoolsError(f"unknown template {template!r} (roberta, or none)")
    if template == "roberta" and not {"<s>", "</s>"} <= set(special_tokens):
        raise ToktoolsError("the roberta template needs <s> and </s> among the special tokens")
    if word_counts is None:
        word_counts = count_bytebpe_words(
            files,
            texts=texts,
            add_prefix_space=add_prefix_space,
            workers=workers,
            errors=errors,
            json_field=json_field,
            progress=progress,
            cluster=cluster,
        )
    config = bpe.BpeTrainerConfig(
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        special_tokens=list(special_tokens),
        limit_alphabet=limit_alphabet,
        initial_alphabet=bytelevel.ALPHABET if initial_alphabet is None else list(initial_alphabet),
        continuing_subword_prefix=continuing_subword_prefix,
        end_of_word_suffix=end_of_word_suffix,
        max_token_length=max_token_length,
    )
    result = bpe.train_bpe(word_counts, config, progress=_stage(progress, "merge"))
    vocab = result.vocab_dict()
    added = [AddedToken(t, vocab[t]) for t in dict.fromkeys(special_tokens)]
    tokenizer = ByteLevelBPETokenizer(
        vocab,
        result.merges,
        add_prefix_space=add_prefix_space,
        added_tokens=added,
        continuing_subword_prefix=continuing_subword_prefix,
        end_of_word_suffix=end_of_word_suffix,
    )
    if template == "roberta":
        tokenizer.post_processor = roberta_processing(tokenizer)
    tokenizer.training_result = result  # type: ignore[attr-defined]
    return tokenizer


def count_wordpiece_words(
    files: Sequence[str] | None = None,
    *,
    texts: Iterable[str] | None = None,
    normalizer: BertNormalizerConfig | None = None,
    workers: int | None = None,
    errors: corpus.ErrorPolicy = "strict",
    json_field: str | None = None,
    progress: Progress | None = None,
    cluster: Cluster | str | None = None,
) -> dict[str, int]:
    """Normalised, pre-tokenised word counts in first-occurrence order (BERT normaliser)."""
    from toktools.parts import bert_text

    config = normalizer or bert_text.BertNormalizerConfig()
    if texts is not None and cluster is not None:
        raise ToktoolsError("a cluster reads files: count texts given in Python without cluster=")
    if texts is not None:
        return _count_texts(texts, functools.partial(bert_text.iter_words, config=config))
    splitter = functools.partial(bert_text.iter_words, config=config)
    return _count_files(
        files, splitter, workers=workers, errors=errors, json_field=json_field, progress=progress, cluster=cluster
    )


def forced_order_from_vocab(
    vocab_tokens: Sequence[str], special_tokens: Sequence[str], prefix: str = "##"
) -> tuple[list[str], list[str]]:
    """The alphabet and the ``##c`` block of a ``tokenizers`` WordPiece ``vocab.txt`` (in id order),
    to replay its random choices: ``(alphabet, prefixed symbols)``."""
    rest = [t for t in vocab_tokens[len(dict.fromkeys(special_tokens)) :]]
    alphabet = []
    index = 0
    while index < len(rest) and len(rest[index]) == 1:
        alphabet.append(rest[index])
        index += 1
    prefixed = []
    while index < len(rest) and rest[index].startswith(prefix) and len(rest[index]) == len(prefix) + 1:
        prefixed.append(rest[index])
        index += 1
    return alphabet, prefixed


def train_wordpiece(
    files: Sequence[str] | None = None,
    vocab_size: int = 30000,
    min_frequency: int = 2,
    special_tokens: Sequence[str] = BERT_SPECIAL_TOKENS,
    *,
    texts: Iterable[str] | None = None,
    word_counts: dict[str, int] | None = None,
    limit_alphabet: int | None = 1000,
    initial_alphabet: Sequence[str] = (),
    wordpieces_prefix: str = "##",
    lowercase: bool = True,
    strip_accents: bool | None = None,
    clean_text: bool = True,
    handle_chinese_chars: bool = True,
    algorithm: str = "bpe",
    min_pair_frequency: int | None = None,
    forced_order: tuple[Sequence[str], Sequence[str]] | None = None,
    workers: int | None = None,
    errors: corpus.ErrorPolicy = "strict",
    json_field: str | None = None,
    progress: Progress | None = None,
    cluster: Cluster | str | None = None,
) -> WordPieceTokenizer:
    """Train a BERT WordPiece vocabulary with ``BertWordPieceTokenizer.train``'s defaults.

    ``algorithm="bpe"`` is what ``tokenizers`` does (BPE merges by pair count, with ``##`` on
    non-initial pieces); ``"likelihood"`` is the original WordPiece score f(ab) / (f(a)·f(b))
    (see :mod:`toktools.models.wordpiece.likelihood_trainer`). ``tokenizers`` orders the alphabet ties and the ``##c``
    block randomly; we keep the more frequent character (ties: lower code point) and give ``##c``
    ids in first-occurrence order. ``forced_order=(alphabet, prefixed)`` replays another run's
    choices (see :func:`forced_order_from_vocab`). ``cluster`` counts the files on a Dask
    cluster, with the same result (see :func:`train_bytebpe`).
    """
    from toktools.parts.bert_text import BertNormalizerConfig

    normalizer = BertNormalizerConfig(clean_text, handle_chinese_chars, strip_accents, lowercase)
    if word_counts is None:
        word_counts = count_wordpiece_words(
            files,
            texts=texts,
            normalizer=normalizer,
            workers=workers,
            errors=errors,
            json_field=json_field,
            progress=progress,
            cluster=cluster,
        )
    if algorithm == "bpe":
        config = bpe.BpeTrainerConfig(
            vocab_size=vocab_size,
            min_frequency=min_frequency,
            special_tokens=list(special_tokens),
            limit_alphabet=limit_alphabet,
            initial_alphabet=list(initial_alphabet),
            continuing_subword_prefix=wordpieces_prefix,
            forced_alphabet=list(forced_order[0]) if forced_order else None,
            forced_symbol_order=list(forced_order[1]) if forced_order else None,
        )
        result = bpe.train_bpe(word_counts, config, progress=_stage(progress, "merge"))
        tokens = result.vocab
    elif algorithm == "likelihood":
        from toktools.models.wordpiece import likelihood_trainer as likelihood

        result = None
        tokens = likelihood.train_likelihood_wordpiece(
            word_counts,
            vocab_size=vocab_size,
            special_tokens=list(special_tokens),
            prefix=wordpieces_prefix,
            limit_alphabet=limit_alphabet,
            initial_alphabet=initial_alphabet,
            min_pair_frequency=min_pair_frequency if min_pair_frequency is not None else max(min_frequency, 2),
            progress=_stage(progress, "merge"),
        )
    else:
        raise ToktoolsError(f"unknown WordPiece algorithm {algorithm!r} (bpe or likelihood)")
    vocab = {token: index for index, token in enumerate(tokens)}
    unk = "[UNK]" if "[UNK]" in vocab else next((t for t in special_tokens if "unk" in t.lower()), None)
    if unk is None or unk not in vocab:
        raise ToktoolsError("WordPiece needs an unknown token: include [UNK] in the special tokens")
    tokenizer = WordPieceTokenizer.bert(
        vocab,
        lowercase=lowercase,
        strip_accents=strip_accents,
        clean_text=clean_text,
        handle_chinese_chars=handle_chinese_chars,
        unk_token=unk,
    )
    # the trainer's special tokens are all registered, as tokenizers does after training
    tokenizer.add_special_tokens(list(special_tokens))
    tokenizer.training_result = result  # type: ignore[attr-defined]
    return tokenizer


@functools.lru_cache(maxsize=4)
def _unigram_pipeline(add_prefix_space: bool) -> Any:
    from toktools.parts.unigram import Unigram

    return sentencepiece_unigram(Unigram(), add_prefix_space=add_prefix_space)


def unigram_words(text: str, add_prefix_space: bool = True) -> list[str]:
    """The words ``SentencePieceUnigramTokenizer`` counts in one sequence: Nmt, NFKC, runs of
    spaces made one, then Metaspace (``▁word`` pieces)."""
    pipeline = _unigram_pipeline(add_prefix_space)
    return [word for word, _ in pipeline.pre_tokenizer.pre_tokenize_str(pipeline.normalizer.normalize_str(text))]


def unigram_training_words(chunk: str, add_prefix_space: bool = True) -> Iterator[str]:
    """The words of a chunk of ``\\n``-terminated training lines, each line one sequence as
    ``tokenizers`` reads files (the line break becomes a space, then a final ``▁``). A line
    longer than a segment is normalised piece by piece, cut just before a space that follows a
    letter or digit (:func:`toktools.corpus.documents.unigram_may_end`), which changes no word:
    memory stays flat on a line of any length."""
    from toktools.corpus.documents import SEGMENT_CHARS, safe_segments, unigram_may_end
    from toktools.runtime.memory import release_freed_memory

    lines = chunk.split("\n")
    last = len(lines) - 1
    for index, line in enumerate(lines):
        if index == last and not line:
            break
        ending = "\n" if index < last else ""
        if len(line) <= SEGMENT_CHARS:
            yield from unigram_words(line + ending, add_prefix_space)
            continue
        for start, end in safe_segments(line, SEGMENT_CHARS, unigram_may_end):
            release_freed_memory()
            yield from unigram_words(line[start:end] + (ending if end == len(line) else ""), add_prefix_space)


def count_unigram_words(
    files: Sequence[str] | None = None,
    *,
    texts: Iterable[str] | None = None,
    add_prefix_space: bool = True,
    **reading: Any,
) -> dict[str, int]:
    """Unigram word counts, read as :func:`count_bytebpe_words` reads (``workers``, ``errors``,
    ``json_field``, ``progress``)."""
    if texts is not None and reading.get("cluster") is not None:
        raise ToktoolsError("a cluster reads files: count texts given in Python without cluster=")
    if texts is not None:
        return _count_texts(texts, functools.partial(unigram_words, add_prefix_space=add_prefix_space))
    return _count_files(files, functools.partial(unigram_training_words, add_prefix_space=add_prefix_space), **reading)


def train_unigram(
    files: Sequence[str] | None = None,
    vocab_size: int = 8000,
    special_tokens: Sequence[str] = (),
    *,
    texts: Iterable[str] | None = None,
    word_counts: dict[str, int] | None = None,
    unk_token: str | None = None,
    initial_alphabet: Sequence[str] = (),
    shrinking_factor: float = 0.75,
    max_piece_length: int = 16,
    n_sub_iterations: int = 2,
    add_prefix_space: bool = True,
    workers: int | None = None,
    errors: corpus.ErrorPolicy = "strict",
    json_field: str | None = None,
    progress: Progress | None = None,
    cluster: Cluster | str | None = None,
) -> Tokenizer:
    """Train a SentencePiece-style Unigram tokenizer with ``SentencePieceUnigramTokenizer.train``'s
    pipeline and ``UnigramTrainer``'s options and defaults (:mod:`toktools.models.unigram.trainer`).

    ``tokenizers`` visits words in hash order, so its vocabulary varies from run to run on
    near-ties; ours is the same for the same input (``shared/spec/unigram.md`` §5.6).
    """
    from toktools.models.unigram.trainer import UnigramTrainer

    if word_counts is None:
        word_counts = count_unigram_words(
            files,
            texts=texts,
            add_prefix_space=add_prefix_space,
            workers=workers,
            errors=errors,
            json_field=json_field,
            progress=progress,
            cluster=cluster,
        )
    em = _stage(progress, "em")
    trainer = UnigramTrainer(
        vocab_size,
        n_sub_iterations=n_sub_iterations,
        shrinking_factor=shrinking_factor,
        special_tokens=special_tokens,
        unk_token=unk_token,
        initial_alphabet=initial_alphabet,
        max_piece_length=max_piece_length,
        progress=None if em is None else lambda _stage_name, step, pieces: em(step, pieces),
    )
    model = trainer.train(word_counts)
    vocab = model.get_vocab()
    # the trainer's special tokens are all registered, as tokenizers does after training
    added = [AddedToken(t, vocab[t]) for t in dict.fromkeys(special_tokens)]
    tokenizer = sentencepiece_unigram(model, add_prefix_space=add_prefix_space, added_tokens=added)
    tokenizer.training_result = None  # type: ignore[attr-defined]
    return tokenizer
