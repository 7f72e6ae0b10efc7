"""``toktools.encode_corpus`` / ``toktools encode --format megatron|npy|bin``: documents, EOS/BOS,
shards with a manifest, resuming, refusals, worker-count and engine identity, long documents
cut only where it is provably safe, and failures that leave nothing half-written."""

from __future__ import annotations

import errno
import gzip
import hashlib
import json
import random
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import read_corpus_sample

import toktools
from toktools.cli import main
from toktools.corpus import writers as corpus_writers
from toktools.corpus.documents import safe_cut
from toktools.corpus.encode import encode_corpus
from toktools.corpus.writers import read_megatron_documents
from toktools.engines.analysis import cuttable
from toktools.engines.base import corpus_document, document_fingerprint
from toktools.engines.choice import make_engine
from toktools.engines.tiktoken_engine import tiktoken_available
from toktools.engines.tokenizers_engine import TokenizersEngine
from toktools.errors import ToktoolsError

FIXTURE = Path(__file__).parent / "fixtures" / "sample.txt"


@pytest.fixture(autouse=True)
def no_analysis_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """Run the exactness checks every time instead of reading ~/.cache/toktools."""
    monkeypatch.setenv("TOKTOOLS_CACHE_DIR", "")


@pytest.fixture(scope="module")
def bpe():
    """A small byte-level BPE with RoBERTa's special tokens, trained on the fixture and the
    samples (a 50K vocabulary would only make every run slower to set up)."""
    from toktools.formats import from_tokenizer_json
    from toktools.training import tokenizers_backend as fast

    text = (
        FIXTURE.read_text(encoding="utf-8")
        + read_corpus_sample("mixed_sample.txt", 30_000)
        + read_corpus_sample("zh_novels.txt", 10_000)
    )
    trained = fast.train_bytebpe(
        texts=text.splitlines(),
        vocab_size=1200,
        min_frequency=2,
        special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"],
    )
    return from_tokenizer_json(json.loads(trained.to_str()))


@pytest.fixture(scope="module")
def bert():
    return toktools.load("wordpiece-30k")


def ids(tokenizer, text: str) -> list[int]:
    return tokenizer.encode(text, add_special_tokens=False).ids


def shard_docs(prefix: Path) -> list[list[int]]:
    out = []
    for idx in sorted(prefix.parent.glob(prefix.name + "-*.idx")):
        out.extend(read_megatron_documents(str(idx)[: -len(".idx")]))
    return out


def digest(paths) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(paths)}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """English and Chinese lines, with blank lines and a special token, ~60 KB."""
    text = read_corpus_sample("mixed_sample.txt", 40_000) + read_corpus_sample("zh_novels.txt", 20_000)
    lines = text.splitlines()
    lines[5] = "before <|endoftext|> after </s> tail"
    path = tmp_path_factory.mktemp("corpus") / "mixed.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


# ---------------------------------------------------------------------------------------------
# Documents
# ---------------------------------------------------------------------------------------------


def test_documents_per_mode_with_eos_and_bos(tmp_path: Path, bpe) -> None:
    text = "First line.\nSecond line\n\n\nThird, after blanks.\n   \nlast 我们"
    source = tmp_path / "in.txt"
    source.write_text(text, encoding="utf-8")
    eos, bos = bpe.token_to_id("</s>"), bpe.token_to_id("<s>")
    expected = {
        "line": ["First line.", "Second line", "Third, after blanks.", "   ", "last 我们"],
        "blank-line": ["First line.\nSecond line", "Third, after blanks.", "last 我们"],
        "file": [text],
    }
    for mode, documents in expected.items():
        out = tmp_path / mode
        encode_corpus([source], bpe, out, document=mode, engine="reference", workers=1, prepend_bos=True)
        assert read_megatron_documents(out) == [[bos] + ids(bpe, d) + [eos] for d in documents], mode


