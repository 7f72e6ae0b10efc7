"""A sentencepiece ``.model`` is a tokenizer like any other: ``toktools.load``, ``encode``,
``decode``, ``compare``, ``inspect`` and ``convert`` take it (the file, or a directory holding
it) and give ``SentencePieceProcessor``'s ids.

The models are trained in the tests by ``SentencePieceTrainer`` on samples of the shared corpora
(:mod:`_spm_models`): unigram and BPE, with and without byte fallback, with user-defined and
control symbols. The held-out lines are English, Chinese and mixed, plus whitespace runs, emoji
and characters no model has seen.
"""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import pytest
from _spm_models import MODELS, held_out_lines, processor, train
from click.testing import CliRunner

import toktools
from toktools.cli import main
from toktools.sentencepiece.model_file import CONTROL, NORMAL, read_model, write_model

spm = pytest.importorskip("sentencepiece")
tokenizers = pytest.importorskip("tokenizers")

# Lines where sentencepiece and every tokenizer.json part ways (spec/unigram.md §6): a control
# piece written in the text (an added token for tokenizers), the shortest-match charsmap rule on
# a combining mark, and a 6-byte Bengali grapheme. Besides these, a float32 (sentencepiece) vs
# f64 (tokenizers.json) near-tie could resolve differently on a rare line; there is none here.
KNOWN_DIFFERENCES = {
    "<s> </s> <unk> literal control pieces",
    "Ａ\u0301 ﬁ ① ｶﾞ ㍻ fullwidth and compatibility",
    "ঘোষণা বাংলা",
}
NEAR_TIES = 0


def run(*args: str, input: str | None = None, env: dict[str, str] | None = None):
    return CliRunner().invoke(main, list(args), input=input, env=env, catch_exceptions=False)


def assert_one_line_error(result, *fragments: str) -> None:
    assert result.exit_code == 1, (result.exit_code, result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("toktools: error:"), result.stderr
    assert "Traceback" not in result.stderr
    for fragment in fragments:
        assert fragment in result.stderr, result.stderr


def model_path(name: str) -> Path:
    return train(name, **MODELS[name])


def lines_one_per_row() -> list[str]:
    """The held-out lines as the CLI reads them: one text per input line (no newline inside)."""
    return [part for line in held_out_lines(160) for part in line.split("\n") if part not in KNOWN_DIFFERENCES]


def differing(got: list[list[int]], expected: list[list[int]], lines: list[str]) -> list[str]:
    assert len(got) == len(expected) == len(lines)
    return [line for line, a, b in zip(lines, got, expected) if a != b]


# -- loading -------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(MODELS))
def test_load_a_model_file_gives_sentencepiece_ids(name):
    sp = processor(model_path(name))
    tokenizer = toktools.load(model_path(name))
    lines = [line for line in held_out_lines() if line not in KNOWN_DIFFERENCES]
    differ = differing([tokenizer.encode(line).ids for line in lines], [sp.encode(line) for line in lines], lines)
    assert len(differ) <= NEAR_TIES, differ[:3]
    assert tokenizer.vocab_size == sp.get_piece_size()


def test_a_directory_with_spiece_model_loads_it_and_its_config_adds_bos_eos(tmp_path):
    path = model_path("unigram_user")
    sp = processor(path)
    shutil.copy(path, tmp_path / "spiece.model")
    lines = [line for line in held_out_lines(60) if line not in KNOWN_DIFFERENCES]
    plain, from_the_file = toktools.load(tmp_path), toktools.load(path)
    assert [plain.encode(line).ids for line in lines] == [from_the_file.encode(line).ids for line in lines]
    # transformers' Llama/T5 settings beside the model: <s> … </s>, as encode(add_bos, add_eos)
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"add_bos_token": True, "add_eos_token": True}))
    both = toktools.load(tmp_path)
    expected = [sp.encode(line, add_bos=True, add_eos=True) for line in lines]
    differ = differing([both.encode(line).ids for line in lines], expected, lines)
    assert len(differ) <= NEAR_TIES, differ[:3]
    assert both.encode("x").ids[0] == sp.bos_id() and both.encode("x").ids[-1] == sp.eos_id()


