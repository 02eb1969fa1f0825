"""kafkafmt's command line: ``kafkafmt dump | verify | stats | report | export | recover``.

Exit codes, every command (`EXIT_CODES`): 0 success or nothing to do; 1 problems found (corrupt or
truncated batches, CRC mismatches, index inconsistencies, a file that could not be read, a repair
refused or failed) or work a dry run would do; 2 bad usage or input (an unknown option, a path that
does not exist, a folder without Kafka data, a file that is not Kafka data). Errors are one line on stderr naming the file and byte position;
``--debug`` shows tracebacks. A progress bar appears on stderr only when it is a terminal.

A command is one module (its ``add_parser`` and ``run``) plus one row of `COMMAND_TABLE`, which the
parser (`build_parser`) and `main` read.
"""
from __future__ import annotations

import argparse
import dataclasses
import importlib
import os
import sys
import warnings


@dataclasses.dataclass(frozen=True)
class Command:
    """A command of the command line: one module plus one row of `COMMAND_TABLE`.

    Parameters
    ----------
    name : str
        What follows ``kafkafmt`` (``kafkafmt NAME ...``).
    module : str
        The module (a dotted name) that is the command: its ``add_parser(sub, parents, command)``
        adds the command's parser to ``sub`` (``argparse``'s subparsers, with ``parents`` the common
        options) and returns it; its ``run(args, console)`` runs the command and returns the exit code.
    help : str
        The line ``kafkafmt --help`` lists the command with.

    Examples
    --------
    >>> from kafkafmt.cli import COMMAND_TABLE
    >>> [c.name for c in COMMAND_TABLE]
    ['dump', 'verify', 'stats', 'report', 'export', 'recover']
    >>> COMMAND_TABLE[0].module
    'kafkafmt.cli.dump'
    """
    name: str
    module: str
    help: str


#: every command, in the order ``kafkafmt --help`` lists them; `main` and `build_parser` read it
COMMAND_TABLE = (
    Command("dump", "kafkafmt.cli.dump", "print batches, records and side files (like kafka-dump-log.sh)"),
    Command("verify", "kafkafmt.cli.verify", "check CRCs, offsets, indexes, snapshots; list every problem"),
    Command("stats", "kafkafmt.cli.stats",
            "records, batches, bytes, codecs, offsets, times per partition and segment"),
    Command("report", "kafkafmt.cli.report",
            "one self-contained HTML page: topics, timelines, problems, consumer lag"),
    Command("export", "kafkafmt.cli.export",
            "write records to Parquet, CSV, JSON lines or Arrow (Spark-Kafka schema)"),
    Command("recover", "kafkafmt.cli.recover", "repair and re-index a log dir offline (dry run unless --apply)"),
)


def _command_names():
    return [c.name for c in COMMAND_TABLE]

#: the exit-code convention of every command (stated in ``kafkafmt --help``)
EXIT_CODES = ("Exit codes, every command: 0 success or nothing to do, 1 problems found (or work a dry run would "
              "do), 2 bad usage or input.")


def _common_parser():
    from kafkafmt.cli.arguments import threads

    p = argparse.ArgumentParser(add_help=False)
    g = p.add_argument_group("common options")
    g.add_argument("--sample", action="store_true",
                   help="also read the bundled sample log directory (generated on first use)")
    g.add_argument("-q", "--quiet", action="store_true", help="no progress bar, no warnings or notes on stderr")
    g.add_argument("--progress", dest="progress", action="store_const", const=True, default=None,
                   help="show the progress bar even when stderr is not a terminal")
    g.add_argument("--no-progress", dest="progress", action="store_const", const=False,
                   help="never show the progress bar")
    g.add_argument("--debug", action="store_true", help="show tracebacks")
    g.add_argument("--threads", type=threads, default=None, metavar="N",
                   help="decoding threads (segments, partitions and large ranges decoded at once; log dirs' "
                        "folders listed and copies' headers scanned side by side); default: all cores; 1: serial. "
                        "Output and errors are the same whatever N")
    g.add_argument("--storage-option", action="append", metavar="KEY=VALUE", dest="storage_option",
                   help="an option of the filesystem holding URL paths (s3://, gs://, abfs://, hdfs://), e.g. "
                        "endpoint_url=http://127.0.0.1:9000 or anon=true (repeatable; JSON values allowed); "
                        "credentials otherwise come from the environment as fsspec reads them")
    g.add_argument("--tiered-key", action="append", metavar="KEY_ID=PEM_FILE", dest="tiered_key",
                   help="the RSA private key (a PEM file) of encrypted Aiven tiered-storage uploads whose "
                        "manifests name KEY_ID (repeatable; the library's tiered_keys)")
    return p


