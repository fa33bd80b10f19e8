//! Explicit Congestion Notification: classic RFC 3168 ECN as Linux 6.18 runs it with
//! `net.ipv4.tcp_ecn = 1` at both ends, and google/bbr's `ecn_low` variant (precise CE echo).
//!
//! Sender (`include/net/tcp_ecn.h` `tcp_ecn_send`, `net/ipv4/tcp_input.c`):
//! - new data leaves ECT(0); retransmissions leave Not-ECT (unless the algorithm set google/bbr
//!   v3's `TCP_ECN_ECT_PERMANENT`); the first new segment after a reduction carries CWR
//!   (`TCP_ECN_QUEUE_CWR`, queued by `tcp_init_cwnd_reduction` and `tcp_enter_loss`);
//! - an ACK with ECE (`tcp_ecn_rcv_ecn_echo`) sets `FLAG_ECE` and `CA_ACK_ECE`, counts its
//!   deliveries in `delivered_ce` (`tcp_count_delivered`), and in Open/Disorder enters CWR
//!   (`tcp_try_to_open` -> `tcp_enter_cwr`): ssthresh from the algorithm, PRR-paced reduction,
//!   left when an ACK goes beyond `high_seq`, so at most once per window.
//!
//! Receiver (`tcp_ecn_accept_cwr`, `tcp_data_ecn_check` / `__tcp_ecn_check_ce`):
//! - classic: a CE segment sets `TCP_ECN_DEMAND_CWR` (and two quick ACKs); every ACK then
//!   carries ECE until a data segment with CWR arrives;
//! - precise (`ecn = "low"`): ECE mirrors the CE state of the data being acknowledged, with an
//!   immediate ACK when that state flips, as `dctcp_ece_ack_update` (`net/ipv4/tcp_dctcp.h`)
//!   does. google/bbr runs that state machine from BBR's `cwnd_event` on the receiving socket
//!   (`CA_EVENT_ECN_IS_CE` / `CA_EVENT_ECN_NO_CE`, when `bbr_can_use_ecn` and
//!   `precise_ece_ack`); our receivers run no congestion control, so the receiver applies it
//!   directly when the flow's `ecn` is "low".
//!
//! We diverge: the handshake is not simulated, so negotiation (`TCP_ECN_OK`) is taken as done
//! when the flow asks for ECN; AccECN (merged in 6.18, off by default: `tcp_ecn = 1` negotiates
//! RFC 3168) is not modelled; receiver-side `CA_EVENT_ECN_*` events reach no algorithm (a Linux
//! receiver running reno/cubic ignores them too; cclab's `dctcp` sender gets the same effect from
//! the precise echo of `EcnMode::Low`, docs/dctcp.md);
//! pure ACKs are always Not-ECT (google/bbr v3 sets ECT on them with ECT_PERMANENT, which only
//! matters to a marking reverse link).

use crate::cc::{CaEvent, CaState};
use crate::tcp::receiver::Receiver;
use crate::tcp::segment::{AckSeg, DataSeg};
use crate::tcp::sender::{flag, Sender, SenderEvent};
use cclab_net::Ecn;
use serde::{Deserialize, Serialize};

/// `TCP_ECN_OK`: ECN was negotiated for this connection.
pub const TCP_ECN_OK: u8 = 1;
/// `TCP_ECN_QUEUE_CWR`: send CWR on the next new data segment.
pub const TCP_ECN_QUEUE_CWR: u8 = 2;
/// `TCP_ECN_DEMAND_CWR`: the receiver echoes ECE until it sees CWR.
pub const TCP_ECN_DEMAND_CWR: u8 = 4;
/// `TCP_ECN_SEEN`: the receiver has seen an ECT or CE data segment.
pub const TCP_ECN_SEEN: u8 = 8;
/// `TCP_ECN_LOW` (google/bbr): the route's `ecn_low` feature: shallow-threshold marks and
/// precise CE echo; what `bbr_can_use_ecn` requires.
pub const TCP_ECN_LOW: u8 = 16;
/// `TCP_ECN_ECT_PERMANENT` (google/bbr v3): retransmissions keep ECT.
pub const TCP_ECN_ECT_PERMANENT: u8 = 32;

