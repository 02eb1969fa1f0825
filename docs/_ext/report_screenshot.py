"""The screenshot of ``kafkafmt report`` on the bundled sample shown by docs/guide/report.md.

``python docs/_ext/report_screenshot.py`` renders the page in headless Chromium and writes
``docs/_static/report-sample.png`` (a palette PNG, small), with the page's fingerprint in a PNG text chunk:
a hash of what kafkafmt put on the page -- the report's tables and the page's text outside its scripts, not
plotly.js, whose releases come and go. ``tests/test_report.py`` recomputes the fingerprint from today's
code and fails when it differs, naming this command: the picture cannot go stale silently.
"""
from __future__ import annotations

import hashlib
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

DOCS = pathlib.Path(__file__).resolve().parent.parent
PNG = DOCS / "_static" / "report-sample.png"
TITLE = "kafkafmt report of the bundled sample"
WINDOW = (1200, 1500)
KEY = "kafkafmt-report-fingerprint"
COMMAND = "python docs/_ext/report_screenshot.py"


def make_page(workdir):
    """The sample's page, made as the guide's examples make it (a copy of the sample as ``kafka-logs`` in
    ``workdir``, relative paths): (the HTML file, the report's JSON)."""
    from kafkafmt.sample import sample_dir

    workdir = pathlib.Path(workdir)
    shutil.copytree(sample_dir(), workdir / "kafka-logs")
    env = dict(os.environ, PYTHONPATH=str(DOCS.parent) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    run = [sys.executable, "-m", "kafkafmt", "report", "kafka-logs", "--title", TITLE, "--no-progress", "--quiet"]
    subprocess.run(run + ["--to", "page.html"], cwd=workdir, env=env, check=True)
    doc = subprocess.run(run + ["--json"], cwd=workdir, env=env, check=True, capture_output=True, text=True).stdout
    return workdir / "page.html", json.loads(doc)


def fingerprint(page_html, report_json):
    """A hash of what kafkafmt put on the page: its tables (JSON) and its body's text outside scripts."""
    body = page_html.split("</head>", 1)[1]
    text = re.sub(r"<script\b.*?</script>", "", body, flags=re.S)
    h = hashlib.sha256(json.dumps(report_json, sort_keys=True).encode())
    h.update(text.encode())
    return h.hexdigest()


def chromium():
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if not exe:
        raise SystemExit("needs chromium (Debian's package; .ci/run installs it)")
    return exe


def shoot(page, png, workdir):
    """A screenshot of the top of ``page`` (WINDOW), as a palette PNG at ``png``."""
    from PIL import Image

    raw = pathlib.Path(workdir) / "raw.png"
    subprocess.run([chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
                    f"--user-data-dir={pathlib.Path(workdir) / 'profile'}", "--virtual-time-budget=10000",
                    f"--window-size={WINDOW[0]},{WINDOW[1]}", f"--screenshot={raw}", page.as_uri()],
                   check=True, capture_output=True, env=dict(os.environ, HOME=str(workdir)), timeout=300)
    return Image.open(raw).convert("RGB").quantize(colors=64, method=Image.Quantize.MEDIANCUT)


def saved_fingerprint(png=PNG):
    from PIL import Image

    with Image.open(png) as im:
        return im.text.get(KEY)


def main():
    from PIL import PngImagePlugin

    with tempfile.TemporaryDirectory() as tmp:
        page, doc = make_page(tmp)
        image = shoot(page, PNG, tmp)
        info = PngImagePlugin.PngInfo()
        info.add_text(KEY, fingerprint(page.read_text(encoding="utf-8"), doc))
        PNG.parent.mkdir(exist_ok=True)
        image.save(PNG, optimize=True, pnginfo=info)
    print(f"wrote {PNG} ({PNG.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
