//! The TCP sender: Linux 6.18's send path and ACK processing (`net/ipv4/tcp_output.c`
//! `tcp_write_xmit`, `tcp_cwnd_validate`; `net/ipv4/tcp_input.c` `tcp_ack`,
//! `tcp_clean_rtx_queue`, `tcp_sacktag_write_queue`, `tcp_cong_control`; `net/ipv4/tcp_timer.c`
//! `tcp_retransmit_timer`). Loss recovery (PRR, F-RTO) is in `recovery.rs`, the SACK
//! scoreboard in `sack.rs`, RACK in `rack.rs`, undo in `undo.rs`.
//!
//! Delivery-rate sampling follows `net/ipv4/tcp_rate.c` (`tcp_rate_skb_sent`,
//! `tcp_rate_skb_delivered`, `tcp_rate_gen`, `tcp_rate_check_app_limited`) and internal pacing
//! follows the EDT model of `tcp_output.c` (`tcp_pacing_check`, `tcp_update_skb_after_send`,
//! the per-socket pacing hrtimer and `tcp_tsq_write`), which is what Linux does when a
//! congestion control asks for pacing (`SK_PACING_NEEDED`, BBR) and no fq qdisc is present, as on
//! this machine. `tcp_update_pacing_rate` sets `sk_pacing_rate` for every other algorithm (it is
//! visible in TCP_INFO and in CUBIC's HyStart) but does not pace them, as without fq.
//!
//! ECN (RFC 3168, and google/bbr's precise `ecn_low` echo) is in `ecn.rs`.
//!
//! The application and the socket send buffer it writes into are in `sndbuf.rs`.
//!
//! Not modelled (we diverge): TSO/GSO (one MSS per skb), Nagle and corking (segments are whole
//! MSS but the last), cwnd restart after idle, AccECN, path MTU discovery, SACK reneging. (TCP
//! Small Queues and the device below are in `tsq.rs`.) The handshake is in
//! `handshake.rs` (`Sender::init_transfer`); a flow without one starts established with the
//! initial window after one RTT sample of the idle path (`Sender::syn_rtt_sample`).
//! `FLAG_ACK_MAYBE_DELAYED` (a lone runt packet's delayed ACK) is never set.

use crate::cc::{ack_flags, AckSample, CaEvent, CaState, CongestionControl, RateSample};
use crate::tcp::minmax::MinMax;
use crate::tcp::receiver::ts_older;
use crate::tcp::segment::{AckSeg, DataSeg};
use crate::tcp::skb::{RtxQueue, Skb, EVER_RETRANS, LOST, SACKED_ACKED, SACKED_RETRANS};
use crate::tcp::sock::TcpSock;

/// `FLAG_*` bits of `tcp_ack` (net/ipv4/tcp_input.c).
pub mod flag {
    pub const DATA: u32 = 0x01;
    pub const WIN_UPDATE: u32 = 0x02;
    pub const DATA_ACKED: u32 = 0x04;
    pub const RETRANS_DATA_ACKED: u32 = 0x08;
    pub const SYN_ACKED: u32 = 0x10;
    pub const DATA_SACKED: u32 = 0x20;
    pub const ECE: u32 = 0x40;
    pub const LOST_RETRANS: u32 = 0x80;
    pub const SLOWPATH: u32 = 0x100;
    pub const ORIG_SACK_ACKED: u32 = 0x200;
    pub const SND_UNA_ADVANCED: u32 = 0x400;
    pub const DSACKING_ACK: u32 = 0x800;
    pub const SET_XMIT_TIMER: u32 = 0x1000;
    pub const ACK_MAYBE_DELAYED: u32 = 0x10000;
    /// A D-SACK for the tail loss probe's retransmission (`FLAG_DSACK_TLP`).
    pub const DSACK_TLP: u32 = 0x20000;
    pub const ACKED: u32 = DATA_ACKED | SYN_ACKED;
    pub const NOT_DUP: u32 = DATA | WIN_UPDATE | ACKED;
    pub const CA_ALERT: u32 = DATA_SACKED | ECE | DSACKING_ACK;
    pub const FORWARD_PROGRESS: u32 = ACKED | DATA_SACKED;
}

/// What `tcp_xmit_recovery` should send after an ACK (`REXMIT_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rexmit {
    None,
    Lost,
    New,
}

/// Which timer owns the single retransmission timer slot (`icsk_pending`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XmitTimer {
    /// `ICSK_TIME_RETRANS`.
    Retrans,
    /// `ICSK_TIME_REO_TIMEOUT` (RACK reordering timer).
    ReoTimeout,
    /// `ICSK_TIME_LOSS_PROBE` (tail loss probe, RFC 8985 section 7).
    LossProbe,
}

/// Kinds of events the sender reports (the events table's `kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SenderEvent {
    Rto,
    FastRetransmit,
    RecoveryEnd,
    /// A window reduction was undone; the detail names the detector and the kernel function
    /// (`detector=frto|eifel|dsack|no_retrans via=loss|recovery|dsack|partial state=...`).
    Undo,
    LossProbe,
    /// An ECE ACK started a window reduction (`tcp_enter_cwr`).
    Cwr,
    /// A response other than Linux's set cwnd and ssthresh after a detected spurious timeout
    /// (`sto.rs`; detail `response=<eifel|rfc2861> cwnd=<n> ssthresh=<n> in_flight=<n>
    /// acked_pkts=<n>`).
    StoResponse,
    /// The interface queue refused a segment (`NET_XMIT_DROP`; `tcp_enter_cwr`, resent later).
    LocalDrop,
}

impl SenderEvent {
    /// The name used in traces.
    pub fn name(self) -> &'static str {
        match self {
            SenderEvent::Rto => "rto",
            SenderEvent::FastRetransmit => "fast_retransmit",
            SenderEvent::RecoveryEnd => "recovery_end",
            SenderEvent::Undo => "undo",
            SenderEvent::LossProbe => "tlp",
            SenderEvent::Cwr => "cwr",
            SenderEvent::StoResponse => "sto_response",
            SenderEvent::LocalDrop => "local_drop",
        }
    }
}

/// Static settings of one sender.
#[derive(Debug, Clone)]
pub struct SenderConfig {
    pub mss_bytes: u32,
    pub initial_cwnd_pkts: u32,
    /// `snd_cwnd_clamp`.
    pub max_cwnd_pkts: u32,
    pub sack: bool,
    pub timestamps: bool,
    /// `tcp_frto` (F-RTO, RFC 5682, Linux's SACK-enhanced variant).
    pub frto: bool,
    /// Tail loss probes (`tcp_early_retrans` = 3, Linux's default; needs SACK).
    pub tlp: bool,
    pub rto_min_us: u64,
    pub rto_initial_us: u64,
    pub rto_max_us: u64,
    /// How rto_min acts (`rtt.rs`).
    pub rto_min_mode: crate::tcp::rtt::RtoMinMode,
    /// The gains of RFC 6298's estimator (`rtt.rs`).
    pub rtt_gains: crate::tcp::rtt::RttGains,
    /// Timestamp-based detection (RFC 3522: `tcp_packet_delayed`'s TSecr test).
    pub eifel_detection: bool,
    /// D-SACK-based detection (RFC 3708: D-SACKs count down `undo_retrans`).
    pub dsack_undo: bool,
    /// The response to a detected spurious timeout (`sto.rs`).
    pub sto_response: crate::tcp::sto::StoResponse,
    /// Bytes the application sends; `u64::MAX` for bulk.
    pub size_bytes: u64,
    /// The kernel's tick clock and timer wheel (`clock.rs`).
    pub clock: super::clock::KernelClock,
    /// ECN (negotiated when the flow asks for it; `ecn.rs`).
    pub ecn: crate::tcp::ecn::EcnMode,
    /// The sending host's stack below TCP (`tsq.rs`).
    pub stack: cclab_net::host::HostStack,
    /// What one step of cwnd growth counts (`flows[].ack_counting`).
    pub ack_counting: AckCounting,
    /// How the application writes into the send buffer (`flows[].writer`, `sndbuf.rs`).
    pub writer: super::sndbuf::Writer,
}

