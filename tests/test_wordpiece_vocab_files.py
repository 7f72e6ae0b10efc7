"""WordPiece files: ``vocab.txt`` read and written exactly as HuggingFace ``tokenizers``, the
``tokenizer.json`` we write, and ``toktools.load`` on every WordPiece layout.

Pinned here (expected values come from ``tokenizers`` 0.23.3 or ``shared/spec/wordpiece.md`` §5):

* reading: ``loads_vocab_txt`` gives the same token → id map as ``models.WordPiece.read_file``
  and ``BertWordPieceTokenizer(path).get_vocab()`` for CRLF files, trailing whitespace (Rust
  ``trim_end``: spaces, tabs, NBSP, U+3000, VT, FF, NEL, but not U+001C), empty lines (the token
  ""), duplicate tokens (the later line wins and the earlier id becomes a hole), no trailing
  newline, a BOM (kept), and the published vocabularies;
* writing: ``dumps_vocab_txt`` is byte-identical to ``WordPiece.save`` / ``save_model`` (tokens
  in id order, every line ending in ``\\n``, holes vanish);
* ``tokenizer.json``: what ``WordPieceTokenizer.save`` writes loads in
  ``tokenizers.Tokenizer.from_file`` and encodes the same; for a vocabulary built from
  ``vocab.txt`` it is byte-identical to ``BertWordPieceTokenizer(vocab.txt).save(...)``;
* ``toktools.load`` on a directory holding only ``vocab.txt``, on a ``vocab.txt`` file, on a
  ``tokenizer.json`` file (whose normaliser settings win over the defaults), and on the published
  bert-base-uncased ``tokenizer.json`` (truncation and padding 128 included).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import read_corpus_sample, ref_vocab_dir
from tokenizers import BertWordPieceTokenizer, Tokenizer
from tokenizers.models import WordPiece

import toktools
from toktools.errors import ToktoolsError
from toktools.models.wordpiece.model import dumps_vocab_txt, loads_vocab_txt, read_vocab_txt
from toktools.presets import WordPieceTokenizer

BERT_TAIL = b"[PAD]\n[CLS]\n[SEP]\n[MASK]\n"  # so that BertWordPieceTokenizer accepts the file

# name -> raw bytes of a vocab.txt (each starts with [UNK] and ends with the BERT specials, unless noted)
VOCAB_FILES = {
    "crlf": b"[UNK]\r\nhello\r\n##ing\r\n" + BERT_TAIL.replace(b"\n", b"\r\n"),
    "trailing-whitespace": b"[UNK]  \nhello \t\n##ing\xc2\xa0\nwide\xe3\x80\x80\n" + BERT_TAIL,
    "leading-whitespace-kept": b"[UNK]\n hello\n\t##ing\n" + BERT_TAIL,
    "rust-whitespace-only": b"[UNK]\na\x0b\nb\x0c\nc\xc2\x85\nd\x1c\ne\xe2\x80\xa8\n" + BERT_TAIL,
    "empty-lines": b"[UNK]\n\nhello\n\n\n##ing\n" + BERT_TAIL,
    "whitespace-only-line": b"[UNK]\n   \nhello\n" + BERT_TAIL,
    "duplicates-later-wins": b"[UNK]\nhello\n##ing\nhello\nworld\n##ing\n" + BERT_TAIL,
    "duplicate-special": b"[UNK]\nhello\n[UNK]\n" + BERT_TAIL,
    "no-trailing-newline": b"[UNK]\nhello\n" + BERT_TAIL.rstrip(b"\n"),
    "two-trailing-newlines": b"[UNK]\nhello\n" + BERT_TAIL + b"\n",
    "cr-only-is-not-a-line-break": b"[UNK]\nhello\rworld\n" + BERT_TAIL,
    "unicode-line-separators-inside": b"[UNK]\na\xe2\x80\xa8b\nc\xc2\x85d\n\xe2\x80\xa8\n##\xe2\x80\xa8\n" + BERT_TAIL,
    "bom-kept": b"\xef\xbb\xbfhello\n[UNK]\n" + BERT_TAIL,
    "unicode": "[UNK]\n北\n##京\nnaïve\n##é\n😀\nΣ\n".encode() + BERT_TAIL,
}


@pytest.fixture(scope="module")
def vocab_dir(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("wp-vocab-files")
    for name, data in VOCAB_FILES.items():
        (directory / f"{name}.txt").write_bytes(data)
    return directory


# ---------------------------------------------------------------------------------------------
# Reading vocab.txt
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(VOCAB_FILES))
def test_loads_vocab_txt_like_wordpiece_read_file(vocab_dir, name):
    """``loads_vocab_txt`` == ``tokenizers.models.WordPiece.read_file`` (the map, ids included)."""
    path = vocab_dir / f"{name}.txt"
    assert loads_vocab_txt(path.read_bytes().decode("utf-8")) == WordPiece.read_file(str(path))
    assert read_vocab_txt(path) == WordPiece.read_file(str(path))


@pytest.mark.parametrize("name", list(VOCAB_FILES))
def test_from_vocab_file_like_bert_wordpiece_tokenizer(vocab_dir, name):
    """``WordPieceTokenizer.from_vocab_file(path).get_vocab()`` ==
    ``BertWordPieceTokenizer(path).get_vocab()``: vocabulary plus the registered specials, which
    take the id of the line that won."""
    path = vocab_dir / f"{name}.txt"
    assert WordPieceTokenizer.from_vocab_file(path).get_vocab() == BertWordPieceTokenizer(str(path)).get_vocab()


def test_reading_rules_from_the_spec(vocab_dir):
    """Spec §5 by hand: the line index is the id; ``\\r`` and trailing spaces are trimmed; an
    empty line is the token ""; for a duplicate the later line wins and the earlier id is a
    hole; the trailing newline does not start a line."""
    assert loads_vocab_txt("[UNK]\r\nab  \n\nab\n") == {"[UNK]": 0, "": 2, "ab": 3}
    assert loads_vocab_txt("a\nb") == {"a": 0, "b": 1}
    assert 1 not in loads_vocab_txt("[UNK]\nx\nx\n").values()


@pytest.mark.parametrize("name", ["bert-base-uncased", "bert-base-chinese"])
def test_published_vocabularies_read_identically(name):
    """The published files: same map as ``WordPiece.read_file`` (30,522 and 21,128 entries)."""
    path = ref_vocab_dir(name) / "vocab.txt"
    theirs = WordPiece.read_file(str(path))
    assert read_vocab_txt(path) == theirs
    assert len(theirs) == {"bert-base-uncased": 30522, "bert-base-chinese": 21128}[name]


def test_holes_encode_and_decode_like_tokenizers(vocab_dir):
    """A vocabulary with a hole (duplicate line): encoding uses the later id; decoding the
    hole's id yields nothing, on both sides."""
    path = vocab_dir / "duplicates-later-wins.txt"
    ours, theirs = WordPieceTokenizer.from_vocab_file(path), BertWordPieceTokenizer(str(path))
    for text in ("hello world", "helloing worlding", "unknown"):
        assert ours.encode(text).ids == theirs.encode(text).ids
        assert ours.encode(text).tokens == theirs.encode(text).tokens
    for ids in ([1, 3, 4], [1, 2, 5], [0, 1, 2, 3, 4, 5, 6]):
        assert ours.decode(ids) == theirs.decode(ids)
        assert ours.decode(ids, skip_special_tokens=False) == theirs.decode(ids, skip_special_tokens=False)


