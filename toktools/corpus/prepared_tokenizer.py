"""The tokenizer as corpus encoding reads it, with what start-up derives from it kept between runs.

On a short run start-up weighs: parsing a ``tokenizer.json`` (GPT-2: 2 MB of JSON, 20-40 ms),
deciding whether tiktoken is exact for it (:func:`toktools.engines.analysis.analyse`) and building
tiktoken's byte ranks (20-50 ms), against a tiktoken call of well under a second on 5 MB. For a
``tokenizer.json`` file all of it is kept in the user cache (:mod:`toktools.io.user_cache`): one
binary entry per sha256 of the file's bytes and the code that derives it (the sources of this
module and of the analysis, the ``tokenizers`` and tiktoken versions: :data:`ENTRY_CODE`). On a hit the file is read and hashed but not parsed: the document is parsed only when
something asks for it (:meth:`CorpusTokenizer.document`: the reference engine, ``tokenizers``,
the ``--verify`` checker, which does it in its own process from the bytes read here).
On a miss the file goes through every check of :func:`toktools.load` (it is built once), so a
malformed file is the same one line whichever engine would encode it; an entry exists only for a
file that passed them.

A cache only: an entry that is missing, truncated or altered (its checksum), or that does not
hold what it should, is ignored and written again; one that cannot be written is skipped; a file with other
bytes has another key.
"""

from __future__ import annotations

import hashlib
import json
import marshal
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toktools.io.serde_floats import loads as serde_loads

#: The modules whose code decides an entry (its layout here, the analysis and tiktoken's ranks
#: there): their sources are part of its key, with the versions of the libraries that decide
#: the analysis (:func:`toktools.io.user_cache.entry_path`).
ENTRY_CODE = ("toktools.corpus.prepared_tokenizer", "toktools.io.validate")


def token_ids(doc: Mapping[str, Any]) -> dict[str, int]:
    """Every token's id: the model's vocabulary, then the added tokens (which win). A Unigram
    vocabulary is a list of ``[piece, score]`` whose ids are the positions (a repeated piece keeps
    its last id, as in ``tokenizers``)."""
    vocab = doc.get("model", {}).get("vocab") or {}
    if isinstance(vocab, dict):
        out = dict(vocab)
    elif isinstance(vocab, list):
        out = {item[0]: i for i, item in enumerate(vocab) if isinstance(item, (list, tuple)) and item}
    else:
        out = {}
    out.update({t["content"]: t["id"] for t in doc.get("added_tokens") or []})
    return out