/// A flow's ECN setting (both ends; scenario field `flows[].ecn`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EcnMode {
    /// No ECN (Linux `tcp_ecn = 0`, or a peer that does not negotiate it).
    #[default]
    Off,
    /// RFC 3168 ECN as Linux runs it with `net.ipv4.tcp_ecn = 1` at both ends.
    On,
    /// RFC 3168 negotiation plus google/bbr's per-route `ecn_low`: the receiver echoes CE
    /// precisely and BBRv2/v3 use the marks (`bbr_can_use_ecn`).
    Low,
}

impl EcnMode {
    /// The `ecn_flags` a connection starts with once the handshake negotiated this.
    pub fn initial_flags(self) -> u8 {
        match self {
            EcnMode::Off => 0,
            EcnMode::On => TCP_ECN_OK,
            EcnMode::Low => TCP_ECN_OK | TCP_ECN_LOW,
        }
    }
}

/// The receiver's ECN state (`tp->ecn_flags` of the receiving socket, plus the precise-echo
/// state machine of `dctcp_ece_ack_update`).
#[derive(Debug, Clone, Default)]
pub struct EcnRcv {
    /// `TCP_ECN_*` bits.
    pub flags: u8,
    /// Precise echo: whether the last data segment was CE (`ce_state`).
    ce_state: bool,
    /// Precise echo: rcv_nxt after the previous data segment (`prior_rcv_nxt`).
    prior_rcv_nxt: u64,
    /// Precise echo on (`ecn = "low"`).
    precise: bool,
}

impl EcnRcv {
    /// The receiver of a flow with ECN setting `mode`.
    pub fn new(mode: EcnMode) -> Self {
        EcnRcv {
            flags: mode.initial_flags(),
            precise: mode == EcnMode::Low,
            ..EcnRcv::default()
        }
    }

    /// Whether the next ACK carries ECE (`tcp_ecn_send`: DEMAND_CWR sets `th->ece`).
    pub fn ece(&self) -> bool {
        self.flags & TCP_ECN_DEMAND_CWR != 0
    }
}

impl Receiver {
    /// `tcp_ecn_accept_cwr`: CWR ends the classic echo; ACK at once, as the sender's cwnd may be
    /// small. Called for every data segment that reaches `tcp_data_queue`.
    pub(crate) fn ecn_accept_cwr(&mut self, seg: &DataSeg) {
        if seg.cwr && self.ecn.flags & TCP_ECN_OK != 0 {
            self.ecn.flags &= !TCP_ECN_DEMAND_CWR;
            if seg.len > 0 {
                self.ack_now = true;
            }
        }
    }

    /// `tcp_data_ecn_check` (`__tcp_ecn_check_ce`), from `tcp_event_data_recv` (in-order data,
    /// after rcv_nxt moved) and `tcp_data_queue_ofo` (out-of-order data).
    pub(crate) fn ecn_check_ce(&mut self, seg: &DataSeg, out: &mut Vec<AckSeg>) {
        if self.ecn.flags & TCP_ECN_OK == 0 {
            return;
        }
        match seg.ecn {
            Ecn::NotEct => {
                // Ensure that GCN will not continue to mark packets.
                if self.ecn.flags & TCP_ECN_SEEN != 0 {
                    self.enter_quickack_mode(2);
                }
            }
            Ecn::Ce => {
                if self.ecn.precise {
                    self.ece_ack_update(CaEvent::EcnIsCe, out);
                }
                if self.ecn.flags & TCP_ECN_DEMAND_CWR == 0 {
                    // Better not delay ACKs: the sender can have a very low cwnd.
                    self.enter_quickack_mode(2);
                    self.ecn.flags |= TCP_ECN_DEMAND_CWR;
                }
                self.ecn.flags |= TCP_ECN_SEEN;
            }
            Ecn::Ect0 | Ecn::Ect1 => {
                if self.ecn.precise {
                    self.ece_ack_update(CaEvent::EcnNoCe, out);
                }
                self.ecn.flags |= TCP_ECN_SEEN;
            }
        }
    }

    /// `dctcp_ece_ack_update` (net/ipv4/tcp_dctcp.h), as google/bbr's receiving BBR runs it:
    /// ECE follows the CE state of the latest data; when the state flips, an ACK delayed under
    /// the old state goes out first (acking up to `prior_rcv_nxt`, with the old ECE), and the
    /// ACK for this segment is sent at once.
    fn ece_ack_update(&mut self, evt: CaEvent, out: &mut Vec<AckSeg>) {
        let new_ce_state = evt == CaEvent::EcnIsCe;
        if self.ecn.ce_state != new_ce_state {
            if self.delack_pending() {
                self.set_demand_cwr(self.ecn.ce_state);
                let prior = self.ecn.prior_rcv_nxt;
                self.send_special_ack(prior, out);
            }
            self.ack_now = true;
        }
        self.ecn.prior_rcv_nxt = self.rcv_nxt;
        self.ecn.ce_state = new_ce_state;
        self.set_demand_cwr(new_ce_state);
    }

