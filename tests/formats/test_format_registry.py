"""Every registered import format, from the registry: its fixture, recognised and imported.

The tests here read :data:`gradercal.formats.FORMATS` and pin no list of names, so a new
format needs no test edit: its reader, its entry in ``FORMATS``, its section in
docs/formats.md and one fixture file — ``tests/data/formats/<name>.<suffix>`` (or a folder
``tests/data/formats/<name>/``) written by the upstream tool. A format without one fails
:func:`test_each_format_has_a_fixture_it_recognises`, naming the file to add.

Fixtures that need a stored benchmark (judgments in a table, logs of stored tasks) are
imported into a database that already holds the fallback format's fixture (the v1 folder,
tasks ``T1`` with criteria ``c1`` and ``c2`` and response ``T1-a``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from gradercal.cli import main
from gradercal.formats import FORMATS, ImportFormat, recognise
from tests.conftest import DATA

FIXTURES = DATA / "formats"
#: The format a path no other format recognises falls back to (its fixture is the base).
FALLBACK = FORMATS[-1]


def fixture_of(fmt: ImportFormat) -> Path | None:
    """The fixture of ``fmt``: the one entry of :data:`FIXTURES` named after it."""
    found = [p for p in FIXTURES.iterdir() if p.name == fmt.name or p.stem == fmt.name]
    assert len(found) <= 1, f"format {fmt.name!r} has {len(found)} fixtures: {found}"
    return found[0] if found else None


def _fixture(fmt: ImportFormat) -> Path:
    path = fixture_of(fmt)
    if path is None:
        pytest.fail(
            f"import format {fmt.name!r} has no fixture: add "
            f"tests/data/formats/{fmt.name}.<suffix> (or a folder tests/data/formats/"
            f"{fmt.name}/) written by the upstream tool"
        )
    return path


def _import(path: Path, db: Path) -> dict[str, object]:
    res = CliRunner().invoke(main, ["import", str(path), "--db", str(db), "--json"])
    assert res.exit_code == 0, (path.name, res.output)
    out: dict[str, object] = json.loads(res.stdout)
    return out


def test_the_registry_names_each_format_once_and_ends_with_the_fallback() -> None:
    names = [f.name for f in FORMATS]
    assert len(set(names)) == len(names), names
    assert FALLBACK.name == "v1"  # the reader that explains what is wrong with a path


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
def test_each_format_has_a_fixture_it_recognises(fmt: ImportFormat) -> None:
    """The fixture exists, and the registry (asked in its order) gives it to its format:
    a format placed after one that also takes its files fails here."""
    path = _fixture(fmt)
    found = recognise(path)
    assert found.format == fmt.name, (path.name, found)
    assert found.kind is not None, (path.name, found)


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
def test_each_format_imports_its_fixture(fmt: ImportFormat, tmp_path: Path) -> None:
    """``gradercal import`` reads every format's fixture with no change of its own."""
    reason = fmt.unavailable()
    if reason is not None:
        pytest.skip(f"{fmt.name}: {reason}")
    db = tmp_path / "formats.sqlite"
    if fmt is not FALLBACK:
        _import(_fixture(FALLBACK), db)
    report = _import(_fixture(fmt), db)
    assert report["changed"] is True, report


def test_every_fixture_belongs_to_a_registered_format() -> None:
    names = {f.name for f in FORMATS}
    stray = sorted(
        p.name for p in FIXTURES.iterdir() if p.name not in names and p.stem not in names
    )
    assert not stray, f"fixtures of no registered format in {FIXTURES}: {stray}"
