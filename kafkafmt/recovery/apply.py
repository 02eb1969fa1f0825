"""Applying a recovery plan without losing a byte, and undoing it.

Every change is a *step* of a journal, ``manifest.jsonl`` in the backup folder (one JSON object a
line, each line flushed to disk before the step acts):

1. what the step will remove or replace is first copied into the backup folder (the bytes cut from
   a log, the whole previous version of a rewritten file) and flushed;
2. new contents go to a temporary file beside the target (``<name>.kafkafmt-tmp``), flushed;
3. the step's line -- file, byte ranges, reason, CRC-32C of the bytes removed and of the file
   before and after -- is appended to the manifest and flushed;
4. the change is one atomic file-system call: ``rename`` of the temporary file over the target, a
   ``truncate``, or a ``rename`` of a removed file or folder *into* the backup folder;
5. a ``done`` line follows.

So a crash at any point leaves every file either as it was or as it is meant to be (a leftover
temporary file is removed by the next run), and the manifest names everything needed to go back:
`undo` reverts the steps newest first -- each by what the file is now, so a step interrupted before
its ``done`` line is reverted too when it took effect -- and checks every restored file's CRC.

Test hook: ``KAFKAFMT_CRASH_AFTER=N`` (`kafkafmt._util.durable`) ends the process (``os._exit``) right after the N-th
durable point (a flushed backup, temporary file, manifest line or file-system change; in `undo`,
each file put back). An undo killed part way is run again: the files already put back are as the
recovery found them and are skipped.
"""
from __future__ import annotations

import datetime as _dt
import errno
import json
import os
import shutil

import numpy as np

from kafkafmt._native.scan import crc32c
from kafkafmt._util.durable import crash_point, fsync_dir
from kafkafmt.errors import RecoveryError
from kafkafmt.recovery.lock import LOCK_FILE, locked_log_dir
from kafkafmt.log import LOG_SUFFIX, RECOVERY_POINT_CHECKPOINT
from kafkafmt.recovery.actions import ActionKind
from kafkafmt.recovery.names import TEMP_SUFFIX

__all__ = ["apply_plan", "undo", "MANIFEST"]

MANIFEST = "manifest.jsonl"
MANIFEST_VERSION = 1
_COPY_CHUNK = 8 << 20


# ----------------------------------------------------------------------------------------------
# file helpers

def _file_crc(path, start=0, end=None):
    """(size, crc32c) of a file or of its bytes [start, end)."""
    size = os.path.getsize(path)
    end = size if end is None else end
    if end <= start:
        return size, 0
    with open(path, "rb") as f:
        data = np.memmap(f, np.uint8, "r", offset=0, shape=(size,)) if size else np.zeros(0, np.uint8)
        crc = int(crc32c(data[start:end]))
        del data
    return size, crc


def _state(path):
    """{"size", "crc"} of a file, None when missing."""
    if not os.path.isfile(path):
        return None
    size, crc = _file_crc(path)
    return {"size": size, "crc": crc}


def _copy_range(src, dst_f, start, end):
    with open(src, "rb") as f:
        f.seek(start)
        left = end - start
        while left > 0:
            chunk = f.read(min(_COPY_CHUNK, left))
            if not chunk:
                raise RecoveryError(f"{src} ended at {end - left} while copying bytes {start}..{end}", file=src)
            dst_f.write(chunk)
            left -= len(chunk)


def _write_synced(path, pieces):
    """Write ``pieces`` (bytes, or (file, start, end) ranges) to ``path`` and flush it to disk."""
    with open(path, "wb") as out:
        for p in pieces:
            if isinstance(p, tuple):
                _copy_range(p[0], out, p[1], p[2])
            else:
                out.write(p)
        out.flush()
        os.fsync(out.fileno())


def _move(src, dst):
    """Rename src to dst (atomic on one file system); across file systems copy, flush, remove."""
    try:
        os.rename(src, dst)
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
        if os.path.isdir(src):
            shutil.copytree(src, dst)
            shutil.rmtree(src)
        else:
            shutil.copy2(src, dst)
            with open(dst, "rb+") as f:
                os.fsync(f.fileno())
            os.unlink(src)
    fsync_dir(os.path.dirname(dst))
    fsync_dir(os.path.dirname(src))


