"""`toktools convert`: write a tokenizer in another layout."""

from __future__ import annotations

from pathlib import Path

import click

from toktools.commands._shared import quiet_option


@click.command()
@quiet_option
@click.argument("tokenizer_path")
@click.option(
    "--to",
    "target",
    required=True,
    type=click.Choice(["tokenizer.json", "vocab.txt", "vocab.json+merges.txt", "tiktoken", "spiece.model"]),
    help="The layout to write (spiece.model: a sentencepiece model, for Unigram tokenizers; Nmt/NFKC/Lowercase normalisers become a charsmap).",
)
@click.option(
    "-o",
    "--output",
    "out_dir",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Directory to write into.",
)
@click.option("--force", is_flag=True, help="Overwrite existing files.")
def convert(tokenizer_path: str, target: str, out_dir: Path, force: bool) -> None:
    """Write a tokenizer in another layout.

    \b
    Examples:
      toktools convert my-bpe --to tiktoken -o my-bpe-tiktoken
      toktools convert ../gpt2 --to tokenizer.json -o gpt2-json
      toktools convert albert/spiece.model --to tokenizer.json -o albert-json
      toktools convert my-unigram --to spiece.model -o my-unigram-spm
    """
    from toktools.formats import EXPORT_FILES, export, load, resolve
    from toktools.io.outputs import check_output_dir, input_files

    check_output_dir(out_dir, EXPORT_FILES[target], force=force, inputs=input_files(resolve(tokenizer_path)))
    tokenizer = load(tokenizer_path)
    written = export(tokenizer, target, out_dir, overwrite=force)
    click.echo("wrote " + ", ".join(str(p) for p in written), err=True)
    if hasattr(tokenizer, "spm_model") and target != "spiece.model":
        click.echo(
            f"note: {target} encodes as the tokenizers library runs it (toktools' --model-rule tokenizers), "
            "not as sentencepiece: float near-ties, control pieces typed in the text and marks after "
            "compatibility characters may give other ids than the .model (--model-rule sentencepiece)",
            err=True,
        )
    elif target == "spiece.model":
        click.echo("note: spiece.model encodes as sentencepiece does (toktools' --model-rule sentencepiece)", err=True)
