//! The SACK scoreboard and the reordering it reveals, as Linux 6.18 `net/ipv4/tcp_input.c`:
//! `tcp_sacktag_write_queue` (with `tcp_check_dsack`, `tcp_dsack_seen`, `tcp_is_sackblock_valid`
//! and `tcp_sacktag_one`), `tcp_check_sack_reordering`, and for flows without SACK the dupack
//! count that stands in for it (`tcp_add_reno_sack`, `tcp_remove_reno_sacks`,
//! `tcp_check_reno_reordering`).
//!
//! Segments are one MSS each (no TSO in the retransmission queue), so the kernel's shifting and
//! fragmenting of skbs to match a block (`tcp_shift_skb_data`, `tcp_match_skb_to_sack`) and its
//! cache of the previous ACK's blocks (`recv_sack_cache`, a shortcut with the same result) have
//! nothing to do here.

use super::sender::{flag, SackState, Sender};
use crate::cc::CaState;
use crate::tcp::segment::{AckSeg, SeqRange};
use crate::tcp::skb::{EVER_RETRANS, LOST, SACKED_ACKED, SACKED_RETRANS};

/// `sysctl_tcp_max_reordering`.
const MAX_REORDERING: u32 = 300;

impl Sender {
    /// `tcp_sacktag_write_queue`: apply the ACK's SACK blocks to the scoreboard. Newly SACKed
    /// segments (and D-SACKed ones, see `dsack_seen`) are counted in `ss.sack_delivered`; the
    /// caller adds them to `tp.delivered` (`tcp_count_delivered` in `tcp_ack`).
    pub(crate) fn sacktag(
        &mut self,
        a: &AckSeg,
        prior_snd_una: u64,
        flags: &mut u32,
        ss: &mut SackState,
    ) -> u32 {
        let blocks = a.sacks();
        let mut f = 0u32;
        let found_dup_sack = self.check_dsack(a, prior_snd_una, &mut f, ss);
        // Eliminate too old ACKs, but take into account more or less fresh ones, they can
        // contain valid SACK info. (The kernel returns 0 here: not even the D-SACK flags.)
        if a.ack < prior_snd_una.saturating_sub(self.max_window) {
            return 0;
        }
        if self.tp.packets_out == 0 {
            *flags |= f;
            return f;
        }
        // The blocks worth walking: valid (`tcp_is_sackblock_valid`) and not wholly below
        // prior_snd_una ("ignore very old stuff early"). Then walk them in sequence order, as
        // the kernel sorts them ("order SACK blocks to allow in order walk of the retrans
        // queue"; the receiver lists the most recent first), so that a newly SACKed segment
        // lies below the highest SACKed sequence only when an earlier ACK SACKed above it.
        let mut used = [(SeqRange::default(), false); 4];
        let mut n = 0;
        for (i, b) in blocks.iter().enumerate() {
            let dup_sack = i == 0 && found_dup_sack;
            if !self.is_sackblock_valid(dup_sack, b.start, b.end) || b.end <= prior_snd_una {
                continue;
            }
            used[n] = (*b, dup_sack);
            n += 1;
        }
        let used = &mut used[..n];
        used.sort_by_key(|(b, _)| b.start); // stable, like the kernel's bubble sort
        for &(b, dup_sack) in used.iter() {
            // The segments still queued: those between prior_snd_una and the new snd_una are
            // freed only by tcp_clean_rtx_queue, after this (a D-SACK for one of them still
            // counts in undo_retrans).
            let Some(head) = self.rtx.head() else {
                break;
            };
            let Some(mut i) = self.rtx.index_of(b.start.max(head.seq)) else {
                continue;
            };
            // Segments already SACKed and counted (`RtxQueue::next_unsettled`) are skipped
            // unless the block is a D-SACK: tagging them again changes nothing.
            loop {
                let next = if dup_sack {
                    (i < self.rtx.len()).then_some(i)
                } else {
                    self.rtx.next_unsettled(i)
                };
                let Some(j) = next else {
                    break;
                };
                let skb = *self.rtx.get(j);
                if skb.seq >= b.end {
                    break;
                }
                if skb.seq >= b.start && skb.end_seq <= b.end {
                    self.sacktag_one(j, dup_sack, &mut f, ss);
                }
                i = j + 1;
            }
        }
        // Reordering is not measured in Loss, where retransmissions cannot be accounted for,
        // unless there is something to undo.
        if let Some(low) = ss.reord {
            if self.tp.ca_state != CaState::Loss || self.undo_marker.is_some() {
                self.check_sack_reordering(low);
            }
        }
        *flags |= f;
        f
    }

    /// `tcp_check_dsack`: whether the ACK's first block is a D-SACK (RFC 2883): below the
    /// cumulative ACK (case 1) or inside the second block (case 2), and not dubious.
    fn check_dsack(
        &mut self,
        a: &AckSeg,
        prior_snd_una: u64,
        f: &mut u32,
        ss: &mut SackState,
    ) -> bool {
        let blocks = a.sacks();
        let b0 = blocks[0];
        let dup = b0.start < a.ack
            || (blocks.len() > 1 && b0.start >= blocks[1].start && b0.end <= blocks[1].end);
        if !dup {
            return false;
        }
        let dup_segs = self.dsack_seen(b0.start, b0.end, f, ss);
        if dup_segs == 0 {
            return false; // Skip dubious DSACK.
        }
        // D-SACK for already forgotten data... Do dumb counting. (Not with `dsack_undo` off:
        // then no D-SACK is evidence for an undo.)
        if let Some(um) = self.undo_marker.filter(|_| self.cfg.dsack_undo) {
            if self.undo_retrans > 0 && b0.end <= prior_snd_una && b0.end > um {
                self.undo_retrans = (self.undo_retrans - dup_segs as i32).max(0);
            }
        }
        true
    }