/// What `tcp_slow_start` and `tcp_cong_avoid_ai` count per ACK.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AckCounting {
    /// The segments the ACK delivers (Linux 3.18 on, 6.18 included: `tcp_cong_control` passes
    /// `acked_sacked`, so a stretch ACK grows cwnd as the ACKs it stands for would).
    #[default]
    Segments,
    /// One step per ACK, whatever it delivers (Linux before 3.18, the 3.4 kernels of the S1
    /// paper's phones: `tcp_slow_start(tp)` and `tcp_cong_avoid_ai(tp, w)` took no count), so a
    /// lost or delayed ACK slows growth.
    Acks,
}

/// Counters reported in the summary.
#[derive(Debug, Clone, Default)]
pub struct SenderStats {
    pub sent_pkts: u64,
    pub retrans_pkts: u64,
    pub rto_count: u64,
    pub fast_retransmit_count: u64,
    /// Timeouts F-RTO proved spurious (Linux's `TCPSpuriousRTOs`: `tcp_try_undo_loss` with
    /// `frto_undo`); a timeout undone by timestamps or D-SACKs is not counted here.
    pub spurious_rto_count: u64,
    /// Window reductions undone, by any detector (TCPLossUndo + TCPFullUndo + TCPDSACKUndo +
    /// TCPPartialUndo); each is an `undo` event naming its detector.
    pub undo_count: u64,
    pub tlp_count: u64,
    /// Window reductions by `tcp_enter_cwr` from Open/Disorder (an ECE ACK or a local drop).
    pub cwr_count: u64,
}

/// RACK state (`tp->rack`).
#[derive(Debug, Clone, Default)]
pub struct Rack {
    /// Send time of the most recently sent (S)ACKed segment, us (0 = none).
    pub mstamp_us: u64,
    /// RTT of that segment, us.
    pub rtt_us: u32,
    /// Its end_seq.
    pub end_seq: u64,
    /// Whether `mstamp` advanced since the last loss scan.
    pub advanced: bool,
    /// reo_wnd in steps of min_rtt/4.
    pub reo_wnd_steps: u32,
    /// Recoveries left before reo_wnd_steps resets.
    pub reo_wnd_persist: u32,
    /// A D-SACK that may come from reordering was seen since the last reo_wnd update.
    pub dsack_seen: bool,
    /// `tp->delivered` at the last reo_wnd change.
    pub last_delivered: u32,
}

/// One TCP sender.
pub struct Sender {
    pub tp: TcpSock,
    pub cc: Box<dyn CongestionControl>,
    pub cfg: SenderConfig,
    pub(crate) rtx: RtxQueue,
    /// Peer's advertised window, bytes (`snd_wnd`).
    pub(crate) snd_wnd: u64,
    /// The largest window the peer has offered (`tp->max_window`; u64::MAX before its first).
    pub(crate) max_window: u64,
    pub(crate) rtt_seq: u64,
    pub(crate) rtt_min: MinMax,
    /// The xmit timer (`icsk_pending`, `icsk_timeout`), deadline in ns.
    pub(crate) xmit_timer: Option<(XmitTimer, u64)>,
    pub(crate) icsk_backoff: u32,
    /// `icsk_retransmits`: RTOs since snd_una last advanced.
    pub(crate) icsk_retransmits: u32,
    /// `undo_marker`: snd_una when the reduction we may undo started.
    pub(crate) undo_marker: Option<u64>,
    pub(crate) undo_retrans: i32,
    /// `retrans_stamp`: TSval of the first retransmission of this episode (0 = none).
    pub(crate) retrans_stamp: u32,
    pub(crate) prr_delivered: u32,
    pub(crate) prr_out: u32,
    pub(crate) frto: bool,
    /// snd_nxt when a tail loss probe was sent, until it is resolved (`tlp_high_seq`).
    pub(crate) tlp_high_seq: Option<u64>,
    /// Whether that probe was a retransmission (`tlp_retrans`).
    pub(crate) tlp_retrans: bool,
    pub(crate) reordering: u32,
    /// A window range set from outside (the S1 middleware): (lower, upper) packets, applied
    /// where the kernel wrapper `cclab_cubic_mw` stores cwnd (docs/design.md, "Middleware").
    pub(crate) cwnd_range: Option<(u32, u32)>,
    pub(crate) reord_seen: u32,
    /// Segments reported duplicated by D-SACKs so far (`dsack_dups`).
    pub(crate) dsack_dups: u32,
    pub(crate) rack: Rack,
    pub(crate) cwnd_usage_seq: u64,
    pub(crate) highest_sack_end: u64,
    /// Latest TSval from the receiver (`ts_recent`), echoed in TSecr.
    pub(crate) ts_recent: u32,
    /// TSecr of the ACK being processed (`rx_opt.rcv_tsecr` when `saw_tstamp`).
    pub(crate) rcv_tsecr: Option<u32>,
    /// The pacing hrtimer's expiry, ns (`tp->pacing_timer`), when armed.
    pub(crate) pacing_timer_ns: Option<u64>,
    pub(crate) now_ns: u64,
    pub stats: SenderStats,
    /// The stack below the socket: TSQ and the interface queue (`tsq.rs`).
    pub below: super::tsq::BelowTcp,
    /// Events since the world last drained them: (time ns, kind, detail).
    pub events: Vec<(u64, SenderEvent, String)>,
    /// The timeouts and their detection (`sto.rs`).
    pub sto: super::sto::StoState,
    /// `write_seq`: the bytes the application has written so far (all of `size_bytes` from
    /// the start without a send buffer).
    pub(crate) write_seq: u64,
    /// The socket send buffer (`sndbuf.rs`); None: the application wrote everything at once.
    pub(crate) sndbuf: Option<super::sndbuf::SendBuffer>,
    /// `snd_cwnd_used`: the most packets out while not cwnd-limited (RFC 2861).
    pub(crate) snd_cwnd_used: u32,
}

impl Sender {
    /// A sender in the established state with cwnd = initial window (`tcp_init_sock`).
    pub fn new(cfg: SenderConfig, mut cc: Box<dyn CongestionControl>) -> Self {
        let mut tp = TcpSock::new(
            cfg.mss_bytes,
            cfg.initial_cwnd_pkts,
            cfg.max_cwnd_pkts,
            cfg.clock,
        );
        tp.icsk_rto_us = cfg.rto_initial_us.min(u32::MAX as u64) as u32;
        tp.pacing_shift = cfg.stack.pacing_shift;
        // ECN counts as negotiated (the SYN and SYN-ACK carry no ECN flags here).
        tp.ecn_flags = cfg.ecn.initial_flags();
        cc.init(&mut tp);
        // The MSS before options that TCP_MAXSEG sets (the kernel backend's user_mss).
        let mss_clamp = cfg.mss_bytes + if cfg.timestamps { 12 } else { 0 };
        let sndbuf = (cfg.stack.sndbuf == cclab_net::host::SndbufMode::Linux)
            .then(|| super::sndbuf::SendBuffer::new(&cfg.stack, mss_clamp, cc.sndbuf_expand()));
        Sender {
            tp,
            cc,
            rtx: RtxQueue::new(cfg.mss_bytes),
            snd_wnd: u64::MAX,
            max_window: u64::MAX,
            rtt_seq: 0,
            // tcp_init_sock: minmax_reset(&tp->rtt_min, tcp_jiffies32, ~0U).
            rtt_min: {
                let mut m = MinMax::default();
                m.reset(0, u32::MAX);
                m
            },
            xmit_timer: None,
            icsk_backoff: 0,
            icsk_retransmits: 0,
            undo_marker: None,
            undo_retrans: 0,
            retrans_stamp: 0,
            prr_delivered: 0,
            prr_out: 0,
            frto: false,
            tlp_high_seq: None,
            tlp_retrans: false,
            reordering: 3,
            cwnd_range: None,
            reord_seen: 0,
            dsack_dups: 0,
            rack: Rack {
                reo_wnd_steps: 1,
                ..Rack::default()
            },
            cwnd_usage_seq: 0,
            highest_sack_end: 0,
            ts_recent: 0,
            rcv_tsecr: None,
            pacing_timer_ns: None,
            now_ns: 0,
            stats: SenderStats::default(),
            below: super::tsq::BelowTcp::new(cfg.stack),
            events: Vec::new(),
            sto: Default::default(),
            write_seq: if sndbuf.is_some() { 0 } else { cfg.size_bytes },
            sndbuf,
            snd_cwnd_used: 0,
            cfg,
        }
    }

