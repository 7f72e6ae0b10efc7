"""``toktools.load(x.model)`` gives ``SentencePieceProcessor.encode``'s ids on every line (issue 25):
long documents, near-ties built on purpose, user-defined pieces, adversarial strings, and the
corpus path; ``model_rule="tokenizers"`` keeps the converted pipeline."""

from __future__ import annotations

import itertools
import json
import random

import pytest
from _spm_models import MODELS, processor, train
from real_shapes import chinese_paragraphs, long_documents

import toktools
from toktools.errors import ToktoolsError
from toktools.parts.unigram import f32
from toktools.sentencepiece.encode import RULES, load_encoder, version_rules
from toktools.sentencepiece.model_file import BYTE, NORMAL, USER_DEFINED, SentencePiece, read_model, write_model

#: pieces typed in the text that a tokenizer.json pipeline treats otherwise than sentencepiece:
#: control pieces, grapheme extenders (ZWJ/ZWNJ, half-width voiced marks, combining marks),
#: compatibility characters, whitespace of every kind
ATOMS = [
    *("<s>", "</s>", "<unk>", "<cls>", "<mask>", "[SEP]", "中文", "\u200d", "\u200c", "ﾞ", "ﾟ", "ｶ", "ｸﾞ"),
    *("\u0301", "\u0308", "\u0323", "\u094d", "ﬁ", "①", "㍻", "Å", "Ａ", "º", "ß", "İ", "ঘ", "\ufeff"),
    *(" ", "  ", "\t", "\n", "\u3000", "\xa0", "▁", "a", "b", "e", "the", "ing", "x", "0", "12"),
    *("中", "文", "。", "😀", "👩\u200d👩\u200d👧", "-", ".", "_", "*", "="),
]


def adversarial_strings(count: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(ATOMS) for _ in range(rng.randint(1, 12))) for _ in range(count)]


def ids_of(tokenizer, texts):
    return [e.ids for e in tokenizer.encode_batch(texts, add_special_tokens=False, workers=1)]


def tie_model(path, seed: int = 0):
    """A Unigram model over ``▁abc`` whose longer pieces score the sum of their characters'
    scores, or that sum nudged by 1e-7..0.5: exact ties and float32 near-ties everywhere."""
    model = read_model(train("unigram", **MODELS["unigram"]))
    rng = random.Random(seed)
    specials = [p for p in model.pieces if p.type not in (NORMAL, BYTE)]
    single = {ch: f32(-rng.uniform(2, 6)) for ch in "▁abc"}
    pieces = [SentencePiece(ch, score) for ch, score in single.items()]
    for n in (2, 3, 4):
        for combo in itertools.product("▁abc", repeat=n):
            piece = "".join(combo)
            if "▁" in piece[1:] or rng.random() < 0.3:
                continue
            nudge = rng.choice([0.0, 0.0, 1e-7, -1e-7, 1e-6, -1e-6, 1e-4, -1e-4, 0.5, -0.5])
            pieces.append(SentencePiece(piece, f32(sum(single[c] for c in piece) + nudge)))
    model.pieces = specials + pieces
    write_model(model, path)
    return path


def tie_texts(count: int, lengths: tuple[int, ...], seed: int = 1) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice("abc  ") for _ in range(rng.choice(lengths))) for _ in range(count)]


@pytest.mark.parametrize("lengths", [(50, 2_000, 150_000)])
def test_near_ties_in_long_lines(tmp_path, lengths):
    """float32 sums over the whole line, 0.2.3's rescaling past ±1e5 and its tie rule: the same
    ids as sentencepiece on lines up to 150,000 characters full of (near-)ties. The 0.2.1 rules
    (double comparisons, no rescaling) give other ids on these lines, so the test bites."""
    path = tie_model(tmp_path / "ties.model")
    sp, tokenizer = processor(path), toktools.load(path)
    texts = tie_texts(6, lengths)
    want = [sp.encode(text) for text in texts]
    assert tokenizer.ids_batch(texts) == want  # what corpus encoding calls
    assert ids_of(tokenizer, texts[:3]) == want[:3]  # Encodings, offsets and all
    if version_rules().version == "0.2.3":
        old = load_encoder(path, RULES["0.2.1"])
        assert any(old.encode(text) != ids for text, ids in zip(texts, want))


@pytest.mark.full
def test_near_ties_in_long_lines_many(tmp_path):
    path = tie_model(tmp_path / "ties.model", seed=3)
    sp, tokenizer = processor(path), toktools.load(path)
    texts = tie_texts(40, (50, 1_000, 20_000, 60_000, 200_000), seed=4)
    assert tokenizer.ids_batch(texts) == [sp.encode(text) for text in texts]


