"""What a read skipped or did in a degraded way, typed: `ReportEntry` of a `ReportKind`."""
from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = ["ReportKind", "ReportEntry"]


class ReportKind(enum.Enum):
    CORRUPT = "corrupt"                # a corrupt byte range, skipped (salvage)
    TRUNCATED = "truncated"            # a final batch cut short
    ZEROS = "zeros"                    # a zero-filled (preallocated) tail
    GAP = "gap"                        # offsets missing between a partition's places (tiered and local)
    LEFTOVER = "leftover"              # a broker leftover file or folder, skipped
    DUPLICATE = "duplicate"            # a second copy of something read once (a symlink, a replica, a re-upload)
    MISMATCH = "mismatch"              # copies of one partition that disagree
    INDEX_FALLBACK = "index_fallback"  # an index not used (missing, insane, wrong): scanned instead
    BAD_VALUE = "bad_value"            # keys or values that could not be typed (value_format=): null, reason kept


@dataclass(frozen=True)
class ReportEntry:
    """Something skipped or read in a degraded way. ``start``/``end``: the byte range in ``file``
    (None for a whole file or folder); ``offset``: the batch's offset when known. Reads also as a
    mapping (``entry["start"]``, ``entry.get("reason")``)."""
    kind: ReportKind
    file: str
    message: str
    start: object = None
    end: object = None
    offset: object = None

    @property
    def reason(self):
        return self.message

    @property
    def is_damage(self):
        """A corrupt range or a truncated tail: data that could not be read."""
        return self.kind in (ReportKind.CORRUPT, ReportKind.TRUNCATED)

    def __getitem__(self, key):
        return getattr(self, key)

    def get(self, key, default=None):
        return getattr(self, key, default)

    def __contains__(self, key):
        return hasattr(self, key)
