"""Corpus encoding speed and memory: ``toktools.encode_corpus`` (what ``toktools encode --format
megatron --shard-tokens N`` runs) end to end, file → shards, per engine, against the raw batch
calls of the libraries: tiktoken ``encode_ordinary_batch`` (all threads) and ``tokenizers``
``encode_batch`` (all threads), on the same lines held in memory.

    PYTHONPATH=. python benchmarks/bench_encode.py                  # 5 MB and 40 MB, all engines
    PYTHONPATH=. python benchmarks/bench_encode.py --sizes 5 --engines auto,reference
    PYTHONPATH=. python benchmarks/bench_encode.py --long-line 200  # one 200 MB line: peak RSS

Each measurement runs in a fresh process (peak RSS is that process's and its workers').
Warm or cold start-up: the first encode job of a tokenizer writes its start-up cache entry
(:mod:`toktools.corpus.prepared_tokenizer`: the parsed shape, the exactness analysis and tiktoken's ranks,
in the user cache), which every later job reads; the figures are then warm. ``--cold`` deletes
those entries before every encode job (untimed), so each one parses and analyses the tokenizer
(the exactness verdicts of ``analyse``, kept since earlier versions, stay). In both modes
the compiled BPE merge's machine code (:mod:`toktools.runtime.machine_code`, ``native-code/`` in the
user cache) stays: the first run on a machine compiles it with numba (~1.5 s more, once).
Targets (issue 12): auto ≥ 0.9× the fastest exact library's raw batch; reference ≥ 1.0×
``tokenizers`` ``encode_batch``. Issue 23 (gigatoken): the cost of each extra MB end to end ≤ 1/5
of raw tiktoken's; a 40 MB run ≥ 2× raw tiktoken including start-up; at 100 MB, end to end ≥ half
raw gigatoken. ``x tt raw`` is each run's speed over raw tiktoken's; ``--breakdown`` adds where the
time of one ``auto`` run goes (cProfile, own time by part). The machine is shared and noisy: quote
ratios with sizes.
"""

from __future__ import annotations

import argparse
import gzip
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import CORPORA, SHARED, workdir  # noqa: E402

_RUNNER = r"""
import json, resource, sys, time
job = json.loads(sys.argv[1])
namespace = {}
exec(job["setup"], namespace)
def cpu():
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime
start, cpu_start = time.perf_counter(), cpu()
exec(job["run"], namespace)
seconds, cpu_seconds = time.perf_counter() - start, cpu() - cpu_start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss + resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(json.dumps({"seconds": seconds, "cpu": cpu_seconds, "peak_mib": peak / 1024, "result": namespace.get("result")}))
"""


def job_environment() -> dict:
    """The jobs' environment: compiled bytecode is read from (and written to) a cache of the
    benchmark's own, as an installed toktools has its ``.pyc`` files beside it; with
    ``PYTHONDONTWRITEBYTECODE`` (set in some shells) every timed run would otherwise compile
    toktools' modules from source, a cost the libraries it is compared with never pay."""
    import os

    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(workdir() / "pycache")
    return env


def compile_toktools() -> None:
    import subprocess

    package = Path(__file__).resolve().parent.parent / "toktools"
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(package)], env=job_environment(), check=True)


REPEAT = 1


def best_job(setup: str, run: str) -> dict:
    """:func:`run_job` ``--repeat`` times: the least wall and CPU seconds, the largest peak
    (a shared machine only ever makes a run slower, never faster)."""
    jobs = [run_job(setup, run) for _ in range(REPEAT)]
    return {
        "seconds": min(j["seconds"] for j in jobs),
        "cpu": min(j["cpu"] for j in jobs),
        "peak_mib": max(j["peak_mib"] for j in jobs),
        "result": jobs[0]["result"],
    }


def run_job(setup: str, run: str) -> dict:
    """Time ``run`` after ``setup`` in a fresh interpreter: wall seconds, CPU seconds (all
    threads and worker processes: a fairer yardstick than wall time on a loaded machine), peak RSS.
    The timed part of an encode job is everything from ``import toktools`` to the files on disk."""
    import json
    import subprocess

    completed = subprocess.run(
        [sys.executable, "-c", _RUNNER, json.dumps({"setup": setup, "run": run})],
        capture_output=True,
        text=True,
        env=job_environment(),
    )
    if completed.returncode != 0:
        sys.exit(f"benchmark job failed:\n{completed.stderr}")
    return json.loads(completed.stdout.strip().splitlines()[-1])


