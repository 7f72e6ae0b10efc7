"""``toktools encode --format ids|tokens|jsonl``: one output line per input line, on any engine.

Unlike the training formats, these lines are full encodings: the tokenizer's template
(``[CLS] … [SEP]``) unless ``add_special_tokens`` is off, its truncation (or ``max_length``) and
padding, pairs (``a<TAB>b``), and for ``jsonl`` tokens, offsets and type ids. The engines:

* ``reference`` and ``tokenizers`` give everything;
* ``tiktoken`` gives ids only, for what it can express: single sequences (no ``pair``), a
  template that adds no token, no padding, and truncation that keeps the head. Tokens then come
  from the id → token map; offsets (``jsonl``) are refused in one line.

``auto`` takes tiktoken when it is exact for the tokenizer (:func:`toktools.engines.analysis.analyse`)
and can express the request, else ``tokenizers``, else the reference. The output is the same
bytes on every engine.

``verify``: as for the training formats (:mod:`toktools.corpus.verify`), lines spread over the
input are re-encoded by the reference in a forked checker, and their output lines compared
with the engine's; the first difference stops the run with one line naming the file and line,
and the output file is not written. On standard output, a batch is written only once its
sampled lines are checked.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toktools.corpus.diagnostics import TokenTally, file_limits
from toktools.corpus.long_lines import LongLines, Row, check_whole, head_row, plan, write_streamed
from toktools.errors import ToktoolsError, warn
from toktools.io.serde_floats import dumps_for_serde

TEXT_FORMATS = ("ids", "tokens", "jsonl")
BATCH_LINES = 20000
DEFAULT_VERIFY = 16


@dataclass
class TextResult:
    engine: str
    lines: int
    tokens: int
    seconds: float
    verified: int = 0
    verified_bytes: int = 0


@dataclass
class _Line:
    """An input line (without its ``\\n``), with where it comes from, for --verify."""

    text: str
    source: int
    line: int


class _Lines:
    """The lines of the inputs, as :func:`toktools.corpus.reading.read_lines` reads them, numbered, with
    how far into the inputs on disk the reading is (where --verify takes its sample)."""

    def __init__(self, names: Sequence[str]) -> None:
        from toktools.corpus.reading import CorpusSource

        self.sources = [CorpusSource(name) for name in names]
        self.total = sum(s.size() for s in self.sources if not s.is_stdin and Path(s.path).is_file())
        self.bytes_done = 0

    def __iter__(self) -> Iterator[_Line]:
        from toktools.corpus.reading import numbered_lines

        for index, number, line in numbered_lines(self.sources, self._read):
            if line.endswith("\n"):
                line = line[:-1]  # rebound: a long line is not held twice while it is encoded
            yield _Line(line, index, number)

    def _read(self, done: int) -> None:
        self.bytes_done = done


def tiktoken_limit(doc: Mapping[str, Any], *, fmt: str, pair: bool, add_special_tokens: bool) -> str | None:
    """Why tiktoken cannot produce this output (one line), or None when it can."""
    if fmt == "jsonl":
        return "it gives ids only, and --format jsonl needs offsets"
    if pair:
        return "it cannot encode pairs (--pair)"
    if doc.get("padding"):
        return "it cannot pad (the tokenizer has padding on)"
    truncation = doc.get("truncation")
    if truncation and (truncation.get("direction", "Right") != "Right" or truncation.get("stride", 0)):
        return "it only keeps the head of a long encoding (the tokenizer truncates otherwise)"
    if add_special_tokens and _template_adds_tokens(doc.get("post_processor")):
        return "it cannot add this tokenizer's template tokens (use --no-add-special-tokens, or another engine)"
    return None


def _template_adds_tokens(node: Mapping[str, Any] | None) -> bool:
    if not node:
        return False
    kind = node.get("type")
    if kind == "ByteLevel":
        return False  # offsets only
    if kind == "Sequence":
        return any(_template_adds_tokens(p) for p in node.get("processors") or [])
    if kind == "TemplateProcessing":
        return any("SpecialToken" in piece for piece in node.get("single") or [])
    return True  # Bert, Roberta: [CLS]/[SEP], <s>/</s>


class _Reference:
    name = "reference"

    def __init__(self, doc: Mapping[str, Any], max_length: int | None, workers: int | None) -> None:
        from toktools.formats import from_tokenizer_json

        try:
            self.tokenizer = from_tokenizer_json(doc)
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise ToktoolsError(
                f"not a tokenizer.json this version understands ({type(err).__name__}: {err})"
            ) from None
        if max_length is not None:
            self.tokenizer.enable_truncation(max_length)
        self.workers = workers

    def encode(self, inputs: Sequence[Any], add_special_tokens: bool) -> list[Row]:
        return [
            Row(e.ids, e.tokens, e.offsets, e.type_ids)
            for e in self.tokenizer.encode_batch(inputs, add_special_tokens=add_special_tokens, workers=self.workers)
        ]


class _Tokenizers:
    name = "tokenizers"

    def __init__(self, doc: Mapping[str, Any], max_length: int | None) -> None:
        import tokenizers

        try:
            self.tokenizer = tokenizers.Tokenizer.from_str(dumps_for_serde(doc))
        except Exception as err:  # tokenizers raises plain Exception subclasses
            raise ToktoolsError(f"engine tokenizers cannot load this tokenizer: {str(err).splitlines()[0]}") from None
        if max_length is not None:
            self.tokenizer.enable_truncation(max_length)

    def encode(self, inputs: Sequence[Any], add_special_tokens: bool) -> list[Row]:
        return [
            Row(e.ids, e.tokens, [list(o) for o in e.offsets], e.type_ids)
            for e in self.tokenizer.encode_batch(list(inputs), add_special_tokens=add_special_tokens)
        ]


class _Tiktoken:
    name = "tiktoken"

    def __init__(self, engine: Any, doc: Mapping[str, Any], max_length: int | None) -> None:
        from toktools.corpus.prepared_tokenizer import token_ids

        self.engine = engine
        truncation = doc.get("truncation")
        self.limit = max_length if max_length is not None else (truncation or {}).get("max_length")
        self.id_to_token = {i: t for t, i in token_ids(doc).items()}

    def encode(self, inputs: Sequence[Any], add_special_tokens: bool) -> list[Row]:
        rows = self.engine.encode_batch(inputs)
        if self.limit is not None:
            rows = [ids[: self.limit] for ids in rows]
        lookup = self.id_to_token.__getitem__
        return [Row(ids, list(map(lookup, ids))) for ids in rows]


class _SentencePiece(_Tiktoken):
    """``SentencePieceProcessor`` itself: ids only, as tiktoken."""

    name = "sentencepiece"


def _engine(
    name: str,
    doc: dict[str, Any],
    fingerprint: str,
    *,
    fmt: str,
    pair: bool,
    add_special_tokens: bool,
    max_length: int | None,
    workers: int | None,
) -> Any:
    from toktools.engines.analysis import analyse
    from toktools.engines.base import corpus_document
    from toktools.engines.choice import ENGINES, make_engine
    from toktools.engines.tiktoken_engine import tiktoken_available

    if name not in ENGINES:
        raise ToktoolsError(f"unknown engine {name!r}; choose one of {', '.join(ENGINES)}")
    from toktools.sentencepiece.rule_marker import follows_sentencepiece

    if follows_sentencepiece(doc):  # a .model under the sentencepiece rule
        if name == "sentencepiece":
            if pair or fmt != "ids" or (add_special_tokens and doc.get("post_processor")):
                raise ToktoolsError("engine sentencepiece writes --format ids only (no --pair, template or tokens)")
            engine = make_engine("sentencepiece", corpus_document(doc), workers=workers)
            return _SentencePiece(engine, doc, max_length)
        if name != "auto" and name != "reference":
            make_engine(name, corpus_document(doc))  # its one-line refusal
        return _Reference(doc, max_length, workers)
    if (doc.get("model") or {}).get("dropout"):  # BPE-dropout: only the reference reproduces it
        if name not in ("auto", "reference"):
            raise ToktoolsError(f"engine {name} cannot reproduce BPE-dropout; use --engine reference")
        return _Reference(doc, max_length, workers)
    if name == "reference":
        return _Reference(doc, max_length, workers)
    if name == "tokenizers":
        return _Tokenizers(doc, max_length)
    whole = corpus_document(doc)  # what tiktoken sees: no truncation, no padding
    limit = tiktoken_limit(doc, fmt=fmt, pair=pair, add_special_tokens=add_special_tokens)
    if name == "gigatoken" or (name == "auto" and limit is None):
        if name == "gigatoken" and limit is not None:
            raise ToktoolsError(f"engine gigatoken cannot write --format {fmt} here: {limit}")
        try:
            wrapped = _Tiktoken(
                make_engine("gigatoken", whole, workers=workers, fingerprint=fingerprint), doc, max_length
            )
            wrapped.name = "gigatoken"
            return wrapped
        except ToktoolsError:
            if name == "gigatoken":
                raise
    if name == "tiktoken" and limit is not None:
        reason = analyse(whole, fingerprint).tiktoken_reason
        if reason is not None:  # the first thing to know
            raise ToktoolsError(f"engine tiktoken is not exact for this tokenizer: {reason}")
        raise ToktoolsError(f"engine tiktoken cannot write --format {fmt} here: {limit}")
    if limit is None and (
        name == "tiktoken" or (tiktoken_available() and analyse(whole, fingerprint).tiktoken_reason is None)
    ):
        try:
            return _Tiktoken(make_engine("tiktoken", whole, workers=workers, fingerprint=fingerprint), doc, max_length)
        except ToktoolsError:
            if name == "tiktoken":
                raise
    try:
        return _Tokenizers(doc, max_length)
    except ToktoolsError:
        return _Reference(doc, max_length, workers)


def _as_pair(line: str) -> tuple[str, str]:
    first, tab, second = line.partition("\t")
    if not tab:
        raise ToktoolsError(f"--pair expects two sequences separated by a TAB, got {line[:60]!r}")
    return first, second


@contextmanager
def _destination(output: str | Path | None) -> Iterator[Any]:
    """stdout, or a file that appears only when every line is written."""
    if output is None:
        import sys

        yield sys.stdout
        sys.stdout.flush()
        return
    from toktools.io.outputs import atomic_file

    with atomic_file(output) as out:
        yield out


class _Rendered:
    """What the --verify checker answers with: the reference's output lines for raw input lines
    (built in the checker process, with the run's settings)."""

    def __init__(
        self, doc: dict[str, Any], fmt: str, pair: bool, add_special_tokens: bool, max_length: int | None
    ) -> None:
        self.reference = _Reference(doc, max_length, workers=1)
        self.fmt, self.pair, self.add_special_tokens = fmt, pair, add_special_tokens

    def encode_batch(self, texts: list[str]) -> list[str]:
        inputs = [_as_pair(text) for text in texts] if self.pair else texts
        return [_render(self.fmt, row) for row in self.reference.encode(inputs, self.add_special_tokens)]


def _render(fmt: str, row: Row) -> str:
    if fmt == "ids":
        return " ".join(map(str, row.ids))
    if fmt == "tokens":
        return " ".join(row.tokens or [])
    return json.dumps(
        {"ids": row.ids, "tokens": row.tokens, "offsets": row.offsets, "type_ids": row.type_ids},
        ensure_ascii=False,
        separators=(",", ":"),
    )


def encode_text(
    inputs: Sequence[str | Path],
    tokenizer: Any,
    output: str | Path | None = None,
    *,
    format: str = "ids",
    engine: str = "auto",
    pair: bool = False,
    add_special_tokens: bool = True,
    max_length: int | None = None,
    workers: int | None = None,
    batch_lines: int = BATCH_LINES,
    force: bool = False,
    verify: int = DEFAULT_VERIFY,
    truncation: bool = True,
    padding: bool = True,
) -> TextResult:
    """Encode every line of ``inputs`` (files or ``-``) to ``output`` (stdout when None), one
    line each: ids or tokens separated by spaces, or a JSON object (``jsonl``). ``verify``:
    lines re-encoded by the reference to check a faster engine (0: off). ``truncation`` /
    ``padding`` False: the tokenizer file's own are not applied (when applied, a warning says so:
    :func:`toktools.corpus.diagnostics.file_limits`); many unknown or byte-fallback tokens are
    warned about at the end."""
    from functools import partial

    from toktools.corpus.prepared_tokenizer import load_document
    from toktools.corpus.reading import batched
    from toktools.corpus.shards import CollectorPause
    from toktools.corpus.verify import Verifier, start_checker
    from toktools.io.outputs import check_output_file, input_files

    started = time.perf_counter()
    if format not in TEXT_FORMATS:
        raise ToktoolsError(f"unknown text format {format!r}; choose one of {', '.join(TEXT_FORMATS)}")
    names = [str(p) for p in inputs] or ["-"]
    if output is not None:  # before any work: never over an input, never an existing file without force
        tokenizer_files = input_files(tokenizer) if isinstance(tokenizer, (str, Path)) else []
        check_output_file(output, force=force, inputs=[*names, *tokenizer_files])
    collector = CollectorPause()  # until the engine is built
    checker: Any = None
    chosen: Any = None
    verifier: Verifier | None = None
    lines = tokens = 0
    try:
        doc, fingerprint = load_document(tokenizer, whole=True, validate=True)
        doc, limits = file_limits(doc, truncation=truncation, padding=padding, max_length=max_length)
        tally = TokenTally.for_document(doc)
        # the checker is forked before the engine starts threads: it builds the reference meanwhile
        build = partial(
            _checker_build, fmt=format, pair=pair, add_special_tokens=add_special_tokens, max_length=max_length
        )
        checker = start_checker(doc, verify, engine, build)
        chosen = _engine(
            engine,
            doc,
            fingerprint,
            fmt=format,
            pair=pair,
            add_special_tokens=add_special_tokens,
            max_length=max_length,
            workers=workers,
        )
        collector.resume()
        for message in limits:  # once the run is sure to start
            warn(message)
        reader = _Lines(names)
        verifier = Verifier(chosen.name, doc, verify, reader.total, reader.sources, process=checker, build=build)
        checker = None  # the verifier closes it
        verifier.start()
        long_lines = plan(doc, chosen, pair=pair, add_special_tokens=add_special_tokens, max_length=max_length)
        with _destination(output) as out:
            for batch in batched(reader, batch_lines):
                if any(long_lines.is_long(line.text) for line in batch):
                    tokens += _write_with_long_lines(
                        out,
                        batch,
                        chosen,
                        long_lines,
                        verifier,
                        reader,
                        output,
                        format,
                        pair,
                        add_special_tokens,
                        tally,
                    )
                    lines += len(batch)
                    continue
                texts = [line.text for line in batch]
                rows = chosen.encode([_as_pair(text) for text in texts] if pair else texts, add_special_tokens)
                rendered = [_render(format, row) for row in rows]
                verifier.check(batch, rendered, reader.bytes_done)
                if output is None:
                    verifier.sync()  # standard output cannot be taken back: check before writing
                out.write("\n".join(rendered) + "\n")
                tally.add_lists(row.ids for row in rows)
                lines += len(rows)
                tokens += sum(len(row.ids) for row in rows)
            verifier.sync()  # every sampled line checked before the output file is renamed into place
    finally:
        collector.resume()
        if checker is not None:
            checker.close()
        if verifier is not None:
            verifier.close()
        close = getattr(getattr(chosen, "engine", None), "close", None)
        if close is not None:
            close()
    tally.warn()
    return TextResult(chosen.name, lines, tokens, time.perf_counter() - started, verifier.done, verifier.bytes_checked)


def _write_with_long_lines(
    out: Any,
    batch: list[_Line],
    chosen: Any,
    long_lines: LongLines,
    verifier: Any,
    reader: _Lines,
    output: str | Path | None,
    fmt: str,
    pair: bool,
    add_special_tokens: bool,
    tally: TokenTally,
) -> int:
    """A batch holding lines longer than a segment: the ordinary lines are encoded together
    (and sampled for --verify, which never takes a line that long), each long one as
    :mod:`toktools.corpus.long_lines` plans; the lines are written in order. Its token count."""
    short = [line for line in batch if not long_lines.is_long(line.text)]
    texts = [line.text for line in short]
    rows = chosen.encode([_as_pair(text) for text in texts] if pair else texts, add_special_tokens) if short else []
    short_rendered = [_render(fmt, row) for row in rows]
    verifier.check(short, short_rendered, reader.bytes_done)
    if output is None:
        verifier.sync()
    tally.add_lists(row.ids for row in rows)
    tokens = sum(len(row.ids) for row in rows)
    rendered = iter(short_rendered)
    for line in batch:
        if not long_lines.is_long(line.text):
            out.write(next(rendered) + "\n")
            continue
        where = f"{reader.sources[line.source].path}, line {line.line}"
        if long_lines.mode == "stream":
            assert long_lines.template is not None
            tokens += write_streamed(out, chosen, line.text, fmt, long_lines.template, tally.add_lists)
            continue
        if long_lines.mode == "head":
            assert long_lines.limit is not None
            row = head_row(chosen, line.text, long_lines.limit, add_special_tokens)
        else:
            check_whole(line.text, where)
            row = chosen.encode([_as_pair(line.text)] if pair else [line.text], add_special_tokens)[0]
        out.write(_render(fmt, row) + "\n")
        tally.add_lists([row.ids])
        tokens += len(row.ids)
    return tokens


def _checker_build(
    doc: dict[str, Any], *, fmt: str, pair: bool, add_special_tokens: bool, max_length: int | None
) -> tuple[Any, str]:
    """In the --verify checker: the reference rendering this run's output lines, or why not."""
    try:
        return _Rendered(doc, fmt, pair, add_special_tokens, max_length), ""
    except ToktoolsError as err:
        return None, str(err)
    except Exception as err:  # a bug must still reach the user as one line
        return None, f"the reference engine cannot be built for --verify ({type(err).__name__}: {err})"
