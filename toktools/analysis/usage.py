"""Vocabulary use on a corpus (``toktools inspect TOK --corpus F``): which tokens a corpus
uses, which it never does, and how often the unknown token comes up."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from toktools.analysis import token_view
from toktools.analysis.plain_data import jsonable, ratio
from toktools.tokenizer import Tokenizer

__all__ = ["UsageStats", "corpus_usage"]


@dataclass
class UsageStats:
    """What ``--corpus F`` adds to ``inspect``. ``vocab_considered`` is the vocabulary without the
    special tokens; ``unused`` counts those entries never produced on the corpus."""

    lines: int
    characters: int
    words: int
    tokens: int
    distinct_used: int
    vocab_considered: int
    unused: int
    unused_share: float | None
    unused_sample: list[tuple[int, str]]
    unk_token: str | None
    unk_count: int
    unk_rate: float | None
    most_common: list[tuple[int, str, int]]

    def to_dict(self) -> dict[str, Any]:
        return jsonable(
            {
                "lines": self.lines,
                "characters": self.characters,
                "words": self.words,
                "tokens": self.tokens,
                "distinct_used": self.distinct_used,
                "vocab_considered": self.vocab_considered,
                "unused": self.unused,
                "unused_share": self.unused_share,
                "unused_sample": [{"id": i, "token": t} for i, t in self.unused_sample],
                "unk_token": self.unk_token,
                "unk_count": self.unk_count,
                "unk_rate": self.unk_rate,
                "most_common": [{"id": i, "token": t, "count": c} for i, t, c in self.most_common],
            }
        )

    def render_plain(self) -> str:
        def pct(value: float | None) -> str:
            return "-" if value is None else f"{value:.2%}"

        lines = [
            f"corpus          {self.lines} lines, {self.words} words, {self.characters} characters",
            f"tokens          {self.tokens} ({self.distinct_used} distinct)",
            f"unused          {self.unused} of {self.vocab_considered} ({pct(self.unused_share)})",
            f"unknown         {self.unk_count} ({pct(self.unk_rate)})"
            + (f" {self.unk_token}" if self.unk_token else " (no unk token)"),
        ]
        if self.unused_sample:
            lines.append("unused sample   " + " ".join(f"«{t}»" for _, t in self.unused_sample))
        if self.most_common:
            lines += ["", "most common tokens"]
            width = max(len(str(c)) for _, _, c in self.most_common)
            for token_id, token, count in self.most_common:
                share = f"{count / self.tokens:6.2%}" if self.tokens else ""
                lines.append(f"  {count:>{width}}  {share}  {token_id:>7}  «{token}»")
        return "\n".join(lines) + "\n"


def _words(line: str) -> int:
    """``len(line.split())``, without a list of every word of a long line (counted by pieces cut
    at spaces, which no word spans)."""
    from toktools.corpus.documents import safe_segments
    from toktools.corpus.long_documents import is_long

    if not is_long(line):
        return len(line.split())
    return sum(len(line[start:end].split()) for start, end in safe_segments(line))


def corpus_usage(
    tokenizer: Tokenizer, lines: Iterable[str], *, sample: int = 20, top: int = 20, workers: int | None = None
) -> UsageStats:
    """Encode every line (its trailing ``\\n`` / ``\\r\\n`` removed; no special tokens) and count
    which tokens are used. The unused sample is the ``sample`` lowest ids never seen; lines are
    encoded in batches (in parallel for large corpora, see ``Tokenizer.encode_batch``)."""
    plain = token_view.without_truncation(tokenizer)
    counts: Counter[int] = Counter()
    n_lines = n_chars = n_words = 0
    from toktools.corpus.long_documents import encoded_pieces, is_long, tokenizer_cuttable
    from toktools.corpus.reading import batched

    cut = tokenizer_cuttable(plain)
    for chunk in batched(lines, 20_000):
        chunk = [line[:-2] if line.endswith("\r\n") else line[:-1] if line.endswith("\n") else line for line in chunk]
        n_lines += len(chunk)
        n_chars += sum(len(line) for line in chunk)
        n_words += sum(_words(line) for line in chunk)
        short = [line for line in chunk if not is_long(line)]
        for encoding in plain.encode_batch(short, add_special_tokens=False, workers=workers):
            counts.update(encoding.ids)
        for number, line in enumerate(chunk, start=n_lines - len(chunk) + 1):
            if is_long(line):  # a line longer than a segment: piece by piece, flat memory
                for _, _, encoding in encoded_pieces(plain, line, cut, f"inspect --corpus: line {number}"):
                    counts.update(encoding.ids)
    vocab = tokenizer.get_vocab()
    specials = token_view.special_tokens(tokenizer)
    considered = {i: t for t, i in vocab.items() if t not in specials}
    unused_ids = sorted(i for i in considered if i not in counts)
    unk_id = token_view.unk_id(tokenizer)
    unk_count = counts.get(unk_id, 0) if unk_id is not None else 0
    total = sum(counts.values())
    most = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:top]
    return UsageStats(
        lines=n_lines,
        characters=n_chars,
        words=n_words,
        tokens=total,
        distinct_used=len(counts),
        vocab_considered=len(considered),
        unused=len(unused_ids),
        unused_share=ratio(len(unused_ids), len(considered)),
        unused_sample=[(i, token_view.readable(tokenizer, considered[i])) for i in unused_ids[:sample]],
        unk_token=tokenizer.id_to_token(unk_id) if unk_id is not None else None,
        unk_count=unk_count,
        unk_rate=ratio(unk_count, total),
        most_common=[(i, token_view.readable(tokenizer, tokenizer.id_to_token(i) or ""), c) for i, c in most],
    )