TOKENIZERS = {
    "gpt2": str(SHARED / "vocabs-ref" / "gpt2"),
    "bytebpe-50k": "bytebpe-50k",
    "bert-base-uncased": str(SHARED / "vocabs-ref" / "bert-base-uncased"),
    "wordpiece-30k": "wordpiece-30k",
}
SOURCES = {"en": ["en_wiki.txt.gz"], "zh": ["zh_novels.txt", "zh_wiki_sample.txt", "zh_poetry.txt.gz"]}


def sample_file(lang: str, megabytes: int, directory: Path) -> Path:
    """The first ``megabytes`` of the language's corpora (whole lines), as one plain file."""
    target = directory / f"encode-{lang}-{megabytes}mb.txt"
    if target.exists():
        return target
    limit = megabytes * 1_000_000
    size = 0
    with open(target, "w", encoding="utf-8", newline="\n") as out:
        while size < limit:  # repeat the sources if they are shorter than asked
            before = size
            for name in SOURCES[lang]:
                path = CORPORA / name
                opener = gzip.open if path.suffix == ".gz" else open
                with opener(path, "rt", encoding="utf-8", newline="") as handle:
                    for line in handle:
                        if size >= limit:
                            break
                        if line.strip():
                            out.write(line if line.endswith("\n") else line + "\n")
                            size += len(line.encode("utf-8"))
            if size == before:
                break
    return target


def long_line_file(megabytes: int, directory: Path) -> Path:
    target = directory / f"encode-long-{megabytes}mb.txt"
    if not target.exists():
        text = gzip.open(CORPORA / "en_wiki.txt.gz", "rt", encoding="utf-8").read(4_000_000).replace("\n", " ")
        with open(target, "w", encoding="utf-8") as out:
            written = 0
            while written < megabytes * 1_000_000:
                out.write(text)
                written += len(text.encode("utf-8"))
            out.write("\n")
    return target


SETUP_LINES = """
import json
from toktools.formats import load
from toktools.engines.analysis import analyse
from toktools.engines.base import corpus_document
tok = load({tokenizer!r})
doc = corpus_document(tok.to_tokenizer_json())
lines = [l for l in open({path!r}, encoding='utf-8').read().split('\\n') if l]
"""

