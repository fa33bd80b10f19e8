//! Undoing a window reduction that proves unneeded, as Linux 6.18 `net/ipv4/tcp_input.c`
//! (`tcp_may_undo`, `tcp_packet_delayed`, `tcp_undo_cwnd_reduction`, `tcp_try_undo_recovery`,
//! `tcp_try_undo_dsack`, `tcp_try_undo_partial`, `tcp_try_undo_loss`).
//!
//! The evidence ("detector" in the `undo` event): every retransmission was D-SACKed
//! (`undo_retrans` 0: `dsack`); the ACK echoes a TSval older than the first retransmission
//! (`tcp_packet_delayed`, Linux's form of Eifel detection, RFC 3522: `eifel`); nothing was
//! retransmitted yet (`no_retrans`); or F-RTO (RFC 5682) saw never-retransmitted data acked
//! after the timeout (`frto`, the only one Linux counts as TCPSpuriousRTOs).

use super::rack::RACK_RECOVERY_THRESH;
use super::sender::{Sender, SenderEvent};
use crate::cc::CaState;
use crate::tcp::skb::LOST;
use crate::tcp::sto::StoResponse;

impl Sender {
    /// `tcp_packet_delayed`: the ACK echoes a timestamp from before our first retransmission,
    /// so the original got through.
    /// With `eifel_detection` off the TSecr test never passes (RFC 3522 switched off); the
    /// nothing-retransmitted case, which reads no timestamp, stays.
    pub(crate) fn packet_delayed(&self) -> bool {
        if self.retrans_stamp != 0 {
            return self.cfg.eifel_detection
                && self
                    .rcv_tsecr
                    .is_some_and(|ecr| (ecr.wrapping_sub(self.retrans_stamp) as i32) < 0);
        }
        // retrans_stamp is set on the first retransmission of an episode, so 0 normally means
        // nothing was retransmitted yet and the segment was merely delayed. Exception (1) of
        // the kernel: a non-SACK flow clears retrans_stamp when snd_una reaches high_seq
        // (tcp_is_non_sack_preventing_reopen), which proves nothing.
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
    fn log_undo(&mut self, detector: &'static str, via: &str) {
        self.stats.undo_count += 1;
        self.sto_on_undo(detector);
        let detail = format!("detector={detector} via={via} state={:?}", self.tp.ca_state);
        self.event(SenderEvent::Undo, detail);
    }

    /// `tcp_undo_cwnd_reduction`.
    fn undo_cwnd_reduction(&mut self, unmark_loss: bool) {
        if unmark_loss {
            self.rtx.update_all(|skb| skb.sacked &= !LOST);
            self.tp.lost_out = 0;
        }
        if self.sto_undo_is_timeout() && self.cfg.sto_response != StoResponse::Linux {
            self.sto_respond();
        } else if self.tp.prior_ssthresh != 0 {
            let cwnd = self.cc.undo_cwnd(&mut self.tp);
            self.tp.set_cwnd(cwnd);
            if self.tp.prior_ssthresh > self.tp.snd_ssthresh {
                self.tp.snd_ssthresh = self.tp.prior_ssthresh;
                self.ecn_withdraw_cwr();
            }
        }
        self.tp.snd_cwnd_stamp = self.tp.jiffies();
        self.undo_marker = None;
        self.sto.undo_owner.clear();
        self.rack.advanced = true; // Force RACK to re-exam losses
    }

    /// `tcp_is_non_sack_preventing_reopen`: without SACK, hold the state until something
    /// *above* high_seq is ACKed (RFC 6582: prevents false fast retransmits).
    fn is_non_sack_preventing_reopen(&mut self) -> bool {
        if self.tp.snd_una == self.tp.high_seq && !self.is_sack() {
            if !self.any_retrans_done() {
                self.retrans_stamp = 0;
            }
            return true;
        }
        false
    }

    /// `tcp_try_undo_recovery`: at the end of a recovery (or of Loss, through
    /// `tcp_process_loss`).
    pub(crate) fn try_undo_recovery(&mut self) -> bool {
        if self.may_undo() {
            // Happy end! We did not retransmit anything or our original transmission
            // succeeded. (TCPFullUndo, or TCPLossUndo in Loss: never TCPSpuriousRTOs.)
            let detector = self.may_undo_detector();
            self.log_undo(detector, "recovery");
            self.undo_cwnd_reduction(false);
        } else if self.rack.reo_wnd_persist > 0 {
            self.rack.reo_wnd_persist -= 1;
        }
        if self.is_non_sack_preventing_reopen() {
            return true;
        }
        self.set_ca_state(CaState::Open);
        false
    }

    /// `tcp_try_undo_dsack`: every retransmission was D-SACKed, so none was needed.
    pub(crate) fn try_undo_dsack(&mut self) -> bool {
        if self.undo_marker.is_some() && self.undo_retrans == 0 {
            self.rack.reo_wnd_persist = (self.rack.reo_wnd_persist + 1).min(RACK_RECOVERY_THRESH);
            self.log_undo("dsack", "dsack");
            self.undo_cwnd_reduction(false);
            return true;
        }
        false
    }

    /// `tcp_try_undo_partial`: a partial ACK in recovery for data the timestamps show was
    /// never retransmitted.
    pub(crate) fn try_undo_partial(&mut self, prior_snd_una: u64) -> bool {
        if self.undo_marker.is_some() && self.packet_delayed() {
            // Plain luck! Hole if filled with delayed packet, rather than with a retransmit.
            // Check reordering (`tcp_check_sack_reordering(sk, prior_snd_una, 1)`).
            self.check_sack_reordering(prior_snd_una);
            // We are getting evidence that the reordering degree is higher than we realized.
            // If there are no retransmits out then we can undo. Otherwise we clock out new
            // packets but do not mark more packets lost or retransmit more.
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

    /// `tcp_try_undo_loss`: undo a timeout (after a partial ACK, or by F-RTO).
    pub(crate) fn try_undo_loss(&mut self, frto_undo: bool) -> bool {
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
            if self.is_non_sack_preventing_reopen() {
                return true;
            }
            if frto_undo || self.is_sack() {
                self.set_ca_state(CaState::Open);
            }
            return true;
        }
        false
    }
}
