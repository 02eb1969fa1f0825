"""The broker's lock on a log dir: ``<log dir>/.lock``.

Kafka's ``LogManager.lockLogDirs`` (core/src/main/scala/kafka/log/LogManager.scala) takes
``new FileLock(new File(dir, LockFileName)).tryLock()`` on ``.lock`` in every log dir at start-up and
holds it while running; ``FileLock.tryLock`` (server-common/.../util/FileLock.java) is
``FileChannel.tryLock``, which on Linux and macOS is a POSIX record lock (``fcntl(F_SETLK)``) --
the lock Python's ``fcntl.lockf`` takes, so each side sees the other's.
"""
from __future__ import annotations

import os
from contextlib import contextmanager

from kafkafmt.errors import LogDirLockedError

__all__ = ["LOCK_FILE", "lock_holder", "locked_log_dir"]

LOCK_FILE = ".lock"


def _try_lock(fd):
    import fcntl

    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError:
        return False


def lock_holder(log_dir):
    """Is ``log_dir``'s ``.lock`` held by another process (a running broker)? True / False; a log
    dir without a ``.lock`` file is not held."""
    path = os.path.join(os.fspath(log_dir), LOCK_FILE)
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        return False
    except PermissionError:
        return True
    try:
        if not _try_lock(fd):
            return True
        return False
    finally:
        os.close(fd)          # closing releases this process's lock


@contextmanager
def locked_log_dir(log_dir, force=False):
    """Hold ``log_dir``'s ``.lock`` while repairing it, so a broker cannot start meanwhile. Raises
    `LogDirLockedError` when another process holds it, unless ``force`` (then it goes on without
    the lock). A ``.lock`` created here is removed afterwards (the log dir is left as it was)."""
    path = os.path.join(os.fspath(log_dir), LOCK_FILE)
    created = not os.path.exists(path)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        if not force:
            raise LogDirLockedError(f"cannot open {path}: {exc.strerror}; give --force to go on without the lock",
                                    file=path) from None
        yield False
        return
    try:
        held = _try_lock(fd)
        if not held and not force:
            raise LogDirLockedError(f"{path} is locked by another process (a running broker?); stop it, or give "
                                    f"--force to repair anyway", file=path)
        yield held
    finally:
        if created:
            try:
                os.unlink(path)
            except OSError:
                pass
        os.close(fd)
