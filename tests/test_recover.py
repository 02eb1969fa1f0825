"""kafkafmt recover: rebuilt indexes against the broker's, repairs of damage made on purpose, undo,
the broker lock, object storage refused."""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import kafkafmt
from kafkafmt import LogWriter
from kafkafmt.log import sidefiles
from kafkafmt.cli import main as cli_main
from kafkafmt.errors import LogDirLockedError, NotALogDirError, RecoveryError
from kafkafmt.recovery import ActionKind, rebuild_indexes, recover, undo

import kcli
import kpy

# ----------------------------------------------------------------------------------------------
# helpers


def hashes(root):
    """{relative path: sha256} of every file below root (the lock file and temporary files aside)."""
    out = {}
    for d, _, files in os.walk(root):
        for f in files:
            if f == ".lock" or f.endswith(".kafkafmt-tmp"):
                continue
            p = os.path.join(d, f)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, root)] = hashlib.sha256(fh.read()).hexdigest()
    return out


def verify_ok(path):
    assert cli_main(["verify", "-q", "--no-progress", str(path)]) == 0


def records(folder):
    """{offset: value} of what a salvage read gets from a partition folder (every record on disk:
    from offset 0, whatever log start offset a checkpoint names)."""
    r = kafkafmt.read_log_dir(str(folder), errors="salvage", threads=1, start_offset=0)
    return dict(zip(np.asarray(r.offset).tolist(), [bytes(v) for v in r.value.to_pylist()]))


def make_log_dir(root, transactions=True):
    """A log dir with one partition of three segments: plain batches, an idempotent producer, an
    aborted and a committed transaction; checkpoints as a broker writes them."""
    root.mkdir(parents=True)
    (root / "meta.properties").write_text("version=0\nbroker.id=0\n")
    with LogWriter(root / "t-0", segment_bytes=12000) as w:
        for i in range(48):
            w.append(values=[b"v%03d-%d" % (i, j) * 20 for j in range(4)],
                     timestamps=[1000 + 10 * i + j for j in range(4)], producer_id=3 if i % 3 == 0 else -1)
            if transactions and i == 20:
                w.append(values=[b"t1"], timestamps=[1300], producer_id=7, transactional=True)
                w.append(values=[b"t2"], timestamps=[1301], producer_id=8, transactional=True)
                w.append_control("abort", producer_id=7, timestamp=1302)
                w.append_control("commit", producer_id=8, timestamp=1303)
    sidefiles.write_offset_checkpoint(root / "recovery-point-offset-checkpoint", {("t", 0): 0})
    sidefiles.write_offset_checkpoint(root / "log-start-offset-checkpoint", {("t", 0): 0})
    return root


def segment_logs(folder):
    return sorted(p for p in os.listdir(folder) if p.endswith(".log"))


# ----------------------------------------------------------------------------------------------
# the real broker dirs

def _real_segments(corpus):
    out = []
    for d, _, files in os.walk(corpus / "broker-dirs"):
        for f in files:
            if f.endswith(".log") and len(f) == 24:
                out.append(os.path.join(d, f))
    return sorted(out)


@pytest.mark.parametrize("mode", ["batch", "record"])
def test_rebuilt_indexes_equal_the_brokers(real_corpus, mode):
    """Rebuilt from the .log alone, every index the broker wrote comes out the same, in both time
    index modes (the corpus's brokers -- Kafka 2.7 and 3.x -- appended one batch at a time, without
    restarts inside a segment, and their batches carry the max timestamp in their last record; the
    rules for the segments where a rebuild differs are in docs/guide/verify-repair.md)."""
    compared = 0
    for log in _real_segments(real_corpus):
        r = rebuild_indexes(log, timeindex_offsets=mode)
        assert r.scan.clean, log
        stem = log[:-len(".log")]
        if os.path.exists(stem + ".index"):
            assert np.array_equal(sidefiles.read_index(stem + ".index"), r.index), log
            compared += 1
        if os.path.exists(stem + ".timeindex"):
            assert np.array_equal(sidefiles.read_timeindex(stem + ".timeindex"), r.timeindex), log
            compared += 1
    assert compared >= 5


