//! The TCP receiver: Linux 6.18's ACK policy (`net/ipv4/tcp_input.c`: `tcp_data_queue`,
//! `tcp_event_data_recv`, `__tcp_ack_snd_check`, `tcp_sack_new_ofo_skb`, `tcp_dsack_set`;
//! `net/ipv4/tcp_output.c`: `tcp_send_delayed_ack`; `net/ipv4/tcp_timer.c`: `tcp_delack_timer`).
//!
//! - Quick ACKs at start: the first `min(rcv_wnd / (2 * mss), 16)` ACKs are immediate, with
//!   the initial rcv_wnd Linux offers since 4.19 (`tcp_select_initial_window` on the default
//!   `tcp_rmem[1]`: about 64 KB, so 16 at any MSS up to 2 KB), or the flow's `rwnd_bytes` if
//!   smaller.
//! - Afterwards an ACK for every second full segment ("more than one full frame received"),
//!   else a delayed ACK after `ato` (adaptive, at least `TCP_ATO_MIN` = 40 ms, at most 200 ms).
//! - Out-of-order data: SACK blocks (RFC 2018, most recent first, up to 4, 3 with timestamps),
//!   D-SACK (RFC 2883) for duplicates; the first 3 dupacks per hole go out at once, later ones
//!   are compressed (`tcp_comp_sack_nr` = 44, delay min(1 ms, rtt/20)).
//! - An immediate ACK when a hole is filled, and for duplicate data.
//! - Timestamps: TSecr echoes `ts_recent`, moved forward only by segments at or below
//!   `rcv_wup`; PAWS drops a segment with an older TSval and `tcp_sequence` one wholly below
//!   `rcv_wup`, each answered by a duplicate ACK (`tcp_validate_incoming`, `tcp_send_dupack`).
//! - ECN (when the flow has it): CE echoed as ECE, classic or precise (`tcp/ecn.rs`).
//!
//! - The window: receive-buffer autotuning and the window offered as 6.18 computes them
//!   (`tcp/rcvbuf.rs`), with the quick ACK `tcp_grow_window` asks for each time it raises
//!   rcv_ssthresh (`icsk_ack.quick |= 1`: while the window opens, every segment is ACKed) and
//!   the window-update ACK of `tcp_cleanup_rbuf` after a read; or, when the flow sets
//!   `rwnd_bytes`, that fixed window (simulator only).
//!
//! We diverge: the application reads every in-order byte when it arrives.

use crate::tcp::ecn::{EcnMode, EcnRcv};
use crate::tcp::rcvbuf::{initial_rcv_wnd_bytes, RcvBuf};
use crate::tcp::segment::{AckSeg, DataSeg, SeqRange};

/// `TCP_MAX_QUICKACKS`.
const MAX_QUICKACKS: u32 = 16;
/// `TCP_FASTRETRANS_THRESH`.
const FASTRETRANS_THRESH: u32 = 3;
/// `sysctl_tcp_comp_sack_nr`.
const COMP_SACK_NR: u32 = 44;
/// `sysctl_tcp_comp_sack_delay_ns`.
const COMP_SACK_DELAY_NS: u64 = 1_000_000;
/// `TCP_TIMEOUT_INIT`: the receiver's RTO (it sends no data, so it never measures one), us.
const RECEIVER_RTO_US: u64 = 1_000_000;
/// `TCP_NUM_SACKS`.
const NUM_SACKS: usize = 4;

/// Static settings of one receiver.
#[derive(Debug, Clone)]
pub struct ReceiverConfig {
    pub mss_bytes: u32,
    pub sack: bool,
    pub timestamps: bool,
    pub delayed_ack: bool,
    /// ACK at once when more than `ack_every_pkts - 1` full segments are unacknowledged (2:
    /// Linux's "more than one full frame"; more: stretch ACKs, not Linux's policy).
    pub ack_every_pkts: u32,
    /// Advertised window, bytes, when not `autotune`.
    pub rwnd_bytes: u64,
    /// The window is Linux's (receive-buffer autotuning, `tcp/rcvbuf.rs`); false: `rwnd_bytes`.
    pub autotune: bool,
    /// Bytes the application expects (u64::MAX for bulk).
    pub size_bytes: u64,
    /// The kernel's tick clock and timer wheel (`clock.rs`).
    pub clock: super::clock::KernelClock,
    /// ECN at this end (negotiated when the flow asks for it).
    pub ecn: EcnMode,
}

