"""The command line's own error: a request that cannot be carried out as written."""


class UsageError(Exception):
    """The command line asks for something impossible (exit code 2)."""
