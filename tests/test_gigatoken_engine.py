"""The gigatoken engine (issue 23): where its ids equal ``tokenizers``', the probes behind each
acceptance, the fallback with its reason, and identical shards from gigatoken, tiktoken (with E4
as a filter) and the reference on the shared corpora, a fuzz corpus, GPT-2 from bare files and
vocabularies with planted unreachable tokens."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import read_corpus_sample, ref_vocab_dir

from toktools.cli import main
from toktools.corpus.encode import encode_corpus
from toktools.engines.analysis import analyse
from toktools.engines.base import corpus_document
from toktools.engines.choice import make_engine
from toktools.engines.gigatoken_probe import (
    _probe_document,
    adversarial_texts,
    gigatoken_classes,
    tokenizers_classes,
    unicode_disagreements,
)
from toktools.errors import ToktoolsError
from toktools.formats import load
from toktools.models.bpe.byte_symbols import text_to_symbols

pytest.importorskip("gigatoken")
pytest.importorskip("tiktoken")

ENGINES = ("gigatoken", "tiktoken", "reference")


def _doc(name: str) -> dict:
    return corpus_document(load(name).to_tokenizer_json())


def small_doc(*extra: str) -> dict:
    """A small byte-level BPE (the probe vocabulary, merges of "a", "1" and "!" with any byte,
    and ``extra`` tokens) with two added tokens: cheap to probe, so a test may make a new one."""
    doc = _probe_document("a1!")
    vocab = doc["model"]["vocab"]
    for token in extra:
        vocab[token] = len(vocab)
    doc["added_tokens"] = [
        {
            "id": len(vocab) + i,
            "content": c,
            "single_word": False,
            "lstrip": False,
            "rstrip": False,
            "normalized": False,
            "special": True,
        }
        for i, c in enumerate(["<s>", "</s>"])
    ]
    return doc


def shards(path: Path, tokenizer: object, out: Path, engine: str, **options: object) -> tuple[str, list[bytes], str]:
    """The files of one run (bytes, in order) and its manifest's shard list."""
    (out / engine).mkdir(parents=True, exist_ok=True)
    result = encode_corpus([path], tokenizer, out / engine / "s", engine=engine, force=True, **options)
    files = [p.read_bytes() for p in result.outputs]
    manifest = result.manifest.read_text() if result.manifest else "{}"
    return result.engine, files, json.dumps(json.loads(manifest).get("shards"))


def same_shards_on_every_engine(path: Path, tokenizer: object, out: Path, engines=ENGINES, **options) -> None:
    options = {"format": "megatron", "shard_tokens": 50_000, "prepend_bos": False, **options}
    runs = {engine: shards(path, tokenizer, out, engine, **options) for engine in engines}
    for engine, (used, files, manifest) in runs.items():
        assert used == engine
        assert files == runs[engines[0]][1], f"{engine} wrote other bytes than {engines[0]}"
        assert manifest.replace(f'"{engine}"', "E") == runs[engines[0]][2].replace(f'"{engines[0]}"', "E")


# ---------------------------------------------------------------------------------------------
# Unicode: gigatoken's classes against tokenizers', measured two ways
# ---------------------------------------------------------------------------------------------


