//! RLC acknowledged mode of one radio bearer direction (3GPP TS 25.322): segmentation into
//! PDUs, per-PDU errors, retransmission every interval up to MaxDAT transmissions, discard.
//!
//! Timing, for a packet (SDU) whose PDU j ends its first transmission at `t_j`: a PDU that
//! needs `k_j` retransmissions is through at `t_j + k_j * R` (R the retransmission interval),
//! so the packet is complete at `max_j (t_j + k_j R)`. A PDU that fails all `M` (MaxDAT)
//! transmissions makes the sender discard the packet at `t_j + M R`, when its next
//! transmission would have been due (TS 25.322 section 11.3.4.3, "SDU discard after MaxDAT
//! transmissions"); the earliest such time counts. The link adds in-sequence delivery on top
//! (a packet is never handed on before the one ahead of it, delivered or discarded).
//!
//! The error process. First transmissions step the PDU error process once each, in the order
//! they go on the air (a packet's PDUs in order, packets in order). A retransmission goes out
//! one interval later, when a Gilbert-Elliott channel has moved on by the `slots` PDU
//! transmissions that fit in an interval (at the link's mean rate; every one when the link has
//! no rate). So a retransmission's state is drawn from the chain's `slots`-step law from the
//! state of the PDU's previous attempt, `P(bad) = pi_b + (1[bad] - pi_b) (1 - p_gb - p_bg)^slots`
//! with `pi_b = p_gb / (p_gb + p_bg)`, on the RLC's own stream and without moving the main
//! chain (which the later first transmissions step in order). An approximation: the two are
//! not one sample path. Bernoulli errors are independent either way.
//!
//! Closed forms with Bernoulli PDU errors `e` and `n` PDUs per packet (each PDU's count of
//! retransmissions is geometric, independent of the others): the largest count `K = max_j k_j`
//! of a packet that is not discarded has `P(K <= k) = (1 - e^(k+1))^n`, so
//! `P(K = k) = (1 - e^(k+1))^n - (1 - e^k)^n` for `k` in `0..M`; the packet is discarded with
//! probability `1 - (1 - e^M)^n`.

use super::RadioConfig;
use crate::capacity::Capacity;
use crate::loss::{Loss, LossModel};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// The RLC layer of one direction: settings, the PDU error process and the draws of the packet
/// being sent.
#[derive(Debug, Clone)]
pub struct Rlc {
    pdu_bytes: u32,
    retx_interval_ns: u64,
    max_dat: u32,
    errors: Loss,
    /// The errors' model (for retransmissions).
    model: LossModel,
    /// Draws of retransmissions' errors.
    retx_rng: ChaCha8Rng,
    /// PDU transmissions in one retransmission interval (the chain's steps between attempts).
    slots: i32,
    /// Per PDU of the last packet drawn: retransmissions it needed, or `max_dat` when it
    /// failed every transmission.
    retx: Vec<u32>,
    /// Bytes of the last packet drawn.
    bytes: u32,
}

impl Rlc {
    /// The RLC of `cfg` on a link of `capacity`, drawing first transmissions' errors from
    /// `rng` and retransmissions' from another stream of it. An unvalidated config does not
    /// panic (a PDU size of 0 acts as 1, MaxDAT 0 as 1).
    pub fn new(cfg: &RadioConfig, capacity: Option<&Capacity>, rng: ChaCha8Rng) -> Self {
        let pdu_bytes = cfg.pdu_bytes.max(1);
        // PDU transmissions per interval at the mean rate; no rate: the chain mixes fully.
        let slots = capacity.map_or(f64::INFINITY, |c| {
            let pdu_s = f64::from(pdu_bytes) * 8.0 / c.mean_rate_bps();
            cfg.rlc_retx_interval_ns as f64 / 1e9 / pdu_s
        });
        let slots = if slots.is_finite() {
            slots.round().clamp(1.0, f64::from(i32::MAX)) as i32
        } else {
            i32::MAX
        };
        let mut retx_rng = rng.clone();
        retx_rng.set_stream(rng.get_stream() ^ RETX_STREAM);
        Rlc {
            pdu_bytes,
            retx_interval_ns: cfg.rlc_retx_interval_ns,
            max_dat: cfg.max_dat.max(1),
            errors: Loss::new(cfg.pdu_loss.clone(), rng),
            model: cfg.pdu_loss.clone(),
            retx_rng,
            slots,
            retx: Vec::new(),
            bytes: 0,
        }
    }

    /// PDUs a packet of `bytes` is cut into (at least one).
    pub fn pdus(&self, bytes: u32) -> u32 {
        bytes.div_ceil(self.pdu_bytes).max(1)
    }

    /// Payload bytes of PDU `j` of a packet of `bytes` (the last one may be short).
    fn pdu_size(&self, bytes: u32, j: u32) -> u32 {
        bytes
            .saturating_sub(j.saturating_mul(self.pdu_bytes))
            .min(self.pdu_bytes)
    }

