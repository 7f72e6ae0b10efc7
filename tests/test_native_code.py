"""Compiled kernels kept as machine code (toktools.runtime.machine_code): the first process compiles the
BPE merge with numba and stores its object code in the user cache; later processes load it with
llvmlite alone, without importing numba, and merge to the same ids as ``tokenizers``. A damaged
entry is compiled again, and where there is no cache or the object cannot be loaded, numba's own
``cfunc`` of the same kernel gives the same ids."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("numba")
pytest.importorskip("llvmlite")
tokenizers = pytest.importorskip("tokenizers")

from toktools.io.shipped import shipped_path  # noqa: E402
from toktools.models.bpe.compiled_merge import _KERNEL  # noqa: E402
from toktools.runtime import machine_code as native_code  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
TEXTS = [
    "Tokenizers cut unaffable words differently, don't they? 1,000,000 tokens…",
    "我是中国人，我爱北京天安门。",
    "  leading spaces\tand\ttabs\n\nnew lines   ",
    "émigré naïve façade — Ελληνικά русский 日本語のテキスト 한국어",
    "emoji 👩‍👩‍👧‍👦 and combining a\u0302\u0323 marks",
    "x" * 3000,  # one long word: the kernel's scratch arrays hold it
    "",
]

#: Run in a fresh interpreter: merge TEXTS with the compiled kernel of the shipped byte-level
#: vocabulary, and report the ids, whether numba was imported, and where the code came from.
_PROBE = r"""
import json, sys
from toktools.runtime import machine_code as native_code
from toktools.formats import load
from toktools.engines.ids_only import ids_encoder
texts = json.loads(sys.argv[1])
if sys.argv[3] == "numba":  # as where the shipped IR does not apply: numba compiles the kernel
    native_code.shipped_ir = lambda *kernel: None
encoder = ids_encoder(load(sys.argv[2]))
encoder.load_compiled()
merge = encoder.cache.compute.bulk().compiled(load=False)
assert merge is not None, "no compiled merge"
ids, counts = merge.ids_of_texts([encoder._plain_words(t) for t in texts])
ids, counts = ids.tolist(), counts.tolist()
out, at = [], 0
for n in counts:
    out.append(ids[at:at + n]); at += n
