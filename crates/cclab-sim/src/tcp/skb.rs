//! The retransmission queue: one entry per sent segment (Linux's `tcp_rtx_queue` of skbs, one
//! MSS each: we do not model TSO/GSO aggregation), with the SACK scoreboard bits of
//! `TCP_SKB_CB(skb)->sacked`.
//!
//! While it is long, the queue keeps three indices beside it, so that the walks that run per ACK
//! visit only the segments they act on and their cost does not grow with the window (issue 18):
//! RACK's view in send-time order (Linux's `tp->tsorted_sent_queue`, `tcp_rack_detect_loss` in
//! net/ipv4/tcp_recovery.c: every segment neither SACKed nor marked lost awaiting
//! retransmission, keyed by (send time, end sequence)); the segments waiting for retransmission
//! (`tcp_xmit_retransmit_queue` in tcp_output.c, which starts from `tp->retransmit_skb_hint`);
//! and the segments a SACK may still change (the SACK walk of `tcp_sacktag_write_queue`, which
//! Linux shortens with `recv_sack_cache`).

use std::collections::{BTreeSet, VecDeque};

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

/// RACK's key of a segment it may still have to mark lost: (send time us, end sequence); None
/// for a segment SACKed, or marked lost and not retransmitted since (`tcp_rack_detect_loss`
/// skips both).
fn rack_key(s: &Skb) -> Option<(u64, u64)> {
    (s.sacked & SACKED_ACKED == 0 && !waiting(s)).then_some((s.xmit_us, s.end_seq))
}

/// Marked lost, not SACKed, and not retransmitted since: what `tcp_xmit_retransmit_queue`
/// resends.
fn waiting(s: &Skb) -> bool {
    s.sacked & LOST != 0 && s.sacked & (SACKED_ACKED | SACKED_RETRANS) == 0
}

/// SACKed and already counted in a rate sample (`tx.delivered_mstamp` cleared): another
/// non-duplicate SACK of it changes nothing (`tcp_sacktag_one` and `tcp_rate_skb_delivered`
/// both return at once), so the SACK walk may skip it.
fn settled(s: &Skb) -> bool {
    s.sacked & SACKED_ACKED != 0 && s.tx_delivered_mstamp_us == 0
}

/// Queue lengths at which the indices are built and dropped. Keeping them costs four
/// balanced-tree updates per segment: below a few thousand segments the walks (in recovery
/// only) cost less (`cclab-bench --window-scaling`: bulk CUBIC at 100 Mbit/s, windows of about
/// 1700, ran 40 % slower indexed from 1024; from 4096 it runs as fast as with walks alone).
const INDEX_FROM: usize = 4096;
const INDEX_UNTIL: usize = 1024;

/// The queue's indices (built only while it is long): RACK's send-time order (Linux's
/// `tsorted_sent_queue`), the segments waiting for retransmission (where Linux keeps
/// `retransmit_skb_hint`) and those a SACK may still change.
#[derive(Debug, Default)]
struct Indices {
    /// `rack_key` of every segment that has one.
    tsorted: BTreeSet<(u64, u64)>,
    /// End sequence of every `waiting` segment.
    waiting: BTreeSet<u64>,
    /// End sequence of every segment not `settled`.
    unsettled: BTreeSet<u64>,
}

impl Indices {
    fn of<'a>(segs: impl Iterator<Item = &'a Skb>) -> Self {
        let mut ix = Indices::default();
        segs.for_each(|s| ix.add(s));
        ix
    }
    fn add(&mut self, s: &Skb) {
        if let Some(k) = rack_key(s) {
            self.tsorted.insert(k);
        }
        if waiting(s) {
            self.waiting.insert(s.end_seq);
        }
        if !settled(s) {
            self.unsettled.insert(s.end_seq);
        }
    }
    /// Move `s` from what `before` belonged in to what `after` does.
    fn change(&mut self, before: &Skb, after: &Skb) {
        let (kb, ka) = (rack_key(before), rack_key(after));
        if kb != ka {
            if let Some(k) = kb {
                self.tsorted.remove(&k);
            }
            if let Some(k) = ka {
                self.tsorted.insert(k);
            }
        }
        for (set, b, a) in [
            (&mut self.waiting, waiting(before), waiting(after)),
            (&mut self.unsettled, !settled(before), !settled(after)),
        ] {
            if b && !a {
                set.remove(&before.end_seq);
            } else if a && !b {
                set.insert(after.end_seq);
            }
        }
    }
    fn remove(&mut self, s: &Skb) {
        if let Some(k) = rack_key(s) {
            self.tsorted.remove(&k);
        }
        self.waiting.remove(&s.end_seq);
        self.unsettled.remove(&s.end_seq);
    }
}

