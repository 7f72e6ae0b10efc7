"""The probes behind every acceptance of the gigatoken engine, run once and kept in the user cache.

* :func:`unicode_disagreements`: every Unicode scalar value in three contexts (after a letter, a
  digit, a punctuation mark), encoded by gigatoken with a probe vocabulary whose merges join the
  context to any following byte, so the ids show which pieces the GPT-2 split made, that is the
  class (letter, number, space, other) gigatoken gives the code point. Compared with
  ``tokenizers``' own classes (:mod:`toktools.tables.bytelevel`, measured from ``tokenizers``
  by ``scripts/gen_bytelevel_tables.py``). The code points where they differ (gigatoken 0.10:
  the 4,657 letters and digits of Unicode 17, which ``tokenizers`` 0.23.3 does not know) are
  where gigatoken's ids may differ: documents holding one go to ``tokenizers``. Once per
  gigatoken version (and tables): the split does not depend on the vocabulary.
* :func:`probe_gigatoken`: gigatoken against ``tokenizers`` on this tokenizer: the vocabulary's own
  tokens as words (alone, back to back, after a space), adversarial strings (whitespace of every
  kind, contractions, long words past gigatoken's cache limits, added tokens with whitespace
  around them, mixed scripts) and a sample of code points in six contexts. Once per tokenizer
  fingerprint and gigatoken version.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

from toktools.engines.base import Engine

#: The modules whose code decides a gigatoken verdict, and the libraries (the cache key).
PROBE_CODE = (
    "toktools.engines.gigatoken_probe",
    "toktools.engines.gigatoken_engine",
    "toktools.engines.base",
    "toktools.engines.tokenizers_engine",
    "toktools.models.bpe.byte_symbols",
    "toktools.tables.bytelevel",
)
PROBE_LIBRARIES = ("tokenizers", "gigatoken")
_CONTEXTS = "a1!"  # joined to a following letter, number, other character respectively

_disagreements: dict[str, list[int]] = {}


def _probe_document(contexts: str) -> dict[str, Any]:
    """A byte-level BPE whose merges are (context character, any byte), each its own token."""
    from toktools.models.bpe.byte_symbols import BYTE_TO_SYMBOL

    vocab = {symbol: byte for byte, symbol in enumerate(BYTE_TO_SYMBOL)}
    merges = []
    for context in contexts:
        left = BYTE_TO_SYMBOL[ord(context)]
        for byte in range(256):
            vocab[left + BYTE_TO_SYMBOL[byte]] = len(vocab)
            merges.append([left, BYTE_TO_SYMBOL[byte]])
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [],
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        "post_processor": None,
        "decoder": None,
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "vocab": vocab, "merges": merges},
    }


def tokenizers_classes() -> Any:
    """``tokenizers``' class of every code point: 0 other, 1 letter, 2 number, 3 space."""
    import numpy as np

    from toktools.tables.bytelevel import LETTER_RANGES, NUMBER_RANGES, SPACE_RANGES

    classes = np.zeros(0x110000, dtype=np.uint8)
    for value, ranges in ((1, LETTER_RANGES), (2, NUMBER_RANGES), (3, SPACE_RANGES)):
        for lo, hi in ranges:
            classes[lo : hi + 1] = value
    return classes


def gigatoken_classes(points: Sequence[int]) -> Any:
    """gigatoken's class of each of ``points`` (as :func:`tokenizers_classes`; 4 when the
    contexts disagree with each other), read from its ids on the probe vocabulary."""
    import json

    import awkward as ak
    import gigatoken
    import numpy as np

    tokenizer = gigatoken.Tokenizer.from_json(json.dumps(_probe_document(_CONTEXTS)))
    joined: list[list[Any]] = [[], [], []]
    step = 1 << 16  # a chunk at a time: memory stays flat
    for lo in range(0, len(points), step):
        chars = [chr(c) for c in points[lo : lo + step]]
        first_bytes = np.frombuffer(bytes(ch.encode("utf-8")[0] for ch in chars), dtype=np.uint8).astype(np.int64)
        for number, context in enumerate(_CONTEXTS):
            layout = ak.to_layout(tokenizer.encode_batch([context + ch for ch in chars]))
            offsets = np.asarray(layout.offsets)
            first = np.asarray(layout.content.data)[offsets[:-1]].astype(np.int64)
            joined[number].append(first == 256 + 256 * number + first_bytes)  # the merge (context, first byte)
    letter, number_, other = (np.concatenate(parts) if parts else np.zeros(0, dtype=bool) for parts in joined)
    classes = np.full(len(points), 4, dtype=np.uint8)
    only = lambda mask, *rest: mask & ~np.logical_or.reduce(rest)  # noqa: E731
    classes[only(letter, number_, other)] = 1
    classes[only(number_, letter, other)] = 2
    classes[only(other, letter, number_)] = 0
    classes[~(letter | number_ | other)] = 3
    return classes


