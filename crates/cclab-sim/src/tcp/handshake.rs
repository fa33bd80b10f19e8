//! The three-way handshake, as Linux 6.18 opens a connection: the connecting side (the data
//! sender, which calls `connect()`, as `python/cclab/kernel/traffic.py` does on the kernel
//! backend) sends a SYN and waits in SYN_SENT; the listening side (the data receiver) answers
//! with a SYN-ACK from a request socket; the connecting side's ACK completes it.
//!
//! What each side does, with the kernel function it follows:
//! - [`Connector::connect`]: `tcp_connect` (net/ipv4/tcp_output.c): the SYN goes out and the
//!   retransmission timer is armed at `tcp_timeout_init` (1 s, `TCP_TIMEOUT_INIT`, or what a
//!   BPF `BPF_SOCK_OPS_TIMEOUT_INIT` program returns: the flow's `rto_initial_ms`);
//!   `retrans_stamp` is the SYN's timestamp.
//! - [`Connector::on_timer`]: `tcp_retransmit_timer` (net/ipv4/tcp_timer.c) in SYN_SENT:
//!   `tcp_write_timeout` gives up after `tcp_syn_retries` (6) + `tcp_syn_linear_timeouts` (4)
//!   retransmissions, or once `retransmits_timed_out` (`tcp_model_timeout` from the initial RTO)
//!   says so; else the SYN is resent and, in 6.18, the RTO stays at its initial value for the
//!   first `tcp_syn_linear_timeouts` = 4 timeouts (`tp->total_rto > tcp_syn_linear_timeouts`
//!   before `icsk_rto` doubles), so SYNs go out at 1, 2, 3, 4, 5, 7, 11, 19, 35 and 67 s and the
//!   connection fails at 131 s (Documentation/networking/ip-sysctl.rst, `tcp_syn_retries`).
//!   Each timeout is `tcp_enter_loss` (which sets `undo_marker`) and one more `total_retrans`.
//! - [`Connector::on_synack`]: `tcp_rcv_synsent_state_process` (net/ipv4/tcp_input.c):
//!   `tcp_try_undo_spurious_syn` (the SYN-ACK echoes the first SYN's timestamp: the timeout was
//!   spurious, `undo_marker` = 0), then `tcp_ack` takes the SYN's RTT sample in
//!   `tcp_clean_rtx_queue`/`tcp_ack_update_rtt`: from the SYN's send time if it was never
//!   retransmitted (Karn), else from the SYN-ACK's TSecr when timestamps are on (RFC 7323's
//!   RTTM rule, `tcp_rtt_tsopt_us`), else none; then `tcp_finish_connect` ->
//!   `tcp_init_transfer` ([`Sender::init_transfer`]) and the ACK (`tcp_send_ack`: the
//!   application is blocked in `connect()`, so no write is pending and the ACK is not delayed).
//!   A SYN-ACK reaching an established connection (its ACK was lost) is answered with an ACK
//!   (`tcp_validate_incoming`'s challenge ACK, `tcp_send_challenge_ack`, at most one per
//!   `tcp_invalid_ratelimit` = 500 ms).
//! - [`Listener`]: the request socket (`tcp_conn_request`, net/ipv4/tcp_input.c) sends the
//!   SYN-ACK and arms `rsk_timer` at `req->timeout` = `tcp_timeout_init`; `reqsk_timer_handler`
//!   (net/ipv4/inet_connection_sock.c) resends it at `reqsk_timeout` = timeout << num_timeout
//!   (1, 3, 7, 15, 31 s) up to `tcp_synack_retries` = 5, then drops the request (at 63 s);
//!   `tcp_check_req` (net/ipv4/tcp_minisocks.c) resends it at once for a retransmitted SYN
//!   (rate-limited by `tcp_oow_rate_limited`, 500 ms) and rearms the timer, and creates the
//!   child socket on the ACK, or on the first data segment (which carries the ACK flag) when the
//!   ACK was lost.
//!
//! We diverge: the listener takes no RTT sample (`tcp_synack_rtt_meas`; our receiver sends no
//! data, so it has no RTO to seed); ECN, window scaling and SACK are negotiated as the flow
//! says (both ends share its settings); a SYN reaching an established receiver is dropped (Linux
//! answers a challenge ACK, which the sender ignores as an old duplicate); without SACK,
//! `tcp_try_undo_recovery` keeps a sender whose SYN timed out in Loss until data above the SYN
//! is acked, while ours starts Open; `tcp_init_metrics` finds no cached metrics (a fresh
//! namespace, as on the kernel backend).