/// One TCP receiver.
pub struct Receiver {
    cfg: ReceiverConfig,
    /// Next byte expected.
    pub rcv_nxt: u64,
    /// rcv_nxt when the last ACK was sent (`rcv_wup`).
    rcv_wup: u64,
    /// Out-of-order data held, sorted, disjoint.
    ofo: Vec<SeqRange>,
    /// SACK blocks to report, most recent first (`selective_acks`).
    sacks: Vec<SeqRange>,
    /// Pending D-SACK block.
    dsack: Option<SeqRange>,
    ts_recent: u32,
    /// `icsk_ack.quick`.
    quick: u32,
    /// `icsk_ack.ato`, jiffies (0 = no data yet).
    ato: u64,
    /// `icsk_ack.lrcvtime`, jiffies.
    lrcvtime: u64,
    /// An ACK is scheduled (`ICSK_ACK_SCHED`).
    ack_sched: bool,
    /// Send an ACK at once (`ICSK_ACK_NOW`).
    pub(crate) ack_now: bool,
    /// Delayed-ACK timer: when it runs, ns (the wheel's bucket for `delack_timeout`).
    delack_deadline: Option<u64>,
    /// `icsk_ack.timeout`: the delayed-ACK timer's expiry, jiffies.
    delack_timeout: u64,
    compressed_ack: u32,
    compressed_ack_rcv_nxt: u64,
    dup_ack_counter: u32,
    /// SACK-compression timer deadline, ns.
    comp_deadline: Option<u64>,
    /// The receive buffer, the window offered and the receiver's RTT estimate.
    pub(crate) rb: RcvBuf,
    /// A subflow of a Multipath TCP connection: its buffer grows with the connection's
    /// (`mptcp_rcv_space_adjust`), not by its own reads.
    pub(crate) conn_driven: bool,
    /// A subflow's window comes from its connection's buffer (`mptcp_space`): the window its
    /// free space and its whole buffer allow, set by the world as they change.
    pub(crate) conn_space: Option<(u64, u64)>,
    now_ns: u64,
    /// Bytes delivered in order to the application.
    pub delivered_bytes: u64,
    /// When the application got its last byte (fixed-size flows), ns.
    pub completion_ns: Option<u64>,
    /// ACKs sent.
    pub acks_sent: u64,
    /// ECN state (`tcp/ecn.rs`).
    pub(crate) ecn: EcnRcv,
    /// A subflow of an upstream Multipath TCP connection (`mptcp_stack = "linux"`): the
    /// every-second-segment ACK waits for the application's read ([`Receiver::cleanup_rbuf`]).
    pub(crate) read_driven_acks: bool,
}

impl Receiver {
    /// A receiver expecting byte 0.
    pub fn new(cfg: ReceiverConfig) -> Self {
        Receiver {
            ecn: EcnRcv::new(cfg.ecn),
            rb: RcvBuf::new(cfg.mss_bytes, cfg.timestamps),
            cfg,
            rcv_nxt: 0,
            rcv_wup: 0,
            ofo: Vec::new(),
            sacks: Vec::new(),
            dsack: None,
            ts_recent: 0,
            quick: 0,
            ato: 0,
            lrcvtime: 0,
            ack_sched: false,
            ack_now: false,
            delack_deadline: None,
            delack_timeout: 0,
            compressed_ack: 0,
            compressed_ack_rcv_nxt: 0,
            dup_ack_counter: 0,
            comp_deadline: None,
            conn_driven: false,
            conn_space: None,
            now_ns: 0,
            delivered_bytes: 0,
            completion_ns: None,
            acks_sent: 0,
            read_driven_acks: false,
        }
    }

    fn jiffies(&self) -> u64 {
        self.cfg.clock.jiffies_at(self.now_ns)
    }

    fn ato_min(&self) -> u64 {
        (self.cfg.clock.hz / 25) as u64 // TCP_ATO_MIN = HZ / 25
    }

    fn ts_now(&self) -> u32 {
        (self.now_ns / 1_000_000) as u32 + 1
    }

    fn rto_jiffies(&self) -> u64 {
        RECEIVER_RTO_US * self.cfg.clock.hz as u64 / 1_000_000
    }