def test_jsonl_field_and_a_record_without_it(tmp_path: Path, bpe) -> None:
    source = tmp_path / "in.jsonl.gz"
    records = [{"text": "one document", "id": 1}, {"text": "two\nlines"}, {}]
    with gzip.open(source, "wt", encoding="utf-8") as out:
        out.write("\n".join(json.dumps(r) for r in records[:2]) + "\n\n")
    encode_corpus([source], bpe, tmp_path / "j", document="jsonl", engine="tokenizers", append_eos=False)
    assert read_megatron_documents(tmp_path / "j") == [ids(bpe, "one document"), ids(bpe, "two\nlines")]
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(records[0]) + "\n" + json.dumps({"body": "x"}) + "\n", encoding="utf-8")
    with pytest.raises(ToktoolsError, match=r"bad\.jsonl, line 2: no 'text' field"):
        encode_corpus([bad], bpe, tmp_path / "k", document="jsonl")
    assert not list(tmp_path.glob("k*"))  # nothing half-written


def test_npy_and_bin_hold_plain_ids_and_document_offsets(tmp_path: Path, bert) -> None:
    np = pytest.importorskip("numpy")
    lines = [line for line in FIXTURE.read_text(encoding="utf-8").splitlines()]
    documents = [ids(bert, line) for line in lines if ids(bert, line)]
    encode_corpus([FIXTURE], bert, tmp_path / "t.npy", format="npy", engine="tokenizers")
    encode_corpus([FIXTURE], bert, tmp_path / "t.bin", format="bin", engine="reference", dtype="uint32", workers=1)
    flat = [i for d in documents for i in d]
    assert np.load(tmp_path / "t.npy").tolist() == flat  # no [CLS]/[SEP]: plain ids
    offsets = np.load(tmp_path / "t.offsets.npy").tolist()
    assert offsets == [sum(len(d) for d in documents[:k]) for k in range(len(documents) + 1)]
    assert np.fromfile(tmp_path / "t.bin", dtype="<u4").tolist() == flat
    assert np.fromfile(tmp_path / "t.offsets.bin", dtype="<i8").tolist() == offsets


# ---------------------------------------------------------------------------------------------
# Same bytes for every engine and worker count
# ---------------------------------------------------------------------------------------------


@pytest.mark.shared
def test_output_is_identical_for_every_engine_and_worker_count(tmp_path: Path, corpus: Path, bpe) -> None:
    runs = {}
    for engine, workers in (
        ("reference", 1),
        ("reference", 2),
        ("tokenizers", None),
        ("tiktoken", 1),
        ("tiktoken", 2),
        ("gigatoken", None),
    ):
        if engine == "tiktoken" and not tiktoken_available():
            continue
        out = tmp_path / f"{engine}{workers}"
        result = encode_corpus([corpus], bpe, out, engine=engine, workers=workers, shard_tokens=5000, batch_bytes=7000)
        assert result.engine == engine
        runs[(engine, workers)] = list(digest(out.parent.glob(out.name + "-0*")).values())
    assert len(set(map(tuple, runs.values()))) == 1
    expected = [
        ids(bpe, line) + [bpe.token_to_id("</s>")]
        for line in corpus.read_text(encoding="utf-8").splitlines()
        if ids(bpe, line)
    ]
    assert shard_docs(tmp_path / "reference1") == expected


# ---------------------------------------------------------------------------------------------
# Shards, manifest, resume, refusals
# ---------------------------------------------------------------------------------------------


