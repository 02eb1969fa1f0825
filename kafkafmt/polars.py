"""Log dirs as a Polars LazyFrame with pushdown (``pip install 'kafkafmt[polars]'``); DuckDB scans it.

The implementation lives in `kafkafmt.read`; this module is its public path.
"""
from kafkafmt.read._polars import *  # noqa: F401,F403
from kafkafmt.read._polars import __all__, __doc__  # noqa: F401
