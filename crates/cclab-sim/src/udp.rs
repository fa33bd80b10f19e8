//! A UDP constant-bit-rate application: the sender writes one datagram of `payload_bytes` every
//! `payload_bytes * 8 / rate_bps` seconds from its start (as `iperf3 -u -b RATE -l LEN` or
//! ns-3's `OnOffApplication` always on), the receiver counts what arrives and how late.
//!
//! The rate is the application's (payload) rate, as iperf3's `-b` and ns-3's `DataRate`; on the
//! wire each datagram is 28 bytes longer (IPv4 20 + UDP 8). There is no feedback: a datagram the
//! sender's interface queue refuses is lost (counted where it was refused), as a UDP socket's
//! send into a full qdisc is (`NET_XMIT_DROP`; iperf3 does not retry).
//!
//! Send times are exact: datagram k leaves at `start + floor(k * payload_bits * 1e9 / rate)` ns,
//! so the mean rate has no rounding drift over any run length.

use serde::{Deserialize, Serialize};

/// IPv4 (20) and UDP (8) headers around a datagram's payload.
pub const UDP_IP_HEADER_BYTES: u32 = 28;

/// The largest UDP payload over IPv4 (65535 - 20 - 8).
pub const MAX_PAYLOAD_BYTES: u32 = 65507;

/// What carries a flow: a TCP connection (the default), a UDP constant-bit-rate stream, or a
/// Multipath TCP connection (one TCP subflow per entry of the flow's `paths`, `crate::mptcp`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Transport {
    #[default]
    Tcp,
    Udp,
    Mptcp,
}

impl Transport {
    /// Whether the flow runs TCP (one connection or several subflows).
    pub fn is_tcp(self) -> bool {
        matches!(self, Transport::Tcp | Transport::Mptcp)
    }
}

/// One datagram on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Datagram {
    /// Its number in the flow, from 0.
    pub seq: u64,
    /// When the application sent it, ns.
    pub sent_ns: u64,
    /// Payload bytes.
    pub len: u32,
}

/// The sending application.
#[derive(Debug, Clone)]
pub struct CbrSender {
    rate_bps: u64,
    payload_bytes: u32,
    start_ns: u64,
    /// Datagrams to send in all (`u64::MAX`: until the run ends).
    limit_pkts: u64,
    /// Payload bytes to send in all (0: until the run ends).
    size_bytes: u64,
    /// Datagrams sent so far (the next one's `seq`).
    pub sent_pkts: u64,
    /// Payload bytes sent so far.
    pub sent_bytes: u64,
}

impl CbrSender {
    /// A sender of `payload_bytes` datagrams at `rate_bps` from `start_ns`; `size_bytes` > 0
    /// stops it after that many payload bytes (the last datagram may be shorter).
    pub fn new(rate_bps: u64, payload_bytes: u32, start_ns: u64, size_bytes: u64) -> Self {
        let limit_pkts = if size_bytes == 0 {
            u64::MAX
        } else {
            size_bytes.div_ceil(u64::from(payload_bytes))
        };
        CbrSender {
            rate_bps: rate_bps.max(1),
            payload_bytes,
            start_ns,
            limit_pkts,
            sent_pkts: 0,
            sent_bytes: 0,
            size_bytes,
        }
    }

    /// When datagram `k` leaves.
    fn send_time_ns(&self, k: u64) -> u64 {
        let bits = u128::from(self.payload_bytes) * 8;
        let offset = u128::from(k) * bits * 1_000_000_000 / u128::from(self.rate_bps);
        self.start_ns
            .saturating_add(u64::try_from(offset).unwrap_or(u64::MAX))
    }

    /// When the next datagram leaves; None when all are sent.
    pub fn next_send_ns(&self) -> Option<u64> {
        (self.sent_pkts < self.limit_pkts).then(|| self.send_time_ns(self.sent_pkts))
    }

    /// How long the application has been sending: from its start to the end of the slot of
    /// its last datagram, so that a lossless stream's received rate equals its send rate.
    pub fn active_ns(&self) -> u64 {
        self.send_time_ns(self.sent_pkts)
            .saturating_sub(self.start_ns)
    }

    /// Send the next datagram (call at `next_send_ns`).
    pub fn send(&mut self, now_ns: u64) -> Datagram {
        let len = if self.limit_pkts == u64::MAX || self.sent_pkts + 1 < self.limit_pkts {
            self.payload_bytes
        } else {
            // The last of a sized transfer carries what is left.
            let rest = self.size_bytes - self.sent_bytes;
            rest.min(u64::from(self.payload_bytes)) as u32
        };
        let d = Datagram {
            seq: self.sent_pkts,
            sent_ns: now_ns,
            len,
        };
        self.sent_pkts += 1;
        self.sent_bytes += u64::from(len);
        d
    }
}

