"""`toktools compare`: several tokenizers on the same text or corpus, side by side."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from toktools.commands._shared import (
    cluster_options,
    echo_plain_or_rich,
    model_rule_option,
    progress_bars,
    quiet_option,
    stdout_console,
)
from toktools.errors import ToktoolsError

_STYLES = [
    (r"\|", "bold cyan"),
    (r"\^+", "bold red"),
    (r"[0-9A-F]{2}(?:[ |¦][0-9A-F]{2})+", "magenta"),
    (r"\\(?:[nrt]|x[0-9a-f]{2}|u[0-9a-f]{4}|U[0-9a-f]{8})", "yellow"),
    (r"(?m)^(?:legend|line \d+)\b", "bold"),
]


#: Files that name a tokenizer by their folder (``…/gpt2/tokenizer.json`` is ``gpt2``).
def _labels(names: list[str]) -> list[str]:
    """Row labels: a path's last part (``../shared/vocabs-ref/gpt2`` → ``gpt2``,
    ``…/gpt2/tokenizer.json`` → ``gpt2``), kept distinct (``gpt2/vocab.json``) where two meet."""
    from toktools.analysis.labels import short_names

    return short_names(names)


def _looks_like_tokenizer(argument: str) -> bool:
    from toktools.formats import resolve

    try:
        resolve(argument)
    except ToktoolsError:
        return False
    return True


class _CompareCommand(click.Command):
    """``--parallel FILE FILE [FILE...]`` takes every argument after it up to the next option:
    the files, set apart from the tokenizers before click parses the rest."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if "--parallel" in args:
            at = args.index("--parallel")
            end = at + 1
            while end < len(args) and (args[end] == "-" or not args[end].startswith("-")):
                end += 1
            ctx.meta["parallel_files"] = args[at + 1 : end]
            args = [*args[: at + 1], *args[end:]]
        return super().parse_args(ctx, args)


