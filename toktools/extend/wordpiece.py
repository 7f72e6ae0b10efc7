"""Extending a WordPiece vocabulary (``vocab.txt``, BERT): new characters first, then longer pieces.

WordPiece cuts by greedy longest match, so a piece added to the vocabulary could change how
words the base already cuts are cut. Two kinds of pieces cannot:

* a single character (``c`` or ``##c``): the longest match takes a one-character piece only
  where nothing matched before, i.e. in a word the base made ``[UNK]``;
* a piece holding a character that no base token holds: it cannot occur in a word the base cuts
  without ``[UNK]``.

So the new pieces are those, and every text the base cut without ``[UNK]`` keeps its ids.
Characters come in order of how many ``[UNK]`` words they unlock (by occurrences in the corpus);
then the pieces of a WordPiece trained (:func:`toktools.models.bpe.trainer.train_bpe`, ``##``
prefix) on the corpus words the base made ``[UNK]``, in the order it learned them.

``use_unused``: BERT keeps ``[unused0]`` ... ``[unused993]`` for this; new pieces replace those
entries first (same ids, so the model's embedding matrix keeps its shape), then the rest are
appended after the largest id.

``--keep-segmentation-of``: a piece whose text occurs in a word of the kept file is left out
(only words the base made ``[UNK]`` could change, and those are the ones that hold it).
"""

from __future__ import annotations

import copy
import re
from collections import Counter
from collections.abc import Callable, Sequence

from toktools.extend.base import Base, largest_id
from toktools.extend.corpus_text import count_words
from toktools.extend.mapping import NewToken
from toktools.extend.result import Extension
from toktools.formats import from_tokenizer_json, transformers_config_files
from toktools.io.outputs import dumps_tokenizer_json
from toktools.models.bpe.trainer import BpeTrainerConfig, train_bpe
from toktools.models.wordpiece.model import dumps_vocab_txt
from toktools.parts.models import WordPiece

UNUSED = re.compile(r"\[unused\d+\]|<unused\d+>")


def extend_wordpiece(
    base: Base,
    training_lines: Sequence[str],
    add: int,
    *,
    use_unused: bool = False,
    min_frequency: int = 2,
    keep_lines: Sequence[str] = (),
    progress: Callable[[int, int], None] | None = None,
) -> Extension:
    """``base`` with up to ``add`` pieces from ``training_lines`` (see the module docstring)."""
    tokenizer = base.tokenizer
    model = tokenizer.model
    assert isinstance(model, WordPiece)  # open_base chose this extender for a WordPiece model
    prefix = model.continuing_subword_prefix
    vocab: dict[str, int] = dict(model.get_vocab())
    counts = count_words(tokenizer, training_lines)
    unknown = Counter({w: n for w, n in counts.items() if any(i == model.unk_id for i, *_ in model.tokenize(w))})
    pieces = _new_pieces(unknown, vocab, prefix, add, min_frequency)
    left_out = 0
    if keep_lines:  # a piece whose text occurs in a kept word could change that word's ids
        kept_text = "\n".join(count_words(tokenizer, keep_lines))
        kept = [p for p in pieces if (p[len(prefix) :] if p.startswith(prefix) else p) not in kept_text]
        left_out, pieces = len(pieces) - len(kept), kept
    added_ids = {t.id for t in tokenizer.added.tokens}
    slots = sorted((i, t) for t, i in vocab.items() if UNUSED.fullmatch(t) and i not in added_ids) if use_unused else []
    next_id = largest_id(tokenizer) + 1
    base_size = next_id
    new_tokens: list[NewToken] = []
    for number, piece in enumerate(pieces):
        replaces = None
        if slots:
            token_id, replaces = slots.pop(0)
            del vocab[replaces]
        else:
            token_id, next_id = next_id, next_id + 1
        vocab[piece] = token_id
        text = piece[len(prefix) :] if piece.startswith(prefix) else piece
        ids = [i for i, *_ in model.tokenize(text)]
        new_tokens.append(NewToken(token_id, piece, text, [] if model.unk_id in ids else ids, replaces=replaces))
        if progress is not None:
            progress(number + 1, len(pieces))
    document = copy.deepcopy(base.document) if base.document is not None else tokenizer.to_tokenizer_json()
    document["model"]["vocab"] = dict(sorted(vocab.items(), key=lambda item: item[1]))
    extended = from_tokenizer_json(document)
    files: dict[str, str | bytes] = {
        "tokenizer.json": dumps_tokenizer_json(document),
        "vocab.txt": dumps_vocab_txt(vocab),
    }
    config = base.config_files() or transformers_config_files(extended)
    files.update(config)
    notes = []
    if len(pieces) + left_out < add:
        notes.append(
            f"added {len(pieces):,} of {add:,} pieces: the corpus has no more characters or pieces the base "
            f"lacks that occur {max(min_frequency, 1)} times or more"
        )
    if keep_lines:
        notes.append(f"--keep-segmentation-of: left out {left_out:,} pieces that occur in its words")
    if use_unused:
        used = sum(1 for t in new_tokens if t.replaces is not None)
        notes.append(f"--use-unused: {used:,} pieces took unused slots, {len(new_tokens) - used:,} were appended")
    return Extension(extended, files, new_tokens, base_size, notes)


def _new_pieces(unknown: Counter[str], vocab: dict[str, int], prefix: str, add: int, min_frequency: int) -> list[str]:
    """Characters, then longer pieces that hold a character no base token has, by usefulness."""
    chars: Counter[str] = Counter()
    for word, count in unknown.items():
        for position, ch in enumerate(word):
            chars[prefix + ch if position else ch] += count
    threshold = max(min_frequency, 1)
    ranked = [p for p, n in sorted(chars.items(), key=lambda item: (-item[1], item[0])) if n >= threshold]
    pieces = [p for p in ranked if p not in vocab][:add]
    if len(pieces) >= add or not unknown:
        return pieces
    known_chars = set("".join(t[len(prefix) :] if t.startswith(prefix) else t for t in vocab))
    taken = set(vocab) | set(pieces)
    alphabet = len(set("".join(unknown)))
    config = BpeTrainerConfig(
        vocab_size=alphabet * 2 + (add - len(pieces)) * 2 + 1000,
        min_frequency=threshold,
        continuing_subword_prefix=prefix,
    )
    trained = train_bpe(unknown, config)
    for left, right in trained.merges:
        piece = left + (right[len(prefix) :] if right.startswith(prefix) else right)
        body = piece[len(prefix) :] if piece.startswith(prefix) else piece
        if piece in taken or set(body) <= known_chars:
            continue
        pieces.append(piece)
        taken.add(piece)
        if len(pieces) >= add:
            break
    return pieces
