"""`toktools pretrain-data`: a corpus and a tokenizer → MLM / NSP / SOP training examples (Parquet)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import click

from toktools.commands._shared import model_rule_option, quiet_option, sampling_options_without_seed

if TYPE_CHECKING:  # pragma: no cover
    from toktools.pretraining.examples import Objective


@click.command("pretrain-data")
@quiet_option
@click.argument("corpus", nargs=-1, required=True)
@click.option(
    "-t",
    "--tokenizer",
    "tokenizer_path",
    required=True,
    help="Tokenizer directory or file, or a shipped vocabulary name (needs a [MASK] or <mask> token).",
)
@click.option(
    "-o",
    "--output",
    "out_path",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Parquet file to write (atomically).",
)
@click.option(
    "--objective",
    type=click.Choice(["mlm", "mlm+nsp", "mlm+sop"]),
    default="mlm",
    show_default=True,
    help="mlm: RoBERTa's packed full sentences; mlm+nsp: BERT's next-sentence pairs; mlm+sop: ALBERT's sentence order.",
)
@click.option(
    "--max-length", type=int, default=512, show_default=True, help="Tokens per example, special tokens included."
)
@click.option(
    "--mask-prob",
    type=click.FloatRange(0, 1),
    default=0.15,
    show_default=True,
    help="Share of text tokens chosen for prediction (80% [MASK], 10% random, 10% kept).",
)
@click.option(
    "--max-predictions",
    type=click.IntRange(min=1),
    default=None,
    help="At most this many masked tokens per example (BERT's max_predictions_per_seq; default: no cap).",
)
@click.option(
    "--whole-word",
    type=click.Choice(["off", "pieces", "zh"]),
    default="off",
    show_default=True,
    help="pieces: mask every piece of a word together (## for WordPiece, Ġ/▁ word starts otherwise); zh: also Chinese words found by jieba.",
)
@click.option(
    "--zh-dict",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="jieba dictionary for --whole-word zh (plain or .gz; default: jieba's own).",
)
@click.option(
    "--dupe-factor",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Write each example this many times with different masks (BERT uses 10).",
)
@click.option(
    "--dynamic",
    is_flag=True,
    help="Write unmasked examples; mask at load time with toktools.pretraining.masking.MaskingCollator (RoBERTa).",
)
@click.option(
    "--short-seq-prob",
    type=click.FloatRange(0, 1),
    default=0.1,
    show_default=True,
    help="mlm+nsp/sop: chance of a shorter random target length, as BERT.",
)
@click.option(
    "--seed", type=int, default=12345, show_default=True, help="Random seed: same seed, same output, for any --workers."
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=None,
    help="Processes (default: all cores for big inputs). Output is identical for any value.",
)
@click.option(
    "--field", default=None, help="Read JSON Lines: each record's FIELD is a document, its lines are sentences."
)
@click.option(
    "--epochs",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Write one file per epoch, OUT.epochK.parquet (K from 0), each with its own segmentation "
    "(--dropout / --sample-alpha) and masks; epoch 0 is seeded by --seed.",
)
@sampling_options_without_seed
@click.option("--pad", is_flag=True, help="Pad every example to --max-length (labels -100, attention 0).")
@click.option("--force", is_flag=True, help="Overwrite the output file.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON on stdout.")
@click.option("--progress/--no-progress", default=True, help="Show progress on stderr (terminals only).")
@model_rule_option
def pretrain_data(
    corpus: tuple[str, ...],
    tokenizer_path: str,
    out_path: Path,
    objective: Objective,
    max_length: int,
    mask_prob: float,
    max_predictions: int | None,
    whole_word: Literal["off", "pieces", "zh"],
    zh_dict: str | None,
    dupe_factor: int,
    dynamic: bool,
    short_seq_prob: float,
    seed: int,
    workers: int | None,
    field: str | None,
    epochs: int,
    dropout: float | None,
    sample_alpha: float | None,
    nbest_size: int,
    pad: bool,
    force: bool,
    as_json: bool,
    progress: bool,
    model_rule: str | None,
) -> None:
    """Turn a corpus into masked-language-model training examples.

    CORPUS is BERT's layout (one sentence per line, a blank line between documents; .gz/.xz/.bz2
    read directly) or JSON Lines with --field. Output columns: input_ids, token_type_ids,
    attention_mask, labels (-100 where not masked; absent with --dynamic) and
    next_sentence_label / sentence_order_label. Load it with
    datasets.load_dataset("parquet", data_files=OUT).

    \b
    Examples:
      toktools pretrain-data wiki.txt -t wordpiece-30k -o bert.parquet --objective mlm+nsp --max-length 128 --dupe-factor 10
      toktools pretrain-data docs.jsonl --field text -t bytebpe-50k -o roberta.parquet --dynamic
      toktools pretrain-data zh.txt -t my-bert-zh -o wwm.parquet --whole-word zh
      toktools pretrain-data wiki.txt -t albert.model -o albert.parquet --objective mlm+sop \\
          --sample-alpha 0.1 --epochs 3     # albert.epoch0.parquet … albert.epoch2.parquet
    """
    from toktools.corpus.reading import expand_sources
    from toktools.formats import load
    from toktools.pretraining.epochs import make_epochs
    from toktools.pretraining.examples import PretrainSettings
    from toktools.subword_sampling import Sampling

    settings = PretrainSettings(
        objective=objective,
        max_length=max_length,
        mask_prob=mask_prob,
        max_predictions=max_predictions,
        whole_word=whole_word,
        dupe_factor=dupe_factor,
        dynamic=dynamic,
        short_seq_prob=short_seq_prob,
        seed=seed,
        pad=pad,
    )
    sampling = Sampling(dropout, sample_alpha, nbest_size)
    _check_option_pairs(objective, dynamic, whole_word, zh_dict, dupe_factor)
    _check_sampling_options(sampling, epochs, dynamic)
    settings.check()
    from toktools.formats import resolve
    from toktools.io.outputs import check_output_file, input_files
    from toktools.pretraining.epochs import epoch_outputs

    for target in epoch_outputs(out_path, epochs):
        check_output_file(target, force=force, inputs=[*corpus, *input_files(resolve(tokenizer_path))])
    sources = expand_sources(corpus, json_field=field)
    tokenizer = load(tokenizer_path, model_rule=model_rule)
    with _progress(progress) as callback:
        written = make_epochs(
            sources,
            tokenizer,
            out_path,
            settings,
            sampling,
            epochs,
            workers=workers,
            overwrite=force,
            zh_dictionary=zh_dict,
            progress=callback,
            tokenizer_name=str(tokenizer_path),
        )
    if as_json:
        summaries = [summary.as_json() for _, summary in written]
        click.echo(json.dumps(summaries[0] if epochs == 1 else {"epochs": summaries}, ensure_ascii=False, indent=2))
        return
    for target, summary in written:
        _print_summary(target, summary, settings, objective, whole_word)


def _print_summary(target: Path, summary: Any, settings: Any, objective: str, whole_word: str) -> None:
    """The human summary of one written file, on stderr."""
    lines = [
        f"wrote {summary.examples:,} examples to {target} ({summary.tokens:,} tokens from {summary.documents:,} documents, "
        f"{summary.sentences:,} sentences) in {summary.seconds:.1f} s"
    ]
    if not settings.dynamic:
        masked = max(summary.masked, 1)
        lines.append(
            f"masked {summary.masked:,} of {summary.text_tokens:,} text tokens ({summary.masked_share:.2%}): "
            f"{summary.masked_as_mask / masked:.1%} mask, {summary.masked_as_random / masked:.1%} random, "
            f"{summary.masked_kept / masked:.1%} kept"
        )
    else:
        lines.append(
            "unmasked (--dynamic): mask at load time with toktools.pretraining.masking.MaskingCollator"
            + (" (whole_word=True)" if whole_word != "off" else "")
        )
    if settings.label_name:
        share = summary.negatives / summary.examples if summary.examples else 0.0
        what = "random next" if objective == "mlm+nsp" else "swapped"
        lines.append(f"{settings.label_name}: {summary.negatives:,} {what} ({share:.1%})")
    if summary.skipped_chunks:
        lines.append(f"skipped {summary.skipped_chunks:,} one-token chunks that cannot be split into two segments")
    for line in lines:
        click.echo(line, err=True)


def _check_sampling_options(sampling: Any, epochs: int, dynamic: bool) -> None:
    """Sampling options that cannot work together are usage errors (exit 2), before any work."""
    ctx = click.get_current_context()
    if sampling.dropout is not None and sampling.alpha is not None:
        raise click.UsageError("--dropout is for BPE and --sample-alpha for a Unigram .model: give one")
    if ctx.get_parameter_source("nbest_size") == click.core.ParameterSource.COMMANDLINE and sampling.alpha is None:
        raise click.UsageError("--nbest-size is for --sample-alpha")
    if epochs > 1 and dynamic and not sampling.draws:
        raise click.UsageError(
            f"--epochs {epochs} with --dynamic and no subword sampling would write {epochs} identical files: "
            "add --dropout (BPE) or --sample-alpha (Unigram .model)"
        )


def _check_option_pairs(objective: str, dynamic: bool, whole_word: str, zh_dict: str | None, dupe_factor: int) -> None:
    """Options that do nothing with the others given are usage errors (exit 2), before any work."""
    ctx = click.get_current_context()
    given = {name for name in ctx.params if ctx.get_parameter_source(name) == click.core.ParameterSource.COMMANDLINE}
    if zh_dict is not None and whole_word != "zh":
        raise click.UsageError("--zh-dict is for --whole-word zh")
    if "short_seq_prob" in given and objective == "mlm":
        raise click.UsageError("--short-seq-prob is for --objective mlm+nsp or mlm+sop (mlm packs full blocks)")
    if dynamic:
        for name, flag in (("mask_prob", "--mask-prob"), ("max_predictions", "--max-predictions")):
            if name in given:
                raise click.UsageError(f"{flag} and --dynamic contradict each other: with --dynamic the collator masks")
        if objective == "mlm" and dupe_factor > 1:
            raise click.UsageError(
                "--dupe-factor and --dynamic contradict each other for mlm: the collator masks at load time, "
                "so copies of the same blocks would be identical"
            )


@contextmanager
def _progress(enabled: bool) -> Iterator[Any]:
    """A rich display on stderr (terminals only): MB read, sentences encoded, examples made."""
    if not enabled or not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    tasks: dict[str, Any] = {}
    with Progress(
        TextColumn("[bold]{task.description:<9}"),
        BarColumn(),
        TextColumn("{task.fields[amount]}"),
        TimeElapsedColumn(),
        console=Console(stderr=True),
    ) as bar:

        def update(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                label = {"read": "reading", "encode": "encoding", "examples": "examples"}.get(stage, stage)
                tasks[stage] = bar.add_task(label, total=total or None, amount="")
            amount = (
                f"{done / 1e6:.1f}/{total / 1e6:.1f} MB"
                if stage == "read"
                else f"{done:,}" + (f"/{total:,}" if total else "")
            )
            bar.update(tasks[stage], completed=done, total=total or None, amount=amount)

        yield update
