"""Running the command line from tests: ``kafkafmt ARGS`` on this work tree.

A run is `kafkafmt.cli.main` in this process (what ``python -m kafkafmt`` calls), with stdout and stderr
captured, the environment changes applied for its duration, and the warnings filters restored after it: the
same code, arguments and exit code as a child process, without starting an interpreter and importing kafkafmt
again for every command (most of a command's time on test data). ``process=True`` -- and any run whose
environment changes more than kafkafmt's own variables (``KAFKAFMT_*``), that is made to crash
(``KAFKAFMT_CRASH_AFTER``), or that starts Spark (``--engine spark``) -- runs ``python -m kafkafmt ARGS`` in a
child process instead.
"""
import contextlib
import io
import os
import pathlib
import subprocess
import sys
import traceback
import warnings

REPO = pathlib.Path(__file__).resolve().parent.parent

#: variables a command reads from the environment that a test may set for an in-process run
_OWN = "KAFKAFMT_"
#: what must run in a process of its own: a crash hook ends the process; Spark takes the process's JVM
_PROCESS_ENV = ("KAFKAFMT_CRASH_AFTER",)
_PROCESS_ARGS = ("--engine",)


def _environment(sample, env):
    """The variables to set (a value) or unset (None) for a run, as the child process would see them."""
    changes = {"KAFKAFMT_PROGRESS": None, "KAFKAFMT_DEBUG": None}
    if sample is not None:
        changes["KAFKAFMT_SAMPLE_DIR"] = str(sample)
    changes.update(env or {})
    return changes


def _needs_process(args, changes):
    return (any(not k.startswith(_OWN) or k in _PROCESS_ENV for k in changes)
            or any(str(a) in _PROCESS_ARGS for a in args))


def run(*args, sample=None, env=None, check=None, process=False):
    """Run ``kafkafmt ARGS``; returns a CompletedProcess (text). ``sample``: the folder the bundled sample
    is (generated) in; ``env``: environment variables to set; ``check``: the exit code it must have;
    ``process``: in a child process (``python -m kafkafmt``) whatever the arguments."""
    changes = _environment(sample, env)
    args = [str(a) for a in args]
    if process or _needs_process(args, changes):
        p = _child(args, changes)
    else:
        p = _here(args, changes)
    if check is not None:
        assert p.returncode == check, f"exit {p.returncode}, stderr:\n{p.stderr}\nstdout:\n{p.stdout[-2000:]}"
    return p


def _child(args, changes):
    e = dict(os.environ)
    for k, v in changes.items():
        if v is None:
            e.pop(k, None)
        else:
            e[k] = v
    e["PYTHONPATH"] = str(REPO) + os.pathsep + e.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-m", "kafkafmt", *args], capture_output=True, text=True, env=e,
                          timeout=120)


@contextlib.contextmanager
def _environ(changes):
    saved = {k: os.environ.get(k) for k in changes}
    try:
        for k, v in changes.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _here(args, changes):
    from kafkafmt.cli import main

    out, err = io.BytesIO(), io.BytesIO()
    stdout = io.TextIOWrapper(out, encoding="utf-8", write_through=True)
    stderr = io.TextIOWrapper(err, encoding="utf-8", write_through=True)
    with _environ(changes), warnings.catch_warnings(), contextlib.redirect_stdout(stdout), \
            contextlib.redirect_stderr(stderr):
        try:
            code = main(args)
        except SystemExit as exc:           # argparse's usage errors
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except Exception:                   # --debug lets errors through: the interpreter's traceback, exit 1
            traceback.print_exc(file=stderr)
            code = 1
        stdout.flush()
        stderr.flush()
    return subprocess.CompletedProcess([sys.executable, "-m", "kafkafmt", *args], code,
                                       out.getvalue().decode("utf-8"), err.getvalue().decode("utf-8"))
