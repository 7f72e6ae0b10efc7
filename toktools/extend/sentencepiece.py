"""Extending a sentencepiece ``.model`` (Unigram or BPE type): a model of the same type is trained
on the corpus with sentencepiece, and its pieces that the base lacks are appended.

Every base piece keeps its id, text, type and score; new pieces are ``NORMAL`` and come after
the last one. Their scores:

* **BPE type.** sentencepiece merges the neighbouring pair whose joined piece scores highest;
  the base's scores fall with the merge order (``-id``). New pieces continue that order below
  the base's lowest score, so the base's own merges always run first and on text the base
  already cuts well the new pieces rarely take part. Characters come before the pieces made of
  them, so that every kept piece can be built.
* **Unigram.** Scores are log-probabilities in each model's own vocabulary, so the corpus
  model's scores are moved onto the base's scale: shifted by the difference of the two models'
  median ``NORMAL`` score (a piece as common in the new language as the base's typical piece is
  in the base's gets the base's typical score), and kept below the base's highest score. Then
  the Viterbi cut of text in the new language uses the new pieces as its own model would, and
  text the base already knows keeps the base's pieces where they score better.

sentencepiece is needed to train (the ``sentencepiece`` extra); the written model is read and
written by :mod:`toktools.sentencepiece.model_file`, which keeps every byte it does not change.
"""

from __future__ import annotations

import statistics
import tempfile
from collections.abc import Sequence
from pathlib import Path

from toktools.errors import ToktoolsError
from toktools.extend.base import Base, dumps_json
from toktools.extend.mapping import NewToken
from toktools.extend.result import Extension
from toktools.io.outputs import dumps_tokenizer_json
from toktools.sentencepiece.model_file import NORMAL, SentencePiece, SentencePieceModel, read_model

#: sentencepiece's built-in normalisation rules (a model with a custom charsmap trains with identity)
RULES = ("nmt_nfkc", "nfkc", "nmt_nfkc_cf", "nfkc_cf", "identity")


def train_corpus_model(base: SentencePieceModel, lines: Sequence[str], size: int) -> SentencePieceModel:
    """A sentencepiece model of the base's type and normalisation, trained on ``lines``."""
    try:
        import sentencepiece as spm
    except ImportError:  # pragma: no cover - the extra is installed in the tests
        raise ToktoolsError("extending a sentencepiece model needs sentencepiece: pip install sentencepiece") from None
    spec = base.normalizer_spec
    size = max(size, len(set("".join(lines))) + 64)  # sentencepiece wants a piece per kept character
    rule = spec.get("name") if spec.get("name") in RULES else "identity"
    with tempfile.TemporaryDirectory(prefix="toktools-extend-") as work:
        corpus = Path(work) / "corpus.txt"
        corpus.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        prefix = Path(work) / "corpus"
        try:
            spm.SentencePieceTrainer.train(
                input=str(corpus),
                model_prefix=str(prefix),
                model_type=base.model_type,
                vocab_size=size,
                hard_vocab_limit=False,
                character_coverage=0.9995,
                normalization_rule_name=rule,
                add_dummy_prefix=bool(spec.get("add_dummy_prefix")),
                remove_extra_whitespaces=bool(spec.get("remove_extra_whitespaces")),
                split_digits=bool(base.trainer_spec.get("split_digits")),
                max_sentencepiece_length=int(base.trainer_spec.get("max_sentencepiece_length")),
                num_threads=1,
                minloglevel=2,
            )
        except RuntimeError as err:
            raise ToktoolsError(f"sentencepiece could not train on the corpus: {str(err).splitlines()[0]}") from None
        return read_model(prefix.with_suffix(".model"))


