"""numba's own cache (``cache=True``) for toktools' kernels over arrays, kept by the user cache's
policy: keyed by the content of the code, stored in the user cache.

numba keys a cached kernel by its own source file alone. A kernel that calls kernels of another
module (:mod:`toktools.models.unigram.word_cache` calls the Viterbi steps of
:mod:`~toktools.models.unigram.compiled_viterbi`) has their code compiled into its own, so when
only the callee's module changes (an upgrade, a checkout), numba loads the old machine code.
Older numba releases stamp the file by its modification time, too. And numba writes into the
package's ``__pycache__``, which two checkouts or versions then overwrite in turn.

Here each kernel is kept under ``root/numba/MODULE-KEY/``, ``KEY`` being
:func:`toktools.io.user_cache.code_key` of the kernel's module and the toktools modules it
imports, with the numba and llvmlite versions: the key of :mod:`toktools.runtime.machine_code`'s
entries. Where the cache is off (``TOKTOOLS_CACHE_DIR=``) or cannot be written, numba's own
locators apply, as before. Kernels written over raw pointers use
:mod:`toktools.runtime.machine_code` instead, which also spares numba's import.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

#: Whether :class:`_ContentKeyedLocator` has been put in front of numba's locators.
_registered: list[bool] = []


def cached_njit(**options: Any) -> Callable[[Callable[..., Any]], Any]:
    """``numba.njit(cache=True, **options)``, with the cache kept as this module says."""
    from numba import njit

    _register()
    return njit(cache=True, **options)  # type: ignore[no-any-return]


def cache_directory(module: str) -> Path | None:
    """Where the compiled kernels of ``module`` are kept, or None (cache off, no source to hash)."""
    from toktools.io.user_cache import cache_root, code_key
    from toktools.runtime.machine_code import kernel_modules

    root = cache_root()
    if root is None:
        return None
    try:
        key = code_key(kernel_modules(module), ("numba", "llvmlite"))
    except (OSError, ImportError):
        return None
    return root / "numba" / f"{module}-{key}"


def _register() -> None:
    if _registered:
        return
    _registered.append(True)
    try:
        from numba.core import caching
    except ImportError:  # a numba without this layout: its own locators
        return
    impl = getattr(caching, "CacheImpl", None) or getattr(caching, "_CacheImpl", None)  # 0.6x: public
    locator = _locator_class(caching)
    if impl is not None and locator is not None:
        impl._locator_classes.insert(0, locator)


def _locator_class(caching: Any) -> type | None:
    """A numba cache locator for functions of toktools modules (None where numba's base class
    is not there)."""
    base = getattr(caching, "_CacheLocator", None)
    if base is None:
        return None

    class _ContentKeyedLocator(base):  # type: ignore[misc, valid-type]
        def __init__(self, py_func: Callable[..., Any], path: Path, key: str) -> None:
            self._lineno = py_func.__code__.co_firstlineno
            self._path = str(path)
            self._key = key

        def get_cache_path(self) -> str:
            return self._path

        def get_source_stamp(self) -> str:
            return self._key  # the directory is the key already; numba compares this too

        def get_disambiguator(self) -> str:
            return str(self._lineno)

        @classmethod
        def from_function(cls, py_func: Callable[..., Any], py_file: str) -> Any:
            module = getattr(py_func, "__module__", None) or ""
            if not module.startswith("toktools."):
                return None
            path = cache_directory(module)
            if path is None:
                return None
            self = cls(py_func, path, path.name)
            try:
                self.ensure_cache_path()
            except OSError:
                return None
            return self

    return _ContentKeyedLocator
