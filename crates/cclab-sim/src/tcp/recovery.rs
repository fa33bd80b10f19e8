//! Loss recovery, as Linux 6.18 `net/ipv4/tcp_input.c`: the state machine run on dubious ACKs
//! (`tcp_fastretrans_alert`), fast recovery (`tcp_enter_recovery`, Proportional Rate Reduction:
//! `tcp_cwnd_reduction`, RFC 6937) and the timeout's Loss state (`tcp_enter_loss`,
//! `tcp_process_loss` with F-RTO, RFC 5682, Linux's SACK-enhanced variant). Losses are found by
//! RACK (`rack.rs`) or, without SACK, NewReno; the SACK scoreboard is `sack.rs`, undo is
//! `undo.rs`, tail loss probes are `tlp.rs`.

use super::sender::{flag, Rexmit, Sender, SenderEvent};
use crate::cc::{CaEvent, CaState};
use crate::tcp::sock::TCP_INFINITE_SSTHRESH;

impl Sender {
    /// `tcp_fastretrans_alert`: the loss-recovery state machine, run on dubious ACKs.
    pub(crate) fn fastretrans_alert(
        &mut self,
        prior_snd_una: u64,
        num_dupack: u32,
        ack_flag: &mut u32,
        rexmit: &mut Rexmit,
    ) {
        let f = *ack_flag;
        if self.tp.packets_out == 0 && self.tp.sacked_out > 0 {
            self.tp.sacked_out = 0;
        }
        // A. ECE, hence prohibit cwnd undoing, the reduction is required.
        if f & flag::ECE != 0 {
            self.tp.prior_ssthresh = 0;
        }
        // (B, SACK reneging: not modelled, our receivers never renege.)
        // D. Check state exit conditions. State can be terminated when high_seq is ACKed.
        if self.tp.ca_state == CaState::Open {
            self.retrans_stamp = 0;
        } else if self.tp.snd_una >= self.tp.high_seq {
            match self.tp.ca_state {
                // CWR is held until something *above* high_seq is ACKed.
                CaState::Cwr if self.tp.snd_una != self.tp.high_seq => {
                    self.end_cwnd_reduction();
                    self.set_ca_state(CaState::Open);
                }
                CaState::Recovery => {
                    if !self.is_sack() {
                        self.tp.sacked_out = 0; // tcp_reset_reno_sack
                    }
                    if self.try_undo_recovery() {
                        return;
                    }
                    self.end_cwnd_reduction();
                }
                _ => {}
            }
        }
        // E. Process state.
        match self.tp.ca_state {
            CaState::Recovery => {
                if f & flag::SND_UNA_ADVANCED == 0 {
                    if !self.is_sack() {
                        self.add_reno_sack(num_dupack);
                    }
                } else if self.try_undo_partial(prior_snd_una) {
                    return;
                }
                if self.try_undo_dsack() {
                    self.try_to_open(f);
                }
                self.identify_packet_loss(ack_flag);
                if self.tp.ca_state != CaState::Recovery {
                    if !self.time_to_recover() {
                        return;
                    }
                    self.enter_recovery(f & flag::ECE != 0);
                }
            }
            CaState::Loss => {
                self.process_loss(f, num_dupack, rexmit);
                self.identify_packet_loss(ack_flag);
                if !(self.tp.ca_state == CaState::Open || *ack_flag & flag::LOST_RETRANS != 0) {
                    return;
                }
                // Change state if cwnd is undone or retransmits are lost.
                if !self.alert_default(f, num_dupack, ack_flag) {
                    return;
                }
            }
            _ => {
                if !self.alert_default(f, num_dupack, ack_flag) {
                    return;
                }
            }
        }
        *rexmit = Rexmit::Lost;
    }

    /// The `default:` arm of `tcp_fastretrans_alert` (Open, Disorder, CWR; Loss falls through).
    /// Returns false where the kernel returns early (no recovery to start).
    fn alert_default(&mut self, f: u32, num_dupack: u32, ack_flag: &mut u32) -> bool {
        if !self.is_sack() {
            if f & flag::SND_UNA_ADVANCED != 0 {
                self.tp.sacked_out = 0;
            }
            self.add_reno_sack(num_dupack);
        }
        if self.tp.ca_state <= CaState::Disorder {
            self.try_undo_dsack();
        }
        self.identify_packet_loss(ack_flag);
        if !self.time_to_recover() {
            self.try_to_open(f);
            return false;
        }
        self.enter_recovery(f & flag::ECE != 0);
        true
    }

    /// `tcp_identify_packet_loss`.
    fn identify_packet_loss(&mut self, ack_flag: &mut u32) {
        if self.rtx.is_empty() {
            return;
        }
        if !self.is_sack() {
            self.newreno_mark_lost(*ack_flag & flag::SND_UNA_ADVANCED != 0);
        } else {
            let prior_retrans = self.tp.retrans_out;
            if self.rack_mark_lost() {
                *ack_flag &= !flag::SET_XMIT_TIMER;
            }
            if prior_retrans > self.tp.retrans_out {
                *ack_flag |= flag::LOST_RETRANS;
            }
        }
    }

