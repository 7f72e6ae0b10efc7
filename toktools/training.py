"""Training entry points: corpus → word counts → merge engine → a ready tokenizer.

``train_bytebpe`` takes the same arguments, with the same defaults, as
``tokenizers.ByteLevelBPETokenizer.train``, so the same call on both sides gives the same files.
"""
from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Callable, Iterable, Sequence

from toktools import bpe, bytelevel, corpus
from toktools.encoding import AddedToken
from toktools.errors import ToktoolsError
from toktools.presets import ByteLevelBPETokenizer, WordPieceTokenizer, roberta_processing

if TYPE_CHECKING:  # pragma: no cover
    from toktools.bert_text import BertNormalizerConfig
    from toktools.clusters import Cluster

Progress = Callable[[str, int, int], None]  # (stage, done, total)


def _stage(progress: Progress | None, stage: str) -> Callable[[int, int], None] | None:
    return None if progress is None else functools.partial(progress, stage)


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
    cluster: "Cluster | str | None" = None,
) -> dict[str, int]:
    """Byte-level word counts: files are cut into lines as ``tokenizers`` does; each item of
    ``texts`` is one sequence (like ``train_from_iterator``)."""
    if texts is not None and cluster is not None:
        raise ToktoolsError("a cluster reads files: count texts given in Python without cluster=")
    if texts is not None:
        counts: dict[str, int] = {}
        for text in texts:
            prepared = bytelevel.prefixed(text, add_prefix_space)
            for piece in (bytelevel.split(prepared) if use_regex else [prepared] if prepared else []):
                counts[piece] = counts.get(piece, 0) + 1
        if not counts:
            raise ToktoolsError("the corpus is empty: no words to learn from")
    else:
        splitter = functools.partial(bytelevel.training_pieces, add_prefix_space=add_prefix_space, use_regex=use_regex)
        counts = _count_files(files, splitter, workers, errors, json_field, progress, cluster)
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
    cluster: "Cluster | str | None" = None,
) -> ByteLevelBPETokenizer:
    """Train a byte-level BPE tokenizer, identical to ``ByteLevelBPETokenizer().train(...)``.

    ``initial_alphabet`` defaults to the 256 byte symbols, so every byte is in the vocabulary.
    ``word_counts`` (byte-symbol words) skips reading the corpus; ``cluster`` (an address such
    as ``"tcp://host:8786"`` or ``"local:4"``, or a :class:`toktools.clusters.Cluster`) counts
    the files on a Dask cluster instead of local processes, with the same result.
    ``template="roberta"`` adds RoBERTa's ``<s> A </s>`` / ``<s> A </s></s> B </s>`` (both tokens must be special tokens).
    """
    if template not in (None, "roberta"):
        raise ToktoolsError(f"unknown template {template!r} (roberta, or none)")
    if template == "roberta" and not {"<s>", "</s>"} <= set(special_tokens):
        raise ToktoolsError("the roberta template needs <s> and </s> among the special tokens")
    if word_counts is None:
        word_counts = count_bytebpe_words(files, texts=texts, add_prefix_space=add_prefix_space, workers=workers,
                                          errors=errors, json_field=json_field, progress=progress, cluster=cluster)
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
    normalizer: "BertNormalizerConfig | None" = None,
    workers: int | None = None,
    errors: corpus.ErrorPolicy = "strict",
    json_field: str | None = None,
    progress: Progress | None = None,
    cluster: "Cluster | str | None" = None,
) -> dict[str, int]:
    """Normalised, pre-tokenised word counts in first-occurrence order (BERT normaliser)."""
    from toktools import bert_text

    config = normalizer or bert_text.BertNormalizerConfig()
    if texts is not None and cluster is not None:
        raise ToktoolsError("a cluster reads files: count texts given in Python without cluster=")
    if texts is not None:
        counts: dict[str, int] = {}
        for text in texts:
            for word in bert_text.iter_words(text, config):
                counts[word] = counts.get(word, 0) + 1
        if not counts:
            raise ToktoolsError("the corpus is empty: no words to learn from")
        return counts
    splitter = functools.partial(bert_text.iter_words, config=config)
    return _count_files(files, splitter, workers, errors, json_field, progress, cluster)


