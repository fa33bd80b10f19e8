//! Tail loss probes (RACK-TLP, RFC 8985 section 7), as Linux 6.18 `net/ipv4/tcp_output.c`
//! (`tcp_schedule_loss_probe`, `tcp_send_loss_probe`) and `net/ipv4/tcp_input.c`
//! (`tcp_process_tlp_ack`). When the tail of a flight is lost no later segment can be SACKed,
//! so RACK cannot see it; a probe about two RTTs after the last send (new data, or the last
//! segment again) draws the SACK that starts fast recovery instead of waiting for the RTO.

use super::sender::{flag, Sender, SenderEvent, XmitTimer};
use crate::cc::{CaEvent, CaState};
use crate::tcp::segment::DataSeg;

/// `TCP_TIMEOUT_MIN_US`.
const TIMEOUT_MIN_US: u64 = 2_000;
/// `TCP_TIMEOUT_INIT`, us.
const TIMEOUT_INIT_US: u64 = 1_000_000;

impl Sender {
    /// `tcp_schedule_loss_probe`: arm the probe timer (2 srtt, plus rto_min when a single
    /// packet is out for the peer's delayed ACK, never later than the RTO). Returns whether it
    /// was armed.
    pub(crate) fn schedule_loss_probe(&mut self, advancing_rto: bool) -> bool {
        if !self.cfg.tlp
            || !self.is_sack()
            || !matches!(self.tp.ca_state, CaState::Open | CaState::Cwr)
        {
            return false;
        }
        let mut timeout_us = if self.tp.srtt_us != 0 {
            let mut t = (self.tp.srtt_us >> 2) as u64;
            t += if self.tp.packets_out == 1 {
                self.cfg.rto_min_us
            } else {
                TIMEOUT_MIN_US
            };
            self.jiffies_to_us(self.us_to_jiffies(t))
        } else {
            TIMEOUT_INIT_US
        };
        // If the RTO formula yields an earlier time, then use that time.
        let rto_delta_us = if advancing_rto {
            self.tp.icsk_rto_us as i64
        } else {
            self.rto_delta_us()
        };
        if rto_delta_us > 0 {
            let rto = self.jiffies_to_us(self.us_to_jiffies(rto_delta_us as u64));
            timeout_us = timeout_us.min(rto);
        }
        self.reset_xmit_timer(XmitTimer::LossProbe, timeout_us);
        true
    }

    /// `tcp_send_loss_probe`: send new data if there is some, else retransmit the last
    /// segment; at most one probe outstanding. Always rearms the RTO.
    pub(crate) fn send_loss_probe(&mut self, out: &mut Vec<DataSeg>) {
        if self.tlp_high_seq.is_none() {
            self.tlp_retrans = false;
            let mut sent = false;
            if let Some(len) = self.next_new_len() {
                if self.tp.snd_nxt + len <= self.tp.snd_una.saturating_add(self.snd_wnd) {
                    sent = self.write_xmit_inner(out, true) > 0;
                }
            } else if !self.rtx.is_empty() {
                // __tcp_retransmit_skb of the last segment: EVER_RETRANS, but not counted in
                // retrans_out (it is a probe, not a repair).
                let last = self.rtx.len() - 1;
                self.probe_retransmit(last, out);
                self.tlp_retrans = true;
                sent = true;
            }
            if sent {
                // Record snd_nxt for loss detection.
                self.tlp_high_seq = Some(self.tp.snd_nxt);
                self.stats.tlp_count += 1;
                let detail = format!("retrans={} snd_nxt={}", self.tlp_retrans, self.tp.snd_nxt);
                self.event(SenderEvent::LossProbe, detail);
                // Reset so that tcp_rearm_rto restarts the timer from now.
                self.xmit_timer = None;
            }
        }
        self.rearm_rto();
    }

    /// `tcp_process_tlp_ack`: was the probed tail really lost?
    pub(crate) fn process_tlp_ack(&mut self, ack: u64, f: u32) {
        let Some(high) = self.tlp_high_seq else {
            return;
        };
        if ack < high {
            return;
        }
        if !self.tlp_retrans || f & flag::DSACK_TLP != 0 {
            // New data probe acked, or the original and the probe both arrived: no loss.
            self.tlp_high_seq = None;
        } else if ack > high {
            // ACK advances past the probe: there was a loss, so reduce cwnd.
            self.init_cwnd_reduction();
            self.set_ca_state(CaState::Cwr);
            self.end_cwnd_reduction();
            self.try_keep_open();
            // google/bbr v3: tell the algorithm the probe repaired a loss
            // (`CA_EVENT_TLP_RECOVERY`, tcp_process_tlp_ack).
            self.cc.cwnd_event(&mut self.tp, CaEvent::TlpRecovery);
        } else if f & (flag::SND_UNA_ADVANCED | flag::NOT_DUP | flag::DATA_SACKED) == 0 {
            // Pure dupack: original and TLP probe arrived; no loss.
            self.tlp_high_seq = None;
        }
    }
}
