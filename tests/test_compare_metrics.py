"""The metrics of issue 27 item 1 that `compare` gained last: UNK and byte-fallback rates with
chars/token on known text, fertility and continued words over whitespace / jieba / per-character
words, the share of the 3,500 most frequent Chinese characters kept as one token, and
`--markdown`. Each against a hand-computed example, and on samples of the shared corpora
against an independent count: the documents encoded with ``tokenizers`` directly, the words
found by a character loop written here, jieba called here."""

from __future__ import annotations

import functools
import json
import re
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import read_corpus_sample, ref_vocab_dir

import toktools
from toktools.analysis import words as words_module
from toktools.analysis.corpus_compare import compare_corpus
from toktools.analysis.metrics import segment_metrics
from toktools.cli import main

tokenizers = pytest.importorskip("tokenizers")
jieba = pytest.importorskip("jieba")


# ------------------------------------------------------------------------------------------
# hand-made tokenizers and hand-computed numbers
# ------------------------------------------------------------------------------------------


def _wordpiece(folder: Path) -> Path:
    """WordPiece with [UNK]: "hello ab ☃" is hello / a / ##b / [UNK]."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

    vocab = {"[UNK]": 0, "hello": 1, "a": 2, "##b": 3, "b": 4, "我": 5, "他": 6, "中国": 7, "##国": 8, "中": 9}
    tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=False)  # spaces around Chinese characters
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    path = folder / "wp.json"
    tok.save(str(path))
    return path


def _byte_fallback(folder: Path, characters: str = "ab") -> Path:
    """BPE with byte fallback and no merges: a character outside ``characters`` becomes the
    ``<0xE6>`` pieces of its UTF-8 bytes."""
    from tokenizers import Tokenizer, models

    vocab = {"<unk>": 0, **{f"<0x{b:02X}>": 1 + b for b in range(256)}}
    for ch in characters:
        vocab.setdefault(ch, len(vocab))
    tok = Tokenizer(models.BPE(vocab, [], unk_token="<unk>", byte_fallback=True))
    path = folder / "bf.json"
    tok.save(str(path))
    return path


def test_unk_rate_and_chars_per_token_of_known_text_by_hand(tmp_path: Path):
    tok = toktools.load(str(_wordpiece(tmp_path)))
    m = segment_metrics(tok, "hello ab ☃")
    # hello / a / ##b / [UNK]: 10 characters, 4 tokens, 1 unknown standing for 1 character
    assert (m.tokens, m.characters, m.unk_count, m.unk_chars) == (4, 10, 1, 1)
    assert m.unk_rate == 1 / 4
    assert m.chars_per_token == 10 / 4
    assert m.chars_per_token_known == (10 - 1) / (4 - 1)
    # words hello, ab, ☃: 4 tokens / 3 words; "ab" is the one word in two tokens
    assert (m.words, m.split_words) == (3, 1)
    assert m.tokens_per_word == 4 / 3
    assert m.segmentation_name == "whitespace"


def test_byte_fallback_rate_by_hand(tmp_path: Path):
    tok = toktools.load(str(_byte_fallback(tmp_path)))
    m = segment_metrics(tok, "ab我")
    # a / b / <0xE6> <0x88> <0x91>: 5 tokens, 3 of them byte fallback, standing for 1 character
    assert (m.tokens, m.fallback_count, m.fallback_chars, m.unk_count) == (5, 3, 1, 0)
    assert m.fallback_rate == 3 / 5
    assert m.chars_per_token == 3 / 5
    assert m.chars_per_token_known == (3 - 1) / (5 - 3)


def test_the_word_rule_by_hand():
    def cut(text: str) -> list[str]:
        starts, ends, _ = words_module.word_spans(text)
        return [text[s:e] for s, e in zip(starts, ends)]

    assert cut("中文，夹杂English和数字123。") == ["中文", "，", "夹杂", "English", "和", "数字", "123。"]
    assert cut("  two  words ") == ["two", "words"]
    assert cut("ひらがなx") == ["ひ", "ら", "が", "な", "x"]
    _, _, made = words_module.word_spans("我们 ok ภาษา")
    assert made == {"whitespace": 1, "jieba": 1, "per character": 4}


def test_chinese_words_are_per_character_without_jieba(monkeypatch):
    monkeypatch.setattr(words_module, "_chinese_words", lambda: None)
    starts, ends, made = words_module.word_spans("我们好")
    assert list(zip(starts, ends)) == [(0, 1), (1, 2), (2, 3)]
    assert made == {"whitespace": 0, "jieba": 0, "per character": 3}


def test_fertility_on_jieba_words_by_hand(tmp_path: Path):
    tok = toktools.load(str(_wordpiece(tmp_path)))
    # jieba (dictionary only): 我 / 是 / 中国. The BERT normaliser isolates each Chinese character:
    # 我 / [UNK] (是) / 中 / [UNK] (国 alone is not in the vocabulary, only ##国), so the word
    # 中国 owns two tokens
    m = segment_metrics(tok, "我是中国")
    assert [w for w in jieba.Tokenizer().lcut("我是中国", HMM=False)] == ["我", "是", "中国"]
    assert (m.words, m.tokens, m.split_words, m.unk_count, m.unk_chars) == (3, 4, 1, 2, 2)
    assert m.segmentation == {"whitespace": 0, "jieba": 3, "per character": 0}
    assert m.segmentation_name == "jieba"


def test_common_characters_by_hand(tmp_path: Path):
    corpus = tmp_path / "zh.txt"
    corpus.write_text("我我我他他 你\n", encoding="utf-8")
    tok = toktools.load(str(_wordpiece(tmp_path)))
    fallback = toktools.load(str(_byte_fallback(tmp_path, "我")))
    result = compare_corpus([("wp", tok), ("bf", fallback)], [str(corpus)], workers=1)
    wp, bf = result.metrics["wp"], result.metrics["bf"]
    # the corpus's characters by frequency: 我 3, 他 2, 你 1; wp has 我 and 他, 你 is [UNK]
    assert (wp.common_considered, wp.common_single) == (3, 2)
    # bf has 我; 他 and 你 are three byte-fallback pieces each
    assert (bf.common_considered, bf.common_single) == (3, 1)
    assert result.to_dict()["metrics"]["wp"]["common_chars"] == {
        "top": 3500,
        "considered": 3,
        "single_token": 2,
        "share": round(2 / 3, 6),
    }


def test_a_high_unk_rate_gets_a_warning_line(tmp_path: Path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("hello ☃ ☃ ab\n", encoding="utf-8")
    path = str(_wordpiece(tmp_path))
    result = CliRunner().invoke(main, ["compare", path, "--corpus", str(corpus), "--show", "0", "--no-progress"])
    assert result.exit_code == 0, result.output
    # 5 tokens, 2 unknown: 40 %
    assert "warning: wp.json: 40.0% of its tokens are unknown (UNK)" in result.stdout
    data = json.loads(
        CliRunner().invoke(main, ["compare", path, "--corpus", str(corpus), "--json", "--no-progress"]).stdout
    )
    assert len(data["warnings"]) == 1 and data["warnings"][0].startswith("warning: wp.json: 40.0%")


# ------------------------------------------------------------------------------------------
# --markdown
# ------------------------------------------------------------------------------------------


def _markdown_tables(text: str) -> list[list[list[str]]]:
    tables: list[list[list[str]]] = []
    current: list[list[str]] = []
    for line in text.splitlines() + [""]:
        if line.startswith("| "):
            current.append([c.strip() for c in line.strip().strip("|").split(" | ")])
        elif current:
            tables.append(current)
            current = []
    return tables


def test_markdown_tables_hold_the_json_figures(tmp_path: Path):
    corpus = tmp_path / "c.txt"
    corpus.write_text(read_corpus_sample("mixed_sample.txt", 3_000) + "我是中国人。\n", encoding="utf-8")
    bert = str(ref_vocab_dir("bert-base-uncased"))
    args = ["compare", bert, "wordpiece-30k", "--corpus", str(corpus), "--show", "1", "--no-progress"]
    out = CliRunner().invoke(main, [*args, "--markdown"])
    assert out.exit_code == 0, out.output
    data = json.loads(CliRunner().invoke(main, [*args, "--json"]).stdout)
    tables = _markdown_tables(out.stdout)
    assert len(tables) == 3
    for rows in tables:
        assert all(len(row) == len(rows[0]) for row in rows)
        assert set(rows[1]) <= {":---", "---:"}
    header, _, *body = tables[0]
    for row in body:
        figures = dict(zip(header, row))
        m = data["metrics"][row[0]]
        assert figures["tokens"] == str(m["tokens"])
        assert figures["chars/token known"] == f"{m['chars_per_token_known']:.2f}"
        assert figures["UNK"] == f"{m['unk_rate']:.2%}"
        assert figures["byte fallback"] == f"{m['byte_fallback_rate']:.2%}"
    assert "```text" in out.stdout  # the shown place, fenced


def test_markdown_and_json_do_not_go_together(tmp_path: Path):
    result = CliRunner().invoke(main, ["compare", "wordpiece-30k", "wordpiece-30k", "x", "--json", "--markdown"])
    assert result.exit_code == 2
    assert "--markdown" in result.output


def test_markdown_on_one_text():
    result = CliRunner().invoke(main, ["compare", "bytebpe-50k", "wordpiece-30k", "我是中国人 ok", "--markdown"])
    assert result.exit_code == 0, result.output
    (table,) = _markdown_tables(result.stdout)
    assert [row[0] for row in table[2:]] == ["bytebpe-50k", "wordpiece-30k"]
    assert "words: whitespace + jieba" in result.stdout


# ------------------------------------------------------------------------------------------
# the shared corpora, against an independent count
# ------------------------------------------------------------------------------------------

_HAN_BLOCKS = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0xF900, 0xFAFF), (0x20000, 0x2FA1F))


def _is_han(ch: str) -> bool:
    return any(lo <= ord(ch) <= hi for lo, hi in _HAN_BLOCKS)


def _no_space_script(ch: str) -> bool:
    cp = ord(ch)
    return (
        0x3040 <= cp <= 0x30FF
        or 0x31F0 <= cp <= 0x31FF
        or 0xFF66 <= cp <= 0xFF9F
        or 0x0E00 <= cp <= 0x0EFF
        or 0x1780 <= cp <= 0x17FF
        or 0x1000 <= cp <= 0x109F
    )


@functools.cache
def _jieba() -> object:
    segmenter = jieba.Tokenizer()
    segmenter.initialize()
    return segmenter


def _words(text: str) -> list[tuple[int, int]]:
    """The word rule, written as a loop over characters (not the regexes of the code)."""
    spans: list[tuple[int, int]] = []
    k = 0
    while k < len(text):
        ch = text[k]
        if ch.isspace():
            k += 1
        elif _is_han(ch):
            end = k
            while end < len(text) and _is_han(text[end]):
                end += 1
            for word in _jieba().lcut(text[k:end], HMM=False):
                spans.append((k, k + len(word)))
                k += len(word)
        elif _no_space_script(ch):
            spans.append((k, k + 1))
            k += 1
        else:
            end = k
            while end < len(text) and not (text[end].isspace() or _is_han(text[end]) or _no_space_script(text[end])):
                end += 1
            spans.append((k, end))
            k = end
    return spans


def _library(path: Path):
    """``tokenizers``' own tokenizer of the file, without its truncation and padding."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(path))
    tok.no_truncation()
    tok.no_padding()
    return tok


