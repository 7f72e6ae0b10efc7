"""`toktools compare`: several tokenizers on the same text, side by side."""
from __future__ import annotations

from pathlib import Path

import click

from toktools.errors import ToktoolsError
from toktools.commands._shared import _console, _echo_plain_or_rich


@click.command()
@click.argument("tokenizers", nargs=-1, required=True, metavar="TOK... [TEXT]")
@click.option("--file", "text_file", type=click.Path(dir_okay=False, path_type=Path), default=None, help="Compare on this file's text instead of TEXT.")
@click.option("--width", type=click.IntRange(min=20), default=None, help="Wrap the aligned rows at this many columns (default: terminal width).")
@click.option("--bytes/--no-bytes", "byte_view", default=None, help="Show the byte view (default: when the text has multi-byte characters).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def compare(tokenizers: tuple[str, ...], text_file: Path | None, width: int | None, byte_view: bool | None, as_json: bool) -> None:
    """How several tokenizers cut the same text, side by side.

    One row per tokenizer, aligned on characters, | at every token boundary, ^ under the
    spans where they disagree; for multi-byte text a byte view shows cuts inside characters.
    Then a metrics table: tokens, characters/token, bytes/token, fertility, words split, UNK.
    The last argument is the text, unless --file is given.

    \b
    Examples:
      toktools compare wordpiece-30k bytebpe-50k "Tokenizers cut unaffable words"
      toktools compare bytebpe-50k ../gpt2 "我是中国人"
      toktools compare wordpiece-30k bytebpe-50k --file sample.txt --json
    """
    import json

    from toktools import report
    from toktools.formats import load

    names = list(tokenizers)
    if text_file is not None:
        from toktools.bpe import read_text_file

        text = read_text_file(text_file, "text file").rstrip("\n")
    else:
        if len(names) < 2:
            raise ToktoolsError("give at least one tokenizer and the text to compare (or --file)")
        text = names.pop()
    if not names:
        raise ToktoolsError("give at least one tokenizer to compare")
    loaded = []
    for name in names:
        loaded.append((name, load(name)))
    comparison = report.compare(loaded, text)
    if as_json:
        click.echo(json.dumps(comparison.to_dict(), ensure_ascii=False, indent=2))
        return
    console = _console()
    columns = width or (console.width if console.is_terminal else 100)
    _echo_plain_or_rich(comparison.render_plain(width=columns, byte_view=byte_view),
                        [(r"\|", "bold cyan"), (r"\^+", "bold red"), (r"(?m)^\S+(?=\s)", "bold")])
