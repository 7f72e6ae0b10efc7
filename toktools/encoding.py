"""What every tokenizer does around its model: special tokens in the input, truncation and
padding, and the :class:`Encoding` they produce.

These follow ``tokenizers`` 0.23.3: special tokens are cut out of the raw input first
(leftmost-longest, case-sensitive); truncation runs before the post-processor's template is
added and leaves room for it; padding runs last. The templates themselves are post-processor
parts (:mod:`toktools.parts.post_processors`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, Literal

import regex

from toktools.errors import ToktoolsError


@dataclass
class Encoding:
    """The output of ``encode``: ids plus everything a model input pipeline needs.

    ``overflowing``: what truncation cut off, as ``tokenizers``' ``Encoding.overflowing``: with
    ``stride``, windows of the sequence that overlap by ``stride`` tokens, each passed through the
    template and padding like the encoding itself (transformers returns them as extra rows with
    ``return_overflowing_tokens=True``). For a pair, ``tokenizers`` combines each window of one
    sequence with the other sequence and with each of its windows (``Encoding::merge_with``)."""

    ids: list[int] = field(default_factory=list)
    tokens: list[str] = field(default_factory=list)
    offsets: list[tuple[int, int]] = field(default_factory=list)
    type_ids: list[int] = field(default_factory=list)
    attention_mask: list[int] = field(default_factory=list)
    special_tokens_mask: list[int] = field(default_factory=list)
    overflowing: list[Encoding] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.ids)

    @classmethod
    def merge(cls, parts: Sequence[Encoding]) -> Encoding:
        """The parts one after the other (``Encoding::merge``), their overflowing pieces combined."""
        if len(parts) == 1:
            return parts[0]
        if not any(part.overflowing for part in parts):
            if any(isinstance(part, LazyEncoding) for part in parts):
                return LazyEncoding.joined(parts)
            fields = []
            for name in ENCODING_FIELDS:
                values: list = []
                for part in parts:
                    values += getattr(part, name)
                fields.append(values)
            return cls(*fields)
        merged = cls()
        for part in parts:
            merged = merged.merged_with(part)
        return merged

    def merged_with(self, pair: Encoding) -> Encoding:
        """``Encoding::merge_with``: ``self`` then ``pair``; the overflowing pieces are each of
        ours followed by ``pair`` and by each of its pieces, then ``self`` followed by each of its
        pieces (recursively, as ``tokenizers`` clones them)."""
        overflowing = []
        for mine in self.overflowing:
            overflowing.append(mine.merged_with(pair))
            overflowing.extend(mine.merged_with(theirs) for theirs in pair.overflowing)
        overflowing.extend(self.merged_with(theirs) for theirs in pair.overflowing)
        merged = self + pair
        merged.overflowing = overflowing
        return merged

    def truncated(self, length: int, direction: str = "right", stride: int = 0) -> Encoding:
        """The first (or, ``left``, last) ``length`` tokens; the rest in ``overflowing`` as
        windows of ``length`` tokens that overlap by ``stride`` (``Encoding::truncate``)."""
        size = len(self.ids)
        if length >= size:
            return self
        if length == 0:  # tokenizers moves the whole encoding into overflowing
            return Encoding(overflowing=[self])
        if stride >= length:  # tokenizers panics here
            raise ToktoolsError(
                f"truncation stride {stride} must be smaller than the {length} tokens kept of a sequence "
                "(max_length minus the template's special tokens, shared by a pair)"
            )
        step = length - stride
        windows = []
        if direction == "right":
            for start in range(0, size, step):
                windows.append((start, min(start + length, size)))
                if start + length >= size:
                    break
        else:
            for stop in range(size, 0, -step):
                windows.append((max(stop - length, 0), stop))
                if stop <= length:
                    break
        first, *rest = (self._window(start, stop) for start, stop in windows)
        first.overflowing = rest
        return first

    def _window(self, start: int, stop: int) -> Encoding:
        if isinstance(self, LazyEncoding):  # unread fields stay unread
            return LazyEncoding(
                **{
                    name: partial(_sliced, self, name, start, stop)
                    if callable(self.field(name))
                    else _sliced(self, name, start, stop)
                    for name in ENCODING_FIELDS
                }
            )
        return Encoding(*(list(getattr(self, name)[start:stop]) for name in ENCODING_FIELDS))

    def __add__(self, other: Encoding) -> Encoding:
        if isinstance(self, LazyEncoding) or isinstance(other, LazyEncoding):
            return LazyEncoding.joined([self, other])
        return Encoding(
            self.ids + other.ids,
            self.tokens + other.tokens,
            self.offsets + other.offsets,
            self.type_ids + other.type_ids,
            self.attention_mask + other.attention_mask,
            self.special_tokens_mask + other.special_tokens_mask,
        )

    def with_type_ids(self, type_id: int, *, overflowing: bool = False) -> Encoding:
        """Every type id set to ``type_id`` (``set_type_ids``); the overflowing pieces' too only
        when asked, as ``tokenizers`` sets them only in some post-processors."""
        pieces = [piece.with_type_ids(type_id, overflowing=True) for piece in self.overflowing]
        type_ids: Any = (  # a lazy encoding's made when read
            partial(repeated, type_id, len(self.ids)) if isinstance(self, LazyEncoding) else [type_id] * len(self.ids)
        )
        return self.replaced(type_ids=type_ids, overflowing=pieces if overflowing else self.overflowing)

    def replaced(self, **changes: Any) -> Encoding:
        """``dataclasses.replace`` that leaves a lazy encoding's unread fields unread."""
        return replace(self, **changes)

    def field(self, name: str) -> list[Any] | Callable[[], list[Any]]:
        """The field ``name``, or (lazy encodings) the function that computes it if unread."""
        return getattr(self, name)  # type: ignore[no-any-return]