class _Journal:
    def __init__(self, path):
        self.path = path
        self.f = open(path, "a", encoding="utf-8")

    def write(self, obj):
        self.f.write(json.dumps(obj, sort_keys=True) + "\n")
        self.f.flush()
        os.fsync(self.f.fileno())
        crash_point()

    def close(self):
        self.f.close()


def _default_backup(root):
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    base = os.path.join(os.path.dirname(root), f"{os.path.basename(root)}.recover-{stamp}")
    path, k = base, 1
    while os.path.exists(path):
        k += 1
        path = f"{base}-{k}"
    return path


def _root_of(action):
    if action.log_dir is not None:
        return action.log_dir
    # a partition folder without a log dir around it: its parent holds the backup
    folder = action.file if os.path.isdir(action.file) else os.path.dirname(action.file)
    return os.path.dirname(folder)


# ----------------------------------------------------------------------------------------------
# applying

def apply_plan(plan, backup=None, *, force=False):
    """Carry out a `RecoveryPlan` (see the module docstring). ``backup``: the backup folder (default:
    ``<log dir>.recover-<time>`` beside each log dir; with several log dirs, one folder per log dir
    inside ``backup``). ``force``: go on even when a log dir's ``.lock`` is held by another process.
    Returns the manifest paths (also set as ``plan.manifests``)."""
    if not plan.contents:
        raise RecoveryError("this plan was made to be counted, without the new files' contents "
                            "(plan_recovery(contents=False)): plan again to apply it; nothing was changed")
    groups = {}
    for a in plan.actions:
        groups.setdefault(_root_of(a), []).append(a)
    manifests = []
    for k, (root, actions) in enumerate(groups.items()):
        if backup is None:
            folder = _default_backup(root)
        elif len(groups) == 1:
            folder = os.fspath(backup)
        else:
            folder = os.path.join(os.fspath(backup), f"{os.path.basename(root)}-{k}")
        with locked_log_dir(root, force=force):
            manifests.append(_apply_root(root, actions, folder, plan))
    plan.applied = True
    plan.manifests = manifests
    return manifests


def _folders_of(actions):
    """Every folder an action changes something in (targets of renames too)."""
    out = set()
    for a in actions:
        for f in (a.file, a.target):
            if f is not None:
                out.add(os.path.dirname(os.path.abspath(f)))
    return sorted(out)


def _listing(folder):
    """{name: size} of the files of a folder (the lock and recovery temporary files aside)."""
    out = {}
    for name in sorted(os.listdir(folder)):
        p = os.path.join(folder, name)
        if os.path.isfile(p) and name != LOCK_FILE and not name.endswith(TEMP_SUFFIX):
            out[name] = os.path.getsize(p)
    return out


def _preflight(actions, folder):
    """Refuse before changing anything: the backup folder in use, or a file no longer as planned."""
    if os.path.exists(folder) and os.listdir(folder):
        raise RecoveryError(f"backup folder {folder} is not empty: give another --backup", file=folder)
    deleted = set()
    for a in actions:
        if a.kind is ActionKind.DELETE:
            deleted.add(a.file)
        if a.kind in (ActionKind.TRUNCATE, ActionKind.CUT):
            size = os.path.getsize(a.file) if os.path.isfile(a.file) else None
            want = a.end if a.kind is ActionKind.TRUNCATE else max(e for _, e, _ in a.removed)
            if size is None or (size != want if a.kind is ActionKind.TRUNCATE else size < want):
                raise RecoveryError(f"{a.file} is {size} bytes, not {want} as when planned: nothing was changed; "
                                    f"plan again", file=a.file)
        elif a.kind in (ActionKind.DELETE, ActionKind.RENAME, ActionKind.APPEND) and not os.path.exists(a.file):
            raise RecoveryError(f"{a.file} is gone since the plan was made: nothing was changed; plan again",
                                file=a.file)
        if a.kind is ActionKind.RENAME and os.path.exists(a.target) and a.target not in deleted:
            raise RecoveryError(f"{a.target} exists: cannot finish the swap of {a.file}; nothing was changed",
                                file=a.target)


