"""The ``toktools`` command line: parses options, calls the library, renders results.

No algorithm lives here. Results go to stdout; progress and diagnostics to stderr. Every
:class:`~toktools.errors.ToktoolsError` becomes one readable line on stderr and exit code 1.
Heavy modules are imported inside the commands so that ``toktools --help`` starts fast.
"""
from __future__ import annotations

import os
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Sequence

import click

from toktools import __version__
from toktools.errors import ToktoolsError


class ToktoolsGroup(click.Group):
    """A group that turns our errors (and Ctrl-C) into one line without a traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except ToktoolsError as err:
            click.echo(f"toktools: error: {err}", err=True)
            ctx.exit(1)
        except KeyboardInterrupt:
            click.echo("toktools: interrupted", err=True)
            ctx.exit(130)
        except BrokenPipeError:
            # `toktools encode big.txt | head`: the reader went away; that is not an error.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            ctx.exit(0)


@click.group(cls=ToktoolsGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="toktools")
def main() -> None:
    """Train, run and compare WordPiece and byte-level BPE tokenizers.

    \b
    Examples:
      toktools train bytebpe corpus.txt -o my-bpe --vocab-size 50000
      echo "Hello world" | toktools encode -t my-bpe --format tokens
    """


# ---------------------------------------------------------------------------------------------
# progress
# ---------------------------------------------------------------------------------------------


@contextmanager
def _progress(enabled: bool) -> Iterator[Any]:
    """A rich progress display on stderr: bytes read, then merges. Yields a callback
    ``(stage, done, total)`` or None when disabled or stderr is not a terminal."""
    if not enabled or not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    console = Console(stderr=True)
    tasks: dict[str, Any] = {}
    with Progress(TextColumn("[bold]{task.description:<8}"), BarColumn(), TextColumn("{task.fields[amount]}"),
                  TimeElapsedColumn(), TimeRemainingColumn(), console=console, transient=False) as progress:
        def update(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                tasks[stage] = progress.add_task("reading" if stage == "read" else "merging", total=total or None, amount="")
            amount = f"{done / 1e6:.1f}/{total / 1e6:.1f} MB" if stage == "read" else f"{done}/{total} merges"
            progress.update(tasks[stage], completed=done, total=total or None, amount=amount)
        yield update


# ---------------------------------------------------------------------------------------------
# train
# ---------------------------------------------------------------------------------------------


@main.group()
def train() -> None:
    """Train a vocabulary from corpora (reference or fast backend).

    \b
    Examples:
      toktools train bytebpe wiki.txt.gz -o my-bpe --vocab-size 50000 --special-tokens "<s>,<pad>,</s>,<unk>,<mask>"
    """


def _split_list(value: str | None) -> list[str]:
    return [item for item in (value or "").split(",") if item]


def _prepare_output(out_dir: Path, force: bool, names: Sequence[str]) -> None:
    existing = [name for name in names if (out_dir / name).exists()]
    if existing and not force:
        raise ToktoolsError(f"{out_dir} already holds {', '.join(existing)}; use --force to overwrite")


@train.command("bytebpe")
@click.argument("corpus", nargs=-1, required=True)
@click.option("-o", "--output", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path), help="Directory to write vocab.json, merges.txt and tokenizer.json into.")
@click.option("--vocab-size", default=30000, show_default=True, type=click.IntRange(min=1), help="Size of the vocabulary, special tokens and alphabet included.")
@click.option("--min-frequency", default=2, show_default=True, type=click.IntRange(min=0), help="Stop merging when the best pair is rarer than this.")
@click.option("--special-tokens", default="", help="Comma-separated special tokens; they get the first ids, in order.")
@click.option("--limit-alphabet", type=click.IntRange(min=0), default=None, help="Keep at most this many initial characters (the most frequent).")
@click.option("--max-token-length", type=click.IntRange(min=1), default=None, help="Do not create tokens of this many bytes or more (tokenizers' semantics).")
@click.option("--add-prefix-space/--no-add-prefix-space", default=False, show_default=True, help="Prefix every line with a space (RoBERTa style).")
@click.option("--backend", type=click.Choice(["reference", "fast"]), default="reference", show_default=True, help="reference: toktools' pure Python; fast: HuggingFace tokenizers.")
@click.option("--workers", type=click.IntRange(min=1), default=None, help="Processes that count words (default: all cores). Output is identical for any value.")
@click.option("--errors", type=click.Choice(["strict", "replace", "skip"]), default="strict", show_default=True, help="What to do with invalid UTF-8 in the corpus.")
@click.option("--field", "json_field", default=None, help="Read JSON Lines and take the text from this field.")
@click.option("--force", is_flag=True, help="Overwrite files already in the output directory.")
@click.option("--progress/--no-progress", default=True, help="Show a progress bar on stderr (only on a terminal).")
def train_bytebpe_command(corpus: tuple[str, ...], out_dir: Path, vocab_size: int, min_frequency: int, special_tokens: str,
                          limit_alphabet: int | None, max_token_length: int | None, add_prefix_space: bool, backend: str,
                          workers: int | None, errors: str, json_field: str | None, force: bool, progress: bool) -> None:
    """Train a byte-level BPE (GPT-2 / RoBERTa style) vocabulary.

    Writes vocab.json, merges.txt and tokenizer.json into the output directory. CORPUS is one
    or more files (plain, .gz, .xz, .bz2), directories, or - for standard input.

    \b
    Examples:
      toktools train bytebpe wiki.txt -o my-bpe --vocab-size 8000
      zcat wiki.txt.gz | toktools train bytebpe - -o my-bpe --special-tokens "<|endoftext|>"
    """
    from toktools import corpus as corpus_module

    names = ("vocab.json", "merges.txt", "tokenizer.json")
    _prepare_output(out_dir, force, names)
    specials = _split_list(special_tokens)
    started = time.perf_counter()
    if backend == "fast":
        if json_field or "-" in corpus or errors != "strict":
            raise ToktoolsError("--backend fast reads plain files only (no -, --field or --errors)")
        from toktools import fast

        sources = corpus_module.expand_sources(list(corpus))
        try:
            hf = fast.train_bytebpe([s.path for s in sources], vocab_size, min_frequency, specials,
                                    add_prefix_space=add_prefix_space, limit_alphabet=limit_alphabet,
                                    max_token_length=max_token_length)
        except Exception as err:  # tokenizers raises plain Exceptions
            raise ToktoolsError(f"tokenizers failed: {err}") from None
        from toktools.formats import from_tokenizer_json
        import json

        tokenizer = from_tokenizer_json(json.loads(hf.to_str()))
    else:
        import toktools

        if vocab_size < len(specials) + 256 and limit_alphabet is None:
            click.echo(f"toktools: note: vocab size {vocab_size} is below specials + 256 byte symbols; no merges will be learnt", err=True)
        with _progress(progress) as callback:
            tokenizer = toktools.train_bytebpe(list(corpus), vocab_size, min_frequency, specials,
                                               limit_alphabet=limit_alphabet, max_token_length=max_token_length,
                                               add_prefix_space=add_prefix_space, workers=workers,
                                               errors=errors, json_field=json_field,  # type: ignore[arg-type]
                                               progress=callback)
    written = tokenizer.save(out_dir)
    elapsed = time.perf_counter() - started
    _summary(tokenizer, written, elapsed, backend)


@train.command("wordpiece")
@click.argument("corpus", nargs=-1, required=True)
@click.option("-o", "--output", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path), help="Directory to write vocab.txt and tokenizer.json into.")
@click.option("--vocab-size", default=30000, show_default=True, type=click.IntRange(min=1), help="Size of the vocabulary, special tokens and alphabet included.")
@click.option("--min-frequency", default=2, show_default=True, type=click.IntRange(min=0), help="Stop merging when the best pair is rarer than this.")
@click.option("--special-tokens", default="[PAD],[UNK],[CLS],[SEP],[MASK]", show_default=True, help="Comma-separated special tokens; they get the first ids, in order.")
@click.option("--limit-alphabet", type=click.IntRange(min=0), default=1000, show_default=True, help="Keep at most this many initial characters (the most frequent; ties: lower code point).")
@click.option("--lowercase/--cased", default=True, show_default=True, help="Lower-case (and strip accents) like bert-base-uncased, or keep case.")
@click.option("--strip-accents/--keep-accents", default=None, help="Strip accents (default: same as --lowercase).")
@click.option("--algorithm", type=click.Choice(["bpe", "likelihood"]), default="bpe", show_default=True, help="bpe: what tokenizers trains (merges by pair count); likelihood: the original WordPiece score f(ab)/(f(a)f(b)).")
@click.option("--min-pair-frequency", type=click.IntRange(min=1), default=None, help="likelihood only: pairs rarer than this are never merged (default: max(2, --min-frequency)).")
@click.option("--backend", type=click.Choice(["reference", "fast"]), default="reference", show_default=True, help="reference: toktools' pure Python; fast: HuggingFace tokenizers.")
@click.option("--workers", type=click.IntRange(min=1), default=None, help="Processes that count words (default: all cores). Output is identical for any value.")
@click.option("--errors", type=click.Choice(["strict", "replace", "skip"]), default="strict", show_default=True, help="What to do with invalid UTF-8 in the corpus.")
@click.option("--field", "json_field", default=None, help="Read JSON Lines and take the text from this field.")
@click.option("--force", is_flag=True, help="Overwrite files already in the output directory.")
@click.option("--progress/--no-progress", default=True, help="Show a progress bar on stderr (only on a terminal).")
def train_wordpiece_command(corpus: tuple[str, ...], out_dir: Path, vocab_size: int, min_frequency: int, special_tokens: str,
                            limit_alphabet: int, lowercase: bool, strip_accents: bool | None, algorithm: str,
                            min_pair_frequency: int | None, backend: str, workers: int | None, errors: str,
                            json_field: str | None, force: bool, progress: bool) -> None:
    """Train a BERT WordPiece vocabulary (vocab.txt + tokenizer.json).

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
    from toktools import corpus as corpus_module

    _prepare_output(out_dir, force, ("vocab.txt", "tokenizer.json"))
    specials = _split_list(special_tokens)
    started = time.perf_counter()
    if backend == "fast":
        if json_field or "-" in corpus or errors != "strict" or algorithm != "bpe":
            raise ToktoolsError("--backend fast reads plain files only and trains the bpe algorithm")
        from toktools import fast

        sources = corpus_module.expand_sources(list(corpus))
        try:
            hf = fast.train_wordpiece([s.path for s in sources], vocab_size, min_frequency, specials,
                                      limit_alphabet=limit_alphabet, lowercase=lowercase, strip_accents=strip_accents)
        except Exception as err:  # tokenizers raises plain Exceptions
            raise ToktoolsError(f"tokenizers failed: {err}") from None
        from toktools.wordpiece import WordPieceTokenizer, loads_vocab_txt

        tokenizer = WordPieceTokenizer.bert(loads_vocab_txt(fast.wordpiece_vocab_txt(hf)), lowercase=lowercase,
                                            strip_accents=strip_accents)
        tokenizer.add_special_tokens(specials)
    else:
        import toktools

        with _progress(progress) as callback:
            tokenizer = toktools.train_wordpiece(list(corpus), vocab_size, min_frequency, specials,
                                                 limit_alphabet=limit_alphabet, lowercase=lowercase,
                                                 strip_accents=strip_accents, algorithm=algorithm,
                                                 min_pair_frequency=min_pair_frequency, workers=workers,
                                                 errors=errors, json_field=json_field,  # type: ignore[arg-type]
                                                 progress=callback)
    written = tokenizer.save(out_dir)
    _summary(tokenizer, written, time.perf_counter() - started, backend)