def build_parser(only=None):
    """The command line's parser: the common options and one subparser per row of `COMMAND_TABLE`
    (each built by its module's ``add_parser``, running its ``run``); ``only``: that command's alone (a
    run of it needs no other).

    Returns
    -------
    argparse.ArgumentParser
        With ``commands``: {name: the command's own parser}.

    Examples
    --------
    >>> from kafkafmt.cli import build_parser
    >>> parser = build_parser()
    >>> sorted(parser.commands)
    ['dump', 'export', 'recover', 'report', 'stats', 'verify']
    >>> args = parser.parse_args(["stats", "--json", "kafka-logs"])
    >>> args.command, args.json, args.paths, args.run.__module__
    ('stats', True, ['kafka-logs'], 'kafkafmt.cli.stats')
    """
    from kafkafmt._version import __version__

    parser = argparse.ArgumentParser(
        prog="kafkafmt",
        description="Read Apache Kafka's on-disk data without a broker.",
        epilog="Run 'kafkafmt COMMAND --help' for a command's options. 'kafkafmt --sample' (no command) "
               "runs 'stats' on the bundled sample log directory.\n\n" + EXIT_CODES + " Problems: corrupt or "
               "truncated data, CRC or index mismatches, a file that cannot be read, a repair refused or failed. "
               "Bad input: an unknown option, a path that does not exist, a folder without Kafka data, a file "
               "that is not Kafka data.",
        formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False)
    parser.add_argument("--version", action="version", version=f"kafkafmt {__version__}")
    parser.add_argument("--sample-dir", action=_PrintSampleDir,
                        help="print the path of the bundled sample log directory (generated on first use) and exit: "
                             "cp -r \"$(kafkafmt --sample-dir)\" kafka-logs")
    from kafkafmt.cli.arguments import CommandParser

    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=CommandParser)
    parents = [_common_parser()]
    parser.commands = {}
    for command in COMMAND_TABLE:
        if only is not None and command.name != only:
            continue
        mod = importlib.import_module(command.module)
        p = parser.commands[command.name] = mod.add_parser(sub, parents, command)
        p.set_defaults(run=mod.run)
    return parser


