"""``--format megatron`` writes Megatron-LM's indexed dataset: ``PREFIX.bin`` + ``PREFIX.idx``.

The layout is checked three ways: byte by byte against the published layout (written out here
from megatron-core's ``_IndexWriter``), with NumPy reading it as megatron-core's ``_IndexReader``
does, and with megatron-core's own ``IndexedDataset`` when its source is installed (it imports
PyTorch at the top; the reading code does not use it, so torch is stubbed when absent).
"""

from __future__ import annotations

import importlib.util
import struct
import sys
import types
from pathlib import Path

import pytest

import toktools
from toktools.corpus.encode import encode_corpus
from toktools.corpus.writers import read_megatron_documents, read_megatron_index

FIXTURE = Path(__file__).parent / "fixtures" / "sample.txt"


@pytest.fixture(scope="module")
def tokenizer():
    return toktools.load("bytebpe-50k")


def expected_documents(tokenizer, lines: list[str], eos: int | None) -> list[list[int]]:
    out = []
    for line in lines:
        ids = tokenizer.encode(line, add_special_tokens=False).ids
        if ids:
            out.append(ids + ([eos] if eos is not None else []))
    return out


def test_index_layout_byte_by_byte(tmp_path: Path, tokenizer) -> None:
    lines = FIXTURE.read_text(encoding="utf-8").splitlines()
    eos = tokenizer.token_to_id("</s>")
    encode_corpus([FIXTURE], tokenizer, tmp_path / "train", format="megatron", engine="reference", workers=1)
    docs = expected_documents(tokenizer, lines, eos)
    raw = (tmp_path / "train.idx").read_bytes()
    assert raw[:9] == b"MMIDIDX\x00\x00"
    assert struct.unpack_from("<Q", raw, 9) == (1,)
    assert raw[17] == 8  # Megatron's DType.uint16: vocabularies below 65,500 ids
    sequences, documents = struct.unpack_from("<QQ", raw, 18)
    assert (sequences, documents) == (len(docs), len(docs) + 1)
    lengths = list(struct.unpack_from(f"<{sequences}i", raw, 34))
    pointers = list(struct.unpack_from(f"<{sequences}q", raw, 34 + 4 * sequences))
    indices = list(struct.unpack_from(f"<{documents}q", raw, 34 + 12 * sequences))
    assert len(raw) == 34 + 12 * sequences + 8 * documents
    assert lengths == [len(d) for d in docs]
    assert pointers == [2 * sum(lengths[:i]) for i in range(sequences)]
    assert indices == list(range(sequences + 1))
    data = (tmp_path / "train.bin").read_bytes()
    assert list(struct.unpack(f"<{len(data) // 2}H", data)) == [i for d in docs for i in d]
    assert read_megatron_documents(tmp_path / "train") == docs


def test_int32_for_large_vocabularies(tmp_path: Path, tokenizer) -> None:
    encode_corpus(
        [FIXTURE], tokenizer, tmp_path / "wide", format="megatron", engine="reference", workers=1, dtype="int32"
    )
    index = read_megatron_index(tmp_path / "wide.idx")
    assert index.dtype_code == 4
    assert index.sequence_pointers[1] == 4 * index.sequence_lengths[0]
    assert read_megatron_documents(tmp_path / "wide") == expected_documents(
        tokenizer, FIXTURE.read_text(encoding="utf-8").splitlines(), tokenizer.token_to_id("</s>")
    )


def test_numpy_reads_it_as_megatron_does(tmp_path: Path, tokenizer) -> None:
    np = pytest.importorskip("numpy")
    encode_corpus([FIXTURE], tokenizer, tmp_path / "np", format="megatron", engine="reference", workers=1)
    buffer = np.memmap(tmp_path / "np.idx", mode="r", order="C")
    count, documents = struct.unpack_from("<QQ", buffer, 18)
    lengths = np.frombuffer(buffer, dtype=np.int32, count=count, offset=34)
    pointers = np.frombuffer(buffer, dtype=np.int64, count=count, offset=34 + lengths.nbytes)
    indices = np.frombuffer(buffer, dtype=np.int64, count=documents, offset=34 + lengths.nbytes + pointers.nbytes)
    data = np.memmap(tmp_path / "np.bin", mode="r", dtype=np.uint16)
    first = np.frombuffer(data, dtype=np.uint16, count=int(lengths[0]), offset=int(pointers[0])).tolist()
    line = next(line for line in FIXTURE.read_text(encoding="utf-8").splitlines() if line)
    assert first == tokenizer.encode(line, add_special_tokens=False).ids + [tokenizer.token_to_id("</s>")]
    assert indices[-1] == count


