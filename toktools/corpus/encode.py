"""Tokenize corpora for training: one call for what ``toktools encode`` does, whatever the output.

    >>> import toktools
    >>> toktools.encode_corpus(["data/*.jsonl.gz"], "bytebpe-50k", "out/train", format="megatron",
    ...                        document="jsonl", shard_tokens=100_000_000)   # doctest: +SKIP

It only chooses who does the work:

* ``ids`` / ``tokens`` / ``jsonl``: one line per input line (:mod:`toktools.corpus.text_outputs`);
* ``megatron`` / ``npy`` / ``bin`` here, one output or ``shard_tokens`` shards with a
  resumable manifest (:mod:`toktools.corpus.shards`);
* the same formats with ``cluster`` (or ``block_bytes``): each block of the input is one
  shard, encoded on a Dask worker or here (:mod:`toktools.cluster.encode`).

The keywords of :func:`encode_corpus` become one :class:`~toktools.corpus.options.EncodeOptions`,
which :func:`encode_corpus_with` hands whole to whoever does the work.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from toktools.corpus.documents import SEGMENT_CHARS
from toktools.corpus.manifest import MANIFEST_FORMAT, manifest_path, shard_base
from toktools.corpus.options import BATCH_BYTES, DEFAULT_VERIFY, CorpusProgress, EncodeOptions
from toktools.corpus.prepared_tokenizer import load_document
from toktools.corpus.shards import CorpusResult, encode_documents, encode_shards
from toktools.corpus.writers import FORMATS
from toktools.errors import ToktoolsError

__all__ = [
    "BATCH_BYTES",
    "DEFAULT_VERIFY",
    "MANIFEST_FORMAT",
    "CorpusResult",
    "EncodeOptions",
    "encode_corpus",
    "encode_corpus_with",
    "encode_documents",
    "load_document",
    "manifest_path",
    "shard_base",
]


def encode_corpus(
    inputs: Sequence[str | Path],
    tokenizer: Any,
    output: str | Path | None,
    *,
    format: str = "megatron",
    engine: str = "auto",
    document: str = "line",
    field: str | None = None,
    append_eos: bool | str | None = None,
    prepend_bos: bool | str = False,
    shard_tokens: int | None = None,
    workers: int | None = None,
    verify: int = DEFAULT_VERIFY,
    progress: CorpusProgress | None = None,
    force: bool = False,
    dtype: str = "auto",
    batch_bytes: int = BATCH_BYTES,
    max_document_bytes: int | None = None,
    segment_chars: int = SEGMENT_CHARS,
    cluster: Any = None,
    block_bytes: int | None = None,
    pair: bool = False,
    add_special_tokens: bool = True,
    max_length: int | None = None,
    batch_lines: int | None = None,
    truncation: bool = True,
    padding: bool = True,
) -> CorpusResult:
    """Encode ``inputs`` (files, directories, quoted globs, ``-``) into ``output``.

    ``format``: ``megatron`` (``output`` is a prefix: ``.bin`` + ``.idx``), ``npy`` or ``bin``
    (one flat id array + ``.offsets`` beside it). ``document``: ``line`` | ``blank-line`` |
    ``file`` | ``jsonl`` (``field``, default ``text``). ``append_eos``: ``None`` = on for
    megatron with the tokenizer's EOS (or SEP), off otherwise; ``True``/a token string/``False``.
    ``prepend_bos``: ``True`` (the tokenizer's BOS/CLS) or a token. ``shard_tokens``: start a new
    shard after the document that reaches this many tokens, with a resumable manifest.
    ``verify``: documents (lines, for the text formats) re-encoded with the reference to check a
    fast engine (0: off).
    Existing outputs need ``force`` unless they are this run's own shards under a manifest with
    the same settings (then finished shards are kept and the rest is written).
    ``cluster``: a Dask scheduler address (``tcp://host:8786``), ``local[:N]`` or a
    :class:`toktools.cluster.settings.Cluster`; the inputs are cut into blocks of ``block_bytes``
    (default: the cluster's, 64 MiB) and each block becomes one shard, encoded on a worker
    (:mod:`toktools.cluster.encode`). ``block_bytes`` without ``cluster`` writes the same
    shards here, byte for byte.

    ``format`` ``ids``/``tokens``/``jsonl`` writes one line per input line instead, full
    encodings (template unless not ``add_special_tokens``, ``pair``, ``max_length``) to
    ``output`` or stdout (``None``): see :mod:`toktools.corpus.text_outputs`. ``truncation`` /
    ``padding`` False: not the tokenizer file's own (which are applied, with a warning, as
    ``tokenizers`` applies them).
    """

    options = EncodeOptions(
        format=format,
        engine=engine,
        document=document,
        field=field,
        append_eos=append_eos,
        prepend_bos=prepend_bos,
        shard_tokens=shard_tokens,
        workers=workers,
        verify=verify,
        progress=progress,
        force=force,
        dtype=dtype,
        batch_bytes=batch_bytes,
        max_document_bytes=max_document_bytes,
        segment_chars=segment_chars,
        cluster=cluster,
        block_bytes=block_bytes,
        pair=pair,
        add_special_tokens=add_special_tokens,
        max_length=max_length,
        batch_lines=batch_lines,
        truncation=truncation,
        padding=padding,
    )
    return encode_corpus_with(inputs, tokenizer, output, options)


def encode_corpus_with(
    inputs: Sequence[str | Path], tokenizer: Any, output: str | Path | None, options: EncodeOptions
) -> CorpusResult:
    """:func:`encode_corpus` with its options in one object (``dataclasses.replace(options,
    workers=2)`` changes one): the text formats, local shards or blocks, as the options say."""
    from toktools.corpus.text_outputs import TEXT_FORMATS

    fmt = options.format
    if fmt in TEXT_FORMATS and (options.cluster is not None or options.block_bytes is not None):
        raise ToktoolsError(
            f"--format {fmt} writes one output: a cluster (or --block-size) writes shards "
            "(--format megatron, npy or bin)"
        )
    if fmt in TEXT_FORMATS:
        from toktools.corpus.text_outputs import BATCH_LINES, encode_text

        text = encode_text(
            inputs,
            tokenizer,
            output,
            format=fmt,
            engine=options.engine,
            pair=options.pair,
            add_special_tokens=options.add_special_tokens,
            max_length=options.max_length,
            workers=options.workers,
            batch_lines=options.batch_lines or BATCH_LINES,
            force=options.force,
            verify=options.verify,
            truncation=options.truncation,
            padding=options.padding,
        )
        return CorpusResult(
            text.engine,
            text.lines,
            text.tokens,
            [Path(output)] if output is not None else [],
            None,
            1,
            0,
            0,
            text.seconds,
            text.verified,
            verified_bytes=text.verified_bytes,
        )
    if fmt not in FORMATS:
        raise ToktoolsError(f"unknown corpus format {fmt!r}; choose one of {', '.join((*FORMATS, *TEXT_FORMATS))}")
    if output is None:
        raise ToktoolsError(f"--format {fmt} writes binary data: give an output path")
    if options.shard_tokens is not None and options.shard_tokens < 1:
        raise ToktoolsError("shard_tokens must be at least 1")
    if options.cluster is not None or options.block_bytes is not None:  # shards are blocks of the input
        from toktools.cluster.encode import encode_blocks

        return encode_blocks(inputs, tokenizer, output, options)
    return encode_shards(inputs, tokenizer, output, options)
