"""to_pandas(dtype_backend="pyarrow"): pd.ArrowDtype columns over the Arrow buffers, no Python
object per value; the default (NumPy / object columns) is unchanged."""
import random

import numpy as np
import pytest

import kafkafmt

import pandas as pd
import pyarrow as pa


def _recs(binary="contiguous"):
    rnd = random.Random(3)
    n = 500
    buf = kafkafmt.encode(keys=[None if i % 7 == 0 else rnd.randbytes(8) for i in range(n)],
                          values=[rnd.randbytes(rnd.randint(0, 200)) for _ in range(n)],
                          headers=[[("a", b"1")] if i % 4 == 0 else [] for i in range(n)],
                          timestamps=[1_700_000_000_000 + i for i in range(n)], compression="zstd", max_records=40)
    return kafkafmt.decode(buf, binary=binary)


def test_default_unchanged():
    recs = _recs()
    df = recs.to_pandas()
    assert df["value"].dtype == object and isinstance(df["value"].iloc[1], bytes)
    assert df["offset"].dtype == np.int64
    assert df.equals(recs.to_arrow().to_pandas())
    nullable = recs.to_pandas(dtype_backend="numpy_nullable")
    assert nullable["offset"].dtype == pd.Int64Dtype() and nullable["value"].tolist() == df["value"].tolist()


@pytest.mark.parametrize("binary", ["contiguous", "view"])
def test_pyarrow_backend(binary):
    recs = _recs(binary)
    df = recs.to_pandas(dtype_backend="pyarrow")
    assert all(isinstance(t, pd.ArrowDtype) for t in df.dtypes)
    want = pa.binary() if binary == "contiguous" else pa.binary_view()
    assert df["value"].dtype.pyarrow_dtype == want
    # the same values as the default frame
    default = recs.to_pandas()
    assert df["value"].tolist() == default["value"].tolist()
    assert df["key"].isna().tolist() == default["key"].isna().tolist()
    assert (df["offset"].to_numpy() == default["offset"].to_numpy()).all()
    assert df["timestamp"].dtype.pyarrow_dtype == pa.timestamp("ms", tz="UTC")
    # no copy of the values: the column's Arrow array is the decoded buffer
    arr = df["value"].array.__arrow_array__().chunk(0)
    if binary == "contiguous":
        assert arr.buffers()[2].address == recs.value.data.ctypes.data
    assert recs.to_pandas(dtype_backend="pyarrow", batch_metadata=True)["producerId"].dtype == pd.ArrowDtype(pa.int64())
    # the frame pyarrow's own conversion gives (built without its block manager round trip)
    for kw in ({}, dict(batch_metadata=True)):
        for part in (recs, recs[:0]):
            got = part.to_pandas(dtype_backend="pyarrow", **kw)
            want = part.to_arrow(**kw).to_pandas(types_mapper=pd.ArrowDtype)
            assert list(got.columns) == list(want.columns) and got.index.equals(want.index)
            for name in want.columns:   # (pandas' assert_frame_equal cannot compare binary_view)
                assert got[name].dtype == want[name].dtype, name
                assert got[name].array.__arrow_array__().equals(want[name].array.__arrow_array__()), name


def test_bad_backend():
    with pytest.raises(ValueError):
        _recs().to_pandas(dtype_backend="polars")
