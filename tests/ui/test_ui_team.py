"""The app in team mode (PostgreSQL): a grader's own login decides who grades.

Started with a grader's URL the window offers no "who is grading" choice, grades,
saves and resumes as that login, and never shows what the role excludes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtWidgets import QApplication
from sqlalchemy import create_engine, text

from gradercal.errors import GradercalError
from gradercal.ui import qt_workers
from gradercal.ui.qt_app import build_window
from gradercal.ui.qt_settings import QtAppSettings
from tests.support.team import Team, crew, pg_url
from tests.ui.test_ui_grading import assert_blind, go_to_task, press

__all__ = ["crew", "pg_url"]  # fixtures

pytestmark = pytest.mark.postgres


def _verdicts(crew: Team, user: str) -> dict[int, bool | None]:
    admin = create_engine(crew.admin)
    try:
        with admin.connect() as conn:
            rows = conn.execute(
                text(
                    "SELECT a.id, j.met FROM judgment j JOIN grader g ON g.id = j.grader_id "
                    "JOIN assignment a ON a.grader_id = j.grader_id "
                    "AND a.response_id = j.response_id WHERE g.name = :u"
                ),
                {"u": user},
            )
            return {int(aid): met for aid, met in rows}
    finally:
        admin.dispose()


def test_a_grader_login_grades_saves_and_resumes(qtbot: Any, crew: Team, tmp_path: Path) -> None:
    settings = QtAppSettings(tmp_path / "team.ini")
    window = build_window(crew.url(crew.ana), settings=settings)
    qtbot.addWidget(window)
    g = window.grading
    assert g is not None and g.grader == crew.ana  # no choice: the session user grades
    qtbot.waitUntil(lambda: g.current is not None, timeout=20_000)
    assert_blind(window)
    qtbot.waitExposed(window)
    window.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window)
    go_to_task(qtbot, window, "P1")  # the queue's order depends on the (random) login name
    assert g.current is not None
    aid = g.current.item.assignment_id
    g.rubric.table.setFocus()
    qtbot.waitUntil(lambda: QApplication.focusWidget() is g.rubric.table)
    press(qtbot, window, "M")
    qtbot.waitUntil(lambda: _verdicts(crew, crew.ana).get(aid) is True, timeout=10_000)
    qtbot.waitUntil(lambda: qt_workers.pending_jobs() == 0, timeout=20_000)
    # switching grader shows no list of people and no name field
    press(qtbot, window, "Ctrl+Shift+G")
    page = window.start_page
    assert page is not None and page.team_user == crew.ana
    assert not page.graders.isVisibleTo(page) and not page.new_name.isVisibleTo(page)
    assert page.graders.count() == 0
    window.close()
    window.store.db.dispose()

    again = build_window(crew.url(crew.ana), settings=QtAppSettings(tmp_path / "fresh.ini"))
    qtbot.addWidget(again)
    g2 = again.grading
    assert g2 is not None
    qtbot.waitUntil(lambda: g2.current is not None, timeout=20_000)
    assert g2.current.item.assignment_id == aid  # resumes where ana stopped
    assert g2.current.judgments["c1"].met is True
    qtbot.waitUntil(lambda: qt_workers.pending_jobs() == 0, timeout=20_000)
    again.close()
    again.store.db.dispose()


def test_a_grader_login_cannot_grade_as_someone_else(qtbot: Any, crew: Team) -> None:
    with pytest.raises(GradercalError, match="team mode"):
        build_window(crew.url(crew.ana), grader=crew.bob)