def test_user_defined_pieces_score_as_the_installed_version(tmp_path):
    """Issue 25's example: user-defined ``Q``, normal ``QZ`` (-3.0) and ``Z`` (-2.95). 0.2.3
    scores ``Q`` 0.1 * (1 - 1) = 0, so ``Q Z`` (-2.95) beats ``QZ``; 0.2.1 scores it
    ``max_score - 0.1`` and keeps ``QZ``."""
    model = read_model(train("unigram", **MODELS["unigram"]))
    specials = [p for p in model.pieces if p.type not in (NORMAL, BYTE)]
    model.pieces = specials + [
        SentencePiece("Q", 0.0, USER_DEFINED),
        SentencePiece("QZ", -3.0),
        SentencePiece("Z", -2.95),
        SentencePiece("▁", -1.0),
    ]
    path = tmp_path / "user.model"
    write_model(model, path)
    sp = processor(path)
    ids = {p.piece: i for i, p in enumerate(model.pieces)}
    want = sp.encode("QZ")
    assert ids_of(toktools.load(path), ["QZ", "Q QZ Z"]) == [want, sp.encode("Q QZ Z")]
    if version_rules().version == "0.2.3":
        assert want == [ids["▁"], ids["Q"], ids["Z"]]
        assert load_encoder(path, RULES["0.2.1"]).encode("QZ") == [ids["▁"], ids["QZ"]]


@pytest.mark.parametrize("name", ["unigram_user", "unigram_cf", "bpe_bytes"])
def test_adversarial_strings(name):
    """Control pieces typed in the text, grapheme extenders, compatibility characters: 0
    differences (the tokenizer.json pipeline differs on several of these)."""
    path = train(name, **MODELS[name])
    sp = processor(path)
    texts = adversarial_strings(1_000, seed=sum(map(ord, name)))
    want = [sp.encode(text) for text in texts]
    assert ids_of(toktools.load(path), texts) == want
    converted = ids_of(toktools.load(path, model_rule="tokenizers"), texts)
    assert converted != want  # the tokenizers rule is another rule on these strings


@pytest.mark.full
@pytest.mark.parametrize("name", list(MODELS))
def test_adversarial_strings_many(name):
    path = train(name, **MODELS[name])
    sp = processor(path)
    texts = adversarial_strings(20_000, seed=7)
    assert ids_of(toktools.load(path), texts) == [sp.encode(text) for text in texts]


def test_documents_of_20k_to_200k_characters(tmp_path):
    """Real documents as whole lines, English and Chinese: sentencepiece's ids."""
    path = train("unigram_user", **MODELS["unigram_user"])
    sp, tokenizer = processor(path), toktools.load(path)
    english = long_documents(tmp_path / "long.txt", count=2).read_text(encoding="utf-8").splitlines()
    chinese = chinese_paragraphs(tmp_path / "zh.txt", count=3).read_text(encoding="utf-8").splitlines()
    texts = english + chinese
    assert max(map(len, texts)) >= 20_000
    assert tokenizer.ids_batch(texts) == [sp.encode(text) for text in texts]


@pytest.mark.full
@pytest.mark.parametrize("name", list(MODELS))
def test_documents_every_model(tmp_path, name):
    path = train(name, **MODELS[name])
    sp, tokenizer = processor(path), toktools.load(path)
    texts = long_documents(tmp_path / "long.txt", count=12).read_text(encoding="utf-8").splitlines()
    texts += chinese_paragraphs(tmp_path / "zh.txt", count=40).read_text(encoding="utf-8").splitlines()
    assert tokenizer.ids_batch(texts) == [sp.encode(text) for text in texts]