@click.command(cls=_CompareCommand)
@quiet_option
@click.argument("arguments", nargs=-1, required=True, metavar="TOK... [TEXT | -]")
@click.option(
    "--corpus",
    "corpus_paths",
    multiple=True,
    help="Compare on this corpus instead of one text (repeatable; files, directories, globs, - for "
    "standard input; .gz/.xz/.bz2 read transparently).",
)
@click.option(
    "--file", "file_paths", multiple=True, hidden=False, help="Deprecated alias of --corpus (kept so old scripts run)."
)
@click.option("--field", "json_field", default=None, help="Read JSON Lines and take each document from this field.")
@click.option(
    "--errors",
    type=click.Choice(["strict", "replace", "skip"]),
    default="strict",
    show_default=True,
    help="What to do with invalid UTF-8 in the corpus.",
)
@click.option(
    "--show",
    type=click.IntRange(min=0),
    default=3,
    show_default=True,
    help="With --corpus: show the N places (windows of at most ±40 characters) where the most token "
    "boundaries differ, as token boxes per tokenizer.",
)
@click.option(
    "--sample",
    type=click.IntRange(min=1),
    default=None,
    help="With --corpus: read only N documents, spread evenly over the corpus.",
)
@click.option(
    "--plot",
    "plot_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="With --corpus: draw sequence lengths, tokens per word and token lengths into this .png/.svg/.pdf.",
)
@click.option(
    "--width",
    type=click.IntRange(min=20),
    default=None,
    help="Wrap the aligned rows of a TEXT at this many columns (default: terminal width; the --show "
    "places of a corpus are one line per tokenizer).",
)
@click.option(
    "--bytes/--no-bytes",
    "byte_view",
    default=False,
    help="Add a block with the UTF-8 bytes of every multi-byte character (the aligned view of a TEXT).",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=None,
    help="Processes that encode large batches (default: all cores).",
)
@click.option(
    "--renyi-alpha",
    type=click.FloatRange(min=0, min_open=True),
    default=2.5,
    show_default=True,
    help="With --corpus: the order α of the Rényi efficiency.",
)
@click.option(
    "--unused",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="With --corpus: list N tokens of each vocabulary never seen in the corpus, longest first.",
)
@click.option(
    "--parallel",
    "parallel",
    is_flag=True,
    help="--parallel FILE FILE [FILE...]: line-aligned files of the same text in several languages; "
    "report each language's token premium over the first file's, per tokenizer, and the fairest tokenizer.",
)
@click.option("--progress/--no-progress", default=True, help="Show a progress bar on stderr (only on a terminal).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output: every statistic and histogram.")
@click.option(
    "--markdown",
    "as_markdown",
    is_flag=True,
    help="Print the tables as Markdown (for READMEs and papers); aligned text goes in a fenced block.",
)
@click.option(
    "--html",
    "html_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write a self-contained HTML page (tables, pictures, the shown places as token boxes).",
)
@cluster_options
@model_rule_option
def compare(
    arguments: tuple[str, ...],
    corpus_paths: tuple[str, ...],
    file_paths: tuple[str, ...],
    json_field: str | None,
    errors: str,
    show: int,
    sample: int | None,
    plot_path: Path | None,
    width: int | None,
    byte_view: bool,
    workers: int | None,
    renyi_alpha: float,
    unused: int,
    parallel: bool,
    progress: bool,
    as_json: bool,
    as_markdown: bool,
    html_path: Path | None,
    cluster: Any,
    model_rule: str | None,
) -> None:
    """How several tokenizers cut the same text or corpus, side by side.

    On a TEXT (the last argument; - reads it from standard input): one row per tokenizer,
    aligned on characters, then the metrics. On a corpus (--corpus): the metrics over every
    document, sequence lengths, and the --show places where the tokenizers disagree most.

    \b
    The aligned view:
      |cut|     token boundaries; | cut| a space inside the bars belongs to the token (GPT-2's Ġ)
      un·aff    no boundary in this row (another tokenizer cuts there)
      ^^^       the region the tokenizers cut differently
      ?☃?       an unknown token (UNK)
      E6 88¦91  a character cut between byte-level tokens (at ¦), as its UTF-8 bytes
      \\u200d    invisible characters (controls, zero-width joiners...), escaped

    \b
    Definitions (one each):
      document     a non-blank line without its line ending, or a JSON Lines record (--field)
      chars/token  characters (code points, spaces included) / tokens
      bytes/token  UTF-8 bytes (spaces included) / tokens
      word         a run of non-whitespace characters; inside it, each run of Chinese characters is
                   cut by jieba's dictionary (the one of whole-word masking), each character of
                   kana, Thai, Lao, Khmer or Myanmar is a word, the rest stays whole; the report
                   says which segmentation made the words (whitespace / jieba / per character)
      tokens/word  tokens / words (fertility)
      split words  words with more than one token, "continued words" (a token belongs to the word
                   of its last character)
      UNK          unknown tokens / tokens; a warning line from 1 %
      byte fallback
                   byte-fallback tokens (<0xE6>, models with byte_fallback) / tokens
      chars/token known
                   (characters - those inside UNK or byte-fallback tokens) / (tokens - UNK and
                   byte-fallback tokens): chars/token on the text the vocabulary covers
      byte pieces  characters that end up in byte pieces (tokens holding part of a character) / characters
      sequence     tokens per document plus the special tokens added to one sequence ([CLS] [SEP]);
                   p50/p90/p99 are nearest-rank percentiles; >512 is the share of documents longer
                   than 512 tokens, i.e. that a BERT-size model truncates
      Shannon eff. entropy of the token distribution / log2(vocabulary size)
      Rényi eff.   Rényi entropy of order α, log2(Σ p^α)/(1-α), / log2(vocabulary size)
                   (Zouhar et al. 2023; as tokenization-scorer with vocab = the vocabulary size)
      seen         ids of the vocabulary (added tokens included) that occur / vocabulary size;
                   seen ≥10: ids that occur at least 10 times / vocabulary size
      zh chars     of the corpus's 3,500 most frequent Chinese characters, the share encoded
                   alone as one token (not UNK, not byte pieces; a lone ▁ before it not counted)
      place        (--show) at most 81 characters of one document: the window holding the
                   most differing boundaries (positions where some but not all tokenizers end
                   a token inside a word or start a byte piece), centred on them; places are
                   ranked by that count, then the earlier document; places never overlap
    Tokens are counted without special tokens, truncation or padding.

    \b
    With --parallel FILE FILE [FILE...] (line-aligned: line i is the same text in every file):
      premium      a line's tokens in a language / its tokens in the first file's; a line
                   counts only where both are non-blank and have tokens (else it is skipped,
                   and the skipped lines are counted); mean and median over the lines
      spread       a tokenizer's largest mean premium / its smallest (the first file's is 1)
      fairest      the tokenizer with the smallest spread (1: every language costs the same)

    \b
    Examples:
      toktools compare wordpiece-30k bytebpe-50k "Tokenizers cut unaffable words"
      echo "我是中国人" | toktools compare bytebpe-50k ../gpt2 -
      toktools compare wordpiece-30k bytebpe-50k ../bert --corpus heldout.txt.gz --show 5
      toktools compare A B --corpus data.jsonl --field text --sample 10000 --plot report.png
      toktools compare A B --corpus heldout.txt --json > stats.json
      toktools compare A B C --parallel en.txt zh.txt --html parity.html
      toktools compare A B --corpus 's3://bucket/corpus/*.txt' --cluster tcp://scheduler:8786
    """
    import json

    from toktools.formats import load

    corpus = list(corpus_paths) + list(file_paths)
    names = list(arguments)
    ctx = click.get_current_context()
    if as_json and as_markdown:
        raise click.UsageError("--json and --markdown are two output formats: choose one")
    if parallel:
        _parallel(ctx, names, ctx.meta.get("parallel_files", []), corpus, as_json, as_markdown, html_path, model_rule)
        return
    given = {name for name in ctx.params if ctx.get_parameter_source(name) == click.core.ParameterSource.COMMANDLINE}
    if as_json:
        for name, flag in (("byte_view", "--bytes/--no-bytes"), ("width", "--width")):
            if name in given:
                raise click.UsageError(f"{flag} shapes the aligned text view: it does not go with --json")
    if not corpus:
        for name, flag in (("show", "--show"), ("errors", "--errors"), ("workers", "--workers")):
            if name in given:
                raise click.UsageError(f"{flag} needs --corpus")
    if cluster is not None and not corpus:
        raise click.UsageError("--cluster works on a corpus: give --corpus")
    if cluster is not None and sample is not None:
        raise click.UsageError("--sample reads a few documents here: it does not go with --cluster")
    if corpus:
        if len(names) < 1:
            raise click.UsageError("give at least one tokenizer to compare")
        if plot_path is not None:
            from toktools.analysis.plots import check_plot, require_matplotlib
            from toktools.formats import resolve
            from toktools.io.outputs import input_files

            require_matplotlib()
            check_plot(plot_path, [*corpus, *(f for name in names for f in input_files(resolve(name)))])
        _check_html(html_path, names, corpus)
        loaded = [(label, load(name, model_rule=model_rule)) for label, name in zip(_labels(names), names)]
        from toktools.analysis.corpus_compare import compare_corpus

        with progress_bars(progress) as callback:
            result = compare_corpus(
                loaded,
                corpus,
                json_field=json_field,
                errors=errors,  # type: ignore[arg-type]
                show=show,
                sample=sample,
                workers=workers,
                cluster=cluster,
                renyi_alpha=renyi_alpha,
                unused=unused,
                progress=None if callback is None else lambda d, t: callback("read", d, t),
            )
        if plot_path is not None:
            from toktools.analysis.plots import plot_comparison

            plot_comparison(result.metrics, plot_path)
            click.echo(f"wrote {plot_path}", err=True)
        _write_html(html_path, result.to_dict())
        if as_json:
            click.echo(json.dumps(result.to_dict(), ensure_ascii=False, indent=2))
            return
        if as_markdown:
            click.echo(result.render_plain(width=_width(width), byte_view=byte_view, markdown=True))
            return
        _echo_corpus(result, _width(width), byte_view)
        return
    if plot_path is not None or sample is not None or json_field is not None:
        raise click.UsageError("--plot, --sample and --field need --corpus")
    if len(names) < 2 or _looks_like_tokenizer(names[-1]) and names[-1] != "-":
        raise click.UsageError(
            "no text to compare: give TEXT as the last argument, - to read it from standard input, or --corpus FILE"
        )
    text = names.pop()
    if text == "-":  # strict UTF-8, with the line of a bad byte
        from toktools.corpus.reading import read_lines

        text = "".join(read_lines(["-"], keep_ends=True))
        text = text[:-1] if text.endswith("\n") else text
    else:
        _check_argument_text(text)
    from toktools.analysis.comparison import compare

    _check_html(html_path, names, [])
    loaded = [(label, load(name, model_rule=model_rule)) for label, name in zip(_labels(names), names)]
    comparison = compare(loaded, text)
    _write_html(html_path, comparison.to_dict())
    if as_json:
        click.echo(json.dumps(comparison.to_dict(), ensure_ascii=False, indent=2))
        return
    if as_markdown:
        click.echo(comparison.render_plain(width=_width(width), byte_view=byte_view, markdown=True))
        return
    echo_plain_or_rich(comparison.render_plain(width=_width(width), byte_view=byte_view), _STYLES)