class _PrintSampleDir(argparse.Action):
    """``kafkafmt --sample-dir``: the bundled sample's path on stdout (`kafkafmt.sample.sample_dir`)."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        from kafkafmt.sample import sample_dir

        print(sample_dir())
        parser.exit(0)


def _first_word(argv):
    """(index, word) of the first argument that is neither an option nor a common option's value
    (``--threads 2``), or (None, None)."""
    takes_value = {s for a in _common_parser()._actions if a.nargs != 0 for s in a.option_strings}
    k = 0
    while k < len(argv):
        a = argv[k]
        if a == "--":
            break
        if not a.startswith("-"):
            return k, a
        k += 2 if a in takes_value else 1
    return None, None


def _normalise(argv):
    """Put a command first (options given before it move after it); no command -> ``stats``
    (``kafkafmt --sample`` and ``kafkafmt PATH...`` keep working as before the subcommands)."""
    if any(a in ("-h", "--help", "--version", "--sample-dir") for a in argv[:1]) or not argv:
        return argv
    k, word = _first_word(argv)
    if word in _command_names():
        return [word] + argv[:k] + argv[k + 1:]
    if any(a in ("-h", "--help") for a in argv):
        return argv
    return ["stats"] + argv


def _check_command(parser, argv):
    """A first word that is neither a command nor a path (an existing file or folder, a URL) is a
    mistyped command, not a path for ``stats``: a usage error (exit 2) naming the closest command."""
    import difflib

    _, word = _first_word(argv)
    names = _command_names()
    if word is None or word in names or "://" in word or os.path.lexists(word):
        return
    close = difflib.get_close_matches(word, names, n=1, cutoff=0.5)
    hint = f"did you mean {close[0]}?" if close else "choose from " + ", ".join(names)
    parser.error(f"argument COMMAND: invalid choice: {word!r} ({hint}); nor is it a file, folder or URL "
                 f"('kafkafmt PATH...' runs stats)")


def _install_warnings(console, debug):
    if debug:
        return

    def show(message, category, filename, lineno, file=None, line=None):
        console.warn(str(message))

    warnings.showwarning = show
    warnings.simplefilter("always")


def main(argv=None):
    """Run the command line ``argv`` (default: ``sys.argv[1:]``); returns the exit code. A closed
    stdout (``| head``) stops a command that streams its output, with the exit code of what it read
    (`kafkafmt.cli.output.reader_may_go_away`)."""
    from kafkafmt.cli.output import reader_may_go_away

    with reader_may_go_away():
        return _main(argv)


def _main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    normal = _normalise(argv)
    # the command run is the only one whose parser is built (the others' options -- the value formats'
    # plugins looked up among the installed packages -- cost every run tens of milliseconds for nothing)
    parser = build_parser(only=normal[0] if normal and normal[0] in _command_names() else None)
    _check_command(parser, argv)
    args, unknown = parser.parse_known_args(normal)
    if unknown:
        # the command's own usage, not the top-level one
        (parser.commands.get(args.command) or parser).error(f"unrecognized arguments: {' '.join(unknown)}")
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    from kafkafmt.cli.output import Console

    console = Console(quiet=args.quiet)
    from kafkafmt.cli import paths

    paths.OPTIONS.clear()           # this run's own (main may run several times in one process)
    paths.TIERED_KEYS.clear()
    try:
        paths.OPTIONS.update(paths.parse_storage_options(getattr(args, "storage_option", None)))
        paths.TIERED_KEYS.update(paths.parse_tiered_keys(getattr(args, "tiered_key", None)))
    except Exception as exc:  # UsageError
        console.message(f"kafkafmt {args.command}: error: {exc}")
        return 2
    if args.quiet and args.progress is None:
        args.progress = False
    debug = args.debug or os.environ.get("KAFKAFMT_DEBUG") not in (None, "", "0")
    _install_warnings(console, debug)
    from kafkafmt._util import threads as threads

    previous = threads.set_cpu_count(getattr(args, "threads", None))   # what threads=None means in the readers
    from kafkafmt._util import collect

    collect.start_up_done()         # (the command's own process: its start-up left out of collections)
    try:
        return run(args, console, debug)
    finally:
        threads.set_cpu_count(previous)


def run(args, console, debug=False):
    from kafkafmt.cli.usage import UsageError
    from kafkafmt.errors import KafkafmtError

    try:
        status = args.run(args, console)
        sys.stdout.flush()
        return status
    except BrokenPipeError:
        # a pipe closed under a write that bypassed sys.stdout: the work stopped before its end, so
        # its verdict is unknown -- not clean
        console.message("kafkafmt: error: the output's reader went away before the work ended")
        return 1
    except KeyboardInterrupt:
        console.message("kafkafmt: interrupted")
        return 130
    except UsageError as exc:
        if debug:
            raise
        console.message(f"kafkafmt {args.command}: error: {exc}")
        return 2
    except KafkafmtError as exc:
        if debug:
            raise
        console.message(f"kafkafmt: {exc}")
        return 1
    except OSError as exc:
        if debug:
            raise
        where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
        console.message(f"kafkafmt: {where}{exc.strerror or exc}")
        return 1
    except Exception as exc:  # noqa: BLE001 - one line, not a traceback, unless --debug
        if debug:
            raise
        console.message(f"kafkafmt: internal error: {type(exc).__name__}: {exc} (run with --debug for the traceback)")
        return 1
    finally:
        if console.progress is not None:
            console.progress.close()