def _load_megatron_indexed_dataset():
    """megatron-core's ``indexed_dataset`` module, loaded from its installed source."""
    try:
        from megatron.core.datasets import indexed_dataset  # the real thing, with torch

        return indexed_dataset
    except Exception:
        pass
    spec = importlib.util.find_spec("megatron")
    locations = list(spec.submodule_search_locations or []) if spec else []
    source = next(
        (
            Path(p) / "core" / "datasets" / "indexed_dataset.py"
            for p in locations
            if (Path(p) / "core" / "datasets" / "indexed_dataset.py").is_file()
        ),
        None,
    )
    if source is None:
        pytest.skip("megatron-core is not installed (pip install --no-deps megatron-core to run this test)")
    stubs = {
        "torch": types.SimpleNamespace(
            utils=types.SimpleNamespace(data=types.SimpleNamespace(Dataset=object)), Tensor=object
        ),
        "megatron.core.datasets.object_storage_utils": types.SimpleNamespace(
            ObjectStorageConfig=object,
            S3Config=object,
            cache_index_file=None,
            dataset_exists=None,
            get_index_cache_path=None,
            get_object_storage_access=None,
            is_object_storage_path=lambda path: False,
            parse_s3_path=None,
        ),
        "megatron.core.msc_utils": types.SimpleNamespace(
            MultiStorageClientFeature=types.SimpleNamespace(is_enabled=staticmethod(lambda: False))
        ),
        "megatron.core.utils": types.SimpleNamespace(log_single_rank=lambda *args, **kwargs: None),
    }
    saved = {name: sys.modules.get(name) for name in stubs}
    sys.modules.update(stubs)  # type: ignore[arg-type]
    try:
        module_spec = importlib.util.spec_from_file_location("_megatron_indexed_dataset", source)
        module = importlib.util.module_from_spec(module_spec)  # type: ignore[arg-type]
        module_spec.loader.exec_module(module)  # type: ignore[union-attr]
    except Exception as err:  # pragma: no cover - depends on the installed release
        pytest.skip(f"megatron-core's indexed_dataset could not be loaded without PyTorch: {err}")
    finally:
        for name, value in saved.items():
            if value is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = value
    return module


def test_megatron_core_reads_the_output(tmp_path: Path, tokenizer) -> None:
    pytest.importorskip("numpy")
    indexed_dataset = _load_megatron_indexed_dataset()
    lines = FIXTURE.read_text(encoding="utf-8").splitlines()
    encode_corpus(
        [FIXTURE], tokenizer, tmp_path / "mc", format="megatron", engine="reference", workers=1, shard_tokens=400
    )
    docs = expected_documents(tokenizer, lines, tokenizer.token_to_id("</s>"))
    read = []
    for shard in sorted(tmp_path.glob("mc-*.idx")):
        dataset = indexed_dataset.IndexedDataset(str(shard)[: -len(".idx")], multimodal=False, mmap=True)
        assert len(dataset.document_indices) == len(dataset) + 1
        read.extend(dataset[i].tolist() for i in range(len(dataset)))
    assert read == docs


@pytest.mark.parametrize("dtype", ["uint16", "int32"])
def test_the_index_is_the_same_with_and_without_numpy(tmp_path: Path, monkeypatch, dtype: str) -> None:
    """The index's arrays are written with NumPy where it is loaded (the block paths), else
    with ``array``: the same bytes, those of the published layout."""
    from toktools.corpus.writers import DocumentWriter

    rng = __import__("random").Random(5)
    lengths = [rng.randint(1, 300) for _ in range(2_000)]
    written = {}
    for hidden in (False, True):
        if hidden:
            monkeypatch.setitem(sys.modules, "numpy", None)  # as where nothing loaded it
        writer = DocumentWriter("megatron", tmp_path / f"{dtype}-{hidden}", dtype)
        for n in lengths:
            writer.write([n % 1000] * n)
            writer.end_document()
        writer.finish()
        written[hidden] = (tmp_path / f"{dtype}-{hidden}.idx").read_bytes()
    size = 2 if dtype == "uint16" else 4
    count = len(lengths)
    expected = (
        b"MMIDIDX\x00\x00"
        + struct.pack("<QBQQ", 1, 8 if dtype == "uint16" else 4, count, count + 1)
        + struct.pack(f"<{count}i", *lengths)
        + struct.pack(f"<{count}q", *[size * sum(lengths[:i]) for i in range(count)])
        + struct.pack(f"<{count + 1}q", *range(count + 1))
    )
    assert written[False] == written[True] == expected
