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
from typing import Any

from toktools.engines.base import Engine, IdBatch, PackedIds
from toktools.errors import ToktoolsError


def sentencepiece_available() -> bool:
    """Whether the ``sentencepiece`` package is installed (checked without importing it)."""
    from importlib.util import find_spec

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
        buffers = self._buffers(list(texts), self.workers, None, False, 0, 0.0, False, False, False)
        counts = [memoryview(buffer).nbytes >> 2 for buffer in buffers]
        return PackedIds(b"".join(buffers), counts)