def test_corpus_encode_writes_sentencepiece_ids(tmp_path):
    """``toktools encode -t x.model --format npy``: the ids of ``SentencePieceProcessor.encode``
    per document (one per line), as the corpus path writes them."""
    import numpy as np
    from click.testing import CliRunner

    from toktools.cli import main

    path = tie_model(tmp_path / "ties.model")
    texts = tie_texts(4, (100, 30_000)) + adversarial_strings(50)
    texts = [t.replace("\n", " ") for t in texts]
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(texts) + "\n", encoding="utf-8")
    out = tmp_path / "ids.npy"
    args = ["encode", "-t", str(path), str(corpus), "--format", "npy", "-o", str(out), "--no-progress"]
    result = CliRunner().invoke(main, [*args, "--engine", "reference", "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["engine"] == "reference"
    sp = processor(path)
    want = [i for text in texts for i in sp.encode(text)]
    assert np.load(out).tolist() == want


def test_model_rule_is_checked():
    path = train("unigram", **MODELS["unigram"])
    with pytest.raises(ToktoolsError, match="model rule 'fast'"):
        toktools.load(path, model_rule="fast")
    assert type(toktools.load(path, model_rule="tokenizers")).__name__ == "Tokenizer"


def test_offsets_point_at_the_original_text():
    path = train("unigram", **MODELS["unigram"])
    tokenizer, sp = toktools.load(path), processor(path)
    text = "  Hello   world, again"
    encoding = tokenizer.encode(text)
    assert encoding.ids == sp.encode(text)
    assert [text[a:b].strip() for a, b in encoding.offsets if text[a:b].strip()]
    assert "".join(text[a:b] for a, b in encoding.offsets).split() == text.split()


def test_the_sentencepiece_engine_gives_sentencepiece_ids():
    """The engine ``auto`` takes for a ``.model`` when sentencepiece is installed; a tokenizer
    that is not a ``.model`` is refused in one line."""
    from toktools.corpus.prepared_tokenizer import load_document
    from toktools.engines.choice import make_engine

    path = train("unigram_bytes", **MODELS["unigram_bytes"])
    document, _ = load_document(str(path))
    engine = make_engine("auto", document)
    assert engine.name == "sentencepiece"
    texts = adversarial_strings(200, seed=3)
    assert engine.encode_batch(texts) == [processor(path).encode(text) for text in texts]
    with pytest.raises(ToktoolsError, match="sentencepiece .model tokenizers only"):
        make_engine("sentencepiece", toktools.load(path, model_rule="tokenizers").to_tokenizer_json())


@pytest.mark.full
def test_the_sentencepiece_engine_writes_the_reference_shards(tmp_path):
    """``--engine sentencepiece`` (SentencePieceProcessor on every core), checked by ``--verify``,
    writes the reference's bytes; ``auto`` takes it; a tokenizer that is not a ``.model`` is
    refused in one line."""
    from click.testing import CliRunner

    from toktools.cli import main

    path = train("unigram", **MODELS["unigram"])
    texts = tie_texts(2, (100, 5_000)) + [t.replace("\n", " ") for t in adversarial_strings(60)]
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(texts) + "\n", encoding="utf-8")
    written = {}
    for engine in ("sentencepiece", "reference", "auto"):
        out = tmp_path / engine
        args = ["encode", "-t", str(path), str(corpus), "--format", "megatron", "-o", str(out), "--engine", engine]
        result = CliRunner().invoke(main, [*args, "--verify", "8", "--json", "--no-progress"], catch_exceptions=False)
        assert result.exit_code == 0, result.stderr
        summary = json.loads(result.stdout)
        written[engine] = summary["engine"], (tmp_path / f"{engine}.bin").read_bytes()
    assert written["sentencepiece"][1] == written["reference"][1] == written["auto"][1]
    assert written["auto"][0] == "sentencepiece"
    json_tokenizer = tmp_path / "json"
    CliRunner().invoke(main, ["convert", str(path), "--to", "tokenizer.json", "-o", str(json_tokenizer)])
    args = ["encode", "-t", str(json_tokenizer), str(corpus), "--format", "npy", "-o", str(tmp_path / "x.npy")]
    result = CliRunner().invoke(main, [*args, "--engine", "sentencepiece"])
    assert result.exit_code == 1 and "sentencepiece .model tokenizers only" in result.stderr


@pytest.mark.parametrize("name", ["unigram_user", "bpe_bytes"])
def test_inspect_lists_pieces_by_type_as_sentencepiece_has_them(name):
    """Control, unknown, byte and user-defined pieces, as sentencepiece reports them (the last
    from the training options); ``<unk>`` among the special tokens; no GPT-2 byte symbols."""
    from toktools.analysis.token_anatomy import token_info
    from toktools.analysis.vocabulary import vocab_stats

    path = train(name, **MODELS[name])
    sp = processor(path)
    every = range(sp.get_piece_size())
    expected = {
        "CONTROL": [(sp.id_to_piece(i), i) for i in every if sp.is_control(i)],
        "UNKNOWN": [(sp.id_to_piece(i), i) for i in every if sp.is_unknown(i)],
        "BYTE": [(sp.id_to_piece(i), i) for i in every if sp.is_byte(i)],
        "USER_DEFINED": sorted(
            ((s, sp.piece_to_id(s)) for s in MODELS[name].get("user_defined_symbols", [])), key=lambda x: x[1]
        ),
    }
    tokenizer = toktools.load(path)
    stats = vocab_stats(tokenizer)
    assert stats.piece_types is not None
    assert {k: stats.piece_types[k] for k in expected} == expected
    assert not stats.piece_types["UNUSED"]
    unk = sp.unk_id()
    assert (sp.id_to_piece(unk), unk) in stats.special_tokens
    assert "byte symbols" not in token_info(tokenizer, "▁the").render_plain()
    assert token_info(tokenizer, unk).piece_type == "UNKNOWN"
