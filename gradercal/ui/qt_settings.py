"""The app's remembered settings (QSettings): geometry, splitters, font size, grader, position.

Settings carry a schema version. A file written by a newer gradercal is read but never
written back, so an older app cannot clobber it. ``readonly`` settings (screenshot
mode, tests) never write at all.
"""

from __future__ import annotations

import hashlib
import os
from typing import Any

from PySide6.QtCore import QByteArray, QSettings

#: Version of the settings layout written by this release.
SETTINGS_VERSION = 1
#: Environment variable naming an INI file to use instead of the platform's settings.
ENV_VAR = "GRADERCAL_SETTINGS"
DEFAULT_FONT_PT = 11
MIN_FONT_PT, MAX_FONT_PT = 7, 32


class QtAppSettings:
    """A typed facade over ``QSettings``."""

    def __init__(self, path: str | os.PathLike[str] | None = None, *, readonly: bool = False):
        path = path if path is not None else os.environ.get(ENV_VAR) or None
        if path is not None:
            self._qs = QSettings(os.fspath(path), QSettings.Format.IniFormat)
        else:
            self._qs = QSettings(
                QSettings.Format.IniFormat, QSettings.Scope.UserScope, "gradercal", "gradercal"
            )
        stored = self._int("settings_version", 0)
        self.readonly = readonly or stored > SETTINGS_VERSION
        if not self.readonly and stored < SETTINGS_VERSION:
            self._migrate(stored)

    def _migrate(self, stored: int) -> None:
        # No older layout exists yet; future migrations go here, oldest first.
        self._qs.setValue("settings_version", SETTINGS_VERSION)
        self._qs.sync()

    # -- raw access -------------------------------------------------------------------------
    def _int(self, key: str, default: int) -> int:
        value = self._qs.value(key, default)
        try:
            return int(value) if isinstance(value, int | str | float) else default
        except (TypeError, ValueError):
            return default

    def _set(self, key: str, value: Any) -> None:
        if not self.readonly:
            self._qs.setValue(key, value)

    def sync(self) -> None:
        if not self.readonly:
            self._qs.sync()

    def file_name(self) -> str:
        return self._qs.fileName()

    # -- window layout ------------------------------------------------------------------------
    def bytes_value(self, key: str) -> QByteArray | None:
        v = self._qs.value(key)
        return v if isinstance(v, QByteArray) and not v.isEmpty() else None

    def set_bytes(self, key: str, value: QByteArray) -> None:
        self._set(key, value)

    # -- font size --------------------------------------------------------------------------
    @property
    def font_pt(self) -> int:
        return min(max(self._int("view/font_pt", DEFAULT_FONT_PT), MIN_FONT_PT), MAX_FONT_PT)

    @font_pt.setter
    def font_pt(self, value: int) -> None:
        self._set("view/font_pt", min(max(int(value), MIN_FONT_PT), MAX_FONT_PT))

    @property
    def auto_advance(self) -> bool:
        return str(self._qs.value("grading/auto_advance", "true")).lower() == "true"

    @auto_advance.setter
    def auto_advance(self, value: bool) -> None:
        self._set("grading/auto_advance", "true" if value else "false")

    @property
    def artifacts_shown(self) -> bool:
        """Whether the grading view shows its artifacts pane (F8 hides it on a small screen)."""
        return str(self._qs.value("grading/artifacts_shown", "true")).lower() == "true"

    @artifacts_shown.setter
    def artifacts_shown(self, value: bool) -> None:
        self._set("grading/artifacts_shown", "true" if value else "false")

    @property
    def guidelines_folded(self) -> bool:
        """Whether the grading view's Guidelines panel is folded to its title line (F7)."""
        return str(self._qs.value("grading/guidelines_folded", "false")).lower() == "true"

    @guidelines_folded.setter
    def guidelines_folded(self, value: bool) -> None:
        self._set("grading/guidelines_folded", "true" if value else "false")

    # -- the dashboard's headline judge ------------------------------------------------------
    #: What :meth:`headline_judge` returns for "the judge with the most verdicts", chosen.
    MOST_VERDICTS = ""

    def headline_judge(self, database: str, benchmark: str) -> str | None:
        """The judge the dashboard headlines for this database and benchmark, as chosen:
        a judge's name, :attr:`MOST_VERDICTS` (chosen to follow the count), or None
        (never chosen)."""
        v = self._qs.value(f"dashboard/{_key(database + chr(0) + benchmark)}/judge")
        if v is None:
            return None
        text = str(v)
        return self.MOST_VERDICTS if text == "*" else text

    def set_headline_judge(self, database: str, benchmark: str, judge: str | None) -> None:
        """Remember ``judge`` (None: the judge with the most verdicts) for this database."""
        self._set(f"dashboard/{_key(database + chr(0) + benchmark)}/judge", judge or "*")

    # -- identity and position ---------------------------------------------------------------
    @property
    def adjudicator(self) -> str | None:
        """The name adjudications are recorded under, as last saved (None: never chosen)."""
        v = self._qs.value("coordinator/adjudicator")
        return str(v).strip() or None if v else None

    @adjudicator.setter
    def adjudicator(self, name: str | None) -> None:
        self._set("coordinator/adjudicator", (name or "").strip())

    @staticmethod
    def _scope(database: str, benchmark: str, grader: str) -> str:
        digest = hashlib.sha256(f"{database}\0{benchmark}\0{grader}".encode()).hexdigest()[:16]
        return f"resume/{digest}"

    def last_grader(self, database: str) -> str | None:
        v = self._qs.value(f"graders/{_key(database)}")
        return str(v) if v else None

    def set_last_grader(self, database: str, grader: str) -> None:
        self._set(f"graders/{_key(database)}", grader)

    def resume(self, database: str, benchmark: str, grader: str, mode: str) -> tuple[int, int]:
        """(item id, row) where this grader stopped in ``mode``; (-1, 0) when unknown."""
        base = f"{self._scope(database, benchmark, grader)}/{mode}"
        return self._int(f"{base}_item", -1), self._int(f"{base}_row", 0)

    def set_resume(
        self, database: str, benchmark: str, grader: str, mode: str, item: int, row: int
    ) -> None:
        base = f"{self._scope(database, benchmark, grader)}/{mode}"
        self._set(f"{base}_item", int(item))
        self._set(f"{base}_row", int(row))

    def resume_task(self, database: str, benchmark: str, grader: str) -> str | None:
        v = self._qs.value(f"{self._scope(database, benchmark, grader)}/review_task")
        return str(v) if v else None

    def set_resume_task(self, database: str, benchmark: str, grader: str, task_id: str) -> None:
        self._set(f"{self._scope(database, benchmark, grader)}/review_task", task_id)


def _key(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]