class LazyEncoding(Encoding):
    """An :class:`Encoding` whose fields may be given as functions, called when the field is first
    read: ``encode_batch`` builds ids at once (``len()`` and truncation need them) and leaves
    tokens and offsets to be computed only if read (a pipeline that wants ids never pays for
    them). Joining, windows, type ids and the post-processors keep unread fields unread. It
    compares, prints, copies and pickles as a plain ``Encoding`` with the computed values."""

    def __init__(self, *fields: Any, **named: Any) -> None:
        values = dict(zip(ENCODING_FIELDS, fields))
        values.update(named)
        state = self.__dict__
        pending: dict[str, Callable[[], list[Any]]] = {}
        for name in ENCODING_FIELDS:
            value = values.get(name, [])
            if callable(value):
                pending[name] = value
            else:
                state[name] = value
        state["overflowing"] = values.get("overflowing") or []
        state["_pending"] = pending

    def __getattr__(self, name: str) -> Any:
        pending = self.__dict__.get("_pending")
        if pending is None or name not in pending:
            raise AttributeError(name)
        value = pending.pop(name)()
        self.__dict__[name] = value
        return value

    def __setattr__(self, name: str, value: Any) -> None:
        self.__dict__.get("_pending", {}).pop(name, None)
        self.__dict__[name] = value

    def field(self, name: str) -> list[Any] | Callable[[], list[Any]]:
        pending = self.__dict__["_pending"].get(name)
        return pending if pending is not None else self.__dict__[name]

    def replaced(self, **changes: Any) -> Encoding:
        state = self.__dict__.copy()
        pending = state["_pending"] = state["_pending"].copy()
        for name, value in changes.items():
            if callable(value):
                pending[name] = value
                state.pop(name, None)
            else:
                state[name] = value
                pending.pop(name, None)
        if "trimmed_offsets" in state and ("ids" in changes or "tokens" in changes or "offsets" in changes):
            del state["trimmed_offsets"]  # kept otherwise: still this sequence's tokens and offsets
        out = LazyEncoding.__new__(LazyEncoding)
        object.__setattr__(out, "__dict__", state)
        return out

    @classmethod
    def joined(cls, parts: Sequence[Encoding]) -> LazyEncoding:
        """The parts one after the other, without overflowing pieces (``merge`` keeps those)."""
        unread = set().union(*[part.__dict__.get("_pending", ()) for part in parts])
        state: dict[str, Any] = {"overflowing": []}
        pending: dict[str, Callable[[], list[Any]]] = {}
        for name in ENCODING_FIELDS:
            if name in unread:
                pending[name] = partial(_joined, parts, name)
            else:
                state[name] = _joined(parts, name)
        state["_pending"] = pending
        out = cls.__new__(cls)
        object.__setattr__(out, "__dict__", state)
        return out

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Encoding):
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in (*ENCODING_FIELDS, "overflowing"))

    __hash__ = None  # type: ignore[assignment]  # mutable, like Encoding

    def __reduce__(self) -> Any:
        return (_plain_encoding, tuple(getattr(self, name) for name in (*ENCODING_FIELDS, "overflowing")))


