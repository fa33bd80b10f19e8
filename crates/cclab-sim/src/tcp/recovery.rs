//! Loss detection and recovery, as Linux 6.18 `net/ipv4/tcp_input.c` (`tcp_sacktag_*`,
//! `tcp_fastretrans_alert`, `tcp_enter_recovery`, `tcp_cwnd_reduction` (PRR, RFC 6937),
//! undo: `tcp_try_undo_*`, `tcp_enter_loss`, `tcp_process_loss` (F-RTO, RFC 5682)) and
//! `net/ipv4/tcp_recovery.c` (RACK, RFC 8985, loss detection). Tail loss probes (RFC 8985
//! section 7, `tcp_schedule_loss_probe` and `tcp_send_loss_probe`) are in `tlp.rs`.
//!
//! With SACK, losses are detected by RACK (Linux's default, `tcp_recovery = 1`): a segment is
//! lost when one sent after it was delivered more than `rack.rtt + reo_wnd` after it was sent;
//! before reordering is seen reo_wnd is 0 once 3 segments are SACKed (the dupthresh rule) or in
//! recovery, else min_rtt/4. Without SACK it is NewReno (`tcp_newreno_mark_lost`), with dupacks
//! counted as `sacked_out` (`tcp_add_reno_sack`).

use super::sender::{flag, tcp_skb_sent_after, Rexmit, SackState, Sender, SenderEvent, XmitTimer};
use crate::cc::{CaEvent, CaState};
use crate::tcp::segment::{AckSeg, DataSeg, SeqRange};
use crate::tcp::skb::{EVER_RETRANS, LOST, SACKED_ACKED, SACKED_RETRANS};
use crate::tcp::sock::TCP_INFINITE_SSTHRESH;

/// `TCP_RACK_RECOVERY_THRESH`.
const RACK_RECOVERY_THRESH: u32 = 16;
/// `sysctl_tcp_max_reordering`.
const MAX_REORDERING: u32 = 300;
/// `TCP_TIMEOUT_MIN` in jiffies.
const TIMEOUT_MIN_JIFFIES: u64 = 2;

impl Sender {
    /// `tcp_sacktag_write_queue`: apply the ACK's SACK blocks to the scoreboard.
    pub(crate) fn sacktag(
        &mut self,
        a: &AckSeg,
        prior_snd_una: u64,
        flags: &mut u32,
        ss: &mut SackState,
    ) -> u32 {
        let blocks = a.sacks();
        let mut f = 0u32;
        // tcp_check_dsack: the first block is a D-SACK when it lies below the cumulative ACK
        // (RFC 2883 case 1) or inside the second block (case 2), and is not dubious.
        let b0 = blocks[0];
        let mut dup = b0.start < a.ack
            || (blocks.len() > 1 && b0.start >= blocks[1].start && b0.end <= blocks[1].end);
        if dup {
            let dup_segs = self.dsack_seen(b0.start, b0.end, &mut f);
            if dup_segs == 0 {
                dup = false; // Skip dubious DSACK.
            } else if let Some(um) = self.undo_marker {
                // D-SACK for already forgotten data... Do dumb counting.
                if self.undo_retrans > 0 && b0.end <= prior_snd_una && b0.end > um {
                    self.undo_retrans = (self.undo_retrans - dup_segs as i32).max(0);
                }
            }
        }
        // Walk the blocks in sequence order, as tcp_sacktag_write_queue sorts them ("order
        // SACK blocks to allow in order walk of the retrans queue"; the receiver lists the most
        // recent first), so that a newly SACKed segment lies below the highest SACKed sequence
        // only when a previous ACK SACKed above it.
        let mut sorted = [(SeqRange::default(), false); 4];
        for (bi, b) in blocks.iter().enumerate() {
            sorted[bi] = (*b, dup && bi == 0);
        }
        let sorted = &mut sorted[..blocks.len()];
        sorted.sort_by_key(|(b, _)| b.start); // stable, like the kernel's bubble sort
        for &(b, is_dup) in sorted.iter() {
            // tcp_is_sackblock_valid (simplified): within [snd_una, snd_nxt]
            if b.end <= self.tp.snd_una || b.end > self.tp.snd_nxt || b.start >= b.end {
                continue;
            }
            let start = b.start.max(self.tp.snd_una);
            let Some(mut i) = self.rtx.index_of(start) else {
                continue;
            };
            while i < self.rtx.len() {
                let skb = *self.rtx.get(i);
                if skb.seq >= b.end {
                    break;
                }
                if skb.seq >= b.start && skb.end_seq <= b.end {
                    self.sacktag_one(i, is_dup, &mut f, ss);
                }
                i += 1;
            }
        }
        // Reordering is not measured in Loss, where retransmissions cannot be accounted for,
        // unless there is something to undo (tcp_sacktag_write_queue).
        if let Some(low) = ss.reord {
            if self.tp.ca_state != CaState::Loss || self.undo_marker.is_some() {
                self.check_sack_reordering(low);
            }
        }
        *flags |= f;
        f
    }

