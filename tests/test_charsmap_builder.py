"""``toktools.sentencepiece.charsmap_builder`` writes sentencepiece ``precompiled_charsmap`` blobs in pure Python:

* our reader (:class:`toktools.parts.precompiled.CharsMap`) finds every rule of the mapping, with
  its replacement, at its length, and nothing else: random mappings with keys that are prefixes
  of each other, 4-byte UTF-8, empty replacements;
* ``sentencepiece`` loads the blob and normalises text exactly as our longest-match reader
  (:func:`toktools.parts.precompiled.spm_normalize`) does;
* what the format cannot hold is one :class:`ToktoolsError`.
"""

from __future__ import annotations

import random
import struct

import pytest

from toktools.errors import ToktoolsError
from toktools.parts.precompiled import CharsMap, spm_normalize
from toktools.sentencepiece import charsmap_builder
from toktools.sentencepiece.charsmap_builder import build_charsmap
from toktools.sentencepiece.model_file import NORMALIZER_FIELDS, Message

ALPHABET = list("abcab ") + ["é", "中", "\u0301", "😀", "𝔘", "\U00010348", "\t", "\u3000", "ß"]


def random_mapping(seed: int, size: int = 300) -> dict[str, str]:
    """Short keys over a small alphabet, so many keys are prefixes of others; some replacements
    are empty, many are shared."""
    rng = random.Random(seed)
    mapping = {}
    while len(mapping) < size:
        key = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 5)))
        mapping[key] = rng.choice(["", "X", "yy", "中文", "😀", " ", "é" * rng.randint(1, 3)])
    return mapping


def longest_match(mapping: dict[str, str], data: bytes, pos: int) -> tuple[int, str] | None:
    """The longest key that the bytes at ``pos`` start with (the plain-dict meaning of a trie)."""
    best = None
    for key, value in mapping.items():
        raw = key.encode("utf-8")
        if data.startswith(raw, pos) and (best is None or len(raw) > best[0]):
            best = (len(raw), value)
    return best


@pytest.mark.parametrize("seed", range(4))
def test_our_reader_reads_every_rule_the_builder_writes(seed):
    mapping = random_mapping(seed)
    cmap = CharsMap(build_charsmap(mapping))
    for key, value in mapping.items():
        raw = key.encode("utf-8")
        hits = cmap.prefix_matches(raw)
        # every key that is a prefix of this one is found, shortest first, with its own replacement
        expected = sorted((len(k.encode("utf-8")), v) for k, v in mapping.items() if raw.startswith(k.encode("utf-8")))
        assert [(length, cmap.replacement(offset)) for length, offset in hits] == expected
    rng = random.Random(seed + 100)
    for _ in range(300):
        text = "".join(rng.choice(ALPHABET + ["z", "\x00", "\u0300"]) for _ in range(rng.randint(1, 8)))
        data = text.encode("utf-8")
        assert cmap.longest(data, 0) == longest_match(mapping, data, 0), text


def test_the_blob_layout_is_header_units_pool():
    blob = build_charsmap({"a": "b", "ab": "", "中": "中文"})
    (trie_size,) = struct.unpack_from("<I", blob)
    assert trie_size % (4 * 256) == 0  # whole 256-unit blocks: a walk never leaves the array
    assert blob[4 + trie_size :] == b"\0b\0\xe4\xb8\xad\xe6\x96\x87\0"  # sorted, NUL-terminated, each once
    assert build_charsmap({}) == b""


def sentencepiece_normalizer(blob: bytes, **flags: bool):
    spm = pytest.importorskip("sentencepiece", reason="sentencepiece is not installed (test extra)")
    spec = Message(NORMALIZER_FIELDS)
    spec.set("name", "built")
    spec.set("precompiled_charsmap", blob)
    for name in ("add_dummy_prefix", "remove_extra_whitespaces", "escape_whitespaces"):
        spec.set(name, flags.get(name, False))
    return spm.SentencePieceNormalizer(normalizer_spec=spec.serialize())


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("whitespace", [False, True])
def test_sentencepiece_loads_the_blob_and_normalises_like_our_reader(seed, whitespace):
    mapping = random_mapping(seed)
    blob = build_charsmap(mapping)
    flags = dict(add_dummy_prefix=whitespace, remove_extra_whitespaces=whitespace, escape_whitespaces=whitespace)
    normalizer = sentencepiece_normalizer(blob, **flags)
    cmap = CharsMap(blob)
    rng = random.Random(seed)
    texts = [
        "".join(rng.choice(ALPHABET + ["z", "\u0300", "  "]) for _ in range(rng.randint(0, 20))) for _ in range(500)
    ]
    assert normalizer.normalize(texts) == [spm_normalize(t, cmap, **flags)[0] for t in texts]


def test_nul_in_the_text_never_matches():
    """sentencepiece walks NUL bytes too (it passes the length): no rule starts or goes on with one."""
    blob = build_charsmap({"a": "A", "ab": "B"})
    assert sentencepiece_normalizer(blob).normalize("a\x00b\x00ab") == "A\x00b\x00B"


@pytest.mark.parametrize(
    "mapping, message",
    [
        ({"": "x"}, "empty source"),
        ({"a\x00": "x"}, "contains NUL"),
        ({"a": "x\x00y"}, "contains NUL"),
        ({"\ud800": "x"}, "lone surrogate"),
        ({"a" * n: "x" for n in range(1, 40)}, "prefixes of"),
    ],
)
def test_what_the_format_cannot_hold_is_one_error(mapping, message):
    with pytest.raises(ToktoolsError, match=message):
        build_charsmap(mapping)


def test_a_trie_past_the_unit_offsets_is_one_error(monkeypatch):
    monkeypatch.setattr(charsmap_builder, "MAX_UNITS", 4 * 256)
    with pytest.raises(ToktoolsError, match="more than 1024 units"):
        build_charsmap(random_mapping(0, size=1000))


def test_a_pool_past_the_unit_values_is_one_error(monkeypatch):
    """A value is a 31-bit pool offset: a pool that grows past it cannot be pointed into."""
    monkeypatch.setattr(charsmap_builder, "MAX_VALUE", 8)
    with pytest.raises(ToktoolsError, match="replacement pool passes 8 bytes"):
        build_charsmap({"a": "xxxx", "b": "yyyy", "c": "zzzz"})
    assert build_charsmap({"a": "xxx", "b": "yyy"})  # offsets 0 and 4 fit
