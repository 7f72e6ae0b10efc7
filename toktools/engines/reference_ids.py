"""The ``--verify`` checker's reference for byte-level BPE, loaded from the ids-only path's state
alone (issue 23: verification priced in bytes).

A corpus run's checker re-encodes a sample of at least 64 KB with the reference. Before, it
unpickled the whole built :class:`~toktools.tokenizer.Tokenizer` (vocabulary, merge list, merge
map and id→token map: 2.5 MB for GPT-2, with the modules of every part) and built the ids-only
encoder over it: ~0.1 s of CPU, as much as checking the sample itself, and on a 5 MB run alone
a fifth of what encoding it costs. The ids-only path of byte-level BPE
(:mod:`toktools.engines.ids_only`) reads far less: the pre-tokeniser's pattern, the ids of the 256
byte symbols and the merge map. That state is written once, from the reference the checker
built on its first run, and kept in the user cache with :mod:`marshal` (built-in types only:
loading it runs no code), keyed like the reference itself
(:mod:`toktools.engines.reference_cache`) plus the modules that read it.

:class:`ReferenceIds` encodes with the ids-only path's own parts: its split
(:class:`~toktools.engines.ids_words.ByteLevelWords`, with the pattern kept), the reference's
merge over the byte symbols' ids, and its word cache. The merge is
:func:`toktools.models.bpe.merges.merge_packed`: :func:`~toktools.models.bpe.merges.merge_symbols`'
heap and steps over a merge map with ints for keys and values (its 100,000 tuples cost ~12 MB
and ~0.01 s to load). A text that holds an added token's content (or is not valid Unicode) is encoded by
the whole reference, built on first need, so every answer is the reference's. Tokenizers this
state does not cover (other models, ``ignore_merges``, a normaliser) have no entry: the checker
builds the whole reference for them, as before.

**Words kept across runs.** Merging the ~4,000 distinct words of a 64 KB sample one by one in
Python, and loading the 50,000-entry merge map to do it, is most of what the minimum sample
costs (~0.06 s of CPU, an eighth of encoding 5 MB with tiktoken). So the ids of the words a
checker merged are kept too (:func:`remember_words`, at most :data:`KEPT_WORDS`), beside the
state and under the same key, and the next checker starts its word cache with them. They are
the reference's own answers (:meth:`ReferenceIds._merge`; never an engine's), for the very
state and code that would merge them again. The merge map is loaded only when a word is not
kept (the state holds it as a :mod:`marshal` blob of its own). A sample of other text of the
same language still finds most of its words kept (two samples of English Wikipedia: ~65 % of
the distinct words), and the rest are merged as before.
"""

from __future__ import annotations

import marshal
import re
from collections.abc import Callable
from itertools import chain, islice
from pathlib import Path
from typing import Any

from toktools.engines.reference_cache import BUILT_BY

#: What writes and reads the state: the reference's modules, the ids-only path and this one.
STATE_BY = (
    *BUILT_BY,
    "toktools.engines.ids_only",
    "toktools.engines.ids_words",
    "toktools.engines.reference_ids",
)
#: The layout of the state (a dict of built-in values).
STATE_VERSION = 3
#: The layout of the kept words.
WORDS_VERSION = 1
#: Words kept for a tokenizer, at most (loading 2^15 of them costs ~9 ms; a 64 KB sample of
#: English has ~4,000 distinct ones).
KEPT_WORDS = 1 << 15


def state_of(fast: Any) -> dict[str, Any] | None:
    """The state of an ids-only encoder of plain byte-level BPE (no ``ignore_merges``, no
    normaliser), or None for any other."""
    from toktools.engines.ids_only import IdsEncoder
    from toktools.engines.ids_words import ByteLevelBPE, ByteLevelWords
    from toktools.models.bpe.byte_symbols import BYTE_TO_SYMBOL
    from toktools.models.bpe.merges import pack_merges

    if type(fast) is not IdsEncoder or fast._normalize is not None:
        return None
    words, bpe = fast.words, fast.cache.compute
    if type(words) is not ByteLevelWords or type(bpe) is not ByteLevelBPE or bpe.ignore_merges:
        return None
    packed = pack_merges({(int(a), int(b)): (int(r), int(n)) for (a, b), (r, n) in bpe.merge_map.items()})
    if packed is None:
        return None
    added = fast.tokenizer.added
    return {
        "version": STATE_VERSION,
        "add_prefix_space": bool(words.add_prefix_space),
        "use_regex": bool(words.use_regex),
        "pattern": words.bmp.pattern,
        "pattern_code": _pattern_code(words.bmp.pattern),
        "byte_ids": [int(bpe.vocab[BYTE_TO_SYMBOL[b]]) for b in range(256)],
        # packed (ints, not tuples: a third of the memory, half the load), in a blob of its
        # own: loaded only when a word is not kept (ReferenceIds._merge)
        "merge_shift": packed[0],
        "merges": marshal.dumps(packed[1]),
        # without a normaliser, raw and normalised added tokens are both found as they are written
        "added": sorted({token.content for token in added.tokens}) if added else [],
    }


