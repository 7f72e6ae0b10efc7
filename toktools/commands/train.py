"""`toktools train bytebpe|wordpiece`: train a vocabulary from corpora."""
from __future__ import annotations

import os
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Sequence

import click

from toktools.errors import ToktoolsError
from toktools.commands._shared import _cap_workers, _progress, _split_list, cluster_options
from toktools.commands.count import _count_settings, _load_counts
from toktools.trainers import get_trainer


def _training_run_options(command: Any) -> Any:
    """The options both `train` commands share: backend, workers, input handling, output."""
    for option in reversed([
        click.option("--backend", type=click.Choice(["reference", "fast"]), default="reference", show_default=True,
                     help="reference: toktools' pure Python; fast: HuggingFace tokenizers."),
        click.option("--workers", type=click.IntRange(min=1), default=None, callback=_cap_workers,
                     help="Processes that count words (default: all cores). Output is identical for any value."),
        click.option("--errors", type=click.Choice(["strict", "replace", "skip"]), default="strict", show_default=True,
                     help="What to do with invalid UTF-8 in the corpus."),
        click.option("--field", "json_field", default=None, help="Read JSON Lines and take the text from this field."),
        click.option("--force", is_flag=True, help="Overwrite files already in the output directory."),
        click.option("--progress/--no-progress", default=True, help="Show a progress bar on stderr (only on a terminal)."),
    ]):
        command = option(command)
    return command


@click.group()
def train() -> None:
    """Train a vocabulary from corpora (reference or fast backend).

    \b
    Examples:
      toktools train bytebpe wiki.txt.gz -o my-bpe --vocab-size 50000 --special-tokens "<s>,<pad>,</s>,<unk>,<mask>"
    """


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


def _on(cluster: Any) -> dict[str, Any]:
    """The training call's ``cluster=`` argument, only when --cluster was given."""
    return {} if cluster is None else {"cluster": cluster}


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


def _check_options(corpus: Sequence[str], counts_path: Path | None, backend: str, *, json_field: str | None,
                   errors: str, check: bool, algorithm: str = "bpe", specials: Sequence[str] = (),
                   template: str = "none", min_pair_frequency: int | None = None, cluster: Any = None) -> None:
    """Every combination of options, checked before any work: a conflict is a usage error."""
    if cluster is not None and (backend == "fast" or counts_path is not None):
        raise click.UsageError("--cluster counts corpus files for the reference backend: not with --backend fast "
                               "or --from-counts")
    if counts_path is not None and corpus:
        raise click.UsageError("give either CORPUS files or --from-counts, not both")
    if counts_path is None and not corpus:
        raise ToktoolsError("no corpus given: name one or more files (or - for standard input), or use --from-counts")
    if backend == "fast":
        if counts_path is not None:
            raise click.UsageError("--backend fast trains from corpus files only, not from --from-counts")
        if json_field or errors != "strict":
            raise click.UsageError("--backend fast reads text files only: it takes no --field or --errors")
        if algorithm != "bpe":
            raise click.UsageError("--backend fast trains the bpe algorithm only (not --algorithm likelihood)")
        if check:
            raise click.UsageError("--check compares the reference backend with tokenizers: use it with --backend reference")
    if check and (counts_path is not None or "-" in corpus):
        raise click.UsageError("--check needs corpus files (not --from-counts or standard input)")
    if check and algorithm != "bpe":
        raise click.UsageError("--check compares with tokenizers, which trains the bpe algorithm only")
    if min_pair_frequency is not None and algorithm != "likelihood":
        raise click.UsageError("--min-pair-frequency is for --algorithm likelihood only")
    if template == "roberta" and not {"<s>", "</s>"} <= set(specials):
        raise click.UsageError("--template roberta needs <s> and </s> among the --special-tokens")


#: What ``--transformers-config`` (the default) adds to the output directory.
_CONFIG_FILES = ("tokenizer_config.json", "special_tokens_map.json")


