//! A host's stack below TCP: the interface queue and the NIC that drains it (the "device"), and
//! the TCP Small Queues (TSQ) rule that limits how many bytes each socket may have down there.
//!
//! Linux 6.18: a sender's skbs go from TCP through the qdisc of the outgoing interface (pfifo
//! with `txqueuelen` packets when nothing else is configured) to the driver, which frees them
//! when the NIC has sent them (`tcp_wfree`). Until then they count in the socket's
//! `sk_wmem_alloc`, which `tcp_small_queue_check` (net/ipv4/tcp_output.c) compares with a limit.
//! A packet the qdisc refuses (`NET_XMIT_DROP`) is a local drop: `__tcp_transmit_skb` calls
//! `tcp_enter_cwr` and `tcp_write_xmit` stops, the skb staying at the head of the write queue.
//!
//! A scenario gives these settings once for every host (`[host]`) and may override them per
//! host (`host = {...}` on a node or a dumbbell host): [`HostSpec`] has every field optional, and
//! [`HostSpec::resolve`] fills what a host leaves out from the defaults, then from Linux's.

use crate::error::NetError;
use serde::{Deserialize, Serialize};

/// `tcp_limit_output_bytes` of Linux 6.18 (net/ipv4/tcp_ipv4.c, `tcp_sk_init`: 4 MiB).
pub const LINUX_TSQ_LIMIT_BYTES: u64 = 4 << 20;
/// The cap of the paper's rule (S2 eq. 2): the 256 KiB `tcp_limit_output_bytes` of Linux 4.x.
pub const PAPER_TSQ_CAP_BYTES: u64 = 262_144;
/// The paper's floor (eq. 2): two skbs' truesize in its kernel.
pub const PAPER_TSQ_FLOOR_BYTES: u64 = 8704;
/// The fixed limit the paper found fair (eq. 3).
pub const PAPER_FIXED_LIMIT_BYTES: u64 = 131_072;
/// `txqueuelen` of an Ethernet device (`ether_setup`) and the paper's interface queue.
pub const DEFAULT_DEVICE_QUEUE_PKTS: u32 = 1000;
/// `net.ipv4.tcp_wmem` of Linux 6.18 (net/ipv4/tcp.c `tcp_init`, `tcp_sk_init`): the smallest
/// send buffer, a new socket's, and the most `tcp_sndbuf_expand` grows it to.
pub const LINUX_TCP_WMEM_BYTES: [u64; 3] = [4096, 16384, 4 << 20];

/// Whether a TCP socket's send buffer limits what its application has written ahead.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SndbufMode {
    /// Linux 6.18: `sk_sndbuf` starts at `tcp_wmem[1]`, grows by `tcp_sndbuf_expand` to at most
    /// `tcp_wmem[2]`, and the application (a poll()-driven writer of 64 KiB, as cclab's kernel
    /// traffic sender and iperf3) writes only while `sk_stream_is_writeable`, i.e. while at most
    /// 2/3 of `sk_sndbuf` is queued (`crates/cclab-sim/src/tcp/sndbuf.rs`).
    #[default]
    Linux,
    /// No send buffer: the application has written all its data at once (cclab before the
    /// model, and an ablation); the kernel backend has no such setting.
    Unlimited,
}

impl SndbufMode {
    /// Its name in scenario files.
    pub fn name(self) -> &'static str {
        match self {
            SndbufMode::Linux => "linux",
            SndbufMode::Unlimited => "unlimited",
        }
    }
}

/// When the device gives a socket back the bytes of an skb it holds below TCP (`sk_wmem_alloc`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeviceRelease {
    /// A NIC's TX completion: each segment's bytes when the NIC has sent it (`tcp_wfree` from
    /// the driver's completion).
    #[default]
    End,
    /// The kernel backend's htb + TUN device: the whole skb's bytes when its first segment
    /// starts transmission, as `tun_net_xmit` (drivers/net/tun.c) orphans an skb
    /// (`skb_orphan_frags_rx`, `skb_orphan`: `tcp_wfree`) when the qdisc hands it over. The
    /// device then also hands over whole skbs (`crate::link::Link::set_skb_handover`: htb
    /// charges an skb at once and the TUN takes all its segments). An ablation of the kernel
    /// backend's device; only with a device (`device_rate_bps`).
    Start,
}

