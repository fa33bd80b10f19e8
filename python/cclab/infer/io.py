"""Importers: every input becomes one trace table in cclab's flows schema.

What each input can reveal:

========================  ===========================================================================
input                     what it gives
========================  ===========================================================================
cclab traces (parquet,    everything the simulator or the kernel backend recorded: cwnd, ssthresh,
DataFrame, RunResult)     ca_state (so recovery periods are known), RTTs, delivered bytes
TCP_INFO CSV              the kernel's own cwnd, ssthresh, ca_state, RTTs at the sampling period
(shared/data/kernel-...)  (10 ms): as good as a cclab trace, at that resolution
``ss -tin`` log           cwnd, ssthresh, RTT and the algorithm's name, at the logging period
                          (~5 ms per call at best); no ca_state
CSV (time, cwnd)          cwnd only: cycles are found from the shape alone
pcap / pcapng             no cwnd at all: the bytes in flight (highest sequence sent minus highest
(sender side)             ACK) per ACK, which equals cwnd only while the sender is cwnd-limited and
                          under-reads it during recovery and when application-limited
========================  ===========================================================================
"""

from __future__ import annotations

import re
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["load_trace", "InputError", "FORMATS"]

#: Accepted values of ``fmt``.
FORMATS = ("cclab", "tcpinfo", "csv", "ss", "pcap")

#: ca_state names by value (Linux enum tcp_ca_state).
_CA = ["open", "disorder", "cwr", "recovery", "loss"]


class InputError(ValueError):
    """A trace could not be read; the message names the file, column or option."""


def _err(msg: str) -> InputError:
    return InputError(msg)


def load_trace(source: Any, **kw: Any) -> pd.DataFrame:
    """Read a trace into cclab's flows schema (at least ``t_s`` and ``cwnd_pkts``), checked: rows
    whose time or cwnd is not a finite number are dropped, a negative time or cwnd is refused
    (InputError naming the column), and at least two rows must remain.

    ``source``: a path (parquet, CSV, ss log, pcap), a DataFrame or a RunResult. ``fmt`` forces
    the format (one of FORMATS); otherwise it is guessed from the suffix and the columns.
    ``time_col``/``cwnd_col`` name the columns of a plain CSV (time in seconds, cwnd in
    packets). ``flow`` picks one flow of a multi-flow cclab trace (name or index; default the
    first; the frame's ``attrs["flows"]`` lists them all, ``attrs["flow"]`` the one taken).
    """
    return _checked(_read(source, **kw))


def _checked(df: pd.DataFrame) -> pd.DataFrame:
    ok = np.ones(len(df), dtype=bool)
    for col, what in (("t_s", "time"), ("cwnd_pkts", "cwnd")):
        v = pd.to_numeric(df[col], errors="coerce").to_numpy(float)
        bad = v[np.isfinite(v) & (v < 0)]
        if bad.size:
            raise _err(f"{col}: a negative {what} ({bad[0]:g}) is not accepted")
        huge = v[np.isfinite(v) & (v > MAX_CWND_PKTS)] if col == "cwnd_pkts" else v[:0]
        if huge.size:
            raise _err(f"cwnd_pkts: a cwnd of {huge[0]:g} is not accepted: at most {MAX_CWND_PKTS} packets "
                       "(Linux's snd_cwnd is 32 bits)")
        ok &= np.isfinite(v)
    attrs = dict(df.attrs)
    if not ok.all():
        df = df[ok].reset_index(drop=True)
        df.attrs.update(attrs, dropped_rows=int((~ok).sum()))
    if len(df) < 2:
        raise _err(f"the trace has {len(df)} usable row(s) (time and cwnd both finite numbers): nothing to judge")
    t = pd.to_numeric(df["t_s"], errors="coerce").to_numpy(float)
    if t.max() - t.min() > MAX_SPAN_S:
        raise _err(f"t_s: the samples span {t.max() - t.min():g} s (from {t.min():g} to {t.max():g}): not one "
                   f"connection's time series; accepted: at most {MAX_SPAN_S:g} s")
    return df


