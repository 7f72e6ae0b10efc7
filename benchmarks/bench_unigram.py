"""Unigram, in one run: training time of toktools' reference trainer against ``tokenizers``'
UnigramTrainer and ``spm_train`` (``SentencePieceTrainer``, model_type=unigram, every core), then
encoding throughput of toktools against ``sentencepiece``'s batch ``encode`` (every thread) and
``tokenizers``' ``encode_batch``, on the same text. Needs ``sentencepiece`` (benchmarks only).

    python benchmarks/bench_unigram.py --corpus zh --train-mb 3 --vocab-size 30000 --encode-mb 1
    python benchmarks/bench_unigram.py --corpus en --train-mb 3 --vocab-size 30000 --encode-mb 1

``--corpus zh`` is the shared Chinese corpus (poetry, novels, wiki: an equal share of each);
``en`` is en_wiki; any other value is one file of the corpora directory. toktools trains with
its compiled steps when numba is installed (extra ``fast``), else in pure Python; ``--pure``
also times the pure-Python trainer (slow) and checks it gives the same vocabulary.

Encoders: "toktools spm" is the pure-Python ``sentencepiece`` reimplementation
(:mod:`toktools.sentencepiece_encode`) on the ``.model``; "toktools json" is toktools'
``Tokenizer`` on the ``tokenizer.json`` converted from it (as ``tokenizers`` runs it), one process.
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
    args = parser.parse_args()
    work = workdir()
    names = CORPUS_SETS.get(args.corpus, [args.corpus])
    sample = str(work / f"unigram-{args.corpus}-{args.train_mb}mb.txt")
    train_bytes = write_sample(names, args.train_mb, sample)
    held = str(work / f"unigram-{args.corpus}-{args.encode_mb}mb-encode.txt")
    encode_bytes = write_sample(names, args.encode_mb, held)
    vocab = args.vocab_size
    cores = os.cpu_count() or 1

    read_lines = f"lines = open({sample!r}, encoding='utf-8').read().splitlines()\n"
    ours_code = ("counts = collections.Counter(w for l in lines for w, _ in pre.pre_tokenize_str(l))\n"
                 f"m = UnigramTrainer({vocab}, unk_token='<unk>', special_tokens=['<unk>']).train(counts)\n"
                 "result = m.to_json()['vocab']")
    ours_setup = (read_lines + "import collections\nfrom tokenizers import pre_tokenizers\n"
                  "from toktools.unigram_trainer import UnigramTrainer, compiled_kernels\npre = pre_tokenizers.Metaspace()\n")
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
        "import json; result = json.loads(tok.to_str())['model']['vocab']")
    model_prefix = str(work / f"unigram-spm-{args.corpus}-{vocab}")
    spm = run_job(
        "import sentencepiece as spm",
        f"spm.SentencePieceTrainer.train(input={sample!r}, model_prefix={model_prefix!r}, vocab_size={vocab}, "
        f"model_type='unigram', character_coverage=0.9995, num_threads={cores}, minloglevel=2)")
    ours_set = {p for p, _ in ours["result"]}
    hf_set = {p for p, _ in hf["result"]}
    jaccard = len(ours_set & hf_set) / len(ours_set | hf_set)

    model = f"{model_prefix}.model"
    read_encode = f"lines = open({held!r}, encoding='utf-8').read().splitlines()\n"
    enc_spm = run_job("import sentencepiece as spm\n" + read_encode + f"sp = spm.SentencePieceProcessor(model_file={model!r})",
                      "result = sp.encode(lines, num_threads=-1)")
    json_setup = (f"import json\nfrom toktools.sentencepiece_json import load_sentencepiece\n"
                  f"document = json.dumps(load_sentencepiece({model!r}))\n")
    enc_hf = run_job(json_setup + "from tokenizers import Tokenizer\n" + read_encode + "tok = Tokenizer.from_str(document)",
                     "result = [e.ids for e in tok.encode_batch(lines)]")
    enc_json = run_job(json_setup + "from toktools.formats import from_tokenizer_json\n" + read_encode
                       + "tok = from_tokenizer_json(json.loads(document))",
                       "result = [e.ids for e in tok.encode_batch(lines, workers=1)]")
    enc_ours = run_job("from toktools.sentencepiece_encode import SentencePieceUnigram\n" + read_encode
                       + f"sp = SentencePieceUnigram.load({model!r})",
                       "result = [sp.encode(line) for line in lines]")

    trainer = "compiled (numba)" if compiled else "pure Python"
    print(f"Unigram on {args.corpus} ({', '.join(names)}), {os.cpu_count()} cores")
    print(f"train: {train_bytes / 1e6:.2f} MB, vocab {vocab}; toktools trainer: {trainer}")
    print(f"{'train':<26} {'seconds':>8} {'x tokenizers':>13}")
    rows = [("toktools", ours), ("toktools (pure Python)", pure), ("tokenizers", hf), ("spm_train", spm)]
    for name, job in rows:
        if job is not None:
            print(f"{name:<26} {job['seconds']:>8.2f} {job['seconds'] / hf['seconds']:>13.2f}")
    print(f"token-set Jaccard toktools/tokenizers: {jaccard:.4f}")
    if pure is not None:
        print(f"pure-Python vocabulary identical to the compiled one: {pure['result'] == ours['result']}")
    reference = enc_spm["result"]
    spm_rate = encode_bytes / 1e6 / enc_spm["seconds"]
    print(f"encode: {encode_bytes / 1e6:.2f} MB, {len(reference)} lines, with the spm_train model")
    print(f"{'encode':<26} {'MB/s':>8} {'x sentencepiece':>16} {'lines = spm':>12}")
    for name, job in (("toktools spm (pure Python)", enc_ours), ("toktools json (pure Python)", enc_json),
                      ("tokenizers encode_batch", enc_hf), ("sentencepiece encode", enc_spm)):
        rate = encode_bytes / 1e6 / job["seconds"]
        same = sum(a == b for a, b in zip(job["result"], reference))
        print(f"{name:<26} {rate:>8.3f} {rate / spm_rate:>16.4f} {same:>7}/{len(reference)}")
    print(json.dumps({"corpus": args.corpus, "train_mb": train_bytes / 1e6, "encode_mb": encode_bytes / 1e6,
                      "vocab_size": vocab, "trainer": trainer, "jaccard": jaccard,
                      "train_seconds": {name: job["seconds"] for name, job in rows if job is not None},
                      "encode_seconds": {"toktools_spm": enc_ours["seconds"], "toktools_json": enc_json["seconds"],
                                         "tokenizers": enc_hf["seconds"], "sentencepiece": enc_spm["seconds"]}}))


if __name__ == "__main__":
    main()
