"""Sizes as people read them: one convention for every figure kafkafmt prints (binary units, as
``verify``, ``stats``, ``report`` and the progress bars write them: 1 KiB = 1,024 bytes)."""
from __future__ import annotations

__all__ = ["human_bytes", "byte_unit", "BYTE_UNITS"]

BYTE_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


def human_bytes(n):
    """``373121`` -> ``"364.4 KiB"``: bytes in the largest binary unit that keeps the figure at or
    above 1 (whole bytes below 1 KiB); ``"-"`` for None."""
    if n is None:
        return "-"
    value = float(n)
    for unit in BYTE_UNITS:
        if abs(value) < 1024 or unit == BYTE_UNITS[-1]:
            return f"{int(value)} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def byte_unit(largest):
    """``(name, bytes)`` of the binary unit a scale up to ``largest`` bytes is drawn in (``("KiB", 1024)``
    for 373121): the unit `human_bytes` gives its largest figure, so a chart's axis and its table agree."""
    size, name = 1, BYTE_UNITS[0]
    for unit in BYTE_UNITS[1:]:
        if abs(largest or 0) < size * 1024:
            break
        size, name = size * 1024, unit
    return name, size
