"""The pure-Python sentencepiece encoder gives ``SentencePieceProcessor.encode``'s ids exactly,
including the lines where any tokenizer.json (hence ``tokenizers``) differs."""
from __future__ import annotations

import pytest

from _spm_models import EDGE_LINES, held_out_lines, processor, train
from test_sentencepiece_model import MODELS
from toktools.errors import ToktoolsError
from toktools.sentencepiece_encode import SentencePieceUnigram


@pytest.mark.parametrize("name", ["unigram", "unigram_bytes", "unigram_user", "unigram_cf"])
def test_same_ids_as_sentencepiece(name):
    path = train(name, **MODELS[name])
    sp, ours = processor(path), SentencePieceUnigram.load(path)
    lines = held_out_lines() + EDGE_LINES + ["<mask>中文[SEP]<mask> x", "<cls> <s>", "  ", ""]
    for flags in ((False, False), (True, True)):
        got = [ours.encode(line, add_bos=flags[0], add_eos=flags[1]) for line in lines]
        assert got == [sp.encode(line, add_bos=flags[0], add_eos=flags[1]) for line in lines]


def test_bpe_models_are_refused_in_one_line():
    with pytest.raises(ToktoolsError, match="bpe model"):
        SentencePieceUnigram.load(train("bpe", **MODELS["bpe"]))