def _parallel(
    ctx: click.Context,
    names: list[str],
    files: list[str],
    corpus: list[str],
    as_json: bool,
    as_markdown: bool,
    html_path: Path | None,
    model_rule: str | None,
) -> None:
    """``--parallel``: the token premiums of line-aligned files (toktools.analysis.parallel)."""
    import json

    from toktools.analysis.parallel import LineCountMismatch, parallel_parity
    from toktools.formats import load

    given = {n for n in ctx.params if ctx.get_parameter_source(n) == click.core.ParameterSource.COMMANDLINE}
    for name, flag in (("show", "--show"), ("plot_path", "--plot"), ("sample", "--sample"), ("json_field", "--field")):
        if name in given:
            raise click.UsageError(f"{flag} goes with --corpus, not with --parallel")
    if corpus:
        raise click.UsageError("--parallel and --corpus are two different comparisons: give one")
    if len(files) < 2:
        raise click.UsageError("--parallel needs two or more line-aligned files after it: --parallel en.txt zh.txt")
    if not names:
        raise click.UsageError("give at least one tokenizer to compare")
    _check_html(html_path, names, files)
    loaded = [(label, load(name, model_rule=model_rule)) for label, name in zip(_labels(names), names)]
    try:
        parity = parallel_parity(loaded, files)
    except LineCountMismatch as err:
        click.echo(f"toktools: error: {err}", err=True)
        ctx.exit(2)
    report = {"parallel": parity.to_dict()}
    _write_html(html_path, report)
    if as_json:
        click.echo(json.dumps(report, ensure_ascii=False, indent=2))
        return
    if as_markdown:
        click.echo(parity.render_plain(markdown=True))
        return
    echo_plain_or_rich(parity.render_plain())


