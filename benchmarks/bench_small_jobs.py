"""Issue 24's table in one run: the jobs where people first meet toktools, as ratios to
``tokenizers`` measured side by side (A B A B, each run in a fresh process: cold caches on both
sides, as on a user's first call; only the job itself is timed).

    python benchmarks/bench_small_jobs.py [--rows encode,inspect,train] [--repeat 3] [--train-mb 5]

Rows:
* ``encode_batch`` of held-out English + Chinese lines (full encodings, default workers on both
  sides), byte-level BPE (``bytebpe-50k``, GPT-2) and WordPiece (``wordpiece-30k``): speed
  ratio toktools / tokenizers (target ≥ 1.0).
* ``inspect`` (``vocab_stats``) of a 30K sentencepiece ``.model`` (trained here by sentencepiece,
  with 20 control pieces), as BPE and as Unigram: seconds (target ≤ 2 s).
* training on the first ``--train-mb`` MB: byte-level BPE 50K English and Chinese, WordPiece 30K
  English: time ratio toktools / tokenizers (target ≤ 0.8), and whether the files are identical.

The machine may be loaded: quote the median of the pair ratios, with the spread.
"""

from __future__ import annotations

import argparse
import filecmp
import statistics
import sys

from _common import CORPORA, REPO, SHARED, run_job, workdir

sys.path.insert(0, str(REPO))

_READ_HELD_OUT = """
import gzip
def _lines(name, skip, size):
    path = {corpora!r} + '/' + name
    opener = gzip.open if name.endswith('.gz') else open
    out, total = [], 0
    with opener(path, 'rt', encoding='utf-8') as handle:
        for number, line in enumerate(handle):
            if number < skip or not line.strip():
                continue
            out.append(line.rstrip('\\n')); total += len(line.encode('utf-8'))
            if total > size: break
    return out
lines = _lines('en_wiki.txt.gz', 100_000, {mb} * 0.6e6) + _lines('zh_wiki_sample.txt', 2_000, {mb} * 0.4e6)
"""


def _pairs(setup_a: str, setup_b: str, run_a: str, run_b: str, repeat: int) -> tuple[list[float], list[float]]:
    a_times, b_times = [], []
    for _ in range(repeat):
        a_times.append(run_job(setup_a, run_a)["seconds"])
        b_times.append(run_job(setup_b, run_b)["seconds"])
    return a_times, b_times


def _ratio_line(label: str, a: list[float], b: list[float], speed: bool) -> str:
    ratios = [(y / x if speed else x / y) for x, y in zip(a, b)]
    what = "speed" if speed else "time"
    return (
        f"{label:<44} toktools {statistics.median(a):6.2f}s  tokenizers {statistics.median(b):6.2f}s  "
        f"{what} ratio {statistics.median(ratios):.2f}× (runs {min(ratios):.2f}–{max(ratios):.2f})"
    )


def encode_rows(repeat: int, mb: float) -> None:
    read = _READ_HELD_OUT.format(corpora=str(CORPORA), mb=mb)
    for name in ("bytebpe-50k", "gpt2", "wordpiece-30k"):
        where = f"toktools.io.shipped.shipped_path({name!r}) or {str(SHARED / 'vocabs-ref' / name)!r}"
        ours = read + f"import json, toktools, toktools.io.shipped\ntok = toktools.load({where})\n"
        ours += "tok.no_truncation(); tok.no_padding()\n"
        theirs = ours + "import tokenizers\ntok = tokenizers.Tokenizer.from_str(json.dumps(tok.to_tokenizer_json()))\n"
        run = "out = tok.encode_batch(lines); result = sum(len(e.ids) + len(e.offsets) for e in out)"
        a, b = _pairs(ours, theirs, run, run, repeat)
        print(_ratio_line(f"encode_batch {name}, {mb} MB held-out en+zh", a, b, speed=True), flush=True)


