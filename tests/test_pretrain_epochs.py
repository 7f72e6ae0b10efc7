"""`pretrain-data --epochs N` with subword sampling: one file per epoch, each resampled.

The model is a Unigram ``.model`` trained by sentencepiece's own trainer on the shared corpora
(the suite's ``unigram_user``: ``<s>``/``</s>`` control pieces, ``<mask>`` user-defined); the corpus is in
BERT's layout built from :mod:`real_shapes`' English paragraphs, Chinese without spaces and a
20K-character line. Sampled segmentations are checked with sentencepiece itself: each decodes
to the text sentencepiece's own ids decode to; at ``alpha`` 0 the ids are sentencepiece's.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import real_shapes
from _spm_models import MODELS, train
from click.testing import CliRunner

from toktools.cli import main
from toktools.corpus.reading import expand_sources
from toktools.formats import load, resolve
from toktools.pretraining.epochs import epoch_outputs
from toktools.pretraining.examples import encode_documents, iter_documents
from toktools.pretraining.masking import masking_info
from toktools.subword_sampling import Sampling, apply_sampling, epoch_seed

pq = pytest.importorskip("pyarrow.parquet")
spm = pytest.importorskip("sentencepiece")


def run(*args: str, input: str | None = None):
    return CliRunner().invoke(main, list(args), input=input, catch_exceptions=False)


@pytest.fixture(scope="module")
def spm_model() -> Path:
    return train("unigram_user", **MODELS["unigram_user"])  # shared with the other sentencepiece tests


def bert_layout(path: Path, *, english: int, chinese: int, long_chars: int) -> Path:
    """Documents of English sentences (a line each), Chinese paragraphs without spaces, and a
    document that is one long line; a blank line between documents."""
    en = [s for line in real_shapes.english_lines()[:400] for s in re.split(r"(?<=[.!?])\s+(?=[A-Z])", line)]
    zh = [line.replace(" ", "").replace("\u3000", "") for line in real_shapes.chinese_lines()]
    documents = [en[i : i + 10] for i in range(0, english, 10)]
    documents += [zh[i : i + 5] for i in range(0, chinese, 5)]
    long_line = " ".join(real_shapes.english_lines()[2000:2400])[:long_chars]
    documents.append([long_line])
    path.write_text("\n\n".join("\n".join(d) for d in documents) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    """~150 sentences (two workers get a share each), ~25 KB; the long shapes are in the full twin."""
    return bert_layout(tmp_path_factory.mktemp("epochs") / "corpus.txt", english=130, chinese=20, long_chars=5_000)


def sentences_of(corpus: Path) -> list[str]:
    return [s for document in iter_documents(expand_sources([str(corpus)])) for s in document]


def text_stream(path: Path, special: set[int]) -> list[int]:
    """The non-special ids of every row in order: with --objective mlm and --dynamic, the
    sentences' ids one after the other (blocks only add [CLS], [SEP] and separators)."""
    rows = pq.read_table(path).column("input_ids").to_pylist()
    return [i for row in rows for i in row if i not in special]


def specials(model: Path | str) -> set[int]:
    """The ids the examples add around the text: the template's, the separator's, padding."""
    info = masking_info(load(str(model)))
    return {i for i in (info.cls_id, info.sep_id, info.pad_id, info.mask_id) if i is not None}


def test_epoch_seeds_and_names():
    assert epoch_seed(7, 0) == 7
    seeds = {epoch_seed(7, k) for k in range(1, 50)} | {epoch_seed(8, k) for k in range(1, 50)}
    assert len(seeds) == 98 and all(0 <= s < 2**63 for s in seeds)
    assert epoch_seed(7, 3) == epoch_seed(7, 3)  # no process-dependent hash
    assert epoch_outputs("out/a.parquet", 1) == [Path("out/a.parquet")]
    assert epoch_outputs("out/a.parquet", 3) == [Path(f"out/a.epoch{k}.parquet") for k in range(3)]
    assert epoch_outputs("a.pq", 11)[10] == Path("a.epoch10.pq") and epoch_outputs("a.pq", 11)[0] == Path(
        "a.epoch00.pq"
    )