def unicode_disagreements() -> list[int]:
    """The code points where gigatoken's GPT-2 split classes differ from ``tokenizers``'
    (every scalar value checked; surrogates are never passed to gigatoken). Kept in the user
    cache per gigatoken version and the code that decides it."""
    from toktools.engines.gigatoken_engine import gigatoken_version
    from toktools.io.user_cache import entry_path, read_json, write_json

    version = gigatoken_version()
    if version in _disagreements:
        return _disagreements[version]
    path = entry_path(
        "gigatoken-unicode", f"gigatoken-{version}", ".json", modules=PROBE_CODE, libraries=PROBE_LIBRARIES
    )
    cached = read_json(path)
    if isinstance(cached, list) and all(isinstance(c, int) for c in cached):
        _disagreements[version] = cached
        return cached
    import numpy as np

    points = np.array([c for c in range(0x110000) if not 0xD800 <= c < 0xE000], dtype=np.int64)
    theirs = gigatoken_classes(points.tolist())
    ours = tokenizers_classes()[points]
    differing = points[theirs != ours].tolist()
    write_json(path, differing)
    _disagreements[version] = differing
    return differing


# ---------------------------------------------------------------------------------------------
# The probe of one tokenizer
# ---------------------------------------------------------------------------------------------

_SPACES = [" ", "  ", "\t", "\n", "\r\n", "\r", "\x0b", "\x0c", "\x85", "\xa0", "\u2028", "\u3000", "\u200b", "\ufeff"]
_PIECES = [
    "hello",
    "Hello",
    "HELLO",
    "don't",
    "I'M",
    "we'll",
    "they're",
    "you've",
    "she'd",
    "'s",
    "'S",
    "''",
    "123",
    "4567890",
    "3.14",
    "½",
    "²",
    "١٢٣",
    "!!!",
    "...",
    "--",
    "@#$%",
    "中文文本",
    "日本語のテキスト",
    "한국어",
    "Ελληνικά",
    "русский",
    "עברית",
    "العربية",
    "हिन्दी",
    "e\u0301",
    "🙂",
    "👍🏽",
    "🏳️‍🌈",
    "\x00",
    "\x7f",
    "a" * 20,
    "ab" * 40,
    "x" * 300,
    "漢" * 120,
    " " * 17,
]


