"""Ids-only encoding for Unigram tokenizers (SentencePiece converted to ``tokenizer.json``, and
toktools' own ``train unigram``): normaliser, Metaspace and Viterbi on plain strings.

:class:`~toktools.tokenizer.Tokenizer` carries every character's span through the normaliser and
the pre-tokeniser and builds tokens and offsets; corpus encoding wants the ids alone. Here:

* the normaliser runs on strings (:func:`string_normalizer`): ``Precompiled`` as one
  ``str.translate`` when every grapheme cluster of the text is one character (see
  :class:`_PrecompiledText`), ``Replace`` by its matches, any other part through its own
  ``normalize_str`` (the reference itself);
* Metaspace is ``str.replace``, the prepend rule and a split before each ``▁``;
* the words go to :meth:`Unigram.word_ids <toktools.parts.unigram.Unigram.word_ids>` in one
  compiled Viterbi call per batch (short words are cached: they repeat).

The ids are those of ``Tokenizer.encode(text, add_special_tokens=False)``:
``tests/test_fast_unigram.py`` checks it on real and generated text, and against
``tokenizers``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from itertools import chain
from typing import Any

#: words up to this many characters are cached (whole lines of unsplit text are not)
CACHED_WORD = 64
#: cached words per process before the cache starts again
CACHE_WORDS = 1 << 18


# ---------------------------------------------------------------------------------------------
# The normaliser on strings
# ---------------------------------------------------------------------------------------------

#: Characters that can join a grapheme cluster with a neighbour (UAX 29: GB3-GB9c, GB11-GB13):
#: without any of them every cluster is one character. Spelled with ``regex``'s own properties,
#: the tables of the ``\X`` that :class:`~toktools.parts.precompiled.Precompiled` runs.
_JOINING = (
    r"[\p{GCB=CR}\p{GCB=Extend}\p{GCB=ZWJ}\p{GCB=SpacingMark}\p{GCB=Prepend}"
    r"\p{GCB=L}\p{GCB=V}\p{GCB=T}\p{GCB=LV}\p{GCB=LVT}\p{GCB=RI}]"
)


class _Chars(dict):  # type: ignore[type-arg]
    """``str.translate`` table of a Precompiled normaliser for one-character clusters:
    code point → its replacement (the shortest match), or itself; filled on first sight."""

    def __init__(self, charsmap: Any) -> None:
        super().__init__()
        self.charsmap = charsmap

    def __missing__(self, code: int) -> Any:
        ch = chr(code)
        value = None if self.charsmap.plain(ch) else self.charsmap.shortest(ch)
        self[code] = code if value is None else value
        return self[code]


class _Graphemes(dict):  # type: ignore[type-arg]
    """grapheme → its text after the Precompiled normaliser (its ``plan``), filled on first sight."""

    def __init__(self, part: Any) -> None:
        super().__init__()
        self.part = part

    def __missing__(self, grapheme: str) -> str:
        from toktools.parts.precompiled import KEEP

        plan = self.part.plan(grapheme)
        value = grapheme if plan is KEEP else "".join(ch if repl is None else repl for repl, _, ch in plan)
        if len(self) < CACHE_WORDS:
            self[grapheme] = value
        return value


class _PrecompiledText:
    """:meth:`Precompiled.normalize <toktools.parts.precompiled.Precompiled.normalize>`'s text.

    It replaces each grapheme cluster of fewer than 6 bytes by the shortest match of its bytes
    (else each of its characters by its own). A text with no character that can join a cluster
    (:data:`_JOINING`) has one character per cluster, so each character is replaced by its own
    shortest match: one ``str.translate``. Other texts are cut into clusters with the same
    ``regex`` ``\\X`` the reference uses."""

    def __init__(self, part: Any) -> None:
        import regex

        from toktools.parts.precompiled import grapheme_regex

        self.chars = _Chars(part.charsmap)
        self.graphemes = _Graphemes(part)
        self.joining = regex.compile(_JOINING).search
        self.clusters = grapheme_regex().findall

    def __call__(self, text: str) -> str:
        if text.isascii() or self.joining(text) is None:
            return text.translate(self.chars)
        return "".join(map(self.graphemes.__getitem__, self.clusters(text)))


def _replace_text(part: Any) -> Callable[[str], str]:
    """:class:`~toktools.parts.normalizers.Replace`'s text: its matches (Oniguruma's, as the
    reference finds them) replaced by the content; a plain string pattern is ``str.replace``."""
    pattern, content = part.pattern, part.content
    if pattern.literal and pattern.source:
        source = pattern.source
        return lambda text: text.replace(source, content)

    def replace(text: str) -> str:
        if not text:
            return text
        compiled, prepared = pattern.prepared(text)
        if compiled.search(prepared) is None:  # the common case: one search in C
            return text
        out, prev = [], 0
        for start, end in pattern.find_iter(text):
            out.append(text[prev:start])
            out.append(content)
            prev = end
        if not out:
            return text
        out.append(text[prev:])
        return "".join(out)

    return replace


def string_normalizer(normalizer: Any) -> Callable[[str], str] | None:
    """``normalizer.normalize_str`` as a function of strings alone (None for no normaliser):
    every part's text depends on its input text only, so the parts compose on strings."""
    from toktools.parts import normalizers
    from toktools.parts.precompiled import Precompiled

    if normalizer is None:
        return None
    if type(normalizer) is normalizers.Sequence:
        steps = [step for step in map(string_normalizer, normalizer.normalizers) if step is not None]

        def sequence(text: str) -> str:
            for step in steps:
                text = step(text)
            return text

        return sequence
    if type(normalizer) is Precompiled:
        return _PrecompiledText(normalizer) if normalizer.charsmap is not None else None
    if type(normalizer) is normalizers.Replace:
        return _replace_text(normalizer)
    return normalizer.normalize_str  # the reference itself


