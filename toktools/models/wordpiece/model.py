"""BERT's WordPiece: greedy longest-match encoding with ``##`` pieces, ``vocab.txt`` I/O and the
decoder. The parts that use them are in :mod:`toktools.parts`; the BERT tokenizer that ties
them to the BERT normaliser and pre-tokeniser is :func:`toktools.presets.bert_wordpiece`.

Everything follows ``tokenizers`` 0.23.3 (``shared/spec/wordpiece.md`` §4–§8). Training lives
in :mod:`toktools.training.pipeline` (the BPE engine with a ``##`` prefix) and
:mod:`toktools.models.wordpiece.likelihood_trainer` (the original, likelihood-scored WordPiece idea).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from toktools.errors import ToktoolsError

BERT_SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")

#: Rust's ``char::is_whitespace`` (what ``trim_end`` strips from ``vocab.txt`` lines).
RUST_WHITESPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u2028\u2029\u202f\u205f\u3000"
)

# The decoder's cleanup, applied to each token on its own, in this order.
_CLEANUP = (
    (" .", "."),
    (" ?", "?"),
    (" !", "!"),
    (" ,", ","),
    (" ' ", "'"),
    (" n't", "n't"),
    (" 'm", "'m"),
    (" do not", " don't"),
    (" 's", "'s"),
    (" 've", "'ve"),
    (" 're", "'re"),
)


# ---------------------------------------------------------------------------------------------
# vocab.txt
# ---------------------------------------------------------------------------------------------


def loads_vocab_txt(text: str) -> dict[str, int]:
    """Parse ``vocab.txt`` as ``tokenizers`` does: the line index is the id, trailing whitespace
    (a CRLF's ``\\r`` included) is trimmed, an empty line is the token ``""``, and for a token
    listed twice the later line wins (the earlier id is left without a token)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the newline that ends the last line does not start another
    return {line.rstrip(RUST_WHITESPACE): index for index, line in enumerate(lines)}


def dumps_vocab_txt(vocab: Mapping[str, int]) -> str:
    """``vocab.txt``: tokens in id order, each followed by ``\\n`` (ids without a token vanish)."""
    return "".join(token + "\n" for token, _ in sorted(vocab.items(), key=lambda item: item[1]))


def read_vocab_txt(path: str | Path) -> dict[str, int]:
    from toktools.models.bpe.trainer import read_text_file

    path = Path(path)
    vocab = loads_vocab_txt(read_text_file(path, "vocabulary"))
    if not vocab:
        raise ToktoolsError(f"{path}: the vocabulary is empty")
    return vocab


# ---------------------------------------------------------------------------------------------
# The model: greedy longest match
# ---------------------------------------------------------------------------------------------


def wordpiece_split(
    word: str,
    vocab: Mapping[str, int],
    unk_token: str = "[UNK]",
    prefix: str = "##",
    max_input_chars_per_word: int = 100,
    longest: int | None = None,
) -> list[tuple[str, int, int]]:
    """``word`` → ``(piece, start, end)``: the longest vocabulary entry from the left, then the
    longest ``##`` entry from there, and so on. A word longer than ``max_input_chars_per_word``
    or with a position where nothing matches becomes one ``unk_token`` (pieces found before it
    are dropped). ``longest`` (the longest entry without its prefix) only saves time."""
    n = len(word)
    if n > max_input_chars_per_word:
        return [(unk_token, 0, n)]
    limit = longest or n
    pieces = []
    start = 0
    while start < n:
        end = min(n, start + limit)
        while end > start:
            piece = word[start:end] if start == 0 else prefix + word[start:end]
            if piece in vocab:
                break
            end -= 1
        else:
            return [(unk_token, 0, n)]
        pieces.append((piece, start, end))
        start = end
    return pieces


def decode_wordpieces(tokens: Sequence[str], prefix: str = "##", cleanup: bool = True) -> str:
    """``decoders.WordPiece``: glue ``##`` pieces to the previous token, put a space before the
    others (the first token keeps any ``##``), then clean up each token on its own."""
    return "".join(wordpiece_decode_chain(tokens, prefix, cleanup))


def wordpiece_decode_chain(tokens: Sequence[str], prefix: str = "##", cleanup: bool = True) -> list[str]:
    """:func:`decode_wordpieces` token by token (``Decoder::decode_chain``)."""
    out = []
    for index, token in enumerate(tokens):
        if index:
            token = token.replace(prefix, "", 1) if token.startswith(prefix) else " " + token
        if cleanup:
            for dirty, clean in _CLEANUP:
                token = token.replace(dirty, clean)
        out.append(token)
    return out
