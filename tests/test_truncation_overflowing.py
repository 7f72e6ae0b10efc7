"""Truncation with ``stride`` and ``Encoding.overflowing``, as ``tokenizers`` 0.23.3 has them.

What truncation cuts off is kept in ``overflowing``: windows of the sequence overlapping by
``stride`` tokens, each through the template and padding; for a pair, each window of one side
combined with the other side and with each of its windows (``Encoding::merge_with``), which is
what transformers returns as extra rows with ``return_overflowing_tokens=True``. Compared with
``tokenizers`` field by field, nested pieces included, on long inputs and pairs, both directions
and every strategy, under every post-processor kind. And ``stride`` survives a round trip
through ``tokenizer.json`` (``convert`` reset it to 0).
"""

from __future__ import annotations

import functools
import itertools
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from small_shipped import shipped_text
from tokenizers import Tokenizer as HFTokenizer

from toktools.cli import main
from toktools.errors import ToktoolsError
from toktools.formats import from_tokenizer_json

SAMPLE = Path(__file__).parent / "fixtures" / "sample.txt"


def _template(vocab: dict[str, int], b_type: int) -> dict:
    """BERT's template as TemplateProcessing, the second sequence with type id ``b_type``."""

    def special(name: str, type_id: int) -> dict:
        return {"SpecialToken": {"id": name, "type_id": type_id}}

    def sequence(name: str, type_id: int) -> dict:
        return {"Sequence": {"id": name, "type_id": type_id}}

    return {
        "type": "TemplateProcessing",
        "single": [special("[CLS]", 0), sequence("A", 0), special("[SEP]", 0)],
        "pair": [
            special("[CLS]", 0),
            sequence("A", 0),
            special("[SEP]", 0),
            sequence("B", b_type),
            special("[SEP]", 1),
        ],
        "special_tokens": {name: {"id": name, "ids": [vocab[name]], "tokens": [name]} for name in ("[CLS]", "[SEP]")},
    }


#: name -> (shipped vocabulary, post-processor node or "keep")
PIPELINES = {
    "bert-processing": ("wordpiece-30k", "keep"),
    "template": ("wordpiece-30k", "template"),
    "template-b-type-0": ("wordpiece-30k", "template-0"),
    "no-post-processor": ("wordpiece-30k", None),
    "roberta-processing": ("bytebpe-50k", "keep"),
    "byte-level": ("bytebpe-50k", {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True}),
}


@functools.cache
def _document(name: str) -> str:
    vocab_name, post = PIPELINES[name]
    document = json.loads(shipped_text(vocab_name))
    if post in ("template", "template-0"):
        document["post_processor"] = _template(document["model"]["vocab"], 1 if post == "template" else 0)
    elif post != "keep":
        document["post_processor"] = post
    return json.dumps(document)


@functools.cache
def _pair_of_tokenizers(name: str) -> tuple[HFTokenizer, object]:
    text = _document(name)
    return HFTokenizer.from_str(text), from_tokenizer_json(json.loads(text))


def _fields(encoding) -> tuple:
    """Everything an encoding carries, its overflowing pieces (and theirs) included."""
    return (
        list(encoding.ids),
        list(encoding.tokens),
        [tuple(o) for o in encoding.offsets],
        list(encoding.type_ids),
        list(encoding.attention_mask),
        list(encoding.special_tokens_mask),
        [_fields(piece) for piece in encoding.overflowing],
    )


LINES = [line for line in SAMPLE.read_text(encoding="utf-8").splitlines() if line.strip()]
LONG = " ".join(LINES[:6])  # ~120 tokens
OTHER = " ".join(LINES[6:9])


def _settings(full: bool) -> list[tuple]:
    """(strategy, direction, (max_length, stride), add_special_tokens, padding length)."""
    lengths = [(40, 7), (12, 2), (0, 0)]
    if not full:  # every strategy and direction; the other choices cycle
        cases = itertools.product(("longest_first", "only_first", "only_second"), ("right", "left"), lengths)
        return [(*case, k % 3 != 2, (None, 30)[k % 2]) for k, case in enumerate(cases)]
    lengths += [(3, 0), (40, 0), (16, 5), (9, 3), (2, 1), (64, 20), (5, 4), (1, 0), (200, 10)]
    return list(
        itertools.product(
            ("longest_first", "only_first", "only_second"), ("right", "left"), lengths, (False, True), (None, 30)
        )
    )