def _independent(path: Path, documents: list[str], unk: str | None) -> dict:
    """Counts from ``tokenizers`` encodings of each document, one by one."""
    tok = _library(path)
    unk_id = tok.token_to_id(unk) if unk else None
    fallback = {i for t, i in tok.get_vocab().items() if re.fullmatch(r"<0x[0-9A-F]{2}>", t)}
    out = Counter()
    for text in documents:
        enc = tok.encode(text, add_special_tokens=False)
        out["tokens"] += len(enc.ids)
        out["characters"] += len(text)
        out["unk"] += sum(i == unk_id for i in enc.ids)
        out["unk_chars"] += len({c for i, (s, e) in zip(enc.ids, enc.offsets) if i == unk_id for c in range(s, e)})
        out["fallback"] += sum(i in fallback for i in enc.ids)
        out["fallback_chars"] += len(
            {c for i, (s, e) in zip(enc.ids, enc.offsets) if i in fallback for c in range(s, e)}
        )
        spans = _words(text)
        out["words"] += len(spans)
        owned = Counter()
        for s, e in enc.offsets:
            if e > s and not text[e - 1].isspace():
                for w, (ws, we) in enumerate(spans):
                    if ws <= e - 1 < we:
                        owned[w] += 1
                        break
        out["split"] += sum(1 for n in owned.values() if n >= 2)
    return out