def _prepare_output(out_dir: Path, force: bool, names: Sequence[str], transformers_config: bool,
                    inputs: Sequence[str | Path | None]) -> None:
    """Refuse, before training, an output directory that cannot be written, holds the files
    already (without --force) or would overwrite an input."""
    from toktools.outputs import check_output_dir

    extra = _CONFIG_FILES if transformers_config else ()
    check_output_dir(out_dir, [*names, *extra], force=force, inputs=inputs)


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
@click.option("--transformers-config/--no-transformers-config", default=True, show_default=True, help="Also write tokenizer_config.json and special_tokens_map.json, so transformers' AutoTokenizer.from_pretrained(DIR) knows the pad/mask/cls/sep tokens.")
@click.option("--check", is_flag=True, help="Also train with tokenizers and report parity (exit code 3 if the files differ).")
@_training_run_options
@cluster_options
def train_bytebpe_command(corpus: tuple[str, ...], counts_path: Path | None, out_dir: Path, vocab_size: int, min_frequency: int, special_tokens: str,
                          limit_alphabet: int | None, max_token_length: int | None, add_prefix_space: bool, template: str,
                          transformers_config: bool, check: bool, backend: str,
                          workers: int | None, errors: str, json_field: str | None, force: bool, progress: bool,
                          cluster: Any) -> None:
    """Train a byte-level BPE (GPT-2 / RoBERTa style) vocabulary.

    Writes vocab.json, merges.txt and tokenizer.json into the output directory. CORPUS is one
    or more files (plain, .gz, .xz, .bz2), directories, or - for standard input.

    \b
    Examples:
      toktools train bytebpe wiki.txt -o my-bpe --vocab-size 8000
      zcat wiki.txt.gz | toktools train bytebpe - -o my-bpe --special-tokens "<|endoftext|>"
    """
    specials = _split_list(special_tokens)
    _check_options(corpus, counts_path, backend, json_field=json_field, errors=errors, check=check, specials=specials,
                   template=template, cluster=cluster)
    _prepare_output(out_dir, force, (*get_trainer("bytebpe").model_files, "tokenizer.json"), transformers_config, [*corpus, counts_path])
    if limit_alphabet is None:  # the 256 byte symbols are all kept: check before any work
        _check_vocab_size(vocab_size, len(set(specials) - set(BYTE_SYMBOLS())) + 256)
    started = time.perf_counter()
    if backend == "fast":
        from toktools import fast

        with _fast_training(corpus) as paths:
            hf = fast.train_bytebpe(paths, vocab_size, min_frequency, specials,
                                    add_prefix_space=add_prefix_space, limit_alphabet=limit_alphabet,
                                    max_token_length=max_token_length)
        from toktools.formats import from_tokenizer_json
        import json

        tokenizer = from_tokenizer_json(json.loads(hf.to_str()))
        if template == "roberta":
            from toktools.presets import roberta_processing

            if not {"<s>", "</s>"} <= set(specials):
                raise ToktoolsError("the roberta template needs <s> and </s> among the special tokens")
            tokenizer.post_processor = roberta_processing(tokenizer)
    else:
        import toktools

        word_counts = _load_counts(counts_path, "bytebpe", _count_settings("bytebpe", True, None, add_prefix_space)) if counts_path else None
        with _progress(progress) as callback:
            tokenizer = toktools.train_bytebpe(list(corpus), vocab_size, min_frequency, specials, word_counts=word_counts,
                                               template=None if template == "none" else template,
                                               limit_alphabet=limit_alphabet, max_token_length=max_token_length,
                                               add_prefix_space=add_prefix_space, workers=workers,
                                               errors=errors, json_field=json_field,  # type: ignore[arg-type]
                                               progress=callback, **_on(cluster))
    _finish_training(tokenizer, out_dir, started, backend, transformers_config, vocab_size,
                     settings=dict(min_frequency=min_frequency, limit_alphabet=limit_alphabet),
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
@click.option("--transformers-config/--no-transformers-config", default=True, show_default=True, help="Also write tokenizer_config.json and special_tokens_map.json, so transformers' AutoTokenizer.from_pretrained(DIR) knows the pad/mask/cls/sep tokens.")
@click.option("--check", is_flag=True, help="Also train with tokenizers and report parity (exit code 3 if they differ beyond tokenizers' own randomness).")
@click.option("--algorithm", type=click.Choice(["bpe", "likelihood"]), default="bpe", show_default=True, help="bpe: what tokenizers trains (merges by pair count); likelihood: the original WordPiece score f(ab)/(f(a)f(b)).")
@click.option("--min-pair-frequency", type=click.IntRange(min=1), default=None, help="likelihood only: pairs rarer than this are never merged (default: max(2, --min-frequency)).")
@_training_run_options
@cluster_options
def train_wordpiece_command(corpus: tuple[str, ...], counts_path: Path | None, out_dir: Path, vocab_size: int, min_frequency: int, special_tokens: str,
                            limit_alphabet: int, lowercase: bool, strip_accents: bool | None, transformers_config: bool,
                            check: bool, algorithm: str,
                            min_pair_frequency: int | None, backend: str, workers: int | None, errors: str,
                            json_field: str | None, force: bool, progress: bool, cluster: Any) -> None:
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
    specials = _split_list(special_tokens)
    _check_options(corpus, counts_path, backend, json_field=json_field, errors=errors, check=check, algorithm=algorithm,
                   min_pair_frequency=min_pair_frequency, cluster=cluster)
    _prepare_output(out_dir, force, (*get_trainer("wordpiece").model_files, "tokenizer.json"), transformers_config, [*corpus, counts_path])
    started = time.perf_counter()
    if backend == "fast":
        from toktools import fast

        with _fast_training(corpus) as paths:
            hf = fast.train_wordpiece(paths, vocab_size, min_frequency, specials,
                                      limit_alphabet=limit_alphabet, lowercase=lowercase, strip_accents=strip_accents)
        if hf.get_vocab_size(with_added_tokens=False) <= len(set(specials)):
            raise ToktoolsError("the corpus is empty: no words to learn from")
        from toktools.presets import WordPieceTokenizer
        from toktools.wordpiece import loads_vocab_txt

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
                                                 progress=callback, **_on(cluster))
    _finish_training(tokenizer, out_dir, started, backend, transformers_config, vocab_size,
                     settings=dict(min_frequency=min_frequency, limit_alphabet=limit_alphabet),
                     check=dict(corpus=corpus, min_frequency=min_frequency, specials=specials,
                                options=dict(limit_alphabet=limit_alphabet, lowercase=lowercase,
                                             strip_accents=strip_accents)) if check else None)