def test_the_class_sweep_finds_exactly_where_gigatoken_and_tokenizers_split_differently(unicode_scalars) -> None:
    """The sweep reads gigatoken's class of every code point and compares it with
    ``tokenizers``' tables; here the ids of both libraries on the spec's six contexts (a probe
    vocabulary where every boundary shows in the ids) differ on exactly those code points."""
    import tokenizers

    points = [c for c in unicode_scalars if c < 0x110000]
    excluded = set(unicode_disagreements())
    assert excluded and all(c >= 0x80 for c in excluded)  # gigatoken 0.10: the letters of Unicode 17
    doc = _probe_document("a1! \t")
    hf = tokenizers.Tokenizer.from_str(json.dumps(doc))
    engine = make_engine("gigatoken", doc)
    probe = set(list(excluded)[::50]) | set(points)
    texts = [f"a{chr(c)} 1{chr(c)} !{chr(c)}  {chr(c)}\t{chr(c)} {chr(c)}a" for c in sorted(probe)]
    engine._excluded_table = None  # no routing: gigatoken's own ids on every text
    ours = engine.encode_batch(texts)
    theirs = [e.ids for e in hf.encode_batch(texts, add_special_tokens=False)]
    differing = {c for c, a, b in zip(sorted(probe), ours, theirs) if a != b}
    assert differing == probe & excluded
    assert (gigatoken_classes([0x41, 0x31, 0x21, 0x20]) == [1, 2, 0, 3]).all()
    assert list(tokenizers_classes()[[0x41, 0x31, 0x21, 0x20]]) == [1, 2, 0, 3]


def test_the_byte_check_finds_exactly_the_blocks_with_an_excluded_code_point() -> None:
    """``block_needs_routing`` reads lead bytes, not characters: every excluded code point is
    found (alone in a block, amid text), and no other code point that starts with the same byte
    is (all of them in one block, and each neighbour of an excluded one alone)."""
    engine = make_engine("gigatoken", _doc("bytebpe-50k"))
    excluded = set(unicode_disagreements())
    for c in sorted(excluded):
        assert engine.block_needs_routing(f"text \u00e9 {chr(c)}x\n".encode()), hex(c)
    leads = {chr(c).encode()[0] for c in excluded}
    same_lead = [
        c
        for c in range(0x800, 0x110000)
        if not 0xD800 <= c < 0xE000 and c not in excluded and chr(c).encode()[0] in leads
    ]
    assert not engine.block_needs_routing(("\n".join(map(chr, same_lead)) + "\n").encode())
    for c in sorted({c + d for c in excluded for d in (-1, 1)} - excluded):
        assert not engine.block_needs_routing(f"{chr(c)}\n".encode()), hex(c)


@pytest.mark.full
def test_documents_with_an_excluded_code_point_go_to_tokenizers() -> None:
    doc = _doc("bytebpe-50k")
    engine = make_engine("gigatoken", doc)
    unicode17 = chr(sorted(unicode_disagreements())[-1])
    texts = ["plain text", f"x{unicode17}y and more", "中文"]
    ids = engine.encode_batch(texts)
    assert engine.fallback_documents == 1
    assert ids == make_engine("tokenizers", doc).encode_batch(texts)
    assert ids[1] == make_engine("tiktoken", doc).encode_batch([texts[1]])[0]
    surrogate = ["a\ud800b", "plain"]  # repaired as tiktoken repairs it
    assert engine.encode_batch(surrogate) == make_engine("tiktoken", doc).encode_batch(surrogate)


# ---------------------------------------------------------------------------------------------
# Acceptance, probe, cache, fallback
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "change, reason",
    [
        (lambda d: d.update(normalizer={"type": "Lowercase"}), "normalizer"),
        (lambda d: d["pre_tokenizer"].update(use_regex=False), "use_regex"),
        (lambda d: d["model"].update(dropout=0.1), "dropout"),
        (lambda d: d["model"].update(continuing_subword_prefix="##"), "continuing_subword_prefix"),
        (lambda d: d["added_tokens"][0].update(single_word=True), "single_word"),
        (lambda d: d["added_tokens"][0].update(normalized=True), "mix normalized"),
        (lambda d: d["model"]["merges"].append(d["model"]["merges"][0]), "two merges make"),
        (lambda d: d["model"]["vocab"].update({"中": 60_000}), "byte symbols"),
        # tokenizers numbers added tokens missing from the vocabulary itself (the probe found it)
        (lambda d: d["model"]["vocab"].update({"Ġplanted": 70_000}), "in the file, 1025 in tokenizers"),
    ],
)
def test_a_tokenizer_gigatoken_cannot_take_falls_back_with_the_reason(change, reason) -> None:
    doc = small_doc()
    change(doc)
    with pytest.raises(ToktoolsError, match=f"gigatoken is not exact for this tokenizer: .*{reason}"):
        make_engine("gigatoken", doc)
    if reason == "continuing_subword_prefix":
        return  # (tokenizers 0.23.3 panics on this byte-level vocabulary with a prefix)
    try:
        auto = make_engine("auto", doc, workers=1)
    except ToktoolsError:
        return  # (nothing loads it: tokenizers refuses it too)
    assert auto.name != "gigatoken" and "gigatoken: engine gigatoken is not exact" in auto.why and reason in auto.why
    auto.close()


