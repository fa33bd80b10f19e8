//! Spurious timeouts (STOs): the sender's record of each RTO (what detected it, why F-RTO gave
//! up on it) and the response to a detected one (`flows[].sto_response`).
//!
//! Detection is Linux's (`undo.rs`, `recovery.rs`): F-RTO (RFC 5682, `tcp_process_loss`), the
//! timestamps (RFC 3522, `tcp_packet_delayed`; off with `eifel_detection = false`) and D-SACKs
//! (RFC 3708, `undo_retrans`; off with `dsack_undo = false`). A timeout counts as detected when
//! an undo ends the episode it began (`undo_marker` set by its `tcp_enter_loss`, or by the first
//! RTO of a run of backed-off ones, which one undo ends together).
//!
//! The response to a detected timeout, in place of `tcp_undo_cwnd_reduction`'s restore:
//! - `linux`: Linux's own (`tcp_undo_cwnd_reduction`: cwnd = the algorithm's `undo_cwnd`,
//!   ssthresh = max(ssthresh, prior_ssthresh)); the default.
//! - `eifel`: RFC 4015's Eifel response (section 3.1; the RFC's own text was not at hand here,
//!   its steps are taken as other implementations quote them). Before the timeout changes
//!   them: pipe_prev = max(FlightSize, ssthresh), SRTT_prev = SRTT + 2G, RTTVAR_prev = RTTVAR.
//!   On detection, "reversing the congestion control state": cwnd = FlightSize +
//!   min(bytes_acked, IW), ssthresh = pipe_prev; nothing if the ACK carries ECE. In packets:
//!   FlightSize is `tcp_packets_in_flight` after the ACK, bytes_acked the segments this ACK
//!   newly acked, IW `initial_cwnd_pkts`. "Resume with previously unsent data" is what Linux's
//!   undo already does (the lost marks go, so new data goes out, not go-back-N). Then the
//!   timer: on the first RTT sample of data sent after the timeout, m: SRTT = max(SRTT_prev,
//!   m), RTTVAR = max(RTTVAR_prev, m/2), RTO = SRTT + max(G, 4 RTTVAR) (G one jiffy; bounded and
//!   rounded as `set_rto` does), in place of the estimator's update for that sample.
//! - `rfc2861`: the S3 paper's "RFC 2861-like" response (its Table 2): cwnd unchanged by the
//!   timeout (back to the cwnd before it), ssthresh halved (the timeout's value stands).
//! - `reno`: no detection and no response (the paper's "TCP Reno"): the timeout leaves no undo
//!   state (`undo_marker` cleared), so nothing undoes it; F-RTO does not run (go-back-N).

use super::sender::{Sender, SenderEvent};

/// What a detected spurious timeout does (`flows[].sto_response`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StoResponse {
    /// Linux's undo (`tcp_undo_cwnd_reduction`).
    #[default]
    Linux,
    /// RFC 4015's Eifel response (congestion control state only).
    Eifel,
    /// The S3 paper's RFC 2861-like response: cwnd kept, ssthresh halved.
    Rfc2861,
    /// None: the timeout's cwnd and ssthresh stand, F-RTO off, go-back-N.
    Reno,
}

/// One RTO as the sender saw it.
#[derive(Debug, Clone)]
pub struct RtoRecord {
    /// When it fired, ns.
    pub t_ns: u64,
    /// The segment it retransmitted (snd_una then).
    pub seq: u64,
    /// What proved it spurious (the `undo` event's detector), if anything did.
    pub detector: Option<&'static str>,
    /// Why F-RTO stopped testing it: `fin` (no new data left to send), `no_window` (new data
    /// could not go out: receive window, cwnd, TSQ or the device), `dupack` (a duplicate ACK
    /// or new SACK after the new data: "loss was real").
    pub frto_abort: Option<&'static str>,
    /// Its Loss episode was still open when the run ended (undo state live, not undone).
    pub open: bool,
}

/// Sender-side state of the timeouts (a field of `Sender`).
#[derive(Debug, Clone, Default)]
pub struct StoState {
    /// Every RTO so far, in order.
    pub rtos: Vec<RtoRecord>,
    /// The RTOs whose undo state is live (`undo_marker` set by the first of them), oldest
    /// first: an undo now detects them all.
    pub(crate) undo_owner: Vec<usize>,
    /// RFC 4015's pipe_prev, packets: max(FlightSize, ssthresh) before the last timeout that
    /// reduced the window.
    pub(crate) pipe_prev_pkts: u32,
    /// Segments the ACK being processed newly acked (RFC 4015's bytes_acked, in segments).
    pub(crate) acked_pkts: u32,
    /// RFC 4015's SRTT_prev (SRTT + 2G), us, and 4 RTTVAR_prev, us, at the last timeout that
    /// began an episode, and when it fired (`tcp_mstamp`, us).
    pub(crate) srtt_prev_us: u64,
    pub(crate) rttvar4_prev_us: u64,
    pub(crate) rto_at_us: u64,
    /// The Eifel response waits for the first RTT sample of data sent after the timeout.
    pub(crate) adapt_rto: bool,
    /// For each retransmission written since the world last took them, in order: the RTO
    /// episode that sent it (the 1-based id of the RTO whose Loss state it was sent in; 0 out
    /// of Loss). The world tags the packets with them (`world/sto.rs`).
    pub retx_episodes: Vec<u32>,
}

