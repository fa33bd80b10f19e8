//! Random delay spikes of a radio link: fades during which the link delivers nothing.
//!
//! An alternating renewal process from time 0, radio up: an up period lasts an exponential time
//! of mean `1 / spike_rate_per_s`, then a fade lasts `spike_duration_min + Exp(mean - min)`,
//! and so on. The long-run share of time in a fade is `r m / (1 + r m)` (rate `r`, mean
//! duration `m`), about `r m` when fades are rare. Fades are drawn lazily, in order, as the
//! link asks about later times; the draws do not depend on when it asks, so two processes on
//! one stream (the two directions of a link) see the same fades.

use super::RadioConfig;
use crate::NS_PER_S;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// The fades of one link (one copy per direction, on a shared stream).
#[derive(Debug, Clone)]
pub struct SpikeProcess {
    /// Mean up time between fades, ns; 0: no fades at all.
    mean_up_ns: f64,
    /// Shortest fade, ns.
    min_ns: u64,
    /// Mean of the exponential part of a fade, ns.
    extra_mean_ns: f64,
    rng: ChaCha8Rng,
    /// The current or next fade, `[start_ns, end_ns)`; every earlier fade ended before the
    /// last time asked about.
    start_ns: u64,
    end_ns: u64,
}

/// An exponential draw of mean `mean` (>= 0), rounded to ns; one uniform per draw.
fn exp_ns(rng: &mut ChaCha8Rng, mean: f64) -> u64 {
    let u: f64 = rng.random();
    // u in [0, 1): 1 - u in (0, 1], so the log is finite.
    let x = -(1.0 - u).ln() * mean;
    x.round() as u64 // saturates on overflow
}

impl SpikeProcess {
    /// The fades of `cfg` drawn from `rng` ([`super::spike_rng`]); none when its rate is 0.
    pub fn new(cfg: &RadioConfig, rng: ChaCha8Rng) -> Self {
        let rate = cfg.spike_rate_per_s;
        let mean_up_ns = if rate > 0.0 && rate.is_finite() {
            NS_PER_S as f64 / rate
        } else {
            0.0
        };
        let mut p = SpikeProcess {
            mean_up_ns,
            min_ns: cfg.spike_duration_min_ns,
            extra_mean_ns: cfg
                .spike_duration_mean_ns
                .saturating_sub(cfg.spike_duration_min_ns) as f64,
            rng,
            start_ns: u64::MAX,
            end_ns: u64::MAX,
        };
        if p.mean_up_ns > 0.0 {
            p.end_ns = 0;
            p.next_fade();
        }
        p
    }

    /// Draw the fade after the current one.
    fn next_fade(&mut self) {
        let up = exp_ns(&mut self.rng, self.mean_up_ns);
        self.start_ns = self.end_ns.saturating_add(up);
        let len = self
            .min_ns
            .saturating_add(exp_ns(&mut self.rng, self.extra_mean_ns));
        self.end_ns = self.start_ns.saturating_add(len);
    }

    /// The current or next fade as of `t_ns`: the first whose end is after `t_ns`, as
    /// `(start_ns, end_ns)`; None when there are no fades. `t_ns` must not decrease from one
    /// call to the next.
    pub fn fade_after(&mut self, t_ns: u64) -> Option<(u64, u64)> {
        if self.mean_up_ns == 0.0 {
            return None;
        }
        while self.end_ns <= t_ns && self.end_ns < u64::MAX {
            self.next_fade();
        }
        Some((self.start_ns, self.end_ns))
    }

    /// When a packet that would reach the far end at `t_ns` is delivered: `t_ns`, or the end
    /// of the fade it falls in (and of any fade that starts right then). `t_ns` must not
    /// decrease from one call to the next.
    pub fn hold(&mut self, mut t_ns: u64) -> u64 {
        while let Some((start, end)) = self.fade_after(t_ns) {
            if t_ns < start || end <= t_ns {
                break;
            }
            t_ns = end;
        }
        t_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::stream;
    use crate::NS_PER_MS;

    fn process(rate_per_s: f64, min_ms: u64, mean_ms: u64, seed: u64) -> SpikeProcess {
        let cfg = RadioConfig {
            spike_rate_per_s: rate_per_s,
            spike_duration_min_ns: min_ms * NS_PER_MS,
            spike_duration_mean_ns: mean_ms * NS_PER_MS,
            ..RadioConfig::default()
        };
        SpikeProcess::new(&cfg, stream(seed, "spikes"))
    }

    #[test]
    fn no_rate_no_fades() {
        let mut p = process(0.0, 100, 200, 1);
        assert_eq!(p.fade_after(0), None);
        assert_eq!(p.hold(12345), 12345);
    }

    #[test]
    fn share_of_time_in_fades_matches_the_renewal_formula() {
        // r = 0.05/s, m = 2 s (min 0.3 s): share r m / (1 + r m) = 1/11 = 0.0909 over 10^6 s
        // (about 45 000 fades). The share's standard error is about 0.0005 here; we allow
        // 3 % of the share (6 standard errors).
        let (r, m) = (0.05, 2.0);
        let horizon = 1_000_000 * NS_PER_S;
        let mut p = process(r, 300, 2000, 7);
        let (mut t, mut fading, mut fades, mut shortest) = (0, 0u64, 0u64, u64::MAX);
        while let Some((s, e)) = p.fade_after(t) {
            if s >= horizon {
                break;
            }
            assert!(s >= t, "fades do not overlap");
            fading += e.min(horizon) - s;
            fades += 1;
            shortest = shortest.min(e - s);
            t = e;
        }
        let share = fading as f64 / horizon as f64;
        let want = r * m / (1.0 + r * m);
        assert!((share - want).abs() < 0.03 * want, "{share} vs {want}");
        assert!(shortest >= 300 * NS_PER_MS);
        let mean_len_s = fading as f64 / fades as f64 / NS_PER_S as f64;
        assert!((mean_len_s - m).abs() < 0.03 * m, "{mean_len_s}");
    }

    #[test]
    fn hold_moves_arrivals_to_the_end_of_a_fade() {
        let mut p = process(1.0, 500, 500, 3);
        let mut probe = p.clone();
        let (s, e) = probe.fade_after(0).unwrap();
        assert_eq!(
            e - s,
            500 * NS_PER_MS,
            "min = mean: every fade is the minimum"
        );
        let fresh = p.clone();
        if s > 0 {
            assert_eq!(fresh.clone().hold(s - 1), s - 1);
        }
        assert_eq!(fresh.clone().hold(e - 1), e);
        let held = p.hold(s);
        // At the end, unless the next fade starts right then (an up time rounded to 0 ns).
        let (s2, e2) = probe.fade_after(e).unwrap();
        assert_eq!(held, if s2 == e { e2 } else { e });
        assert_eq!(p.hold(held), held, "the end of a fade is outside it");
    }

    #[test]
    fn copies_on_one_stream_see_the_same_fades_whatever_they_ask() {
        let mut a = process(0.5, 100, 800, 9);
        let mut b = process(0.5, 100, 800, 9);
        let mut fa = Vec::new();
        let mut t = 0;
        while fa.len() < 50 {
            let f = a.fade_after(t).unwrap();
            fa.push(f);
            t = f.1;
        }
        // b is asked at irregular times; it reports the same fades.
        let mut fb: Vec<(u64, u64)> = Vec::new();
        let mut t = 0;
        while fb.len() < 50 {
            let f = b.fade_after(t).unwrap();
            if fb.last() != Some(&f) {
                fb.push(f);
            }
            t += 37 * NS_PER_MS;
        }
        assert_eq!(fa, fb);
    }
}