    /// Earliest pending timer, ns.
    pub fn timer_deadline_ns(&self) -> Option<u64> {
        match (self.delack_deadline, self.comp_deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// `tp->rcv_wnd` as `tcp_incr_quickack` reads it: the window last offered; with a fixed
    /// window, the initial one, at most `rwnd_bytes`.
    fn rcv_wnd_bytes(&self) -> u64 {
        if self.cfg.autotune {
            self.rb.rcv_wnd
        } else {
            initial_rcv_wnd_bytes(self.cfg.mss_bytes).min(self.cfg.rwnd_bytes)
        }
    }

    /// `icsk_ack.rcv_mss` as `tcp_incr_quickack` reads it (the flow's MSS with a fixed window).
    fn rcv_mss(&self) -> u64 {
        if self.cfg.autotune {
            self.rb.rcv_mss
        } else {
            u64::from(self.cfg.mss_bytes)
        }
    }

    /// Bytes the out-of-order queue holds in the buffer (a truesize per segment).
    fn ofo_rmem(&self) -> u64 {
        self.ofo
            .iter()
            .map(|r| self.rb.ofo_charge(r.end - r.start))
            .sum()
    }

    /// How far out-of-order data reaches beyond rcv_nxt (`ooo_last_skb`'s end).
    fn ofo_span(&self) -> u64 {
        self.ofo.last().map_or(0, |r| r.end - self.rcv_nxt)
    }

    /// The window free space allows and the whole buffer's (`tcp_space`, `tcp_full_space`).
    fn free_and_allowed(&self) -> (u64, u64) {
        if let Some(c) = self.conn_space {
            return c;
        }
        (self.rb.space(self.ofo_rmem()), self.rb.full_space())
    }

    /// `tcp_incr_quickack`.
    fn incr_quickack(&mut self, max_quickacks: u32) {
        let mut q = (self.rcv_wnd_bytes() / (2 * self.rcv_mss())) as u32;
        if q == 0 {
            q = 2;
        }
        q = q.min(max_quickacks);
        if q > self.quick {
            self.quick = q;
        }
    }

    /// `tcp_enter_quickack_mode` (no pingpong mode in our model).
    pub(crate) fn enter_quickack_mode(&mut self, max_quickacks: u32) {
        self.incr_quickack(max_quickacks);
        self.ato = self.ato_min();
    }

    /// Whether an ACK waits for the delayed-ACK timer (`icsk_ack.pending & ICSK_ACK_TIMER`).
    pub(crate) fn delack_pending(&self) -> bool {
        self.ack_sched && self.delack_deadline.is_some()
    }

    /// `tcp_event_data_recv` for `len` bytes, `rmem` held with them: the peer's MSS, the
    /// receiver's RTT without timestamps, ATO estimation, then `tcp_grow_window`.
    fn event_data_recv(&mut self, len: u64, rmem: u64) {
        self.ack_sched = true;
        self.rb.measure_rcv_mss(len);
        if !self.cfg.timestamps {
            self.rb.rtt_measure(self.now_ns, self.rcv_nxt);
        }
        let now = self.jiffies();
        let ato_min = self.ato_min();
        if self.ato == 0 {
            self.incr_quickack(MAX_QUICKACKS);
            self.ato = ato_min;
        } else {
            let m = now - self.lrcvtime;
            if m <= ato_min / 2 {
                // The fastest case is the first.
                self.ato = (self.ato >> 1) + ato_min / 2;
            } else if m < self.ato {
                self.ato = ((self.ato >> 1) + m).min(self.rto_jiffies());
            } else if m > self.rto_jiffies() {
                // Too long gap. Apparently sender failed to restart window.
                self.incr_quickack(MAX_QUICKACKS);
            }
        }
        self.lrcvtime = now;
        if self.cfg.autotune && len >= 128 && self.rb.grow_window(len, rmem) {
            self.quick |= 1;
        }
    }

    /// A data segment arrived; ACKs to send go to `out`.
    pub fn on_data(&mut self, now_ns: u64, seg: &DataSeg, out: &mut Vec<AckSeg>) {
        self.now_ns = now_ns;
        let (seq, end) = (seg.seq, seg.seq + seg.len as u64);
        // tcp_validate_incoming (net/ipv4/tcp_input.c): PAWS first (RFC 7323 sec 5,
        // `tcp_paws_discard`: a TSval more than TCP_PAWS_WINDOW = 1 tick older than ts_recent),
        // then `tcp_sequence` (a segment wholly below rcv_wup). Either is dropped with a
        // duplicate ACK, before ts_recent, the RTT estimate or the data are touched.
        if self.cfg.timestamps && self.ts_recent != 0 && ts_older(self.ts_recent, seg.tsval) > 1 {
            self.send_dupack(seq, end, out);
            return;
        }
        if end < self.rcv_wup {
            self.send_dupack(seq, end, out);
            return;
        }
        if self.cfg.timestamps {
            // tcp_replace_ts_recent: only segments at or below the last ACKed point
            // (`!after(seq, rcv_wup)`), and only forward (`tcp_paws_check(&tp->rx_opt, 0)`).
            if seq <= self.rcv_wup
                && (self.ts_recent == 0 || ts_older(self.ts_recent, seg.tsval) <= 0)
            {
                self.ts_recent = seg.tsval;
            }
            // tcp_rcv_rtt_measure_ts.
            if seg.tsecr != 0 {
                self.rb
                    .rtt_measure_ts(self.ts_now(), seg.tsecr, u64::from(seg.len));
            }
        }
        self.rb.start(now_ns, self.rcv_nxt);
        self.ecn_accept_cwr(seg);
        if end <= self.rcv_nxt {
            // A retransmit, 2nd most common case. Force an immediate ack (tcp_data_queue:
            // D-SACK it, tcp_enter_quickack_mode, inet_csk_schedule_ack).
            self.dsack_set(seq, end);
            self.enter_quickack_mode(MAX_QUICKACKS);
            self.ack_sched = true;
        } else if seq <= self.rcv_nxt {
            if seq < self.rcv_nxt {
                self.dsack_set(seq, self.rcv_nxt);
            }
            let rmem = self.ofo_rmem() + self.rb.truesize(u64::from(seg.len));
            self.advance(end);
            self.event_data_recv(u64::from(seg.len), rmem);
            self.ecn_check_ce(seg, out);
            self.ack_snd_check(out);
            self.read(out);
            return;
        } else {
            self.ecn_check_ce(seg, out);
            self.data_queue_ofo(seq, end);
        }
        self.ack_snd_check(out);
    }

    /// The application reads what came in order (`tcp_recvmsg`): `tcp_rcv_space_adjust`, then
    /// `tcp_cleanup_rbuf`'s window update: an ACK at once when the window it can offer now is
    /// at least twice what the peer may still send.
    fn read(&mut self, out: &mut Vec<AckSeg>) {
        if !self.cfg.autotune || self.conn_driven {
            return;
        }
        let span = self.ofo_span();
        self.rb.space_adjust(self.now_ns, self.rcv_nxt, span);
        self.window_update(out);
    }

    /// `tcp_cleanup_rbuf`'s window-update test (no ACK already due).
    fn window_update(&mut self, out: &mut Vec<AckSeg>) {
        let now_wnd = (self.rcv_wup + self.rb.rcv_wnd).saturating_sub(self.rcv_nxt);
        if 2 * now_wnd <= self.rb.window_clamp {
            let (free, allowed) = self.free_and_allowed();
            let (new, _) = self.rb.select_window_raw(free, allowed);
            if new > 0 && new >= 2 * now_wnd {
                self.send_ack(out);
            }
        }
    }

    /// In-order data up to `end`: move the out-of-order queue in (`tcp_ofo_queue`).
    fn advance(&mut self, end: u64) {
        let had_ofo = !self.ofo.is_empty();
        self.rcv_nxt = self.rcv_nxt.max(end);
        while let Some(first) = self.ofo.first().copied() {
            if first.start > self.rcv_nxt {
                break;
            }
            self.rcv_nxt = self.rcv_nxt.max(first.end);
            self.ofo.remove(0);
        }
        // tcp_sack_remove: drop blocks now covered by rcv_nxt.
        let nxt = self.rcv_nxt;
        self.sacks.retain(|b| b.start > nxt);
        if had_ofo && self.ofo.is_empty() {
            // RFC 5681 4.2: SHOULD send immediate ACK when the gap is filled.
            self.ack_now = true;
        }
        let new_delivered = self.rcv_nxt.min(self.cfg.size_bytes);
        if new_delivered > self.delivered_bytes {
            self.delivered_bytes = new_delivered;
            if self.cfg.size_bytes != u64::MAX && new_delivered >= self.cfg.size_bytes {
                self.completion_ns.get_or_insert(self.now_ns);
            }
        }
    }

    /// Whether it already holds the byte at `seq` (in order, or out of order): an arriving
    /// segment that starts there is a duplicate (the world's STO accounting asks).
    pub fn holds(&self, seq: u64) -> bool {
        seq < self.rcv_nxt || self.ofo.iter().any(|r| r.start <= seq && seq < r.end)
    }

    /// `tcp_send_dupack`: the answer to a segment `tcp_validate_incoming` dropped: quick ACKs
    /// and a D-SACK when it carried data we already have, then an ACK at once.
    fn send_dupack(&mut self, seq: u64, end: u64, out: &mut Vec<AckSeg>) {
        if end != seq && seq < self.rcv_nxt {
            self.enter_quickack_mode(MAX_QUICKACKS);
            self.dsack_set(seq, end.min(self.rcv_nxt));
        }
        self.send_ack(out);
    }

    /// `tcp_dsack_set`.
    fn dsack_set(&mut self, seq: u64, end: u64) {
        if self.cfg.sack {
            self.dsack = Some(SeqRange { start: seq, end });
        }
    }

    /// `tcp_data_queue_ofo` + `tcp_sack_new_ofo_skb`.
    fn data_queue_ofo(&mut self, seq: u64, end: u64) {
        self.ack_sched = true;
        let r = SeqRange { start: seq, end };
        // Insert into the sorted ofo list, detecting duplicates.
        let pos = self.ofo.partition_point(|x| x.end < seq);
        if pos < self.ofo.len() && self.ofo[pos].start <= seq && self.ofo[pos].end >= end {
            self.dsack_set(seq, end);
            return;
        }
        let mut merged = r;
        let mut j = pos;
        while j < self.ofo.len() && self.ofo[j].start <= merged.end {
            merged.start = merged.start.min(self.ofo[j].start);
            merged.end = merged.end.max(self.ofo[j].end);
            j += 1;
        }
        self.ofo.splice(pos..j, std::iter::once(merged));
        if self.cfg.autotune {
            // tcp_data_queue_ofo's end: tcp_grow_window, then tcp_rcvbuf_grow at the last
            // measure, to hold the out-of-order data too.
            let rmem = self.ofo_rmem();
            if end - seq >= 128 && self.rb.grow_window(end - seq, rmem) {
                self.quick |= 1;
            }
            if !self.conn_driven {
                let space = self.rb.space_measured();
                self.rb.rcvbuf_grow(space, self.ofo_span());
            }
        }
        if !self.cfg.sack {
            return;
        }
        // tcp_sack_new_ofo_skb: extend a block (and move it first) or add one in front.
        for i in 0..self.sacks.len() {
            let b = self.sacks[i];
            if seq <= b.end && b.start <= end {
                let nb = SeqRange {
                    start: b.start.min(seq),
                    end: b.end.max(end),
                };
                self.sacks.remove(i);
                self.sacks.insert(0, nb);
                // tcp_sack_maybe_coalesce
                let mut k = 1;
                while k < self.sacks.len() {
                    let o = self.sacks[k];
                    if o.start <= self.sacks[0].end && self.sacks[0].start <= o.end {
                        self.sacks[0].start = self.sacks[0].start.min(o.start);
                        self.sacks[0].end = self.sacks[0].end.max(o.end);
                        self.sacks.remove(k);
                    } else {
                        k += 1;
                    }
                }
                return;
            }
        }
        if self.sacks.len() >= NUM_SACKS {
            self.sacks.pop();
        }
        self.sacks.insert(0, r);
    }

    /// `__tcp_ack_snd_check`.
    fn ack_snd_check(&mut self, out: &mut Vec<AckSeg>) {
        if !self.ack_sched {
            return;
        }
        // __tcp_ack_snd_check: "more than one full frame received" (ack_every_pkts = 2), or the
        // stretch-ACK variant's more than ack_every_pkts - 1.
        // With autotuning, also "right edge of window advances far enough" (the window it
        // would offer now is not below the one offered: `__tcp_select_window(sk) >= rcv_wnd`).
        let more_than_one_frame = self.rcv_nxt - self.rcv_wup
            > (self.cfg.ack_every_pkts.max(2) as u64 - 1) * self.rcv_mss()
            && (!self.cfg.autotune || {
                let (free, allowed) = self.free_and_allowed();
                self.rb.select_window_raw(free, allowed).0 >= self.rb.rcv_wnd
            });
        // A subflow of an upstream MPTCP connection: its window is the connection's, raised to the
        // right edge another subflow offered (net/mptcp/options.c `mptcp_set_rwin`), and data
        // just queued at the connection is not yet read, so `__tcp_select_window(sk) >=
        // tp->rcv_wnd` fails and the ACK waits for the read (`mptcp_cleanup_rbuf`) or the timer.
        let more_than_one_frame = more_than_one_frame && !self.read_driven_acks;
        let quickack = self.quick > 0;
        if more_than_one_frame || quickack || self.ack_now || !self.cfg.delayed_ack {
            self.send_ack(out);
            return;
        }
        if self.ofo.is_empty() && self.dsack.is_none() {
            self.send_delayed_ack(out);
            return;
        }
        if !self.cfg.sack || self.compressed_ack >= COMP_SACK_NR {
            self.send_ack(out);
            return;
        }
        if self.compressed_ack_rcv_nxt != self.rcv_nxt {
            self.compressed_ack_rcv_nxt = self.rcv_nxt;
            self.dup_ack_counter = 0;
        }
        if self.dup_ack_counter < FASTRETRANS_THRESH {
            self.dup_ack_counter += 1;
            self.send_ack(out);
            return;
        }
        self.compressed_ack += 1;
        if self.comp_deadline.is_some() {
            return;
        }
        let delay = COMP_SACK_DELAY_NS.min(self.rb.rtt_us() * 1000 / 20);
        self.comp_deadline = Some(self.now_ns + delay.max(1));
    }

    /// The application read data of this subflow's connection (`mptcp_cleanup_rbuf` ->
    /// `mptcp_subflow_could_cleanup`, net/mptcp/protocol.c): a scheduled ACK goes now if more
    /// than one full segment is unacknowledged (`__tcp_cleanup_rbuf`'s once-per-two-segments
    /// ACK "not sent by tcp_input.c").
    pub fn cleanup_rbuf(&mut self, now_ns: u64, out: &mut Vec<AckSeg>) {
        if self.ack_sched && self.rcv_nxt - self.rcv_wup > u64::from(self.cfg.mss_bytes) {
            self.now_ns = now_ns;
            self.send_ack(out);
        }
    }

    /// `tcp_send_delayed_ack`.
    fn send_delayed_ack(&mut self, out: &mut Vec<AckSeg>) {
        let ato_min = self.ato_min();
        let mut ato = self.ato;
        if ato > ato_min {
            let max_ato = (self.cfg.clock.hz / 2) as u64; // HZ/2; no srtt on a pure receiver
            ato = ato.min(max_ato);
        }
        let delack_max = (self.cfg.clock.hz / 5) as u64; // TCP_DELACK_MAX = HZ/5
        ato = ato.min(delack_max);
        let now_j = self.jiffies();
        let mut timeout_j = now_j + ato;
        if self.delack_deadline.is_some() {
            // If delack timer is about to expire, send ACK now.
            if self.delack_timeout <= now_j + (ato >> 2) {
                self.send_ack(out);
                return;
            }
            timeout_j = timeout_j.min(self.delack_timeout);
        }
        self.delack_timeout = timeout_j;
        self.delack_deadline = Some(self.cfg.clock.expiry_fire_ns(self.now_ns, timeout_j));
    }

    /// A receiver timer fired (delayed ACK or SACK compression).
    pub fn on_timer(&mut self, now_ns: u64, out: &mut Vec<AckSeg>) {
        self.now_ns = now_ns;
        if self.comp_deadline.is_some_and(|d| d <= now_ns) {
            self.comp_deadline = None;
            if self.compressed_ack > 0 {
                self.send_ack(out);
            }
        }
        if self.delack_deadline.is_some_and(|d| d <= now_ns) {
            self.delack_deadline = None;
            if self.ack_sched {
                // Delayed ACK missed: inflate ATO.
                self.ato = (self.ato << 1).min(self.rto_jiffies());
                self.send_ack(out);
            }
        }
    }

    /// `__tcp_send_ack(sk, rcv_nxt)` for an older `ack`, as DCTCP's precise echo sends: an ACK
    /// that leaves the delayed-ACK and quick-ACK state alone (`tcp_event_ack_sent` returns early
    /// when `rcv_nxt != tp->rcv_nxt`), but like every ACK ends SACK compression (the start of
    /// `tcp_event_ack_sent`) and moves rcv_wup to rcv_nxt (`tcp_select_window`, from
    /// `__tcp_transmit_skb`).
    pub(crate) fn send_special_ack(&mut self, ack: u64, out: &mut Vec<AckSeg>) {
        let a = self.build_ack(ack);
        out.push(a);
        self.acks_sent += 1;
        self.comp_deadline = None;
        self.compressed_ack = 0;
        self.rcv_wup = self.rcv_nxt;
    }

    /// `tcp_send_ack` + `tcp_event_ack_sent`.
    fn send_ack(&mut self, out: &mut Vec<AckSeg>) {
        let a = self.build_ack(self.rcv_nxt);
        out.push(a);
        self.acks_sent += 1;
        // tcp_dec_quickack_mode
        if self.quick > 0 && self.ack_sched {
            if self.quick <= 1 {
                self.quick = 0;
                self.ato = self.ato_min();
            } else {
                self.quick -= 1;
            }
        }
        self.ack_sched = false;
        self.ack_now = false;
        self.delack_deadline = None;
        self.comp_deadline = None;
        self.compressed_ack = 0;
        self.rcv_wup = self.rcv_nxt;
    }

    /// The ACK segment for `ack` with the current window, timestamps, SACK blocks (taking a
    /// pending D-SACK) and ECE (`tcp_ecn_send`).
    fn build_ack(&mut self, ack: u64) -> AckSeg {
        let rwnd_bytes = if self.cfg.autotune {
            let (free, allowed) = self.free_and_allowed();
            let (w, end_quick) = self
                .rb
                .select_window(free, allowed, self.rcv_wup, self.rcv_nxt);
            if end_quick {
                self.quick = 0;
            }
            w
        } else {
            self.cfg.rwnd_bytes
        };
        let mut a = AckSeg {
            ack,
            rwnd_bytes,
            sack: [SeqRange::default(); 4],
            n_sack: 0,
            tsval: if self.cfg.timestamps {
                self.ts_now()
            } else {
                0
            },
            tsecr: if self.cfg.timestamps {
                self.ts_recent
            } else {
                0
            },
            ece: self.ecn.ece(),
            data_ack: 0,
        };
        if self.cfg.sack {
            let max_blocks = if self.cfg.timestamps { 3 } else { 4 };
            let mut n = 0;
            if let Some(d) = self.dsack.take() {
                a.sack[n] = d;
                n += 1;
            }
            for b in &self.sacks {
                if n >= max_blocks {
                    break;
                }
                a.sack[n] = *b;
                n += 1;
            }
            a.n_sack = n as u8;
        }
        a
    }
}

/// How many ticks `tsval` is older than `ts_recent`, `(s32)(ts_recent - tsval)` as in
/// `tcp_paws_check` (include/net/tcp.h); negative when it is newer.
pub(crate) fn ts_older(ts_recent: u32, tsval: u32) -> i32 {
    ts_recent.wrapping_sub(tsval) as i32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rcv(delayed: bool) -> Receiver {
        Receiver::new(ReceiverConfig {
            mss_bytes: 1000,
            sack: true,
            timestamps: true,
            delayed_ack: delayed,
            ack_every_pkts: 2,
            rwnd_bytes: 1 << 30,
            autotune: false,
            size_bytes: u64::MAX,
            clock: crate::tcp::clock::KernelClock::exact(1000),
            ecn: EcnMode::Off,
        })
    }

    fn seg(i: u64) -> DataSeg {
        DataSeg {
            below_bytes: 0,
            skb_follows: false,
            seq: i * 1000,
            len: 1000,
            tsval: 1,
            tsecr: 0,
            retrans: false,
            ecn: cclab_net::Ecn::NotEct,
            cwr: false,
        }
    }

    /// The first 16 segments, one per µs; returns the ACKs they brought.
    fn quick_acked(r: &mut Receiver) -> usize {
        let mut out = Vec::new();
        for i in 0..16 {
            r.on_data(i * 1000, &seg(i), &mut out);
        }
        out.len()
    }

    /// Linux 6.18 offers about 64 KB first (`tcp_select_initial_window`), so
    /// `tcp_incr_quickack` gives min(65000 / 2000, 16) = 16 quick ACKs at MSS 1000.
    #[test]
    fn quickacks_then_every_second_segment() {
        assert_eq!(initial_rcv_wnd_bytes(1448), 65_160);
        assert_eq!(initial_rcv_wnd_bytes(1000), 65_000);
        let mut r = rcv(true);
        let mut out = Vec::new();
        assert_eq!(
            quick_acked(&mut r),
            16,
            "the first 16 segments are quick-acked"
        );
        for i in 16..26 {
            r.on_data(i * 1000 + 10_000, &seg(i), &mut out);
        }
        assert_eq!(out.len(), 5, "then one ACK per two full segments");
        assert_eq!(out.last().unwrap().ack, 26_000);
    }

    /// With autotuning (`rwnd_bytes` = 0), every segment is ACKed at once while
    /// `tcp_grow_window` raises rcv_ssthresh towards a clamp the buffer's growth just raised,
    /// then one per two segments once it has caught up.
    #[test]
    fn autotuning_acks_every_segment_while_the_window_opens() {
        let mut r = Receiver::new(ReceiverConfig {
            mss_bytes: 1448,
            autotune: true,
            ..rcv(true).cfg
        });
        let seg = |i: u64| DataSeg {
            seq: i * 1448,
            len: 1448,
            ..seg(0)
        };
        let mut out = Vec::new();
        let feed = |r: &mut Receiver, from: u64, to: u64, out: &mut Vec<AckSeg>| {
            out.clear();
            for i in from..to {
                r.on_data(i * 1000 + 100_000, &seg(i), out);
            }
            out.len()
        };
        feed(&mut r, 0, 30, &mut out);
        assert_eq!(
            r.rb.rcv_ssthresh, 80_480,
            "min(clamp, tcp_space less the skb)"
        );
        assert_eq!(
            feed(&mut r, 30, 40, &mut out),
            5,
            "caught up: one ACK per two segments"
        );
        // A read measure grows the buffer, and the clamp with it.
        assert!(r.rb.rcvbuf_grow(30_408, 0));
        let clamp = r.rb.window_clamp;
        assert!(clamp > 150_000, "clamp {clamp}");
        let top = clamp.min(r.rb.space(2304)); // tcp_space with the arriving skb charged
        let raises = (top - 80_480).div_ceil(2896);
        let acks = feed(&mut r, 40, 40 + raises, &mut out) as u64;
        assert_eq!(acks, raises, "every segment ACKed");
        assert_eq!(r.rb.rcv_ssthresh, top);
        let n = 40 + raises;
        assert_eq!(
            feed(&mut r, n, n + 10, &mut out),
            5,
            "then one per two segments again"
        );
        assert_eq!(out.last().unwrap().rwnd_bytes, top.div_ceil(1024) * 1024);
    }

    /// Stretch ACKs (`ack_every_pkts` = 8): after the quick ACKs, one ACK per 8 full segments
    /// (each acking all 8), where Linux's rule gives one per 2.
    #[test]
    fn stretch_acks_every_eighth_segment() {
        let mut r = Receiver::new(ReceiverConfig {
            ack_every_pkts: 8,
            ..rcv(true).cfg
        });
        let mut out = Vec::new();
        assert_eq!(quick_acked(&mut r), 16, "the quick ACKs are unchanged");
        for i in 16..40 {
            r.on_data(i * 1000 + 10_000, &seg(i), &mut out);
        }
        let acks: Vec<u64> = out.iter().map(|a| a.ack).collect();
        assert_eq!(acks, [24_000, 32_000, 40_000], "one ACK per 8 segments");
    }

    /// A subflow of an upstream Multipath TCP connection: past the quick ACKs, two full segments
    /// no longer bring an ACK by themselves (the shared window fails `__tcp_ack_snd_check`'s
    /// test); the application's read sends it (`mptcp_cleanup_rbuf`), or the delayed-ACK timer.
    #[test]
    fn an_upstream_mptcp_subflow_acks_when_the_application_reads() {
        let mut r = rcv(true);
        r.read_driven_acks = true;
        let mut out = Vec::new();
        assert_eq!(quick_acked(&mut r), 16, "quick ACKs as before");
        for i in 16..22 {
            r.on_data(i * 1000 + 10_000, &seg(i), &mut out);
        }
        assert!(out.is_empty(), "six segments, no ACK yet");
        r.cleanup_rbuf(30_000, &mut out);
        assert_eq!(out.len(), 1, "the read sends one ACK");
        assert_eq!(out[0].ack, 22_000, "for all six");
        // One segment more is not worth an ACK at the next read (not more than one MSS).
        r.on_data(40_000, &seg(22), &mut out);
        r.cleanup_rbuf(40_000, &mut out);
        assert_eq!(out.len(), 1);
        // Unread, it is acked by the delayed-ACK timer.
        let deadline = r.timer_deadline_ns().expect("the delayed ACK is armed");
        r.on_timer(deadline, &mut out);
        assert_eq!(out.last().unwrap().ack, 23_000);
    }

    /// A smaller `rwnd_bytes` is the window `tcp_incr_quickack` divides: 10 MSS give 5.
    #[test]
    fn a_small_window_gives_fewer_quickacks() {
        let mut r = Receiver::new(ReceiverConfig {
            rwnd_bytes: 10_000,
            autotune: false,
            ..rcv(true).cfg
        });
        let mut out = Vec::new();
        for i in 0..6 {
            r.on_data(i * 1000, &seg(i), &mut out);
        }
        assert_eq!(out.len(), 5, "5 quick ACKs, then the 6th segment waits");
    }

    #[test]
    fn lone_segment_waits_for_the_delayed_ack_timer() {
        let mut r = rcv(true);
        let mut out = Vec::new();
        for i in 0..16 {
            r.on_data(0, &seg(i), &mut out);
        }
        out.clear();
        r.on_data(1_000_000_000, &seg(16), &mut out);
        assert!(out.is_empty());
        let d = r.timer_deadline_ns().unwrap();
        assert!(d >= 1_000_000_000 + 40_000_000, "at least TCP_ATO_MIN");
        r.on_timer(d, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].ack, 17_000);
    }

    #[test]
    fn hole_gives_sack_blocks_and_dsack_for_duplicates() {
        let mut r = rcv(true);
        let mut out = Vec::new();
        r.on_data(0, &seg(0), &mut out);
        r.on_data(0, &seg(2), &mut out);
        r.on_data(0, &seg(3), &mut out);
        let last = out.last().unwrap();
        assert_eq!(last.ack, 1000);
        assert_eq!(
            last.sacks(),
            &[SeqRange {
                start: 2000,
                end: 4000
            }]
        );
        r.on_data(0, &seg(1), &mut out);
        assert_eq!(
            out.last().unwrap().ack,
            4000,
            "filling the hole ACKs at once"
        );
        r.on_data(0, &seg(1), &mut out);
        let d = out.last().unwrap();
        assert_eq!(
            d.sacks()[0],
            SeqRange {
                start: 1000,
                end: 2000
            },
            "D-SACK first"
        );
        assert_eq!(r.delivered_bytes, 4000);
    }

    fn seg_ts(i: u64, tsval: u32) -> DataSeg {
        DataSeg { tsval, ..seg(i) }
    }

    /// Linux 6.18 `tcp_validate_incoming` drops a segment whose TSval is more than one tick older
    /// than ts_recent (PAWS, `tcp_paws_discard`) and one wholly below rcv_wup (`tcp_sequence`),
    /// answering each with a duplicate ACK carrying a D-SACK (`tcp_send_dupack`); a segment it
    /// accepts moves ts_recent only forward (`tcp_replace_ts_recent`).
    #[test]
    fn old_duplicates_do_not_move_ts_recent() {
        let mut r = rcv(true);
        let mut out = Vec::new();
        r.on_data(0, &seg_ts(0, 10), &mut out);
        r.on_data(0, &seg_ts(1, 12), &mut out);
        assert_eq!(out.last().unwrap().tsecr, 12);
        let dsack0 = SeqRange {
            start: 0,
            end: 1000,
        };
        // A delayed original of segment 0 (TSval 5): PAWS drops it.
        out.clear();
        r.on_data(1_000_000, &seg_ts(0, 5), &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!((out[0].ack, out[0].tsecr), (2000, 12));
        assert_eq!(out[0].sacks()[0], dsack0);
        // Segment 1 again, TSval 11: within PAWS's one-tick window and not below rcv_wup, so
        // accepted (a D-SACKed duplicate), but ts_recent does not go back.
        out.clear();
        r.on_data(1_000_000, &seg_ts(1, 11), &mut out);
        assert_eq!((out.len(), out[0].tsecr), (1, 12));
        // Segment 0 again with a newer TSval (a retransmission): wholly below rcv_wup, dropped.
        out.clear();
        r.on_data(1_000_000, &seg_ts(0, 13), &mut out);
        assert_eq!((out.len(), out[0].tsecr), (1, 12));
        assert_eq!(out[0].sacks()[0], dsack0);
        // The next segment at rcv_wup moves ts_recent on.
        out.clear();
        r.on_data(1_000_000, &seg_ts(2, 14), &mut out);
        assert_eq!(out.last().unwrap().tsecr, 14);
        assert_eq!(r.delivered_bytes, 3000);
    }

    /// Linux `tcp_data_queue`: a duplicate segment (a retransmit of data we have) enters
    /// quick-ACK mode with `tcp_enter_quickack_mode`, which also sets ato back to `TCP_ATO_MIN`
    /// (not `tcp_incr_quickack` alone).
    #[test]
    fn duplicate_data_resets_ato() {
        let mut r = rcv(true);
        let mut out = Vec::new();
        // Segments 30 ms apart: below ato, so ato grows (tcp_event_data_recv); every second
        // one is acked at once, the others wait.
        for i in 0..21u64 {
            r.on_data(i * 30_000_000, &seg(i), &mut out);
        }
        assert!(r.ato > r.ato_min(), "ato {}", r.ato);
        assert_eq!(
            (r.rcv_wup, r.rcv_nxt),
            (20_000, 21_000),
            "segment 20 not acked yet"
        );
        // Segment 20 again: not below rcv_wup, so not tcp_sequence's drop, a duplicate.
        out.clear();
        r.on_data(610_000_000, &seg(20), &mut out);
        assert_eq!(out.len(), 1, "acked at once");
        assert_eq!(r.ato, r.ato_min());
    }

    /// `tcp_select_window`, run for every segment `__tcp_transmit_skb` sends, sets rcv_wup to
    /// rcv_nxt: the special ACK of DCTCP's precise echo (for an older rcv_nxt) too. So the next
    /// single segment is not "more than one full frame" past it and waits for the timer.
    #[test]
    fn a_special_ack_moves_rcv_wup() {
        let mut r = rcv(true);
        let mut out = Vec::new();
        for i in 0..16 {
            r.on_data(0, &seg(i), &mut out);
        }
        out.clear();
        r.on_data(1_000_000, &seg(16), &mut out);
        assert!(out.is_empty(), "a lone segment waits");
        r.send_special_ack(16_000, &mut out);
        assert_eq!((out.len(), out[0].ack), (1, 16_000));
        assert_eq!(r.rcv_wup, r.rcv_nxt);
        out.clear();
        r.on_data(2_000_000, &seg(17), &mut out);
        assert!(out.is_empty(), "one frame past rcv_wup: still delayed");
    }
}