/// Sent-but-unacked segments in sequence order. Every segment is `mss` bytes except possibly
/// the last one of the stream, so the segment holding a sequence number is found by division.
///
/// The walks over the queue that run per ACK (RACK's loss detection, the retransmission of
/// lost segments, the SACK walk) visit only the segments they act on
/// ([`RtxQueue::rack_candidates`], [`RtxQueue::next_waiting`], [`RtxQueue::next_unsettled`]),
/// so their cost does not grow with the window (issue 18): while the queue is long, through
/// indices that segments change only by [`RtxQueue::update`] and [`RtxQueue::update_all`] to
/// keep in step; while it is short, by walking it. Both give the same answers.
#[derive(Debug, Default)]
pub struct RtxQueue {
    q: VecDeque<Skb>,
    mss: u64,
    index: Option<Indices>,
    /// `INDEX_FROM` and `INDEX_UNTIL` (tests set others).
    index_from: usize,
    index_until: usize,
}

impl RtxQueue {
    /// An empty queue for segments of `mss` bytes.
    pub fn new(mss: u32) -> Self {
        Self::with_index_bounds(mss, INDEX_FROM, INDEX_UNTIL)
    }
    /// An empty queue whose indices are built at `from` segments and dropped below `until`.
    fn with_index_bounds(mss: u32, from: usize, until: usize) -> Self {
        RtxQueue {
            q: VecDeque::new(),
            mss: mss as u64,
            index: None,
            index_from: from,
            index_until: until,
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
        match &mut self.index {
            Some(ix) => ix.add(&skb),
            None if self.q.len() >= self.index_from => {
                self.index = Some(Indices::of(self.q.iter()))
            }
            None => {}
        }
    }
    /// Remove and return the head.
    pub fn pop_head(&mut self) -> Option<Skb> {
        let skb = self.q.pop_front()?;
        if let Some(ix) = &mut self.index {
            ix.remove(&skb);
            if self.q.len() < self.index_until {
                self.index = None;
            }
        }
        Some(skb)
    }
    /// Segment at index `i`.
    pub fn get(&self, i: usize) -> &Skb {
        &self.q[i]
    }
    /// Change the segment at index `i` with `f` (its result returned), keeping the indices in
    /// step.
    pub fn update<R>(&mut self, i: usize, f: impl FnOnce(&mut Skb) -> R) -> R {
        let before = self.q[i];
        let r = f(&mut self.q[i]);
        if let Some(ix) = &mut self.index {
            ix.change(&before, &self.q[i]);
        }
        r
    }
    /// Change every segment with `f`, then rebuild the indices.
    pub fn update_all(&mut self, f: impl FnMut(&mut Skb)) {
        self.q.iter_mut().for_each(f);
        if self.index.is_some() {
            self.index = Some(Indices::of(self.q.iter()));
        }
    }
    /// Whether the indices are kept now (tests).
    pub fn indexed(&self) -> bool {
        self.index.is_some()
    }
    /// Index of the first segment at or after index `i` that is marked lost, not SACKed and
    /// not retransmitted since.
    pub fn next_waiting(&self, i: usize) -> Option<usize> {
        match &self.index {
            Some(ix) => self.next_in(&ix.waiting, i),
            None => (i..self.q.len()).find(|&j| waiting(&self.q[j])),
        }
    }
    /// Index of the first segment at or after index `i` that a SACK may still change (not
    /// SACKed, or SACKed but not yet counted in a rate sample).
    pub fn next_unsettled(&self, i: usize) -> Option<usize> {
        match &self.index {
            Some(ix) => self.next_in(&ix.unsettled, i),
            None => (i..self.q.len()).find(|&j| !settled(&self.q[j])),
        }
    }
    fn next_in(&self, set: &BTreeSet<u64>, i: usize) -> Option<usize> {
        let seg = self.q.get(i)?;
        let &end_seq = set.range(seg.end_seq..).next()?;
        self.index_of(end_seq - 1)
    }
    /// (send time us, end sequence) of the segments neither SACKed nor marked lost awaiting
    /// retransmission that were sent before `(t_us, end_seq)` (those
    /// `tcp_skb_sent_after(t_us, xmit, end_seq, skb_end_seq)` holds for): in send-time order
    /// while the queue is indexed, in sequence order otherwise.
    pub fn rack_candidates(
        &self,
        t_us: u64,
        end_seq: u64,
    ) -> impl Iterator<Item = (u64, u64)> + '_ {
        let limit = (t_us, end_seq);
        let indexed = self
            .index
            .as_ref()
            .map(|ix| ix.tsorted.range(..limit).copied());
        let walked = self.index.is_none().then(|| {
            self.q
                .iter()
                .filter_map(rack_key)
                .filter(move |&k| k < limit)
        });
        indexed
            .into_iter()
            .flatten()
            .chain(walked.into_iter().flatten())
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

    /// The answers with the indices and without, over random sends, acks, SACK and loss marks,
    /// retransmissions and undos, with the queue growing past and shrinking below the bounds.
    #[test]
    fn indexed_walks_match_the_plain_walks() {
        let mut q = RtxQueue::with_index_bounds(100, 40, 10);
        let mut state = 99u64;
        let mut rnd = |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        let (mut next_seq, mut now) = (0u64, 0u64);
        let mut was_indexed = false;
        for step in 0..40_000 {
            now += rnd(3);
            match rnd(16) {
                0..=5 if q.len() < 120 || step % 2000 < 1000 => {
                    let mut s = skb(next_seq, 100);
                    s.xmit_us = now;
                    s.tx_delivered_mstamp_us = now + 1;
                    q.push(s);
                    next_seq += 100;
                }
                0..=6 => {
                    q.pop_head();
                }
                7..=13 if !q.is_empty() => {
                    let i = rnd(q.len() as u64) as usize;
                    let (bit, t) = (rnd(6), now);
                    q.update(i, |s| match bit {
                        0 => s.sacked |= SACKED_ACKED,
                        1 => s.sacked |= LOST,
                        2 => s.sacked &= !SACKED_RETRANS,
                        3 => {
                            s.sacked |= SACKED_RETRANS | EVER_RETRANS;
                            s.xmit_us = t;
                        }
                        4 => s.tx_delivered_mstamp_us = 0,
                        _ => s.tx_delivered_mstamp_us = t + 1,
                    });
                }
                14 => q.update_all(|s| s.sacked &= !LOST),
                _ => {}
            }
            was_indexed |= q.indexed();
            let n = q.len();
            let start = rnd(n as u64 + 1) as usize;
            let want_waiting = (start..n).find(|&j| waiting(q.get(j)));
            let want_unsettled = (start..n).find(|&j| !settled(q.get(j)));
            assert_eq!(q.next_waiting(start), want_waiting, "step {step}");
            assert_eq!(q.next_unsettled(start), want_unsettled, "step {step}");
            let (t, e) = (now.saturating_sub(rnd(50)), rnd(next_seq + 1));
            let mut got: Vec<_> = q.rack_candidates(t, e).collect();
            let mut want: Vec<_> = q
                .iter()
                .filter(|s| {
                    s.sacked & SACKED_ACKED == 0
                        && !(s.sacked & LOST != 0 && s.sacked & SACKED_RETRANS == 0)
                        && crate::tcp::sender::tcp_skb_sent_after(t, s.xmit_us, e, s.end_seq)
                })
                .map(|s| (s.xmit_us, s.end_seq))
                .collect();
            got.sort_unstable();
            want.sort_unstable();
            assert_eq!(got, want, "step {step}");
        }
        assert!(was_indexed);
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
