"""What the packet modules share: the sealing key, the conflict entities, a judgment's
comparable value and its checks, and small conversions.
"""

from __future__ import annotations

import hashlib
import secrets
import sqlite3
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy.exc import IntegrityError

from gradercal.db import models as m
from gradercal.db.session import Database
from gradercal.model import CriterionKind
from gradercal.ops.packet_format import PacketError, canonical_json

#: ``database_info`` key of the secret that seals this database's packets.
PACKET_KEY = "packet_key"
#: ``revision.entity`` of a judgment value from a packet that conflicted (kept, not applied).
CONFLICT_ENTITY = "packet_conflict"
#: ``revision.entity`` of a task review from a packet that conflicted.
REVIEW_CONFLICT_ENTITY = "packet_conflict_review"
#: Longest free text (rationale, note, comment) accepted from a packet.
MAX_TEXT = 200_000

FIELDS = ("met", "level", "confidence", "rationale", "unclear", "unclear_note")


def packet_key(db: Database, *, create: bool) -> bytes | None:
    """The database's packet sealing key (created on first export)."""
    with db.read() as s:
        row = s.get(m.DatabaseInfo, PACKET_KEY)
        if row is not None:
            return bytes.fromhex(row.value)
    if not create:
        return None
    try:
        with db.write() as s:
            if s.get(m.DatabaseInfo, PACKET_KEY) is None:
                s.add(m.DatabaseInfo(key=PACKET_KEY, value=secrets.token_hex(32)))
    except IntegrityError:  # another client created it at the same moment
        pass
    return packet_key(db, create=False)


def response_digest(text: str, answer: Any) -> str:
    """sha256 of a response's content (never its model or id)."""
    return hashlib.sha256(canonical_json([text, answer])).hexdigest()


def judgment_value(row: Any) -> dict[str, Any]:
    """A judgment's comparable value."""
    conf = getattr(row, "confidence", None)
    return {
        "met": None if row.met is None else bool(row.met),
        "level": None if row.level is None else int(row.level),
        "confidence": None if conf is None else float(conf),
        "rationale": row.rationale,
        "unclear": bool(row.unclear),
        "unclear_note": row.unclear_note,
    }


def checked_value(v: dict[str, Any], kind: str, levels: int, where: str) -> None:
    if kind != CriterionKind.JUDGMENT.value:
        raise PacketError(f"{where}: the packet judges an auto criterion")
    top = max(levels, 2) - 1
    if v["level"] is not None:
        if not 0 <= v["level"] <= top:
            raise PacketError(f"{where}: level {v['level']} is outside 0…{top}")
        if v["met"] is not None and v["met"] != (v["level"] == top):
            raise PacketError(f"{where}: met disagrees with level {v['level']}")
    if v["confidence"] is not None and not 0.0 <= v["confidence"] <= 1.0:
        raise PacketError(f"{where}: confidence must be between 0 and 1")


def iso_or_none(dt: datetime | None) -> str | None:
    return None if dt is None else dt.isoformat()


def no_nul(value: Any) -> Any:
    """``value`` with NUL characters removed from every string in it."""
    if isinstance(value, str):
        return value.replace("\x00", "")
    if isinstance(value, dict):
        return {no_nul(k): no_nul(v) for k, v in value.items()}
    if isinstance(value, list):
        return [no_nul(v) for v in value]
    return value


def finish_sqlite(path: Path) -> None:
    """Fold the WAL into the file so that the file alone is the whole database."""
    conn = sqlite3.connect(str(path))
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    wal = path.with_name(path.name + "-wal")
    if wal.exists() and wal.stat().st_size > 0:
        raise PacketError(f"could not finish {path.name}: its write-ahead log is not empty")