def _common(path: Path, documents: list[str]) -> tuple[int, int]:
    tok = _library(path)
    counts = Counter(ch for text in documents for ch in text if _is_han(ch))
    top = [ch for ch, _ in sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:3500]]
    single = 0
    for ch in top:
        ids = [i for i in tok.encode(ch, add_special_tokens=False).ids if tok.id_to_token(i) != "▁"]
        single += len(ids) == 1 and tok.decode(ids) == ch
    return len(top), single


@pytest.fixture(scope="module")
def shared_sample(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str], Path]:
    folder = tmp_path_factory.mktemp("metrics")
    text = read_corpus_sample("zh_wiki_sample.txt", 8_000) + read_corpus_sample("mixed_sample.txt", 6_000)
    corpus = folder / "sample.txt"
    corpus.write_text(text, encoding="utf-8")
    documents = [line for line in text.split("\n") if line.strip()]
    # a byte-fallback BPE that knows the 300 most frequent characters of the sample
    frequent = "".join(ch for ch, _ in Counter(c for c in text if not c.isspace()).most_common(300))
    return corpus, documents, _byte_fallback(folder, frequent)


@pytest.mark.parametrize(
    "name, unk",
    [
        ("bert-base-uncased", "[UNK]"),
        ("bert-base-chinese", "[UNK]"),
        pytest.param("gpt2", None, marks=pytest.mark.full),  # byte pieces: also in test_compare_fast
        ("fallback", "<unk>"),
    ],
)
def test_metrics_on_the_shared_corpora_equal_an_independent_count(shared_sample, name: str, unk: str | None):
    corpus, documents, fallback_path = shared_sample
    if name == "fallback":
        path = fallback_path
    elif name == "bert-base-chinese":  # vocab.txt only: its tokenizer.json, for `tokenizers` to read
        toktools.load(str(ref_vocab_dir(name))).save(str(corpus.parent / name))
        path = corpus.parent / name / "tokenizer.json"
    else:
        path = ref_vocab_dir(name) / "tokenizer.json"
    result = compare_corpus([(name, toktools.load(str(path)))], [str(corpus)], workers=1)
    m = result.metrics[name]
    expected = _independent(path, documents, unk)
    assert m.tokens == expected["tokens"] and m.characters == expected["characters"]
    assert (m.unk_count, m.unk_chars) == (expected["unk"], expected["unk_chars"])
    assert (m.fallback_count, m.fallback_chars) == (expected["fallback"], expected["fallback_chars"])
    known = (expected["characters"] - expected["unk_chars"] - expected["fallback_chars"]) / (
        expected["tokens"] - expected["unk"] - expected["fallback"]
    )
    assert m.chars_per_token_known == pytest.approx(known, rel=1e-12)
    assert (m.words, m.split_words) == (expected["words"], expected["split"])
    assert m.segmentation["jieba"] > 0 and m.segmentation["whitespace"] > 0
    assert (m.common_considered, m.common_single) == _common(path, documents)
    if name == "bert-base-uncased":
        assert m.unk_rate > 0.2 and result.to_dict()["warnings"]
    if name == "fallback":
        assert m.fallback_count > 0


def test_dictionary_words_are_jiebas_words_without_hmm(shared_sample):
    from toktools.pretraining.masking import ChineseWords

    corpus, documents, _ = shared_sample
    segmenter = ChineseWords()
    runs = [m.group() for text in documents for m in re.finditer("[\u4e00-\u9fff]+", text)][:400]
    assert len(runs) > 200
    for run in runs:
        words = _jieba().lcut(run, HMM=False)
        starts = [sum(map(len, words[:k])) for k in range(len(words))]
        assert segmenter.dictionary_words(run) == [(s, s + len(w)) for s, w in zip(starts, words)]
