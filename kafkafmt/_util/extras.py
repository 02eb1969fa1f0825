"""The install command that adds one of pyproject.toml's extras to the kafkafmt a user runs."""
from __future__ import annotations

import os

__all__ = ["install_command", "import_pyarrow"]


def _checkout():
    """The source checkout this kafkafmt runs from (``pip install -e``, or PYTHONPATH), or None when it
    is an installed copy."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    try:
        with open(os.path.join(root, "pyproject.toml"), encoding="utf-8") as f:
            if 'name = "kafkafmt"' in f.read():
                return root
    except OSError:
        pass
    return None


def install_command(extra):
    """``pip install 'kafkafmt[EXTRA]'`` for an installed kafkafmt; from a source checkout, the
    editable install of that checkout with the extra (``pip install -e '.[EXTRA]'`` in it) -- the
    command that works where this kafkafmt is.

    Examples
    --------
    >>> from kafkafmt._util.extras import install_command
    >>> install_command("report").startswith("pip install ")
    True
    """
    root = _checkout()
    if root is None:
        return f"pip install 'kafkafmt[{extra}]'"
    where = "." if os.path.abspath(os.getcwd()) == root else root
    return f"pip install -e '{where}[{extra}]'"


def import_pyarrow(what="to_arrow()/to_pandas()"):
    """pyarrow, or an ImportError saying that ``what`` needs it and the install command of the ``arrow`` extra.

    Examples
    --------
    >>> from kafkafmt._util.extras import import_pyarrow
    >>> import_pyarrow().__name__
    'pyarrow'
    """
    try:
        import pyarrow as pa
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(f"{what} need pyarrow: {install_command('arrow')}") from exc
    return pa
