"""Where the vocabularies shipped with toktools are, so that ``toktools.load("wordpiece-30k")``
works however toktools was installed.

They live in the repository's top-level ``vocabs/`` folder. A wheel carries that folder as the
package data of ``toktools.vocabs`` (see ``[tool.setuptools]`` in ``pyproject.toml``), so an
installed toktools finds them in ``toktools/vocabs/``; a source checkout or an editable install
finds them beside the package, in ``vocabs/``.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def shipped_dir() -> Path | None:
    """The folder holding one sub-folder per shipped vocabulary, or None if there is none."""
    package = resources.files("toktools")
    if isinstance(package, Path):  # not inside a zip: the wheel's copy, then the checkout's
        for candidate in (package / "vocabs", package.parent / "vocabs"):
            if candidate.is_dir():
                return candidate
    return None


def shipped_names() -> list[str]:
    """The names ``load`` and the CLI accept for a shipped vocabulary, sorted."""
    root = shipped_dir()
    if root is None:
        return []
    return sorted(entry.name for entry in root.iterdir() if (entry / "tokenizer.json").is_file())


def shipped_path(name: str) -> Path | None:
    """The folder of the shipped vocabulary ``name``, or None if no vocabulary has that name."""
    root = shipped_dir()
    return root / name if root is not None and name in shipped_names() else None


def name_hint(name: str) -> str:
    """What to say after a tokenizer name that is neither a path nor shipped: the closest
    shipped names (``did you mean bytebpe-50k?``), else the list of them."""
    import difflib

    names = shipped_names()
    close = difflib.get_close_matches(str(name).rstrip("/"), names, n=3, cutoff=0.6)
    if close:
        return f"did you mean {' or '.join(close)}?"
    return f"shipped: {', '.join(names)}" if names else "none is shipped with this installation"
