//! The data-level receive side: the connection's reassembly of data ranges that its subflows
//! deliver in (subflow) order, and its cumulative DATA_ACK (v0.9x `mptcp_input.c`:
//! `mptcp_queue_skb` moves in-order data to the meta receive queue and out-of-order data to
//! the meta out-of-order queue, `mptcp_ofo_queue`; data already received is dropped there, so
//! a reinjected copy is counted once).

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
