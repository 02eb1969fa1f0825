"""How typed values are shaped -- the options every door passes on to the formats, checked and
defaulted in one place:

* ``recursive_fields_max_depth`` (Spark's ``recursive.fields.max.depth``): how many times a
  recursive record or message (Avro, Protobuf, JSON Schema ``$ref``) appears on a path from the
  top of the value; the field where it would appear once more holds that value's JSON text (a
  string), so nothing nested deeper is lost.
* ``time_unit``: the unit of the columns whose values carry nanoseconds but whose range is
  years 1 to 9999 -- Protobuf's ``Timestamp`` and ``Duration``, JSON Schema's ``date-time`` --:
  ``"us"`` (microseconds: every valid value, as Spark, BigQuery, Delta and Iceberg hold them;
  digits below the microsecond dropped) or ``"ns"`` (every nanosecond, for values within
  1677-09-21 .. 2262-04-11; a value beyond is null, ``valueError`` naming the field).
* ``additional_properties``: a JSON Schema object's properties outside its ``properties`` (allowed
  unless ``additionalProperties: false``): ``"keep"`` (their JSON text, an object, in one more
  string field of the object, `EXTRAS_FIELD`) or ``"drop"``.

Avro's logical types carry their own units (``timestamp-millis`` ... ``-nanos``): ``time_unit``
leaves them as they are.
"""
from __future__ import annotations

import dataclasses

__all__ = ["ValueShape", "DEFAULT_MAX_DEPTH", "TIME_UNITS", "ADDITIONAL_PROPERTIES", "EXTRAS_FIELD"]

#: how many times a recursive type appears on a path before its field holds JSON text
DEFAULT_MAX_DEPTH = 5
#: the units of Timestamp / Duration / date-time columns, the default first
TIME_UNITS = ("us", "ns")
#: what a JSON Schema object's properties outside its schema become, the default first
ADDITIONAL_PROPERTIES = ("keep", "drop")
#: the field of a JSON Schema object holding its other properties as JSON text (``_`` appended while a
#: property has that name)
EXTRAS_FIELD = "additionalProperties"


@dataclasses.dataclass(frozen=True)
class ValueShape:
    """The shaping options of one read (see the module docstring), checked.

    Examples
    --------
    >>> from kafkafmt.values import ValueShape
    >>> ValueShape()
    ValueShape(recursive_fields_max_depth=5, time_unit='us', additional_properties='keep')
    >>> ValueShape(recursive_fields_max_depth=0)
    Traceback (most recent call last):
    ...
    ValueError: recursive_fields_max_depth is an int of at least 1, not 0
    """
    recursive_fields_max_depth: int = DEFAULT_MAX_DEPTH
    time_unit: str = TIME_UNITS[0]
    additional_properties: str = ADDITIONAL_PROPERTIES[0]

    def __post_init__(self):
        d = self.recursive_fields_max_depth
        if isinstance(d, str) and d.strip().isdigit():           # (text from a command line or Spark option)
            d = int(d)
            object.__setattr__(self, "recursive_fields_max_depth", d)
        if not isinstance(d, int) or isinstance(d, bool) or d < 1:
            raise ValueError(f"recursive_fields_max_depth is an int of at least 1, not {d!r}")
        if self.time_unit not in TIME_UNITS:
            raise ValueError(f"time_unit is one of {', '.join(map(repr, TIME_UNITS))}, not {self.time_unit!r}")
        if self.additional_properties not in ADDITIONAL_PROPERTIES:
            raise ValueError(f"additional_properties is one of {', '.join(map(repr, ADDITIONAL_PROPERTIES))}, "
                             f"not {self.additional_properties!r}")