def test_unreadable_vocab_files_raise_toktools_errors(tmp_path):
    """Not a tokenizers behaviour but ours: a missing file, invalid UTF-8 (tokenizers refuses it
    too) and an empty file give a ``ToktoolsError`` naming the file, not a traceback."""
    with pytest.raises(ToktoolsError, match="not found"):
        read_vocab_txt(tmp_path / "missing.txt")
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"[UNK]\n\xff\xfe\n")
    with pytest.raises(Exception):
        WordPiece.read_file(str(bad))
    with pytest.raises(ToktoolsError, match="UTF-8"):
        read_vocab_txt(bad)
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    with pytest.raises(ToktoolsError, match="empty"):
        read_vocab_txt(empty)


# ---------------------------------------------------------------------------------------------
# Writing vocab.txt
# ---------------------------------------------------------------------------------------------


def hf_saved_vocab(vocab: dict[str, int], directory: Path) -> bytes:
    """What ``tokenizers`` writes for this vocabulary (``WordPiece.save``, as ``save_model``)."""
    directory.mkdir(parents=True, exist_ok=True)
    WordPiece(vocab, unk_token="[UNK]").save(str(directory))
    return (directory / "vocab.txt").read_bytes()


@pytest.mark.parametrize("name", list(VOCAB_FILES))
def test_dumps_vocab_txt_like_save_model(vocab_dir, tmp_path, name):
    """``dumps_vocab_txt`` of a map read from each test file is byte-identical to what
    ``WordPiece.save`` writes for the same map (holes vanish, "" stays a line)."""
    vocab = WordPiece.read_file(str(vocab_dir / f"{name}.txt"))
    assert dumps_vocab_txt(vocab).encode("utf-8") == hf_saved_vocab(vocab, tmp_path)


