"""Engines: the reference, ``tokenizers`` and tiktoken give the same ids, and tiktoken is used
only where the analysis of the ``tokenizer.json`` proves it exact.

The exactness checker is tested for false positives with vocabularies built to break each
condition of ``spec/tiktoken-equivalence.md``: for each, tiktoken really gives other ids (so the
"not exact" verdict is needed), and every vocabulary the checker accepts gives the same ids.
"""

from __future__ import annotations

import json
import os
import random

import pytest
from conftest import read_corpus_sample, ref_vocab_dir

import toktools
from toktools.engines.analysis import GPT2_PATTERN, VERDICT_CODE, analyse, probe_code_points, probe_text
from toktools.engines.base import document_fingerprint
from toktools.engines.choice import likely_engine, make_engine
from toktools.engines.tiktoken_engine import TiktokenEngine
from toktools.errors import ToktoolsError
from toktools.models.bpe.bytelevel import BYTE_TO_SYMBOL, text_to_symbols

tiktoken = pytest.importorskip("tiktoken")


#: the session's user cache (None: ~/.cache/toktools), before this module turns it off
SESSION_CACHE = os.environ.get("TOKTOOLS_CACHE_DIR")


@pytest.fixture(autouse=True)
def no_analysis_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """Run the exactness checks every time instead of reading ~/.cache/toktools."""
    monkeypatch.setenv("TOKTOOLS_CACHE_DIR", "")


@pytest.fixture
def remembered_verdicts(monkeypatch: pytest.MonkeyPatch) -> None:
    """The session's user cache back on, for a test about what the engines give rather than
    how their checks run: gigatoken's probe of a 50K vocabulary (3-6 s) is then run once per
    tokenizer and gigatoken version, as for a user, and its verdict read after that (the
    entries are keyed by the code that made them, so a changed probe runs again)."""
    if SESSION_CACHE is None:
        monkeypatch.delenv("TOKTOOLS_CACHE_DIR")
    else:
        monkeypatch.setenv("TOKTOOLS_CACHE_DIR", SESSION_CACHE)


SPECIALS_TEXT = ["Hello<|endoftext|>world and <s>x</s> <mask>", "a<|endoftext|><|endoftext|>b", "<pad><unk>我们</s>"]


def _doc(name: str) -> dict:
    source = ref_vocab_dir(name) if name in ("gpt2", "bert-base-uncased") else name
    return toktools.load(source).to_tokenizer_json()


def _samples() -> list[str]:
    lines = read_corpus_sample("mixed_sample.txt", 60_000).splitlines()
    lines += read_corpus_sample("zh_novels.txt", 60_000).splitlines()
    return [line for line in lines if line]


@pytest.mark.shared
@pytest.mark.parametrize(
    "name, fastest",
    [
        ("gpt2", "gigatoken"),
        ("bytebpe-50k", "gigatoken"),
        ("wordpiece-30k", "reference"),
        ("bert-base-uncased", "reference"),
    ],
)
def test_every_engine_gives_the_reference_ids_on_english_and_chinese(
    name: str, fastest: str, remembered_verdicts: None
) -> None:
    doc = _doc(name)
    texts = _samples() + SPECIALS_TEXT
    reference = make_engine("reference", doc, workers=1).encode_batch(texts)
    auto = make_engine("auto", doc, workers=2)
    assert auto.name == fastest and "fastest exact engine" in auto.why
    assert auto.encode_batch(texts) == reference
    auto.close()
    assert make_engine("tokenizers", doc).encode_batch(texts) == reference
    if fastest == "gigatoken":  # tiktoken is exact there too (proven), one step down the table
        assert make_engine("tiktoken", doc, workers=1).encode_batch(texts) == reference


@pytest.mark.shared
def test_auto_takes_the_reference_for_bert_wordpiece_only_with_a_pool_of_workers() -> None:
    """Its ids-only path on worker processes beats ``tokenizers`` there; on one worker it
    would not (``tokenizers`` uses every core)."""
    doc = _doc("bert-base-uncased")
    assert likely_engine("auto", doc, workers=2) == "reference"
    assert make_engine("auto", doc, workers=1).name == "tokenizers"
    assert likely_engine("auto", doc, workers=1) == "auto"
    assert likely_engine("auto", _doc("bytebpe-50k"), workers=2) == "auto"


