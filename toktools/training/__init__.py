"""Training a vocabulary: the entry points (:mod:`.pipeline`), one trainer per model found by
name (:mod:`.trainers`), and the same training with HuggingFace ``tokenizers``
(:mod:`.tokenizers_backend`), the yardstick of parity.

``toktools.training`` was one module before 0.2.0; its names still resolve here (from
:mod:`toktools.training.pipeline`).
"""

from __future__ import annotations

from toktools._moved import old_module_names

__getattr__ = old_module_names(__name__, "pipeline")
