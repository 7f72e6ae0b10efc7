"""Module paths from before 0.2.0, when all of toktools' modules sat side by side.

``import toktools.masking`` (and every other old path) still works: it gives the very module that
now lives in a package (``toktools.pretraining.masking``), with a :class:`DeprecationWarning`
that names the new path. Same module object, so attributes set through either name are seen
through both. Four old modules became packages that keep the old names themselves
(``toktools.corpus``, ``toktools.engines``, ``toktools.training``, ``toktools.parity``), and
the front doors ``toktools.bpe``, ``toktools.bytelevel`` and ``toktools.wordpiece`` re-export
their public names; ``toktools.files`` merged into ``toktools.io.outputs``.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

#: old module name (below ``toktools.``) -> its module now (below ``toktools.``)
MOVED: dict[str, str] = {
    "_bert_tables": "tables.bert",
    "_bytelevel_tables": "tables.bytelevel",
    "_parts_tables": "tables.parts",
    "bert_text": "parts.bert_text",
    "bpe_bulk": "models.bpe.bulk_merge",
    "bpe_compiled": "models.bpe.compiled_merge",
    "bpe_files": "models.bpe.files",
    "bpe_kernels": "models.bpe.kernels",
    "bpe_merges": "models.bpe.merges",
    "bpe_naive": "models.bpe.naive",
    "bpe_vectorized": "models.bpe.vectorized_merge",
    "byte_symbols": "models.bpe.byte_symbols",
    "charsmap_builder": "sentencepiece.charsmap_builder",
    "charsmap_rules": "sentencepiece.charsmap_rules",
    "clusters": "cluster.settings",
    "compare_chunks": "analysis.compare_chunks",
    "compiled": "runtime.compiled_switch",
    "corpus_compare": "analysis.corpus_compare",
    "corpus_documents": "corpus.documents",
    "corpus_tokenizer": "corpus.prepared_tokenizer",
    "corpus_verify": "corpus.verify",
    "corpus_writers": "corpus.writers",
    "distributed": "cluster.blocks",
    "distributed_compare": "cluster.compare",
    "distributed_encode": "cluster.encode",
    "encode_dispatch": "corpus.encode",
    "encode_shards": "corpus.shards",
    "encode_text": "corpus.text_outputs",
    "fast": "training.tokenizers_backend",
    "fast_ids": "engines.ids_only",
    "fast_unigram": "engines.ids_only_unigram",
    "id_packing": "engines.id_packing",
    "interrupts": "runtime.interrupts",
    "likelihood": "models.wordpiece.likelihood_trainer",
    "masking": "pretraining.masking",
    "native_code": "runtime.machine_code",
    "outputs": "io.outputs",
    "plots": "analysis.plots",
    "pretrain": "pretraining.examples",
    "reference_cache": "engines.reference_cache",
    "report": "analysis.report",
    "segstats": "analysis.segstats",
    "sentencepiece_encode": "sentencepiece.encode",
    "sentencepiece_json": "sentencepiece.to_json",
    "sentencepiece_model": "sentencepiece.model_file",
    "sentencepiece_normalize": "sentencepiece.normalize",
    "shipped": "io.shipped",
    "token_view": "analysis.token_view",
    "trainers": "training.trainers",
    "unigram_digamma": "models.unigram.digamma",
    "unigram_kernels": "models.unigram.kernels",
    "unigram_trainer": "models.unigram.trainer",
    "unigram_viterbi": "models.unigram.compiled_viterbi",
    "user_cache": "io.user_cache",
    "validate": "io.validate",
    "workers": "runtime.workers",
    "files": "io.outputs",
    "parts.spm_decoder": "sentencepiece.decoder",
}


class _AliasLoader(importlib.abc.Loader):
    """Loads an old name as the new module itself."""

    def __init__(self, new_name: str) -> None:
        self.new_name = new_name
        self.own_spec: importlib.machinery.ModuleSpec | None = None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        warnings.warn(
            f"{spec.name} moved to {self.new_name} in toktools 0.2.0; import it from there",
            DeprecationWarning,
            stacklevel=2,  # past the import system's frames, which warnings skips: the user's import line
        )
        module = importlib.import_module(self.new_name)
        self.own_spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run: the new module ran when it was imported. The import system has just
        set its ``__spec__`` to the old name's; give it back its own."""
        module.__spec__ = self.own_spec


class _MovedFinder(importlib.abc.MetaPathFinder):
    """Finds ``toktools.OLD`` for every old name in :data:`MOVED`."""

    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        prefix, _, old = fullname.partition(".")
        if prefix != "toktools" or old not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(f"toktools.{MOVED[old]}"))


def install() -> None:
    """Put the finder on ``sys.meta_path`` once."""
    if not any(isinstance(finder, _MovedFinder) for finder in sys.meta_path):
        sys.meta_path.append(_MovedFinder())


def old_module_names(package: str, holders: Mapping[str, str] | str) -> Callable[[str], Any]:
    """The ``__getattr__`` of a package that was one module before 0.2.0: each old name is
    imported on first use from the submodule now holding it (``holders`` maps name -> submodule,
    or names the one submodule holding them all); a submodule not imported yet resolves too."""

    def __getattr__(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        if not isinstance(holders, str) and name in holders:
            return getattr(importlib.import_module(f"{package}.{holders[name]}"), name)
        if importlib.util.find_spec(f"{package}.{name}") is not None:  # a submodule not imported yet
            return importlib.import_module(f"{package}.{name}")
        if isinstance(holders, str):
            try:
                return getattr(importlib.import_module(f"{package}.{holders}"), name)
            except AttributeError:
                pass
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
