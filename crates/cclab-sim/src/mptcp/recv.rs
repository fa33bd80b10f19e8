//! The data-level receive side: the connection's reassembly of data ranges that its subflows
//! deliver in (subflow) order, and its cumulative DATA_ACK (v0.9x `mptcp_input.c`:
//! `mptcp_queue_skb` moves in-order data to the meta receive queue and out-of-order data to
//! the meta out-of-order queue, `mptcp_ofo_queue`; data already received is dropped there, so
//! a reinjected copy is counted once).

use crate::tcp::rcvbuf::RcvBuf;

/// The connection's receive-buffer autotuning (Linux 6.18 net/mptcp/protocol.c,
/// `mptcp_rcv_space_adjust`, `mptcp_rcvbuf_grow`): what the application read is measured once
/// per the longest receiver RTT of the subflows; when it read more than the last measure, the
/// connection's buffer grows as `tcp_rcvbuf_grow` would (at the smallest of the subflows'
/// ratios), and then every subflow's buffer and window clamp follow, each with its own last
/// measure (`tcp_rcvbuf_grow(ssk, copied)`). We diverge: out-of-order data at the connection
/// level does not widen it.
#[derive(Debug, Clone)]
pub struct ConnRcvSpace {
    /// The connection's `sk_rcvbuf` and `rcvq_space.space` (its first subflow's MSS).
    pub buf: RcvBuf,
    /// `rcvq_space.copied`, `.time` (ns; None before the first read), `.rtt_us` (8 times, us).
    copied: u64,
    time_ns: Option<u64>,
    rtt_us8: u64,
}

impl ConnRcvSpace {
    pub fn new(mss_bytes: u32, timestamps: bool) -> Self {
        ConnRcvSpace {
            buf: RcvBuf::new(mss_bytes, timestamps),
            copied: 0,
            time_ns: None,
            rtt_us8: 0,
        }
    }

    /// `mptcp_space`: the window the connection's free buffer allows (out-of-order data at the
    /// connection level held, `ooo_bytes`) and its whole buffer's, at the smallest of its
    /// subflows' ratios.
    pub fn space(&self, ooo_bytes: u64) -> (u64, u64) {
        let rmem = self.buf.ofo_charge(ooo_bytes);
        (self.buf.space(rmem), self.buf.full_space())
    }

    /// The application read `copied` bytes at `now_ns`: true when a measure may end now (the
    /// caller then gives [`ConnRcvSpace::adjust`] the subflows).
    pub fn read(&mut self, now_ns: u64, copied: u64) -> bool {
        if copied == 0 {
            return false;
        }
        let t0 = *self.time_ns.get_or_insert(now_ns);
        self.copied += copied;
        self.rtt_us8 == 0 || (now_ns - t0) / 1000 >= self.rtt_us8 >> 3
    }

    /// After a [`ConnRcvSpace::read`] that returned true: `subflows` gives each established
    /// subflow's receiver RTT (8 times, us) and scaling ratio. Returns the bytes per RTT the
    /// subflows' buffers are to grow to, when the connection's grew.
    pub fn adjust(&mut self, now_ns: u64, subflows: &[(u64, u64)]) -> Option<u64> {
        let time_us = (now_ns - self.time_ns.unwrap_or(now_ns)) / 1000;
        self.rtt_us8 = subflows.iter().map(|s| s.0).max().unwrap_or(0);
        if let Some(r) = subflows.iter().map(|s| s.1).min() {
            self.buf.scaling_ratio = r;
        }
        if self.rtt_us8 == 0 || time_us < self.rtt_us8 >> 3 {
            return None;
        }
        let mut grown = None;
        if self.copied > self.buf.space_measured() && self.buf.rcvbuf_grow(self.copied, 0) {
            grown = Some(self.copied);
        }
        self.copied = 0;
        self.time_ns = Some(now_ns);
        grown
    }
}

/// Data-level reassembly.
#[derive(Debug, Clone, Default)]
pub struct DataReceiver {
    /// Next data byte expected (`meta_tp->rcv_nxt`): the DATA_ACK, and the bytes delivered in
    /// order to the application.
    pub rcv_nxt: u64,
    /// Data received beyond `rcv_nxt`: disjoint, sorted, non-adjacent `[start, end)` ranges
    /// (the meta out-of-order queue).
    ooo: Vec<(u64, u64)>,
    /// Data bytes received more than once (a reinjected copy and its original, say).
    pub dup_bytes: u64,
}

impl DataReceiver {
    /// Data `[start, end)` arrives in order on some subflow.
    pub fn on_range(&mut self, start: u64, end: u64) {
        if end <= self.rcv_nxt {
            self.dup_bytes += end - start;
            return;
        }
        let start = if start < self.rcv_nxt {
            self.dup_bytes += self.rcv_nxt - start;
            self.rcv_nxt
        } else {
            start
        };
        if start == self.rcv_nxt && self.ooo.is_empty() {
            self.rcv_nxt = end; // the common case: in order, nothing held
            return;
        }
        self.insert(start, end);
        // Deliver what is now in order.
        while let Some(&(a, b)) = self.ooo.first() {
            if a > self.rcv_nxt {
                break;
            }
            self.rcv_nxt = self.rcv_nxt.max(b);
            self.ooo.remove(0);
        }
    }

    /// Add `[start, end)` to the out-of-order ranges, counting overlap as duplicate.
    fn insert(&mut self, mut start: u64, mut end: u64) {
        // First range that ends at or after start (could merge).
        let i = self.ooo.partition_point(|&(_, b)| b < start);
        while i < self.ooo.len() && self.ooo[i].0 <= end {
            let (a, b) = self.ooo[i];
            let overlap = end.min(b).saturating_sub(start.max(a));
            self.dup_bytes += overlap;
            start = start.min(a);
            end = end.max(b);
            self.ooo.remove(i);
        }
        self.ooo.insert(i, (start, end));
    }

    /// Out-of-order data bytes held.
    pub fn ooo_bytes(&self) -> u64 {
        self.ooo.iter().map(|&(a, b)| b - a).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_order_data_advances_the_data_ack() {
        let mut r = DataReceiver::default();
        r.on_range(0, 100);
        r.on_range(100, 250);
        assert_eq!(r.rcv_nxt, 250);
        assert_eq!(r.dup_bytes, 0);
    }

    #[test]
    fn a_hole_holds_later_data_until_filled() {
        let mut r = DataReceiver::default();
        r.on_range(100, 200); // subflow B overtakes subflow A
        r.on_range(300, 400);
        assert_eq!(r.rcv_nxt, 0);
        assert_eq!(r.ooo_bytes(), 200);
        r.on_range(0, 100);
        assert_eq!(r.rcv_nxt, 200);
        r.on_range(200, 300);
        assert_eq!(r.rcv_nxt, 400);
        assert_eq!(r.ooo_bytes(), 0);
        assert_eq!(r.dup_bytes, 0);
    }

    #[test]
    fn duplicates_are_dropped_and_counted() {
        let mut r = DataReceiver::default();
        r.on_range(0, 100);
        r.on_range(50, 150); // a reinjected copy overlapping delivered data
        assert_eq!((r.rcv_nxt, r.dup_bytes), (150, 50));
        r.on_range(200, 300);
        r.on_range(250, 350); // overlapping held data
        assert_eq!(r.dup_bytes, 100);
        r.on_range(150, 200);
        assert_eq!((r.rcv_nxt, r.ooo_bytes()), (350, 0));
    }
}
