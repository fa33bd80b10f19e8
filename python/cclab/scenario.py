"""Scenario files: the pydantic models of docs/scenario.md, unit parsing, defaults, and the
normalised JSON the simulator core reads.

>>> sc = load_scenario("scenarios/s0-25ms.toml")          # doctest: +SKIP
>>> sc = load_scenario("s0-25ms", **{"bottleneck.loss": 1e-3})  # doctest: +SKIP
"""

from __future__ import annotations

import json
import math
import re
import tomllib
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal, Union

from pydantic import (AfterValidator, BaseModel, ConfigDict, Discriminator, Field, Tag, ValidationError,
                      field_validator, model_validator)

from ._errors import ScenarioError
from .units import UnitError, parse_quantity, shown_value, unit_of_field

__all__ = [
    "Scenario",
    "Flow",
    "Link",
    "Duplex",
    "Radio",
    "Host",
    "Node",
    "NetLink",
    "Medium",
    "SharedMedium",
    "DcfMedium",
    "MeshMedium",
    "Middleware",
    "MiddlewareRow",
    "SimSettings",
    "ScenarioError",
    "load_scenario",
    "shipped_scenarios",
    "resolve_scenario_path",
]

Prob = Annotated[float, Field(ge=0.0, le=1.0)]

#: The longest run a scenario may ask for, s: 10^6 s (11.6 days) is beyond any study's runs,
#: and within it every time the core keeps in nanoseconds fits its 64-bit clock.
MAX_DURATION_S = 1e6
#: The default ``sim.max_events`` (crates/cclab-sim/src/budget.rs DEFAULT_MAX_EVENTS): 500 times
#: the events of the largest shipped scenario or study run.
DEFAULT_MAX_EVENTS = 1_000_000_000


#: The fastest rate, bit/s: 1 Tbit/s. Beyond it a packet's serialisation rounds to the core's
#: 1 ns grain, and a UDP stream or a link that fast costs events without bound (a 5 Pbit/s
#: stream sent a datagram every nanosecond).
MAX_RATE_BPS = 1e12


def _whole_bps(v: float) -> float:
    """The core counts whole bits per second: a rate is rounded to one only where that changes
    it by at most 0.05 % (from 1 kbit/s up); below, a fraction is refused, not rounded."""
    if v < 1:
        raise ValueError(f"{v:g} is not accepted: at least 1 bit/s")
    if v > MAX_RATE_BPS:
        raise ValueError(f"{v:g} is not accepted: at most {MAX_RATE_BPS:g} bit/s (1 Tbit/s; a link with no "
                         "serialisation limit leaves rate_bps out)")
    if v < 1000 and v != math.floor(v):
        raise ValueError(f"{v:g} is not accepted: below 1 kbit/s a whole number of bits per second (the core "
                         "counts whole bit/s; rounding would change this rate by more than 0.05 %)")
    return v


#: A rate in bit/s (units accepted: "64Mbps"), at least 1, whole below 1 kbit/s.
Bps = Annotated[float, Field(gt=0), AfterValidator(_whole_bps)]


class _Strict(BaseModel):
    """Strict base: unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


def _takes_bool(annotation: Any) -> bool:
    """Whether a field's type admits a bool (``bool``, ``bool | None``, ``dict[str, bool | int]``)."""
    from typing import get_args

    if annotation is bool:
        return True
    return any(_takes_bool(a) for a in get_args(annotation))


class _Model(_Strict):
    """Strict base whose fields named with a unit (``delay_ms``) accept unit strings."""

    @field_validator("*", mode="before")
    @classmethod
    def _parse_units(cls, v: Any, info: Any) -> Any:
        name = info.field_name
        if isinstance(v, bool) and name in cls.model_fields and not _takes_bool(cls.model_fields[name].annotation):
            raise ValueError(f"{str(v).lower()} is not accepted: a number, not true/false")
        if name and unit_of_field(name) and isinstance(v, (str, float)):
            return parse_quantity(v, name)
        return v


class Outage(_Model):
    """The link serves nothing in [start_s, start_s + duration_s); packets wait."""

    start_s: float = Field(ge=0)
    duration_s: float = Field(ge=0)


class DelaySpike(_Model):
    """Packets leaving in [start_s, start_s + duration_s) arrive extra_delay_ms later."""

    start_s: float = Field(ge=0)
    duration_s: float = Field(ge=0)
    extra_delay_ms: float = Field(ge=0)


class NoLoss(_Strict):
    kind: Literal["none"]


class BernoulliLoss(_Strict):
    kind: Literal["bernoulli"]
    p: Prob


class GilbertElliottLoss(_Strict):
    kind: Literal["gilbert_elliott"]
    p_good_bad: Prob
    p_bad_good: Prob
    loss_good: Prob = 0.0
    loss_bad: Prob = 1.0


class NthLoss(_Strict):
    """Lose exactly these packets, by their number at the link's ingress (1 = the first packet it
    is offered; on cclab-link, the first after the run's start): a reproducible single loss, such
    as a connection's SYN, on both backends."""

    kind: Literal["nth"]
    pkts: list[Annotated[int, Field(ge=1)]] = Field(min_length=1, max_length=10_000)


LossModel = Annotated[Union[NoLoss, BernoulliLoss, GilbertElliottLoss, NthLoss], Field(discriminator="kind")]


# Queue disciplines (crates/cclab-net/src/qdisc; docs/scenario.md#queue-disciplines). A field left
# out takes the kernel's (or tc's) default, which the core fills in.
class _QdiscModel(_Strict):
    """Strict; fields named with a unit accept unit strings (parsed before the discriminator)."""

    @model_validator(mode="before")
    @classmethod
    def _parse_units(cls, data: Any) -> Any:
        if isinstance(data, dict):
            return {k: parse_quantity(v, k) if isinstance(v, (str, float)) and unit_of_field(k) else v
                    for k, v in data.items()}
        return data


class DropTailQdisc(_QdiscModel):
    kind: Literal["drop_tail"]


class RedQdisc(_QdiscModel):
    """RED as net/sched/sch_red.c with tc's parameters."""

    kind: Literal["red"]
    limit_bytes: int | None = Field(default=None, ge=1)
    min_bytes: int | None = Field(default=None, ge=1)
    max_bytes: int | None = Field(default=None, ge=1)
    avpkt_bytes: int | None = Field(default=None, ge=1)
    burst_pkts: int | None = Field(default=None, ge=1)
    probability: Prob | None = None
    ecn: bool | None = None
    harddrop: bool | None = None
    bandwidth_bps: Bps | None = None


class CodelQdisc(_QdiscModel):
    """CoDel as net/sched/sch_codel.c and include/net/codel*.h."""

    kind: Literal["codel"]
    target_ms: float | None = Field(default=None, gt=0)
    interval_ms: float | None = Field(default=None, gt=0)
    limit_pkts: int | None = Field(default=None, ge=1)
    ecn: bool | None = None
    ce_threshold_ms: float | None = Field(default=None, gt=0)


class FqCodelQdisc(_QdiscModel):
    """FQ-CoDel as net/sched/sch_fq_codel.c."""

    kind: Literal["fq_codel"]
    target_ms: float | None = Field(default=None, gt=0)
    interval_ms: float | None = Field(default=None, gt=0)
    limit_pkts: int | None = Field(default=None, ge=1)
    flows: int | None = Field(default=None, ge=1)
    quantum_bytes: int | None = Field(default=None, ge=1)
    memory_limit_bytes: int | None = Field(default=None, ge=1)
    ecn: bool | None = None
    drop_batch_pkts: int | None = Field(default=None, ge=1)
    ce_threshold_ms: float | None = Field(default=None, gt=0)


class PieQdisc(_QdiscModel):
    """PIE as net/sched/sch_pie.c and include/net/pie.h."""

    kind: Literal["pie"]
    target_ms: float | None = Field(default=None, gt=0)
    tupdate_ms: float | None = Field(default=None, gt=0)
    alpha: int | None = Field(default=None, ge=0)
    beta: int | None = Field(default=None, ge=0)
    limit_pkts: int | None = Field(default=None, ge=1)
    ecn: bool | None = None
    bytemode: bool | None = None


Qdisc = Annotated[Union[DropTailQdisc, RedQdisc, CodelQdisc, FqCodelQdisc, PieQdisc], Field(discriminator="kind")]
QDISC_KINDS = ("drop_tail", "red", "codel", "fq_codel", "pie")


MOBILITY_CLASSES = ("static-strong", "static-weak", "walking", "car", "express-train")
#: The fields of a radio table that describe the link's delay-spike process, which the two
#: directions share (a fade stalls both): set on the forward direction only.
_SPIKE_FIELDS = ("mobility", "spike_rate_per_s", "spike_duration_min_ms", "spike_duration_mean_ms")
#: The 3G link of study S3 (docs/scenario.md#radio-links): a radio table on a link whose rates
#: and delay are left out gives it these.
RADIO_DOWN_BPS, RADIO_UP_BPS, RADIO_DELAY_MS = 384_000.0, 64_000.0, 150.0


