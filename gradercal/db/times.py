"""Times as the database hands them back.

Every time is stored in UTC. PostgreSQL returns it with its offset; SQLite returns it
without one. These two helpers make either an aware UTC time, once for every reader.
"""

from __future__ import annotations

from datetime import UTC, datetime

__all__ = ["stored_iso", "stored_utc"]


def stored_utc(when: datetime | None) -> datetime | None:
    """A stored time, timezone-aware (a naive one is UTC); None stays None."""
    if when is None:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def stored_iso(when: datetime | None) -> str | None:
    """A stored time as ISO 8601 with its offset; None stays None."""
    aware = stored_utc(when)
    return None if aware is None else aware.isoformat()
