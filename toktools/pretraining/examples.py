"""Pretraining examples from a corpus: RoBERTa's packed MLM, BERT's MLM+NSP, ALBERT's MLM+SOP.

Documents are read in BERT's layout (one sentence per line, a blank line between documents) or
from JSON Lines (one document per record; its lines are its sentences), encoded once, and turned
into examples:

* ``mlm`` — RoBERTa's FULL-SENTENCES: ``[CLS] s1 s2 … [SEP]`` packed up to ``max_length``,
  crossing document boundaries with an extra separator token between documents. A sentence longer
  than a block is cut into block-sized pieces.
* ``mlm+nsp`` — google-research/bert's ``create_instances_from_document``: a target length
  (``max_length - 3``, or with ``short_seq_prob`` a random one from 2), chunks of whole sentences,
  segment A the first ``a_end`` of them; B the rest (label 0) or, half of the time and whenever the
  chunk has one sentence, sentences from a random other document (label 1), with the unused
  sentences put back; ``truncate_seq_pair`` trims the longer segment from a random end.
* ``mlm+sop`` — ALBERT: the same chunks, B always the real continuation, and half of the time the
  two are swapped (``sentence_order_label`` 1).

Masking is static (:func:`toktools.pretraining.masking.mask_tokens`, BERT's sampler, ``dupe_factor`` times
with a fresh segmentation and mask each time, as BERT) or left to load time (``dynamic``; the
collator :class:`toktools.pretraining.masking.MaskingCollator` masks).

Determinism: every random choice for document ``d`` (or packed block ``d``) in duplicate ``k``
comes from a generator seeded with ``(seed, objective, k, d)``, so the output is identical for any
number of worker processes.

Where this differs from google-research/bert (and ALBERT), point by point:

1. No global shuffles. BERT shuffles documents (which changes which document a random B comes
   from) and then all instances. We keep corpus order (duplicates one after the other); the
   training loader shuffles.
2. A random B always comes from *another* document (drawn from the others), where BERT tries 10
   times and may fall back to the same one.
3. A file boundary ends a document (BERT continues the last document of one file into the next
   unless a blank line separates them).
4. ALBERT's SOP turns a one-sentence chunk into a *random-document* pair labelled 1; here SOP
   negatives are always exact swaps, so a one-sentence chunk is cut in two at a random token
   (a chunk of one token cannot be, and is skipped and counted).
5. Masking: see :func:`toktools.pretraining.masking.mask_tokens` (count over non-special tokens; special
   tokens never chosen or used as replacements; 80/10/10 drawn as one uniform number per token).
6. Outputs are Parquet rows of variable length (``pad=True`` pads to ``max_length`` as BERT's
   TFRecords are); labels are per position (-100 where not masked) instead of BERT's
   ``masked_lm_positions`` / ``masked_lm_ids`` / ``masked_lm_weights``.
7. ``mlm+nsp`` with a single document is refused (there is no other document for a negative).
8. Whole words come from the vocabulary's markers (see :class:`toktools.pretraining.masking.MaskingInfo`) plus
   the sentence boundaries: a byte-level BPE sentence is encoded without a leading ``Ġ``, so its
   first token is marked as a word start explicitly (with ``--dynamic``, in a ``sentence_starts``
   column of positions that the collator reads, next to ``chinese_ref`` for Chinese words).

Like BERT, the whole corpus is held in memory while examples are made (as int32 token ids, 4
bytes a token, plus one offset per sentence).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from toktools.errors import ToktoolsError

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from toktools.corpus.reading import CorpusSource
    from toktools.pretraining.masking import ChineseWords, MaskingInfo
    from toktools.tokenizer import Tokenizer

Objective = Literal["mlm", "mlm+nsp", "mlm+sop"]
OBJECTIVES: tuple[str, ...] = ("mlm", "mlm+nsp", "mlm+sop")
#: Progress: (stage, done, total); stages "read" (bytes), "encode" (sentences), "examples" (units).
Progress = Callable[[str, int, int], None]
_OBJECTIVE_STREAM = {"mlm": 1, "mlm+nsp": 2, "mlm+sop": 3}
_ENCODE_BATCH = 20000


@dataclass(frozen=True)
class PretrainSettings:
    objective: Objective = "mlm"
    max_length: int = 512
    mask_prob: float = 0.15
    max_predictions: int | None = None
    whole_word: Literal["off", "pieces", "zh"] = "off"
    dupe_factor: int = 1
    dynamic: bool = False
    short_seq_prob: float = 0.1
    seed: int = 12345
    pad: bool = False
    mask_replace_prob: float = 0.8
    random_replace_prob: float = 0.1

    @property
    def label_name(self) -> str | None:
        return {"mlm+nsp": "next_sentence_label", "mlm+sop": "sentence_order_label"}.get(self.objective)

    def check(self) -> None:
        """Refuse impossible settings with one line, before any work."""
        if self.objective not in OBJECTIVES:
            raise ToktoolsError(f"unknown objective {self.objective!r}; choose one of {', '.join(OBJECTIVES)}")
        specials = 2 if self.objective == "mlm" else 3
        least = specials + (1 if self.objective == "mlm" else 2)
        if self.max_length < least:
            template = "[CLS] text [SEP]" if self.objective == "mlm" else "[CLS] A [SEP] B [SEP]"
            raise ToktoolsError(
                f"--max-length {self.max_length} leaves no room for text: {template} takes {specials} special "
                f"tokens, so the least is {least}"
            )
        if not 0 <= self.mask_prob <= 1:
            raise ToktoolsError(f"--mask-prob {self.mask_prob} is not between 0 and 1")
        if not 0 <= self.short_seq_prob <= 1:
            raise ToktoolsError(f"--short-seq-prob {self.short_seq_prob} is not between 0 and 1")
        if self.dupe_factor < 1:
            raise ToktoolsError("--dupe-factor must be at least 1")
        if self.max_predictions is not None and self.max_predictions < 1:
            raise ToktoolsError("--max-predictions must be at least 1")
        if self.dynamic and self.objective == "mlm" and self.dupe_factor > 1:
            raise ToktoolsError(
                "--dupe-factor writes differently masked copies; with --dynamic the collator masks at load time, "
                "so copies of the same mlm blocks would be identical"
            )


@dataclass
class Summary:
    """What was written: counts for the human summary and ``--json``."""

    documents: int = 0
    sentences: int = 0
    examples: int = 0
    tokens: int = 0  # every non-padding token, special ones included
    text_tokens: int = 0  # non-special tokens: the candidates for masking
    masked: int = 0
    masked_as_mask: int = 0
    masked_as_random: int = 0
    masked_kept: int = 0
    negatives: int = 0  # label 1: random next (NSP) or swapped (SOP)
    truncated_tokens: int = 0  # text tokens that truncate_seq_pair removed from the pairs (NSP, SOP)
    single_sentence_documents: int = 0  # documents of one sentence (line): NSP's B is then always random
    skipped_documents: int = 0
    skipped_chunks: int = 0
    seconds: float = 0.0
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def masked_share(self) -> float:
        return self.masked / self.text_tokens if self.text_tokens else 0.0

    def as_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["masked_share"] = round(self.masked_share, 6)
        out["seconds"] = round(self.seconds, 3)
        return out


# ---------------------------------------------------------------------------------------------
# Reading and encoding documents
# ---------------------------------------------------------------------------------------------


def iter_documents(sources: Sequence[CorpusSource], progress: Progress | None = None) -> Iterator[list[str]]:
    """Documents as lists of sentences (stripped, non-empty lines). Text files: a blank line
    ends a document, and so does the end of a file. JSON Lines (a source with ``json_field``):
    each record is a document and the lines of its field are its sentences."""
    from toktools.corpus.reading import (
        json_field_text,
        raw_lines,
    )  # a corrupt or truncated .gz/.xz is one line naming it

    total = sum(s.size() for s in sources)
    done = 0
    for source in sources:
        document: list[str] = []
        for number, raw in enumerate(raw_lines(source), start=1):
            done += len(raw)
            if progress is not None and number % 4096 == 0:
                progress("read", min(done, total), total)
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as err:
                raise ToktoolsError(
                    f"{source.path}, line {number}: invalid UTF-8 (byte 0x{raw[err.start]:02X})"
                ) from None
            if source.json_field:
                if line.strip():
                    text = json_field_text(line, source.json_field, source.path, number)
                    sentences = [s.strip() for s in text.split("\n")]
                    if any(sentences):
                        yield [s for s in sentences if s]
                continue
            line = line.strip()
            if line:
                document.append(line)
            elif document:
                yield document
                document = []
        if document:
            yield document
    if progress is not None:
        progress("read", total, total)


@dataclass
class EncodedCorpus:
    """All tokens in flat arrays: ``ids``; ``sentence_bounds[s]:sentence_bounds[s+1]`` is sentence
    ``s``; ``document_bounds[d]:document_bounds[d+1]`` are the sentences of document ``d``;
    ``continuations`` (Chinese whole words) marks tokens that continue a word."""

    ids: np.ndarray
    sentence_bounds: np.ndarray
    document_bounds: np.ndarray
    continuations: np.ndarray | None = None

    @property
    def documents(self) -> int:
        return len(self.document_bounds) - 1

    @property
    def sentences(self) -> int:
        return len(self.sentence_bounds) - 1


def encode_documents(
    documents: Iterator[list[str]],
    tokenizer: Tokenizer,
    *,
    workers: int | None = None,
    segmenter: ChineseWords | None = None,
    progress: Progress | None = None,
) -> EncodedCorpus:
    """Encode every sentence once (no special tokens, no truncation); sentences without tokens
    and documents without sentences are dropped, as BERT does."""
    from array import array

    import numpy as np

    from toktools.corpus.long_documents import encoded_pieces, is_long, tokenizer_cuttable

    tokenizer.no_truncation()
    tokenizer.no_padding()
    all_ids = array("i")  # one flat buffer: no per-sentence objects on big corpora
    cont_parts: list[np.ndarray] = []
    sentence_lengths = array("q")
    document_sizes: list[int] = []
    pending_docs: list[list[str]] = []
    pending_count = 0

    cut = tokenizer_cuttable(tokenizer)

    def add_long(text: str) -> int:
        """A sentence longer than a segment, encoded piece by piece (flat memory); its tokens."""
        before = len(all_ids)
        for _, piece, encoding in encoded_pieces(tokenizer, text, cut, "pretrain-data: a sentence"):
            all_ids.extend(encoding.ids)
            if segmenter is not None:
                cont_parts.append(segmenter.continuations(piece, encoding.offsets))
        return len(all_ids) - before

    def flush() -> None:
        nonlocal pending_docs, pending_count
        texts = [s for doc in pending_docs for s in doc if not is_long(s)]
        encodings = iter(tokenizer.encode_batch(texts, add_special_tokens=False, workers=workers))
        for doc in pending_docs:
            kept = 0
            for text in doc:
                if is_long(text):
                    added = add_long(text)
                    if added:
                        sentence_lengths.append(added)
                        kept += 1
                    continue
                encoding = next(encodings)
                if not len(encoding.ids):
                    continue
                all_ids.extend(encoding.ids)
                if segmenter is not None:
                    cont_parts.append(segmenter.continuations(text, encoding.offsets))
                sentence_lengths.append(len(encoding.ids))
                kept += 1
            if kept:
                document_sizes.append(kept)
        if progress is not None:
            progress("encode", len(sentence_lengths), 0)
        pending_docs = []
        pending_count = 0

    for document in documents:
        pending_docs.append(document)
        pending_count += len(document)
        if pending_count >= _ENCODE_BATCH:
            flush()
    if pending_docs:
        flush()
    ids = np.frombuffer(all_ids, dtype=np.int32) if all_ids else np.zeros(0, dtype=np.int32)
    sentence_bounds = np.zeros(len(sentence_lengths) + 1, dtype=np.int64)
    np.cumsum(np.frombuffer(sentence_lengths, dtype=np.int64), out=sentence_bounds[1:])
    document_bounds = np.zeros(len(document_sizes) + 1, dtype=np.int64)
    np.cumsum(document_sizes, out=document_bounds[1:])
    continuations = None
    if segmenter is not None:
        continuations = np.concatenate(cont_parts) if cont_parts else np.zeros(0, dtype=bool)
    return EncodedCorpus(ids, sentence_bounds, document_bounds, continuations)


# ---------------------------------------------------------------------------------------------
# Examples
# ---------------------------------------------------------------------------------------------

#: A segment: a half-open range of positions in ``EncodedCorpus.ids``.
Span = tuple[int, int]
#: A packed block: spans, with ``None`` standing for a separator token between documents.
Block = list["Span | None"]


def pack_blocks(corpus: EncodedCorpus, max_length: int) -> list[Block]:
    """RoBERTa's FULL-SENTENCES: whole sentences fill blocks of ``max_length - 2`` tokens in
    corpus order; a separator goes between documents (not at a block's start); a sentence longer
    than a block is cut into block-sized pieces."""
    room = max_length - 2
    blocks: list[Block] = []
    current: Block = []
    used = 0
    bounds = corpus.sentence_bounds.tolist()
    doc_bounds = corpus.document_bounds.tolist()
    for d in range(corpus.documents):
        if current and used < room:
            current.append(None)  # separator between documents
            used += 1
        for s in range(doc_bounds[d], doc_bounds[d + 1]):
            start, end = bounds[s], bounds[s + 1]
            if used + (end - start) > room and current:
                blocks.append(current)
                current, used = [], 0
            while end - start > room:
                blocks.append([(start, start + room)])
                start += room
            current.append((start, end))
            used += end - start
        if used >= room:
            blocks.append(current)
            current, used = [], 0
    if current:
        blocks.append(current)
    return [_strip_separators(b) for b in blocks]


def _strip_separators(block: Block) -> Block:
    while block and block[-1] is None:  # the closing [SEP] already separates
        block.pop()
    while block and block[0] is None:
        block.pop(0)
    return block


@dataclass
class Pair:
    a: Span
    b: Span
    label: int
    #: tokens ``truncate_seq_pair`` removed to fit ``max_length``
    dropped: int = 0


def pair_instances(
    corpus: EncodedCorpus,
    document: int,
    rng: np.random.Generator,
    max_length: int,
    short_seq_prob: float,
    objective: Objective,
) -> tuple[list[Pair], int]:
    """BERT's ``create_instances_from_document`` (NSP) or ALBERT's sentence-order variant (SOP)
    for one document; returns the pairs and how many one-token chunks SOP had to skip."""
    bounds = corpus.sentence_bounds
    first, last = int(corpus.document_bounds[document]), int(corpus.document_bounds[document + 1])
    sentences = last - first
    max_tokens = max_length - 3
    target = max_tokens
    if rng.random() < short_seq_prob:
        target = int(rng.integers(2, max_tokens + 1))
    pairs: list[Pair] = []
    skipped = 0
    chunk: list[int] = []
    length = 0
    i = 0
    while i < sentences:
        chunk.append(first + i)
        length += int(bounds[first + i + 1] - bounds[first + i])
        if i == sentences - 1 or length >= target:
            a_end = 1 if len(chunk) < 2 else int(rng.integers(1, len(chunk)))
            a = (int(bounds[chunk[0]]), int(bounds[chunk[a_end - 1] + 1]))
            rest = (int(bounds[chunk[a_end]]), int(bounds[chunk[-1] + 1])) if a_end < len(chunk) else None
            if objective == "mlm+nsp":
                if rest is None or rng.random() < 0.5:
                    b = _random_next(corpus, document, rng, target - (a[1] - a[0]))
                    label = 1
                    i -= len(chunk) - a_end  # put the unused sentences back
                else:
                    b, label = rest, 0
            else:
                if rest is None:
                    if a[1] - a[0] < 2:
                        skipped += 1
                        chunk, length = [], 0
                        i += 1
                        continue
                    cut = a[0] + int(rng.integers(1, a[1] - a[0]))
                    a, rest = (a[0], cut), (cut, a[1])
                b, label = rest, 0
                if rng.random() < 0.5:
                    a, b, label = b, a, 1
            before = (a[1] - a[0]) + (b[1] - b[0])
            a, b = truncate_seq_pair(a, b, max_tokens, rng)
            pairs.append(Pair(a, b, label, before - (a[1] - a[0]) - (b[1] - b[0])))
            chunk, length = [], 0
        i += 1
    return pairs, skipped


def _random_next(corpus: EncodedCorpus, document: int, rng: np.random.Generator, target_b: int) -> Span:
    """Sentences from a random start in a random *other* document, until ``target_b`` tokens."""
    other = int(rng.integers(0, corpus.documents - 1))
    if other >= document:
        other += 1
    first, last = int(corpus.document_bounds[other]), int(corpus.document_bounds[other + 1])
    start = first + int(rng.integers(0, last - first))
    bounds = corpus.sentence_bounds
    end = start
    while end < last:
        end += 1
        if bounds[end] - bounds[start] >= target_b:
            break
    return int(bounds[start]), int(bounds[end])


def truncate_seq_pair(a: Span, b: Span, max_tokens: int, rng: np.random.Generator) -> tuple[Span, Span]:
    """BERT's ``truncate_seq_pair``: while too long, drop one token from the longer segment (B
    on a tie), from the front or the back at random."""
    over = (a[1] - a[0]) + (b[1] - b[0]) - max_tokens
    if over <= 0:
        return a, b
    (a0, a1), (b0, b1) = a, b
    for draw in rng.random(over).tolist():
        if a1 - a0 > b1 - b0:
            if draw < 0.5:
                a0 += 1
            else:
                a1 -= 1
        elif draw < 0.5:
            b0 += 1
        else:
            b1 -= 1
    return (a0, a1), (b0, b1)


# ---------------------------------------------------------------------------------------------
# Rows: templates, masking
# ---------------------------------------------------------------------------------------------


@dataclass
class _Job:
    corpus: EncodedCorpus
    info: MaskingInfo
    settings: PretrainSettings
    blocks: list[Block] | None


_JOB: _Job | None = None  # set in the parent before forking workers, which inherit it


def _rng(settings: PretrainSettings, dupe: int, unit: int) -> np.random.Generator:
    import numpy as np

    return np.random.default_rng([settings.seed, _OBJECTIVE_STREAM[settings.objective], dupe, unit])


def _rows_for(units: Sequence[tuple[int, int]]) -> tuple[list[dict[str, Any]], int, int]:
    """Finished rows for ``(dupe, unit)`` pairs (unit: a block for mlm, a document otherwise),
    the one-token chunks SOP skipped, and the tokens truncation dropped from pairs."""
    import numpy as np

    job = _JOB
    assert job is not None
    corpus, info, settings = job.corpus, job.info, job.settings
    rows: list[dict[str, Any]] = []
    skipped = dropped = 0
    for dupe, unit in units:
        rng = _rng(settings, dupe, unit)
        if settings.objective == "mlm":
            assert job.blocks is not None
            parts: list[np.ndarray] = [np.array([info.cls_id], dtype=np.int64)]
            for span in job.blocks[unit]:
                parts.append(
                    np.array([info.sep_id], dtype=np.int64)
                    if span is None
                    else corpus.ids[span[0] : span[1]].astype(np.int64)
                )
            parts.append(np.array([info.sep_id], dtype=np.int64))
            marks = _word_marks(corpus, [None, *job.blocks[unit], None], settings)
            rows.append(_finish(np.concatenate(parts), None, marks, None, info, settings, rng))
        else:
            pairs, missed = pair_instances(
                corpus, unit, rng, settings.max_length, settings.short_seq_prob, settings.objective
            )
            skipped += missed
            for pair in pairs:
                dropped += pair.dropped
                (a0, a1), (b0, b1) = pair.a, pair.b
                ids = np.concatenate(
                    [[info.cls_id], corpus.ids[a0:a1], [info.sep_id], corpus.ids[b0:b1], [info.sep_id]]
                ).astype(np.int64)
                types = np.zeros(len(ids), dtype=np.int64)
                types[a1 - a0 + 2 :] = 1
                marks = _word_marks(corpus, [None, pair.a, None, pair.b, None], settings)
                rows.append(_finish(ids, types, marks, pair.label, info, settings, rng))
    return rows, skipped, dropped


#: (continuations, sentence starts) of a row: where a token continues a Chinese word, where a
#: sentence begins; None when whole words are off.
_Marks = tuple["np.ndarray | None", "np.ndarray | None"]


def _word_marks(corpus: EncodedCorpus, spans: Sequence[Span | None], settings: PretrainSettings) -> _Marks:
    """Word marks of a row made of ``spans`` (``None``: one special token). A sentence's first
    token starts a word even when it carries no marker (byte-level BPE encodes a sentence without
    a leading ``Ġ``); special tokens get no mark."""
    import numpy as np

    if settings.whole_word == "off":
        return None, None
    starts = []
    for span in spans:
        if span is None:
            starts.append(np.zeros(1, dtype=bool))
            continue
        flags = np.zeros(span[1] - span[0], dtype=bool)
        bounds = corpus.sentence_bounds
        first, last = np.searchsorted(bounds, span[0], "left"), np.searchsorted(bounds, span[1], "left")
        flags[bounds[first:last] - span[0]] = True
        starts.append(flags)
    continuations = None
    if corpus.continuations is not None:
        continuations = np.concatenate(
            [np.zeros(1, dtype=bool) if s is None else corpus.continuations[s[0] : s[1]] for s in spans]
        )
    return continuations, np.concatenate(starts)


def _finish(
    ids: np.ndarray,
    types: np.ndarray | None,
    marks: _Marks,
    label: int | None,
    info: MaskingInfo,
    settings: PretrainSettings,
    rng: np.random.Generator,
) -> dict[str, Any]:
    import numpy as np

    from toktools.pretraining.masking import mask_tokens

    continuations, starts = marks
    row: dict[str, Any] = {}
    if settings.dynamic:
        row["input_ids"] = ids
        if continuations is not None:
            row["chinese_ref"] = np.flatnonzero(continuations)
        if starts is not None:
            row["sentence_starts"] = np.flatnonzero(starts)
    else:
        masked = mask_tokens(
            ids,
            info,
            rng,
            settings.mask_prob,
            settings.max_predictions,
            whole_word=settings.whole_word != "off",
            continuations=continuations,
            starts=starts,
            mask_replace_prob=settings.mask_replace_prob,
            random_replace_prob=settings.random_replace_prob,
        )
        row["input_ids"] = masked.input_ids
        row["labels"] = masked.labels
    row["token_type_ids"] = types if types is not None else np.zeros(len(ids), dtype=np.int64)
    row["attention_mask"] = np.ones(len(ids), dtype=np.int64)
    if settings.pad and len(ids) < settings.max_length:
        extra = settings.max_length - len(ids)
        fills = {"input_ids": info.pad_id, "labels": -100, "token_type_ids": 0, "attention_mask": 0}
        for name, fill in fills.items():
            if name in row:
                row[name] = np.concatenate([row[name], np.full(extra, fill, dtype=np.int64)])
    if label is not None:
        row[settings.label_name] = label  # type: ignore[index]
    return row


# ---------------------------------------------------------------------------------------------
# The whole run
# ---------------------------------------------------------------------------------------------


def make_pretraining_data(
    sources: Sequence[CorpusSource],
    tokenizer: Tokenizer,
    output: str | os.PathLike[str],
    settings: PretrainSettings = PretrainSettings(),
    *,
    workers: int | None = None,
    overwrite: bool = False,
    zh_dictionary: str | os.PathLike[str] | None = None,
    progress: Progress | None = None,
    tokenizer_name: str = "",
    metadata: dict[str, Any] | None = None,
) -> Summary:
    """Read, encode, build examples and write them to a Parquet file (atomically: a temporary
    file renamed into place only when complete). Returns the :class:`Summary`; ``metadata``
    joins the settings in it and in the file (the epoch and the sampling of ``--epochs``)."""
    from toktools.pretraining.masking import ChineseWords, masking_info

    started = time.perf_counter()
    settings.check()
    from toktools.io.outputs import check_output_file, publish, temporary_for, unregister_temporary

    output = check_output_file(output, force=overwrite, inputs=[s.path for s in sources])  # never over an input
    pyarrow = _import_pyarrow()
    info = masking_info(tokenizer)
    if info.cls_id is None or info.sep_id is None:
        raise ToktoolsError("the tokenizer has no [CLS]/<s> or [SEP]/</s> token for the example template")
    if settings.pad and info.pad_id is None:
        raise ToktoolsError("--pad needs a pad token ([PAD] or <pad>)")
    if settings.whole_word != "off" and info.rule is None:
        raise ToktoolsError("whole-word masking: this tokenizer marks no word boundaries (## prefix, Ġ or ▁)")
    segmenter = ChineseWords(zh_dictionary) if settings.whole_word == "zh" else None

    corpus = encode_documents(
        iter_documents(sources, progress), tokenizer, workers=workers, segmenter=segmenter, progress=progress
    )
    if corpus.documents == 0:
        raise ToktoolsError("the corpus holds no text: no documents to make examples from")
    from toktools.corpus.diagnostics import TokenTally

    tally = TokenTally.for_tokenizer(tokenizer)  # unknown and byte-fallback tokens, from the ids
    tally.add_array(corpus.ids)
    tally.warn()
    if settings.objective == "mlm+nsp" and corpus.documents < 2:
        raise ToktoolsError(
            "mlm+nsp needs at least 2 documents (blank lines separate them): a random next segment "
            "comes from another document"
        )
    blocks = pack_blocks(corpus, settings.max_length) if settings.objective == "mlm" else None
    units_per_dupe = len(blocks) if blocks is not None else corpus.documents
    units = [(dupe, unit) for dupe in range(settings.dupe_factor) for unit in range(units_per_dupe)]

    summary = Summary(
        documents=corpus.documents,
        sentences=corpus.sentences,
        settings={**asdict(settings), "tokenizer": tokenizer_name, **(metadata or {})},
    )
    global _JOB
    _JOB = _Job(corpus, info, settings, blocks)
    try:  # registered (a SIGTERM stuck in native code removes it) and locked (a later run removes it after a SIGKILL)
        handle, name = temporary_for(output)
    except OSError as err:
        raise ToktoolsError(f"cannot write {output}: {err.strerror or err}") from None
    os.close(handle)  # pyarrow opens it by name
    temporary = Path(name)
    try:
        try:
            writer = _ParquetRows(temporary, settings, pyarrow, json.dumps(summary.settings, sort_keys=True))
            try:
                done = 0
                for rows, skipped, dropped in _map_in_order(units, workers):
                    summary.skipped_chunks += skipped
                    summary.truncated_tokens += dropped
                    for row in rows:
                        _count(summary, row, info, settings)
                    writer.add(rows)
                    done += 1
                    if progress is not None:
                        progress("examples", min(done * _UNITS_PER_TASK, len(units)), len(units))
            finally:
                writer.close()
        except (OSError, pyarrow.ArrowException) as err:  # a full disk, a failing device: Arrow's errors
            raise ToktoolsError(f"cannot write {output}: {_write_error(err)}") from None
        if summary.examples == 0:
            raise ToktoolsError("no example could be made: every document is shorter than a segment (needs 2 tokens)")
        publish(temporary, output)  # the umask's mode; a device or FIFO is written into
    finally:
        _JOB = None
        if temporary.exists():
            temporary.unlink()
        unregister_temporary(temporary)
    if settings.objective != "mlm":
        summary.skipped_documents = _documents_without_pairs(corpus) if settings.objective == "mlm+sop" else 0
        import numpy as np

        summary.single_sentence_documents = int(np.count_nonzero(np.diff(corpus.document_bounds) == 1))
        _warn_about_pairs(summary, settings)
    summary.seconds = time.perf_counter() - started
    return summary


#: NSP/SOP negatives are drawn half of the time: a share this far from 50% means the corpus is
#: not in the layout the objective assumes (checked from this many examples on)
NEGATIVES_OFF_BY = 0.1
NEGATIVES_FROM_EXAMPLES = 100
#: a share of text tokens dropped by pair truncation above this is warned about
TRUNCATED_SHARE = 0.10


def _warn_about_pairs(summary: Summary, settings: PretrainSettings) -> None:
    """NSP/SOP pairs that are not what the objective means: negatives far from half (documents
    of one line: NSP must take B from another document), and much text cut by truncation."""
    from toktools.errors import warn

    single = summary.single_sentence_documents / summary.documents if summary.documents else 0.0
    layout = (
        f"; {single:.0%} of the documents are a single line: the layout is one sentence per line, "
        "a blank line between documents (or --field on JSON Lines whose text has newlines)"
        if single >= 0.5
        else ""
    )
    share = summary.negatives / summary.examples if summary.examples else 0.0
    if summary.examples >= NEGATIVES_FROM_EXAMPLES and abs(share - 0.5) > NEGATIVES_OFF_BY:
        what = "random next segments" if settings.objective == "mlm+nsp" else "swapped"
        warn(f"{share:.0%} of the {settings.label_name} pairs are {what}, where the objective means 50%{layout}")
    elif settings.objective == "mlm+sop" and layout and summary.examples >= NEGATIVES_FROM_EXAMPLES:
        warn(f"sentence_order_label pairs are mostly one line cut at a random token, not two sentences{layout}")
    kept = summary.text_tokens
    if summary.truncated_tokens and summary.truncated_tokens / (summary.truncated_tokens + kept) > TRUNCATED_SHARE:
        cut = summary.truncated_tokens / (summary.truncated_tokens + kept)
        warn(
            f"truncation to --max-length {settings.max_length} dropped {summary.truncated_tokens:,} tokens, "
            f"{cut:.0%} of the text of the pairs: segments longer than an example are cut "
            "(a larger --max-length keeps more of them)"
        )


def _documents_without_pairs(corpus: EncodedCorpus) -> int:
    """SOP cannot use a document of a single token."""
    import numpy as np

    starts = corpus.sentence_bounds[corpus.document_bounds[:-1]]
    ends = corpus.sentence_bounds[corpus.document_bounds[1:]]
    return int(np.count_nonzero(ends - starts < 2))


def _count(summary: Summary, row: dict[str, Any], info: MaskingInfo, settings: PretrainSettings) -> None:
    import numpy as np

    ids = row["input_ids"]
    real = row["attention_mask"].astype(bool)
    summary.examples += 1
    summary.tokens += int(real.sum())
    original = ids
    if "labels" in row:
        labels = row["labels"]
        chosen = labels != -100
        original = np.where(chosen, labels, ids)
        now, was = ids[chosen], labels[chosen]
        summary.masked += int(chosen.sum())
        summary.masked_as_mask += int((now == info.mask_id).sum())
        summary.masked_kept += int((now == was).sum())
        summary.masked_as_random += int(((now != info.mask_id) & (now != was)).sum())
    summary.text_tokens += int((~info.special[original] & real).sum())
    if settings.label_name:
        summary.negatives += int(row[settings.label_name])


_UNITS_PER_TASK = 64


def _map_in_order(
    units: Sequence[tuple[int, int]], workers: int | None
) -> Iterator[tuple[list[dict[str, Any]], int, int]]:
    """Rows for the units, task by task in unit order, in forked worker processes (which inherit
    the encoded corpus) or in this one."""
    tasks = [units[i : i + _UNITS_PER_TASK] for i in range(0, len(units), _UNITS_PER_TASK)]
    if workers is None:
        workers = min(os.cpu_count() or 1, 4) if len(tasks) > 8 else 1
    from toktools.runtime.workers import fork_available, process_pool

    if workers <= 1 or len(tasks) <= 1 or not fork_available():  # workers must inherit the encoded corpus
        for task in tasks:
            yield _rows_for(task)
        return
    with process_pool(workers) as pool:
        yield from pool.map(_rows_for, tasks)


class _ParquetRows:
    """Rows appended in row groups; the settings go into the file's metadata under ``toktools``."""

    def __init__(self, path: Path, settings: PretrainSettings, pyarrow: Any, metadata: str) -> None:
        pa = pyarrow
        columns = [
            ("input_ids", pa.list_(pa.int32())),
            ("token_type_ids", pa.list_(pa.int8())),
            ("attention_mask", pa.list_(pa.int8())),
        ]
        if not settings.dynamic:
            columns.append(("labels", pa.list_(pa.int32())))
        if settings.label_name:
            columns.append((settings.label_name, pa.int64()))
        if settings.dynamic and settings.whole_word == "zh":
            columns.append(("chinese_ref", pa.list_(pa.int32())))
        if settings.dynamic and settings.whole_word != "off":
            columns.append(("sentence_starts", pa.list_(pa.int32())))
        self.schema = pa.schema(columns, metadata={"toktools": metadata})
        self.pa = pa
        import pyarrow.parquet as pq

        self.writer = pq.ParquetWriter(str(path), self.schema)
        self.pending: list[dict[str, Any]] = []

    def add(self, rows: list[dict[str, Any]]) -> None:
        self.pending.extend(rows)
        if len(self.pending) >= 2048:
            self.flush()

    def flush(self) -> None:
        if not self.pending:
            return
        arrays = []
        for column in self.schema:
            values = [row[column.name] for row in self.pending]
            if self.pa.types.is_list(column.type):
                arrays.append(_list_array(self.pa, values, column.type))
            else:
                arrays.append(self.pa.array(values, type=column.type))
        self.writer.write_table(self.pa.Table.from_arrays(arrays, schema=self.schema))
        self.pending = []

    def close(self) -> None:
        try:
            self.flush()
        except BaseException:
            # the first error is the one to report: closing after a failed write fails again
            # ("Operation on closed file") and would hide it
            try:
                self.writer.close()
            except Exception:
                pass
            raise
        self.writer.close()


def _list_array(pa: Any, values: list[np.ndarray], list_type: Any) -> Any:
    """A list column from NumPy arrays without a Python loop over elements."""
    import numpy as np

    lengths = np.fromiter((len(v) for v in values), dtype=np.int64, count=len(values))
    offsets = np.zeros(len(values) + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    flat = np.concatenate(values).astype(list_type.value_type.to_pandas_dtype()) if values else np.zeros(0)
    return pa.ListArray.from_arrays(pa.array(offsets), pa.array(flat, type=list_type.value_type))


def _write_error(err: BaseException) -> str:
    """Why a write failed, in words: ``No space left on device`` rather than Arrow's
    ``[Errno 28] Error writing bytes to file. Detail: [errno 28] ...``."""
    number = getattr(err, "errno", None)
    if isinstance(number, int) and number > 0:
        return os.strerror(number)
    return str(err).splitlines()[0] if str(err) else type(err).__name__


def _import_pyarrow() -> Any:
    try:
        import pyarrow
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        raise ToktoolsError("writing Parquet needs pyarrow: pip install 'toktools[pretrain]'") from None
    return pyarrow