class Radio(_Strict):
    """A 3G radio bearer after the link's serialisation (crates/cclab-net/src/radio): RLC
    acknowledged mode and random delay spikes. A field left out takes the mobility class's
    preset (PDU errors, spikes), else the paper's RLC: 42 B PDUs, 400 ms, MaxDAT 6, no errors,
    no spikes. A string is a mobility class: ``radio = "car"``."""

    mobility: Literal["static-strong", "static-weak", "walking", "car", "express-train"] | None = None
    pdu_bytes: int | None = Field(default=None, ge=1)
    #: Bernoulli PDU error probability (shorthand for pdu_loss_model).
    pdu_loss: Prob | None = None
    pdu_loss_model: LossModel | None = None
    rlc_retx_interval_ms: float | None = Field(default=None, gt=0)
    max_dat: int | None = Field(default=None, ge=1, le=40)
    spike_rate_per_s: float | None = Field(default=None, ge=0)
    spike_duration_min_ms: float | None = Field(default=None, ge=0)
    spike_duration_mean_ms: float | None = Field(default=None, ge=0)

    @field_validator("pdu_bytes", "rlc_retx_interval_ms", "spike_duration_min_ms", "spike_duration_mean_ms",
                     mode="before")
    @classmethod
    def _parse_units(cls, v: Any, info: Any) -> Any:
        return parse_quantity(v, info.field_name) if isinstance(v, (str, float)) else v

    @model_validator(mode="after")
    def _consistent(self) -> "Radio":
        if self.pdu_loss is not None and self.pdu_loss_model is not None:
            raise ValueError("give either pdu_loss (Bernoulli) or pdu_loss_model, not both")
        lo, mean = self.spike_duration_min_ms, self.spike_duration_mean_ms
        if lo is not None and mean is not None and mean < lo:
            raise ValueError(f"spike_duration_mean_ms: {mean} is not accepted: at least spike_duration_min_ms ({lo})")
        return self

    def core_dict(self, inherit: "Radio | None" = None) -> dict[str, Any]:
        """The core's RadioSpec: fields given, else ``inherit``'s (a reverse direction takes the
        forward's), ``pdu_loss`` folded into ``pdu_loss_model``."""
        out: dict[str, Any] = {} if inherit is None else inherit.core_dict()
        mine = self.model_dump(exclude_none=True)
        if "pdu_loss" in mine:
            mine["pdu_loss_model"] = {"kind": "bernoulli", "p": mine.pop("pdu_loss")}
        out.update(mine)
        if "pdu_bytes" in out:
            out["pdu_bytes"] = int(round(out["pdu_bytes"]))
        return out


class Link(_Model):
    """One direction of a link. In a reverse block every field may be left out."""

    rate_bps: Bps | None = None
    capacity_trace: str | None = None
    delay_ms: float | None = Field(default=None, ge=0)
    queue_pkts: int | None = Field(default=None, ge=1)
    queue_bytes: int | None = Field(default=None, ge=1)
    loss: Prob | None = None
    loss_model: LossModel | None = None
    outages: list[Outage] = Field(default_factory=list)
    delay_spikes: list[DelaySpike] = Field(default_factory=list)
    #: ECN step marking: ECT packets arriving while the queue holds at least this many packets
    #: are marked CE (not inherited by the reverse direction); None: drop-tail only.
    ecn_threshold_pkts: int | None = Field(default=None, ge=1)
    #: Queue discipline (not inherited by the reverse direction): a kind name ("fq_codel") or a
    #: table ({ kind = "codel", target_ms = 5 }); default drop-tail.
    qdisc: Qdisc | None = None
    #: A 3G radio bearer (RLC, delay spikes): a table or a mobility class's name. A reverse
    #: direction takes the forward's settings field by field and may change the RLC's.
    radio: Radio | None = None

    @field_validator("radio", mode="before")
    @classmethod
    def _radio_by_class(cls, v: Any) -> Any:
        if isinstance(v, str):
            if v not in MOBILITY_CLASSES:
                raise ValueError(f"{v!r} is not accepted: a table, or a mobility class: {', '.join(MOBILITY_CLASSES)}")
            return {"mobility": v}
        return v

    @field_validator("qdisc", mode="before")
    @classmethod
    def _qdisc_by_name(cls, v: Any) -> Any:
        if isinstance(v, str):
            if v not in QDISC_KINDS:
                raise ValueError(f"{v!r} is not accepted: one of {', '.join(QDISC_KINDS)}")
            return {"kind": v}
        return v

    @model_validator(mode="after")
    def _exclusive(self) -> "Link":
        if self.queue_pkts is not None and self.queue_bytes is not None:
            raise ValueError("give either queue_pkts or queue_bytes, not both")
        if self.loss is not None and self.loss_model is not None:
            raise ValueError("give either loss (Bernoulli) or loss_model, not both")
        if self.rate_bps is not None and self.capacity_trace is not None:
            raise ValueError("give either rate_bps or capacity_trace, not both")
        return self

    @field_validator("ecn_threshold_pkts")
    @classmethod
    def _below_queue(cls, k: int | None, info: Any) -> int | None:
        q = info.data.get("queue_pkts")
        if k is not None and q is not None and k >= q:
            raise ValueError(f"{k} is not accepted: below queue_pkts ({q}), which the queue never exceeds")
        return k


class Duplex(Link):
    """A link's data direction, with the ACK direction in ``reverse``."""

    reverse: Link | None = None

    @model_validator(mode="after")
    def _radio_link(self) -> "Duplex":
        """A radio link: spikes are the link's (forward only); rates and delay left out take
        the 3G link's (384 kbit/s forward, 64 kbit/s reverse, 150 ms each way)."""
        rev = self.reverse.radio if self.reverse is not None else None
        if rev is not None:
            for f in _SPIKE_FIELDS:
                if getattr(rev, f) is not None:
                    raise ValueError(f"reverse.radio.{f}: not accepted on the reverse direction: a fade stalls "
                                     "both directions, so the spike process (mobility, spike_*) is set on the "
                                     "forward direction and the reverse shares it")
        if self.radio is None:
            return self
        if self.rate_bps is None and self.capacity_trace is None:
            self.rate_bps = RADIO_DOWN_BPS
            if self.reverse is None:
                self.reverse = Link()
            if self.reverse.rate_bps is None and self.reverse.capacity_trace is None:
                self.reverse.rate_bps = RADIO_UP_BPS
        if self.delay_ms is None:
            self.delay_ms = RADIO_DELAY_MS
        return self


class HostStack(_Model):
    """A host's stack below TCP (crates/cclab-net/src/host.rs): the interface queue (pfifo of
    ``device_queue_pkts`` packets) drained by the NIC at ``device_rate_bps``, and the TCP Small
    Queues rule that limits each socket's bytes down there. ``[host]`` sets every host; a host's
    own ``host`` overrides field by field. Without ``device_rate_bps`` no interface queue is
    modelled (packets go straight onto the host's link) and TSQ never binds."""

    #: linux (6.18 tcp_small_queue_check), paper (S2 eq. 2), fixed (eq. 3), off.
    tsq: Literal["linux", "paper", "fixed", "off", "adaptive"] | None = None
    #: tcp_limit_output_bytes for linux (4 MiB), the cap for paper (262144), the limit for fixed
    #: (131072).
    tsq_limit_bytes: int | None = Field(default=None, ge=1)
    #: sk_pacing_shift: TSQ allows pacing_rate >> shift bytes (10: about 1 ms).
    pacing_shift: int | None = Field(default=None, ge=0, le=31)
    device_rate_bps: int | None = Field(default=None, gt=0, le=int(MAX_RATE_BPS))
    #: txqueuelen: packets waiting besides the one the NIC sends (default 1000).
    device_queue_pkts: int | None = Field(default=None, ge=1)
    #: When the device gives a socket back an skb's bytes below TCP (sk_wmem_alloc): end (a
    #: NIC's TX completion, each segment when sent; the default) or start (the kernel backend's
    #: htb + TUN: an skb's segments are handed on together when its turn comes and
    #: tun_net_xmit frees the whole skb then; the next skb waits out its transmission time;
    #: simulator only, an ablation). Needs device_rate_bps.
    device_release: Literal["end", "start"] | None = None
    #: Linux's skb building for unpaced sockets (tcp_tso_autosize) and tcp_tso_should_defer;
    #: default off (one segment per skb without a device, never deferred).
    tso_defer: bool | None = None
    #: The socket send buffer: linux (6.18's sk_sndbuf, tcp_sndbuf_expand and a poll()-driven
    #: writer of 64 KiB, the default) or unlimited (the application has written everything;
    #: simulator only).
    sndbuf: Literal["linux", "unlimited"] | None = None
    #: net.ipv4.tcp_wmem: [min, default, max] bytes (Linux: [4096, 16384, 4194304]); max caps
    #: how far the send buffer grows. The kernel backend sets it in the host's namespace.
    tcp_wmem_bytes: tuple[int, int, int] | None = None

    @field_validator("tcp_wmem_bytes", mode="after")
    @classmethod
    def _wmem(cls, v: Any) -> Any:
        if v is not None and not (0 < v[0] <= v[1] <= v[2] <= 2**31 - 1):
            raise ValueError(f"{list(v)} is not accepted: three sizes (min, default, max) with 0 < min <= default <= max "
                             "<= 2147483647 (Linux: [4096, 16384, 4194304])")
        return v

    @field_validator("device_rate_bps", "tsq_limit_bytes", mode="after")
    @classmethod
    def _whole(cls, v: Any) -> Any:
        return None if v is None else int(round(v))


