"""Human units in scenario files: "64Mbps", "12.5ms", "1000B", or bare numbers.

A field's name carries its canonical unit (``delay_ms``, ``rate_bps``, ``size_bytes``); a bare
number is taken in that unit, a string may use any unit of the same dimension.
"""

from __future__ import annotations

import math
import re

__all__ = ["UnitError", "parse_quantity", "shown_value", "unit_of_field", "TIME_UNITS", "RATE_UNITS", "SIZE_UNITS"]

#: seconds per unit
TIME_UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
#: bits per second per unit
RATE_UNITS = {"bps": 1.0, "Kbps": 1e3, "kbps": 1e3, "Mbps": 1e6, "Gbps": 1e9,
              "bit/s": 1.0, "kbit/s": 1e3, "Kbit/s": 1e3, "Mbit/s": 1e6, "Gbit/s": 1e9}
#: bytes per unit
SIZE_UNITS = {"B": 1, "KB": 1000, "MB": 1000**2, "GB": 1000**3, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3}

_SUFFIX = {
    "_s": ("time", 1.0),
    "_ms": ("time", 1e-3),
    "_us": ("time", 1e-6),
    "_ns": ("time", 1e-9),
    "_bps": ("rate", 1.0),
    "_bytes": ("size", 1.0),
}
_TABLES = {"time": TIME_UNITS, "rate": RATE_UNITS, "size": SIZE_UNITS}
_EXAMPLES = {"time": "'25ms', '1.5s', '500us'", "rate": "'64Mbps', '384Kbps'", "size": "'1000B', '64KiB'"}
_NUM = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([A-Za-z/]*)\s*$")


def shown_value(value: object, limit: int = 80) -> str:
    """A bad value as an error message shows it: its repr, cut to ``limit`` characters (a 100 kB
    value must not make a 100 kB message)."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit - 20]}... ({len(text)} characters)"


class UnitError(ValueError):
    """A value is not a quantity of the field's dimension."""


def unit_of_field(field: str) -> tuple[str, float] | None:
    """(dimension, size of the field's unit in base units) from the name's suffix, or None."""
    for suffix, spec in _SUFFIX.items():
        if field.endswith(suffix):
            return spec
    return None


def parse_quantity(value: object, field: str) -> float:
    """Parse ``value`` for ``field`` and return it in the field's own unit.

    >>> parse_quantity("12.5ms", "delay_ms")
    12.5
    >>> parse_quantity("64Mbps", "rate_bps")
    64000000.0
    """
    spec = unit_of_field(field)
    if spec is None:
        raise UnitError(f"{field}: has no unit in its name")
    dim, field_unit = spec
    name = field.rsplit(".", 1)[-1]
    accepted = f"accepted: a number of {name.rsplit('_', 1)[-1]} or a string like {_EXAMPLES[dim]}"
    if isinstance(value, bool):
        raise UnitError(f"{field}: {shown_value(value)} is not a {dim}; {accepted}")
    if isinstance(value, (int, float)):
        if not math.isfinite(value):
            raise UnitError(f"{field}: {shown_value(value)} is not accepted: a finite number")
        return float(value)
    if not isinstance(value, str):
        raise UnitError(f"{field}: {shown_value(value)} is not a {dim}; {accepted}")
    m = _NUM.match(value)
    if not m:
        raise UnitError(f"{field}: {shown_value(value)} is not a {dim}; {accepted}")
    number, unit = float(m.group(1)), m.group(2)
    if not math.isfinite(number):
        raise UnitError(f"{field}: {shown_value(value)} is not accepted: a finite number (this one overflows)")
    if unit == "":
        return number
    table = _TABLES[dim]
    if unit not in table:
        raise UnitError(
            f"{field}: {shown_value(value)} has unit {unit!r}, not a {dim} unit; accepted units: {', '.join(table)}"
        )
    return number * table[unit] / field_unit