    /// Draw the fate of every PDU of a packet of `bytes`, in order: its first transmission
    /// from the main error process, then its retransmissions as the module doc says. Returns
    /// the bytes of the retransmitted PDUs (the extra work of the bearer) and whether the
    /// packet is discarded.
    pub fn draw(&mut self, bytes: u32) -> (u64, bool) {
        self.bytes = bytes;
        self.retx.clear();
        let mut retx_bytes: u64 = 0;
        let mut discarded = false;
        for j in 0..self.pdus(bytes) {
            let mut k = 0;
            let mut lost = self.errors.drop_next();
            let mut bad = self.errors.in_bad_state();
            while lost {
                k += 1;
                if k == self.max_dat {
                    break;
                }
                lost = self.retx_lost(&mut bad);
            }
            discarded |= k == self.max_dat;
            // A PDU that failed all transmissions was retransmitted max_dat - 1 times.
            let sent_again = k.min(self.max_dat - 1);
            retx_bytes += u64::from(sent_again) * u64::from(self.pdu_size(bytes, j));
            self.retx.push(k);
        }
        (retx_bytes, discarded)
    }

    /// Whether a retransmission is lost, one interval after an attempt made in state `bad`
    /// (updated to the retransmission's state): see the module doc.
    fn retx_lost(&mut self, bad: &mut bool) -> bool {
        match self.model {
            // `nth` is refused for PDUs (`RadioConfig::validate`).
            LossModel::None | LossModel::Nth { .. } => false,
            LossModel::Bernoulli { p } => p > 0.0 && self.retx_rng.random::<f64>() < p,
            LossModel::GilbertElliott {
                p_good_bad,
                p_bad_good,
                loss_good,
                loss_bad,
            } => {
                let s = p_good_bad + p_bad_good;
                let pi_bad = if s > 0.0 { p_good_bad / s } else { 0.0 };
                let now = if *bad { 1.0 } else { 0.0 };
                let p_bad = pi_bad + (now - pi_bad) * (1.0 - s).powi(self.slots);
                // Both uniforms always drawn, so the stream stays aligned per retransmission.
                *bad = self.retx_rng.random::<f64>() < p_bad;
                let p = if *bad { loss_bad } else { loss_good };
                let u: f64 = self.retx_rng.random();
                p > 0.0 && u < p
            }
        }
    }

    /// Bytes of the first `j + 1` PDUs of the last packet drawn (its bytes sent when PDU `j`
    /// ends its first transmission).
    pub fn bytes_through_pdu(&self, j: u32) -> u32 {
        j.saturating_add(1)
            .saturating_mul(self.pdu_bytes)
            .min(self.bytes)
    }

    /// When the last packet drawn is complete (all its PDUs through), or discarded if
    /// [`Rlc::draw`] said so, given `first_end_ns(j)`: when PDU j ends its first transmission.
    pub fn done_ns(&self, first_end_ns: impl Fn(u32) -> u64) -> u64 {
        let r = self.retx_interval_ns;
        let at = |j: usize, k: u32| first_end_ns(j as u32).saturating_add(u64::from(k) * r);
        let failed = self
            .retx
            .iter()
            .enumerate()
            .filter(|&(_, &k)| k == self.max_dat)
            .map(|(j, &k)| at(j, k))
            .min();
        failed.unwrap_or_else(|| {
            self.retx
                .iter()
                .enumerate()
                .map(|(j, &k)| at(j, k))
                .max()
                .unwrap_or(0)
        })
    }

    /// Per PDU of the last packet drawn: retransmissions it needed (`max_dat`: it failed every
    /// transmission).
    pub fn last_retx(&self) -> &[u32] {
        &self.retx
    }

    /// The retransmission interval, ns.
    pub fn retx_interval_ns(&self) -> u64 {
        self.retx_interval_ns
    }
}