    /// `tcp_dsack_seen` (net/ipv4/tcp_input.c, 6.18): take note of a D-SACK for
    /// `[start, end)`; returns how many segments it reports duplicated, 0 when it is dubious and
    /// ignored: longer than the peer's largest window (`tp->max_window`; the receiver's window
    /// is fixed here, so `snd_wnd`), or more duplicates reported over the connection than the
    /// sender ever retransmitted (`tp->dsack_dups > tp->total_retrans`). RACK widens its
    /// reordering window only for D-SACKs that may come from reordering having made it
    /// retransmit spuriously: not before any reordering was seen (`tp->reord_seen`), nor for the
    /// tail loss probe's retransmission (timer-driven, `FLAG_DSACK_TLP`).
    fn dsack_seen(&mut self, start: u64, end: u64, f: &mut u32) -> u32 {
        if start >= end {
            return 0;
        }
        let seq_len = end - start;
        if seq_len > self.snd_wnd {
            return 0;
        }
        let mss = self.tp.mss_cache as u64;
        let mut dup_segs = 1u32;
        if seq_len > mss {
            dup_segs = seq_len.div_ceil(mss) as u32;
        } else if self.tlp_high_seq == Some(end) {
            *f |= flag::DSACK_TLP;
        }
        self.dsack_dups = self.dsack_dups.saturating_add(dup_segs);
        // Skip the D-SACK if dup segs weren't retransmitted by sender (`total_retrans` counts
        // every retransmission, loss probes included, as `retrans_pkts` does).
        if self.dsack_dups as u64 > self.stats.retrans_pkts {
            return 0;
        }
        if self.reord_seen > 0 && *f & flag::DSACK_TLP == 0 {
            self.rack.dsack_seen = true;
        }
        *f |= flag::DSACKING_ACK;
        dup_segs
    }

    /// `tcp_highest_sack_seq`: the end of the highest SACKed segment, snd_una when none is.
    pub(crate) fn highest_sack_seq(&self) -> u64 {
        if self.tp.sacked_out == 0 {
            return self.tp.snd_una;
        }
        self.highest_sack_end
    }

    /// `tcp_check_sack_reordering` (net/ipv4/tcp_input.c): data at `low_seq`, never
    /// retransmitted, was delivered after data up to the highest SACKed sequence (fack, as it is
    /// now). The distance in segments is `DIV_ROUND_UP(fack - low_seq, mss)`, and
    /// `tp->reordering` grows to it only when it is larger (capped by `tcp_max_reordering`).
    pub(crate) fn check_sack_reordering(&mut self, low_seq: u64) {
        let fack = self.highest_sack_seq();
        if low_seq >= fack {
            return;
        }
        let mss = self.tp.mss_cache as u64;
        let metric = fack - low_seq;
        if metric > self.reordering as u64 * mss {
            self.reordering = metric.div_ceil(mss).min(MAX_REORDERING as u64) as u32;
        }
        self.reord_seen += 1;
    }