def _joined(parts: Sequence[Encoding], name: str) -> list[Any]:
    out: list[Any] = []
    for part in parts:
        out += getattr(part, name)
    return out


def repeated(value: int, size: int) -> list[int]:
    """A type id or mask of a lazy encoding, made when read: one list fewer per field for the
    garbage collector to walk when nobody reads it."""
    return [value] * size


def lazy_encoding_of_ids(
    ids: list[int], token_of: Callable[[int], str], offsets: Callable[[], list[Any]], type_id: int
) -> LazyEncoding:
    """One text's encoding of a batch built from its ids: the tokens (``token_of`` of each id),
    ``offsets()``, the type ids and the masks are made only when read."""
    size = len(ids)
    pending = {
        "tokens": partial(_tokens, token_of, ids),
        "offsets": offsets,
        "type_ids": partial(repeated, type_id, size),
        "attention_mask": partial(repeated, 1, size),
        "special_tokens_mask": partial(repeated, 0, size),
    }
    out = LazyEncoding.__new__(LazyEncoding)  # the state LazyEncoding(...) makes, without sorting the fields
    object.__setattr__(out, "__dict__", {"ids": ids, "overflowing": [], "_pending": pending})
    return out


def _tokens(token_of: Callable[[int], str], ids: list[int]) -> list[str]:
    return list(map(token_of, ids))


def _sliced(encoding: Encoding, name: str, start: int, stop: int) -> list[Any]:
    return list(getattr(encoding, name)[start:stop])


def _plain_encoding(*fields: Any) -> Encoding:
    return Encoding(*fields)


#: the fields of an :class:`Encoding`, in order
ENCODING_FIELDS = ("ids", "tokens", "offsets", "type_ids", "attention_mask", "special_tokens_mask")


# ---------------------------------------------------------------------------------------------
# Special tokens in the input
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AddedToken:
    """A token cut out of the input before the model sees it (``special`` ones are dropped by
    ``decode(skip_special_tokens=True)``). ``lstrip`` / ``rstrip`` make the match swallow the
    whitespace before / after it; ``single_word`` only matches it between non-word characters.
    A ``normalized`` token is matched in the normalised text (its content normalised too), the
    others in the raw input, as ``tokenizers``' AddedVocabulary does."""

    content: str
    id: int
    special: bool = True
    single_word: bool = False
    lstrip: bool = False
    rstrip: bool = False
    normalized: bool = False


# tokenizers' patterns (Rust regex: ``$`` is the end of the text only, never before a final
# newline as in Python, hence ``\Z``; searched with an end position, that is the text's end)
_ENDS_WITH_WORD = regex.compile(r"\w\Z")
_STARTS_WITH_WORD = regex.compile(r"\w")  # used with .match(text, pos): anchored at pos
_SPACES_AT_END = regex.compile(r"\s*\Z")
_SPACES_AT_START = regex.compile(r"\s*")  # used with .match(text, pos)