/// Stream offset of the retransmissions' error draws from the first transmissions' ("RTX").
const RETX_STREAM: u64 = 0x52_54_58;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::loss::LossModel;
    use crate::rng::stream;

    fn rlc(e: f64, max_dat: u32) -> Rlc {
        let cfg = RadioConfig {
            pdu_loss: LossModel::Bernoulli { p: e },
            max_dat,
            ..RadioConfig::default()
        };
        Rlc::new(&cfg, None, stream(1, "rlc"))
    }

    #[test]
    fn segments_and_retransmitted_bytes() {
        let mut r = rlc(0.0, 6);
        assert_eq!(
            (r.pdus(0), r.pdus(42), r.pdus(43), r.pdus(1500)),
            (1, 1, 2, 36)
        );
        assert_eq!(r.draw(1500), (0, false));
        assert_eq!(r.bytes_through_pdu(0), 42);
        assert_eq!(r.bytes_through_pdu(35), 1500, "the last PDU is short");
        assert_eq!(r.done_ns(|j| 100 + u64::from(j)), 135);
        // Every transmission fails: each PDU is sent max_dat times, then the packet is
        // discarded max_dat intervals after the first PDU's first transmission.
        let mut r = rlc(1.0, 3);
        assert_eq!(r.draw(50), (2 * 42 + 2 * 8, true));
        assert_eq!(r.last_retx(), [3, 3]);
        assert_eq!(r.done_ns(|j| 10 * u64::from(j)), 3 * 400_000_000);
    }

    #[test]
    fn complete_when_the_slowest_pdu_is_through() {
        let mut r = rlc(0.0, 6);
        r.draw(100);
        r.retx = vec![0, 2, 1];
        let t = |j: u32| 1000 * u64::from(j);
        assert_eq!(r.done_ns(t), 1000 + 2 * 400_000_000);
        r.retx = vec![0, 6, 1];
        assert_eq!(
            r.done_ns(t),
            1000 + 6 * 400_000_000,
            "discarded at the failed PDU's time"
        );
    }

    /// P(K = k) = (1 - e^(k+1))^n - (1 - e^k)^n for k < M, and 1 - (1 - e^M)^n discarded.
    #[test]
    fn retransmission_counts_match_the_closed_form() {
        // n = 36 PDUs (1500 B), e = 0.05, M = 4; 200 000 packets. Each share p is checked
        // against 5 standard errors, sqrt(p (1 - p) / N), plus 1e-4 for the tiny ones.
        let (e, n, m, packets) = (0.05f64, 36i32, 4u32, 200_000usize);
        let mut r = rlc(e, m);
        let mut counts = vec![0usize; m as usize + 1];
        for _ in 0..packets {
            let (_, discarded) = r.draw(1500);
            let k = if discarded {
                m as usize
            } else {
                *r.last_retx().iter().max().unwrap() as usize
            };
            counts[k] += 1;
        }
        let cdf = |k: i32| (1.0 - e.powi(k + 1)).powi(n);
        for k in 0..=m as i32 {
            let want = if k == m as i32 {
                1.0 - (1.0 - e.powi(m as i32)).powi(n)
            } else if k == 0 {
                cdf(0)
            } else {
                cdf(k) - cdf(k - 1)
            };
            let got = counts[k as usize] as f64 / packets as f64;
            let tol = 5.0 * (want * (1.0 - want) / packets as f64).sqrt() + 1e-4;
            assert!(
                (got - want).abs() < tol,
                "k = {k}: {got} vs {want} (tol {tol})"
            );
        }
    }

    #[test]
    fn gilbert_elliott_retransmissions_see_the_channel_one_interval_later() {
        // Long bad spells (mean 1000 PDUs) that always lose, a good state that never does.
        let ge = LossModel::GilbertElliott {
            p_good_bad: 0.0005,
            p_bad_good: 0.001,
            loss_good: 0.0,
            loss_bad: 1.0,
        };
        let cfg = |max_dat| RadioConfig {
            pdu_loss: ge.clone(),
            max_dat,
            ..RadioConfig::default()
        };
        // 42 B at 384 kbit/s: 457 PDU slots per 400 ms; a PDU lost in the bad state is lost
        // again with probability pi_b + (1 - pi_b) 0.9985^457 = 1/3 + 2/3 * 0.504 = 0.669.
        let rate = Capacity::Rate { rate_bps: 384_000 };
        let mut r = Rlc::new(&cfg(2), Some(&rate), stream(2, "rlc"));
        let (mut first_lost, mut again) = (0u32, 0u32);
        for _ in 0..100_000 {
            r.draw(42);
            match r.last_retx()[0] {
                0 => {}
                1 => first_lost += 1,
                _ => {
                    first_lost += 1;
                    again += 1;
                }
            }
        }
        let want = 1.0 / 3.0 + 2.0 / 3.0 * (1.0f64 - 0.0015).powi(457);
        let got = f64::from(again) / f64::from(first_lost);
        // About 33 000 first losses: standard error 0.0026; 5 of them.
        assert!((got - want).abs() < 0.013, "{got} vs {want}");
        // Without a rate the chain has mixed: a retransmission is lost with pi_b = 1/3.
        let mut r = Rlc::new(&cfg(2), None, stream(2, "rlc"));
        let (mut first_lost, mut again) = (0u32, 0u32);
        for _ in 0..100_000 {
            r.draw(42);
            first_lost += u32::from(r.last_retx()[0] >= 1);
            again += u32::from(r.last_retx()[0] == 2);
        }
        let got = f64::from(again) / f64::from(first_lost);
        assert!((got - 1.0 / 3.0).abs() < 0.013, "{got}");
    }

    #[test]
    fn residual_loss_matches_the_closed_form() {
        // e = 0.3, M = 3, n = 12 (500 B): 1 - (1 - 0.027)^12 = 0.2805; N = 100 000,
        // standard error 0.0014, checked within 5 of them.
        let (e, m, n, packets) = (0.3f64, 3u32, 12i32, 100_000usize);
        let mut r = rlc(e, m);
        let lost = (0..packets).filter(|_| r.draw(500).1).count();
        let want = 1.0 - (1.0 - e.powi(m as i32)).powi(n);
        let got = lost as f64 / packets as f64;
        let tol = 5.0 * (want * (1.0 - want) / packets as f64).sqrt();
        assert!((got - want).abs() < tol, "{got} vs {want}");
    }
}