def test_manifest_describes_every_shard(tmp_path: Path, corpus: Path, bpe) -> None:
    result = encode_corpus([corpus], bpe, tmp_path / "s", engine="tokenizers", shard_tokens=6000)
    manifest = json.loads((tmp_path / "s-manifest.json").read_text())
    assert manifest["complete"] and manifest["engine"] == "tokenizers"
    assert manifest["tokenizer"]["sha256"] == document_fingerprint(corpus_document(bpe.to_tokenizer_json()))
    assert (
        manifest["settings"]["append_eos"] == bpe.token_to_id("</s>") and manifest["settings"]["shard_tokens"] == 6000
    )
    assert manifest["inputs"] == [
        {"path": str(corpus), "size": corpus.stat().st_size, "sha256": hashlib.sha256(corpus.read_bytes()).hexdigest()}
    ]
    assert len(manifest["shards"]) == result.shards_written > 2
    for shard in manifest["shards"]:
        docs = read_megatron_documents(tmp_path / f"s-{shard['index']:05d}")
        assert shard["documents"] == len(docs) and shard["tokens"] == sum(map(len, docs))
        assert shard["tokens"] >= 6000 or shard is manifest["shards"][-1]
        for entry in shard["files"].values():
            assert hashlib.sha256((tmp_path / entry["name"]).read_bytes()).hexdigest() == entry["sha256"]
    assert manifest["tokens"] == result.tokens == sum(s["tokens"] for s in manifest["shards"])


def test_rerun_resumes_missing_shards_and_refuses_other_settings(tmp_path: Path, corpus: Path, bpe) -> None:
    out = tmp_path / "r"
    first = encode_corpus([corpus], bpe, out, engine="tokenizers", shard_tokens=6000)
    before = digest(tmp_path.glob("r-0*"))
    # nothing to do: every shard verifies
    again = encode_corpus(
        [corpus], bpe, out, engine="tiktoken" if tiktoken_available() else "reference", shard_tokens=6000
    )
    assert (again.shards_written, again.shards_kept) == (0, first.shards_written)
    # an interrupted run: shard 2 corrupt, later shards gone, manifest not complete
    manifest = json.loads((tmp_path / "r-manifest.json").read_text())
    manifest["complete"] = False
    (tmp_path / "r-manifest.json").write_text(json.dumps(manifest))
    (tmp_path / "r-00002.bin").write_bytes(b"\x00\x01")
    for path in tmp_path.glob("r-0000[3-9].*"):
        path.unlink()
    resumed = encode_corpus([corpus], bpe, out, engine="reference", workers=2, shard_tokens=6000)
    assert resumed.shards_kept == 2 and resumed.shards_written == first.shards_written - 2
    assert digest(tmp_path.glob("r-0*")) == before
    with pytest.raises(ToktoolsError, match=r"other settings \(shard_tokens: 6000, now 7000\)"):
        encode_corpus([corpus], bpe, out, shard_tokens=7000)
    with pytest.raises(ToktoolsError, match=r"other settings \(document: 'line', now 'blank-line'\)"):
        encode_corpus([corpus], bpe, out, shard_tokens=6000, document="blank-line")
    assert digest(tmp_path.glob("r-0*")) == before  # refusals touch nothing
    smaller = encode_corpus([corpus], bpe, out, shard_tokens=20000, force=True, engine="tokenizers")
    assert sorted(p.name for p in tmp_path.glob("r-0*")) == [
        f"r-{i:05d}.{ext}" for i in range(smaller.shards_written) for ext in ("bin", "idx")
    ]


def test_existing_output_needs_force_and_output_cannot_be_an_input(tmp_path: Path, bpe) -> None:
    source = tmp_path / "in.txt"
    source.write_text("hello world\n", encoding="utf-8")
    (tmp_path / "o.bin").write_bytes(b"old")
    with pytest.raises(ToktoolsError, match=r"o\.bin already exists; use --force"):
        encode_corpus([source], bpe, tmp_path / "o", engine="tokenizers")
    assert (tmp_path / "o.bin").read_bytes() == b"old"
    encode_corpus([source], bpe, tmp_path / "o", engine="tokenizers", force=True)
    assert read_megatron_documents(tmp_path / "o") == [ids(bpe, "hello world") + [bpe.token_to_id("</s>")]]
    with pytest.raises(ToktoolsError, match="over the input"):
        encode_corpus([tmp_path / "o.bin"], bpe, tmp_path / "o", force=True)
    with pytest.raises(ToktoolsError, match="over the input"):
        encode_corpus([source], bpe, tmp_path / "in.txt", format="bin", force=True)
    assert source.read_text() == "hello world\n"


