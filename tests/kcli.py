"""Running the command line from tests: ``kafkafmt ARGS`` on this work tree.

A run is `kafkafmt.cli.main` in this process (what ``python -m kafkafmt`` calls), with stdout and stderr
captured, the environment changes applied for its duration, and the warnings filters restored after it: the
same code, arguments and exit code as a child process, without starting an interpreter and importing kafkafmt
again for every command (most of a command's time on test data). ``process=True`` -- and any run whose
environment changes more than kafkafmt's own variables (``KAFKAFMT_*``), that is made to crash
(``KAFKAFMT_CRASH_AFTER``), or that starts Spark (``--engine spark``) -- runs in a process of its own.

That process is forked from a *zygote*: one child of this process per test worker, started when first
needed, that imported kafkafmt and the libraries its commands load (pyarrow, pandas, the lakehouse
formats) and then only forks. Each run is a fresh process -- its own environment, working folder, exit code
(a crash hook's ``os._exit`` ends it alone), its exit handlers run and its output flushed at the end --
without the import (and the interpreter's teardown of what it imported) that would cost more than the work of
a crash matrix's step. A run that needs what the zygote cannot give (``--engine spark``,
an environment that changes what Python imports) is ``python -m kafkafmt`` as ever. The zygote stops with
this process (its PID is killed at exit).
"""
import contextlib
import io
import json
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


def run(*args, sample=None, env=None, check=None, process=False, cwd=None):
    """Run ``kafkafmt ARGS``; returns a CompletedProcess (text). ``sample``: the folder the bundled sample
    is (generated) in; ``env``: environment variables to set; ``check``: the exit code it must have;
    ``process``: in a child process (``python -m kafkafmt``) whatever the arguments; ``cwd``: where it runs."""
    changes = _environment(sample, env)
    args = [str(a) for a in args]
    with _cwd(cwd):
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
    if not any(str(a) in _PROCESS_ARGS for a in args) and all(k.startswith(_OWN) for k in changes):
        zygote = _zygote()
        if zygote is not None:
            return zygote.run(args, e)
    return subprocess.run([sys.executable, "-m", "kafkafmt", *args], capture_output=True, text=True, env=e,
                          timeout=TIMEOUT)


#: seconds a command may take
TIMEOUT = 120

_ZYGOTE_CODE = r"""
import io, json, os, sys, threading
sys.path.insert(0, sys.argv[1])
import kafkafmt.cli
for name in ("pyarrow", "pyarrow.parquet", "pyarrow.compute", "pandas", "deltalake", "pyiceberg.catalog.sql",
             "pyiceberg.table", "kafkafmt.lakehouse", "kafkafmt.recovery", "kafkafmt.report"):
    try:
        __import__(name)
    except Exception:
        pass
channel = os.fdopen(os.dup(1), "w")
os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
print(json.dumps({"ready": threading.active_count() == 1}), file=channel, flush=True)
for line in sys.stdin:
    req = json.loads(line)
    out, err = req["out"], req["err"]
    sys.stdout.flush(); sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        try:
            channel.close()
            os.chdir(req["cwd"])
            os.environ.clear()
            os.environ.update(req["env"])
            for fd, path in ((1, out), (2, err)):
                os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), fd)
            sys.stdin.close()
            sys.argv = ["kafkafmt"] + req["args"]
        except BaseException:
            os._exit(99)
        # the exit of a process that ran the command: its exit handlers, its output flushed -- not the teardown
        # of every module the zygote imported (seconds of the interpreter's finalization, for nothing)
        try:
            code = kafkafmt.cli.main(req["args"])
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except BaseException:
            import traceback
            traceback.print_exc()
            code = 1
        import atexit
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    print(json.dumps({"pid": pid}), file=channel, flush=True)
    _, status = os.waitpid(pid, 0)
    print(json.dumps({"code": os.waitstatus_to_exitcode(status)}), file=channel, flush=True)
"""


class _Zygote:
    """A process that imported kafkafmt and forks a child per run (see the module doc)."""

    def __init__(self):
        import atexit
        import tempfile

        self.dir = tempfile.mkdtemp(prefix="kcli-")
        self.proc = subprocess.Popen([sys.executable, "-c", _ZYGOTE_CODE, str(REPO)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, bufsize=1)
        atexit.register(self.stop)
        hello = json.loads(self.proc.stdout.readline() or "{}")
        self.ok = bool(hello.get("ready"))

    def run(self, args, env):
        import select

        out, err = os.path.join(self.dir, "out"), os.path.join(self.dir, "err")
        self.proc.stdin.write(json.dumps({"args": list(args), "env": env, "cwd": os.getcwd(), "out": out,
                                          "err": err}) + "\n")
        self.proc.stdin.flush()
        pid = json.loads(self.proc.stdout.readline())["pid"]
        ready, _, _ = select.select([self.proc.stdout], [], [], TIMEOUT)
        if not ready:
            os.kill(pid, 9)
            self.proc.stdout.readline()
            raise subprocess.TimeoutExpired(["kafkafmt", *args], TIMEOUT)
        code = json.loads(self.proc.stdout.readline())["code"]
        with open(out, encoding="utf-8") as o, open(err, encoding="utf-8") as e:
            return subprocess.CompletedProcess([sys.executable, "-m", "kafkafmt", *args], code, o.read(), e.read())

    def stop(self):
        import shutil

        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


_ZYGOTES = {}


def _zygote():
    """This process's zygote (started on first use), or None where forking is not safe."""
    if not hasattr(os, "fork"):
        return None
    z = _ZYGOTES.get(os.getpid())
    if z is None:
        z = _ZYGOTES[os.getpid()] = _Zygote()
    return z if z.ok else None


@contextlib.contextmanager
def _cwd(path):
    """Run in ``path`` (None: where the test is)."""
    if path is None:
        yield
        return
    here = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(here)


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
