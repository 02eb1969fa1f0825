"""`Table`: a small named set of equal-length NumPy columns with attribute access -- the batch table and the
control records of a read."""
from __future__ import annotations

import numpy as np

from kafkafmt._util.extras import import_pyarrow

__all__ = ["Table"]


class Table:
    """Equal-length named NumPy columns with attribute access (the batch and control tables).

    ``table["name"]`` and ``table.name`` give a column, ``table[rows]`` (a slice, a mask, row
    numbers) a `Table` of those rows; iterating gives the rows as dicts of Python scalars.
    Columns are read-only (`with_column` makes a copy with another).

    Parameters
    ----------
    columns : dict
        Column name -> NumPy array (all of one length).

    Examples
    --------
    >>> import kafkafmt
    >>> from kafkafmt.sample import sample_dir
    >>> batches = kafkafmt.read_log_dir(f"{sample_dir()}/payments-0").batches
    >>> batches
    <Table 9 rows: position, size, base_offset, last_offset, ...>
    >>> batches.base_offset
    array([ 0, 20, 35, 45, 60, 70, 71, 91, 92])
    >>> batches["is_transactional"][:3]
    array([False,  True,  True])
    """

    def __init__(self, columns: dict):
        object.__setattr__(self, "_columns", dict(columns))

    def __getattr__(self, name):
        try:
            return self._columns[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name, value):
        raise AttributeError("Table columns are read-only; use Table.with_column")

    @property
    def columns(self):
        """The column names, in order.

        Returns
        -------
        list of str

        Examples
        --------
        >>> import kafkafmt
        >>> from kafkafmt.sample import sample_dir
        >>> kafkafmt.read_log_dir(f"{sample_dir()}/payments-0").controls.columns
        ['offset', 'batch_index', 'type', 'version', 'coordinator_epoch', 'timestamp']
        """
        return list(self._columns)

    def __len__(self):
        return len(next(iter(self._columns.values()))) if self._columns else 0

    def __repr__(self):
        return f"<Table {len(self)} rows: {', '.join(self._columns)}>"

    def __getitem__(self, item):
        if isinstance(item, str):
            return self._columns[item]
        return Table({k: v[item] for k, v in self._columns.items()})

    def __iter__(self):
        """Rows as dicts of Python scalars."""
        cols = {k: v.tolist() for k, v in self._columns.items()}
        for i in range(len(self)):
            yield {k: v[i] for k, v in cols.items()}

    def to_pylist(self):
        """The rows as dicts of Python scalars.

        Returns
        -------
        list of dict

        Examples
        --------
        >>> import kafkafmt
        >>> from kafkafmt.sample import sample_dir
        >>> controls = kafkafmt.read_log_dir(f"{sample_dir()}/payments-0").controls
        >>> for row in controls.to_pylist():
        ...     print(row["offset"], kafkafmt.CONTROL_TYPES[row["type"]], row["coordinator_epoch"])
        70 ABORT 4
        91 COMMIT 4
        """
        return list(self)

    def with_column(self, name, values):
        """A copy with column `name` set to `values` (added at the end, or replaced in place); the
        other columns are shared, not copied.

        Parameters
        ----------
        name : str
        values : numpy.ndarray
            One value per row.

        Returns
        -------
        Table

        Examples
        --------
        >>> import kafkafmt
        >>> from kafkafmt.sample import sample_dir
        >>> batches = kafkafmt.read_log_dir(f"{sample_dir()}/payments-0").batches
        >>> with_end = batches.with_column("end", batches.position + batches.size)
        >>> with_end.columns[-1], with_end.end[:3]
        ('end', array([352, 669, 974]))
        >>> "end" in batches.columns
        False
        """
        cols = dict(self._columns)
        cols[name] = values
        return Table(cols)

    @staticmethod
    def concat(tables):
        """Rows of all tables; a column some lack is filled with -1 (False for bools) there."""
        tables = [t for t in tables if t.columns]
        if not tables:
            return Table({})
        nonempty = [t for t in tables if len(t)] or tables[:1]
        names, dtypes = [], {}
        for t in tables:
            for k in t.columns:
                if k not in dtypes:
                    names.append(k)
                    dtypes[k] = t[k].dtype
        out = {}
        for k in names:
            fill = False if dtypes[k] == np.bool_ else -1
            out[k] = np.concatenate([t[k] if k in t.columns else np.full(len(t), fill, dtypes[k]) for t in nonempty])
        return Table(out)

    def to_arrow(self):
        """The columns as a pyarrow.Table (needs pyarrow).

        Returns
        -------
        pyarrow.Table

        Examples
        --------
        >>> import kafkafmt
        >>> from kafkafmt.sample import sample_dir
        >>> controls = kafkafmt.read_log_dir(f"{sample_dir()}/payments-0").controls.to_arrow()
        >>> controls.num_rows, controls.schema.field("offset").type
        (2, DataType(int64))
        """
        pa = import_pyarrow()
        return pa.table({k: pa.array(v) for k, v in self._columns.items()})

    def to_pandas(self):
        """The columns as a pandas.DataFrame.

        Returns
        -------
        pandas.DataFrame

        Examples
        --------
        >>> import kafkafmt
        >>> from kafkafmt.sample import sample_dir
        >>> batches = kafkafmt.read_log_dir(f"{sample_dir()}/payments-0").batches.to_pandas()
        >>> batches[["base_offset", "record_count", "producer_id", "is_transactional"]].head(3)
           base_offset  record_count  producer_id  is_transactional
        0            0            20           -1             False
        1           20            15         1001              True
        2           35            10         1002              True
        """
        import pandas as pd

        return pd.DataFrame(self._columns)

    def __arrow_c_stream__(self, requested_schema=None):
        """The Arrow PyCapsule stream of ``to_arrow()``."""
        return self.to_arrow().__arrow_c_stream__(requested_schema)