def _apply_root(root, actions, folder, plan):
    _preflight(actions, folder)
    os.makedirs(os.path.join(folder, "data"), exist_ok=True)
    fsync_dir(os.path.dirname(folder))
    manifest = os.path.join(folder, MANIFEST)
    journal = _Journal(manifest)
    journal.write({"type": "header", "version": MANIFEST_VERSION, "root": root,
                   "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                   "kafka_compatible": plan.kafka_compatible,
                   "folders": {_rel(root, d): _listing(d) for d in _folders_of(actions) if os.path.isdir(d)}})
    synced = set()
    changed = []
    try:
        for n, a in enumerate(actions):
            if a.kind is ActionKind.WRITE and os.path.basename(a.file) == RECOVERY_POINT_CHECKPOINT:
                _sync_logs(root, synced)        # the recovery point moves only over data on disk
            try:
                _apply_one(n, a, root, folder, journal)
            except BaseException:
                _remove_temp(a.file)            # written, never renamed into place
                raise
            changed.append(a.file)
        journal.write({"type": "complete"})
    except (OSError, RecoveryError) as exc:
        raise _failed_midway(exc, changed, manifest) from exc
    finally:
        journal.close()
    return manifest


def _remove_temp(path):
    try:
        os.unlink(path + TEMP_SUFFIX)
    except OSError:
        pass


def _failed_midway(exc, changed, manifest):
    """The error of an apply that stopped part way: what failed, what was already changed, and how
    to put it back."""
    why = getattr(exc, "reason", None) or (f"{exc.filename}: {exc.strerror}" if getattr(exc, "filename", None)
                                           else str(exc))
    if not changed:
        done = "nothing was changed"
    else:
        done = (f"{len(changed)} file(s) were already changed (" + ", ".join(changed[:5]) +
                (f" and {len(changed) - 5} more" if len(changed) > 5 else "") + ")")
    return RecoveryError(f"recovery stopped part way: {why}; {done}; every change is listed in {manifest}: "
                         f"put it all back with: kafkafmt recover --undo {manifest}")


def _sync_logs(root, synced):
    for dirpath, _, files in os.walk(root):
        for name in files:
            if name.endswith(LOG_SUFFIX):
                p = os.path.join(dirpath, name)
                if p not in synced:
                    _fsync_file(p)
                    synced.add(p)