def _echo_corpus(result: Any, width: int, byte_view: bool) -> None:
    """The places as coloured token boxes on a colour terminal (plain ``|`` boxes otherwise),
    then the tables."""
    console = stdout_console()
    if result.shown and not console.no_color and console.is_terminal:
        from toktools.analysis.disagreement import render_places_rich

        console.print(render_places_rich(result.shown, len(result.sources) > 1), end="")
        echo_plain_or_rich("\n" + result.render_plain(width=width, byte_view=byte_view, places=False), _STYLES)
        return
    echo_plain_or_rich(result.render_plain(width=width, byte_view=byte_view), _STYLES)


def _check_html(path: Path | None, names: list[str], corpus: list[str]) -> None:
    """Before any work: an HTML report that can be written, never over an input."""
    if path is not None:
        from toktools.formats import resolve
        from toktools.io.outputs import check_output_file, input_files

        inputs: list[str | Path] = [*corpus, *(f for name in names for f in input_files(resolve(name)))]
        check_output_file(path, force=True, inputs=inputs, what="HTML report")


def _write_html(path: Path | None, report: dict[str, Any]) -> None:
    if path is not None:
        from toktools.analysis.html_report import write_html

        write_html(report, path)
        click.echo(f"wrote {path}", err=True)


def _check_argument_text(text: str) -> None:
    """A TEXT argument that was not valid UTF-8 reaches Python with its bad bytes as lone
    surrogates (``surrogateescape``): refuse it in one line, naming the byte."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as err:
        char = ord(text[err.start])
        byte = f"byte 0x{char - 0xDC00:02X}" if 0xDC80 <= char <= 0xDCFF else f"U+{char:04X}"
        raise ToktoolsError(f"the text to compare is not valid UTF-8 ({byte} at character {err.start + 1})") from None


def _width(width: int | None) -> int:
    console = stdout_console()
    return width or (console.width if console.is_terminal else 100)