def test_epochs_are_byte_identical_for_any_worker_count_and_hash_seed(spm_model, corpus, tmp_path):
    args = ["pretrain-data", str(corpus), "-t", str(spm_model), "--max-length", "64", "--dynamic"]
    args += ["--sample-alpha", "0.1", "--epochs", "2", "--seed", "5"]
    one = tmp_path / "w1.parquet"
    result = run(*args, "-o", str(one), "--workers", "1")
    assert result.exit_code == 0, result.stderr
    assert "w1.epoch1.parquet" in result.stderr
    two = tmp_path / "w2.parquet"  # two workers and another hash seed, in a process of its own
    subprocess.run(
        [sys.executable, "-m", "toktools.cli", *args, "-o", str(two), "--workers", "2", "--no-progress"],
        check=True,
        capture_output=True,
        env={**os.environ, "PYTHONHASHSEED": "4321", "PYTHONPATH": str(Path(__file__).resolve().parent.parent)},
    )
    files = [[p.read_bytes() for p in epoch_outputs(out, 2)] for out in (one, two)]
    assert files[0] == files[1]
    assert files[0][0] != files[0][1]  # epochs differ
    # epoch 0 is seeded by --seed itself: --epochs 1 writes the same rows (the metadata says 1 epoch)
    single = tmp_path / "single.parquet"
    assert run(*args[:-4], "--epochs", "1", "--seed", "5", "-o", str(single)).exit_code == 0
    assert pq.read_table(single).to_pydict() == pq.read_table(epoch_outputs(one, 2)[0]).to_pydict()


def test_every_epoch_decodes_to_the_text_and_alpha_zero_is_sentencepiece(spm_model, corpus, tmp_path):
    processor = spm.SentencePieceProcessor(model_file=str(spm_model))
    sentences = sentences_of(corpus)
    exact = [i for sentence in sentences for i in processor.encode(sentence)]
    special = specials(spm_model)
    base = ["pretrain-data", str(corpus), "-t", str(spm_model), "--max-length", "64", "--dynamic"]
    zero = tmp_path / "zero.parquet"
    assert run(*base, "--sample-alpha", "0", "-o", str(zero)).exit_code == 0
    assert text_stream(zero, special) == exact  # P = 0: sentencepiece's deterministic ids
    out = tmp_path / "sampled.parquet"
    assert run(*base, "--sample-alpha", "0.1", "--epochs", "2", "-o", str(out)).exit_code == 0
    streams = [text_stream(path, special) for path in epoch_outputs(out, 2)]
    for stream in streams:
        assert stream != exact
        assert processor.decode(stream) == processor.decode(exact)
    assert streams[0] != streams[1]
    metadata = pq.read_schema(epoch_outputs(out, 2)[1]).metadata[b"toktools"].decode()
    assert '"epoch": 1' in metadata and '"alpha": 0.1' in metadata and '"run_seed": 12345' in metadata


def test_each_sampled_sentence_decodes_to_its_text(spm_model, corpus):
    """Sentence by sentence (the API under the CLI): every sampled segmentation is one of the
    text, and the epochs draw differently."""
    processor = spm.SentencePieceProcessor(model_file=str(spm_model))
    tokenizer = load(str(spm_model))
    sentences = sentences_of(corpus)
    epochs = []
    for epoch in range(2):
        apply_sampling(tokenizer, Sampling(alpha=0.1), epoch_seed(3, epoch))
        encoded = encode_documents(iter_documents(expand_sources([str(corpus)])), tokenizer, workers=1)
        bounds = encoded.sentence_bounds.tolist()
        pieces = [encoded.ids[bounds[s] : bounds[s + 1]].tolist() for s in range(encoded.sentences)]
        assert len(pieces) == len(sentences)
        for sentence, ids in zip(sentences, pieces, strict=True):
            assert processor.decode(ids) == processor.decode(processor.encode(sentence))
        epochs.append(pieces)
    differ = sum(a != b for a, b in zip(*epochs, strict=True))
    assert differ > len(sentences) // 2


