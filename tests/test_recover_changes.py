"""kafkafmt recover when things go wrong: killed at every step of an apply and of an undo, the
partition changed between apply and undo (a broker appended, rolled a segment), an apply that fails
part way. Invariants, each scenario named: no intact record lost (kafka-python reads the recovered
dir whole and finds every record a salvage read found in the damaged one), undo byte-identical or
refused before any change (SHA-256 of every file), no temporary file left, the dir readable."""
import os
import shutil

import numpy as np
import pytest
from kafka.record.memory_records import MemoryRecords

import kafkafmt
import kcli
from kafkafmt.errors import RecoveryError
from kafkafmt.recovery import recover, undo
from kafkafmt.recovery.plan import TEMP_SUFFIX
from test_recover import _corrupt_middle, _lost_index, _torn_tail, hashes, make_log_dir, records, segment_logs

CRASH_EXIT = 86


# ----------------------------------------------------------------------------------------------
# the scenarios: damaged log dirs, one written here, one a copy of a real broker's

def _zero_tail_timeindex(part):
    ti = part / segment_logs(part)[-1].replace(".log", ".timeindex")
    with open(ti, "ab") as f:
        f.write(bytes(12 * 4096))                 # preallocated, never trimmed (a crash)


def written(tmp):
    """Three segments of plain, idempotent and transactional batches: a damaged batch in the first
    segment, a lost index, a torn tail, a zero-filled time index tail, a broker leftover."""
    root = make_log_dir(tmp / "logs")
    part = root / "t-0"
    _corrupt_middle(part)
    _lost_index(part)
    _torn_tail(part)
    _zero_tail_timeindex(part)
    (part / "00000000000000000000.log.deleted").write_bytes(b"old")
    return root, part


def real(tmp, corpus):
    """A KRaft broker's log dir (real files): a torn tail on the topic's segment, a damaged batch
    in the middle of __cluster_metadata, a zero-filled time index tail on __consumer_offsets."""
    root = shutil.copytree(corpus / "broker-dirs" / "Niloufar1171__LDI-POC", tmp / "logs")
    part = root / "TestTopicPatient-0"
    _torn_tail(part)
    meta = root / "__cluster_metadata-0" / "00000000000000000000.log"
    b = kafkafmt.read_segment(meta).batches
    data = bytearray(meta.read_bytes())
    data[int(b.position[40]) + 70] ^= 0xFF
    meta.write_bytes(bytes(data))
    _zero_tail_timeindex(root / "__consumer_offsets-6")
    return root, part


@pytest.fixture(params=["written", "real"])
def scenario(request, tmp_path, real_corpus):
    """(name, damaged log dir, the partition a broker goes on writing to)."""
    if request.param == "written":
        root, part = written(tmp_path)
    else:
        root, part = real(tmp_path, real_corpus)
    return request.param, root, part


# ----------------------------------------------------------------------------------------------
# independent checks

def kafka_python_records(root):
    """{(partition folder, offset): value} of every data record, read by kafka-python segment by
    segment with every CRC checked; fails on any byte that is not an intact batch."""
    out = {}
    for d in sorted(os.listdir(root)):
        folder = os.path.join(root, d)
        if not os.path.isdir(folder):
            continue
        for name in segment_logs(folder):
            data = open(os.path.join(folder, name), "rb").read()
            mr = MemoryRecords(data)
            assert mr.valid_bytes() == len(data), (folder, name)        # no torn or zero-filled tail
            while mr.has_next():
                batch = mr.next_batch()
                assert batch.validate_crc(), (folder, name)
                if batch.is_control_batch:
                    continue
                for r in batch:
                    out[(d, r.offset)] = r.value
    return out


def salvaged(root):
    """{(partition folder, offset): value} of every intact record kafkafmt's salvage read finds."""
    out = {}
    for d in sorted(os.listdir(root)):
        if os.path.isdir(os.path.join(root, d)):
            for off, v in records(os.path.join(root, d)).items():
                out[(d, off)] = v
    return out


