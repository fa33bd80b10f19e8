//! The kernel's clock for TCP's `timer_list` timers: jiffies, and the timer wheel that decides
//! when a timer armed for a jiffy really fires (Linux 6.18 `kernel/time/timer.c`).
//!
//! TCP arms its retransmission timer (RTO, tail loss probe, RACK reordering timeout, zero-window
//! probe), its delayed-ACK timer and the SYN / SYN-ACK retransmission timers as `timer_list`s:
//! `sk_reset_timer` -> `mod_timer(timer, jiffies + when)`. The wheel does not fire a timer at its
//! expiry jiffy. `calc_wheel_index` picks a level by how far the expiry is from the base clock
//! (`delta = expires - clk`; level n holds deltas below `LVL_START(n + 1)`), and `calc_index`
//! rounds the expiry up to that level's next bucket, strictly after it:
//! `bucket_expiry = ((expires >> 3n) + 1) << 3n`. Buckets are 8^n jiffies, so at HZ = 250 a
//! timer under 252 ms fires one jiffy after its expiry (4 ms), one up to 2 s up to 8 jiffies
//! after it (32 ms), one up to 16 s up to 64 jiffies after it (256 ms). The timer runs at the
//! tick that brings jiffies to `bucket_expiry` (`__run_timers`: collected when `base->clk`
//! reaches the bucket).
//!
//! Ticks fall on multiples of the tick period of CLOCK_MONOTONIC (`tick_setup_device` aligns
//! `tick_next_period` to TICK_NSEC), so jiffies are `floor(monotonic / tick) + constant`. Here
//! jiffies are `jiffies_at_zero + floor((t + tick_phase) / tick)` for simulated time `t`; the two
//! offsets say where simulated time zero falls on the kernel's tick grid. They are 0 by default
//! and settable (`[sim] jiffies_at_zero`, `tick_phase_us`) so that a run can be paired with a
//! kernel run whose clock the kernel backend read (`summary.json` `kernel_clock`).
//!
//! Simplifications: the base clock is taken as jiffies when a timer is armed (`__mod_timer`
//! forwards it; inside a timer callback the kernel's base is already one jiffy ahead, which only
//! matters for an expiry exactly at a level boundary), and the softirq's latency after the tick
//! is 0. `timer_wheel = false` fires every timer at its expiry jiffy, the model before the wheel.

/// Bits per level step (`LVL_CLK_SHIFT`).
const LVL_CLK_SHIFT: u32 = 3;
/// Buckets per level (`LVL_SIZE`, 1 << `LVL_BITS`).
const LVL_SIZE: u64 = 64;

/// The kernel's tick clock and timer wheel, as seen from simulated time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelClock {
    /// CONFIG_HZ.
    pub hz: u32,
    /// jiffies at simulated time zero.
    pub jiffies_at_zero: u64,
    /// How far into a tick simulated time zero falls, ns (below one tick).
    pub tick_phase_ns: u64,
    /// Fire timers at their wheel bucket (Linux) rather than at their expiry jiffy.
    pub wheel: bool,
}

impl KernelClock {
    /// Linux's clock at `hz` with time zero on a tick and jiffies 0 there.
    pub fn new(hz: u32) -> Self {
        KernelClock {
            hz,
            jiffies_at_zero: 0,
            tick_phase_ns: 0,
            wheel: true,
        }
    }

    /// Timers that fire at their expiry jiffy (no wheel): the unit tests' clock.
    pub fn exact(hz: u32) -> Self {
        KernelClock {
            wheel: false,
            ..KernelClock::new(hz)
        }
    }

    /// `jiffies` at simulated time `now_ns`.
    pub fn jiffies_at(&self, now_ns: u64) -> u64 {
        self.jiffies_at_zero + (now_ns + self.tick_phase_ns) * u64::from(self.hz) / 1_000_000_000
    }

    /// The simulated time at which jiffies becomes `j` (0 if it already was at time zero).
    pub fn tick_ns(&self, j: u64) -> u64 {
        let ticks = j.saturating_sub(self.jiffies_at_zero);
        (ticks * 1_000_000_000)
            .div_ceil(u64::from(self.hz))
            .saturating_sub(self.tick_phase_ns)
    }

    /// `LVL_DEPTH`: 9 levels at HZ > 100, else 8.
    fn depth(&self) -> u32 {
        if self.hz > 100 {
            9
        } else {
            8
        }
    }

    /// `calc_wheel_index`'s `bucket_expiry`: the jiffy at which a timer with expiry `expires`,
    /// armed when the base clock is `clk`, runs.
    pub fn bucket_expiry(&self, expires: u64, clk: u64) -> u64 {
        if !self.wheel {
            return expires;
        }
        // LVL_START(n) = (LVL_SIZE - 1) << ((n - 1) * LVL_CLK_SHIFT)
        let lvl_start = |n: u32| (LVL_SIZE - 1) << ((n - 1) * LVL_CLK_SHIFT);
        let Some(delta) = expires.checked_sub(clk) else {
            return clk; // an expiry in the past runs at the next tick
        };
        let depth = self.depth();
        let (lvl, expires) = match (1..depth).find(|&n| delta < lvl_start(n)) {
            Some(n) => (n - 1, expires),
            None => {
                // WHEEL_TIMEOUT_CUTOFF / WHEEL_TIMEOUT_MAX: the last level caps the expiry.
                let last = depth - 1;
                let cutoff = lvl_start(depth);
                let max = cutoff - (1u64 << (last * LVL_CLK_SHIFT));
                (last, if delta >= cutoff { clk + max } else { expires })
            }
        };
        // calc_index: round up to the level's granularity, strictly after the expiry.
        let shift = lvl * LVL_CLK_SHIFT;
        ((expires >> shift) + 1) << shift
    }