@pytest.mark.parametrize("name", ["bert-base-uncased", "bert-base-chinese"])
def test_published_vocabularies_write_like_save_model(tmp_path, name):
    """Read then write a published ``vocab.txt``: the same bytes as
    ``BertWordPieceTokenizer(path).save_model``. For bert-base-uncased that is the file itself."""
    path = ref_vocab_dir(name) / "vocab.txt"
    written = dumps_vocab_txt(read_vocab_txt(path)).encode("utf-8")
    BertWordPieceTokenizer(str(path)).save_model(str(tmp_path))
    assert written == (tmp_path / "vocab.txt").read_bytes()
    if name == "bert-base-uncased":
        assert written == path.read_bytes()


def test_bert_base_chinese_line_separator_lines():
    """bert-base-chinese has the lines ``U+2028`` (id 343) and ``##U+2028`` (id 13502). U+2028
    is Rust whitespace, so ``trim_end`` turns them into the tokens ``""`` and ``"##"``: the
    published file does not survive a read/write round trip in tokenizers either (checked
    against ``WordPiece.read_file``; Python's ``splitlines`` would even break the line)."""
    path = ref_vocab_dir("bert-base-chinese") / "vocab.txt"
    lines = path.read_bytes().decode("utf-8").split("\n")
    assert lines[343] == "\u2028" and lines[13502] == "##\u2028"
    theirs = WordPiece.read_file(str(path))
    assert theirs[""] == 343 and theirs["##"] == 13502
    ours = read_vocab_txt(path)
    assert ours[""] == 343 and ours["##"] == 13502
    assert dumps_vocab_txt(ours).encode("utf-8") != path.read_bytes()


def test_saved_vocab_txt_of_a_trained_tokenizer(tmp_path):
    """A vocabulary trained by toktools: ``save`` writes the ``vocab.txt`` that tokenizers'
    ``save_model`` writes for the same map, and it reads back to the same map."""
    text = read_corpus_sample("en_wiki.txt.gz", 120_000, skip_lines=10_000) + "北京欢迎你。Ünïcödé façade!\n"
    tokenizer = toktools.train_wordpiece(texts=text.splitlines(keepends=True), vocab_size=1500)
    tokenizer.save(tmp_path / "ours")
    data = (tmp_path / "ours" / "vocab.txt").read_bytes()
    assert data == hf_saved_vocab(tokenizer.vocab, tmp_path / "theirs")
    assert WordPiece.read_file(str(tmp_path / "ours" / "vocab.txt")) == tokenizer.vocab