    /// `dctcp_ece_ack_cwr`.
    fn set_demand_cwr(&mut self, ce: bool) {
        if ce {
            self.ecn.flags |= TCP_ECN_DEMAND_CWR;
        } else {
            self.ecn.flags &= !TCP_ECN_DEMAND_CWR;
        }
    }
}

impl Sender {
    /// `tcp_ecn_send` for a data segment: its ECN codepoint and CWR flag. `retrans`: not new
    /// data (`before(seq, snd_nxt)`).
    pub(crate) fn ecn_send(&mut self, retrans: bool) -> (Ecn, bool) {
        let f = self.tp.ecn_flags;
        if f & TCP_ECN_OK == 0 {
            return (Ecn::NotEct, false);
        }
        if !retrans {
            // Not-retransmitted data segment: set ECT and inject CWR.
            let cwr = f & TCP_ECN_QUEUE_CWR != 0;
            self.tp.ecn_flags &= !TCP_ECN_QUEUE_CWR;
            (Ecn::Ect0, cwr)
        } else if f & TCP_ECN_ECT_PERMANENT != 0 {
            (Ecn::Ect0, false)
        } else {
            // Retransmitted segment: clear ECT (INET_ECN_dontxmit).
            (Ecn::NotEct, false)
        }
    }

    /// `tcp_ecn_queue_cwr`: CWR goes out on the next new segment.
    pub(crate) fn ecn_queue_cwr(&mut self) {
        if self.tp.ecn_flags & TCP_ECN_OK != 0 {
            self.tp.ecn_flags |= TCP_ECN_QUEUE_CWR;
        }
    }

    /// `tcp_ecn_withdraw_cwr`: an undone reduction needs no CWR.
    pub(crate) fn ecn_withdraw_cwr(&mut self) {
        self.tp.ecn_flags &= !TCP_ECN_QUEUE_CWR;
    }

    /// `tcp_ecn_rcv_ecn_echo`: the ACK's ECE counts only when ECN was negotiated.
    pub(crate) fn ecn_rcv_ecn_echo(&self, ack: &AckSeg) -> bool {
        ack.ece && self.tp.ecn_flags & TCP_ECN_OK != 0
    }

    /// `tcp_enter_cwr`: ECN-triggered reduction (from `tcp_try_to_open` on an ECE ACK), at most
    /// once per window: only from Open or Disorder.
    pub(crate) fn enter_cwr(&mut self) {
        self.tp.prior_ssthresh = 0;
        if self.tp.ca_state < CaState::Cwr {
            self.undo_marker = None;
            self.sto.undo_owner.clear();
            let cwnd = self.tp.snd_cwnd;
            self.init_cwnd_reduction();
            self.set_ca_state(CaState::Cwr);
            self.stats.cwr_count += 1;
            let detail = format!(
                "cwnd={} ssthresh={} delivered_ce={}",
                cwnd, self.tp.snd_ssthresh, self.tp.delivered_ce
            );
            self.event(SenderEvent::Cwr, detail);
        }
    }