@pytest.mark.shared
@pytest.mark.parametrize("threads", [1, 2])
def test_tiktoken_packed_ids_are_its_id_lists(threads: int) -> None:
    """``encode_packed`` (tiktoken's uint32 buffers joined, what corpus outputs are written
    from) holds exactly ``encode_batch``'s ids, text by text, special tokens and the repair of
    a lone surrogate included."""
    doc = _doc("gpt2")
    engine = make_engine("tiktoken", doc, workers=threads)
    for texts in (_samples() + SPECIALS_TEXT + ["", "<|endoftext|>"], ["a\ud800b", "x", "<|endoftext|>"]):
        packed = engine.encode_packed(texts)
        lists = engine.encode_batch(texts)
        assert len(packed) == len(texts) and sum(packed.counts) * 4 == len(packed.data)
        assert [packed[i] for i in range(len(packed))] == lists
        assert packed[len(texts) - 1] == [doc["model"]["vocab"]["<|endoftext|>"]]
    packed = engine.encode_packed(_samples())
    assert [packed[i] for i in range(len(packed))] == make_engine("tokenizers", doc).encode_batch(_samples())
    engine.close()


def test_special_tokens_in_text_are_tokens_on_every_engine() -> None:
    doc = _doc("bytebpe-50k")
    ids = {
        name: make_engine(name, doc, workers=1).encode_batch(SPECIALS_TEXT)
        for name in ("reference", "tokenizers", "tiktoken", "gigatoken")
    }
    assert ids["reference"] == ids["tokenizers"] == ids["tiktoken"] == ids["gigatoken"]
    assert ids["reference"][0].count(doc["model"]["vocab"]["<s>"]) == 1
    assert doc["model"]["vocab"]["</s>"] in ids["reference"][2]


# ---------------------------------------------------------------------------------------------
# Hand-built vocabularies: each breaks one condition
# ---------------------------------------------------------------------------------------------

BYTES = sorted(BYTE_TO_SYMBOL)


def bpe_doc(
    merges: list[tuple[str, str]],
    *,
    ids: dict[str, int] | None = None,
    added: list[dict] | None = None,
    normalizer: dict | None = None,
    add_prefix_space: bool = False,
    extra: list[str] = (),
    ignore_merges: bool = False,
) -> dict:
    """A byte-level BPE ``tokenizer.json``: 256 byte symbols, then merge results in order."""
    vocab = {s: i for i, s in enumerate(BYTES)}
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    for token in extra:
        vocab.setdefault(token, len(vocab))
    if ids:
        vocab.update(ids)
    added = added or []
    for token in added:
        vocab.setdefault(token["content"], token["id"])
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {"single_word": False, "lstrip": False, "rstrip": False, "normalized": False, "special": True, **t}
            for t in added
        ],
        "normalizer": normalizer,
        "pre_tokenizer": {
            "type": "ByteLevel",
            "add_prefix_space": add_prefix_space,
            "trim_offsets": True,
            "use_regex": True,
        },
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": ignore_merges,
            "vocab": vocab,
            "merges": [f"{a} {b}" for a, b in merges],
        },
    }


def raw_tiktoken_ids(doc: dict, text: str) -> list[int]:
    """What tiktoken makes of ``text`` with ranks = the document's ids, ignoring the checker."""
    added = {t["content"]: t["id"] for t in doc["added_tokens"]}
    from toktools.models.bpe.bytelevel import symbols_to_bytes

    ranks = {symbols_to_bytes(s): i for s, i in doc["model"]["vocab"].items() if s not in added}
    encoding = tiktoken.Encoding("probe", pat_str=GPT2_PATTERN, mergeable_ranks=ranks, special_tokens=added)
    return encoding.encode(text, allowed_special="all")


def hf_ids(doc: dict, text: str) -> list[int]:
    return make_engine("tokenizers", doc).encode_batch([text])[0]


