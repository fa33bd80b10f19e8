//! BBRv2/v3 PROBE_BW: the DOWN / CRUISE / REFILL / UP cycle, when to probe (wall clock and
//! Reno-coexistence rounds), and how a probe ends (google/bbr v3 `tcp_bbr.c`, v2alpha
//! `tcp_bbr2.c`: bbr_is_reno_coexistence_probe_time .. bbr_update_cycle_phase).

use super::*;

impl BbrNext {
    /// `bbr_is_reno_coexistence_probe_time`.
    pub(super) fn is_reno_coexistence_probe_time(&self, tp: &TcpSock) -> bool {
        let rounds = self.p.bw_probe_max_rounds.min(self.target_inflight(tp));
        self.rounds_since_probe >= rounds
    }

    /// `bbr_pick_probe_wait`.
    pub(super) fn pick_probe_wait(&mut self, tp: &mut TcpSock) {
        self.rounds_since_probe = tp.random_u32_below(self.p.bw_probe_rand_rounds);
        self.probe_wait_us = self.p.bw_probe_base_us + tp.random_u32_below(self.p.bw_probe_rand_us);
    }

    /// `bbr_set_cycle_idx`.
    pub(super) fn set_cycle_idx(&mut self, idx: u32) {
        self.cycle_idx = idx;
        self.try_fast_path = false;
    }

    /// `bbr_start_bw_probe_refill`.
    pub(super) fn start_bw_probe_refill(&mut self, tp: &TcpSock, bw_probe_up_rounds: u32) {
        self.reset_lower_bounds();
        self.bw_probe_up_rounds = bw_probe_up_rounds;
        self.bw_probe_up_acks = 0;
        self.stopped_risky_probe = false;
        self.ack_phase = AckPhase::Refilling;
        self.next_rtt_delivered = tp.delivered;
        self.set_cycle_idx(BW_PROBE_REFILL);
    }

    /// `bbr_start_bw_probe_up` (v3 also restarts the full-bw plateau detector).
    pub(super) fn start_bw_probe_up(&mut self, tp: &TcpSock, ctx: &Ctx) {
        self.ack_phase = AckPhase::ProbeStarting;
        self.next_rtt_delivered = tp.delivered;
        self.cycle_mstamp = tp.tcp_mstamp_us;
        if self.v == Version::V3 {
            self.reset_full_bw();
            self.full_bw = ctx.sample_bw;
        }
        self.set_cycle_idx(BW_PROBE_UP);
        self.raise_inflight_hi_slope(tp);
    }

    /// `bbr_start_bw_probe_down`.
    pub(super) fn start_bw_probe_down(&mut self, tp: &mut TcpSock) {
        self.reset_congestion_signals();
        self.bw_probe_up_cnt = NONE;
        self.pick_probe_wait(tp);
        self.cycle_mstamp = tp.tcp_mstamp_us;
        self.ack_phase = AckPhase::ProbeStopping;
        self.next_rtt_delivered = tp.delivered;
        self.set_cycle_idx(BW_PROBE_DOWN);
    }

    /// `bbr_start_bw_probe_cruise`.
    pub(super) fn start_bw_probe_cruise(&mut self) {
        if self.inflight_lo != NONE {
            self.inflight_lo = self.inflight_lo.min(self.inflight_hi);
        }
        self.set_cycle_idx(BW_PROBE_CRUISE);
    }

    /// `bbr_handle_inflight_too_high`: cut inflight_hi to what the flight carried (at least
    /// (1 - beta) of the target) and stop probing.
    pub(super) fn handle_inflight_too_high(&mut self, tp: &mut TcpSock, rs: &RateSample) {
        self.prev_probe_too_high = true;
        self.bw_probe_samples = false;
        self.inflight_too_high_events += 1;
        if !rs.is_app_limited {
            let cut =
                (self.target_inflight(tp) as u64 * (BBR_UNIT - self.p.beta) as u64) >> BBR_SCALE;
            self.inflight_hi = rs.tx_in_flight.max(cut as u32);
        }
        if self.mode == Mode::ProbeBw && self.cycle_idx == BW_PROBE_UP {
            self.start_bw_probe_down(tp);
        }
    }