def test_full_disk_leaves_no_partial_shard_and_an_honest_manifest(
    tmp_path: Path, corpus: Path, bpe, monkeypatch
) -> None:
    budget = {"bytes": 30_000}

    class FullDisk:
        """A file that fails like a full disk once the budget is spent."""

        def __init__(self, handle):
            self.handle = handle

        def write(self, data: bytes) -> int:
            budget["bytes"] -= len(data)
            if budget["bytes"] < 0:
                raise OSError(errno.ENOSPC, "No space left on device")
            return self.handle.write(data)

        def __getattr__(self, name):
            return getattr(self.handle, name)

    real_init = corpus_writers._AtomicFile.__init__

    def init(self, target):
        real_init(self, target)
        self.out = FullDisk(self.out)

    monkeypatch.setattr(corpus_writers._AtomicFile, "__init__", init)
    with pytest.raises(ToktoolsError, match="No space left on device"):
        encode_corpus([corpus], bpe, tmp_path / "d", engine="tokenizers", shard_tokens=6000)
    manifest = json.loads((tmp_path / "d-manifest.json").read_text())
    assert not manifest["complete"]
    claimed = {entry["name"] for shard in manifest["shards"] for entry in shard["files"].values()}
    on_disk = {p.name for p in tmp_path.iterdir() if p.name != "d-manifest.json"}
    assert on_disk == claimed  # no temporary file, no shard the manifest does not list
    monkeypatch.setattr(corpus_writers._AtomicFile, "__init__", real_init)
    resumed = encode_corpus([corpus], bpe, tmp_path / "d", engine="tokenizers", shard_tokens=6000)
    assert resumed.shards_kept == len(manifest["shards"])
    assert shard_docs(tmp_path / "d") == [
        ids(bpe, line) + [bpe.token_to_id("</s>")]
        for line in corpus.read_text(encoding="utf-8").splitlines()
        if ids(bpe, line)
    ]


def test_verification_stops_at_the_first_difference(tmp_path: Path, corpus: Path, bpe, monkeypatch) -> None:
    real = TokenizersEngine.encode_batch

    def off_by_one(self, texts):
        return [[i + 1 for i in row] if " the " in text else row for text, row in zip(texts, real(self, texts))]

    monkeypatch.setattr(TokenizersEngine, "encode_batch", off_by_one)
    with pytest.raises(
        ToktoolsError, match=r"engine tokenizers disagrees with the reference on .*mixed\.txt, document at line \d+"
    ):
        encode_corpus([corpus], bpe, tmp_path / "v", engine="tokenizers", verify=200)
    assert not list(tmp_path.glob("v*"))


# ---------------------------------------------------------------------------------------------
# Long documents: cut only where the ids cannot change
# ---------------------------------------------------------------------------------------------