use super::clock::KernelClock;
use super::sender::Sender;
use crate::cc::CaState;
use crate::tcp::sock::TCP_INFINITE_SSTHRESH;

/// `TCP_TIMEOUT_FALLBACK`: the RTO `tcp_init_metrics` sets when the handshake gave no RTT
/// sample (RFC 6298 section 5.7), us.
pub const TIMEOUT_FALLBACK_US: u64 = 3_000_000;
/// `tcp_syn_retries` (`TCP_SYN_RETRIES`, Linux's default).
pub const SYN_RETRIES: u32 = 6;
/// `tcp_syn_linear_timeouts` (6.18's default, `tcp_sk_init`): SYN timeouts before doubling.
pub const SYN_LINEAR_TIMEOUTS: u32 = 4;
/// `tcp_synack_retries` (`TCP_SYNACK_RETRIES`).
pub const SYNACK_RETRIES: u32 = 5;
/// `TCP_RTO_MAX`, us: what `reqsk_timeout` and `tcp_model_timeout` cap at.
const RTO_MAX_US: u64 = 120_000_000;
/// `tcp_invalid_ratelimit` (HZ / 2): at most one out-of-window answer per this, us.
const INVALID_RATELIMIT_US: u64 = 500_000;

/// Bytes of IPv4 + TCP headers of a SYN or SYN-ACK (`tcp_syn_options`, `tcp_synack_options`):
/// 40 + MSS (4) + the timestamp option (12, SACK-permitted folded into its NOPs) + window
/// scale (NOP + 3); without timestamps SACK-permitted takes 4 of its own. 60 B with timestamps,
/// 52 B with SACK alone, 48 B with neither.
pub fn syn_wire_bytes(sack: bool, timestamps: bool) -> u32 {
    let opts = 4
        + 4
        + if timestamps {
            12
        } else if sack {
            4
        } else {
            0
        };
    40 + opts
}

/// Bytes of the ACK completing the handshake: 52 B with timestamps, 40 B without.
pub fn ack_wire_bytes(timestamps: bool) -> u32 {
    40 + if timestamps { 12 } else { 0 }
}

/// Which handshake segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HsKind {
    Syn,
    SynAck,
    /// The connecting side's ACK (the third segment, or a challenge ACK).
    Ack,
}

impl HsKind {
    /// Its name in events (`seg=syn`).
    pub fn name(self) -> &'static str {
        match self {
            HsKind::Syn => "syn",
            HsKind::SynAck => "synack",
            HsKind::Ack => "ack",
        }
    }
}

/// A handshake segment on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HsSeg {
    pub kind: HsKind,
    /// TSval (sender's clock, ms); 0 when timestamps are off.
    pub tsval: u32,
    /// TSecr; 0 when timestamps are off (or on a SYN).
    pub tsecr: u32,
}

/// The TCP timestamp clock of either end (ms, offset by 1 so it is never 0), as the sender's
/// and receiver's `ts_now`.
pub fn ts_clock_ms(now_ns: u64) -> u32 {
    (now_ns / 1_000_000) as u32 + 1
}

/// `inet_csk_reset_xmit_timer` / `mod_timer`: a timer for `when_us` (whole jiffies, rounded up)
/// from `now_ns`, run when the timer wheel reaches its bucket (`clock.rs`).
fn jiffy_deadline_ns(now_ns: u64, when_us: u64, clock: &KernelClock) -> u64 {
    let j = (when_us * u64::from(clock.hz)).div_ceil(1_000_000);
    clock.timer_fire_ns(now_ns, j)
}