    /// `tcp_time_to_recover` (RACK: only proven losses count).
    fn time_to_recover(&self) -> bool {
        self.tp.lost_out > 0
    }

    /// `tcp_init_undo`.
    fn init_undo(&mut self) {
        self.undo_marker = Some(self.tp.snd_una);
        self.undo_retrans = self.tp.retrans_out as i32;
        // Next, account for TLP retransmits in flight.
        if self.tlp_high_seq.is_some() && self.tlp_retrans {
            self.undo_retrans += 1;
        }
        if self.undo_retrans == 0 {
            self.undo_retrans = -1;
        }
    }

    /// `tcp_enter_recovery`.
    pub(crate) fn enter_recovery(&mut self, ece_ack: bool) {
        // Start the clock with our fast retransmit, for undo and ETIMEDOUT
        // (`tcp_retrans_stamp_cleanup`, 6.12+): a retrans_stamp left from an earlier episode
        // whose retransmissions are all gone would make `tcp_packet_delayed` compare against it.
        if !self.any_retrans_done() {
            self.retrans_stamp = 0;
        }
        self.stats.fast_retransmit_count += 1;
        let detail = format!(
            "cwnd={} lost_out={} sacked_out={}",
            self.tp.snd_cwnd, self.tp.lost_out, self.tp.sacked_out
        );
        self.event(SenderEvent::FastRetransmit, detail);
        self.tp.prior_ssthresh = 0;
        self.init_undo();
        self.sto_on_enter_recovery();
        if !self.in_cwnd_reduction() {
            if !ece_ack {
                self.tp.prior_ssthresh = self.tp.current_ssthresh();
            }
            self.init_cwnd_reduction();
        }
        self.set_ca_state(CaState::Recovery);
    }

    /// `tcp_init_cwnd_reduction`.
    pub(crate) fn init_cwnd_reduction(&mut self) {
        self.tp.high_seq = self.tp.snd_nxt;
        self.tlp_high_seq = None;
        self.tp.snd_cwnd_cnt = 0;
        self.tp.prior_cwnd = self.tp.snd_cwnd;
        self.prr_delivered = 0;
        self.prr_out = 0;
        self.tp.snd_ssthresh = self.cc.ssthresh(&mut self.tp);
        self.ecn_queue_cwr();
    }

    /// `tcp_cwnd_reduction`: Proportional Rate Reduction (RFC 6937).
    pub(crate) fn cwnd_reduction(&mut self, newly_acked_sacked: i32, newly_lost: i32, f: u32) {
        if newly_acked_sacked <= 0 || self.tp.prior_cwnd == 0 {
            return;
        }
        let delta = self.tp.snd_ssthresh as i64 - self.tp.packets_in_flight() as i64;
        self.prr_delivered += newly_acked_sacked as u32;
        let mut sndcnt: i64;
        if delta < 0 {
            let dividend = self.tp.snd_ssthresh as u64 * self.prr_delivered as u64
                + self.tp.prior_cwnd as u64
                - 1;
            sndcnt = (dividend / self.tp.prior_cwnd as u64) as i64 - self.prr_out as i64;
        } else {
            sndcnt =
                (self.prr_delivered as i64 - self.prr_out as i64).max(newly_acked_sacked as i64);
            if f & flag::SND_UNA_ADVANCED != 0 && newly_lost == 0 {
                sndcnt += 1;
            }
            sndcnt = sndcnt.min(delta);
        }
        // Force a fast retransmit upon entering fast recovery.
        sndcnt = sndcnt.max(if self.prr_out > 0 { 0 } else { 1 });
        let cwnd = (self.tp.packets_in_flight() as i64 + sndcnt).max(1) as u32;
        self.tp.set_cwnd(cwnd);
    }

    /// `tcp_end_cwnd_reduction`.
    pub(crate) fn end_cwnd_reduction(&mut self) {
        if self.cc.has_cong_control() {
            return;
        }
        if self.tp.snd_ssthresh < TCP_INFINITE_SSTHRESH
            && (self.tp.ca_state == CaState::Cwr || self.undo_marker.is_some())
        {
            self.tp.set_cwnd(self.tp.snd_ssthresh);
            self.tp.snd_cwnd_stamp = self.tp.jiffies();
            self.apply_cwnd_range();
        }
        self.cc.cwnd_event(&mut self.tp, CaEvent::CompleteCwr);
    }

    /// `tcp_try_to_open`.
    fn try_to_open(&mut self, f: u32) {
        if !self.any_retrans_done() {
            self.retrans_stamp = 0;
        }
        self.ecn_try_to_open(f); // FLAG_ECE: tcp_enter_cwr
        if self.tp.ca_state != CaState::Cwr {
            self.try_keep_open();
        }
    }