def _fsync_file(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _rel(root, path):
    return os.path.relpath(path, root)


def _swap_in(tmp, path):
    """Rename the temporary file ``tmp`` over ``path`` and flush the folder: the one atomic change."""
    os.replace(tmp, path)
    fsync_dir(os.path.dirname(path))


def _back_up(path, folder, bkp, ranges):
    """Step 1: the bytes ``ranges`` of ``path`` copied to the backup file ``bkp``, flushed."""
    _write_synced(os.path.join(folder, bkp), [(path, s, e) for s, e in ranges])
    crash_point()


def _rewrite(path, pieces, step, journal):
    """Steps 2 to 4 of a file rewritten whole: ``pieces`` (as `_write_synced` takes them) to its temporary
    file, the ``step`` line (with the new file's state) to the journal, the rename over ``path``."""
    tmp = path + TEMP_SUFFIX
    _write_synced(tmp, pieces)
    crash_point()
    step["after"] = _state(tmp)
    journal.write(step)
    _swap_in(tmp, path)
    crash_point()


def _apply_one(n, a, root, folder, journal):
    path = a.file
    name = os.path.basename(path)
    bkp = os.path.join("data", f"{n:06d}-{name}")
    step = {"type": "step", "n": n, "op": a.kind.value, "file": _rel(root, path), "reason": a.message}
    if a.kind is ActionKind.TRUNCATE:
        before = _state(path)
        _back_up(path, folder, bkp, [(a.start, a.end)])
        _, crc = _file_crc(path, a.start, a.end)
        step.update(start=a.start, end=a.end, backup=bkp, crc=crc, before=before,
                    after={"size": a.start, "crc": _file_crc(path, 0, a.start)[1]})
        journal.write(step)
        os.truncate(path, a.start)
        _fsync_file(path)
        crash_point()
    elif a.kind is ActionKind.CUT:
        size = os.path.getsize(path)
        before = _state(path)
        removed = sorted((s, e, why) for s, e, why in a.removed)
        kept, at = [], 0
        for s, e, _ in removed:
            if s > at:
                kept.append((at, s))
            at = max(at, e)
        if at < size:
            kept.append((at, size))
        _back_up(path, folder, bkp, [(s, e) for s, e, _ in removed])
        step.update(removed=[{"start": s, "end": e, "reason": why, "crc": _file_crc(path, s, e)[1]}
                             for s, e, why in removed],
                    kept=[[s, e] for s, e in kept], backup=bkp, before=before)
        _rewrite(path, [(path, s, e) for s, e in kept], step, journal)
    elif a.kind is ActionKind.WRITE:
        before = _state(path)
        if before is not None:
            _back_up(path, folder, bkp, [(0, before["size"])])
        step.update(backup=bkp if before is not None else None, before=before)
        _rewrite(path, [bytes(a.data)], step, journal)
    elif a.kind is ActionKind.APPEND:
        before = _state(path)
        step.update(before=before)
        _rewrite(path, [(path, 0, before["size"]), bytes(a.data)], step, journal)
    elif a.kind is ActionKind.DELETE:
        is_dir = os.path.isdir(path)
        step.update(backup=bkp, before={"dir": True} if is_dir else _state(path))
        journal.write(step)
        _move(path, os.path.join(folder, bkp))
        crash_point()
    elif a.kind is ActionKind.RENAME:
        step.update(target=_rel(root, a.target), before=_state(path))
        journal.write(step)
        os.rename(path, a.target)
        fsync_dir(os.path.dirname(path))
        crash_point()
    else:                                                        # pragma: no cover
        raise RecoveryError(f"unknown action {a.kind}")
    journal.write({"type": "done", "n": n})


# ----------------------------------------------------------------------------------------------
# undoing

def read_manifest(path):
    """(header, steps) of a manifest; a torn last line (a crash while writing it) is ignored."""
    header, steps = None, []
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
    except UnicodeDecodeError:
        raise RecoveryError("not a kafkafmt recovery manifest (not text)", file=path) from None
    for k, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            if k >= len(lines) - 2:
                break                         # torn final line
            raise RecoveryError(f"line {k + 1} of the manifest is not JSON", file=path) from None
        if obj.get("type") == "header":
            header = obj
        elif obj.get("type") == "step":
            steps.append(obj)
    if header is None or header.get("version") != MANIFEST_VERSION:
        raise RecoveryError("not a kafkafmt recovery manifest (no header line of version 1)", file=path)
    return header, steps


def _matches(path, st):
    cur = _state(path)
    return cur is not None and st is not None and cur["size"] == st["size"] and cur["crc"] == st["crc"]


class _Now:
    """What undo expects each file to be as it walks the steps newest first: a file a newer step
    put back is, for the older steps, as that step found it (without touching the disk)."""

    def __init__(self):
        self.virtual = {}                 # path -> None (absent) or {"size", "crc"} or {"dir": True}

    def state(self, path):
        if path in self.virtual:
            return self.virtual[path]
        if os.path.isdir(path):
            return {"dir": True}
        return _state(path)

    def same(self, path, st):
        cur = self.state(path)
        if cur is None or st is None:
            return cur is None and st is None
        if cur.get("dir") or st.get("dir"):
            return bool(cur.get("dir")) == bool(st.get("dir"))
        return cur["size"] == st["size"] and cur["crc"] == st["crc"]


def _plan_undo(steps, root, folder):
    """Decide every step before changing anything: ``(to revert, problems)``; a step is reverted
    when its file is as the recovery left it, skipped when it is as the recovery found it (it never
    took effect, or was put back already); anything else is a problem and nothing is changed."""
    now, todo, problems = _Now(), [], []
    for step in reversed(steps):
        op, path = step["op"], os.path.join(root, step["file"])
        before, after = step.get("before"), step.get("after")
        bkp = os.path.join(folder, step["backup"]) if step.get("backup") else None
        if op in ("truncate", "cut", "write", "append"):
            if before is not None and now.same(path, before):
                continue                                        # as found: nothing to put back
            if before is None and now.state(path) is None:
                continue                                        # a new file that never came
            if not now.same(path, after):
                cur = now.state(path)
                problems.append(f"{path}: " + ("gone" if cur is None else
                                               f"{cur.get('size')} bytes with CRC {cur.get('crc')}") +
                                f", neither as the recovery left it ({after['size']} bytes) nor as it found it"
                                + (f" ({before['size']} bytes)" if before else " (absent)") +
                                ": changed since the recovery")
                continue
            if bkp is not None and not os.path.exists(bkp):
                problems.append(f"{path}: its backup {bkp} is missing")
                continue
            todo.append(step)
            now.virtual[path] = before
        elif op == "delete":
            here, kept = now.state(path) is not None, os.path.exists(bkp)
            if here and not kept:
                continue                                        # never moved into the backup
            if here and kept:
                problems.append(f"{path}: exists again although the recovery removed it (its copy is in {bkp})")
                continue
            if not kept:
                problems.append(f"{path}: removed by the recovery, and its copy {bkp} is missing")
                continue
            todo.append(step)
            now.virtual[path] = before if before is not None else {"dir": True}
        elif op == "rename":
            target = os.path.join(root, step["target"])
            src_here, dst_here = now.state(path) is not None, now.state(target) is not None
            if src_here and not dst_here:
                continue                                        # never renamed
            if dst_here and not src_here and (before is None or now.same(target, before)):
                todo.append(step)
                now.virtual[path], now.virtual[target] = now.state(target), None
                continue
            problems.append(f"{target}: changed since the recovery renamed {path} to it")
        else:
            problems.append(f"unknown step {op!r} in the manifest")
    return todo, problems


def _newer_files(header, steps, root):
    """Files of the partition folders the recovery changed that are neither in the manifest nor as
    the recovery found them: what a broker wrote since (an append, a rolled segment, a snapshot)."""
    named = {os.path.join(root, st["file"]) for st in steps}
    named |= {os.path.join(root, st["target"]) for st in steps if st.get("target")}
    out = []
    for rel, listing in (header.get("folders") or {}).items():
        d = os.path.join(root, rel)
        if os.path.abspath(d) == os.path.abspath(root) or not os.path.isdir(d):
            continue                            # the log dir's own files are checked by their steps
        for name, size in _listing(d).items():
            p = os.path.join(d, name)
            if p in named:
                continue
            if name not in listing:
                out.append(f"{p}: new since the recovery ({size} bytes)")
            elif listing[name] != size:
                out.append(f"{p}: {size} bytes, {listing[name]} when the recovery started")
    return out


def _temp_files(header, steps, root):
    folders = {os.path.normpath(os.path.join(root, rel)) for rel in (header.get("folders") or {})}
    folders |= {os.path.dirname(os.path.normpath(os.path.join(root, st["file"]))) for st in steps}
    out = []
    for d in sorted(folders):
        if os.path.isdir(d):
            out += [os.path.join(d, n) for n in sorted(os.listdir(d)) if n.endswith(TEMP_SUFFIX)]
    return out


def undo(manifest, *, force=False):
    """Revert a recovery from its manifest: every removed byte and replaced file put back, newest
    step first, each file's CRC checked against the manifest.

    Every file is checked before anything is changed: when one is neither as the recovery left it
    nor as it found it, or the partition folders hold anything newer than the recovery (a broker
    appended, rolled a segment, wrote a snapshot), nothing is changed and `RecoveryError` lists
    them all. Temporary files of an interrupted recovery are removed.

    Parameters
    ----------
    manifest : str or os.PathLike
        The ``manifest.jsonl`` a recovery wrote (``RecoveryPlan.manifests``).
    force : bool
        Revert even when the log dir's ``.lock`` is held by another process.

    Returns
    -------
    list of str
        The paths restored.

    Raises
    ------
    RecoveryError
        A file changed since the recovery (nothing was changed).

    Examples
    --------
    >>> import kafkafmt
    >>> from kafkafmt.sample import damaged_copy
    >>> folder = damaged_copy("damaged/payments-0")     # its second batch damaged
    >>> before = open(f"{folder}/00000000000000000000.log", "rb").read()
    >>> plan = kafkafmt.recover(folder, apply=True, backup="backup")
    >>> for path in kafkafmt.undo_recovery(plan.manifests[0]):
    ...     print(path)
    /.../damaged/payments-0/00000000000000000122.snapshot
    /.../damaged/payments-0/00000000000000000000.index
    /.../damaged/payments-0/00000000000000000000.log
    >>> open(f"{folder}/00000000000000000000.log", "rb").read() == before
    True

    A partition that changed since (a broker appended to the recovered log) is refused before
    anything is touched:

    >>> plan = kafkafmt.recover(folder, apply=True, backup="backup2")
    >>> with open(f"{folder}/00000000000000000000.log", "ab") as f:
    ...     _ = f.write(before[:70])
    >>> kafkafmt.undo_recovery(plan.manifests[0])
    Traceback (most recent call last):
    ...
    kafkafmt.errors.RecoveryError: cannot undo: 1 file(s) changed since the recovery, nothing was changed: ...
    """
    manifest = os.path.abspath(os.fspath(manifest))
    folder = os.path.dirname(manifest)
    header, steps = read_manifest(manifest)
    root = header["root"]
    restored = []
    with locked_log_dir(root, force=force):
        todo, problems = _plan_undo(steps, root, folder)
        problems += _newer_files(header, steps, root)
        if problems:
            raise RecoveryError(f"cannot undo: {len(problems)} file(s) changed since the recovery, nothing was "
                                f"changed: " + "; ".join(problems[:10]) +
                                (f"; and {len(problems) - 10} more" if len(problems) > 10 else ""), file=manifest)
        for p in _temp_files(header, steps, root):
            os.unlink(p)                              # written, never renamed into place
        for step in todo:
            restored.append(_undo_step(step, root, folder))
            crash_point()                             # each file is put back whole: old or restored
        with open(manifest, "a", encoding="utf-8") as f:
            f.write(json.dumps({"type": "undone", "at": _dt.datetime.now(_dt.timezone.utc).isoformat(
                timespec="seconds")}) + "\n")
            f.flush()
            os.fsync(f.fileno())
    return restored


def _undo_step(step, root, folder):
    """Put one step back (`_plan_undo` decided it must be); returns the path restored."""
    op = step["op"]
    path = os.path.join(root, step["file"])
    before = step.get("before")
    bkp = os.path.join(folder, step["backup"]) if step.get("backup") else None

    def check():
        if before is not None and "crc" in before and not _matches(path, before):
            raise RecoveryError(f"{path}: restored, but its CRC does not match the manifest's", file=path)

    def replace_with(pieces):
        tmp = path + TEMP_SUFFIX
        _write_synced(tmp, pieces)
        _swap_in(tmp, path)
        check()
        return path

    if op == "truncate":              # through a temporary file: a kill leaves the file old or restored
        return replace_with([(path, 0, step["start"]), (bkp, 0, step["end"] - step["start"])])
    if op == "cut":
        pieces, at_new, at_bkp = [], 0, 0
        events = [(s, e, "kept") for s, e in step["kept"]] + [(r["start"], r["end"], "removed")
                                                             for r in step["removed"]]
        for s, e, what in sorted(events):
            if what == "kept":
                pieces.append((path, at_new, at_new + e - s))
                at_new += e - s
            else:
                pieces.append((bkp, at_bkp, at_bkp + e - s))
                at_bkp += e - s
        return replace_with(pieces)
    if op == "append":
        return replace_with([(path, 0, before["size"])])
    if op == "write":
        if before is None:
            os.unlink(path)
            fsync_dir(os.path.dirname(path))
            return path
        return replace_with([(bkp, 0, before["size"])])
    if op == "delete":
        _move(bkp, path)
        check()
        return path
    if op == "rename":
        os.rename(os.path.join(root, step["target"]), path)
        fsync_dir(os.path.dirname(path))
        check()
        return path
    raise RecoveryError(f"unknown step {op!r} in the manifest")                  # pragma: no cover