    /// `bbr_adapt_upper_bounds`; true when it decided a state transition.
    #[inline]
    pub(super) fn adapt_upper_bounds(&mut self, tp: &mut TcpSock, rs: &RateSample) -> bool {
        if self.ack_phase == AckPhase::ProbeStarting && self.round_start {
            self.ack_phase = AckPhase::ProbeFeedback;
        }
        if self.ack_phase == AckPhase::ProbeStopping && self.round_start {
            self.bw_probe_samples = false;
            self.ack_phase = AckPhase::Init;
            if self.mode == Mode::ProbeBw && !rs.is_app_limited {
                self.advance_max_bw_filter();
            }
            if self.mode == Mode::ProbeBw && self.stopped_risky_probe && !self.prev_probe_too_high {
                self.start_bw_probe_refill(tp, 0);
                return true;
            }
        }
        if self.is_inflight_too_high(rs) {
            if self.bw_probe_samples {
                self.handle_inflight_too_high(tp, rs);
            }
        } else {
            if self.inflight_hi == NONE {
                return false;
            }
            if rs.tx_in_flight > self.inflight_hi {
                self.inflight_hi = rs.tx_in_flight;
            }
            if self.mode == Mode::ProbeBw && self.cycle_idx == BW_PROBE_UP {
                self.probe_inflight_hi_upward(tp, rs);
            }
        }
        false
    }

    /// `bbr_check_time_to_probe_bw`.
    pub(super) fn check_time_to_probe_bw(&mut self, tp: &TcpSock) -> bool {
        if self.p.ecn_reprobe_gain != 0
            && self.ecn_eligible
            && self.ecn_in_cycle
            && !self.loss_in_cycle
            && tp.ca_state == CaState::Open
        {
            let x = (self.inflight_hi as u64 * self.p.ecn_reprobe_gain as u64) >> BBR_SCALE;
            let n = if x == 0 { 0 } else { 63 - x.leading_zeros() };
            self.start_bw_probe_refill(tp, n);
            return true;
        }
        if self.has_elapsed_in_phase(tp, self.probe_wait_us)
            || self.is_reno_coexistence_probe_time(tp)
        {
            self.start_bw_probe_refill(tp, 0);
            return true;
        }
        false
    }

    /// `bbr_check_time_to_cruise` (v2alpha's `drain_to_target` = true: the same test).
    #[inline]
    pub(super) fn check_time_to_cruise(&self, tp: &TcpSock, inflight: u32, bw: u32) -> bool {
        if inflight > self.inflight_with_headroom() {
            return false;
        }
        inflight <= self.inflight(tp, bw, BBR_UNIT)
    }

    /// `bbr_update_cycle_phase`: the PROBE_BW state machine.
    #[inline(always)]
    pub(super) fn update_cycle_phase(&mut self, tp: &mut TcpSock, rs: &RateSample, ctx: &Ctx) {
        if !self.full_bw_reached {
            return;
        }
        if self.adapt_upper_bounds(tp, rs) {
            return;
        }
        if self.mode != Mode::ProbeBw {
            return;
        }
        // inflight = bbr_packets_in_net_at_edt(sk, rs->prior_in_flight), a pure function of
        // the state here; only PROBE_UP and PROBE_DOWN read it, so it is computed there.
        let inflight = |s: &Self, tp: &TcpSock| s.packets_in_net_at_edt(tp, rs.prior_in_flight);
        let bw = self.max_bw();
        match self.cycle_idx {
            BW_PROBE_CRUISE => {
                self.check_time_to_probe_bw(tp);
            }
            BW_PROBE_REFILL => {
                if self.round_start {
                    self.bw_probe_samples = true;
                    self.start_bw_probe_up(tp, ctx);
                }
            }
            BW_PROBE_UP => {
                let inflight = inflight(self, tp);
                let mut done = false;
                if self.prev_probe_too_high && inflight >= self.inflight_hi {
                    self.stopped_risky_probe = true;
                    done = true;
                } else {
                    match self.v {
                        // v3: inflight_hi limiting growth restarts the plateau detector;
                        // a bw plateau (full_bw_now) ends the probe.
                        Version::V3 => {
                            if tp.is_cwnd_limited && tp.snd_cwnd >= self.inflight_hi {
                                self.reset_full_bw();
                                self.full_bw = ctx.sample_bw;
                            } else if self.full_bw_now {
                                done = true;
                            }
                        }
                        // v2alpha: probed >= min_rtt and inflight >= bw_probe_pif_gain * BDP.
                        Version::V2 => {
                            if self.has_elapsed_in_phase(tp, self.min_rtt_us)
                                && inflight >= self.inflight(tp, bw, self.p.bw_probe_pif_gain)
                            {
                                done = true;
                            }
                        }
                    }
                }
                if done {
                    self.prev_probe_too_high = false;
                    self.start_bw_probe_down(tp);
                }
            }
            BW_PROBE_DOWN => {
                let inflight = inflight(self, tp);
                if self.check_time_to_probe_bw(tp) {
                    return;
                }
                if self.check_time_to_cruise(tp, inflight, bw) {
                    self.start_bw_probe_cruise();
                }
            }
            _ => unreachable!("cycle_idx is 2 bits"),
        }
    }
}