def test_a_directory_with_one_other_model_file_loads_it_several_are_an_error(tmp_path):
    shutil.copy(model_path("bpe"), tmp_path / "my-bpe.model")
    assert toktools.load(tmp_path).encode("Hello 中文").ids == processor(model_path("bpe")).encode("Hello 中文")
    shutil.copy(model_path("unigram"), tmp_path / "other.model")
    assert_one_line_error(
        run("encode", "-t", str(tmp_path), input="x\n"), "several sentencepiece models", "my-bpe.model, other.model"
    )


def test_a_tokenizer_json_beside_the_model_wins(tmp_path):
    """transformers saves both (AlbertTokenizerFast): tokenizer.json carries the whole pipeline."""
    shutil.copy(model_path("unigram"), tmp_path / "spiece.model")
    tok = tokenizers.Tokenizer(tokenizers.models.WordLevel({"[UNK]": 0, "x": 1}, unk_token="[UNK]"))
    tok.save(str(tmp_path / "tokenizer.json"))
    assert toktools.load(tmp_path).model.type == "WordLevel"


# -- encode and decode ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(MODELS))
def test_cli_encode_gives_sentencepiece_ids(name, tmp_path):
    lines = lines_one_per_row()
    text = tmp_path / "text.txt"
    text.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = run("encode", "-t", str(model_path(name)), str(text))
    assert result.exit_code == 0, result.stderr
    got = [[int(i) for i in row.split()] for row in result.stdout.split("\n")[:-1]]
    sp = processor(model_path(name))
    differ = differing(got, [sp.encode(line) for line in lines], lines)
    assert len(differ) <= NEAR_TIES, differ[:3]
    tokens = run("encode", "-t", str(model_path(name)), "--format", "tokens", input="Hello  world\n").stdout.split()
    assert tokens == sp.encode("Hello  world", out_type=str)


@pytest.mark.parametrize("name", ["unigram", "unigram_bytes", "bpe_bytes", "unigram_user"])
def test_cli_decode_gives_sentencepiece_text(name, tmp_path):
    """Unknown characters included: sentencepiece writes its unk_surface (" ⁇ "), and so do we."""
    sp = processor(model_path(name))
    lines = lines_one_per_row()
    ids = [sp.encode(line) for line in lines]
    if not MODELS[name].get("byte_fallback"):
        assert sum(sp.unk_id() in row for row in ids) >= 1
    result = run("decode", "-t", str(model_path(name)), input="\n".join(" ".join(map(str, row)) for row in ids) + "\n")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.split("\n")[:-1] == [sp.decode(row).replace("\n", "\\n") for row in ids]


@pytest.mark.parametrize("name", sorted(MODELS))
def test_decode_of_any_ids_is_sentencepiece_decode(name):
    """Random id sequences: control pieces vanish, <unk> is " ⁇ ", leading "▁" pieces at the start
    are dropped, and a run of byte pieces is decoded character by character (an invalid byte is
    one U+FFFD, the valid characters around it stay)."""
    import random

    sp = processor(model_path(name))
    tokenizer = toktools.load(model_path(name))
    rng = random.Random(7)
    size = sp.get_piece_size()
    rows = [[rng.randrange(size) for _ in range(rng.randint(1, 10))] for _ in range(1500)]
    space = sp.piece_to_id("\u2581")
    rows += [[space, space, sp.piece_to_id("\u2581the")], [sp.unk_id(), sp.piece_to_id("\u2581the")], [1, 2, 1]]
    if MODELS[name].get("byte_fallback"):
        byte = {b: sp.piece_to_id(f"<0x{b:02X}>") for b in (0xE4, 0xB8, 0xAD, 0x41)}
        rows += [
            [byte[0xE4], byte[0xB8], byte[0xAD]],
            [byte[0xE4], byte[0xB8], byte[0x41], sp.piece_to_id("\u2581the")],
        ]
        assert sp.decode(rows[-1]) == "\ufffd\ufffdA the"
    assert [tokenizer.decode(row) for row in rows] == [sp.decode(row) for row in rows]
    assert tokenizer.decode([sp.unk_id()]) == " \u2047 "