def _summary(tokenizer: Any, written: Sequence[Path], elapsed: float, backend: str) -> None:
    merges = getattr(tokenizer, "merges", None)
    detail = f", {len(merges)} merges" if merges is not None else ""
    lines = [f"trained {tokenizer.kind} ({backend}) in {elapsed:.1f}s: {tokenizer.vocab_size} tokens{detail}"]
    if merges:
        lines.append("first merges: " + ", ".join(f"{a} {b}" for a, b in merges[:5]))
    lines.append("wrote " + ", ".join(str(p) for p in written))
    for line in lines:
        click.echo(line, err=True)


# ---------------------------------------------------------------------------------------------
# encode
# ---------------------------------------------------------------------------------------------


@main.command()
@click.option("-t", "--tokenizer", "tokenizer_path", required=True, help="Tokenizer directory or file (tokenizer.json, vocab.json + merges.txt, vocab.txt).")
@click.argument("files", nargs=-1)
@click.option("--format", "output_format", type=click.Choice(["ids", "tokens"]), default="ids", show_default=True, help="Print ids or token strings.")
@click.option("--add-special-tokens/--no-add-special-tokens", default=True, show_default=True, help="Add the template's special tokens ([CLS]/[SEP], <s>/</s>) if the tokenizer has one.")
def encode(tokenizer_path: str, files: tuple[str, ...], output_format: str, add_special_tokens: bool) -> None:
    """Tokenize text: one output line per input line (ids or tokens, space-separated).

    FILES default to standard input (or give -).

    \b
    Examples:
      echo "Hello world" | toktools encode -t my-bpe
      toktools encode -t my-bpe --format tokens notes.txt
    """
    from toktools.formats import load

    tokenizer = load(tokenizer_path)
    out = sys.stdout
    for line in _input_lines(files or ("-",)):
        encoding = tokenizer.encode(line, add_special_tokens=add_special_tokens)
        items = encoding.ids if output_format == "ids" else encoding.tokens
        out.write(" ".join(map(str, items)) + "\n")
    out.flush()


def _input_lines(files: Sequence[str]) -> Iterator[str]:
    """Lines of the inputs without their ``\\n`` (``\\r`` is kept: it is part of the text)."""
    for name in files:
        if name == "-":
            stream = sys.stdin.buffer
        else:
            try:
                stream = open(name, "rb")
            except FileNotFoundError:
                raise ToktoolsError(f"input file not found: {name}") from None
            except IsADirectoryError:
                raise ToktoolsError(f"{name} is a directory, not a text file") from None
        try:
            for number, raw in enumerate(stream, start=1):
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as err:
                    raise ToktoolsError(f"{name}, line {number}: invalid UTF-8 (byte 0x{raw[err.start]:02X})") from None
                yield line[:-1] if line.endswith("\n") else line
        finally:
            if name != "-":
                stream.close()


if __name__ == "__main__":  # pragma: no cover
    main()