@pytest.mark.parametrize(
    "doc, text, reason",
    [
        # prefix-overlapping specials: HF matches leftmost-longest, tiktoken's alternation does not
        (bpe_doc([], added=[{"id": 300, "content": "<|a|>"}, {"id": 301, "content": "<|a|>x"}]), "<|a|>x", "prefix"),
        # E4' (ignore_merges: still a gate): "abc" is made by (ab, c), but HF's own merges split it
        # as [a, bc]; with ignore_merges HF emits "abcd" whole, and on "abc" tiktoken merges by rank
        (bpe_doc([("b", "c"), ("a", "b"), ("ab", "c"), ("bc", "d")], ignore_merges=True), "abcd", "E4'"),
    ],
)
def test_inexact_vocabularies_are_detected_and_really_differ(doc: dict, text: str, reason: str) -> None:
    analysis = analyse(doc)
    assert analysis.tiktoken_reason is not None and reason in analysis.tiktoken_reason
    with pytest.raises(ToktoolsError, match="not exact"):
        make_engine("tiktoken", doc)
    assert make_engine("auto", doc).name != "tiktoken"


@pytest.mark.parametrize(
    "doc, text, left_out",
    [
        # E4 fails for "abc" (made by (ab, c), but HF reaches [a, bc] first): as a gate, tiktoken
        # would merge by result rank and give "abc"; as a filter "abc" is left out, and it agrees
        (bpe_doc([("b", "c"), ("a", "b"), ("ab", "c")]), "abc", ["abc"]),
        # a token no merge makes (planted): left out, so tiktoken never merges "x" + "y" either
        (bpe_doc([("a", "b")], extra=["xy"]), "xy", ["xy"]),
        # a token built only from an unreachable one is unreachable too (and its merge dropped)
        (bpe_doc([("b", "c"), ("a", "b"), ("ab", "c"), ("abc", "d")]), "abcd abc", ["abc", "abcd"]),
    ],
)
def test_e4_failures_are_left_out_of_tiktoken_and_the_ids_agree(doc: dict, text: str, left_out: list) -> None:
    """The spec's amendment "E4 as a filter": tokens failing E4 are never made by tokenizers
    (ignore_merges off), so tiktoken without them is exact; with them it would not be."""
    analysis = analyse(doc)
    assert analysis.tiktoken_reason is None and analysis.unreachable == left_out
    assert make_engine("tiktoken", doc).encode_batch([text]) == hf_ids_batch(doc, [text])
    with_all = json.loads(json.dumps(doc))
    assert raw_tiktoken_ids(with_all, text) != hf_ids(doc, text)  # the gate was not over-cautious


@pytest.mark.parametrize(
    "doc, reason",
    [
        (bpe_doc([("a", "b"), ("ab", "c"), ("a", "bc"), ("b", "c")]), "two merges make"),  # E2
        (bpe_doc([("a", "b")], ids={"Ā": 10_000}), None),  # a byte symbol moved: still fine
        (bpe_doc([("a", "b")], normalizer={"type": "Lowercase"}), "normalizer"),
        (bpe_doc([("a", "b")], add_prefix_space=True), "add_prefix_space"),
        (bpe_doc([("a", "b")], added=[{"id": 300, "content": "<m>", "lstrip": True}]), "lstrip"),
    ],
)
def test_configurations_tiktoken_cannot_express(doc: dict, reason: str | None) -> None:
    assert analyse(doc).tiktoken_reason == reason or reason in (analyse(doc).tiktoken_reason or "")


def test_missing_byte_is_not_exact() -> None:
    doc = bpe_doc([("a", "b")])
    del doc["model"]["vocab"]["Ġ"]
    assert "E1" in analyse(doc).tiktoken_reason


def test_merge_order_against_id_order_is_exact_with_a_remap() -> None:
    # ids of "ab" and "cd" swapped against merge order (E3): exact once ranks are remapped
    doc = bpe_doc([("a", "b"), ("c", "d"), ("ab", "cd")])
    vocab = doc["model"]["vocab"]
    vocab["ab"], vocab["cd"] = vocab["cd"], vocab["ab"]
    analysis = analyse(doc)
    assert analysis.tiktoken_reason is None and analysis.plan.rank_to_id is not None
    texts = ["abcd abab cdcd", "dcba", "abc d"]
    assert make_engine("tiktoken", doc).encode_batch(texts) == make_engine("tokenizers", doc).encode_batch(texts)


