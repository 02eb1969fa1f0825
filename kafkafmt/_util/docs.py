"""Docstring text shared by several functions: a line ``%(name)s`` alone in a docstring stands for a text
written once (numpydoc entries that mean the same in every function that has them), filled in when the
function is defined, so that ``help()`` and the built docs read the whole text."""
from __future__ import annotations

import re

__all__ = ["fill_doc", "doc_filler"]

_MARKER = re.compile(r"%\((\w+)\)s")


def fill_doc(func, texts):
    """`func` with each line of its docstring that is a marker ``%(name)s`` alone replaced by
    ``texts[name]``, every line of it indented as the marker was; a marker without a text raises
    ``KeyError`` (a docstring stripped by ``python -OO`` stays None).

    Examples
    --------
    >>> def read(src):
    ...     '''Read it.
    ...
    ...     Parameters
    ...     ----------
    ...     %(src)s
    ...     '''
    >>> print(fill_doc(read, {"src": "src : str\\n    A path."}).__doc__.strip())
    Read it.
    <BLANKLINE>
        Parameters
        ----------
        src : str
            A path.
    """
    if func.__doc__ is None:
        return func
    lines = []
    for line in func.__doc__.split("\n"):
        marker = _MARKER.fullmatch(line.strip())
        if marker is None:
            lines.append(line)
        else:
            indent = line[:len(line) - len(line.lstrip())]
            lines += [indent + t if t else t for t in texts[marker.group(1)].rstrip("\n").split("\n")]
    func.__doc__ = "\n".join(lines)
    return func


def doc_filler(**texts):
    """A decorator filling a docstring's markers with `texts` (`fill_doc`).

    Examples
    --------
    >>> source_doc = doc_filler(src="src : str\\n    A path.")
    >>> @source_doc
    ... def read(src):
    ...     '''Parameters
    ...     ----------
    ...     %(src)s
    ...     '''
    >>> "    A path." in read.__doc__
    True
    """
    return lambda func: fill_doc(func, texts)