#: The largest cwnd accepted, packets (tcp_sock.snd_cwnd is a u32).
MAX_CWND_PKTS = 2**32 - 1

#: The longest trace accepted, s (about three years): a longer span is a stray or misread time.
MAX_SPAN_S = 1e8


def _read(
    source: Any,
    *,
    fmt: str | None = None,
    time_col: str | None = None,
    cwnd_col: str | None = None,
    flow: str | int | None = None,
) -> pd.DataFrame:
    if fmt is not None and fmt not in FORMATS:
        raise _err(f"fmt: {fmt!r} is not one of {', '.join(FORMATS)}")
    if hasattr(source, "flows") and isinstance(getattr(source, "flows"), pd.DataFrame):
        return _one_flow(source.flows, flow)
    if isinstance(source, pd.DataFrame):
        return _from_frame(source, fmt, time_col, cwnd_col, flow, "DataFrame")
    path = Path(source)
    if not path.is_file():
        raise _err(f"{path}: no such file")
    suffix = path.suffix.lower()
    if fmt == "pcap" or (fmt is None and suffix in (".pcap", ".pcapng", ".cap")):
        return _from_pcap(path)
    if fmt == "ss" or (fmt is None and suffix in (".log", ".txt", ".ss")):
        return _from_ss(path)
    if suffix == ".parquet":
        return _from_frame(pd.read_parquet(path), fmt, time_col, cwnd_col, flow, str(path))
    try:
        df = pd.read_csv(path)
    except (pd.errors.ParserError, UnicodeDecodeError, pd.errors.EmptyDataError) as e:
        raise _err(f"{path}: not a CSV file ({e})") from None
    return _from_frame(df, fmt, time_col, cwnd_col, flow, str(path))


def _from_frame(
    df: pd.DataFrame, fmt: str | None, time_col: str | None, cwnd_col: str | None, flow: Any, what: str
) -> pd.DataFrame:
    cols = set(df.columns)
    named = time_col is not None or cwnd_col is not None
    tcpinfo = fmt == "tcpinfo" or (fmt is None and {"t", "snd_cwnd"} <= cols)
    if fmt in (None, "cclab") and {"t_s", "cwnd_pkts"} <= cols and not named:
        return _one_flow(df, flow)
    if tcpinfo and not named:
        return _from_tcpinfo(df)
    guesses = {"--time-col": ("t_s", "time_s", "time", "t"), "--cwnd-col": ("cwnd_pkts", "cwnd", "snd_cwnd")}
    tc = time_col or next((c for c in guesses["--time-col"] if c in cols), None)
    cc = cwnd_col or next((c for c in guesses["--cwnd-col"] if c in cols), None)
    for name, col in (("--time-col", tc), ("--cwnd-col", cc)):
        if col is None:
            raise _err(f"{what}: no {name[2:-4]} column found (looked for {', '.join(guesses[name])}); name it with "
                       f"{name}; columns are: {', '.join(map(str, df.columns))}")
        if col not in cols:
            raise _err(
                f"{what}: {name} {col!r} is not a column; columns are: {', '.join(map(str, df.columns))}"
            )
    # Rows that are not numbers stay here as NaN: the checks in load_trace drop and count them.
    t = pd.to_numeric(df[tc], errors="coerce")
    w = pd.to_numeric(df[cc], errors="coerce")
    out = pd.DataFrame({"t_s": t.to_numpy(float), "cwnd_pkts": w.to_numpy(float)})
    # Keep what else the trace says (RTTs, ssthresh, state, ...): naming the two columns must not
    # cost the estimators their other features. TCP_INFO fields are converted to cclab's names.
    extra = _tcpinfo_fields(df) if tcpinfo else df[[c for c in _CCLAB_EXTRA if c in cols]]
    for c in extra.columns:
        if c not in out.columns and c not in (tc, cc):
            out[c] = pd.to_numeric(extra[c], errors="coerce").to_numpy(float)
    return out.sort_values("t_s", kind="stable").reset_index(drop=True)