@pytest.mark.shared
@pytest.mark.parametrize("name", ["bytebpe-50k", "wordpiece-30k"])
def test_safe_cuts_never_change_the_ids(name: str) -> None:
    """Cut real text at every safe place in turn: the ids of the parts, joined, are the ids of
    the whole (the claim that :func:`cuttable` makes, tested on real text)."""
    tokenizer = toktools.load(name)
    assert cuttable(tokenizer.to_tokenizer_json())
    engine = make_engine("tokenizers", tokenizer.to_tokenizer_json())
    text = read_corpus_sample("mixed_sample.txt", 6_000) + " 我们  x\u3000 y \t z's 'll\u00a0 ok  <s> 12 34"
    cuts = sorted({safe_cut(text, i) for i in range(1, len(text))} - {0})
    assert len(cuts) > 100
    cuts = cuts[:: len(cuts) // 100] + cuts[-20:]  # the special cases sit at the end
    rows = engine.encode_batch([text] + [p for c in cuts for p in (text[:c], text[c:])])
    whole, parts = rows[0], rows[1:]
    for k, cut in enumerate(cuts):
        assert parts[2 * k] + parts[2 * k + 1] == whole, (cut, text[cut - 5 : cut + 5])


def test_a_long_line_is_encoded_in_segments_with_the_same_ids(tmp_path: Path, bpe) -> None:
    rng = random.Random(1)
    words = ["alpha", "beta,", "gamma.", "δέλτα", "我们的", "  spaced", "\ttab", "<s>", "x'll"]
    line = " ".join(rng.choice(words) for _ in range(40_000))  # ~300 KB in one line
    source = tmp_path / "long.txt"
    source.write_text("short one\n" + line + "\nshort two\n", encoding="utf-8")
    result = encode_corpus(
        [source], bpe, tmp_path / "l", engine="tokenizers", segment_chars=5_000, batch_bytes=20_000, append_eos=False
    )
    expected = [
        ids(bpe, "short one"),
        make_engine("tokenizers", bpe.to_tokenizer_json()).encode_batch([line])[0],
        ids(bpe, "short two"),
    ]
    assert read_megatron_documents(tmp_path / "l") == expected and result.documents == 3


def test_a_long_document_without_a_safe_cut_is_refused(tmp_path: Path, bpe) -> None:
    source = tmp_path / "zh.txt"
    source.write_text("我" * 3_000_000 + "\n", encoding="utf-8")  # 9 MB, no space anywhere
    with pytest.raises(ToktoolsError, match=r"zh\.txt, line 1: document longer than 2 MB and it holds no space"):
        encode_corpus([source], bpe, tmp_path / "z", engine="tokenizers", max_document_bytes=2 << 20)
    assert not list(tmp_path.glob("z.*")) and not list(tmp_path.glob(".z*"))


# ---------------------------------------------------------------------------------------------
# The command line
# ---------------------------------------------------------------------------------------------


def run(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_cli_megatron_shards_and_json_summary(tmp_path: Path, bpe) -> None:
    from toktools.formats import dumps_tokenizer_json

    (tmp_path / "tok").mkdir()
    (tmp_path / "tok" / "tokenizer.json").write_text(dumps_tokenizer_json(bpe.to_tokenizer_json()), encoding="utf-8")
    result = run(
        "encode",
        "-t",
        str(tmp_path / "tok"),
        "--format",
        "megatron",
        "-o",
        str(tmp_path / "c"),
        "--shard-tokens",
        "200",
        "--engine",
        "tokenizers",
        "--prepend-bos",
        "--append-eos=<pad>",
        "--json",
        str(FIXTURE),
    )
    assert result.exit_code == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["engine"] == "tokenizers" and summary["shards_written"] == len(list(tmp_path.glob("c-*.idx")))
    lines = [line for line in FIXTURE.read_text(encoding="utf-8").splitlines() if ids(bpe, line)]
    assert shard_docs(tmp_path / "c") == [
        [bpe.token_to_id("<s>")] + ids(bpe, line) + [bpe.token_to_id("<pad>")] for line in lines
    ]


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["--format", "megatron", "--engine", "tiktoken", "-t", "wordpiece-30k"],
            "tiktoken is not exact for this tokenizer: model 'WordPiece' is not BPE",
        ),
        (
            ["--format", "megatron", "-t", "bytebpe-50k", "--append-eos=<nope>"],
            "EOS token '<nope>' is not in the vocabulary",
        ),
    ],
)  # conflicting options are usage errors (exit 2): the table in test_warnings.py
def test_cli_errors_are_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    result = run("encode", *args, "-o", str(tmp_path / "e"), str(FIXTURE))
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines() == [
        f"toktools: error: {result.stderr.strip()[len('toktools: error: ') :]}"
    ]
    assert message in result.stderr and "Traceback" not in result.stderr


