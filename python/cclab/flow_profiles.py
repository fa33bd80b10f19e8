"""Named sets of flow fields a scenario asks for by name: ``rto_profile`` (the retransmission
timer's initial value, minimum and how the minimum acts) and ``profile`` (a whole TCP profile,
the S3 paper's W-TCP). They are resolved here, once, into the flow's own fields, which are what
reach the core and the kernel backend; a profile plus a conflicting value of one of its fields
is an error naming both (docs/scenario.md, "Retransmission timeouts").
"""

from __future__ import annotations

from typing import Any

__all__ = ["RTO_PROFILES", "FLOW_PROFILES", "resolve", "listing"]

#: ``rto_profile``: the fields each sets, and where they come from.
RTO_PROFILES: dict[str, tuple[dict[str, Any], str]] = {
    "linux": ({"rto_initial_ms": 1000.0, "rto_min_ms": 200.0, "rto_min_mode": "linux"},
              "Linux 6.18: TCP_TIMEOUT_INIT 1 s, TCP_RTO_MIN 200 ms, rttvar floored at the minimum"),
    "standard": ({"rto_initial_ms": 3000.0, "rto_min_ms": 500.0, "rto_min_mode": "rfc6298"},
                 "the S3 paper's standard timer (RFC 2988/6298 initial 3 s, minimum 0.5 s)"),
    "proposed": ({"rto_initial_ms": 4000.0, "rto_min_ms": 4000.0, "rto_min_mode": "rfc6298"},
                 "the S3 paper's proposed timer (initial = minimum = 4 s, RFC 6298's floor)"),
}

#: ``profile``: whole TCP profiles. W-TCP (the S3 paper, section 4.1, after RFC 3481 and its
#: Internet-Draft): cwnd at most 64 KB (65535 B / 1460 B = 44 segments, the paper's "at most 44
#: packets"), initial window 4 KB (RFC 3390's min(4 MSS, max(2 MSS, 4380 B)) = 3 segments of
#: 1460 B, the paper's w0 = 3), SACK on, MTU 1500 (MSS 1460).
FLOW_PROFILES: dict[str, tuple[dict[str, Any], str]] = {
    "w-tcp": ({"max_cwnd_pkts": 44, "initial_cwnd_pkts": 3, "sack": True, "mss_bytes": 1460},
              "the S3 paper's W-TCP: max cwnd 64 KB, initial window 4 KB, SACK, MTU 1500"),
}


def resolve(kind: str, name: str | None, table: dict[str, tuple[dict[str, Any], str]],
            values: dict[str, Any], given: set[str]) -> dict[str, Any]:
    """The fields profile ``name`` (of field ``kind``) sets, after checking that no field
    ``given`` holds another value; None or "custom" sets none."""
    if name is None or name == "custom":
        return {}
    fields, _ = table[name]
    for k, v in fields.items():
        if k in given and values[k] != v:
            raise ValueError(f'{kind} = "{name}" sets {k} = {v!r}, but {k} = {values[k]!r} was given: '
                             f'drop one, or set {kind} = "custom" to give the fields yourself')
    return dict(fields)


def listing() -> list[dict[str, Any]]:
    """Every profile: field, name, the fields it sets, what it is."""
    out = []
    for kind, table in (("rto_profile", RTO_PROFILES), ("profile", FLOW_PROFILES)):
        for name, (fields, about) in table.items():
            out.append({"field": kind, "name": name, "sets": fields, "about": about})
    return out
