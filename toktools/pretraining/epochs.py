"""``pretrain-data --epochs N``: one Parquet file per epoch, each with its own segmentation
(``--dropout`` / ``--sample-alpha``) and its own masks.

Subword regularisation resamples the segmentation every time a sentence is seen; a file of
examples fixes it. So epoch ``k`` is a file of its own, ``OUT.epoch<k>.parquet`` (``k`` from
0, padded to the width of ``N - 1``), encoded and masked with :func:`toktools.subword_sampling.epoch_seed`
(``--seed`` itself for epoch 0, so ``--epochs 1`` writes what a run without it writes). The
loader reads file ``epoch % N`` in epoch ``epoch`` (fairseq's ``data:data:…`` layout, or one
``load_dataset`` per epoch). Every draw depends on the seed and the text alone: the files are
byte-identical for any ``--workers`` and ``PYTHONHASHSEED``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toktools.errors import ToktoolsError
from toktools.subword_sampling import Sampling, apply_sampling, epoch_seed

if TYPE_CHECKING:  # pragma: no cover
    from toktools.corpus.reading import CorpusSource
    from toktools.pretraining.examples import PretrainSettings, Progress, Summary
    from toktools.tokenizer import Tokenizer


def epoch_outputs(output: str | os.PathLike[str], epochs: int) -> list[Path]:
    """The file of each epoch: ``output`` itself for one epoch, else ``STEM.epoch<k>SUFFIX``."""
    path = Path(output)
    if epochs < 1:
        raise ToktoolsError(f"--epochs {epochs}: at least 1")
    if epochs == 1:
        return [path]
    width = len(str(epochs - 1))
    suffix = path.suffix or ".parquet"
    stem = path.name[: -len(path.suffix)] if path.suffix else path.name
    return [path.with_name(f"{stem}.epoch{k:0{width}d}{suffix}") for k in range(epochs)]


def make_epochs(
    sources: Sequence[CorpusSource],
    tokenizer: Tokenizer,
    output: str | os.PathLike[str],
    settings: PretrainSettings,
    sampling: Sampling,
    epochs: int = 1,
    *,
    workers: int | None = None,
    overwrite: bool = False,
    zh_dictionary: str | os.PathLike[str] | None = None,
    progress: Progress | None = None,
    tokenizer_name: str = "",
) -> list[tuple[Path, Summary]]:
    """Write every epoch's file (each one atomically); the files and their summaries."""
    from toktools.io.outputs import check_output_file
    from toktools.pretraining.examples import make_pretraining_data

    settings.check()
    if epochs > 1 and settings.dynamic and not sampling.draws:
        raise ToktoolsError(
            f"--epochs {epochs} with --dynamic and no subword sampling would write {epochs} identical files: "
            "add --dropout (BPE) or --sample-alpha (Unigram .model), or write one file"
        )
    targets = epoch_outputs(output, epochs)
    inputs = [s.path for s in sources]
    for target in targets:  # every name checked before any work
        check_output_file(target, force=overwrite, inputs=inputs)
    if len(set(targets)) != len(targets):  # pragma: no cover - names differ by construction
        raise ToktoolsError("two epochs would write the same file")
    written: list[tuple[Path, Summary]] = []
    with _rereadable_sources(sources, again=epochs > 1) as readable:
        for epoch, target in enumerate(targets):
            seed = epoch_seed(settings.seed, epoch)
            metadata: dict[str, Any] = {}
            if sampling.enabled or epochs > 1:
                metadata = {"epoch": epoch, "epochs": epochs, "run_seed": settings.seed, **sampling.as_json()}
            if sampling.enabled:
                apply_sampling(tokenizer, sampling, seed)
            summary = make_pretraining_data(
                readable,
                tokenizer,
                target,
                replace(settings, seed=seed),
                workers=workers,
                overwrite=overwrite,
                zh_dictionary=zh_dictionary,
                progress=progress,
                tokenizer_name=tokenizer_name,
                metadata=metadata,
            )
            written.append((target, summary))
    return written


@contextmanager
def _rereadable_sources(sources: Sequence[CorpusSource], *, again: bool) -> Iterator[list[CorpusSource]]:
    """The sources, with standard input or a pipe copied once when more than one epoch reads them."""
    if not again:
        yield list(sources)
        return
    from toktools.corpus.reading import CorpusSource
    from toktools.io.inputs import rereadable

    with rereadable([s.path for s in sources], prefix="toktools-epochs-") as paths:
        yield [CorpusSource(path, s.json_field) for path, s in zip(paths, sources, strict=True)]
