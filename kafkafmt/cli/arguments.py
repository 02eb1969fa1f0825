"""The command line's arguments: the parser of every command (`CommandParser`: a bad value is one line
and exit code 2, an option is spelt in full), the types of numeric, size and range values (checked as
the line is parsed, each error naming its option), and the filters several commands share.
"""
from __future__ import annotations

import argparse

from kafkafmt.cli.common import (parse_int_list, parse_offset_range, parse_size, parse_time_range)
from kafkafmt.cli.usage import UsageError

__all__ = ["CommandParser", "value_type", "checked", "size", "count", "byte_count", "threads", "offset_range",
           "time_range", "add_filter_options", "NUMERIC_METAVARS"]

#: the metavars of options whose values are numbers, sizes or ranges: each has a type that checks it
NUMERIC_METAVARS = frozenset({"N", "SIZE", "A:B", "T1:T2", "N[,N|A-B]"})


class CommandParser(argparse.ArgumentParser):
    """The parser of a command (``kafkafmt COMMAND``): options only as written in full (no prefix of
    ``--topics`` taken for it), and an option's bad value said in one line -- ``kafkafmt export: error:
    argument --target-file-size: not a size: 'lots' ...`` -- with exit code 2; other usage errors (an
    unknown option, a missing one) show the command's usage first, as argparse does.

    Examples
    --------
    >>> p = CommandParser(prog="kafkafmt x")
    >>> _ = p.add_argument("--max-records", type=count)
    >>> p.parse_args(["--max-records", "3"]).max_records
    3
    >>> p.parse_args(["--max", "3"])
    Traceback (most recent call last):
    ...
    SystemExit: 2
    """

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message):
        if message.startswith("argument "):
            self.exit(2, f"{self.prog}: error: {message}\n")
        super().error(message)


def value_type(parse):
    """An argparse ``type`` from a function that reads a value or raises `UsageError` / ValueError: its
    reason becomes argparse's (one line naming the option, exit code 2).

    Examples
    --------
    >>> value_type(int)("12")
    12
    """
    def convert(text):
        try:
            return parse(text)
        except (UsageError, ValueError) as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    convert.__name__ = getattr(parse, "__name__", "value")
    return convert


def checked(parse):
    """An argparse ``type`` that checks a value with ``parse`` (as `value_type`) and keeps the text, for the
    options a command reads later (``--offset-range``, ``--partitions``).

    Examples
    --------
    >>> checked(parse_offset_range)("5:9")
    '5:9'
    """
    convert = value_type(parse)

    def check(text):
        convert(text)
        return text

    check.__name__ = convert.__name__
    return check


def _count(text):
    n = int(text) if str(text).strip().isdigit() else 0
    if n < 1:
        raise UsageError(f"must be a positive number, not {text!r}")
    return n


def _byte_count(text):
    if not str(text).strip().isdigit():
        raise UsageError(f"must be a number of bytes >= 0, not {text!r}")
    return int(text)


def _threads(text):
    n = int(text) if str(text).strip().isdigit() else 0
    if n < 1:
        raise UsageError(f"must be a positive number of threads, not {text!r}")
    return n


#: ``1048576``, ``64K``, ``10M``, ``1G`` -> bytes (`kafkafmt.cli.common.parse_size`)
size = value_type(parse_size)
#: a positive number (a count of records)
count = value_type(_count)
#: a number of bytes, 0 or more
byte_count = value_type(_byte_count)
#: a positive number of threads
threads = value_type(_threads)


def add_filter_options(p, topics_help="only these topics", partitions_help="only these partition numbers"):
    """``--topics`` / ``--topic`` and ``--partitions`` / ``--partition`` (repeatable, comma-separated; kcat's
    ``-t``/``-p`` take one each): the topics and partition numbers a command reads."""
    p.add_argument("--topics", "--topic", dest="topics", action="append", metavar="T[,T]", help=topics_help)
    p.add_argument("--partitions", "--partition", dest="partitions", action="append", metavar="N[,N|A-B]",
                   type=checked(lambda text: parse_int_list([text], "partition")), help=partitions_help)


#: ``--offset-range`` and ``--time-range`` values, checked as the line is parsed
offset_range = checked(parse_offset_range)
time_range = checked(parse_time_range)
