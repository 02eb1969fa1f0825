"""Writing files so that a crash leaves the old content or the new one, never a mix.

Every file kafkafmt writes into a log dir goes through `write_atomic`: the bytes go to a temporary
file beside the target (``<name>.tmp``, as Kafka's own checkpoint writers name theirs), which is
flushed to disk and renamed over the target; the folder is then flushed so the rename survives a
power cut. Writers that must be tested for crashes call `crash_point()` after each durable step:
with ``KAFKAFMT_CRASH_AFTER=N`` in the environment the process ends (``os._exit``) right after the
N-th one, as if killed there. A writer streaming a large file writes it to `temp_path` (one per
process, so runs at once do not mix), which also removes what killed runs left there.
"""
from __future__ import annotations

import os

__all__ = ["write_atomic", "check_writable", "fsync_dir", "crash_point", "temp_path", "CRASH_ENV", "TMP_SUFFIX"]

CRASH_ENV = "KAFKAFMT_CRASH_AFTER"
TMP_SUFFIX = ".tmp"
_CRASH_EXIT = 86
_points = 0


def fsync_dir(path):
    """Flush a folder's entries (a rename into it) to disk, where the platform allows it."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_atomic(path, data, *, sync=True):
    """Write ``data`` (bytes-like, or a list of them) to ``path`` through ``<path>.tmp`` and a
    rename: readers and a crash see the old file or the new one."""
    path = os.fspath(path)
    tmp = path + TMP_SUFFIX
    parts = data if isinstance(data, (list, tuple)) else [data]
    try:
        with open(tmp, "wb") as f:
            for part in parts:
                f.write(part)
            if sync:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:                    # a failed write leaves nothing behind (a crash leaves the .tmp file)
            os.unlink(tmp)
        except OSError:
            pass
        raise
    if sync:
        fsync_dir(os.path.dirname(os.path.abspath(path)))
    crash_point()


def temp_path(target):
    """The temporary file beside ``target`` that this process writes before renaming it over the
    target (``.<name>.<pid>.tmp``), after deleting the ones of processes of this machine that no
    longer run (killed before their rename)."""
    folder, name = os.path.split(os.path.abspath(os.fspath(target)))
    prefix = f".{name}."
    try:
        names = os.listdir(folder)
    except OSError:
        names = []
    for f in names:
        pid = f[len(prefix):-len(TMP_SUFFIX)] if f.startswith(prefix) and f.endswith(TMP_SUFFIX) else ""
        if pid.isdigit() and int(pid) != os.getpid() and not _running(int(pid)):
            try:
                os.unlink(os.path.join(folder, f))
            except OSError:
                pass
    return os.path.join(folder, f"{prefix}{os.getpid()}{TMP_SUFFIX}")


def _running(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True          # not ours to signal: it runs
    return True


def check_writable(path):
    """Raise OSError (naming ``path``) when `write_atomic` could not write ``path``: its folder is
    missing or refuses a new file, or ``path`` is a folder. Checked by creating and removing the
    temporary file `write_atomic` would use, so a long job can fail before its work, not after."""
    path = os.fspath(path)
    if os.path.isdir(path):
        raise IsADirectoryError(21, "is a folder", path)
    tmp = path + TMP_SUFFIX
    existed = os.path.lexists(tmp)
    with open(tmp, "ab"):
        pass
    if not existed:
        os.unlink(tmp)


def crash_point():
    """A durable point: the test hook ends the process here when ``KAFKAFMT_CRASH_AFTER`` says so."""
    global _points
    value = os.environ.get(CRASH_ENV)
    if not value:
        return
    _points += 1
    if _points >= int(value):
        os._exit(_CRASH_EXIT)