# ---------------------------------------------------------------------------------------------
# tokenizer.json
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sample_lines() -> list[str]:
    return (
        read_corpus_sample("en_wiki.txt.gz", 60_000, skip_lines=70_000).splitlines()
        + read_corpus_sample("mixed_sample.txt", 150_000).splitlines()[::5]
    )


def assert_same_ids(ours, theirs, lines) -> None:
    for line, b in zip(lines, theirs.encode_batch(lines)):
        a = ours.encode(line)
        assert (a.ids, a.tokens, [tuple(o) for o in a.offsets]) == (b.ids, b.tokens, [tuple(o) for o in b.offsets]), (
            line[:80]
        )


@pytest.mark.parametrize("name,lowercase", [("bert-base-uncased", True), ("bert-base-chinese", False)])
def test_tokenizer_json_byte_identical_to_bert_wordpiece_tokenizer_save(tmp_path, name, lowercase):
    """``WordPieceTokenizer.from_vocab_file(v, lowercase=...).save(dir)`` writes the same
    ``tokenizer.json`` bytes as ``BertWordPieceTokenizer(v, lowercase=...).save(path)``
    (pretty-printed, added tokens by id, BertProcessing, WordPiece decoder)."""
    vocab = ref_vocab_dir(name) / "vocab.txt"
    WordPieceTokenizer.from_vocab_file(vocab, lowercase=lowercase).save(tmp_path / "ours")
    BertWordPieceTokenizer(str(vocab), lowercase=lowercase).save(str(tmp_path / "theirs.json"))
    assert (tmp_path / "ours" / "tokenizer.json").read_bytes() == (tmp_path / "theirs.json").read_bytes()


@pytest.mark.parametrize(
    "options",
    [
        dict(),
        dict(lowercase=False),
        dict(lowercase=True, strip_accents=False),
        dict(lowercase=False, strip_accents=True),
    ],
)
def test_trained_tokenizer_json_loads_in_tokenizers(tmp_path, sample_lines, options):
    """A trained tokenizer (each normaliser variant): the ``tokenizer.json`` we write loads in
    ``Tokenizer.from_file`` with the same normaliser settings and gives the same ids, tokens
    and offsets as our tokenizer; decoding agrees too."""
    text = read_corpus_sample("mixed_sample.txt", 200_000)
    ours = toktools.train_wordpiece(texts=text.splitlines(keepends=True), vocab_size=2500, **options)
    ours.save(tmp_path)
    theirs = Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    normalizer = json.loads(theirs.to_str())["normalizer"]
    assert normalizer["lowercase"] == options.get("lowercase", True)
    assert normalizer["strip_accents"] == options.get("strip_accents")
    assert_same_ids(ours, theirs, sample_lines)
    for line in sample_lines[:200]:
        ids = theirs.encode(line).ids
        assert ours.decode(ids) == theirs.decode(ids)


def test_tokenizer_json_with_extra_special_tokens(tmp_path):
    """Trainer specials beyond BERT's five (here ``<extra>``) are registered as added tokens:
    after saving, tokenizers matches them in raw text exactly as we do."""
    text = read_corpus_sample("en_wiki.txt.gz", 60_000, skip_lines=40_000)
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "<extra>"]
    ours = toktools.train_wordpiece(texts=text.splitlines(keepends=True), vocab_size=800, special_tokens=specials)
    ours.save(tmp_path)
    theirs = Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    for line in ("a<extra>b [MASK]", "<extra><extra>", "<EXTRA> <extra"):
        assert ours.encode(line).tokens == theirs.encode(line).tokens
        assert ours.encode(line).ids == theirs.encode(line).ids
    assert "<extra>" in theirs.encode("x<extra>y").tokens


