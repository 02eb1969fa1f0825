"""`write_html`: a `Report` as one self-contained HTML file.

The charts are Plotly's (plotly.py, MIT, released often): its wheel carries plotly.js, which is
written once into the page (``plotly.offline.get_plotlyjs``; gzipped and unpacked by the browser's
DecompressionStream unless ``compress_js=False``), so the file opens without any network access, and
Plotly's hover texts, zoom and pan need no server. Vega-Lite through Altair was the other
candidate; inlining its JavaScript needs vl-convert (a 30 MB native wheel) and its specs carry the
data as rows (larger for heatmaps). plotly.js is ~4.6 MB as text, ~1.9 MB packed; the data is kept small by
aggregating: one heatmap row per partition (records per time bin, about 150 bins over the whole span)
and a detailed timeline only for the partitions with problems and the largest ones (`DETAIL_LIMIT`).
"""
from __future__ import annotations

import datetime
import html
import json

from kafkafmt._util.units import byte_unit, human_bytes
from kafkafmt.report.figures import below_log_start_text
from kafkafmt.report.lag import group_lag

__all__ = ["write_html", "to_html", "DETAIL_LIMIT", "HEATMAP_BINS", "HEATMAP_ROWS"]

DETAIL_LIMIT = 40        # partitions drawn with their own timeline (problems first, then the largest)
HEATMAP_BINS = 150       # time bins of the overview heatmaps
HEATMAP_ROWS = 40        # partitions a topic's heatmap draws a row each (the busiest); the others share one band
DETAIL_BINS = 300        # time bins of a partition's timeline
LAG_ROWS = 500           # lag rows in the table (largest first); the JSON has them all
SUMMARY_NAMES = 20       # partitions or copies named in a summary line
_NICE = [60_000 * m for m in (1, 2, 5, 10, 15, 30, 60, 120, 180, 360, 720, 1440, 2880, 10080, 20160, 43200)]


def _iso(ms):
    if ms is None:
        return "-"
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def _dt(ms):
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")