def _assert_like_tokenizers(name: str, full: bool) -> None:
    theirs, ours = _pair_of_tokenizers(name)
    pad_id = theirs.token_to_id("[PAD]") if theirs.token_to_id("[PAD]") is not None else theirs.token_to_id("<pad>")
    # a pair of long sequences gives (windows of A) x (windows of B) pieces: in the full run
    inputs = [(LONG, None), (LINES[3] + " " + LINES[4], LINES[2]), ("short", OTHER)]
    if full:
        inputs += [(LONG, OTHER), (OTHER, LONG), *zip(LINES[:6], LINES[1:7]), (" ".join(LINES), None)]
    compared = 0
    for strategy, direction, (max_length, stride), special, pad_to in _settings(full):
        try:
            theirs.enable_truncation(max_length, stride=stride, strategy=strategy, direction=direction)
        except Exception:
            with pytest.raises(ToktoolsError):
                ours.enable_truncation(max_length, strategy, direction, stride)
            continue
        ours.enable_truncation(max_length, strategy, direction, stride)
        if pad_to is None:
            theirs.no_padding()
            ours.no_padding()
        else:
            theirs.enable_padding(length=pad_to, pad_id=pad_id, pad_token="[PAD]")
            ours.enable_padding(length=pad_to, pad_id=pad_id, pad_token="[PAD]")
        for first, second in inputs:
            if second is not None and max_length < 40 and len(first) + len(second) > 150:
                continue  # tiny windows of two long sequences: tens of thousands of pieces, nothing new
            setting = (strategy, direction, max_length, stride, special, pad_to, first[:20], (second or "")[:20])
            try:
                expected = _fields(theirs.encode(first, second, add_special_tokens=special))
            except BaseException:  # tokenizers refuses (an error) or panics (PanicException)
                with pytest.raises(ToktoolsError):
                    ours.encode(first, second, add_special_tokens=special)
                continue
            assert _fields(ours.encode(first, second, add_special_tokens=special)) == expected, setting
            compared += 1
    assert compared > (1000 if full else 30)


#: the default run: one of each kind of post-processor code path (BERT's, RoBERTa's with offset
#: trimming, a template); every pipeline with ``-m full``
DEFAULT_PIPELINES = ("bert-processing", "roberta-processing", "template-b-type-0")


@pytest.mark.parametrize(
    "name", [n if n in DEFAULT_PIPELINES else pytest.param(n, marks=pytest.mark.full) for n in PIPELINES]
)
def test_truncation_with_stride_and_overflowing_like_tokenizers(name: str) -> None:
    _assert_like_tokenizers(name, full=False)


@pytest.mark.full
@pytest.mark.parametrize("name", list(PIPELINES))
def test_truncation_with_stride_and_overflowing_like_tokenizers_full(name: str) -> None:
    _assert_like_tokenizers(name, full=True)


def test_a_batch_pads_the_overflowing_pieces_to_the_longest_encoding() -> None:
    theirs, ours = _pair_of_tokenizers("bert-processing")
    for tokenizer in (theirs, ours):
        tokenizer.no_padding()
    theirs.enable_truncation(12, stride=2)
    ours.enable_truncation(12, "longest_first", "right", 2)
    theirs.enable_padding(pad_id=0, pad_token="[PAD]")
    ours.enable_padding(pad_id=0, pad_token="[PAD]")
    batch = [LONG, "short", (LINES[2], LINES[3])] * 50  # enough for worker processes
    expected = [_fields(e) for e in theirs.encode_batch(batch)]
    assert [_fields(e) for e in ours.encode_batch(batch, workers=1)] == expected
    assert [_fields(e) for e in ours.encode_batch(batch, workers=2)] == expected
    assert expected[0][6] and expected[2][6], "overflowing pieces to pad"


def test_stride_survives_convert_to_tokenizer_json(tmp_path: Path) -> None:
    """``convert --to tokenizer.json`` reset the stride to 0; now the truncation is written as
    read, and ``tokenizers`` reading the result encodes as it did before."""
    document = json.loads(_document("bert-processing"))
    document["truncation"] = {"direction": "Left", "max_length": 20, "strategy": "OnlyFirst", "stride": 5}
    source = tmp_path / "in"
    source.mkdir()
    (source / "tokenizer.json").write_text(json.dumps(document), encoding="utf-8")
    result = CliRunner().invoke(main, ["convert", str(source), "--to", "tokenizer.json", "-o", str(tmp_path / "out")])
    assert result.exit_code == 0, result.stderr
    written = tmp_path / "out" / "tokenizer.json"
    assert json.loads(written.read_text(encoding="utf-8"))["truncation"] == document["truncation"]
    before, after = HFTokenizer.from_file(str(source / "tokenizer.json")), HFTokenizer.from_file(str(written))
    assert _fields(after.encode(LONG, "a pair")) == _fields(before.encode(LONG, "a pair"))
    assert len(after.encode(LONG, "a pair").overflowing) > 1


def test_a_stride_tokenizers_refuses_is_refused() -> None:
    """``enable_truncation`` with a stride beyond max_length minus the template's tokens: an
    error in both (tokenizers: an exception; toktools: one line)."""
    theirs, ours = _pair_of_tokenizers("bert-processing")
    with pytest.raises(Exception):
        theirs.enable_truncation(10, stride=9)
    with pytest.raises(ToktoolsError, match="stride"):
        ours.enable_truncation(10, "longest_first", "right", 9)