class Host(_Model):
    """A dumbbell sender or receiver, with its access link and its stack below TCP."""

    name: str = Field(min_length=1)
    access: Duplex | None = None
    host: HostStack | None = None


class Node(_Model):
    """A node of the general form: a host (ends flows; a namespace on the kernel backend) or a
    router (forwards; inside cclab-link on the kernel backend)."""

    name: str = Field(min_length=1)
    kind: Literal["host", "router"] = "host"
    #: Static routes: destination node -> next-hop node (a neighbour); other destinations
    #: follow shortest paths (fewest hops, through routers).
    routes: dict[str, str] = Field(default_factory=dict)
    #: A host's stack below TCP, over the scenario's ``[host]``.
    host: HostStack | None = None


class SharedMedium(_Model):
    """A multi-port medium of the general form: a shared channel joining ``nodes`` (each node's
    port is its interface on it): one transmitter at ``rate_bps`` shared round-robin by the
    ports that have packets, ``overhead_us`` of airtime per transmission besides its bits,
    ``delay_ms`` to any other port, a drop-tail queue of ``queue_pkts`` at each port, and
    frames lost on the air with ``loss``/``loss_model`` (crates/cclab-net/src/shared.rs)."""

    name: str = Field(min_length=1)
    nodes: list[str] = Field(min_length=2)
    kind: Literal["shared"] = "shared"
    rate_bps: Bps
    delay_ms: float = Field(default=0.0, ge=0)
    queue_pkts: int | None = Field(default=None, ge=1)
    overhead_us: float = Field(default=0.0, ge=0)
    loss: Prob | None = None
    loss_model: LossModel | None = None

    def core_spec(self) -> dict[str, Any]:
        """The core's ``spec`` object."""
        if self.loss_model is not None:
            loss_model = self.loss_model.model_dump()
        elif self.loss:
            loss_model = {"kind": "bernoulli", "p": self.loss}
        else:
            loss_model = {"kind": "none"}
        return {"rate_bps": int(round(self.rate_bps)), "delay_ms": float(self.delay_ms), "queue_pkts": self.queue_pkts,
                "overhead_us": float(self.overhead_us), "loss_model": loss_model}


class DcfMedium(_Model):
    """An 802.11 cell of the general form (``kind = "dcf"``): ``nodes`` contend for one channel
    under the Distributed Coordination Function, each with its own queue (an access point's
    holds everything it sends, TCP ACKs included). Every PHY value defaults to the
    ``standard``'s preset; docs/dcf.md has the model and every field
    (crates/cclab-net/src/dcf)."""

    name: str = Field(min_length=1)
    nodes: list[str] = Field(min_length=2)
    kind: Literal["dcf"]
    #: "802.11b", "802.11g" (ERP-OFDM, 54 Mbit/s) or "802.11n" (HT, one stream, 20 MHz).
    standard: Literal["802.11b", "802.11g", "802.11n"] = "802.11g"
    #: 802.11n only: the HT MCS, 0..7 (default 7, 65 Mbit/s).
    ht_mcs: int | None = Field(default=None, ge=0, le=7)
    slot_us: float | None = Field(default=None, gt=0)
    sifs_us: float | None = Field(default=None, ge=0)
    difs_us: float | None = Field(default=None, ge=0)
    data_rate_bps: Bps | None = None
    control_rate_bps: Bps | None = None
    cw_min: int | None = Field(default=None, ge=0)
    cw_max: int | None = Field(default=None, ge=0)
    preamble_us: float | None = Field(default=None, ge=0)
    control_preamble_us: float | None = Field(default=None, ge=0)
    signal_extension_us: float | None = Field(default=None, ge=0)
    mac_overhead_bytes: int | None = Field(default=None, ge=0)
    #: Transmission attempts of a frame before it is dropped.
    retry_limit: int = Field(default=7, ge=1)
    #: Each port's queue limit, packets / bytes (the frame in its exchange included).
    queue_pkts: int | None = Field(default=None, ge=1)
    queue_bytes: int | None = Field(default=None, ge=1)
    #: A node's own packet limit, replacing ``queue_pkts`` for it: ``{ ap = 400 }``.
    queue_pkts_by_node: dict[str, Annotated[int, Field(ge=1)]] = Field(default_factory=dict)
    #: Frames whose PSDU is longer go after an RTS/CTS exchange.
    rts_threshold_bytes: int | None = Field(default=None, ge=0)
    #: Probability that an attempt not in a collision is lost (every port) ...
    frame_error_rate: Prob = 0.0
    #: ... or per port, one entry per node.
    frame_error_rates: list[Prob] = Field(default_factory=list)
    delay_ms: float = Field(default=0.0, ge=0)
    #: Per-station rate adaptation of data frames: "none" (every frame at ``data_rate_bps``),
    #: "arf" (Auto Rate Fallback) or "aarf" (adaptive ARF), as ns-3's ArfWifiManager and
    #: AarfWifiManager; stations start at ``data_rate_bps`` (the standard's top rate by default),
    #: and a collision counts as a failure like a frame error.
    rate_adaptation: Literal["none", "arf", "aarf"] = "none"
    #: ARF/AARF: consecutive failed attempts that step a rate down.
    arf_failure_threshold: int = Field(default=2, ge=1)
    #: ARF/AARF: consecutive successes that step a rate up (AARF: the minimum).
    arf_success_threshold: int = Field(default=10, ge=1)
    #: ARF/AARF: transmissions since the last change that step a rate up (AARF: the minimum).
    arf_timer_threshold: int = Field(default=15, ge=1)
    #: AARF: the largest success threshold (doubled after each failed probe).
    aarf_max_success_threshold: int = Field(default=60, ge=1)
    #: How a waiting station's backoff counter counts a busy medium: "ieee" (802.11-2016
    #: 10.3.4.3, as ns-3: frozen while busy, decremented at the end of idle slots) or "bianchi"
    #: (Bianchi 2000's Markov chain: a busy period counts as one slot). docs/dcf.md, "Validation".
    backoff_rule: Literal["ieee", "bianchi"] = "ieee"

    @model_validator(mode="after")
    def _ports(self) -> "DcfMedium":
        unknown = sorted(set(self.queue_pkts_by_node) - set(self.nodes))
        if unknown:
            raise ValueError(f"queue_pkts_by_node: {unknown} not on this medium; its nodes are {self.nodes}")
        if self.frame_error_rates and len(self.frame_error_rates) != len(self.nodes):
            raise ValueError(f"frame_error_rates: {len(self.frame_error_rates)} values; none, or one per node "
                             f"({len(self.nodes)})")
        return self

    def core_spec(self) -> dict[str, Any]:
        """The core's ``spec`` object (DcfSpec)."""
        d = self.model_dump(exclude={"name", "nodes", "kind", "queue_pkts_by_node"}, exclude_none=True)
        if self.queue_pkts_by_node:
            d["queue_pkts_by_port"] = [self.queue_pkts_by_node.get(n) for n in self.nodes]
        for k in ("data_rate_bps", "control_rate_bps"):
            if k in d:
                d[k] = int(round(d[k]))
        if not d.get("frame_error_rates"):
            d.pop("frame_error_rates", None)
        # Rate adaptation's fields and the backoff rule at their defaults stay out (the core has
        # the same defaults).
        for k in _RATE_ADAPTATION_FIELDS:
            if d.get(k) == DcfMedium.model_fields[k].default:
                d.pop(k)
        return d


_RATE_ADAPTATION_FIELDS = ("rate_adaptation", "arf_failure_threshold", "arf_success_threshold",
                           "arf_timer_threshold", "aarf_max_success_threshold", "backoff_rule")


