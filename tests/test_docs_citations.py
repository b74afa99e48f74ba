"""Every section the code cites exists in the repository's own documents.

The code and the documentation point readers at the rules of the game with citations such as
"RULES §6.6", at the sentence grammar with "SENTENCES §20.1", and at the public API with
"docs/api.md §3". These three documents are part of the repository, as ``docs/rules.md``,
``docs/sentences.md`` and ``docs/api.md``, and each section is a markdown heading that carries
its number ("## §6 The turn", "### §6.6 The server loop"). A citation that names no heading
leaves the reader with nothing to read, and so does a citation of a document that is not in the
repository (the API document outside it, cited by its upper-case file name without ``docs/``).
These tests find both.

A citation may be wrapped onto the next line (also inside a ``#`` comment), may name a range
("RULES §6.6-6.7", "SENTENCES §2-§13") or a list ("RULES §9, §11", "SENTENCES §20.1 and §21"),
and may use "§§" ("RULES §§3-4, 15.1"). Both ends of a range must be headings. The API page is
cited by its path, "docs/api.md §N", under the same rules; the path spelled in another case
names no file on a case-sensitive file system, and such a citation is reported.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
API = "docs/api.md"
DOCS = {"RULES": "docs/rules.md", "SENTENCES": "docs/sentences.md", API: API}
PACKAGES = ("sim", "agents", "feasibility", "league", "bench", "tests", "examples")
SKIPPED_DIRS = {"build", ".venv", "__pycache__"}

NUM = r"\d+(?:\.\d+)*"
# Between two words of a citation: spaces, or one line break with the next line's indent and
# comment marker.
GAP = r"[ \t]*(?:\n[ \t]*(?:#[ \t]*)?)?"
DASH = r"[-–]"
# After a single "§" every item of a list carries its own "§"; after "§§" the items may not.
ITEM = rf"(?(dbl)§?|§){NUM}(?:{GAP}{DASH}{GAP}§?{NUM})?"
# A document: RULES or SENTENCES by name, or the API page by its path (any case, so that a
# misspelled path is found and reported rather than missed).
CITATION = re.compile(
    rf"(?:\b(?P<doc>RULES|SENTENCES)(?:\.md)?|\b(?P<path>(?i:docs/api\.md))){GAP}§(?P<dbl>§)?"
    rf"(?P<body>{NUM}(?:{GAP}{DASH}{GAP}§?{NUM})?"
    rf"(?:{GAP}(?:,|\band\b|\bor\b|&){GAP}{ITEM})*)")
SECTION = re.compile(NUM)
HEADING_NUMBER = re.compile(rf"§({NUM})(?=\s|$)")
# The API document outside the repository: its upper-case name, not the repository's docs/api.md
# page. Case-sensitive; built in two parts so that this file does not cite it.
OUTSIDE_DOCUMENT = re.compile(r"(?<!docs/)\bAPI" + r"\.md\b")


def _sources() -> list[Path]:
    """The files whose citations are checked: the packages' and tests' Python files, setup.py,
    the README and the documents under docs/."""
    files: list[Path] = []
    for package in PACKAGES:
        base = ROOT / package
        if base.is_dir():
            files += [path for path in base.rglob("*.py")
                      if not SKIPPED_DIRS.intersection(path.relative_to(ROOT).parts)]
    files += [path for path in (ROOT / "setup.py", ROOT / "README.md") if path.is_file()]
    files += (ROOT / "docs").glob("*.md")
    return sorted(files)


def _headings(path: Path) -> set[str]:
    """The section numbers of a document: every "§N" on a heading line (outside fenced code)
    that ends the line or is followed by white space, so "§6" and "§6.6" are different sections."""
    numbers: set[str] = set()
    fenced = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif line.startswith("#") and not fenced:
            numbers.update(HEADING_NUMBER.findall(line))
    return numbers


def _citations(path: Path) -> list[tuple[int, str, str, str]]:
    """``(line, document, section, citation as written)`` for every section a file cites; a
    range gives both of its ends."""
    return _cited(path.read_text(encoding="utf-8", errors="replace"))


def _cited(text: str) -> list[tuple[int, str, str, str]]:
    """What :func:`_citations` finds in ``text``. The document is "RULES", "SENTENCES" or the
    API page's path as written."""
    found = []
    for match in CITATION.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        written = " ".join(match.group(0).replace("#", " ").split())
        doc = match.group("doc") or match.group("path")
        for section in SECTION.findall(match.group("body")):
            found.append((line, doc, section, written))
    return found


def test_every_cited_section_is_a_heading_of_its_document():
    headings = {doc: _headings(ROOT / path) for doc, path in DOCS.items()
                if (ROOT / path).is_file()}
    assert set(headings) == set(DOCS), f"missing documents: {set(DOCS) - set(headings)}"
    assert all(headings.values()), "a document has no numbered headings"
    unresolved = []
    count = 0
    for path in _sources():
        for line, doc, section, written in _citations(path):
            count += 1
            if doc not in headings:  # the API page's path in another case
                unresolved.append(f"{path.relative_to(ROOT)}:{line}: {written!r} cites {doc}, "
                                  f"which is not a file; the page is {API}")
            elif section not in headings[doc]:
                unresolved.append(f"{path.relative_to(ROOT)}:{line}: {written!r} names §{section}, "
                                  f"which is not a heading of {DOCS[doc]}")
    assert count > 0, "no citations found: the pattern or the file list is broken"
    assert not unresolved, "unresolved citations:\n" + "\n".join(unresolved)


def test_no_file_cites_the_api_document_outside_the_repository():
    cited = []
    for path in _sources():
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace")
                                      .splitlines(), 1):
            if OUTSIDE_DOCUMENT.search(line):
                cited.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not cited, ("these lines cite the API document, which is not in the repository; "
                       "cite the code or the README instead:\n" + "\n".join(cited))


def test_the_patterns_read_every_form_of_citation():
    """The forms the module docstring lists are read, for the API page too, and only the
    outside document's name counts as citing it."""
    misspelled = "docs/AP" + "I.md"  # in parts, so that this file neither cites nor names it
    text = ("RULES §6.6-6.7 and SENTENCES §20.1 and §21\n"
            "    # see docs/api.md\n    # §3, §5\n"
            f"docs/api.md §§1-2\n{misspelled} §4\n")
    assert [(doc, section) for _, doc, section, _ in _cited(text)] == [
        ("RULES", "6.6"), ("RULES", "6.7"), ("SENTENCES", "20.1"), ("SENTENCES", "21"),
        (API, "3"), (API, "5"), (API, "1"), (API, "2"), (misspelled, "4")]
    outside = "API" + ".md"
    assert OUTSIDE_DOCUMENT.search(f"see {outside} §3")
    assert OUTSIDE_DOCUMENT.search(f"({outside} §1)")
    assert not OUTSIDE_DOCUMENT.search(f"see {API} §3")
    assert not OUTSIDE_DOCUMENT.search("see docs/api.md §3 and api.md")