def _count_files(files: Sequence[str] | None, splitter: corpus.WordSplitter, workers: int | None,
                 errors: corpus.ErrorPolicy, json_field: str | None, progress: Progress | None,
                 cluster: "Cluster | str | None") -> dict[str, int]:
    """Word counts of the files: in the local process pool, or on a Dask cluster (the same
    counts, in the same order)."""
    if cluster is not None:
        from toktools import distributed

        return distributed.count_corpus(cluster, list(files or []), splitter, errors=errors, json_field=json_field,
                                        progress=_stage(progress, "read"))
    sources = corpus.expand_sources(list(files or []), json_field)
    return corpus.count_words(sources, splitter, workers=workers, errors=errors, progress=_stage(progress, "read"))


def forced_order_from_vocab(vocab_tokens: Sequence[str], special_tokens: Sequence[str], prefix: str = "##") -> tuple[list[str], list[str]]:
    """The alphabet and the ``##c`` block of a ``tokenizers`` WordPiece ``vocab.txt`` (in id order),
    to replay its random choices: ``(alphabet, prefixed symbols)``."""
    rest = [t for t in vocab_tokens[len(dict.fromkeys(special_tokens)):]]
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
    special_tokens: Sequence[str] = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"),
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
    cluster: "Cluster | str | None" = None,
) -> WordPieceTokenizer:
    """Train a BERT WordPiece vocabulary with ``BertWordPieceTokenizer.train``'s defaults.

    ``algorithm="bpe"`` is what ``tokenizers`` does (BPE merges by pair count, with ``##`` on
    non-initial pieces); ``"likelihood"`` is the original WordPiece score f(ab) / (f(a)·f(b))
    (see :mod:`toktools.likelihood`). ``tokenizers`` orders the alphabet ties and the ``##c``
    block randomly; we keep the more frequent character (ties: lower code point) and give ``##c``
    ids in first-occurrence order. ``forced_order=(alphabet, prefixed)`` replays another run's
    choices (see :func:`forced_order_from_vocab`). ``cluster`` counts the files on a Dask
    cluster, with the same result (see :func:`train_bytebpe`).
    """
    from toktools.bert_text import BertNormalizerConfig

    normalizer = BertNormalizerConfig(clean_text, handle_chinese_chars, strip_accents, lowercase)
    if word_counts is None:
        word_counts = count_wordpiece_words(files, texts=texts, normalizer=normalizer, workers=workers,
                                            errors=errors, json_field=json_field, progress=progress, cluster=cluster)
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
        from toktools import likelihood

        result = None
        tokens = likelihood.train_likelihood_wordpiece(
            word_counts, vocab_size=vocab_size, special_tokens=list(special_tokens), prefix=wordpieces_prefix,
            limit_alphabet=limit_alphabet, initial_alphabet=initial_alphabet,
            min_pair_frequency=min_pair_frequency if min_pair_frequency is not None else max(min_frequency, 2),
            progress=_stage(progress, "merge"),
        )
    else:
        raise ToktoolsError(f"unknown WordPiece algorithm {algorithm!r} (bpe or likelihood)")
    vocab = {token: index for index, token in enumerate(tokens)}
    unk = "[UNK]" if "[UNK]" in vocab else next((t for t in special_tokens if "unk" in t.lower()), None)
    if unk is None or unk not in vocab:
        raise ToktoolsError("WordPiece needs an unknown token: include [UNK] in the special tokens")
    tokenizer = WordPieceTokenizer.bert(vocab, lowercase=lowercase, strip_accents=strip_accents, clean_text=clean_text,
                                        handle_chinese_chars=handle_chinese_chars, unk_token=unk)
    # the trainer's special tokens are all registered, as tokenizers does after training
    tokenizer.add_special_tokens(list(special_tokens))
    tokenizer.training_result = result  # type: ignore[attr-defined]
    return tokenizer