    /// `tcp_sacktag_one`.
    fn sacktag_one(&mut self, idx: usize, dup: bool, f: &mut u32, ss: &mut SackState) {
        let skb = *self.rtx.get(idx);
        let mut sacked = skb.sacked;
        if dup && sacked & EVER_RETRANS != 0 {
            if let Some(um) = self.undo_marker {
                if self.undo_retrans > 0 && skb.end_seq > um {
                    self.undo_retrans -= 1;
                }
            }
            // A D-SACK for a retransmitted segment already SACKed: the original got there after
            // all, so it is reordering too (tcp_sacktag_one).
            if sacked & SACKED_ACKED != 0 && ss.reord.is_none_or(|r| skb.seq < r) {
                ss.reord = Some(skb.seq);
            }
        }
        if skb.end_seq <= self.tp.snd_una {
            return;
        }
        if sacked & SACKED_ACKED == 0 {
            self.rack_advance(sacked, skb.end_seq, skb.xmit_us);
            if sacked & SACKED_RETRANS != 0 {
                if sacked & LOST != 0 {
                    sacked &= !(LOST | SACKED_RETRANS);
                    self.tp.lost_out -= 1;
                    self.tp.retrans_out -= 1;
                }
            } else {
                if sacked & EVER_RETRANS == 0 {
                    // New SACK for a never-retransmitted segment in a hole: reordering.
                    if skb.seq < self.highest_sack_seq() && ss.reord.is_none_or(|r| skb.seq < r) {
                        ss.reord = Some(skb.seq);
                    }
                    if skb.end_seq <= self.tp.high_seq {
                        *f |= flag::ORIG_SACK_ACKED;
                    }
                    if ss.first_sackt == 0 {
                        ss.first_sackt = skb.xmit_us;
                    }
                    ss.last_sackt = skb.xmit_us;
                }
                if sacked & LOST != 0 {
                    sacked &= !LOST;
                    self.tp.lost_out -= 1;
                }
            }
            sacked |= SACKED_ACKED;
            *f |= flag::DATA_SACKED;
            self.tp.sacked_out += 1;
            self.tp.delivered += 1;
            self.highest_sack_end = self.highest_sack_end.max(skb.end_seq);
        }
        if dup && sacked & SACKED_RETRANS != 0 {
            sacked &= !SACKED_RETRANS;
            self.tp.retrans_out -= 1;
        }
        self.rtx.get_mut(idx).sacked = sacked;
        // tcp_sacktag_walk: tcp_rate_skb_delivered after tagging.
        self.rate_skb_delivered(idx, &mut ss.rate);
    }

    /// `tcp_rack_advance`: remember the most recently sent delivered segment.
    pub(crate) fn rack_advance(&mut self, sacked: u8, end_seq: u64, xmit_us: u64) {
        if self.rack.mstamp_us != 0
            && !tcp_skb_sent_after(xmit_us, self.rack.mstamp_us, end_seq, self.rack.end_seq)
        {
            return;
        }
        let rtt_us = self.tp.tcp_mstamp_us.saturating_sub(xmit_us) as u32;
        if sacked & EVER_RETRANS != 0 && rtt_us < self.tp.min_rtt_us {
            // Ambiguous: the original may have been delivered (RFC 8985 step 2).
            return;
        }
        self.rack.rtt_us = rtt_us;
        self.rack.mstamp_us = xmit_us;
        self.rack.end_seq = end_seq;
        self.rack.advanced = true;
    }

    /// `tcp_rack_reo_wnd`.
    fn rack_reo_wnd(&self) -> u32 {
        if self.reord_seen == 0 {
            if self.tp.ca_state >= CaState::Recovery {
                return 0;
            }
            if self.tp.sacked_out >= self.reordering {
                return 0;
            }
        }
        if self.tp.min_rtt_us == u32::MAX {
            return 0;
        }
        ((self.tp.min_rtt_us >> 2) * self.rack.reo_wnd_steps).min(self.tp.srtt_us >> 3)
    }

    /// `tcp_rack_detect_loss`: mark lost what RACK proves lost; returns the longest wait (us)
    /// before a not-yet-expired segment would be (0 = none).
    fn rack_detect_loss(&mut self) -> u64 {
        let reo_wnd = self.rack_reo_wnd() as i64;
        let now = self.tp.tcp_mstamp_us as i64;
        let mut reo_timeout = 0u64;
        for i in 0..self.rtx.len() {
            let skb = *self.rtx.get(i);
            if skb.sacked & SACKED_ACKED != 0 {
                continue;
            }
            // Skip ones marked lost but not yet retransmitted.
            if skb.sacked & LOST != 0 && skb.sacked & SACKED_RETRANS == 0 {
                continue;
            }
            if !tcp_skb_sent_after(
                self.rack.mstamp_us,
                skb.xmit_us,
                self.rack.end_seq,
                skb.end_seq,
            ) {
                continue;
            }
            let remaining = self.rack.rtt_us as i64 + reo_wnd - (now - skb.xmit_us as i64);
            if remaining <= 0 {
                self.mark_skb_lost(i);
            } else {
                reo_timeout = reo_timeout.max(remaining as u64);
            }
        }
        reo_timeout
    }

