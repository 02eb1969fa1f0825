"""Running the command line from tests: ``python -m kafkafmt ARGS`` in a subprocess on this work tree."""
import os
import pathlib
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parent.parent


def run(*args, sample=None, env=None, check=None, cwd=None):
    """Run ``python -m kafkafmt ARGS``; returns CompletedProcess (text). ``sample``: the folder the
    bundled sample is (generated) in; ``check``: the exit code it must have; ``cwd``: where it runs."""
    e = dict(os.environ)
    e.pop("KAFKAFMT_PROGRESS", None)
    e.pop("KAFKAFMT_DEBUG", None)
    if sample is not None:
        e["KAFKAFMT_SAMPLE_DIR"] = str(sample)
    e["PYTHONPATH"] = str(REPO) + os.pathsep + e.get("PYTHONPATH", "")
    if env:
        e.update(env)
    p = subprocess.run([sys.executable, "-m", "kafkafmt", *map(str, args)], capture_output=True, text=True,
                       env=e, timeout=120, cwd=cwd)
    if check is not None:
        assert p.returncode == check, f"exit {p.returncode}, stderr:\n{p.stderr}\nstdout:\n{p.stdout[-2000:]}"
    return p
