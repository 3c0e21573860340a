"""What a user reads explains itself: every requirement id in the README, ARCHITECTURE.md, docs/,
examples, benchmarks, the tests and the packages' error messages, docstrings and comments is
defined in docs/requirements.md (the specification the ids come from is not in the repository),
every page they name is in the repository, every link of the guides leads somewhere (the heading
an anchor names included), and every error code a client can be answered is explained in them."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from mvu_store.errors import Code

ROOT = Path(__file__).resolve().parents[1]
DEFINITIONS = ROOT / "docs" / "requirements.md"
# An id is one capital letter (the area), a hyphen and a number: "P-3", "S-11".
ID = r"\b[A-Z]-[0-9]+\b"
# A range cites every id between its ends: "F-1 … F-7", "I-1 ... I-3", "P-1 to P-5".
RANGE = re.compile(r"\b([A-Z])-([0-9]+) *(?:…|\.\.\.|–|to) *\1-([0-9]+)\b")


def guides() -> list[Path]:
    return [ROOT / "README.md", ROOT / "ARCHITECTURE.md", *sorted((ROOT / "docs").glob("*.md"))]


def read_by_users() -> list[Path]:
    texts = guides()
    for folder in ("mvu_store", "mvu_api", "examples", "benchmarks", "tests"):
        texts += sorted(path for path in (ROOT / folder).rglob("*") if path.suffix in {".py", ".md", ".mjs", ".js"})
    return texts


def defined() -> set[str]:
    return set(re.findall(rf"^- \*\*({ID})\*\*", DEFINITIONS.read_text(encoding="utf-8"), flags=re.M))


def cited(text: str) -> set[str]:
    ids = set(re.findall(ID, text))
    for letter, first, last in RANGE.findall(text):
        ids |= {f"{letter}-{number}" for number in range(int(first), int(last) + 1)}
    return ids


def test_the_scanner_reads_single_ids_and_ranges() -> None:
    assert cited("(P-1 … P-3), I-1 ... I-2, F-6 and UTF-8, SHA-256") == {"P-1", "P-2", "P-3", "I-1", "I-2", "F-6"}


def test_every_cited_requirement_id_is_defined_in_docs() -> None:
    known = defined()
    assert known, "docs/requirements.md defines the ids as '- **X-n** ...' list items"
    missing = {
        f"{path.relative_to(ROOT)}: {', '.join(sorted(ids))}"
        for path in read_by_users()
        if (ids := cited(path.read_text(encoding="utf-8")) - known)
    }
    assert not missing, "cited but not defined in docs/requirements.md:\n" + "\n".join(sorted(missing))


def test_every_definition_is_cited_somewhere() -> None:
    """A definition nobody cites is dead text: remove it or cite it where it applies."""
    everything = set().union(*(cited(path.read_text(encoding="utf-8")) for path in read_by_users()
                               if path != DEFINITIONS))
    assert defined() - everything == set()


def test_every_page_the_texts_name_is_in_the_repository() -> None:
    page = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*[\w.-]+\.md)\b")
    missing = sorted(
        f"{path.relative_to(ROOT)}: {name}"
        for path in read_by_users()
        for name in set(page.findall(path.read_text(encoding="utf-8")))
        # A link is relative to the page it is in; a path in code, to the repository, or built
        # from its parts (``DOCS / "lang.md"``).
        if not (path.parent / name).is_file() and not (ROOT / name).is_file()
        and not (path.suffix == ".py" and (ROOT / "docs" / name).is_file())
    )
    assert not missing, "named but not in the repository:\n" + "\n".join(missing)


def prose(markdown: str) -> str:
    """The text outside fenced blocks, where a ``#`` line is a heading and ``[x](y)`` a link."""
    return re.sub(r"^```.*?^```", "", markdown, flags=re.S | re.M)


def anchors(page: Path) -> set[str]:
    """The anchors GitHub gives a page's headings: lower case, punctuation dropped, spaces as
    hyphens, ``-1``, ``-2`` … after a repeated one."""
    seen: dict[str, int] = {}
    found = set()
    for heading in re.findall(r"^#{1,6} +(.+?) *$", prose(page.read_text(encoding="utf-8")), flags=re.M):
        text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading: its text
        slug = re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")
        found.add(f"{slug}-{seen[slug]}" if slug in seen else slug)
        seen[slug] = seen.get(slug, 0) + 1
    return found


def test_the_anchors_are_githubs() -> None:
    assert anchors(ROOT / "docs" / "python-api.md") >= {"recovering-a-legacy-playthrough-l-3", "the-ledger-api"}
    assert "the-wire-and-the-originals-transport" in anchors(ROOT / "docs" / "http-api.md")
    assert "try-it-mvu-demo" in anchors(ROOT / "README.md")


def test_every_relative_link_of_the_guides_resolves() -> None:
    broken = []
    for page in guides():
        text = re.sub(r"`[^`\n]*`", "", prose(page.read_text(encoding="utf-8")))  # code spans: no links
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue  # https:, mailto: …: outside the repository
            path, _, anchor = target.partition("#")
            linked = (page.parent / path).resolve() if path else page
            if not linked.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such file)")
            elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert not broken, "links that lead nowhere:\n" + "\n".join(broken)