def document_shape(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The document without the model's vocabulary and merges: its parts and their options,
    the added tokens (what engines check to choose, and what start-up reads)."""
    from toktools.sentencepiece.rule_marker import DOCUMENT_KEY, follows_sentencepiece

    model = doc.get("model")
    if not isinstance(model, dict):
        return dict(doc)
    shape = {**doc, "model": {k: v for k, v in model.items() if k not in ("vocab", "merges")}}
    if follows_sentencepiece(doc):  # the rule without the model file
        shape[DOCUMENT_KEY] = {k: v for k, v in doc[DOCUMENT_KEY].items() if k != "model"}
    return shape


@dataclass
class CorpusTokenizer:
    """A tokenizer for corpus encoding: its fingerprint, the shape of its document (no vocabulary),
    its vocabulary size and, from the cache, the exactness analysis; the whole document on
    demand."""

    fingerprint: str
    shape: dict[str, Any]
    vocab_size: int
    #: the analysis of :func:`toktools.engines.analysis.analyse` (with tiktoken's plan), when cached
    analysis: Any = None
    #: the parsed document (None until asked for, after a cache hit)
    _document: dict[str, Any] | None = field(default=None, repr=False)
    #: the bytes of the ``tokenizer.json`` read (to parse on demand and to key the cache)
    _raw: bytes | None = field(default=None, repr=False)
    _written: bool = False

    def document(self) -> dict[str, Any]:
        """The whole document (truncation and padding off), parsed on first use."""
        if self._document is None:
            from toktools.engines.base import corpus_document

            assert self._raw is not None
            self._document = corpus_document(serde_loads(self._raw.decode("utf-8")))
        return self._document

    @property
    def raw_json(self) -> bytes | None:
        """The ``tokenizer.json`` bytes read (None for other layouts): engines that load the file
        themselves (gigatoken) take them without a parse here."""
        return self._raw

    def token_id(self, token: str) -> int | None:
        """The id of ``token``: an added token's without parsing, else from the vocabulary."""
        added = {t["content"]: t["id"] for t in self.shape.get("added_tokens") or []}
        return added[token] if token in added else token_ids(self.document()).get(token)

    def remember(self, analysis: Any) -> None:
        """Keep what this run derived (the analysis, once tiktoken's probe has run when it
        applies) for the next run on the same file; nothing when it came from the cache."""
        if self._raw is None or self._written or self.analysis is not None or analysis is None:
            return
        if analysis.tiktoken_reason == "not analysed":
            return  # (an unprobed exact verdict is kept too: the probe's own verdict is cached apart)
        self._written = True
        from toktools.io.user_cache import write_blob

        plan = analysis.plan
        entry = {
            "shape": self.shape,
            "vocab_size": self.vocab_size,
            "reason": analysis.tiktoken_reason,
            "notes": list(analysis.notes),
            "probed": analysis.probed,
            "probe": analysis.probe,
            "plan": None
            if plan is None
            else (plan.mergeable_ranks, plan.special_tokens, plan.pattern, plan.rank_to_id),
        }
        try:
            payload = marshal.dumps(entry)
        except ValueError:  # a value marshal cannot hold (not from JSON): no entry
            return
        write_blob(_entry_path(self.fingerprint), payload)


def tokenizer_json_file(tokenizer: Any) -> Path | None:
    """The ``tokenizer.json`` file a path or shipped name stands for (a file, or the one in a
    directory), or None when the tokenizer comes in another layout or as an object."""
    if not isinstance(tokenizer, (str, Path)):
        return None
    target = Path(tokenizer)
    if not target.exists():
        from toktools.io.shipped import shipped_path

        target = shipped_path(str(tokenizer)) or target
    candidate = target / "tokenizer.json" if target.is_dir() else target
    if (
        candidate.is_file()
        and candidate.name.endswith(".json")
        and candidate.name not in ("vocab.json", "encoder.json")
    ):
        return candidate
    return None


def load_document(
    tokenizer: Any, *, whole: bool = False, validate: bool = True, text: str | None = None
) -> tuple[dict[str, Any], str]:
    """The ``tokenizer.json`` document of a toktools tokenizer or of a path, and its fingerprint.

    A ``tokenizer.json`` file goes through every check of :func:`toktools.load`, with the same
    one-line errors, whichever engine encodes with it (``validate`` is kept for callers: the
    checks always run), and is fingerprinted by the sha256 of its bytes; other layouts and
    tokenizer objects are converted and fingerprinted by the sha256 of their canonical JSON.
    Without ``whole``, truncation and padding are dropped (whole documents). ``text``: the
    file's text, when the caller has read it already."""
    from toktools.engines.base import corpus_document, document_fingerprint

    finish: Any = (lambda d: d) if whole else corpus_document
    if not isinstance(tokenizer, (str, Path)):
        doc = finish(_document_of(tokenizer))
        return doc, document_fingerprint(doc)
    candidate = tokenizer_json_file(tokenizer)
    if candidate is not None:
        if text is None:
            from toktools.models.bpe.files import read_text_file

            text = read_text_file(candidate, "tokenizer file")
        # every check toktools.load makes, before any engine sees the file (a cached entry
        # stands for a file that passed them: ENTRY_CODE)
        from toktools.formats import checked_tokenizer_json

        document, _ = checked_tokenizer_json(text, str(candidate))
        return finish(document), hashlib.sha256(text.encode("utf-8")).hexdigest()
    from toktools.formats import load

    doc = finish(_document_of(load(tokenizer)))
    return doc, document_fingerprint(doc)


def _document_of(tokenizer: Any) -> dict[str, Any]:
    """A tokenizer's document for corpus encoding: its ``tokenizer.json``, with the
    sentencepiece rule of a ``.model`` (:mod:`toktools.sentencepiece.tokenizer`) when it has one."""
    corpus_json = getattr(tokenizer, "corpus_tokenizer_json", None)
    document: dict[str, Any] = corpus_json() if corpus_json is not None else tokenizer.to_tokenizer_json()
    model: Any = getattr(tokenizer, "model", None)
    seed = getattr(model, "seed", 0)
    if getattr(model, "dropout", None) and seed:
        document[SEED_KEY] = seed  # BPE-dropout's seed (only the reference reads such documents)
    return document


#: where a corpus document carries the seed of BPE-dropout
SEED_KEY = "toktools_seed"


def load_corpus_tokenizer(tokenizer: Any) -> CorpusTokenizer:
    """The tokenizer (a path, a shipped name or a toktools tokenizer) as corpus encoding reads it:
    from the cache when its ``tokenizer.json`` was seen before, else parsed (see
    :func:`load_document`, whose errors it gives)."""
    path = tokenizer_json_file(tokenizer)
    if path is None:
        return _converted_layout(tokenizer)
    from toktools.models.bpe.files import decode_utf8, read_file_bytes

    raw = read_file_bytes(path, "tokenizer file")
    fingerprint = hashlib.sha256(raw).hexdigest()
    cached = _read_entry(fingerprint)
    if cached is not None:
        shape, vocab_size, analysis = cached
        return CorpusTokenizer(fingerprint, shape, vocab_size, analysis, _raw=raw)
    doc, parsed_fingerprint = load_document(tokenizer, text=decode_utf8(raw, path))
    # a file read through toktools.formats instead (not a tokenizer.json after all) is
    # fingerprinted by its canonical JSON: no entry (a lookup would never find it)
    keep = raw if parsed_fingerprint == fingerprint else None
    return CorpusTokenizer(parsed_fingerprint, document_shape(doc), vocab_size_of(doc), _document=doc, _raw=keep)


#: A layout folder whose files are all below this size is converted once and kept (see
#: :func:`_converted_layout`); a folder with larger files (model weights) is converted every run.
LAYOUT_FILE_LIMIT = 64 << 20


def _layout_key(tokenizer: Any) -> str | None:
    """sha256 over the name and bytes of every file of the folder a layout is read from (the
    folder, or the one holding the file named), or None (an object, a missing path, a folder
    with a file over :data:`LAYOUT_FILE_LIMIT`, an unreadable file)."""
    if not isinstance(tokenizer, (str, Path)):
        return None
    target = Path(tokenizer)
    folder = target if target.is_dir() else target.parent
    if not target.exists() or not folder.is_dir():
        return None
    digest = hashlib.sha256(f"{target.name if target.is_file() else ''}\0".encode())
    try:
        for file in sorted(p for p in folder.iterdir() if p.is_file()):
            if file.stat().st_size > LAYOUT_FILE_LIMIT:
                return None
            digest.update(
                file.name.encode("utf-8", "surrogateescape") + b"\0" + hashlib.sha256(file.read_bytes()).digest()
            )
    except OSError:
        return None
    return digest.hexdigest()


def _converted_layout(tokenizer: Any) -> CorpusTokenizer:
    """A tokenizer in another layout (``vocab.json`` + ``merges.txt``, ``vocab.txt``, a ``.model``,
    an object): converted to its ``tokenizer.json`` document, fingerprinted by the sha256 of the
    document's canonical JSON. For a folder of small files the canonical JSON is kept in the user
    cache, keyed by the files' bytes and toktools' code (converting GPT-2's bare files builds the
    whole reference, seconds); the document then comes to engines as those bytes (gigatoken
    loads them itself) and start-up reads the analysis kept for that fingerprint."""
    from toktools.io.user_cache import entry_path, read_blob, write_blob

    key = _layout_key(tokenizer)
    entry = entry_path("converted-layout", key, ".json", modules=("toktools",)) if key else None
    raw = read_blob(entry)
    if raw is None:
        doc, fingerprint = load_document(tokenizer)
        if entry is None:
            return CorpusTokenizer(fingerprint, document_shape(doc), vocab_size_of(doc), _document=doc)
        raw = json.dumps(doc, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        write_blob(entry, raw)
        return CorpusTokenizer(fingerprint, document_shape(doc), vocab_size_of(doc), _document=doc, _raw=raw)
    fingerprint = hashlib.sha256(raw).hexdigest()  # = document_fingerprint of the document
    cached = _read_entry(fingerprint)
    if cached is not None:
        shape, vocab_size, analysis = cached
        return CorpusTokenizer(fingerprint, shape, vocab_size, analysis, _raw=raw)
    doc = json.loads(raw.decode("utf-8"))
    return CorpusTokenizer(fingerprint, document_shape(doc), vocab_size_of(doc), _document=doc, _raw=raw)


def vocab_size_of(doc: Mapping[str, Any]) -> int:
    """How many ids the tokenizer can give: one past the largest in :func:`token_ids`."""
    return 1 + max(token_ids(doc).values(), default=0)


def _entry_path(fingerprint: str) -> Path | None:
    from toktools.engines.analysis import VERDICT_CODE, VERDICT_LIBRARIES
    from toktools.io.user_cache import entry_path

    return entry_path(
        "corpus-tokenizer", fingerprint, ".bin", modules=(*ENTRY_CODE, *VERDICT_CODE), libraries=VERDICT_LIBRARIES
    )


def _read_entry(fingerprint: str) -> tuple[dict[str, Any], int, Any] | None:
    """The shape, vocabulary size and analysis kept for this fingerprint, or None (no entry, or
    one that does not check out: then it is written again after this run)."""
    from toktools.io.user_cache import read_blob

    payload = read_blob(_entry_path(fingerprint))
    if payload is None:
        return None
    try:
        entry = marshal.loads(payload)
        if not isinstance(entry, dict):
            return None
        shape, vocab_size, reason, plan = entry["shape"], entry["vocab_size"], entry["reason"], entry["plan"]
        if not (
            isinstance(shape, dict) and isinstance(vocab_size, int) and (reason is None or isinstance(reason, str))
        ):
            return None
        from toktools.engines.analysis import Analysis, TiktokenPlan, cuttable

        if plan is not None:
            ranks, specials, pattern, rank_to_id = plan
            if not (
                isinstance(ranks, dict)
                and isinstance(specials, dict)
                and isinstance(pattern, str)
                and (rank_to_id is None or isinstance(rank_to_id, dict))
            ):
                return None
            plan = TiktokenPlan(ranks, specials, pattern, rank_to_id)
        elif reason is None:
            return None
        # where documents may be cut is decided from the shape again (cheap), not kept
        analysis = Analysis(
            reason,
            plan,
            cuttable=cuttable(shape),
            notes=list(entry["notes"]),
            probed=bool(entry["probed"]),
            probe=entry["probe"],
        )
    except (EOFError, ValueError, TypeError, KeyError):
        return None
    return shape, vocab_size, analysis