# ---------------------------------------------------------------------------------------------
# toktools.load
# ---------------------------------------------------------------------------------------------


def test_load_directory_with_only_vocab_txt(tmp_path, sample_lines):
    """A directory with just ``vocab.txt`` loads as ``BertWordPieceTokenizer(vocab.txt)`` would:
    lower-casing, BERT specials, [CLS]/[SEP]."""
    shutil.copy(ref_vocab_dir("bert-base-uncased") / "vocab.txt", tmp_path / "vocab.txt")
    ours = toktools.load(tmp_path)
    assert isinstance(ours, WordPieceTokenizer)
    theirs = BertWordPieceTokenizer(str(tmp_path / "vocab.txt"))
    assert_same_ids(ours, theirs, sample_lines)
    assert ours.encode("Hello").tokens == ["[CLS]", "hello", "[SEP]"]


def test_load_vocab_txt_file(sample_lines):
    """The path of a ``vocab.txt`` file works as well as its directory."""
    path = ref_vocab_dir("bert-base-chinese") / "vocab.txt"
    ours = toktools.load(path)
    assert isinstance(ours, WordPieceTokenizer)
    assert_same_ids(ours, BertWordPieceTokenizer(str(path)), sample_lines)


def test_load_tokenizer_json_file_keeps_its_normaliser(tmp_path, sample_lines):
    """A ``tokenizer.json`` (file path, or directory holding it next to ``vocab.txt``) carries
    the full pipeline: a cased bert-base-chinese one loads cased, as in
    ``Tokenizer.from_file``."""
    vocab = ref_vocab_dir("bert-base-chinese") / "vocab.txt"
    BertWordPieceTokenizer(str(vocab), lowercase=False).save(str(tmp_path / "tokenizer.json"))
    shutil.copy(vocab, tmp_path / "vocab.txt")
    theirs = Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    for target in (tmp_path / "tokenizer.json", tmp_path):
        ours = toktools.load(target)
        assert ours.normalizer.lowercase is False
        assert_same_ids(ours, theirs, sample_lines)
    assert toktools.load(tmp_path).encode("Hello").tokens == theirs.encode("Hello").tokens


def test_load_published_bert_tokenizer_json_settings():
    """bert-base-uncased's ``tokenizer.json``: toktools reads its truncation (LongestFirst,
    128) and fixed padding (128, [PAD]=0) as tokenizers does, and saving it again writes the
    same bytes as ``Tokenizer.save`` (TemplateProcessing post-processor included). The
    encodings themselves are compared in test_wordpiece_encode_parity.py."""
    path = ref_vocab_dir("bert-base-uncased") / "tokenizer.json"
    ours, theirs = toktools.load(path), Tokenizer.from_file(str(path))
    assert theirs.truncation["max_length"] == 128 and theirs.padding["length"] == 128
    assert ours.truncation_json()["max_length"] == theirs.truncation["max_length"]
    assert ours.truncation.strategy == theirs.truncation["strategy"]
    assert ours.padding.length == theirs.padding["length"]
    assert (ours.padding.pad_id, ours.padding.pad_token) == (theirs.padding["pad_id"], theirs.padding["pad_token"])
    long = "word " * 300
    assert ours.encode(long).ids == theirs.encode(long).ids
    assert ours.encode("hi").ids == theirs.encode("hi").ids


def test_resaving_published_tokenizer_json_is_byte_identical(tmp_path):
    """Load the published bert-base-uncased ``tokenizer.json`` and save it: same bytes as
    ``Tokenizer.from_file(...).save(...)``."""
    path = ref_vocab_dir("bert-base-uncased") / "tokenizer.json"
    toktools.load(path).save(tmp_path / "ours")
    Tokenizer.from_file(str(path)).save(str(tmp_path / "theirs.json"))
    assert (tmp_path / "ours" / "tokenizer.json").read_bytes() == (tmp_path / "theirs.json").read_bytes()