def test_a_model_converted_to_tokenizer_json_decodes_as_tokenizers(tmp_path):
    """The sentencepiece decoder is for .model files: the tokenizer.json written from one holds
    tokenizers' chain, and loads back decoding as tokenizers does ("<unk>" stays "<unk>")."""
    sp = processor(model_path("unigram"))
    assert run("convert", str(model_path("unigram")), "--to", "tokenizer.json", "-o", str(tmp_path)).exit_code == 0
    document = json.loads((tmp_path / "tokenizer.json").read_text(encoding="utf-8"))
    assert [d["type"] for d in document["decoder"]["decoders"]] == ["Replace", "Fuse", "Strip"]
    theirs = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    ours = toktools.load(tmp_path / "tokenizer.json")
    rows = [sp.encode(line) for line in lines_one_per_row()]
    assert any(sp.unk_id() in row for row in rows)
    assert [ours.decode(row) for row in rows] == [theirs.decode(row) for row in rows]
    assert ours.decode([sp.unk_id()]) == "<unk>"


def test_cli_compare_puts_two_models_side_by_side():
    unigram, bpe = str(model_path("unigram")), str(model_path("bpe"))
    text = "Tokenizers cut 中文 text  differently 😀"
    result = run("compare", unigram, bpe, text, "--json")
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout)
    rows = document["alignment"]["rows"]
    assert len(rows) == 2
    for row, path in zip(rows, (unigram, bpe)):
        assert [span["id"] for span in row["spans"]] == processor(Path(path)).encode(text)
    assert run("compare", unigram, bpe, text, env={"NO_COLOR": "1"}).exit_code == 0


# -- inspect -------------------------------------------------------------------------------------


def test_inspect_shows_pieces_with_their_scores():
    path = model_path("unigram_bytes")
    sp = processor(path)
    model = read_model(path)
    normal = sorted(((p.score, -i, i) for i, p in enumerate(model.pieces) if p.type == NORMAL), reverse=True)
    result = run("inspect", str(path), "--json", "--top", "5")
    assert result.exit_code == 0, result.stderr
    scores = json.loads(result.stdout)["scores"]
    assert [e["id"] for e in scores["highest"]] == [i for _, _, i in normal[:5]]
    assert [e["token"] for e in scores["highest"]] == [sp.id_to_piece(i) for _, _, i in normal[:5]]
    assert scores["highest"][0]["score"] == pytest.approx(sp.get_score(normal[0][2]), abs=1e-6)
    assert scores["max"] == pytest.approx(max(p.score for p in model.pieces if p.type == NORMAL), abs=1e-6)
    assert scores["min"] == pytest.approx(min(p.score for p in model.pieces if p.type == NORMAL), abs=1e-6)
    lowest = sorted(((p.score, i) for i, p in enumerate(model.pieces) if p.type == NORMAL))[0]
    assert scores["lowest"][0]["score"] == pytest.approx(lowest[0], abs=1e-6)
    plain = run("inspect", str(path), "--top", "5", env={"NO_COLOR": "1"}).stdout
    assert "highest scores" in plain and "lowest scores" in plain
    top_piece = sp.id_to_piece(normal[0][2]).replace("▁", " ")
    assert f"{sp.get_score(normal[0][2]):.6f}  «{top_piece}»" in plain


def test_inspect_token_shows_its_score():
    path = model_path("unigram")
    sp = processor(path)
    piece = sp.encode("the", out_type=str)[0]
    token_id = sp.piece_to_id(piece)
    document = json.loads(run("inspect", str(path), "--token", piece, "--json").stdout)
    assert document["id"] == token_id and document["score"] == sp.get_score(token_id)
    plain = run("inspect", str(path), "--id", str(token_id), env={"NO_COLOR": "1"}).stdout
    assert f"score         {sp.get_score(token_id)!r}" in plain
    # the text a piece stands for finds it too: " the" is "▁the"
    as_text = json.loads(run("inspect", str(path), "--token", piece.replace("▁", " "), "--json").stdout)
    assert piece.startswith("▁") and as_text["id"] == token_id


