"""A tiktoken ranks file (``base64(bytes) rank`` per line) as a byte-level BPE tokenizer, and back.

A ranks file holds no merges: each token's merge is found again the way transformers converts
tiktoken models, by running BPE on the token's bytes with only the lower ranks allowed, which ends
in the two parts the token was made of. Nor does it hold its split pattern: GPT-2's unless
``--pattern`` gives another (cl100k's, Llama 3's ...); special tokens come from a
``special_tokens.json`` beside the file (as ``toktools convert --to tiktoken`` writes it)."""

from __future__ import annotations

import base64
import binascii
import json
from pathlib import Path
from typing import Any

from toktools.errors import ToktoolsError
from toktools.formats import from_tokenizer_json
from toktools.models.bpe.byte_symbols import bytes_to_symbols, symbols_to_bytes
from toktools.models.bpe.files import read_text_file
from toktools.tokenizer import Tokenizer


def read_ranks(path: Path) -> dict[bytes, int]:
    """The ranks of a ``.tiktoken`` file, with one-line errors that name the line."""
    ranks: dict[bytes, int] = {}
    for number, line in enumerate(read_text_file(path, "tiktoken ranks").splitlines(), start=1):
        if not line.strip():
            continue
        parts = line.split()
        try:
            ranks[base64.b64decode(parts[0], validate=True)] = int(parts[1])
        except (IndexError, ValueError, binascii.Error):
            raise ToktoolsError(f"{path}, line {number}: expected 'base64 rank', got {line[:60]!r}") from None
    return ranks


def _parts(ranks: dict[bytes, int], token: bytes, limit: int) -> list[bytes]:
    """BPE on ``token``'s bytes with the merges of rank below ``limit`` (lowest rank first)."""
    parts = [token[i : i + 1] for i in range(len(token))]
    while True:
        best, at = None, -1
        for i in range(len(parts) - 1):
            rank = ranks.get(parts[i] + parts[i + 1])
            if rank is not None and rank < limit and (best is None or rank < best):
                best, at = rank, i
        if best is None:
            return parts
        parts[at : at + 2] = [parts[at] + parts[at + 1]]


def merges_of(ranks: dict[bytes, int]) -> list[tuple[str, str]]:
    """The merges of a ranks table, in rank order, as byte-symbol pairs."""
    merges = []
    for token, rank in sorted(ranks.items(), key=lambda item: item[1]):
        if len(token) < 2:
            continue
        parts = _parts(ranks, token, rank)
        if len(parts) != 2:
            raise ToktoolsError(f"tiktoken token {token!r} (rank {rank}) is not made by one merge of lower ranks")
        merges.append((bytes_to_symbols(parts[0]), bytes_to_symbols(parts[1])))
    return merges


def load_ranks(path: Path, pattern: str | None = None) -> Tokenizer:
    """The tokenizer of a ranks file (see the module docstring)."""
    ranks = read_ranks(path)
    specials_path = path.parent / "special_tokens.json"
    specials: dict[str, int] = {}
    if specials_path.is_file():
        loaded = json.loads(read_text_file(specials_path, "special tokens"))
        specials = {str(k): int(v) for k, v in loaded.items()}
    pre_tokenizer: dict[str, Any] = {
        "type": "ByteLevel",
        "add_prefix_space": False,
        "trim_offsets": True,
        "use_regex": True,
    }
    if pattern is not None:
        pre_tokenizer = {
            "type": "Sequence",
            "pretokenizers": [
                {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated", "invert": False},
                {**pre_tokenizer, "use_regex": False},
            ],
        }
    vocab = {bytes_to_symbols(token): rank for token, rank in sorted(ranks.items(), key=lambda item: item[1])}
    document = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {
                "id": i,
                "content": c,
                "single_word": False,
                "lstrip": False,
                "rstrip": False,
                "normalized": False,
                "special": True,
            }
            for c, i in sorted(specials.items(), key=lambda item: item[1])
        ],
        "normalizer": None,
        "pre_tokenizer": pre_tokenizer,
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": False,
            "vocab": vocab,
            "merges": [[a, b] for a, b in merges_of(ranks)],
        },
    }
    return from_tokenizer_json(document)


def ranks_only(base: Any, tokenizer: Tokenizer, files: dict[str, str | bytes]) -> dict[str, str | bytes]:
    """The files of an extended ranks base: the ranks under the base's file name (written from the
    extended vocabulary whatever the split pattern: a ranks base is read with tiktoken's merge
    rule, which continued training keeps), the special tokens, and ``tokenizer.json`` + config
    for the libraries that read those."""
    out = {name: text for name, text in files.items() if name != "tokenizer.tiktoken"}
    specials = {t.content: t.id for t in tokenizer.added.tokens}
    regular = sorted((i, t) for t, i in tokenizer.vocab.items() if t not in specials)
    out[next(iter(base.files))] = "".join(
        f"{base64.b64encode(symbols_to_bytes(t)).decode('ascii')} {i}\n" for i, t in regular
    )
    out["special_tokens.json"] = json.dumps(specials, ensure_ascii=False, indent=2) + "\n"
    return out