    /// `sk_reset_timer(sk, timer, jiffies + when_jiffies)` at `now_ns`: the simulated time the
    /// timer runs (never before `now_ns + 1`).
    pub fn timer_fire_ns(&self, now_ns: u64, when_jiffies: u64) -> u64 {
        let clk = self.jiffies_at(now_ns);
        self.expiry_fire_ns(now_ns, clk + when_jiffies)
    }

    /// A timer armed at `now_ns` for the absolute jiffy `expires`: when it runs.
    pub fn expiry_fire_ns(&self, now_ns: u64, expires: u64) -> u64 {
        let clk = self.jiffies_at(now_ns);
        self.tick_ns(self.bucket_expiry(expires, clk))
            .max(now_ns + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn level_zero_fires_one_jiffy_after_the_expiry() {
        let c = KernelClock::new(250);
        // 10 jiffies (40 ms, the delayed-ACK minimum) from a tick edge: jiffy 11, 44 ms.
        assert_eq!(c.timer_fire_ns(0, 10), 44 * MS);
        // From 1 ms into jiffy 0 the same 10 jiffies still run at the edge of jiffy 11.
        assert_eq!(c.timer_fire_ns(MS, 10), 44 * MS);
        // Without the wheel: at the expiry jiffy, 40 ms.
        assert_eq!(KernelClock::exact(250).timer_fire_ns(0, 10), 40 * MS);
    }

    #[test]
    fn one_second_at_hz_250_rounds_up_to_a_32_ms_bucket() {
        let c = KernelClock::new(250);
        // 250 jiffies: level 1 (63 <= 250 < 504), buckets of 8 jiffies. From jiffy 0:
        // ((250 >> 3) + 1) << 3 = 256 -> 1.024 s.
        assert_eq!(c.timer_fire_ns(0, 250), 1024 * MS);
        // From jiffy 5 (20 ms): expiry 255 -> 256, 1.024 s: 4 ms after the expiry.
        assert_eq!(c.timer_fire_ns(20 * MS, 250), 1024 * MS);
        // From jiffy 6: expiry 256 -> 264 (32 ms late).
        assert_eq!(c.timer_fire_ns(24 * MS, 250), 1056 * MS);
        // Every phase: between 1 and 8 jiffies after the expiry.
        for j0 in 0..64u64 {
            let c = KernelClock {
                jiffies_at_zero: j0,
                ..KernelClock::new(250)
            };
            let late = c.timer_fire_ns(0, 250) as i64 - 1000 * MS as i64;
            assert!(
                late >= 4 * MS as i64 && late <= 32 * MS as i64,
                "{j0}: {late}"
            );
        }
    }

    #[test]
    fn levels_and_the_cutoff_follow_lvl_start() {
        let c = KernelClock::new(1000);
        // delta 62: level 0; 63: level 1 (granularity 8); 503: level 1; 504: level 2 (64).
        assert_eq!(c.bucket_expiry(62, 0), 63);
        assert_eq!(c.bucket_expiry(63, 0), 64);
        assert_eq!(c.bucket_expiry(503, 0), 504);
        assert_eq!(c.bucket_expiry(504, 0), 512);
        assert_eq!(c.bucket_expiry(4032, 0), 4096);
        // 3 s at HZ 250 (750 jiffies) from jiffy 100: level 2, 850 -> 896 (184 ms late).
        let c = KernelClock::new(250);
        assert_eq!(c.bucket_expiry(850, 100), 896);
        // Past the last level's reach the expiry is capped (WHEEL_TIMEOUT_MAX).
        let cutoff = 63u64 << 24;
        let capped = c.bucket_expiry(u64::MAX / 4, 0);
        assert!(capped <= cutoff, "{capped}");
    }

    #[test]
    fn the_phase_moves_the_tick_grid() {
        // Time zero 3 ms into jiffy 7: jiffies at 1 ms is 8, jiffy 8 began at 1 ms.
        let c = KernelClock {
            jiffies_at_zero: 7,
            tick_phase_ns: 3 * MS,
            ..KernelClock::new(250)
        };
        assert_eq!(c.jiffies_at(0), 7);
        assert_eq!(c.jiffies_at(MS), 8);
        assert_eq!(c.tick_ns(8), MS);
        assert_eq!(c.tick_ns(7), 0);
        // A past expiry runs at once (one ns later).
        assert_eq!(c.expiry_fire_ns(10 * MS, 3), 10 * MS + 1);
    }
}
