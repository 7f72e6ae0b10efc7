"""Re-verify that tiktoken's regular expression splits text as ``tokenizers``' Oniguruma does,
on every Unicode scalar value (not only the risky ones the engine probes on each run).

    PYTHONPATH=. python benchmarks/probe_tiktoken_unicode.py

A probe vocabulary merges each context character with the following byte and each byte with a
following ``a``, so any difference in piece boundaries changes the ids. Run it whenever tiktoken
or tokenizers changes version (``spec/tiktoken-equivalence.md`` section 3).
"""

from __future__ import annotations

import sys
import time


def main() -> None:
    import tiktoken
    import tokenizers

    from toktools.engines.analysis import analyse, probe_text
    from toktools.engines.tiktoken_engine import TiktokenEngine
    from toktools.engines.tokenizers_engine import TokenizersEngine
    from toktools.models.bpe.bytelevel import BYTE_TO_SYMBOL, text_to_symbols

    symbols = sorted(BYTE_TO_SYMBOL)
    vocab = {s: i for i, s in enumerate(symbols)}
    merges = []
    for ctx in ["a", "1", "!", " ", "\t", "x", "'"]:
        for symbol in symbols:
            for a, b in ((text_to_symbols(ctx), symbol), (symbol, "a")):
                if a + b not in vocab:
                    vocab[a + b] = len(vocab)
                    merges.append(f"{a} {b}")
    doc = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [],
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        "post_processor": None,
        "decoder": None,
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": False,
            "vocab": vocab,
            "merges": merges,
        },
    }
    analysis = analyse(doc)
    assert analysis.tiktoken_reason is None, analysis.tiktoken_reason
    points = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    start = time.perf_counter()
    ours = TiktokenEngine(analysis.plan)
    theirs = TokenizersEngine(doc)
    differing = []
    for begin in range(0, len(points), 20_000):
        texts = probe_text(points[begin : begin + 20_000])
        for text, a, b in zip(texts, ours.encode_batch(texts), theirs.encode_batch(texts)):
            if a != b:
                differing.append(ord(text[1]))
    print(
        f"tiktoken {tiktoken.__version__} vs tokenizers {tokenizers.__version__}: {len(points):,} code points x 10 "
        f"contexts, {len(differing)} differ ({time.perf_counter() - start:.0f} s)"
        + (f": {', '.join(f'U+{c:04X}' for c in differing[:20])}" if differing else "")
    )
    sys.exit(1 if differing else 0)


if __name__ == "__main__":
    main()