/// `tcp_model_timeout`: how long `boundary` backed-off retransmissions from `rto_base_us` last,
/// us (the time after which `retransmits_timed_out` gives up).
fn model_timeout_us(boundary: u32, rto_base_us: u64) -> u64 {
    let thresh = (RTO_MAX_US / rto_base_us.max(1)).max(1).ilog2();
    if boundary <= thresh {
        ((2u64 << boundary) - 1) * rto_base_us
    } else {
        ((2u64 << thresh) - 1) * rto_base_us + u64::from(boundary - thresh) * RTO_MAX_US
    }
}

/// Where the connecting side is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnState {
    /// Not started yet.
    Closed,
    SynSent,
    Established,
    /// `tcp_write_timeout` gave up: no SYN-ACK came.
    Failed,
}

/// What the connecting side learned from the handshake, for [`Sender::init_transfer`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Opened {
    /// The SYN's RTT sample (`seq_rtt_us`): its send time to the SYN-ACK; -1 when it was
    /// retransmitted (Karn).
    pub seq_rtt_us: i64,
    /// The SYN-ACK's TSecr, when timestamps are on.
    pub tsecr: Option<u32>,
    /// The SYN-ACK's TSval (the sender's `ts_recent`).
    pub tsval: u32,
    /// SYN retransmissions (`total_retrans` at `tcp_init_transfer`).
    pub total_retrans: u32,
    /// Whether `undo_marker` is still set (a SYN timed out and it was not proved spurious).
    pub undo_marker: bool,
}

/// The connecting side before it is established (SYN_SENT).
#[derive(Debug, Clone)]
pub struct Connector {
    pub state: ConnState,
    timestamps: bool,
    clock: KernelClock,
    /// `tcp_timeout_init`, us.
    timeout_init_us: u64,
    rto_max_us: u64,
    /// `icsk_rto`, us.
    pub icsk_rto_us: u64,
    /// SYN timeouts (`tp->total_rto`, also `icsk_retransmits` and `total_retrans` here).
    pub total_rto: u32,
    /// The first SYN's send time, ns.
    first_syn_ns: u64,
    /// `retrans_stamp`: the first SYN's TSval (ms clock).
    retrans_stamp_ms: u32,
    /// `undo_marker` is set (by `tcp_enter_loss` on a SYN timeout).
    undo_marker: bool,
    /// The retransmission timer, ns.
    pub timer_ns: Option<u64>,
    /// `last_oow_ack_time` of the established socket, ns (challenge ACKs).
    last_oow_ns: Option<u64>,
}

/// What a SYN timeout did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SynTimeout {
    /// The SYN was resent; the next timeout is `icsk_rto_us` later.
    Resent(HsSeg),
    /// `tcp_write_timeout`: the connection failed.
    GaveUp,
}

impl Connector {
    /// A closed socket; `timeout_init_us` is `tcp_timeout_init` (the flow's `rto_initial_ms`).
    pub fn new(
        timestamps: bool,
        clock: KernelClock,
        timeout_init_us: u64,
        rto_max_us: u64,
    ) -> Self {
        let init = timeout_init_us.clamp(1, RTO_MAX_US);
        Connector {
            state: ConnState::Closed,
            timestamps,
            clock,
            timeout_init_us: init,
            rto_max_us,
            icsk_rto_us: init,
            total_rto: 0,
            first_syn_ns: 0,
            retrans_stamp_ms: 0,
            undo_marker: false,
            timer_ns: None,
            last_oow_ns: None,
        }
    }

    fn syn(&self, now_ns: u64) -> HsSeg {
        HsSeg {
            kind: HsKind::Syn,
            tsval: if self.timestamps {
                ts_clock_ms(now_ns)
            } else {
                0
            },
            tsecr: 0,
        }
    }

    /// `tcp_connect`: send the SYN, arm the retransmission timer at the initial RTO.
    pub fn connect(&mut self, now_ns: u64) -> HsSeg {
        self.state = ConnState::SynSent;
        self.first_syn_ns = now_ns;
        self.retrans_stamp_ms = ts_clock_ms(now_ns);
        self.timer_ns = Some(jiffy_deadline_ns(now_ns, self.icsk_rto_us, &self.clock));
        self.syn(now_ns)
    }