def temp_files(*roots):
    return [os.path.join(d, f) for r in roots for d, _, files in os.walk(r) for f in files
            if f.endswith((TEMP_SUFFIX, ".tmp"))]


def assert_readable(root):
    assert kcli.run("verify", "-q", "--no-progress", root).returncode in (0, 1)        # reads, no crash
    assert kafka_python_records(root)                                                # every byte intact


def next_offset(part):
    r = kafkafmt.read_log_dir(str(part), start_offset=0)
    return int(np.asarray(r.offset).max()) + 1


def batch_bytes(offset, n=3):
    return kafkafmt.encode(values=[b"after-%d" % i for i in range(n)], base_offset=offset,
                           timestamps=[1_900_000_000_000 + i for i in range(n)])


# ----------------------------------------------------------------------------------------------
# apply: no intact record lost

def test_apply_keeps_every_intact_record(scenario, tmp_path):
    name, root, part = scenario
    intact = salvaged(root)
    recover(root, apply=True, backup=tmp_path / "bk")
    assert kafka_python_records(root) == intact, name
    assert kcli.run("verify", "-q", root).returncode == 0
    assert not temp_files(root, tmp_path / "bk")


# ----------------------------------------------------------------------------------------------
# killed at every step of apply, then undone

@pytest.mark.slow
def test_apply_killed_at_every_step_then_undo(scenario, tmp_path):
    """After a kill at durable point N, every file is as it was or as the recovery makes it, and
    undo gives back the damaged dir byte for byte with no temporary file left (a stray
    ``.kafkafmt-tmp`` once stayed after a crash then an undo)."""
    name, root, part = scenario
    damaged = hashes(root)
    pristine = tmp_path / "pristine"
    shutil.copytree(root, pristine)
    done = tmp_path / "done"
    shutil.copytree(pristine, done)
    shutil.rmtree(root)
    kcli.run("recover", "--apply", "-q", "--backup", tmp_path / "bk-done", done, check=0)
    final = hashes(done)
    n = 1
    while True:
        work = tmp_path / f"w{n}"
        shutil.copytree(pristine, work)
        p = kcli.run("recover", "--apply", "-q", "--backup", tmp_path / f"bk{n}", work,
                     env={"KAFKAFMT_CRASH_AFTER": str(n)})
        if p.returncode == 0:
            assert hashes(work) == final
            break
        assert p.returncode == CRASH_EXIT, p.stderr
        now = hashes(work)
        for rel in set(damaged) | set(final) | set(now):
            assert now.get(rel) in (damaged.get(rel), final.get(rel)), (name, n, rel)
        manifest = tmp_path / f"bk{n}" / "manifest.jsonl"
        if manifest.exists():
            kcli.run("recover", "--undo", manifest, "-q", check=0)
        assert not temp_files(work), (name, n)
        assert hashes(work) == damaged, (name, n)
        shutil.rmtree(work)
        n += 1
    assert n > 10, n


@pytest.mark.slow
def test_undo_killed_at_every_step_then_run_again(scenario, tmp_path):
    name, root, part = scenario
    pristine = tmp_path / "pristine"
    shutil.copytree(root, pristine)
    damaged = hashes(root)
    k = 1
    while True:
        work = tmp_path / f"w{k}"
        shutil.copytree(pristine, work)
        plan = recover(work, apply=True, backup=tmp_path / f"bk{k}")
        manifest = plan.manifests[0]
        p = kcli.run("recover", "--undo", manifest, "-q", env={"KAFKAFMT_CRASH_AFTER": str(k)})
        if p.returncode == 0:
            assert hashes(work) == damaged
            break
        assert p.returncode == CRASH_EXIT, p.stderr
        kcli.run("recover", "--undo", manifest, "-q", check=0)           # run again: finishes
        assert hashes(work) == damaged, (name, k)
        assert not temp_files(work), (name, k)
        shutil.rmtree(work)
        k += 1
    assert k > 3, k


# ----------------------------------------------------------------------------------------------
# the partition changed between apply and undo: refused before any change

def broker_appended(part):
    """A restarted broker appended a batch to the recovered active segment."""
    end = next_offset(part)
    with open(part / segment_logs(part)[-1], "ab") as f:
        f.write(batch_bytes(end))
    return end