def test_progress_reports_bytes_of_the_total_and_tokens(tmp_path: Path, corpus: Path, bpe) -> None:
    seen = []
    result = encode_corpus(
        [corpus],
        bpe,
        tmp_path / "p",
        engine="tokenizers",
        batch_bytes=8_000,
        progress=lambda done, total, tokens: seen.append((done, total, tokens)),
    )
    assert len(seen) > 3  # it moves while encoding, not only at the end
    assert all(total == corpus.stat().st_size for _, total, _ in seen)
    assert [done for done, _, _ in seen] == sorted(done for done, _, _ in seen)
    assert [tokens for _, _, tokens in seen] == sorted(tokens for _, _, tokens in seen)
    assert seen[-1][0] == corpus.stat().st_size and seen[-1][2] == result.tokens


def test_standard_input_and_the_cli_defaults(tmp_path: Path, bpe) -> None:
    from toktools.formats import dumps_tokenizer_json

    (tmp_path / "tok.json").write_text(dumps_tokenizer_json(bpe.to_tokenizer_json()), encoding="utf-8")
    result = CliRunner().invoke(
        main,
        [
            "encode",
            "-t",
            str(tmp_path / "tok.json"),
            "--format",
            "megatron",
            "-o",
            str(tmp_path / "in"),
            "--verify",
            "0",
        ],
        input="one two\n\nthree\n",
    )
    assert result.exit_code == 0, result.stderr
    assert "2 documents" in result.stderr
    eos = bpe.token_to_id("</s>")
    assert read_megatron_documents(tmp_path / "in") == [ids(bpe, "one two") + [eos], ids(bpe, "three") + [eos]]


@pytest.mark.parametrize("mode", ["line", "blank-line", "file"])
def test_lines_longer_than_a_read_block_are_streamed(tmp_path: Path, bpe, monkeypatch, mode: str) -> None:
    """Read blocks of 4 KB so that one line spans many blocks (and UTF-8 characters are cut
    between blocks): the documents and their ids are those of the whole text."""
    from toktools.corpus import documents as corpus_documents

    monkeypatch.setattr(corpus_documents, "READ_BYTES", 4096)
    rng = random.Random(mode)
    long_line = " ".join(rng.choice(["我们的", "héllo", "world,", "x'll", "\t", "12"]) for _ in range(9_000))
    text = f"intro\n{long_line}\nafter\n\nlast"
    source = tmp_path / "long.txt"
    source.write_text(text, encoding="utf-8")
    encode_corpus(
        [source], bpe, tmp_path / "o", document=mode, engine="tokenizers", segment_chars=3_000, append_eos=False
    )
    documents = {
        "line": ["intro", long_line, "after", "last"],
        "blank-line": [f"intro\n{long_line}\nafter", "last"],
        "file": [text],
    }[mode]
    engine = make_engine("tokenizers", bpe.to_tokenizer_json())
    assert read_megatron_documents(tmp_path / "o") == engine.encode_batch(documents)


def test_verification_runs_beside_the_encoding_and_commits_no_shard_it_has_not_checked(
    tmp_path: Path, corpus: Path, bpe, monkeypatch
) -> None:
    """The reference runs in a checker process; every answer is read before a shard is
    committed, so a difference in the first shard leaves no shard and no complete manifest."""
    real = TokenizersEngine.encode_batch
    monkeypatch.setattr(
        TokenizersEngine,
        "encode_batch",
        lambda self, texts: [[i + 1 for i in row] for row in real(self, texts)],
    )
    with pytest.raises(ToktoolsError, match="engine tokenizers disagrees with the reference"):
        encode_corpus([corpus], bpe, tmp_path / "v", engine="tokenizers", verify=16, shard_tokens=6000)
    assert not list(tmp_path.glob("v-0*"))
    monkeypatch.setattr(TokenizersEngine, "encode_batch", real)
    result = encode_corpus([corpus], bpe, tmp_path / "w", engine="tokenizers", verify=16, shard_tokens=6000)
    assert result.verified >= 16  # at least one document per place (--verify 16)