def test_inspect_scores_are_only_for_models_that_have_them():
    document = json.loads(run("inspect", str(model_path("bpe")), "--json").stdout)
    assert "scores" not in document and "score" not in document["longest"][0]


# -- convert -------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["unigram", "unigram_bytes", "unigram_user", "unigram_cf"])
def test_convert_to_spiece_model_gives_the_same_ids_in_sentencepiece(name, tmp_path):
    out = tmp_path / "out"
    result = run("convert", str(model_path(name)), "--to", "spiece.model", "-o", str(out))
    assert result.exit_code == 0, result.stderr
    original, written = processor(model_path(name)), processor(out / "spiece.model")
    lines = held_out_lines()
    assert [written.encode(line, add_bos=True, add_eos=True) for line in lines] == [
        original.encode(line, add_bos=True, add_eos=True) for line in lines
    ]
    # and through tokenizer.json: .model -> tokenizer.json -> spiece.model
    assert run("convert", str(model_path(name)), "--to", "tokenizer.json", "-o", str(tmp_path / "json")).exit_code == 0
    result = run("convert", str(tmp_path / "json"), "--to", "spiece.model", "-o", str(tmp_path / "again"))
    assert result.exit_code == 0, result.stderr
    again = processor(tmp_path / "again" / "spiece.model")
    assert [again.encode(line) for line in lines] == [original.encode(line) for line in lines]


@pytest.mark.parametrize("name", ["unigram_user", "bpe_bytes"])
def test_convert_to_tokenizer_json_loads_in_tokenizers_with_sentencepiece_ids(name, tmp_path):
    result = run("convert", str(model_path(name)), "--to", "tokenizer.json", "-o", str(tmp_path))
    assert result.exit_code == 0, result.stderr
    tok = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    sp = processor(model_path(name))
    lines = [line for line in held_out_lines() if line not in KNOWN_DIFFERENCES]
    differ = differing([tok.encode(line).ids for line in lines], [sp.encode(line) for line in lines], lines)
    assert len(differ) <= NEAR_TIES, differ[:3]


def test_convert_a_trained_unigram_tokenizer_to_spiece_model(tmp_path):
    """A Metaspace + Unigram tokenizer.json (what UnigramTrainer gives) as a .model."""
    from conftest import read_corpus_sample

    trainer = tokenizers.trainers.UnigramTrainer(
        vocab_size=800, unk_token="<unk>", special_tokens=["<unk>", "<s>", "</s>"], show_progress=False
    )
    tok = tokenizers.Tokenizer(tokenizers.models.Unigram())
    tok.pre_tokenizer = tokenizers.pre_tokenizers.Metaspace()
    tok.decoder = tokenizers.decoders.Metaspace()
    tok.train_from_iterator(read_corpus_sample("mixed_sample.txt", 40_000).splitlines(), trainer)
    tok.save(str(tmp_path / "tokenizer.json"))
    result = run("convert", str(tmp_path / "tokenizer.json"), "--to", "spiece.model", "-o", str(tmp_path / "spm"))
    assert result.exit_code == 0, result.stderr
    sp = processor(tmp_path / "spm" / "spiece.model")
    assert [sp.id_to_piece(i) for i in range(3)] == ["<unk>", "<s>", "</s>"] and sp.is_control(1)
    # Metaspace adds no "▁" to text that already starts with one (a leading space), sentencepiece's
    # dummy prefix always does: a .model cannot say otherwise. "<s>" in text is an added token.
    lines = [line for line in held_out_lines() if "<s>" not in line]
    differ = differing([sp.encode(line) for line in lines], [tok.encode(line).ids for line in lines], lines)
    assert differ == [line for line in lines if line.startswith(" ")]