impl Sender {
    /// An RTO fired (`tcp_retransmit_timer`, before `tcp_enter_loss`): record it.
    pub(crate) fn sto_on_rto(&mut self) {
        let seq = self.tp.snd_una;
        self.sto.rtos.push(RtoRecord {
            t_ns: self.now_ns,
            seq,
            detector: None,
            frto_abort: None,
            open: false,
        });
    }

    /// A retransmission went out: note its episode.
    pub(crate) fn sto_on_retransmit(&mut self) {
        let ep = if self.tp.ca_state == crate::cc::CaState::Loss {
            self.sto.rtos.len() as u32
        } else {
            0
        };
        self.sto.retx_episodes.push(ep);
    }

    /// `tcp_enter_loss` took the undo state (`tcp_init_undo`: a new episode) or kept it (a
    /// backed-off RTO of the same episode); with `sto_response = "reno"` it takes none.
    /// `prior_in_flight` and `prior_ssthresh` are FlightSize and ssthresh before the timeout.
    pub(crate) fn sto_on_enter_loss(
        &mut self,
        new_episode: bool,
        prior_in_flight: u32,
        prior_ssthresh: u32,
    ) {
        let id = self.sto.rtos.len().saturating_sub(1);
        let joins_recovery = !new_episode && self.sto.undo_owner.is_empty();
        if new_episode || joins_recovery {
            self.sto.undo_owner.clear();
            // RFC 4015: pipe_prev <- max(FlightSize, ssthresh) before loss recovery changed
            // them: before this timeout, or, when it comes inside a fast recovery whose undo
            // state it shares, before that recovery (its prior_cwnd and prior_ssthresh).
            self.sto.pipe_prev_pkts = if new_episode {
                prior_in_flight.max(prior_ssthresh)
            } else {
                self.tp.prior_cwnd.max(self.tp.prior_ssthresh)
            };
            // SRTT_prev <- SRTT + 2G; RTTVAR_prev <- RTTVAR (`rttvar_us` is 4 RTTVAR in both
            // estimators' fixed point).
            self.sto.srtt_prev_us = (self.tp.srtt_us >> 3) as u64 + 2 * self.jiffies_to_us(1);
            self.sto.rttvar4_prev_us = self.tp.rttvar_us as u64;
            self.sto.rto_at_us = self.tp.tcp_mstamp_us;
        }
        if self.cfg.sto_response == StoResponse::Reno {
            self.undo_marker = None;
            self.sto.undo_owner.clear();
            return;
        }
        if self.undo_marker.is_some() {
            self.sto.undo_owner.push(id);
        }
    }

    /// A fast recovery took the undo state (`tcp_enter_recovery`): an undo now is its.
    pub(crate) fn sto_on_enter_recovery(&mut self) {
        self.sto.undo_owner.clear();
    }

    /// F-RTO stopped testing the current timeout (`tp->frto = 0` in `tcp_process_loss` or
    /// `tcp_xmit_recovery`).
    pub(crate) fn sto_frto_abort(&mut self, why: &'static str) {
        if let Some(r) = self.sto.rtos.last_mut() {
            r.frto_abort.get_or_insert(why);
        }
    }

    /// Whether the undo about to happen ends a timeout's episode.
    pub(crate) fn sto_undo_is_timeout(&self) -> bool {
        !self.sto.undo_owner.is_empty()
    }

    /// An undo with evidence `detector`: the timeouts that own the undo state are detected.
    pub(crate) fn sto_on_undo(&mut self, detector: &'static str) {
        for &i in &self.sto.undo_owner {
            self.sto.rtos[i].detector.get_or_insert(detector);
        }
    }

