"""The README and docs/ describe toktools as it is.

* Every ``toktools`` command and ``--option`` they name (in code blocks and in backticks) exists
  in that command's ``--help``. A doc that names an option the CLI lacks is a doc to fix.
* Every relative link between the pages resolves, down to the heading, and every page of docs/
  is linked from the README.
* Every ``toktools/...`` path and ``toktools.x.y`` name they mention exists, and docs/layout.md
  lists exactly the modules of toktools/.

Options of other commands (pip, python, pytest, dask, the benchmarks) are not checked. Help
texts come from click's CliRunner, once per command.
"""

from __future__ import annotations

import functools
import re
import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from toktools._moved import MOVED
from toktools.cli import main

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]

OPTION = re.compile(r"^\[?(--[a-z0-9][a-z0-9-]*)")
PLACEHOLDER = re.compile(r"^[A-Z][A-Z0-9_.]*$")  # NAME, TOK, CORPUS...: any subcommand
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", flags=re.S | re.M)
SHELL_SEPARATORS = {"|", "||", "&&", ";", ">", ">>", "<"}

Path_ = tuple[str, ...]


# --- what the CLI declares ------------------------------------------------------------------


@functools.cache
def declared(path: Path_) -> tuple[frozenset[str], frozenset[str]]:
    """The long options and the subcommands that ``toktools PATH --help`` lists."""
    result = CliRunner().invoke(main, [*path, "--help"], catch_exceptions=False)
    assert result.exit_code == 0, f"toktools {' '.join(path)} --help failed:\n{result.output}"
    options: set[str] = set()
    commands: set[str] = set()
    section = None
    for line in result.output.splitlines():
        if not line.startswith(" "):
            section = line if line in ("Options:", "Commands:") else None
            continue
        if section is None or line.startswith("   "):  # a description, or its continuation
            continue
        head = re.split(r"\s{2,}", line.strip())[0]
        if section == "Options:":
            options.update(re.findall(r"--[a-z0-9][a-z0-9-]*", head))
        else:
            commands.add(head.split()[0])
    return frozenset(options), frozenset(commands)


def descendants(path: Path_) -> list[Path_]:
    """``path`` and every command below it."""
    found = [path]
    for name in sorted(declared(path)[1]):
        found += descendants((*path, name))
    return found


def options_below(path: Path_) -> set[str]:
    """The options of ``path`` and of every command below it (``train --from-counts``)."""
    return {option for below in descendants(path) for option in declared(below)[0]}


def check_command(words: list[str]) -> list[str]:
    """Problems with one ``toktools ...`` command line (``words`` after ``toktools``)."""
    paths: list[Path_] = [()]
    index = 0
    while index < len(words) and not words[index].startswith(("-", "[")):
        subcommands = set().union(*(declared(path)[1] for path in paths))
        if not subcommands:
            break
        word = words[index]
        if PLACEHOLDER.match(word):
            paths = [(*path, name) for path in paths for name in sorted(declared(path)[1])]
        else:
            missing = [name for name in word.split("|") if name not in subcommands]
            if missing:
                shown = " ".join(("toktools", *paths[0])) if len(paths) == 1 else "toktools …"
                return [f"`{shown}` has no command {', '.join(missing)}"]
            paths = [(*path, name) for path in paths for name in word.split("|")]
        index += 1
    known = set().union(*(options_below(path) for path in paths))
    problems = []
    for word in words[index:]:
        match = OPTION.match(word)
        if match and match.group(1) not in known:
            where = " or ".join(sorted({" ".join(path) for path in paths})) or "(the group)"
            problems.append(f"`toktools {where}` has no option {match.group(1)}")
    return problems


# --- what the pages name --------------------------------------------------------------------


def page_text(page: Path) -> str:
    return page.read_text(encoding="utf-8")


def shell_blocks(text: str) -> Iterator[str]:
    """Logical lines of every code block that is not Python (backslash continuations joined)."""
    for language, body in FENCE.findall(text):
        if language in ("python", "py", "json"):
            continue
        yield from body.replace("\\\n", " ").splitlines()


def prose(text: str) -> str:
    return FENCE.sub("", text)


