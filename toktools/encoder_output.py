"""Binary outputs of ``toktools encode``: token ids as one flat array for training pipelines.

``bin`` is raw little-endian integers (``numpy.fromfile(path, dtype)`` reads it); ``npy`` is the
same data with NumPy's header (``numpy.load`` reads it). The length is not known until the end,
so the header is written with room to spare and rewritten when the writer closes.
"""
from __future__ import annotations

from array import array
from typing import BinaryIO, Sequence

_TYPECODES = {"uint16": ("H", "<u2"), "uint32": ("I", "<u4")}
_HEADER_BYTES = 128  # magic + version + length + dict, padded: room for any 1-D shape


def choose_dtype(vocab_size: int) -> str:
    """``uint16`` when every id fits (vocabularies up to 65,536), else ``uint32``."""
    return "uint16" if vocab_size <= 1 << 16 else "uint32"


def _npy_header(descr: str, length: int) -> bytes:
    body = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': ({length},), }}"
    prefix = b"\x93NUMPY\x01\x00"
    room = _HEADER_BYTES - len(prefix) - 2
    text = body.ljust(room - 1) + "\n"
    return prefix + len(text).to_bytes(2, "little") + text.encode("latin-1")


class IdArrayWriter:
    """Append ids; ``close()`` finishes the npy header with the final length."""

    def __init__(self, out: BinaryIO, dtype: str, npy: bool) -> None:
        self.out = out
        self.typecode, self.descr = _TYPECODES[dtype]
        self.npy = npy
        self.length = 0
        if npy:
            out.write(_npy_header(self.descr, 0))

    def write(self, ids: Sequence[int]) -> None:
        data = array(self.typecode, ids)
        if data.itemsize != int(self.descr[-1]):  # platforms where "I" is not 4 bytes
            raise RuntimeError("unexpected C integer size")
        import sys

        if sys.byteorder != "little":
            data.byteswap()
        self.out.write(data.tobytes())
        self.length += len(data)

    def close(self) -> None:
        if self.npy:
            self.out.seek(0)
            self.out.write(_npy_header(self.descr, self.length))
            self.out.seek(0, 2)
