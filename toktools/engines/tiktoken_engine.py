"""The tiktoken engine: OpenAI's byte-level BPE, given the byte ranks, special tokens and pattern
of a :class:`~toktools.engines.analysis.TiktokenPlan` (made only where tiktoken is exact, see
:func:`toktools.engines.analysis.analyse`), on a few threads."""

from __future__ import annotations

import os
from array import array
from collections.abc import Callable, Sequence
from typing import Any

from toktools.engines.analysis import TiktokenPlan
from toktools.engines.base import Engine, IdBatch, PackedIds


def tiktoken_available() -> bool:
    """Whether tiktoken is installed (the ``corpus`` extra): ``auto`` then considers it."""
    try:
        import tiktoken  # noqa: F401
    except ImportError:
        return False
    return True


class TiktokenEngine(Engine):
    name = "tiktoken"
    batch_chars = 1 << 18

    def __init__(self, plan: TiktokenPlan, threads: int | None = None) -> None:
        import tiktoken

        self.encoding = tiktoken.Encoding(
            "toktools", pat_str=plan.pattern, mergeable_ranks=plan.mergeable_ranks, special_tokens=plan.special_tokens
        )
        self.threads = threads or os.cpu_count() or 1
        self.remap = plan.rank_to_id
        self._pool: Any = None
        self._ordinary = self.encoding.encode_ordinary
        # tokenizers always splits added tokens out of the text; tiktoken's encode does too, but
        # scans every text for them: a text that holds none takes encode_ordinary (the same ids)
        self._has_special: Callable[[str], Any] | None = None
        # tiktoken's encode into a buffer of uint32 (no list of ints), for encode_packed
        core = getattr(self.encoding, "_core_bpe", None)
        self._buffer: Callable[[str, Any], Any] | None = getattr(core, "encode_to_tiktoken_buffer", None)
        self._allowed = set(plan.special_tokens)
        if self._buffer is not None:  # uint32 ids, as tiktoken 0.14 gives them (else: lists only)
            view = memoryview(self._buffer("a", self._allowed))
            if view.itemsize != 4 or view.format.lstrip("@=<") not in ("I", "L") or array("I").itemsize != 4:
                self._buffer = None
            view.release()
        if plan.special_tokens:
            encode, allowed = self.encoding.encode, frozenset(plan.special_tokens)
            self._special: Callable[[str], list[int]] = lambda text: encode(
                text, allowed_special=allowed, disallowed_special=()
            )
            if len(allowed) == 1:
                token = next(iter(allowed))
                self._has_special = lambda text: token in text
            else:
                import re

                self._has_special = re.compile("|".join(map(re.escape, sorted(allowed)))).search

    def _chunk(self, texts: Sequence[str]) -> IdBatch:
        ordinary, has_special = self._ordinary, self._has_special
        if has_special is None:
            return [ordinary(text) for text in texts]
        special = self._special
        return [special(text) if has_special(text) else ordinary(text) for text in texts]

    def encode_batch(self, texts: Sequence[str]) -> IdBatch:
        """Contiguous chunks on a few threads (the Rust core releases the GIL): one Python call
        per text, not one future per text as ``Encoding.encode_batch`` makes."""
        texts = list(texts)
        if self.threads <= 1 or len(texts) < 2:
            out = self._chunk(texts)
        else:
            if self._pool is None:
                from concurrent.futures import ThreadPoolExecutor

                self._pool = ThreadPoolExecutor(self.threads)
            size = max(1, -(-len(texts) // (self.threads * 4)))
            out = []
            for part in self._pool.map(self._chunk, [texts[i : i + size] for i in range(0, len(texts), size)]):
                out.extend(part)
        if self.remap:
            remap = self.remap
            out = [[remap.get(i, i) for i in ids] for ids in out]
        return out

    def encode_packed(self, texts: Sequence[str]) -> PackedIds | None:
        """The ids of ``texts`` as one array of native uint32 (see :class:`PackedIds`), the
        same ids as :meth:`encode_batch` without a Python int per id: tiktoken's own buffers
        (``encode_to_tiktoken_buffer``, its ``encode`` with every special token allowed: what
        :meth:`_chunk` gives) joined in C. None where that path does not apply (a rank remap,
        or a tiktoken without it): then :meth:`encode_batch`."""
        if self._buffer is None or self.remap:
            return None
        texts = list(texts)
        if self.threads <= 1 or len(texts) < 2:
            data, counts = self._packed_chunk(texts)
            return PackedIds(data, counts)
        if self._pool is None:
            from concurrent.futures import ThreadPoolExecutor

            self._pool = ThreadPoolExecutor(self.threads)
        size = max(1, -(-len(texts) // (self.threads * 4)))
        parts = list(self._pool.map(self._packed_chunk, [texts[i : i + size] for i in range(0, len(texts), size)]))
        return PackedIds(b"".join([data for data, _ in parts]), [n for _, counts in parts for n in counts])

    def _packed_chunk(self, texts: Sequence[str]) -> tuple[bytes, list[int]]:
        encode, allowed = self._buffer, self._allowed
        try:
            buffers = [encode(text, allowed) for text in texts]  # type: ignore[misc]
        except UnicodeEncodeError:  # a lone surrogate: Encoding.encode's repair, text by text
            buffers = [array("I", ids) for ids in self._chunk(texts)]
        # only the buffers' byte length is sound (tiktoken 0.14 gives a shape in bytes, not ids):
        # joined through the plain buffer interface, counted by nbytes
        counts = [memoryview(buffer).nbytes >> 2 for buffer in buffers]
        return b"".join(buffers), counts

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None