def test_no_false_positive_on_trained_and_perturbed_vocabularies() -> None:
    """Vocabularies trained by ``tokenizers`` and then perturbed (merge lines swapped, as the
    spec did): whenever the checker says exact, tiktoken's ids equal ``tokenizers``' on every
    test line; and at least one perturbation is caught."""
    from toktools.training import tokenizers_backend as fast

    text = read_corpus_sample("mixed_sample.txt", 40_000) + read_corpus_sample("zh_novels.txt", 20_000)
    lines = [line for line in text.splitlines() if line]
    trained = fast.train_bytebpe(texts=lines, vocab_size=700, min_frequency=2, special_tokens=["<|endoftext|>"])
    base = json.loads(trained.to_str())
    rng = random.Random(7)
    tests = lines[::3] + ["<|endoftext|>".join(rng.sample(lines, 2)) for _ in range(20)]
    verdicts = []
    for trial in range(6):
        doc = json.loads(json.dumps(base))
        merges = doc["model"]["merges"]
        for _ in range(trial * 40):
            i = rng.randrange(len(merges) - 50)
            j = i + rng.randrange(1, 50)
            merges[i], merges[j] = merges[j], merges[i]
        analysis = analyse(doc)
        verdicts.append(analysis.tiktoken_reason is None)
        if analysis.tiktoken_reason is None:
            assert make_engine("tiktoken", doc).encode_batch(tests) == hf_ids_batch(doc, tests)
        if trial == 0:
            assert not analysis.unreachable
        elif trial == 5:  # enough swaps to break E4 for some tokens: filtered, and still exact
            assert analysis.unreachable and analysis.tiktoken_reason is None
    assert verdicts[0]


def hf_ids_batch(doc: dict, texts: list[str]) -> list[list[int]]:
    return make_engine("tokenizers", doc).encode_batch(texts)


def test_tiktoken_regex_matches_tokenizers_on_every_risky_code_point() -> None:
    """Python's ``regex`` and ``tokenizers``' Oniguruma disagree on some code points (new
    Unicode characters). tiktoken's Rust ``regex`` must side with ``tokenizers`` on all of them.
    The probe vocabulary merges each context character with the next byte and each byte with a
    following ``a``, so any change in piece boundaries changes the ids."""
    contexts = ["a", "1", "!", " ", "\t", "x", "'"]
    merges = []
    seen = set()
    for ctx in contexts:
        for symbol in BYTES:
            for pair in ((text_to_symbols(ctx), symbol), (symbol, "a")):
                if pair[0] + pair[1] not in seen:
                    seen.add(pair[0] + pair[1])
                    merges.append(pair)
    doc = bpe_doc(merges)
    assert analyse(doc).tiktoken_reason is None
    texts = probe_text(probe_code_points(full=True))
    ours = TiktokenEngine(analyse(doc).plan).encode_batch(texts)
    theirs = hf_ids_batch(doc, texts)
    differing = [t[:3] for t, a, b in zip(texts, ours, theirs) if a != b]
    assert not differing


def test_unavailable_or_inexact_engines_explain_themselves(monkeypatch: pytest.MonkeyPatch) -> None:
    doc = _doc("wordpiece-30k")
    with pytest.raises(ToktoolsError, match="tiktoken is not exact for this tokenizer: model 'WordPiece' is not BPE"):
        make_engine("tiktoken", doc)
    monkeypatch.setattr("toktools.engines.choice.tiktoken_available", lambda: False)
    monkeypatch.setattr("toktools.engines.choice.gigatoken_available", lambda: False)
    gpt = _doc("bytebpe-50k")
    auto = make_engine("auto", gpt)
    # down the table: the reference (compiled merge) is faster than tokenizers
    assert auto.name == "reference" and "gigatoken: engine gigatoken is not installed" in auto.why
    assert "tiktoken: engine tiktoken is not installed" in auto.why
    auto.close()
    monkeypatch.setattr("toktools.runtime.compiled_switch.numba_installed", lambda: False)
    assert make_engine("auto", gpt).name == "tokenizers"
    with pytest.raises(ToktoolsError, match="not installed"):
        make_engine("tiktoken", gpt)
    with pytest.raises(ToktoolsError, match="unknown engine"):
        make_engine("fastest", gpt)


