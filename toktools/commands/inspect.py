"""`toktools inspect`: vocabulary statistics, or everything about one token."""
from __future__ import annotations


import click

from toktools.commands._shared import _echo_plain_or_rich, _input_lines


@click.command()
@click.argument("tokenizer_path", metavar="TOK")
@click.option("--token", "token", default=None, help="Show one token (a token string, an id, or for byte-level BPE the text it stands for).")
@click.option("--corpus", "corpus_files", multiple=True, help="Add vocabulary use on this text file (repeatable): unused tokens, UNK rate.")
@click.option("--top", default=20, show_default=True, type=click.IntRange(min=1), help="How many longest / most common tokens to list.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def inspect(tokenizer_path: str, token: str | None, corpus_files: tuple[str, ...], top: int, as_json: bool) -> None:
    """Vocabulary statistics, or everything about one token.

    Size, special tokens, alphabet, token-length histograms (characters and bytes), share of
    ## pieces, coverage by script, longest tokens. With --token: id, bytes, byte-level symbols
    and, for BPE, the merge tree. With --corpus: unused tokens and UNK rate on real text.

    \b
    Examples:
      toktools inspect wordpiece-30k
      toktools inspect bytebpe-50k --token " Hello"
      toktools inspect my-bert --corpus heldout.txt --json
    """
    import json

    from toktools import report
    from toktools.formats import load

    tokenizer = load(tokenizer_path)
    if token is not None:
        info = report.token_info(tokenizer, int(token) if token.isdigit() and tokenizer.id_to_token(int(token)) is not None else token)
        if as_json:
            click.echo(json.dumps(info.to_dict(), ensure_ascii=False, indent=2))
        else:
            _echo_plain_or_rich(info.render_plain(), [(r"^[a-z ]+(?=  )", "bold cyan"), (r"[├└│─]+", "dim")])
        return
    stats = report.vocab_stats(tokenizer, top=top)
    usage = None
    if corpus_files:
        usage = report.corpus_usage(tokenizer, _input_lines(corpus_files), top=top)
    if as_json:
        document = stats.to_dict()
        if usage is not None:
            document["corpus_usage"] = usage.to_dict()
        click.echo(json.dumps(document, ensure_ascii=False, indent=2))
        return
    text = stats.render_plain() + ("\n" + usage.render_plain() if usage is not None else "")
    _echo_plain_or_rich(text, [(r"(?m)^[a-z][a-z ]+(?=  |$)", "bold cyan"), (r"█+", "green")])