def test_every_error_code_a_client_can_get_is_explained_in_the_guides() -> None:
    """The codes of the one error root, and those the HTTP transport adds (a missing token, a
    malformed request …), each named where a reader looks them up."""
    wire = {code for path in (ROOT / "mvu_api").rglob("*.py")
            for code in re.findall(r'^[A-Z_]+ = "(MVU_[A-Z_]+)"$', path.read_text(encoding="utf-8"), flags=re.M)}
    assert {"MVU_UNAUTHORIZED", "MVU_BAD_REQUEST"} <= wire
    text = "".join(page.read_text(encoding="utf-8") for page in guides())
    assert sorted(code for code in {*(code.value for code in Code), *wire} if code not in text) == []


# -- ARCHITECTURE.md: the modules it names and the layers it draws are the code's ---------------

ARCHITECTURE = ROOT / "ARCHITECTURE.md"
PACKAGE_ROOTS = (ROOT, ROOT / "mvu_store", ROOT / "mvu_api")


def _found(name: str, where: list[Path]) -> list[Path]:
    """The files ``name`` (a glob such as ``lodash*.py`` allowed) names under any of ``where``."""
    return [path for folder in where for path in folder.glob(name) if path.is_file()]


def named_modules(text: str) -> list[tuple[str, list[Path]]]:
    """Each ``.py`` file a text names in a code span, with the folders it may be in.

    A name with a folder (``service/pipeline.py``) is read from the repository, ``mvu_store`` or
    ``mvu_api``; a bare one (``views.py``) from where the text stands: the package a paragraph
    opened in bold (``**`ledger`**``, any depth of it) or the folder of the last such path of the
    paragraph or table row, else anywhere in the code."""
    named: list[tuple[str, list[Path]]] = []
    everywhere = [path for root in ("mvu_store", "mvu_api", "tests", "benchmarks")
                  for path in (ROOT / root).rglob("*") if path.is_dir()]
    for block in re.split(r"\n\s*\n|\n(?=\|)", text):
        package: list[Path] = []
        near: list[Path] = []
        for bold, span in re.findall(r"\*\*`([\w.]+)`\*\*|`([^`\n]+)`", block):
            if bold:
                folder = next((root / bold for root in PACKAGE_ROOTS if (root / bold).is_dir()), None)
                package = [folder, *(path for path in folder.rglob("*") if path.is_dir())] if folder else []
            elif span.endswith(".py") and "/" in span:
                named.append((span, list(PACKAGE_ROOTS)))
                near = sorted({found.parent for found in _found(span, list(PACKAGE_ROOTS))})
            elif re.fullmatch(r"[\w*]+\.py", span):
                named.append((span, package + near or everywhere))
    return named


def test_the_module_reader_reads_where_a_name_stands() -> None:
    text = ("**`ledger`** is persistence (`commits.py`).\n\n"
            "the flow: `service/pipeline.py` runs `turn_stages.py`\n"
            "| a row | `mvu_store/js/` and `numbers.py` |")
    (commits, in_ledger), (pipeline, _), (stages, in_service), (numbers, anywhere) = named_modules(text)
    assert (commits, pipeline, stages, numbers) == ("commits.py", "service/pipeline.py", "turn_stages.py", "numbers.py")
    assert ROOT / "mvu_store" / "ledger" in in_ledger and ROOT / "mvu_store" / "service" not in in_ledger
    assert in_service == [ROOT / "mvu_store" / "service"]
    assert ROOT / "mvu_store" / "js" in anywhere


def test_every_module_architecture_names_is_in_the_repository() -> None:
    """A new maintainer finds a feature's place from ARCHITECTURE.md alone: a file it names that
    was renamed or removed sends them nowhere."""
    named = named_modules(ARCHITECTURE.read_text(encoding="utf-8"))
    assert len(named) > 100
    missing = [name for name, where in named if not _found(name, where)]
    assert not missing, "ARCHITECTURE.md names modules that are not where it says: " + ", ".join(missing)


def test_the_layers_table_is_the_layers_contract() -> None:
    """The table of ARCHITECTURE.md, row by row from the bottom, is pyproject's ``store-layers``
    contract (then ``mvu_api`` on top, its own layers named in the contract's order)."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    rows = re.findall(r"^\| \d+ \| (.*?) \| (.*) \|$", text, flags=re.M)
    drawn = [set(re.findall(r"`mvu_store\.(\w+)`", packages)) for packages, _ in rows]
    linter = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    contracts = {contract["id"]: contract for contract in linter["contracts"]}
    store = [{name.strip() for name in layer.split("|")} for layer in reversed(contracts["store-layers"]["layers"])]
    assert drawn[:-1] == store
    assert rows[-1][0] == "`mvu_api`"
    api = [name.strip() for layer in contracts["api-layers"]["layers"] for name in layer.split("|")]
    mentioned = [span.rstrip("/") for span in re.findall(r"`([^`]+)`", rows[-1][1])]
    assert sorted((span for span in dict.fromkeys(mentioned) if span in api), key=mentioned.index) == api