def test_the_slow_verdicts_are_remembered_per_tokenizer_and_versions(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOKTOOLS_CACHE_DIR", str(tmp_path))
    doc = bpe_doc([("a", "b"), ("ab", "c")])
    monkeypatch.setattr("toktools.engines.analysis._analysis_cache", {})
    assert analyse(doc).tiktoken_reason is None
    make_engine("tiktoken", doc)  # runs and remembers the regex probe
    [saved] = (tmp_path / "engine-analysis").iterdir()
    assert json.loads(saved.read_text()) == {"e4": None, "unreachable": [], "probe": None, "exact": {"remap": False}}
    assert document_fingerprint(doc) in saved.name
    monkeypatch.setattr("toktools.engines.analysis._analysis_cache", {})
    monkeypatch.setattr("toktools.engines.analysis._self_reachability", lambda *args: pytest.fail("E4 ran again"))
    monkeypatch.setattr("toktools.engines.analysis._analyse", lambda *args, **kw: pytest.fail("E1-E3 ran again"))
    plan = analyse(doc).plan  # every check is read: only the ranks are rebuilt
    assert plan is not None and plan.rank_to_id is None
    assert plan.mergeable_ranks[b"ab"] == doc["model"]["vocab"]["ab"]
    # a verdict written by other code is not read (another key): E1-E3 run again
    monkeypatch.setattr("toktools.engines.analysis.VERDICT_CODE", (*VERDICT_CODE, "toktools.errors"))
    monkeypatch.setattr("toktools.engines.analysis._analysis_cache", {})
    with pytest.raises(pytest.fail.Exception, match="E1-E3 ran again"):
        analyse(doc)


def test_gigatoken_is_loaded_ahead_when_it_will_be_tried_first() -> None:
    """A run whose first engine is gigatoken imports it and loads the tokenizer on a thread while
    the inputs are hashed; the engine made for the same bytes takes that tokenizer, other bytes
    do not. A small input (auto tries tiktoken first) loads nothing ahead."""
    pytest.importorskip("gigatoken")
    from toktools.corpus.prepared_tokenizer import load_corpus_tokenizer
    from toktools.corpus.shards import _nothing, _preload
    from toktools.engines import gigatoken_engine
    from toktools.engines.choice import first_tried

    tok = load_corpus_tokenizer("bytebpe-50k")
    assert first_tried("auto", tok.shape, None, 100_000) == "tiktoken"
    assert first_tried("auto", tok.shape, None, 50_000_000) == "gigatoken"
    assert _preload("auto", tok, None, 100_000) is _nothing
    _preload("auto", tok, None, 50_000_000)()
    [(raw, ahead)] = gigatoken_engine._ahead
    assert raw is tok.raw_json
    assert gigatoken_engine._loaded_ahead(bytes(bytearray(raw))) is None  # equal bytes, another object
    assert not gigatoken_engine._ahead  # taken once, whoever asks
    gigatoken_engine.preload(tok.raw_json)()
    [(_, ahead)] = gigatoken_engine._ahead
    engine = gigatoken_engine.GigatokenEngine(tok.raw_json)
    assert engine.tokenizer is ahead and not gigatoken_engine._ahead


def test_auto_weighs_start_up_against_the_input_size() -> None:
    """gigatoken encodes several times faster than tiktoken but starts later (awkward's import,
    its loader): ``auto`` takes tiktoken for a small input, gigatoken for a large one, and says why."""
    pytest.importorskip("gigatoken")
    gpt = _doc("bytebpe-50k")
    small = make_engine("auto", gpt, input_bytes=100_000)
    assert small.name == "tiktoken" and "expected" in small.why and "0.1 MB" in small.why
    small.close()
    large = make_engine("auto", gpt, input_bytes=50_000_000)
    assert large.name == "gigatoken" and "for 50.0 MB" in large.why
    large.close()