    /// `tcp_try_keep_open`.
    pub(crate) fn try_keep_open(&mut self) {
        let state = if self.left_out() > 0 || self.any_retrans_done() {
            CaState::Disorder
        } else {
            CaState::Open
        };
        if self.tp.ca_state != state {
            self.set_ca_state(state);
            self.tp.high_seq = self.tp.snd_nxt;
        }
    }

    /// `tcp_enter_loss`: an RTO fired.
    pub(crate) fn enter_loss(&mut self) {
        let new_recovery = self.tp.ca_state < CaState::Recovery;
        let (prior_in_flight, prior_ssthresh) = (self.tp.packets_in_flight(), self.tp.snd_ssthresh);
        self.timeout_mark_lost();
        // Reduce ssthresh if it has not yet been made inside this window.
        let new_episode = self.tp.ca_state <= CaState::Disorder
            || self.tp.high_seq <= self.tp.snd_una
            || (self.tp.ca_state == CaState::Loss && self.icsk_retransmits == 0);
        if new_episode {
            self.tp.prior_ssthresh = self.tp.current_ssthresh();
            self.tp.prior_cwnd = self.tp.snd_cwnd;
            self.tp.snd_ssthresh = self.cc.ssthresh(&mut self.tp);
            self.cc.cwnd_event(&mut self.tp, CaEvent::Loss);
            self.init_undo();
        }
        self.sto_on_enter_loss(new_episode, prior_in_flight, prior_ssthresh);
        let cwnd = self.tp.packets_in_flight() + 1;
        self.tp.set_cwnd(cwnd);
        self.apply_cwnd_range();
        self.tp.snd_cwnd_cnt = 0;
        self.tp.snd_cwnd_stamp = self.tp.jiffies();
        if self.tp.ca_state <= CaState::Disorder && self.tp.sacked_out >= 3 {
            self.reordering = self.reordering.min(3);
        }
        self.set_ca_state(CaState::Loss);
        self.tp.high_seq = self.tp.snd_nxt;
        self.tlp_high_seq = None;
        self.ecn_queue_cwr();
        // F-RTO RFC 5682 sec 3.1 step 1: retransmit SND.UNA if no previous loss recovery is
        // underway except recurring timeout(s) on the same SND.UNA (sec 3.2). (`frto` is false
        // with sto_response = "reno": config validation.)
        self.frto = self.cfg.frto && (new_recovery || self.icsk_retransmits > 0);
    }

    /// `tcp_timeout_mark_lost`.
    fn timeout_mark_lost(&mut self) {
        if !self.is_sack() {
            self.tp.sacked_out = 0; // tcp_reset_reno_sack
        }
        let now = self.tp.tcp_mstamp_us as i64;
        for i in 0..self.rtx.len() {
            if i > 0 {
                let skb = self.rtx.get(i);
                let remaining = self.rack.rtt_us as i64 - (now - skb.xmit_us as i64);
                if remaining > 0 {
                    continue; // Don't mark recently sent ones lost yet
                }
            }
            self.mark_skb_lost(i);
        }
    }

    /// `tcp_process_loss`: ACK processing in the Loss state, with F-RTO.
    fn process_loss(&mut self, f: u32, num_dupack: u32, rexmit: &mut Rexmit) {
        let recovered = self.tp.snd_una >= self.tp.high_seq;
        if f & flag::SND_UNA_ADVANCED != 0 && self.try_undo_loss(false) {
            return;
        }
        if self.frto {
            // Step 3.b. A timeout is spurious if not all data are lost, i.e.,
            // never-retransmitted data are (s)acked.
            if f & flag::ORIG_SACK_ACKED != 0 && self.try_undo_loss(true) {
                return;
            }
            if self.tp.snd_nxt > self.tp.high_seq {
                if f & flag::DATA_SACKED != 0 || num_dupack > 0 {
                    self.frto = false; // Step 3.a. loss was real
                    self.sto_frto_abort("dupack");
                }
            } else if f & flag::SND_UNA_ADVANCED != 0 && !recovered {
                self.tp.high_seq = self.tp.snd_nxt;
                // Step 2.b. Try send new data (deferred until cwnd is updated in tcp_ack()).
                let wnd_end = self.tp.snd_una.saturating_add(self.snd_wnd);
                if self.tp.snd_nxt < self.write_seq && wnd_end > self.tp.snd_nxt {
                    *rexmit = Rexmit::New;
                    return;
                }
                self.frto = false;
                let why = if self.tp.snd_nxt >= self.write_seq {
                    "fin"
                } else {
                    "no_window"
                };
                self.sto_frto_abort(why);
            }
        }
        if recovered {
            // F-RTO RFC 5682 sec 3.1 step 2.a and 1st part of step 3.a
            self.try_undo_recovery();
            return;
        }
        if !self.is_sack() {
            if self.tp.snd_nxt > self.tp.high_seq && num_dupack > 0 {
                self.add_reno_sack(num_dupack);
            } else if f & flag::SND_UNA_ADVANCED != 0 {
                self.tp.sacked_out = 0;
            }
        }
        *rexmit = Rexmit::Lost;
    }
}
