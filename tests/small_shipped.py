"""The shipped tokenizers as parity tests load them: the byte-level BPE cut down to its first
merges (its ids follow the merge order, so the cut is a smaller BPE of the same kind), which
loads in a fraction of the time and still covers ordinary English text."""

from __future__ import annotations

import functools
import json
from pathlib import Path

VOCABS = Path(__file__).resolve().parent.parent / "vocabs"
#: merges kept of the shipped byte-level BPE
SMALL_BPE_MERGES = 3000


@functools.cache
def shipped_text(name: str) -> str:
    """The ``tokenizer.json`` text of ``bytebpe-50k`` (cut down) or ``wordpiece-30k`` (whole)."""
    document = json.loads((VOCABS / name / "tokenizer.json").read_text(encoding="utf-8"))
    model = document["model"]
    if model["type"] == "BPE":
        model["merges"] = model["merges"][:SMALL_BPE_MERGES]
        last = max(model["vocab"]["".join(pair)] for pair in model["merges"])
        model["vocab"] = {token: i for token, i in model["vocab"].items() if i <= last}
    return json.dumps(document)