def segment_rolled(part):
    """A restarted broker rolled a new segment at the log end and appended to it."""
    end = next_offset(part)
    (part / f"{end:020d}.log").write_bytes(batch_bytes(end))
    (part / f"{end:020d}.index").write_bytes(b"")
    (part / f"{end:020d}.timeindex").write_bytes(b"")
    return end


def snapshot_taken(part):
    """A broker that ran and stopped cleanly wrote a producer snapshot at a new log end."""
    end = broker_appended(part)
    from kafkafmt.log import sidefiles

    sidefiles.write_producer_snapshot(part / f"{end + 3:020d}.snapshot",
                                      np.zeros(0, sidefiles.PRODUCER_ENTRY_DTYPE))
    return end


CHANGES = {"broker_appended": broker_appended, "segment_rolled": segment_rolled, "snapshot_taken": snapshot_taken}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_undo_after_the_partition_changed_is_refused_before_any_change(scenario, change, tmp_path):
    name, root, part = scenario
    plan = recover(root, apply=True, backup=tmp_path / "bk")
    recovered = kafka_python_records(root)
    end = CHANGES[change](part)
    changed = hashes(root)
    with pytest.raises(RecoveryError, match="nothing was changed") as exc:
        undo(plan.manifests[0])
    assert str(part) in str(exc.value), (name, change)
    assert hashes(root) == changed, (name, change)           # not one file touched
    p = kcli.run("recover", "--undo", plan.manifests[0])
    assert p.returncode == 1 and "cannot undo" in p.stderr
    assert hashes(root) == changed
    now = kafka_python_records(root)                          # the dir reads whole, nothing lost
    assert {k: v for k, v in now.items() if k[0] != part.name or k[1] < end} == recovered
    assert [now[(part.name, end + i)] for i in range(3)] == [b"after-%d" % i for i in range(3)]
    assert not temp_files(root)


def test_undo_twice_restores_nothing_the_second_time(scenario, tmp_path):
    name, root, part = scenario
    damaged = hashes(root)
    plan = recover(root, apply=True, backup=tmp_path / "bk")
    assert undo(plan.manifests[0])
    assert undo(plan.manifests[0]) == []
    assert hashes(root) == damaged


# ----------------------------------------------------------------------------------------------
# an apply that fails part way

def test_apply_failing_part_way_says_what_changed_and_how_to_undo(scenario, tmp_path):
    """A file system call fails in the middle of the plan (a folder entry that cannot be replaced:
    here a folder where a temporary file must go). The error says what failed, how many files had
    already changed, the manifest and the undo command; the undo it names restores every byte."""
    name, root, part = scenario
    damaged = hashes(root)
    plan = recover(root)
    writes = [a for a in plan.actions if a.kind.value == "write"]
    obstacle = writes[-2].file + TEMP_SUFFIX
    os.mkdir(obstacle)
    p = kcli.run("recover", "--apply", "--backup", tmp_path / "bk", root)
    assert p.returncode == 1
    err = p.stderr.strip().splitlines()
    assert len(err) == 1, p.stderr
    manifest = str(tmp_path / "bk" / "manifest.jsonl")
    assert "already changed" in err[0] and manifest in err[0] and f"kafkafmt recover --undo {manifest}" in err[0]
    assert obstacle in err[0]
    os.rmdir(obstacle)
    assert not temp_files(root)
    kcli.run("recover", "--undo", manifest, check=0)
    assert hashes(root) == damaged


def test_apply_refused_before_any_change_when_a_file_changed_since_the_plan(scenario, tmp_path):
    name, root, part = scenario
    plan = recover(root)
    with open(part / segment_logs(part)[-1], "ab") as f:          # the torn tail grew
        f.write(b"\0" * 10)
    changed = hashes(root)
    from kafkafmt.recovery import apply_plan

    with pytest.raises(RecoveryError, match="nothing was changed"):
        apply_plan(plan, tmp_path / "bk")
    assert hashes(root) == changed
