"""Masked-language-model inputs: which tokens to hide, and what to put in their place.

Two samplers with the two semantics users know:

* :func:`mask_tokens` — google-research/bert's ``create_masked_lm_predictions``: exactly
  ``round(candidates × mask_prob)`` positions per sequence (at most ``max_predictions``), chosen in
  a random order, whole words kept together when asked; each chosen token becomes the mask token
  80% of the time, a random token 10%, and stays 10%. Used for static masking.
* :class:`MaskingCollator` — transformers' ``DataCollatorForLanguageModeling`` (and its
  ``whole_word_mask=True`` mode, formerly ``DataCollatorForWholeWordMask``): every candidate token
  is chosen independently with probability ``mlm_probability``, a batch at a time, padded. Used for
  dynamic masking (a new mask each time a sequence is seen, as RoBERTa).

Both take their facts about the vocabulary from :class:`MaskingInfo`, built by
:func:`masking_info` from the tokenizer's ``tokenizer.json`` document and its special tokens, never
from a tokenizer class. Deliberate differences from both references:

* special tokens (every ``added_tokens`` entry with ``special: true``: ``[CLS]``, ``[SEP]``,
  ``[PAD]``, ``[UNK]``, ``[MASK]``, ``<s>`` …) are never chosen and never used as random
  replacements. BERT draws replacements from the whole vocabulary (``[CLS]`` and ``[unused7]``
  included) and masks ``[UNK]``; transformers draws from ``range(len(tokenizer))``.
* whole-word masking keeps the 80/10/10 split per token, as BERT and ALBERT do; transformers 5
  turns random replacement off in that mode (pass ``mask_replace_prob=1.0`` for its behaviour).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from toktools.errors import ToktoolsError

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from toktools.tokenizer import Tokenizer

#: How words are marked in a vocabulary: pieces after the first carry a prefix (WordPiece ``##``),
#: or the first piece of a word carries a marker (byte-level ``Ġ``, Metaspace/Unigram ``▁``).
WordRule = tuple[Literal["continuation", "start"], str]

MASK_TOKENS = ("[MASK]", "<mask>")
PAD_TOKENS = ("[PAD]", "<pad>")
CLS_TOKENS = ("[CLS]", "<s>")
SEP_TOKENS = ("[SEP]", "</s>")
#: Byte-level symbols for whitespace (space, newline, tab, carriage return): a token made of them
#: ends a word, so the next token starts one even without a ``Ġ``.
_BYTELEVEL_SPACES = "ĠĊĉč"


# ---------------------------------------------------------------------------------------------
# What the masker needs to know about a vocabulary
# ---------------------------------------------------------------------------------------------


def word_rule(document: Mapping[str, Any]) -> WordRule:
    """Where words start, from a ``tokenizer.json`` document: the model's
    ``continuing_subword_prefix`` (WordPiece ``##``), else a ByteLevel (``Ġ``) or Metaspace
    (its ``replacement``, ``▁``) pre-tokenizer or decoder, else a Unigram model (``▁``)."""
    model = document.get("model") or {}
    prefix = model.get("continuing_subword_prefix")
    if model.get("type") == "WordPiece":
        return ("continuation", prefix or "##")
    nodes = [*_nodes(document.get("pre_tokenizer")), *_nodes(document.get("decoder"))]
    for node in nodes:
        if node.get("type") == "Metaspace":
            return ("start", node.get("replacement") or "▁")
    if any(node.get("type") == "ByteLevel" for node in nodes):
        return ("start", "Ġ")
    if prefix:
        return ("continuation", prefix)
    if model.get("type") == "Unigram":
        return ("start", "▁")
    raise ToktoolsError(
        f"cannot tell where words start in a {model.get('type')} tokenizer without a "
        "continuing-subword prefix, ByteLevel or Metaspace: whole-word masking needs one"
    )


def _nodes(node: Any) -> Iterable[Mapping[str, Any]]:
    """A pre-tokenizer / decoder node and, for ``Sequence``, the nodes inside it."""
    if isinstance(node, Mapping):
        yield node
        for child in node.get("pretokenizers") or node.get("decoders") or []:
            yield from _nodes(child)


@dataclass(frozen=True)
class MaskingInfo:
    """Per-id lookup tables (NumPy arrays indexed by token id) and the ids of the roles."""

    mask_id: int
    pad_id: int | None
    cls_id: int | None
    sep_id: int | None
    special: np.ndarray  # bool: never chosen, never a replacement
    replacements: np.ndarray  # int64: the ids a random replacement draws from
    marks_start: np.ndarray  # bool: the token itself says "a word starts here"
    marks_continuation: np.ndarray  # bool: the token itself says "this continues a word"
    ends_word: np.ndarray  # bool: the token ends a word (whitespace), so the next one starts one
    rule: WordRule | None

    @property
    def size(self) -> int:
        return len(self.special)

    def check_ids(self, ids: np.ndarray) -> None:
        if ids.size and (int(ids.min()) < 0 or int(ids.max()) >= self.size):
            bad = int(ids.max()) if int(ids.max()) >= self.size else int(ids.min())
            raise ToktoolsError(f"token id {bad} is outside the tokenizer's vocabulary (0..{self.size - 1})")

    def word_starts(
        self, ids: np.ndarray, continuations: np.ndarray | None = None, starts: np.ndarray | None = None
    ) -> np.ndarray:
        """For ids of shape ``(..., length)``: True where a word starts. A token after a special
        token or at position 0 always starts one; ``continuations`` (e.g. from a Chinese word
        segmenter) turns marked starts into continuations; ``starts`` (e.g. where a sentence
        begins) forces starts. Special tokens are never starts."""
        import numpy as np

        if self.rule is None:
            raise ToktoolsError("whole-word masking needs to know where words start (no word rule for this tokenizer)")
        before = np.zeros(ids.shape, dtype=bool)
        before[..., 0] = True
        before[..., 1:] = self.special[ids[..., :-1]] | self.ends_word[ids[..., :-1]]
        marked = ~self.marks_continuation[ids] if self.rule[0] == "continuation" else self.marks_start[ids]
        if continuations is not None:
            marked = marked & ~continuations
        if starts is not None:
            marked = marked | starts
        return (marked | before) & ~self.special[ids]


def masking_info(tokenizer: Tokenizer, *, require_mask: bool = True) -> MaskingInfo:
    """Build the tables from a tokenizer's vocabulary and ``tokenizer.json`` document.

    Special tokens are the document's ``added_tokens`` with ``special: true``; the mask token is
    ``[MASK]`` or ``<mask>``. A tokenizer without a mask token is refused (one line)."""
    import numpy as np

    document = tokenizer.to_tokenizer_json()
    vocab = tokenizer.get_vocab()
    special_ids = {int(t["id"]) for t in document.get("added_tokens") or [] if t.get("special")}
    size = max([*vocab.values(), *special_ids], default=-1) + 1

    def role(candidates: Sequence[str]) -> int | None:
        for content in candidates:
            token_id = tokenizer.token_to_id(content)
            if token_id is not None:
                return token_id
        return None

    mask_id = role(MASK_TOKENS)
    if mask_id is None:
        if require_mask:
            raise ToktoolsError(
                "the tokenizer has no mask token ([MASK] or <mask>): masked language modelling needs one"
            )
        mask_id = -1
    if mask_id >= 0:
        special_ids.add(mask_id)
    special = np.zeros(size, dtype=bool)
    special[sorted(special_ids)] = True
    present = np.zeros(size, dtype=bool)
    present[list(vocab.values())] = True
    replacements = np.flatnonzero(present & ~special).astype(np.int64)
    if require_mask and not len(replacements):
        raise ToktoolsError("the vocabulary holds only special tokens: nothing to replace a masked token with")
    try:
        rule: WordRule | None = word_rule(document)
    except ToktoolsError:
        rule = None
    marks_start = np.zeros(size, dtype=bool)
    marks_continuation = np.zeros(size, dtype=bool)
    ends_word = np.zeros(size, dtype=bool)
    if rule is not None:
        kind, marker = rule
        spaces = _BYTELEVEL_SPACES if marker == "Ġ" else marker
        for token, token_id in vocab.items():
            if kind == "continuation":
                marks_continuation[token_id] = token.startswith(marker)
            else:
                marks_start[token_id] = token[:1] in spaces or token.startswith(marker)
                ends_word[token_id] = token[-1:] in spaces
    return MaskingInfo(
        mask_id=mask_id,
        pad_id=role(PAD_TOKENS),
        cls_id=role(CLS_TOKENS),
        sep_id=role(SEP_TOKENS),
        special=special,
        replacements=replacements,
        marks_start=marks_start,
        marks_continuation=marks_continuation,
        ends_word=ends_word,
        rule=rule,
    )


def _info(tokenizer_or_info: Tokenizer | MaskingInfo) -> MaskingInfo:
    return tokenizer_or_info if isinstance(tokenizer_or_info, MaskingInfo) else masking_info(tokenizer_or_info)


def _check_probabilities(mask_prob: float, mask_replace_prob: float, random_replace_prob: float) -> None:
    if not 0.0 <= mask_prob <= 1.0:
        raise ToktoolsError(f"mask probability {mask_prob} is not between 0 and 1")
    if mask_replace_prob < 0 or random_replace_prob < 0 or mask_replace_prob + random_replace_prob > 1 + 1e-12:
        raise ToktoolsError("mask and random replacement probabilities must be ≥ 0 and add up to at most 1")


# ---------------------------------------------------------------------------------------------
# Static masking, as google-research/bert
# ---------------------------------------------------------------------------------------------


@dataclass
class MaskedSequence:
    """``input_ids`` with the masks applied; ``labels`` hold the original id where a token was
    chosen and -100 elsewhere (the value PyTorch's cross-entropy ignores)."""

    input_ids: np.ndarray
    labels: np.ndarray


def mask_tokens(
    ids: Sequence[int] | np.ndarray,
    tokenizer_or_info: Tokenizer | MaskingInfo,
    rng: np.random.Generator,
    mask_prob: float = 0.15,
    max_predictions: int | None = None,
    whole_word: bool = False,
    continuations: np.ndarray | None = None,
    starts: np.ndarray | None = None,
    mask_replace_prob: float = 0.8,
    random_replace_prob: float = 0.1,
) -> MaskedSequence:
    """Mask one sequence the way ``create_masked_lm_predictions`` does.

    ``round(candidates × mask_prob)`` positions are chosen (at least 1, at most
    ``max_predictions``), candidates being every non-special token. With ``whole_word`` the
    candidates are words (a start token and its continuations, see :meth:`MaskingInfo.word_starts`),
    taken in random order and skipped when a word would overshoot the count, as BERT does.
    ``continuations`` marks extra tokens that continue a word (Chinese whole-word masking);
    ``starts`` marks tokens that start one whatever they look like (the first token of a
    sentence, which in byte-level BPE has no ``Ġ``).

    Differences from BERT: the count is taken over the candidates, not over the whole sequence
    with ``[CLS]``/``[SEP]`` (so the masked share of text tokens is ``mask_prob``, not slightly
    more), halves round up rather than to even, and see the module docstring for special tokens.
    """
    import numpy as np

    info = _info(tokenizer_or_info)
    _check_probabilities(mask_prob, mask_replace_prob, random_replace_prob)
    ids = np.asarray(ids, dtype=np.int64)
    info.check_ids(ids)
    inputs = ids.copy()
    labels = np.full(ids.shape, -100, dtype=np.int64)
    candidates = ~info.special[ids]
    count = int(candidates.sum())
    if count == 0 or mask_prob == 0:
        return MaskedSequence(inputs, labels)
    target = max(1, int(count * mask_prob + 0.5))
    if max_predictions is not None:
        target = min(target, max_predictions)
    if whole_word:
        chosen = _choose_words(ids, info, rng, target, info.word_starts(ids, continuations, starts), candidates)
    else:
        positions = np.flatnonzero(candidates)
        chosen = np.sort(rng.permutation(positions)[:target])
    labels[chosen] = ids[chosen]
    draw = rng.random(len(chosen))
    to_mask = chosen[draw < mask_replace_prob]
    to_random = chosen[(draw >= mask_replace_prob) & (draw < mask_replace_prob + random_replace_prob)]
    inputs[to_mask] = info.mask_id
    if len(to_random):
        inputs[to_random] = info.replacements[rng.integers(0, len(info.replacements), size=len(to_random))]
    return MaskedSequence(inputs, labels)


def _choose_words(
    ids: np.ndarray,
    info: MaskingInfo,
    rng: np.random.Generator,
    target: int,
    starts: np.ndarray,
    candidates: np.ndarray,
) -> np.ndarray:
    """Positions of whole words, picked in random order until ``target`` tokens are covered; a
    word that would overshoot is skipped (BERT's ``len(masked_lms) + len(index_set) >
    num_to_predict: continue``)."""
    import numpy as np

    word_of = np.cumsum(starts) - 1  # index of the word each token belongs to
    word_of[~candidates] = -1
    start_positions = np.flatnonzero(starts)
    sizes = np.bincount(word_of[candidates], minlength=len(start_positions))
    chosen_words = []
    total = 0
    for word in rng.permutation(len(start_positions)).tolist():
        if total >= target:
            break
        size = int(sizes[word])
        if total + size > target:
            continue
        chosen_words.append(word)
        total += size
    keep = np.zeros(len(start_positions) + 1, dtype=bool)
    keep[chosen_words] = True
    return np.flatnonzero(keep[word_of] & candidates)


# ---------------------------------------------------------------------------------------------
# Dynamic masking, as transformers' DataCollatorForLanguageModeling
# ---------------------------------------------------------------------------------------------


class MaskingCollator:
    """Pad a batch of examples and mask it afresh each call, with the semantics of transformers'
    ``DataCollatorForLanguageModeling`` (``return_tensors="np"``), no PyTorch needed.

    Examples are lists/arrays of ids or dicts with ``input_ids`` (and optionally
    ``token_type_ids``, ``attention_mask``, ``special_tokens_mask``, ``chinese_ref`` — positions
    that continue a Chinese word, as transformers' former ``DataCollatorForWholeWordMask`` read
    them —, ``sentence_starts`` — positions that start a word whatever the token looks like — and
    scalar labels such as ``next_sentence_label``, passed through).

    Each non-special token is chosen with probability ``mlm_probability``; with ``whole_word``
    each word start is chosen with that probability and takes its whole word along (transformers'
    ``whole_word_mask=True``, which groups tokens by offsets; here words come from the vocabulary's
    markers). Chosen tokens become the mask token with ``mask_replace_prob``, a random non-special
    token with ``random_replace_prob``, else stay. Returns NumPy arrays (``return_tensors="pt"``
    converts them with ``torch.from_numpy`` if PyTorch is installed).

    ``seed`` makes the masks reproducible; in a PyTorch DataLoader worker the stream is
    ``(seed, worker id)`` so workers do not repeat each other's masks.
    """

    def __init__(
        self,
        tokenizer_or_info: Tokenizer | MaskingInfo,
        mlm_probability: float = 0.15,
        mask_replace_prob: float = 0.8,
        random_replace_prob: float = 0.1,
        whole_word: bool = False,
        pad_to_multiple_of: int | None = None,
        seed: int | None = None,
        return_tensors: str = "np",
    ) -> None:
        _check_probabilities(mlm_probability, mask_replace_prob, random_replace_prob)
        if return_tensors not in ("np", "pt"):
            raise ToktoolsError(f"return_tensors must be 'np' or 'pt', not {return_tensors!r}")
        self.info = _info(tokenizer_or_info)
        if whole_word and self.info.rule is None:
            raise ToktoolsError("whole-word masking needs to know where words start (no word rule for this tokenizer)")
        self.mlm_probability = mlm_probability
        self.mask_replace_prob = mask_replace_prob
        self.random_replace_prob = random_replace_prob
        self.whole_word = whole_word
        self.pad_to_multiple_of = pad_to_multiple_of
        self.seed = seed
        self.return_tensors = return_tensors
        self._rng: Any = None
        self._rng_key: Any = None

    def _generator(self) -> np.random.Generator:
        import numpy as np

        worker = None
        if "torch" in sys.modules:
            info = sys.modules["torch"].utils.data.get_worker_info()
            worker = None if info is None else info.id
        key = (os.getpid(), worker)
        if self._rng is None or self._rng_key != key:
            if self.seed is None:
                self._rng = np.random.default_rng()
            else:
                self._rng = np.random.default_rng([self.seed] if worker is None else [self.seed, worker])
            self._rng_key = key
        return self._rng

    def __call__(self, examples: Sequence[Any]) -> dict[str, Any]:
        batch = pad_batch(examples, self.info, self.pad_to_multiple_of, special_tokens_mask=True)
        special = batch.pop("special_tokens_mask")
        continuations = batch.pop("chinese_ref", None)
        starts = batch.pop("sentence_starts", None)
        batch["input_ids"], batch["labels"] = self.mask(batch["input_ids"], special, continuations, starts)
        if self.return_tensors == "pt":
            import torch

            return {name: torch.from_numpy(value) for name, value in batch.items()}
        return batch

    def mask(
        self,
        input_ids: np.ndarray,
        special: np.ndarray | None = None,
        continuations: np.ndarray | None = None,
        starts: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Mask a padded ``(batch, length)`` array; returns new ``(input_ids, labels)``."""
        import numpy as np

        rng = self._generator()
        inputs = np.array(input_ids, dtype=np.int64)
        self.info.check_ids(inputs)
        blocked = self.info.special[inputs]
        if special is not None:
            blocked |= special.astype(bool)
        if self.whole_word:
            starts = self.info.word_starts(inputs, continuations, starts) & ~blocked
            chosen_starts = (rng.random(inputs.shape) < self.mlm_probability) & starts
            words = np.cumsum(starts, axis=1) + np.arange(inputs.shape[0])[:, None] * (inputs.shape[1] + 1)
            picked = np.zeros(inputs.size + inputs.shape[0] + 1, dtype=bool)
            picked[words[chosen_starts]] = True
            inside = np.cumsum(starts, axis=1) > 0  # tokens before the first start belong to no word
            masked = picked[words] & inside & ~blocked
        else:
            masked = (rng.random(inputs.shape) < self.mlm_probability) & ~blocked
        labels = np.where(masked, inputs, -100)
        replaced = (rng.random(inputs.shape) < self.mask_replace_prob) & masked
        inputs[replaced] = self.info.mask_id
        if self.mask_replace_prob < 1 and self.random_replace_prob > 0:
            scaled = self.random_replace_prob / (1 - self.mask_replace_prob)
            randomised = (rng.random(inputs.shape) < scaled) & masked & ~replaced
            count = int(randomised.sum())
            inputs[randomised] = self.info.replacements[rng.integers(0, len(self.info.replacements), size=count)]
        return inputs, labels


#: Per-example lists of positions: tokens that continue a Chinese word, and tokens that begin a
#: sentence (so a word), both as ``toktools pretrain-data --dynamic --whole-word`` writes them.
_POSITION_LISTS = ("chinese_ref", "sentence_starts")


def pad_batch(
    examples: Sequence[Any],
    tokenizer_or_info: Tokenizer | MaskingInfo,
    pad_to_multiple_of: int | None = None,
    special_tokens_mask: bool = False,
) -> dict[str, np.ndarray]:
    """Pad examples (id lists or dicts) to the longest one: ``input_ids`` with the pad token,
    ``attention_mask`` and ``token_type_ids`` with 0, ``labels`` with -100; ``chinese_ref`` and
    ``sentence_starts`` positions become boolean arrays; other scalar fields are stacked. With
    ``special_tokens_mask=True`` that array marks padding (and the example's own mask if given). Also the collator for statically masked data."""
    import numpy as np

    info = _info(tokenizer_or_info)
    if not examples:
        raise ToktoolsError("cannot collate an empty batch")
    rows = [e if isinstance(e, Mapping) else {"input_ids": e} for e in examples]
    lengths = [len(r["input_ids"]) for r in rows]
    width = max(lengths)
    if pad_to_multiple_of:
        width = -(-width // pad_to_multiple_of) * pad_to_multiple_of
    if any(n != width for n in lengths) and info.pad_id is None:
        raise ToktoolsError(
            "examples of different lengths need padding, and the tokenizer has no pad token ([PAD] or <pad>)"
        )
    fills = {
        "input_ids": info.pad_id if info.pad_id is not None else 0,
        "attention_mask": 0,
        "token_type_ids": 0,
        "labels": -100,
        "special_tokens_mask": 1,
    }
    out: dict[str, np.ndarray] = {}
    for name, fill in fills.items():
        if name == "special_tokens_mask" and not special_tokens_mask:
            continue
        if name not in rows[0] and name not in ("attention_mask", "special_tokens_mask"):
            continue
        array = np.full((len(rows), width), fill, dtype=np.int64)
        for i, row in enumerate(rows):
            if name in row:
                array[i, : lengths[i]] = row[name]
            elif name == "attention_mask":
                array[i, : lengths[i]] = 1
            elif name == "special_tokens_mask":
                array[i, : lengths[i]] = 0
        out[name] = array
    for name in _POSITION_LISTS:
        if name in rows[0]:
            marks = np.zeros((len(rows), width), dtype=bool)
            for i, row in enumerate(rows):
                marks[i, np.asarray(row[name], dtype=np.int64)] = True
            out[name] = marks
    for name, value in rows[0].items():
        if name not in out and name not in fills and not isinstance(value, (list, tuple, np.ndarray)):
            out[name] = np.array([row[name] for row in rows], dtype=np.int64)
    return out


# ---------------------------------------------------------------------------------------------
# Chinese whole words
# ---------------------------------------------------------------------------------------------


#: A route lookup's answer for a fragment that no dictionary word starts with.
_NOT_A_PREFIX: Any = object()


class ChineseWords:
    """Chinese word boundaries from jieba (``pip install toktools[pretrain]``), as Chinese
    BERT-wwm finds them with a word segmenter. ``dictionary`` is a jieba dictionary file
    (``word freq tag`` lines, plain or ``.gz``); by default jieba's own, shipped in the package.
    Nothing is downloaded."""

    def __init__(self, dictionary: str | os.PathLike[str] | None = None) -> None:
        try:
            import jieba
        except ImportError:
            raise ToktoolsError("Chinese whole-word masking needs jieba: pip install 'toktools[pretrain]'") from None
        import logging

        jieba.setLogLevel(logging.WARNING)
        path = None if dictionary is None else _plain_dictionary(os.fspath(dictionary))
        self._segmenter = jieba.Tokenizer() if path is None else jieba.Tokenizer(dictionary=path)
        try:
            self._segmenter.initialize()
        except (ValueError, UnicodeDecodeError) as err:  # jieba: "invalid dictionary entry in ... at Line N"
            detail = str(err).splitlines()[0] if str(err) else type(err).__name__
            raise ToktoolsError(f"jieba dictionary {dictionary}: not a jieba dictionary ({detail})") from None
        self._route_scores: dict[str, float | None] | None = None
        self._unknown_score = 0.0

    def words(self, text: str, hmm: bool = True) -> list[tuple[int, int]]:
        """``(start, end)`` character spans of the words of ``text``; ``hmm=False``: dictionary
        words only (jieba's HMM guesses no new words; faster, what ``compare`` counts)."""
        return [(start, end) for _, start, end in self._segmenter.tokenize(text, HMM=hmm)]

    def _route(self) -> dict[str, float | None]:
        """jieba's prefix dictionary as log probabilities (``log(freq) - log(total)``; None for
        a prefix that is not a word), computed once: one lookup per step of the route."""
        if self._route_scores is None:
            from math import log

            segmenter = self._segmenter
            segmenter.check_initialized()
            total = log(segmenter.total)
            self._unknown_score = -total  # jieba: log(freq or 1) - log(total)
            self._route_scores = {w: (log(c) - total if c else None) for w, c in segmenter.FREQ.items()}
        return self._route_scores

    def dictionary_words(self, run: str) -> list[tuple[int, int]]:
        """:meth:`words` with ``hmm=False`` of a run of Chinese characters only: jieba's word
        graph and best route (``get_DAG`` and ``calc``: the route of the highest summed log
        frequency, the longer word on a tie) in one loop, without its per-call splitting into
        blocks and generators (what ``compare`` counts for every Chinese run of a corpus, so
        the overhead matters). Tested equal to jieba's ``lcut(run, HMM=False)``."""
        route = self._route()
        unknown = self._unknown_score
        n = len(run)
        best = [0.0] * (n + 1)
        nxt = [0] * (n + 1)
        for start in range(n - 1, -1, -1):
            top, to = None, start + 1
            end = start + 1
            frag = run[start]
            while True:
                score = route.get(frag, _NOT_A_PREFIX)
                if score is _NOT_A_PREFIX:
                    break
                if score is not None:
                    score += best[end]
                    if top is None or score >= top:
                        top, to = score, end
                end += 1
                if end > n:
                    break
                frag = run[start:end]
            if top is None:  # no word starts here: the character alone, as jieba scores it
                top = unknown + best[start + 1]  # log(freq or 1) - log(total): freq is 0 or none
                to = start + 1
            best[start], nxt[start] = top, to
        spans = []
        start = 0
        while start < n:
            spans.append((start, nxt[start]))
            start = nxt[start]
        return spans

    def continuations(self, text: str, offsets: Sequence[tuple[int, int]]) -> np.ndarray:
        """For tokens with these character offsets: True where a token starts inside a word that
        holds a Chinese character (so it continues that word, like BERT-wwm's ``##`` marks)."""
        import numpy as np

        inside = np.zeros(len(text) + 1, dtype=bool)
        for start, end in self.words(text):
            if end - start > 1 and any(_is_chinese(ch) for ch in text[start:end]):
                inside[start + 1 : end] = True
        starts = np.fromiter((s for s, _ in offsets), dtype=np.int64, count=len(offsets))
        return inside[np.clip(starts, 0, len(text))]


def _plain_dictionary(path: str) -> str:
    """jieba opens dictionaries as plain files: decompress a ``.gz`` once into the temp folder,
    under a name derived from the source's path, size and time."""
    if not os.path.isfile(path):
        raise ToktoolsError(f"jieba dictionary not found: {path}")
    if not path.endswith(".gz"):
        return path
    import gzip
    import hashlib
    import tempfile

    stat = os.stat(path)
    key = hashlib.sha256(f"{os.path.abspath(path)}:{stat.st_size}:{stat.st_mtime_ns}".encode()).hexdigest()[:16]
    target = os.path.join(tempfile.gettempdir(), f"toktools-jieba-{key}.txt")
    if not os.path.exists(target):
        from toktools.io.outputs import register_temporary, unregister_temporary

        handle, temporary = tempfile.mkstemp(dir=os.path.dirname(target), suffix=".tmp")
        register_temporary(temporary)  # a SIGTERM mid-copy removes it too
        try:
            with gzip.open(path, "rb") as source, os.fdopen(handle, "wb") as out:
                while block := source.read(1 << 20):
                    out.write(block)
            os.replace(temporary, target)
        finally:
            if os.path.exists(temporary):
                os.unlink(temporary)
            unregister_temporary(temporary)
    return target


def _is_chinese(ch: str) -> bool:
    """The CJK ideograph blocks BERT's tokenizer pads with spaces (``_is_chinese_char``)."""
    cp = ord(ch)
    return (
        0x4E00 <= cp <= 0x9FFF
        or 0x3400 <= cp <= 0x4DBF
        or 0x20000 <= cp <= 0x2A6DF
        or 0x2A700 <= cp <= 0x2B73F
        or 0x2B740 <= cp <= 0x2B81F
        or 0x2B820 <= cp <= 0x2CEAF
        or 0xF900 <= cp <= 0xFAFF
        or 0x2F800 <= cp <= 0x2FA1F
    )


__all__ = [
    "MaskingInfo",
    "MaskedSequence",
    "MaskingCollator",
    "ChineseWords",
    "masking_info",
    "mask_tokens",
    "pad_batch",
    "word_rule",
]