# ---------------------------------------------------------------------------------------------
# Metaspace and the encoder
# ---------------------------------------------------------------------------------------------


class _MetaspaceWords:
    """Metaspace's pieces of a normalised fragment: spaces become ``▁``, ``▁`` is prepended
    (always, or for ``first`` only to the fragment at the start of the text), then with
    ``split`` a new piece starts at every ``▁``. Empty fragments give no piece."""

    def __init__(self, pre: Any | None, isolated: Sequence[Any] = ()) -> None:
        self.metaspace = pre is not None  # without a pre-tokeniser the whole text is the word
        rep = pre.replacement if pre is not None else "\u2581"
        self.replacement = rep
        self.scheme = pre.prepend_scheme if pre is not None else "never"
        escaped = re.escape(rep)
        self.split = (
            re.compile(f"{escaped}[^{escaped}]*|[^{escaped}]+").findall if pre is not None and pre.split else None
        )
        #: then ``Split`` pre-tokenisers with behaviour ``Isolated`` (the converter's user-defined
        #: symbols): every match and every stretch between matches is a piece
        self.isolated = [split.pattern for split in isolated]

    def __call__(self, text: str, at_start: bool) -> list[str]:
        if not text:
            return []
        rep = self.replacement
        if self.metaspace:
            text = text.replace(" ", rep)
        if not text.startswith(rep) and (self.scheme == "always" or (self.scheme == "first" and at_start)):
            text = rep + text
        words = self.split(text) if self.split is not None else [text]
        for pattern in self.isolated:
            words = [word[a:b] for w in words for (a, b), _ in pattern.find_matches(w) if a < b for word in (w,)]
        return words


class _WordIds(dict):  # type: ignore[type-arg]
    """Cached word → ids; a miss is a word of the current batch (``batch``) or an added token
    (already its ids), so ``map(cache.__getitem__, pieces)`` runs in C."""

    def __init__(self) -> None:
        super().__init__()
        self.batch: dict[str, tuple[int, ...]] = {}

    def __missing__(self, piece: Any) -> tuple[int, ...]:
        return piece if type(piece) is tuple else self.batch[piece]