RAW_TOKENIZERS = "import tokenizers; t = tokenizers.Tokenizer.from_str(json.dumps(doc))"
RUN_RAW_TOKENIZERS = "out = t.encode_batch(lines, add_special_tokens=False); result = sum(len(e.ids) for e in out)"
RAW_TIKTOKEN = """import tiktoken
a = analyse(doc)
enc = tiktoken.Encoding('x', pat_str=a.plan.pattern, mergeable_ranks=a.plan.mergeable_ranks, special_tokens=a.plan.special_tokens)"""
RUN_RAW_TIKTOKEN = (
    "import os; out = enc.encode_ordinary_batch(lines, num_threads=os.cpu_count()); result = sum(map(len, out))"
)
RAW_GIGATOKEN = "import gigatoken; g = gigatoken.Tokenizer.from_json(json.dumps(doc)); g.encode_batch(['warm up'])"
RUN_RAW_GIGATOKEN = "out = g.encode_batch(lines); result = len(out.layout.content)"
#: where one run's time goes: cProfile's own time, summed by part
RUN_BREAKDOWN = """
import cProfile, pstats, shutil, tempfile, time
out = tempfile.mkdtemp(prefix='bench-encode-')
started = time.perf_counter()
profile = cProfile.Profile()
profile.enable()
from toktools.corpus.encode import encode_corpus
r = encode_corpus([{path!r}], {tokenizer!r}, out + '/shard', format='megatron', engine='auto', shard_tokens=2_000_000,
                  append_eos=False)
profile.disable()
wall = time.perf_counter() - started
shutil.rmtree(out)
parts = {{'waiting on the engine thread (gigatoken encodes there)': ('acquire',),
          'engine encode in this thread': ('encode_batch', 'encode_to_tiktoken_buffer', 'encode_ordinary'),
          'tokenizer load (engine build)': ('load_hf_json', 'from_json', 'Encoding', 'marshal'),
          'UTF-8 check and line bounds': ('decode', 'flatnonzero', '_line_bounds', 'isascii', 'non_ascii',
                                          'count_nonzero', 'is_utf8'),
          'routing check': ('_routed', 'search', 'block_needs_routing'),
          'write (ids, index, sha256, fsync)': ('write', 'tobytes', 'uint32_to_dtype', '_write_megatron_index', 'fsync', 'update', 'astype',
                                                '_write_megatron_arrays', 'flush_and_hash', 'cumsum'),
          'read input': ("method 'read' of",)}}
totals = dict.fromkeys(parts, 0.0)
stats = pstats.Stats(profile).stats
for (file, line, name), (cc, nc, tottime, cumtime, callers) in stats.items():
    name = f"{{file}}:{{name}}"
    for part, names in parts.items():
        if any(n in name for n in names):
            totals[part] += tottime
            break
totals['other (imports, Python)'] = sum(v[2] for v in stats.values()) - sum(totals.values())
result = [wall, r.engine, totals]
"""
#: --cold: the setup of every encode job removes the start-up cache entries (same place as
#: toktools.io.user_cache.cache_root, found without importing toktools, whose import is timed)
COLD_SETUP = """
import os, shutil
from pathlib import Path
root = os.environ.get('TOKTOOLS_CACHE_DIR')
if root != '':
    root = Path(root) if root else Path(os.environ.get('XDG_CACHE_HOME') or Path.home() / '.cache') / 'toktools'
    for entry in root.glob('corpus-tokenizer'):
        shutil.rmtree(entry, ignore_errors=True)
"""
RUN_ENCODE = """
import shutil, tempfile
from toktools.corpus.encode import encode_corpus
out = tempfile.mkdtemp(prefix='bench-encode-')
r = encode_corpus([{path!r}], {tokenizer!r}, out + '/shard', format='megatron', engine={engine!r}, shard_tokens=2_000_000,
                  append_eos=False)
shutil.rmtree(out)
result = [r.tokens, r.engine]
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10,40,100", help="input sizes in MB (comma-separated)")
    parser.add_argument("--engines", default="auto,gigatoken,tokenizers,tiktoken,reference")
    parser.add_argument("--tokenizers", default=",".join(TOKENIZERS))
    parser.add_argument("--langs", default="en,zh")
    parser.add_argument("--reference-max-mb", type=int, default=5, help="above this size, run only the auto engine")
    parser.add_argument("--long-line", type=int, default=0, help="also encode one line of this many MB (peak RSS)")
    parser.add_argument("--cold", action="store_true", help="no start-up cache entry for any encode job (see above)")
    parser.add_argument("--raw", default="gigatoken", help="also time these libraries raw (gigatoken, or none)")
    parser.add_argument("--hf-max-mb", type=int, default=40, help="above this size, skip raw tokenizers (slow)")
    parser.add_argument("--breakdown", action="store_true", help="where one auto run's time goes (cProfile)")
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="run every timed job N times and keep the fastest "
        "(for the library calls and toktools alike): steadier on a shared machine",
    )
    args = parser.parse_args()
    global REPEAT
    REPEAT = max(1, args.repeat)
    directory = workdir()
    compile_toktools()
    wanted = args.engines.split(",")
    print(
        f"start-up: {'cold (no start-up cache entry)' if args.cold else 'warm (the first encode job writes the start-up cache)'}"
    )
    print(
        "MB/s = wall-clock throughput; 'x best raw' = toktools end to end / the fastest exact library's raw batch call;"
    )
    print("'cpu x' = the same ratio in CPU seconds (all threads and worker processes), steadier on a shared machine.")
    print(
        f"{'tokenizer':<20}{'in':>8} {'raw tiktoken':>13}{'raw HF':>8} | {'engine':<17}{'MB/s':>7}{'x best raw':>11}"
        f"{'x HF raw':>9}{'cpu x best':>11}{'cpu x HF':>9}{'peak MiB':>9}{'x tt raw':>9}{'x gt raw':>9}"
        f"{'cpu x gt':>9}"
    )
    for lang in args.langs.split(","):
        for megabytes in map(int, args.sizes.split(",")):
            path = str(sample_file(lang, megabytes, directory))
            size = Path(path).stat().st_size / 1e6
            for name in args.tokenizers.split(","):
                tokenizer = TOKENIZERS[name]
                setup = SETUP_LINES.format(tokenizer=tokenizer, path=path)
                tt_speed = gt_speed = None
                probe = run_job(setup, "a = analyse(doc); result = a.tiktoken_reason")
                if probe["result"] is None:
                    tt = best_job(setup + RAW_TIKTOKEN, RUN_RAW_TIKTOKEN)
                    tt_speed = size / tt["seconds"]
                if megabytes <= args.hf_max_mb or tt_speed is None:
                    hf = best_job(setup + RAW_TOKENIZERS, RUN_RAW_TOKENIZERS)
                    if tt_speed is not None:
                        assert tt["result"] == hf["result"], "tiktoken and tokenizers disagree on the token count"
                else:  # raw tokenizers is slow at this size: its token count is tiktoken's (exact)
                    hf = {**tt, "seconds": float("nan"), "cpu": float("nan")}
                hf_speed = size / hf["seconds"]
                if "gigatoken" in args.raw:
                    try:
                        gt = best_job(setup + RAW_GIGATOKEN, RUN_RAW_GIGATOKEN)
                        gt_speed = size / gt["seconds"]
                        print(
                            f"{name} {lang} {size:.1f}MB: raw gigatoken {gt_speed:.1f} MB/s "
                            f"({gt_speed / tt_speed if tt_speed else float('nan'):.1f}x raw tiktoken)",
                            flush=True,
                        )
                    except SystemExit:
                        pass
                best = max(x for x in (hf_speed, tt_speed or 0) if x == x)
                best_cpu = min(x for x in (hf["cpu"], tt["cpu"] if tt_speed else hf["cpu"]) if x == x)
                label = f"{name} {lang}"
                for engine in wanted:
                    if engine == "tiktoken" and tt_speed is None:
                        continue
                    if (
                        engine in ("reference", "tiktoken", "tokenizers")
                        and megabytes > args.reference_max_mb
                        and engine != "auto"
                    ):
                        continue
                    if engine == "gigatoken" and gt_speed is None:
                        continue
                    job = best_job(
                        COLD_SETUP if args.cold else "",
                        RUN_ENCODE.format(path=path, tokenizer=tokenizer, engine=engine),
                    )
                    tokens, used = job["result"]
                    assert tokens == hf["result"], f"{engine}: {tokens} tokens, tokenizers {hf['result']}"
                    speed = size / job["seconds"]
                    tt_text = f"{tt_speed:.1f}" if tt_speed else "—"
                    shown = f"{engine}" + (f"→{used}" if engine == "auto" else "")
                    versus_tt = f"{speed / tt_speed:>8.2f}x" if tt_speed else f"{'—':>9}"
                    versus_gt = f"{speed / gt_speed:>8.2f}x" if gt_speed else f"{'—':>9}"
                    # raw gigatoken's CPU seconds over this run's (steadier than wall on a loaded machine)
                    versus_gt_cpu = f"{gt['cpu'] / job['cpu']:>8.2f}x" if gt_speed else f"{'—':>9}"
                    print(
                        f"{label:<20}{size:>6.1f}MB {tt_text:>13}{hf_speed:>8.1f} | {shown:<17}{speed:>7.1f}"
                        f"{speed / best:>10.2f}x{speed / hf_speed:>8.2f}x{best_cpu / job['cpu']:>10.2f}x"
                        f"{hf['cpu'] / job['cpu']:>8.2f}x"
                        f"{job['peak_mib']:>9.0f}{versus_tt}{versus_gt}{versus_gt_cpu}",
                        flush=True,
                    )
                if args.breakdown:
                    job = run_job("", RUN_BREAKDOWN.format(path=path, tokenizer=tokenizer))
                    wall, used, totals = job["result"]
                    shares = ", ".join(f"{part} {seconds:.2f}s" for part, seconds in totals.items())
                    print(
                        f"  breakdown, {label} {size:.0f} MB, auto→{used}, {wall:.2f}s under cProfile: {shares}",
                        flush=True,
                    )
    if args.long_line:
        path = str(long_line_file(args.long_line, directory))
        size = Path(path).stat().st_size / 1e6
        for engine in ("auto", "tokenizers"):
            job = run_job("", RUN_ENCODE.format(path=path, tokenizer="bytebpe-50k", engine=engine))
            print(
                f"one {size:.0f} MB line, bytebpe-50k, {engine}→{job['result'][1]}: {size / job['seconds']:.1f} MB/s, "
                f"{job['result'][0]:,} tokens, peak {job['peak_mib']:.0f} MiB",
                flush=True,
            )


if __name__ == "__main__":
    main()