def test_a_valid_index_that_differs_from_a_rebuild_is_left_alone(tmp_path):
    """A broker restarted inside a segment starts counting index.interval.bytes from 0 again, so its
    .index has entries at other batches than a rebuild from scratch: both are valid, and recover
    keeps the broker's (it rewrites only missing, invalid or stale indexes)."""
    root = make_log_dir(tmp_path / "logs")
    part = root / "t-0"
    seg = part / segment_logs(part)[0]
    t = kafkafmt.read_segment(seg).batches
    table = {"position": np.asarray(t.position), "size": np.asarray(t.size), "last_offset": np.asarray(t.last_offset),
             "max_timestamp": np.asarray(t.max_timestamp)}
    denser, _ = sidefiles.build_index_entries(table, 1024, rolled=True)
    rebuilt = rebuild_indexes(seg).index
    assert len(denser) > len(rebuilt)
    sidefiles.write_index(str(seg).replace(".log", ".index"), denser, int(segment_logs(part)[0][:20]))
    verify_ok(root)
    assert not [a for a in recover(root).actions if a.file.endswith(".index")]


def test_rebuilt_snapshot_equals_the_brokers(real_corpus):
    """Producer state replayed from the log equals the broker's snapshot at the log end offset."""
    compared = 0
    for log in _real_segments(real_corpus):
        folder = os.path.dirname(log)
        if segment_logs(folder)[-1] != os.path.basename(log):
            continue
        r = rebuild_indexes(log)
        end = r.scan.next_offset
        snap = os.path.join(folder, f"{end:020d}.snapshot")
        if os.path.exists(snap):
            theirs = np.sort(sidefiles.read_producer_snapshot(snap)["entries"], order="producer_id")
            assert np.array_equal(theirs, r.producer_state.snapshot_entries()), snap
            compared += 1
    assert compared >= 1


def test_real_dirs_recovered_copies_verify(real_corpus, tmp_path):
    for src in sorted((real_corpus / "broker-dirs").iterdir()):
        dst = tmp_path / src.name
        shutil.copytree(src, dst)
        before = hashes(dst)
        plan = recover(dst, apply=True, backup=tmp_path / f"{src.name}.bk")
        assert not any(a.kind in (ActionKind.TRUNCATE, ActionKind.CUT, ActionKind.DELETE) for a in plan.actions)
        verify_ok(dst)
        assert recover(dst).clean, recover(dst).text()            # a second run finds nothing to do
        if plan.manifests:
            undo(plan.manifests[0])
        assert hashes(dst) == before


# ----------------------------------------------------------------------------------------------
# damage made on purpose

def _torn_tail(part):
    last = part / segment_logs(part)[-1]
    with open(last, "ab") as f:
        f.write(bytes(8) + (300).to_bytes(4, "big") + b"\x00\x00\x00\x00\x02torn")


def _zero_tail(part):
    last = part / segment_logs(part)[-1]
    with open(last, "ab") as f:
        f.write(bytes(5000))


