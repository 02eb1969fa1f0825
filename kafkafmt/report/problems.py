"""Problems found in a log dir: what `verify` lists, `stats` counts and `report` marks on its timelines."""
from __future__ import annotations

from dataclasses import dataclass

from kafkafmt.log import ReportKind, damage_words, place_text


@dataclass
class Problem:
    """Something wrong (severity "error") or worth knowing (severity "warning") about the data.

    ``file`` the path or URL of the file, ``position`` .. ``end`` the byte range in it (when known),
    ``offset`` the offset of the record or batch concerned (when known)."""
    severity: str
    file: str
    message: str
    position: int | None = None
    end: int | None = None
    offset: int | None = None
    kind: object = None            # the `ReportKind` of the report entry it says, when it says one

    @property
    def loses_records(self):
        """An error that leaves records out of what is read (a gap, a corrupt stretch, copies that disagree)
        -- not a damaged copy whose records were read from an intact one."""
        return self.severity == "error" and self.kind not in (ReportKind.FROM_COPY, ReportKind.DAMAGED_COPY)

    def text(self):
        return f"{self.severity}: {place_text(self.file, self.position, self.end, self.offset)}: {self.message}"

    def to_json(self):
        return {"type": "problem", "severity": self.severity, "file": self.file, "position": self.position,
                "end": self.end, "offset": self.offset, "message": self.message}


def report_problem(entry, file=None):
    """A Problem from a `kafkafmt.log._notes.ReportEntry` of a read's ``report``; None for index
    fallbacks (the library warns about those itself), for copies of a partition that the copy
    read holds entirely (`copies_note` says them) and for copies read only where the copy read lacks offsets
    (the read says each such stretch: `ReportKind.GAP_FROM_COPY`, a warning)."""
    if entry.kind in (ReportKind.INDEX_FALLBACK, ReportKind.REPLICA, ReportKind.PARTLY_READ):
        return None
    f = file or entry.file or "?"
    start, end, kind = entry.start, entry.end, entry.kind
    if kind is ReportKind.ZEROS:
        return Problem("warning", f, damage_words(entry), start, end, kind=kind)
    if kind is ReportKind.TRUNCATED:
        return Problem("error", f, damage_words(entry), start, end, kind=kind)
    if kind is ReportKind.CORRUPT:
        return Problem("error", f, damage_words(entry, skipped=True), start, end, entry.offset, kind)
    if kind in (ReportKind.GAP, ReportKind.MISMATCH, ReportKind.INCARNATION, ReportKind.FROM_COPY,
                ReportKind.DAMAGED_COPY):
        # records missing, copies that disagree, copies of several incarnations none chosen; a damaged copy is a
        # problem too, whichever copy is read (its offsets were read from an intact one: `loses_records`)
        return Problem("error", f, entry.message, start, end, entry.offset, kind)
    return Problem("warning", f, entry.message, start, end, entry.offset, kind)


def copies_note(entries):
    """One line for the copies of partitions not read because the copy read holds all they hold
    (`ReportKind.REPLICA` entries of the discovery), or None when there are none."""
    n = sum(1 for e in entries if e.kind is ReportKind.REPLICA)
    return copies_text(n) if n else None


def copies_text(n):
    """How every command says that ``n`` copies of partitions were left unread."""
    return (f"{n} {'copy' if n == 1 else 'copies'} of partitions not read: the copy read of each holds every offset "
            f"{'it holds' if n == 1 else 'they hold'} (--replicas all reads every copy)")