class MeshMedium(_Model):
    """An 802.11s mesh chain (``kind = "mesh"``): ``nodes`` in a line, in order, ``spacing_m``
    apart (or at ``positions_m``), on one channel (802.11n HT, 5 GHz). Each node is a DCF
    contender that defers only to what it senses (received power from a log-distance path loss
    above ``cs_threshold_dbm``), and a frame is decoded at its receiver from its SINR over
    everything overlapping it there, so far nodes are hidden terminals. Forwarding along the chain
    is by the nodes' static routes (no HWMP). ``environment`` ("anechoic", "campus") fills in the
    radio values left out; docs/mesh.md has the model and every field
    (crates/cclab-net/src/mesh)."""

    name: str = Field(min_length=1)
    nodes: list[str] = Field(min_length=2)
    kind: Literal["mesh"]
    #: HT MCS of every data frame, 0..15 (8..15: two spatial streams); 11 = 108 Mbit/s at HT40.
    mcs: int = Field(default=11, ge=0, le=15)
    channel_width_mhz: Literal[20, 40] = 40
    guard_interval_ns: Literal[800, 400] = 800
    #: 2.4 (the S4 paper's channel 6: SIFS 10 us, 6 us signal extension) or 5 (SIFS 16 us), GHz.
    band_ghz: Literal[2.4, 5.0] = 2.4
    #: A-MPDU aggregation with BlockAck (off: one MPDU and an Ack per channel access).
    ampdu: bool = False
    ampdu_max_frames: int = Field(default=64, ge=1, le=64)
    ampdu_max_bytes: int = Field(default=65535, ge=1, le=65535)
    #: Distance between neighbours, m.
    spacing_m: float = Field(default=1.0, gt=0)
    #: Each node's position along the line, m (instead of ``spacing_m``).
    positions_m: list[float] = Field(default_factory=list)
    environment: Literal["anechoic", "campus"] = "anechoic"
    #: Radio values; None: the environment's (anechoic: exponent 2, no extra noise, no
    #: background, no error floor; campus: exponent 3, +6 dB noise, 20 % busy, 5 % floor).
    path_loss_exponent: float | None = Field(default=None, gt=0)
    #: Path loss at 1 m, dB (None: free space at 1 m, 40.18 on 2.4 GHz, 46.6777 on 5 GHz).
    reference_loss_db: float | None = None
    tx_power_dbm: float = 16.0206
    noise_figure_db: float = 7.0
    extra_noise_db: float | None = None
    cs_threshold_dbm: float = -82.0
    frame_error_rate: float | None = Field(default=None, ge=0, lt=1)
    background_busy_fraction: float | None = Field(default=None, ge=0, lt=1)
    background_burst_us: float | None = Field(default=None, gt=0)
    background_rx_dbm: float | None = None
    mac_overhead_bytes: int = Field(default=50, ge=0)
    retry_limit: int = Field(default=7, ge=1)
    queue_pkts: int | None = Field(default=None, ge=1)
    queue_bytes: int | None = Field(default=None, ge=1)
    delay_ms: float = Field(default=0.0, ge=0)

    @model_validator(mode="after")
    def _positions(self) -> "MeshMedium":
        if self.positions_m and len(self.positions_m) != len(self.nodes):
            raise ValueError(f"positions_m: {len(self.positions_m)} positions; none, or one per node "
                             f"({len(self.nodes)})")
        if len(set(self.positions_m)) != len(self.positions_m):
            raise ValueError(f"positions_m: {self.positions_m} puts two nodes at one place; distinct positions")
        return self

    def core_spec(self) -> dict[str, Any]:
        """The core's ``spec`` object (MeshSpec)."""
        d = self.model_dump(exclude={"name", "nodes", "kind"}, exclude_none=True)
        if not d.get("positions_m"):
            d.pop("positions_m", None)
        return d


MEDIUM_KINDS = ("shared", "dcf", "mesh")


def _medium_kind(v: Any) -> str:
    return v.get("kind", "shared") if isinstance(v, dict) else getattr(v, "kind", "shared")


#: A multi-port medium: a shared channel (``kind = "shared"``, the default), an 802.11 DCF
#: cell (``kind = "dcf"``) or an 802.11s mesh chain (``kind = "mesh"``).
Medium = Annotated[Union[Annotated[SharedMedium, Tag("shared")], Annotated[DcfMedium, Tag("dcf")],
                         Annotated[MeshMedium, Tag("mesh")]],
                   Discriminator(_medium_kind)]


class NetLink(Duplex):
    """A point-to-point link of the general form: the fields of [bottleneck] for the direction
    endpoints[0] -> endpoints[1], and ``reverse`` for the way back."""

    name: str | None = None
    endpoints: list[str] = Field(min_length=2, max_length=2)


#: The fields of a TCP flow that a UDP flow does not take.
_TCP_ONLY = ("cc", "cc_params", "mss_bytes", "initial_cwnd_pkts", "max_cwnd_pkts", "rwnd_bytes", "sack",
             "timestamps", "delayed_ack", "ack_every_pkts", "frto", "tlp", "ack_counting", "writer", "rto_min_ms",
             "rto_initial_ms", "rto_max_ms", "rto_min_mode", "rtt_gains", "rto_profile", "eifel_detection", "dsack_undo",
             "sto_response", "profile", "ecn", "reverse_path", "handshake", "first_write_delay_us")


class SizeBin(_Model):
    """A bin of a workload's size mix: chosen with probability share / (sum of shares), the size
    uniform in [min_bytes, max_bytes]."""

    min_bytes: int = Field(ge=1)
    max_bytes: int = Field(ge=1)
    share: float = Field(gt=0)

    @model_validator(mode="after")
    def _order(self) -> "SizeBin":
        if self.max_bytes < self.min_bytes:
            raise ValueError(f"max_bytes ({self.max_bytes}) must be at least min_bytes ({self.min_bytes})")
        return self


class Workload(_Model):
    """Connections opened one after another by one flow (crates/cclab-sim/src/workload.rs): each a
    fresh TCP connection of its own size, the next starting ``think_time_s`` after the previous one
    completed. Simulator only."""

    connections: int = Field(default=1, ge=1, le=100_000)
    #: "fixed" (every connection sends the flow's size_bytes), "web" (the S3 paper's mix of web
    #: content sizes: 0-50 kB 66 %, 50-100 kB 22 %, 100-150 kB 7 %, 150-200 kB 2 %, 500 kB-1 MB 2 %)
    #: or a list of bins.
    sizes: Literal["fixed", "web"] | list[SizeBin] = "fixed"
    think_time_s: float = Field(default=0.0, ge=0)
    #: "fixed", or "exponential" with mean think_time_s.
    think_time_dist: Literal["fixed", "exponential"] = "fixed"


def _cc_names() -> list[str]:
    """The core's algorithm and preset names (empty without the compiled core)."""
    global _CC_NAMES
    if _CC_NAMES is None:
        try:
            from . import _core
        except ImportError:  # pure-Python use: the core checks the name when it runs
            return []
        _CC_NAMES = [a["name"] for a in json.loads(_core.algorithms())]
    return _CC_NAMES


_CC_NAMES: list[str] | None = None


