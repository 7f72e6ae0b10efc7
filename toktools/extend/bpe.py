"""Extending a BPE tokenizer (``tokenizer.json``, ``vocab.json`` + ``merges.txt``, tiktoken ranks):
the corpus is cut by the base's merges, new merges are learned on top
(:mod:`toktools.extend.bpe_training`) and written after all of the base's, new ids after its
largest id; every base id, token and merge stays as it was."""

from __future__ import annotations

import base64
import copy
from collections.abc import Callable, Sequence
from typing import Any

from toktools.extend.base import Base, dumps_json, largest_id
from toktools.extend.bpe_training import Continuation, continue_training, protected_pairs, segmented_words
from toktools.extend.corpus_text import count_words
from toktools.extend.mapping import NewToken
from toktools.extend.result import Extension
from toktools.formats import from_tokenizer_json, transformers_config_files
from toktools.io.outputs import dumps_tokenizer_json
from toktools.models.bpe.bytelevel import is_byte_symbols, symbols_to_bytes
from toktools.models.bpe.files import dumps_vocab_json, read_text_file
from toktools.parts.models import BPE
from toktools.tokenizer import Tokenizer


def extend_bpe(
    base: Base,
    training_lines: Sequence[str],
    add: int,
    *,
    min_frequency: int = 2,
    keep_lines: Sequence[str] = (),
    progress: Callable[[int, int], None] | None = None,
) -> Extension:
    """``base`` with up to ``add`` merges learned from ``training_lines``; merges that would change
    the base's ids on a line of ``keep_lines`` are passed over."""
    tokenizer = base.tokenizer
    model = tokenizer.model
    assert isinstance(model, BPE)  # open_base chose this extender for a BPE model
    prefix = model.continuing_subword_prefix
    counts = count_words(tokenizer, training_lines)
    word_ids = {word: [token_id for token_id, *_ in model.tokenize(word)] for word in counts}
    words, weights = segmented_words(word_ids, counts)
    kept_words = count_words(tokenizer, keep_lines)
    protected = protected_pairs([[token_id for token_id, *_ in model.tokenize(word)] for word in kept_words])
    id_to_token = {i: t for t, i in model.get_vocab().items()}
    first_id = largest_id(tokenizer) + 1
    existing = set(model.get_vocab()) | {t.content for t in tokenizer.added.tokens}
    if model.ignore_merges:  # a word that is a token is taken whole: no new token may spell a kept word
        existing |= set(kept_words)
    learned = continue_training(
        words,
        weights,
        id_to_token.__getitem__,
        existing,
        first_id,
        add,
        min_frequency=min_frequency,
        protected=protected,
        prefix=prefix,
        unmergeable=_byte_fallback_ids(model),
        progress=progress,
    )
    document = _extended_document(base, learned, first_id)
    extended = from_tokenizer_json(document)
    new_tokens = _new_tokens(tokenizer, learned, first_id)
    notes = _notes(learned, add, min_frequency, bool(keep_lines))
    files = _files(base, document, extended, learned, notes)
    return Extension(extended, files, new_tokens, first_id, notes)


def _byte_fallback_ids(model: BPE) -> set[int]:
    """The ids of ``<0xNN>`` tokens, when the model falls back to them (never merged: their
    string is not their text)."""
    if not model.byte_fallback:
        return set()
    return {i for t, i in model.get_vocab().items() if len(t) == 6 and t.startswith("<0x") and t.endswith(">")}


def _extended_document(base: Base, learned: Continuation, first_id: int) -> dict[str, Any]:
    """The base's ``tokenizer.json`` with the new tokens and merges appended (merges spelled as the
    base spells them: ``"a b"`` strings or ``[a, b]`` lists)."""
    document = copy.deepcopy(base.document) if base.document is not None else base.tokenizer.to_tokenizer_json()
    node = document["model"]
    vocab = node["vocab"]
    for offset, token in enumerate(learned.tokens):
        vocab[token] = first_id + offset
    merges = node.setdefault("merges", [])
    as_strings = bool(merges) and isinstance(merges[0], str)
    merges.extend(f"{a} {b}" if as_strings else [a, b] for a, b in learned.merges)
    return document