def test_the_probe_catches_what_the_conditions_would_miss(monkeypatch) -> None:
    """``use_regex=false`` makes ``tokenizers`` take the whole text as one piece; gigatoken splits it
    anyway. With the configuration check switched off, the probe alone refuses it."""
    monkeypatch.setattr("toktools.engines.gigatoken_engine.configuration_reason", lambda shape: None)
    monkeypatch.setattr("toktools.engines.gigatoken_probe._verdicts", {})
    monkeypatch.setenv("TOKTOOLS_CACHE_DIR", "")
    doc = small_doc()
    doc["pre_tokenizer"]["use_regex"] = False
    with pytest.raises(ToktoolsError, match="gigatoken differs from tokenizers on"):
        make_engine("gigatoken", doc)


def test_the_verdict_is_kept_per_tokenizer_and_gigatoken_version(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("TOKTOOLS_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr("toktools.engines.gigatoken_probe._verdicts", {})
    doc = small_doc("ĠtoktoolsGiga")  # a tokenizer of its own (another fingerprint)
    assert make_engine("gigatoken", doc).name == "gigatoken"
    [kept] = (tmp_path / "gigatoken-verdict").iterdir()
    assert json.loads(kept.read_text()) == {"reason": None}
    monkeypatch.setattr("toktools.engines.gigatoken_probe._verdicts", {})
    monkeypatch.setattr("toktools.engines.gigatoken_probe.probe_gigatoken", lambda *a: pytest.fail("probed again"))
    assert make_engine("gigatoken", doc).name == "gigatoken"


@pytest.mark.full
def test_verbose_says_which_engine_and_why(tmp_path) -> None:
    corpus = tmp_path / "c.txt"
    corpus.write_text(read_corpus_sample("mixed_sample.txt", 20_000), encoding="utf-8")
    doc = json.loads((ref_vocab_dir("gpt2") / "tokenizer.json").read_text(encoding="utf-8"))
    doc["normalizer"] = {"type": "NFC"}
    odd = tmp_path / "nfc.json"
    odd.write_text(json.dumps(doc), encoding="utf-8")
    for tokenizer, engine, why in (
        (str(ref_vocab_dir("gpt2")), "tiktoken (proven)", "expected"),  # 20 KB: tiktoken starts sooner
        # 20 KB: the engines that start sooner come first; gigatoken's refusal: test_a_tokenizer_gigatoken_cannot_take_...
        (str(odd), "", "tiktoken: engine tiktoken is not exact for this tokenizer: normalizer 'NFC'"),
    ):
        result = CliRunner().invoke(
            main,
            [
                "encode",
                "-t",
                tokenizer,
                str(corpus),
                "--format",
                "megatron",
                "-o",
                str(tmp_path / "o"),
                "--force",
                "-v",
            ],
        )
        assert result.exit_code == 0, result.output
        assert f"engine {engine}" in result.stderr and why in result.stderr


# ---------------------------------------------------------------------------------------------
# Identical shards on every engine
# ---------------------------------------------------------------------------------------------


def _sample_corpus(tmp_path: Path, size: int) -> Path:
    text = "\n".join(
        read_corpus_sample(name, size)
        for name in ("en_wiki.txt.gz", "zh_novels.txt", "mixed_sample.txt", "zh_poetry.txt.gz")
    )
    path = tmp_path / "corpus.txt"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.shared
@pytest.mark.parametrize("name", ["bytebpe-50k", pytest.param("gpt2", marks=pytest.mark.full)])
def test_identical_shards_on_the_shared_corpora(tmp_path, name) -> None:
    tokenizer = "bytebpe-50k" if name == "bytebpe-50k" else str(ref_vocab_dir("gpt2") / "tokenizer.json")
    same_shards_on_every_engine(_sample_corpus(tmp_path, 60_000), tokenizer, tmp_path, append_eos=True)


@pytest.mark.full
@pytest.mark.shared
@pytest.mark.parametrize("name", ["bytebpe-50k", "gpt2"])
def test_identical_shards_on_the_whole_shared_corpora(tmp_path, name) -> None:
    tokenizer = "bytebpe-50k" if name == "bytebpe-50k" else str(ref_vocab_dir("gpt2") / "tokenizer.json")
    same_shards_on_every_engine(
        _sample_corpus(tmp_path, 100_000_000),
        tokenizer,
        tmp_path,
        engines=("gigatoken", "tiktoken"),
        shard_tokens=2_000_000,
    )


def fuzz_corpus(path: Path, lines: int = 1500, seed: int = 5) -> Path:
    """Adversarial lines (the probe's pieces, spaces of every kind, added tokens cut in half),
    with CRLF, blank lines, long lines and no final newline."""
    rng = random.Random(seed)
    texts = [t.replace("\n", " ") for t in adversarial_texts(["<|endoftext|>", "<s>", "</s>"], seed=seed, count=lines)]
    rng.shuffle(texts)
    texts[::50] = [""] * len(texts[::50])
    texts[::77] = [t + "\r" for t in texts[::77]]
    texts.append(" ".join(texts[:400]))
    path.write_text("\n".join(texts), encoding="utf-8")
    return path


@pytest.mark.shared
def test_the_pieces_of_a_single_long_line_are_verified(tmp_path, monkeypatch) -> None:
    """One line longer than the long-line mark, read in several blocks: each piece gigatoken
    encodes (from a safe cut) is offered to --verify, which checks at least 64 KB of prefixes
    spread over the line, and names the line when a piece's ids are wrong (issue 23)."""
    import real_shapes

    from toktools.engines.base import PackedIds
    from toktools.engines.gigatoken_engine import GigatokenEngine

    monkeypatch.setattr("toktools.corpus.line_blocks.MIN_BLOCK_BYTES", 30_000)
    monkeypatch.setattr("toktools.corpus.line_blocks.LONG_LINE_BYTES", 40_000)
    line = real_shapes.single_line(tmp_path / "line.txt", size=300_000, chinese_share=0.1)
    options = {"format": "megatron", "engine": "gigatoken", "force": True}
    result = encode_corpus([line], "bytebpe-50k", tmp_path / "ok", **options)
    assert result.documents == 1 and result.verified >= 4 and result.verified_bytes >= 64 << 10
    packed = GigatokenEngine.encode_packed

    def first_id_wrong(self, texts):
        got = packed(self, texts)
        data = bytearray(got.data)
        data[0] ^= 1
        return PackedIds(bytes(data), got.counts)

    monkeypatch.setattr(GigatokenEngine, "encode_packed", first_id_wrong)
    with pytest.raises(
        ToktoolsError, match=r"engine gigatoken disagrees with the reference on .*line\.txt, document at line 1"
    ):
        encode_corpus([line], "bytebpe-50k", tmp_path / "bad", **options)
    assert not list(tmp_path.glob("bad*")), "no output left behind"


@pytest.mark.full
@pytest.mark.shared
def test_identical_shards_on_a_fuzz_corpus(tmp_path, monkeypatch) -> None:
    # small blocks and a low long-line mark: the block path's seams and its long-line pieces
    monkeypatch.setattr("toktools.corpus.line_blocks.BLOCK_BYTES", 20_000)
    monkeypatch.setattr("toktools.corpus.line_blocks.LONG_LINE_BYTES", 30_000)
    same_shards_on_every_engine(
        fuzz_corpus(tmp_path / "fuzz.txt"),
        "bytebpe-50k",
        tmp_path,
        append_eos=True,
        prepend_bos="<s>",
        shard_tokens=7_000,
    )


@pytest.mark.shared
def test_gpt2_from_bare_files_runs_on_gigatoken_and_on_tiktoken(tmp_path) -> None:
    """``vocab.json`` + ``merges.txt`` alone keep ``<|endoftext|>`` as a regular token no merge
    makes: E4 leaves it out of tiktoken's ranks (it stays exact), gigatoken takes it as is."""
    bare = tmp_path / "gpt2"
    bare.mkdir()
    for name in ("vocab.json", "merges.txt"):
        shutil.copy(ref_vocab_dir("gpt2") / name, bare / name)
    doc = _doc(str(bare))
    assert not doc["added_tokens"] and "<|endoftext|>" in doc["model"]["vocab"]
    analysis = analyse(doc)
    assert analysis.tiktoken_reason is None and analysis.unreachable == ["<|endoftext|>"]
    assert make_engine("auto", doc).name == "gigatoken"
    corpus = tmp_path / "c.txt"
    corpus.write_text(
        read_corpus_sample("mixed_sample.txt", 60_000) + "\nend <|endoftext|> of text\n", encoding="utf-8"
    )
    same_shards_on_every_engine(corpus, str(bare), tmp_path, append_eos=False)


@pytest.mark.shared
def test_vocabularies_with_planted_unreachable_tokens(tmp_path) -> None:
    """Tokens no merge makes, planted in a trained vocabulary (whole words, a word and a half,
    a foreign pair of two real tokens): E4 leaves them out of tiktoken, gigatoken never makes
    them, and every engine writes the same shards on text full of them."""
    doc = load("bytebpe-50k").to_tokenizer_json()
    vocab = doc["model"]["vocab"]
    words = [" plantedword", "ingthe", "thethe", " theoretically", "中文字", "edly"]
    planted = [text_to_symbols(w) for w in words if text_to_symbols(w) not in vocab]
    assert len(planted) >= 4  # (within one piece: tiktoken alone would merge "ing" + "the")
    for token in planted:
        vocab[token] = max(vocab.values()) + 1
    path = tmp_path / "planted.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    analysis = analyse(corpus_document(doc))
    assert analysis.tiktoken_reason is None and set(planted) <= set(analysis.unreachable)
    words = [w for w in words if text_to_symbols(w) in planted]
    lines = read_corpus_sample("mixed_sample.txt", 20_000).splitlines()
    rng = random.Random(3)
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(line + rng.choice(words) + rng.choice(words) for line in lines), encoding="utf-8")
    same_shards_on_every_engine(corpus, str(path), tmp_path)


@pytest.mark.full
def test_the_text_formats_take_gigatoken_for_ids_and_tokens(tmp_path) -> None:
    corpus = tmp_path / "c.txt"
    corpus.write_text(read_corpus_sample("mixed_sample.txt", 8_000) + "\nend <|endoftext|> of text\n", encoding="utf-8")
    tokenizer = str(ref_vocab_dir("gpt2"))
    outputs = {}
    for engine in ("gigatoken", "tiktoken", "tokenizers"):
        for fmt in ("ids", "tokens"):
            result = CliRunner().invoke(
                main, ["encode", "-t", tokenizer, str(corpus), "--format", fmt, "--engine", engine]
            )
            assert result.exit_code == 0, result.output
            outputs[engine, fmt] = result.stdout
    assert outputs["gigatoken", "ids"] == outputs["tiktoken", "ids"] == outputs["tokenizers", "ids"]
    assert outputs["gigatoken", "tokens"] == outputs["tiktoken", "tokens"]
    result = CliRunner().invoke(
        main, ["encode", "-t", tokenizer, str(corpus), "--format", "jsonl", "--engine", "gigatoken"]
    )
    assert result.exit_code == 1 and "needs offsets" in result.stderr