/// The receiving application: counts, reordering and the one-way delay distribution.
#[derive(Debug, Clone, Default)]
pub struct UdpReceiver {
    pub received_pkts: u64,
    pub received_bytes: u64,
    /// Datagrams that arrived after one with a higher `seq`.
    pub reordered_pkts: u64,
    highest_seq: Option<u64>,
    /// One-way delay (application send to arrival), ns.
    pub owd: OwdHistogram,
    pub last_arrival_ns: Option<u64>,
}

impl UdpReceiver {
    /// A datagram arrives at `now_ns`.
    pub fn on_datagram(&mut self, now_ns: u64, d: &Datagram) {
        self.received_pkts += 1;
        self.received_bytes += u64::from(d.len);
        match self.highest_seq {
            Some(h) if d.seq < h => self.reordered_pkts += 1,
            _ => self.highest_seq = Some(d.seq),
        }
        self.owd.record(now_ns.saturating_sub(d.sent_ns));
        self.last_arrival_ns = Some(now_ns);
    }
}

/// Sub-buckets per power of two: values are kept to within 1/128 (0.8 %).
const SUB_BITS: u32 = 7;
const SUB: u64 = 1 << SUB_BITS;

/// A histogram of nanosecond values with logarithmic buckets (exact below 128 ns, then 128
/// buckets per power of two): constant memory whatever the run length, quantiles within 0.8 %.
#[derive(Debug, Clone, Default)]
pub struct OwdHistogram {
    counts: Vec<u64>,
    pub n: u64,
    sum_ns: u128,
    pub min_ns: u64,
    pub max_ns: u64,
}

impl OwdHistogram {
    fn index(v: u64) -> usize {
        if v < SUB {
            return v as usize;
        }
        let e = 63 - v.leading_zeros(); // >= SUB_BITS
        let sub = (v >> (e - SUB_BITS)) & (SUB - 1);
        ((u64::from(e - SUB_BITS) + 1) * SUB + sub) as usize
    }

    /// The bucket's lower bound and width.
    fn bucket(idx: usize) -> (u64, u64) {
        let idx = idx as u64;
        if idx < SUB {
            return (idx, 1);
        }
        let shift = (idx / SUB - 1) as u32;
        ((SUB + idx % SUB) << shift, 1 << shift)
    }

    pub fn record(&mut self, v: u64) {
        let i = Self::index(v);
        if self.counts.len() <= i {
            self.counts.resize(i + 1, 0);
        }
        self.counts[i] += 1;
        if self.n == 0 || v < self.min_ns {
            self.min_ns = v;
        }
        self.max_ns = self.max_ns.max(v);
        self.n += 1;
        self.sum_ns += u128::from(v);
    }

    pub fn mean_ns(&self) -> Option<f64> {
        (self.n > 0).then(|| self.sum_ns as f64 / self.n as f64)
    }

    /// The `q` quantile (0..=1): the middle of the bucket holding the ceil(q n)-th smallest
    /// value, clamped to the observed range.
    pub fn quantile_ns(&self, q: f64) -> Option<f64> {
        if self.n == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.n as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                let (lo, w) = Self::bucket(i);
                let mid = lo as f64 + (w as f64 - 1.0) / 2.0;
                return Some(mid.clamp(self.min_ns as f64, self.max_ns as f64));
            }
        }
        Some(self.max_ns as f64)
    }
}

/// A UDP flow's results (summary.json's `udp` object of the flow).
#[derive(Debug, Clone, Serialize)]
pub struct UdpStats {
    pub sent_pkts: u64,
    pub sent_bytes: u64,
    pub received_pkts: u64,
    pub received_bytes: u64,
    /// Datagrams the network dropped.
    pub lost_pkts: u64,
    /// Datagrams still on their way when the run ended.
    pub in_flight_pkts: u64,
    /// `lost_pkts` over the datagrams whose fate is known (sent and not in flight).
    pub loss: f64,
    /// Payload rate sent over the sending time.
    pub send_rate_bps: f64,
    /// Payload rate received over the same time (`goodput_bps` of the flow).
    pub receive_rate_bps: f64,
    pub reordered_pkts: u64,
    pub owd_mean_ms: Option<f64>,
    pub owd_min_ms: Option<f64>,
    pub owd_p50_ms: Option<f64>,
    pub owd_p95_ms: Option<f64>,
    pub owd_p99_ms: Option<f64>,
    pub owd_max_ms: Option<f64>,
}