class _Matcher:
    """Leftmost-longest matching of a set of strings (each standing for one added token)."""

    def __init__(self, by_pattern: dict[str, AddedToken]) -> None:
        self.by_pattern = by_pattern
        # longest first: at a given start the longest token wins (leftmost-longest)
        alternatives = sorted(by_pattern, key=len, reverse=True)
        self.pattern = regex.compile("|".join(regex.escape(t) for t in alternatives)) if alternatives else None

    def split(self, text: str) -> list[tuple[int, int, AddedToken | None]]:
        """``text`` as (start, end, added token or None) in order, with the
        ``single_word`` / ``lstrip`` / ``rstrip`` rules."""
        if self.pattern is None:
            return [(0, len(text), None)] if text else []
        out: list[tuple[int, int, AddedToken | None]] = []
        position = 0
        for match in self.pattern.finditer(text):
            token = self.by_pattern[match.group()]
            start, stop = match.start(), match.end()
            if token.single_word and (_ENDS_WITH_WORD.search(text, 0, start) or _STARTS_WITH_WORD.match(text, stop)):
                continue
            if token.lstrip:  # the previous match may have taken those spaces already
                start = max(_SPACES_AT_END.search(text, 0, start).start(), position)
            if token.rstrip:
                stop = _SPACES_AT_START.match(text, stop).end()
            if start > position:
                out.append((position, start, None))
            out.append((start, stop, token))
            position = stop
        if position < len(text):
            out.append((position, len(text), None))
        return out


class AddedTokens:
    """The tokens a tokenizer cuts out of the text before its model: first the raw-matched ones
    in the input, then the ``normalized`` ones in each remaining fragment once normalised."""

    def __init__(self, tokens: Iterable[AddedToken] = ()) -> None:
        self.tokens: list[AddedToken] = []
        self.by_content: dict[str, AddedToken] = {}
        self.by_id: dict[int, AddedToken] = {}
        self.special_contents: set[str] = set()
        self._raw: _Matcher | None = None
        self._normalized: tuple[object, _Matcher] | None = None
        self.has_normalized = False
        for token in tokens:
            self.add(token)

    def add(self, token: AddedToken) -> None:
        """Add ``token``; one whose content is here already replaces it (its id and flags, as
        ``tokenizers``' ``add_tokens`` does; a special content stays special)."""
        if not token.content:
            return
        earlier = self.by_content.get(token.content)
        if earlier == token:
            return
        if earlier is not None:
            self.tokens[self.tokens.index(earlier)] = token
            if self.by_id.get(earlier.id) is earlier:
                del self.by_id[earlier.id]
        else:
            self.tokens.append(token)
        self.by_content[token.content] = token
        self.by_id[token.id] = token
        if token.special:
            self.special_contents.add(token.content)
        self.has_normalized = (
            any(t.normalized for t in self.tokens) if earlier else self.has_normalized or token.normalized
        )
        self._raw = self._normalized = None  # rebuilt on the next split: adding many tokens stays linear

    def __bool__(self) -> bool:
        return bool(self.tokens)

    def split(self, text: str) -> list[tuple[str, int, AddedToken | None]]:
        """``text`` as (fragment, start offset, raw-matched added token or None) in order."""
        if self._raw is None:
            self._raw = _Matcher({t.content: t for t in self.tokens if not t.normalized})
        return [(text[start:end], start, token) for start, end, token in self._raw.split(text)]

    def split_normalized(
        self, text: str, normalize: Callable[[str], str] | None
    ) -> list[tuple[int, int, AddedToken | None]]:
        """Normalised ``text`` as (start, end, ``normalized`` added token or None); each token
        is looked for as its content passed through ``normalize``."""
        if self._normalized is None or self._normalized[0] is not normalize:
            patterns: dict[str, AddedToken] = {}
            for token in self.tokens:
                if token.normalized:
                    pattern = normalize(token.content) if normalize is not None else token.content
                    if pattern:
                        patterns.setdefault(pattern, token)
            self._normalized = (normalize, _Matcher(patterns))
        return self._normalized[1].split(text)


