"""`toktools encode` and `toktools decode`: text to ids and back."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

from toktools.commands._shared import (
    cap_workers,
    cluster_options,
    input_lines,
    model_rule_option,
    quiet_option,
    sampling_options,
    tokenizer_with_rule,
    tokenizer_with_sampling,
)
from toktools.errors import ToktoolsError


def _blocks_without_cluster(command: Any) -> Any:
    """Lets ``--block-size`` stand alone: encode then writes here the shards a cluster would."""
    command.blocks_without_cluster = True
    return command


TEXT_FORMATS = ("ids", "tokens", "jsonl")
CORPUS_FORMATS = ("megatron", "npy", "bin")


@click.command()
@quiet_option
@click.option(
    "-t",
    "--tokenizer",
    "tokenizer_path",
    required=True,
    help="Tokenizer directory or file (tokenizer.json, vocab.json + merges.txt, vocab.txt, a sentencepiece .model), or a shipped vocabulary name.",
)
@click.argument("files", nargs=-1)
@model_rule_option
@sampling_options
@click.option(
    "--format",
    "output_format",
    type=click.Choice([*TEXT_FORMATS, *CORPUS_FORMATS]),
    default="ids",
    show_default=True,
    help="ids/tokens: one line per input line; jsonl: ids, tokens, offsets per line; "
    "megatron: PREFIX.bin + PREFIX.idx (Megatron-LM indexed dataset); npy/bin: all ids as one array "
    "plus NAME.offsets.npy/.bin (document starts). megatron/npy/bin need -o.",
)
@click.option(
    "-o",
    "--output",
    "out_path",
    type=click.Path(path_type=Path),
    default=None,
    help="Write here instead of stdout (written atomically). For megatron, a prefix.",
)
@click.option(
    "--engine",
    type=click.Choice(["auto", "reference", "tokenizers", "tiktoken", "gigatoken", "sentencepiece"]),
    default="auto",
    show_default=True,
    help="Who encodes. auto = the fastest engine proven or probed to give the reference's ids for this tokenizer "
    "(tiktoken and gigatoken give ids only: tokens come from the vocabulary, jsonl offsets need tokenizers or "
    "reference; sentencepiece: a .model with the sentencepiece package). --verbose says which engine was chosen and why.",
)
@click.option(
    "-v",
    "--verbose",
    is_flag=True,
    help="megatron/npy/bin: say on stderr which engine encoded and why (and why not the faster ones).",
)
@click.option(
    "--document",
    "document_mode",
    type=click.Choice(["line", "blank-line", "file", "jsonl"]),
    default="line",
    show_default=True,
    help="megatron/npy/bin: what one document is (jsonl: one record's --field).",
)
@click.option("--field", default=None, help="--document jsonl: the text field (default: text).")
@click.option(
    "--append-eos",
    "append_eos",
    is_flag=False,
    flag_value="",
    default=None,
    metavar="[=TOKEN]",
    help="End every document with EOS (default for megatron: the tokenizer's EOS or SEP), or with TOKEN.",
)
@click.option("--no-append-eos", "no_append_eos", is_flag=True, help="Do not end documents with EOS (megatron).")
@click.option(
    "--prepend-bos",
    "prepend_bos",
    is_flag=False,
    flag_value="",
    default=None,
    metavar="[=TOKEN]",
    help="Start every document with BOS (the tokenizer's BOS or CLS), or with TOKEN.",
)
@click.option(
    "--shard-tokens",
    type=click.IntRange(min=1),
    default=None,
    help="Start a new shard PREFIX-00000… after this many tokens; writes PREFIX-manifest.json and resumes an interrupted run.",
)
@click.option(
    "--verify",
    type=click.IntRange(min=0),
    default=16,
    show_default=True,
    help="Check the engine against the reference engine on a sample from N places spread over the input (at least N documents, or lines for ids/tokens/jsonl): 64 KB at least, more while checking takes under 15% of the run; long documents on a prefix. Stop at the first difference, writing no output (0: off).",
)
@click.option("--force", is_flag=True, help="Overwrite existing outputs (and start a sharded run over).")
@click.option(
    "--dtype",
    type=click.Choice(["auto", "uint16", "uint32", "int32"]),
    default="auto",
    show_default=True,
    help="megatron/npy/bin: integer type (auto: uint16 if every id fits).",
)
@click.option(
    "--max-document-mb",
    type=click.IntRange(min=1),
    default=None,
    help="A document longer than this that cannot be cut safely is refused "
    "(default: 64, or 8 for a tokenizer that may never be cut, such as a SentencePiece .model).",
)
@click.option("--pair", is_flag=True, help="ids/tokens/jsonl: each input line is two sequences separated by a TAB.")
@click.option(
    "--add-special-tokens/--no-add-special-tokens",
    default=True,
    show_default=True,
    help="ids/tokens/jsonl: add the template's special tokens ([CLS]/[SEP], <s>/</s>) if the tokenizer has one.",
)
@click.option(
    "--max-length",
    type=click.IntRange(min=1),
    default=None,
    help="ids/tokens/jsonl: truncate every encoding to this many tokens (special tokens included).",
)
@click.option(
    "--no-truncation",
    "no_truncation",
    is_flag=True,
    help="ids/tokens/jsonl: do not apply the truncation set in the tokenizer's file (applied by default, "
    "as tokenizers does, with a warning).",
)
@click.option(
    "--no-padding",
    "no_padding",
    is_flag=True,
    help="ids/tokens/jsonl: do not apply the padding set in the tokenizer's file (applied by default, "
    "as tokenizers does, with a warning).",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=None,
    callback=cap_workers,
    help="Processes or threads that encode (default: all cores). Output is identical for any value.",
)
@click.option(
    "--batch-lines",
    type=click.IntRange(min=1),
    default=20000,
    show_default=True,
    help="ids/tokens/jsonl: lines read and encoded at a time (memory stays flat on huge files).",
)
@click.option("--progress/--no-progress", default=True, help="Show a progress bar on stderr when writing to a file.")
@click.option("--json", "as_json", is_flag=True, help="megatron/npy/bin: print a JSON summary on stdout.")
@cluster_options
@_blocks_without_cluster
def encode(
    tokenizer_path: str,
    files: tuple[str, ...],
    model_rule: str | None,
    dropout: float | None,
    sample_alpha: float | None,
    nbest_size: int,
    seed: int,
    output_format: str,
    out_path: Path | None,
    engine: str,
    document_mode: str,
    field: str | None,
    append_eos: str | None,
    no_append_eos: bool,
    prepend_bos: str | None,
    shard_tokens: int | None,
    verify: int,
    force: bool,
    dtype: str,
    max_document_mb: int | None,
    pair: bool,
    add_special_tokens: bool,
    max_length: int | None,
    no_truncation: bool,
    no_padding: bool,
    workers: int | None,
    batch_lines: int,
    progress: bool,
    as_json: bool,
    cluster: Any,
    verbose: bool = False,
    block_bytes: int | None = None,
) -> None:
    """Tokenize text: one output line per input line, or training data (Megatron, npy, bin).

    FILES default to standard input (or give -); .gz/.xz/.bz2 are read transparently.
    For training data, documents get no template ([CLS]…): plain ids, with --append-eos /
    --prepend-bos; documents with no token are dropped.

    With --cluster (megatron/npy/bin), the inputs (files, globs, directories, fsspec URLs) are
    cut into blocks of --block-size at document boundaries, and block i becomes shard
    PREFIX-0000i, encoded on a Dask worker and written straight into the output directory
    (which every worker must reach); PREFIX-manifest.json comes last. The ids are those of a
    local run; --block-size without --cluster writes the very same files here. Re-running
    resumes.

    \b
    Examples:
      echo "Hello world" | toktools encode -t bytebpe-50k
      toktools encode -t my-bert --format tokens notes.txt
      toktools encode -t my-bert --pair --max-length 128 --format jsonl pairs.tsv
      toktools encode -t bytebpe-50k --format npy -o train.npy corpus.txt
      toktools encode -t gpt2/ --format megatron -o out/web --document jsonl --field text \\
          --shard-tokens 100000000 'data/*.jsonl.gz'
      toktools encode -t gpt2/ --format megatron -o /shared/out/web --document jsonl \\
          --cluster tcp://scheduler:8786 --block-size 256MiB 's3://bucket/web/*.jsonl'
    """
    if out_path is not None and out_path.is_dir():
        raise click.UsageError(f"-o {out_path} is a directory; give a file name (a prefix for megatron)")
    given = _given_on_command_line()
    tokenizer: Any = tokenizer_with_rule(tokenizer_path, model_rule)
    tokenizer = tokenizer_with_sampling(tokenizer, model_rule, dropout, sample_alpha, nbest_size, seed)
    if output_format in CORPUS_FORMATS:
        if out_path is None:
            raise click.UsageError(f"--format {output_format} writes binary data: give an output file with -o")
        for name, value in (
            ("--pair", pair),
            ("--max-length", max_length is not None),
            ("--no-truncation", no_truncation),
            ("--no-padding", no_padding),
            ("--add-special-tokens/--no-add-special-tokens", "add_special_tokens" in given),
            ("--batch-lines", "batch_lines" in given),
        ):
            if value:
                raise click.UsageError(
                    f"{name} is for ids/tokens/jsonl; --format {output_format} writes whole documents"
                )
        if no_append_eos and append_eos is not None:
            raise click.UsageError("--append-eos and --no-append-eos contradict each other")
        if field is not None and document_mode != "jsonl":
            raise click.UsageError("--field is for --document jsonl")
        if output_format == "megatron" and dtype == "uint32":
            raise click.UsageError("--dtype uint32 is not available for --format megatron (uint16 or int32)")
        if shard_tokens is not None and (cluster is not None or block_bytes is not None):
            raise click.UsageError(
                f"--shard-tokens and --{'cluster' if cluster is not None else 'block-size'} contradict each "
                "other: there, each block of the input is one shard (size shards with --block-size)"
            )
        _encode_corpus(
            tokenizer,
            files,
            output_format,
            out_path,
            engine,
            document_mode,
            field,
            append_eos,
            no_append_eos,
            prepend_bos,
            shard_tokens,
            verify,
            force,
            dtype,
            max_document_mb,
            workers,
            progress,
            as_json,
            cluster,
            block_bytes,
            verbose,
        )
        return
    if cluster is not None or block_bytes is not None:
        raise click.UsageError(
            f"--{'cluster' if cluster is not None else 'block-size'} is for --format megatron, npy or bin"
        )
    for name, value in (
        ("--document", document_mode != "line"),
        ("--field", field is not None),
        ("--append-eos", append_eos is not None),
        ("--no-append-eos", no_append_eos),
        ("--prepend-bos", prepend_bos is not None),
        ("--shard-tokens", shard_tokens is not None),
        ("--dtype", dtype != "auto"),
        ("--max-document-mb", "max_document_mb" in given),
        ("--json", as_json),
    ):
        if value:
            raise click.UsageError(f"{name} is for --format megatron, npy or bin")
    if force and out_path is None:
        raise click.UsageError("--force replaces the output file: give it with -o")
    if no_truncation and max_length is not None:
        raise click.UsageError("--no-truncation and --max-length contradict each other")
    if engine == "tiktoken" and (output_format == "jsonl" or pair):
        what = "--format jsonl (it gives no offsets)" if output_format == "jsonl" else "--pair"
        raise click.UsageError(f"--engine tiktoken cannot write {what}")
    from toktools.corpus.encode import encode_corpus

    encode_corpus(
        list(files) or ["-"],
        tokenizer,
        out_path,
        format=output_format,
        engine=engine,
        pair=pair,
        add_special_tokens=add_special_tokens,
        max_length=max_length,
        workers=workers,
        batch_lines=batch_lines,
        force=force,
        verify=verify,
        truncation=not no_truncation,
        padding=not no_padding,
    )


def _given_on_command_line() -> set[str]:
    """The parameters the user typed (not defaults): an option that does not apply to the chosen
    format is a usage error only when given."""
    ctx = click.get_current_context()
    return {name for name in ctx.params if ctx.get_parameter_source(name) == click.core.ParameterSource.COMMANDLINE}


def _encode_corpus(
    tokenizer_path: Any,
    files: tuple[str, ...],
    output_format: str,
    out_path: Path,
    engine: str,
    document_mode: str,
    field: str | None,
    append_eos: str | None,
    no_append_eos: bool,
    prepend_bos: str | None,
    shard_tokens: int | None,
    verify: int,
    force: bool,
    dtype: str,
    max_document_mb: int | None,
    workers: int | None,
    progress: bool,
    as_json: bool,
    cluster: Any = None,
    block_bytes: int | None = None,
    verbose: bool = False,
) -> None:
    """megatron/npy/bin: an adapter over :func:`toktools.encode_corpus`."""
    import json

    from toktools.corpus.encode import encode_corpus
    from toktools.engines.choice import EXACTNESS

    eos: bool | str | None = False if no_append_eos else (None if append_eos is None else (append_eos or True))
    bos: bool | str = False if prepend_bos is None else (prepend_bos or True)
    with _corpus_progress(progress) as callback:
        result = encode_corpus(
            list(files) or ["-"],
            tokenizer_path,
            out_path,
            format=output_format,
            engine=engine,
            document=document_mode,
            field=field,
            append_eos=eos,
            prepend_bos=bos,
            shard_tokens=shard_tokens,
            workers=workers,
            verify=verify,
            progress=callback,
            force=force,
            dtype=dtype,
            max_document_bytes=None if max_document_mb is None else max_document_mb << 20,
            cluster=cluster,
            block_bytes=block_bytes,
        )
    summary = {
        "engine": result.engine,
        "exactness": EXACTNESS.get(result.engine),
        "documents": result.documents,
        "tokens": result.tokens,
        "shards_written": result.shards_written,
        "shards_kept": result.shards_kept,
        "verified": result.verified,
        "verified_bytes": result.verified_bytes,
        "input_bytes": result.input_bytes,
        "seconds": round(result.seconds, 3),
        "outputs": [str(p) for p in result.outputs],
        "manifest": str(result.manifest) if result.manifest else None,
    }
    if as_json:
        sys.stdout.write(json.dumps(summary, indent=2) + "\n")
    elif result.shards_kept and not result.shards_written:  # a finished run, run again: no engine, nothing read
        sys.stderr.write(
            f"nothing to do: {result.shards_kept} shard{'s' if result.shards_kept != 1 else ''} kept "
            f"({result.documents:,} documents, {result.tokens:,} tokens; {result.manifest}); --force starts over\n"
        )
    else:
        kept = f" ({result.shards_kept} kept from an earlier run)" if result.shards_kept else ""
        # (standard input has no size on disk: no speed rather than "0.0 MB/s")
        speed = (
            f", {result.input_bytes / result.seconds / 1e6:.1f} MB/s" if result.seconds and result.input_bytes else ""
        )
        exact = f" ({EXACTNESS[result.engine]})" if result.engine in EXACTNESS else ""
        sys.stderr.write(
            f"{result.documents:,} documents, {result.tokens:,} tokens in {len(result.outputs) // 2} "
            f"file pair(s){kept}; engine {result.engine}{exact}, {result.verified} verified{speed}\n"
        )
    if verbose and result.why:
        sys.stderr.write(f"engine {result.engine}: {result.why}\n")


def _corpus_progress(enabled: bool) -> Any:
    """Bytes read of the total, MB/s, tokens written and ETA on stderr (a terminal only)."""
    from contextlib import contextmanager

    @contextmanager
    def bar() -> Iterator[Any]:
        if not enabled or not sys.stderr.isatty():
            yield None
            return
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
            TransferSpeedColumn,
        )

        with Progress(
            TextColumn("[bold]encoding"),
            BarColumn(),
            DownloadColumn(),
            TransferSpeedColumn(),
            TextColumn("{task.fields[tokens]} tokens"),
            TimeRemainingColumn(),
            console=Console(stderr=True),
        ) as progress:
            task = progress.add_task("encode", total=None, tokens="0")

            def update(done: int, total: int, tokens: int) -> None:
                progress.update(task, completed=done, total=total or None, tokens=f"{tokens:,}")

            yield update

    return bar()


@click.command()
@quiet_option
@click.option(
    "-t",
    "--tokenizer",
    "tokenizer_path",
    required=True,
    help="Tokenizer directory or file, or a shipped vocabulary name.",
)
@click.argument("files", nargs=-1)
@click.option(
    "--skip-special-tokens/--keep-special-tokens",
    default=True,
    show_default=True,
    help="Drop special tokens ([CLS], <s>, ...) from the text.",
)
def decode(tokenizer_path: str, files: tuple[str, ...], skip_special_tokens: bool) -> None:
    """Turn ids back into text: one line of space-separated ids per output line.

    \b
    Examples:
      echo "15496 995" | toktools decode -t my-bpe
      toktools encode -t my-bert notes.txt | toktools decode -t my-bert
    """
    from toktools.formats import load

    tokenizer = load(tokenizer_path)
    for number, line in enumerate(input_lines(files or ("-",)), start=1):
        try:
            ids = [int(item) for item in line.split()]
        except ValueError:
            raise ToktoolsError(f"line {number}: expected space-separated integer ids, got {line[:60]!r}") from None
        sys.stdout.write(tokenizer.decode(ids, skip_special_tokens=skip_special_tokens).replace("\n", "\\n") + "\n")