    /// `tcp_retransmit_timer` in SYN_SENT, when the timer is due at `now_ns`.
    pub fn on_timer(&mut self, now_ns: u64) -> Option<SynTimeout> {
        if self.state != ConnState::SynSent || self.timer_ns.is_none_or(|t| t > now_ns) {
            return None;
        }
        self.timer_ns = None;
        // tcp_write_timeout: max_retransmits = syn_retries + syn_linear_timeouts, or the time
        // since the first SYN beyond tcp_model_timeout(syn_retries, tcp_timeout_init).
        let expired = self.total_rto >= SYN_RETRIES + SYN_LINEAR_TIMEOUTS
            || (self.total_rto > 0
                && u64::from(ts_clock_ms(now_ns).wrapping_sub(self.retrans_stamp_ms)) * 1000
                    >= model_timeout_us(SYN_RETRIES, self.timeout_init_us));
        if expired {
            self.state = ConnState::Failed;
            return Some(SynTimeout::GaveUp);
        }
        // tcp_enter_loss (tcp_init_undo), tcp_update_rto_stats, tcp_retransmit_skb.
        self.undo_marker = true;
        self.total_rto += 1;
        let seg = self.syn(now_ns);
        // 6.18: linear timeouts first, then exponential backoff.
        if self.total_rto > SYN_LINEAR_TIMEOUTS {
            self.icsk_rto_us = (self.icsk_rto_us << 1).min(self.rto_max_us);
        }
        self.timer_ns = Some(jiffy_deadline_ns(now_ns, self.icsk_rto_us, &self.clock));
        Some(SynTimeout::Resent(seg))
    }

    /// A SYN-ACK arrives: in SYN_SENT it establishes the connection (what it learned, and the
    /// ACK to send); once established it draws a challenge ACK (rate-limited); else nothing.
    pub fn on_synack(&mut self, now_ns: u64, seg: &HsSeg) -> (Option<Opened>, Option<HsSeg>) {
        let ack = HsSeg {
            kind: HsKind::Ack,
            tsval: if self.timestamps {
                ts_clock_ms(now_ns)
            } else {
                0
            },
            tsecr: if self.timestamps { seg.tsval } else { 0 },
        };
        match self.state {
            ConnState::SynSent => {
                let tsecr = (self.timestamps && seg.tsecr != 0).then_some(seg.tsecr);
                // tcp_try_undo_spurious_syn: the echo is the first SYN's: it was not lost.
                if self.undo_marker && tsecr == Some(self.retrans_stamp_ms) {
                    self.undo_marker = false;
                }
                // tcp_clean_rtx_queue: Karn, no sample from a retransmitted SYN's timing.
                let seq_rtt_us = if self.total_rto == 0 {
                    (now_ns / 1000 - self.first_syn_ns / 1000) as i64
                } else {
                    -1
                };
                self.state = ConnState::Established;
                self.timer_ns = None;
                let opened = Opened {
                    seq_rtt_us,
                    tsecr,
                    tsval: seg.tsval,
                    total_retrans: self.total_rto,
                    undo_marker: self.undo_marker,
                };
                (Some(opened), Some(ack))
            }
            ConnState::Established => {
                let limited = self
                    .last_oow_ns
                    .is_some_and(|l| now_ns.saturating_sub(l) < INVALID_RATELIMIT_US * 1000);
                if limited {
                    return (None, None);
                }
                self.last_oow_ns = Some(now_ns);
                (None, Some(ack))
            }
            ConnState::Closed | ConnState::Failed => (None, None),
        }
    }
}

/// Where the listening side's request is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReqState {
    /// No request (none yet, or it expired).
    Listen,
    /// SYN_RECV: the SYN-ACK is out.
    SynRecv,
    /// The child socket exists: the receiver takes data.
    Established,
}

/// What the request timer did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SynAckTimeout {
    /// The SYN-ACK was resent (its `num_retrans`).
    Resent(HsSeg, u32),
    /// `tcp_synack_retries` reached: the request is dropped.
    Expired,
}