kind = "object" if native_code._engines else "cfunc"
print(json.dumps({"ids": out, "numba": "numba" in sys.modules, "kind": kind}))
"""


def _vocab() -> Path:
    path = shipped_path("bytebpe-50k")
    assert path is not None, "the shipped bytebpe-50k is part of the package"
    return path


def _expected() -> list[list[int]]:
    theirs = tokenizers.Tokenizer.from_file(str(_vocab() / "tokenizer.json"))
    theirs.no_truncation()
    theirs.no_padding()
    return [e.ids for e in theirs.encode_batch(TEXTS, add_special_tokens=False)]


def _probe(cache: str, ir: str = "numba") -> dict:
    """``ir``: ``"numba"`` compiles the kernel where it is not kept, ``"shipped"`` may take the IR
    shipped in toktools.tables.lowered_kernels."""
    env = dict(os.environ, TOKTOOLS_CACHE_DIR=cache, PYTHONPATH=str(REPO))
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps(TEXTS), str(_vocab()), ir],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def _entries(cache: Path) -> list[Path]:
    return sorted((cache / "native-code").glob("toktools.models.bpe.kernels.merge_words_at-*.bin"))


def test_first_run_compiles_and_stores_later_runs_load_without_numba_and_damage_compiles_again(tmp_path: Path) -> None:
    expected = _expected()
    first = _probe(str(tmp_path))
    assert first["kind"] == "object" and first["numba"], "the first run compiles with numba"
    assert first["ids"] == expected
    [entry] = _entries(tmp_path)
    stored = entry.read_bytes()
    later = _probe(str(tmp_path))
    assert later == {"ids": expected, "numba": False, "kind": "object"}
    assert entry.read_bytes() == stored, "a hit is read, not rewritten"
    damaged = stored[: len(stored) // 2] + b"\0" * (len(stored) - len(stored) // 2)
    entry.write_bytes(damaged)
    again = _probe(str(tmp_path), ir="shipped")  # made anew (from the shipped IR where it applies: no second compile)
    assert again["ids"] == expected and again["kind"] == "object"
    assert entry.read_bytes() != damaged, "a damaged entry is written anew"
    assert _probe(str(tmp_path)) == {"ids": expected, "numba": False, "kind": "object"}, "and loaded later"


def test_without_a_cache_numba_cfunc_gives_the_same_ids() -> None:
    result = _probe("")
    assert result["kind"] == "cfunc" and result["ids"] == _expected()


def test_a_fresh_install_loads_the_shipped_ir_without_numba(tmp_path: Path) -> None:
    """The merge's IR ships lowered (scripts/gen_lowered_kernels.py): a first run on an empty
    cache, or with none, turns it into machine code with llvmlite alone."""
    from toktools.runtime.machine_code import shipped_ir

    if shipped_ir(*_KERNEL) is None:
        pytest.skip("the shipped IR is for another LLVM or kind of machine")
    for cache in (str(tmp_path), ""):
        assert _probe(cache, ir="shipped") == {"ids": _expected(), "numba": False, "kind": "object"}


def test_where_the_object_cannot_be_loaded_numba_cfunc_is_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import numpy as np

    from toktools.engines.ids_only import ids_encoder
    from toktools.formats import load
    from toktools.models.bpe.compiled_merge import BulkMerger

    def refuse(code: bytes, symbol: str) -> int:
        raise RuntimeError("this llvmlite cannot load object code")

    monkeypatch.setenv("TOKTOOLS_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(native_code, "_load", refuse)
    monkeypatch.setattr(native_code, "_loaded", {})
    encoder = ids_encoder(load(_vocab()))
    bulk = encoder.cache.compute.bulk()
    merger = BulkMerger(bulk.byte_ids, bulk.merge_map)
    assert merger._kernel.native.__class__.__name__ == "CFunc"
    ids, counts = merger.ids_of_texts([encoder._plain_words(t) for t in TEXTS])
    assert [part.tolist() for part in np.split(ids, np.cumsum(counts)[:-1])] == _expected()


def test_the_entry_is_keyed_by_what_the_code_depends_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from toktools.io import user_cache

    monkeypatch.setenv("TOKTOOLS_CACHE_DIR", str(tmp_path))
    here = native_code._entry_path(*_KERNEL[:2], _KERNEL[2])
    assert here is not None and here.parent == tmp_path / "native-code"
    monkeypatch.setattr(user_cache, "library_version", lambda name: "0.0-other" if name == "numba" else "x")
    assert native_code._entry_path(*_KERNEL[:2], _KERNEL[2]) != here, "another numba compiles its own"
    monkeypatch.setenv("TOKTOOLS_CACHE_DIR", "")
    assert native_code._entry_path(*_KERNEL[:2], _KERNEL[2]) is None


def test_the_key_covers_the_modules_the_kernel_imports(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The kernel reads the hash table's constants from toktools.models.bpe.pair_table: code compiled
    against another version of that module must not be loaded."""
    import importlib.util

    from toktools.io import user_cache

    monkeypatch.setenv("TOKTOOLS_CACHE_DIR", str(tmp_path))
    modules = native_code._kernel_modules("toktools.models.bpe.kernels")
    assert "toktools.models.bpe.pair_table" in modules and "toktools.runtime.machine_code" in modules
    before = native_code._entry_path(*_KERNEL[:2], _KERNEL[2])
    real = importlib.util.find_spec
    changed = tmp_path / "pair_table.py"
    changed.write_bytes(Path(real("toktools.models.bpe.pair_table").origin).read_bytes() + b"\n# another layout\n")

    def find_spec(name: str, *args: object) -> object:
        if name == "toktools.models.bpe.pair_table":
            return importlib.util.spec_from_file_location(name, changed)
        return real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    user_cache.code_fingerprint.cache_clear()
    try:
        assert native_code._entry_path(*_KERNEL[:2], _KERNEL[2]) != before
    finally:
        user_cache.code_fingerprint.cache_clear()


def test_an_unknown_parameter_type_is_refused() -> None:
    with pytest.raises(ValueError, match="float32"):
        native_code.kernel("toktools.models.bpe.kernels", "merge_words_at", ["int64", "float32"])


def test_the_suites_warm_up_runs() -> None:
    """conftest's warm-up fills the cache in a process whose output nobody reads: an import it
    names that moved would go unnoticed, and every worker of a cold run would compile again."""
    from conftest import _WARM_UP

    exec(compile(_WARM_UP, "<the suite's warm-up>", "exec"), {})
