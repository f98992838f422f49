"""Grading packets: export one grader's work to a file, grade it offline, merge it back.

:func:`export_packet` (:mod:`gradercal.db.packets.export`) writes one ``.gcpkg`` file
(format: :mod:`gradercal.ops.packet_format`) holding a small gradercal database with only
what the grader needs, models blinded; its manifest names the source database and
carries a seal under a key kept in that database.

:func:`open_packet` (:mod:`gradercal.db.packets.session`) unpacks a packet into a working
folder next to it and returns a :class:`PacketSession` whose ``db`` the app grades into;
:meth:`PacketSession.save` packs the working database back into the file (atomically).

:func:`merge_packet` (:mod:`gradercal.db.packets.merge`) brings the work back, in one
transaction, after checking the packet (:mod:`gradercal.db.packets.read`: nothing in a
packet is trusted) against its manifest, its seal, the database it came from and the
database's current content. Changed on both sides since the export: a **conflict** — the
database keeps its value, the packet's is stored beside it and reported; nothing is
overwritten. Merging the same packet again changes nothing.

:func:`list_conflicts` lists the conflicts kept, :func:`resolve_conflict` settles one
(:mod:`gradercal.db.packets.conflicts`). :func:`packet_info`
(:mod:`gradercal.db.packets.read`) checks a packet file and describes it. What several of
these modules share (the sealing key, the conflict entities, a judgment's comparable
value and its checks) is in :mod:`gradercal.db.packets._common`.
"""

from __future__ import annotations

from gradercal.db.packets._common import (
    CONFLICT_ENTITY,
    MAX_TEXT,
    PACKET_KEY,
    REVIEW_CONFLICT_ENTITY,
    response_digest,
)
from gradercal.db.packets.conflicts import (
    KEEP_CHOICES,
    RESOLUTION_ENTITY,
    Resolution,
    list_conflicts,
    resolve_conflict,
)
from gradercal.db.packets.export import ExportReport, export_packet
from gradercal.db.packets.merge import (
    ASSIGNMENT_MERGE_ENTITY,
    REVIEW_MERGE_ENTITY,
    MergeConflict,
    MergeReport,
    merge_packet,
)
from gradercal.db.packets.read import READ_DEADLINE_S, packet_info
from gradercal.db.packets.session import STATE, PacketSession, default_workdir, open_packet

__all__ = [
    "ASSIGNMENT_MERGE_ENTITY",
    "CONFLICT_ENTITY",
    "KEEP_CHOICES",
    "MAX_TEXT",
    "PACKET_KEY",
    "READ_DEADLINE_S",
    "RESOLUTION_ENTITY",
    "REVIEW_CONFLICT_ENTITY",
    "REVIEW_MERGE_ENTITY",
    "STATE",
    "ExportReport",
    "MergeConflict",
    "MergeReport",
    "PacketSession",
    "Resolution",
    "default_workdir",
    "export_packet",
    "list_conflicts",
    "merge_packet",
    "open_packet",
    "packet_info",
    "resolve_conflict",
    "response_digest",
]
