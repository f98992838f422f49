"""The worker's result cache and incremental reads (no Qt: the Worker driven directly).

The same request on unchanged data is answered from the cache (nothing computed, and
nothing sent that the window holds); an adjudication makes the worker read the
adjudications alone and compute again; a result computed ahead for a hypothetical
adjudication serves once that adjudication is saved; a changed judgment reads
everything again. Every answer carries the same parts, byte for byte, as a new worker
computing from nothing on the same database.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import update

from gradercal.dashboard import DashboardFilters
from gradercal.db import models as m
from gradercal.db.repo import Repository
from gradercal.db.session import open_database
from gradercal.ui.dashboard.data import NOT_PRERENDERED, Request
from gradercal.ui.dashboard.protocol import Part
from gradercal.ui.dashboard.results import (
    ResultCache,
    StoredResult,
    adjudications_digest,
    result_key,
    with_adjudication,
)
from gradercal.ui.dashboard.worker import Worker
from tests.conftest import DEMO
from tests.support.gui import import_folder

#: Parts that differ between two computations of the same result: the timings, and the
#: figures not drawn ahead (a Figure's pickle differs between two drawings; drawn figures
#: are compared by their pixels).
TIMED = {Part.dash("elapsed"), *(Part.figure(name) for name in NOT_PRERENDERED)}


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("results") / "demo.sqlite"
    import_folder(str(path), DEMO, adjudications=False)
    return path


@pytest.fixture
def db_file(demo: Path, tmp_path: Path) -> str:
    dst = tmp_path / "demo.sqlite"
    dst.write_bytes(demo.read_bytes())
    return str(dst)


class Session:
    """One Worker and the messages it sent."""

    def __init__(self, url: str) -> None:
        self.sent: list[dict[str, Any]] = []
        self.worker = Worker(self.sent.append)
        self.url = url
        self.generation = 0
        db = open_database(url)
        self.benchmark = Repository(db).benchmark(None).name
        db.dispose()

    def request(self, **kw: Any) -> Request:
        self.generation += 1
        return Request(
            generation=self.generation,
            benchmark=self.benchmark,
            filters=kw.pop("filters", DashboardFilters()),
            judge=kw.pop("judge", None),
            dark=False,
            n_boot=20,
            chart_size=kw.pop("chart_size", (480, 360)),
            **kw,
        )

    def compute(self, have: dict[str, bytes] | None = None, **kw: Any) -> dict[str, Any]:
        """``done`` of one request, with the parts sent (``parts``: key → digest)."""
        start = len(self.sent)
        self.worker.compute(self.request(**kw), self.url, threading.Event(), have)
        new = self.sent[start:]
        done = next(msg for msg in new if msg["type"] == "done")
        done["parts"] = {msg["key"]: msg["digest"] for msg in new if msg["type"] == "part"}
        return done

    def digests(self, done: dict[str, Any], before: dict[str, bytes]) -> dict[str, bytes]:
        """Every part's digest of ``done`` (reused ones from ``before``)."""
        return {k: done["parts"].get(k, before.get(k, b"")) for k in done["keys"]}


def fresh(url: str) -> dict[str, bytes]:
    """The parts of a new worker computing from nothing (never from a cache on disk)."""
    s = Session(url)
    s.worker.disk = None
    return s.compute()["parts"]


def flip_a_judgment(url: str) -> None:
    """Change one judgment's verdict (a new revision of it), as a grader would."""
    db = open_database(url)
    try:
        with db.write() as session:
            session.execute(
                update(m.Judgment)
                .where(m.Judgment.id == 1)
                .values(met=~m.Judgment.met, revision=m.Judgment.revision + 1)
            )
    finally:
        db.dispose()


def same_parts(a: dict[str, bytes], b: dict[str, bytes]) -> None:
    assert set(a) == set(b)
    differ = sorted(k for k in a if a[k] != b[k] and k not in TIMED)
    assert differ == []


def adjudicate(url: str, unit: tuple[str, str], met: bool) -> None:
    db = open_database(url)
    try:
        Repository(db).adjudicate(None, *unit, met=met, adjudicator="lead")
    finally:
        db.dispose()


def a_unit(url: str, k: int = 0) -> tuple[str, str]:
    db = open_database(url)
    try:
        j = Repository(db).load_frames().judgments
    finally:
        db.dispose()
    human = j.loc[j["grader_kind"] == "human"].drop_duplicates(["response_id", "criterion_id"])
    row = human.iloc[k * 7]
    return str(row["response_id"]), str(row["criterion_id"])


