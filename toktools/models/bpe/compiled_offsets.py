"""The offsets of a byte-level batch's tokens (:mod:`toktools.models.bpe.offsets_kernel`) as the
lazy byte-level batches read them, without numba and without NumPy: the kernel comes from
:func:`toktools.runtime.machine_code.kernel` (machine code kept in the user cache), its buffers
are ``array.array``. A first batch that reads its offsets then imports no NumPy (~45 ms)."""

from __future__ import annotations

from array import array
from collections.abc import Mapping
from typing import Any

from toktools.models.bpe.compiled_merge import address, zeros

#: The kernel: module, function, and the types of its parameters.
_KERNEL = (
    "toktools.models.bpe.offsets_kernel",
    "offsets_at",
    (
        "int64",
        "int64*",
        "int64",
        "int64*",
        "int64",
        "uint8*",
        "int64",
        "int64*",
        "int64*",
        "int64*",
        "int64",
        "int64*",
        "int64*",
    ),
)
PLAIN, TRIMMED, TRIMMED_AFTER_PREFIX_SPACE = 0, 1, 2


def kept() -> bool:
    """The compiled offsets load cheaply here (:func:`toktools.runtime.machine_code.ready`)."""
    from toktools.runtime.machine_code import ready

    return ready(*_KERNEL)


def start_compiling() -> None:
    """Have the kernel compiled into the user cache in a detached process, for later runs."""
    from toktools.runtime.background_compile import start

    start(*_KERNEL)


def token_lengths(token_of: Mapping[int, str]) -> array:  # type: ignore[type-arg]
    """Token id → its length in symbols (= bytes for byte-level BPE), 0 where no token has the id."""
    return array("q", (len(token_of.get(i, "")) for i in range(max(token_of, default=0) + 1)))


class CompiledOffsets:
    """The kernel, with one vocabulary's :func:`token_lengths`. Raises ``ImportError`` when there is no
    compiled kernel."""

    def __init__(self, token_lengths: array) -> None:  # type: ignore[type-arg]
        from toktools.runtime.machine_code import kernel

        run = kernel(*_KERNEL)
        if run is None:
            raise ImportError("the compiled offsets need numba (extra 'fast')")
        self._kernel = run
        self.token_lengths = token_lengths

    def spans(
        self, ids: Any, data: bytes, bounds: Any, text_starts: Any, prefixed: Any, trim: int
    ) -> tuple[array, array]:  # type: ignore[type-arg]
        """``(starts, ends)`` of the tokens ``ids`` (an ``array.array`` of int64) that cover
        ``data`` (UTF-8) end to end, text ``t`` holding ``ids[bounds[t]:bounds[t + 1]]`` and
        starting at character ``text_starts[t]`` (after a prefix space if ``prefixed[t]``);
        ``trim`` is :data:`PLAIN`, :data:`TRIMMED` or :data:`TRIMMED_AFTER_PREFIX_SPACE`."""
        n_tokens, n_texts = len(ids), len(text_starts)
        starts, ends = zeros("q", n_tokens), zeros("q", n_tokens)
        self._kernel(
            n_tokens,
            address(ids),
            len(self.token_lengths),
            address(self.token_lengths),
            len(data),
            address(data),
            n_texts,
            address(bounds),
            address(text_starts),
            address(prefixed),
            trim,
            address(starts),
            address(ends),
        )
        return starts[:n_tokens], ends[:n_tokens]
