"""``import toktools`` shows its public API: ``dir(toktools)`` and ``__all__`` list it, lazily
imported names included, and importing the package (or listing it) loads no heavy module."""

from __future__ import annotations

import subprocess
import sys

import pytest

import toktools


def test_dir_lists_the_public_api_including_lazy_names() -> None:
    public = [name for name in dir(toktools) if not name.startswith("_")]
    assert public == sorted(name for name in toktools.__all__ if not name.startswith("_"))
    assert {"load", "train_bytebpe", "train_wordpiece", "ToktoolsError", "shipped_names"} <= set(public)
    assert "__version__" in dir(toktools) and "__doc__" in dir(toktools)


def test_every_name_in_all_resolves() -> None:
    for name in toktools.__all__:
        assert getattr(toktools, name) is not None, name
    assert toktools.load.__module__ == "toktools.formats"
    assert toktools.shipped_names() == ["bytebpe-50k", "wordpiece-30k"]
    namespace: dict[str, object] = {}
    exec("from toktools import *", namespace)
    assert set(toktools.__all__) <= set(namespace)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        toktools.nope  # noqa: B018


def test_import_and_dir_load_no_heavy_module() -> None:
    code = (
        "import sys, toktools; dir(toktools); "
        "print(sorted(m for m in ('toktools.formats', 'toktools.training.pipeline', 'tokenizers', 'rich', 'regex') "
        "if m in sys.modules))"
    )
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert completed.stdout.strip() == "[]"


def test_public_functions_stay_functions_after_their_modules_are_imported() -> None:
    """A submodule named like a public function would replace it: importing ``toktools.X``
    sets the attribute ``toktools.X`` to the module (the CLI and the engines import modules
    before a user may first touch ``toktools.encode_corpus``). No lazy name is a submodule's."""
    import importlib

    code = (
        "import importlib, toktools; "
        + "; ".join(f"importlib.import_module({module!r})" for module in sorted(set(toktools._LAZY.values())))
        + "; import toktools.commands.encode; "
        + "print(sorted(n for n in toktools.__all__ if not callable(getattr(toktools, n)) and n != '__version__'))"
    )
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert completed.stdout.strip() == "[]"
    for name, module in toktools._LAZY.items():
        assert importlib.util.find_spec(f"toktools.{name}") is None, f"toktools.{name} is a module name"