def test_unchanged_data_is_answered_from_the_cache(db_file: str) -> None:
    s = Session(db_file)
    first = s.compute()
    assert first["loaded"] and not first["cached"] and s.worker.computations == 1
    shown = s.digests(first, {})
    # The same request: nothing computed; the window holds every part, so none is sent.
    again = s.compute(have=shown)
    assert again["cached"] and not again["loaded"] and again["refreshed"] == []
    assert again["parts"] == {} and sorted(again["reused"]) == sorted(shown)
    assert s.worker.computations == 1
    # Another filter is computed; going back to the first is not.
    model = Repository(open_database(db_file)).load_frames().responses["model"].iloc[0]
    other = s.compute(filters=DashboardFilters(models=(model,)))
    assert not other["cached"] and s.worker.computations == 2
    back = s.compute()
    assert back["cached"] and s.worker.computations == 2
    same_parts(back["parts"], shown)


def test_an_adjudication_reads_only_the_adjudications(db_file: str) -> None:
    s = Session(db_file)
    shown = s.digests(s.compute(), {})
    adjudicate(db_file, a_unit(db_file), met=False)
    after = s.compute(have=shown)
    assert after["refreshed"] == ["adjudications"] and not after["loaded"]
    assert not after["cached"] and s.worker.computations == 2
    parts = s.digests(after, shown)
    same_parts(parts, fresh(db_file))  # what a new worker computes on the new data
    # Only what changed was sent: the parts that stayed equal were reused.
    assert after["reused"] and set(after["reused"]).isdisjoint(after["parts"])
    assert all(shown[k] == parts[k] for k in after["reused"])
    assert Part.dash("overview") in after["parts"]  # the count of adjudications, at least


def test_a_prefetched_adjudication_is_shown_without_computing(db_file: str) -> None:
    s = Session(db_file)
    shown = s.digests(s.compute(), {})
    unit = a_unit(db_file, 1)
    for met in (True, False):
        s.worker.prefetch(s.request(), db_file, (*unit, met, None), threading.Event())
    assert s.worker.computations == 3
    assert [msg["cached"] for msg in s.sent if msg["type"] == "prefetched"] == [False, False]
    adjudicate(db_file, unit, met=False)
    after = s.compute(have=shown)
    assert after["cached"] and after["refreshed"] == ["adjudications"]
    assert s.worker.computations == 3  # nothing computed on return
    same_parts(s.digests(after, shown), fresh(db_file))


def test_a_changed_judgment_reads_everything_again(db_file: str) -> None:
    s = Session(db_file)
    shown = s.digests(s.compute(), {})
    flip_a_judgment(db_file)
    after = s.compute(have=shown)
    assert after["loaded"] and "judgments" in after["refreshed"] and not after["cached"]
    same_parts(s.digests(after, shown), fresh(db_file))
    # A re-read on request ("Recompute") of unchanged data finds the result kept.
    again = s.compute(reload=True)
    assert again["loaded"] and again["cached"]


def test_result_keys_and_hypotheses(db_file: str) -> None:
    db = open_database(db_file)
    try:
        repo = Repository(db)
        revision = repo.data_revision()
        unit = a_unit(db_file)
        empty = repo.load_adjudications()
        hypothesis = with_adjudication(empty, (*unit, True, None), "lead")
        repo.adjudicate(None, *unit, met=True, adjudicator="someone", note="n")
        saved = repo.load_adjudications()
        assert adjudications_digest(saved) == adjudications_digest(hypothesis)
        revised = with_adjudication(saved, (*unit, False, None))
        assert len(revised) == 1 and not bool(revised["met"].iloc[0])
        assert adjudications_digest(revised) != adjudications_digest(saved)
        after = repo.data_revision()
    finally:
        db.dispose()
    changed = sorted(k for k in revision if revision[k] != after[k])
    assert changed == ["adjudications"]
    s = Session(db_file)
    req = s.request()
    assert result_key(req, revision, hypothesis) == result_key(req, after, saved)
    assert result_key(req, revision, empty) != result_key(req, revision, hypothesis)
    other = s.request(chart_size=(400, 300))
    assert result_key(other, revision, empty) != result_key(req, revision, empty)


def test_the_cache_keeps_the_newest_within_its_bounds() -> None:
    cache = ResultCache(max_results=2, max_bytes=100)
    for k in "abc":
        cache.put(k, StoredResult(parts=[(k, b"x" * 10, b"")]))
    assert list(cache.keys()) == ["b", "c"]
    assert cache.get("b") is not None  # now the newest
    cache.put("d", StoredResult(parts=[("d", b"x" * 95, b"")]))
    assert list(cache.keys()) == ["d"]  # over the byte bound: the others go
