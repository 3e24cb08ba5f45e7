"""The documents stand on their own: every link inside the repository leads somewhere, the
README's set-up is the two commands CI runs, and docs/configuration.md names every key of
the config model with its default."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bot.config.errors import toml_value
from bot.config.keys import config_keys

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = sorted([ROOT / "README.md", ROOT / "CHANGELOG.md", *(ROOT / "docs").glob("*.md")])
_LINK = re.compile(r"\]\(([^)\s]+)\)")
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*$", re.MULTILINE)
_FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)


def anchors(path: Path) -> set[str]:
    """Return the anchors GitHub gives the headings of a Markdown file."""
    text = _FENCE.sub("", path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for heading in _HEADING.findall(text):
        plain = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", r"\1", heading).strip().lower()
        slug = re.sub(r"[^\w\- ]", "", plain).replace(" ", "-")
        found.add(slug)
    return found


def local_links(path: Path) -> list[str]:
    """Return the links of a Markdown file that point inside the repository."""
    text = _FENCE.sub("", path.read_text(encoding="utf-8"))
    return [link for link in _LINK.findall(text) if not re.match(r"[a-z]+:", link)]


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_inside_the_repository_leads_somewhere(document: Path) -> None:
    """A link names a file the repository has, and a heading that file has."""
    broken = []
    for link in local_links(document):
        target, _, anchor = link.partition("#")
        file = (document.parent / target).resolve() if target else document
        if not file.exists():
            broken.append(f"{link}: no {file.relative_to(ROOT)}")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(f"{link}: no heading #{anchor} in {file.relative_to(ROOT)}")
    assert broken == []


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_document_cites_sections_of_one_the_repository_lacks(document: Path) -> None:
    """The project's documents cite each other by link, never "§7" of something else."""
    assert "§" not in document.read_text(encoding="utf-8")


def test_the_readme_sets_up_with_the_two_commands_ci_runs() -> None:
    """Under "Set-up": one command installs and runs the bot, one installs and runs the
    tests; CI installs the same extras and runs the same test command."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    setup = readme.split("\n## Set-up\n", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"^```sh\n(.+?)\n```", setup, re.MULTILINE)
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert commands == [
        "python3 -m venv .venv && . .venv/bin/activate && pip install -e . && pacebot console",
        "python3 -m venv .venv && . .venv/bin/activate && pip install -e '.[test]'"
        " && pytest -n auto",
    ]
    assert "pip install --quiet -e '.[test]'" in ci
    assert re.search(r"^pytest -n auto \|\| status=\$\?$", ci, re.MULTILINE)


def documented_keys(text: str) -> list[tuple[str, str]]:
    """Read docs/configuration.md: the key of each row under a ``[table]`` heading, dotted,
    with the row's default cell."""
    rows: list[tuple[str, str]] = []
    table = None
    for line in text.splitlines():
        if line.startswith("#"):  # "## [bot]" opens a table, "## Top-level keys" the keys
            # outside any table, and any other heading closes it
            top_level = line == "## Top-level keys"
            table = line[line.index("[") + 1 : -1] if line.endswith("]") else None
            table = "" if top_level else table
        elif table is not None and line.startswith("| `"):
            key, default = (cell.strip() for cell in line.split("|")[1:3])
            rows.append((f"{table}.{key.strip('`')}" if table else key.strip("`"), default))
    return rows


def documented_default(default: object) -> str:
    """Write a default as docs/configuration.md shows it: as TOML, or "unset"."""
    return "unset" if default is None else f"`{toml_value(default)}`"


def test_the_configuration_doc_names_every_key_with_its_default() -> None:
    """docs/configuration.md has a row for each key of the config model, in the model's
    order and with its default, and none for a key the model lacks."""
    text = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    expected = [(key.key, documented_default(key.default)) for key in config_keys()]
    assert documented_keys(text) == expected
