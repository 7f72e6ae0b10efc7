"""The files of a sharded run and the manifest that records them, for local shards
(:mod:`toktools.corpus.shards`) and cluster blocks (:mod:`toktools.cluster.encode`) alike.

Where the files are: an output ``PREFIX`` (:func:`output_base`), its shards ``PREFIX-00000``…
(:func:`shard_base`), the manifest ``PREFIX-manifest.json`` (:func:`manifest_path`) and, for
blocks, the partial record ``PREFIX-manifest.partial.json`` (:func:`partial_path`).

What the manifest says (:func:`new_manifest`): the tokenizer's fingerprint, the engine, the
settings, the inputs (size, sha256), the shards (documents, tokens, files with sha256, and where
the next shard starts or which block a shard is), and at the end whether the run is complete.

How a run resumes: an earlier record is taken only from the same tokenizer, settings and inputs,
the inputs matched by content, in order (:func:`check_same_run`, one-line refusals otherwise), and only shards whose files still have
their recorded size and sha256 are kept (:func:`shard_intact`): the finished prefix of a local
run (:func:`resume_local`), any finished block of a run in blocks (:func:`intact_blocks`).
"""

from __future__ import annotations

import glob
import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from toktools.corpus.documents import Position
from toktools.corpus.writers import ShardInfo, file_sha256, output_files
from toktools.errors import ToktoolsError

MANIFEST_FORMAT = "toktools-corpus-manifest"
_SHARD_NUMBER = re.compile(r"-(\d{5})(?:\.offsets)?\.?\w*$")


# ---------------------------------------------------------------------------------------------
# Where the files are
# ---------------------------------------------------------------------------------------------


def output_base(fmt: str, output: Path) -> tuple[Path, str | None]:
    """The output path without its extension, and the extension for npy/bin: ``out/train``
    for a Megatron prefix (``.bin``/``.idx`` given by mistake are dropped); ``out/ids.npy`` →
    (``out/ids``, ``.npy``): the data file is exactly the path given."""
    name = str(output)
    if fmt == "megatron":
        for suffix in (".bin", ".idx"):
            if name.endswith(suffix):
                return Path(name[: -len(suffix)]), None
        return output, None
    return Path(name[: len(name) - len(output.suffix)]), output.suffix


def shard_base(base: Path, index: int) -> Path:
    return Path(f"{base}-{index:05d}")


def manifest_path(base: Path) -> Path:
    return Path(f"{base}-manifest.json")


def partial_path(base: Path) -> Path:
    """Where a run in blocks records its finished shards until every block is done."""
    return Path(f"{base}-manifest.partial.json")


def shard_files(base: Path, suffix: str | None = None) -> list[Path]:
    """Files that look like shards of ``base`` (of this or an earlier run)."""
    ends = r"\.(bin|idx)" if suffix is None else re.escape(suffix)
    pattern = re.compile(re.escape(base.name) + r"-\d{5}(\.offsets)?" + ends + "$")
    directory = base.parent if str(base.parent) else Path(".")
    return sorted(
        Path(p) for p in glob.glob(os.path.join(glob.escape(str(directory)), "*")) if pattern.match(Path(p).name)
    )


def remove_shards_from(base: Path, suffix: str | None, count: int) -> None:
    """Remove the shards numbered ``count`` and above (of an older, longer run, with force)."""
    from toktools.io.outputs import is_special

    for stale in shard_files(base, suffix):
        number = int(_SHARD_NUMBER.search(stale.name).group(1))  # type: ignore[union-attr]
        if number >= count and not is_special(stale):  # never a device or FIFO
            stale.unlink()


def check_outputs(
    planned: Sequence[Path],
    earlier_shards: Sequence[Path],
    inputs: Sequence[str | Path],
    tokenizer: Any,
    force: bool,
    named: Path | None = None,
) -> None:
    """Before any work (:func:`toktools.io.outputs.check_output_file`): no output over an input
    or a file of the tokenizer, in a directory that exists and is writable; existing outputs
    (and shards of an earlier run) only with ``force`` (a resumed run passes it and checks its
    shards against the manifest instead). ``named``: the output as given (``-o``), when it is
    a device or FIFO no other file may be derived from it."""
    from toktools.io.outputs import check_companions, check_output_file, input_files, input_identities, is_special

    if named is not None:
        check_companions(named, planned)

    names: list[str | Path] = list(inputs)
    if isinstance(tokenizer, (str, Path)):
        names += input_files(tokenizer)
    identities = input_identities(names)  # once, for every output checked
    for target in planned:
        check_output_file(target, force=force, inputs=identities)
    for target in earlier_shards:
        check_output_file(target, force=True, inputs=identities)
    earlier = [p for p in earlier_shards if not is_special(p)]  # a FIFO or device is written into
    if not force and earlier:
        raise ToktoolsError(f"{earlier[0]} already exists; use --force to overwrite")


# ---------------------------------------------------------------------------------------------
# What the manifest says
# ---------------------------------------------------------------------------------------------


def input_entries(sources: Sequence[Any]) -> list[dict[str, Any]]:
    """The inputs of a local run as the manifest lists them: path, size and sha256 (none for
    standard input)."""
    out = []
    for source in sources:
        if source.is_stdin:
            out.append({"path": "-", "size": None, "sha256": None})
        else:
            out.append({"path": source.path, "size": source.size(), "sha256": file_sha256(Path(source.path))})
    return out


def new_manifest(
    fingerprint: str, vocab_size: int, settings: dict[str, Any], inputs: list[dict[str, Any]], shards: list[Any]
) -> dict[str, Any]:
    """A manifest not yet complete, with no engine named yet."""
    return {
        "format": MANIFEST_FORMAT,
        "version": 1,
        "complete": False,
        "tokenizer": {"sha256": fingerprint, "vocab_size": vocab_size},
        "engine": None,
        "settings": settings,
        "inputs": inputs,
        "shards": shards,
    }