impl DeviceRelease {
    /// Its name in scenario files.
    pub fn name(self) -> &'static str {
        match self {
            DeviceRelease::End => "end",
            DeviceRelease::Start => "start",
        }
    }
}

/// How the bytes a socket may have below TCP are limited.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TsqMode {
    /// Linux 6.18 `tcp_small_queue_check`: max(2 truesize, pacing_rate >> pacing_shift), capped
    /// by `tcp_limit_output_bytes` (`tsq_limit_bytes`, default 4 MiB) for unpaced sockets.
    #[default]
    Linux,
    /// The S2 paper's rule (its eq. 2, Linux 4.x with the MPTCP v0.92 kernel):
    /// min(cap, max(8704, 2 mss cwnd / srtt / 1024)) with cap `tsq_limit_bytes` (default 262144).
    Paper,
    /// A fixed limit, `tsq_limit_bytes` (the paper's eq. 3: 131072).
    Fixed,
    /// No limit: a socket may fill the interface queue.
    Off,
    /// cclab's equal-share rule (the S2 paper's future work): Linux's rule, and TSO sizing
    /// (`tcp_tso_autosize`), read the fastest pacing rate among the sockets with bytes below
    /// TCP on the interface instead of the socket's own, capped by `tsq_limit_bytes` (default
    /// 4 MiB). Every socket on an interface then gets the same limit and builds skbs of the
    /// same size, so those that fill their allowance hold equal shares of the interface's FIFO,
    /// hence of its line rate, whatever their cwnd: the limit no longer rewards the flow that
    /// started first.
    Adaptive,
}

impl TsqMode {
    /// Its name in scenario files.
    pub fn name(self) -> &'static str {
        match self {
            TsqMode::Linux => "linux",
            TsqMode::Paper => "paper",
            TsqMode::Fixed => "fixed",
            TsqMode::Off => "off",
            TsqMode::Adaptive => "adaptive",
        }
    }

    /// `tsq_limit_bytes` when the scenario gives none.
    pub fn default_limit_bytes(self) -> u64 {
        match self {
            TsqMode::Linux | TsqMode::Adaptive => LINUX_TSQ_LIMIT_BYTES,
            TsqMode::Paper => PAPER_TSQ_CAP_BYTES,
            TsqMode::Fixed => PAPER_FIXED_LIMIT_BYTES,
            TsqMode::Off => u64::MAX,
        }
    }
}

/// A host's stack settings as a scenario gives them; a field left out is inherited.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostSpec {
    /// The TSQ rule (default `linux`).
    #[serde(default)]
    pub tsq: Option<TsqMode>,
    /// `tcp_limit_output_bytes` for `linux`, the cap for `paper`, the limit for `fixed`.
    #[serde(default)]
    pub tsq_limit_bytes: Option<u64>,
    /// `sk_pacing_shift` (default 10: about 1 ms of the pacing rate; mac80211 sets 8 on WiFi).
    #[serde(default)]
    pub pacing_shift: Option<u32>,
    /// The NIC's line rate, bit/s. None: no interface queue is modelled (a packet goes straight
    /// onto the host's link, and nothing is below TCP).
    #[serde(default)]
    pub device_rate_bps: Option<u64>,
    /// The interface queue (`txqueuelen`, pfifo), packets waiting besides the one the NIC is
    /// sending (default 1000).
    #[serde(default)]
    pub device_queue_pkts: Option<u32>,
    /// When the device releases an skb's bytes below TCP (default `end`; see
    /// [`DeviceRelease`]).
    #[serde(default)]
    pub device_release: Option<DeviceRelease>,
    /// Build skbs for unpaced sockets as Linux 6.18 does (`tcp_tso_autosize`) and hold a send
    /// back to make a larger one (`tcp_tso_should_defer`); default off: one segment per skb
    /// for an unpaced socket on a host without a device, never deferred.
    #[serde(default)]
    pub tso_defer: Option<bool>,
    /// The socket send buffer (default `linux`).
    #[serde(default)]
    pub sndbuf: Option<SndbufMode>,
    /// `net.ipv4.tcp_wmem`: min, default, max bytes (default 4096 16384 4194304).
    #[serde(default)]
    pub tcp_wmem_bytes: Option<[u64; 3]>,
}