def test_convert_spiece_model_output_rules(tmp_path):
    path = model_path("unigram")
    out = tmp_path / "out"
    assert run("convert", str(path), "--to", "spiece.model", "-o", str(out)).exit_code == 0
    before = (out / "spiece.model").read_bytes()
    assert_one_line_error(run("convert", str(path), "--to", "spiece.model", "-o", str(out)), "--force")
    assert (out / "spiece.model").read_bytes() == before
    assert run("convert", str(path), "--to", "spiece.model", "-o", str(out), "--force").exit_code == 0
    assert sorted(p.name for p in out.iterdir()) == ["spiece.model"]  # no temporary file left behind
    # never over the input, even with --force
    assert_one_line_error(run("convert", str(out / "spiece.model"), "--to", "spiece.model", "-o", str(out), "--force"))
    assert (out / "spiece.model").read_bytes() == before


def test_convert_refuses_what_sentencepiece_cannot_hold(tmp_path):
    assert_one_line_error(
        run("convert", str(model_path("bpe")), "--to", "spiece.model", "-o", str(tmp_path / "a")), "only Unigram"
    )
    assert not (tmp_path / "a" / "spiece.model").exists()
    assert_one_line_error(run("convert", "wordpiece-30k", "--to", "spiece.model", "-o", str(tmp_path / "b")))


# -- bad input -----------------------------------------------------------------------------------


def _bad_models(tmp_path: Path) -> dict[str, Path]:
    good = model_path("unigram").read_bytes()
    files = {}
    files["truncated"] = tmp_path / "truncated.model"
    files["truncated"].write_bytes(good[: len(good) // 3])
    files["foreign"] = tmp_path / "foreign.model"
    files["foreign"].write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)))
    files["text"] = tmp_path / "text.model"
    files["text"].write_text("this is not a model\n")
    # one piece whose text is not UTF-8 (field 1 = piece, then field 2 = score 0.0)
    piece = b"\x0a\x02\xff\xfe" + b"\x15" + struct.pack("<f", 0.0)
    files["invalid UTF-8"] = tmp_path / "utf8.model"
    files["invalid UTF-8"].write_bytes(good + b"\x0a" + bytes([len(piece)]) + piece)
    for kind, number in (("word", 3), ("char", 4)):
        model = read_model(model_path("unigram"))
        model.trainer_spec.set("model_type", number)
        files[kind] = tmp_path / f"{kind}.model"
        write_model(model, files[kind])
    return files


@pytest.mark.parametrize("command", ["encode", "inspect", "convert", "decode", "compare"])
def test_bad_models_are_one_line_errors(command, tmp_path):
    for kind, path in _bad_models(tmp_path).items():
        args = {
            "encode": ["encode", "-t", str(path)],
            "decode": ["decode", "-t", str(path)],
            "inspect": ["inspect", str(path)],
            "compare": ["compare", str(path), str(model_path("unigram")), "x"],
            "convert": ["convert", str(path), "--to", "tokenizer.json", "-o", str(tmp_path / "out")],
        }[command]
        result = run(*args, input="1 2\n")
        assert_one_line_error(result, str(path))
        if kind in ("word", "char"):
            assert f"type {kind!r} is not supported" in result.stderr
        elif kind == "invalid UTF-8":
            assert "is not valid UTF-8" in result.stderr
        else:
            assert "not a sentencepiece model" in result.stderr
    assert not (tmp_path / "out").exists()


def test_a_control_piece_written_in_the_text_is_a_special_token_only_under_the_tokenizers_rule():
    """sentencepiece spells "<cls>" typed in the text with ordinary pieces, and so does
    ``toktools.load`` by default; under ``model_rule="tokenizers"`` it is a special token, as in
    tokenizers (and transformers' converted tokenizers)."""
    path = model_path("unigram_user")
    sp = processor(path)
    cls = sp.piece_to_id("<cls>")
    assert read_model(path).pieces[cls].type == CONTROL
    assert toktools.load(path).encode("a <cls> b").ids == sp.encode("a <cls> b")
    tokenizer = toktools.load(path, model_rule="tokenizers")
    ids = tokenizer.encode("a <cls> b").ids
    assert cls in ids and cls not in sp.encode("a <cls> b")
    assert tokenizer.decode(ids) == sp.decode(sp.encode("a b")) == "a b"
