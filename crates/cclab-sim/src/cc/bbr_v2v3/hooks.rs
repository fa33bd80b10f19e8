//! BBRv2/v3 entry points the ops table calls: bbr_main, init, loss marking, undo, ssthresh,
//! set_state, cwnd_event, tso_segs (google/bbr v3 `tcp_bbr.c`, v2alpha `tcp_bbr2.c`).

use super::*;

impl BbrNext {
    /// `bbr_main` (v3) / `bbr2_main` (v2alpha).
    pub fn main(&mut self, tp: &mut TcpSock, rs: &RateSample) {
        let mut ctx = Ctx::default();
        let mut update_model = true;
        self.update_round_start(tp, rs);
        if self.round_start {
            self.rounds_since_probe = (self.rounds_since_probe + 1).min(0xFF);
            self.update_ecn_alpha(tp);
        }
        self.ecn_in_round |= self.ecn_eligible && rs.is_ece;
        self.calculate_bw_sample(rs, &mut ctx);
        if self.v == Version::V3 {
            self.update_latest_delivery_signals(tp, rs, &ctx);
        }
        if !self.run_fast_path(tp, &mut update_model, rs, &ctx) {
            if update_model {
                self.update_model(tp, rs, &ctx);
            }
            self.update_gains();
            let bw = self.bw();
            self.set_pacing_rate(tp, bw, self.pacing_gain);
            self.set_cwnd(tp, rs.acked_sacked, bw, self.cwnd_gain);
            self.bound_cwnd_for_inflight_model(tp);
        }
        if self.v == Version::V3 {
            self.advance_latest_delivery_signals(rs, &ctx);
        }
        self.prev_ca_state = tp.ca_state;
        self.loss_in_cycle |= rs.lost > 0;
        self.ecn_in_cycle |= rs.delivered_ce > 0;
    }

    /// `bbr_init`.
    pub fn init(&mut self, tp: &mut TcpSock) {
        let (v, p) = (self.v, self.p);
        *self = BbrNext::new(v, p);
        self.initialized = true;
        self.init_cwnd = tp.snd_cwnd.min(0x7F);
        self.prior_cwnd = tp.prior_cwnd;
        tp.snd_ssthresh = crate::tcp::sock::TCP_INFINITE_SSTHRESH;
        self.next_rtt_delivered = tp.delivered;
        self.probe_rtt_min_us = tp.min_rtt_us;
        self.probe_rtt_min_stamp = tp.jiffies();
        self.min_rtt_us = tp.min_rtt_us;
        self.min_rtt_stamp = tp.jiffies();
        self.init_pacing_rate_from_rtt(tp);
        self.ack_epoch_mstamp = tp.tcp_mstamp_us;
        self.loss_round_delivered = tp.delivered + 1;
        tp.pacing_needed = true;
        // v3: `if (bbr_can_use_ecn(sk))`; v2alpha: `if (TCP_ECN_OK && bbr_ecn_enable)`, the same
        // test under our mapping of ecn_enable (see `can_use_ecn`).
        if can_use_ecn(tp) {
            tp.ecn_flags |= TCP_ECN_ECT_PERMANENT;
        }
    }

    /// `bbr_note_loss`.
    pub(super) fn note_loss(&mut self, tp: &TcpSock) {
        if !self.loss_in_round {
            self.loss_round_delivered = tp.delivered;
        }
        self.loss_in_round = true;
        self.loss_in_cycle = true;
    }

    /// `bbr_skb_marked_lost`: while probing, did the flight up to this lost skb lose more
    /// than loss_thresh? Then cut inflight_hi at the packet where it crossed.
    pub fn skb_marked_lost(&mut self, tp: &mut TcpSock, skb: &Skb) {
        self.note_loss(tp);
        if !self.bw_probe_samples {
            return;
        }
        if skb.tx_delivered_mstamp_us == 0 {
            return; // SACKed or already used
        }
        let mut rs = RateSample {
            tx_in_flight: skb.tx_in_flight,
            lost: tp.lost.wrapping_sub(skb.tx_lost) as i32,
            is_app_limited: skb.tx_is_app_limited,
            ..RateSample::default()
        };
        if self.is_inflight_too_high(&rs) {
            rs.tx_in_flight = self.inflight_hi_from_lost_skb(&rs, 1);
            self.handle_inflight_too_high(tp, &rs);
        }
    }