class Flow(_Model):
    """One flow: a TCP connection (the default), or with ``transport = "udp"`` a constant-bit-rate
    UDP stream of ``payload_bytes`` datagrams at ``rate_bps`` (docs/scenario.md lists every field)."""

    name: str | None = None
    sender: str | None = None
    receiver: str | None = None
    #: "tcp", "udp" (a constant-bit-rate stream: ``rate_bps``, ``payload_bytes``; no TCP field
    #: applies to it) or "mptcp" (a Multipath TCP connection: one TCP subflow per entry of
    #: ``paths``, each running ``cc``; general form only).
    transport: Literal["tcp", "udp", "mptcp"] = "tcp"
    #: UDP only: the application's (payload) sending rate, as iperf3's -b ("10Mbps" accepted).
    rate_bps: Bps | None = None
    #: UDP only: each datagram's payload, as iperf3's -l; the IP packet is 28 bytes more.
    payload_bytes: int = Field(default=1472, ge=1, le=65507)
    cc: str = "cubic"
    cc_params: dict[str, bool | int | float] = Field(default_factory=dict)
    start_s: float = Field(default=0.0, ge=0)
    size_bytes: int = Field(default=0, ge=0)
    mss_bytes: int = Field(default=1448, ge=64, le=65495)
    initial_cwnd_pkts: int = Field(default=10, ge=1, le=1_000_000)
    max_cwnd_pkts: int = Field(default=0, ge=0)
    rwnd_bytes: int = Field(default=0, ge=0)
    sack: bool = True
    timestamps: bool = True
    delayed_ack: bool = True
    #: With delayed ACKs, ACK at once once more than ``ack_every_pkts - 1`` full segments are
    #: unacknowledged: 2 is Linux's rule; more gives stretch ACKs (an XNU receiver's
    #: ``maxseg_unacked`` = 8, or a receiver aggregating with GRO); simulator only.
    ack_every_pkts: int = Field(default=2, ge=2, le=64)
    frto: bool = True
    tlp: bool = True
    #: The three-way handshake as packets (SYN, SYN-ACK, ACK; the data follows the ACK), as the
    #: kernel does; false: the flow starts established at ``start_s``, its first RTT sample the idle
    #: path's (the model before the handshake existed). Multipath
    #: TCP connections keep the modelled handshake whatever this says (docs/scenario.md).
    handshake: bool = True
    #: With the handshake: how long after connect() returns the application writes first, us. A
    #: process woken by connect() cannot write in the instant its kernel sent the handshake's
    #: last ACK; with 0 that ACK and the initial window reach the first queue together (one more
    #: packet than a real host puts there). The kernel backend's sender measures about 50 us on a
    #: quiet machine; `cclab fidelity` pairs each run with the kernel's own figure.
    first_write_delay_us: float = Field(default=50.0, ge=0, le=1_000_000)
    #: What one step of cwnd growth counts: "segments" acked (Linux 3.18 on, 6.18) or "acks"
    #: (one step per ACK whatever it acknowledges: Linux before 3.18, e.g. the S1 paper's 3.4
    #: phones; the kernel backend runs 6.18's rule and says so in the summary's deviations).
    ack_counting: Literal["segments", "acks"] = "segments"
    #: How the sending application writes into the socket send buffer ([host] sndbuf): "poll"
    #: (poll() then a non-blocking 64 KiB send, as cclab's kernel traffic sender and iperf3: the
    #: buffer stays near 2/3 full) or "blocking" (a plain blocking send loop: between 2/3 and full).
    writer: Literal["poll", "blocking"] = "poll"
    rto_min_ms: float = Field(default=200.0, ge=1)
    rto_initial_ms: float = Field(default=1000.0, ge=1)
    rto_max_ms: float = Field(default=120_000.0, ge=1)
    #: How rto_min_ms acts: "linux" (RTO = srtt + max(4 mdev, rto_min): Linux's floor of the
    #: variance) or "rfc6298" (RTO = max(rto_min, srtt + 4 rttvar), RFC 6298 2.4, with its
    #: estimator).
    rto_min_mode: Literal["linux", "rfc6298"] = "linux"
    #: The gains of RFC 6298's estimator (rto_min_mode = "rfc6298" only): "per_sample" (1/8 and
    #: 1/4 per RTT sample, the RFC's 2.3) or "per_window" (divided by the samples a window gives,
    #: RFC 7323 Appendix G, for a sender sampling every ACK).
    rtt_gains: Literal["per_sample", "per_window"] = "per_sample"
    #: A named timer: "linux" (initial 1 s, min 200 ms, Linux's rule), "standard" (the S3
    #: paper's: 3 s, 0.5 s, RFC 6298's rule), "proposed" (4 s, 4 s, RFC 6298's rule); unset or
    #: "custom": the fields as given (cclab.flow_profiles).
    rto_profile: Literal["linux", "standard", "proposed", "custom"] | None = None
    #: Timestamp-based detection of spurious retransmissions (RFC 3522, Linux's
    #: tcp_packet_delayed); acts only with timestamps.
    eifel_detection: bool = True
    #: D-SACK-based detection (RFC 3708, Linux's undo_retrans and tcp_try_undo_dsack); acts
    #: only with SACK.
    dsack_undo: bool = True
    #: The response to a detected spurious timeout: "linux" (Linux's undo), "eifel" (RFC 4015),
    #: "rfc2861" (the S3 paper's: cwnd kept, ssthresh halved), "reno" (none: no detection,
    #: go-back-N; turns frto off).
    sto_response: Literal["linux", "eifel", "rfc2861", "reno"] = "linux"
    #: A named TCP profile: "w-tcp" (the S3 paper's W-TCP: max cwnd 64 KB = 44 segments,
    #: initial window 4 KB = 3 segments, SACK, MSS 1460); unset: none (cclab.flow_profiles).
    profile: Literal["w-tcp"] | None = None
    #: ECN at both ends: "off"; "on" (RFC 3168, Linux net.ipv4.tcp_ecn = 1); "low" (google/bbr's
    #: ecn_low route feature: precise CE echo, used by bbr2/bbr3; simulator only).
    ecn: Literal["off", "on", "low"] = "off"
    #: General form: the nodes the data crosses, sender first, receiver last; default: the
    #: routing table (static routes, then shortest paths).
    path: list[str] | None = None
    #: General form: the nodes the ACKs cross, receiver first; default: ``path`` reversed if
    #: given, else the routing table.
    reverse_path: list[str] | None = None
    #: Multipath TCP only (required): one subflow per entry, each the nodes its data crosses,
    #: sender first, receiver last; its ACKs return on it reversed.
    paths: list[list[str]] | None = Field(default=None, min_length=1, max_length=8)
    #: Multipath TCP only: whose stack the simulator follows: "v0.9x" (multipath-tcp.org v0.9x,
    #: the S2 paper's kernel: lowest-RTT scheduling of what a subflow sends at once, TCP's ACKs)
    #: or "linux" (upstream Linux 6.18, what the kernel backend runs: 64 KB bursts into the
    #: subflow with the shortest linger time, ACKs that wait for the application's read).
    mptcp_stack: Literal["v0.9x", "linux"] = "v0.9x"
    #: TCP only: connections one after another, each with its own size (``[flows.workload]``;
    #: docs/scenario.md "Workloads"); None: one connection.
    workload: Workload | None = None

    @field_validator("cc")
    @classmethod
    def _known_cc(cls, v: str) -> str:
        # Checked here as well as in the core, so that a bad name is reported with every other
        # bad field (the core stops at its first).
        known = _cc_names()
        if known and v not in known:
            raise ValueError(f"unknown congestion control {shown_value(v)}: known are {', '.join(known)}")
        return v

    @field_validator("cc_params", mode="before")
    @classmethod
    def _param_values(cls, v: Any) -> Any:
        if isinstance(v, dict):
            for k, x in v.items():
                ok = isinstance(x, (bool, int)) or (isinstance(x, float) and math.isfinite(x))
                if not ok:
                    raise ValueError(f"{shown_value(k)} = {shown_value(x)} is not accepted: a finite number or "
                                     "true/false")
        return v

    @model_validator(mode="after")
    def _transport_fields(self) -> "Flow":
        # A field "given" is one away from its default: a scenario dumped and loaded again (every
        # field then set, at its default) must load as before.
        fields = type(self).model_fields
        given = {k for k in self.model_fields_set if getattr(self, k) != fields[k].get_default(call_default_factory=True)}
        if self.transport == "udp":
            if self.rate_bps is None:
                raise ValueError("a UDP flow needs rate_bps (its sending rate)")
            tcp_only = sorted(set(_TCP_ONLY) & given)
            if tcp_only:
                raise ValueError(f"TCP settings, not for a UDP flow: {', '.join(tcp_only)}")
        else:
            for k in ("rate_bps", "payload_bytes"):
                if k in given:
                    raise ValueError(f'{k} is only for transport = "udp" (a TCP flow\'s rate is its congestion control\'s)')
        if self.transport == "mptcp":
            if self.paths is None:
                raise ValueError("a Multipath TCP flow needs paths: one list of nodes per subflow, sender first")
            for k in ("path", "reverse_path"):
                if getattr(self, k) is not None:
                    raise ValueError(f"{k} is not for a Multipath TCP flow: give its subflows' routes in paths "
                                     "(each subflow's ACKs return on its path reversed)")
        else:
            if self.paths is not None:
                raise ValueError('paths is only for transport = "mptcp" (a TCP or UDP flow takes one path)')
            if "mptcp_stack" in given:
                raise ValueError('mptcp_stack is only for transport = "mptcp" (a TCP or UDP flow has no Multipath TCP stack)')
        if self.workload is not None:
            if self.transport != "tcp":
                raise ValueError('workload is only for a TCP flow (transport = "tcp")')
            if self.workload.sizes == "fixed" and self.size_bytes == 0 and self.workload.connections > 1:
                raise ValueError("workload: several connections need a size: give size_bytes or workload.sizes")
        return self

    @model_validator(mode="after")
    def _profiles(self) -> "Flow":
        # The one place rto_profile and profile become the flow's own fields (which the core and
        # the kernel backend read); a conflicting field given with one is an error naming both.
        from .flow_profiles import FLOW_PROFILES, RTO_PROFILES, resolve

        fields = type(self).model_fields
        given = {k for k in self.model_fields_set if getattr(self, k) != fields[k].get_default(call_default_factory=True)}
        values = {k: getattr(self, k) for k in fields}
        sets = resolve("rto_profile", self.rto_profile, RTO_PROFILES, values, given)
        sets |= resolve("profile", self.profile, FLOW_PROFILES, values, given)
        if self.sto_response == "reno":
            sets["frto"] = False  # no detection: plain go-back-N
        for k, v in sets.items():
            setattr(self, k, v)
        return self

    @model_validator(mode="after")
    def _rto_order(self) -> "Flow":
        if self.rto_min_ms > self.rto_max_ms:
            raise ValueError(f"rto_min_ms ({self.rto_min_ms}) must not exceed rto_max_ms ({self.rto_max_ms})")
        return self


class MiddlewareRow(_Model):
    """A row of the middleware's table (candidate 2): from ``from_ratio_rtt_ms`` (current RTT -
    min RTT, eq. 5) on, cwnd is kept within [lower_pkts, upper_pkts]."""

    from_ratio_rtt_ms: float = Field(ge=0)
    upper_pkts: int = Field(ge=1)
    lower_pkts: int = Field(ge=1)


#: The middleware's table: a shipped one by name (S3.2's table 1, table 3 before and after the
#: improvement) or rows.
_TABLE_BY_NAME, _TABLE_ROWS = "table-name", "table-rows"  # union tags, left out of error paths
MiddlewareTable = Annotated[
    Union[Annotated[Literal["s32", "before", "improved"], Tag(_TABLE_BY_NAME)],
          Annotated[list[MiddlewareRow], Tag(_TABLE_ROWS)]],
    Discriminator(lambda v: _TABLE_BY_NAME if isinstance(v, str) else _TABLE_ROWS),
]