/// The interface queue and NIC of one host interface.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct DeviceSpec {
    /// Line rate, bit/s.
    pub rate_bps: u64,
    /// Packets that may wait (the one being sent not counted).
    pub queue_pkts: u32,
}

/// A host's stack, every setting decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct HostStack {
    /// The TSQ rule.
    pub tsq: TsqMode,
    /// Its limit or cap, bytes.
    pub tsq_limit_bytes: u64,
    /// `sk_pacing_shift`.
    pub pacing_shift: u32,
    /// The interface queue, if modelled.
    pub device: Option<DeviceSpec>,
    /// When the device releases an skb's bytes below TCP.
    pub device_release: DeviceRelease,
    /// `tcp_tso_should_defer` (and `tcp_tso_autosize` for unpaced sockets without a device).
    pub tso_defer: bool,
    /// The socket send buffer.
    pub sndbuf: SndbufMode,
    /// `net.ipv4.tcp_wmem`.
    pub tcp_wmem_bytes: [u64; 3],
}

impl Default for HostStack {
    fn default() -> Self {
        HostSpec::default().resolve(&HostSpec::default())
    }
}

impl HostSpec {
    /// Check the values given; `path` is the field (`host`, `nodes[2].host`).
    pub fn validate(&self, path: &str) -> Result<(), NetError> {
        let bad = |f: &str, m: &str| NetError::Field {
            field: format!("{path}.{f}"),
            message: m.to_string(),
        };
        if self.tsq_limit_bytes == Some(0) {
            return Err(bad(
                "tsq_limit_bytes",
                "0 is not accepted: at least 1 byte (tsq = \"off\" removes the limit)",
            ));
        }
        if let Some(s) = self.pacing_shift {
            if s > 31 {
                return Err(bad(
                    "pacing_shift",
                    &format!("{s} is not accepted: 0..31 (10 is Linux's default)"),
                ));
            }
        }
        if self.device_rate_bps == Some(0) {
            return Err(bad(
                "device_rate_bps",
                "0 is not accepted: a rate > 0, or leave it out for no interface queue",
            ));
        }
        if self.device_queue_pkts == Some(0) {
            return Err(bad(
                "device_queue_pkts",
                "0 is not accepted: at least 1 packet",
            ));
        }
        if let Some([min, default, max]) = self.tcp_wmem_bytes {
            if min == 0 || min > default || default > max || max > i32::MAX as u64 {
                return Err(bad(
                    "tcp_wmem_bytes",
                    &format!(
                        "[{min}, {default}, {max}] is not accepted: three sizes (min, default, max) with \
                         0 < min <= default <= max <= 2147483647 (Linux: [4096, 16384, 4194304])"
                    ),
                ));
            }
        }
        if self.device_queue_pkts.is_some() && self.device_rate_bps.is_none() {
            return Err(bad(
                "device_queue_pkts",
                "needs device_rate_bps: the interface queue drains at the NIC's rate",
            ));
        }
        if self.device_release.is_some() && self.device_rate_bps.is_none() {
            return Err(bad(
                "device_release",
                "needs device_rate_bps: only a device releases bytes below TCP",
            ));
        }
        Ok(())
    }