impl UdpStats {
    /// The results of a sender and receiver pair at the end of a run, the network having
    /// dropped `lost_pkts` of the datagrams.
    pub fn of(tx: &CbrSender, rx: &UdpReceiver, lost_pkts: u64) -> UdpStats {
        let secs = tx.active_ns() as f64 * 1e-9;
        let rate = |bytes: u64| {
            if secs > 0.0 {
                bytes as f64 * 8.0 / secs
            } else {
                0.0
            }
        };
        let ms = |v: Option<f64>| v.map(|ns| ns * 1e-6);
        let in_flight = tx.sent_pkts.saturating_sub(rx.received_pkts + lost_pkts);
        let known = tx.sent_pkts - in_flight;
        let h = &rx.owd;
        UdpStats {
            sent_pkts: tx.sent_pkts,
            sent_bytes: tx.sent_bytes,
            received_pkts: rx.received_pkts,
            received_bytes: rx.received_bytes,
            lost_pkts,
            in_flight_pkts: in_flight,
            loss: if known > 0 {
                lost_pkts as f64 / known as f64
            } else {
                0.0
            },
            send_rate_bps: rate(tx.sent_bytes),
            receive_rate_bps: rate(rx.received_bytes),
            reordered_pkts: rx.reordered_pkts,
            owd_mean_ms: ms(h.mean_ns()),
            owd_min_ms: ms((h.n > 0).then_some(h.min_ns as f64)),
            owd_p50_ms: ms(h.quantile_ns(0.5)),
            owd_p95_ms: ms(h.quantile_ns(0.95)),
            owd_p99_ms: ms(h.quantile_ns(0.99)),
            owd_max_ms: ms((h.n > 0).then_some(h.max_ns as f64)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn send_times_keep_the_rate_exactly() {
        // 1472 B at 3 Mbit/s: 3925.33 us apart, so the gaps alternate but never drift.
        let mut s = CbrSender::new(3_000_000, 1472, 1_000, 0);
        let mut last = 0;
        for k in 0..30_000u64 {
            let t = s.next_send_ns().unwrap();
            assert!(t >= last);
            last = t;
            let d = s.send(t);
            assert_eq!(d.seq, k);
        }
        // After 30000 datagrams: exactly floor(30000 * 11776 * 1e9 / 3e6) ns after the start.
        assert_eq!(s.next_send_ns().unwrap(), 1_000 + 117_760_000_000);
    }

    #[test]
    fn a_sized_stream_stops_and_its_last_datagram_is_short() {
        let mut s = CbrSender::new(1_000_000, 1000, 0, 2500);
        let mut lens = Vec::new();
        while let Some(t) = s.next_send_ns() {
            lens.push(s.send(t).len);
        }
        assert_eq!(lens, vec![1000, 1000, 500]);
        assert_eq!(s.sent_bytes, 2500);
        // Three 8 ms slots.
        assert_eq!(s.active_ns(), 24_000_000);
    }

    #[test]
    fn the_receiver_counts_reordering_and_delay() {
        let mut r = UdpReceiver::default();
        for (seq, sent, at) in [(0, 0, 5_000_000), (2, 2, 6_000_000), (1, 1, 7_000_000)] {
            r.on_datagram(
                at,
                &Datagram {
                    seq,
                    sent_ns: sent,
                    len: 100,
                },
            );
        }
        assert_eq!(
            (r.received_pkts, r.received_bytes, r.reordered_pkts),
            (3, 300, 1)
        );
        assert_eq!(r.owd.min_ns, 5_000_000);
        assert_eq!(r.owd.max_ns, 6_999_999);
    }

    #[test]
    fn histogram_buckets_tile_the_line_and_quantiles_stay_within_a_bucket() {
        for v in [0u64, 1, 127, 128, 129, 255, 256, 1_000_000, u64::MAX / 3] {
            let (lo, w) = OwdHistogram::bucket(OwdHistogram::index(v));
            assert!(lo <= v && v - lo < w, "{v} not in [{lo}, {lo}+{w})");
            assert!(w as f64 <= (lo as f64 / 128.0).max(1.0));
        }
        let mut h = OwdHistogram::default();
        for v in 1..=100_000u64 {
            h.record(v * 1000);
        }
        for q in [0.5, 0.95, 0.99] {
            let exact = q * 100_000.0 * 1000.0;
            let got = h.quantile_ns(q).unwrap();
            assert!(
                (got - exact).abs() / exact < 1.0 / 128.0,
                "q {q}: {got} vs {exact}"
            );
        }
        assert_eq!(h.mean_ns().unwrap(), 50_000_500.0);
    }
}