def _corrupt_middle(part):
    first = part / segment_logs(part)[0]
    data = bytearray(first.read_bytes())
    data[len(data) // 2] ^= 0xFF
    first.write_bytes(bytes(data))


def _lost_index(part):
    os.remove(part / segment_logs(part)[1].replace(".log", ".index"))


def _stale_timeindex(part):
    ti = part / segment_logs(part)[0].replace(".log", ".timeindex")
    ti.write_bytes(ti.read_bytes()[:-12])                    # the final (roll) entry missing


def _half_swap(part):
    """The cleaner's swap left half done: segment 1 rewritten as <base>.log.swap (compacted: every
    other batch), its old files still there, as after a crash in LocalLog.replaceSegments."""
    name = segment_logs(part)[1]
    base = int(name[:20])
    data = (part / name).read_bytes()
    t, _ = kafkafmt.scan_batches(data)
    keep = b"".join(data[int(p):int(p) + int(s)] for k, (p, s) in enumerate(zip(t["position"], t["size"]))
                    if k % 2 == 0 or k == len(t) - 1)
    (part / (name + ".swap")).write_bytes(keep)
    idx, tidx = sidefiles.build_index_entries(kafkafmt.scan_batches(keep)[0])
    (part / (name[:-4] + ".index.swap")).write_bytes(sidefiles.encode_index(idx, base))
    (part / (name[:-4] + ".timeindex.swap")).write_bytes(sidefiles.encode_timeindex(tidx, base))
    (part / "00000000000000000000.log.deleted").write_bytes(b"old")
    return base


DAMAGE = {"torn_tail": _torn_tail, "zero_tail": _zero_tail, "corrupt_middle": _corrupt_middle,
          "lost_index": _lost_index, "stale_timeindex": _stale_timeindex, "half_swap": _half_swap}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_damage_repaired_and_undone(tmp_path, damage):
    root = make_log_dir(tmp_path / "logs")
    part = root / "t-0"
    DAMAGE[damage](part)
    if damage != "half_swap":
        assert cli_main(["verify", "-q", "--no-progress", str(root)]) in (0, 1)
    damaged = hashes(root)
    salvaged = records(part)
    plan = recover(root)
    assert plan.actions and hashes(root) == damaged          # a dry run writes nothing
    plan = recover(root, apply=True, backup=tmp_path / "bk")
    verify_ok(root)
    after = records(part)
    if damage == "half_swap":
        # the swap replaces its segment: the records it dropped are gone, as the cleaner decided
        assert set(after) < set(salvaged)
        assert not [n for n in os.listdir(part) if n.endswith((".swap", ".deleted"))]
    else:
        assert after == salvaged                             # every intact record is still there
    assert recover(root).clean
    undo(plan.manifests[0])
    assert hashes(root) == damaged


def test_corrupt_middle_keeps_intact_batches_kafka_compatible_does_not(tmp_path):
    root = make_log_dir(tmp_path / "logs")
    part = root / "t-0"
    _corrupt_middle(part)
    salvaged = records(part)
    copy = tmp_path / "copy"
    shutil.copytree(root, copy)
    plan = recover(root, apply=True, backup=tmp_path / "bk1")
    assert [a.kind for a in plan.actions if a.kind in (ActionKind.CUT, ActionKind.TRUNCATE)] == [ActionKind.CUT]
    assert records(part) == salvaged
    kplan = recover(copy, apply=True, kafka_compatible=True, backup=tmp_path / "bk2")
    verify_ok(copy)
    kept = records(copy / "t-0")
    cut = next(a for a in kplan.actions if a.kind is ActionKind.TRUNCATE)
    assert max(kept) < cut.offset and len(segment_logs(copy / "t-0")) == 1     # later segments deleted
    assert set(kept) < set(salvaged)
    end = max(kept) + 1
    assert sidefiles.read_offset_checkpoint(copy / "recovery-point-offset-checkpoint")[("t", 0)] == end


def test_txnindex_snapshot_and_checkpoints_rebuilt(tmp_path):
    root = make_log_dir(tmp_path / "logs")
    part = root / "t-0"
    txn = [n for n in os.listdir(part) if n.endswith(".txnindex")]
    assert len(txn) == 1
    original = (part / txn[0]).read_bytes()
    os.remove(part / txn[0])
    sidefiles.write_offset_checkpoint(root / "log-start-offset-checkpoint", {("t", 0): 10**9})
    plan = recover(root, apply=True, backup=tmp_path / "bk")
    assert (part / txn[0]).read_bytes() == original
    verify_ok(root)
    end = max(records(part)) + 1
    snap = sidefiles.read_producer_snapshot(part / f"{end:020d}.snapshot")["entries"]
    by_pid = {int(e["producer_id"]): e for e in snap}
    assert set(by_pid) == {3, 7, 8}
    assert int(by_pid[7]["current_txn_first_offset"]) == -1 and int(by_pid[3]["last_sequence"]) >= 0
    assert sidefiles.read_offset_checkpoint(root / "recovery-point-offset-checkpoint")[("t", 0)] == end
    assert sidefiles.read_offset_checkpoint(root / "log-start-offset-checkpoint")[("t", 0)] == end
    assert plan.manifests and os.path.exists(plan.manifests[0])


def test_leftover_folders_and_files(tmp_path):
    root = make_log_dir(tmp_path / "logs", transactions=False)
    gone = root / "t-1.8f3c0e7b4b0a4d0c9e8a7b6c5d4e3f2a-delete"
    shutil.copytree(root / "t-0", gone)
    (root / "t-0" / "00000000000000000000.log.cleaned").write_bytes(b"x" * 10)
    (root / "t-0" / "00000000000000000000.index.kafkafmt-tmp").write_bytes(b"x")
    (root / "t-0" / "00000000000000099999.timeindex").write_bytes(bytes(12))     # orphan index
    before = hashes(root)
    plan = recover(root, apply=True, backup=tmp_path / "bk")
    assert not gone.exists()
    names = os.listdir(root / "t-0")
    assert not [n for n in names if n.endswith((".cleaned", ".kafkafmt-tmp")) or n.startswith("000000000000000999")]
    verify_ok(root)
    undo(plan.manifests[0])
    assert hashes(root) == before


# ----------------------------------------------------------------------------------------------
# crashes: killed after each durable point, the files are old or new, and a re-run completes

def _run_recover(root, backup, crash_after=None):
    env = {"KAFKAFMT_CRASH_AFTER": str(crash_after)} if crash_after is not None else {}
    return kcli.run("recover", "--apply", "-q", "--backup", backup, root, env=env)


@pytest.mark.slow
def test_killed_at_each_step(tmp_path):
    root = make_log_dir(tmp_path / "logs")
    part = root / "t-0"
    _corrupt_middle(part)
    _torn_tail(part)
    _lost_index(part)
    (part / "00000000000000000000.log.deleted").write_bytes(b"old")
    pristine = tmp_path / "pristine"
    shutil.copytree(root, pristine)
    old = hashes(root)
    final_dir = tmp_path / "final"
    shutil.copytree(root, final_dir)
    p = _run_recover(final_dir, tmp_path / "bk-final")
    assert p.returncode == 0, p.stderr
    new = hashes(final_dir)
    n = 1
    while True:
        work = tmp_path / f"w{n}"
        shutil.copytree(pristine, work)
        p = _run_recover(work, tmp_path / f"bk{n}", crash_after=n)
        if p.returncode == 0:
            break                                   # past the last durable point
        assert p.returncode == 86, p.stderr
        now = hashes(work)
        for rel in set(old) | set(new) | set(now):
            assert now.get(rel) in (old.get(rel), new.get(rel)), (n, rel)
        q = _run_recover(work, tmp_path / f"bk{n}-again")
        assert q.returncode == 0, q.stderr
        assert hashes(work) == new, n
        # both manifests undone, newest first: the damaged original again
        if os.path.exists(tmp_path / f"bk{n}-again" / "manifest.jsonl"):
            undo(tmp_path / f"bk{n}-again" / "manifest.jsonl")
        if os.path.exists(tmp_path / f"bk{n}" / "manifest.jsonl"):
            undo(tmp_path / f"bk{n}" / "manifest.jsonl")
        assert hashes(work) == old, n
        shutil.rmtree(work)
        n += 1
    assert n > 10


# ----------------------------------------------------------------------------------------------
# the lock, object storage, the command line

HOLD_LOCK = textwrap.dedent("""
    import fcntl, sys, time
    f = open(sys.argv[1], "a+")
    fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    print("locked", flush=True)
    time.sleep(60)
""")


def test_locked_log_dir_refused_unless_forced(tmp_path):
    root = make_log_dir(tmp_path / "logs")
    _torn_tail(root / "t-0")
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(root / ".lock")], stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(LogDirLockedError):
            recover(root, apply=True, backup=tmp_path / "bk")
        p = kcli.run("recover", "--apply", root)
        assert p.returncode == 1 and "locked by another process" in p.stderr
        plan = recover(root, apply=True, force=True, backup=tmp_path / "bk2")
        assert plan.applied
        verify_ok(root)
    finally:
        holder.kill()
        holder.wait()


