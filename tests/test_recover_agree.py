"""recover and verify agree (issue 42): a segment renamed away from its first batch's base offset keeps every
batch for every shift; overlapping segments (a stray copy of part of a segment) are resolved or refused naming
both files, and verify blames the copy; a garbage leader-epoch-checkpoint is rebuilt from the batches; and over
the whole damage matrix -- log dirs written by kafka-python's builders, damaged in every way the tests know --
``recover --apply`` leaves a dir ``verify`` passes, or refuses naming what it cannot repair; a dry run with
nothing to do means verify passes, and verify counts the fixes a dry run would still make on a dir it passes.

The records are checked with kafka-python (every byte of every segment read back, CRCs checked): no record
disappears that the plan did not announce as lost, and a renamed or overlapping segment loses none."""
import hashlib
import json
import os
import shutil
import struct

import pytest
from kafka.record.memory_records import MemoryRecords

import kafkafmt
from kafkafmt import LogWriter
from kafkafmt.cli import main as cli_main
from kafkafmt.errors import RecoveryError
from kafkafmt.log import sidefiles
from kafkafmt.recovery import ActionKind, recover

import kcli
import kpy


# ----------------------------------------------------------------------------------------------
# helpers

def hashes(root):
    """{relative path: sha256} of every file below root (the lock and a killed run's temporary files aside)."""
    out = {}
    for d, _, files in os.walk(root):
        for f in files:
            if f != ".lock" and not f.endswith(".kafkafmt-tmp"):
                with open(os.path.join(d, f), "rb") as fh:
                    out[os.path.relpath(os.path.join(d, f), root)] = hashlib.sha256(fh.read()).hexdigest()
    return out


def logs_of(folder):
    return sorted(n for n in os.listdir(folder) if n.endswith(".log"))


def kp_records(folder):
    """{offset: value} of every record (control records as ("control", type)) of a partition folder, read by
    kafka-python segment by segment; every byte must be an intact batch."""
    out = {}
    for name in logs_of(folder):
        data = open(os.path.join(folder, name), "rb").read()
        mr = MemoryRecords(data)
        assert mr.valid_bytes() == len(data), (folder, name)
        while mr.has_next():
            batch = mr.next_batch()
            assert batch.validate_crc(), (folder, name)
            for r in batch:
                assert r.offset not in out, (folder, name, r.offset)          # each offset once
                out[r.offset] = ("control", r.type) if getattr(batch, "is_control_batch", False) else r.value
    return out


def all_records(root):
    """{partition folder name: kp_records} of a log dir."""
    return {d: kp_records(os.path.join(root, d)) for d in sorted(os.listdir(root))
            if os.path.isdir(os.path.join(root, d)) and not d.endswith("-delete")}


def verify(paths, capsys):
    """(exit code, JSON summary) of ``kafkafmt verify --json`` run in this process."""
    capsys.readouterr()
    code = cli_main(["verify", "--json", "-q", "--no-progress", *map(str, paths)])
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.startswith("{")]
    return code, lines[-1], [x for x in lines if x.get("type") != "summary"]


def rename_segment(part, old, new):
    for suffix in (".log", ".index", ".timeindex", ".txnindex"):
        src = os.path.join(part, f"{old:020d}{suffix}")
        if os.path.exists(src):
            os.rename(src, os.path.join(part, f"{new:020d}{suffix}"))


def batches_of(path):
    """(position, size, base offset, last offset) of each batch of a .log, read by kafka-python."""
    data = open(path, "rb").read()
    out, pos = [], 0
    for b in MemoryRecords(data):
        recs = list(b)
        out.append((pos, b.size_in_bytes, recs[0].offset if recs else b.base_offset, b.last_offset
                    if hasattr(b, "last_offset") else recs[-1].offset))
        pos += b.size_in_bytes
    return out


@pytest.fixture(autouse=True)
def _no_fsync(monkeypatch):
    """Repairs here are checked for what they write, not for surviving a power cut (the kill tests of
    tests/test_recover.py and tests/test_recover_changes.py do that): flushing to disk is skipped."""
    monkeypatch.setattr(os, "fsync", lambda fd: None)


