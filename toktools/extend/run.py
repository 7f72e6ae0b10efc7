"""``toktools.extend(...)``: choose the extender for the base's model, write the files, report."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from toktools.errors import ToktoolsError
from toktools.extend.base import open_base
from toktools.extend.corpus_text import read_text_lines, split_corpus
from toktools.extend.mapping import dumps_new_tokens
from toktools.extend.report import Report, measure
from toktools.extend.result import Extension
from toktools.io.outputs import write_files_atomically

#: the files ``extend`` may write, whatever the base (checked before any work)
OUTPUT_FILES = (
    "tokenizer.json",
    "vocab.json",
    "merges.txt",
    "encoder.json",
    "vocab.bpe",
    "vocab.txt",
    "tokenizer.tiktoken",
    "special_tokens.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "new_tokens.json",
)


@dataclass
class ExtendResult:
    extension: Extension
    report: Report
    written: list[Path]


def extend(
    base: str | Path,
    corpus: str | Path | Sequence[str | Path],
    output: str | Path | None = None,
    add: int = 10_000,
    *,
    keep_segmentation_of: str | Path | Sequence[str | Path] | None = None,
    use_unused: bool = False,
    min_frequency: int = 2,
    held_out_every: int = 20,
    pattern: str | None = None,
    overwrite: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> ExtendResult:
    """Extend the tokenizer at ``base`` with up to ``add`` tokens learned from ``corpus`` (files),
    keeping every existing id, merge and piece; write it into ``output`` (if given) in the base's
    own formats, with ``new_tokens.json`` (the embedding map), and report on a held-out slice of
    the corpus (every ``held_out_every``-th line) and on ``keep_segmentation_of`` (files whose ids
    the extension keeps: BPE merges and sentencepiece pieces that would change them are left out).

    BPE (``tokenizer.json``, ``vocab.json`` + ``merges.txt``, tiktoken ranks: ``pattern`` is the
    split regex of a ranks file, GPT-2's by default) continues training from the base's merges;
    WordPiece appends pieces (``use_unused``: into ``[unusedN]`` slots first); a sentencepiece
    ``.model`` gets the pieces of a model of its type trained on the corpus."""
    if add < 0:
        raise ToktoolsError(f"--add must be 0 or more, not {add}")
    corpus_paths = [str(corpus)] if isinstance(corpus, (str, Path)) else [str(p) for p in corpus]
    keep_paths = (
        []
        if keep_segmentation_of is None
        else [str(keep_segmentation_of)]
        if isinstance(keep_segmentation_of, (str, Path))
        else [str(p) for p in keep_segmentation_of]
    )
    found = open_base(base, pattern)
    if output is not None:
        from toktools.io.outputs import check_output_dir, input_files

        inputs = [*input_files(found.path), *map(Path, corpus_paths), *map(Path, keep_paths)]
        check_output_dir(Path(output), [*OUTPUT_FILES, *found.files], force=overwrite, inputs=inputs)
    lines = split_corpus(corpus_paths, held_out_every)
    keep_lines = read_text_lines(keep_paths) if keep_paths else []
    if found.kind in ("bpe", "tiktoken"):
        from toktools.extend.bpe import extend_bpe

        extension = extend_bpe(
            found, lines.training, add, min_frequency=min_frequency, keep_lines=keep_lines, progress=progress
        )
        if found.kind == "tiktoken":
            from toktools.extend.tiktoken_ranks import ranks_only

            extension.files = ranks_only(found, extension.tokenizer, extension.files)
            extension.notes = [n for n in extension.notes if not n.startswith("tiktoken ranks not written")]
    elif found.kind == "wordpiece":
        from toktools.extend.wordpiece import extend_wordpiece

        extension = extend_wordpiece(
            found,
            lines.training,
            add,
            use_unused=use_unused,
            min_frequency=min_frequency,
            keep_lines=keep_lines,
            progress=progress,
        )
    else:
        from toktools.extend.sentencepiece import extend_sentencepiece

        extension = extend_sentencepiece(found, lines.training, add, keep_lines)
    if use_unused and found.kind != "wordpiece":
        raise ToktoolsError("--use-unused is for WordPiece vocabularies ([unusedN] slots)")
    extension.files["new_tokens.json"] = dumps_new_tokens(str(base), extension.new_tokens, extension.base_size)
    report = _report(str(base), found.tokenizer, extension, lines.held_out, keep_lines)
    written = write_files_atomically(Path(output), extension.files, overwrite=True) if output is not None else []
    return ExtendResult(extension, report, written)


def _report(name: str, base, extension: Extension, held_out: list[str], keep_lines: list[str]) -> Report:  # type: ignore[no-untyped-def]
    new_ids = {t.id for t in extension.new_tokens}
    texts = {t.id: t.text for t in extension.new_tokens}
    stats = [measure("held-out corpus", held_out, base, extension.tokenizer, new_ids, texts)]
    if keep_lines:
        stats.append(measure("--keep-segmentation-of", keep_lines, base, extension.tokenizer, new_ids, texts))
    size = extension.tokenizer.vocab_size
    return Report(name, len(extension.new_tokens), extension.base_size, size, stats, extension.notes)