def test_object_storage_refused():
    with pytest.raises(NotALogDirError, match="local log dirs only"):
        recover("s3://bucket/kafka-logs")
    p = kcli.run("recover", "s3://bucket/kafka-logs")
    assert p.returncode == 2 and "object storage" in p.stderr                 # bad input


def test_cli_dry_run_apply_undo(tmp_path):
    root = make_log_dir(tmp_path / "logs")
    _corrupt_middle(root / "t-0")
    damaged = hashes(root)
    p = kcli.run("recover", root)
    assert p.returncode == 1 and "cut:" in p.stdout and "DRY RUN" in p.stdout and "position" in p.stdout
    assert hashes(root) == damaged
    p = kcli.run("recover", "--apply", "--backup", tmp_path / "bk", root, check=0)
    assert "APPLIED" in p.stdout
    kcli.run("verify", root, check=0)
    kcli.run("recover", root, check=0)
    p = kcli.run("recover", "--undo", tmp_path / "bk" / "manifest.jsonl", check=0)
    assert "UNDONE" in p.stdout
    assert hashes(root) == damaged


def test_single_segment_and_partition_paths(tmp_path):
    root = make_log_dir(tmp_path / "logs")
    part = root / "t-0"
    _torn_tail(part)
    last = part / segment_logs(part)[-1]
    plan = recover(last)
    assert [a.kind for a in plan.actions] == [ActionKind.TRUNCATE]
    plan = recover(part, apply=True, backup=tmp_path / "bk")
    verify_ok(root)
    assert any(a.file.endswith("recovery-point-offset-checkpoint") for a in plan.actions)