    /// No send buffer: a Multipath TCP subflow sends what its connection maps to it
    /// ([`Sender::set_write_limit`]).
    pub fn without_send_buffer(mut self) -> Self {
        self.sndbuf = None;
        self.write_seq = self.cfg.size_bytes;
        self
    }

    /// The data this sender may send ends at `seq` (a Multipath TCP subflow's mapping).
    pub fn set_write_limit(&mut self, seq: u64) {
        self.cfg.size_bytes = seq;
        self.write_seq = seq;
    }

    /// Deadline of the earliest pending timer (xmit timer or pacing timer), ns.
    pub fn timer_deadline_ns(&self) -> Option<u64> {
        match (self.xmit_timer.map(|(_, t)| t), self.pacing_timer_ns) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Whether SACK is in use (`tcp_is_sack`); otherwise NewReno (`tcp_is_reno`).
    pub(crate) fn is_sack(&self) -> bool {
        self.cfg.sack
    }

    /// Sender timestamp clock (ms, Linux's `tcp_time_stamp_ts`), offset by 1 so it is never 0.
    pub(crate) fn ts_now(&self) -> u32 {
        (self.now_ns / 1_000_000) as u32 + 1
    }

    pub(crate) fn set_now(&mut self, now_ns: u64) {
        debug_assert!(now_ns >= self.now_ns, "time went backwards");
        self.now_ns = now_ns;
        // Linux's tcp_clock_us() is never 0, and 0 means "none" in skb and rate stamps, so the
        // microsecond clock starts at 1.
        self.tp.tcp_mstamp_us = now_ns / 1000 + 1;
        self.tp.tcp_clock_cache_ns = now_ns;
        self.tp.tcp_time_stamp_ms = self.ts_now();
    }

    pub(crate) fn event(&mut self, kind: SenderEvent, detail: String) {
        self.events.push((self.now_ns, kind, detail));
    }

    /// `tcp_set_ca_state`: tell CC, then switch.
    pub(crate) fn set_ca_state(&mut self, state: CaState) {
        self.cc.set_state(&mut self.tp, state);
        self.tp.ca_state = state;
    }

    /// `tcp_in_cwnd_reduction`: in CWR or Recovery.
    pub(crate) fn in_cwnd_reduction(&self) -> bool {
        matches!(self.tp.ca_state, CaState::Cwr | CaState::Recovery)
    }

    /// `tcp_left_out`.
    pub(crate) fn left_out(&self) -> u32 {
        self.tp.sacked_out + self.tp.lost_out
    }

    /// `tcp_any_retrans_done`.
    pub(crate) fn any_retrans_done(&self) -> bool {
        self.tp.retrans_out > 0
            || self
                .rtx
                .head()
                .is_some_and(|h| h.sacked & EVER_RETRANS != 0)
    }

    /// `inet_csk_reset_xmit_timer(sk, what, when)`: `sk_reset_timer` for `jiffies + when`, run
    /// when the timer wheel reaches the expiry's bucket (`clock.rs`).
    pub(crate) fn reset_xmit_timer(&mut self, what: XmitTimer, when_us: u64) {
        let when = when_us.min(self.cfg.rto_max_us);
        let j = self.us_to_jiffies(when);
        let deadline = self.tp.clock.timer_fire_ns(self.now_ns, j);
        self.xmit_timer = Some((what, deadline));
    }

    /// `tcp_rearm_rto`.
    pub(crate) fn rearm_rto(&mut self) {
        if self.tp.packets_out == 0 {
            self.xmit_timer = None;
            return;
        }
        let mut rto = self.tp.icsk_rto_us as u64;
        if matches!(
            self.xmit_timer,
            Some((XmitTimer::ReoTimeout | XmitTimer::LossProbe, _))
        ) {
            // Offset the time elapsed after installing regular RTO.
            rto = self.rto_delta_us().max(1) as u64;
        }
        self.reset_xmit_timer(XmitTimer::Retrans, rto);
    }

    /// `tcp_rto_delta_us`: how far in the future the RTO measured from the head's send time is.
    pub(crate) fn rto_delta_us(&self) -> i64 {
        let head = self
            .rtx
            .head()
            .map(|h| h.xmit_us)
            .unwrap_or(self.tp.tcp_mstamp_us);
        head as i64 + self.tp.icsk_rto_us as i64 - self.tp.tcp_mstamp_us as i64
    }

    /// The application starts (`start_s`): with a send buffer it is sized for the established
    /// connection and the application writes (`sndbuf.rs`); without one, its one `sendmsg`
    /// checks for an app-limited bubble (`tcp_rate_check_app_limited` in
    /// `tcp_sendmsg_locked`). Then the initial window goes out.
    pub fn on_start(&mut self, now_ns: u64, out: &mut Vec<DataSeg>) {
        self.set_now(now_ns);
        if self.sndbuf.is_some() {
            self.init_send_buffer();
            self.run_writer(out);
        } else {
            self.rate_check_app_limited(0);
            self.write_xmit(out);
        }
    }

    /// The handshake's RTT sample, taken before the data starts: Linux measures the SYN/SYN-ACK
    /// exchange (`tcp_ack_update_rtt` via `tcp_synack_rtt_meas` / the SYN's clean_rtx) before
    /// `tcp_init_transfer` initialises congestion control, so BBR's first pacing rate and every
    /// algorithm's first RTO come from it. For a flow without a handshake (`handshake = false`,
    /// Multipath TCP) the world passes the idle path's round-trip time instead, and we re-run
    /// `init` as `tcp_init_transfer` does.
    pub fn syn_rtt_sample(&mut self, now_ns: u64, rtt_us: u64) {
        self.set_now(now_ns);
        let rtt = rtt_us.max(1) as i64;
        self.update_rtt_min(rtt);
        self.rtt_estimator(rtt);
        self.set_rto();
        self.cc.init(&mut self.tp);
    }

    /// `tcp_rate_check_app_limited`: mark the flow application-limited when it has less than a
    /// segment left to send, nothing queued, cwnd room and no lost segment left to resend.
    /// `unsent_bytes` is `write_seq - snd_nxt`.
    pub(crate) fn rate_check_app_limited(&mut self, unsent_bytes: u64) {
        let below = self.below.wmem_bytes;
        let tp = &mut self.tp;
        if unsent_bytes < tp.mss_cache as u64
            // Nothing in the host's qdisc or NIC: sk_wmem_alloc < SKB_TRUESIZE(1).
            && below < super::tsq::SKB_TRUESIZE_1_BYTES
            && tp.packets_in_flight() < tp.snd_cwnd
            && tp.lost_out <= tp.retrans_out
        {
            let v = tp.delivered.wrapping_add(tp.packets_in_flight());
            tp.app_limited = if v == 0 { 1 } else { v };
        }
    }

    /// `tcp_pacing_check`: with internal pacing, hold transmissions until the earliest
    /// departure time and arm the pacing timer for it.
    pub(crate) fn pacing_check(&mut self) -> bool {
        if !self.tp.pacing_needed || self.tp.tcp_wstamp_ns <= self.tp.tcp_clock_cache_ns {
            return false;
        }
        if self.pacing_timer_ns.is_none() {
            self.pacing_timer_ns = Some(self.tp.tcp_wstamp_ns);
        }
        true
    }

    /// `tcp_update_skb_after_send`: advance the earliest departure time by the segment's
    /// serialisation time at the pacing rate, less up to half of it as credit for a late send.
    fn update_skb_after_send(&mut self, len_bytes: u64, prior_wstamp_ns: u64) {
        let tp = &mut self.tp;
        if !tp.pacing_needed {
            return;
        }
        let rate = tp.pacing_rate_bytes_per_s;
        // Original sch_fq does not pace the first 10 MSS.
        if rate != u64::MAX && rate != 0 && tp.data_segs_out >= 10 {
            let mut len_ns = len_bytes * 1_000_000_000 / rate;
            let credit = tp.tcp_wstamp_ns - prior_wstamp_ns;
            len_ns -= (len_ns / 2).min(credit);
            tp.tcp_wstamp_ns += len_ns;
        }
    }

    /// `tcp_update_pacing_rate`: 200 % of cwnd * mss / srtt in slow start (below ssthresh / 2),
    /// 120 % otherwise (`tcp_pacing_ss_ratio`, `tcp_pacing_ca_ratio` defaults).
    pub(crate) fn update_pacing_rate(&mut self) {
        self.tp.pacing_rate_bytes_per_s = self.pacing_rate_now();
    }

    /// What [`Sender::update_pacing_rate`] would set now, bytes/s.
    pub(crate) fn pacing_rate_now(&self) -> u64 {
        let tp = &self.tp;
        let mut rate = tp.mss_cache as u64 * ((1_000_000 / 100) << 3);
        rate *= if tp.snd_cwnd < tp.snd_ssthresh / 2 {
            200
        } else {
            120
        };
        rate *= tp.snd_cwnd.max(tp.packets_out) as u64;
        if tp.srtt_us != 0 {
            rate /= tp.srtt_us as u64;
        }
        rate.min(tp.max_pacing_rate_bytes_per_s)
    }

    /// Send a segment (new or retransmission) and stamp it (`tcp_transmit_skb` +
    /// `tcp_rate_skb_sent`); a retransmission is its own skb and advances the pacing clock.
    fn transmit(&mut self, idx: usize, retrans: bool, out: &mut Vec<DataSeg>) {
        let (prior_wstamp_ns, len) = self.transmit_seg(idx, retrans, true, out);
        self.update_skb_after_send(len, prior_wstamp_ns);
    }

    /// Put one segment on the wire; returns the EDT before it and its length. The caller
    /// advances the pacing clock per skb (`tcp_update_skb_after_send`).
    /// `skb_start`: it begins an skb (the skb's truesize overhead is charged with it).
    fn transmit_seg(
        &mut self,
        idx: usize,
        retrans: bool,
        skb_start: bool,
        out: &mut Vec<DataSeg>,
    ) -> (u64, u64) {
        // __tcp_transmit_skb: the skb leaves at the earliest departure time (EDT), never before
        // now; with internal pacing tcp_pacing_check made sure that time has come.
        let prior_wstamp_ns = self.tp.tcp_wstamp_ns;
        self.tp.tcp_wstamp_ns = prior_wstamp_ns.max(self.tp.tcp_clock_cache_ns);
        // tcp_event_data_sent: TX_START sees the previous lsndtime, then it moves to now.
        if self.tp.packets_in_flight() == 0 {
            self.cc.cwnd_event(&mut self.tp, CaEvent::TxStart);
        }
        self.tp.lsndtime = self.tp.jiffies();
        self.tp.data_segs_out = self.tp.data_segs_out.wrapping_add(1);
        // tcp_rate_skb_sent: start a fresh sampling interval when nothing is in flight.
        if self.tp.packets_out == 0 {
            self.tp.first_tx_mstamp_us = self.tp.tcp_mstamp_us;
            self.tp.delivered_mstamp_us = self.tp.tcp_mstamp_us;
        }
        let now_us = self.tp.tcp_mstamp_us;
        let tsval = if self.cfg.timestamps {
            self.ts_now()
        } else {
            0
        };
        let (delivered, dmst, ftx, app) = (
            self.tp.delivered,
            self.tp.delivered_mstamp_us,
            self.tp.first_tx_mstamp_us,
            self.tp.app_limited != 0,
        );
        // google/bbr v2alpha/v3 `tcp_set_tx_in_flight`: inflight including this skb, taken
        // before packets_out / retrans_out count it; and `tx.lost` = tp->lost.
        let (in_flight, lost) = (self.tp.packets_in_flight() + 1, self.tp.lost);
        let delivered_ce = self.tp.delivered_ce;
        let (ecn, cwr) = self.ecn_send(retrans);
        let skb = self.rtx.update(idx, |skb| {
            skb.xmit_us = now_us;
            skb.tsval = tsval;
            skb.tx_delivered = delivered;
            skb.tx_delivered_mstamp_us = dmst;
            skb.tx_first_tx_mstamp_us = ftx;
            skb.tx_is_app_limited = app;
            skb.tx_in_flight = in_flight;
            skb.tx_lost = lost;
            skb.tx_delivered_ce = delivered_ce;
            *skb
        });
        out.push(DataSeg {
            seq: skb.seq,
            len: (skb.end_seq - skb.seq) as u32,
            tsval,
            tsecr: if self.cfg.timestamps {
                self.ts_recent
            } else {
                0
            },
            retrans,
            ecn,
            cwr,
            below_bytes: 0,
            skb_follows: !skb_start,
        });
        let len = skb.end_seq - skb.seq;
        self.stats.sent_pkts += 1;
        let below = self.charge_below(len, skb_start);
        self.hold_below(below, skb_start, out);
        (prior_wstamp_ns, len)
    }

    /// `tcp_write_xmit`: send new data while cwnd and the peer's window allow; then
    /// `tcp_check_space`, which `tcp_event_new_data_sent` runs after each segment and
    /// `tcp_data_snd_check` after the push (`sndbuf.rs`).
    pub(crate) fn write_xmit(&mut self, out: &mut Vec<DataSeg>) -> u32 {
        let prior_in_flight = self.tp.packets_in_flight();
        let sent = self.write_xmit_inner(out, false);
        if self.sndbuf.is_some() {
            let cwnd = self.tp.snd_cwnd;
            let room =
                (sent > 0 && prior_in_flight + 1 < cwnd) || self.tp.packets_in_flight() < cwnd;
            self.check_space(room);
        }
        sent
    }

    /// Whether new data may go out now: the next segment is a whole MSS, or the last of the
    /// application's data (a part-segment waits for the next write, `sndbuf.rs`). Returns its
    /// length.
    pub(crate) fn next_new_len(&self) -> Option<u64> {
        let mss = self.cfg.mss_bytes as u64;
        let unsent = self.write_seq.saturating_sub(self.tp.snd_nxt);
        match unsent {
            0 => None,
            n if n < mss && self.write_seq < self.cfg.size_bytes => None,
            n => Some(n.min(mss)),
        }
    }

    /// `tcp_write_xmit`; with `probe` (the kernel's `push_one == 2`) send one segment whatever
    /// cwnd says and schedule no new probe.
    pub(crate) fn write_xmit_inner(&mut self, out: &mut Vec<DataSeg>, probe: bool) -> u32 {
        let mut sent = 0u32;
        let mut is_cwnd_limited = false;
        // The skb being built (GSO): (EDT before it, bytes, segments it may still take). Its
        // segments leave together; the pacing check and the pacing clock act once per skb.
        let mut skb: Option<(u64, u64, u32)> = None;
        while let Some(len) = self.next_new_len() {
            if probe && sent > 0 {
                break;
            }
            if skb.is_none() && self.pacing_check() {
                break;
            }
            if !probe && self.tp.packets_in_flight() >= self.tp.snd_cwnd {
                break;
            }
            if self.tp.snd_nxt + len > self.tp.snd_una.saturating_add(self.snd_wnd) {
                break; // tcp_snd_wnd_test: receiver-window limited
            }
            if skb.is_none() && !probe {
                // tcp_write_xmit: an skb of more than one segment may wait for a larger one.
                let (defer, cwnd_limited) = self.tso_should_defer(self.tso_segs());
                if defer {
                    is_cwnd_limited |= cwnd_limited;
                    break;
                }
            }
            // The skb about to start: cwnd_quota (tcp_tso_autosize's segments within what
            // cwnd allows), at most what the write queue's head skb holds after `tcp_grow_skb`
            // (`tcp_mss_split_point`, `tso_fragment`).
            let (quota_segs, new_skb_segs) = if skb.is_none() {
                let quota = self.gso_quota_segs();
                (quota, self.gso_segs_now(quota))
            } else {
                (0, 0)
            };
            if skb.is_none() && self.small_queue_check(len * u64::from(new_skb_segs), 0) {
                break;
            }
            let seq = self.tp.snd_nxt;
            if self.device_refuses(seq) {
                break;
            }
            if skb.is_none() {
                self.sndbuf_skb_sent(seq);
                self.sndbuf_grow_head(seq, quota_segs);
            }
            self.rtx.push(Skb {
                seq,
                end_seq: seq + len,
                // As `transmit_seg` stamps it next (so the queue's send-time index places it
                // once).
                xmit_us: self.tp.tcp_mstamp_us,
                tsval: 0,
                sacked: 0,
                tx_delivered: 0,
                tx_delivered_mstamp_us: 0,
                tx_first_tx_mstamp_us: 0,
                tx_is_app_limited: false,
                tx_in_flight: 0,
                tx_lost: 0,
                tx_delivered_ce: 0,
            });
            let idx = self.rtx.len() - 1;
            let (prior_wstamp_ns, len) = self.transmit_seg(idx, false, skb.is_none(), out);
            // tcp_write_xmit sizes each skb once (tcp_tso_segs), when it starts a new one.
            let (prior, bytes, left) = skb.unwrap_or((prior_wstamp_ns, 0, new_skb_segs));
            if left <= 1 {
                self.update_skb_after_send(bytes + len, prior);
                skb = None;
            } else {
                skb = Some((prior, bytes + len, left - 1));
            }
            // tcp_event_new_data_sent
            let prior_packets = self.tp.packets_out;
            self.tp.snd_nxt += len;
            self.tp.packets_out += 1;
            if prior_packets == 0 || matches!(self.xmit_timer, Some((XmitTimer::LossProbe, _))) {
                self.rearm_rto();
            }
            sent += 1;
        }
        if let Some((prior, bytes, _)) = skb {
            self.update_skb_after_send(bytes, prior);
        }
        if sent > 0 {
            self.sndbuf_skb_sent(self.tp.snd_nxt);
        }
        if self.in_cwnd_reduction() {
            self.prr_out += sent;
        }
        is_cwnd_limited |= self.tp.packets_in_flight() >= self.tp.snd_cwnd;
        if sent > 0 || is_cwnd_limited {
            self.cwnd_validate(is_cwnd_limited);
        }
        // Send one loss probe per tail loss episode.
        if sent > 0 && !probe {
            self.schedule_loss_probe(false);
        }
        sent
    }

    /// `tcp_cwnd_validate`: remember whether the last window was cwnd-limited.
    fn cwnd_validate(&mut self, is_cwnd_limited: bool) {
        let tp = &mut self.tp;
        if tp.snd_una >= self.cwnd_usage_seq
            || is_cwnd_limited
            || (!tp.is_cwnd_limited && tp.packets_out > tp.max_packets_out)
        {
            tp.is_cwnd_limited = is_cwnd_limited;
            tp.max_packets_out = tp.packets_out;
            self.cwnd_usage_seq = tp.snd_nxt;
        }
        if tp.is_cwnd_limited() {
            // Network is fed fully.
            self.snd_cwnd_used = 0;
            tp.snd_cwnd_stamp = tp.jiffies();
        } else if let Some(nospace) = self.sndbuf.as_ref().map(|b| b.nospace) {
            // Network starves (RFC 2861; without a send buffer the application always waits on
            // a full socket, and Linux then never reduces).
            self.snd_cwnd_used = self.snd_cwnd_used.max(tp.packets_out);
            let rto_j = self.us_to_jiffies(u64::from(self.tp.icsk_rto_us));
            let idle_j = self.tp.jiffies().wrapping_sub(self.tp.snd_cwnd_stamp) as i32;
            if i64::from(idle_j) >= rto_j as i64 && !self.cc.has_cong_control() {
                self.cwnd_application_limited(nospace);
            }
        }
    }

    /// `tcp_cwnd_application_limited`: a window unused for an RTO shrinks to halfway between
    /// what was used and itself, unless the application waits on a full socket (`SOCK_NOSPACE`).
    fn cwnd_application_limited(&mut self, nospace: bool) {
        let tp = &mut self.tp;
        if tp.ca_state == crate::cc::CaState::Open && !nospace {
            let init_win = self.cfg.initial_cwnd_pkts.min(tp.snd_cwnd_clamp);
            let win_used = self.snd_cwnd_used.max(init_win);
            if win_used < tp.snd_cwnd {
                tp.snd_ssthresh = tp.current_ssthresh();
                tp.snd_cwnd = (tp.snd_cwnd + win_used) >> 1;
            }
            self.snd_cwnd_used = 0;
        }
        tp.snd_cwnd_stamp = tp.jiffies();
    }

    /// `__tcp_retransmit_skb`: resend the segment at `idx` (counted in total_retrans only).
    pub(crate) fn probe_retransmit(&mut self, idx: usize, out: &mut Vec<DataSeg>) {
        self.transmit(idx, true, out);
        self.sto_on_retransmit();
        self.rtx.update(idx, |s| s.sacked |= EVER_RETRANS);
        self.stats.retrans_pkts += 1;
    }

    /// `tcp_retransmit_skb`: a repair retransmission, in flight until acked or lost again.
    pub(crate) fn retransmit_skb(&mut self, idx: usize, out: &mut Vec<DataSeg>) {
        self.probe_retransmit(idx, out);
        self.rtx.update(idx, |s| s.sacked |= SACKED_RETRANS);
        self.tp.retrans_out += 1;
        if self.retrans_stamp == 0 {
            self.retrans_stamp = self.ts_now();
        }
        if self.undo_retrans < 0 {
            self.undo_retrans = 0;
        }
        self.undo_retrans += 1;
    }

    /// `tcp_xmit_retransmit_queue`: retransmit segments marked lost while cwnd allows.
    pub(crate) fn xmit_retransmit_queue(&mut self, out: &mut Vec<DataSeg>) {
        if self.tp.packets_out == 0 {
            return;
        }
        let mut rearm = false;
        let mut i = 0;
        while i < self.rtx.len() {
            if self.pacing_check() {
                break;
            }
            if self.tp.snd_cwnd as i64 - (self.tp.packets_in_flight() as i64) <= 0 {
                break;
            }
            if self.tp.retrans_out >= self.tp.lost_out {
                break;
            }
            // Skip to the next segment it resends (`RtxQueue::next_waiting`; Linux starts from
            // `retransmit_skb_hint`): the checks above would give the same answers on the way
            // (nothing changes in between, and `pacing_check` arms its timer only once).
            let Some(j) = self.rtx.next_waiting(i) else {
                break;
            };
            i = j;
            let (seq, len) = (self.rtx.get(i).seq, self.rtx.get(i).len());
            if self.small_queue_check(len, 1) || self.device_refuses(seq) {
                break;
            }
            self.retransmit_skb(i, out);
            if self.in_cwnd_reduction() {
                self.prr_out += 1;
            }
            if i == 0 && !matches!(self.xmit_timer, Some((XmitTimer::ReoTimeout, _))) {
                rearm = true;
            }
            i += 1;
        }
        if rearm {
            self.reset_xmit_timer(XmitTimer::Retrans, self.tp.icsk_rto_us as u64);
        }
    }

    /// Send what cwnd, the windows and `cfg.size_bytes` allow now (`tcp_push_pending_frames`):
    /// a Multipath TCP connection calls it after raising the subflow's `size_bytes`. Returns
    /// the segments sent.
    pub fn push_pending(&mut self, now_ns: u64, out: &mut Vec<DataSeg>) -> u32 {
        self.set_now(now_ns);
        self.write_xmit(out)
    }

    /// Process an ACK (`tcp_ack`), then send what the window allows (`tcp_data_snd_check`).
    pub fn on_ack(&mut self, now_ns: u64, ack: &AckSeg, out: &mut Vec<DataSeg>) {
        self.set_now(now_ns);
        self.tcp_ack(ack, out);
        self.write_xmit(out);
        self.run_writer(out);
    }

    fn tcp_ack(&mut self, a: &AckSeg, out: &mut Vec<DataSeg>) {
        let prior_snd_una = self.tp.snd_una;
        let ack = a.ack;
        // The options were parsed before tcp_ack (tcp_fast_parse_options).
        self.rcv_tsecr = (self.cfg.timestamps && a.tsecr != 0).then_some(a.tsecr);
        self.tp.rx_saw_tstamp = self.cfg.timestamps;
        self.tp.rx_rcv_tsval = a.tsval;
        self.tp.rx_rcv_tsecr = a.tsecr;
        self.sto.acked_pkts = 0;
        if ack < prior_snd_una {
            // tcp_ack's old_ack: if data was SACKed, tag it and see if we should send more
            // data; if data was D-SACKed, see if we can undo a cwnd reduction. (6.18 does not
            // add this ACK's sack_delivered to tp->delivered on this path.)
            if self.is_sack() && a.n_sack > 0 {
                let mut flag = flag::SLOWPATH;
                let mut rexmit = Rexmit::None;
                self.sacktag(a, prior_snd_una, &mut flag, &mut SackState::default());
                self.fastretrans_alert(prior_snd_una, 0, &mut flag, &mut rexmit);
                self.xmit_recovery(rexmit, out);
            }
            return;
        }
        if ack > self.tp.snd_nxt {
            return; // acks something we never sent
        }
        // tcp_replace_ts_recent (tcp_ack, after the old-ACK check): a pure ACK's seq is always
        // at rcv_wup, so only PAWS's "forward only" (`tcp_paws_check(&tp->rx_opt, 0)`) applies.
        if self.cfg.timestamps && (self.ts_recent == 0 || ts_older(self.ts_recent, a.tsval) <= 0) {
            self.ts_recent = a.tsval;
        }
        let mut flag = 0u32;
        let prior_in_flight = self.tp.packets_in_flight();
        let prior_delivered = self.tp.delivered;
        let prior_lost = self.tp.lost;
        let prior_packets = self.tp.packets_out;
        // tcp_ack: prior_fack, before snd_una moves and this ACK's SACKs are tagged.
        let prior_fack = if self.is_sack() {
            self.highest_sack_seq()
        } else {
            prior_snd_una
        };
        let mut rexmit = Rexmit::None;

        if ack > prior_snd_una {
            flag |= flag::SND_UNA_ADVANCED;
            self.icsk_retransmits = 0;
        }
        // Header prediction (tcp_rcv_established): a pure in-order ACK with the same window
        // and no SACK option takes tcp_ack's fast path.
        // An ECE flag fails the prediction (`pred_flags`), so ECE ACKs take the slow path.
        let fast_path =
            ack > prior_snd_una && a.n_sack == 0 && a.rwnd_bytes == self.snd_wnd && !a.ece;
        // tcp_ack_update_window
        if ack > prior_snd_una || a.rwnd_bytes > self.snd_wnd || self.snd_wnd == u64::MAX {
            flag |= flag::WIN_UPDATE;
        }
        self.snd_wnd = a.rwnd_bytes;
        self.max_window = if self.max_window == u64::MAX {
            a.rwnd_bytes
        } else {
            self.max_window.max(a.rwnd_bytes)
        };

        // tcp_snd_una_update happens before SACK tagging, as in tcp_ack().
        self.tp.snd_una = ack;
        self.sto.acked_pkts = (ack - prior_snd_una).div_ceil(self.cfg.mss_bytes as u64) as u32;
        let mut ss = SackState::default();
        if self.is_sack() && a.n_sack > 0 {
            self.sacktag(a, prior_snd_una, &mut flag, &mut ss);
            // tcp_count_delivered(tp, sack_state.sack_delivered, ..): SACKed and D-SACKed
            // segments.
            self.tp.delivered = self.tp.delivered.wrapping_add(ss.sack_delivered);
        }
        let mut ack_ev = if fast_path {
            ack_flags::CA_ACK_WIN_UPDATE
        } else if flag & flag::WIN_UPDATE != 0 {
            ack_flags::CA_ACK_SLOWPATH | ack_flags::CA_ACK_WIN_UPDATE
        } else {
            ack_flags::CA_ACK_SLOWPATH
        };
        // tcp_ack's slow path: tcp_ecn_rcv_ecn_echo.
        let ece = self.ecn_rcv_ecn_echo(a);
        if ece {
            flag |= flag::ECE;
            ack_ev |= ack_flags::CA_ACK_ECE;
        }

        if prior_packets == 0 {
            // tcp_ack's no_queue: nothing was outstanding. If data was D-SACKed, see if we can
            // undo a cwnd reduction; no rate sample, no congestion control.
            self.cc.in_ack_event(&mut self.tp, ack_ev);
            if ece {
                // The D-SACKed segments counted in tcp_count_delivered.
                let delivered = self.tp.delivered.wrapping_sub(prior_delivered);
                self.tp.delivered_ce = self.tp.delivered_ce.wrapping_add(delivered);
            }
            if flag & flag::DSACKING_ACK != 0 {
                self.fastretrans_alert(prior_snd_una, 0, &mut flag, &mut rexmit);
            }
            if self.tlp_high_seq.is_some() {
                self.process_tlp_ack(ack, flag);
            }
            return;
        }
        let ca_rtt_us = self.clean_rtx_queue(prior_fack, &mut flag, &mut ss);
        // tcp_rack_update_reo_wnd(sk, &rs): the sample's prior_delivered, not tp->delivered.
        self.rack_update_reo_wnd(ss.rate.prior_delivered);
        // tcp_in_ack_event, after the rtx queue is cleaned (6.14+: "tcp: reorganize
        // tcp_in_ack_event() and tcp_count_delivered()"), so pkts_acked comes first.
        self.cc.in_ack_event(&mut self.tp, ack_ev);
        // google/bbr v3 tcp_ack: does this ACK cover a TLP retransmission?
        ss.rate.is_acking_tlp_retrans_seq =
            self.tlp_retrans && self.tlp_high_seq.is_some_and(|h| ack >= h);
        if self.tlp_high_seq.is_some() {
            self.process_tlp_ack(ack, flag);
        }
        if self.ack_is_dubious(flag) {
            let num_dupack =
                (flag & (flag::SND_UNA_ADVANCED | flag::NOT_DUP | flag::DSACKING_ACK) == 0) as u32;
            self.fastretrans_alert(prior_snd_una, num_dupack, &mut flag, &mut rexmit);
        }
        // tcp_set_xmit_timer: a loss probe if one may be scheduled, else the RTO.
        if flag & flag::SET_XMIT_TIMER != 0 && !self.schedule_loss_probe(true) {
            self.rearm_rto();
        }
        let delivered = self.tp.delivered.wrapping_sub(prior_delivered);
        // tcp_count_delivered(.., ece_ack): every segment this ACK delivered (SACKed, acked or
        // counted as a dupack) counts as CE-delivered too. Counted here at once: nothing
        // between sacktag and tcp_rate_gen reads delivered_ce.
        if ece {
            self.tp.delivered_ce = self.tp.delivered_ce.wrapping_add(delivered);
        }
        let lost = self.tp.lost.wrapping_sub(prior_lost);
        let mut rs = ss.rate;
        rs.rtt_us = ca_rtt_us;
        rs.prior_in_flight = prior_in_flight;
        rs.is_ack_delayed = flag & flag::ACK_MAYBE_DELAYED != 0;
        rs.is_ece = ece; // google/bbr v2alpha/v3
        self.rate_gen(delivered, lost, &mut rs);
        self.cong_control(ack, delivered, flag, &rs);
        self.xmit_recovery(rexmit, out);
    }

    /// `tcp_ack_is_dubious`.
    fn ack_is_dubious(&self, flag: u32) -> bool {
        flag & flag::NOT_DUP == 0 || flag & flag::CA_ALERT != 0 || self.tp.ca_state != CaState::Open
    }

    /// `tcp_rate_gen`: close this ACK's delivery-rate sample (no SACK reneging in our model).
    fn rate_gen(&mut self, delivered: u32, lost: u32, rs: &mut RateSample) {
        let tp = &mut self.tp;
        // Clear app limited if bubble is acked and gone.
        if tp.app_limited != 0 && (tp.app_limited.wrapping_sub(tp.delivered) as i32) < 0 {
            tp.app_limited = 0;
        }
        if delivered != 0 {
            tp.delivered_mstamp_us = tp.tcp_mstamp_us;
        }
        rs.acked_sacked = delivered;
        rs.losses = lost as i32;
        // google/bbr v2alpha/v3 tcp_rate_gen: packets lost over the sampled flight.
        rs.lost = tp.lost.wrapping_sub(rs.prior_lost) as i32;
        if rs.prior_mstamp_us == 0 {
            rs.delivered = -1;
            rs.interval_us = -1;
            return;
        }
        rs.delivered = tp.delivered.wrapping_sub(rs.prior_delivered) as i32;
        // google/bbr v2alpha/v3 tcp_rate_gen.
        rs.delivered_ce = tp.delivered_ce.wrapping_sub(rs.prior_delivered_ce) as i32;
        // Sending and ACKing are pipeline phases; use the longer one.
        let snd_us = rs.interval_us;
        let ack_us = TcpSock::stamp_us_delta(tp.tcp_mstamp_us, rs.prior_mstamp_us) as i64;
        rs.interval_us = snd_us.max(ack_us);
        rs.snd_interval_us = snd_us.max(0) as u32;
        rs.rcv_interval_us = ack_us as u32;
        // Normally interval_us >= min_rtt; otherwise the sample is unreliable.
        if rs.interval_us < tp.min_rtt_us as i64 {
            rs.interval_us = -1;
            return;
        }
        // Record the last non-app-limited or the highest app-limited bw (TCP_INFO's rate).
        if !rs.is_app_limited
            || rs.delivered as u64 * tp.rate_interval_us as u64
                >= tp.rate_delivered as u64 * rs.interval_us as u64
        {
            tp.rate_delivered = rs.delivered as u32;
            tp.rate_interval_us = rs.interval_us as u32;
            tp.rate_app_limited = rs.is_app_limited;
        }
    }

    /// `tcp_rate_skb_delivered`: an ACK or SACK delivered the segment at `idx`; the sample takes
    /// the delivery state of the most recently sent delivered segment.
    pub(crate) fn rate_skb_delivered(&mut self, idx: usize, rs: &mut RateSample) {
        let skb = *self.rtx.get(idx);
        if skb.tx_delivered_mstamp_us == 0 {
            return;
        }
        if rs.prior_delivered == 0
            || tcp_skb_sent_after(
                skb.xmit_us,
                self.tp.first_tx_mstamp_us,
                skb.end_seq,
                rs.last_end_seq,
            )
        {
            rs.prior_delivered = skb.tx_delivered;
            rs.prior_mstamp_us = skb.tx_delivered_mstamp_us;
            rs.is_app_limited = skb.tx_is_app_limited;
            rs.is_retrans = skb.sacked & EVER_RETRANS != 0;
            rs.last_end_seq = skb.end_seq;
            // google/bbr v2alpha/v3 tcp_rate_skb_delivered: the skb's send-time inflight and
            // tp->lost, for rs->tx_in_flight and rs->lost.
            rs.tx_in_flight = skb.tx_in_flight;
            rs.prior_lost = skb.tx_lost;
            rs.prior_delivered_ce = skb.tx_delivered_ce;
            // Record send time of most recently ACKed packet, and the send phase's length.
            self.tp.first_tx_mstamp_us = skb.xmit_us;
            rs.interval_us = TcpSock::stamp_us_delta(skb.xmit_us, skb.tx_first_tx_mstamp_us) as i64;
        }
        // A SACKed segment is not used again when it is cumulatively acked.
        if skb.sacked & SACKED_ACKED != 0 {
            self.rtx.update(idx, |s| s.tx_delivered_mstamp_us = 0);
        }
    }

    /// Keep cwnd within the range set by [`Sender::set_cwnd_range`], if any: the upper bound
    /// wins when the two cross, and `snd_cwnd_clamp` caps both (as `cclab_cubic_mw` with
    /// `middleware_cap = "cc"` does on the kernel).
    pub(crate) fn apply_cwnd_range(&mut self) {
        let Some((lo, hi)) = self.cwnd_range else {
            return;
        };
        let hi = hi.min(self.tp.snd_cwnd_clamp).max(1);
        let lo = lo.min(hi);
        let w = self.tp.snd_cwnd.clamp(lo, hi);
        if w != self.tp.snd_cwnd {
            self.tp.set_cwnd(w);
        }
    }

    /// Set (or with None clear) the window range [lower, upper], packets: taken from the next
    /// ACK on, as the kernel's BPF map is. The algorithm runs as before inside it
    /// (`snd_cwnd_clamp` and ssthresh are untouched).
    pub fn set_cwnd_range(&mut self, range: Option<(u32, u32)>) {
        self.cwnd_range = range;
    }

    /// `tcp_cong_control`: the algorithm's own `cong_control` (BBR), or PRR while reducing and
    /// `cong_avoid` otherwise, then `tcp_update_pacing_rate`.
    fn cong_control(&mut self, ack: u64, acked_sacked: u32, flag: u32, rs: &RateSample) {
        if self.cc.has_cong_control() {
            self.cc.cong_control(&mut self.tp, ack, flag, rs);
            self.apply_cwnd_range();
            return;
        }
        if self.in_cwnd_reduction() {
            self.cwnd_reduction(acked_sacked as i32, rs.losses, flag);
        } else if self.may_raise_cwnd(flag) {
            // tcp_cong_avoid
            let acked = match self.cfg.ack_counting {
                AckCounting::Segments => acked_sacked,
                AckCounting::Acks => acked_sacked.min(1),
            };
            self.cc.cong_avoid(&mut self.tp, ack, acked);
            self.tp.snd_cwnd_stamp = self.tp.jiffies();
        }
        self.apply_cwnd_range();
        self.update_pacing_rate();
    }

    /// `tcp_may_raise_cwnd`.
    fn may_raise_cwnd(&self, flag: u32) -> bool {
        if self.reordering > 3 {
            return flag & flag::FORWARD_PROGRESS != 0;
        }
        flag & flag::DATA_ACKED != 0
    }

    /// `tcp_xmit_recovery`.
    fn xmit_recovery(&mut self, rexmit: Rexmit, out: &mut Vec<DataSeg>) {
        match rexmit {
            Rexmit::None => {}
            Rexmit::New => {
                self.write_xmit(out);
                if self.tp.snd_nxt > self.tp.high_seq {
                    return;
                }
                self.frto = false;
                self.sto_frto_abort("no_window");
                self.xmit_retransmit_queue(out);
            }
            Rexmit::Lost => self.xmit_retransmit_queue(out),
        }
    }

    /// `tcp_clean_rtx_queue`: drop cumulatively acked segments, take RTT samples, tell CC.
    /// Returns `ca_rtt_us` (-1 when none).
    fn clean_rtx_queue(&mut self, prior_fack: u64, flag: &mut u32, ss: &mut SackState) -> i64 {
        let now = self.tp.tcp_mstamp_us;
        let mut first_ackt = 0u64;
        let mut last_ackt = 0u64;
        let mut pkts_acked = 0u32;
        // Lowest acked segment that was neither retransmitted nor SACKed (`reord`).
        let mut reord: Option<u64> = None;
        let sack = self.is_sack();
        while let Some(head) = self.rtx.head().copied() {
            if head.end_seq > self.tp.snd_una {
                break; // partially acked segments stay (no tcp_trim_head with 1-MSS skbs)
            }
            let sacked = head.sacked;
            if sacked & EVER_RETRANS != 0 {
                if sacked & SACKED_RETRANS != 0 {
                    self.tp.retrans_out -= 1;
                }
                *flag |= flag::RETRANS_DATA_ACKED;
            } else if sacked & SACKED_ACKED == 0 {
                last_ackt = head.xmit_us;
                if first_ackt == 0 {
                    first_ackt = last_ackt;
                }
                reord = Some(reord.map_or(head.seq, |r| r.min(head.seq)));
                if head.end_seq <= self.tp.high_seq {
                    *flag |= flag::ORIG_SACK_ACKED;
                }
            }
            if sacked & SACKED_ACKED != 0 {
                self.tp.sacked_out -= 1;
            } else if sack {
                self.tp.delivered += 1;
                if !self.skb_spurious_retrans(&head) {
                    self.rack_advance(sacked, head.end_seq, head.xmit_us);
                }
            }
            if sacked & LOST != 0 {
                self.tp.lost_out -= 1;
            }
            self.tp.packets_out -= 1;
            pkts_acked += 1;
            *flag |= flag::DATA_ACKED;
            self.rate_skb_delivered(0, &mut ss.rate);
            self.rtx.pop_head();
        }
        let mut seq_rtt_us = -1i64;
        let mut ca_rtt_us = -1i64;
        let mut sack_rtt_us = -1i64;
        if first_ackt != 0 && *flag & flag::RETRANS_DATA_ACKED == 0 {
            seq_rtt_us = (now - first_ackt) as i64;
            ca_rtt_us = (now - last_ackt) as i64;
        }
        if ss.first_sackt != 0 {
            sack_rtt_us = (now - ss.first_sackt) as i64;
            ca_rtt_us = (now - ss.last_sackt) as i64;
        }
        let acked = *flag & flag::ACKED != 0;
        let tsecr = self.rcv_tsecr;
        let ca_rtt_us = self.ack_update_rtt(acked, seq_rtt_us, sack_rtt_us, ca_rtt_us, tsecr);
        if acked {
            *flag |= flag::SET_XMIT_TIMER; // set TLP or RTO timer
            if !sack {
                self.remove_reno_sacks(pkts_acked);
                // If any of the cumulatively ACKed segments was retransmitted, non-SACK case
                // cannot confirm that progress was due to original transmission due to lack of
                // TCPCB_SACKED_ACKED bits even if some of the packets may have been never
                // retransmitted.
                if *flag & flag::RETRANS_DATA_ACKED != 0 {
                    *flag &= !flag::ORIG_SACK_ACKED;
                }
            } else if let Some(low) = reord.filter(|&r| r < prior_fack) {
                // Non-retransmitted hole got filled? That's reordering.
                self.check_sack_reordering(low);
            }
        } else if let Some(head) = self.rtx.head() {
            // Do not re-arm RTO if the sack RTT is measured from data sent after when the head
            // was last (re)transmitted. Otherwise the timeout may continue to extend in loss
            // recovery. (`rtt_update`: without a cumulative ACK the sample is the SACK RTT.)
            if sack_rtt_us >= 0 && sack_rtt_us > now.saturating_sub(head.xmit_us) as i64 {
                *flag |= flag::SET_XMIT_TIMER;
            }
        }
        let in_flight = self.tp.packets_in_flight();
        self.cc.pkts_acked(
            &mut self.tp,
            &AckSample {
                pkts_acked,
                rtt_us: ca_rtt_us,
                in_flight,
            },
        );
        ca_rtt_us
    }

    /// `tcp_skb_spurious_retrans`: the ACK echoes a timestamp older than the retransmission.
    pub(crate) fn skb_spurious_retrans(&self, skb: &Skb) -> bool {
        skb.sacked & EVER_RETRANS != 0
            && self
                .rcv_tsecr
                .is_some_and(|ecr| (ecr.wrapping_sub(skb.tsval) as i32) < 0)
    }

    /// RTO fired or the RACK reordering timer fired (`tcp_write_timer_handler`), or the
    /// pacing timer; then a woken application writes.
    pub fn on_timer(&mut self, now_ns: u64, out: &mut Vec<DataSeg>) {
        self.timers(now_ns, out);
        self.run_writer(out);
    }

    fn timers(&mut self, now_ns: u64, out: &mut Vec<DataSeg>) {
        if self.pacing_timer_ns.is_some_and(|t| t <= now_ns) {
            // tcp_pace_kick -> tcp_tsq_handler -> tcp_tsq_write.
            self.pacing_timer_ns = None;
            self.set_now(now_ns);
            self.tsq_write(out);
        }
        let Some((what, deadline)) = self.xmit_timer else {
            return;
        };
        if now_ns < deadline {
            return;
        }
        self.set_now(now_ns);
        // tcp_write_timer_handler: only the RTO clears icsk_pending first; the RACK and loss
        // probe handlers rearm from it.
        match what {
            XmitTimer::ReoTimeout => self.rack_reo_timeout(out),
            XmitTimer::LossProbe => self.send_loss_probe(out),
            XmitTimer::Retrans => {
                self.xmit_timer = None;
                self.retransmit_timer(out);
            }
        }
        self.write_xmit(out);
    }

    /// `tcp_retransmit_timer`.
    fn retransmit_timer(&mut self, out: &mut Vec<DataSeg>) {
        if self.tp.packets_out == 0 || self.rtx.is_empty() {
            return;
        }
        self.stats.rto_count += 1;
        self.sto_on_rto();
        let detail = format!(
            "rto_ms={:.1} backoff={} cwnd={} snd_una={}",
            self.tp.icsk_rto_us as f64 / 1000.0,
            self.icsk_backoff,
            self.tp.snd_cwnd,
            self.tp.snd_una
        );
        self.event(SenderEvent::Rto, detail);
        self.enter_loss();
        let seq = self.rtx.get(0).seq;
        if self.device_refuses(seq) {
            // tcp_retransmit_timer: "Retransmission failed because of local congestion":
            // retry after TCP_RESOURCE_PROBE_INTERVAL (500 ms), no backoff.
            self.reset_xmit_timer(XmitTimer::Retrans, 500_000);
            return;
        }
        self.icsk_retransmits += 1;
        self.retransmit_skb(0, out);
        self.icsk_backoff += 1;
        self.tp.icsk_rto_us = ((self.tp.icsk_rto_us as u64) << 1).min(self.cfg.rto_max_us) as u32;
        self.reset_xmit_timer(XmitTimer::Retrans, self.tp.icsk_rto_us as u64);
    }
}

/// Per-ACK SACK processing results (`struct tcp_sacktag_state`).
#[derive(Debug, Default)]
pub(crate) struct SackState {
    /// Send time of the first newly SACKed never-retransmitted segment, us.
    pub first_sackt: u64,
    /// Send time of the last such segment, us.
    pub last_sackt: u64,
    /// Lowest start_seq of a newly SACKed segment in a hole (reordering evidence).
    pub reord: Option<u64>,
    /// Segments newly SACKed, plus those a D-SACK reports duplicated (`sack_delivered`).
    pub sack_delivered: u32,
    /// The delivery-rate sample being built (`sack_state.rate`).
    pub rate: RateSample,
}

/// `tcp_skb_sent_after`: whether (t1, seq1) was sent after (t2, seq2); ties in time are broken
/// by sequence (include/net/tcp.h).
pub(crate) fn tcp_skb_sent_after(t1: u64, t2: u64, seq1: u64, seq2: u64) -> bool {
    t1 > t2 || (t1 == t2 && seq1 > seq2)
}
