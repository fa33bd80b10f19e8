//! One exchange of the chain: what a sender puts on the air when its backoff ends (a data frame
//! or an A-MPDU), how its receiver decodes it, how the response fares, and how the exchange
//! ends (acknowledged, retried, or dropped at the retry limit; CW and the next backoff). The
//! rules are in the parent module's doc.

use super::node::{DataRx, Exchange};
use super::{draw_backoff, ht, radio, MeshChain};
use crate::link::{DropReason, Dropped};
use crate::packet::NetPacket;
use rand::Rng;

impl<P: NetPacket> MeshChain<P> {
    /// Node `k` transmits its data frame (or A-MPDU) at `t`.
    pub(super) fn transmit(&mut self, t: u64, k: usize) {
        let p = &self.params;
        let n = &mut self.nodes[k];
        n.backoff = None;
        let to = n.queue.front().map_or(k, |f| f.to);
        let mut mpdus = Vec::new();
        let mut psdu_bytes = 0u32;
        let mut wire_bytes = 0u64;
        match p.ampdu {
            None => {
                let b = n.queue.front().map_or(0, |f| f.bytes);
                mpdus.push(0);
                psdu_bytes = p.mpdu_bytes(b);
                wire_bytes = u64::from(b);
            }
            Some((max_frames, max_bytes)) => {
                for (i, f) in n.queue.iter().enumerate() {
                    if mpdus.len() as u32 >= max_frames {
                        break;
                    }
                    if f.to != to {
                        continue;
                    }
                    let sub = ht::ampdu_subframe_bytes(p.mpdu_bytes(f.bytes));
                    if !mpdus.is_empty() && psdu_bytes.saturating_add(sub) > max_bytes {
                        break;
                    }
                    mpdus.push(i);
                    psdu_bytes = psdu_bytes.saturating_add(sub);
                    wire_bytes += u64::from(f.bytes);
                }
            }
        }
        let end = t.saturating_add(p.ppdu_ns(psdu_bytes));
        n.mac.attempts += 1;
        n.mac.mpdus += mpdus.len() as u64;
        n.exchange = Some(Exchange {
            ok: vec![false; mpdus.len()],
            mpdus,
            answered: false,
            end_ns: None,
        });
        let st = &mut self.stats[k];
        st.tx_bytes = st.tx_bytes.saturating_add(wire_bytes);
        let rx = DataRx {
            to,
            response: false,
            interference_mw: 0.0,
            half_duplex: false,
            hidden: false,
        };
        self.begin_emission(t, k, end, Some(rx));
    }

    /// The data frame from `s` ends at `t` at its receiver: which MPDUs got through.
    pub(super) fn receive(&mut self, t: u64, s: usize, d: DataRx) {
        let p = &self.params;
        let deaf = d.half_duplex || !p.senses(d.to, s);
        let sinr_db = radio::mw_to_dbm(p.rx_mw[s][d.to] / (p.noise_mw + d.interference_mw));
        let modulation = p.ht.modulation();
        let floor = p.frame_error_rate;
        let n = &mut self.nodes[s];
        let Some(x) = n.exchange.as_mut() else {
            debug_assert!(false, "a data frame without its exchange");
            return;
        };
        let mut decoded = 0u64;
        for (j, &i) in x.mpdus.iter().enumerate() {
            let f = &mut n.queue[i];
            let lost = deaf || {
                let e = radio::frame_error_rate(sinr_db, modulation, p.mpdu_bytes(f.bytes));
                let e = 1.0 - (1.0 - e) * (1.0 - floor);
                e >= 1.0 || (e > 0.0 && self.rng.random::<f64>() < e)
            };
            if lost {
                continue;
            }
            x.ok[j] = true;
            decoded += 1;
            if let Some(pkt) = f.pkt.take() {
                self.flight
                    .push(t.saturating_add(p.delay_ns), d.to, f.bytes, pkt);
            }
        }
        let sent = x.mpdus.len() as u64;
        n.mac.mpdu_errors += sent - decoded;
        if decoded > 0 {
            let resp_ns = if p.ampdu.is_some() {
                p.block_ack_ns
            } else {
                p.ack_ns
            };
            let start = t.saturating_add(p.sifs_ns);
            let end = start.saturating_add(resp_ns);
            x.answered = true;
            x.end_ns = Some(end);
            self.responses.push((start, d.to, s, end));
        } else {
            x.end_ns = Some(t.saturating_add(p.ack_timeout_ns));
            if d.half_duplex || d.interference_mw > 0.0 {
                n.mac.collisions += 1;
                if d.hidden {
                    n.mac.hidden_collisions += 1;
                }
            } else {
                n.mac.frame_errors += 1;
            }
        }
    }

