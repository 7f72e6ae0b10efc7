"""How closely a ``.model`` written by ``toktools convert --to spiece.model`` follows the toktools
Unigram tokenizer it came from, and how our ``nmt_nfkc``-style charsmap compares with
sentencepiece's own built-in ``nmt_nfkc``.

    PYTHONPATH=. python benchmarks/charsmap_agreement.py [--tokenizer DIR] [--fuzz 3000]

1. Times the charsmap (rules from ``Nmt`` + ``NFKC``, then the double array), uncached.
2. Trains a toktools Unigram tokenizer on a corpus sample (or takes ``--tokenizer``), converts it,
   and compares ``SentencePieceProcessor.encode`` with the tokenizer's ids on held-out English,
   Chinese and mixed lines (~1 MB) and on fuzzed odd text; each difference is classified.
3. Trains a sentencepiece model with ``--normalization_rule_name=nmt_nfkc`` and compares its
   normalisation with ours on every code point and on the corpus lines.
Needs ``sentencepiece`` and the shared corpora.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
import unicodedata
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import sentencepiece as spm  # noqa: E402
from conftest import read_corpus_sample  # noqa: E402

from toktools.sentencepiece.model_file import read_model  # noqa: E402

SPACE = "\u2581"


def held_out() -> dict[str, list[str]]:
    return {
        "mixed": read_corpus_sample("mixed_sample.txt", 300_000, skip_lines=5000).splitlines(),
        "en_wiki": read_corpus_sample("en_wiki.txt.gz", 250_000).splitlines(),
        "zh_wiki": read_corpus_sample("zh_wiki_sample.txt", 250_000).splitlines(),
        "zh_novels": read_corpus_sample("zh_novels.txt", 200_000, skip_lines=5000).splitlines(),
    }


_ODD = (
    [chr(c) for c in range(0x300, 0x370)]  # combining marks
    + list("ﬁﬂ①②⑴㍻㈱™½²³ｶﾞﾊﾟ㌀ℌℍ𝐀𝐁ǅĲ")
    + [chr(c) for c in range(0xFF01, 0xFF5F)]  # compatibility, full width
    + [" ", "  ", "\t", "\n", "\r", "\u3000", "\u00a0", "\u200b", "\u200d", "\u2028", "\ufeff", "\u2581"]
    + [chr(c) for c in range(1, 0x20)]
    + ["\x7f", "\x85", "\x9f"]  # controls
    + ["😀", "🎉", "👩\u200d👩\u200d👧", "❤\ufe0f", "🇫🇷", "👍🏽"]  # emoji
    + list("áéÅçñöØßΩωЖж中文字가각ᄀ\u1161\u11a8ঘোষণা")
    + list("abcdefgh xyz ABC 012")
)


def fuzz_lines(count: int, seed: int = 13) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(_ODD) for _ in range(rng.randint(1, 24))).replace("\n", " ") for _ in range(count)]


def timing() -> None:
    from toktools.parts.normalizers import NFKC, Nmt
    from toktools.sentencepiece.charsmap_builder import build_charsmap
    from toktools.sentencepiece.charsmap_rules import charsmap_rules

    start = time.perf_counter()
    rules = charsmap_rules([Nmt(), NFKC()])
    middle = time.perf_counter()
    blob = build_charsmap(rules)
    end = time.perf_counter()
    print(
        f"charsmap Nmt+NFKC: {len(rules)} rules in {middle - start:.2f}s, double array in {end - middle:.2f}s, "
        f"total {end - start:.2f}s; blob {len(blob)} bytes"
    )


def toktools_form(tok, line: str) -> str:
    """The tokenizer's normalised + pre-tokenised text, as one ``▁`` string."""
    return "".join(piece for piece, _ in tok.pre_tokenizer.pre_tokenize_str(tok.normalizer.normalize_str(line)))


def classify(tok, sp, line: str) -> str:
    ours, theirs = toktools_form(tok, line), sp.normalize(line)
    if ours == theirs:
        return "segmentation (float32 sums over the line vs f64 per word: near-ties)"
    if ours.rstrip(SPACE) == theirs and ours.endswith(SPACE):
        return "trailing whitespace (a '▁' piece for the tokenizer; trimmed by remove_extra_whitespaces)"
    if ours.strip(SPACE) == theirs.strip(SPACE):
        return "leading whitespace / empty line"
    at = next((i for i, (x, y) in enumerate(zip(ours, theirs)) if x != y), min(len(ours), len(theirs)))
    window = ours[max(0, at - 1) : at + 2] + theirs[max(0, at - 1) : at + 2]
    if any(unicodedata.combining(ch) for ch in window):
        return (
            "combining marks (NFKC reorders several marks, or composes a mark with the end of a "
            "multi-character replacement, e.g. ﬁ + U+0300 -> fì; a longest-match table cannot)"
        )
    return "normalisation (other)"