# ---------------------------------------------------------------------------------------------
# Truncation and padding
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Truncation:
    """``enable_truncation``: ``max_length`` counts the template's special tokens too; what is cut
    off goes to ``Encoding.overflowing``, in windows that overlap by ``stride`` tokens."""

    max_length: int
    strategy: Literal["longest_first", "only_first", "only_second"] = "longest_first"
    direction: Literal["right", "left"] = "right"
    stride: int = 0

    def apply(
        self, first: Encoding, second: Encoding | None, room_for_specials: int
    ) -> tuple[Encoding, Encoding | None]:
        budget = self.max_length - room_for_specials
        stride, direction = self.stride, self.direction
        if budget < 0:
            # tokenizers subtracts in unsigned arithmetic: the budget wraps round and nothing is cut
            return first, second
        if budget == 0:  # every sequence is emptied, whatever the strategy
            return first.truncated(0, stride=stride), (
                second.truncated(0, stride=stride) if second is not None else None
            )
        total = len(first) + (len(second) if second is not None else 0)
        if total <= budget:
            return first, second
        if second is None:
            if self.strategy == "only_second":
                raise ToktoolsError("truncation strategy only_second needs a pair of sequences")
            if self.strategy == "longest_first":
                return first.truncated(budget, direction, stride), None
        if self.strategy == "longest_first":
            assert second is not None  # a single sequence returned above
            n1, n2 = len(first), len(second)
            swapped = n1 > n2
            if swapped:
                n1, n2 = n2, n1
            if n1 > budget:
                n2 = n1
            else:
                n2 = max(n1, budget - n1)
            if n1 + n2 > budget:
                n1 = budget // 2
                n2 = n1 + budget % 2
            if swapped:
                n1, n2 = n2, n1
            return first.truncated(n1, direction, stride), second.truncated(n2, direction, stride)
        target, other = (first, second) if self.strategy == "only_first" else (second, first)
        assert target is not None
        excess = total - budget
        if len(target) <= excess:
            raise ToktoolsError(f"truncation {self.strategy}: the sequence is too short to remove {excess} tokens")
        cut = target.truncated(len(target) - excess, direction, stride)
        return (cut, other) if self.strategy == "only_first" else (other, cut)  # type: ignore[return-value]


@dataclass(frozen=True)
class Padding:
    """``enable_padding``: to a fixed ``length``, or to the longest of a batch when None."""

    pad_id: int
    pad_token: str
    length: int | None = None
    pad_type_id: int = 0
    direction: Literal["right", "left"] = "right"
    pad_to_multiple_of: int | None = None

    def target(self, longest: int) -> int:
        target = self.length if self.length is not None else longest
        if self.pad_to_multiple_of and target % self.pad_to_multiple_of:
            target += self.pad_to_multiple_of - target % self.pad_to_multiple_of
        return target

    def apply(self, encoding: Encoding, target: int) -> Encoding:
        """Pad to ``target``, the overflowing pieces too (``Encoding::pad``)."""
        if encoding.overflowing:
            encoding = encoding.replaced(overflowing=[self.apply(piece, target) for piece in encoding.overflowing])
        missing = target - len(encoding)
        if missing <= 0:
            return encoding
        pad = Encoding(
            [self.pad_id] * missing,
            [self.pad_token] * missing,
            [(0, 0)] * missing,
            [self.pad_type_id] * missing,
            [0] * missing,
            [1] * missing,
        )
        padded = encoding + pad if self.direction == "right" else pad + encoding
        padded.overflowing = encoding.overflowing
        return padded