def test_outputs_beside_a_tokenizer_file_can_be_written_again_but_not_its_own_files(tmp_path: Path) -> None:
    """A tokenizer given as a file protects itself and the tokenizer files a loader reads beside
    it (``tokenizer_config.json`` ...), not every file of its directory: an earlier run's output
    there is overwritten with ``--force`` like any other."""
    import shutil

    shipped = Path(toktools.__file__).parent / "vocabs" / "bytebpe-50k"
    if not shipped.is_dir():  # editable checkout: the vocabularies sit at the top level
        shipped = Path(__file__).parent.parent / "vocabs" / "bytebpe-50k"
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(shipped / name, tmp_path / name)
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("one document\nanother one\n", encoding="utf-8")
    command = [
        "encode",
        "-t",
        str(tmp_path / "tokenizer.json"),
        str(corpus),
        "--format",
        "megatron",
        "-o",
        str(tmp_path / "out"),
        "--force",
        "--no-progress",
    ]
    first = CliRunner().invoke(main, command)
    assert first.exit_code == 0, first.output
    written = (tmp_path / "out.bin").read_bytes()
    again = CliRunner().invoke(main, command)
    assert again.exit_code == 0, again.output
    assert (tmp_path / "out.bin").read_bytes() == written
    config = (tmp_path / "tokenizer_config.json").read_bytes()
    refused = CliRunner().invoke(
        main, [*command[:-4], "--format", "ids", "-o", str(tmp_path / "tokenizer_config.json"), "--force"]
    )
    assert refused.exit_code == 1
    assert "over the input" in refused.output
    assert (tmp_path / "tokenizer_config.json").read_bytes() == config


def test_a_tokenizer_without_eos_says_how_to_go_on(tmp_path: Path) -> None:
    """Megatron output ends documents with EOS by default; a tokenizer with none (a Unigram
    trained with only ``<unk>``, say) gets one line naming both ways on: a token, or none."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    library = Tokenizer(models.WordLevel({"[UNK]": 0, "one": 1, "two": 2}, unk_token="[UNK]"))
    library.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    library.add_special_tokens(["[UNK]"])
    library.save(str(tmp_path / "tokenizer.json"))
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("one two\ntwo\n", encoding="utf-8")
    command = [
        "encode",
        "-t",
        str(tmp_path / "tokenizer.json"),
        str(corpus),
        "--format",
        "megatron",
        "-o",
        str(tmp_path / "out"),
        "--no-progress",
    ]
    refused = CliRunner().invoke(main, command)
    assert refused.exit_code == 1
    assert "has no EOS token" in refused.output and "--no-append-eos" in refused.output
    assert not (tmp_path / "out.bin").exists()
    without = CliRunner().invoke(main, [*command, "--no-append-eos"])
    assert without.exit_code == 0, without.output
    assert read_megatron_documents(tmp_path / "out") == [[1, 2], [2]]


def test_a_unigram_vocabulary_past_uint16_gets_wider_ids_and_its_size_in_the_manifest(tmp_path: Path) -> None:
    """A Unigram vocabulary is a list of ``[piece, score]`` (ids are positions), not a dict: XLM-R
    and mT5 have 250K pieces. ``--dtype auto`` must see all of them and choose Megatron's int32
    (uint32 for npy), and the manifest must state the real vocabulary size."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    pieces = [("<unk>", 0.0), ("</s>", 0.0)] + [(f"▁w{k}", -1.0 - k / 100_000) for k in range(70_000)]
    tok = Tokenizer(models.Unigram(pieces, unk_id=0))
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.add_special_tokens(["</s>"])
    tok.save(str(tmp_path / "tokenizer.json"))
    text = tmp_path / "text.txt"
    text.write_text("w1 w69999 w65536\nw0 w42\n", encoding="utf-8")
    expected = [tok.encode(line, add_special_tokens=False).ids + [1] for line in text.read_text().splitlines()]
    assert max(map(max, expected)) > 65_535  # the case: ids that uint16 cannot hold

    result = CliRunner().invoke(
        main,
        [
            "encode",
            "-t",
            str(tmp_path / "tokenizer.json"),
            "--format",
            "megatron",
            "-o",
            str(tmp_path / "out"),
            "--shard-tokens",
            "100",
            str(text),
        ],
    )
    assert result.exit_code == 0, result.output
    assert shard_docs(tmp_path / "out") == expected
    manifest = json.loads((tmp_path / "out-manifest.json").read_text())
    assert manifest["tokenizer"]["vocab_size"] == len(pieces)
    assert manifest["settings"]["dtype"] == "int32"
    np = pytest.importorskip("numpy")
    encode_corpus([text], str(tmp_path / "tokenizer.json"), tmp_path / "flat.npy", format="npy")
    assert np.load(tmp_path / "flat.npy").dtype == np.uint32
    assert np.load(tmp_path / "flat.npy").tolist() == [i for doc in expected for i in doc[:-1]]


