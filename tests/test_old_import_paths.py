"""Code written against toktools 0.1 keeps working: every module path from before the package
layout (``toktools.masking``, ``toktools.engines``, ...) still imports, and gives the names it
gave. Moved modules are the very same module objects, so a test or a user that patches an
attribute through the old path patches what the library uses."""

from __future__ import annotations

import importlib
import subprocess
import sys
import warnings

import pytest

import toktools
from toktools._moved import MOVED

#: Old modules that became packages keeping the old names, and the front doors: not aliases.
KEPT_NAMES = {
    "corpus": ("read_lines", "count_words", "dumps_counts"),
    "engines": ("analyse", "make_engine", "ReferenceEngine", "TiktokenEngine", "PackedIds"),
    "training": ("train_bytebpe", "train_wordpiece", "train_unigram"),
    "parity": ("run_parity", "check_trained", "ParityReport"),
    "bpe": ("train_bpe", "BpeTrainingResult", "merge_symbols", "dumps_merges_txt", "train_bpe_naive"),
    "bytelevel": ("split", "bytes_to_symbols", "symbols_to_bytes", "BYTE_TO_SYMBOL", "byte_view"),
    "wordpiece": ("wordpiece_split", "read_vocab_txt", "decode_wordpieces", "BERT_SPECIAL_TOKENS"),
}


@pytest.mark.parametrize("old", sorted(MOVED))
def test_an_old_module_path_gives_the_moved_module_with_a_deprecation_warning(old: str) -> None:
    new = importlib.import_module(f"toktools.{MOVED[old]}")
    sys.modules.pop(f"toktools.{old}", None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module = importlib.import_module(f"toktools.{old}")
    assert module is new
    assert module.__name__ == f"toktools.{MOVED[old]}"
    assert module.__spec__ is not None and module.__spec__.name == f"toktools.{MOVED[old]}"
    assert [str(w.message) for w in caught if w.category is DeprecationWarning] == [
        f"toktools.{old} moved to toktools.{MOVED[old]} in toktools 0.2.0; import it from there"
    ]


@pytest.mark.parametrize("old", sorted(KEPT_NAMES))
def test_old_modules_kept_as_packages_or_front_doors_still_give_their_names(old: str) -> None:
    module = importlib.import_module(f"toktools.{old}")
    for name in KEPT_NAMES[old]:
        assert getattr(module, name) is not None, f"toktools.{old}.{name}"


def test_from_import_of_old_paths_works_in_a_fresh_process() -> None:
    code = (
        "import warnings; warnings.simplefilter('error', DeprecationWarning)\n"
        "from toktools.engines import analyse\n"  # a package now: no warning
        "from toktools.training import train_bytebpe\n"
        "from toktools.bytelevel import bytes_to_symbols\n"
        "warnings.simplefilter('ignore', DeprecationWarning)\n"
        "from toktools.masking import mask_tokens\n"
        "from toktools.formats import load\n"
        "import toktools.bpe_merges as m\n"
        "import toktools.models.bpe.merges as n\n"
        "print(m is n, bytes_to_symbols('我'.encode()), callable(mask_tokens), load is __import__('toktools').load)\n"
    )
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert completed.stdout.split() == ["True", "æĪĳ", "True", "True"]


def test_an_attribute_patched_through_the_old_path_is_seen_through_the_new(monkeypatch: pytest.MonkeyPatch) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        old = importlib.import_module("toktools.user_cache")
    from toktools.io import user_cache

    monkeypatch.setattr(old, "cache_root", lambda: None)
    assert user_cache.cache_root() is None


def test_nothing_inside_toktools_imports_an_old_path_or_a_front_door() -> None:
    """The library itself uses the new layout: the aliases are for users' code only, and the
    front doors are for readers (nothing inside imports up to them)."""
    from pathlib import Path

    root = Path(toktools.__file__).parent
    old_names = set(MOVED) | {"bpe", "bytelevel", "wordpiece"}
    offenders = []
    for path in sorted(root.rglob("*.py")):
        if path.name in {"_moved.py"} or path.parent == root and path.stem in {"bpe", "bytelevel", "wordpiece"}:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            stripped = line.strip()
            if not stripped.startswith(("from toktools", "import toktools")):
                continue
            words = stripped.replace(",", " ").split()
            module = words[1]
            imported = words[3:] if words[0] == "from" and module == "toktools" else []
            if module.split(".")[1:2] and module.split(".")[1] in old_names and len(module.split(".")) == 2:
                if module.split(".")[1] not in {"corpus", "engines", "training", "parity"}:
                    offenders.append(f"{path.relative_to(root)}:{number}: {stripped}")
            offenders += [f"{path.relative_to(root)}:{number}: {stripped}" for name in imported if name in old_names]
    assert offenders == []