# ----------------------------------------------------------------------------------------------
# a time index left preallocated (zero-filled tail), as after a crash

def test_zero_filled_timeindex_flagged_by_verify_and_rebuilt(tmp_path):
    """Kafka's TimeIndex.sanityCheck reads the file by its length: the zeros are entries, the last
    timestamp 0 is below the first, the index is corrupt and rebuilt. verify says so, recover
    rebuilds it to its used length (the entries the broker wrote, nothing more)."""
    root = make_log_dir(tmp_path / "logs")
    part = root / "t-0"
    ti = part / segment_logs(part)[-1].replace(".log", ".timeindex")
    written = ti.read_bytes()
    assert len(written) and len(written) % 12 == 0
    with open(ti, "ab") as f:
        f.write(bytes((10 << 20) // 12 * 12))            # segment.index.bytes of zeros
    p = kcli.run("verify", root, check=1)
    assert "zero-filled tail" in p.stdout and "TimeIndex.sanityCheck" in p.stdout and ti.name in p.stdout
    plan = recover(root)
    act = [a for a in plan.actions if a.file == str(ti)]
    assert len(act) == 1 and "zero-filled tail" in act[0].message
    recover(root, apply=True, backup=tmp_path / "bk")
    assert ti.read_bytes() == written
    verify_ok(root)
    assert recover(root).clean


# ----------------------------------------------------------------------------------------------
# a segment whose file name disagrees with its content

def _rename_segment(part, old_base, new_base):
    for suffix in (".log", ".index", ".timeindex", ".txnindex"):
        src = part / f"{old_base:020d}{suffix}"
        if src.exists():
            src.rename(part / f"{new_base:020d}{suffix}")


@pytest.mark.parametrize("which", ["first", "last"])
def test_segment_named_against_its_content_renamed_to_its_true_base(tmp_path, which):
    """Files ``<base>.{log,index,timeindex}`` renamed above the first batch's base offset: the plan
    renames the segment back (as Kafka's split of such a segment names it) and rebuilds its indexes;
    before, the .index was rebuilt against the wrong base, a second run said nothing and verify
    failed."""
    root = make_log_dir(tmp_path / "logs")
    part = root / "t-0"
    intact = records(part)
    original = hashes(root)
    base = int(segment_logs(part)[0 if which == "first" else -1][:20])
    _rename_segment(part, base, base + 6)
    renamed = hashes(root)
    plan = recover(root)
    ren = [a for a in plan.actions if a.kind is ActionKind.RENAME and a.file.endswith(".log")]
    assert len(ren) == 1 and ren[0].target == str(part / f"{base:020d}.log") and "against its content" in \
        ren[0].message
    assert not plan.refusals
    p = kcli.run("recover", root)
    assert p.returncode == 1 and "named against its content" in p.stdout
    plan = recover(root, apply=True, backup=tmp_path / "bk")
    verify_ok(root)
    assert records(part) == intact
    assert recover(root).clean
    now = hashes(root)
    for rel in (f"t-0/{base:020d}.log", f"t-0/{base:020d}.index", f"t-0/{base:020d}.timeindex"):
        assert now[rel] == original[rel], rel                   # the broker's own files, byte for byte
    undo(plan.manifests[0])
    assert hashes(root) == renamed


def test_segment_named_against_its_content_refused_when_its_name_is_taken(tmp_path):
    """The true name exists already, holding other bytes at the same offsets (a copy of the segment
    under another name, with one value changed): nothing is renamed, the plan says why, naming both
    files, apply changes nothing. (A byte-for-byte copy is dropped instead: tests/test_recover_agree.py.)"""
    root = make_log_dir(tmp_path / "logs")
    part = root / "t-0"
    logs = segment_logs(part)
    second = int(logs[1][:20])
    data = bytearray((part / logs[1]).read_bytes())
    end = 12 + int.from_bytes(data[8:12], "big")
    data[end - 2] ^= 0x01                        # the first batch's last value byte, its CRC made good again
    data[17:21] = kpy.crc32c(data[21:end]).to_bytes(4, "big")
    (part / f"{second + 5:020d}.log").write_bytes(bytes(data))     # a copy named above its content
    before = hashes(root)
    plan = recover(root)
    assert plan.refusals and f"{second:020d}.log" in plan.refusals[0] and f"{second + 5:020d}.log" in \
        plan.refusals[0]
    assert not any(a.kind is ActionKind.RENAME for a in plan.actions)
    with pytest.raises(RecoveryError, match="refused, nothing was changed"):
        recover(root, apply=True, backup=tmp_path / "bk")
    p = kcli.run("recover", "--apply", "--backup", tmp_path / "bk2", root)
    assert p.returncode == 1 and "refused" in p.stderr and f"{second:020d}.log" in p.stderr
    assert hashes(root) == before
    assert not (tmp_path / "bk").exists() and not (tmp_path / "bk2").exists()


# ----------------------------------------------------------------------------------------------
# damage that removes a transaction marker

def _txn_partition(root, flip_at=17):
    """10 plain records, a 5-record transaction of producer 7, its COMMIT marker, 10 plain records;
    one byte of the COMMIT marker flipped (``flip_at`` bytes into the batch: its CRC by default)."""
    part = root / "t-0"
    with LogWriter(part) as w:
        w.append(values=[b"a%d" % i for i in range(10)], timestamps=[1000 + i for i in range(10)])
        w.append(values=[b"t%d" % i for i in range(5)], timestamps=[1100 + i for i in range(5)], producer_id=7,
                 transactional=True)
        w.append_control("commit", producer_id=7, coordinator_epoch=3, timestamp=1200)
        w.append(values=[b"b%d" % i for i in range(10)], timestamps=[1300 + i for i in range(10)])
    seg = part / segment_logs(part)[0]
    b = kafkafmt.read_segment(seg, include_control=True).batches
    at = int(b.position[np.flatnonzero(np.asarray(b.is_control))[0]])
    data = bytearray(seg.read_bytes())
    data[at + flip_at] ^= 0x01
    seg.write_bytes(bytes(data))
    return part


def _committed(part):
    r = kafkafmt.read_log_dir(str(part), isolation="read_committed", start_offset=0)
    return [bytes(v) for v in r.value.to_pylist()]


def test_damage_removing_a_commit_marker_is_said_and_refused(tmp_path):
    """Keeping the intact batches after a damaged COMMIT marker would leave producer 7's
    transaction open: read_committed readers would see 10 of 25 records. The plan says which
    producer, from which offset, how many records; apply is refused until a choice is made."""
    part = _txn_partition(tmp_path)
    before = hashes(part)
    plan = recover(part)
    assert len(plan.transactions) == 1
    t = plan.transactions[0]
    assert (t["producer_id"], t["first_offset"], t["damage_offset"], t["hidden"], t["shown"]) == (7, 10, 15, 15,
                                                                                                  "commit")
    assert plan.refusals and "--open-transactions" in plan.refusals[0]
    with pytest.raises(RecoveryError, match="producer 7's transaction from offset 10"):
        recover(part, apply=True, backup=tmp_path / "bk")
    p = kcli.run("recover", part)
    assert p.returncode == 1 and "producer 7's transaction from offset 10" in p.stdout
    p = kcli.run("recover", "--apply", "--backup", tmp_path / "bk", part)
    assert p.returncode == 1 and "nothing was changed" in p.stderr
    assert hashes(part) == before


@pytest.mark.parametrize("choice", ["truncate", "abort", "commit"])
def test_damage_removing_a_commit_marker_with_a_choice(tmp_path, choice):
    part = _txn_partition(tmp_path)
    before = hashes(part)
    plan = recover(part, apply=True, backup=tmp_path / "bk", open_transactions=choice)
    verify_ok(part)
    everything = [bytes(v) for v in kafkafmt.read_log_dir(str(part), start_offset=0).value.to_pylist()]
    plain = [b"a%d" % i for i in range(10)]
    txn = [b"t%d" % i for i in range(5)]
    after = [b"b%d" % i for i in range(10)]
    if choice == "truncate":                        # as Kafka: the log ends at the damage
        assert everything == plain + txn and _committed(part) == plain
    elif choice == "abort":
        assert everything == plain + txn + after and _committed(part) == plain + after
        assert len(kafkafmt.read_txnindex(str(part / segment_logs(part)[0]).replace(".log", ".txnindex"))) == 1
    else:
        assert everything == plain + txn + after and _committed(part) == plain + txn + after
    assert recover(part).clean
    undo(plan.manifests[0])
    assert hashes(part) == before


def test_commit_is_written_only_when_the_damaged_bytes_show_it(tmp_path):
    part = _txn_partition(tmp_path, flip_at=43)          # the producer id flipped: the marker is not shown
    plan = recover(part, open_transactions="commit")
    assert plan.transactions[0]["shown"] is None
    assert plan.refusals and "choose abort or truncate" in plan.refusals[0]
    assert not recover(part, open_transactions="abort").refusals


# ----------------------------------------------------------------------------------------------
# the plan's output: damage first, records and offsets lost, routine fixes grouped

def test_plan_output_damage_first_with_offsets_lost_routine_grouped(tmp_path):
    """One damaged batch among many healthy empty partitions (whose leader-epoch-checkpoint the
    broker's load truncates too, LeaderEpochFileCache.truncateFromEnd): the damage comes first with
    the offsets the damaged batch held -- as kafka-python reads them in an undamaged copy -- and the
    routine fixes are counted by kind, not listed one by one."""
    from kafka.record.memory_records import MemoryRecords

    root = make_log_dir(tmp_path / "logs")
    for p in range(40):
        empty = root / f"quiet-{p}"
        empty.mkdir()
        (empty / "00000000000000000000.log").write_bytes(b"")
        sidefiles.write_leader_epoch_checkpoint(empty / "leader-epoch-checkpoint",
                                                np.array([(0, 0)], sidefiles.EPOCH_ENTRY_DTYPE))
    part = root / "t-0"
    seg = part / segment_logs(part)[0]
    mr = MemoryRecords(seg.read_bytes())
    batches = []
    while mr.has_next():
        b = mr.next_batch()
        offsets = [r.offset for r in b]
        batches.append((offsets[0], offsets[-1]))
    held = batches[3]
    b = kafkafmt.read_segment(seg).batches
    data = bytearray(seg.read_bytes())
    data[int(b.position[3]) + 80] ^= 0xFF
    seg.write_bytes(bytes(data))
    plan = recover(root)
    lines = plan.text().splitlines()
    assert lines[0].startswith("damage") and lines[1].strip().startswith(f"cut: {seg}")
    assert lines[2].strip() == f"records lost: offsets {held[0]}..{held[1]} ({held[1] - held[0] + 1} offsets)"
    assert plan.offsets_lost == held[1] - held[0] + 1
    assert "  leader-epoch-checkpoint rewritten: 40 file(s)" in lines
    assert len(lines) < 30, plan.text()
    assert lines[-1].startswith("DRY RUN") and f"{held[1] - held[0] + 1} offsets lost" in lines[-1]
    p = kcli.run("recover", root)
    assert p.returncode == 1 and p.stdout.splitlines()[0].startswith("damage")
    js = [json.loads(ln) for ln in kcli.run("recover", "--json", root).stdout.splitlines()]
    cut = [j for j in js if j["type"] == "action" and j["damage"]]
    assert len(cut) == 1 and cut[0]["lost"] == [list(held)]
    assert js[-1]["offsets_lost"] == held[1] - held[0] + 1
    assert sum(1 for j in js if j["type"] == "action") == len(plan.actions)


def test_torn_tail_offsets_lost_from_its_header(tmp_path):
    """A torn final batch: the offsets it held come from its own header (base offset + last offset
    delta), which survive a tear after byte 27."""
    root = make_log_dir(tmp_path / "logs")
    part = root / "t-0"
    last = part / segment_logs(part)[-1]
    b = kafkafmt.read_segment(last).batches
    first, final = int(b.base_offset[-1]), int(b.last_offset[-1])
    os.truncate(last, int(b.position[-1]) + 40)
    plan = recover(part)
    cut = [a for a in plan.actions if a.damage]
    assert len(cut) == 1 and cut[0].lost == ((first, final),)