def inspect_rows(repeat: int) -> None:
    work = workdir()
    model = work / "spm30k.model"
    if not model.exists():
        import sentencepiece as spm

        spm.SentencePieceTrainer.train(
            input=str(CORPORA / "mixed_sample.txt"),
            model_prefix=str(work / "spm30k"),
            vocab_size=30000,
            model_type="bpe",
            byte_fallback=True,
            control_symbols=[f"<extra_id_{i}>" for i in range(20)],
            num_threads=1,
            minloglevel=2,
        )
        from toktools.sentencepiece.model_file import UNIGRAM, read_model, write_model

        proto = read_model(model)
        proto.trainer_spec.set("model_type", UNIGRAM)
        write_model(proto, work / "spm30k-unigram.model")
    for path in (model, work / "spm30k-unigram.model"):
        setup = "from toktools.formats import load\nfrom toktools.analysis.vocabulary import vocab_stats\n"
        times = [run_job(setup, f"vocab_stats(load({str(path)!r}))")["seconds"] for _ in range(repeat)]
        print(f"{'inspect (load + vocab_stats) ' + path.name:<44} {statistics.median(times):6.2f}s  (target ≤ 2 s)")


def _prefix(source: str, mb: float, target) -> str:
    import gzip

    if not target.exists():
        opener = gzip.open if source.endswith(".gz") else open
        with opener(CORPORA / source, "rt", encoding="utf-8") as src, open(target, "w", encoding="utf-8") as dst:
            size = 0
            for line in src:
                dst.write(line)
                size += len(line.encode("utf-8"))
                if size > mb * 1e6:
                    break
    return str(target)


def train_rows(repeat: int, mb: float) -> None:
    work = workdir()
    english = _prefix("en_wiki.txt.gz", mb, work / f"en-{mb}mb.txt")
    chinese = _prefix("zh_novels.txt", mb / 2, work / f"zh-{mb / 2}mb.txt")
    jobs = [
        ("byte-level BPE 50K", english, "bytebpe", 50000),
        ("byte-level BPE 50K", chinese, "bytebpe", 50000),
        ("WordPiece 30K", english, "wordpiece", 30000),
    ]
    for label, path, kind, size in jobs:
        ours_dir, theirs_dir = work / f"{kind}-{size}-ours", work / f"{kind}-{size}-theirs"
        if kind == "bytebpe":
            run_a = f"toktools.train_bytebpe([{path!r}], {size}).save({str(ours_dir)!r})"
            run_b = f"fast.save_bytebpe(fast.train_bytebpe([{path!r}], {size}), {str(theirs_dir)!r})"
            files = ("vocab.json", "merges.txt")
        else:
            run_a = f"toktools.train_wordpiece([{path!r}], {size}).save({str(ours_dir)!r})"
            run_b = (
                f"tok = fast.train_wordpiece([{path!r}], {size}); d = pathlib.Path({str(theirs_dir)!r}); "
                "d.mkdir(exist_ok=True); (d / 'vocab.txt').write_text(fast.wordpiece_vocab_txt(tok), encoding='utf-8')"
            )
            files = ("vocab.txt",)
        a, b = _pairs("import toktools", "from toktools import fast; import pathlib", run_a, run_b, repeat)
        same = all(filecmp.cmp(ours_dir / f, theirs_dir / f, shallow=False) for f in files)
        name = f"train {label}, {path.rsplit('/', 1)[-1]}"
        print(_ratio_line(name, a, b, speed=False) + f"  identical files: {same}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", default="encode,inspect,train")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--encode-mb", type=float, default=1.0)
    parser.add_argument("--train-mb", type=float, default=5.0)
    args = parser.parse_args()
    rows = args.rows.split(",")
    if "encode" in rows:
        encode_rows(args.repeat, args.encode_mb)
    if "inspect" in rows:
        inspect_rows(args.repeat)
    if "train" in rows:
        train_rows(args.repeat, args.train_mb)


if __name__ == "__main__":
    main()