# ----------------------------------------------------------------------------------------------
# 5. a segment renamed away from its content

def _writer_partition(folder):
    """A LogWriter partition of 10-record batches in five segments of 50 records, from offset 1000 (the
    first ones deleted by retention)."""
    with LogWriter(folder, segment_bytes=6 * 190, base_offset=1000) as w:
        for i in range(24):
            w.append(values=[b"v%03d-%d" % (i, j) for j in range(10)], timestamps=[1000 + 10 * i + j for j in range(10)])
    return folder


@pytest.fixture(scope="module")
def partitions(tmp_path_factory, sample):
    out = {"writer": _writer_partition(str(tmp_path_factory.mktemp("w") / "t-0"))}
    for name in ("clicks-0", "orders-0"):
        out[name] = str(sample / name)
    return out


RENAMED = [("writer", "first"), ("writer", "middle"), ("writer", "last"), ("clicks-0", "first"),
           ("clicks-0", "last"), ("orders-0", "first"), ("orders-0", "middle"), ("orders-0", "last")]


@pytest.mark.parametrize("source,which", RENAMED)
def test_renamed_segment_keeps_every_batch_for_every_shift(partitions, source, which, tmp_path, capsys):
    """A segment's files renamed 1..20 offsets above its first batch's base offset (into and past its first
    batch): the plan renames it back, losing nothing, and verify passes after --apply."""
    src = partitions[source]
    want = kp_records(src)
    bases = [int(n[:20]) for n in logs_of(src)]
    assert len(bases) >= 2 and (source != "writer" or len(bases) >= 3)
    base = {"first": bases[0], "middle": bases[len(bases) // 2], "last": bases[-1]}[which]
    if source == "writer":                              # shifts into and past the first batch
        assert batches_of(os.path.join(src, f"{base:020d}.log"))[0][3] - base + 1 == 10
    for shift in range(1, 21):
        part = shutil.copytree(src, tmp_path / str(shift) / os.path.basename(src))
        rename_segment(part, base, base + shift)
        plan = recover(part)
        assert not plan.refusals and plan.offsets_lost == 0, (shift, plan.text())
        ren = [a for a in plan.actions if a.kind is ActionKind.RENAME and a.file.endswith(".log")]
        assert [a.target for a in ren] == [os.path.join(part, f"{base:020d}.log")], shift
        recover(part, apply=True, backup=tmp_path / f"bk{shift}")
        assert kp_records(part) == want, shift
        assert verify([part], capsys)[0] == 0, shift
        assert recover(part).clean, shift


def test_a_loss_is_counted_from_the_batches_not_the_file_name(partitions, tmp_path):
    """A renamed segment whose first batch is damaged: the loss is that batch's offsets (from its own header),
    not the offsets between the file name and the next intact batch."""
    src = partitions["writer"]
    base = int(logs_of(src)[1][:20])
    part = shutil.copytree(src, tmp_path / "t-0")
    first = batches_of(os.path.join(part, f"{base:020d}.log"))[0]
    rename_segment(part, base, base + 5)
    seg = os.path.join(part, f"{base + 5:020d}.log")
    data = bytearray(open(seg, "rb").read())
    data[first[1] - 3] ^= 0xFF                                  # a value byte: the CRC fails
    open(seg, "wb").write(bytes(data))
    plan = recover(part)
    assert [a.lost for a in plan.actions if a.damage] == [((first[2], first[3]),)]
    assert plan.offsets_lost == first[3] - first[2] + 1 == 10


# ----------------------------------------------------------------------------------------------
# 6. overlapping segments

def _overlap(part, kind):
    """A stray copy of part of the second segment saved as its own .log; returns the file verify must blame."""
    logs = logs_of(part)
    one, two = (open(os.path.join(part, n), "rb").read() for n in logs[1:3])
    b1, b2 = batches_of(os.path.join(part, logs[1])), batches_of(os.path.join(part, logs[2]))
    half = b1[len(b1) // 2]
    if kind == "second-half":                   # the case: named at its first batch's base offset
        name, data = f"{half[2]:020d}.log", one[half[0]:]
    elif kind == "first-half-named-below":      # a copy of the first half under a lower name (the previous
        name, data = f"{int(logs[1][:20]) - 7:020d}.log", one[:half[0]]     # segment's range)
    elif kind == "first-segment-half-named-below":      # ... below the log start offset
        zero = open(os.path.join(part, logs[0]), "rb").read()
        b0 = batches_of(os.path.join(part, logs[0]))
        name, data = f"{int(logs[0][:20]) - 7:020d}.log", zero[:b0[len(b0) // 2][0]]
    elif kind == "straddling":                  # the second half of one segment and the start of the next
        name, data = f"{half[2]:020d}.log", one[half[0]:] + two[:b2[2][0]]
    else:                                       # other bytes at the same offsets (a value changed, CRC made good)
        data = bytearray(one[half[0]:])
        data[half[1] - 3] ^= 0x01
        data[kpy.V2_CRC_AT:kpy.V2_ATTR_AT] = struct.pack(">I", kpy.crc32c(data[kpy.V2_ATTR_AT:half[1]]))
        name, data = f"{half[2]:020d}.log", bytes(data)
    with open(os.path.join(part, name), "wb") as f:
        f.write(data)
    return os.path.join(part, name if kind != "straddling" else logs[1])


@pytest.mark.parametrize("kind", ["second-half", "first-segment-half-named-below", "straddling", "differing"])
def test_overlapping_segments_resolved_or_refused(partitions, kind, tmp_path, capsys):
    src = partitions["writer"]
    want = kp_records(src)
    part = str(shutil.copytree(src, tmp_path / "t-0"))
    blamed = _overlap(part, kind)
    code, _, problems = verify([part], capsys)
    assert code == 1
    errors = [p for p in problems if p.get("severity") == "error"]
    assert len(errors) == (2 if kind == "straddling" else 1), errors
    assert errors[0]["file"] == blamed                  # the copy, not the intact segment
    before = hashes(part)
    plan = recover(part)
    if kind == "differing":
        assert len(plan.refusals) == 1 and all(os.path.join(part, n) in plan.refusals[0]
                                               for n in (logs_of(src)[1], os.path.basename(blamed)))
        assert os.path.join(part, logs_of(src)[1]) in errors[0]["message"]           # verify names both too
        with pytest.raises(RecoveryError, match="refused, nothing was changed"):
            recover(part, apply=True, backup=tmp_path / "bk")
        assert hashes(part) == before
        return
    assert not plan.refusals and plan.offsets_lost == 0
    fixes = [a for a in plan.actions if a.duplicate_of is not None]
    assert fixes and all(a.damage and a.kind in (ActionKind.DELETE, ActionKind.TRUNCATE) for a in fixes)
    recover(part, apply=True, backup=tmp_path / "bk")
    assert kp_records(part) == want                     # each offset once, none lost
    assert verify([part], capsys)[0] == 0
    assert recover(part).clean


# ----------------------------------------------------------------------------------------------
# 7. a garbage leader-epoch-checkpoint

def test_garbage_leader_epoch_checkpoint_rebuilt_from_the_batches(tmp_path, capsys):
    """Batches written by kafka-python under leader epochs 0, 0, 3, 3, 2 (a late batch of an older leader), 7:
    LogSegment.recover assigns an epoch at the first batch above the latest one, so the file comes back as
    epochs 0, 3, 7 at those batches' base offsets -- whatever stood in it."""
    part = tmp_path / "t-0"
    part.mkdir()
    epochs, parts, off, want = [0, 0, 3, 3, 2, 7], [], 0, []
    for e in epochs:
        parts.append(kpy.build_v2([kpy.Rec(off + i, 1000 + off + i, None, b"x%d" % (off + i)) for i in range(5)],
                                  partition_leader_epoch=e))
        if not want or e > want[-1][0]:
            want.append((e, off))
        off += 5
    (part / f"{0:020d}.log").write_bytes(b"".join(parts))
    (part / "leader-epoch-checkpoint").write_bytes(b"0\n1\nthis is not\0 a checkpoint\n")
    assert verify([part], capsys)[0] == 1
    plan = recover(part)
    act = [a for a in plan.actions if a.file.endswith("leader-epoch-checkpoint")]
    assert len(act) == 1 and "LogSegment.recover" in act[0].message
    recover(part, apply=True, backup=tmp_path / "bk")
    assert kafkafmt.read_leader_epoch_checkpoint(str(part / "leader-epoch-checkpoint"))["entries"].tolist() == want
    assert verify([part], capsys)[0] == 0 and recover(part).clean


# ----------------------------------------------------------------------------------------------
# 8. the damage matrix: log dirs written by kafka-python's builders

PID, TXN_ABORT, TXN_COMMIT = 7, 9, 11


def _v2_batches():
    """(batches of three segments, leader epochs): 10-record batches from offset 100 (the ones before deleted by
    retention) of an idempotent producer and of plain producers under leader epochs 0, 2 and 5; an aborted and
    a committed transaction in the middle segment."""
    segs, off, seq, epochs = [[], [], []], 100, 0, []
    for k in range(15):
        recs = [kpy.Rec(off + i, 1_700_000_000_000 + off + i, b"k%d" % ((off + i) % 13), b"value-%d" % (off + i))
                for i in range(10)]
        epoch = 0 if k < 5 else 2 if k < 10 else 5
        if not epochs or epoch > epochs[-1][0]:
            epochs.append((epoch, off))
        kw = dict(producer_id=PID, producer_epoch=0, base_sequence=seq) if k % 3 == 0 else {}
        seq += 10 if k % 3 == 0 else 0
        segs[k // 5].append(kpy.build_v2(recs, "gzip" if k % 4 == 1 else 0, partition_leader_epoch=epoch, **kw))
        off += 10
        if k == 7:
            for pid, ctype in ((TXN_ABORT, 0), (TXN_COMMIT, 1)):
                recs = [kpy.Rec(off + i, 1_700_000_000_000 + off + i, b"t", b"txn-%d" % (off + i)) for i in range(3)]
                segs[1].append(kpy.build_v2(recs, 0, transactional=True, producer_id=pid, producer_epoch=0,
                                            base_sequence=0, partition_leader_epoch=epoch))
                off += 3
            for pid, ctype in ((TXN_ABORT, 0), (TXN_COMMIT, 1)):
                segs[1].append(kpy.build_control_v2(off, ctype, producer_id=pid, producer_epoch=0,
                                                    partition_leader_epoch=epoch, timestamp=1_700_000_000_000 + off))
                off += 1
    return segs, epochs


def _legacy_batches():
    """Two segments of magic-1 gzip wrappers of 10 records (broker-written: wrapper offset = last offset)."""
    segs, off = [[], []], 0
    for k in range(8):
        recs = [kpy.Rec(off + i, 1_700_000_000_000 + off + i, None, kpy.compressible(off + i, 4)) for i in range(10)]
        segs[k // 4].append(kpy.build_legacy(recs, 1, "gzip"))
        off += 10
    return segs


def _first_offset(batch):
    return kpy.kp_decode(batch, include_control=True)["records"][0]["offset"]


@pytest.fixture(scope="module")
def clean_dir(tmp_path_factory):
    """A log dir as a broker leaves it after a clean shutdown: segments written by kafka-python, indexes and
    producer snapshots from a first recover (every later dry run on it has nothing to do), checkpoints."""
    root = tmp_path_factory.mktemp("matrix") / "logs"
    root.mkdir()
    (root / "meta.properties").write_text("version=0\nbroker.id=1\n")
    v2, epochs = _v2_batches()
    for name, segs in (("t-0", v2), ("u-0", _legacy_batches())):
        part = root / name
        part.mkdir()
        for seg in segs:
            (part / f"{_first_offset(seg[0]):020d}.log").write_bytes(b"".join(seg))
    sidefiles.write_leader_epoch_checkpoint(root / "t-0" / "leader-epoch-checkpoint", epochs)
    sidefiles.write_offset_checkpoint(root / "recovery-point-offset-checkpoint", {("t", 0): 0, ("u", 0): 0})
    sidefiles.write_offset_checkpoint(root / "log-start-offset-checkpoint", {("t", 0): 100, ("u", 0): 0})
    recover(root, apply=True, backup=root.parent / "first-recover")
    assert recover(root).clean
    return root


def _seg(root, part="t-0", k=0):
    return os.path.join(root, part, logs_of(os.path.join(root, part))[k])


def _side(root, suffix, part="t-0", k=0):
    return _seg(root, part, k)[:-len(".log")] + suffix


def _flip(path, at):
    data = bytearray(open(path, "rb").read())
    data[at] ^= 0xFF
    open(path, "wb").write(bytes(data))


def _append(path, data):
    with open(path, "ab") as f:
        f.write(data)


def _middle_batch(path, k=None):
    b = batches_of(path)
    return b[len(b) // 2 if k is None else k]


def _half_swap(root):
    seg = _seg(root, k=1)
    data = open(seg, "rb").read()
    b = batches_of(seg)
    keep = b"".join(data[p:p + s] for i, (p, s, _, _) in enumerate(b) if i % 2 == 0 or i == len(b) - 1)
    open(seg + ".swap", "wb").write(keep)
    _append(_seg(root) + ".deleted", b"old")


def _leftovers(root):
    part = os.path.join(root, "t-0")
    shutil.copytree(part, os.path.join(root, "t-1.8f3c0e7b4b0a4d0c9e8a7b6c5d4e3f2a-delete"))
    _append(_seg(root) + ".cleaned", b"x" * 10)
    _append(_side(root, ".index") + ".kafkafmt-tmp", b"x")
    _append(os.path.join(part, f"{99999:020d}.timeindex"), bytes(12))


def _renamed(which, shift, part="t-0"):
    def damage(root):
        folder = os.path.join(root, part)
        bases = [int(n[:20]) for n in logs_of(folder)]
        base = {"first": bases[0], "middle": bases[1], "last": bases[-1]}[which]
        rename_segment(folder, base, base + shift)
    return damage


def _overlapping(kind):
    return lambda root: _overlap(os.path.join(root, "t-0"), kind)


def _commit_marker(root):
    """The COMMIT marker's CRC damaged: keeping the batches after it would leave its transaction open."""
    seg, pos = _seg(root, k=1), 0
    for b in MemoryRecords(open(seg, "rb").read()):
        if b.is_control_batch and b.producer_id == TXN_COMMIT:
            break
        pos += b.size_in_bytes
    _flip(seg, pos + kpy.V2_CRC_AT)


DAMAGE = {
    "torn-tail": lambda r: _append(_seg(r, k=2), bytes(8) + (300).to_bytes(4, "big") + b"\0\0\0\0\x02torn"),
    "zero-tail": lambda r: _append(_seg(r, k=2), bytes(5000)),
    "corrupt-middle": lambda r: _flip(_seg(r), _middle_batch(_seg(r))[0] + 70),
    "corrupt-first-batch": lambda r: _flip(_seg(r, k=1), 70),
    "corrupt-legacy-wrapper": lambda r: _flip(_seg(r, "u-0"), _middle_batch(_seg(r, "u-0"))[0] + 40),
    "lost-index": lambda r: os.remove(_side(r, ".index", k=1)),
    "garbage-index": lambda r: open(_side(r, ".index", k=1), "wb").write(os.urandom(20)),
    "stale-timeindex": lambda r: os.truncate(_side(r, ".timeindex"), os.path.getsize(_side(r, ".timeindex")) - 12),
    "zero-filled-timeindex": lambda r: _append(_side(r, ".timeindex", k=2), bytes(12 * 4096)),
    "lost-txnindex": lambda r: os.remove(_side(r, ".txnindex", k=1)),
    "garbage-txnindex": lambda r: open(_side(r, ".txnindex", k=1), "wb").write(b"\x00\x01garbage"),
    "half-swap": _half_swap,
    "leftovers": _leftovers,
    "garbage-snapshot": lambda r: open(os.path.join(r, "t-0", f"{0:020d}.snapshot"), "wb").write(b"junk"),
    "snapshot-past-end": lambda r: shutil.copy(
        [os.path.join(r, "t-0", n) for n in os.listdir(os.path.join(r, "t-0")) if n.endswith(".snapshot")][0],
        os.path.join(r, "t-0", f"{10 ** 6:020d}.snapshot")),
    "log-start-past-end": lambda r: sidefiles.write_offset_checkpoint(
        os.path.join(r, "log-start-offset-checkpoint"), {("t", 0): 10 ** 9, ("u", 0): 0}),
    "garbage-recovery-point": lambda r: open(os.path.join(r, "recovery-point-offset-checkpoint"), "w").write("x"),
    "garbage-epoch-checkpoint": lambda r: open(os.path.join(r, "t-0", "leader-epoch-checkpoint"), "wb").write(
        b"0\n1\nthis is not\0 a checkpoint\n"),
    "unsound-epoch-checkpoint": lambda r: sidefiles.write_leader_epoch_checkpoint(
        os.path.join(r, "t-0", "leader-epoch-checkpoint"), [(0, 100), (5, 140), (2, 150)]),
    "epochs-past-end": lambda r: sidefiles.write_leader_epoch_checkpoint(
        os.path.join(r, "t-0", "leader-epoch-checkpoint"), [(0, 100), (2, 150), (5, 208), (9, 10 ** 6)]),
    "overlap-second-half": _overlapping("second-half"),
    "overlap-first-half-named-below": _overlapping("first-half-named-below"),
    "overlap-first-segment-half-named-below": _overlapping("first-segment-half-named-below"),
    "overlap-straddling": _overlapping("straddling"),
    "overlap-differing": _overlapping("differing"),
    "damaged-commit-marker": _commit_marker,
    "renamed-legacy-first-5": _renamed("first", 5, "u-0"),
    "renamed-legacy-last-15": _renamed("last", 15, "u-0"),
}
DAMAGE.update({f"renamed-{w}-{s}": _renamed(w, s) for w in ("first", "middle", "last") for s in (1, 9, 10, 11, 20)})

#: the cases where recover must refuse (what it cannot repair without a choice)
REFUSED = {"overlap-differing", "damaged-commit-marker"}
#: records a case removes on purpose (the cleaner's swap drops what it compacted): not a loss
COMPACTED = {"half-swap"}


def _agree(roots, clean, tmp_path, capsys, name):
    """The invariant, for ``roots``: copies of the log dir ``clean``, damaged."""
    before = all_records(clean)
    damaged = {str(r): hashes(r) for r in roots}
    plan = recover(roots)
    code, summary, _ = verify(roots, capsys)
    if plan.clean:
        assert code == 0, name                                       # "nothing to do" means verify passes
    if code == 0:
        assert sum(summary["pendingFixes"].values()) == len(plan.actions), (name, summary, plan.text())
    if name in REFUSED:
        assert plan.refusals, name
        with pytest.raises(RecoveryError, match="refused, nothing was changed"):
            recover(roots, apply=True, backup=tmp_path / "bk")
        p = kcli.run("recover", "--apply", "--backup", tmp_path / "bk2", *roots)
        assert p.returncode == 1 and "refused" in p.stderr, p.stderr
        named = [w for r in plan.refusals for w in r.replace(",", " ").split() if os.sep in w]
        assert named and all(w.rstrip(":") in p.stderr for w in named)          # names what it cannot repair
        assert {str(r): hashes(r) for r in roots} == damaged
        return
    assert not plan.refusals, (name, plan.refusals)
    recover(roots, apply=True, backup=tmp_path / "bk")
    assert verify(roots, capsys)[0] == 0, name
    assert recover(roots).clean, (name, recover(roots).text())
    for root in roots:
        after = all_records(root)                               # every byte intact, each offset once
        lost = [(a, b) for act in plan.actions if os.path.dirname(os.path.dirname(act.file)) == str(root)
                for a, b in act.lost]
        for part, recs in before.items():
            gone = set(recs) - set(after[part])
            assert all(after[part][o] == v for o, v in recs.items() if o in after[part]), (name, part)
            if name not in COMPACTED:                       # every record gone was announced as lost
                assert all(any(a <= o and (b is None or o <= b) for a, b in lost) for o in gone), \
                    (name, part, sorted(gone))


@pytest.mark.parametrize("name", sorted(DAMAGE))
def test_matrix_recover_then_verify_passes_or_recover_refuses(clean_dir, name, tmp_path, capsys):
    root = shutil.copytree(clean_dir, tmp_path / "logs")
    DAMAGE[name](str(root))
    _agree([root], clean_dir, tmp_path, capsys, name)


def test_matrix_clean_dir_needs_nothing(clean_dir, capsys):
    code, summary, problems = verify([clean_dir], capsys)
    assert code == 0 and summary["pendingFixes"] == {} and not problems


@pytest.mark.parametrize("case", ["corrupt-copy", "torn-and-zero-tails"])
def test_matrix_damaged_copies_in_several_roots(clean_dir, case, tmp_path, capsys):
    """Copies of the same log dir as two brokers hold them, each damaged its own way."""
    a = shutil.copytree(clean_dir, tmp_path / "broker-1")
    b = shutil.copytree(clean_dir, tmp_path / "broker-2")
    if case == "corrupt-copy":
        DAMAGE["corrupt-middle"](str(a))
    else:
        DAMAGE["torn-tail"](str(a))
        DAMAGE["zero-tail"](str(b))
    _agree([a, b], clean_dir, tmp_path, capsys, case)


def test_verify_counts_what_recover_would_still_do(clean_dir, tmp_path, capsys):
    """A dir verify passes, on which a dry run of recover would still make routine fixes (a time index without
    its final entry, a producer snapshot missing at the log end -- as a broker after an unclean shutdown): the
    count is in verify's summary, the exit code stays 0."""
    root = shutil.copytree(clean_dir, tmp_path / "logs")
    for n in os.listdir(root / "t-0"):
        if n.endswith(".snapshot"):
            os.remove(root / "t-0" / n)
    DAMAGE["stale-timeindex"](str(root))
    code, summary, _ = verify([root], capsys)
    assert code == 0 and summary["pendingFixes"] == {".timeindex rebuilt": 1, "producer snapshot written": 1}
    p = kcli.run("verify", root, check=0)
    assert "2 routine fixes pending" in p.stdout.splitlines()[-1]
    recover(root, apply=True, backup=tmp_path / "bk")
    assert verify([root], capsys)[1]["pendingFixes"] == {}


@pytest.mark.slow
def test_repairs_killed_at_every_step(clean_dir, tmp_path):
    """A renamed segment, a stray overlapping copy and a garbage leader-epoch-checkpoint repaired by the command
    line killed after each durable point: every file is as it was or as it is meant to be, a second run finishes
    the repair, and undoing both manifests gives the damaged dir back byte for byte."""
    from kafkafmt.recovery import undo

    pristine = shutil.copytree(clean_dir, tmp_path / "pristine")
    for name in ("renamed-last-11", "overlap-second-half", "garbage-epoch-checkpoint"):
        DAMAGE[name](str(pristine))
    old = hashes(pristine)
    final = shutil.copytree(pristine, tmp_path / "final")
    kcli.run("recover", "--apply", "-q", "--backup", tmp_path / "bk-final", final, check=0)
    new = hashes(final)
    n = 1
    while True:
        work = shutil.copytree(pristine, tmp_path / f"w{n}")
        p = kcli.run("recover", "--apply", "-q", "--backup", tmp_path / f"bk{n}", work,
                     env={"KAFKAFMT_CRASH_AFTER": str(n)})
        if p.returncode == 0:
            break
        assert p.returncode == 86, p.stderr
        now = hashes(work)
        for rel in set(old) | set(new) | set(now):
            assert now.get(rel) in (old.get(rel), new.get(rel)), (n, rel)
        kcli.run("recover", "--apply", "-q", "--backup", tmp_path / f"bk{n}-again", work, check=0)
        assert hashes(work) == new, n
        for bk in (f"bk{n}-again", f"bk{n}"):
            if os.path.exists(tmp_path / bk / "manifest.jsonl"):
                undo(tmp_path / bk / "manifest.jsonl")
        assert hashes(work) == old, n
        shutil.rmtree(work)
        n += 1
    assert n > 10
