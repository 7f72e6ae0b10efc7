"""Unigram, in one run: training time of toktools' reference trainer against ``tokenizers``'
UnigramTrainer and ``spm_train`` (``SentencePieceTrainer``, model_type=unigram, every core), then
encoding throughput of toktools against ``sentencepiece``'s batch ``encode`` (every thread) and
``tokenizers``' ``encode_batch``, on the same text. Needs ``sentencepiece`` (benchmarks only).

    python benchmarks/bench_unigram.py --corpus zh --train-mb 3 --vocab-size 30000 --encode-mb 1
    python benchmarks/bench_unigram.py --corpus en --train-mb 3 --vocab-size 30000 --encode-mb 1
    python benchmarks/bench_unigram.py --corpus zh --encode-only --encode-mb 10 --repeat 3

``--corpus zh`` is the shared Chinese corpus (poetry, novels, wiki: an equal share of each);
``en`` is en_wiki; any other value is one file of the corpora directory. toktools trains with
its compiled steps when numba is installed (extra ``fast``), else in pure Python; ``--pure``
also times the pure-Python trainer (slow) and checks it gives the same vocabulary.

``--encode-only`` skips the two trainers (``spm_train`` still makes the model).

Encoders, on the same lines (each in a fresh process; setup, not timed, builds the encoder and
encodes the first 100 lines once, so numba's start-up and the compiled piece trie are not in
the figure; ``--repeat N`` keeps the fastest of N runs):

* ``toktools reference, compiled`` / ``pure Python``: the reference engine of ``toktools encode``
  (ids-only path of :mod:`toktools.engines.ids_only_unigram`, one worker process per core) on the
  ``tokenizer.json`` converted from the model, with the numba Viterbi or with
  ``TOKTOOLS_PURE_PYTHON=1``;
* ``toktools auto``: the engine ``auto`` picks for that tokenizer when the input size is not
  known (named in the row);
* ``toktools spm``: the reimplementation of sentencepiece's own encode
  (:mod:`toktools.sentencepiece.encode`: float32 sums, longest-match normaliser), one process;
* ``tokenizers encode_batch`` and ``sentencepiece encode`` (``num_threads=-1``).

The reference/auto/tokenizers rows follow ``tokenizers``' rules, which part from sentencepiece's
on a few lines (``spec/unigram.md`` §6): the "= tokenizers" and "= sentencepiece" columns count
identical lines. A CPU-s/MB column adds the CPU time of threads and worker processes (less
disturbed than wall time on a shared machine). Last, ``toktools encode FILE --format megatron``
end to end (startup included) with ``--engine auto`` (under 8 MB it picks ``tokenizers``) and
``--engine tokenizers``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os

from _common import CORPORA, run_job, workdir

CORPUS_SETS = {"zh": ["zh_poetry.txt.gz", "zh_novels.txt", "zh_wiki_sample.txt"], "en": ["en_wiki.txt.gz"]}


def write_sample(names: list[str], megabytes: float, target: str) -> int:
    """Whole lines from the start of each file, an equal share of ``megabytes`` each; returns bytes."""
    share = megabytes * 1e6 / len(names)
    size = 0
    with open(target, "w", encoding="utf-8") as out:
        for name in names:
            path = CORPORA / name
            if not path.exists():
                raise SystemExit(f"corpus {path} not found (set TOKTOOLS_CORPORA)")
            opener = gzip.open if path.suffix == ".gz" else open
            taken = 0
            with opener(path, "rt", encoding="utf-8") as handle:
                for line in handle:
                    out.write(line)
                    taken += len(line.encode("utf-8"))
                    if taken >= share:
                        break
            size += taken
    return size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", default="zh", help="zh, en, or a file name in the corpora directory")
    parser.add_argument("--train-mb", type=float, default=3.0)
    parser.add_argument("--vocab-size", type=int, default=30000)
    parser.add_argument("--encode-mb", type=float, default=1.0)
    parser.add_argument("--pure", action="store_true", help="also time the pure-Python trainer")
    parser.add_argument("--repeat", type=int, default=1, help="encode rows: the fastest of this many runs")
    parser.add_argument(
        "--encode-only",
        action="store_true",
        help="skip the toktools and tokenizers trainers (spm_train still makes the model)",
    )
    args = parser.parse_args()
    work = workdir()
    names = CORPUS_SETS.get(args.corpus, [args.corpus])
    sample = str(work / f"unigram-{args.corpus}-{args.train_mb}mb.txt")
    train_bytes = write_sample(names, args.train_mb, sample)
    held = str(work / f"unigram-{args.corpus}-{args.encode_mb}mb-encode.txt")
    encode_bytes = write_sample(names, args.encode_mb, held)
    vocab = args.vocab_size
    cores = os.cpu_count() or 1

    if not args.encode_only:
        read_lines = f"lines = open({sample!r}, encoding='utf-8').read().splitlines()\n"
        ours_code = (
            "counts = collections.Counter(w for l in lines for w, _ in pre.pre_tokenize_str(l))\n"
            f"m = UnigramTrainer({vocab}, unk_token='<unk>', special_tokens=['<unk>']).train(counts)\n"
            "result = m.to_json()['vocab']"
        )
        ours_setup = (
            read_lines + "import collections\nfrom tokenizers import pre_tokenizers\n"
            "from toktools.models.unigram.trainer import UnigramTrainer, compiled_kernels\npre = pre_tokenizers.Metaspace()\n"
        )
        ours = run_job(ours_setup, ours_code + "\nresult = [result, compiled_kernels() is not None]")
        ours["result"], compiled = ours["result"]
        pure = None
        if args.pure:
            pure = run_job("import os\nos.environ['TOKTOOLS_PURE_PYTHON'] = '1'\n" + ours_setup, ours_code)
        hf = run_job(
            read_lines + "from tokenizers import Tokenizer, models, pre_tokenizers, trainers\n"
            "tok = Tokenizer(models.Unigram()); tok.pre_tokenizer = pre_tokenizers.Metaspace()",
            f"tok.train_from_iterator(lines, trainers.UnigramTrainer(vocab_size={vocab}, unk_token='<unk>', "
            "special_tokens=['<unk>'], show_progress=False))\n"
            "import json; result = json.loads(tok.to_str())['model']['vocab']",
        )
    model_prefix = str(work / f"unigram-spm-{args.corpus}-{vocab}")
    spm = run_job(
        "import sentencepiece as spm",
        f"spm.SentencePieceTrainer.train(input={sample!r}, model_prefix={model_prefix!r}, vocab_size={vocab}, "
        f"model_type='unigram', character_coverage=0.9995, num_threads={cores}, minloglevel=2)",
    )
    if not args.encode_only:
        ours_set = {p for p, _ in ours["result"]}
        hf_set = {p for p, _ in hf["result"]}
        rows = [("toktools", ours), ("toktools (pure Python)", pure), ("tokenizers", hf), ("spm_train", spm)]
        jaccard = len(ours_set & hf_set) / len(ours_set | hf_set)

    model = f"{model_prefix}.model"
    read_encode = f"lines = open({held!r}, encoding='utf-8').read().splitlines()\n"
    encoders = encode_rows(model, read_encode, cores, args.repeat)
    cli = {
        engine: min((end_to_end(model, held, engine, work) for _ in range(args.repeat)), key=lambda job: job["seconds"])
        for engine in ("auto", "tokenizers")
    }

    if not args.encode_only:
        trainer = "compiled (numba)" if compiled else "pure Python"
        print(f"Unigram on {args.corpus} ({', '.join(names)}), {os.cpu_count()} cores")
        print(f"train: {train_bytes / 1e6:.2f} MB, vocab {vocab}; toktools trainer: {trainer}")
        print(f"{'train':<26} {'seconds':>8} {'x tokenizers':>13}")
        for name, job in rows:
            if job is not None:
                print(f"{name:<26} {job['seconds']:>8.2f} {job['seconds'] / hf['seconds']:>13.2f}")
        print(f"token-set Jaccard toktools/tokenizers: {jaccard:.4f}")
        if pure is not None:
            print(f"pure-Python vocabulary identical to the compiled one: {pure['result'] == ours['result']}")
    print_encode(encoders, cli, encode_bytes, args.corpus, names, vocab, cores, args.repeat)
    summary = {
        "corpus": args.corpus,
        "encode_mb": encode_bytes / 1e6,
        "vocab_size": vocab,
        "encode_seconds": {name: job["seconds"] for name, job in encoders.items()},
        "encode_cpu_seconds": {name: job["cpu"] for name, job in encoders.items()},
        "cli_seconds": {engine: job["seconds"] for engine, job in cli.items()},
    }
    if not args.encode_only:
        summary.update(
            train_mb=train_bytes / 1e6,
            trainer=trainer,
            jaccard=jaccard,
            train_seconds={name: job["seconds"] for name, job in rows if job is not None},
        )
    print(json.dumps(summary))


PURE = "import os\nos.environ['TOKTOOLS_PURE_PYTHON'] = '1'\n"


CPU = (
    "import resource as _resource\n"
    "def _cpu():\n"
    "    return sum(u.ru_utime + u.ru_stime for u in (_resource.getrusage(_resource.RUSAGE_SELF),"
    " _resource.getrusage(_resource.RUSAGE_CHILDREN)))\n"
)


def best_of(repeat: int, setup: str, run: str) -> dict:
    """The fastest of ``repeat`` runs of a job (each in a fresh process): the machine is shared.
    Also the CPU seconds the run took, threads and reaped worker processes included (a figure
    the other jobs on a shared machine disturb less than the wall time)."""
    timed = f"_c0 = _cpu()\n{run}\nresult = [result, _cpu() - _c0]"
    jobs = [run_job(CPU + setup, timed) for _ in range(repeat)]
    best = min(jobs, key=lambda job: job["seconds"])
    best["result"], best["cpu"] = best["result"]
    return best


def encode_rows(model: str, read_encode: str, cores: int, repeat: int = 1) -> dict[str, dict]:
    """Every encoder on the same lines, each in a fresh process (ids kept to compare). Setup,
    not timed, builds the encoder and encodes the first 100 lines once (what a long run pays
    once: numba's start, the compiled piece trie, caches); the CLI rows pay everything."""
    warm = "\n_ = {}(lines[:100])\n"
    json_setup = (
        f"import json\nfrom toktools.sentencepiece.to_json import load_sentencepiece\n"
        f"document = json.dumps(load_sentencepiece({model!r}))\n" + read_encode
    )
    engine_setup = json_setup + "from toktools import engines\ndoc = json.loads(document)\n"
    spm_setup = "from toktools.sentencepiece.encode import SentencePieceUnigram\n" + read_encode
    rows = {
        "sentencepiece encode": best_of(
            repeat,
            "import sentencepiece as spm\n"
            + read_encode
            + f"sp = spm.SentencePieceProcessor(model_file={model!r})"
            + warm.format("sp.encode"),
            "result = sp.encode(lines, num_threads=-1)",
        ),
        "tokenizers encode_batch": best_of(
            repeat,
            json_setup
            + "from tokenizers import Tokenizer\ntok = Tokenizer.from_str(document)"
            + warm.format("tok.encode_batch"),
            "result = [e.ids for e in tok.encode_batch(lines, add_special_tokens=False)]",
        ),
        "toktools auto": best_of(
            repeat,
            engine_setup
            + f"engine = engines.make_engine('auto', doc, workers={cores})"
            + warm.format("engine.encode_batch"),
            "result = [engine.encode_batch(lines), engine.name]; engine.close()",
        ),
        "toktools reference, compiled": best_of(
            repeat,
            engine_setup
            + f"engine = engines.make_engine('reference', doc, workers={cores})"
            + warm.format("engine.encode_batch"),
            "result = engine.encode_batch(lines); engine.close()",
        ),
        "toktools reference, pure Python": best_of(
            repeat,
            PURE
            + engine_setup
            + f"engine = engines.make_engine('reference', doc, workers={cores})"
            + warm.format("engine.encode_batch"),
            "result = engine.encode_batch(lines); engine.close()",
        ),
        "toktools spm, compiled": best_of(
            repeat,
            spm_setup + f"sp = SentencePieceUnigram.load({model!r})" + warm.format("sp.encode_batch"),
            "result = sp.encode_batch(lines)",
        ),
        "toktools spm, pure Python": best_of(
            repeat,
            PURE + spm_setup + f"sp = SentencePieceUnigram.load({model!r})" + warm.format("sp.encode_batch"),
            "result = [sp.encode(line) for line in lines]",
        ),
    }
    rows["toktools auto"]["result"], rows["toktools auto"]["engine"] = rows["toktools auto"]["result"]
    return rows


def end_to_end(model: str, held: str, engine: str, work) -> dict:
    """``toktools encode -t MODEL FILE --format megatron`` as a user runs it (startup included)."""
    import subprocess
    import sys
    import time

    from _common import REPO

    (work / "unigram-cli").mkdir(exist_ok=True)  # not beside the .model: its directory is the tokenizer's
    prefix = str(work / "unigram-cli" / engine)
    start = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "toktools.cli",
            "encode",
            "-t",
            model,
            held,
            "--format",
            "megatron",
            "-o",
            prefix,
            "--engine",
            engine,
            "--force",
            "--json",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        sys.exit(f"toktools encode --engine {engine} failed:\n{done.stderr}")
    seconds = time.perf_counter() - start
    with open(prefix + ".bin", "rb") as handle:
        return {"seconds": seconds, "bin": handle.read(), "engine": json.loads(done.stdout)["engine"]}


def print_encode(
    rows: dict[str, dict],
    cli: dict[str, dict],
    encode_bytes: int,
    corpus: str,
    names: list[str],
    vocab: int,
    cores: int,
    repeat: int,
) -> None:
    spm_ids = rows["sentencepiece encode"]["result"]
    hf_ids = rows["tokenizers encode_batch"]["result"]
    spm_rate = encode_bytes / 1e6 / rows["sentencepiece encode"]["seconds"]
    print(
        f"encode: {corpus} ({', '.join(names)}), {encode_bytes / 1e6:.2f} MB, {len(spm_ids)} lines, "
        f"spm_train unigram model of {vocab} pieces, {cores} cores"
    )
    print(
        "toktools reference/auto/tokenizers run the tokenizer.json converted from the model (tokenizers' rules);"
        " toktools spm is the sentencepiece reimplementation (float32, longest match)."
    )
    print(f"Rows above the CLI ones: encoder built and first 100 lines encoded before timing; best of {repeat} run(s).")
    print(
        f"{'encoder':<34} {'MB/s':>7} {'x spm':>7} {'x tokenizers':>13} {'CPU-s/MB':>9} {'= sentencepiece':>16} {'= tokenizers':>13}"
    )
    hf_rate = encode_bytes / 1e6 / rows["tokenizers encode_batch"]["seconds"]
    for name, job in rows.items():
        rate = encode_bytes / 1e6 / job["seconds"]
        label = f"{name} ({job['engine']})" if "engine" in job else name
        same_spm = sum(a == b for a, b in zip(job["result"], spm_ids))
        same_hf = sum(a == b for a, b in zip(job["result"], hf_ids))
        cpu = job["cpu"] / (encode_bytes / 1e6)
        print(
            f"{label:<34} {rate:>7.2f} {rate / spm_rate:>7.3f} {rate / hf_rate:>13.3f} {cpu:>9.3f} {same_spm:>10}/{len(spm_ids)}"
            f" {same_hf:>7}/{len(hf_ids)}"
        )
    same = cli["auto"]["bin"] == cli["tokenizers"]["bin"]
    for engine, job in cli.items():
        rate = encode_bytes / 1e6 / job["seconds"]
        label = f"CLI megatron, {engine} ({job['engine']})"
        print(
            f"{label:<34} {rate:>7.2f} {rate / spm_rate:>7.3f} {rate / hf_rate:>13.3f}"
            f" {'':>9}   (end to end, startup included; .bin identical across engines: {same})"
        )


if __name__ == "__main__":
    main()
