"""Whole ``tokenizer.json`` files made of the generic parts load and encode exactly as in
``tokenizers``: the styles of GPT-4 / Llama-3, Qwen, classic BPE with ``</w>``, WordLevel with
Whitespace, and SentencePiece-style Metaspace. Each is built with ``tokenizers``' own Python API
and trained on a small sample, then compared (ids, tokens, offsets, type ids, decode, JSON)."""

from __future__ import annotations

from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

from tests.parts_parity import check_all, corpus_lines

CL100K = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
QWEN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
LLAMA3 = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*"
    r"|\s*[\r\n]|\s+(?!\S)|\s+"
)


def _trained(tokenizer: Tokenizer, trainer: trainers.Trainer) -> Tokenizer:
    tokenizer.train_from_iterator(corpus_lines(60_000), trainer)
    return tokenizer


def _byte_level_split(pattern: str, normalizer: normalizers.Normalizer | None = None) -> Tokenizer:
    tokenizer = Tokenizer(models.BPE(ignore_merges=True))
    if normalizer is not None:
        tokenizer.normalizer = normalizer
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(pattern), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tokenizer.decoder = decoders.ByteLevel()
    return _trained(
        tokenizer,
        trainers.BpeTrainer(
            vocab_size=1200, special_tokens=["<|endoftext|>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
        ),
    )


def test_gpt4_style_split_then_byte_level_with_ignore_merges() -> None:
    check_all(_byte_level_split(CL100K))


def test_llama3_style_possessive_quantifier() -> None:
    check_all(_byte_level_split(LLAMA3))


def test_qwen_style_nfc_split_byte_level() -> None:
    check_all(_byte_level_split(QWEN, normalizers.NFC()))


def test_classic_bpe_with_end_of_word_suffix_and_unknowns() -> None:
    tokenizer = Tokenizer(models.BPE(unk_token="<unk>", end_of_word_suffix="</w>"))
    tokenizer.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase()])
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.decoder = decoders.BPEDecoder(suffix="</w>")
    check_all(
        _trained(
            tokenizer,
            trainers.BpeTrainer(
                vocab_size=900, special_tokens=["<unk>"], end_of_word_suffix="</w>", limit_alphabet=300
            ),
        )
    )


def test_word_level_with_whitespace() -> None:
    tokenizer = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    check_all(_trained(tokenizer, trainers.WordLevelTrainer(vocab_size=800, special_tokens=["[UNK]"])))


def test_metaspace_and_digits_with_bpe_byte_fallback() -> None:
    tokenizer = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    tokenizer.normalizer = normalizers.Sequence([normalizers.Replace(" ", "\u2581"), normalizers.Prepend("\u2581")])
    tokenizer.pre_tokenizer = pre_tokenizers.Digits(individual_digits=True)
    tokenizer.decoder = decoders.Sequence(
        [decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse(), decoders.Strip(" ", 1, 0)]
    )
    specials = ["<unk>"] + [f"<0x{b:02X}>" for b in range(256)]
    check_all(_trained(tokenizer, trainers.BpeTrainer(vocab_size=1000, special_tokens=specials, limit_alphabet=200)))


def test_metaspace_pre_tokenizer_and_decoder() -> None:
    tokenizer = Tokenizer(models.BPE(unk_token="<unk>"))
    tokenizer.normalizer = normalizers.NFKC()
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(prepend_scheme="first")
    tokenizer.decoder = decoders.Metaspace(prepend_scheme="first")
    check_all(_trained(tokenizer, trainers.BpeTrainer(vocab_size=900, special_tokens=["<unk>"], limit_alphabet=400)))