class UnigramIdsEncoder:
    """Texts → ids, equal to ``[e.ids for e in tokenizer.encode_batch(texts,
    add_special_tokens=False)]`` for the tokenizers :func:`unigram_ids_encoder` accepts."""

    def __init__(self, tokenizer: Any, normalize: Callable[[str], str] | None, words: _MetaspaceWords) -> None:
        self.tokenizer = tokenizer
        self.model = tokenizer.model
        self.normalize = normalize
        self.words = words
        self.cache = _WordIds()
        added = tokenizer.added
        self._added = added if added else None
        raw = [t.content for t in added.tokens if not t.normalized] if added else []
        self._raw_search = re.compile("|".join(map(re.escape, raw))).search if raw else None

    def _pieces(self, text: str) -> list[Any]:
        """The words of one text (strings) and the added tokens in it (1-tuples of their id)."""
        normalize, words = self.normalize, self.words
        if self._raw_search is None or self._raw_search(text) is None:
            return words(normalize(text) if normalize is not None else text, True)
        out: list[Any] = []
        for fragment, start, token in self._added.split(text):  # type: ignore[union-attr]
            if token is None:
                out.extend(words(normalize(fragment) if normalize is not None else fragment, start == 0))
            else:
                out.append((token.id,))
        return out

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        from toktools.text_check import check_text

        try:  # every text is valid Unicode (no lone surrogate): one check in C for the batch
            "".join(texts).encode("utf-8")
        except (TypeError, UnicodeEncodeError):
            for text in texts:
                check_text(text)  # the reference's error, for the first text that is not text
        if self._raw_search is None:  # no added token to look for: normalise, then the words
            normalize, words = self.normalize, self.words
            normalized = texts if normalize is None else map(normalize, texts)
            pieces = [words(text, True) for text in normalized]
        else:
            pieces = [self._pieces(text) for text in texts]
        cache = self.cache
        todo = list({w: None for ps in pieces for w in ps if type(w) is str and w not in cache})
        cache.batch = dict(zip(todo, self.model.word_ids(todo))) if todo else {}
        get = cache.__getitem__
        out = [list(chain.from_iterable(map(get, ps))) for ps in pieces]
        if len(cache) + len(todo) > CACHE_WORDS:
            cache.clear()
        cache.update((w, ids) for w, ids in cache.batch.items() if len(w) <= CACHED_WORD)
        cache.batch = {}
        return out

    def encode(self, text: str) -> list[int]:
        return self.encode_batch([text])[0]

    def encode_packed(self, texts: Sequence[str]) -> tuple[bytes, bytes]:
        """The ids packed as a worker sends them back (:data:`toktools.engines.id_packing.Packed`)."""
        from toktools.engines.id_packing import pack_id_lists

        return pack_id_lists(self.encode_batch(texts))

    def prepare_for_volume(self, head_share: float, workers: int) -> None:
        """What the reference engine calls before forking its workers: nothing to load here, as
        the head of the batch it has just encoded loaded the compiled Viterbi (if installed)."""

    def plans_compiled(self, input_bytes: int) -> bool:
        """Never: the compiled Viterbi is loaded by the first texts encoded here, before forking."""
        return False

    def load_compiled(self, own_process: bool = False) -> None:
        """Nothing to load (see :meth:`plans_compiled`)."""


def unigram_ids_encoder(tokenizer: Any) -> UnigramIdsEncoder | None:
    """An encoder for a Unigram tokenizer (no sampling) whose pre-tokeniser is Metaspace (alone,
    or first in a Sequence followed by ``Isolated`` Splits) or none, whose added tokens are all matched in the raw text, and
    whose normaliser's parts are any; None otherwise (the caller checks truncation, padding,
    the post-processor and subclasses, as :func:`toktools.engines.ids_only.ids_encoder` does)."""
    from toktools.parts import pre_tokenizers
    from toktools.parts.unigram import Unigram

    model, pre = tokenizer.model, tokenizer.pre_tokenizer
    if type(model) is not Unigram or model.alpha:
        return None
    isolated: list[Any] = []
    if type(pre) is pre_tokenizers.Sequence and pre.pretokenizers:
        pre, *isolated = pre.pretokenizers
    if pre is not None and type(pre) is not pre_tokenizers.Metaspace:
        return None
    if any(type(p) is not pre_tokenizers.Split or p.behavior != "Isolated" or p.invert for p in isolated):
        return None
    if tokenizer.added and tokenizer.added.has_normalized:
        return None
    return UnigramIdsEncoder(tokenizer, string_normalizer(tokenizer.normalizer), _MetaspaceWords(pre, isolated))