@pytest.mark.full
def test_bpe_dropout_epochs_decode_to_the_text(tmp_path):
    """BPE-dropout (tokenizers' semantics) on a byte-level BPE: each epoch decodes, with
    `tokenizers`, to what the deterministic ids decode to, and the epochs differ."""
    tokenizers = pytest.importorskip("tokenizers")
    corpus = bert_layout(tmp_path / "c.txt", english=20, chinese=5, long_chars=2_000)
    reference = tokenizers.Tokenizer.from_file(str(resolve("bytebpe-50k") / "tokenizer.json"))
    special = specials("bytebpe-50k")
    base = ["pretrain-data", str(corpus), "-t", "bytebpe-50k", "--max-length", "64", "--dynamic"]
    plain = tmp_path / "plain.parquet"
    assert run(*base, "-o", str(plain)).exit_code == 0
    out = tmp_path / "drop.parquet"
    result = run(*base, "--dropout", "0.1", "--epochs", "2", "-o", str(out))
    assert result.exit_code == 0, result.stderr
    exact = text_stream(plain, special)
    streams = [text_stream(path, special) for path in epoch_outputs(out, 2)]
    assert streams[0] != streams[1] and exact not in streams
    for stream in streams:
        assert reference.decode(stream) == reference.decode(exact)


@pytest.mark.parametrize(
    ("extra", "code", "fragment"),
    [
        (["--epochs", "2", "--dynamic"], 2, "identical files"),
        (["--nbest-size", "4"], 2, "--nbest-size is for --sample-alpha"),
        (["--dropout", "0.1", "--sample-alpha", "0.1"], 2, "give one"),
        (["--dropout", "0.1"], 1, "--dropout needs a BPE tokenizer"),
    ],
)
def test_sampling_options_that_cannot_work_are_refused_in_one_line(spm_model, corpus, tmp_path, extra, code, fragment):
    out = tmp_path / "x.parquet"
    result = run("pretrain-data", str(corpus), "-t", str(spm_model), "-o", str(out), *extra)
    assert result.exit_code == code
    assert fragment in result.stderr and "Traceback" not in result.stderr
    assert not list(tmp_path.iterdir())


def test_dropout_on_a_sentencepiece_bpe_model_names_the_rule(tmp_path):
    """The sentencepiece rule's encoder would ignore a tokenizers-style dropout: refused."""
    model = train("bpe", **MODELS["bpe"])
    result = run("encode", "-t", str(model), "--dropout", "0.1", input="some text\n")
    assert result.exit_code == 1
    assert "--model-rule tokenizers" in result.stderr and "Traceback" not in result.stderr
    result = run("encode", "-t", str(model), "--model-rule", "tokenizers", "--dropout", "0.1", input="some text\n")
    assert result.exit_code == 0, result.stderr


@pytest.mark.full
@pytest.mark.parametrize("shape", ["mixed", "long_documents", "chinese_paragraphs"])
def test_real_shapes_resample_deterministically_and_decode(spm_model, tmp_path, shape):
    """Documents of 20K-200K characters and Chinese without spaces, as sentences: two worker
    counts and another hash seed write the same epochs, and each decodes to the text."""
    corpus = real_shapes.build_shape(shape, tmp_path)
    processor = spm.SentencePieceProcessor(model_file=str(spm_model))
    exact = [i for sentence in sentences_of(corpus) for i in processor.encode(sentence)]
    special = specials(spm_model)
    args = ["pretrain-data", str(corpus), "-t", str(spm_model), "--max-length", "512", "--dynamic"]
    args += ["--sample-alpha", "0.1", "--epochs", "2", "--seed", "11"]
    one = tmp_path / "w1.parquet"
    assert run(*args, "-o", str(one), "--workers", "1").exit_code == 0
    two = tmp_path / "w2.parquet"
    subprocess.run(
        [sys.executable, "-m", "toktools.cli", *args, "-o", str(two), "--workers", "2", "--no-progress"],
        check=True,
        capture_output=True,
        env={**os.environ, "PYTHONHASHSEED": "99", "PYTHONPATH": str(Path(__file__).resolve().parent.parent)},
    )
    for a, b in zip(epoch_outputs(one, 2), epoch_outputs(two, 2), strict=True):
        assert a.read_bytes() == b.read_bytes()
    streams = [text_stream(path, special) for path in epoch_outputs(one, 2)]
    assert streams[0] != streams[1]
    for stream in streams:
        assert processor.decode(stream) == processor.decode(exact)
