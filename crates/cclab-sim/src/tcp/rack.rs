//! RACK loss detection (RFC 8985), as Linux 6.18 `net/ipv4/tcp_recovery.c`: a segment is lost
//! when one sent after it was delivered more than `rack.rtt + reo_wnd` after it was sent. Before
//! reordering is seen reo_wnd is 0 once `reordering` segments are SACKed (the dupthresh rule) or
//! in recovery, else min_rtt/4, widened a step per round trip with D-SACKs
//! (`tcp_rack_update_reo_wnd`). Without SACK it is NewReno instead (`tcp_newreno_mark_lost`).

use super::sender::{tcp_skb_sent_after, Sender, XmitTimer};
use crate::cc::CaState;
use crate::tcp::segment::DataSeg;
use crate::tcp::skb::{EVER_RETRANS, LOST, SACKED_ACKED, SACKED_RETRANS};

/// `TCP_RACK_RECOVERY_THRESH`: recoveries a widened reo_wnd persists for.
pub(super) const RACK_RECOVERY_THRESH: u32 = 16;
/// `TCP_TIMEOUT_MIN_US`.
const TIMEOUT_MIN_US: u64 = 2_000;

impl Sender {
    /// `tcp_rack_advance`: an (S)ACK delivered a segment sent at `xmit_us`. As 6.18 has it,
    /// RACK.rtt is updated for every delivered segment (unless it was retransmitted less than
    /// min_rtt ago, when the ACK may be for the original: RFC 8985 step 2), and RACK's newest
    /// delivered send time only when this one was sent later. (The 4.x form returned early
    /// unless the segment was sent later, leaving RACK.rtt at the newest segment's.)
    pub(crate) fn rack_advance(&mut self, sacked: u8, end_seq: u64, xmit_us: u64) {
        let rtt_us = self.tp.tcp_mstamp_us.saturating_sub(xmit_us) as u32;
        if rtt_us < self.tp.min_rtt_us && sacked & EVER_RETRANS != 0 {
            // If the sacked packet was retransmitted, it's ambiguous whether the retransmission
            // or the original (or the prior retransmission) was sacked.
            return;
        }
        self.rack.advanced = true;
        self.rack.rtt_us = rtt_us;
        if tcp_skb_sent_after(xmit_us, self.rack.mstamp_us, end_seq, self.rack.end_seq) {
            self.rack.mstamp_us = xmit_us;
            self.rack.end_seq = end_seq;
        }
    }

    /// `tcp_rack_reo_wnd`.
    fn rack_reo_wnd(&self) -> u32 {
        if self.reord_seen == 0 {
            // If reordering has not been observed, be aggressive during the recovery or
            // starting the recovery by DUPACK threshold.
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
    ///
    /// Linux walks `tsorted_sent_queue` (send-time order, SACKed and RACK-marked segments
    /// unlinked) up to the first segment not sent before RACK's reference; the queue gives the
    /// same candidates (`RtxQueue::rack_candidates`: segments neither SACKed nor marked lost
    /// awaiting retransmission). The expired ones are marked in sequence order, as a walk of
    /// the whole queue would, so that the algorithm's `skb_marked_lost` hook sees them in the
    /// same order whichever way they were found.
    fn rack_detect_loss(&mut self) -> u64 {
        let reo_wnd = self.rack_reo_wnd() as i64;
        let now = self.tp.tcp_mstamp_us as i64;
        let rtt_us = self.rack.rtt_us as i64;
        let mut lost: Vec<u64> = Vec::new();
        let mut reo_timeout = 0u64;
        for (xmit_us, end_seq) in self
            .rtx
            .rack_candidates(self.rack.mstamp_us, self.rack.end_seq)
        {
            // tcp_rack_skb_timeout.
            let remaining = rtt_us + reo_wnd - (now - xmit_us as i64);
            if remaining <= 0 {
                lost.push(end_seq);
            } else {
                reo_timeout = reo_timeout.max(remaining as u64);
            }
        }
        lost.sort_unstable();
        for end_seq in lost {
            let i = self
                .rtx
                .index_of(end_seq - 1)
                .expect("a RACK candidate is queued");
            self.mark_skb_lost(i);
        }
        reo_timeout
    }

    /// `tcp_rack_mark_lost`: returns whether the reordering timer was armed (for the longest
    /// wait plus `TCP_TIMEOUT_MIN_US`, rounded up to jiffies).
    pub(crate) fn rack_mark_lost(&mut self) -> bool {
        if !self.rack.advanced {
            return false;
        }
        // Reset the advanced flag to avoid unnecessary queue scanning.
        self.rack.advanced = false;
        let timeout = self.rack_detect_loss();
        if timeout > 0 {
            let j = self.us_to_jiffies(timeout + TIMEOUT_MIN_US);
            let us = self.jiffies_to_us(j);
            self.reset_xmit_timer(XmitTimer::ReoTimeout, us);
            return true;
        }
        false
    }

    /// `tcp_rack_reo_timeout`: the reordering timer fired; mark the expired segments lost and
    /// retransmit them.
    pub(crate) fn rack_reo_timeout(&mut self, out: &mut Vec<DataSeg>) {
        let prior_inflight = self.tp.packets_in_flight();
        self.rack_detect_loss();
        if prior_inflight != self.tp.packets_in_flight() {
            if self.tp.ca_state != CaState::Recovery {
                self.enter_recovery(false);
                if !self.cc.has_cong_control() {
                    // (newly_lost only matters with FLAG_SND_UNA_ADVANCED, not set here.)
                    self.cwnd_reduction(1, 0, 0);
                }
            }
            self.xmit_retransmit_queue(out);
        }
        if !matches!(self.xmit_timer, Some((XmitTimer::Retrans, _))) {
            self.rearm_rto();
        }
    }

    /// `tcp_rack_update_reo_wnd(sk, rs)`: after a D-SACK that may come from reordering, widen
    /// reo_wnd by one step (min_rtt/4) and keep it for `TCP_RACK_RECOVERY_THRESH` recoveries; at
    /// most once per round trip. `prior_delivered` is the rate sample's `rs->prior_delivered`:
    /// `tp->delivered` when the newest segment this ACK delivered was sent, 0 when it delivered
    /// none.
    pub(crate) fn rack_update_reo_wnd(&mut self, prior_delivered: u32) {
        if prior_delivered == 0 {
            return;
        }
        // Disregard DSACK if a rtt has not passed since we adjusted reo_wnd.
        if prior_delivered < self.rack.last_delivered {
            self.rack.dsack_seen = false;
        }
        // Adjust the reo_wnd if update is pending.
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
                self.rtx.update(idx, |s| s.sacked &= !SACKED_RETRANS);
                self.tp.retrans_out -= 1;
                self.tp.lost += 1;
                // google/bbr v2alpha/v3 tcp_notify_skb_loss_event: the skb_marked_lost hook.
                let skb = *self.rtx.get(idx);
                self.cc.skb_marked_lost(&mut self.tp, &skb);
            }
        } else {
            self.tp.lost_out += 1;
            self.rtx.update(idx, |s| s.sacked |= LOST);
            self.tp.lost += 1;
            let skb = *self.rtx.get(idx);
            self.cc.skb_marked_lost(&mut self.tp, &skb);
        }
    }

    /// `tcp_newreno_mark_lost` (RFC 6582 NewReno, no SACK): the head is lost after three
    /// dupacks, and again on each partial ACK in recovery.
    pub(crate) fn newreno_mark_lost(&mut self, snd_una_advanced: bool) {
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
}