#: cclab trace columns, besides time and cwnd, that the estimators read when present.
_CCLAB_EXTRA = ("ssthresh_pkts", "srtt_ms", "rttvar_ms", "min_rtt_ms", "rto_ms", "ca_state", "delivered_bytes",
                "retrans_pkts", "pacing_rate_bps", "delivery_rate_bps", "inflight_pkts")


def _one_flow(df: pd.DataFrame, flow: Any) -> pd.DataFrame:
    names = list(pd.unique(df["flow"])) if "flow" in df.columns else []
    if len(names) > 1:
        if flow is None:
            pick = names[0]
        elif isinstance(flow, int) and not isinstance(flow, bool):
            if not 0 <= flow < len(names):
                raise _err(f"flow: index {flow} out of range 0..{len(names) - 1}")
            pick = names[flow]
        elif flow in names:
            pick = flow
        else:
            raise _err(f"flow: {flow!r} is not one of {', '.join(map(str, names))}")
        df = df[df["flow"] == pick]
    out = df.copy()
    if names:
        out.attrs["flows"] = [str(n) for n in names]
        out.attrs["flow"] = str(out["flow"].iloc[0]) if len(out) else None
    if "ca_state" in out.columns and not pd.api.types.is_numeric_dtype(out["ca_state"]):
        names = {n: float(i) for i, n in enumerate(_CA)}
        out["ca_state"] = _numbers(out["ca_state"].map(lambda v: names.get(v, v)))
    for col in ("t_s", "cwnd_pkts", *(c for c in _CCLAB_EXTRA if c in out.columns and c != "ca_state")):
        out[col] = _numbers(out[col])
    return out.sort_values("t_s", kind="stable").reset_index(drop=True)


def _numbers(col: pd.Series) -> pd.Series:
    """A column as floats; a cell that is not a number becomes NaN (load_trace drops and counts
    rows whose time or cwnd is NaN; the estimators skip NaN elsewhere)."""
    return pd.to_numeric(col, errors="coerce").astype(float)


def _tcpinfo_fields(df: pd.DataFrame) -> pd.DataFrame:
    """TCP_INFO's fields other than time and cwnd, in cclab's names and units (row-aligned)."""
    out = pd.DataFrame(index=df.index)
    if "snd_ssthresh" in df:
        ss = _numbers(df["snd_ssthresh"])
        out["ssthresh_pkts"] = ss.where(ss < 0x7FFFFFFF)
    for src, dst in (("rtt", "srtt_ms"), ("rttvar", "rttvar_ms"), ("min_rtt", "min_rtt_ms"), ("rto", "rto_ms")):
        if src in df:
            out[dst] = _numbers(df[src]) / 1000.0
    if "ca_state" in df:
        out["ca_state"] = _numbers(df["ca_state"])
    if "bytes_acked" in df:
        out["delivered_bytes"] = _numbers(df["bytes_acked"])
    if "total_retrans" in df:
        out["retrans_pkts"] = _numbers(df["total_retrans"])
    if "pacing_rate" in df:
        out["pacing_rate_bps"] = _numbers(df["pacing_rate"]) * 8
    if "delivery_rate" in df:
        out["delivery_rate_bps"] = _numbers(df["delivery_rate"]) * 8
    return out


def _from_tcpinfo(df: pd.DataFrame) -> pd.DataFrame:
    """TCP_INFO samples with the kernel's field names and units (us, bytes/s)."""
    out = pd.DataFrame({"t_s": _numbers(df["t"]), "cwnd_pkts": _numbers(df["snd_cwnd"])})
    out = pd.concat([out, _tcpinfo_fields(df)], axis=1)
    return out.sort_values("t_s", kind="stable").reset_index(drop=True)