def inline_spans(text: str) -> list[str]:
    return [span.replace("\n", " ") for span in re.findall(r"`([^`]+)`", prose(text))]


def split_words(line: str) -> list[str]:
    try:
        return shlex.split(line, comments=True)
    except ValueError:  # an unbalanced quote in an example: fall back to whitespace
        return line.split()


def toktools_commands_in_line(line: str) -> Iterator[list[str]]:
    """The words after ``toktools`` (or ``python -m toktools.cli``) of each command on a shell
    line; a pipeline segment that starts with an option continues the previous command."""
    current: list[str] | None = None
    segment: list[str] = []
    for word in [*split_words(line), ";"]:
        if word not in SHELL_SEPARATORS:
            segment.append(word)
            continue
        starts = [i for i, w in enumerate(segment) if w in ("toktools", "toktools.cli")]
        if starts:
            if current is not None:
                yield current
            current = segment[starts[0] + 1 :]
        elif current is not None and segment and segment[0].startswith(("-", "[-")):
            current += segment
        segment = []
    if current is not None:
        yield current


def named_commands(page: Path) -> Iterator[tuple[str, list[str]]]:
    """(what the page says, the words after ``toktools``) of every command the page names."""
    top_level = declared(())[1]
    text = page_text(page)
    for line in shell_blocks(text):
        for words in toktools_commands_in_line(line):
            yield line.strip(), words
    for span in inline_spans(text):
        words = split_words(span)
        if words and words[0] == "toktools":
            yield span, words[1:]
        elif words and words[0] in top_level:  # `encode --format megatron`, `train unigram`
            yield span, words


def named_options(page: Path) -> Iterator[tuple[str, str]]:
    """(span, option) of every option named on its own in backticks: `--shard-tokens N`."""
    for span in inline_spans(page_text(page)):
        words = split_words(span)
        if words and words[0].startswith("--"):
            for word in words:
                match = OPTION.match(word)
                if match:
                    yield span, match.group(1)


def page_id(page: Path) -> str:
    return str(page.relative_to(ROOT))


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_every_command_and_option_named_exists_in_help(page: Path) -> None:
    problems = [f"{text!r}: {problem}" for text, words in named_commands(page) for problem in check_command(words)]
    every_option = options_below(())
    problems += [
        f"{span!r}: no toktools command has {option}"
        for span, option in named_options(page)
        if option not in every_option
    ]
    assert not problems, f"{page_id(page)} names what the CLI does not have:\n" + "\n".join(problems)


def test_the_checker_sees_commands_and_catches_what_is_missing() -> None:
    """The checks above pass because the docs are right, not because nothing was parsed."""
    assert check_command(["train", "bytebpe", "--vocab-size", "8000", "--template", "roberta"]) == []
    assert check_command(["train", "NAME", "--from-counts", "x"]) == []
    assert check_command(["encode", "-t", "TOK", "--append-eos[=TOKEN]", "[--shard-tokens", "N]"]) == []
    assert check_command(["train", "wordpiece|bytebpe|unigram", "--vocab-size", "1"]) == []
    assert check_command(["count", "--no-such-option"]) == ["`toktools count` has no option --no-such-option"]
    assert check_command(["train", "bpe"]) == ["`toktools train` has no command bpe"]
    assert check_command(["train", "unigram", "--cased"])  # a wordpiece option
    line = (
        "/usr/bin/time toktools encode -t x a.txt --format megatron | toktools decode -t x [--engine auto | --verify 0]"
    )
    assert list(toktools_commands_in_line(line)) == [
        ["encode", "-t", "x", "a.txt", "--format", "megatron"],
        ["decode", "-t", "x", "[--engine", "auto", "--verify", "0]"],
    ]
    readme = list(named_commands(ROOT / "README.md"))
    assert any(words[:2] == ["train", "bytebpe"] for _, words in readme)
    assert any(words[:1] == ["encode"] for _, words in readme)


# --- links ----------------------------------------------------------------------------------