def _new_tokens(tokenizer: Tokenizer, learned: Continuation, first_id: int) -> list[NewToken]:
    """Each new token with the base ids it is made of (its merges unfolded down to base tokens)."""
    model = tokenizer.model
    vocab = model.get_vocab()
    made_of: dict[str, list[int]] = {}
    byte_level = getattr(tokenizer.decoder, "type", None) == "ByteLevel"
    out = []
    for offset, ((left, right), token) in enumerate(zip(learned.merges, learned.tokens)):
        ids = made_of.get(left, [vocab[left]] if left in vocab else []) + made_of.get(
            right, [vocab[right]] if right in vocab else []
        )
        made_of[token] = ids
        text, hex_bytes = _text_of(tokenizer, token, ids, byte_level)
        out.append(NewToken(first_id + offset, token, text, ids, hex_bytes))
    return out


def _text_of(tokenizer: Tokenizer, token: str, ids: list[int], byte_level: bool) -> tuple[str, str | None]:
    """The text a token stands for; byte-level tokens that cut a character also give their bytes."""
    if byte_level and is_byte_symbols(token):
        data = symbols_to_bytes(token)
        try:
            return data.decode("utf-8"), None
        except UnicodeDecodeError:
            return data.decode("utf-8", errors="replace"), data.hex()
    model = tokenizer.model
    prefix, suffix = getattr(model, "continuing_subword_prefix", None), getattr(model, "end_of_word_suffix", None)
    text = token[len(prefix) :] if prefix and token.startswith(prefix) else token
    text = text[: -len(suffix)] if suffix and text.endswith(suffix) else text
    return text.replace("\u2581", " "), None


def _files(
    base: Base, document: dict[str, Any], extended: Tokenizer, learned: Continuation, notes: list[str]
) -> dict[str, str | bytes]:
    """The base's own layouts, rewritten; ``tokenizer.json`` always; tiktoken ranks for byte-level
    BPE; the transformers config files carried over (or written, when the base had none)."""
    files: dict[str, str | bytes] = {"tokenizer.json": dumps_tokenizer_json(document)}
    vocab = document["model"]["vocab"]
    for vocab_name, merges_name in (("vocab.json", "merges.txt"), ("encoder.json", "vocab.bpe")):
        if vocab_name in base.files and merges_name in base.files:
            files[vocab_name] = dumps_vocab_json(vocab)
            old = read_text_file(base.files[merges_name], merges_name)
            if old and not old.endswith("\n"):
                old += "\n"
            files[merges_name] = old + "".join(f"{a} {b}\n" for a, b in learned.merges)
    if getattr(extended.decoder, "type", None) == "ByteLevel":
        ranks, reason = tiktoken_files(document)
        if ranks is not None:
            files.update(ranks)
        else:
            notes.append(f"tiktoken ranks not written: tiktoken would not give these ids ({reason})")
    config = base.config_files()
    if "tokenizer_config.json" not in config:
        config = transformers_config_files(extended)
    files.update(config)
    return files


def tiktoken_files(document: dict[str, Any]) -> tuple[dict[str, str | bytes] | None, str | None]:
    """``tokenizer.tiktoken`` (``base64(bytes) rank`` per line) and ``special_tokens.json``, when
    tiktoken gives the ids of this ``tokenizer.json`` exactly (E1-E4 of
    ``spec/tiktoken-equivalence.md``, which continued training keeps: one merge per new token,
    ranks in merge order, each new token built from a pair met side by side); else the reason."""
    from toktools.engines.analysis import analyse

    analysis = analyse(document)
    if analysis.tiktoken_reason is not None or analysis.plan is None:
        return None, analysis.tiktoken_reason
    if analysis.plan.rank_to_id is not None:
        return None, "ranks and ids are in different orders"
    ranks = sorted(analysis.plan.mergeable_ranks.items(), key=lambda item: item[1])
    lines = "".join(f"{base64.b64encode(data).decode('ascii')} {rank}\n" for data, rank in ranks)
    return {"tokenizer.tiktoken": lines, "special_tokens.json": dumps_json(analysis.plan.special_tokens)}, None


def _notes(learned: Continuation, add: int, min_frequency: int, keeping: bool) -> list[str]:
    notes = []
    if len(learned.tokens) < add:
        notes.append(
            f"added {len(learned.tokens):,} of {add:,} tokens: no pair of the corpus is left "
            f"that occurs {max(min_frequency, 1)} times or more (--min-frequency)"
        )
    if keeping:
        examples = ", ".join(repr(t) for t in learned.protected_examples[:3])
        notes.append(
            f"--keep-segmentation-of: passed over {learned.skipped_protected:,} merges that would change its ids"
            + (f" (first: {examples})" if examples else "")
        )
    if learned.skipped_existing:
        notes.append(f"passed over {learned.skipped_existing:,} merges whose token the vocabulary already has")
    return notes