class Middleware(_Model):
    """The S1 middleware (crates/cclab-sim/src/middleware; docs/scenario.md#the-s1-middleware): each
    terminal counts the terminals on its cell by UDP broadcasts and every ``interval_ms`` keeps its
    connections' cwnd within [lower, upper] from eq. 2-5 and a table. ``[middleware]`` alone turns
    on the paper's improved middleware on every host that sends a flow."""

    enabled: bool = True
    #: Candidate 2: "s32" (section 3.2), "before" or "improved" (table 3), or rows.
    table: MiddlewareTable = "improved"
    #: How eq. 2 gives upper1 and lower1: rtt_span (at the current and at the minimum RTT),
    #: ideal (both at the current RTT), scaled (factors x Ideal_cwnd), table_only (no eq. 2).
    candidate_rule: Literal["rtt_span", "ideal", "scaled", "table_only"] = "rtt_span"
    scaled_upper_factor: float = Field(default=1.0, gt=0)
    scaled_lower_factor: float = Field(default=0.5, gt=0)
    #: BWmax of eq. 3 (default 54 Mbit/s, 802.11g's highest rate).
    bw_max_bps: Bps = 54e6
    #: f(N) = N^f_exponent (eq. 4).
    f_exponent: float = Field(default=-0.15, ge=-5, le=0)
    #: SegmentSize of eq. 2.
    segment_bytes: int = Field(default=1500, ge=64, le=65535)
    #: The clamping step.
    interval_ms: float = Field(default=500.0, ge=1)
    #: Each terminal broadcasts one counting datagram this often ...
    count_interval_ms: float = Field(default=500.0, ge=1)
    #: ... of this size as an IPv4 packet (28 bytes of headers included) ...
    count_bytes: int = Field(default=64, ge=44, le=1500)
    #: ... and counts a sender as present this long after last hearing it.
    count_window_ms: float = Field(default=1500.0, ge=1)
    #: Bounds apply only while at least this many terminals are counted (itself included).
    min_terminals: int = Field(default=1, ge=1)
    #: Hosts that run it; empty: every host that sends a flow.
    hosts: list[str] = Field(default_factory=list)

    @field_validator("bw_max_bps", mode="after")
    @classmethod
    def _whole(cls, v: float) -> float:
        return float(round(v))

    def to_core_dict(self) -> dict[str, Any]:
        """As the core reads it (``cclab._core.middleware_bounds`` takes its JSON too)."""
        d = self.model_dump()
        d["bw_max_bps"] = int(d["bw_max_bps"])
        return d


class SimSettings(_Model):
    """Simulator-only settings."""

    kernel_hz: Literal[100, 250, 300, 1000] = 250
    #: TCP's timers (RTO, loss probe, delayed ACK, SYN and SYN-ACK) run when Linux's timer wheel
    #: reaches their bucket, 1 to 8^n jiffies after their expiry (docs/scenario.md, "Timers");
    #: false: at their expiry jiffy.
    timer_wheel: bool = True
    #: jiffies at simulated time zero, and how far into a tick zero falls (us): where zero sits on
    #: the kernel's tick grid. A kernel run reports its own (summary.json ``kernel_clock``) so a
    #: simulation can be paired with it.
    jiffies_at_zero: int = Field(default=0, ge=0, le=2**63 - 1)
    tick_phase_us: float = Field(default=0.0, ge=0.0)
    trace: Literal["change", "ack", "interval"] = "change"
    trace_interval_ms: float = Field(default=10.0, ge=0.1)
    #: The run's budget (docs/scenario.md, "Budget"): the most events it may process, and the
    #: most wall-clock seconds it may take (None: no limit). A run that reaches either stops with
    #: a ScenarioError naming the field, the budget and the simulated time it reached.
    max_events: int = Field(default=DEFAULT_MAX_EVENTS, ge=1, le=2**63 - 1)
    max_wall_s: float | None = Field(default=None, gt=0, allow_inf_nan=False)

    @model_validator(mode="after")
    def _phase_below_a_tick(self) -> "SimSettings":
        tick_us = 1e6 / self.kernel_hz
        if self.tick_phase_us >= tick_us:
            raise ValueError(f"tick_phase_us = {self.tick_phase_us} is not accepted: below one tick "
                             f"({tick_us:g} us at kernel_hz = {self.kernel_hz})")
        return self


class KernelSettings(_Model):
    """Kernel-backend-only settings, set inside the run's namespaces and gone with them
    (docs/kernel.md). The simulator ignores them (it does not model TSQ)."""

    #: net.ipv4.tcp_no_metrics_save: do not carry cwnd/ssthresh/RTT from one connection to the next.
    tcp_no_metrics_save: bool = True
    #: net.ipv4.tcp_limit_output_bytes, the TCP Small Queues limit; None keeps the kernel's default.
    tcp_limit_output_bytes: int | None = Field(default=None, ge=1)
    #: Replaced by ``flows[].ecn`` (one name for one thing); refused when given.
    tcp_ecn: Any = Field(default=None, exclude=True)
    #: Any other per-namespace sysctl, by its dotted name (``net.ipv4.tcp_recovery = 1``).
    sysctls: dict[str, int | str] = Field(default_factory=dict)
    #: How the middleware's upper bound reaches the sockets: "cc" (inside cclab_cubic_mw, next to
    #: the floor, ssthresh untouched: what the simulator does) or "clamp" (the BPF sock_ops clamp,
    #: TCP_BPF_SNDCWND_CLAMP, which also sets ssthresh to the cap whenever the cap changes;
    #: kernel only). docs/design.md, "Middleware".
    middleware_cap: Literal["clamp", "cc"] = "cc"

    @field_validator("tcp_ecn")
    @classmethod
    def _tcp_ecn_moved(cls, v: Any) -> None:
        if v is not None:
            raise ValueError(f"{v!r} is not accepted: ECN is set per flow, flows[].ecn = \"on\" (net.ipv4.tcp_ecn = 1 "
                             "in the flow's namespaces, as the simulator's RFC 3168 ECN) or \"off\"; remove kernel.tcp_ecn")
        return None

    @field_validator("sysctls")
    @classmethod
    def _net_only(cls, v: dict[str, int | str]) -> dict[str, int | str]:
        for key in v:
            if not key.startswith("net.") or "/" in key or ".." in key:
                raise ValueError(f"{key!r}: only per-namespace net.* sysctls (dotted, e.g. net.ipv4.tcp_recovery)")
        return v