    /// `tcp_rack_mark_lost`: returns whether the reordering timer was armed.
    fn rack_mark_lost(&mut self) -> bool {
        if !self.rack.advanced {
            return false;
        }
        self.rack.advanced = false;
        let timeout = self.rack_detect_loss();
        if timeout > 0 {
            let j = self.us_to_jiffies(timeout) + TIMEOUT_MIN_JIFFIES;
            let us = self.jiffies_to_us(j);
            self.reset_xmit_timer(XmitTimer::ReoTimeout, us);
            return true;
        }
        false
    }

    /// `tcp_rack_reo_timeout`.
    pub(crate) fn rack_reo_timeout(&mut self, out: &mut Vec<DataSeg>) {
        let prior_inflight = self.tp.packets_in_flight();
        self.rack_detect_loss();
        if prior_inflight != self.tp.packets_in_flight() {
            if self.tp.ca_state != CaState::Recovery {
                self.enter_recovery(false);
                if !self.cc.has_cong_control() {
                    self.cwnd_reduction(1, 0, 0);
                }
            }
            self.xmit_retransmit_queue(out);
        }
        if !matches!(self.xmit_timer, Some((XmitTimer::Retrans, _))) {
            self.rearm_rto();
        }
    }

    /// `tcp_rack_update_reo_wnd(sk, rs)` (net/ipv4/tcp_recovery.c): after a D-SACK that may
    /// come from reordering, widen reo_wnd by one step (min_rtt/4) and keep it for
    /// `TCP_RACK_RECOVERY_THRESH` recoveries; at most once per round trip. `prior_delivered` is
    /// the rate sample's `rs->prior_delivered`: `tp->delivered` when the newest segment this ACK
    /// delivered was sent, 0 when it delivered none.
    pub(crate) fn rack_update_reo_wnd(&mut self, prior_delivered: u32) {
        if prior_delivered == 0 {
            return;
        }
        // Disregard DSACK if a rtt has not passed since we adjusted reo_wnd.
        if prior_delivered < self.rack.last_delivered {
            self.rack.dsack_seen = false;
        }
        if self.rack.dsack_seen {
            self.rack.reo_wnd_steps = (self.rack.reo_wnd_steps + 1).min(0xff);
            self.rack.dsack_seen = false;
            self.rack.last_delivered = self.tp.delivered;
            self.rack.reo_wnd_persist = RACK_RECOVERY_THRESH;
        } else if self.rack.reo_wnd_persist == 0 {
            self.rack.reo_wnd_steps = 1;
        }
    }

    /// `tcp_mark_skb_lost`.
    pub(crate) fn mark_skb_lost(&mut self, idx: usize) {
        let sacked = self.rtx.get(idx).sacked;
        if sacked & SACKED_ACKED != 0 {
            return;
        }
        if sacked & LOST != 0 {
            if sacked & SACKED_RETRANS != 0 {
                // Account for retransmits that are lost again.
                self.rtx.get_mut(idx).sacked &= !SACKED_RETRANS;
                self.tp.retrans_out -= 1;
                self.tp.lost += 1;
                // google/bbr v2alpha/v3 tcp_notify_skb_loss_event: the skb_marked_lost hook.
                let skb = *self.rtx.get(idx);
                self.cc.skb_marked_lost(&mut self.tp, &skb);
            }
        } else {
            self.tp.lost_out += 1;
            self.rtx.get_mut(idx).sacked |= LOST;
            self.tp.lost += 1;
            let skb = *self.rtx.get(idx);
            self.cc.skb_marked_lost(&mut self.tp, &skb);
        }
    }

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

    /// `tcp_newreno_mark_lost`.
    fn newreno_mark_lost(&mut self, snd_una_advanced: bool) {
        let state = self.tp.ca_state;
        if (state < CaState::Recovery && self.tp.sacked_out >= self.reordering)
            || (state == CaState::Recovery && snd_una_advanced)
        {
            if self.rtx.get(0).sacked & LOST != 0 {
                return;
            }
            self.mark_skb_lost(0);
        }
    }

    /// `tcp_add_reno_sack`: count dupacks as SACKed segments.
    fn add_reno_sack(&mut self, num_dupack: u32) {
        if num_dupack == 0 {
            return;
        }
        let prior = self.tp.sacked_out;
        self.tp.sacked_out += num_dupack;
        self.check_reno_reordering(0);
        let delivered = self.tp.sacked_out as i64 - prior as i64;
        if delivered > 0 {
            self.tp.delivered += delivered as u32;
        }
    }

