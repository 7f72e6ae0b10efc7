"""Writing output files: all-or-nothing (temporary names, then renamed into place), and the
``tokenizer.json`` text as ``tokenizers`` pretty-prints it."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Mapping

from toktools.errors import ToktoolsError
from toktools.outputs import check_output_dir, temporary_beside, unregister_temporary


def dumps_tokenizer_json(document: Mapping[str, Any]) -> str:
    """Pretty-printed like ``Tokenizer.save`` (2-space indent, raw UTF-8)."""
    return json.dumps(document, ensure_ascii=False, indent=2)


def write_files_atomically(directory: Path, files: Mapping[str, str | bytes], *, overwrite: bool = True) -> list[Path]:
    """Write every file (text as UTF-8, or bytes) to a temporary name first, then rename them all
    into place.

    A crash or Ctrl-C while writing leaves the old files (or none), never a half-written one.
    """
    check_output_dir(directory, list(files), force=overwrite)  # one line for a file in the way, no permission ...
    directory.mkdir(parents=True, exist_ok=True)
    targets = [directory / name for name in files]
    temporaries: list[tuple[str, Path]] = []
    mode = 0o666 & ~_umask()  # mkstemp makes 0600 files; give them the usual permissions
    try:
        for name, text in files.items():
            handle, temporary = temporary_beside(directory / name)  # registered: a SIGTERM stuck in native code removes it too
            temporaries.append((temporary, directory / name))
            os.chmod(temporary, mode)
            with (os.fdopen(handle, "wb") if isinstance(text, bytes)
                  else os.fdopen(handle, "w", encoding="utf-8", newline="")) as out:
                out.write(text)
                out.flush()
                os.fsync(out.fileno())
        for temporary, target in temporaries:
            os.replace(temporary, target)
    finally:
        for temporary, _ in temporaries:
            if os.path.exists(temporary):
                os.unlink(temporary)
            unregister_temporary(temporary)
    return targets


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current
