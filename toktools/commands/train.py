"""`toktools train NAME`: one subcommand per trainer of :mod:`toktools.training.trainers`, built from the
settings it describes. This module only parses options and renders: the training is
:meth:`toktools.training.trainers.Trainer.run`."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import click

from toktools.commands._shared import cap_workers, cluster_options, progress_bars, quiet_option, split_list
from toktools.commands.count import load_counts
from toktools.errors import ToktoolsError, warn
from toktools.training.trainers import TRAINERS, Option, OptionConflict, Trainer

#: What ``--transformers-config`` (the default) adds to the output directory.
_CONFIG_FILES = ("tokenizer_config.json", "special_tokens_map.json")


@click.group()
def train() -> None:
    """Train a vocabulary from corpora (reference or fast backend).

    \b
    Examples:
      toktools train bytebpe wiki.txt.gz -o my-bpe --vocab-size 50000 --special-tokens "<s>,<pad>,</s>,<unk>,<mask>"
    """


def _click_option(option: Option) -> Callable[[Any], Any]:
    """The click option for one trainer setting."""
    settings: dict[str, Any] = {"default": option.default, "help": option.help, "show_default": option.show_default}
    if option.type is bool:
        return click.option(option.flags, option.name, **settings)
    if option.type is list:
        settings["default"] = ",".join(option.default)
        return click.option(option.flags, option.name, **settings)
    if isinstance(option.type, tuple):
        return click.option(option.flags, option.name, type=click.Choice(list(option.type)), **settings)
    if option.type in (int, float) and option.minimum is not None:
        ranged = click.IntRange(min=int(option.minimum)) if option.type is int else click.FloatRange(min=option.minimum)
        return click.option(option.flags, option.name, type=ranged, **settings)
    return click.option(option.flags, option.name, type=option.type, **settings)


def _files_phrase(names: Sequence[str]) -> str:
    return ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else names[0]


def _command_options(trainer: Trainer) -> list[Callable[[Any], Any]]:
    """Every option of ``train NAME``, in ``--help`` order: input and output, the trainer's
    settings, then what every training takes (backend, workers, reading, output handling)."""
    files = _files_phrase([*trainer.model_files, "tokenizer.json"])
    return [
        click.argument("corpus", nargs=-1),
        click.option(
            "--from-counts",
            "counts_path",
            type=click.Path(dir_okay=False, path_type=Path),
            default=None,
            help=f"Train from a counts file written by `toktools count --model {trainer.name}` instead of a corpus.",
        ),
        click.option(
            "-o",
            "--output",
            "out_dir",
            required=True,
            type=click.Path(file_okay=False, path_type=Path),
            help=f"Directory to write {files} into.",
        ),
        *[_click_option(option) for option in trainer.cli_options],
        click.option(
            "--transformers-config/--no-transformers-config",
            default=True,
            show_default=True,
            help="Also write tokenizer_config.json and special_tokens_map.json, so transformers' "
            "AutoTokenizer.from_pretrained(DIR) knows the pad/mask/cls/sep tokens.",
        ),
        click.option("--check", is_flag=True, help=trainer.check_help),
        click.option(
            "--backend",
            type=click.Choice(["reference", "fast"]),
            default="reference",
            show_default=True,
            help="reference: toktools' pure Python; fast: HuggingFace tokenizers.",
        ),
        click.option(
            "--workers",
            type=click.IntRange(min=1),
            default=None,
            callback=cap_workers,
            help="Processes that count words (default: all cores). Output is identical for any value.",
        ),
        click.option(
            "--errors",
            type=click.Choice(["strict", "replace", "skip"]),
            default="strict",
            show_default=True,
            help="What to do with invalid UTF-8 in the corpus.",
        ),
        click.option("--field", "json_field", default=None, help="Read JSON Lines and take the text from this field."),
        click.option("--force", is_flag=True, help="Overwrite files already in the output directory."),
        click.option(
            "--progress/--no-progress", default=True, help="Show a progress bar on stderr (only on a terminal)."
        ),
    ]


def _make_command(trainer: Trainer) -> click.Command:
    def command(
        corpus: tuple[str, ...],
        counts_path: Path | None,
        out_dir: Path,
        transformers_config: bool,
        check: bool,
        backend: str,
        workers: int | None,
        errors: str,
        json_field: str | None,
        force: bool,
        progress: bool,
        cluster: Any,
        **given: Any,
    ) -> None:
        _train(
            trainer,
            corpus,
            counts_path,
            out_dir,
            given,
            transformers_config=transformers_config,
            check=check,
            backend=backend,
            workers=workers,
            errors=errors,
            json_field=json_field,
            force=force,
            progress=progress,
            cluster=cluster,
        )

    command.__doc__ = trainer.help
    command = cluster_options(command)
    for decorator in reversed(_command_options(trainer)):
        command = decorator(command)
    command = quiet_option(command)
    return train.command(trainer.name)(command)


def _train(
    trainer: Trainer,
    corpus: tuple[str, ...],
    counts_path: Path | None,
    out_dir: Path,
    given: dict[str, Any],
    *,
    transformers_config: bool,
    check: bool,
    backend: str,
    workers: int | None,
    errors: str,
    json_field: str | None,
    force: bool,
    progress: bool,
    cluster: Any,
) -> None:
    """Check every option, refuse a bad output, train, write, summarise (and ``--check``)."""
    settings = trainer.settings(
        {name: split_list(value) if _is_list(trainer, name) else value for name, value in given.items()}
    )
    try:
        trainer.check_settings(
            settings,
            backend=backend,
            check=check,
            corpus=corpus,
            from_counts=counts_path is not None,
            json_field=json_field,
            errors=errors,
            cluster=cluster is not None,
        )
    except OptionConflict as conflict:
        raise click.UsageError(str(conflict)) from None
    ctx = click.get_current_context()
    if ctx.get_parameter_source("workers") == click.core.ParameterSource.COMMANDLINE and (
        counts_path is not None or backend == "fast"
    ):
        raise click.UsageError(
            "--workers sets the processes that count words: "
            + ("--from-counts has them counted already" if counts_path is not None else "--backend fast counts its own")
        )
    _prepare_output(
        out_dir, force, (*trainer.model_files, "tokenizer.json"), transformers_config, [*corpus, counts_path]
    )
    _check_vocab_size(settings["vocab_size"], trainer.smallest_vocab(settings))
    started = time.perf_counter()
    word_counts = None
    if counts_path is not None:
        word_counts = load_counts(counts_path, trainer.name, trainer.count_settings(settings))
    with progress_bars(progress and backend == "reference") as callback:
        tokenizer = trainer.run(
            list(corpus),
            settings,
            backend=backend,
            word_counts=word_counts,
            workers=workers,
            errors=errors,
            json_field=json_field,
            progress=callback,
            cluster=cluster,
        )
    _finish_training(
        tokenizer,
        out_dir,
        started,
        backend,
        transformers_config,
        settings["vocab_size"],
        settings=settings,
        check=dict(
            corpus=corpus,
            min_frequency=settings.get("min_frequency"),
            specials=settings["special_tokens"],
            options=trainer.shared_options(settings),
        )
        if check
        else None,
    )


def _is_list(trainer: Trainer, name: str) -> bool:
    return any(option.name == name and option.type is list for option in trainer.cli_options)


def _prepare_output(
    out_dir: Path, force: bool, names: Sequence[str], transformers_config: bool, inputs: Sequence[str | Path | None]
) -> None:
    """Refuse, before training, an output directory that cannot be written, holds the files
    already (without --force) or would overwrite an input."""
    from toktools.io.outputs import check_output_dir

    extra = _CONFIG_FILES if transformers_config else ()
    check_output_dir(out_dir, [*names, *extra], force=force, inputs=inputs)


def _check_vocab_size(vocab_size: int, smallest: int) -> None:
    """Refuse a vocabulary size that the special tokens and the alphabet alone exceed
    (``tokenizers`` would silently return a larger vocabulary with no merges)."""
    if vocab_size < smallest:
        raise ToktoolsError(
            f"vocab size {vocab_size} is smaller than the alphabet: the special tokens and the "
            f"alphabet alone make {smallest} tokens; use --vocab-size {smallest} or more "
            "(or a smaller --limit-alphabet)"
        )


def _finish_training(
    tokenizer: Any,
    out_dir: Path,
    started: float,
    backend: str,
    transformers_config: bool,
    vocab_size: int,
    check: dict[str, Any] | None,
    settings: dict[str, Any] | None = None,
) -> None:
    """What every training ends with: refuse an impossible size, write the files atomically,
    print the summary, and with ``--check`` the parity report."""
    _check_vocab_size(vocab_size, len(tokenizer.vocab) if len(tokenizer.vocab) > vocab_size else 0)
    written = _save(tokenizer, out_dir, transformers_config)
    elapsed = time.perf_counter() - started
    _summary(tokenizer, written, elapsed, backend, requested=vocab_size, settings=settings or {})
    if check is not None:
        _check(tokenizer, tokenizer.kind, backend=backend, seconds=elapsed, vocab_size=vocab_size, **check)


def _check(
    tokenizer: Any,
    kind: str,
    corpus: Sequence[str],
    backend: str,
    seconds: float,
    vocab_size: int,
    min_frequency: int | None,
    specials: list[str],
    options: dict[str, Any],
) -> None:
    """``train --check``: train the other way too and print the parity report."""
    from toktools.parity.run import check_trained

    report = check_trained(
        kind,
        tokenizer,
        list(corpus),
        vocab_size,
        min_frequency=min_frequency,
        special_tokens=specials,
        reference_seconds=seconds,
        **options,
    )
    for line in report.summary_lines():
        click.echo(line, err=True)
    if not report.ok:
        sys.exit(3)


def _save(tokenizer: Any, out_dir: Path, transformers_config: bool) -> list[Path]:
    written = list(tokenizer.save(out_dir))
    if transformers_config:
        from toktools.formats import transformers_config_files, write_files_atomically

        written += write_files_atomically(out_dir, transformers_config_files(tokenizer))
    return written


def _summary(
    tokenizer: Any,
    written: Sequence[Path],
    elapsed: float,
    backend: str,
    requested: int | None = None,
    settings: dict[str, Any] | None = None,
) -> None:
    """What training made, on stderr; when the vocabulary came out smaller than asked, why
    (and which option changes it)."""
    from toktools.analysis import token_view

    result = getattr(tokenizer, "training_result", None)  # what training.py attaches (None: fast backend)
    merges = result.merges if result is not None else token_view.merges(tokenizer)
    detail = f", {len(merges)} merges" if merges is not None else ""
    if result is not None:
        detail += f", alphabet of {result.alphabet_size} characters"
    lines = [
        f"trained {token_view.family(tokenizer)} ({backend}) in {elapsed:.1f}s: {tokenizer.vocab_size} tokens{detail}"
    ]
    if merges:
        lines.append("first merges: " + ", ".join(f"{a} {b}" for a, b in merges[:5]))
    lines.append("wrote " + ", ".join(str(p) for p in written))
    for line in lines:
        click.echo(line, err=True)
    if requested is not None and tokenizer.vocab_size < requested:
        warn(_shortfall(tokenizer.vocab_size, requested, result, settings or {}))


def _shortfall(size: int, requested: int, result: Any, settings: dict[str, Any]) -> str:
    """Why the vocabulary has fewer tokens than ``--vocab-size``, and which option changes it (one
    line). When most words are one character (Chinese to BERT's pre-tokeniser), merging has
    nothing to work on and a larger corpus does not help: only ``--limit-alphabet`` does."""
    head = f"the vocabulary has {size} tokens, {requested - size} fewer than --vocab-size {requested}"
    reason = getattr(result, "stop_reason", None)
    min_frequency = settings.get("min_frequency")
    limit = settings.get("limit_alphabet")
    dropped = getattr(result, "dropped_characters", 0)
    single = getattr(result, "single_character_share", 0.0)
    reasons = []
    if dropped and single >= 0.5:
        every = result.alphabet_size + dropped
        reasons.append(
            f"{single:.0%} of the words are a single character (each Chinese character is a word of its own), "
            "so merges cannot add tokens and a larger corpus would not help: only the alphabet can grow; "
            f"--limit-alphabet {limit} dropped {dropped} characters covering {result.dropped_share:.1%} of the "
            f"corpus's characters (they become unknown): --limit-alphabet {every} keeps all {every}"
        )
    else:
        if reason in ("min_frequency", "no_pairs"):
            # (the merge engine never queues pairs below the threshold: both reasons mean this)
            reasons.append(
                f"merging stopped: no pair of adjacent tokens is left that occurs at least --min-frequency "
                f"{min_frequency} times; a larger corpus, or a lower --min-frequency, gives more merges"
            )
        if dropped:
            reasons.append(
                f"the alphabet limit (--limit-alphabet {limit}) dropped {dropped} characters covering "
                f"{result.dropped_share:.1%} of the corpus's characters: they cannot be learnt and become "
                "unknown; raise --limit-alphabet to keep them"
            )
    if reason is None:
        reasons.append("this backend / algorithm does not record why; the reference bpe training does")
    return head + (": " + "; ".join(reasons) if reasons else "")


for _trainer in TRAINERS.values():
    _make_command(_trainer)
