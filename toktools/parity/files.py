"""The two backends' trained files compared byte for byte, and where they first differ."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from toktools.parity.results import EXAMPLES, FileComparison

if TYPE_CHECKING:  # pragma: no cover
    from toktools.training.trainers import Trainer

__all__ = ["compare_dirs", "compare_files", "compare_model_json"]


def compare_files(name: str, reference: bytes, fast: bytes) -> FileComparison:
    """Byte comparison, and where they first differ (line for text files, id for vocab.json,
    key for a tokenizer.json model)."""
    if reference == fast:
        return FileComparison(name, True, len(reference), len(fast))
    return FileComparison(name, False, len(reference), len(fast), _where(name, reference, fast))


def _where(name: str, reference: bytes, fast: bytes) -> str:
    try:
        a_text, b_text = reference.decode("utf-8"), fast.decode("utf-8")
    except UnicodeDecodeError:
        first = next((i for i, (x, y) in enumerate(zip(reference, fast)) if x != y), min(len(reference), len(fast)))
        return f"first differing byte at {first}"
    if name.endswith(".json"):
        try:
            a, b = json.loads(a_text), json.loads(b_text)
        except json.JSONDecodeError:
            a = b = None
        if isinstance(a, dict) and isinstance(b, dict):
            if name == "vocab.json" or all(isinstance(v, int) for v in a.values()):
                ta, tb = sorted(a, key=a.__getitem__), sorted(b, key=b.__getitem__)
                i = next((i for i, (x, y) in enumerate(zip(ta, tb)) if x != y), None)
                if i is None:
                    return f"sizes {len(ta):,} vs {len(tb):,}"
                return f"id {i}: {ta[i]!r} vs {tb[i]!r}"
            keys = [k for k in dict.fromkeys([*a, *b]) if a.get(k) != b.get(k)]
            if a == b:
                return "same JSON, different formatting"
            return "differs in " + ", ".join(repr(k) for k in keys[:EXAMPLES])
    a_lines, b_lines = a_text.split("\n"), b_text.split("\n")
    i = next((i for i, (x, y) in enumerate(zip(a_lines, b_lines)) if x != y), min(len(a_lines), len(b_lines)))
    a_line = a_lines[i] if i < len(a_lines) else "<end>"
    b_line = b_lines[i] if i < len(b_lines) else "<end>"
    return f"line {i + 1}: {a_line!r} vs {b_line!r}; {len(a_lines):,} vs {len(b_lines):,} lines"


def compare_model_json(reference: bytes, fast: bytes) -> FileComparison:
    """The ``model`` objects of two ``tokenizer.json`` files, compared as JSON."""
    a, b = json.loads(reference)["model"], json.loads(fast)["model"]
    name = "tokenizer.json model"
    a_bytes = json.dumps(a, ensure_ascii=False).encode("utf-8")
    b_bytes = json.dumps(b, ensure_ascii=False).encode("utf-8")
    if a == b:
        return FileComparison(name, True, len(a_bytes), len(b_bytes))
    keys = [k for k in dict.fromkeys([*a, *b]) if a.get(k) != b.get(k)]
    return FileComparison(name, False, len(a_bytes), len(b_bytes), "differs in " + ", ".join(repr(k) for k in keys))


def compare_dirs(trainer: Trainer, ours: Path, theirs: Path) -> list[FileComparison]:
    """The trainer's model files, the ``model`` of ``tokenizer.json`` and, where the trainer pins
    it, the whole ``tokenizer.json`` of two trained directories."""
    out = [
        compare_files(name, (ours / name).read_bytes(), (theirs / name).read_bytes()) for name in trainer.model_files
    ]
    a, b = (ours / "tokenizer.json").read_bytes(), (theirs / "tokenizer.json").read_bytes()
    out.append(compare_model_json(a, b))
    if trainer.pins_tokenizer_json:  # the whole file is pinned identical too (tests/test_bytelevel_train_parity.py)
        out.append(compare_files("tokenizer.json", a, b))
    return out
