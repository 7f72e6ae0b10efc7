"""A non-editable install stands on its own: the wheel carries the shipped vocabularies as package
data, and in a fresh environment the README's main job runs from any directory.

The wheel is built from a copy of the project (so no ``build/`` or ``*.egg-info`` lands in the
checkout) with this environment's setuptools, and installed with ``--no-deps`` into a fresh venv
that sees this environment's ``tokenizers``, ``click``, ``rich`` and ``regex`` through a ``.pth``
file (``--system-site-packages`` would miss them when this environment is itself a venv): nothing
is downloaded. About 10 s; ``-m 'not wheel'`` deselects it.
"""

from __future__ import annotations

import importlib.util
import os
import shlex
import shutil
import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path

import pytest
from test_readme import quickstart_commands

pytestmark = pytest.mark.wheel

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ("pyproject.toml", "README.md", "toktools", "vocabs")


def clean_env() -> dict[str, str]:
    """This environment without PYTHONPATH (which would put the checkout before the venv's copy)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env["NO_COLOR"] = "1"
    return env


def pip(*args: str, python: str = sys.executable) -> None:
    completed = subprocess.run([python, "-m", "pip", *args], capture_output=True, text=True, env=clean_env())
    assert completed.returncode == 0, completed.stdout + completed.stderr


def can_build_offline() -> bool:
    """setuptools can build a wheel here without fetching a build environment (it needs the
    ``wheel`` package below setuptools 70.1)."""
    try:
        version = tuple(int(part) for part in metadata.version("setuptools").split(".")[:2] if part.isdigit())
    except metadata.PackageNotFoundError:
        return False
    return version >= (70, 1) or importlib.util.find_spec("wheel") is not None


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = tmp_path_factory.mktemp("source")
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(ROOT / name, source / name)
    out = tmp_path_factory.mktemp("dist")
    offline = ["--no-build-isolation", "--no-index"] if can_build_offline() else []
    pip("wheel", "--no-deps", *offline, "-w", str(out), str(source))
    (built,) = out.glob("toktools-*.whl")
    return built


def dependency_dirs() -> list[str]:
    """The directories this environment imports toktools' runtime dependencies from."""
    found = []
    for name in ("tokenizers", "click", "rich", "regex"):
        spec = importlib.util.find_spec(name)
        assert spec is not None and spec.submodule_search_locations, f"{name} is not installed"
        directory = str(Path(list(spec.submodule_search_locations)[0]).parent)
        if directory not in found:
            found.append(directory)
    return found


@pytest.fixture(scope="module")
def venv_bin(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the wheel installed; returns its scripts directory."""
    root = tmp_path_factory.mktemp("venv")
    scripts = root / ("Scripts" if os.name == "nt" else "bin")
    pip_version = tuple(int(p) for p in metadata.version("pip").split(".")[:2] if p.isdigit())
    with_pip = pip_version < (22, 3)  # older pip cannot install into another interpreter (--python)
    subprocess.run([sys.executable, "-m", "venv", *([] if with_pip else ["--without-pip"]), str(root)], check=True)
    python = str(scripts / "python")
    site_packages = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
        env=clean_env(),
    ).stdout.strip()
    # after the venv's own site-packages on sys.path; .pth files in those directories are not run,
    # so this environment's own toktools (an editable install's finder) stays out
    (Path(site_packages) / "toktools_test_dependencies.pth").write_text("\n".join(dependency_dirs()) + "\n")
    # --force-reinstall: the machine's own toktools (same version) must not satisfy the request
    install = ("install", "--no-deps", "--no-index", "--force-reinstall", str(wheel))
    if with_pip:
        pip(*install, python=python)
    else:
        pip("--python", python, *install)
    return scripts


def test_the_wheel_holds_every_module_and_the_shipped_vocabularies(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    modules = {path.relative_to(ROOT).as_posix() for path in (ROOT / "toktools").rglob("*.py")}
    assert modules - names == set()  # a package missing from pyproject's explicit list shows here
    vocabs = {
        "toktools/" + path.relative_to(ROOT).as_posix() for path in (ROOT / "vocabs").rglob("*") if path.is_file()
    }
    assert {"toktools/vocabs/wordpiece-30k/vocab.txt", "toktools/vocabs/bytebpe-50k/merges.txt"} <= vocabs
    assert vocabs - names == set()


def test_the_readme_main_job_runs_from_another_directory(venv_bin: Path, tmp_path: Path) -> None:
    args = shlex.split(quickstart_commands()[0].split(" && ", 1)[1])
    assert args[:2] == ["toktools", "compare"]
    installed = subprocess.run(
        [str(venv_bin / "toktools"), *args[1:]], cwd=tmp_path, capture_output=True, text=True, env=clean_env()
    )
    assert installed.returncode == 0, installed.stderr
    assert "Traceback" not in installed.stderr and "error" not in installed.stderr
    checkout = subprocess.run(
        [sys.executable, "-m", "toktools.cli", *args[1:]],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**clean_env(), "PYTHONPATH": str(ROOT)},
    )
    assert checkout.returncode == 0, checkout.stderr
    assert installed.stdout == checkout.stdout  # the same vocabularies, the same table
    assert "wordpiece-30k" in installed.stdout and "bytebpe-50k" in installed.stdout and "legend" in installed.stdout


def test_the_installed_package_finds_its_own_copy(venv_bin: Path, tmp_path: Path) -> None:
    script = (
        "import toktools, toktools.io.shipped as s, toktools.formats as f; "
        "print(toktools.__file__); print(s.shipped_names()); print(f.resolve('wordpiece-30k'))"
    )
    completed = subprocess.run(
        [str(venv_bin / "python"), "-c", script], cwd=tmp_path, capture_output=True, text=True, env=clean_env()
    )
    assert completed.returncode == 0, completed.stderr
    package, names, folder = completed.stdout.splitlines()
    venv = venv_bin.parent
    assert Path(package).is_relative_to(venv)  # not the checkout, not the machine's install
    assert names == "['bytebpe-50k', 'wordpiece-30k']"
    assert Path(folder) == Path(package).parent / "vocabs" / "wordpiece-30k"
    missing = subprocess.run(
        [str(venv_bin / "toktools"), "inspect", "no-such-vocab"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=clean_env(),
    )
    assert missing.returncode == 1
    assert missing.stderr.startswith("toktools: error: no tokenizer at no-such-vocab")
