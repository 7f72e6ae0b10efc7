"""Published sentencepiece models, when a directory of them is given: ``TOKTOOLS_SPM_MODELS``.

The models come from a package registry, not from the hub: the sentencepiece source
distribution carries two that Google trained and ships (``test/test_model.model``, English, and
``test/test_ja_model.model``, Japanese)::

    pip download --no-binary :all: --no-deps sentencepiece==0.2.1
    tar xzf sentencepiece-0.2.1.tar.gz sentencepiece-0.2.1/test
    TOKTOOLS_SPM_MODELS=sentencepiece-0.2.1/test python -m pytest tests/test_published_spm_models.py

Nothing is downloaded here, so without the variable these tests skip. Two things are checked on
every model found, on held-out English, mixed and Chinese lines:

* toktools' sentencepiece encoder (:mod:`toktools.sentencepiece.encode`) gives sentencepiece's
  ids on every line;
* ``toktools.load`` (the ``tokenizer.json`` pipeline, ``tokenizers``' rules) gives them too,
  except on lines where the two libraries' rules differ (spec/unigram.md §6): there the ids
  must be those of ``tokenizers`` loaded from the same conversion, and at most 1% of lines.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import read_corpus_sample

spm = pytest.importorskip("sentencepiece")

_DIR = os.environ.get("TOKTOOLS_SPM_MODELS")
MODELS = sorted(Path(_DIR).glob("*.model")) if _DIR else []

pytestmark = pytest.mark.skipif(
    not MODELS,
    reason="set TOKTOOLS_SPM_MODELS to a directory of published .model files "
    "(see this module's docstring for where to get them offline)",
)


def _lines() -> list[str]:
    text = read_corpus_sample("mixed_sample.txt", 200_000, skip_lines=2000) + read_corpus_sample(
        "zh_novels.txt", 100_000, skip_lines=2000
    )
    return [line for line in text.splitlines() if line.strip()]


@pytest.mark.parametrize("model", MODELS, ids=[m.name for m in MODELS])
def test_the_sentencepiece_encoder_gives_sentencepiece_ids_on_every_line(model: Path) -> None:
    from toktools.sentencepiece.encode import load_encoder

    processor = spm.SentencePieceProcessor(model_file=str(model))
    ours = load_encoder(model)
    lines = _lines()
    assert [ours.encode(line) for line in lines] == [processor.encode(line) for line in lines]


@pytest.mark.parametrize("model", MODELS, ids=[m.name for m in MODELS])
def test_loaded_tokenizer_differs_from_sentencepiece_only_where_tokenizers_does(model: Path) -> None:
    """By default ``toktools.load`` gives sentencepiece's ids on every line; under the
    tokenizers rule it differs only where ``tokenizers`` does."""
    import tokenizers

    import toktools

    processor = spm.SentencePieceProcessor(model_file=str(model))
    lines = _lines()
    assert [e.ids for e in toktools.load(model).encode_batch(lines, workers=1)] == [
        processor.encode(line) for line in lines
    ]
    ours = toktools.load(model, model_rule="tokenizers")
    library = tokenizers.Tokenizer.from_str(json.dumps(ours.to_tokenizer_json()))
    differ = [line for line in lines if ours.encode(line).ids != processor.encode(line)]
    assert len(differ) <= len(lines) // 100, differ[:3]
    for line in differ:
        assert ours.encode(line).ids == library.encode(line).ids
    # decoding follows sentencepiece on every line, whatever the encoding
    for line in lines:
        ids = processor.encode(line)
        assert ours.decode(ids) == processor.decode(ids)