    /// `tcp_dsack_seen` (6.18): take note of a D-SACK for `[start, end)`; returns how many
    /// segments it reports duplicated, 0 when it is dubious and ignored: longer than the peer's
    /// largest window (`tp->max_window`), or
    /// more duplicates reported over the connection than the sender ever retransmitted
    /// (`tp->dsack_dups > tp->total_retrans`). RACK widens its reordering window only for
    /// D-SACKs that may come from reordering having made it retransmit spuriously: not before
    /// any reordering was seen (`tp->reord_seen`), nor for the tail loss probe's retransmission
    /// (timer-driven, `FLAG_DSACK_TLP`). "A spurious retransmission is delivered": the
    /// duplicated segments count in `sack_delivered`.
    fn dsack_seen(&mut self, start: u64, end: u64, f: &mut u32, ss: &mut SackState) -> u32 {
        if start >= end {
            return 0;
        }
        let seq_len = end - start;
        if seq_len > self.max_window {
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
        ss.sack_delivered += dup_segs;
        dup_segs
    }

    /// `tcp_is_sackblock_valid`: a block must end within what was sent and lie above snd_una;
    /// a D-SACK may lie below snd_una, if it is not older than the start of the reduction we
    /// may undo (`undo_marker`; one crossing it by less than a window counts too).
    fn is_sackblock_valid(&self, is_dsack: bool, start: u64, end: u64) -> bool {
        // Too far in future, or reversed (interpretation is ambiguous).
        if end > self.tp.snd_nxt || start >= end {
            return false;
        }
        if start >= self.tp.snd_nxt {
            return false;
        }
        // In outstanding window? ...This is valid exit for D-SACKs too. start_seq == snd_una
        // is non-sensical.
        if start > self.tp.snd_una {
            return true;
        }
        let Some(undo_marker) = self.undo_marker.filter(|_| is_dsack) else {
            return false;
        };
        // ...Then it's D-SACK, and must reside below snd_una completely.
        if end > self.tp.snd_una {
            return false;
        }
        if start >= undo_marker {
            return true;
        }
        // Too old.
        if end <= undo_marker {
            return false;
        }
        // Undo_marker boundary crossing (overestimates a lot).
        start >= end.saturating_sub(self.max_window)
    }

    /// `tcp_highest_sack_seq`: the end of the highest SACKed segment, snd_una when none is.
    pub(crate) fn highest_sack_seq(&self) -> u64 {
        if self.tp.sacked_out == 0 {
            return self.tp.snd_una;
        }
        self.highest_sack_end
    }

    /// `tcp_check_sack_reordering`: data at `low_seq`, never retransmitted, was delivered after
    /// data up to the highest SACKed sequence (fack, as it is now). The distance in segments is
    /// `DIV_ROUND_UP(fack - low_seq, mss)`, and `tp->reordering` grows to it only when it is
    /// larger (capped by `tcp_max_reordering`).
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
        // Account D-SACK for retransmitted packet.
        if dup && sacked & EVER_RETRANS != 0 {
            if let Some(um) = self.undo_marker.filter(|_| self.cfg.dsack_undo) {
                if self.undo_retrans > 0 && skb.end_seq > um {
                    self.undo_retrans -= 1;
                }
            }
            // A D-SACK for a retransmitted segment already SACKed: the original got there
            // after all, so it is reordering too.
            if sacked & SACKED_ACKED != 0 && ss.reord.is_none_or(|r| skb.seq < r) {
                ss.reord = Some(skb.seq);
            }
        }
        // Nothing to do; acked frame is about to be dropped (was ACKed).
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
            // Out-of-order packets delivered.
            ss.sack_delivered += 1;
            // tcp_sacktag_walk: tcp_advance_highest_sack.
            self.highest_sack_end = self.highest_sack_end.max(skb.end_seq);
        }
        // D-SACK. We can detect redundant retransmission in S|R and plain R frames and clear
        // it.
        if dup && sacked & SACKED_RETRANS != 0 {
            sacked &= !SACKED_RETRANS;
            self.tp.retrans_out -= 1;
        }
        self.rtx.update(idx, |s| s.sacked = sacked);
        // tcp_sacktag_walk: tcp_rate_skb_delivered after tagging.
        self.rate_skb_delivered(idx, &mut ss.rate);
    }

    /// `tcp_add_reno_sack`: without SACK, count dupacks as SACKed segments.
    pub(crate) fn add_reno_sack(&mut self, num_dupack: u32) {
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

    /// `tcp_check_reno_reordering` + `tcp_limit_reno_sacked`: more dupacks than segments out
    /// means reordering.
    fn check_reno_reordering(&mut self, addend: u32) {
        let holes = self.tp.lost_out.max(1).min(self.tp.packets_out);
        if self.tp.sacked_out + holes > self.tp.packets_out {
            self.tp.sacked_out = self.tp.packets_out - holes;
            self.reordering = (self.tp.packets_out + addend).min(MAX_REORDERING);
            self.reord_seen += 1;
        }
    }
}
