"""The locks a recovery respects: the broker's on a log dir (``<log dir>/.lock``, held while it repairs),
and a `kafkafmt.LogWriter`'s on a partition folder. The locks themselves -- Kafka's ``FileLock`` on
``.lock`` is a POSIX record lock, which ``fcntl.lockf`` takes too -- are `kafkafmt._util.locks`', shared
with the writer.
"""
from __future__ import annotations

import os
from contextlib import contextmanager

from kafkafmt._util.locks import LOCK_FILE, file_holder, folder_held, hold_file, release_file
from kafkafmt.errors import LogDirLockedError

__all__ = ["LOCK_FILE", "lock_holder", "locked_log_dir", "check_not_written"]


def lock_holder(log_dir):
    """Is ``log_dir``'s ``.lock`` held by another process (a running broker) or by a `kafkafmt.LogWriter` of
    this process? True / False; a log dir without a ``.lock`` file is not held."""
    return file_holder(os.path.join(os.fspath(log_dir), LOCK_FILE)) is not None


@contextmanager
def locked_log_dir(log_dir, force=False):
    """Hold ``log_dir``'s ``.lock`` while repairing it, so a broker cannot start meanwhile. Raises
    `LogDirLockedError` when another process holds it (or a LogWriter of this process), unless ``force``
    (then it goes on without the lock). A ``.lock`` created here is removed afterwards (the log dir is left as
    it was)."""
    path = os.path.join(os.fspath(log_dir), LOCK_FILE)
    created = not os.path.exists(path)
    if file_holder(path) == "here":
        if not force:
            raise LogDirLockedError(f"{path} is held by a LogWriter of this process: close it first, or give "
                                    f"--force to repair anyway", file=path)
        yield False
        return
    try:
        held = hold_file(path, create=True)
    except OSError as exc:
        if not force:
            raise LogDirLockedError(f"cannot open {path}: {exc.strerror}; give --force to go on without the lock",
                                    file=path) from None
        yield False
        return
    try:
        if not held and not force:
            raise LogDirLockedError(f"{path} is locked by another process (a running broker?); stop it, or give "
                                    f"--force to repair anyway", file=path)
        yield bool(held)
    finally:
        if created:
            try:
                os.unlink(path)
            except OSError:
                pass
        if held:
            release_file(path)


def check_not_written(folder):
    """Raise `LogDirLockedError` when a `kafkafmt.LogWriter` (of this process or another) is writing to the
    partition folder."""
    if folder_held(folder):
        raise LogDirLockedError(f"{folder} is being written by a LogWriter (it holds the folder's lock): close it "
                                f"first, or give --force to repair anyway", file=os.fspath(folder))