/// The listening side's request socket.
#[derive(Debug, Clone)]
pub struct Listener {
    pub state: ReqState,
    timestamps: bool,
    clock: KernelClock,
    /// `req->timeout` (`tcp_timeout_init`), us.
    timeout_us: u64,
    /// `req->num_timeout`.
    num_timeout: u32,
    /// `req->num_retrans`.
    pub num_retrans: u32,
    /// The SYN's TSval (`req->ts_recent`), echoed in the SYN-ACK.
    ts_recent: u32,
    /// `rsk_timer`, ns.
    pub timer_ns: Option<u64>,
    /// `last_oow_ack_time`, ns.
    last_oow_ns: Option<u64>,
}

impl Listener {
    /// A listening socket; `timeout_us` is `tcp_timeout_init` (the flow's `rto_initial_ms`).
    pub fn new(timestamps: bool, clock: KernelClock, timeout_us: u64) -> Self {
        Listener {
            state: ReqState::Listen,
            timestamps,
            clock,
            timeout_us: timeout_us.clamp(1, RTO_MAX_US),
            num_timeout: 0,
            num_retrans: 0,
            ts_recent: 0,
            timer_ns: None,
            last_oow_ns: None,
        }
    }

    fn synack(&self, now_ns: u64) -> HsSeg {
        HsSeg {
            kind: HsKind::SynAck,
            tsval: if self.timestamps {
                ts_clock_ms(now_ns)
            } else {
                0
            },
            tsecr: if self.timestamps { self.ts_recent } else { 0 },
        }
    }

    /// `reqsk_timeout`: `req->timeout << num_timeout`, at most `TCP_RTO_MAX`, us.
    fn reqsk_timeout_us(&self) -> u64 {
        (self.timeout_us << self.num_timeout.min(31)).min(RTO_MAX_US)
    }

    /// A SYN arrives. Returns the SYN-ACK to send (with whether it is a retransmission).
    pub fn on_syn(&mut self, now_ns: u64, seg: &HsSeg) -> Option<(HsSeg, bool)> {
        match self.state {
            // tcp_conn_request: a new request, its SYN-ACK, the timer at req->timeout.
            ReqState::Listen => {
                self.state = ReqState::SynRecv;
                self.num_timeout = 0;
                self.num_retrans = 0;
                self.last_oow_ns = None;
                self.ts_recent = seg.tsval;
                self.timer_ns = Some(jiffy_deadline_ns(now_ns, self.timeout_us, &self.clock));
                Some((self.synack(now_ns), false))
            }
            // tcp_check_req: a retransmitted SYN; resend unless rate-limited, rearm the timer.
            ReqState::SynRecv => {
                let limited = self
                    .last_oow_ns
                    .is_some_and(|l| now_ns.saturating_sub(l) < INVALID_RATELIMIT_US * 1000);
                if limited {
                    return None;
                }
                self.last_oow_ns = Some(now_ns);
                // req->ts_recent stays the first SYN's: the SYN-ACK echoes it again.
                self.num_retrans += 1;
                if self.timer_ns.is_some() {
                    let when = self.reqsk_timeout_us();
                    self.timer_ns = Some(jiffy_deadline_ns(now_ns, when, &self.clock));
                }
                Some((self.synack(now_ns), true))
            }
            ReqState::Established => None,
        }
    }

    /// `reqsk_timer_handler`, when the timer is due at `now_ns`.
    pub fn on_timer(&mut self, now_ns: u64) -> Option<SynAckTimeout> {
        if self.state != ReqState::SynRecv || self.timer_ns.is_none_or(|t| t > now_ns) {
            return None;
        }
        // syn_ack_recalc without TCP_DEFER_ACCEPT.
        if self.num_timeout >= SYNACK_RETRIES {
            self.state = ReqState::Listen;
            self.timer_ns = None;
            return Some(SynAckTimeout::Expired);
        }
        // tcp_rtx_synack, then num_timeout++ and the timer at reqsk_timeout.
        self.num_retrans += 1;
        let seg = self.synack(now_ns);
        self.num_timeout += 1;
        let when = self.reqsk_timeout_us();
        self.timer_ns = Some(jiffy_deadline_ns(now_ns, when, &self.clock));
        Some(SynAckTimeout::Resent(seg, self.num_retrans))
    }