def compare_ids(tok_dir: Path, fuzz: int) -> None:
    import toktools
    from toktools.formats import export

    tok = toktools.load(str(tok_dir))
    out = Path(tempfile.mkdtemp(prefix="charsmap-agree-"))
    export(tok, "spiece.model", out)
    sp = spm.SentencePieceProcessor(model_file=str(out / "spiece.model"))
    sets = held_out()
    sets["fuzz"] = fuzz_lines(fuzz)
    for name, lines in sets.items():
        kinds: Counter[str] = Counter()
        examples: dict[str, str] = {}
        for line in lines:
            if sp.encode(line) != tok.encode(line).ids:
                kind = classify(tok, sp, line)
                kinds[kind] += 1
                examples.setdefault(kind, line)
        size = sum(len(line.encode()) + 1 for line in lines)
        print(f"{name}: {len(lines)} lines ({size} bytes), equal ids {len(lines) - sum(kinds.values())}")
        for kind, n in kinds.most_common():
            line = examples[kind]
            ours, theirs = toktools_form(tok, line), sp.normalize(line)
            if kind.startswith("segmentation"):
                mine, spms = tok.encode(line).ids, sp.encode(line)
                at = next(i for i, (x, y) in enumerate(zip(mine, spms)) if x != y)
                ours = " ".join(tok.id_to_token(i) for i in mine[at : at + 4])
                theirs = " ".join(sp.id_to_piece(i) for i in spms[at : at + 4])
                print(
                    f"    {n:5d} {kind}\n          e.g. {line[:70]!r}\n          toktools {ours!r}\n          spm      {theirs!r}"
                )
                continue
            at = next((i for i, (x, y) in enumerate(zip(ours, theirs)) if x != y), min(len(ours), len(theirs)))
            lo = max(0, at - 3)
            print(
                f"    {n:5d} {kind}\n          e.g. {line[:70]!r}\n          toktools ...{ours[lo : at + 4]!r}"
                f"\n          spm      ...{theirs[lo : at + 4]!r}"
            )


def raw_processor(model_path: Path, blob: bytes):
    """A processor whose normaliser is ``blob`` alone (no dummy prefix, whitespace kept)."""
    model = read_model(model_path)
    spec = model.normalizer_spec
    spec.set("precompiled_charsmap", blob)
    for flag in ("add_dummy_prefix", "remove_extra_whitespaces", "escape_whitespaces"):
        spec.set(flag, False)
    return spm.SentencePieceProcessor(model_proto=model.to_bytes())


def compare_builtin(work: Path) -> None:
    from toktools.parts.normalizers import NFKC, Nmt
    from toktools.parts.registry import part_from_json
    from toktools.sentencepiece.charsmap_rules import compile_charsmap

    corpus = work / "train.txt"
    corpus.write_text(read_corpus_sample("mixed_sample.txt", 100_000), encoding="utf-8")
    spm.SentencePieceTrainer.train(
        input=str(corpus),
        model_prefix=str(work / "nmt"),
        vocab_size=1000,
        minloglevel=2,
        normalization_rule_name="nmt_nfkc",
    )
    model_path = work / "nmt.model"
    builtin = read_model(model_path).normalizer_spec.get("precompiled_charsmap")
    theirs = raw_processor(model_path, builtin)
    ours = raw_processor(model_path, compile_charsmap([Nmt(), NFKC()]))
    chars = [chr(c) for c in range(1, 0x110000) if not 0xD800 <= c < 0xE000]
    a, b = theirs.normalize(chars), ours.normalize(chars)
    nmt = part_from_json("normalizer", {"type": "Nmt"})
    kinds: Counter[str] = Counter()
    examples: dict[str, list[str]] = {}
    for ch, x, y in zip(chars, a, b):
        if x == y:
            continue
        if nmt.normalize_str(ch) != ch or x in (" ", "") or ch == "\uff5e":
            kind = "NMT rules (tokenizers' Nmt vs sentencepiece's nmt_nfkc extras)"
        elif unicodedata.category(ch) == "Cn":
            kind = f"characters unassigned in Python's Unicode {unicodedata.unidata_version} (spm's table is newer)"
        else:
            kind = "Unicode version (toktools NFKC = tokenizers' Unicode 12 tables; spm's table is newer)"
        kinds[kind] += 1
        examples.setdefault(kind, []).append(f"U+{ord(ch):04X} spm {x!r} ours {y!r}")
    print(
        f"built-in nmt_nfkc ({len(builtin)} bytes) vs ours: {sum(kinds.values())} of {len(chars)} code points "
        "normalise differently"
    )
    for kind, n in kinds.most_common():
        print(f"    {n:5d} {kind}: {', '.join(examples[kind][:6])}")
    for name, lines in held_out().items():
        chars_differ: Counter[str] = Counter()
        differ = 0
        for line, x, y in zip(lines, theirs.normalize(lines), ours.normalize(lines)):
            if x != y:
                differ += 1
                chars_differ.update(ch for ch in set(line) if theirs.normalize(ch) != ours.normalize(ch))
        print(
            f"    corpus {name}: {len(lines)} lines, {differ} normalise differently"
            + (f", because of {dict(chars_differ.most_common(5))}" if differ else "")
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokenizer", type=Path, help="a toktools Unigram tokenizer (default: train one)")
    parser.add_argument("--fuzz", type=int, default=3000, help="fuzzed lines of odd text")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="charsmap-"))
    timing()
    tok_dir = args.tokenizer
    if tok_dir is None:
        from toktools.training.pipeline import train_unigram

        corpus = work / "corpus.txt"
        corpus.write_text(
            read_corpus_sample("mixed_sample.txt", 300_000) + read_corpus_sample("zh_novels.txt", 150_000),
            encoding="utf-8",
        )
        start = time.perf_counter()
        tok = train_unigram([str(corpus)], vocab_size=6000, special_tokens=["<unk>"], unk_token="<unk>")
        tok_dir = work / "unigram"
        tok.save(tok_dir)
        print(f"trained toktools unigram (6000 pieces, 450 KB) in {time.perf_counter() - start:.1f}s")
    compare_ids(tok_dir, args.fuzz)
    compare_builtin(work)


if __name__ == "__main__":
    main()
