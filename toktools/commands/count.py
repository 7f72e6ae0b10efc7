"""`toktools count`: word counts for `train --from-counts`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from toktools.commands._shared import cap_workers, cluster_options, progress_bars, quiet_option
from toktools.errors import ToktoolsError
from toktools.io.outputs import check_output_file
from toktools.training.trainers import TRAINERS, get_trainer

if TYPE_CHECKING:  # pragma: no cover
    from toktools.cluster.settings import Cluster


@click.command()
@quiet_option
@click.argument("corpus", nargs=-1, required=True)
@click.option(
    "-o",
    "--output",
    "out_path",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Counts file to write (word<TAB>count).",
)
@click.option(
    "--model",
    "kind",
    type=click.Choice(list(TRAINERS)),
    required=True,
    help="Which pre-processing to count words with.",
)
@click.option(
    "--lowercase/--cased",
    default=True,
    show_default=True,
    help="wordpiece: lower-case and strip accents like bert-base-uncased.",
)
@click.option(
    "--strip-accents/--keep-accents", default=None, help="wordpiece: strip accents (default: same as --lowercase)."
)
@click.option(
    "--add-prefix-space/--no-add-prefix-space",
    default=False,
    show_default=True,
    help="bytebpe: prefix every line with a space.",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=None,
    callback=cap_workers,
    help="Processes that count (default: all cores). Output is identical for any value.",
)
@click.option(
    "--errors",
    type=click.Choice(["strict", "replace", "skip"]),
    default="strict",
    show_default=True,
    help="What to do with invalid UTF-8 in the corpus.",
)
@click.option("--field", "json_field", default=None, help="Read JSON Lines and take the text from this field.")
@click.option("--force", is_flag=True, help="Overwrite an existing counts file.")
@click.option("--progress/--no-progress", default=True, help="Show a progress bar on stderr (only on a terminal).")
@cluster_options
def count(
    corpus: tuple[str, ...],
    out_path: Path,
    kind: str,
    lowercase: bool,
    strip_accents: bool | None,
    add_prefix_space: bool,
    workers: int | None,
    errors: str,
    json_field: str | None,
    force: bool,
    progress: bool,
    cluster: Cluster | None,
) -> None:
    """Count words once, train many times: write word counts for `train --from-counts`.

    The file starts with a header that records the normaliser and pre-tokeniser settings, so a
    training run with other settings refuses it instead of silently using it.

    With --cluster, the corpus (files, globs, directories; any fsspec URL such as s3://bucket/dir
    when that backend is installed) is cut into blocks counted on a Dask cluster; the counts
    file is byte-identical to a local run. --block-size is then an upper bound: a corpus that
    would give a worker fewer than 8 blocks is cut finer (not below 4 MiB).

    \b
    Examples:
      toktools count wiki.txt.gz --model wordpiece -o wiki.counts
      toktools train wordpiece --from-counts wiki.counts -o my-bert --vocab-size 30000
      toktools count 'corpus/*.txt' --model bytebpe -o corpus.counts --cluster tcp://scheduler:8786
      toktools count big.txt --model bytebpe -o big.counts --cluster local:8 --block-size 128MB
    """
    from toktools.corpus.reading import dumps_counts
    from toktools.io.outputs import atomic_file

    _check_model_options(kind)
    check_output_file(out_path, force=force, inputs=corpus)
    trainer = get_trainer(kind)
    options = _count_options(kind, lowercase, strip_accents, add_prefix_space)
    settings = trainer.count_settings(options)
    with progress_bars(progress) as callback:
        reading: dict[str, Any] = {} if cluster is None else {"cluster": cluster}
        counts = trainer.count_words(
            list(corpus), options, workers=workers, errors=errors, json_field=json_field, progress=callback, **reading
        )
    with atomic_file(out_path) as out:  # the output policy: a device or FIFO is written into
        out.write(dumps_counts(counts, kind, settings))
    click.echo(f"counted {sum(counts.values())} words ({len(counts)} distinct); wrote {out_path}", err=True)


def _count_options(kind: str, lowercase: bool, strip_accents: bool | None, add_prefix_space: bool) -> dict[str, object]:
    """The CLI's counting options that the trainer takes (each model reads its own)."""
    given = {"lowercase": lowercase, "strip_accents": strip_accents, "add_prefix_space": add_prefix_space}
    return {name: value for name, value in given.items() if name in get_trainer(kind).count_options}


def _check_model_options(kind: str) -> None:
    """An option of another model's pre-processing, given on the command line, is a usage error."""
    ctx = click.get_current_context()
    flags = {
        "lowercase": "--lowercase/--cased",
        "strip_accents": "--strip-accents/--keep-accents",
        "add_prefix_space": "--add-prefix-space/--no-add-prefix-space",
    }
    own = get_trainer(kind).count_options
    given = [
        name
        for name in flags
        if name not in own and ctx.get_parameter_source(name) == click.core.ParameterSource.COMMANDLINE
    ]
    if given:
        raise click.UsageError(f"{', '.join(flags[name] for name in given)} does not apply to --model {kind}")


def load_counts(path: Path, kind: str, expected: dict[str, object]) -> dict[str, int]:
    """The word counts a ``count`` run wrote to ``path``, refused unless they were counted for
    ``kind`` with the ``expected`` settings (``train --counts``)."""
    from toktools.corpus.reading import read_counts

    found_kind, settings, counts = read_counts(path)
    if found_kind != kind:
        raise ToktoolsError(f"{path} holds {found_kind} counts; this is a {kind} training")
    if settings != expected:
        differ = ", ".join(
            f"{k}: file {settings.get(k)!r} vs now {v!r}" for k, v in expected.items() if settings.get(k) != v
        )
        raise ToktoolsError(f"{path} was counted with other settings ({differ}); count again or change the options")
    return counts