_SS_FIELD = re.compile(r"\b(cwnd|ssthresh|rto|minrtt|mss):([0-9.]+)")
_SS_RTT = re.compile(r"\brtt:([0-9.]+)/([0-9.]+)")
_SS_RATE = re.compile(r"\b(pacing_rate|delivery_rate) ([0-9.]+)([KMG]?)bps")
_SS_TIME = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*$")
_SCALE = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9}


def _from_ss(path: Path) -> pd.DataFrame:
    """Repeated ``ss -tin`` output. A line holding only a number (e.g. ``date +%s.%N``) sets the
    time of the samples after it; without such lines samples are numbered (t_s = index)."""
    rows: list[dict[str, Any]] = []
    now: float | None = None
    algo = None
    for lineno, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
        m = _SS_TIME.match(line)
        if m:
            now = float(m.group(1))
            continue
        if "cwnd:" not in line:
            continue
        row: dict[str, Any] = {"t_s": now if now is not None else float(len(rows))}
        for k, v in _SS_FIELD.findall(line):
            row[k] = float(v)
        if "cwnd" not in row:  # "cwnd:" without a number: not a sample
            continue
        r = _SS_RTT.search(line)
        if r:
            row["srtt_ms"], row["rttvar_ms"] = float(r.group(1)), float(r.group(2))
        for k, v, unit in _SS_RATE.findall(line):
            row[f"{k}_bps"] = float(v) * _SCALE[unit]
        tok = line.split()
        if tok and tok[0].isalpha() and algo is None:
            algo = tok[0]
        rows.append(row)
    if len(rows) < 2:
        raise _err(f"{path}: fewer than 2 `ss -tin` samples (lines with cwnd:) found")
    df = pd.DataFrame(rows).rename(
        columns={"cwnd": "cwnd_pkts", "ssthresh": "ssthresh_pkts", "rto": "rto_ms", "minrtt": "min_rtt_ms"}
    )
    t0 = df["t_s"].iloc[0]
    df["t_s"] = df["t_s"] - t0
    df.attrs["algorithm_hint"] = algo
    return df.sort_values("t_s", kind="stable").reset_index(drop=True)


def _from_pcap(path: Path) -> pd.DataFrame:
    """Bytes in flight per ACK from a capture taken at or near the sender (IPv4/IPv6 TCP; the
    sender is the endpoint sending the most payload). cwnd_pkts = in-flight bytes / MSS, where
    MSS is the largest payload seen."""
    import dpkt

    with path.open("rb") as fh:
        try:
            reader = dpkt.pcapng.Reader(fh) if path.suffix.lower() == ".pcapng" else dpkt.pcap.Reader(fh)
        except (ValueError, dpkt.dpkt.NeedData) as e:
            raise _err(f"{path}: not a pcap/pcapng capture ({e})") from None
        link = reader.datalink()
        pkts = []
        for ts, buf in _records(reader):
            ip = _ip_of(buf, link)
            if ip is None or not isinstance(ip.data, dpkt.tcp.TCP):
                continue
            tcp = ip.data
            pkts.append((float(ts), bytes(ip.src), tcp.sport, bytes(ip.dst), tcp.dport, tcp.seq, tcp.ack,
                         len(tcp.data), bool(tcp.flags & dpkt.tcp.TH_ACK)))
    if not pkts:
        raise _err(f"{path}: no TCP packets found")
    payload: dict[tuple, int] = {}
    for p in pkts:
        key = (p[1], p[2], p[3], p[4])
        payload[key] = payload.get(key, 0) + p[7]
    fwd = max(payload, key=payload.get)
    if payload[fwd] == 0:
        raise _err(f"{path}: no TCP payload found (capture data at the sender)")
    rev = (fwd[2], fwd[3], fwd[0], fwd[1])
    mss = max(p[7] for p in pkts if (p[1], p[2], p[3], p[4]) == fwd)
    isn = next(p[5] for p in pkts if (p[1], p[2], p[3], p[4]) == fwd)
    hi_seq = 0
    hi_ack = 0
    t0 = pkts[0][0]
    rows = []
    for ts, src, sport, dst, dport, seq, ack, ln, has_ack in pkts:
        key = (src, sport, dst, dport)
        if key == fwd and ln:
            hi_seq = max(hi_seq, ((seq - isn) & 0xFFFFFFFF) + ln)
        elif key == rev and has_ack:
            a = (ack - isn) & 0xFFFFFFFF
            if a > hi_ack and a <= hi_seq + 1:
                hi_ack = a
            rows.append((ts - t0, max(hi_seq - hi_ack, 0) / mss))
    if len(rows) < 2:
        raise _err(f"{path}: fewer than 2 ACKs for the main flow")
    df = pd.DataFrame(rows, columns=["t_s", "cwnd_pkts"])
    df.attrs["source"] = "pcap: bytes in flight / MSS"
    df.attrs["mss_bytes"] = mss
    return df