    /// `tcp_remove_reno_sacks`: an ACK that advanced snd_una ate `acked` dupacks.
    pub(crate) fn remove_reno_sacks(&mut self, acked: u32) {
        if acked > 0 {
            let d = (acked as i64 - self.tp.sacked_out as i64).max(1);
            self.tp.delivered += d as u32;
            if acked > self.tp.sacked_out {
                self.tp.sacked_out = 0;
            } else {
                self.tp.sacked_out -= acked - 1;
            }
        }
        self.check_reno_reordering(acked);
    }

    /// `tcp_check_reno_reordering` + `tcp_limit_reno_sacked`.
    fn check_reno_reordering(&mut self, addend: u32) {
        let holes = self.tp.lost_out.max(1).min(self.tp.packets_out);
        if self.tp.sacked_out + holes > self.tp.packets_out {
            self.tp.sacked_out = self.tp.packets_out - holes;
            self.reordering = (self.tp.packets_out + addend).min(MAX_REORDERING);
            self.reord_seen += 1;
        }
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
        self.stats.fast_retransmit_count += 1;
        let detail = format!(
            "cwnd={} lost_out={} sacked_out={}",
            self.tp.snd_cwnd, self.tp.lost_out, self.tp.sacked_out
        );
        self.event(SenderEvent::FastRetransmit, detail);
        self.tp.prior_ssthresh = 0;
        self.init_undo();
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

    /// `tcp_packet_delayed`: the ACK echoes a timestamp from before our first retransmission,
    /// so the original got through (Eifel detection, RFC 3522, as Linux does it).
    fn packet_delayed(&self) -> bool {
        if self.retrans_stamp != 0 {
            return self
                .rcv_tsecr
                .is_some_and(|ecr| (ecr.wrapping_sub(self.retrans_stamp) as i32) < 0);
        }
        // retrans_stamp is set on the first retransmission of an episode, so 0 normally means
        // nothing was retransmitted yet and the segment was merely delayed. Exception (1) of
        // the kernel: a non-SACK flow clears retrans_stamp when snd_una reaches high_seq
        // (tcp_try_undo_recovery's hold), which proves nothing.
        if !self.is_sack() && self.tp.snd_una >= self.tp.high_seq {
            return false;
        }
        true
    }

    /// `tcp_may_undo`.
    fn may_undo(&self) -> bool {
        self.undo_marker.is_some() && (self.undo_retrans == 0 || self.packet_delayed())
    }

    /// What proved the reduction unneeded when `tcp_packet_delayed` passes: the ACK echoes a
    /// TSval older than the first retransmission (`eifel`), or nothing was retransmitted yet
    /// (`no_retrans`).
    fn delayed_detector(&self) -> &'static str {
        if self.retrans_stamp != 0 {
            "eifel"
        } else {
            "no_retrans"
        }
    }

