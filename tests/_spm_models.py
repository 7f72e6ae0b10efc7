"""SentencePiece models trained in the tests (small samples of the shared corpora), shared by the
Unigram / Precompiled / ``.model`` tests. Needs the ``sentencepiece`` package (test extra)."""

from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path

import pytest
from conftest import read_corpus_sample

#: the models the tests train: name -> SentencePieceTrainer options (on top of the defaults below)
MODELS = {
    "unigram": dict(),
    "unigram_bytes": dict(byte_fallback=True),
    "unigram_user": dict(user_defined_symbols=["<mask>", "[SEP]", "中文"], control_symbols=["<cls>"]),
    "unigram_cf": dict(normalization_rule_name="nmt_nfkc_cf", add_dummy_prefix=False),
    "bpe": dict(model_type="bpe"),
    "bpe_bytes": dict(model_type="bpe", byte_fallback=True, user_defined_symbols=["<mask>"]),
}


_DIR = Path(tempfile.mkdtemp(prefix="toktools-spm-"))
atexit.register(shutil.rmtree, _DIR, ignore_errors=True)


#: text the models are trained on: English (with some Chinese) and Chinese novels
def training_text() -> str:
    return read_corpus_sample("mixed_sample.txt", 150_000) + read_corpus_sample("zh_novels.txt", 80_000)


#: held-out text: other parts of the same corpora, plus edge cases
EDGE_LINES = [
    "  leading and   inner   runs of spaces  ",
    "\ttabs\tand\nnewlines\n",
    "emoji 😀🎉👩‍👩‍👧 and ∰ ⌘ ꙮ unseen",
    "Ａ\u0301 ﬁ ① ｶﾞ ㍻ fullwidth and compatibility",
    "<s> </s> <unk> literal control pieces",
    "ঘোষণা বাংলা",
    "中文，夹杂English和数字123。",
    "already▁has▁meta",
    "x" * 40,
    "-" * 37,
]


def held_out_lines(max_lines: int = 400) -> list[str]:
    en = read_corpus_sample("mixed_sample.txt", 60_000, skip_lines=3000).splitlines()
    zh = read_corpus_sample("zh_novels.txt", 40_000, skip_lines=4000).splitlines()
    lines = [line for line in en[: max_lines // 2] + zh[: max_lines // 2] if line.strip()]
    return lines + EDGE_LINES


_TRAINED: dict[str, Path] = {}


def train(name: str, **options) -> Path:
    """Train (once per test session and name) and return the ``.model`` path."""
    spm = pytest.importorskip("sentencepiece")
    if name in _TRAINED:
        return _TRAINED[name]
    corpus = _DIR / "train.txt"
    if not corpus.exists():
        corpus.write_text(training_text(), encoding="utf-8")
    prefix = _DIR / name
    settings = dict(
        input=str(corpus),
        model_prefix=str(prefix),
        vocab_size=3000,
        model_type="unigram",
        character_coverage=0.995,
        num_threads=1,
        minloglevel=2,
    )
    settings.update(options)
    spm.SentencePieceTrainer.train(**settings)
    _TRAINED[name] = prefix.with_suffix(".model")
    return _TRAINED[name]


def processor(path: Path):
    spm = pytest.importorskip("sentencepiece")
    return spm.SentencePieceProcessor(model_file=str(path))
