"""The pure-Python sentencepiece encoders give ``SentencePieceProcessor.encode``'s ids exactly,
including the lines where any tokenizer.json (hence ``tokenizers``) differs."""

from __future__ import annotations

import pytest
from _spm_models import EDGE_LINES, MODELS, held_out_lines, processor, train

from toktools.errors import ToktoolsError
from toktools.sentencepiece.encode import SentencePieceBPE, SentencePieceUnigram, load_encoder
from toktools.sentencepiece.model_file import NORMAL, UNUSED, read_model, write_model

LINES = EDGE_LINES + ["<mask>中文[SEP]<mask> x", "<cls> <s>", "  ", ""]


@pytest.mark.parametrize("name", list(MODELS))
def test_same_ids_as_sentencepiece(name):
    path = train(name, **MODELS[name])
    sp, ours = processor(path), load_encoder(path)
    lines = held_out_lines() + LINES
    for bos, eos in ((False, False), (True, True)):
        got = [ours.encode(line, add_bos=bos, add_eos=eos) for line in lines]
        assert got == [sp.encode(line, add_bos=bos, add_eos=eos) for line in lines]


@pytest.mark.parametrize("name", ["unigram", "bpe"])
def test_unused_pieces_are_never_produced(name, tmp_path):
    """Marking frequent pieces UNUSED: unigram routes around them, BPE splits them back."""
    model = read_model(train(name, **MODELS[name]))
    sp = processor(train(name, **MODELS[name]))
    frequent = {}
    for line in held_out_lines()[:100]:
        for piece_id in sp.encode(line):
            frequent[piece_id] = frequent.get(piece_id, 0) + 1
    marked = [
        i
        for i, _ in sorted(frequent.items(), key=lambda kv: -kv[1])
        if model.pieces[i].type == NORMAL and len(model.pieces[i].piece) > 1
    ][:20]
    assert len(marked) == 20
    for i in marked:
        model.pieces[i].type = UNUSED
    write_model(model, tmp_path / "unused.model")
    sp, ours = processor(tmp_path / "unused.model"), load_encoder(tmp_path / "unused.model")
    lines = held_out_lines() + LINES
    encoded = [ours.encode(line) for line in lines]
    assert encoded == [sp.encode(line) for line in lines]
    assert not set(marked) & {i for ids in encoded for i in ids}


def test_each_encoder_refuses_the_other_model_type():
    with pytest.raises(ToktoolsError, match="bpe model"):
        SentencePieceUnigram.load(train("bpe", **MODELS["bpe"]))
    with pytest.raises(ToktoolsError, match="not a bpe model"):
        SentencePieceBPE.load(train("unigram", **MODELS["unigram"]))