def slug(heading: str) -> str:
    """GitHub's anchor of a Markdown heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    return {slug(heading) for heading in re.findall(r"^#+ (.+)$", prose(page_text(page)), flags=re.M)}


def relative_links(page: Path) -> list[str]:
    return [target for target in re.findall(r"\]\(([^)\s]+)\)", prose(page_text(page))) if "://" not in target]


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_every_relative_link_resolves(page: Path) -> None:
    problems = []
    for target in relative_links(page):
        file_part, _, anchor = target.partition("#")
        destination = (page.parent / file_part).resolve() if file_part else page
        if not destination.exists():
            problems.append(f"{target}: no such file")
        elif anchor and destination.suffix == ".md" and anchor not in anchors(destination):
            problems.append(f"{target}: no heading #{anchor} in {destination.name}")
    assert not problems, f"{page_id(page)}:\n" + "\n".join(problems)


def test_the_readme_links_every_docs_page() -> None:
    linked = {(ROOT / target.partition("#")[0]).resolve() for target in relative_links(ROOT / "README.md")}
    unlinked = [page.name for page in sorted(DOCS.glob("*.md")) if page.resolve() not in linked]
    assert not unlinked, f"docs pages the README does not link: {unlinked}"


# --- module paths ---------------------------------------------------------------------------

#: Names that are not source modules: the shipped vocabularies are the package data
#: ``toktools.vocabs`` (pyproject.toml maps it to vocabs/).
NOT_IN_THE_SOURCE = {"toktools.vocabs"}


def source_modules() -> list[str]:
    return sorted(str(path.relative_to(ROOT)) for path in (ROOT / "toktools").rglob("*.py"))


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_every_module_path_named_exists(page: Path) -> None:
    text = page_text(page)
    missing = sorted({path for path in re.findall(r"toktools/[\w/]*\w(?:\.py)?/?", text) if not (ROOT / path).exists()})
    assert not missing, f"{page_id(page)} names paths that do not exist: {missing}"


def defines(module_file: Path, name: str) -> bool:
    """Whether the module defines, imports or lazily re-exports ``name`` (read, not imported)."""
    source = module_file.read_text(encoding="utf-8")
    patterns = (
        rf"^\s*(?:async\s+)?def {name}\b",
        rf"^\s*class {name}\b",
        rf"^{name}\s*(?::[^=\n]+)?=",
        rf"\bimport\b.*\b{name}\b",
        rf"[\"']{name}[\"']",
    )
    return any(re.search(pattern, source, flags=re.M) for pattern in patterns)


def dotted_name_problem(dotted: str) -> str | None:
    """Why ``toktools.a.b.name`` does not exist, or None: the longest prefix that is a module
    file or package must exist, and the next part must be a name it defines."""
    if dotted in NOT_IN_THE_SOURCE:
        return None
    parts = dotted.split(".")
    if len(parts) > 1 and parts[1] in MOVED:  # an old path, still importing: toktools.masking
        parts = ["toktools", *MOVED[parts[1]].split("."), *parts[2:]]
    for cut in range(len(parts), 0, -1):
        base = ROOT.joinpath(*parts[:cut])
        module_file = base / "__init__.py" if base.is_dir() else base.with_suffix(".py")
        if module_file.exists():
            rest = parts[cut:]
            if rest and not defines(module_file, rest[0]):
                return f"{'.'.join(parts[:cut])} has no {rest[0]}"
            return None
    return "no such module"


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_every_dotted_toktools_name_exists(page: Path) -> None:
    names = {name for span in inline_spans(page_text(page)) for name in re.findall(r"\btoktools(?:\.\w+)+", span)}
    for _, body in FENCE.findall(page_text(page)):
        names.update(re.findall(r"\btoktools(?:\.\w+)+", body))
    problems = [f"{name}: {problem}" for name in sorted(names) if (problem := dotted_name_problem(name))]
    assert not problems, f"{page_id(page)} names what does not exist:\n" + "\n".join(problems)


def test_layout_lists_exactly_the_modules() -> None:
    listed = set(re.findall(r"`(toktools/[\w/]+\.py)`", page_text(DOCS / "layout.md")))
    modules = source_modules()
    unlisted = [module for module in modules if module not in listed]
    assert not unlisted, "docs/layout.md does not list these modules; add one line each saying its job:\n" + "\n".join(
        unlisted
    )
    gone = sorted(listed - set(modules))
    assert not gone, f"docs/layout.md lists modules that do not exist: {gone}"