def _finish_training(tokenizer: Any, out_dir: Path, started: float, backend: str, transformers_config: bool,
                     vocab_size: int, check: dict[str, Any] | None, settings: dict[str, Any] | None = None) -> None:
    """What every training ends with: refuse an impossible size, write the files atomically,
    print the summary, and with ``--check`` the parity report."""
    _check_vocab_size(vocab_size, len(tokenizer.vocab) if len(tokenizer.vocab) > vocab_size else 0)
    written = _save(tokenizer, out_dir, transformers_config)
    elapsed = time.perf_counter() - started
    _summary(tokenizer, written, elapsed, backend, requested=vocab_size, settings=settings or {})
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


def _summary(tokenizer: Any, written: Sequence[Path], elapsed: float, backend: str, requested: int | None = None,
             settings: dict[str, Any] | None = None) -> None:
    """What training made, on stderr; when the vocabulary came out smaller than asked, why
    (and which option changes it)."""
    from toktools import token_view

    result = getattr(tokenizer, "training_result", None)  # what training.py attaches (None: fast backend)
    merges = result.merges if result is not None else token_view.merges(tokenizer)
    detail = f", {len(merges)} merges" if merges is not None else ""
    if result is not None:
        detail += f", alphabet of {result.alphabet_size} characters"
    lines = [f"trained {token_view.family(tokenizer)} ({backend}) in {elapsed:.1f}s: {tokenizer.vocab_size} tokens{detail}"]
    if requested is not None and tokenizer.vocab_size < requested:
        lines += _shortfall(tokenizer.vocab_size, requested, result, settings or {})
    if merges:
        lines.append("first merges: " + ", ".join(f"{a} {b}" for a, b in merges[:5]))
    lines.append("wrote " + ", ".join(str(p) for p in written))
    for line in lines:
        click.echo(line, err=True)


def _shortfall(size: int, requested: int, result: Any, settings: dict[str, Any]) -> list[str]:
    """Why the vocabulary has fewer tokens than ``--vocab-size``."""
    lines = [f"note: the vocabulary has {size} tokens, {requested - size} fewer than --vocab-size {requested}"]
    reason = getattr(result, "stop_reason", None)
    min_frequency = settings.get("min_frequency")
    if reason in ("min_frequency", "no_pairs"):
        # (the merge engine never queues pairs below the threshold: both reasons mean this)
        lines.append(f"  merging stopped: no pair of adjacent tokens is left that occurs at least --min-frequency "
                     f"{min_frequency} times; a larger corpus, or a lower --min-frequency, gives more merges")
    dropped = getattr(result, "dropped_characters", 0)
    if dropped:
        lines.append(f"  the alphabet limit (--limit-alphabet {settings.get('limit_alphabet')}) dropped {dropped} characters "
                     f"covering {result.dropped_share:.1%} of the corpus's characters: they cannot be learnt and "
                     "become unknown; raise --limit-alphabet to keep them")
    if reason is None:
        lines.append("  (this backend / algorithm does not record why; the reference bpe training does)")
    return lines
