"""What discovery makes of a listing's names by its quick ways -- a log dir's folders (`listed_folder`), a partition
folder's segments (`_segment_rows`), a partition made without its dataclass constructor -- is what the naming rules
of `kafkafmt.log._names` say of each name, asked one at a time."""
from __future__ import annotations

import os
import string

from hypothesis import given, settings, strategies as st

from kafkafmt.log import _discovery, _names
from kafkafmt.storage import Entry, LocalStorage

_PIECES = ["-", "0", "7", "12", "-delete", "-future", "-stray", ".", "a", "t", "٣", "00000000000000000000", ".log",
           ".index", ".timeindex", ".txnindex", ".snapshot", ".deleted", ".swap", ".cleaned", "partition.metadata"]
_NAMES = st.lists(st.sampled_from(_PIECES) | st.text(string.ascii_letters + "-._", max_size=3), min_size=1,
                  max_size=5).map("".join)


@given(_NAMES)
@settings(max_examples=200, deadline=None)
def test_a_listed_folder_is_what_its_path_says(name):
    path = os.path.join("/some/log-dir", name)
    if _names.is_leftover_dir(path):
        assert _names.listed_folder(name) is _names.LEFTOVER_FOLDER
    else:
        assert _names.listed_folder(name) == _names.partition_of_name(path)


def _rows_one_by_one(entries, local):
    names = {e.name for e in entries if not e.is_dir}
    rows, leftovers = [], []
    for e in entries:
        if e.is_dir:
            continue
        base = _names.segment_base(e.name) if e.name.endswith(".log") else None
        if base is not None:
            stem = e.name[:-len(".log")]
            present = frozenset(k for k in _names.SIDE_FILE_KINDS if f"{stem}.{k}" in names)
            rows.append((base, e.size, present, e.version, e.path[:-len(".log")] if local else None))
        elif _names.is_leftover_segment_file(e.name):
            leftovers.append(e.path)
    return sorted(rows, key=lambda r: r[0]), leftovers


_SEGMENT_NAMES = st.tuples(st.sampled_from(["00000000000000000000", "00000000000000000042", "0000000000000000004",
                                            "0000000000000000004٣", "12", "99999999999999999999",
                                            "18446744073709551616", "0a000000000000000042"]),
                           st.sampled_from([".log", ".index", ".timeindex", ".txnindex", ".snapshot", ".log.deleted",
                                            ".swap", ".log.swap", ".cleaned", ".index.cleaned"])).map("".join)


@given(st.lists(_SEGMENT_NAMES | _NAMES, max_size=12, unique=True), st.booleans(), st.integers(0, 99))
@settings(max_examples=200, deadline=None)
def test_segment_rows_are_what_each_name_says(names, local, seed):
    entries = tuple(sorted(Entry(n, "/f/" + n, (seed * (i + 1)) % 97, n.startswith("t-"), f"v{i}")
                           for i, n in enumerate(names)))
    storage = LocalStorage() if local else type("Remote", (), {"is_local": False})()
    want = _rows_one_by_one(entries, local)
    assert _discovery._segment_rows(entries, storage) == want                  # native, where names are ASCII
    assert _discovery._python_segment_rows(entries, storage) == want


@given(st.lists(_SEGMENT_NAMES | _NAMES, max_size=12, unique=True), st.integers(0, 99))
@settings(max_examples=200, deadline=None)
def test_a_compact_listing_gives_the_rows_each_name_says(names, seed):
    from kafkafmt.storage import FolderListing

    entries = tuple(sorted(Entry(n, "/f/" + n, (seed * (i + 1)) % 97, n.startswith("t-"), None)
                           for i, n in enumerate(names)))
    compact = FolderListing.of(entries, "/f/")
    want = _rows_one_by_one(entries, True)
    assert _discovery._segment_rows(compact, LocalStorage()) == want          # native, where names are ASCII
    assert _discovery._python_segment_rows(compact, LocalStorage()) == want


def test_a_name_listed_twice_gives_the_rows_of_the_rule():
    # (an object store may list a key twice: rows in base-offset order, as listed where they tie)
    entries = (Entry("00000000000000000005.log", "/f/00000000000000000005.log", 3, False, "v2"),
               Entry("00000000000000000005.log", "/f/00000000000000000005.log", None, False, None),
               Entry("00000000000000000001.log", "/f/00000000000000000001.log", 1, False, "v1"))
    remote = type("Remote", (), {"is_local": False})()
    rows, _ = _discovery._segment_rows(entries, remote)
    assert (rows, []) == _rows_one_by_one(entries, False) == _discovery._python_segment_rows(entries, remote)
    assert [(r[0], r[3]) for r in rows] == [(1, "v1"), (5, "v2"), (5, None)]


def test_the_native_rows_are_those_of_the_real_corpus(real_corpus):
    from kafkafmt.storage import LocalStorage as Local

    folders = [p for p in real_corpus.rglob("*") if p.is_dir()]
    assert folders
    for folder in folders:
        entries = tuple(Local().list(str(folder), sized=(".log",)))
        assert _discovery._segment_rows(entries, Local()) == _discovery._python_segment_rows(entries, Local())
        compact = Local().folder_listing(str(folder), sized=(".log",))
        assert _discovery._segment_rows(compact, Local()) == _discovery._python_segment_rows(entries, Local())


def test_the_native_rows_follow_the_rules_they_are_given():
    """The native rows spell no naming rule: they follow the digits and suffixes they are given (discovery gives
    `kafkafmt.log._names`' own) -- here four digits, ``.seg`` logs, ``.idx`` side files and ``.gone`` leftovers."""
    from kafkafmt._native.segrows import Names, listing_segment_rows, segment_rows

    names = ("0007.seg.gone", "0042.idx", "0042.log", "0042.seg", "00000000000000000042.log", "0043.seg.deleted")
    entries = [Entry(n, "/f/" + n, 1, False, None, False) for n in names]
    rules = Names(4, ".seg", ("idx",), (".gone",))
    want = ([(42, 1, "idx", None, "/f/0042")], ["/f/0007.seg.gone"])
    assert segment_rows(entries, True, (None, "idx"), lambda name: True, rules) == want
    assert listing_segment_rows(names, (1,) * len(names), bytes(len(names)), "/f/", (None, "idx"), lambda name: True,
                                rules) == want
    assert _discovery._NAMES.log == _names.LOG_SUFFIX.lstrip(".").encode() and \
        _discovery._NAMES.digits == _names.SEGMENT_DIGITS


def test_a_listed_partition_is_the_dataclass_own(tmp_path):
    storage = LocalStorage()
    made = _discovery.Partition("t", 1, str(tmp_path / "t-1"), storage, str(tmp_path), None, 5, listing=("x",),
                                real="/r/t-1")
    quick = _discovery._listed_partition("t", 1, str(tmp_path / "t-1"), storage, str(tmp_path), 5, ("x",), "/r/t-1")
    assert quick == made and hash(quick) == hash(made) and vars(quick) == vars(made)
    assert quick.with_alternates([made]).alternates == (made,)
