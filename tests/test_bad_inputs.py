"""Every command, given bad input as a careless or unlucky user would: one line, nothing lost.

Each case runs one command in a sandbox (inputs, existing outputs, a private TMPDIR) and checks:

* a non-zero exit with exactly one line on stderr and no traceback;
* nothing changed anywhere in the sandbox (inputs untouched, no file at the target, no
  temporary files beside it) and the private TMPDIR is empty.

Conflicting options are click usage errors (exit 2, click's ``Error:`` line), found before any
work. Tokenizers are trained on the project's own fixture, so nothing needs ``../shared``.
"""

from __future__ import annotations

import base64
import functools
import gzip
import hashlib
import json
import lzma
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

import toktools
from toktools.cli import main

REPO_ROOT = Path(__file__).resolve().parent.parent
SAMPLE = Path(__file__).parent / "fixtures" / "sample.txt"
#: Invalid UTF-8 on line 5 (each line a sentence: also blank-line documents and BERT-style corpora).
BAD_UTF8 = b"The first line is fine.\nSo is the second one.\n\nA new document starts here.\nThis one has \xff in it.\n"


# ---------------------------------------------------------------------------------------------
# The sandbox
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small byte-level BPE and a small WordPiece, trained once for the module."""
    base = tmp_path_factory.mktemp("trained")
    toktools.train_bytebpe([str(SAMPLE)], 300, workers=1).save(base / "bpe")
    toktools.train_wordpiece([str(SAMPLE)], 200, workers=1).save(base / "wp")
    return base


def _tokenizer_json(base: Path, name: str, edit: Callable[[dict], None]) -> Path:
    """A copy of the WordPiece tokenizer.json with one field broken."""
    document = json.loads((base / "wp" / "tokenizer.json").read_text(encoding="utf-8"))
    edit(document)
    directory = base / name
    directory.mkdir()
    (directory / "tokenizer.json").write_text(json.dumps(document), encoding="utf-8")
    return directory


def _bpe_with_vocab_id(base: Path, name: str, token_id: object) -> Path:
    """A copy of the BPE files where one token's id in vocab.json is ``token_id``."""
    directory = base / name
    directory.mkdir()
    vocab = json.loads((base / "bpe" / "vocab.json").read_text(encoding="utf-8"))
    vocab[next(iter(vocab))] = token_id
    (directory / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    shutil.copy(base / "bpe" / "merges.txt", directory / "merges.txt")
    return directory


def _nested_sequence(levels: int) -> dict:
    node: dict = {"type": "Lowercase"}
    for _ in range(levels):
        node = {"type": "Sequence", "normalizers": [node]}
    return node


#: ``tokenizer.json`` files that ``toktools.load`` refuses, and the words its line names them by.
#: Every engine of the corpus path must refuse them the same way before it sees the file.
MALFORMED_TOKENIZERS = {
    "added-tokens-map": "added_tokens must be a list",
    "added-token-no-content": "added_tokens[0].content",
    "string-id": "[UNK]",
    "nested-5000": "nested too deeply",
    "sequence-300-deep": "nested too deeply",
    "padding-nope": "padding.strategy",
    "truncation-max-length-x": "truncation.max_length",
    "normalizer-type-integer": "normalizer.type",
    "precompiled-bad-base64": "not valid base64",
    "precompiled-integer": "must be a base64 string",
    "precompiled-truncated": "precompiled_charsmap",
    "stride-not-below-max-length": "truncation.stride",
    "unigram-empty": "needs at least one piece",
}


def _malformed_tokenizers(inputs: Path) -> None:
    """The files of :data:`MALFORMED_TOKENIZERS`, each a copy of the WordPiece one with one fault."""
    truncated_charsmap = base64.b64encode(struct.pack("<I", 1024) + bytes(8)).decode("ascii")
    edits: dict[str, Callable[[dict], None]] = {
        "added-tokens-map": lambda d: d.update(added_tokens={t["content"]: t for t in d["added_tokens"]}),
        "added-token-no-content": lambda d: d["added_tokens"][0].pop("content"),
        "padding-nope": lambda d: d.update(padding={"strategy": "Nope", "direction": "Right", "pad_id": 0}),
        "truncation-max-length-x": lambda d: d.update(truncation={"max_length": "x", "stride": 0}),
        "normalizer-type-integer": lambda d: d["normalizer"].update(type=3),
        "sequence-300-deep": lambda d: d.update(normalizer=_nested_sequence(300)),
        "precompiled-bad-base64": lambda d: d.update(normalizer={"type": "Precompiled", "precompiled_charsmap": "!!"}),
        "precompiled-integer": lambda d: d.update(normalizer={"type": "Precompiled", "precompiled_charsmap": 5}),
        "precompiled-truncated": lambda d: d.update(
            normalizer={"type": "Precompiled", "precompiled_charsmap": truncated_charsmap}
        ),
        "stride-not-below-max-length": lambda d: d.update(
            truncation={"max_length": 5, "stride": 5, "strategy": "LongestFirst", "direction": "Right"}
        ),
        "unigram-empty": lambda d: d.update(model={"type": "Unigram", "unk_id": None, "vocab": []}),
    }
    for name, edit in edits.items():
        _tokenizer_json(inputs, name, edit)
    (inputs / "nested-5000").mkdir()
    (inputs / "nested-5000" / "tokenizer.json").write_text(
        '{"model": ' + "[" * 5000 + "]" * 5000 + "}", encoding="utf-8"
    )
    _bad_byte_piece_model(inputs / "bad-byte-piece.model")


def _bad_byte_piece_model(path: Path) -> None:
    """A byte-fallback sentencepiece model whose piece for byte 0x41 is spelled ``<0xZZ>``
    (sentencepiece refuses it: "byte piece <0xZZ> is invalid")."""
    from toktools.sentencepiece.model_file import BYTE, CONTROL, NORMAL, UNKNOWN, SentencePiece, SentencePieceModel

    pieces = [SentencePiece("<unk>", 0, UNKNOWN), SentencePiece("<s>", 0, CONTROL), SentencePiece("</s>", 0, CONTROL)]
    pieces += [SentencePiece("<0xZZ>" if b == 0x41 else f"<0x{b:02X}>", 0, BYTE) for b in range(256)]
    pieces += [SentencePiece(p, -1.0 - k, NORMAL) for k, p in enumerate(["▁the", "▁a", "e", "t", "▁"])]
    model = SentencePieceModel(pieces)
    model.trainer_spec.set("model_type", 1)
    model.trainer_spec.set("byte_fallback", True)
    path.write_bytes(model.to_bytes())


def _immutable(directory: Path) -> bool:
    """Make ``directory`` unwritable, even for root (``chattr +i``); False if impossible."""
    if os.geteuid() != 0:
        directory.chmod(0o555)
        return True
    try:
        return subprocess.run(["chattr", "+i", str(directory)], capture_output=True).returncode == 0
    except FileNotFoundError:
        return False


def _release(directory: Path) -> None:
    if os.geteuid() == 0:
        subprocess.run(["chattr", "-i", str(directory)], capture_output=True)
    else:
        directory.chmod(0o755)


@functools.lru_cache(maxsize=1)
def _xz(data: bytes) -> bytes:
    """``lzma.compress``, once per module: ~25 ms, most of the sandbox's setup time."""
    return lzma.compress(data)


@pytest.fixture
def sandbox(tmp_path: Path, trained: Path, monkeypatch: pytest.MonkeyPatch):
    """Inputs (a corpus, corrupt compressed files, good and broken tokenizers), an output
    directory with earlier results in it, an unwritable directory and a private TMPDIR."""
    root = tmp_path / "sandbox"
    inputs, out, private_tmp = root / "in", root / "out", tmp_path / "tmp"
    for directory in (inputs, out, private_tmp):
        directory.mkdir(parents=True)
    corpus = inputs / "corpus.txt"
    shutil.copy(SAMPLE, corpus)
    data = SAMPLE.read_bytes() * 20
    (inputs / "notgzip.txt.gz").write_bytes(data)
    (inputs / "truncated.txt.gz").write_bytes(gzip.compress(data)[:-200])
    (inputs / "truncated.txt.xz").write_bytes(_xz(data)[:-200])
    damaged = bytearray(gzip.compress(data))
    damaged[len(damaged) // 2 : len(damaged) // 2 + 64] = bytes(64)  # a zlib error inside the stream
    (inputs / "damaged.txt.gz").write_bytes(bytes(damaged))
    (inputs / "ids.txt").write_text("1 2 x 3\n", encoding="utf-8")
    (inputs / "bad-utf8.txt").write_bytes(BAD_UTF8)
    (inputs / "bad-utf8.txt.gz").write_bytes(gzip.compress(BAD_UTF8))
    (inputs / "bad-utf8.jsonl").write_bytes(b'{"text": "fine words here"}\n{"text": "more \xff words"}\n')
    # half of an emoji's surrogate pair escaped alone (a crawler cut the pair): decodes, not valid Unicode
    (inputs / "lone-surrogate.jsonl").write_bytes(b'{"text": "fine words here"}\n{"text": "cut \\ud83d here"}\n')
    (inputs / "garbage.dict").write_bytes(b"\xff\xfe not a jieba dictionary\nword notanumber\n")
    (inputs / "bad-utf8.counts").write_bytes(
        b'#toktools-counts v1\n#{"kind": "bytebpe", "settings": {}}\nab\t2\nc\xffd\t3\n'
    )
    (inputs / "nested.counts").write_text("#toktools-counts v1\n#" + "[" * 200_000 + "\nword\t1\n", encoding="utf-8")
    (inputs / "nested.jsonl").write_text('{"text": "fine"}\n' + "[" * 200_000 + "\n", encoding="utf-8")
    shutil.copytree(trained / "bpe", inputs / "bpe")
    shutil.copytree(trained / "wp", inputs / "wp")
    _tokenizer_json(
        inputs,
        "maxlen-abc",
        lambda d: d.update(
            truncation={"max_length": "abc", "strategy": "LongestFirst", "stride": 0, "direction": "Right"}
        ),
    )
    _tokenizer_json(inputs, "maxchars-x", lambda d: d["model"].update(max_input_chars_per_word="x"))
    _tokenizer_json(inputs, "string-id", lambda d: d["model"]["vocab"].update({"[UNK]": "x"}))
    _tokenizer_json(inputs, "added-id-negative", lambda d: d["added_tokens"][0].update(id=-1))
    (inputs / "nested").mkdir()
    (inputs / "nested" / "tokenizer.json").write_text("[" * 200_000 + "]" * 200_000, encoding="utf-8")
    _malformed_tokenizers(inputs)
    _bpe_with_vocab_id(inputs, "vocab-negative", -5)
    _bpe_with_vocab_id(inputs, "vocab-string", "7")
    _bpe_with_vocab_id(inputs, "vocab-float", 7.0)
    _bpe_with_vocab_id(inputs, "vocab-beyond-u32", 2**32)
    # earlier results that must survive
    (out / "model").mkdir()
    for name in ("vocab.json", "merges.txt", "tokenizer.json"):
        shutil.copy(inputs / "bpe" / name, out / "model" / name)
    (out / "configured").mkdir()
    (out / "configured" / "tokenizer_config.json").write_text("{}\n", encoding="utf-8")
    (out / "counts.tsv").write_text("earlier counts\n", encoding="utf-8")
    (out / "ids.txt").write_text("earlier ids\n", encoding="utf-8")
    (out / "converted").mkdir()
    (out / "converted" / "vocab.json").write_text("{}\n", encoding="utf-8")
    (out / "blocked" / "tokenizer.json").mkdir(parents=True)
    (out / "keep" / "reference").mkdir(parents=True)
    (out / "keep" / "reference" / "notes.txt").write_text("the user's own file\n", encoding="utf-8")
    (out / "keep-link").mkdir()
    (out / "keep-link" / "reference").symlink_to(inputs / "bpe", target_is_directory=True)
    locked = out / "locked"
    locked.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(private_tmp))
    monkeypatch.setenv("TMPDIR", str(private_tmp))
    monkeypatch.setenv("TOKTOOLS_CACHE_DIR", "")  # no engine-analysis cache outside the sandbox
    places = {"in": inputs, "out": out, "corpus": corpus, "locked": locked, "tmp": private_tmp}
    unlocked = not _immutable(locked)
    places["locked_ok"] = not unlocked
    try:
        yield root, places
    finally:
        _release(locked)


def _snapshot(root: Path) -> dict[str, str]:
    """Every path under ``root`` with its content hash (or link target): any change shows."""
    state = {}
    for path in sorted(root.rglob("*")):
        key = str(path.relative_to(root))
        if path.is_symlink():
            state[key] = "link:" + os.readlink(path)
        elif path.is_dir():
            state[key] = "dir"
        else:
            state[key] = hashlib.sha256(path.read_bytes()).hexdigest()
    return state


def _run(places: dict, args: list[str], input: str | bytes | None = None):
    filled = [a.format(**places) for a in args]
    return CliRunner().invoke(main, filled, input=input if input is not None else "")


# ---------------------------------------------------------------------------------------------
# One readable line, nothing changed
# ---------------------------------------------------------------------------------------------

TOK = "{in}/bpe"
ONE_LINE_CASES = [
    # train: outputs checked before any training
    (
        "train-output-below-a-file",
        ["train", "bytebpe", "{corpus}", "-o", "{corpus}/sub", "--vocab-size", "300"],
        "is a file, not a directory",
    ),
    (
        "train-output-unwritable",
        ["train", "bytebpe", "{corpus}", "-o", "{locked}/model", "--vocab-size", "300"],
        "cannot write into",
    ),
    (
        "train-existing-output",
        ["train", "bytebpe", "{corpus}", "-o", "{out}/model", "--vocab-size", "300"],
        "use --force",
    ),
    (
        "train-output-is-the-input",
        ["train", "bytebpe", "{out}/model/merges.txt", "-o", "{out}/model", "--vocab-size", "300", "--force"],
        "over the input",
    ),
    (
        "train-transformers-config-exists",
        ["train", "wordpiece", "{corpus}", "-o", "{out}/configured", "--vocab-size", "200", "--transformers-config"],
        "tokenizer_config.json",
    ),
    (
        "train-not-gzip",
        ["train", "bytebpe", "{in}/notgzip.txt.gz", "-o", "{out}/new", "--vocab-size", "300"],
        "notgzip.txt.gz",
    ),
    (
        "train-truncated-gzip",
        ["train", "bytebpe", "{in}/truncated.txt.gz", "-o", "{out}/new", "--vocab-size", "300"],
        "truncated.txt.gz",
    ),
    (
        "train-fast-truncated-xz",
        ["train", "bytebpe", "{in}/truncated.txt.xz", "-o", "{out}/new", "--vocab-size", "300", "--backend", "fast"],
        "truncated.txt.xz",
    ),
    (
        "train-counts-header-nested-200000-deep",
        ["train", "bytebpe", "--from-counts", "{in}/nested.counts", "-o", "{out}/new"],
        "corrupt counts header",
    ),
    # count
    (
        "count-json-line-nested-200000-deep",
        ["count", "{in}/nested.jsonl", "--model", "bytebpe", "--field", "text", "-o", "{out}/new.tsv"],
        "line 2",
    ),
    (
        "count-output-is-the-input",
        ["count", "{corpus}", "--model", "bytebpe", "-o", "{corpus}", "--force"],
        "over the input",
    ),
    ("count-existing-output", ["count", "{corpus}", "--model", "bytebpe", "-o", "{out}/counts.tsv"], "use --force"),
    (
        "count-output-below-a-file",
        ["count", "{corpus}", "--model", "bytebpe", "-o", "{corpus}/counts.tsv"],
        "is a file, not a directory",
    ),
    (
        "count-output-unwritable",
        ["count", "{corpus}", "--model", "bytebpe", "-o", "{locked}/counts.tsv"],
        "cannot write into",
    ),
    # encode: outputs
    ("encode-output-is-the-input", ["encode", "-t", TOK, "{corpus}", "-o", "{corpus}"], "over the input"),
    (
        "encode-output-is-the-input-forced",
        ["encode", "-t", TOK, "{corpus}", "-o", "{corpus}", "--force"],
        "over the input",
    ),
    (
        "encode-output-is-the-tokenizer",
        ["encode", "-t", TOK, "{corpus}", "-o", "{in}/bpe/vocab.json", "--force"],
        "over the input",
    ),
    ("encode-existing-output", ["encode", "-t", TOK, "{corpus}", "-o", "{out}/ids.txt"], "use --force"),
    (
        "encode-output-below-a-file",
        ["encode", "-t", TOK, "{corpus}", "-o", "{corpus}/ids.txt"],
        "is a file, not a directory",
    ),
    (
        "encode-output-unwritable",
        ["encode", "-t", TOK, "{corpus}", "--format", "npy", "-o", "{locked}/ids.npy"],
        "cannot write into",
    ),
    # encode: corrupt inputs
    ("encode-not-gzip", ["encode", "-t", TOK, "{in}/notgzip.txt.gz"], "notgzip.txt.gz"),
    (
        "encode-truncated-gzip",
        ["encode", "-t", TOK, "{in}/truncated.txt.gz", "-o", "{out}/new.npy", "--format", "npy"],
        "truncated.txt.gz",
    ),
    ("encode-truncated-xz", ["encode", "-t", TOK, "{in}/truncated.txt.xz"], "truncated.txt.xz"),
    # corrupt tokenizers: refused at load time, naming the field
    ("encode-truncation-max-length-abc", ["encode", "-t", "{in}/maxlen-abc", "{corpus}"], "truncation.max_length"),
    ("encode-max-input-chars-x", ["encode", "-t", "{in}/maxchars-x", "{corpus}"], "max_input_chars_per_word"),
    ("encode-json-nested-200000-deep", ["encode", "-t", "{in}/nested", "{corpus}"], "nested too deeply"),
    ("encode-string-id-in-tokenizer-json", ["encode", "-t", "{in}/string-id", "{corpus}"], "[UNK]"),
    ("encode-negative-added-token-id", ["encode", "-t", "{in}/added-id-negative", "{corpus}"], "added_tokens[0].id"),
    ("encode-negative-id-in-vocab-json", ["encode", "-t", "{in}/vocab-negative", "{corpus}"], "-5"),
    (
        "encode-string-id-in-vocab-json",
        ["encode", "-t", "{in}/vocab-string", "{corpus}", "--format", "npy", "-o", "{out}/x.npy"],
        "str",
    ),
    ("encode-float-id-in-vocab-json", ["encode", "-t", "{in}/vocab-float", "{corpus}"], "float"),
    ("encode-id-beyond-u32-in-vocab-json", ["encode", "-t", "{in}/vocab-beyond-u32", "{corpus}"], "4294967296"),
    # decode
    ("decode-not-ids", ["decode", "-t", TOK, "{in}/ids.txt"], "integer ids"),
    ("decode-corrupt-tokenizer", ["decode", "-t", "{in}/nested", "{in}/ids.txt"], "nested too deeply"),
    # convert
    (
        "convert-output-is-the-input",
        ["convert", TOK, "--to", "vocab.json+merges.txt", "-o", TOK, "--force"],
        "over the input",
    ),
    (
        "convert-existing-output",
        ["convert", TOK, "--to", "vocab.json+merges.txt", "-o", "{out}/converted"],
        "use --force",
    ),
    (
        "convert-output-below-a-file",
        ["convert", TOK, "--to", "tokenizer.json", "-o", "{corpus}/json"],
        "is a file, not a directory",
    ),
    (
        "convert-output-unwritable",
        ["convert", TOK, "--to", "tokenizer.json", "-o", "{locked}/json"],
        "cannot write into",
    ),
    (
        "convert-over-a-directory",
        ["convert", TOK, "--to", "tokenizer.json", "-o", "{out}/blocked", "--force"],
        "is a directory",
    ),
    (
        "convert-corrupt-tokenizer",
        ["convert", "{in}/maxchars-x", "--to", "tokenizer.json", "-o", "{out}/json"],
        "max_input_chars_per_word",
    ),
    # inspect
    ("inspect-corpus-not-gzip", ["inspect", TOK, "--corpus", "{in}/notgzip.txt.gz"], "notgzip.txt.gz"),
    ("inspect-corpus-truncated-xz", ["inspect", TOK, "--corpus", "{in}/truncated.txt.xz"], "truncated.txt.xz"),
    ("inspect-corrupt-tokenizer", ["inspect", "{in}/string-id"], "[UNK]"),
    # compare
    ("compare-corrupt-tokenizer", ["compare", "{in}/vocab-negative", TOK, "some text"], "-5"),
    ("compare-nested-json", ["compare", "{in}/nested", TOK, "some text"], "nested too deeply"),
    # parity --keep
    (
        "parity-keep-existing",
        ["parity", "bytebpe", "{corpus}", "--vocab-size", "300", "--keep", "{out}/keep"],
        "use --force",
    ),
    (
        "parity-keep-symlink",
        ["parity", "bytebpe", "{corpus}", "--vocab-size", "300", "--keep", "{out}/keep-link"],
        "use --force",
    ),
    (
        "parity-keep-below-a-file",
        ["parity", "bytebpe", "{corpus}", "--vocab-size", "300", "--keep", "{corpus}/keep"],
        "is a file, not a directory",
    ),
    (
        "parity-keep-unwritable",
        ["parity", "bytebpe", "{corpus}", "--vocab-size", "300", "--keep", "{locked}/keep"],
        "cannot write into",
    ),
    (
        "parity-keep-is-the-input",
        ["parity", "bytebpe", "{out}/keep/reference", "--vocab-size", "300", "--keep", "{out}/keep", "--force"],
        "over the input",
    ),
    (
        "parity-truncated-gzip",
        ["parity", "bytebpe", "{in}/truncated.txt.gz", "--vocab-size", "300"],
        "truncated.txt.gz",
    ),
    # damaged or truncated compressed corpora in every reader
    *[
        (
            f"{name}-{problem}",
            [*args[:1], *[a.replace("CORPUS", f"{{in}}/{problem}.txt.{ext}") for a in args[1:]]],
            f"{problem}.txt.{ext}",
        )
        for problem, ext in (("damaged", "gz"), ("truncated", "xz"))
        for name, args in (
            ("encode", ["encode", "-t", TOK, "CORPUS"]),
            ("encode-npy", ["encode", "-t", TOK, "CORPUS", "--format", "npy", "-o", "{out}/new.npy"]),
            ("inspect-corpus", ["inspect", TOK, "--corpus", "CORPUS"]),
            ("count", ["count", "CORPUS", "--model", "bytebpe", "-o", "{out}/new.tsv"]),
            ("train", ["train", "wordpiece", "CORPUS", "-o", "{out}/new", "--vocab-size", "200"]),
            ("compare", ["compare", TOK, "{in}/wp", "--corpus", "CORPUS"]),
            ("pretrain", ["pretrain-data", "CORPUS", "-t", "{in}/wp", "-o", "{out}/new.parquet"]),
        )
    ],
    # invalid UTF-8: every command names the file and the line
    ("encode-utf8", ["encode", "-t", TOK, "{in}/bad-utf8.txt"], "bad-utf8.txt, line 5"),
    (
        "encode-utf8-to-a-file",
        ["encode", "-t", TOK, "{in}/bad-utf8.txt", "-o", "{out}/new-ids.txt", "--workers", "2"],
        "bad-utf8.txt, line 5",
    ),
    (
        "encode-utf8-gzip",
        ["encode", "-t", TOK, "{in}/bad-utf8.txt.gz", "--format", "npy", "-o", "{out}/new.npy"],
        "bad-utf8.txt.gz, line 5",
    ),
    *[
        (
            f"encode-utf8-{engine}-{document}",
            [
                "encode",
                "-t",
                TOK,
                "{in}/bad-utf8.txt",
                "--format",
                "npy",
                "-o",
                "{out}/new.npy",
                "--engine",
                engine,
                "--document",
                document,
            ],
            "bad-utf8.txt, line 5",
        )
        for engine in ("auto", "reference", "tokenizers", "tiktoken")
        for document in ("line", "blank-line", "file")
    ],
    *[
        (
            f"encode-utf8-{engine}-jsonl",
            [
                "encode",
                "-t",
                TOK,
                "{in}/bad-utf8.jsonl",
                "--format",
                "megatron",
                "-o",
                "{out}/new",
                "--engine",
                engine,
                "--document",
                "jsonl",
                "--no-append-eos",
            ],
            "bad-utf8.jsonl, line 2",
        )
        for engine in ("auto", "reference", "tokenizers", "tiktoken")
    ],
    *[
        (
            f"encode-lone-surrogate-{engine}-jsonl",
            ["encode", "-t", TOK, "{in}/lone-surrogate.jsonl", "--format", "megatron", "-o", "{out}/new"]
            + ["--engine", engine, "--document", "jsonl", "--no-append-eos"],
            "lone-surrogate.jsonl, line 2: field 'text' holds a lone surrogate (U+D83D",
        )
        for engine in ("auto", "reference", "tokenizers", "tiktoken")
    ],
    *[
        (
            f"{command[0]}-lone-surrogate-jsonl",
            [*command, "--field", "text"],
            "lone-surrogate.jsonl, line 2: field 'text' holds a lone surrogate",
        )
        for command in (
            ["compare", TOK, "wordpiece-30k", "--corpus", "{in}/lone-surrogate.jsonl"],
            ["pretrain-data", "-t", "wordpiece-30k", "{in}/lone-surrogate.jsonl", "-o", "{out}/new.parquet"],
            ["train", "bytebpe", "{in}/lone-surrogate.jsonl", "-o", "{out}/new", "--vocab-size", "300"],
            ["count", "{in}/lone-surrogate.jsonl", "--model", "wordpiece", "-o", "{out}/new.tsv"],
        )
    ],
    ("inspect-corpus-utf8", ["inspect", TOK, "--corpus", "{in}/bad-utf8.txt"], "bad-utf8.txt, line 5"),
    ("inspect-corpus-utf8-gzip", ["inspect", TOK, "--corpus", "{in}/bad-utf8.txt.gz"], "bad-utf8.txt.gz, line 5"),
    ("count-utf8", ["count", "{in}/bad-utf8.txt", "--model", "bytebpe", "-o", "{out}/new.tsv"], "bad-utf8.txt, line 5"),
    (
        "count-utf8-jsonl",
        ["count", "{in}/bad-utf8.jsonl", "--model", "wordpiece", "--field", "text", "-o", "{out}/new.tsv"],
        "bad-utf8.jsonl, line 2",
    ),
    (
        "train-utf8",
        ["train", "bytebpe", "{in}/bad-utf8.txt", "-o", "{out}/new", "--vocab-size", "300"],
        "bad-utf8.txt, line 5",
    ),
    (
        "train-utf8-gzip",
        ["train", "wordpiece", "{in}/bad-utf8.txt.gz", "-o", "{out}/new", "--vocab-size", "200"],
        "bad-utf8.txt.gz, line 5",
    ),
    (
        "train-fast-utf8",
        ["train", "bytebpe", "{in}/bad-utf8.txt", "-o", "{out}/new", "--vocab-size", "300", "--backend", "fast"],
        "bad-utf8.txt, line 5",
    ),
    (
        "train-utf8-jsonl",
        ["train", "bytebpe", "{in}/bad-utf8.jsonl", "--field", "text", "-o", "{out}/new", "--vocab-size", "300"],
        "bad-utf8.jsonl, line 2",
    ),
    (
        "train-utf8-counts",
        ["train", "bytebpe", "--from-counts", "{in}/bad-utf8.counts", "-o", "{out}/new"],
        "bad-utf8.counts, line 4",
    ),
    ("compare-file-utf8", ["compare", TOK, "{in}/wp", "--file", "{in}/bad-utf8.txt"], "bad-utf8.txt, line 5"),
    (
        "compare-corpus-utf8-jsonl",
        ["compare", TOK, "{in}/wp", "--corpus", "{in}/bad-utf8.jsonl", "--field", "text"],
        "bad-utf8.jsonl, line 2",
    ),
    ("compare-text-argument-utf8", ["compare", TOK, "{in}/wp", "caf\udce9 au lait"], "byte 0xE9"),
    (
        "pretrain-utf8",
        ["pretrain-data", "{in}/bad-utf8.txt", "-t", "{in}/wp", "-o", "{out}/new.parquet"],
        "bad-utf8.txt, line 5",
    ),
    (
        "pretrain-utf8-jsonl",
        ["pretrain-data", "{in}/bad-utf8.jsonl", "--field", "text", "-t", "{in}/wp", "-o", "{out}/new.parquet"],
        "bad-utf8.jsonl, line 2",
    ),
    ("parity-utf8", ["parity", "bytebpe", "{in}/bad-utf8.txt", "--vocab-size", "300"], "bad-utf8.txt, line 5"),
]

#: A ``.model`` whose byte piece is spelled ``<0xZZ>``: the same line from every command.
BAD_MODEL = "{in}/bad-byte-piece.model"
ONE_LINE_CASES += [
    (f"{command[0]}-bad-byte-piece", command, "byte piece '<0xZZ>'")
    for command in (
        ["encode", "-t", BAD_MODEL, "{corpus}"],
        ["encode", "-t", BAD_MODEL, "{corpus}", "--format", "megatron", "-o", "{out}/new"],
        ["decode", "-t", BAD_MODEL, "{in}/ids.txt"],
        ["convert", BAD_MODEL, "--to", "tokenizer.json", "-o", "{out}/json"],
        ["inspect", BAD_MODEL],
        ["compare", BAD_MODEL, TOK, "some text"],
        ["pretrain-data", "{corpus}", "-t", BAD_MODEL, "-o", "{out}/new.parquet"],
    )
]
ONE_LINE_CASES += [
    (
        "pretrain-zh-dict-garbage",
        [
            "pretrain-data",
            "{corpus}",
            "-t",
            "{in}/wp",
            "-o",
            "{out}/new.parquet",
            "--whole-word",
            "zh",
            "--zh-dict",
            "{in}/garbage.dict",
        ],
        "garbage.dict",
    ),
]

#: The same, read from standard input (named ``-``).
STDIN_CASES = [
    ("encode-stdin-utf8", ["encode", "-t", TOK], "-, line 5"),
    ("encode-npy-stdin-utf8", ["encode", "-t", TOK, "-", "--format", "npy", "-o", "{out}/new.npy"], "-, line 5"),
    ("compare-stdin-utf8", ["compare", TOK, "{in}/wp", "-"], "-, line 5"),
    ("count-stdin-utf8", ["count", "-", "--model", "bytebpe", "-o", "{out}/new.tsv"], "-, line 5"),
]


@pytest.mark.parametrize(
    "args, fragment", [case[1:] for case in ONE_LINE_CASES], ids=[case[0] for case in ONE_LINE_CASES]
)
def test_bad_input_is_one_line_and_changes_nothing(sandbox, args: list[str], fragment: str) -> None:
    _assert_one_line_and_nothing_changed(sandbox, args, fragment)


@pytest.mark.parametrize("args, fragment", [case[1:] for case in STDIN_CASES], ids=[case[0] for case in STDIN_CASES])
def test_bad_standard_input_is_one_line_and_changes_nothing(sandbox, args: list[str], fragment: str) -> None:
    _assert_one_line_and_nothing_changed(sandbox, args, fragment, stdin=BAD_UTF8)


def _assert_one_line_and_nothing_changed(sandbox, args: list[str], fragment: str, stdin: bytes | None = None) -> None:
    root, places = sandbox
    if "{locked}" in " ".join(args) and not places["locked_ok"]:
        pytest.skip("cannot make a directory unwritable here (root without chattr)")
    before = _snapshot(root)
    result = _run(places, args, input=stdin)
    lines = result.stderr.strip().splitlines()
    assert result.exit_code == 1, (result.exit_code, result.stderr, result.exception)
    assert len(lines) == 1 and lines[0].startswith("toktools: error: "), result.stderr
    assert fragment in lines[0], lines[0]
    assert "Traceback" not in result.stderr and isinstance(result.exception, SystemExit), repr(result.exception)
    assert _snapshot(root) == before, "the command changed the sandbox"
    assert os.listdir(places["tmp"]) == [], "temporary files left behind"


#: Engines of the corpus path: ``tokenizers`` (which panics on some of these files) in the
#: default run, every engine with ``-m full``.
_ENGINES = [
    pytest.param("tokenizers"),
    *[pytest.param(engine, marks=pytest.mark.full) for engine in ("auto", "tiktoken", "reference")],
]


@pytest.mark.parametrize("engine", _ENGINES)
@pytest.mark.parametrize("name", list(MALFORMED_TOKENIZERS))
def test_a_malformed_tokenizer_json_is_the_loaders_line_on_the_corpus_path(sandbox, name: str, engine: str) -> None:
    """``encode --format megatron`` checks the file as ``toktools.load`` does before any engine
    sees it: no KeyError, OverflowError, RecursionError or PanicException, and no shards."""
    args = ["encode", "-t", f"{{in}}/{name}", "{corpus}", "--format", "megatron", "-o", "{out}/new"]
    _assert_one_line_and_nothing_changed(sandbox, [*args, "--engine", engine], MALFORMED_TOKENIZERS[name])


@pytest.mark.parametrize("name", list(MALFORMED_TOKENIZERS))
def test_toktools_load_refuses_the_malformed_tokenizer_json_in_one_line(sandbox, name: str) -> None:
    from toktools.errors import ToktoolsError

    root, places = sandbox
    with pytest.raises(ToktoolsError) as refused:
        toktools.load(places["in"] / name)
    assert MALFORMED_TOKENIZERS[name] in str(refused.value) and "\n" not in str(refused.value)


USAGE_CASES = [
    (
        "train-counts-and-corpus",
        ["train", "bytebpe", "{corpus}", "--from-counts", "{out}/counts.tsv", "-o", "{out}/new"],
        "not both",
    ),
    (
        "train-fast-with-field",
        ["train", "bytebpe", "{corpus}", "--backend", "fast", "--field", "text", "-o", "{out}/new"],
        "--field",
    ),
    (
        "train-fast-with-errors",
        ["train", "wordpiece", "{corpus}", "--backend", "fast", "--errors", "replace", "-o", "{out}/new"],
        "--errors",
    ),
    (
        "train-fast-with-check",
        ["train", "bytebpe", "{corpus}", "--backend", "fast", "--check", "-o", "{out}/new"],
        "--check",
    ),
    ("train-check-from-stdin", ["train", "bytebpe", "-", "--check", "-o", "{out}/new"], "--check"),
    (
        "train-min-pair-frequency-without-likelihood",
        ["train", "wordpiece", "{corpus}", "--min-pair-frequency", "3", "-o", "{out}/new"],
        "likelihood",
    ),
    (
        "train-roberta-without-its-tokens",
        ["train", "bytebpe", "{corpus}", "--template", "roberta", "-o", "{out}/new"],
        "<s>",
    ),
    ("train-output-is-a-file", ["train", "bytebpe", "{corpus}", "-o", "{corpus}"], "is a file"),
    ("encode-npy-to-stdout", ["encode", "-t", TOK, "{corpus}", "--format", "npy"], "-o"),
    ("encode-output-is-a-directory", ["encode", "-t", TOK, "{corpus}", "-o", "{out}"], "directory"),
    (
        "count-bytebpe-with-wordpiece-option",
        ["count", "{corpus}", "--model", "bytebpe", "--cased", "-o", "{out}/new.tsv"],
        "--cased",
    ),
    (
        "count-wordpiece-with-bytebpe-option",
        ["count", "{corpus}", "--model", "wordpiece", "--add-prefix-space", "-o", "{out}/new.tsv"],
        "--add-prefix-space",
    ),
    ("parity-force-without-keep", ["parity", "bytebpe", "{corpus}", "--force"], "--keep"),
]


@pytest.mark.parametrize("args, fragment", [case[1:] for case in USAGE_CASES], ids=[case[0] for case in USAGE_CASES])
def test_conflicting_options_are_usage_errors(sandbox, args: list[str], fragment: str) -> None:
    """Found before any work: exit 2 with click's ``Error:`` line, nothing changed."""
    root, places = sandbox
    before = _snapshot(root)
    result = _run(places, args)
    assert result.exit_code == 2, (result.exit_code, result.stderr)
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and fragment in errors[0], result.stderr
    assert "Traceback" not in result.stderr
    assert _snapshot(root) == before
    assert os.listdir(places["tmp"]) == []


# ---------------------------------------------------------------------------------------------
# What must keep working
# ---------------------------------------------------------------------------------------------


def test_force_replaces_an_existing_output(sandbox) -> None:
    """The refusals above are about consent: with --force the same commands write."""
    root, places = sandbox
    result = _run(places, ["encode", "-t", TOK, "{corpus}", "-o", "{out}/ids.txt", "--force"])
    assert result.exit_code == 0, result.stderr
    assert (places["out"] / "ids.txt").read_text(encoding="utf-8") != "earlier ids\n"
    result = _run(
        places, ["parity", "bytebpe", "{corpus}", "--vocab-size", "300", "--keep", "{out}/keep-link", "--force"]
    )
    assert result.exit_code in (0, 3), result.stderr
    link = places["out"] / "keep-link" / "reference"
    assert link.is_dir() and not link.is_symlink(), "the link is replaced, not followed"
    assert (places["in"] / "bpe" / "vocab.json").exists(), "the link's target is untouched"
    assert os.listdir(places["tmp"]) == []


def test_a_merges_file_with_crlf_line_endings_loads_like_tokenizers(trained: Path, tmp_path: Path) -> None:
    """``tokenizers`` reads merges.txt with Rust's ``lines()``: a ``\\r\\n`` ending is one line end."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    shutil.copy(trained / "bpe" / "vocab.json", tmp_path / "vocab.json")
    merges = (trained / "bpe" / "merges.txt").read_bytes()
    (tmp_path / "merges.txt").write_bytes(merges.replace(b"\n", b"\r\n"))
    ours = toktools.load(tmp_path)
    theirs = Tokenizer(models.BPE.from_file(str(tmp_path / "vocab.json"), str(tmp_path / "merges.txt")))
    theirs.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    text = SAMPLE.read_text(encoding="utf-8")
    assert ours.merges == toktools.load(trained / "bpe").merges  # type: ignore[attr-defined]
    assert ours.encode(text).ids == theirs.encode(text).ids


@pytest.mark.parametrize("kind", ["bpe", "wp"])
@pytest.mark.parametrize("text, pair", [("ok \ud800 text", None), ("ok", "pair \udfff")])
def test_lone_surrogates_raise_type_error_like_tokenizers(
    trained: Path, kind: str, text: str, pair: str | None
) -> None:
    """``tokenizers`` raises TypeError for text with no UTF-8 form; so do both our models, in
    ``encode`` and ``encode_batch``, instead of a wrong position or a silent ``[UNK]``."""
    from tokenizers import Tokenizer

    with pytest.raises(TypeError):
        Tokenizer.from_file(str(trained / kind / "tokenizer.json")).encode(text, pair)
    tokenizer = toktools.load(trained / kind)
    with pytest.raises(TypeError, match="surrogate"):
        tokenizer.encode(text, pair)
    with pytest.raises(TypeError, match="surrogate"):
        tokenizer.encode_batch(["fine", text if pair is None else (text, pair)])


@pytest.mark.parametrize("bad_id", ["x", -1, 2**32, 1.0, True])
def test_ids_tokenizers_refuses_are_refused(trained: Path, tmp_path: Path, bad_id: object) -> None:
    """Same verdict as ``tokenizers`` on a tokenizer.json (ids are u32 there)."""
    document = json.loads((trained / "wp" / "tokenizer.json").read_text(encoding="utf-8"))
    document["model"]["vocab"]["[UNK]"] = bad_id
    _both_refuse(document, tmp_path, "ids must be integers")


def _both_refuse(document: dict, tmp_path: Path, message: str) -> None:
    """``tokenizers`` refuses the document written as a tokenizer.json, and toktools refuses it
    in one error matching ``message``."""
    from tokenizers import Tokenizer

    from toktools.errors import ToktoolsError

    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(Exception):
        Tokenizer.from_file(str(path))
    with pytest.raises(ToktoolsError, match=message):
        toktools.load(path)


@pytest.mark.parametrize("kind", ["lists", "strings"])
@pytest.mark.parametrize("bad_merge", [["a", "b", "c"], ["a"], "ab", "a b c", 7, ["a", 1], None])
def test_merges_tokenizers_refuses_are_refused_naming_the_merge(
    trained: Path, tmp_path: Path, kind: str, bad_merge: object
) -> None:
    """One bad entry among the good merges (each kind of list): ``tokenizers`` refuses the file,
    and so does toktools, naming the entry, though the list is checked in bulk first."""
    document = json.loads((trained / "bpe" / "tokenizer.json").read_text(encoding="utf-8"))
    merges = [list(m) if isinstance(m, list) else m.split(" ") for m in document["model"]["merges"]]
    merges = merges if kind == "lists" else [" ".join(m) for m in merges]
    assert len(merges) > 40
    merges.insert(2, bad_merge)
    document["model"]["merges"] = merges
    _both_refuse(document, tmp_path, "merge 3 is not a pair of tokens")


def test_sparse_huge_ids_cost_nothing_and_do_not_depend_on_workers(trained: Path, tmp_path: Path) -> None:
    """The largest id ``tokenizers`` accepts (2**32 - 1): loads, and encoding 4,000 lines in one
    or two processes gives the same tokens, without a list as long as the largest id."""
    from tokenizers import Tokenizer

    document = json.loads((trained / "bpe" / "tokenizer.json").read_text(encoding="utf-8"))
    vocab = document["model"]["vocab"]
    token = max(vocab, key=len)
    vocab[token] = 2**32 - 1
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    theirs = Tokenizer.from_file(str(path))
    ours = toktools.load(path)
    lines = [line for line in SAMPLE.read_text(encoding="utf-8").splitlines() if line.strip()] * 400
    one, two = ours.encode_batch(lines, workers=1), ours.encode_batch(lines, workers=2)
    assert [e.tokens for e in one] == [e.tokens for e in two]
    assert [e.ids for e in one] == [e.ids for e in two] == [e.ids for e in theirs.encode_batch(lines)]
    assert any(2**32 - 1 in e.ids for e in two)


def test_full_disk_on_stdout_is_one_line(trained: Path, tmp_path: Path) -> None:
    """``toktools encode > /dev/full``: ENOSPC is one line and exit 1, also when it surfaces only
    at the final flush."""
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full on this system")
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), TMPDIR=str(tmp_path))
    for text in ("hello world\n", "hello world\n" * 20000):
        with open("/dev/full", "w") as full:
            result = subprocess.run(
                [sys.executable, "-m", "toktools.cli", "encode", "-t", str(trained / "bpe")],
                input=text.encode(),
                stdout=full,
                stderr=subprocess.PIPE,
                env=env,
                timeout=120,
            )
        lines = result.stderr.decode().strip().splitlines()
        assert result.returncode == 1 and len(lines) == 1, result.stderr.decode()
        assert "No space left on device" in lines[0]


def test_too_many_workers_are_capped_with_a_note(sandbox) -> None:
    root, places = sandbox
    result = _run(places, ["count", "{corpus}", "--model", "bytebpe", "-o", "{out}/new.tsv", "--workers", "1000"])
    assert result.exit_code == 0, result.stderr
    assert "--workers 1000 capped at" in result.stderr


# ---------------------------------------------------------------------------------------------
# A signal while click is still parsing the command line
# ---------------------------------------------------------------------------------------------

#: Runs the real program; the process signals itself (its own pid) when click starts parsing the
#: group's options or the sub-command's, the earliest moments a user's Ctrl-C or a SIGTERM can land.
_SIGNAL_WHILE_PARSING = """
import os, signal, sys
from toktools import cli
where, name = sys.argv[1], sys.argv[2]
owner = cli.main if where == "group" else cli.main.commands["encode"]
parse = owner.make_context
def signal_then_parse(*args, **kwargs):
    os.kill(os.getpid(), getattr(signal, name))
    return parse(*args, **kwargs)
owner.make_context = signal_then_parse
sys.argv = ["toktools", "encode", "-t", sys.argv[3], sys.argv[4], "-o", sys.argv[5]]
cli.main()
"""


@pytest.mark.parametrize("where", ["group", "command"])
@pytest.mark.parametrize(
    "name, code, message", [("SIGTERM", 143, "toktools: terminated"), ("SIGINT", 130, "toktools: interrupted")]
)
def test_a_signal_while_parsing_is_one_line_not_aborted(
    sandbox, where: str, name: str, code: int, message: str
) -> None:
    """Not click's ``Aborted!`` (and exit 1): the same line and exit code as during the work."""
    root, places = sandbox
    before = _snapshot(root)
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), TMPDIR=str(places["tmp"]))
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            _SIGNAL_WHILE_PARSING,
            where,
            name,
            str(places["in"] / "bpe"),
            str(places["corpus"]),
            str(places["out"] / "new-ids.txt"),
        ],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        env=env,
        timeout=120,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # not ignored (pytest &)
    assert (result.returncode, result.stderr.decode().strip(), result.stdout) == (code, message, b"")
    assert _snapshot(root) == before
    assert os.listdir(places["tmp"]) == []