def shard_entry(index: int, info: ShardInfo, engine: str, **place: Any) -> dict[str, Any]:
    """A finished shard as the manifest lists it, with where it is in the input: ``next`` (a
    local shard: where the next one starts) or ``block`` (the block of the input it is)."""
    return {
        "index": index,
        "documents": info.documents,
        "tokens": info.tokens,
        "engine": engine,
        "files": info.files,
        **place,
    }


def complete(manifest: dict[str, Any]) -> None:
    """Mark the run complete, with its totals."""
    manifest["complete"] = True
    manifest["documents"] = sum(s["documents"] for s in manifest["shards"])
    manifest["tokens"] = sum(s["tokens"] for s in manifest["shards"])


def write_manifest(path: Path, manifest: dict[str, Any]) -> None:
    """Write the manifest (or a partial record) atomically."""
    from toktools.io.outputs import write_files_atomically

    try:
        write_files_atomically(
            path.parent if str(path.parent) else Path("."),
            {path.name: json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"},
        )
    except OSError as err:
        raise ToktoolsError(f"cannot write {path}: {err.strerror or err}") from None


def read_manifest(path: Path) -> dict[str, Any]:
    """A manifest or partial record, or a one-line refusal when the file is not one."""
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(record, dict) or record.get("format") != MANIFEST_FORMAT:
            raise ValueError
    except (ValueError, OSError):
        raise ToktoolsError(f"{path} is not a toktools corpus manifest (use --force to overwrite)") from None
    return record


def is_complete(path: Path | None) -> bool:
    if path is None or not path.exists():
        return False
    return bool(json.loads(path.read_text(encoding="utf-8")).get("complete"))


# ---------------------------------------------------------------------------------------------
# Resuming
# ---------------------------------------------------------------------------------------------


def check_same_run(
    path: Path, record: Mapping[str, Any], fingerprint: str, settings: Mapping[str, Any], inputs: list[dict[str, Any]]
) -> None:
    """Refuse, in one line, a record written with another tokenizer, other settings (named in
    the order of ``settings``, then any the record has besides), from standard input or from
    other inputs (names, sizes or checksums)."""
    if record.get("tokenizer", {}).get("sha256") != fingerprint:
        raise ToktoolsError(
            f"{path} was written with another tokenizer; use --force to start over or choose another output"
        )
    old = record.get("settings", {})
    for key in [*settings, *sorted(set(old) - set(settings))]:
        if old.get(key) != settings.get(key):
            raise ToktoolsError(
                f"{path} was written with other settings ({key}: {old.get(key)!r}, now "
                f"{settings.get(key)!r}); use --force to start over or choose another output"
            )
    if any(entry["path"] == "-" for entry in inputs):
        raise ToktoolsError(f"{path}: cannot resume reading standard input; use --force to start over")
    if [_content(e) for e in record.get("inputs", [])] != [_content(e) for e in inputs]:
        raise ToktoolsError(
            f"{path} was written from other inputs (their sizes or checksums differ); "
            "use --force to start over or choose another output"
        )


def _content(entry: Mapping[str, Any]) -> tuple[Any, Any]:
    """What identifies an input for resuming: its bytes (size and sha256), not the path it was
    named by (the same file by another path, a copy, a FIFO fed the same bytes all resume)."""
    return entry.get("size"), entry.get("sha256")


def shard_intact(shard: Mapping[str, Any], base: Path, fmt: str, suffix: str | None) -> bool:
    """Whether every file of a recorded shard is there, with its recorded size and sha256."""
    files = output_files(fmt, shard_base(base, shard["index"]), suffix)
    recorded = shard.get("files", {})
    return set(files) == set(recorded) and all(
        files[role].is_file()
        and files[role].stat().st_size == entry["bytes"]
        and file_sha256(files[role]) == entry["sha256"]
        for role, entry in recorded.items()
    )


def resume_local(
    path: Path,
    fingerprint: str,
    settings: dict[str, Any],
    inputs: list[dict[str, Any]],
    base: Path,
    fmt: str,
    suffix: str | None,
) -> tuple[list[dict[str, Any]], Position]:
    """The finished shards of an earlier local run that still verify (the first ones, up to the
    first that does not), and where to go on from."""
    record = read_manifest(path)
    check_same_run(path, record, fingerprint, settings, inputs)
    kept: list[dict[str, Any]] = []
    for shard in record.get("shards", []):
        if shard.get("index") != len(kept) or not shard_intact(shard, base, fmt, suffix):
            break
        kept.append(shard)
    if not kept:
        return [], Position(0, 0, 1)
    last = kept[-1].get("next")
    if last is None:  # the last shard of a finished run
        return kept, Position(len(inputs), 0, 1)
    return kept, Position(last["input"], last["offset"], last["line"])


def intact_blocks(
    path: Path,
    record: Mapping[str, Any],
    fingerprint: str,
    settings: dict[str, Any],
    inputs: list[dict[str, Any]],
    blocks: int,
    base: Path,
    fmt: str,
    suffix: str | None,
) -> dict[int, dict[str, Any]]:
    """The shards of an earlier run in ``blocks`` blocks whose files still match, by block."""
    check_same_run(path, record, fingerprint, settings, inputs)
    kept: dict[int, dict[str, Any]] = {}
    for shard in record.get("shards", []):
        index = shard.get("index")
        if not isinstance(index, int) or not 0 <= index < blocks or index in kept:
            continue
        if shard_intact(shard, base, fmt, suffix):
            kept[index] = shard
    return kept