def extend_sentencepiece(
    base: Base, training_lines: Sequence[str], add: int, keep_lines: Sequence[str] = ()
) -> Extension:
    """``base`` with up to ``add`` pieces of a model trained on ``training_lines``; a piece that
    occurs in the normalised text of ``keep_lines`` is left out (see :func:`pieces_in`)."""
    model_name, model_path = next(iter(base.files.items()))
    model = read_model(model_path)
    skipped = 0
    if not training_lines or add <= 0:
        candidates: list[SentencePiece] = []
    else:
        corpus_model = train_corpus_model(model, training_lines, max(add + add // 4 + 200, 300))
        known = {p.piece for p in model.pieces}
        candidates = [p for p in corpus_model.pieces if p.type == NORMAL and p.piece not in known]
        if keep_lines:
            found = pieces_in(model_path, keep_lines, [p.piece for p in candidates])
            skipped = len(found)
            candidates = [p for p in candidates if p.piece not in found]
        if model.model_type == "bpe":
            chars = [p for p in candidates if len(p.piece) == 1]
            candidates = chars + [p for p in candidates if len(p.piece) > 1]
        candidates = candidates[:add]
    base_size = len(model.pieces)
    scores = _new_scores(model, candidates)
    extended_model = SentencePieceModel(
        model.pieces + [SentencePiece(p.piece, s, NORMAL) for p, s in zip(candidates, scores)],
        model.trainer_spec,
        model.normalizer_spec,
        model.denormalizer_spec,
        model.other,
        model._present,
    )
    data = extended_model.to_bytes()
    from toktools.formats import load_sentencepiece_model
    from toktools.sentencepiece.to_json import sentencepiece_to_json

    with tempfile.TemporaryDirectory(prefix="toktools-extend-") as work:
        written = Path(work) / model_name
        written.write_bytes(data)
        tokenizer = load_sentencepiece_model(written, add_bos=False, add_eos=False)
    document = sentencepiece_to_json(extended_model)
    base_tokenizer = base.tokenizer
    new_tokens = []
    for offset, piece in enumerate(candidates):
        text = piece.piece.replace("\u2581", " ")
        ids = base_tokenizer.encode(text, add_special_tokens=False).ids if text.strip() else []
        new_tokens.append(NewToken(base_size + offset, piece.piece, text, ids))
    files: dict[str, str | bytes] = {model_name: data, "tokenizer.json": dumps_tokenizer_json(document)}
    files.update(base.config_files() or _transformers_config(extended_model))
    notes = []
    if keep_lines:
        notes.append(f"--keep-segmentation-of: left out {skipped:,} pieces that occur in its text")
    if len(candidates) < add:
        notes.append(f"added {len(candidates):,} of {add:,} pieces: the corpus model has no more pieces the base lacks")
    return Extension(tokenizer, files, new_tokens, base_size, notes)


def pieces_in(model_path: Path, lines: Sequence[str], pieces: Sequence[str]) -> set[str]:
    """The ``pieces`` that occur in the text of ``lines`` as the base normalises it.

    A piece that occurs nowhere in a line's normalised text can be neither built by BPE nor
    chosen by the Viterbi search there: the line keeps the base's ids when all new pieces are
    such pieces. (Stricter than needed for the BPE type, exact for Unigram.)"""
    import sentencepiece as spm

    processor = spm.SentencePieceProcessor(model_file=str(model_path))
    text = "\n".join(processor.normalize(list(lines)))
    characters = set(text)
    return {piece for piece in pieces if characters.issuperset(piece) and piece in text}


def _new_scores(model: SentencePieceModel, candidates: Sequence[SentencePiece]) -> list[float]:
    """The scores of the appended pieces (see the module docstring)."""
    if not candidates:
        return []
    normal = [p.score for p in model.pieces if p.type == NORMAL]
    if model.model_type == "bpe":
        lowest = min(normal, default=0.0)
        return [lowest - 1.0 - k for k in range(len(candidates))]
    shift = (statistics.median(normal) if normal else 0.0) - statistics.median(p.score for p in candidates)
    ceiling = max(normal, default=0.0)
    return [min(p.score + shift, ceiling) for p in candidates]


def _transformers_config(model: SentencePieceModel) -> dict[str, str | bytes]:
    """A ``tokenizer_config.json`` that lets ``AutoTokenizer`` load the ``tokenizer.json`` (the
    generic fast class, with the model's special pieces), for a base that came without one."""
    config: dict[str, object] = {"tokenizer_class": "PreTrainedTokenizerFast", "clean_up_tokenization_spaces": False}
    for which in ("unk", "bos", "eos", "pad"):
        if model.special_id(which) is not None:
            config[f"{which}_token"] = model.trainer_spec.get(f"{which}_piece")
    return {"tokenizer_config.json": dumps_json(config)}
