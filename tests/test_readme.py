"""The README's quick start runs as written: its main-job command works on this checkout
(the install step is already done when the tests run), and .ci/run runs the same commands."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def quickstart_commands() -> list[str]:
    section = (ROOT / "README.md").read_text(encoding="utf-8").split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.+?)\n```", section, flags=re.S)


def test_ci_runs_exactly_the_readme_commands() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    for command in quickstart_commands():
        assert command in ci


def test_the_main_job_runs_as_written() -> None:
    main_job = quickstart_commands()[0]
    assert main_job.startswith("pip install -e . && ")
    command = main_job.split(" && ", 1)[1]
    args = shlex.split(command)
    assert args[0] == "toktools"
    completed = subprocess.run(
        [sys.executable, "-m", "toktools.cli", *args[1:]],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"NO_COLOR": "1", "PATH": "/usr/bin:/bin"},
    )
    assert completed.returncode == 0, completed.stderr
    assert "wordpiece-30k" in completed.stdout and "bytebpe-50k" in completed.stdout
    assert "tokens" in completed.stdout  # the metrics table
