"""normalizers: see toktools.parts.base for the interface."""
from __future__ import annotations

from toktools.parts.base import Piece
from toktools.parts.registry import register

# ---------------------------------------------------------------------------------------------
# BERT and byte-level parts (the presets' own)
# ---------------------------------------------------------------------------------------------




























# ---------------------------------------------------------------------------------------------
# The other tokenizers parts
# ---------------------------------------------------------------------------------------------
