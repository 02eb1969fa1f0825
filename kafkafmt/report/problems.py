"""Problems found in a log dir: what `verify` lists, `stats` counts and `report` marks on its timelines."""
from __future__ import annotations

from dataclasses import dataclass

from kafkafmt.log import ReportKind


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

    def text(self):
        where = self.file
        if self.position is not None:
            where += f" position {self.position}"
            if self.end is not None and self.end > self.position:
                where += f"..{self.end}"
        if self.offset is not None:
            where += f" (offset {self.offset})"
        return f"{self.severity}: {where}: {self.message}"

    def to_json(self):
        return {"type": "problem", "severity": self.severity, "file": self.file, "position": self.position,
                "end": self.end, "offset": self.offset, "message": self.message}


def report_problem(entry, file=None):
    """A Problem from a `kafkafmt.log._notes.ReportEntry` of a read's ``report``; None for index
    fallbacks (the library warns about those itself)."""
    if entry.kind is ReportKind.INDEX_FALLBACK:
        return None
    f = file or entry.file or "?"
    start, end = entry.start, entry.end
    if entry.kind is ReportKind.ZEROS:
        return Problem("warning", f, f"zero-filled tail of {end - start} bytes (preallocated file)", start, end)
    if entry.kind is ReportKind.TRUNCATED:
        return Problem("error", f, f"truncated final batch: {end - start} bytes after the last complete batch",
                       start, end)
    if entry.kind is ReportKind.CORRUPT:
        return Problem("error", f, f"{entry.message}; {end - start} bytes skipped", start, end, entry.offset)
    if entry.kind in (ReportKind.GAP, ReportKind.MISMATCH):      # records missing, or copies that disagree
        return Problem("error", f, entry.message, offset=entry.offset)
    return Problem("warning", f, entry.message)