    /// The response to a detected timeout, where `tcp_undo_cwnd_reduction` restores cwnd and
    /// ssthresh (called only when the undo ends a timeout's episode and the response is not
    /// Linux's). `prior_ssthresh` 0 means an ECE forbade the undo (RFC 4015: done, nothing
    /// restored).
    pub(crate) fn sto_respond(&mut self) {
        if self.tp.prior_ssthresh == 0 {
            return;
        }
        match self.cfg.sto_response {
            StoResponse::Eifel => {
                let iw = self.cfg.initial_cwnd_pkts;
                let cwnd = self.tp.packets_in_flight() + self.sto.acked_pkts.min(iw);
                self.tp.set_cwnd(cwnd.max(1));
                self.tp.snd_ssthresh = self.sto.pipe_prev_pkts;
                self.ecn_withdraw_cwr();
                self.sto.adapt_rto = true;
            }
            StoResponse::Rfc2861 => {
                let cwnd = self.tp.prior_cwnd.max(1);
                self.tp.set_cwnd(cwnd);
            }
            StoResponse::Linux | StoResponse::Reno => {}
        }
        let detail = format!(
            "response={} cwnd={} ssthresh={} in_flight={} acked_pkts={}",
            self.cfg.sto_response.name(),
            self.tp.snd_cwnd,
            self.tp.snd_ssthresh,
            self.tp.packets_in_flight(),
            self.sto.acked_pkts
        );
        self.event(SenderEvent::StoResponse, detail);
    }

    /// RFC 4015's timer adaptation, given an RTT sample `m_us` of data sent `sent_us` (the
    /// `tcp_ack_update_rtt` sample): true when it took the sample in place of the estimator.
    pub(crate) fn sto_adapt_rto(&mut self, m_us: i64, sent_us: u64) -> bool {
        if !self.sto.adapt_rto || sent_us < self.sto.rto_at_us {
            return false;
        }
        self.sto.adapt_rto = false;
        let m = m_us.max(1) as u64;
        let srtt = self.sto.srtt_prev_us.max(m);
        let rttvar4 = self.sto.rttvar4_prev_us.max(2 * m); // 4 max(RTTVAR_prev, m/2)
        let tp = &mut self.tp;
        tp.srtt_us = (srtt << 3).min(u32::MAX as u64) as u32;
        tp.mdev_us = rttvar4.min(u32::MAX as u64) as u32;
        tp.mdev_max_us = tp.mdev_us;
        tp.rttvar_us = tp.mdev_us;
        self.rtt_seq = tp.snd_nxt;
        true
    }

    /// At the end of the run: mark the timeouts whose episode is still open.
    pub fn sto_finish(&mut self) {
        let live = self.undo_marker.is_some();
        for &i in &self.sto.undo_owner {
            self.sto.rtos[i].open = live;
        }
    }

    /// Whether any detector could prove a timeout spurious for this flow.
    pub fn sto_detection_off(&self) -> Option<&'static str> {
        let c = &self.cfg;
        if c.sto_response == StoResponse::Reno {
            return Some("detection_off");
        }
        let eifel = c.eifel_detection && c.timestamps;
        let dsack = c.dsack_undo && c.sack;
        if c.frto || eifel || dsack {
            return None;
        }
        if c.eifel_detection && !c.timestamps {
            return Some("timestamps_off");
        }
        Some("detection_off")
    }
}

impl StoResponse {
    /// The name in scenarios and traces.
    pub fn name(self) -> &'static str {
        match self {
            StoResponse::Linux => "linux",
            StoResponse::Eifel => "eifel",
            StoResponse::Rfc2861 => "rfc2861",
            StoResponse::Reno => "reno",
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::tcp::tests_support::Setup;

    /// RFC 4015's timer after a detected STO: SRTT_prev = 300 + 2G (G = 1 ms at HZ 1000),
    /// 4 RTTVAR_prev = 200 ms; the first sample m = 250 ms of data sent after the timeout gives
    /// SRTT = max(302, 250) = 302, 4 RTTVAR = max(200, 2 x 250) = 500, RTO = 802 ms. A sample
    /// of data sent before the timeout does not count, and only the first one after it does.
    #[test]
    fn eifel_response_adapts_the_timer_once() {
        let mut s = Setup::default().sender();
        s.set_now(10_000_000_000);
        s.sto.srtt_prev_us = 302_000;
        s.sto.rttvar4_prev_us = 200_000;
        s.sto.rto_at_us = s.tp.tcp_mstamp_us - 100_000;
        s.sto.adapt_rto = true;
        s.ack_update_rtt(true, 250_000, -1, 250_000, None); // sent before the timeout
        assert!(s.sto.adapt_rto);
        s.ack_update_rtt(true, 50_000, -1, 50_000, None);
        assert!(!s.sto.adapt_rto);
        assert_eq!((s.tp.srtt_us >> 3, s.tp.rttvar_us), (302_000, 200_000));
        assert_eq!(s.tp.icsk_rto_us, 502_000);
        let mut s = Setup::default().sender();
        s.set_now(10_000_000_000);
        s.sto.srtt_prev_us = 302_000;
        s.sto.rttvar4_prev_us = 200_000;
        s.sto.rto_at_us = s.tp.tcp_mstamp_us - 300_000;
        s.sto.adapt_rto = true;
        s.ack_update_rtt(true, 250_000, -1, 250_000, None);
        assert_eq!((s.tp.srtt_us >> 3, s.tp.rttvar_us), (302_000, 500_000));
        assert_eq!(s.tp.icsk_rto_us, 802_000);
    }
}