class Scenario(_Model):
    """A validated scenario. Build with :func:`load_scenario` or directly from Python objects."""

    name: str = "scenario"
    description: str = ""
    duration_s: float = Field(gt=0, le=MAX_DURATION_S)
    seed: int = Field(default=1, ge=0, lt=2**63)
    sim: SimSettings = Field(default_factory=SimSettings)
    kernel: KernelSettings = Field(default_factory=KernelSettings)
    #: Every host's stack below TCP (interface queue, TSQ), unless a host overrides it.
    host: HostStack = Field(default_factory=HostStack)
    #: The dumbbell shorthand (with ``senders`` and ``receivers``), or None for the general form.
    bottleneck: Duplex | None = None
    senders: list[Host] | None = Field(default=None, min_length=1)
    receivers: list[Host] | None = Field(default=None, min_length=1)
    #: The general form: hosts and routers joined by point-to-point links.
    nodes: list[Node] = Field(default_factory=list)
    links: list[NetLink] = Field(default_factory=list)
    media: list[Medium] = Field(default_factory=list)
    flows: list[Flow] = Field(min_length=1)
    #: The S1 middleware on the terminals; None: off.
    middleware: Middleware | None = None
    #: Directory that relative paths (capacity traces) are read from.
    base_dir: str = Field(default=".", exclude=True)

    @property
    def is_general(self) -> bool:
        """Whether the scenario uses the general form (``nodes`` and ``links``)."""
        return self.bottleneck is None

    @model_validator(mode="after")
    def _references(self) -> "Scenario":
        for i, f in enumerate(self.flows):
            if f.start_s >= self.duration_s:
                raise ValueError(f"flows[{i}].start_s: {f.start_s:g} s is not before the run's end (duration_s = "
                                 f"{self.duration_s:g}): the flow would never start")
        general = bool(self.nodes or self.links or self.media)
        if self.bottleneck is not None and general:
            raise ValueError("nodes: give either the dumbbell (bottleneck, senders, receivers) or the general form "
                             "(nodes, links), not both")
        if self.bottleneck is None and not general:
            raise ValueError("bottleneck: required: a dumbbell's bottleneck, or the general form's nodes and links")
        if general:
            return self._general_references()
        if self.senders is None:
            self.senders = [Host(name="sender")]
        if self.receivers is None:
            self.receivers = [Host(name="receiver")]
        b = self.bottleneck
        assert b is not None
        if b.rate_bps is None and b.capacity_trace is None:
            raise ValueError("bottleneck: give rate_bps or capacity_trace")
        if b.delay_ms is None:
            b.delay_ms = 0.0
        for kind, hosts in (("senders", self.senders), ("receivers", self.receivers)):
            names = [h.name for h in hosts]
            dup = {n for n in names if names.count(n) > 1}
            if dup:
                raise ValueError(f"{kind}: names must be unique, repeated: {sorted(dup)}")
        senders = [h.name for h in self.senders]
        receivers = [h.name for h in self.receivers]
        for i, f in enumerate(self.flows):
            if f.name is None:
                f.name = f"flow{i}"
            if f.sender is None:
                f.sender = senders[0]
            if f.receiver is None:
                f.receiver = receivers[0]
            if f.sender not in senders:
                raise ValueError(f"flows[{i}].sender: no sender named {f.sender!r}; senders are {senders}")
            if f.receiver not in receivers:
                raise ValueError(f"flows[{i}].receiver: no receiver named {f.receiver!r}; receivers are {receivers}")
            for key in ("path", "reverse_path", "paths"):
                if getattr(f, key) is not None:
                    raise ValueError(f"flows[{i}].{key}: paths are for the general form (nodes, links); a dumbbell "
                                     "flow crosses its sender's access link, the bottleneck and its receiver's")
        self._unique_flow_names()
        return self

    def _general_references(self) -> "Scenario":
        """Names, defaults and the checks pydantic can make; the core checks the graph (dangling
        nodes, loops, unreachable receivers, paths that do not exist) and names each error."""
        for kind in ("senders", "receivers"):
            if getattr(self, kind) is not None:
                raise ValueError(f"{kind}: the general form declares hosts as [[nodes]] (kind = \"host\"); "
                                 "senders and receivers belong to the dumbbell")
        hosts = [n.name for n in self.nodes if n.kind == "host"]
        for k, link in enumerate(self.links):
            if link.name is None:
                link.name = "-".join(link.endpoints)
            if link.delay_ms is None:
                link.delay_ms = 0.0
        for i, f in enumerate(self.flows):
            if f.name is None:
                f.name = f"flow{i}"
            for key, default in (("sender", f.path[0] if f.path else None),
                                 ("receiver", f.path[-1] if f.path else None)):
                if getattr(f, key) is None:
                    if default is None and len(hosts) == 2:
                        default = hosts[0] if key == "sender" else hosts[1]
                    if default is None:
                        raise ValueError(f"flows[{i}].{key}: required in the general form (a host's name; "
                                         f"hosts are {hosts})")
                    setattr(f, key, default)
        self._unique_flow_names()
        return self

    def _unique_flow_names(self) -> None:
        names = [f.name for f in self.flows]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise ValueError(f"flows: names must be unique, repeated: {sorted(dup)}")

    # ----------------------------------------------------------------------------------------
    def _link_json(self, link: Link, forward: Link | None, path: str) -> dict[str, Any]:
        """One direction as the core reads it; a reverse link inherits rate, trace, delay and
        queue from ``forward`` (loss, outages and spikes are its own)."""
        src = forward if forward is not None else link

        def pick(attr: str) -> Any:
            v = getattr(link, attr)
            return v if v is not None or forward is None else getattr(forward, attr)

        rate, trace = link.rate_bps, link.capacity_trace
        if forward is not None and rate is None and trace is None:
            rate, trace = src.rate_bps, src.capacity_trace
        trace_text = None
        if trace is not None:
            p = Path(trace)
            if not p.is_absolute():
                p = Path(self.base_dir) / p
            try:
                trace_text = p.read_text()
            except OSError as e:
                raise ScenarioError([(f"{path}.capacity_trace", f"cannot read {str(p)!r}: {e.strerror}")]) from e
            except UnicodeDecodeError as e:
                raise ScenarioError([(f"{path}.capacity_trace", f"{str(p)!r} is not text: {_not_utf8(e)}")]) from e
            except ValueError as e:  # a name the file system cannot take: a NUL, a lone surrogate
                raise ScenarioError([(f"{path}.capacity_trace",
                                      f"{str(trace)!r} is not a usable file name ({type(e).__name__})")]) from e
        queue_pkts, queue_bytes = link.queue_pkts, link.queue_bytes
        if forward is not None and queue_pkts is None and queue_bytes is None:
            queue_pkts, queue_bytes = forward.queue_pkts, forward.queue_bytes
        if link.loss_model is not None:
            loss_model = link.loss_model.model_dump()
        elif link.loss:
            loss_model = {"kind": "bernoulli", "p": link.loss}
        else:
            loss_model = {"kind": "none"}
        delay = pick("delay_ms")
        extra: dict[str, Any] = {}
        if link.radio is not None or (forward is not None and forward.radio is not None):
            radio = link.radio or Radio()
            extra["radio"] = radio.core_dict(forward.radio if forward is not None else None)
        if link.qdisc is not None and link.qdisc.kind != "drop_tail":
            q = link.qdisc.model_dump(exclude_none=True)
            extra["qdisc"] = {k: int(round(v)) if k.endswith(("_bytes", "_pkts", "_bps")) else v for k, v in q.items()}
        return {
            "rate_bps": None if rate is None else int(round(rate)),
            "capacity_trace_text": trace_text,
            "delay_ms": float(delay or 0.0),
            "queue_pkts": queue_pkts,
            "queue_bytes": queue_bytes,
            "loss_model": loss_model,
            "outages": [o.model_dump() for o in link.outages],
            "delay_spikes": [d.model_dump() for d in link.delay_spikes],
            "ecn_threshold_pkts": link.ecn_threshold_pkts,
            **extra,
        }

    def _duplex_json(self, d: Duplex, path: str) -> dict[str, Any]:
        rev = d.reverse if d.reverse is not None else Link()
        return {"fwd": self._link_json(d, None, f"{path}"), "rev": self._link_json(rev, d, f"{path}.reverse")}

    def to_core_dict(self) -> dict[str, Any]:
        """The normalised scenario: every default filled, every quantity a number in the unit
        its field name says, reverse links resolved, ``loss`` folded into ``loss_model``,
        capacity traces read into ``capacity_trace_text``."""
        out: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "duration_s": self.duration_s,
            "seed": self.seed,
            "sim": self.sim.model_dump(),
            "host": self.host.model_dump(),
        }
        if self.bottleneck is not None:
            hosts = lambda hs, kind: [  # noqa: E731
                {"name": h.name,
                 "access": None if h.access is None else self._duplex_json(h.access, f"{kind}[{i}].access"),
                 "host": None if h.host is None else h.host.model_dump()}
                for i, h in enumerate(hs or [])
            ]
            out["bottleneck"] = self._duplex_json(self.bottleneck, "bottleneck")
            out["senders"] = hosts(self.senders, "senders")
            out["receivers"] = hosts(self.receivers, "receivers")
        else:
            out["nodes"] = [n.model_dump() for n in self.nodes]
            out["links"] = [
                {"name": link.name, "endpoints": list(link.endpoints), **self._duplex_json(link, f"links[{k}]")}
                for k, link in enumerate(self.links)
            ]
            out["media"] = [self._medium_json(m) for m in self.media]
        flows = []
        for f in self.flows:
            d = f.model_dump()
            if f.transport == "udp":
                d["rate_bps"] = int(round(f.rate_bps or 0))
            else:
                d.pop("rate_bps")
            if self.bottleneck is not None:  # the dumbbell's flows have no paths
                d.pop("path")
                d.pop("reverse_path")
            if d.get("paths") is None:
                d.pop("paths", None)
            # Resolved into the flow's own fields (Flow._profiles): the core takes those.
            d.pop("rto_profile", None)
            d.pop("profile", None)
            flows.append(d)
        out["flows"] = flows
        if self.middleware is not None:
            out["middleware"] = self.middleware.to_core_dict()
        return out

    @staticmethod
    def _medium_json(m: SharedMedium | DcfMedium | MeshMedium) -> dict[str, Any]:
        return {"name": m.name, "nodes": list(m.nodes), "kind": m.kind, "spec": m.core_spec()}

    def lowered(self) -> dict[str, Any]:
        """The network this scenario builds, as both backends build it (the core's lowering):
        ``nodes``, ``pairs`` (scenario links), ``links`` (simulated directions, in trace order:
        name, link, from, to, field, spec) and ``flows`` (per flow: the link indices of ``fwd``
        and ``rev``, the nodes crossed, ``sender_link`` and ``receiver_link``)."""
        from . import _core

        try:
            return json.loads(_core.lower(self.to_core_json()))
        except _core.ConfigError as e:
            raise ScenarioError([core_problem(e)]) from None

    def to_core_json(self) -> str:
        """:meth:`to_core_dict` as JSON, the input of ``cclab._core.simulate``."""
        return json.dumps(self.to_core_dict())

    def as_run(self) -> dict[str, Any]:
        """The scenario with every default filled in, in scenario-file form (for summaries)."""
        return self.model_dump(mode="json", exclude_none=True)