def _records(reader: Any) -> Any:
    """The capture's records up to its end, or up to where it is cut (a capture copied while
    being written ends mid-record: what came before is kept)."""
    import dpkt

    it = iter(reader)
    while True:
        try:
            yield next(it)
        except StopIteration:
            return
        except (dpkt.dpkt.NeedData, dpkt.dpkt.UnpackError, ValueError, struct.error):
            return


def _ip_of(buf: bytes, link: int) -> Any:
    import dpkt

    try:
        if link == dpkt.pcap.DLT_EN10MB:
            eth = dpkt.ethernet.Ethernet(buf)
            return eth.data if isinstance(eth.data, (dpkt.ip.IP, dpkt.ip6.IP6)) else None
        if link in (dpkt.pcap.DLT_RAW, 101, 12, 14):
            return dpkt.ip.IP(buf) if buf and buf[0] >> 4 == 4 else dpkt.ip6.IP6(buf)
        if link == dpkt.pcap.DLT_LINUX_SLL:
            s = dpkt.sll.SLL(buf)
            return s.data if isinstance(s.data, (dpkt.ip.IP, dpkt.ip6.IP6)) else None
    except (dpkt.dpkt.UnpackError, IndexError):
        return None
    return None


def per_rtt(trace: pd.DataFrame, rtt_s: float | None = None) -> pd.DataFrame:
    """The cwnd once per RTT (the last sample in each RTT-long bin): Kato et al.'s sampling.
    ``rtt_s`` defaults to the trace's minimum RTT (min_rtt_ms or srtt_ms), else 0.1 s."""
    rtt = rtt_s or estimate_rtt_s(trace)
    t = trace["t_s"].to_numpy(float)
    w = trace["cwnd_pkts"].to_numpy(float)
    if len(t) == 0:
        return pd.DataFrame({"t_s": [], "cwnd_pkts": []})
    bins = np.floor((t - t[0]) / rtt).astype(np.int64)
    last = np.r_[bins[1:] != bins[:-1], True]
    return pd.DataFrame({"t_s": t[last], "cwnd_pkts": w[last]}).reset_index(drop=True)


def estimate_rtt_s(trace: pd.DataFrame) -> float:
    """The path's base RTT from the trace (median of min_rtt_ms, else 5th percentile of
    srtt_ms), or 0.1 s when the trace has no RTT."""
    for col, q in (("min_rtt_ms", 0.5), ("srtt_ms", 0.05)):
        if col in trace.columns:
            v = pd.to_numeric(trace[col], errors="coerce").dropna()
            v = v[v > 0]
            if len(v):
                return float(v.quantile(q)) / 1000.0
    return 0.1