    /// The response from `r` to `d.to` ends: lost (SINR at the data's sender, at the response's
    /// rate; no floor), the sender's exchange is unanswered.
    pub(super) fn receive_response(&mut self, r: usize, d: DataRx) {
        let p = &self.params;
        let bytes = if p.ampdu.is_some() {
            ht::BLOCK_ACK_BYTES
        } else {
            crate::dcf::phy::ACK_BYTES
        };
        let lost = d.half_duplex || {
            let sinr_db = radio::mw_to_dbm(p.rx_mw[r][d.to] / (p.noise_mw + d.interference_mw));
            let e = radio::frame_error_rate(sinr_db, p.control_modulation, bytes);
            e >= 1.0 || (e > 0.0 && self.rng.random::<f64>() < e)
        };
        if !lost {
            return;
        }
        let n = &mut self.nodes[d.to];
        if let Some(x) = n.exchange.as_mut() {
            x.answered = false;
            n.mac.response_losses += 1;
        }
    }

    /// Node `k`'s exchange ends at `t`: MPDUs acknowledged, retried or dropped; CW; backoff.
    pub(super) fn finish(&mut self, t: u64, k: usize) {
        let p = &self.params;
        let n = &mut self.nodes[k];
        let Some(x) = n.exchange.take() else { return };
        // The queue positions that leave (acknowledged or dropped): few, near the front, so
        // they are removed one by one (VecDeque::remove shifts the front's side), not by a
        // retain over the whole queue.
        let mut gone: Vec<usize> = Vec::with_capacity(x.mpdus.len());
        let mut dropped_all = true;
        for (j, &i) in x.mpdus.iter().enumerate() {
            let f = &mut n.queue[i];
            if x.answered && x.ok[j] {
                n.mac.mpdus_acked += 1;
                gone.push(i);
                continue;
            }
            f.failures += 1;
            if f.failures >= p.retry_limit {
                gone.push(i);
                // Not a loss when the receiver has it (only its response was lost).
                if let Some(pkt) = f.pkt.take() {
                    n.mac.retry_drops += 1;
                    let st = &mut self.stats[k];
                    st.dropped_retry_pkts = st.dropped_retry_pkts.saturating_add(1);
                    self.dropped.push_back((
                        t,
                        Dropped {
                            pkt,
                            reason: DropReason::Retry,
                        },
                    ));
                }
            } else {
                dropped_all = false;
            }
        }
        if x.answered {
            n.mac.successes += 1;
            n.cw = p.cw_min;
        } else if dropped_all {
            n.cw = p.cw_min;
        } else {
            n.cw = n.cw.saturating_mul(2).saturating_add(1).min(p.cw_max);
        }
        gone.sort_unstable();
        for &i in gone.iter().rev() {
            if let Some(f) = n.queue.remove(i) {
                n.pkts -= 1;
                n.bytes -= u64::from(f.bytes);
            }
        }
        n.backoff = Some(draw_backoff(&mut self.rng, n.cw));
        n.garbled = false;
        if n.sensed == 0 {
            n.idle_from_ns = t;
        }
    }
}