    /// `bbr_run_loss_probe_recovery` (v3).
    pub(super) fn run_loss_probe_recovery(&mut self, tp: &mut TcpSock) {
        self.note_loss(tp);
        if !self.bw_probe_samples {
            return;
        }
        let rs = RateSample {
            lost: 1,
            tx_in_flight: self.inflight_latest + 1,
            // tp->tlp_orig_data_app_limited: not tracked by the core; the flow's state now.
            is_app_limited: tp.app_limited != 0,
            ..RateSample::default()
        };
        if self.is_inflight_too_high(&rs) {
            self.handle_inflight_too_high(tp, &rs);
        }
    }

    /// `bbr_undo_cwnd`: revert the short-term model saved at `ssthresh`.
    pub fn undo_cwnd(&mut self) -> u32 {
        self.reset_full_bw();
        self.loss_in_round = false;
        self.bw_lo = self.bw_lo.max(self.undo_bw_lo);
        self.inflight_lo = self.inflight_lo.max(self.undo_inflight_lo);
        self.inflight_hi = self.inflight_hi.max(self.undo_inflight_hi);
        self.try_fast_path = false;
        self.prior_cwnd
    }

    /// `bbr_ssthresh`: save cwnd and the bounds for undo; ssthresh unchanged.
    pub fn ssthresh(&mut self, tp: &TcpSock) -> u32 {
        self.save_cwnd(tp);
        self.undo_bw_lo = self.bw_lo;
        self.undo_inflight_lo = self.inflight_lo;
        self.undo_inflight_hi = self.inflight_hi;
        tp.snd_ssthresh
    }

    /// `bbr_set_state` / `bbr2_set_state`: an RTO resets the full-bw detector and seeds
    /// inflight_lo; leaving Loss restores the saved cwnd (`bbr_exit_loss_recovery`).
    pub fn set_state(&mut self, tp: &mut TcpSock, new_state: CaState) {
        if new_state == CaState::Loss {
            self.prev_ca_state = CaState::Loss;
            match self.v {
                Version::V3 => self.reset_full_bw(),
                Version::V2 => self.full_bw = 0,
            }
            if !self.is_probing_bandwidth() && self.inflight_lo == NONE {
                self.inflight_lo = match self.v {
                    Version::V3 => tp.snd_cwnd.max(self.prior_cwnd),
                    Version::V2 => self.prior_cwnd,
                };
            }
        } else if self.prev_ca_state == CaState::Loss && new_state != CaState::Loss {
            self.exit_loss_recovery(tp);
        }
    }

    /// `bbr_cwnd_event` + `bbr_cwnd_event_tx_start`.
    pub fn cwnd_event(&mut self, tp: &mut TcpSock, event: CaEvent) {
        match event {
            CaEvent::TxStart if tp.app_limited != 0 => {
                self.idle_restart = true;
                self.ack_epoch_mstamp = tp.tcp_mstamp_us;
                self.ack_epoch_acked = 0;
                if self.mode == Mode::ProbeBw {
                    let bw = self.bw();
                    self.set_pacing_rate(tp, bw, BBR_UNIT);
                } else if self.mode == Mode::ProbeRtt {
                    self.check_probe_rtt_done(tp);
                }
            }
            CaEvent::TlpRecovery if self.v == Version::V3 && self.p.loss_probe_recovery => {
                self.run_loss_probe_recovery(tp);
            }
            // CA_EVENT_ECN_IS_CE / NO_CE: the receiving socket's dctcp_ece_ack_update (precise
            // ECE); our receivers apply it themselves when the flow's ecn is "low" (tcp/ecn.rs),
            // and senders never get these events.
            _ => {}
        }
    }

    /// `bbr_tso_segs`: skb size at transmit within the device's 64 KiB.
    pub fn tso_segs(&self, tp: &TcpSock, mss_now: u32) -> u32 {
        self.tso_segs_generic(tp, mss_now, GSO_LEGACY_MAX_SIZE)
    }
}