# ---------------------------------------------------------------------------------------------
# A full disk under pretrain-data, a signal inside compiled loops
# ---------------------------------------------------------------------------------------------


def test_a_full_disk_under_pretrain_data_is_one_line(sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    """The disk fills while Parquet row groups are written: the write error (ENOSPC) in one line,
    not Arrow's "Operation on closed file" from closing afterwards; no partial output left."""
    import errno
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    class FullDisk(io.RawIOBase):
        """Takes the Parquet header, then fails as a full disk does."""

        written = 0

        def writable(self) -> bool:
            return True

        def write(self, data) -> int:  # type: ignore[override]
            self.written += len(data)
            if self.written > 64:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            return len(data)

    class WriterOnAFullDisk(pq.ParquetWriter):
        def __init__(self, where, schema, **options) -> None:
            super().__init__(pa.PythonFile(FullDisk(), mode="w"), schema, **options)

    monkeypatch.setattr(pq, "ParquetWriter", WriterOnAFullDisk)
    args = ["pretrain-data", "{corpus}", "-t", "{in}/wp", "-o", "{out}/new.parquet"]
    _assert_one_line_and_nothing_changed(sandbox, args, "new.parquet: No space left on device")


#: Runs ``train unigram`` with its compiled E-step made endless: after one real call (compiled,
#: loaded) it writes the marker, then calls the compiled kernel again and again, so the work
#: cannot finish before the test's signal and the signal lands while compiled code runs.
_SIGNAL_IN_COMPILED_LOOP = """
import sys
from toktools.models.unigram import kernels
marker, corpus, output = sys.argv[1:4]
compiled = kernels.e_step
def endless(*args):
    compiled(*args)
    with open(marker, "w") as f:
        f.write("inside the compiled loop")
    while True:
        compiled(*args)
kernels.e_step = endless
from toktools import cli
sys.argv = ["toktools", "train", "unigram", corpus, "-o", output, "--vocab-size", "300"]
cli.main()
"""


def test_ctrl_c_inside_a_compiled_loop_is_one_line(sandbox) -> None:
    """Ctrl-C while ``train unigram`` runs numba code: numba's dispatcher reported it as
    ``SystemError: CPUDispatcher(...) returned a result with an exception set``; now it is the
    usual line and exit 130, nothing written."""
    pytest.importorskip("numba")
    root, places = sandbox
    before = _snapshot(root)
    marker = places["tmp"].parent / "inside-compiled-loop"
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), TMPDIR=str(places["tmp"]))
    env.pop("TOKTOOLS_PURE_PYTHON", None)  # the compiled loops
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            _SIGNAL_IN_COMPILED_LOOP,
            str(marker),
            str(places["corpus"]),
            str(places["out"] / "uni"),
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # not ignored (pytest &)
    )
    try:
        while not marker.exists() and child.poll() is None:  # evidence, not a guess of the time
            time.sleep(0.02)
        assert child.poll() is None, child.communicate()[1].decode()
        child.send_signal(signal.SIGINT)
        stdout, stderr = child.communicate(timeout=300)  # a safety net against a hang, not a speed test
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert (child.returncode, stderr.decode().strip(), stdout) == (130, "toktools: interrupted", b"")
    assert _snapshot(root) == before
    assert os.listdir(places["tmp"]) == []
