//! The retransmission queue: one entry per sent segment (Linux's `tcp_rtx_queue` of skbs, one
//! MSS each: we do not model TSO/GSO aggregation), with the SACK scoreboard bits of
//! `TCP_SKB_CB(skb)->sacked`.

use std::collections::VecDeque;

/// `TCPCB_SACKED_ACKED`: the segment is SACKed.
pub const SACKED_ACKED: u8 = 0x01;
/// `TCPCB_SACKED_RETRANS`: the segment's retransmission is in flight.
pub const SACKED_RETRANS: u8 = 0x02;
/// `TCPCB_LOST`: the segment is marked lost.
pub const LOST: u8 = 0x04;
/// `TCPCB_EVER_RETRANS` (`TCPCB_RETRANS` in checks): retransmitted at least once.
pub const EVER_RETRANS: u8 = 0x80;

/// One sent segment (the parts of `struct sk_buff` + `tcp_skb_cb` the sender reads).
#[derive(Debug, Clone, Copy)]
pub struct Skb {
    /// First byte.
    pub seq: u64,
    /// One past the last byte.
    pub end_seq: u64,
    /// Time of the latest (re)transmission, microseconds (`skb_mstamp`).
    pub xmit_us: u64,
    /// TSval carried by the latest (re)transmission, ms.
    pub tsval: u32,
    /// Scoreboard bits (`SACKED_ACKED`, `SACKED_RETRANS`, `LOST`, `EVER_RETRANS`).
    pub sacked: u8,
    /// `tp->delivered` when this segment was (re)sent (`tx.delivered`, tcp_rate.c).
    pub tx_delivered: u32,
    /// `tp->delivered_mstamp` when sent (`tx.delivered_mstamp`).
    pub tx_delivered_mstamp_us: u64,
    /// `tp->first_tx_mstamp` when sent (`tx.first_tx_mstamp`).
    pub tx_first_tx_mstamp_us: u64,
    /// Whether the flow was application-limited when sent (`tx.is_app_limited`).
    pub tx_is_app_limited: bool,
    /// Packets in flight when this segment was sent, itself included (`tx.in_flight`, added by
    /// google/bbr's v2alpha and v3 branches in `tcp_set_tx_in_flight`, tcp_output.c).
    pub tx_in_flight: u32,
    /// `tp->lost` when this segment was sent (`tx.lost`, google/bbr v2alpha/v3,
    /// `tcp_rate_skb_sent`).
    pub tx_lost: u32,
    /// `tp->delivered_ce` when this segment was sent (`tx.delivered_ce`, `tcp_rate_skb_sent`).
    pub tx_delivered_ce: u32,
}

impl Skb {
    /// Payload bytes.
    pub fn len(&self) -> u64 {
        self.end_seq - self.seq
    }
    /// Whether the payload is empty (never, for queued data).
    pub fn is_empty(&self) -> bool {
        self.end_seq == self.seq
    }
}

/// Sent-but-unacked segments in sequence order. Every segment is `mss` bytes except possibly
/// the last one of the stream, so the segment holding a sequence number is found by division.
#[derive(Debug, Default)]
pub struct RtxQueue {
    q: VecDeque<Skb>,
    mss: u64,
}

impl RtxQueue {
    /// An empty queue for segments of `mss` bytes.
    pub fn new(mss: u32) -> Self {
        RtxQueue {
            q: VecDeque::new(),
            mss: mss as u64,
        }
    }
    /// Number of segments.
    pub fn len(&self) -> usize {
        self.q.len()
    }
    /// Whether nothing is unacked.
    pub fn is_empty(&self) -> bool {
        self.q.is_empty()
    }
    /// Head (lowest sequence) segment.
    pub fn head(&self) -> Option<&Skb> {
        self.q.front()
    }
    /// Append a newly sent segment.
    pub fn push(&mut self, skb: Skb) {
        debug_assert!(self.q.back().is_none_or(|b| b.end_seq == skb.seq));
        self.q.push_back(skb);
    }
    /// Remove and return the head.
    pub fn pop_head(&mut self) -> Option<Skb> {
        self.q.pop_front()
    }
    /// Segment at index `i`.
    pub fn get(&self, i: usize) -> &Skb {
        &self.q[i]
    }
    /// Mutable segment at index `i`.
    pub fn get_mut(&mut self, i: usize) -> &mut Skb {
        &mut self.q[i]
    }
    /// Index of the segment containing byte `seq`, if queued.
    pub fn index_of(&self, seq: u64) -> Option<usize> {
        let head = self.q.front()?;
        if seq < head.seq {
            return None;
        }
        let i = ((seq - head.seq) / self.mss) as usize;
        (i < self.q.len()).then_some(i)
    }
    /// Iterate in sequence order.
    pub fn iter(&self) -> impl Iterator<Item = &Skb> {
        self.q.iter()
    }
    /// Iterate mutably in sequence order.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut Skb> {
        self.q.iter_mut()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skb(seq: u64, len: u64) -> Skb {
        Skb {
            seq,
            end_seq: seq + len,
            xmit_us: 0,
            tsval: 0,
            sacked: 0,
            tx_delivered: 0,
            tx_delivered_mstamp_us: 0,
            tx_first_tx_mstamp_us: 0,
            tx_is_app_limited: false,
            tx_in_flight: 0,
            tx_lost: 0,
            tx_delivered_ce: 0,
        }
    }

    #[test]
    fn index_of_finds_segments_including_a_short_tail() {
        let mut q = RtxQueue::new(100);
        for i in 0..5 {
            q.push(skb(1000 + i * 100, 100));
        }
        q.push(skb(1500, 30));
        assert_eq!(q.index_of(999), None);
        assert_eq!(q.index_of(1000), Some(0));
        assert_eq!(q.index_of(1199), Some(1));
        assert_eq!(q.index_of(1529), Some(5));
        assert_eq!(q.index_of(1600), None);
        q.pop_head();
        assert_eq!(q.index_of(1100), Some(0));
    }
}