def test_the_options_object_holds_every_keyword_of_encode_corpus_with_its_default() -> None:
    """``toktools.encode_corpus`` keeps its keywords and builds one ``EncodeOptions`` from them,
    which every way of running takes whole: the two lists of options cannot drift apart."""
    import dataclasses
    import inspect

    from toktools.corpus.options import EncodeOptions

    keywords = {
        name: parameter.default
        for name, parameter in inspect.signature(toktools.encode_corpus).parameters.items()
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY
    }
    fields = {f.name: f.default for f in dataclasses.fields(EncodeOptions)}
    assert list(keywords) == list(fields) and keywords == fields
    with pytest.raises(dataclasses.FrozenInstanceError):
        EncodeOptions().workers = 2  # type: ignore[misc]


def test_shards_are_recorded_only_once_on_disk_and_a_failed_sync_stops_the_run(
    tmp_path: Path, corpus: Path, bpe, monkeypatch
) -> None:
    """Finished shards are synced and renamed on the committer's thread while the next is
    encoded: each manifest written lists only shards already in place, and a shard whose sync
    fails stops the run with its error, leaving no temporary and no later shard recorded."""
    from toktools.corpus import shards as corpus_shards

    real_write = corpus_shards.write_manifest
    seen: list[int] = []

    def checked_write(path: Path, manifest: dict) -> None:
        for shard in manifest["shards"]:
            for entry in shard["files"].values():
                assert (path.parent / entry["name"]).stat().st_size == entry["bytes"]
        seen.append(len(manifest["shards"]))
        real_write(path, manifest)

    monkeypatch.setattr(corpus_shards, "write_manifest", checked_write)
    result = encode_corpus([corpus], bpe, tmp_path / "ok", engine="tokenizers", shard_tokens=6000)
    assert result.shards_written >= 3 and seen == [*range(1, result.shards_written + 1), result.shards_written]

    real_sync = corpus_writers._AtomicFile.sync_and_close
    synced: list[str] = []

    def failing_sync(self) -> None:
        synced.append(self.target.name)
        if self.target.name.startswith("bad-00002"):
            raise ToktoolsError(f"cannot write {self.target}: Input/output error")
        real_sync(self)

    monkeypatch.setattr(corpus_writers._AtomicFile, "sync_and_close", failing_sync)
    with pytest.raises(ToktoolsError, match="bad-00002.*Input/output error"):
        encode_corpus([corpus], bpe, tmp_path / "bad", engine="tokenizers", shard_tokens=6000)
    manifest = json.loads((tmp_path / "bad-manifest.json").read_text())
    assert not manifest["complete"] and len(manifest["shards"]) == 2
    on_disk = {p.name for p in tmp_path.iterdir() if p.name.startswith("bad")}
    assert on_disk == {"bad-manifest.json", "bad-00000.bin", "bad-00000.idx", "bad-00001.bin", "bad-00001.idx"}
    assert not any(name.startswith("bad-00003") for name in synced)  # nothing after the failure
