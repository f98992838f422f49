"""Coordinator progress on hand-made facts: every figure worked out by hand."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from gradercal.ops.progress import (
    ItemFact,
    PacketFact,
    TaskFact,
    display,
    format_duration,
    records,
    summarise,
)

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


def _items() -> list[ItemFact]:
    day = timedelta(days=1)
    return [
        # ana: 3 submitted (600 s, 300 s, 0 s recorded), 1 skipped, 1 in progress, 1 pending
        ItemFact("ana", "T1", "submitted", 600, NOW - 2 * day, NOW - 2 * day),
        ItemFact("ana", "T1", "submitted", 300, NOW - 1 * day, NOW - 1 * day),
        ItemFact("ana", "T2", "submitted", 0, NOW - 10 * day, NOW - 10 * day),  # old, untimed
        ItemFact("ana", "T2", "skipped", 50, NOW - 3 * day, None),
        ItemFact("ana", "T3", "in_progress", 120, NOW - timedelta(hours=1), None),
        ItemFact("ana", "T3", "pending", 0, NOW - 20 * day, None),
        # ben: nothing done yet
        ItemFact("ben", "T1", "pending", 0, NOW - 20 * day, None),
        ItemFact("ben", "T2", "pending", 0, NOW - 20 * day, None),
    ]


def test_grader_rows_are_worked_out_by_hand() -> None:
    p = summarise(_items(), now=NOW, window_days=7)
    ana, ben = p.graders
    assert (ana.assigned, ana.submitted, ana.skipped, ana.in_progress, ana.pending) == (
        6,
        3,
        1,
        1,
        1,
    )
    assert ana.done == 4 and ana.open == 2
    assert ana.active_s == pytest.approx(600 + 300 + 50 + 120)
    # pace from the timed submissions only: (600 + 300) / 2 = 450 s each → 8 per hour
    assert ana.per_item_s == pytest.approx(450)
    assert ana.per_hour == pytest.approx(8.0)
    assert ana.active_left_s == pytest.approx(2 * 450)
    # two submissions in the last 7 days → 2/7 per day; 2 open → 7 days from now
    assert ana.recent_per_day == pytest.approx(2 / 7)
    assert ana.forecast == NOW + timedelta(days=7)
    # last activity: the in-progress item an hour ago (the untouched pending one is not)
    assert ana.last_activity == NOW - timedelta(hours=1)
    assert ben.per_hour is None and ben.forecast is None and ben.last_activity is None
    assert ben.active_left_s is None  # no pace yet: unknown, not zero
    total = p.total
    assert (total.assigned, total.submitted, total.pending) == (8, 3, 3)
    assert total.forecast == NOW + timedelta(days=4 / (2 / 7))


def test_a_finished_grader_needs_no_time_and_has_no_forecast() -> None:
    done = [ItemFact("c", "T1", "submitted", 60, NOW, NOW)]
    (row,) = summarise(done, now=NOW).graders
    assert row.active_left_s == 0 and row.forecast is None


def test_packet_status_and_task_status() -> None:
    packets = [
        PacketFact("p-out", "ana", NOW - timedelta(days=1), NOW + timedelta(days=1), 4, 2),
        PacketFact("p-late", "ben", NOW - timedelta(days=3), NOW - timedelta(days=1), 2, 1),
        PacketFact("p-back", "ana", NOW - timedelta(days=5), NOW - timedelta(days=4), 3, 0, 2),
        PacketFact("p-nodue", "ben", NOW - timedelta(days=9), None, 3, 3),
    ]
    tasks = [TaskFact("T1", "w", "d", 3), TaskFact("T2"), TaskFact("T3"), TaskFact("T4")]
    items = [
        ItemFact("ana", "T1", "submitted"),
        ItemFact("ben", "T1", "skipped"),
        ItemFact("ana", "T2", "submitted"),
        ItemFact("ben", "T2", "pending"),
        ItemFact("ana", "T3", "in_progress"),
    ]
    p = summarise(items, tasks, packets, now=NOW)
    status = {x.packet_id: x.status for x in p.packets}
    assert status == {"p-out": "out", "p-late": "overdue", "p-back": "returned", "p-nodue": "out"}
    assert p.packets[0].packet_id == "p-nodue"  # oldest first
    by_task = {t.task: (t.status, t.assigned, t.done, t.graders) for t in p.tasks}
    assert by_task == {
        "T1": ("graded", 2, 2, 2),
        "T2": ("grading", 2, 1, 2),
        "T3": ("not started", 1, 0, 1),
        "T4": ("not assigned", 0, 0, 0),
    }


def test_records_and_display() -> None:
    p = summarise(_items(), [TaskFact("T1")], now=NOW)
    rows = records(p)
    assert [r["grader"] for r in rows["graders"]] == ["ana", "ben", "all graders"]
    assert rows["graders"][0]["forecast"] == (NOW + timedelta(days=7)).isoformat()
    assert display("active_s", 3900) == "1 h 05 min"
    assert display("per_hour", 8) == "8.0"
    assert display("forecast", rows["graders"][0]["forecast"]) == "2026-12-09 12:00"
    assert format_duration(None) == "–" and format_duration(59.4) == "59 s"
    assert p.to_dict()["total"]["assigned"] == 8
    with pytest.raises(ValueError):
        summarise([], now=NOW, window_days=0)
