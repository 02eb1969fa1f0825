"""The locks of whatever writes into a log dir: the broker's lock on the log dir, and one on a partition folder.

* ``<log dir>/.lock``: Kafka's ``LogManager.lockLogDirs`` (core/src/main/scala/kafka/log/LogManager.scala)
  holds ``new FileLock(new File(dir, ".lock")).tryLock()`` while the broker runs; ``FileLock.tryLock``
  (server-common/.../util/FileLock.java) is ``FileChannel.tryLock``, on Linux and macOS a POSIX record lock
  (``fcntl(F_SETLK)``) -- the lock ``fcntl.lockf`` takes, so a broker and kafkafmt each see the other's. A
  POSIX record lock belongs to the process: taken again in the same process it succeeds, and closing *any*
  descriptor of the file drops it. So this module keeps one descriptor per locked file and counts its holders
  in this process (`hold_file` / `release_file`), and `file_holder` never opens a file this process holds.
* a partition folder: ``flock`` on the folder itself (nothing is added to it), a lock of the open file
  description -- two writers in one process exclude each other as two processes do (`hold_folder`).

Both locks go with the process: a killed writer holds nothing. Where ``fcntl`` does not exist (Windows),
nothing is locked.
"""
from __future__ import annotations

import errno
import os
import threading

__all__ = ["LOCK_FILE", "hold_file", "release_file", "file_holder", "hold_folder", "release_folder",
           "folder_held"]

#: the lock file of a log dir, as Kafka names it (LogManager.LockFileName)
LOCK_FILE = ".lock"

_held = {}                       # real path of a locked file -> [descriptor, holders in this process]
_guard = threading.Lock()
_BUSY = (errno.EACCES, errno.EAGAIN, errno.EWOULDBLOCK)


def _fcntl():
    try:
        import fcntl
    except ImportError:          # Windows: no POSIX locks
        return None
    return fcntl


def _take(fd, lock, how):
    """``lock(fd, how)`` without waiting: True when taken; False -- ``fd`` then closed -- when another holder
    has it."""
    try:
        lock(fd, how)
        return True
    except OSError as exc:
        os.close(fd)
        if exc.errno in _BUSY:
            return False
        raise


def _key(path):
    return os.path.realpath(os.fspath(path))


def hold_file(path, create=False):
    """Take the POSIX record lock on ``path`` (a log dir's ``.lock``) for this process, as Kafka's
    ``FileLock.tryLock``: True when held (one more holder in this process), False when another process
    holds it, None when there is no such file (and ``create`` is False). Never waits."""
    fcntl = _fcntl()
    key = _key(path)
    with _guard:
        if key in _held:
            _held[key][1] += 1
            return True
        try:
            fd = os.open(key, os.O_RDWR | (os.O_CREAT if create else 0), 0o644)
        except FileNotFoundError:
            return None
        except PermissionError:
            return False
        if fcntl is not None and not _take(fd, fcntl.lockf, fcntl.LOCK_EX | fcntl.LOCK_NB):
            return False
        _held[key] = [fd, 1]
        return True


def release_file(path):
    """One holder of this process lets go of ``path``'s lock; the last one releases it."""
    key = _key(path)
    with _guard:
        entry = _held.get(key)
        if entry is None:
            return
        entry[1] -= 1
        if entry[1] <= 0:
            del _held[key]
            os.close(entry[0])            # closing releases the process's lock


def file_holder(path):
    """Who holds ``path``'s lock: "process" (another process: a running broker, another writer), "here"
    (this process: a writer of it), or None (nobody, or no such file)."""
    key = _key(path)
    with _guard:
        if key in _held:
            return "here"
    fcntl = _fcntl()
    if fcntl is None:
        return None
    try:
        fd = os.open(key, os.O_RDWR)
    except FileNotFoundError:
        return None
    except PermissionError:
        return "process"
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return None
    except OSError as exc:
        if exc.errno in _BUSY:
            return "process"
        raise
    finally:
        os.close(fd)                      # (this process held nothing on it: nothing else is released)


def hold_folder(path):
    """Lock a folder (``flock``, exclusive, without waiting): its descriptor to give `release_folder`, or
    None when another writer -- in this process or another -- holds it."""
    fd = os.open(os.fspath(path), os.O_RDONLY)
    fcntl = _fcntl()
    if fcntl is not None and not _take(fd, fcntl.flock, fcntl.LOCK_EX | fcntl.LOCK_NB):
        return None
    return fd


def release_folder(fd):
    """Let go of a folder `hold_folder` locked."""
    os.close(fd)


def folder_held(path):
    """Whether a writer holds the folder's lock (`hold_folder`); False for a folder that does not exist."""
    try:
        fd = hold_folder(path)
    except (FileNotFoundError, NotADirectoryError):
        return False
    if fd is None:
        return True
    release_folder(fd)
    return False