    /// The ACK, or a data segment, arrives: the child socket is created (`tcp_check_req`).
    /// Returns whether this established it. After the request expired we diverge: it
    /// establishes the receiver too (Linux answers a reset).
    pub fn on_ack_or_data(&mut self) -> bool {
        if self.state == ReqState::Established {
            return false;
        }
        self.state = ReqState::Established;
        self.timer_ns = None;
        true
    }
}

impl Sender {
    /// The connection is established (`tcp_rcv_synsent_state_process`): the SYN's RTT sample
    /// (`tcp_ack_update_rtt`, from `tcp_ack` with `FLAG_SYN_ACKED`), `ts_recent` from the
    /// SYN-ACK, then `tcp_init_transfer`: `tcp_init_metrics` (ssthresh back to infinity; with no
    /// RTT sample the 3 s `TCP_TIMEOUT_FALLBACK` RTO, rttvar, mdev and mdev_max), the initial
    /// window (1 after more than one SYN retransmission not proved spurious) and congestion
    /// control's `init`.
    pub fn init_transfer(&mut self, now_ns: u64, o: &Opened) {
        self.set_now(now_ns);
        self.ack_update_rtt(true, o.seq_rtt_us, -1, o.seq_rtt_us, o.tsecr);
        if o.tsecr.is_some() {
            self.ts_recent = o.tsval;
        }
        let tp = &mut self.tp;
        tp.snd_ssthresh = TCP_INFINITE_SSTHRESH;
        if tp.srtt_us == 0 {
            tp.rttvar_us = TIMEOUT_FALLBACK_US as u32;
            tp.mdev_us = tp.rttvar_us;
            tp.mdev_max_us = tp.rttvar_us;
            tp.icsk_rto_us = TIMEOUT_FALLBACK_US as u32;
        }
        tp.snd_cwnd = if o.total_retrans > 1 && o.undo_marker {
            1
        } else {
            self.cfg.initial_cwnd_pkts.min(tp.snd_cwnd_clamp)
        };
        debug_assert_eq!(tp.ca_state, CaState::Open);
        self.cc.init(&mut self.tp);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn wire_sizes_are_linuxs() {
        assert_eq!(syn_wire_bytes(true, true), 60);
        assert_eq!(syn_wire_bytes(false, true), 60);
        assert_eq!(syn_wire_bytes(true, false), 52);
        assert_eq!(syn_wire_bytes(false, false), 48);
        assert_eq!(ack_wire_bytes(true), 52);
        assert_eq!(ack_wire_bytes(false), 40);
    }

    #[test]
    fn syns_go_out_linear_then_doubling_and_give_up_at_131_s() {
        let mut c = Connector::new(true, KernelClock::exact(1000), 1_000_000, 120_000_000);
        c.connect(0);
        let mut sent_s = vec![];
        while let Some(t) = c.timer_ns {
            match c.on_timer(t) {
                Some(SynTimeout::Resent(_)) => sent_s.push(t / 1_000_000_000),
                Some(SynTimeout::GaveUp) => {
                    assert_eq!(t, 131_000_000_000);
                    break;
                }
                None => unreachable!(),
            }
        }
        // ip-sysctl.rst, tcp_syn_retries: 6 retries with 4 linear timeouts, the last at 67 s.
        assert_eq!(sent_s, [1, 2, 3, 4, 5, 7, 11, 19, 35, 67]);
        assert_eq!(c.state, ConnState::Failed);
    }

    #[test]
    fn karn_and_the_timestamp_sample() {
        // Not retransmitted: the SYN's timing.
        let mut c = Connector::new(true, KernelClock::exact(1000), 1_000_000, 120_000_000);
        let syn = c.connect(5 * MS);
        let synack = HsSeg {
            kind: HsKind::SynAck,
            tsval: 7,
            tsecr: syn.tsval,
        };
        let (o, ack) = c.on_synack(45 * MS, &synack);
        let o = o.unwrap();
        assert_eq!(o.seq_rtt_us, 40_000);
        assert_eq!(ack.unwrap().tsecr, 7);
        // Retransmitted: no timing sample; the echo of the second SYN still gives one.
        let mut c = Connector::new(true, KernelClock::exact(1000), 1_000_000, 120_000_000);
        c.connect(0);
        let Some(SynTimeout::Resent(syn2)) = c.on_timer(1000 * MS) else {
            panic!()
        };
        let synack = HsSeg {
            kind: HsKind::SynAck,
            tsval: 9,
            tsecr: syn2.tsval,
        };
        let (o, _) = c.on_synack(1040 * MS, &synack);
        let o = o.unwrap();
        assert_eq!(
            (o.seq_rtt_us, o.tsecr, o.total_retrans),
            (-1, Some(1001), 1)
        );
        assert!(o.undo_marker);
    }

    #[test]
    fn an_echo_of_the_first_syn_proves_the_timeout_spurious() {
        let mut c = Connector::new(true, KernelClock::exact(1000), 1_000_000, 120_000_000);
        let syn = c.connect(0);
        c.on_timer(1000 * MS);
        let synack = HsSeg {
            kind: HsKind::SynAck,
            tsval: 3,
            tsecr: syn.tsval,
        };
        let (o, _) = c.on_synack(1200 * MS, &synack);
        assert!(!o.unwrap().undo_marker);
        // Established: a second SYN-ACK draws one challenge ACK per 500 ms.
        assert!(c.on_synack(1300 * MS, &synack).1.is_some());
        assert!(c.on_synack(1400 * MS, &synack).1.is_none());
        assert!(c.on_synack(1800 * MS, &synack).1.is_some());
    }

    #[test]
    fn synacks_are_resent_at_1_3_7_15_31_s_and_the_request_expires_at_63_s() {
        let mut l = Listener::new(true, KernelClock::exact(1000), 1_000_000);
        let syn = HsSeg {
            kind: HsKind::Syn,
            tsval: 1,
            tsecr: 0,
        };
        assert!(matches!(l.on_syn(0, &syn), Some((_, false))));
        let mut sent_s = vec![];
        while let Some(t) = l.timer_ns {
            match l.on_timer(t) {
                Some(SynAckTimeout::Resent(s, _)) => {
                    assert_eq!(s.tsecr, 1);
                    sent_s.push(t / 1_000_000_000)
                }
                Some(SynAckTimeout::Expired) => {
                    assert_eq!(t, 63_000_000_000);
                    break;
                }
                None => unreachable!(),
            }
        }
        assert_eq!(sent_s, [1, 3, 7, 15, 31]);
        assert_eq!(l.state, ReqState::Listen);
    }

    #[test]
    fn a_retransmitted_syn_draws_a_synack_at_once_and_the_ack_establishes() {
        let mut l = Listener::new(false, KernelClock::exact(1000), 1_000_000);
        let syn = HsSeg {
            kind: HsKind::Syn,
            tsval: 0,
            tsecr: 0,
        };
        l.on_syn(0, &syn);
        let (s, retrans) = l.on_syn(1000 * MS, &syn).unwrap();
        assert!(retrans && s.kind == HsKind::SynAck);
        // A third within 500 ms is rate-limited.
        assert!(l.on_syn(1200 * MS, &syn).is_none());
        assert!(l.on_ack_or_data());
        assert!(!l.on_ack_or_data());
        assert_eq!((l.state, l.timer_ns), (ReqState::Established, None));
    }

    #[test]
    fn model_timeout_is_linuxs() {
        // tcp_model_timeout(6, 1 s) = 127 s; with a 4 s base the 120 s cap enters.
        assert_eq!(model_timeout_us(6, 1_000_000), 127_000_000);
        assert_eq!(model_timeout_us(6, 4_000_000), 124_000_000 + 240_000_000);
    }
}
