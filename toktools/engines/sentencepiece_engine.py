"""The ``sentencepiece`` engine: Google's own ``SentencePieceProcessor`` for a ``.model`` under the
sentencepiece rule (optional: the ``sentencepiece`` package, extra ``sentencepiece``).

It encodes with the very model file the document carries
(:data:`toktools.sentencepiece.tokenizer.DOCUMENT_KEY`), batches on all cores
(``num_threads``), and is exact by construction for the rules of the installed version, which
are the ones the reference follows unless the document asks for others (then it is refused).
"""

from __future__ import annotations

import base64
import os
from collections.abc import Mapping, Sequence
from importlib.util import find_spec
from itertools import chain
from typing import Any

from toktools.engines.base import Engine, IdBatch, PackedIds
from toktools.errors import ToktoolsError


def sentencepiece_available() -> bool:
    """Whether the ``sentencepiece`` package is installed (checked without importing it)."""
    return find_spec("sentencepiece") is not None


class SentencePieceEngine(Engine):
    name = "sentencepiece"
    batch_chars = 1 << 20

    def __init__(self, document: Mapping[str, Any], workers: int | None = None) -> None:
        from toktools.sentencepiece.encode import version_rules
        from toktools.sentencepiece.rule_marker import DOCUMENT_KEY, follows_sentencepiece

        if not follows_sentencepiece(document):
            raise ToktoolsError("engine sentencepiece encodes sentencepiece .model tokenizers only")
        if not sentencepiece_available():
            raise ToktoolsError("engine sentencepiece is not installed (pip install 'toktools[sentencepiece]')")
        import sentencepiece

        entry = document[DOCUMENT_KEY]
        if entry.get("sampling"):
            # 0.2.x draws from absl::BitGen, which salts every seed per process:
            # set_random_generator_seed repeats draws within one process only (and a batch on
            # several threads not even there), so the ids could not be reproduced
            raise ToktoolsError(
                "engine sentencepiece cannot sample reproducibly (its generator salts every seed per process, "
                "so --seed would not fix the draws); --sample-alpha uses --engine reference (auto takes it)"
            )
        installed = version_rules()
        if entry.get("rules") != installed.version:
            raise ToktoolsError(
                f"engine sentencepiece: the installed sentencepiece follows the {installed.version} rules, "
                f"this tokenizer the {entry.get('rules')} ones (use --engine reference)"
            )
        self.workers = workers or os.cpu_count() or 1
        self.processor = sentencepiece.SentencePieceProcessor(model_proto=base64.b64decode(entry["model"]))
        # the batch call that gives each text's ids as a C buffer of int32 (0.2.1 and later: what
        # ``encode(out_type="numpy")`` wraps), None on a version without it
        self._buffers = getattr(getattr(self.processor, "_processor", None), "_EncodeAsBufferBatch", None)
        if find_spec("numpy") is None:  # blocks are split and written with NumPy: documents then
            self.encode_block = None  # type: ignore[method-assign,assignment]

    def encode_batch(self, texts: Sequence[str]) -> IdBatch:
        ids: IdBatch = self.processor.encode(list(texts), num_threads=self.workers)
        return ids

    def encode_packed(self, texts: Sequence[str]) -> PackedIds | None:
        """The ids of ``texts`` as one array of native uint32 (:class:`PackedIds`): the same
        batch call as :meth:`encode_batch` (no sampling, no BOS/EOS, not reversed), its int32
        buffers joined in C, with no Python int per id (ids are never negative, so the bytes
        are the same). None where the installed sentencepiece lacks the buffer call."""
        if self._buffers is None:
            return None
        return self._packed(list(texts))

    def _packed(self, texts: list[str] | list[bytes]) -> PackedIds:
        assert self._buffers is not None
        buffers = self._buffers(texts, self.workers, None, False, 0, 0.0, False, False, False)
        counts = [memoryview(buffer).nbytes >> 2 for buffer in buffers]
        return PackedIds(b"".join(buffers), counts)

    def encode_block(self, block: bytes) -> tuple[Any, Any]:
        """The ids of the non-empty lines of ``block`` (lines split at ``\\n`` only, as
        ``--document line`` reads them; :mod:`toktools.corpus.line_blocks`): every id as uint32,
        and the offsets of each line's ids (lines + 1). The lines go to sentencepiece as bytes,
        never decoded here (sentencepiece reads a ``str`` as its UTF-8 bytes; the block's UTF-8
        is checked by the caller)."""
        import numpy as np

        lines = [line for line in block.split(b"\n") if line]
        if self._buffers is not None:
            packed = self._packed(lines)
            data, counts = np.frombuffer(packed.data, dtype=np.uint32), packed.counts
        else:
            ids = self.processor.encode(lines, num_threads=self.workers)
            data = np.fromiter(chain.from_iterable(ids), dtype=np.uint32)
            counts = [len(row) for row in ids]
        offsets = np.zeros(len(counts) + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
        return data, offsets

    def block_needs_routing(self, block: bytes, scan: Any = None) -> bool:
        """No line goes elsewhere: sentencepiece encodes every line."""
        return False
