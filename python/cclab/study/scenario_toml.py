"""A study's scenario dict as a scenario file (TOML): what the shipped files made by a study's
builder are written with (``s1_scenarios``, ``s2_scenarios``, ``s4_scenarios``)."""

from __future__ import annotations

from typing import Any

__all__ = ["to_toml"]


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {_toml_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(f"{v!r} has no TOML form here")


def to_toml(d: dict[str, Any], header: str = "") -> str:
    """A scenario dict as a scenario file: ``header`` as comments, then its values, its tables
    and its arrays of tables.

    >>> print(to_toml({"duration_s": 5.0, "sim": {"trace": "interval"}, "flows": [{"cc": "reno"}]}), end="")
    duration_s = 5.0
    <BLANKLINE>
    [sim]
    trace = "interval"
    <BLANKLINE>
    [[flows]]
    cc = "reno"
    """
    lines = [f"# {line}" for line in header.splitlines()]
    lines += [f"{k} = {_toml_value(v)}" for k, v in d.items() if not isinstance(v, (list, dict))]
    for k, v in d.items():
        if isinstance(v, dict):
            lines += ["", f"[{k}]"] + [f"{kk} = {_toml_value(x)}" for kk, x in v.items()]
    for k, v in d.items():
        if isinstance(v, list):
            for item in v:
                lines += ["", f"[[{k}]]"] + [f"{kk} = {_toml_value(x)}" for kk, x in item.items()]
    return "\n".join(lines) + "\n"
