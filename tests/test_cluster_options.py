"""`--cluster`, `--cluster-timeout`, `--block-size`: parsed and checked before any work, and
without Dask installed a one-line note of what to install. No cluster is started here."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from toktools.cli import main
from toktools.cluster.settings import Cluster, as_cluster, parse_size
from toktools.errors import ToktoolsError


@pytest.mark.parametrize(
    "text, size",
    [
        ("64MB", 64_000_000),
        ("64MiB", 64 << 20),
        ("512KiB", 512 << 10),
        ("1.5GB", 1_500_000_000),
        ("4096", 4096),
        ("2 mb", 2_000_000),
    ],
)
def test_block_sizes_read_like_people_write_them(text: str, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "MB", "64XB", "-1MB", "0"])
def test_unreadable_block_sizes_are_refused(text: str) -> None:
    with pytest.raises(ToktoolsError):
        parse_size(text)


def test_the_python_api_takes_an_address_or_a_cluster_value() -> None:
    assert as_cluster(None) is None
    assert as_cluster("tcp://127.0.0.1:8786") == Cluster("tcp://127.0.0.1:8786")
    tuned = Cluster("local:2", timeout=5, block_bytes=1 << 20)
    assert as_cluster(tuned) is tuned
    with pytest.raises(ToktoolsError, match="cluster must be an address"):
        as_cluster(8786)  # type: ignore[arg-type]


def _count(tmp_path: Path, *options: str):
    corpus = tmp_path / "c.txt"
    corpus.write_text("hello world\n", encoding="utf-8")
    return CliRunner().invoke(
        main, ["count", str(corpus), "--model", "bytebpe", "-o", str(tmp_path / "c.counts"), *options]
    )


@pytest.mark.parametrize(
    "options, message",
    [
        (["--block-size", "1MB"], "--block-size only applies with --cluster"),
        (
            ["--cluster-timeout", "5", "--block-size", "1MB"],
            "--cluster-timeout and --block-size only apply with --cluster",
        ),
        (["--cluster", "local:2", "--workers", "2"], "--workers does not apply with --cluster"),
        (
            ["--cluster", "local:2", "--block-size", "lots"],
            "Invalid value for --block-size: cannot read the size 'lots'",
        ),
        (["--cluster", "local:2", "--cluster-timeout", "0"], "Invalid value for '--cluster-timeout'"),
    ],
)
def test_option_conflicts_are_usage_errors_before_any_work(tmp_path: Path, options: list[str], message: str) -> None:
    result = _count(tmp_path, *options)
    assert result.exit_code == 2
    assert message in result.output
    assert not (tmp_path / "c.counts").exists()


@pytest.mark.parametrize("command", [["count"], ["train", "bytebpe"], ["train", "wordpiece"]])
def test_without_dask_cluster_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: list[str]
) -> None:
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "distributed" else real_find_spec(name, *a)
    )
    corpus = tmp_path / "c.txt"
    corpus.write_text("hello world\n", encoding="utf-8")
    extra = (
        ["--model", "bytebpe", "-o", str(tmp_path / "c.counts")]
        if command == ["count"]
        else ["-o", str(tmp_path / "out")]
    )
    result = CliRunner().invoke(main, [*command, str(corpus), *extra, "--cluster", "local:2"])
    assert result.exit_code == 1
    assert result.output.splitlines() == ["toktools: error: --cluster needs Dask: pip install 'toktools[dask]'"]


def test_without_dask_the_python_api_says_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from toktools.training import pipeline as training

    if "distributed" in sys.modules:  # pragma: no cover - the parent pytest process never imports it
        pytest.skip("distributed is already imported in this process")
    monkeypatch.setitem(sys.modules, "distributed", None)  # `import distributed` now raises ImportError
    corpus = tmp_path / "c.txt"
    corpus.write_text("hello world\n", encoding="utf-8")
    with pytest.raises(ToktoolsError, match=r"^--cluster needs Dask: pip install 'toktools\[dask\]'$"):
        training.count_bytebpe_words([str(corpus)], cluster="local:2")


def test_train_refuses_cluster_where_nothing_is_counted(tmp_path: Path) -> None:
    counts = tmp_path / "c.counts"
    counts.write_text("", encoding="utf-8")
    result = CliRunner().invoke(
        main, ["train", "bytebpe", "--from-counts", str(counts), "-o", str(tmp_path / "out"), "--cluster", "local:2"]
    )
    assert result.exit_code == 2
    assert "--cluster counts corpus files for the reference backend" in result.output


@pytest.mark.parametrize(
    "options, message",
    [
        (["A", "B", "some text", "--cluster", "local:2"], "--cluster works on a corpus: give --corpus"),
        (["A", "--corpus", "c.txt", "--sample", "10", "--cluster", "local:2"], "--sample reads a few documents here"),
    ],
)
def test_compare_takes_cluster_for_the_whole_corpus_only(options: list[str], message: str) -> None:
    result = CliRunner().invoke(main, ["compare", *options])
    assert result.exit_code == 2
    assert message in result.output