# -------------------------------------------------------------------------------------------
def _loc_to_path(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in ("none", "bernoulli", "gilbert_elliott", "function-after[_exclusive()]", *QDISC_KINDS,
                      *MEDIUM_KINDS, _TABLE_BY_NAME, _TABLE_ROWS):
            continue
        elif isinstance(part, str) and part.startswith(("function-", "tagged-union")):
            continue
        else:
            out += ("." if out else "") + str(part)
    return out or "scenario"


_ACCEPTED_KEYS: dict[str, type[BaseModel]] = {}


def _problems(err: ValidationError, model: type[BaseModel]) -> list[tuple[str, str]]:
    problems: list[tuple[str, str]] = []
    for e in err.errors(include_url=False):
        path = _loc_to_path(tuple(e["loc"]))
        msg = str(e["msg"])
        msg = re.sub(r"^(Value error|Assertion failed), ", "", msg)
        leaf = path.rsplit(".", 1)[-1]
        if msg.startswith(f"{leaf}: "):
            msg = msg[len(leaf) + 2 :]
        if e["type"] == "extra_forbidden":
            parent = _model_at(model, tuple(e["loc"])[:-1])
            keys = ", ".join(k for k in parent.model_fields if k != "base_dir") if parent else ""
            msg = f"unknown key; accepted keys here: {keys}"
        elif e["type"] == "missing":
            msg = "required"
        elif "input" in e and e["type"] not in ("value_error", "model_type"):
            msg = f"{shown_value(e['input'])} is not accepted: {msg}"
        # Messages that already carry their own path (cross-field checks).
        m = re.match(r"^([\w\[\].]+): (.*)$", msg, re.S)
        if m and ("[" in m.group(1) or m.group(1) in ("bottleneck", "flows", "senders", "receivers", "nodes", "links", "media",
                                                       "middleware")):
            path, msg = m.group(1), m.group(2)
        elif m and e["type"] == "value_error":
            # A model's own check naming one of its fields ("queue_pkts_by_node: ...") or a field
            # inside one ("reverse.radio.mobility: ...").
            here = _model_at(model, tuple(e["loc"]))
            if here is not None and m.group(1).split(".")[0] in here.model_fields:
                path, msg = f"{path}.{m.group(1)}", m.group(2)
        problems.append((path, msg))
    return problems


def _model_at(model: type[BaseModel], loc: tuple[Any, ...]) -> type[BaseModel] | None:
    cur: Any = model
    ann: Any = None
    for part in loc:
        if isinstance(part, int):
            continue
        fields = getattr(cur, "model_fields", None)
        if fields and part in fields:
            ann = fields[part].annotation
            cur = _first_model(ann)
        else:
            # A tagged union's tag: the member whose ``kind`` is ``part``.
            cur = next((m for m in _models(ann) if getattr(m.model_fields.get("kind"), "annotation", None)
                        and part in getattr(m.model_fields["kind"].annotation, "__args__", ())), None)
        if cur is None:
            return None
    return cur if isinstance(cur, type) and issubclass(cur, BaseModel) else None


def _models(ann: Any) -> list[type[BaseModel]]:
    """Every model class in annotation ``ann`` (unions, lists and Annotated unwrapped)."""
    if isinstance(ann, type) and issubclass(ann, BaseModel):
        return [ann]
    return [m for a in (getattr(ann, "__args__", ()) or ()) for m in _models(a)]


def _first_model(ann: Any) -> Any:
    if isinstance(ann, type) and issubclass(ann, BaseModel):
        return ann
    for a in getattr(ann, "__args__", ()) or ():
        m = _first_model(a)
        if m is not None:
            return m
    return None


def _set_dotted(d: dict[str, Any], key: str, value: Any) -> None:
    """Set ``a.b[0].c`` (or ``a.b.0.c``) in nested dicts/lists, creating dicts as needed."""
    parts = [p for p in re.split(r"\.|\[(\d+)\]", key) if p]
    cur: Any = d
    for i, p in enumerate(parts):
        last = i == len(parts) - 1
        idx: Any = int(p) if p.isdigit() else p
        if isinstance(cur, list):
            if not isinstance(idx, int) or idx >= len(cur):
                raise ScenarioError([(key, f"index {p} is out of range (the list has {len(cur)} items)")])
        elif isinstance(idx, int):
            raise ScenarioError([(key, f"{'.'.join(parts[:i])} is not a list")])
        if last:
            cur[idx] = value
        else:
            if isinstance(cur, dict) and idx not in cur:
                cur[idx] = {}
            cur = cur[idx]
            if not isinstance(cur, (dict, list)):
                raise ScenarioError([(key, f"{'.'.join(parts[: i + 1])} is a value, not a table")])


def shipped_scenarios() -> dict[str, Path]:
    """Names and paths of the scenario files shipped with cclab."""
    base = resources.files("cclab") / "scenarios"
    return {p.name[:-5]: Path(str(p)) for p in sorted(base.iterdir(), key=lambda p: p.name) if p.name.endswith(".toml")}


def resolve_scenario_path(name_or_path: str | Path) -> Path:
    """A path as given if it exists, else a shipped scenario of that name."""
    p = Path(name_or_path)
    if p.exists():
        return p
    shipped = shipped_scenarios()
    if str(name_or_path) in shipped:
        return shipped[str(name_or_path)]
    raise ScenarioError(
        [("scenario", f"no file {str(p)!r} and no shipped scenario of that name; shipped: {', '.join(shipped)}")]
    )


def load_scenario(source: str | Path | dict[str, Any] | Scenario, **overrides: Any) -> Scenario:
    """Load and validate a scenario from a TOML file, a shipped name, or a dict.

    ``overrides`` set dotted keys before validation: ``load_scenario(p, **{"bottleneck.loss": 1e-3})``.
    Raises :class:`ScenarioError` listing every bad field.
    """
    if isinstance(source, Scenario):
        if not overrides:
            return source
        source = source.model_dump(exclude_none=True) | {"base_dir": source.base_dir}
    label = None
    if isinstance(source, dict):
        bad = _not_json(source)
        if bad:
            raise ScenarioError(bad)
        data = json.loads(json.dumps(source))  # deep copy
        base_dir = data.pop("base_dir", ".")
    else:
        path = resolve_scenario_path(source)
        label = str(path)
        try:
            data = tomllib.loads(path.read_text())
        except UnicodeDecodeError as e:
            raise ScenarioError([("scenario", f"not a TOML file: {_not_utf8(e)}")], source=label) from e
        except tomllib.TOMLDecodeError as e:
            raise ScenarioError([("scenario", f"TOML syntax: {e}")], source=label) from e
        except OSError as e:
            raise ScenarioError([("scenario", f"cannot read {label!r}: {e.strerror}")], source=label) from e
        data.setdefault("name", path.stem)
        base_dir = str(path.parent)
    for key, value in overrides.items():
        _set_dotted(data, key, value)
    try:
        sc = Scenario.model_validate({**data, "base_dir": base_dir})
    except ValidationError as e:
        raise ScenarioError(_problems(e, Scenario), source=label) from None
    except UnitError as e:  # pragma: no cover - pydantic wraps these
        raise ScenarioError([("scenario", str(e))], source=label) from None
    _check_core(sc, label)
    return sc


def _not_json(v: Any, path: str = "") -> list[tuple[str, str]]:
    """Every value of a scenario dict that a scenario file could not hold (bytes, a set, an
    object), by its field path: a dict scenario takes what TOML and JSON can say."""
    if isinstance(v, dict):
        out = []
        for k, x in v.items():
            if not isinstance(k, str):
                out.append((path or "scenario", f"key {shown_value(k)} is not accepted: keys are strings"))
                continue
            out += _not_json(x, f"{path}.{k}" if path else k)
        return out
    if isinstance(v, (list, tuple)):
        return [p for i, x in enumerate(v) for p in _not_json(x, f"{path}[{i}]")]
    if v is None or isinstance(v, (str, int, float)):
        return []
    return [(path or "scenario", f"{shown_value(v)} is not accepted: a value of type {type(v).__name__}; a string, "
                                 "number, true/false, list or table")]


def _not_utf8(e: UnicodeDecodeError) -> str:
    return f"byte {e.object[e.start]:#04x} at offset {e.start} is not UTF-8 (save it as UTF-8 text)"


#: The core's names for parts of the scenario (the normalised JSON, ``to_core_dict``) and the
#: scenario's own: a duplex's directions (``bottleneck.fwd``, ``links[0].rev``), a medium's
#: settings (``media[0].spec``), a read capacity trace.
_CORE_NAMES = [
    (re.compile(r"\.fwd(?=\.|$)"), ""),
    (re.compile(r"\.rev(?=\.|$)"), ".reverse"),
    (re.compile(r"^(media\[\d+\])\.spec(?=\.|$)"), r"\1"),
    (re.compile(r"capacity_trace_text"), "capacity_trace"),
    (re.compile(r"\.queue_pkts_by_port(\[\d+\])?"), ".queue_pkts_by_node"),
]


def core_problem(e: Exception) -> tuple[str, str]:
    """A core ``ConfigError`` as a problem (field path, message) in the scenario's own terms."""
    return _core_names(str(getattr(e, "field", "") or "scenario"), str(getattr(e, "message", "") or e))


def _core_names(field: str, message: str) -> tuple[str, str]:
    for pattern, repl in _CORE_NAMES:
        field = pattern.sub(repl, field)
    return field, message


def _check_core(sc: Scenario, label: str | None) -> None:
    """Ask the core about what only it can judge (algorithm names, cc_params, traces, the
    topology: routes, loops, paths)."""
    try:
        from . import _core
    except ImportError:  # pure-Python use without the compiled core
        return
    found = _core.problems(sc.to_core_json())
    if found:
        raise ScenarioError([_core_names(f, m) for f, m in found], source=label)
