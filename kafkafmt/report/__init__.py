"""A picture of a log dir for people who must judge it quickly (``kafkafmt report``).

``build(paths)`` reads log dirs, partition folders or tiered uploads (local or object storage) and
returns a `Report`: tables of what each topic, partition and segment holds (the figures of ``kafkafmt
stats``, `kafkafmt.report.figures`), records and transaction markers per minute, the problems ``kafkafmt
verify`` finds (`kafkafmt.report.checks`) placed in time, and each consumer group's lag as of the
disk's last write (`kafkafmt.report.lag`). ``write_html(report, path)`` draws it as one HTML file that
opens offline (Plotly, inlined: see `kafkafmt.report.html`)::

    import kafkafmt.report
    r = kafkafmt.report.build("/var/lib/kafka/data")
    r.table("lag").sort_values("lag")          # pandas DataFrames, for notebooks' own plots
    kafkafmt.report.write_html(r, "report.html")
"""
from __future__ import annotations

from kafkafmt.report.build import TABLES, Builder, Report, build
from kafkafmt.report.html import to_html, write_html
from kafkafmt.report.problems import Problem
from kafkafmt.report.tiered_audit import DEFAULT_STALE_COPY_MS, TieredAudit, TieredFinding, audit_tiered

__all__ = ["build", "Builder", "Report", "TABLES", "write_html", "to_html", "Problem", "audit_tiered", "TieredAudit",
           "TieredFinding", "DEFAULT_STALE_COPY_MS"]