def _bin_width(span, bins):
    want = max(span / bins, 60_000)
    for w in _NICE:
        if w >= want:
            return w
    return int(-(-want // _NICE[-1]) * _NICE[-1])


def _esc(v):
    return html.escape("-" if v is None else str(v))


def _some(names, n=SUMMARY_NAMES):
    """The first ``n`` names, and how many more (the JSON has them all)."""
    more = len(names) - n
    return ", ".join(names[:n]) + (f" and {more:,} more" if more > 0 else "")


#: copies listed in the page's table of copies behind, damaged, diverged or of another incarnation
COPY_ROWS = 200


def _copies_section(copies):
    """[summary line, section] of the copies of partitions held in several places: how many copies are in
    each state, then a table of the copies that are not in sync (largest lag first; damaged, diverged and
    other incarnations before those merely behind); [] for partitions held once each."""
    held = {}
    for c in copies:
        held.setdefault((c["topic"], c["partition"]), []).append(c)
    several = [cs for cs in held.values() if len(cs) > 1]
    if not several:
        return []
    states = {}
    for cs in several:
        for c in cs:
            states[c["state"]] = states.get(c["state"], 0) + 1
    counts = ", ".join(f"{n:,} {state}" for state, n in sorted(states.items(), key=lambda x: -x[1]))
    odd = [c for cs in several for c in cs if c["state"] not in ("read", "in sync")]
    rank = {"damaged": 0, "diverged": 1, "other incarnation": 2, "behind": 3}
    odd.sort(key=lambda c: (rank.get(c["state"], 4), -(c["offsetLag"] or 0), c["topic"], c["partition"]))
    summary = (f"<p class='summary'>{len(several):,} partitions held in several places ({counts} copies)"
               + (f"; <a href='#copies'>{len(odd):,} copies behind, damaged or apart</a>" if odd else "") + ".</p>")
    if not odd:
        return [summary]
    rows = [[_esc(f"{c['topic']}-{c['partition']}"), _esc(c["logDir"] or "-"), _esc(c["state"]),
             "-" if c["offsetLag"] is None else f"{c['offsetLag']:,}",
             "-" if c["logEndOffset"] is None else f"{c['logEndOffset']:,}",
             "-" if c["highWatermark"] is None else f"{c['highWatermark']:,}", human_bytes(c["bytes"] or 0),
             _esc(c.get("detail") or "")] for c in odd[:COPY_ROWS]]
    more = (f"<p class='summary'>and {len(odd) - COPY_ROWS:,} more (the JSON report lists every copy).</p>"
            if len(odd) > COPY_ROWS else "")
    section = ("<h2 id='copies'>Copies behind, damaged or apart</h2>"
               + _table(["partition", "log dir", "state", "offsets behind", "log end", "high watermark", "size",
                         "why"], rows, right={3, 4, 5, 6}) + more)
    return [summary, section]


def _table(headers, rows, right=()):
    out = ["<div class='scroll'><table><thead><tr>" + "".join(f"<th>{_esc(h)}</th>" for h in headers) + "</tr></thead><tbody>"]
    for r in rows:
        cells = []
        for i, v in enumerate(r):
            cls = ' class="num"' if i in right else ""
            cells.append(f"<td{cls}>{v}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table></div>")
    return "\n".join(out)


# Plotly draws its texts as a subset of HTML (<br>, <b>, <a href>, entities): every text of a figure
# but the hover templates -- labels of categories, titles, hover texts, trace names -- is escaped, so
# that a group, client or transactional id, a topic or a file name shows as written
_TEXT_KEYS = {"x", "y", "text", "hovertext", "name", "labels", "title", "ticktext"}


def _plotly_text(value):
    if isinstance(value, str):
        return html.escape(value, quote=False)
    if isinstance(value, list):
        return [_plotly_text(v) for v in value]
    if isinstance(value, dict):
        return {k: _plotly_text(v) for k, v in value.items()}
    return value


def _escape_texts(spec):
    """The figure's JSON (``to_plotly_json``) with its displayed texts escaped for Plotly."""
    if isinstance(spec, list):
        return [_escape_texts(v) for v in spec]
    if not isinstance(spec, dict):
        return spec
    return {k: _plotly_text(v) if k in _TEXT_KEYS else _escape_texts(v) for k, v in spec.items()}


def _script_json(obj):
    """JSON for inside a <script> element: no ``<``, ``>`` or ``&`` (a name like ``</script>`` or
    ``<!--`` cannot end or bend the element), as ``\\u003c`` escapes JavaScript reads back."""
    text = json.dumps(obj, default=_default, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _anchor(name):
    return "p-" + "".join(c if c.isalnum() or c in "-_." else "_" for c in str(name))


class _Figure:
    """A Plotly figure as plotly.js takes it: ``data`` (its traces) and ``layout``, plain JSON (what plotly.py's
    ``Figure.to_plotly_json`` gives for the same figure, without building and validating its objects: a
    thousand-partition page draws hundreds of traces and shapes)."""

    def __init__(self, data=(), **layout):
        self.data = list(data)
        self.layout = {}
        self.update_layout(**layout)

    def update_layout(self, **layout):
        for k, v in layout.items():
            v = _titled(v) if k in ("xaxis", "yaxis") else {"text": v} if k == "title" else v
            if isinstance(v, dict) and isinstance(self.layout.get(k), dict):
                self.layout[k].update(v)
            else:
                self.layout[k] = v
        return self

    def add_trace(self, trace):
        self.data.append(trace)

    def add_vrect(self, x0, x1, fillcolor, opacity, line_width):
        """A band over the whole height (as plotly.py's ``add_vrect``)."""
        self.layout.setdefault("shapes", []).append({
            "fillcolor": fillcolor, "line": {"width": line_width}, "opacity": opacity, "type": "rect", "x0": x0,
            "x1": x1, "xref": "x", "y0": 0, "y1": 1, "yref": "y domain"})

    def add_vline(self, x, line_color, line_width, line_dash):
        """A line over the whole height (as plotly.py's ``add_vline``)."""
        self.layout.setdefault("shapes", []).append({
            "line": {"color": line_color, "dash": line_dash, "width": line_width}, "type": "line", "x0": x, "x1": x,
            "xref": "x", "y0": 0, "y1": 1, "yref": "y domain"})


def _titled(axis):
    """An axis's properties, its ``title`` as plotly.js takes it (``{"text": ...}``)."""
    if "title" in axis and not isinstance(axis["title"], dict):
        return {**axis, "title": {"text": axis["title"]}}
    return dict(axis)


def _trace(kind, **props):
    """A trace of type ``kind`` (``bar``, ``scatter``, ``heatmap``): its properties as plotly.js takes them
    (``marker_color`` -> ``marker.color``, a ``colorbar`` title -> ``{"text": ...}``)."""
    out = {}
    for k, v in sorted(props.items()):
        if k == "marker_color":
            out.setdefault("marker", {})["color"] = v
        elif k == "colorbar":
            out[k] = _titled(v)
        else:
            out[k] = v
    out["type"] = kind
    return out


class _Charts:
    def __init__(self):
        self.n = 0
        self.parts = []
        self._template = None

    def template(self):
        """The ``plotly_white`` template (plotly.py's), as every chart's layout holds it."""
        if self._template is None:
            import plotly.io as pio

            self._template = pio.templates["plotly_white"].to_plotly_json()
        return self._template

    def add(self, fig, height=None):
        self.n += 1
        div = f"chart{self.n}"
        if height is not None:
            fig.update_layout(height=height)
        fig.update_layout(margin=dict(l=60, r=20, t=40, b=40))
        fig.layout.setdefault("yaxis", {})["automargin"] = True
        layout = {"template": self.template(), **fig.layout}
        data, layout = _script_json(_escape_texts(fig.data)), _script_json(_escape_texts(layout))
        return (f'<div id="{div}" class="chart"></div><script>kfmtDraw(function(){{Plotly.newPlot("{div}",{data},'
                f'{layout},{{"responsive":true,"displaylogo":false}})}});</script>')


def _default(o):
    try:
        import numpy as np

        if isinstance(o, np.ndarray):
            return o.tolist()
        if isinstance(o, np.generic):
            return o.item()
    except ImportError:
        pass
    return str(o)


def _plotly_script(compress):
    """plotly.js for the page's head, and ``kfmtDraw(f)``: runs ``f`` once Plotly is there. Compressed:
    gzip + base64 (a third of the size), unpacked by the browser's DecompressionStream (Chrome 80,
    Firefox 113, Safari 16.4) and run as a script; plain: the text as it is."""
    import base64

    from plotly.offline import get_plotlyjs

    js = get_plotlyjs()
    if not compress:
        return ("<script>window.kfmtDraw=function(f){f()};</script>"
                f"<script type='text/javascript'>{js}</script>")
    packed = base64.b64encode(_gzip(js.encode("utf-8"))).decode("ascii")
    return ("<script>window.kfmtQueue=[];window.kfmtDraw=function(f){window.Plotly?f():window.kfmtQueue.push(f)};"
            f'(async function(){{const b=Uint8Array.from(atob("{packed}"),c=>c.charCodeAt(0));'
            "const t=await new Response(new Blob([b]).stream().pipeThrough(new DecompressionStream('gzip'))).text();"
            "const e=document.createElement('script');e.textContent=t;document.head.appendChild(e);"
            "const q=window.kfmtQueue;window.kfmtQueue=[];q.forEach(function(f){f()});})().catch(function(e){"
            "document.body.insertAdjacentHTML('afterbegin','<p style=\"color:#c00\">The charts need a browser "
            "with DecompressionStream (Chrome 80, Firefox 113, Safari 16.4; or write the page with --plain-js): '"
            "+e+'</p>')});</script>")


def _gzip(data):
    """gzip of ``data`` (no time in its header): ISA-L's where installed (ten times faster than zlib's level 9,
    a tenth larger), else zlib's."""
    try:
        from isal import igzip

        return igzip.compress(data, 3, mtime=0)
    except ImportError:  # pragma: no cover - isal is not available on every platform
        import gzip

        return gzip.compress(data, 9, mtime=0)


def to_html(report, title=None, compress_js=True):
    """The page as text (see `write_html`)."""
    t = report.tables
    charts = _Charts()
    title = title or "kafkafmt report: " + ", ".join(str(p) for p in report.paths)
    body = []
    parts = t["partitions"]
    n_err = sum(1 for p in t["problems"] if p["severity"] == "error")
    n_warn = len(t["problems"]) - n_err
    body.append(f"<h1>{_esc(title)}</h1>")
    body.append(f"<p class='summary'>{len(t['topics'])} topics, {len(parts)} partitions, "
                f"{sum(p['records'] for p in parts):,} records, {human_bytes(sum(p['fileBytes'] for p in parts))} in "
                f"{len(t['segments'])} segments ({sum(p['tieredSegments'] for p in parts)} tiered); "
                f"last write (largest record timestamp) <b>{_iso(report.last_write)} UTC</b>; "
                f"<a href='#problems'>{n_err} errors, {n_warn} warnings</a>.</p>")
    below = sum(p.get("belowLogStart") or 0 for p in parts)
    if below:
        where = _some([f"{p['name']} ({p['belowLogStart']:,})" for p in parts if p.get("belowLogStart")])
        body.append(f"<p class='summary'>{_esc(below_log_start_text(below))}: {_esc(where)}.</p>")
    copies = _copies_section(t.get("copies") or [])
    if copies:
        body.append(copies[0])
    body.append("<nav><a href='#topics'>Topics</a> <a href='#lag'>Consumer lag</a> <a href='#activity'>Activity</a> "
                "<a href='#transactions'>Transactions</a> <a href='#problems'>Problems</a> "
                + ("<a href='#copies'>Copies</a> " if copies[1:] else "")
                + "<a href='#partitions'>Partition timelines</a></nav>")

    # -- topics
    body.append("<h2 id='topics'>Topics</h2>")
    topics = sorted(t["topics"], key=lambda r: -r["fileBytes"])
    rows = [[_esc(r["topic"]), r["partitions"], f"{r['records']:,}", human_bytes(r["fileBytes"]),
             "-" if r["compressionRatio"] is None else f"{r['compressionRatio']:.2f}",
             _esc(", ".join(f"{c}:{v['batches']}" for c, v in r["codecs"].items()) or "-"),
             f"{_iso(r['firstTimestamp'])} .. {_iso(r['lastTimestamp'])}",
             f"{r['committedTransactions']} / {r['abortedTransactions']}"] for r in topics]
    body.append(_table(["topic", "partitions", "records", "size", "ratio", "codecs (batches)", "time span (UTC)",
                        "txn committed / aborted"], rows, right={1, 2, 3, 4}))
    if topics:
        unit, size = byte_unit(max(r["fileBytes"] for r in topics))      # binary units, as the table's
        fig = _Figure([_trace("bar", y=[r["topic"] for r in topics], x=[r["fileBytes"] / size for r in topics],
                              orientation="h", name="size on disk",
                              hovertext=[f"{human_bytes(r['fileBytes'])}, {r['records']:,} records" for r in topics])])
        fig.update_layout(title=f"Size on disk per topic ({unit})", yaxis=dict(autorange="reversed"),
                          xaxis=dict(title=unit))
        body.append(charts.add(fig, height=max(250, 22 * len(topics) + 100)))

    # -- lag
    body.append("<h2 id='lag'>Consumer lag at the last write</h2>")
    lag = t["lag"]
    if lag:
        body.append("<p>Each group's committed offset (replayed from __consumer_offsets) against the "
                    "partition's log end offset on this disk: the records on disk (their last offset + 1), else "
                    "the log dir's checkpoint files (the high watermark in replication-offset-checkpoint, else "
                    "recovery-point-offset-checkpoint); the per-partition table says which. A group's total lag "
                    "adds the lags that are known and not negative.</p>")
        groups = group_lag(lag)
        unknown = sum(g["unknown"] for g in groups.values())
        beyond = sum(g["beyond"] for g in groups.values())
        lagging = {name: g["total"] for name, g in groups.items() if g["total"] > 0}
        notes = []
        if unknown:
            notes.append(f"{unknown:,} of {len(lag):,} partitions' lag is <b>unknown</b>: no segment holds records "
                         f"and no checkpoint file gives their log end")
        if beyond:
            notes.append(f"{beyond:,} committed {'offset lies' if beyond == 1 else 'offsets lie'} <b>beyond the log "
                         f"end</b> on this disk (records the disk lost, or a copy behind the leader's): not lag, left "
                         f"out of the totals")
        if not lagging and not unknown and not beyond:
            body.append("<p><b>Every group has caught up</b> with every partition on this disk (lag 0).</p>")
        elif not lagging:
            notes.insert(0, "No known lag above 0")
        body += [f"<p>{n}.</p>" for n in notes]
        if lagging:
            names = sorted(lagging, key=lambda g: -lagging[g])
            fig = _Figure([_trace("bar", y=names, x=[lagging[g] for g in names], orientation="h",
                                  marker_color="#d62728", name="lag")])
            fig.update_layout(title="Total lag per consumer group (records; known lags, none negative)",
                              yaxis=dict(autorange="reversed"))
            body.append(charts.add(fig, height=max(250, 22 * len(names) + 100)))
        body.append(_table(["group", "partitions", "total lag", "largest lag", "beyond the log end",
                            "log end unknown"],
                           [[_esc(name), g["partitions"], f"{g['total']:,}", _esc(g["largest"]), g["beyond"],
                             g["unknown"]]
                            for name, g in sorted(groups.items(), key=lambda kv: -kv[1]["total"])],
                           right={1, 2, 3, 4, 5}))
        body.append("<h3>Per partition (largest lag first)</h3>")
        rows = sorted(lag, key=lambda r: -(r["lag"] if r["lag"] is not None else -1))[:LAG_ROWS]
        body.append(_table(["group", "topic", "partition", "committed offset", "log end offset", "log end from",
                            "lag", "committed at (UTC)"],
                           [[_esc(r["group"]), _esc(r["topic"]), r["partition"], r["committedOffset"],
                             _esc(r["logEndOffset"]), _esc(r.get("logEndSource") or "unknown"),
                             _esc("unknown" if r["lag"] is None else r["lag"]), _iso(r["commitTimestamp"])]
                            for r in rows],
                           right={2, 3, 4, 6}))
        if len(lag) > LAG_ROWS:
            body.append(f"<p>{len(lag) - LAG_ROWS} more rows in the JSON (--json).</p>")
    else:
        body.append("<p>No committed offsets found (no __consumer_offsets partitions under the paths).</p>")

    # -- activity heatmaps
    body.append("<h2 id='activity'>Activity: records per time bin and partition</h2>")
    tl = t["timeline"]
    if tl:
        by_topic = {}
        for p in parts:
            by_topic.setdefault(p["topic"], []).append(p)
        rows_of = {}
        for r in tl:
            rows_of.setdefault(r["partition"], []).append(r)
        body.append(f"<p>Each topic over its own time span (bins of about 1/{HEATMAP_BINS} of it). A topic of more "
                    f"than {HEATMAP_ROWS} partitions shows its {HEATMAP_ROWS} busiest (most records) a row each, and "
                    f"the others in one band: their mean per partition. Click a partition's name in the problems "
                    f"table for its own timeline.</p>")
        for topic in sorted(by_topic):
            shown = [p for p in by_topic[topic] if p["name"] in rows_of]
            if shown:
                fig, rows = _heatmap(topic, shown, rows_of)
                body.append(charts.add(fig, height=max(220, 16 * rows + 160)))
    else:
        body.append("<p>No records with timestamps.</p>")

    # -- transactions
    body.append("<h2 id='transactions'>Transactions</h2>")
    tx = t["transactions"]
    if tx:
        t0 = min(r["minute"] for r in tx)
        t1 = max(r["minute"] for r in tx) + 60_000
        w = _bin_width(t1 - t0, HEATMAP_BINS)
        t0 -= t0 % w
        com, ab = {}, {}
        for r in tx:
            b = int((r["minute"] - t0) // w)
            com[b] = com.get(b, 0) + r["committed"]
            ab[b] = ab.get(b, 0) + r["aborted"]
        bins = sorted(set(com) | set(ab))
        xs = [_dt(t0 + b * w) for b in bins]
        fig = _Figure([_trace("bar", x=xs, y=[com.get(b, 0) for b in bins], name="committed", marker_color="#2ca02c"),
                       _trace("bar", x=xs, y=[ab.get(b, 0) for b in bins], name="aborted", marker_color="#d62728")])
        fig.update_layout(barmode="stack", title=f"Transaction markers per {w // 60_000} min (all partitions)")
        body.append(charts.add(fig, height=320))
    else:
        body.append("<p>No transaction markers.</p>")

    body += _tiered_section(t)

    # -- problems
    body.append("<h2 id='problems'>Problems (as kafkafmt verify lists them)</h2>")
    probs = t["problems"]
    detail = _detail_partitions(parts, probs)
    if probs:
        rows = []
        for p in probs:
            where = _esc(p["partition"])
            if p["partition"] in detail:
                where = f"<a href='#{_anchor(p['partition'])}'>{where}</a>"
            pos = "-" if p["position"] is None else (f"{p['position']}..{p['end']}" if p["end"] is not None
                                                     else str(p["position"]))
            rows.append([f"<span class='{p['severity']}'>{p['severity']}</span>", where, _esc(p["file"]), pos,
                         _esc(p["offset"]), _iso(p["time"]), _esc(p["message"])])
        body.append(_table(["severity", "partition", "file", "bytes", "offset", "near (UTC)", "message"], rows,
                           right={3, 4}))
    else:
        body.append("<p>None: every check passed.</p>")

    # -- copies
    if copies[1:]:
        body.append(copies[1])

    # -- partition timelines
    body.append("<h2 id='partitions'>Partition timelines</h2>")
    body.append(f"<p>{len(detail)} of {len(parts)} partitions (those with problems first, then the largest): records "
                f"per time bin, segments as bands (blue local, orange tiered) starting at their base offset, "
                f"problems as red (error) and orange (warning) marks with their byte positions.</p>")
    segs_of, tl_of, probs_of = {}, {}, {}
    for s in t["segments"]:
        segs_of.setdefault(s["partition"], []).append(s)
    for r in tl:
        tl_of.setdefault(r["partition"], []).append(r)
    for p in probs:
        probs_of.setdefault(p["partition"], []).append(p)
    for name in detail:
        body.append(f"<h3 id='{_anchor(name)}'>{_esc(name)}</h3>")
        body.append(charts.add(_partition_figure(name, tl_of.get(name, []), segs_of.get(name, []),
                                                 probs_of.get(name, [])), height=300))

    css = ("body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}table{border-collapse:collapse;"
           "font-size:13px;margin:.5em 0}td,th{border:1px solid #ddd;padding:2px 6px;text-align:left}"
           "td.num{text-align:right}th{background:#f3f3f3}.error{color:#c00;font-weight:bold}.warning{color:#b60}"
           "nav a{margin-right:1em}.chart{width:100%}.scroll{max-height:420px;overflow:auto;display:inline-block}")
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{_esc(title)}</title><style>{css}</style>"
            f"{_plotly_script(compress_js)}</head><body>\n" + "\n".join(body)
            + "\n</body></html>\n")


def _tiered_section(t):
    """Tiered storage: the bytes per topic __remote_log_metadata and the uploads hold, the audit's findings."""
    if not t.get("remote") and not t.get("tiered"):
        return []
    out = ["<h2 id='tiered'>Tiered storage (__remote_log_metadata against the uploads)</h2>"]
    rows = [[_esc(r["topic"]), r["remoteSegments"], human_bytes(r["remoteBytes"]), r["uploads"],
             human_bytes(r["uploadBytes"]), r["missingUploads"], r["orphanUploads"], r["wrongSizes"], r["staleCopies"],
             r["offsetGaps"]] for r in t.get("remote", [])]
    out.append(_table(["topic", "remote segments", "remote bytes", "uploads", "upload bytes", "missing", "orphan",
                       "wrong size", "stale copies", "offset gaps"], rows, right=set(range(1, 10))))
    if t.get("tiered"):
        rows = [[_esc(f["check"]), _esc(f"{f['topic']}-{f['partition']}"), _esc(f["segmentId"]),
                 _esc(f"{f['startOffset']}..{f['endOffset']}"), _esc(f["file"]), _esc(f["message"])]
                for f in t["tiered"]]
        out.append(_table(["finding", "partition", "segment id", "offsets", "file", "message"], rows))
    else:
        out.append("<p>Every segment the metadata names as uploaded is there, at its size; no other upload.</p>")
    return out


def _heatmap(topic, parts, rows_of):
    """Records per time bin of a topic's partitions (the `HEATMAP_ROWS` busiest, in partition order; the
    others as one band, their mean per partition), over the topic's own time span (a topic written in
    minutes is not a sliver of a log dir written over days); the colour scale from 0. Returns (figure,
    rows drawn)."""
    minutes = [r["minute"] for p in parts for r in rows_of[p["name"]]]
    t0, t1 = min(minutes), max(minutes) + 60_000
    w = _bin_width(t1 - t0, HEATMAP_BINS)
    t0 -= t0 % w
    nbins = max(1, int(-(-(t1 - t0) // w)))

    def row(names):
        out = [None] * nbins
        for n in names:
            for r in rows_of[n]:
                b = int((r["minute"] - t0) // w)
                out[b] = (out[b] or 0) + r["records"]
        return out

    total = {p["name"]: sum(r["records"] for r in rows_of[p["name"]]) for p in parts}
    busiest = {p["name"] for p in sorted(parts, key=lambda p: -total[p["name"]])[:HEATMAP_ROWS]}
    shown = [p for p in parts if p["name"] in busiest]
    rest = [p["name"] for p in parts if p["name"] not in busiest]
    z = [row([p["name"]]) for p in shown]
    band = None
    if rest:
        band = [None if v is None else round(v / len(rest), 2) for v in row(rest)]
    labels = _row_labels(shown)
    title = f"{topic}: records per {w // 60_000} min"
    if band is not None:             # the last row (one trace: plotly.js draws no second heatmap of other rows)
        z.append(band)
        labels.append(f"the other {len(rest)} (mean)")
        title += f" -- the {len(shown)} busiest of {len(parts)} partitions, the other {len(rest)} as their mean"
    top = max((v for r in z for v in r if v is not None), default=0)
    # cells placed by x0 + dx (a bin's width in ms): one bin still has its width, the axis its range
    fig = _Figure([_trace("heatmap", z=z, x0=_dt(t0 + w // 2), dx=w, y=labels, colorscale=_VIRIDIS,
                          zmin=0, zmax=max(top, 1), colorbar=dict(title="records"),
                          hovertemplate="%{y}<br>%{x}<br>%{z} records<extra></extra>")])
    fig.update_layout(title=title, yaxis=dict(autorange="reversed", type="category", dtick=1),
                      xaxis=dict(type="date", range=[_dt(t0), _dt(t0 + nbins * w)]))
    return fig, len(z)


#: plotly's Viridis, as its colour scale stops (what plotly.py makes of ``colorscale="Viridis"``)
_VIRIDIS = [[i / 9, c] for i, c in enumerate(("#440154", "#482878", "#3e4989", "#31688e", "#26828e", "#1f9e89",
                                               "#35b779", "#6ece58", "#b5de2b", "#fde725"))]


def _row_labels(parts):
    """A heatmap's row labels: ``topic-N`` (no log dir repeated on every row), and the log dir's folder name
    beside the copies of one partition read from several (``--replicas all``)."""
    labels = [f"{p['topic']}-{p['partition']}" for p in parts]
    twice = {lab for lab in labels if labels.count(lab) > 1}
    return [f"{lab} ({_log_dir_name(p)})" if lab in twice else lab for lab, p in zip(labels, parts)]


def _log_dir_name(part):
    path = str(part.get("path") or "").rstrip("/")
    return path.rsplit("/", 2)[-2] if path.count("/") >= 1 else path


def _detail_partitions(parts, probs):
    with_problems = []
    for p in probs:
        if p["partition"] is not None and p["partition"] not in with_problems:
            with_problems.append(p["partition"])
    chosen = with_problems[:DETAIL_LIMIT]
    for p in sorted(parts, key=lambda p: -p["records"]):
        if len(chosen) >= DETAIL_LIMIT:
            break
        if p["name"] not in chosen:
            chosen.append(p["name"])
    return chosen


def _partition_figure(name, timeline, segments, problems):
    fig = _Figure()
    times = [r["minute"] for r in timeline] + [s["firstTimestamp"] for s in segments if s["firstTimestamp"]]
    times += [p["time"] for p in problems if p["time"] is not None]
    if not times:
        fig.update_layout(title=f"{name}: no timestamps")
        return fig
    t0, t1 = min(times), max(times) + 60_000
    w = _bin_width(t1 - t0, DETAIL_BINS)
    t0 -= t0 % w
    counts = {}
    for r in timeline:
        b = int((r["minute"] - t0) // w)
        counts[b] = counts.get(b, 0) + r["records"]
    bins = sorted(counts)
    fig.add_trace(_trace("bar", x=[_dt(t0 + b * w + w // 2) for b in bins], y=[counts[b] for b in bins],
                         name=f"records / {w // 60_000} min", marker_color="#4c78a8"))
    ymax = max(counts.values()) if counts else 1
    for s in segments:
        if s["firstTimestamp"] is None:
            continue
        color = "#ff7f0e" if s["tiered"] else "#1f77b4"
        fig.add_vrect(x0=_dt(s["firstTimestamp"]), x1=_dt(max(s["lastTimestamp"], s["firstTimestamp"] + 1000)),
                      fillcolor=color, opacity=0.08, line_width=0)
        fig.add_vline(x=_dt(s["firstTimestamp"]), line_color=color, line_width=1, line_dash="dot")
    if segments:
        placed = [s for s in segments if s["firstTimestamp"] is not None]
        fig.add_trace(_trace("scatter", x=[_dt(s["firstTimestamp"]) for s in placed], y=[ymax * 1.05] * len(placed),
                             mode="markers", marker=dict(color=["#ff7f0e" if s["tiered"] else "#1f77b4"
                                                                for s in placed], size=8, symbol="triangle-down"),
                             name="segment starts",
                             hovertext=[f"segment {s['baseOffset']} ({'tiered' if s['tiered'] else 'local'}), "
                                        f"{s['records']:,} records, {human_bytes(s['fileBytes'])}" for s in placed],
                             hoverinfo="text"))
    placed = [p for p in problems if p["time"] is not None]
    if placed:
        fig.add_trace(_trace(
            "scatter", x=[_dt(p["time"]) for p in placed], y=[ymax * 0.5] * len(placed), mode="markers",
            name="problems", marker=dict(color=["#d62728" if p["severity"] == "error" else "#ff7f0e" for p in placed],
                                         size=12, symbol="x"),
            hovertext=[f"{p['severity']}: {p['file'].rsplit('/', 1)[-1]} bytes {p['position']}.."
                       f"{p['end']} offset {p['offset']}: {p['message']}"[:300] for p in placed],
            hoverinfo="text"))
    fig.update_layout(title=name, showlegend=True, bargap=0)
    return fig


def write_html(report, path, title=None, compress_js=True):
    """Write a `Report` as one self-contained HTML page (plotly.js inlined: opens offline).

    Parameters
    ----------
    report : Report
        What `kafkafmt.report.build` returned.
    path : str or path-like
        The file to write (replaced).
    title : str, optional
        The page's title (default: the paths).
    compress_js : bool
        plotly.js gzipped in the page (about 1.5 MB instead of 4.6 MB) and unpacked by the browser
        (DecompressionStream: Chrome 80, Firefox 113, Safari 16.4 and later); False writes it as text,
        for older browsers.

    Returns
    -------
    int
        The size of the page in bytes.
    """
    from kafkafmt._util.durable import write_atomic

    data = to_html(report, title, compress_js).encode("utf-8")
    write_atomic(path, data)
    return len(data)
