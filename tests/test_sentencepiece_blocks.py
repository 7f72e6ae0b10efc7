"""``--engine sentencepiece`` on its fast paths: ids packed from sentencepiece's int32 buffers
(``encode_packed``) and ``--document line`` a block at a time (``encode_block``, written by
:mod:`toktools.corpus.line_blocks`). Every id is compared with ``SentencePieceProcessor.encode``
itself, and the block loop's outputs with those of the document loop, byte for byte."""

from __future__ import annotations

import pytest
import real_shapes
from _spm_models import MODELS, held_out_lines, processor, train
from test_sentencepiece_rule import adversarial_strings

from toktools.corpus import line_blocks
from toktools.corpus.prepared_tokenizer import load_document
from toktools.corpus.writers import read_megatron_documents
from toktools.engines.choice import make_engine

pytest.importorskip("sentencepiece")
pytest.importorskip("numpy")

#: documents that give sentencepiece no id at all, and CRLF
BLANKS = ["   ", "\t", "\u3000", " \t ", "\r", "a line\r", "中文，夹杂English\r"]


def _engine(path):
    document, _ = load_document(str(path))
    engine = make_engine("sentencepiece", document)
    assert engine.name == "sentencepiece"
    return engine


@pytest.mark.parametrize("name", ["unigram_bytes", "bpe"])
def test_packed_and_block_ids_are_sentencepiece_ids(name):
    path = train(name, **MODELS[name])
    sp, engine = processor(path), _engine(path)
    texts = [t for t in adversarial_strings(150, seed=5) + held_out_lines(60) + BLANKS if "\n" not in t]
    packed = engine.encode_packed(texts)
    assert [packed[i] for i in range(len(packed))] == sp.encode(texts) == engine.encode_batch(texts)
    assert any(not ids for ids in sp.encode(texts))  # documents with no id are among them
    block = ("\n".join(texts[:100]) + "\n\n" + "\n".join(texts[100:]) + "\n").encode("utf-8")
    data, offsets = engine.encode_block(block)
    lines = [line for line in block.decode("utf-8").split("\n") if line]
    assert [data[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])] == sp.encode(lines)
    assert not engine.block_needs_routing(block)
    engine._buffers = None  # a sentencepiece without the buffer call: its lists
    assert engine.encode_packed(texts) is None
    data, offsets = engine.encode_block(block)
    assert [data[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])] == sp.encode(lines)


def test_without_numpy_documents_go_through_the_document_loop(monkeypatch):
    from toktools.engines import sentencepiece_engine

    path = train("unigram_bytes", **MODELS["unigram_bytes"])
    assert line_blocks.takes_blocks(_engine(path), "line")
    real = sentencepiece_engine.find_spec
    monkeypatch.setattr(sentencepiece_engine, "find_spec", lambda name: None if name == "numpy" else real(name))
    engine = _engine(path)
    assert not line_blocks.takes_blocks(engine, "line")
    assert engine.encode_packed(["a b"])[0] == processor(path).encode("a b")


def _corpus(tmp_path):
    """Lines, empty lines and lines with no id, some ended by CRLF, one long line (longer than
    the patched LONG_LINE_BYTES), and lines with no id last (after the last shard's end)."""
    lines = held_out_lines(40)
    out = []
    for i, line in enumerate(lines):
        out.append(line.replace("\n", " ") + ("\r" if i % 5 == 0 else ""))
        if i % 3 == 0:
            out.append(BLANKS[i % len(BLANKS)])
        if i % 7 == 0:
            out.append("")
    out.insert(20, " ".join(lines[:30]).replace("\n", " "))  # a long line
    out += ["   ", "", " " * 3000, "\t"]
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(out) + "\n", encoding="utf-8")
    return corpus, [line for line in out if line]


def _encode(corpus, prefix, **options):
    import toktools

    result = toktools.encode_corpus(
        [corpus], options.pop("model"), prefix, format="megatron", engine="sentencepiece", **options
    )
    bins = sorted(p for p in result.outputs if str(p).endswith(".bin"))
    return result, bins


def test_blocks_write_sentencepiece_ids_and_the_document_loop_bytes(tmp_path, monkeypatch):
    """Small blocks (so that lines with no id fall at block ends), a long line encoded apart,
    shards that end just before the last lines (which have no id): the block loop writes
    sentencepiece's ids and the very files of the document loop (encode_documents)."""
    path = train("unigram_bytes", **MODELS["unigram_bytes"])
    sp = processor(path)
    corpus, lines = _corpus(tmp_path)
    monkeypatch.setattr(line_blocks, "MIN_BLOCK_BYTES", 512)
    monkeypatch.setattr(line_blocks, "BLOCKS_WANTED", 16)
    monkeypatch.setattr(line_blocks, "LONG_LINE_BYTES", 2048)
    want = [ids + [sp.eos_id()] for ids in sp.encode(lines) if ids]
    shard_tokens = sum(map(len, want))  # the last document with ids ends the first shard
    outputs = {}
    for loop in ("blocks", "documents"):
        if loop == "documents":
            monkeypatch.setattr(line_blocks, "takes_blocks", lambda engine, mode: False)
        result, bins = _encode(
            corpus, tmp_path / loop / "out", model=path, shard_tokens=shard_tokens, append_eos=True, verify=0
        )
        assert [d for b in bins for d in read_megatron_documents(str(b)[:-4])] == want
        outputs[loop] = [(b.read_bytes(), b.with_suffix(".idx").read_bytes()) for b in bins]
    assert len(outputs["blocks"]) == 2  # the lines with no id after the first shard open a second one
    assert outputs["blocks"] == outputs["documents"]


def test_blocks_are_verified(tmp_path):
    """``--verify`` checks the block loop's documents against toktools' own encoder."""
    path = train("unigram_bytes", **MODELS["unigram_bytes"])
    corpus, lines = _corpus(tmp_path)
    result, bins = _encode(corpus, tmp_path / "out", model=path, verify=8, append_eos=False)
    assert result.verified > 0
    assert [d for b in bins for d in read_megatron_documents(str(b)[:-4])] == [
        ids for ids in processor(path).encode(lines) if ids
    ]


@pytest.mark.full
@pytest.mark.parametrize("shape", [*real_shapes.SHAPES, "single_line"])
def test_every_shape_gives_sentencepiece_ids(tmp_path, shape):
    """Long documents, JSON Lines, Chinese paragraphs, CRLF, blank documents, mixed and a single
    3 MB line: the documents written are sentencepiece's ids of each document read."""
    import json

    path = train("unigram_bytes", **MODELS["unigram_bytes"])
    if shape == "single_line":
        corpus = real_shapes.single_line(tmp_path / "line.txt", size=3_000_000)
    else:
        corpus = real_shapes.build_shape(shape, tmp_path)
    raw = corpus.read_text(encoding="utf-8")
    if corpus.suffix == ".jsonl":
        texts = [json.loads(line)["text"] for line in raw.split("\n") if line.strip()]
    else:
        texts = [line for line in raw.split("\n") if line]
    document = "jsonl" if corpus.suffix == ".jsonl" else "line"
    result, bins = _encode(corpus, tmp_path / "out", model=path, verify=0, append_eos=False, document=document)
    written = [d for b in bins for d in read_megatron_documents(str(b)[:-4])]
    assert written == [ids for ids in processor(path).encode(texts) if ids]