class ReferenceIds:
    """The reference's ids of texts, from :func:`state_of`'s state; ``full`` builds the whole
    reference (an object whose ``fast.encode`` gives a text's ids), for the texts the state does
    not cover. It stands where the checker keeps a reference engine: ``fast.encode``.
    ``words``: ids of words merged by an earlier checker of the same state (:func:`remember_words`);
    ``fingerprint``: the tokenizer's, under which :meth:`keep_words` keeps them."""

    name = "reference"

    def __init__(
        self,
        state: dict[str, Any],
        full: Callable[[], Any],
        words: dict[str, tuple[int, ...]] | None = None,
        fingerprint: str | None = None,
    ) -> None:
        from toktools.engines.ids_words import ByteLevelWords, WordCache
        from toktools.models.bpe.merges import merge_packed

        self._full_build = full
        self._full: Any = None
        pattern = _compiled(state["pattern"], state.get("pattern_code"))
        self.words = ByteLevelWords(state["add_prefix_space"], state["use_regex"], bmp_pattern=pattern)
        self._byte_id = state["byte_ids"].__getitem__
        self._merges: bytes = state["merges"]
        self._merge_shift: int = state["merge_shift"]
        self._merge_map: dict[int, int] | None = None
        self._merge_packed = merge_packed
        self.fingerprint = fingerprint
        added = state["added"]
        self._added = re.compile("|".join(map(re.escape, added))).search if added else None
        self.cache = WordCache(self._merge)
        if words:
            self.cache.update(words)
        self._kept = len(self.cache)  # the words loaded: no more are kept past KEPT_WORDS

    @property
    def fast(self) -> ReferenceIds:
        return self

    def _merge(self, word: str) -> tuple[int, ...]:
        """As :meth:`toktools.engines.ids_words.ByteLevelBPE.merge`: the byte symbols' ids merged
        (:func:`toktools.models.bpe.merges.merge_packed`, the reference's merge over packed pairs)."""
        if self._merge_map is None:  # the first word not kept
            self._merge_map = marshal.loads(self._merges)
        return tuple(
            self._merge_packed(list(map(self._byte_id, word.encode("utf-8"))), self._merge_map, self._merge_shift)
        )

    def encode(self, text: str) -> list[int]:
        """The ids of one text, as :meth:`toktools.engines.ids_only.IdsEncoder.encode`."""
        if (self._added is not None and self._added(text) is not None) or not _valid(text):
            return self.full().fast.encode(text)  # type: ignore[no-any-return]
        return list(chain.from_iterable(map(self.cache.__getitem__, self.words(text))))

    def encode_batch(self, texts: list[str]) -> list[list[int]]:
        return [self.encode(text) for text in texts]

    def keep_words(self) -> None:
        """Keep the words merged so far for the next checker (see :func:`remember_words`)."""
        if self.fingerprint is not None and self.cache.misses and self._kept < KEPT_WORDS:
            remember_words(self.fingerprint, self.cache)

    def full(self) -> Any:
        """The whole reference, built on first need."""
        if self._full is None:
            self._full = self._full_build()
        return self._full


def _pattern_code(pattern: str) -> list[Any] | None:
    """What :func:`re.compile` hands to ``_sre.compile`` for ``pattern`` (flags, code, groups,
    group names), kept in the state: compiling the split pattern (its classes list every letter
    and digit of the BMP) costs ~8 ms of the checker's start-up, building the same object from
    its code well under one. These are ``re``'s internals (``re._parser``, ``re._compiler``,
    ``_sre``), so the state's key holds Python's version, the code holds ``_sre.MAGIC``, and
    anything unexpected keeps nothing: the pattern is then compiled as usual."""
    try:
        import _sre
        from re import _compiler, _parser  # type: ignore[attr-defined]

        parsed = _parser.parse(pattern, 0)
        code = _compiler._code(parsed, 0)
        groupindex = dict(parsed.state.groupdict)
        indexgroup = [None] * parsed.state.groups
        for name, index in groupindex.items():
            indexgroup[index] = name
        # the opcodes are int subclasses (re's named constants), which marshal refuses
        kept = [
            _sre.MAGIC,
            int(parsed.state.flags),
            [int(c) for c in code],
            parsed.state.groups - 1,
            groupindex,
            indexgroup,
        ]
        if _from_code(pattern, kept) != re.compile(pattern):  # patterns compare their code too
            return None
        return kept
    except Exception:  # noqa: BLE001 - another Python's internals: compiled as usual
        return None


