"""`toktools encode` and `toktools decode`: text to ids and back."""
from __future__ import annotations

import sys
from pathlib import Path

import click

from toktools.errors import ToktoolsError
from toktools.commands._shared import _cap_workers, _input_lines, _output, _progress


@click.command()
@click.option("-t", "--tokenizer", "tokenizer_path", required=True, help="Tokenizer directory or file (tokenizer.json, vocab.json + merges.txt, vocab.txt), or a shipped vocabulary name.")
@click.argument("files", nargs=-1)
@click.option("--format", "output_format", type=click.Choice(["ids", "tokens", "jsonl", "npy", "bin"]), default="ids", show_default=True,
              help="ids/tokens: one line per input line; jsonl: ids, tokens, offsets per line; npy/bin: all ids as one array (needs -o).")
@click.option("-o", "--output", "out_path", type=click.Path(dir_okay=False, path_type=Path), default=None, help="Write here instead of stdout (written atomically).")
@click.option("--dtype", type=click.Choice(["auto", "uint16", "uint32"]), default="auto", show_default=True, help="npy/bin: integer type (auto: uint16 if every id fits).")
@click.option("--pair", is_flag=True, help="Each input line is two sequences separated by a TAB.")
@click.option("--add-special-tokens/--no-add-special-tokens", default=True, show_default=True, help="Add the template's special tokens ([CLS]/[SEP], <s>/</s>) if the tokenizer has one.")
@click.option("--max-length", type=click.IntRange(min=1), default=None, help="Truncate every encoding to this many tokens (special tokens included).")
@click.option("--workers", type=click.IntRange(min=1), default=None, callback=_cap_workers, help="Processes that encode (default: all cores for big inputs). Output is identical for any value.")
@click.option("--batch-lines", type=click.IntRange(min=1), default=20000, show_default=True, help="Lines read and encoded at a time (memory stays flat on huge files).")
@click.option("--progress/--no-progress", default=True, help="Show a progress bar on stderr when writing to a file.")
@click.option("--force", is_flag=True, help="Overwrite an existing output file (-o).")
def encode(tokenizer_path: str, files: tuple[str, ...], output_format: str, out_path: Path | None, dtype: str, pair: bool,
           add_special_tokens: bool, max_length: int | None, workers: int | None, batch_lines: int, progress: bool,
           force: bool) -> None:
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
    from toktools.formats import load, resolve
    from toktools.outputs import check_output_file, input_files

    if output_format in ("npy", "bin") and out_path is None:
        raise click.UsageError(f"--format {output_format} writes binary data: give an output file with -o")
    if out_path is not None:  # before any work: never over an input, never an existing file without --force
        check_output_file(out_path, force=force, inputs=[*files, *input_files(resolve(tokenizer_path))])
    tokenizer = load(tokenizer_path)
    if max_length is not None:
        tokenizer.enable_truncation(max_length)
    id_space = max(tokenizer.get_vocab().values(), default=-1) + 1  # ids may be sparse: the largest decides
    dtype_name = choose_dtype(id_space) if dtype == "auto" else dtype
    if dtype_name == "uint16" and id_space > 65536:
        raise ToktoolsError(f"ids up to {id_space - 1} do not fit in uint16; use --dtype uint32")
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


@click.command()
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
