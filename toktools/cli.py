"""The ``toktools`` command line: parses options, calls the library, renders results.

No algorithm lives here. Results go to stdout; progress and diagnostics to stderr. Every
:class:`~toktools.errors.ToktoolsError` becomes one readable line on stderr and exit code 1.
Heavy modules are imported inside the commands so that ``toktools --help`` starts fast.
"""
from __future__ import annotations

import os
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Sequence

import click

from toktools import __version__
from toktools.errors import ToktoolsError


class ToktoolsGroup(click.Group):
    """A group that turns our errors (and Ctrl-C) into one line without a traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except ToktoolsError as err:
            click.echo(f"toktools: error: {err}", err=True)
            ctx.exit(1)
        except KeyboardInterrupt:
            click.echo("toktools: interrupted", err=True)
            ctx.exit(130)
        except BrokenPipeError:
            # `toktools encode big.txt | head`: the reader went away; that is not an error.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            ctx.exit(0)


@click.group(cls=ToktoolsGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="toktools")
def main() -> None:
    """Train, run and compare WordPiece and byte-level BPE tokenizers.

    \b
    Examples:
      toktools train bytebpe corpus.txt -o my-bpe --vocab-size 50000
      echo "Hello world" | toktools encode -t my-bpe --format tokens
    """


# ---------------------------------------------------------------------------------------------
# progress
# ---------------------------------------------------------------------------------------------


@contextmanager
def _progress(enabled: bool) -> Iterator[Any]:
    """A rich progress display on stderr: bytes read, then merges. Yields a callback
    ``(stage, done, total)`` or None when disabled or stderr is not a terminal."""
    if not enabled or not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    console = Console(stderr=True)
    tasks: dict[str, Any] = {}
    with Progress(TextColumn("[bold]{task.description:<8}"), BarColumn(), TextColumn("{task.fields[amount]}"),
                  TimeElapsedColumn(), TimeRemainingColumn(), console=console, transient=False) as progress:
        def update(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                label = {"read": "reading", "merge": "merging", "encode": "encoding"}.get(stage, stage)
                tasks[stage] = progress.add_task(label, total=total or None, amount="")
            amount = f"{done}/{total} merges" if stage == "merge" else f"{done / 1e6:.1f}/{total / 1e6:.1f} MB"
            progress.update(tasks[stage], completed=done, total=total or None, amount=amount)
        yield update


# ---------------------------------------------------------------------------------------------
# train
# ---------------------------------------------------------------------------------------------


def _training_run_options(command: Any) -> Any:
    """The options both `train` commands share: backend, workers, input handling, output."""
    for option in reversed([
        click.option("--backend", type=click.Choice(["reference", "fast"]), default="reference", show_default=True,
                     help="reference: toktools' pure Python; fast: HuggingFace tokenizers."),
        click.option("--workers", type=click.IntRange(min=1), default=None,
                     help="Processes that count words (default: all cores). Output is identical for any value."),
        click.option("--errors", type=click.Choice(["strict", "replace", "skip"]), default="strict", show_default=True,
                     help="What to do with invalid UTF-8 in the corpus."),
        click.option("--field", "json_field", default=None, help="Read JSON Lines and take the text from this field."),
        click.option("--force", is_flag=True, help="Overwrite files already in the output directory."),
        click.option("--progress/--no-progress", default=True, help="Show a progress bar on stderr (only on a terminal)."),
    ]):
        command = option(command)
    return command


@main.group()
def train() -> None:
    """Train a vocabulary from corpora (reference or fast backend).

    \b
    Examples:
      toktools train bytebpe wiki.txt.gz -o my-bpe --vocab-size 50000 --special-tokens "<s>,<pad>,</s>,<unk>,<mask>"
    """


def _split_list(value: str | None) -> list[str]:
    return [item for item in (value or "").split(",") if item]


@contextmanager
def _fast_training(corpus: Sequence[str]) -> Iterator[list[str]]:
    """Corpus paths for ``tokenizers`` (decompressed as needed), with its errors made ours: an
    empty corpus is refused, and invalid UTF-8 is located (file and line) by our own reader."""
    from toktools import corpus as corpus_module
    from toktools import fast

    sources = corpus_module.expand_sources(list(corpus))
    with fast.plain_files([s.path for s in sources]) as paths:
        if all(os.path.getsize(p) == 0 for p in paths):
            raise ToktoolsError("the corpus is empty: no words to learn from")
        try:
            yield paths
        except ToktoolsError:
            raise
        except Exception as err:  # tokenizers raises plain Exceptions
            if "UTF-8" in str(err):
                for _ in corpus_module.iter_chunks(sources):  # raises with the file and line
                    pass
            raise ToktoolsError(f"tokenizers failed: {err}") from None


def BYTE_SYMBOLS() -> list[str]:  # noqa: N802 - a constant, imported lazily
    from toktools.bytelevel import ALPHABET

    return ALPHABET


def _check_vocab_size(vocab_size: int, smallest: int) -> None:
    """Refuse a vocabulary size that the special tokens and the alphabet alone exceed
    (``tokenizers`` would silently return a larger vocabulary with no merges)."""
    if vocab_size < smallest:
        raise ToktoolsError(f"vocab size {vocab_size} is smaller than the alphabet: the special tokens and the "
                            f"alphabet alone make {smallest} tokens; use --vocab-size {smallest} or more "
                            "(or a smaller --limit-alphabet)")


def _check_inputs(corpus: Sequence[str], counts_path: Path | None, backend: str) -> None:
    if counts_path is not None and corpus:
        raise ToktoolsError("give either CORPUS files or --from-counts, not both")
    if counts_path is None and not corpus:
        raise ToktoolsError("no corpus given: name one or more files (or - for standard input), or use --from-counts")
    if counts_path is not None and backend == "fast":
        raise ToktoolsError("--backend fast trains from corpus files only, not from --from-counts")


def _prepare_output(out_dir: Path, force: bool, names: Sequence[str]) -> None:
    existing = [name for name in names if (out_dir / name).exists()]
    if existing and not force:
        raise ToktoolsError(f"{out_dir} already holds {', '.join(existing)}; use --force to overwrite")


@train.command("bytebpe")
@click.argument("corpus", nargs=-1)
@click.option("--from-counts", "counts_path", type=click.Path(dir_okay=False, path_type=Path), default=None, help="Train from a counts file written by `toktools count --model bytebpe` instead of a corpus.")
@click.option("-o", "--output", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path), help="Directory to write vocab.json, merges.txt and tokenizer.json into.")
@click.option("--vocab-size", default=30000, show_default=True, type=click.IntRange(min=1), help="Size of the vocabulary, special tokens and alphabet included.")
@click.option("--min-frequency", default=2, show_default=True, type=click.IntRange(min=0), help="Stop merging when the best pair is rarer than this.")
@click.option("--special-tokens", default="", help="Comma-separated special tokens; they get the first ids, in order.")
@click.option("--limit-alphabet", type=click.IntRange(min=0), default=None, help="Keep at most this many initial characters (the most frequent).")
@click.option("--max-token-length", type=click.IntRange(min=1), default=None, help="Do not create tokens of this many bytes or more (tokenizers' semantics).")
@click.option("--add-prefix-space/--no-add-prefix-space", default=False, show_default=True, help="Prefix every line with a space.")
@click.option("--template", type=click.Choice(["none", "roberta"]), default="none", show_default=True, help="roberta: encode adds <s> A </s> (needs <s> and </s> in --special-tokens).")
@click.option("--transformers-config", is_flag=True, help="Also write tokenizer_config.json and special_tokens_map.json for transformers' AutoTokenizer.")
@click.option("--check", is_flag=True, help="Also train with tokenizers and report parity (exit code 3 if the files differ).")
@_training_run_options
def train_bytebpe_command(corpus: tuple[str, ...], counts_path: Path | None, out_dir: Path, vocab_size: int, min_frequency: int, special_tokens: str,
                          limit_alphabet: int | None, max_token_length: int | None, add_prefix_space: bool, template: str,
                          transformers_config: bool, check: bool, backend: str,
                          workers: int | None, errors: str, json_field: str | None, force: bool, progress: bool) -> None:
    """Train a byte-level BPE (GPT-2 / RoBERTa style) vocabulary.

    Writes vocab.json, merges.txt and tokenizer.json into the output directory. CORPUS is one
    or more files (plain, .gz, .xz, .bz2), directories, or - for standard input.

    \b
    Examples:
      toktools train bytebpe wiki.txt -o my-bpe --vocab-size 8000
      zcat wiki.txt.gz | toktools train bytebpe - -o my-bpe --special-tokens "<|endoftext|>"
    """
    names = ("vocab.json", "merges.txt", "tokenizer.json")
    _check_inputs(corpus, counts_path, backend)
    _prepare_output(out_dir, force, names)
    specials = _split_list(special_tokens)
    if limit_alphabet is None:  # the 256 byte symbols are all kept: check before any work
        _check_vocab_size(vocab_size, len(set(specials) - set(BYTE_SYMBOLS())) + 256)
    started = time.perf_counter()
    if backend == "fast":
        if json_field or errors != "strict":
            raise ToktoolsError("--backend fast reads text files only (no --field or --errors)")
        from toktools import fast

        with _fast_training(corpus) as paths:
            hf = fast.train_bytebpe(paths, vocab_size, min_frequency, specials,
                                    add_prefix_space=add_prefix_space, limit_alphabet=limit_alphabet,
                                    max_token_length=max_token_length)
        from toktools.formats import from_tokenizer_json
        import json

        tokenizer = from_tokenizer_json(json.loads(hf.to_str()))
        if template == "roberta":
            from toktools.encoding import TemplateProcessor

            if not {"<s>", "</s>"} <= set(specials):
                raise ToktoolsError("the roberta template needs <s> and </s> among the special tokens")
            tokenizer.post_processor = TemplateProcessor.roberta(("<s>", tokenizer.vocab["<s>"]), ("</s>", tokenizer.vocab["</s>"]))
    else:
        import toktools

        word_counts = _load_counts(counts_path, "bytebpe", _count_settings("bytebpe", True, None, add_prefix_space)) if counts_path else None
        with _progress(progress) as callback:
            tokenizer = toktools.train_bytebpe(list(corpus), vocab_size, min_frequency, specials, word_counts=word_counts,
                                               template=None if template == "none" else template,
                                               limit_alphabet=limit_alphabet, max_token_length=max_token_length,
                                               add_prefix_space=add_prefix_space, workers=workers,
                                               errors=errors, json_field=json_field,  # type: ignore[arg-type]
                                               progress=callback)
    _finish_training(tokenizer, out_dir, started, backend, transformers_config, vocab_size,
                     check=dict(corpus=corpus, min_frequency=min_frequency, specials=specials,
                                options=dict(limit_alphabet=limit_alphabet, max_token_length=max_token_length,
                                             add_prefix_space=add_prefix_space)) if check else None)


@train.command("wordpiece")
@click.argument("corpus", nargs=-1)
@click.option("--from-counts", "counts_path", type=click.Path(dir_okay=False, path_type=Path), default=None, help="Train from a counts file written by `toktools count --model wordpiece` instead of a corpus.")
@click.option("-o", "--output", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path), help="Directory to write vocab.txt and tokenizer.json into.")
@click.option("--vocab-size", default=30000, show_default=True, type=click.IntRange(min=1), help="Size of the vocabulary, special tokens and alphabet included.")
@click.option("--min-frequency", default=2, show_default=True, type=click.IntRange(min=0), help="Stop merging when the best pair is rarer than this.")
@click.option("--special-tokens", default="[PAD],[UNK],[CLS],[SEP],[MASK]", show_default=True, help="Comma-separated special tokens; they get the first ids, in order.")
@click.option("--limit-alphabet", type=click.IntRange(min=0), default=1000, show_default=True, help="Keep at most this many initial characters (the most frequent; ties: lower code point).")
@click.option("--lowercase/--cased", default=True, show_default=True, help="Lower-case (and strip accents) like bert-base-uncased, or keep case.")
@click.option("--strip-accents/--keep-accents", default=None, help="Strip accents (default: same as --lowercase).")
@click.option("--transformers-config", is_flag=True, help="Also write tokenizer_config.json and special_tokens_map.json for transformers' AutoTokenizer.")
@click.option("--check", is_flag=True, help="Also train with tokenizers and report parity (exit code 3 if they differ beyond tokenizers' own randomness).")
@click.option("--algorithm", type=click.Choice(["bpe", "likelihood"]), default="bpe", show_default=True, help="bpe: what tokenizers trains (merges by pair count); likelihood: the original WordPiece score f(ab)/(f(a)f(b)).")
@click.option("--min-pair-frequency", type=click.IntRange(min=1), default=None, help="likelihood only: pairs rarer than this are never merged (default: max(2, --min-frequency)).")
@_training_run_options
def train_wordpiece_command(corpus: tuple[str, ...], counts_path: Path | None, out_dir: Path, vocab_size: int, min_frequency: int, special_tokens: str,
                            limit_alphabet: int, lowercase: bool, strip_accents: bool | None, transformers_config: bool,
                            check: bool, algorithm: str,
                            min_pair_frequency: int | None, backend: str, workers: int | None, errors: str,
                            json_field: str | None, force: bool, progress: bool) -> None:
    """Train a BERT WordPiece vocabulary (vocab.txt + tokenizer.json).

    By default this is what tokenizers' BertWordPieceTokenizer.train does: BERT normalisation
    (lower-casing, accent stripping, spaces around CJK characters), punctuation splitting, BPE
    merges with ## continuation pieces. CORPUS is one or more files (plain, .gz, .xz, .bz2),
    directories, or - for standard input.

    \b
    Examples:
      toktools train wordpiece wiki.txt -o my-bert --vocab-size 30000
      toktools train wordpiece zh.txt -o zh-bert --cased --limit-alphabet 8000
      toktools train wordpiece wiki.txt -o lk-bert --algorithm likelihood --min-pair-frequency 5
    """
    _check_inputs(corpus, counts_path, backend)
    _prepare_output(out_dir, force, ("vocab.txt", "tokenizer.json"))
    specials = _split_list(special_tokens)
    started = time.perf_counter()
    if backend == "fast":
        if json_field or errors != "strict" or algorithm != "bpe":
            raise ToktoolsError("--backend fast reads text files only (no --field or --errors) and trains the bpe algorithm")
        from toktools import fast

        with _fast_training(corpus) as paths:
            hf = fast.train_wordpiece(paths, vocab_size, min_frequency, specials,
                                      limit_alphabet=limit_alphabet, lowercase=lowercase, strip_accents=strip_accents)
        if hf.get_vocab_size(with_added_tokens=False) <= len(set(specials)):
            raise ToktoolsError("the corpus is empty: no words to learn from")
        from toktools.wordpiece import WordPieceTokenizer, loads_vocab_txt

        tokenizer = WordPieceTokenizer.bert(loads_vocab_txt(fast.wordpiece_vocab_txt(hf)), lowercase=lowercase,
                                            strip_accents=strip_accents)
        tokenizer.add_special_tokens(specials)
    else:
        import toktools

        word_counts = (_load_counts(counts_path, "wordpiece", _count_settings("wordpiece", lowercase, strip_accents, False))
                       if counts_path else None)
        with _progress(progress) as callback:
            tokenizer = toktools.train_wordpiece(list(corpus), vocab_size, min_frequency, specials, word_counts=word_counts,
                                                 limit_alphabet=limit_alphabet, lowercase=lowercase,
                                                 strip_accents=strip_accents, algorithm=algorithm,
                                                 min_pair_frequency=min_pair_frequency, workers=workers,
                                                 errors=errors, json_field=json_field,  # type: ignore[arg-type]
                                                 progress=callback)
    if check and algorithm != "bpe":
        raise ToktoolsError("--check compares with tokenizers, which trains the bpe algorithm only")
    _finish_training(tokenizer, out_dir, started, backend, transformers_config, vocab_size,
                     check=dict(corpus=corpus, min_frequency=min_frequency, specials=specials,
                                options=dict(limit_alphabet=limit_alphabet, lowercase=lowercase,
                                             strip_accents=strip_accents)) if check else None)


def _finish_training(tokenizer: Any, out_dir: Path, started: float, backend: str, transformers_config: bool,
                     vocab_size: int, check: dict[str, Any] | None) -> None:
    """What every training ends with: refuse an impossible size, write the files atomically,
    print the summary, and with ``--check`` the parity report."""
    _check_vocab_size(vocab_size, len(tokenizer.vocab) if len(tokenizer.vocab) > vocab_size else 0)
    written = _save(tokenizer, out_dir, transformers_config)
    elapsed = time.perf_counter() - started
    _summary(tokenizer, written, elapsed, backend)
    if check is not None:
        _check(tokenizer, tokenizer.kind, backend=backend, seconds=elapsed, vocab_size=vocab_size, **check)


def _check(tokenizer: Any, kind: str, corpus: Sequence[str], backend: str, seconds: float, vocab_size: int,
           min_frequency: int, specials: list[str], options: dict[str, Any]) -> None:
    """``train --check``: train the other way too and print the parity report."""
    if backend != "reference":
        raise ToktoolsError("--check compares the reference backend with tokenizers: use it with --backend reference")
    if not corpus or "-" in corpus:
        raise ToktoolsError("--check needs corpus files (not --from-counts or standard input)")
    from toktools import parity

    report = parity.check_trained(kind, tokenizer, list(corpus), vocab_size, min_frequency=min_frequency,
                                  special_tokens=specials, reference_seconds=seconds, **options)
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


def _summary(tokenizer: Any, written: Sequence[Path], elapsed: float, backend: str) -> None:
    result = getattr(tokenizer, "training_result", None)
    merges = result.merges if result is not None else getattr(tokenizer, "merges", None)
    detail = f", {len(merges)} merges" if merges is not None else ""
    if result is not None:
        detail += f", alphabet of {result.alphabet_size} characters"
    lines = [f"trained {tokenizer.kind} ({backend}) in {elapsed:.1f}s: {tokenizer.vocab_size} tokens{detail}"]
    if merges:
        lines.append("first merges: " + ", ".join(f"{a} {b}" for a, b in merges[:5]))
    lines.append("wrote " + ", ".join(str(p) for p in written))
    for line in lines:
        click.echo(line, err=True)


# ---------------------------------------------------------------------------------------------
# parity
# ---------------------------------------------------------------------------------------------


@main.command()
@click.argument("kind", type=click.Choice(["wordpiece", "bytebpe"]))
@click.argument("corpus", nargs=-1, required=True)
@click.option("--vocab-size", default=8000, show_default=True, type=click.IntRange(min=1), help="Vocabulary size for both trainings.")
@click.option("--min-frequency", default=2, show_default=True, type=click.IntRange(min=0), help="Minimum pair frequency for both trainings.")
@click.option("--special-tokens", default=None, help="Comma-separated special tokens (default: none for bytebpe, BERT's five for wordpiece).")
@click.option("--limit-alphabet", type=click.IntRange(min=0), default=None, help="Alphabet limit (default: none for bytebpe, 1000 for wordpiece).")
@click.option("--heldout", "heldout_file", type=click.Path(dir_okay=False, exists=True), default=None, help="Held-out text for id agreement (default: every 50th corpus line, withheld from training).")
@click.option("--keep", "output_dir", type=click.Path(file_okay=False, path_type=Path), default=None, help="Keep both backends' files in this directory.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def parity(kind: str, corpus: tuple[str, ...], vocab_size: int, min_frequency: int, special_tokens: str | None,
           limit_alphabet: int | None, heldout_file: str | None, output_dir: Path | None, as_json: bool) -> None:
    """Train with both backends and say whether they agree, and if not, where and why.

    Compares the files byte for byte, explains the first differing merge (a tie, and how each
    side broke it), reports token-set overlap and id agreement on held-out lines. For WordPiece,
    where tokenizers is random, it also replays tokenizers' choices ("forced mode"). Exit code 3
    when the backends really differ.

    \b
    Examples:
      toktools parity bytebpe wiki.txt --vocab-size 8000
      toktools parity wordpiece wiki.txt zh.txt --vocab-size 30000 --json
    """
    import json

    from toktools import parity as parity_module

    options: dict[str, Any] = {}
    if limit_alphabet is not None:
        options["limit_alphabet"] = limit_alphabet
    report = parity_module.run_parity(kind, list(corpus), vocab_size, min_frequency=min_frequency,
                                      special_tokens=_split_list(special_tokens) if special_tokens is not None else None,
                                      heldout_file=heldout_file, output_dir=output_dir, **options)
    if as_json:
        click.echo(json.dumps(report.to_dict(), ensure_ascii=False, indent=2))
    else:
        _echo_plain_or_rich("\n".join(report.summary_lines()) + "\n",
                            [(r"\bidentical\b|\bPARITY\b|100(\.0)?%", "bold green"), (r"\bdiffer\w*|NO PARITY", "bold red")])
    if not report.ok:
        sys.exit(3)


# ---------------------------------------------------------------------------------------------
# count
# ---------------------------------------------------------------------------------------------


@main.command()
@click.argument("corpus", nargs=-1, required=True)
@click.option("-o", "--output", "out_path", required=True, type=click.Path(dir_okay=False, path_type=Path), help="Counts file to write (word<TAB>count).")
@click.option("--model", "kind", type=click.Choice(["wordpiece", "bytebpe"]), required=True, help="Which pre-processing to count words with.")
@click.option("--lowercase/--cased", default=True, show_default=True, help="wordpiece: lower-case and strip accents like bert-base-uncased.")
@click.option("--strip-accents/--keep-accents", default=None, help="wordpiece: strip accents (default: same as --lowercase).")
@click.option("--add-prefix-space/--no-add-prefix-space", default=False, show_default=True, help="bytebpe: prefix every line with a space.")
@click.option("--workers", type=click.IntRange(min=1), default=None, help="Processes that count (default: all cores). Output is identical for any value.")
@click.option("--errors", type=click.Choice(["strict", "replace", "skip"]), default="strict", show_default=True, help="What to do with invalid UTF-8 in the corpus.")
@click.option("--field", "json_field", default=None, help="Read JSON Lines and take the text from this field.")
@click.option("--force", is_flag=True, help="Overwrite an existing counts file.")
@click.option("--progress/--no-progress", default=True, help="Show a progress bar on stderr (only on a terminal).")
def count(corpus: tuple[str, ...], out_path: Path, kind: str, lowercase: bool, strip_accents: bool | None,
          add_prefix_space: bool, workers: int | None, errors: str, json_field: str | None, force: bool, progress: bool) -> None:
    """Count words once, train many times: write word counts for `train --from-counts`.

    The file starts with a header that records the normaliser and pre-tokeniser settings, so a
    training run with other settings refuses it instead of silently using it.

    \b
    Examples:
      toktools count wiki.txt.gz --model wordpiece -o wiki.counts
      toktools train wordpiece --from-counts wiki.counts -o my-bert --vocab-size 30000
    """
    from toktools import training
    from toktools.corpus import dumps_counts
    from toktools.formats import write_files_atomically

    if out_path.exists() and not force:
        raise ToktoolsError(f"{out_path} already exists; use --force to overwrite")
    settings = _count_settings(kind, lowercase, strip_accents, add_prefix_space)
    with _progress(progress) as callback:
        if kind == "bytebpe":
            counts = training.count_bytebpe_words(list(corpus), add_prefix_space=add_prefix_space, workers=workers,
                                                  errors=errors, json_field=json_field, progress=callback)  # type: ignore[arg-type]
        else:
            from toktools.bert_text import BertNormalizerConfig

            counts = training.count_wordpiece_words(list(corpus), normalizer=BertNormalizerConfig(lowercase=lowercase, strip_accents=strip_accents),
                                                    workers=workers, errors=errors, json_field=json_field, progress=callback)  # type: ignore[arg-type]
    write_files_atomically(out_path.parent if str(out_path.parent) else Path("."), {out_path.name: dumps_counts(counts, kind, settings)})
    click.echo(f"counted {sum(counts.values())} words ({len(counts)} distinct); wrote {out_path}", err=True)


def _count_settings(kind: str, lowercase: bool, strip_accents: bool | None, add_prefix_space: bool) -> dict[str, object]:
    """The settings a counts file must have been made with (compared on --from-counts)."""
    if kind == "bytebpe":
        return {"add_prefix_space": add_prefix_space, "use_regex": True}
    return {"lowercase": lowercase, "strip_accents": strip_accents, "clean_text": True, "handle_chinese_chars": True}


def _load_counts(path: Path, kind: str, expected: dict[str, object]) -> dict[str, int]:
    from toktools.corpus import read_counts

    found_kind, settings, counts = read_counts(path)
    if found_kind != kind:
        raise ToktoolsError(f"{path} holds {found_kind} counts; this is a {kind} training")
    if settings != expected:
        differ = ", ".join(f"{k}: file {settings.get(k)!r} vs now {v!r}" for k, v in expected.items() if settings.get(k) != v)
        raise ToktoolsError(f"{path} was counted with other settings ({differ}); count again or change the options")
    return counts


# ---------------------------------------------------------------------------------------------
# encode / decode
# ---------------------------------------------------------------------------------------------


@main.command()
@click.option("-t", "--tokenizer", "tokenizer_path", required=True, help="Tokenizer directory or file (tokenizer.json, vocab.json + merges.txt, vocab.txt), or a shipped vocabulary name.")
@click.argument("files", nargs=-1)
@click.option("--format", "output_format", type=click.Choice(["ids", "tokens", "jsonl", "npy", "bin"]), default="ids", show_default=True,
              help="ids/tokens: one line per input line; jsonl: ids, tokens, offsets per line; npy/bin: all ids as one array (needs -o).")
@click.option("-o", "--output", "out_path", type=click.Path(dir_okay=False, path_type=Path), default=None, help="Write here instead of stdout (written atomically).")
@click.option("--dtype", type=click.Choice(["auto", "uint16", "uint32"]), default="auto", show_default=True, help="npy/bin: integer type (auto: uint16 if every id fits).")
@click.option("--pair", is_flag=True, help="Each input line is two sequences separated by a TAB.")
@click.option("--add-special-tokens/--no-add-special-tokens", default=True, show_default=True, help="Add the template's special tokens ([CLS]/[SEP], <s>/</s>) if the tokenizer has one.")
@click.option("--max-length", type=click.IntRange(min=1), default=None, help="Truncate every encoding to this many tokens (special tokens included).")
@click.option("--workers", type=click.IntRange(min=1), default=None, help="Processes that encode (default: all cores for big inputs). Output is identical for any value.")
@click.option("--batch-lines", type=click.IntRange(min=1), default=20000, show_default=True, help="Lines read and encoded at a time (memory stays flat on huge files).")
@click.option("--progress/--no-progress", default=True, help="Show a progress bar on stderr when writing to a file.")
def encode(tokenizer_path: str, files: tuple[str, ...], output_format: str, out_path: Path | None, dtype: str, pair: bool,
           add_special_tokens: bool, max_length: int | None, workers: int | None, batch_lines: int, progress: bool) -> None:
    """Tokenize text: one output line per input line, or one id array for training pipelines.

    FILES default to standard input (or give -). Lines are encoded without their newline.

    \b
    Examples:
      echo "Hello world" | toktools encode -t bytebpe-50k
      toktools encode -t my-bert --format tokens notes.txt
      toktools encode -t my-bert --pair --max-length 128 --format jsonl pairs.tsv
      toktools encode -t bytebpe-50k --format npy -o train.npy corpus.txt
    """
    import json

    from toktools.corpus import batched
    from toktools.encoder_output import IdArrayWriter, choose_dtype
    from toktools.formats import load

    tokenizer = load(tokenizer_path)
    if max_length is not None:
        tokenizer.enable_truncation(max_length)
    if output_format in ("npy", "bin") and out_path is None:
        raise ToktoolsError(f"--format {output_format} writes binary data: give an output file with -o")
    dtype_name = choose_dtype(tokenizer.vocab_size) if dtype == "auto" else dtype
    if dtype_name == "uint16" and tokenizer.vocab_size > 65536:
        raise ToktoolsError(f"{tokenizer.vocab_size} ids do not fit in uint16; use --dtype uint32")
    names = files or ("-",)
    total = sum(Path(n).stat().st_size for n in names if n != "-" and Path(n).is_file())
    with _output(out_path, binary=output_format in ("npy", "bin")) as out, _progress(progress and out_path is not None) as callback:
        writer = IdArrayWriter(out, dtype_name, npy=output_format == "npy") if output_format in ("npy", "bin") else None
        done = 0
        for batch in batched(_input_lines(names), batch_lines):
            inputs = [_as_pair(line) for line in batch] if pair else batch
            encodings = tokenizer.encode_batch(inputs, add_special_tokens=add_special_tokens, workers=workers)
            if writer is not None:
                for encoding in encodings:
                    writer.write(encoding.ids)
            else:
                chunk = []
                for encoding in encodings:
                    if output_format == "ids":
                        chunk.append(" ".join(map(str, encoding.ids)))
                    elif output_format == "tokens":
                        chunk.append(" ".join(encoding.tokens))
                    else:
                        chunk.append(json.dumps({"ids": encoding.ids, "tokens": encoding.tokens,
                                                 "offsets": encoding.offsets, "type_ids": encoding.type_ids},
                                                ensure_ascii=False, separators=(",", ":")))
                out.write("\n".join(chunk) + "\n")
            done += sum(len(line.encode("utf-8")) + 1 for line in batch)
            if callback is not None and total:
                callback("encode", min(done, total), total)
        if writer is not None:
            writer.close()


def _as_pair(line: str) -> tuple[str, str]:
    first, tab, second = line.partition("\t")
    if not tab:
        raise ToktoolsError(f"--pair expects two sequences separated by a TAB, got {line[:60]!r}")
    return first, second


@contextmanager
def _output(path: Path | None, binary: bool = False) -> Iterator[Any]:
    """stdout, or a temporary file renamed over ``path`` only when everything was written."""
    if path is None:
        yield sys.stdout
        sys.stdout.flush()
        return
    import tempfile

    directory = path.parent if str(path.parent) else Path(".")
    if not directory.is_dir():
        raise ToktoolsError(f"output directory {directory} does not exist")
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    from toktools.formats import _umask

    os.chmod(temporary, 0o666 & ~_umask())
    try:
        with os.fdopen(handle, "wb" if binary else "w", **({} if binary else {"encoding": "utf-8", "newline": "\n"})) as out:
            yield out
        os.replace(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)


@main.command()
@click.option("-t", "--tokenizer", "tokenizer_path", required=True, help="Tokenizer directory or file, or a shipped vocabulary name.")
@click.argument("files", nargs=-1)
@click.option("--skip-special-tokens/--keep-special-tokens", default=True, show_default=True, help="Drop special tokens ([CLS], <s>, ...) from the text.")
def decode(tokenizer_path: str, files: tuple[str, ...], skip_special_tokens: bool) -> None:
    """Turn ids back into text: one line of space-separated ids per output line.

    \b
    Examples:
      echo "15496 995" | toktools decode -t my-bpe
      toktools encode -t my-bert notes.txt | toktools decode -t my-bert
    """
    from toktools.formats import load

    tokenizer = load(tokenizer_path)
    for number, line in enumerate(_input_lines(files or ("-",)), start=1):
        try:
            ids = [int(item) for item in line.split()]
        except ValueError:
            raise ToktoolsError(f"line {number}: expected space-separated integer ids, got {line[:60]!r}") from None
        sys.stdout.write(tokenizer.decode(ids, skip_special_tokens=skip_special_tokens).replace("\n", "\\n") + "\n")


# ---------------------------------------------------------------------------------------------
# convert
# ---------------------------------------------------------------------------------------------


@main.command()
@click.argument("tokenizer_path")
@click.option("--to", "target", required=True, type=click.Choice(["tokenizer.json", "vocab.txt", "vocab.json+merges.txt", "tiktoken"]), help="The layout to write.")
@click.option("-o", "--output", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path), help="Directory to write into.")
@click.option("--force", is_flag=True, help="Overwrite existing files.")
def convert(tokenizer_path: str, target: str, out_dir: Path, force: bool) -> None:
    """Write a tokenizer in another layout.

    \b
    Examples:
      toktools convert my-bpe --to tiktoken -o my-bpe-tiktoken
      toktools convert ../gpt2 --to tokenizer.json -o gpt2-json
    """
    from toktools.formats import export, load

    written = export(load(tokenizer_path), target, out_dir, overwrite=force)
    click.echo("wrote " + ", ".join(str(p) for p in written), err=True)


# ---------------------------------------------------------------------------------------------
# inspect / compare
# ---------------------------------------------------------------------------------------------


def _console() -> Any:
    """A rich console on stdout; plain (no colour, no markup) when NO_COLOR is set or stdout is
    not a terminal, so pipes and scripts get stable text."""
    from rich.console import Console

    plain = bool(os.environ.get("NO_COLOR")) or not sys.stdout.isatty()
    return Console(no_color=plain, highlight=False, emoji=False, soft_wrap=True, force_terminal=None if not plain else False)


def _echo_plain_or_rich(text: str, styles: Sequence[tuple[str, str]] = ()) -> None:
    """Print ``text``; on a colour terminal, colour the given substrings (regex, style)."""
    console = _console()
    if console.no_color or not console.is_terminal:
        sys.stdout.write(text)
        return
    from rich.text import Text

    rendered = Text(text)
    for pattern, style in styles:
        rendered.highlight_regex(pattern, style)
    console.print(rendered, end="")


@main.command()
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


@main.command()
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


def _input_lines(files: Sequence[str]) -> Iterator[str]:
    """Lines of the inputs without their ``\\n`` (``\\r`` is kept: it is part of the text);
    compressed files are read transparently."""
    from toktools.corpus import CorpusSource

    for name in files:
        if name != "-" and not Path(name).exists():
            raise ToktoolsError(f"input file not found: {name}")
        stream = CorpusSource(name).open()  # plain, .gz, .xz, .bz2 or stdin
        try:
            for number, raw in enumerate(stream, start=1):
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as err:
                    raise ToktoolsError(f"{name}, line {number}: invalid UTF-8 (byte 0x{raw[err.start]:02X})") from None
                yield line[:-1] if line.endswith("\n") else line
        finally:
            if name != "-":
                stream.close()


if __name__ == "__main__":  # pragma: no cover
    main()