    /// This host's settings over `defaults` (the scenario's `[host]`), then Linux's.
    pub fn resolve(&self, defaults: &HostSpec) -> HostStack {
        let tsq = self.tsq.or(defaults.tsq).unwrap_or_default();
        // A host that picks another rule does not inherit a limit meant for the default one.
        let limit = match (self.tsq_limit_bytes, self.tsq) {
            (Some(l), _) => l,
            (None, Some(_)) => tsq.default_limit_bytes(),
            (None, None) => defaults
                .tsq_limit_bytes
                .unwrap_or(tsq.default_limit_bytes()),
        };
        let rate = self.device_rate_bps.or(defaults.device_rate_bps);
        let queue = self
            .device_queue_pkts
            .or(defaults.device_queue_pkts)
            .unwrap_or(DEFAULT_DEVICE_QUEUE_PKTS);
        HostStack {
            tsq,
            tsq_limit_bytes: limit,
            pacing_shift: self.pacing_shift.or(defaults.pacing_shift).unwrap_or(10),
            device: rate.map(|rate_bps| DeviceSpec {
                rate_bps,
                queue_pkts: queue,
            }),
            device_release: self
                .device_release
                .or(defaults.device_release)
                .unwrap_or_default(),
            tso_defer: self.tso_defer.or(defaults.tso_defer).unwrap_or(false),
            sndbuf: self.sndbuf.or(defaults.sndbuf).unwrap_or_default(),
            tcp_wmem_bytes: self
                .tcp_wmem_bytes
                .or(defaults.tcp_wmem_bytes)
                .unwrap_or(LINUX_TCP_WMEM_BYTES),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_inherits_what_it_leaves_out() {
        let defaults = HostSpec {
            tsq: Some(TsqMode::Fixed),
            device_rate_bps: Some(100_000_000),
            ..HostSpec::default()
        };
        let h = HostSpec {
            device_queue_pkts: Some(50),
            ..HostSpec::default()
        }
        .resolve(&defaults);
        assert_eq!(h.tsq, TsqMode::Fixed);
        assert_eq!(h.tsq_limit_bytes, PAPER_FIXED_LIMIT_BYTES);
        assert_eq!(h.pacing_shift, 10);
        assert_eq!(
            h.device,
            Some(DeviceSpec {
                rate_bps: 100_000_000,
                queue_pkts: 50
            })
        );
        // Nothing given: Linux 6.18, no interface queue.
        let d = HostStack::default();
        assert_eq!(
            (d.tsq, d.tsq_limit_bytes, d.device),
            (TsqMode::Linux, LINUX_TSQ_LIMIT_BYTES, None)
        );
    }

    #[test]
    fn a_host_choosing_its_own_rule_gets_that_rules_limit() {
        let defaults = HostSpec {
            tsq: Some(TsqMode::Fixed),
            tsq_limit_bytes: Some(65_536),
            ..HostSpec::default()
        };
        let own = HostSpec {
            tsq: Some(TsqMode::Paper),
            ..HostSpec::default()
        };
        assert_eq!(own.resolve(&defaults).tsq_limit_bytes, PAPER_TSQ_CAP_BYTES);
        assert_eq!(
            HostSpec::default().resolve(&defaults).tsq_limit_bytes,
            65_536
        );
    }

    #[test]
    fn bad_values_name_their_field() {
        let e = HostSpec {
            device_queue_pkts: Some(10),
            ..HostSpec::default()
        }
        .validate("nodes[1].host")
        .unwrap_err();
        assert!(
            matches!(&e, NetError::Field { field, .. } if field == "nodes[1].host.device_queue_pkts"),
            "{e}"
        );
        let e = HostSpec {
            pacing_shift: Some(40),
            ..HostSpec::default()
        }
        .validate("host")
        .unwrap_err();
        assert!(e.to_string().contains("0..31"), "{e}");
        for (spec, name) in [
            (
                HostSpec {
                    device_release: Some(DeviceRelease::Start),
                    ..HostSpec::default()
                },
                "host.device_release",
            ),
            (
                HostSpec {
                    tcp_wmem_bytes: Some([16384, 4096, 4 << 20]),
                    ..HostSpec::default()
                },
                "host.tcp_wmem_bytes",
            ),
        ] {
            let e = spec.validate("host").unwrap_err();
            assert!(
                matches!(&e, NetError::Field { field, .. } if field == name),
                "{e}"
            );
        }
        // Inherited from `[host]`; a NIC's completion when nobody says.
        let h = HostSpec::default().resolve(&HostSpec {
            device_rate_bps: Some(50_000_000),
            device_release: Some(DeviceRelease::Start),
            ..HostSpec::default()
        });
        assert_eq!(h.device_release, DeviceRelease::Start);
        assert_eq!(HostStack::default().device_release, DeviceRelease::End);
    }
}
