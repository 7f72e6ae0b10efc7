"""`toktools inspect`: vocabulary statistics, or everything about one token."""

from __future__ import annotations

from pathlib import Path

import click

from toktools.commands._shared import echo_plain_or_rich, input_lines, quiet_option


@click.command()
@quiet_option
@click.argument("tokenizer_path", metavar="TOK")
@click.option(
    "--token",
    "token",
    default=None,
    help="Show one token, given as its token string (Ġworld, ##ing, ▁the) or the text it stands for: "
    '" world" for byte-level BPE, " the" for sentencepiece (▁). Never read as an id: use --id.',
)
@click.option("--id", "token_id", type=int, default=None, help="Show the token with this id.")
@click.option(
    "--corpus",
    "corpus_files",
    multiple=True,
    help="Add vocabulary use on this text (repeatable; - for standard input): the most common tokens, "
    "unused tokens, UNK rate.",
)
@click.option(
    "--top",
    default=20,
    show_default=True,
    type=click.IntRange(min=1),
    help="How many longest / most common tokens to list.",
)
@click.option(
    "--plot",
    "plot_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Draw the token-length histogram and the script mix into this .png/.svg/.pdf.",
)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def inspect(
    tokenizer_path: str,
    token: str | None,
    token_id: int | None,
    corpus_files: tuple[str, ...],
    top: int,
    plot_path: Path | None,
    as_json: bool,
) -> None:
    """Vocabulary statistics, or everything about one token.

    Size, special tokens, alphabet, token-length histograms (characters and bytes), share of
    ## pieces, coverage by script, longest tokens, and the embedding cost of the vocabulary:
    V×H at H = 768 and 1024, ALBERT's factorised V×E + E×H at E = 128, and V×768 as a share of
    BERT-base's 110M parameters. Tokens are shown as the text they stand for («» around them;
    bytes that are not whole characters in hex, <E6 88>). For Unigram (a sentencepiece .model,
    say): the score range and the pieces with the highest and the lowest scores.

    With --token or --id: id, bytes, byte-level symbols, for BPE the merge tree, for Unigram the score.
    With --corpus: the most common tokens, unused tokens and the UNK rate on real text.

    \b
    Examples:
      toktools inspect wordpiece-30k
      toktools inspect bytebpe-50k --token " world"
      toktools inspect bytebpe-50k --id 1990
      toktools inspect my-bert --corpus heldout.txt --top 30 --json
      toktools inspect my-bert --plot vocab.png
      toktools inspect albert/spiece.model --token ▁the
    """
    import json

    from toktools.analysis.token_anatomy import token_info
    from toktools.analysis.usage import corpus_usage
    from toktools.analysis.vocabulary import vocab_stats
    from toktools.formats import load

    if token is not None and token_id is not None:
        raise click.UsageError("give --token or --id, not both")
    if token is not None or token_id is not None:
        ctx = click.get_current_context()
        for name, flag in (("corpus_files", "--corpus"), ("top", "--top"), ("plot_path", "--plot")):
            if ctx.get_parameter_source(name) == click.core.ParameterSource.COMMANDLINE:
                raise click.UsageError(
                    f"{flag} is for vocabulary statistics: it does not go with --{'token' if token is not None else 'id'}"
                )
    if plot_path is not None:
        from toktools.analysis.plots import check_plot, require_matplotlib
        from toktools.formats import resolve
        from toktools.io.outputs import input_files

        require_matplotlib()
        check_plot(plot_path, [*corpus_files, *input_files(resolve(tokenizer_path))])
    tokenizer = load(tokenizer_path)
    if token is not None or token_id is not None:
        info = token_info(tokenizer, token_id if token_id is not None else token)  # type: ignore[arg-type]
        if as_json:
            click.echo(json.dumps(info.to_dict(), ensure_ascii=False, indent=2))
        else:
            echo_plain_or_rich(info.render_plain(), [(r"(?m)^[a-z ]+(?=  )", "bold cyan"), (r"[├└│─]+", "dim")])
        return
    stats = vocab_stats(tokenizer, top=top)
    usage = None
    if corpus_files:
        usage = corpus_usage(tokenizer, input_lines(corpus_files), top=top)
    if plot_path is not None:
        from toktools.analysis.plots import plot_vocab

        plot_vocab(stats, plot_path, name=tokenizer_path)
        click.echo(f"wrote {plot_path}", err=True)
    if as_json:
        document = stats.to_dict()
        if usage is not None:
            document["corpus_usage"] = usage.to_dict()
        click.echo(json.dumps(document, ensure_ascii=False, indent=2))
        return
    text = stats.render_plain() + ("\n" + usage.render_plain() if usage is not None else "")
    echo_plain_or_rich(text, [(r"(?m)^[a-z][a-z ]+(?=  |$)", "bold cyan"), (r"#+$", "green")])