    /// What proved it when `tcp_may_undo` passes: every retransmission was D-SACKed
    /// (`undo_retrans` 0, checked first, as there), else `delayed_detector`.
    fn may_undo_detector(&self) -> &'static str {
        if self.undo_retrans == 0 {
            "dsack"
        } else {
            self.delayed_detector()
        }
    }

    /// Count an undo and report it as an `undo` event: `detector` is the evidence (`frto`,
    /// `eifel`, `dsack`, `no_retrans`), `via` the kernel function that undid, `tcp_try_undo_<via>`
    /// (`loss`, `recovery`, `dsack`, `partial`; Linux counts them as TCPLossUndo, TCPFullUndo
    /// or TCPLossUndo in Loss, TCPDSACKUndo, TCPPartialUndo).
    fn log_undo(&mut self, detector: &str, via: &str) {
        self.stats.undo_count += 1;
        let detail = format!("detector={detector} via={via} state={:?}", self.tp.ca_state);
        self.event(SenderEvent::Undo, detail);
    }

    /// `tcp_undo_cwnd_reduction`.
    fn undo_cwnd_reduction(&mut self, unmark_loss: bool) {
        if unmark_loss {
            for skb in self.rtx.iter_mut() {
                skb.sacked &= !LOST;
            }
            self.tp.lost_out = 0;
        }
        if self.tp.prior_ssthresh != 0 {
            let cwnd = self.cc.undo_cwnd(&mut self.tp);
            self.tp.set_cwnd(cwnd);
            if self.tp.prior_ssthresh > self.tp.snd_ssthresh {
                self.tp.snd_ssthresh = self.tp.prior_ssthresh;
                self.ecn_withdraw_cwr();
            }
        }
        self.tp.snd_cwnd_stamp = self.tp.jiffies();
        self.undo_marker = None;
        self.rack.advanced = true;
    }

    /// `tcp_try_undo_recovery`.
    fn try_undo_recovery(&mut self) -> bool {
        if self.may_undo() {
            // Happy end! We did not retransmit anything or our original transmission
            // succeeded. (TCPFullUndo, or TCPLossUndo in Loss: never TCPSpuriousRTOs.)
            let detector = self.may_undo_detector();
            self.log_undo(detector, "recovery");
            self.undo_cwnd_reduction(false);
        } else if self.rack.reo_wnd_persist > 0 {
            self.rack.reo_wnd_persist -= 1;
        }
        if self.tp.snd_una == self.tp.high_seq && !self.is_sack() {
            // Hold old state until something *above* high_seq is ACKed (RFC 6582).
            if !self.any_retrans_done() {
                self.retrans_stamp = 0;
            }
            return true;
        }
        self.set_ca_state(CaState::Open);
        false
    }

    /// `tcp_try_undo_dsack`: every retransmission was D-SACKed, so none was needed.
    fn try_undo_dsack(&mut self) -> bool {
        if self.undo_marker.is_some() && self.undo_retrans == 0 {
            self.rack.reo_wnd_persist = (self.rack.reo_wnd_persist + 1).min(RACK_RECOVERY_THRESH);
            self.log_undo("dsack", "dsack");
            self.undo_cwnd_reduction(false);
            return true;
        }
        false
    }

    /// `tcp_try_undo_partial`.
    fn try_undo_partial(&mut self, prior_snd_una: u64) -> bool {
        if self.undo_marker.is_some() && self.packet_delayed() {
            // Plain luck: the hole was filled by the delayed original, not by the
            // retransmission. That is reordering (`tcp_check_sack_reordering(sk,
            // prior_snd_una, 1)`).
            self.check_sack_reordering(prior_snd_una);
            if self.tp.retrans_out > 0 {
                return true;
            }
            if !self.any_retrans_done() {
                self.retrans_stamp = 0;
            }
            let detector = self.delayed_detector();
            self.log_undo(detector, "partial");
            self.undo_cwnd_reduction(true);
            self.try_keep_open();
        }
        false
    }

    /// `tcp_enter_loss`: an RTO fired.
    pub(crate) fn enter_loss(&mut self) {
        let new_recovery = self.tp.ca_state < CaState::Recovery;
        self.timeout_mark_lost();
        // Reduce ssthresh if it has not yet been made inside this window.
        if self.tp.ca_state <= CaState::Disorder
            || self.tp.high_seq <= self.tp.snd_una
            || (self.tp.ca_state == CaState::Loss && self.icsk_retransmits == 0)
        {
            self.tp.prior_ssthresh = self.tp.current_ssthresh();
            self.tp.prior_cwnd = self.tp.snd_cwnd;
            self.tp.snd_ssthresh = self.cc.ssthresh(&mut self.tp);
            self.cc.cwnd_event(&mut self.tp, CaEvent::Loss);
            self.init_undo();
        }
        let cwnd = self.tp.packets_in_flight() + 1;
        self.tp.set_cwnd(cwnd);
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
        // underway except recurring timeout(s) on the same SND.UNA (sec 3.2).
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
                }
            } else if f & flag::SND_UNA_ADVANCED != 0 && !recovered {
                self.tp.high_seq = self.tp.snd_nxt;
                // Step 2.b. Try send new data (deferred until cwnd is updated in tcp_ack()).
                let wnd_end = self.tp.snd_una.saturating_add(self.snd_wnd);
                if self.tp.snd_nxt < self.cfg.size_bytes && wnd_end > self.tp.snd_nxt {
                    *rexmit = Rexmit::New;
                    return;
                }
                self.frto = false;
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

    /// `tcp_try_undo_loss`.
    fn try_undo_loss(&mut self, frto_undo: bool) -> bool {
        if frto_undo || self.may_undo() {
            // TCPLossUndo; only F-RTO's proof also counts as TCPSpuriousRTOs.
            let detector = if frto_undo {
                self.stats.spurious_rto_count += 1;
                "frto"
            } else {
                self.may_undo_detector()
            };
            self.log_undo(detector, "loss");
            self.undo_cwnd_reduction(true);
            self.icsk_retransmits = 0;
            if frto_undo || self.is_sack() {
                self.set_ca_state(CaState::Open);
            }
            return true;
        }
        false
    }
}