def _from_code(pattern: str, kept: list[Any]) -> re.Pattern[str]:
    import _sre

    magic, flags, code, groups, groupindex, indexgroup = kept
    if magic != _sre.MAGIC:
        raise ValueError("another version of re's engine")
    return _sre.compile(pattern, flags, code, groups, groupindex, tuple(indexgroup))  # type: ignore[no-any-return]


def _compiled(pattern: str, kept: list[Any] | None) -> re.Pattern[str] | str:
    """The split pattern, built from its kept code (:func:`_pattern_code`) where that works
    (``_sre`` checks the code), else its source, for :class:`ByteLevelWords` to compile."""
    if kept is not None:
        try:
            return _from_code(pattern, kept)
        except Exception:  # noqa: BLE001 - compiled as usual
            pass
    return pattern


def _valid(text: str) -> bool:
    """Valid Unicode (no lone surrogate): what the reference's ``check_text`` accepts."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def has_state(fingerprint: str) -> bool:
    """Whether a state is kept for ``fingerprint`` (it may still fail to load: then
    :func:`cached_reference_ids` gives None). Its key is computed once per process."""
    path = _entry_path(fingerprint)
    return path is not None and path.is_file()


def cached_reference_ids(fingerprint: str, full: Callable[[], Any]) -> ReferenceIds | None:
    """The checker's reference from the state kept for ``fingerprint``, or None when there is
    none (or it does not load)."""
    from toktools.io.user_cache import read_blob

    payload = read_blob(_entry_path(fingerprint))
    if payload is None:
        return None
    try:
        state = marshal.loads(payload)
        if not isinstance(state, dict) or state.get("version") != STATE_VERSION:
            return None
        return ReferenceIds(state, full, _kept_words(fingerprint), fingerprint)
    except Exception:  # noqa: BLE001 - a damaged entry: the whole reference, as if there were none
        return None


def _kept_words(fingerprint: str) -> dict[str, tuple[int, ...]] | None:
    """The words kept for ``fingerprint`` (None: none, or a damaged entry)."""
    from toktools.io.user_cache import read_blob

    payload = read_blob(_words_path(fingerprint))
    if payload is None:
        return None
    try:
        kept = marshal.loads(payload)
    except Exception:  # noqa: BLE001 - damaged: merged again
        return None
    if not isinstance(kept, dict) or kept.get("version") != WORDS_VERSION or not isinstance(kept.get("words"), dict):
        return None
    return kept["words"]  # type: ignore[no-any-return]


def remember_words(fingerprint: str, words: dict[str, tuple[int, ...]]) -> None:
    """Keep ``words`` (a checker's word cache: the reference's ids of each word), the first
    :data:`KEPT_WORDS` of them, for the next checker of ``fingerprint``."""
    from toktools.io.user_cache import write_blob

    kept = dict(islice(words.items(), KEPT_WORDS))
    write_blob(_words_path(fingerprint), marshal.dumps({"version": WORDS_VERSION, "words": kept}))


def remember_reference_ids(fingerprint: str, fast: Any) -> None:
    """Keep the state of ``fast`` (a reference engine's ids-only path) for ``fingerprint``, if
    it has one (:func:`state_of`)."""
    from toktools.io.user_cache import write_blob

    try:
        state = state_of(fast)
        path = _entry_path(fingerprint)
        if state is not None and path is not None:
            write_blob(path, marshal.dumps(state))
    except Exception:  # noqa: BLE001 - nothing kept: the next checker builds the whole reference again
        return


def _entry_path(fingerprint: str) -> Path | None:
    from toktools.engines.reference_cache import BUILT_WITH
    from toktools.io.user_cache import entry_path

    return entry_path("reference-ids", fingerprint, ".marshal", modules=STATE_BY, libraries=BUILT_WITH)


def _words_path(fingerprint: str) -> Path | None:
    """The kept words' entry: beside the state, under the same key (the words are the state's)."""
    from toktools.engines.reference_cache import BUILT_WITH
    from toktools.io.user_cache import entry_path

    return entry_path("reference-words", fingerprint, ".marshal", modules=STATE_BY, libraries=BUILT_WITH)
