//! Counters and the lateness histogram, and the stats JSON written at exit (per lane the
//! element's counters, and for a station of a DCF cell or a mesh its MAC counters, `mac`).

use crate::router::Router;
use serde_json::{json, Value};

/// Lateness histogram: 1 us buckets below 10 ms, 1 ms buckets up to 10 s, one overflow bucket;
/// the maximum is kept exactly. Constant memory whatever the packet count.
#[derive(Debug, Clone, Copy)]
pub struct Histogram {
    fine: [u64; Self::FINE],
    coarse: [u64; Self::COARSE + 1],
    count: u64,
    max_ns: u64,
}

impl Histogram {
    const FINE: usize = 10_000;
    const COARSE: usize = 10_000;

    /// Add one sample, ns.
    pub fn record(&mut self, ns: u64) {
        let us = (ns / 1_000) as usize;
        if us < Self::FINE {
            self.fine[us] += 1;
        } else {
            self.coarse[(us / 1_000).min(Self::COARSE)] += 1;
        }
        self.count += 1;
        self.max_ns = self.max_ns.max(ns);
    }

    /// Samples recorded.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Largest sample, ns.
    pub fn max_ns(&self) -> u64 {
        self.max_ns
    }

    /// The `q` quantile (0..=1) in us, to the bucket's upper edge; 0 with no samples.
    pub fn quantile_us(&self, q: f64) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        let rank = ((q * self.count as f64).ceil() as u64).clamp(1, self.count);
        let mut seen = 0;
        for (i, &c) in self.fine.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return ((i + 1) as f64).min(self.max_ns as f64 / 1e3);
            }
        }
        for (i, &c) in self.coarse.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return (((i + 1) * 1_000) as f64).min(self.max_ns as f64 / 1e3);
            }
        }
        self.max_ns as f64 / 1e3
    }

    /// `{count, p50_us, p99_us, max_us}`.
    pub fn to_json(&self) -> Value {
        json!({
            "count": self.count,
            "p50_us": self.quantile_us(0.5),
            "p99_us": self.quantile_us(0.99),
            "max_us": self.max_ns as f64 / 1e3,
        })
    }
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            fine: [0; Self::FINE],
            coarse: [0; Self::COARSE + 1],
            count: 0,
            max_ns: 0,
        }
    }
}

/// Per lane (a link direction, or the transmit queue of one port of a medium), counted by the
/// router, beyond the element's own `LinkStats`. A packet counts in the lane of the port it
/// entered the element by, from entering until it leaves (delivered) or is dropped.
#[derive(Debug, Clone, Default)]
pub struct LinkCounters {
    pub in_pkts: u64,
    pub in_bytes: u64,
    /// Handed out by the element (at whichever port; for a link: its `delivered_pkts`).
    pub delivered_pkts: u64,
    pub delivered_bytes: u64,
    /// Dropped by the element (its loss model, a full queue, its AQM, the air, the RLC): the
    /// sum of the element's `dropped_*` counters for this lane, counted by the router.
    pub dropped_pkts: u64,
    /// Inside the element now (queued, on the air or propagating).
    pub in_flight_pkts: u64,
    /// Handed out by this lane's element at the end of their route, but the write to the
    /// receiving TUN failed: lost by the emulator, not the model.
    pub tun_write_errors_pkts: u64,
    pub max_queue_pkts: u32,
    pub max_queue_bytes: u64,
    /// How late packets left this lane's element versus their model arrival time.
    pub lateness: Box<Histogram>,
}

/// Per port (TUN device).
#[derive(Debug, Clone, Copy, Default)]
pub struct PortCounters {
    pub rx_pkts: u64,
    pub rx_bytes: u64,
    pub tx_pkts: u64,
    pub tx_bytes: u64,
    /// Failed writes to this TUN (each a packet lost by the emulator, not the model).
    pub tx_errors: u64,
    /// Failed reads from this TUN, other than "nothing to read" (EAGAIN) and EINTR.
    pub rx_errors: u64,
    pub dropped_not_ipv4_pkts: u64,
    pub dropped_no_route_pkts: u64,
}

/// The stats document: per lane (links, then each medium's lanes) and per port, and the
/// overall lateness.
pub fn stats_json(r: &Router, duration_s: f64, behind_events: u64) -> Value {
    let links: Vec<Value> = (0..r.lanes())
        .map(|i| {
            let s = r.lane_stats(i);
            let c = &r.lane_counters[i];
            let mut lane = json!({
                "name": r.lane_names[i],
                "in_pkts": c.in_pkts,
                "in_bytes": c.in_bytes,
                "dropped_random_pkts": s.dropped_random_pkts,
                "dropped_queue_full_pkts": s.dropped_queue_full_pkts,
                "dropped_aqm_pkts": s.dropped_aqm_pkts,
                "dropped_retry_pkts": s.dropped_retry_pkts,
                "dropped_rlc_pkts": s.dropped_rlc_pkts,
                "ce_marks": s.ce_marks,
                "delivered_pkts": c.delivered_pkts,
                "delivered_bytes": c.delivered_bytes,
                "dropped_pkts": c.dropped_pkts,
                "in_flight_pkts": c.in_flight_pkts,
                "tun_write_errors_pkts": c.tun_write_errors_pkts,
                "max_queue_pkts": c.max_queue_pkts,
                "max_queue_bytes": c.max_queue_bytes,
                "lateness": c.lateness.to_json(),
            });
            // A station of a medium with a MAC: its counters, as in the simulator's summary.
            if let Some(mac) = r.lane_mac_stats(i) {
                lane["mac"] = json!(mac);
            }
            lane
        })
        .collect();
    let ports: Vec<Value> = r
        .port_counters
        .iter()
        .enumerate()
        .map(|(i, p)| {
            json!({
                "name": r.port_names[i],
                "rx_pkts": p.rx_pkts,
                "rx_bytes": p.rx_bytes,
                "tx_pkts": p.tx_pkts,
                "tx_bytes": p.tx_bytes,
                "tx_errors": p.tx_errors,
                "rx_errors": p.rx_errors,
                "dropped_not_ipv4_pkts": p.dropped_not_ipv4_pkts,
                "dropped_no_route_pkts": p.dropped_no_route_pkts,
            })
        })
        .collect();
    json!({
        "duration_s": duration_s,
        "links": links,
        "ports": ports,
        "lateness": r.lateness_all.to_json(),
        "behind_events": behind_events,
        "tcp": r.ledger.to_json(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_of_known_samples() {
        let mut h = Histogram::default();
        for us in 1..=100u64 {
            h.record(us * 1_000 - 1);
        }
        assert_eq!(h.count(), 100);
        assert_eq!(h.quantile_us(0.5), 50.0);
        assert_eq!(h.quantile_us(0.99), 99.0);
        h.record(2_500_000_000);
        assert_eq!(h.max_ns(), 2_500_000_000);
        assert_eq!(h.quantile_us(1.0), 2_500_000.0);
        assert_eq!(Histogram::default().quantile_us(0.5), 0.0);
    }
}