def adversarial_texts(added: Sequence[str], seed: int = 23, count: int = 1500) -> list[str]:
    """Strings built to catch a split or merge that differs: every piece and space above next
    to every other, long runs past gigatoken's short-word cache (15 bytes) and ``tokenizers``'
    (256 bytes), and the added tokens with whitespace on either side and cut in half."""
    rng = random.Random(seed)
    pieces = list(_PIECES)
    for token in added:
        pieces += [token, f" {token} ", f"\n{token}\n", f"{token}{token}", token[: len(token) // 2], f"a{token}b"]
    out = [a + b for a in pieces for b in _SPACES] + [a + b for a in _SPACES for b in pieces]
    for _ in range(count):
        out.append("".join(rng.choice(pieces) + rng.choice(["", "", *_SPACES]) for _ in range(rng.randint(1, 12))))
    return out


def vocabulary_texts(document: Mapping[str, Any]) -> list[str]:
    """The vocabulary's own tokens as text (those whose bytes are UTF-8): one per line, back to
    back, and separated by spaces, in documents of a few hundred tokens."""
    from toktools.models.bpe.byte_symbols import symbols_to_bytes

    added = {t["content"] for t in document.get("added_tokens") or []}
    words = []
    for token in (document.get("model") or {}).get("vocab") or {}:
        if token in added:
            continue
        try:
            words.append(symbols_to_bytes(token).decode("utf-8"))
        except (UnicodeDecodeError, UnicodeEncodeError):
            continue
    out = []
    for start in range(0, len(words), 256):
        chunk = words[start : start + 256]
        out += ["\n".join(chunk), "".join(chunk), " ".join(chunk)]
    return out


def code_point_texts(excluded: set[int], step: int = 251) -> list[str]:
    """Every ``step``-th code point and the known risky ones, in the six contexts of the tiktoken
    probe (:func:`toktools.engines.analysis.probe_text`), leaving out ``excluded``."""
    from toktools.engines.analysis import probe_code_points, probe_text

    points = set(range(0, 0x110000, step)) | set(probe_code_points())
    points = {c for c in points if not 0xD800 <= c < 0xE000 and c not in excluded}
    return probe_text(sorted(points))


def probe_texts(document: Mapping[str, Any], excluded: set[int]) -> list[str]:
    added = [t["content"] for t in document.get("added_tokens") or []]
    texts = adversarial_texts(added) + vocabulary_texts(document) + code_point_texts(excluded)
    if not excluded:
        return texts
    import re

    ranges: list[list[int]] = []
    for c in sorted(excluded):
        if ranges and ranges[-1][1] == c - 1:
            ranges[-1][1] = c
        else:
            ranges.append([c, c])
    holds = re.compile("[" + "".join(f"{re.escape(chr(lo))}-{re.escape(chr(hi))}" for lo, hi in ranges) + "]").search
    return [t for t in texts if not holds(t)]


def probe_gigatoken(engine: Engine, document: Mapping[str, Any], excluded: set[int]) -> str | None:
    """None when gigatoken gives ``tokenizers``' ids on every probe text, else the first
    difference in words."""
    from toktools.engines.tokenizers_engine import TokenizersEngine
    from toktools.errors import ToktoolsError

    texts = probe_texts(document, excluded)
    try:
        reference = TokenizersEngine(document).encode_batch(texts)
    except ToktoolsError as err:
        return str(err)
    ours = engine.encode_batch(texts)
    for text, got, want in zip(texts, ours, reference):
        if got != want:
            at = next((k for k, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
            return f"gigatoken differs from tokenizers on {text[:24]!r} (token {at})"
    return None


# ---------------------------------------------------------------------------------------------
# The verdict: conditions, then the probe, remembered per tokenizer and gigatoken version
# ---------------------------------------------------------------------------------------------

_verdicts: dict[tuple[str, str], str | None] = {}


def _verdict_file(fingerprint: str) -> Any:
    from toktools.io.user_cache import entry_path

    return entry_path("gigatoken-verdict", fingerprint, ".json", modules=PROBE_CODE, libraries=PROBE_LIBRARIES)


def known_refused(fingerprint: str) -> bool:
    """Whether a remembered verdict refuses gigatoken for this tokenizer (no probe run here)."""
    from toktools.io.user_cache import read_json

    cached = read_json(_verdict_file(fingerprint))
    return isinstance(cached, dict) and isinstance(cached.get("reason"), str)


def gigatoken_engine(
    document: Any, shape: Mapping[str, Any], fingerprint: str | None = None, raw: bytes | None = None
) -> Engine:
    """A gigatoken engine for this tokenizer, or a :class:`ToktoolsError` saying why it is not
    exact. The configuration is read from ``shape``; the vocabulary conditions and the probe
    run once per tokenizer fingerprint (and gigatoken version, and the code that decides) and
    are remembered in the user cache: then the document is not even parsed when ``raw`` (the
    ``tokenizer.json`` bytes) is given."""
    from toktools.engines.base import document_fingerprint, loaded_document
    from toktools.engines.gigatoken_engine import (
        GigatokenEngine,
        configuration_reason,
        gigatoken_version,
        vocabulary_reason,
    )
    from toktools.errors import ToktoolsError
    from toktools.io.user_cache import read_json, write_json

    reason = configuration_reason(shape)
    if reason is not None:
        raise ToktoolsError(f"engine gigatoken is not exact for this tokenizer: {reason}")
    fingerprint = fingerprint or document_fingerprint(loaded_document(document))
    key = (fingerprint, gigatoken_version())
    excluded = unicode_disagreements()
    if key not in _verdicts:
        cached = read_json(_verdict_file(fingerprint))
        if (
            isinstance(cached, dict)
            and "reason" in cached
            and (cached["reason"] is None or isinstance(cached["reason"], str))
        ):
            _verdicts[key] = cached["reason"]
        else:
            doc = loaded_document(document)
            reason = vocabulary_reason(doc)
            if reason is None:
                engine = GigatokenEngine(raw if raw is not None else doc, excluded)
                reason = probe_gigatoken(engine, doc, set(excluded))
                _verdicts[key] = reason
                write_json(_verdict_file(fingerprint), {"reason": reason})
                if reason is None:
                    return engine
            _verdicts[key] = reason
            write_json(_verdict_file(fingerprint), {"reason": reason})
    reason = _verdicts[key]
    if reason is not None:
        raise ToktoolsError(f"engine gigatoken is not exact for this tokenizer: {reason}")
    return GigatokenEngine(raw if raw is not None else loaded_document(document), excluded)
