"""numba's cache of the array kernels (toktools.runtime.numba_cache) follows the user cache's policy:
the kernels are kept in the user cache, keyed by the content of their module and of the toktools
modules whose kernels they call, so a change to a callee alone compiles them anew (numba's own
key is the kernel's file alone); with the cache off, numba's own locators apply."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("numba")

from toktools.io import user_cache  # noqa: E402
from toktools.runtime import numba_cache  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
WORD_CACHE = "toktools.models.unigram.word_cache"
VITERBI = "toktools.models.unigram.compiled_viterbi"


def test_a_kernel_is_keyed_by_the_modules_whose_kernels_it_calls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """word_cache's kernel has compiled_viterbi's steps compiled into it: another
    compiled_viterbi must give another directory, though word_cache.py is the same."""
    monkeypatch.setenv("TOKTOOLS_CACHE_DIR", str(tmp_path))
    before = numba_cache.cache_directory(WORD_CACHE)
    assert before is not None and before.parent == tmp_path / "numba"
    real = importlib.util.find_spec
    changed = tmp_path / "compiled_viterbi.py"
    changed.write_bytes(Path(real(VITERBI).origin).read_bytes() + b"\n# another Viterbi\n")  # type: ignore[arg-type]

    def find_spec(name: str, *args: object) -> object:
        if name == VITERBI:
            return importlib.util.spec_from_file_location(name, changed)
        return real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    user_cache.code_fingerprint.cache_clear()
    try:
        assert numba_cache.cache_directory(WORD_CACHE) != before
    finally:
        user_cache.code_fingerprint.cache_clear()
    monkeypatch.setenv("TOKTOOLS_CACHE_DIR", "")
    assert numba_cache.cache_directory(WORD_CACHE) is None


def test_only_toktools_kernels_are_kept_there(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import numba.core.caching as caching

    from toktools.sentencepiece import compiled_normalize  # registers the locator

    impl = getattr(caching, "CacheImpl", None) or caching._CacheImpl  # type: ignore[attr-defined]
    [ours] = [c for c in impl._locator_classes if c.__name__ == "_ContentKeyedLocator"]
    monkeypatch.setenv("TOKTOOLS_CACHE_DIR", str(tmp_path))
    kernel = compiled_normalize._unseen.py_func
    located = ours.from_function(kernel, kernel.__code__.co_filename)
    assert located.get_cache_path() == str(numba_cache.cache_directory(compiled_normalize.__name__))

    def elsewhere(x: int) -> int:
        return x

    assert ours.from_function(elsewhere, __file__) is None
    monkeypatch.setenv("TOKTOOLS_CACHE_DIR", "")
    assert ours.from_function(kernel, kernel.__code__.co_filename) is None  # numba's own then


_COMPILE = """
import numpy as np
from toktools.sentencepiece.compiled_normalize import UNSEEN, _unseen
mapped = np.full(128, UNSEEN, dtype=np.int64)
found = np.zeros(2, dtype=np.int64)
assert _unseen(np.array([65, 65, 66], dtype=np.int64), mapped, found) == 2 and found.tolist() == [65, 66]
"""


@pytest.mark.full
def test_compiled_kernels_land_in_the_user_cache_not_in_the_package(tmp_path: Path) -> None:
    env = dict(os.environ, TOKTOOLS_CACHE_DIR=str(tmp_path), PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "-c", _COMPILE], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    [folder] = (tmp_path / "numba").iterdir()
    assert folder.name.startswith("toktools.sentencepiece.compiled_normalize-")
    assert any(name.suffix == ".nbi" for name in folder.iterdir())
