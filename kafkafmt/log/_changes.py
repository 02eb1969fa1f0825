"""Whether anything changed under some roots: one token for everything `discover` can see there, so that what
was found once (partitions, copies, segments) is kept while the token is unchanged and found afresh otherwise.

`tree_state` walks local roots as discovery does (folders to any depth it looks, symbolic links followed,
folders whose name starts with a dot left out) and digests every folder's and every file's size, change and
modification times and inode: a segment that grew, a side file rewritten in place or replaced, a partition
folder added or removed all change it. It also covers the checkpoint files beside a root (a partition folder
given alone takes its log start offset and high watermark from them). Only local roots have such a token;
for an object store's it is None (those are listed afresh).

A token is only worth keeping when it is *settled*: a file modified within `SETTLE_SECONDS`
(`kafkafmt.storage.LocalStorage.settled`) could change again within the same tick of the file system's clock
and keep its times. `TreeState.settled` says so.
"""
from __future__ import annotations

import os
import stat
from array import array
from dataclasses import dataclass

from kafkafmt.log._discovery import LOG_START_CHECKPOINT, MAX_DEPTH, REPLICATION_CHECKPOINT
from kafkafmt.storage import open_storage

__all__ = ["TreeState", "tree_state"]

#: folders below a root walked: discovery's depth, then a log dir's partition folders and a tiered layout's
#: two levels of folders below the deepest folder it looks at
_WALK_DEPTH = MAX_DEPTH + 3
#: files beside a root that a read of it may open (a partition folder given alone)
_BESIDE = (LOG_START_CHECKPOINT, REPLICATION_CHECKPOINT)


@dataclass(frozen=True)
class TreeState:
    """The state of everything under some roots: ``digest`` (equal for equal states), ``entries`` (folders and
    files seen), ``settled`` (no modification time within the last `SETTLE_SECONDS` when it was taken: a later
    change is sure to change the digest)."""
    digest: bytes
    entries: int
    settled: bool

    def __eq__(self, other):
        return isinstance(other, TreeState) and self.digest == other.digest

    def __hash__(self):
        return hash(self.digest)


class _Walk:
    def __init__(self):
        import hashlib      # (here: a command that does not watch a tree does not import it)

        self.hash = hashlib.blake2b(digest_size=20)
        self.newest = 0
        self.entries = 0
        self.seen = set()

    def add(self, names, numbers, newest):
        self.hash.update("\0".join(names).encode("utf-8", "surrogateescape"))
        self.hash.update(array("q", numbers).tobytes())
        self.entries += len(names)
        if newest > self.newest:
            self.newest = newest

    def file(self, path):
        try:
            st = os.stat(path)
        except OSError as exc:
            self.add([path, "?"], [exc.errno or 0], 0)
            return None
        self.add([path], [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino], st.st_mtime_ns)
        return st

    def folder(self, path, st, depth):
        if (st.st_dev, st.st_ino) in self.seen:        # a symbolic link to a folder walked already (or a loop)
            return
        self.seen.add((st.st_dev, st.st_ino))
        names = [path + "/"]
        numbers = [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]
        below = []
        try:
            # (an unchanged folder lists in the same order; a changed one has another mtime anyway)
            with os.scandir(path) as it:
                for e in it:
                    try:
                        if e.is_dir():
                            if not e.name.startswith(".") and depth < _WALK_DEPTH:
                                below.append(e.path)
                            continue
                        s = e.stat()
                    except OSError:                    # vanished, or a broken link
                        names.append(e.name + "?")
                        continue
                    names.append(e.name)
                    numbers += (s.st_size, s.st_mtime_ns, s.st_ctime_ns, s.st_ino)
        except OSError as exc:
            names.append(f"?{exc.errno}")
        self.add(names, numbers, max(numbers[1::4]))
        for sub in below:
            try:
                s = os.stat(sub)
            except OSError:
                self.add([sub, "?"], [], 0)
                continue
            self.folder(sub, s, depth + 1)


def tree_state(roots, storage_options=None, filesystem=None):
    """The state of everything under ``roots`` (paths or URLs, as `discover` takes them), or None when a root
    is not on the local disk or does not exist.

    Parameters
    ----------
    roots : str, os.PathLike or list of them
        The roots.
    storage_options, filesystem : optional
        As `discover` takes them (they say which roots are local).

    Returns
    -------
    TreeState or None

    Examples
    --------
    >>> import shutil
    >>> from kafkafmt.log import tree_state
    >>> from kafkafmt.sample import sample_dir
    >>> folder = shutil.copytree(f"{sample_dir()}/payments-0", "grown/payments-0")
    >>> before = tree_state([folder])
    >>> before == tree_state([folder])
    True
    >>> with open(f"{folder}/00000000000000000071.log", "ab") as f:     # the log grows
    ...     _ = f.write(b"\\0" * 12)
    >>> tree_state([folder]) == before
    False
    """
    roots = [roots] if isinstance(roots, (str, os.PathLike)) else list(roots)
    walk = _Walk()
    storage = None
    for root in roots:
        storage, path = open_storage(root, storage_options, filesystem)
        if not storage.is_local:
            return None
        path = os.path.abspath(os.fspath(path))
        walk.add(["\0root", path], [], 0)
        st = walk.file(path)
        if st is None:
            return None
        if stat.S_ISDIR(st.st_mode):
            walk.folder(path, st, 0)
        parent = os.path.dirname(path)
        for name in _BESIDE:
            walk.file(os.path.join(parent, name))
    settled = storage is None or storage.settled(walk.newest)
    return TreeState(walk.hash.digest(), walk.entries, settled)
