"""Unigram: training time of toktools' reference trainer against ``tokenizers``' UnigramTrainer
and ``spm_train``, then encoding throughput of toktools' pure-Python sentencepiece encoder and of
``tokenizers`` (the converted tokenizer.json) against ``sentencepiece``'s batch ``encode`` (all
threads), on the same text, in one run. Needs ``sentencepiece`` (benchmarks only).

    python benchmarks/bench_unigram.py [--corpus zh_novels.txt] [--train-mb 1] [--vocab-size 8000] [--encode-mb 2]
"""
from __future__ import annotations

import argparse
import json

from _common import corpus_files, run_job, workdir


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", default="zh_novels.txt")
    parser.add_argument("--train-mb", type=float, default=1.0)
    parser.add_argument("--vocab-size", type=int, default=8000)
    parser.add_argument("--encode-mb", type=float, default=2.0)
    args = parser.parse_args()
    work = workdir()
    (path,) = corpus_files([args.corpus], work)
    sample = work / f"unigram-train-{args.train_mb}mb.txt"
    with open(path, encoding="utf-8") as src:
        sample.write_text(src.read(int(args.train_mb * 1e6)), encoding="utf-8")
    read_lines = f"lines = open({str(sample)!r}, encoding='utf-8').read().splitlines()\n"
    vocab = args.vocab_size
    ours = run_job(
        read_lines + "import collections\nfrom tokenizers import pre_tokenizers\n"
        "from toktools.unigram_trainer import UnigramTrainer\npre = pre_tokenizers.Metaspace()",
        "counts = collections.Counter(w for l in lines for w, _ in pre.pre_tokenize_str(l))\n"
        f"m = UnigramTrainer({vocab}, unk_token='<unk>', special_tokens=['<unk>']).train(counts)\n"
        "result = [p for p, _ in m.vocab]")
    hf = run_job(
        read_lines + "from tokenizers import Tokenizer, models, pre_tokenizers, trainers\n"
        "tok = Tokenizer(models.Unigram()); tok.pre_tokenizer = pre_tokenizers.Metaspace()",
        f"tok.train_from_iterator(lines, trainers.UnigramTrainer(vocab_size={vocab}, unk_token='<unk>', "
        "special_tokens=['<unk>'], show_progress=False))\n"
        "import json; result = [p for p, _ in json.loads(tok.to_str())['model']['vocab']]")
    model_prefix = work / f"unigram-spm-{vocab}"
    spm = run_job(
        "import sentencepiece as spm",
        f"spm.SentencePieceTrainer.train(input={str(sample)!r}, model_prefix={str(model_prefix)!r}, "
        f"vocab_size={vocab}, model_type='unigram', character_coverage=0.9995, minloglevel=2)")
    jaccard = len(set(ours["result"]) & set(hf["result"])) / len(set(ours["result"]) | set(hf["result"]))

    model = f"{model_prefix}.model"
    read_encode = (f"lines = []; size = 0\n"
                   f"for line in open({path!r}, encoding='utf-8'):\n"
                   f"    lines.append(line.rstrip('\\n')); size += len(line.encode('utf-8'))\n"
                   f"    if size > {args.encode_mb} * 1e6: break\n")
    enc_spm = run_job("import sentencepiece as spm\n" + read_encode + f"sp = spm.SentencePieceProcessor(model_file={model!r})",
                      "ids = sp.encode(lines, num_threads=-1); result = [size, sum(map(len, ids))]")
    enc_hf = run_job("import json\nfrom tokenizers import Tokenizer\nfrom toktools.sentencepiece_json import load_sentencepiece\n"
                     + read_encode + f"tok = Tokenizer.from_str(json.dumps(load_sentencepiece({model!r})))",
                     "ids = [e.ids for e in tok.encode_batch(lines)]; result = [size, sum(map(len, ids))]")
    enc_ours = run_job("from toktools.sentencepiece_encode import SentencePieceUnigram\n" + read_encode
                       + f"sp = SentencePieceUnigram.load({model!r})",
                       "ids = [sp.encode(line) for line in lines]; result = [size, sum(map(len, ids))]")

    print(f"Unigram on {args.corpus}: train {args.train_mb} MB, vocab {vocab}; encode {args.encode_mb} MB")
    print(f"{'train':<22} {'seconds':>8} {'x tokenizers':>13}")
    for name, job in (("toktools (reference)", ours), ("tokenizers", hf), ("spm_train", spm)):
        print(f"{name:<22} {job['seconds']:>8.2f} {job['seconds'] / hf['seconds']:>13.2f}")
    print(f"token-set Jaccard toktools/tokenizers: {jaccard:.4f}")
    print(f"{'encode':<22} {'MB/s':>8} {'x sentencepiece':>16} {'tokens':>10}")
    for name, job in (("toktools (pure Python)", enc_ours), ("tokenizers", enc_hf), ("sentencepiece", enc_spm)):
        mbs = job["result"][0] / 1e6 / job["seconds"]
        ref = enc_spm["result"][0] / 1e6 / enc_spm["seconds"]
        print(f"{name:<22} {mbs:>8.2f} {mbs / ref:>16.3f} {job['result'][1]:>10}")
    print(json.dumps({"train_seconds": {"toktools": ours["seconds"], "tokenizers": hf["seconds"], "spm": spm["seconds"]},
                      "jaccard": jaccard}))


if __name__ == "__main__":
    main()
