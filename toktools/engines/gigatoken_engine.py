"""The gigatoken engine: a Rust byte-level BPE (PyPI ``gigatoken``) that loads a ``tokenizer.json``
itself and encodes whole batches on its own thread pool, ids straight into NumPy arrays.

Its ids equal ``tokenizers``' under the conditions of :func:`configuration_reason` and
:func:`vocabulary_reason` (read from its source, see ``docs/engines.md``), on every document
that holds none of the code points where its Unicode tables differ from ``tokenizers``'
(:mod:`toktools.engines.gigatoken_probe` measures them; such documents, rare, go to
``tokenizers``). Every acceptance is backed by a probe against ``tokenizers``, run once per
tokenizer and gigatoken version and kept in the user cache.

gigatoken's pool must not be used in a process forked after the pool started (its threads do
not survive the fork): gigatoken itself detects forked children and worker processes and then
encodes on the calling thread (``gigatoken/_parallel.py``), and this engine leaves that choice
to it. toktools forks its ``--verify`` checker before the engine is built.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from toktools.engines.base import Engine, IdBatch, PackedIds, corpus_document
from toktools.errors import ToktoolsError


def gigatoken_available() -> bool:
    """Whether gigatoken is installed (the ``corpus`` extra): ``auto`` then considers it."""
    import importlib.util

    return importlib.util.find_spec("gigatoken") is not None


#: gigatoken tokenizers loaded ahead by :func:`preload`: (the ``tokenizer.json`` bytes, the tokenizer)
_ahead: list[tuple[bytes, Any]] = []


def preload(raw: bytes | None = None) -> Callable[[], None]:
    """Import gigatoken, NumPy and awkward, and load the tokenizer of ``raw`` (the
    ``tokenizer.json`` bytes) with gigatoken, on a thread of their own; returns the function that
    waits for it. gigatoken hands its ids back as awkward arrays: these imports and its
    ``load_hf_json`` are ~0.4 s of a run's start-up. Started while the main thread hashes the
    inputs (hashlib releases the GIL), they cost no wall time where a core is free; the engine
    made for the same bytes then takes the tokenizer (:class:`GigatokenEngine`). Wait before
    anything forks: a fork while another thread imports leaves the child's import lock held."""
    import threading

    def load() -> None:
        try:
            import awkward  # noqa: F401
            import gigatoken
            import numpy  # noqa: F401

            if raw is not None:
                _ahead.append((raw, gigatoken.Tokenizer.from_json(raw)))
        except Exception:  # noqa: BLE001 - the engine loads it again and reports why not
            pass

    thread = threading.Thread(target=load, name="toktools-preload", daemon=True)
    thread.start()
    return thread.join


def _loaded_ahead(source: Any) -> Any:
    """The tokenizer :func:`preload` loaded from these very bytes, or None (taken once)."""
    for raw, tokenizer in _ahead:
        if raw is source:
            _ahead.clear()
            return tokenizer
    _ahead.clear()
    return None


def gigatoken_version() -> str:
    from toktools.io.user_cache import library_version

    return library_version("gigatoken")


def _empty(value: Any) -> bool:
    return value is None or value == "" or value is False


