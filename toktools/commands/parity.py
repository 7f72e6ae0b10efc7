"""`toktools parity`: train with both backends and explain any difference."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from toktools.commands._shared import echo_plain_or_rich, quiet_option, split_list
from toktools.training.trainers import TRAINERS


@click.command()
@quiet_option
@click.argument("kind", type=click.Choice(list(TRAINERS)))
@click.argument("corpus", nargs=-1, required=True)
@click.option(
    "--vocab-size",
    default=8000,
    show_default=True,
    type=click.IntRange(min=1),
    help="Vocabulary size for both trainings.",
)
@click.option(
    "--min-frequency",
    default=2,
    show_default=True,
    type=click.IntRange(min=0),
    help="Minimum pair frequency for both trainings.",
)
@click.option(
    "--special-tokens",
    default=None,
    help="Comma-separated special tokens (default: none for bytebpe, BERT's five for wordpiece, <unk> for unigram).",
)
@click.option(
    "--limit-alphabet",
    type=click.IntRange(min=0),
    default=None,
    help="Alphabet limit (default: none for bytebpe, 1000 for wordpiece).",
)
@click.option(
    "--heldout",
    "heldout_file",
    type=click.Path(dir_okay=False, exists=True),
    default=None,
    help="Held-out text for id agreement (default: every 50th corpus line, withheld from training).",
)
@click.option(
    "--keep",
    "output_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Keep both backends' files in this directory.",
)
@click.option("--force", is_flag=True, help="With --keep: replace reference/, fast/ and forced/ if they exist.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def parity(
    kind: str,
    corpus: tuple[str, ...],
    vocab_size: int,
    min_frequency: int,
    special_tokens: str | None,
    limit_alphabet: int | None,
    heldout_file: str | None,
    output_dir: Path | None,
    force: bool,
    as_json: bool,
) -> None:
    """Train with both backends and say whether they agree, and if not, where and why.

    Compares the files byte for byte, explains the first differing merge (a tie, and how each
    side broke it), reports token-set overlap and id agreement on held-out lines. For WordPiece,
    where tokenizers is random, it also replays tokenizers' choices ("forced mode"). For Unigram,
    whose tokenizers training is not deterministic (float sums in hash order), parity is
    agreement: token-set Jaccard, the same tokens on held-out lines, scores equal up to summation
    order, and identical ids when both libraries encode either trained vocabulary. Exit code 3
    when the backends really differ.

    \b
    Examples:
      toktools parity bytebpe wiki.txt --vocab-size 8000
      toktools parity wordpiece wiki.txt zh.txt --vocab-size 30000 --json
      toktools parity unigram wiki.txt --vocab-size 8000
    """
    import json

    from toktools.io.outputs import check_output_dir
    from toktools.parity.run import run_parity

    if force and output_dir is None:
        raise click.UsageError("--force replaces the directories of --keep: give --keep DIR")
    if output_dir is not None:  # before any work
        check_output_dir(
            output_dir,
            ("reference", "fast", "forced"),
            force=force,
            inputs=[*corpus, heldout_file],
            subdirectories=True,
        )
    options: dict[str, Any] = {}
    if limit_alphabet is not None:
        options["limit_alphabet"] = limit_alphabet
    report = run_parity(
        kind,
        list(corpus),
        vocab_size,
        min_frequency=min_frequency,
        special_tokens=split_list(special_tokens) if special_tokens is not None else None,
        heldout_file=heldout_file,
        output_dir=output_dir,
        **options,
    )
    if as_json:
        click.echo(json.dumps(report.to_dict(), ensure_ascii=False, indent=2))
    else:
        echo_plain_or_rich(
            "\n".join(report.summary_lines()) + "\n",
            [(r"\bidentical\b|\bPARITY\b|100(\.0)?%", "bold green"), (r"\bdiffer\w*|NO PARITY", "bold red")],
        )
    if not report.ok:
        sys.exit(3)
