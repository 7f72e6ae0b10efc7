"""`toktools extend`: add tokens for a new language to a tokenizer, keeping every existing id."""

from __future__ import annotations

import json
from pathlib import Path

import click

from toktools.commands._shared import progress_bars, quiet_option


@click.command()
@quiet_option
@click.argument("base")
@click.argument("corpus", nargs=-1, required=True)
@click.option(
    "-o",
    "--output",
    "out_dir",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Directory to write the extended tokenizer into.",
)
@click.option(
    "--add", type=click.IntRange(min=0), default=10_000, show_default=True, help="How many tokens to add (at most)."
)
@click.option(
    "--keep-segmentation-of",
    "keep",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False),
    help="BPE: skip every new merge that would change the base's ids on a line of this file; WordPiece and sentencepiece: leave out every new piece that occurs in its text (repeatable).",
)
@click.option(
    "--use-unused",
    is_flag=True,
    help="WordPiece: put new pieces into the [unusedN] slots first (the vocabulary keeps its size while slots last).",
)
@click.option(
    "--min-frequency",
    type=click.IntRange(min=1),
    default=2,
    show_default=True,
    help="BPE and WordPiece: a new token must occur this often in the corpus.",
)
@click.option(
    "--held-out-every",
    type=click.IntRange(min=0),
    default=20,
    show_default=True,
    help="Hold out every Nth non-blank corpus line for the report (0: none).",
)
@click.option(
    "--pattern",
    default=None,
    help="tiktoken ranks base: its split regex (default: GPT-2's).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--force", is_flag=True, help="Overwrite existing files.")
@click.option("--progress/--no-progress", default=True, help="Show a progress bar on a terminal.")
def extend(
    base: str,
    corpus: tuple[str, ...],
    out_dir: Path,
    add: int,
    keep: tuple[str, ...],
    use_unused: bool,
    min_frequency: int,
    held_out_every: int,
    pattern: str | None,
    as_json: bool,
    force: bool,
    progress: bool,
) -> None:
    """Extend BASE with tokens learned from CORPUS, keeping every existing id, merge and piece.

    BPE (tokenizer.json, vocab.json + merges.txt, tiktoken ranks) continues training from BASE's
    merges; WordPiece (vocab.txt) gets new characters and pieces; a sentencepiece .model gets the
    pieces of a model of its type trained on CORPUS. Writes BASE's formats, tokenizer.json and
    new_tokens.json (the embedding map) into -o, and reports on a held-out slice of CORPUS.

    \b
    Examples:
      toktools extend ../gpt2 zh.txt -o gpt2-zh --add 10000 --keep-segmentation-of en-sample.txt
      toktools extend ../bert-base-uncased zh.txt -o bert-zh --add 994 --use-unused
      toktools extend llama/tokenizer.model zh.txt -o llama-zh --add 20000
      toktools compare ../gpt2 gpt2-zh "你好，世界"
    """
    from toktools.extend.run import extend as run_extend

    with progress_bars(progress) as update:
        result = run_extend(
            base,
            list(corpus),
            out_dir,
            add,
            keep_segmentation_of=list(keep) or None,
            use_unused=use_unused,
            min_frequency=min_frequency,
            held_out_every=held_out_every,
            pattern=pattern,
            overwrite=force,
            progress=(lambda done, total: update("merge", done, total)) if update else None,
        )
    if as_json:
        click.echo(json.dumps(result.report.to_json(), ensure_ascii=False, indent=2))
    else:
        click.echo("\n".join(result.report.lines()))
    click.echo("wrote " + ", ".join(str(p) for p in result.written), err=True)