def configuration_reason(shape: Mapping[str, Any]) -> str | None:
    """None when gigatoken runs this pipeline as ``tokenizers`` does (the document's shape
    alone: no vocabulary needed), else the first reason it does not, in words.

    From gigatoken 0.10's loader (``src/load_tokenizer/hf.rs``): it reads the BPE vocabulary
    and merges, ``ignore_merges``, ``byte_fallback`` (which picks its SentencePiece backend),
    a ``ByteLevel`` pre-tokenizer (the GPT-2 split; it does not read ``use_regex``), its
    ``add_prefix_space``, an NFC normaliser, and the added tokens with ``lstrip``/``rstrip``.
    It ignores the rest (``dropout``, ``continuing_subword_prefix``, ``end_of_word_suffix``,
    ``single_word``, ``normalized``), so a file that sets one of those is refused here."""
    model = shape.get("model") or {}
    if model.get("type", "BPE") != "BPE":
        return f"model {model.get('type')!r} is not BPE"
    if model.get("byte_fallback"):
        return "BPE with byte_fallback (gigatoken's SentencePiece backend) is not accepted yet"
    if model.get("dropout") not in (None, 0, 0.0):
        return "BPE dropout is on (gigatoken ignores it)"
    for option in ("continuing_subword_prefix", "end_of_word_suffix"):
        if not _empty(model.get(option)):
            return f"BPE option {option} is set (gigatoken ignores it)"
    if shape.get("normalizer"):
        return f"normalizer {shape['normalizer'].get('type')!r} is not accepted for gigatoken"
    pre = shape.get("pre_tokenizer") or {}
    if pre.get("type") != "ByteLevel":
        return f"pre-tokenizer {pre.get('type')!r} is not ByteLevel"
    if not pre.get("use_regex", True):
        return "ByteLevel use_regex=false (gigatoken always splits with the GPT-2 pattern)"
    added = shape.get("added_tokens") or []
    for token in added:
        if not token.get("content"):
            return "an added token is empty"
        if token.get("single_word"):
            return f"added token {token['content']!r} has single_word (gigatoken ignores it)"
    if len({bool(t.get("normalized")) for t in added}) > 1:
        # tokenizers matches normalized=false tokens first, then normalized ones in what is
        # left; gigatoken matches all of them in one leftmost-longest pass
        return "added tokens mix normalized=true and normalized=false"
    return None


def vocabulary_reason(document: Mapping[str, Any]) -> str | None:
    """None when gigatoken reads the vocabulary and merges as ``tokenizers`` does, else why not.

    gigatoken maps each vocabulary key to bytes (through the GPT-2 byte map when every
    character is a byte symbol, else as raw UTF-8), looks merges up by those bytes, skips a
    merge whose parts or result are missing, keeps the *first* of two merges of one pair, and
    merges by the result's id when results come in id order (else by merge position). So:
    every regular key is made of byte symbols and all 256 are present; ids are distinct; every
    merge uses and makes regular tokens; no two merges make the same token (then pairs are
    distinct too, and id order, where it holds, is merge order); no added token's text is a
    regular token of another id."""
    from toktools.models.bpe.byte_symbols import SYMBOL_TO_BYTE, symbols_to_bytes

    model = document.get("model") or {}
    vocab = model.get("vocab")
    if not isinstance(vocab, dict):
        return "the vocabulary is not a BPE map"
    added = {t["content"]: t["id"] for t in document.get("added_tokens") or []}
    regular = {s: i for s, i in vocab.items() if s not in added}
    if not set("".join(regular)) <= SYMBOL_TO_BYTE.keys():
        token = next(t for t in regular if any(ch not in SYMBOL_TO_BYTE for ch in t))
        return f"token {token!r} is not made of byte symbols"
    missing = [s for s in SYMBOL_TO_BYTE if s not in regular]
    if missing:
        return f"byte symbol {missing[0]!r} is not in the vocabulary"
    if len(set(vocab.values())) != len(vocab):
        return "two tokens share an id"
    seen: set[str] = set()
    for number, merge in enumerate(model.get("merges") or [], start=1):
        pair = merge if isinstance(merge, list) else str(merge).split(" ")
        if len(pair) != 2:
            return f"merge {number} is not a pair"
        a, b = pair
        result = a + b
        if a not in regular or b not in regular or result not in regular:
            return f"merge {number} ({a} {b}) uses or makes a token outside the regular vocabulary"
        if result in seen:
            return f"two merges make {result!r}"
        seen.add(result)
    # tokenizers numbers an added token missing from the vocabulary itself (after the vocabulary,
    # in order), whatever the file says; gigatoken takes the file's id
    next_id = len(vocab)
    for token in document.get("added_tokens") or []:
        if token["content"] not in vocab:
            if token["id"] != next_id:
                return f"added token {token['content']!r} has id {token['id']} in the file, {next_id} in tokenizers"
            next_id += 1
    by_bytes = {symbols_to_bytes(s): i for s, i in regular.items()}
    for content, token_id in added.items():
        other = by_bytes.get(content.encode("utf-8"))
        if other is not None and other != token_id:
            return f"added token {content!r} is also a regular token with another id"
    return None


