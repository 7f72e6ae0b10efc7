"""Masking for masked-language-model pretraining: the BERT sampler (``mask_tokens``), the
transformers-style collator (``MaskingCollator``), whole words, and the statistics they promise.

Ids come from the shipped vocabularies encoding a sample of the shared English Wikipedia (about
120k tokens); word boundaries in the checks are recomputed here from the token strings.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
from conftest import read_corpus_sample, ref_vocab_dir

from toktools.errors import ToktoolsError
from toktools.formats import load
from toktools.pretraining.masking import ChineseWords, MaskingCollator, mask_tokens, masking_info, pad_batch, word_rule

SEQUENCE = 128
VOCABS = Path(__file__).resolve().parent.parent / "vocabs"


@pytest.fixture(scope="module", params=["wordpiece-30k", "bytebpe-50k"])
def encoded(request):
    """(tokenizer, info, rows): rows of ``[CLS] … [SEP]`` of at most 128 ids, ≥ 100k tokens."""
    tokenizer = load(request.param)
    text = read_corpus_sample("en_wiki.txt.gz", 600_000)
    info = masking_info(tokenizer)
    flat = [i for e in tokenizer.encode_batch(text.splitlines(), add_special_tokens=False, workers=1) for i in e.ids]
    assert len(flat) >= 100_000
    room = SEQUENCE - 2
    rows = [np.array([info.cls_id, *flat[i : i + room], info.sep_id]) for i in range(0, len(flat), room)]
    return tokenizer, info, rows


def words_of(tokens: list[str], special: set[str], rule: str) -> list[list[int]]:
    """Word groups recomputed from token strings: ``##`` pieces join the previous word
    (WordPiece); otherwise a token starting with ``Ġ`` (or whitespace) starts a word."""
    groups: list[list[int]] = []
    previous_special = True
    for position, token in enumerate(tokens):
        if token in special:
            previous_special = True
            continue
        if rule == "##":
            starts = not token.startswith("##")
        else:
            starts = token[0] in "ĠĊĉč" or (groups and tokens[groups[-1][-1]][-1] in "ĠĊĉč")
        if starts or previous_special or not groups:
            groups.append([position])
        else:
            groups[-1].append(position)
        previous_special = False
    return groups


def split_of(inputs: np.ndarray, labels: np.ndarray, mask_id: int) -> tuple[int, float, float, float]:
    chosen = labels != -100
    count = int(chosen.sum())
    as_mask = int((inputs[chosen] == mask_id).sum())
    kept = int((inputs[chosen] == labels[chosen]).sum())
    return count, as_mask / count, (count - as_mask - kept) / count, kept / count


def test_word_rule_comes_from_the_tokenizer_json():
    assert word_rule(load("wordpiece-30k").to_tokenizer_json()) == ("continuation", "##")
    assert word_rule(load("bytebpe-50k").to_tokenizer_json()) == ("start", "Ġ")
    metaspace = {
        "model": {"type": "Unigram"},
        "pre_tokenizer": {
            "type": "Sequence",
            "pretokenizers": [{"type": "WhitespaceSplit"}, {"type": "Metaspace", "replacement": "▁"}],
        },
    }
    assert word_rule(metaspace) == ("start", "▁")


def test_bert_sampler_masks_15_percent_split_80_10_10(encoded):
    tokenizer, info, rows = encoded
    rng = np.random.default_rng(7)
    masked = [mask_tokens(row, info, rng) for row in rows]
    inputs = np.concatenate([m.input_ids for m in masked])
    labels = np.concatenate([m.labels for m in masked])
    text_tokens = int((~info.special[np.concatenate(rows)]).sum())
    assert text_tokens >= 100_000
    count, as_mask, as_random, kept = split_of(inputs, labels, info.mask_id)
    assert abs(count / text_tokens - 0.15) <= 0.003
    assert abs(as_mask - 0.8) <= 0.01 and abs(as_random - 0.1) <= 0.01 and abs(kept - 0.1) <= 0.01


def test_collator_masks_15_percent_split_80_10_10(encoded):
    tokenizer, info, rows = encoded
    collator = MaskingCollator(info, seed=3)
    counts = np.zeros(4)
    text_tokens = 0
    for start in range(0, len(rows), 32):
        batch = collator(rows[start : start + 32])
        count, as_mask, as_random, kept = split_of(batch["input_ids"], batch["labels"], info.mask_id)
        counts += [count, as_mask * count, as_random * count, kept * count]
        text_tokens += int(
            (
                ~info.special[np.where(batch["labels"] != -100, batch["labels"], batch["input_ids"])]
                & batch["attention_mask"].astype(bool)
            ).sum()
        )
    assert abs(counts[0] / text_tokens - 0.15) <= 0.003
    assert np.allclose(counts[1:] / counts[0], [0.8, 0.1, 0.1], atol=0.01)


def test_no_special_token_is_ever_masked_or_used_as_a_replacement(encoded):
    tokenizer, info, rows = encoded
    specials = np.flatnonzero(info.special)
    # sprinkle every special token through the text and mask half of everything
    rng = np.random.default_rng(0)
    noisy = []
    for row in rows[:300]:
        row = row.copy()
        row[rng.integers(1, len(row) - 1, size=10)] = rng.choice(specials, size=10)
        noisy.append(row)
    for masked in [
        mask_tokens(r, info, rng, mask_prob=0.5, mask_replace_prob=0.0, random_replace_prob=1.0) for r in noisy
    ]:
        changed = masked.input_ids != np.where(masked.labels != -100, masked.labels, masked.input_ids)
        assert not info.special[masked.labels[masked.labels != -100]].any()
        assert not info.special[masked.input_ids[changed]].any()
    batch = MaskingCollator(info, mlm_probability=0.5, mask_replace_prob=0.0, random_replace_prob=1.0, seed=1)(noisy)
    chosen = batch["labels"] != -100
    assert chosen.any()
    assert not info.special[batch["labels"][chosen]].any()
    assert not info.special[batch["input_ids"][chosen]].any()


@pytest.mark.parametrize("sampler", ["bert", "collator"])
def test_whole_word_groups_are_never_split(encoded, sampler):
    tokenizer, info, rows = encoded
    rule = "##" if tokenizer.to_tokenizer_json()["model"]["type"] == "WordPiece" else "Ġ"
    special = {t["content"] for t in tokenizer.to_tokenizer_json()["added_tokens"] if t["special"]}
    rng = np.random.default_rng(5)
    sample = rows[:400]
    if sampler == "bert":
        labels = [mask_tokens(r, info, rng, whole_word=True).labels for r in sample]
    else:
        batch = MaskingCollator(info, whole_word=True, seed=5)(sample)
        labels = [batch["labels"][i, : len(r)] for i, r in enumerate(sample)]
    words = split = masked_words = 0
    for row, label in zip(sample, labels):
        tokens = [tokenizer.id_to_token(int(i)) for i in row]
        for group in words_of(tokens, special, rule):
            hit = [label[p] != -100 for p in group]
            words += 1
            masked_words += all(hit)
            split += any(hit) and not all(hit)
    assert split == 0
    assert masked_words > 0.05 * words
    share = sum(int((label != -100).sum()) for label in labels) / sum(int((~info.special[r]).sum()) for r in sample)
    assert abs(share - 0.15) < 0.01


def test_max_predictions_caps_each_sequence(encoded):
    tokenizer, info, rows = encoded
    rng = np.random.default_rng(1)
    assert all(int((mask_tokens(r, info, rng, max_predictions=5).labels != -100).sum()) <= 5 for r in rows[:100])
    assert all(
        int((mask_tokens(r, info, rng, max_predictions=5, whole_word=True).labels != -100).sum()) <= 5
        for r in rows[:100]
    )


def test_same_statistics_as_transformers_collator(encoded):
    """transformers' DataCollatorForLanguageModeling (return_tensors="np", no PyTorch) and ours on
    the same ids: same masked share, same 80/10/10 split, same output keys and shapes."""
    transformers = pytest.importorskip("transformers")
    tokenizer, info, rows = encoded
    name = "wordpiece-30k" if tokenizer.to_tokenizer_json()["model"]["type"] == "WordPiece" else "bytebpe-50k"
    reference = transformers.AutoTokenizer.from_pretrained(str(VOCABS / name))
    assert reference.mask_token_id == info.mask_id
    theirs = transformers.DataCollatorForLanguageModeling(reference, return_tensors="np", seed=11)
    ours = MaskingCollator(info, seed=11)
    stats, shapes = {}, {}
    for label, collator in (("ours", ours), ("theirs", theirs)):
        total = np.zeros(4)
        for start in range(0, len(rows), 32):
            batch = collator([list(map(int, r)) for r in rows[start : start + 32]])
            count, as_mask, as_random, kept = split_of(batch["input_ids"], batch["labels"], info.mask_id)
            total += [count, as_mask * count, as_random * count, kept * count]
            assert not info.special[batch["labels"][batch["labels"] != -100]].any()
        stats[label] = np.array([total[0] / sum(int((~info.special[r]).sum()) for r in rows), *(total[1:] / total[0])])
        shapes[label] = {name: value.shape for name, value in batch.items()}
    # the same arrays; ours adds the attention mask that transformers leaves out for plain id lists
    assert set(shapes["theirs"]) == {"input_ids", "labels"}
    assert {name: shapes["ours"][name] for name in shapes["theirs"]} == shapes["theirs"]
    assert shapes["ours"]["attention_mask"] == shapes["ours"]["input_ids"]
    assert abs(stats["ours"][0] - stats["theirs"][0]) <= 0.004
    assert np.allclose(stats["ours"][1:], stats["theirs"][1:], atol=0.015)


def test_whole_word_share_matches_transformers_whole_word_mask():
    """transformers' whole_word_mask=True (words from offsets, all chosen tokens become the mask)
    and ours with mask_replace_prob=1: about 15% of tokens in both, every chosen token masked."""
    transformers = pytest.importorskip("transformers")
    directory = VOCABS / "wordpiece-30k"
    reference = transformers.AutoTokenizer.from_pretrained(str(directory))
    lines = [line for line in read_corpus_sample("en_wiki.txt.gz", 300_000).splitlines() if line.strip()]
    encoded = reference(
        lines,
        truncation=True,
        max_length=128,
        padding="max_length",
        return_offsets_mapping=True,
        return_special_tokens_mask=True,
    )
    features = [
        {"input_ids": i, "offset_mapping": o, "special_tokens_mask": s}
        for i, o, s in zip(encoded["input_ids"], encoded["offset_mapping"], encoded["special_tokens_mask"])
    ]
    info = masking_info(load(str(directory)))
    with warnings.catch_warnings():  # it warns that whole words turn random replacement off
        warnings.simplefilter("ignore")
        theirs = transformers.DataCollatorForLanguageModeling(
            reference, whole_word_mask=True, return_tensors="np", seed=2
        )
    ours = MaskingCollator(info, whole_word=True, mask_replace_prob=1.0, random_replace_prob=0.0, seed=2)
    shares = []
    for collator, examples in ((theirs, features), (ours, [f["input_ids"] for f in features])):
        chosen = tokens = 0
        for start in range(0, len(examples), 64):
            batch = collator(examples[start : start + 64])
            picked = batch["labels"] != -100
            assert (batch["input_ids"][picked] == info.mask_id).all()
            chosen += int(picked.sum())
            tokens += int((~info.special[np.where(picked, batch["labels"], batch["input_ids"])]).sum())
        shares.append(chosen / tokens)
    assert abs(shares[0] - 0.15) < 0.01 and abs(shares[1] - 0.15) < 0.01


def test_chinese_whole_words_from_jieba_are_never_split():
    """Chinese BERT-wwm: characters of one jieba word are masked together (bert-base-chinese
    splits every Chinese character into its own token)."""
    pytest.importorskip("jieba")
    from conftest import corpus_path

    tokenizer = load(ref_vocab_dir("bert-base-chinese") / "vocab.txt")
    info = masking_info(tokenizer)
    words = ChineseWords(corpus_path("zh_jieba_dict.txt.gz"))
    text = [line for line in read_corpus_sample("zh_wiki_sample.txt", 60_000).splitlines() if line.strip()]
    rng = np.random.default_rng(4)
    groups_seen = split = multi = 0
    for line in text[:200]:
        encoding = tokenizer.encode(line[:120], add_special_tokens=False)
        line = line[:120]
        continuations = words.continuations(line, encoding.offsets)
        masked = mask_tokens(encoding.ids, info, rng, mask_prob=0.3, whole_word=True, continuations=continuations)
        batch = MaskingCollator(info, whole_word=True, mlm_probability=0.3, seed=int(rng.integers(1 << 30)))(
            [{"input_ids": encoding.ids, "chinese_ref": np.flatnonzero(continuations)}]
        )
        for labels in (masked.labels, batch["labels"][0]):
            for start, end in words.words(line):
                inside = [
                    i
                    for i, (s, e) in enumerate(encoding.offsets)
                    if start <= s < end and not info.special[encoding.ids[i]]
                ]
                if len(inside) < 2 or not any("\u4e00" <= ch <= "\u9fff" for ch in line[start:end]):
                    continue
                hit = [labels[i] != -100 for i in inside]
                groups_seen += 1
                multi += all(hit)
                split += any(hit) and not all(hit)
    assert groups_seen > 500 and multi > 50
    assert split == 0


def test_a_tokenizer_without_a_mask_token_is_refused(tmp_path):
    document = load("wordpiece-30k").to_tokenizer_json()
    document["added_tokens"] = [t for t in document["added_tokens"] if t["content"] != "[MASK]"]
    del document["model"]["vocab"]["[MASK]"]
    (tmp_path / "tokenizer.json").write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(ToktoolsError, match="no mask token"):
        masking_info(load(tmp_path / "tokenizer.json"))


def test_pad_batch_pads_labels_with_minus_100_and_passes_scalar_labels():
    info = masking_info(load("wordpiece-30k"))
    batch = pad_batch(
        [
            {"input_ids": [2, 9000, 3], "labels": [-100, 9000, -100], "next_sentence_label": 1},
            {"input_ids": [2, 3], "labels": [-100, -100], "next_sentence_label": 0},
        ],
        info,
    )
    assert batch["input_ids"].tolist() == [[2, 9000, 3], [2, 3, info.pad_id]]
    assert batch["labels"].tolist() == [[-100, 9000, -100], [-100, -100, -100]]
    assert batch["attention_mask"].tolist() == [[1, 1, 1], [1, 1, 0]]
    assert batch["next_sentence_label"].tolist() == [1, 0]
    assert set(batch) == {"input_ids", "labels", "attention_mask", "next_sentence_label"}  # ready for a model


def test_bert_sampler_invariants_on_any_ids():
    """Property: for any ids, the count is round(candidates × p) (capped), specials stay, and a
    label is always the original id."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    info = masking_info(load("wordpiece-30k"))

    @settings(max_examples=60, deadline=None)
    @given(
        st.lists(st.integers(0, info.size - 1), min_size=1, max_size=300),
        st.floats(0.01, 1.0),
        st.one_of(st.none(), st.integers(1, 50)),
        st.booleans(),
        st.integers(0, 2**32 - 1),
    )
    def check(ids, p, cap, whole, seed):
        ids = np.array(ids)
        masked = mask_tokens(ids, info, np.random.default_rng(seed), p, cap, whole_word=whole)
        chosen = masked.labels != -100
        candidates = int((~info.special[ids]).sum())
        target = 0 if candidates == 0 else min(max(1, int(candidates * p + 0.5)), cap or candidates)
        assert chosen.sum() == target if not whole else chosen.sum() <= target
        assert (masked.labels[chosen] == ids[chosen]).all()
        assert (masked.input_ids[info.special[ids]] == ids[info.special[ids]]).all()
        assert not info.special[masked.input_ids[chosen & (masked.input_ids != info.mask_id)]].any()

    check()