    /// `tcp_try_to_open`'s ECN part: an ECE ACK in Open/Disorder/CWR starts a reduction.
    pub(crate) fn ecn_try_to_open(&mut self, f: u32) {
        if f & flag::ECE != 0 {
            self.enter_cwr();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::{self, Params};
    use crate::tcp::receiver::ReceiverConfig;
    use crate::tcp::segment::SeqRange;
    use crate::tcp::sender::SenderConfig;

    const MSS: u32 = 1000;

    /// A receiver offering 10 MSS, so 5 quick ACKs (`tcp_incr_quickack`).
    fn rcv(ecn: EcnMode) -> Receiver {
        Receiver::new(ReceiverConfig {
            mss_bytes: MSS,
            sack: true,
            timestamps: true,
            delayed_ack: true,
            ack_every_pkts: 2,
            rwnd_bytes: 10 * MSS as u64,
            autotune: false,
            size_bytes: u64::MAX,
            clock: crate::tcp::clock::KernelClock::exact(1000),
            ecn,
        })
    }

    fn seg(i: u64, ecn: Ecn, cwr: bool) -> DataSeg {
        DataSeg {
            below_bytes: 0,
            skb_follows: false,
            seq: i * MSS as u64,
            len: MSS,
            tsval: 1,
            tsecr: 0,
            retrans: false,
            ecn,
            cwr,
        }
    }

    /// 19 ECT segments 1 ms apart (5 quick ACKs, then one per two segments: none pending).
    fn warm_up(r: &mut Receiver, out: &mut Vec<AckSeg>) -> u64 {
        for i in 0..19 {
            r.on_data(i * 1_000_000, &seg(i, Ecn::Ect0, false), out);
        }
        assert_eq!(out.last().map(|a| a.ack), Some(19 * MSS as u64));
        assert!(out.iter().all(|a| !a.ece));
        19
    }

    /// (ack, ece) of the ACKs sent for one segment.
    fn acks(r: &mut Receiver, i: u64, ecn: Ecn, cwr: bool) -> Vec<(u64, bool)> {
        let mut out = Vec::new();
        r.on_data(i * 1_000_000, &seg(i, ecn, cwr), &mut out);
        out.iter().map(|a| (a.ack / MSS as u64, a.ece)).collect()
    }

    #[test]
    fn classic_receiver_echoes_ece_until_cwr() {
        let mut r = rcv(EcnMode::On);
        let mut out = Vec::new();
        let i = warm_up(&mut r, &mut out);
        // CE: an immediate ACK (quick-ACK mode) with ECE, although one segment would wait.
        assert_eq!(acks(&mut r, i, Ecn::Ce, false), [(20, true)]);
        // Later segments are not CE, but ECE stays on every ACK until CWR.
        assert_eq!(acks(&mut r, i + 1, Ecn::Ect0, false), [(21, true)]);
        let mut later = acks(&mut r, i + 2, Ecn::Ect0, false);
        later.extend(acks(&mut r, i + 3, Ecn::Ect0, false));
        assert_eq!(
            later,
            [(23, true)],
            "one ACK per two segments again, still ECE"
        );
        // CWR ends the echo, and is ACKed at once.
        assert_eq!(acks(&mut r, i + 4, Ecn::Ect0, true), [(24, false)]);
        // Not-ECT data after ECT was seen: quick ACKs (ECN-incapable path, RFC 3168 6.1.5).
        assert_eq!(acks(&mut r, i + 5, Ecn::NotEct, false), [(25, false)]);
    }

    #[test]
    fn precise_receiver_mirrors_the_ce_state_of_the_data_acked() {
        let mut r = rcv(EcnMode::Low);
        let mut out = Vec::new();
        let i = warm_up(&mut r, &mut out);
        // CE after ECT: the state flips, so the ACK goes at once, with ECE.
        assert_eq!(acks(&mut r, i, Ecn::Ce, false), [(20, true)]);
        // Another CE: no flip, the ACK is delayed.
        assert_eq!(acks(&mut r, i + 1, Ecn::Ce, false), []);
        // ECT: flip. The delayed ACK goes first with the old state (ECE, up to the CE data),
        // then this segment's ACK without ECE.
        assert_eq!(
            acks(&mut r, i + 2, Ecn::Ect0, false),
            [(21, true), (22, false)]
        );
        // CE with CWR: CWR clears the echo, the CE sets it again (and flips the state).
        assert_eq!(acks(&mut r, i + 3, Ecn::Ce, true), [(23, true)]);
        // The classic receiver would still echo ECE here.
        let mut c = rcv(EcnMode::On);
        let mut out = Vec::new();
        let i = warm_up(&mut c, &mut out);
        acks(&mut c, i, Ecn::Ce, false);
        acks(&mut c, i + 1, Ecn::Ce, false);
        assert_eq!(
            acks(&mut c, i + 2, Ecn::Ect0, false),
            [],
            "delayed: no state to reflect"
        );
        assert_eq!(acks(&mut c, i + 3, Ecn::Ect0, false), [(23, true)]);
    }

    #[test]
    fn receiver_without_ecn_never_echoes() {
        let mut r = rcv(EcnMode::Off);
        let mut out = Vec::new();
        for i in 0..10 {
            r.on_data(i * 1_000_000, &seg(i, Ecn::Ce, false), &mut out);
        }
        assert!(!out.is_empty() && out.iter().all(|a| !a.ece));
    }

    fn sender(ecn: EcnMode) -> Sender {
        let cc = cc::build("reno", &Params::new()).unwrap();
        let mut s = Sender::new(
            SenderConfig {
                mss_bytes: MSS,
                initial_cwnd_pkts: 10,
                max_cwnd_pkts: u32::MAX,
                sack: true,
                timestamps: true,
                frto: true,
                tlp: false,
                rto_min_us: 200_000,
                rto_initial_us: 1_000_000,
                rto_max_us: 120_000_000,
                rto_min_mode: Default::default(),
                rtt_gains: Default::default(),
                eifel_detection: true,
                dsack_undo: true,
                sto_response: Default::default(),
                size_bytes: u64::MAX,
                clock: crate::tcp::clock::KernelClock::exact(1000),
                ecn,
                stack: Default::default(),
                ack_counting: Default::default(),
                writer: Default::default(),
            },
            cc,
        );
        s.syn_rtt_sample(0, 10_000);
        s
    }

    fn ack(n: u64, ece: bool) -> AckSeg {
        AckSeg {
            ack: n * MSS as u64,
            rwnd_bytes: 1 << 30,
            sack: [SeqRange::default(); 4],
            n_sack: 0,
            tsval: 1,
            tsecr: 1,
            ece,
            data_ack: 0,
        }
    }

    #[test]
    fn sender_sets_ect_on_new_data_and_cwr_once_after_an_ece() {
        let mut s = sender(EcnMode::On);
        let mut out = Vec::new();
        s.on_start(0, &mut out);
        assert_eq!(out.len(), 10);
        assert!(out.iter().all(|d| d.ecn == Ecn::Ect0 && !d.cwr));
        // An ACK without ECE grows cwnd (slow start) and sends more ECT data.
        out.clear();
        s.on_ack(10_000_000, &ack(2, false), &mut out);
        assert_eq!(s.tp.snd_cwnd, 12);
        assert!(out.iter().all(|d| d.ecn == Ecn::Ect0 && !d.cwr));
        // ECE: CWR state, ssthresh = cwnd / 2 (Reno), one event; the first new segment
        // carries CWR, no other.
        out.clear();
        s.on_ack(10_100_000, &ack(4, true), &mut out);
        assert_eq!(s.tp.ca_state, CaState::Cwr);
        assert_eq!(s.tp.snd_ssthresh, 6);
        assert_eq!(s.stats.cwr_count, 1);
        assert_eq!(s.events.last().map(|e| e.1), Some(SenderEvent::Cwr));
        assert!(!out.is_empty(), "PRR lets a segment out");
        assert!(out[0].cwr && out[1..].iter().all(|d| !d.cwr), "{out:?}");
        assert!(
            s.tp.delivered_ce == 2,
            "the 2 segments this ECE ACK delivered"
        );
        // More ECE in the same window: no second reduction; cwnd falls by PRR to ssthresh.
        for n in 5..12 {
            out.clear();
            s.on_ack(10_200_000 + n * 1000, &ack(n, true), &mut out);
            assert!(out.iter().all(|d| !d.cwr));
        }
        assert_eq!(s.stats.cwr_count, 1);
        assert_eq!(s.tp.ca_state, CaState::Cwr);
        // The window's end acked (beyond high_seq): back to Open at ssthresh.
        let high = s.tp.high_seq / MSS as u64;
        out.clear();
        s.on_ack(11_000_000, &ack(high + 1, false), &mut out);
        assert_eq!(s.tp.ca_state, CaState::Open);
        assert_eq!(s.tp.snd_cwnd, 6);
    }

    #[test]
    fn retransmissions_are_not_ect_and_ece_without_ecn_is_ignored() {
        let mut s = sender(EcnMode::On);
        let mut out = Vec::new();
        s.on_start(0, &mut out);
        out.clear();
        let rto_at = s.timer_deadline_ns().unwrap();
        s.on_timer(rto_at, &mut out);
        assert!(out[0].retrans && out[0].ecn == Ecn::NotEct, "{:?}", out[0]);
        // After the RTO's reduction the next new segment carries CWR (tcp_enter_loss queues it).
        assert!(s.tp.ecn_flags & TCP_ECN_QUEUE_CWR != 0);

        let mut off = sender(EcnMode::Off);
        let mut out = Vec::new();
        off.on_start(0, &mut out);
        assert!(out.iter().all(|d| d.ecn == Ecn::NotEct && !d.cwr));
        off.on_ack(10_000_000, &ack(2, true), &mut out);
        assert_eq!(off.tp.ca_state, CaState::Open);
        assert_eq!(off.tp.delivered_ce, 0);
    }
}
