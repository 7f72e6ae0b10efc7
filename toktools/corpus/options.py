"""The options of corpus encoding in one object, as given (:class:`EncodeOptions`) and as every
shard is written with them once the tokenizer is known (:class:`ShardSettings`).

:func:`toktools.encode_corpus` takes the options as keywords and builds an
:class:`EncodeOptions`; the ways of running it (:func:`toktools.corpus.shards.encode_shards`,
:func:`toktools.cluster.encode.encode_blocks`) take that object whole, so an option is named
once here, with its default, and not again in every signature.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from toktools.corpus.documents import SEGMENT_CHARS
from toktools.corpus.prepared_tokenizer import CorpusTokenizer, token_ids, vocab_size_of
from toktools.corpus.writers import flat_dtype, megatron_dtype
from toktools.errors import ToktoolsError

#: Documents (lines, for the text formats) re-encoded with the reference to check a fast engine.
DEFAULT_VERIFY = 16
#: characters per batch at most (engines may take less: ``Engine.batch_chars``): two batches
#: are in flight; 1M Chinese characters already make ~1M tokens
BATCH_BYTES = 1 << 20
#: (bytes of input read, total bytes or 0 if unknown, tokens written)
CorpusProgress = Callable[[int, int, int], None]

_EOS_NAMES = ("<|endoftext|>", "</s>", "<|end_of_text|>", "<eos>", "<|eos|>", "[EOS]", "<|im_end|>", "[SEP]")
_BOS_NAMES = ("<s>", "<|begin_of_text|>", "<bos>", "<|bos|>", "[BOS]", "<|startoftext|>", "[CLS]", "<|endoftext|>")


@dataclass(frozen=True)
class EncodeOptions:
    """Every option of :func:`toktools.corpus.encode.encode_corpus` (which documents them), with
    the same defaults: how to read, encode and write, and where to run."""

    format: str = "megatron"
    engine: str = "auto"
    document: str = "line"
    field: str | None = None
    append_eos: bool | str | None = None
    prepend_bos: bool | str = False
    shard_tokens: int | None = None
    workers: int | None = None
    verify: int = DEFAULT_VERIFY
    progress: CorpusProgress | None = None
    force: bool = False
    dtype: str = "auto"
    batch_bytes: int = BATCH_BYTES
    max_document_bytes: int | None = None
    segment_chars: int = SEGMENT_CHARS
    cluster: Any = None
    block_bytes: int | None = None
    pair: bool = False
    add_special_tokens: bool = True
    max_length: int | None = None
    batch_lines: int | None = None
    truncation: bool = True
    padding: bool = True


@dataclass(frozen=True)
class ShardSettings:
    """The options as every shard is written with them: the JSON field, the EOS and BOS ids, the
    vocabulary size and the dtype (``auto`` resolved)."""

    field: str | None
    eos_id: int | None
    bos_id: int | None
    vocab_size: int
    dtype: str

    def as_manifest(self, options: EncodeOptions, **more: Any) -> dict[str, Any]:
        """The settings a manifest records (a resumed run must match them), then ``more``."""
        return {
            "format": options.format,
            "document": options.document,
            "field": self.field,
            "append_eos": self.eos_id,
            "prepend_bos": self.bos_id,
            "shard_tokens": options.shard_tokens,
            "dtype": self.dtype,
            **more,
        }


def shard_settings(tokenizer: Any, options: EncodeOptions) -> ShardSettings:
    """The settings every shard is written with; bad combinations are refused in one line.
    ``tokenizer``: the document, or a :class:`toktools.corpus.prepared_tokenizer.CorpusTokenizer`
    (whose vocabulary is then read only for a token named that is not an added one)."""
    doc = tokenizer
    lookup = doc.token_id if isinstance(doc, CorpusTokenizer) else None
    vocab_size = doc.vocab_size if isinstance(doc, CorpusTokenizer) else vocab_size_of(doc)
    if isinstance(doc, CorpusTokenizer):
        doc = doc.shape
    field = options.field
    if options.document == "jsonl":
        field = field or "text"
    elif field is not None:
        raise ToktoolsError("--field is for --document jsonl")
    append_eos = options.append_eos
    if append_eos is None:
        append_eos = options.format == "megatron"
    eos_id = _special_id(doc, append_eos, _EOS_NAMES, "EOS", lookup)
    bos_id = _special_id(doc, options.prepend_bos, _BOS_NAMES, "BOS", lookup)
    dtype = options.dtype
    if dtype == "auto":
        dtype = megatron_dtype(vocab_size) if options.format == "megatron" else flat_dtype(vocab_size)
    limits = {"uint16": 1 << 16, "uint32": 1 << 32, "int32": 1 << 31}
    if dtype not in limits or (options.format == "megatron" and dtype == "uint32"):
        raise ToktoolsError(f"dtype {dtype} is not available for {options.format}")
    if vocab_size > limits[dtype]:
        raise ToktoolsError(f"{vocab_size} ids do not fit in {dtype}")
    return ShardSettings(field, eos_id, bos_id, vocab_size, dtype)


def _special_id(
    doc: Mapping[str, Any],
    value: bool | str | None,
    names: Sequence[str],
    what: str,
    token_id_of: Callable[[str], int | None] | None = None,
) -> int | None:
    """The id of the token the user named, or of the tokenizer's usual one (``True``).
    ``token_id_of``: how to look a named token up (default: in ``doc``)."""
    if value is None or value is False:
        return None
    if isinstance(value, str) and value:
        token_id = token_id_of(value) if token_id_of is not None else token_ids(doc).get(value)
        if token_id is None:
            raise ToktoolsError(f"{what} token {value!r} is not in the vocabulary")
        return token_id
    specials = {t["content"]: t["id"] for t in doc.get("added_tokens") or [] if t.get("special")}
    for name in names:
        if name in specials:
            return specials[name]
    hint = "--append-eos=TOKEN, or --no-append-eos" if what == "EOS" else "--prepend-bos=TOKEN"
    raise ToktoolsError(f"this tokenizer has no {what} token ({' or '.join(names[:3])}…): name one, e.g. {hint}")