class GigatokenEngine(Engine):
    """gigatoken's ``encode_batch`` on the whole batch (its pool, or the calling thread in a
    forked child), ids kept in its uint32 array (:meth:`encode_packed`). Documents holding a
    code point of ``excluded`` (where its tables differ from ``tokenizers``') are encoded by
    ``tokenizers`` instead. A lone surrogate (never in a decoded file) is repaired as tiktoken
    repairs it."""

    name = "gigatoken"
    #: gigatoken spreads one batch over its pool: large batches keep every core busy
    batch_chars = 1 << 22

    def __init__(self, source: bytes | Mapping[str, Any], excluded: Sequence[int] = ()) -> None:
        import gigatoken

        self._document = source if not isinstance(source, (bytes, bytearray)) else None
        data = source if isinstance(source, (bytes, bytearray)) else json.dumps(corpus_document(source))
        try:
            self.tokenizer = _loaded_ahead(source) or gigatoken.Tokenizer.from_json(data)
        except Exception as err:  # gigatoken raises plain exceptions with the loader's message
            raise ToktoolsError(f"engine gigatoken cannot load this tokenizer: {str(err).splitlines()[0]}") from None
        self._raw = source if isinstance(source, (bytes, bytearray)) else None
        self._excluded_table: Any = None
        self._excluded_min = 0
        if excluded:
            import numpy as np

            table = np.zeros(0x110000, dtype=bool)
            table[np.asarray(sorted(excluded), dtype=np.int64)] = True
            self._excluded_table = table
            self._excluded_min = int(min(excluded))
        self._fallback: Engine | None = None
        #: documents handed to the fallback so far (for --verbose)
        self.fallback_documents = 0

    # -- the documents gigatoken must not encode ------------------------------------------------

    def _routed(self, texts: Sequence[str]) -> list[int]:
        """Indices of ``texts`` that hold an excluded code point (or a lone surrogate)."""
        import numpy as np

        joined = "".join(texts)
        if joined.isascii():
            return []
        table, low = self._excluded_table, self._excluded_min
        points = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
        del joined
        if table is None:
            return []
        high = points[points >= low]
        if not (high.size and table[high].any()):
            return []
        del points
        out = []  # some document holds one: which
        for index, text in enumerate(texts):
            if text.isascii():
                continue
            points = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
            high = points[points >= low]
            if high.size and table[high].any():
                out.append(index)
        return out

    def _fallback_engine(self) -> Engine:
        if self._fallback is None:
            from toktools.engines.tokenizers_engine import TokenizersEngine

            document = self._document if self._document is not None else json.loads(bytes(self._raw or b""))
            self._fallback = TokenizersEngine(document)
        return self._fallback

    # -- encoding ---------------------------------------------------------------------------------

    def _arrays(self, texts: Sequence[str]) -> tuple[Any, Any]:
        """gigatoken's ids of ``texts``: (every id as uint32, offsets of each text: len + 1)."""
        import awkward as ak
        import numpy as np

        try:
            layout = ak.to_layout(self.tokenizer.encode_batch(list(texts)))
        except (UnicodeEncodeError, TypeError):  # a lone surrogate: repaired as tiktoken's encode repairs it
            repaired = [t.encode("utf-16", "surrogatepass").decode("utf-16", "replace") for t in texts]
            layout = ak.to_layout(self.tokenizer.encode_batch(repaired))
        offsets = np.asarray(layout.offsets, dtype=np.int64)
        data = np.ascontiguousarray(np.asarray(layout.content.data), dtype=np.uint32)
        if offsets[0]:
            data, offsets = data[offsets[0] : offsets[-1]], offsets - offsets[0]
        return data, offsets

    def encode_block(self, block: bytes) -> tuple[Any, Any]:
        """The ids of the non-empty lines of ``block`` (UTF-8, lines split at ``\n`` only, as
        ``--document line`` reads them), split and encoded inside gigatoken: every id as uint32,
        and the offsets of each line's ids (lines + 1). Only for a block without a routed code
        point (:meth:`block_needs_routing`)."""
        import awkward as ak
        import gigatoken
        import numpy as np

        layout = ak.to_layout(self.tokenizer.encode_batch(gigatoken.BytesSource(block, separator=b"\n")))
        offsets = np.asarray(layout.offsets, dtype=np.int64)
        data = np.ascontiguousarray(np.asarray(layout.content.data), dtype=np.uint32)
        if len(offsets) and offsets[0]:
            data, offsets = data[offsets[0] : offsets[-1]], offsets - offsets[0]
        return data, offsets

    def block_needs_routing(self, block: bytes, scan: Any = None) -> bool:
        """Whether some line of ``block`` (valid UTF-8) holds a code point gigatoken's tables do
        not share with ``tokenizers``'. Read on the bytes, without decoding: in valid UTF-8 a lead
        byte starts a character wherever it stands, and the excluded code points have only a few
        lead bytes (0xE0, 0xEA, 0xF0 for gigatoken 0.10). ``scan``: the block's non-ASCII bytes
        and where they are (:func:`toktools.corpus.utf8_check.non_ascii`, read once per block
        for the UTF-8 check too), in which the lead bytes are found at once; without it,
        ``bytes.find`` of each lead byte runs at memory speed, so a block without those bytes
        (most text) costs a few milliseconds. Each character they start is decoded with NumPy
        and looked up in the table."""
        if self._excluded_table is None or block.isascii():
            return False
        where = getattr(scan, "where", None)
        for lead, width in self._leads():
            if where is not None:
                at = where[scan.high == lead[0]]
            elif block.find(lead) >= 0:
                import numpy as np

                at = np.flatnonzero(np.frombuffer(block, dtype=np.uint8) == lead[0])
            else:
                continue
            if self._holds_excluded(block, at, lead[0], width):
                return True
        return False

    def _leads(self) -> list[tuple[bytes, int]]:
        """The lead bytes of the excluded code points, with the length of the characters they start."""
        if not hasattr(self, "_lead_bytes"):
            import numpy as np

            points = np.flatnonzero(self._excluded_table)
            points = points[(points < 0xD800) | (points >= 0xE000)]
            # UTF-8's first byte of each (as chr(c).encode()[0], for thousands of points at once)
            firsts = np.select(
                [points < 0x80, points < 0x800, points < 0x10000],
                [points, 0xC0 | (points >> 6), 0xE0 | (points >> 12)],
                0xF0 | (points >> 18),
            )
            self._lead_bytes = [
                (bytes([b]), 2 if b < 0xE0 else 3 if b < 0xF0 else 4) for b in np.unique(firsts).tolist()
            ]
        return self._lead_bytes  # type: ignore[no-any-return]

    def _holds_excluded(self, block: bytes, at: Any, lead: int, width: int) -> bool:
        """Whether a character of ``width`` bytes starting with byte ``lead`` (at the positions
        ``at``) is excluded (all of them decoded at once; bytes past the end read as 0x80, which
        decodes to no table hit that a complete character would not give)."""
        import numpy as np

        if not at.size:
            return False
        raw = np.frombuffer(block, dtype=np.uint8)
        point: Any = np.full(at.size, lead & (0xFF >> (width + 1)), dtype=np.uint32)
        for k in range(1, width):
            following = np.where(at + k < len(raw), raw[np.minimum(at + k, len(raw) - 1)], 0x80)
            point = (point << 6) | (following.astype(np.uint32) & 0x3F)
        table = self._excluded_table
        return bool(table[point[point < len(table)]].any())

    def encode_packed(self, texts: Sequence[str]) -> PackedIds:
        """The ids of ``texts`` as one native uint32 array (:class:`PackedIds`), no Python int
        per id; routed documents are encoded by ``tokenizers`` and spliced in."""
        import numpy as np

        texts = list(texts)
        routed = self._routed(texts)
        if routed:
            self.fallback_documents += len(routed)
            rest = set(routed)
            kept = [t if i not in rest else "" for i, t in enumerate(texts)]
            data, offsets = self._arrays(kept)
            others = dict(zip(routed, self._fallback_engine().encode_batch([texts[i] for i in routed])))
            pieces, counts = [], []
            for i in range(len(texts)):
                if i in others:
                    ids = np.asarray(others[i], dtype=np.uint32)
                else:
                    ids = data[offsets[i] : offsets[i + 1]]
                pieces.append(ids)
                counts.append(len(ids))
            return PackedIds(np.concatenate(pieces).astype(np.uint32).tobytes() if pieces else b"", counts)
        if not texts:
            return PackedIds(b"", [])
        data, offsets = self._arrays(texts)
        return PackedIds(data.tobytes(), np.diff(offsets).tolist())

    def encode_batch(self, texts: Sequence[str]) -> IdBatch:
        packed = self.encode_packed(texts)
        return [packed[i] for i in range(len(packed))]
