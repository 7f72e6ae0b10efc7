"""``inspect`` reads the whole vocabulary a handful of times, never once per token.

A per-token loop that calls a whole-vocabulary method (``get_vocab``, ``Tokenizer.vocab_size``,
``added_tokens_json``) makes ``inspect`` of a 30K-piece ``.model`` take minutes: a Unigram's
``get_vocab`` copies 30K entries, and ``vocab_size`` used to read it once per added token. The
tests count those calls on one instance while the reports run, so they fail on the loop itself,
not on a clock (the machine is loaded)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from _spm_models import held_out_lines, train

from toktools.analysis.token_anatomy import token_info
from toktools.analysis.usage import corpus_usage
from toktools.analysis.vocabulary import vocab_stats
from toktools.formats import load
from toktools.sentencepiece.model_file import UNIGRAM, read_model, write_model

SIZE = 30_000
#: control pieces, as T5's ``<extra_id_N>``: each is an added token of the loaded tokenizer
CONTROLS = [f"<extra_id_{i}>" for i in range(20)]
#: a few whole-vocabulary reads per report is fine; a per-token loop makes ≥ 30 000
MOST_CALLS = 20


@pytest.fixture(scope="module")
def bpe_model() -> Path:
    return train("bpe_30k", model_type="bpe", vocab_size=SIZE, byte_fallback=True, control_symbols=CONTROLS)


@pytest.fixture(scope="module")
def unigram_model(bpe_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same 30K pieces as a Unigram model (scores are kept): training a Unigram this size
    would cost seconds, and a Unigram's ``get_vocab`` is the expensive one (a copy)."""
    model = read_model(bpe_model)
    model.trainer_spec.set("model_type", UNIGRAM)
    path = tmp_path_factory.mktemp("unigram30k") / "unigram_30k.model"
    write_model(model, path)
    return path


class Counter:
    """Wraps whole-vocabulary methods on one instance and counts the calls."""

    def __init__(self) -> None:
        self.calls: dict[str, int] = {}

    def wrap(self, owner: Any, name: str) -> None:
        method: Callable[..., Any] = getattr(owner, name)
        label = f"{type(owner).__name__}.{name}"
        self.calls[label] = 0

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls[label] += 1
            return method(*args, **kwargs)

        setattr(owner, name, counted)

    @property
    def total(self) -> int:
        return sum(self.calls.values())


def counted_tokenizer(path: Path) -> tuple[Any, Counter]:
    tokenizer = load(str(path))
    counter = Counter()
    # Tokenizer.vocab, .vocab_size and .get_vocab all read the model's get_vocab
    counter.wrap(tokenizer.model, "get_vocab")
    counter.wrap(tokenizer, "get_vocab")
    counter.wrap(tokenizer, "added_tokens_json")
    return tokenizer, counter


def each_report(tokenizer: Any) -> Iterator[str]:
    vocab_stats(tokenizer, top=20)
    yield "vocab_stats"
    corpus_usage(tokenizer, held_out_lines(60), top=20)
    yield "corpus_usage"
    for query in ("▁the", 5, 100, SIZE - 1, CONTROLS[3]):
        token_info(tokenizer, query)
    yield "token_info"


@pytest.mark.parametrize("which", [pytest.param("bpe_model", marks=pytest.mark.full), "unigram_model"])
def test_inspect_reads_the_whole_vocabulary_a_few_times_not_once_per_token(which: str, request) -> None:
    path = request.getfixturevalue(which)
    tokenizer, counter = counted_tokenizer(path)
    assert tokenizer.vocab_size == SIZE  # the size sentencepiece gave the model
    counter.calls = dict.fromkeys(counter.calls, 0)
    for report in each_report(tokenizer):
        assert counter.total <= MOST_CALLS, f"{report}: {counter.calls} whole-vocabulary reads for {SIZE} tokens"
        counter.calls = dict.fromkeys(counter.calls, 0)


def test_the_view_is_rebuilt_when_special_tokens_are_added(bpe_model: Path) -> None:
    """The cheap cache key still sees a special token added that was already a piece (the
    vocabulary size does not change then, the special tokens do)."""
    from toktools.analysis import token_view

    tokenizer = load(str(bpe_model))
    assert "▁the" not in token_view.special_tokens(tokenizer)
    size = tokenizer.vocab_size
    tokenizer.add_special_tokens(["▁the"])
    assert tokenizer.vocab_size == size
    assert token_view.special_tokens(tokenizer)["▁the"] == tokenizer.token_to_id("▁the")
