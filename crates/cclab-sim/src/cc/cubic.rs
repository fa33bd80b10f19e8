//! CUBIC with HyStart, as Linux 6.18 implements it in `net/ipv4/tcp_cubic.c` (CUBIC v2.3).
//!
//! Every function names the kernel function it follows. The arithmetic is the kernel's: `u32`
//! windows and jiffies, `u64` intermediates, the same truncating divisions and the same wrapping
//! (done with `wrapping_*` so debug builds do not trap where C silently wraps). Time comes from
//! `TcpSock`: `bictcp_clock_us()` is `tp.tcp_mstamp_us` truncated to `u32` as in the kernel,
//! `tcp_jiffies32` is `tp.jiffies()` and `HZ` is `tp.clock.hz` (250 on the reference machine); all
//! jiffy arithmetic stays in jiffies.
//!
//! The kernel's module parameters are global; here they are per instance, in [`CubicParams`]
//! (same names and defaults), and the scale factors `cubictcp_register()` precomputes at module
//! load (`beta_scale`, `cube_rtt_scale`, `cube_factor`) are computed once per instance from them.
//!
//! Where we diverge from the kernel, and why:
//! - Sequence numbers are `u64` bytes that never wrap, so HyStart's `end_seq` is a `u64` and the
//!   kernel's `after(tp->snd_una, ca->end_seq)` is a plain `>`.
//! - `hystart_ack_delay()` reads `sk_pacing_rate` (`tp.pacing_rate_bytes_per_s`, which the core's
//!   `tcp_update_pacing_rate` sets for CUBIC too, at the end of `tcp_cong_control` on every ACK;
//!   it is 0, and so is the delay, only until the first ACK has been through it) and
//!   `sk_gso_max_size`, which we fix at Linux's `GSO_LEGACY_MAX_SIZE` (65536).
//! - `hystart_update()` halves the ACK-train threshold unconditionally; the kernel halves it only
//!   when `sk_pacing_status == SK_PACING_NONE`. That is always the case for a CUBIC flow here:
//!   pacing is modelled (the EDT model in `tcp/sender.rs`), but only for an algorithm that asks
//!   for it (`SK_PACING_NEEDED`, `tp.pacing_needed`, which only the BBRs set, in `init`), and no
//!   fq qdisc is modelled (it would make the status `SK_PACING_FQ`). CUBIC, as in the kernel,
//!   never asks.
//! - TCP friendliness: the kernel's `while (ca->ack_cnt > delta)` loop never ends when
//!   `(cwnd * beta_scale) >> 3 == 0`, which small `beta` values (beta_scale 2 or 3) reach at
//!   cwnd <= 3; we use `max(delta, 1)` there, and compute the loop's result in closed form.
//! - The simulation's jiffies start at 0 instead of the kernel's `INITIAL_JIFFIES`, so an epoch
//!   started during the first jiffy looks like "no epoch" (`epoch_start == 0`), as it would in the
//!   kernel when jiffies pass through 0; it is then restarted on the next ACK.

use super::reno::{tcp_cong_avoid_ai, tcp_reno_undo_cwnd, tcp_slow_start};
use super::{after, AckSample, CaEvent, CaState, CcError, CongestionControl};
use crate::tcp::sock::TcpSock;

/// Scale of `beta` (`BICTCP_BETA_SCALE`): max_cwnd = snd_cwnd * beta / 1024.
pub const BICTCP_BETA_SCALE: u32 = 1024;
/// BIC time unit: 2^10 = 1024 per second (`BICTCP_HZ`).
pub const BICTCP_HZ: u32 = 10;
/// `hystart_detect` bit: ACK-train detection (`HYSTART_ACK_TRAIN`).
pub const HYSTART_ACK_TRAIN: u32 = 0x1;
/// `hystart_detect` bit: delay-increase detection (`HYSTART_DELAY`).
pub const HYSTART_DELAY: u32 = 0x2;
/// Number of delay samples for detecting the increase of delay (`HYSTART_MIN_SAMPLES`).
pub const HYSTART_MIN_SAMPLES: u8 = 8;
/// Lower clamp of the delay-increase threshold, microseconds (`HYSTART_DELAY_MIN`, 4 ms).
pub const HYSTART_DELAY_MIN: u32 = 4000;
/// Upper clamp of the delay-increase threshold, microseconds (`HYSTART_DELAY_MAX`, 16 ms).
pub const HYSTART_DELAY_MAX: u32 = 16000;
/// Linux's default `beta` module parameter, in units of 1/1024.
pub const DEFAULT_BETA_1024: u32 = 717;
/// Linux's default `bic_scale` module parameter (C = bic_scale * 10 / 1024).
pub const DEFAULT_BIC_SCALE: u32 = 41;

/// CUBIC grows cwnd by at most one packet per 2 packets acked (`ca->cnt = max(ca->cnt, 2U)`).
const MIN_CNT: u32 = 2;
/// `sk_gso_max_size`: Linux's `GSO_LEGACY_MAX_SIZE`, the usual device value.
const GSO_MAX_SIZE: u64 = 65536;
const USEC_PER_MSEC: u64 = 1000;
const USEC_PER_SEC: u64 = 1_000_000;

/// CUBIC's tunables: Linux's module parameters of `net/ipv4/tcp_cubic.c`, with the same names,
/// meanings and defaults, except that `beta` and `c` are real numbers (the kernel keeps
/// `beta` in 1/1024 and C as `bic_scale * 10 / 1024`; see [`CubicParams::beta_1024`] and
/// [`CubicParams::cube_rtt_scale`] for the integer forms actually used).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CubicParams {
    /// `fast_convergence` (default on): after a loss below the previous maximum, remember a
    /// lower maximum, `cwnd * (1 + beta) / 2`, to release bandwidth to newer flows.
    pub fast_convergence: bool,
    /// `tcp_friendliness` (default on): never grow slower than the emulated Reno-friendly
    /// window (AIMD with alpha = 3 (1 - beta) / (1 + beta)).
    pub tcp_friendliness: bool,
    /// `hystart` (default on): hybrid slow start, leaving slow start before the first loss.
    pub hystart: bool,
    /// `hystart_detect` (default 3): 1 = ACK-train detection, 2 = delay detection, 3 = both.
    pub hystart_detect: u32,
    /// `hystart_low_window` (default 16): HyStart only acts when cwnd >= this, packets.
    pub hystart_low_window: u32,
    /// `hystart_ack_delta_us` (default 2000): largest spacing between ACKs of one train, us.
    pub hystart_ack_delta_us: u32,
    /// `initial_ssthresh` (default 0 = infinite): initial slow-start threshold, packets. As in
    /// Linux 6.18 it only applies when `hystart` is off.
    pub initial_ssthresh: u32,
    /// Multiplicative decrease factor beta (default 717/1024 = 0.7001953125); used as
    /// `round(beta * 1024) / 1024`.
    pub beta: f64,
    /// Cubic scaling constant C, packets/s^3 (default 410/1024 = 0.400390625, i.e. the kernel's
    /// `bic_scale` 41); used as `round(c * 1024) / 1024`.
    pub c: f64,
}

impl Default for CubicParams {
    /// Linux 6.18's defaults.
    fn default() -> Self {
        CubicParams {
            fast_convergence: true,
            tcp_friendliness: true,
            hystart: true,
            hystart_detect: HYSTART_ACK_TRAIN | HYSTART_DELAY,
            hystart_low_window: 16,
            hystart_ack_delta_us: 2000,
            initial_ssthresh: 0,
            beta: DEFAULT_BETA_1024 as f64 / BICTCP_BETA_SCALE as f64,
            c: Self::c_from_bic_scale(DEFAULT_BIC_SCALE),
        }
    }
}

impl CubicParams {
    /// C for a kernel `bic_scale` value: `bic_scale * 10 / 1024` (exact in binary floating point,
    /// so `cube_rtt_scale()` gives back exactly `bic_scale * 10`).
    pub fn c_from_bic_scale(bic_scale: u32) -> f64 {
        bic_scale as f64 * 10.0 / 1024.0
    }

    /// The kernel's `beta`: beta in units of 1/1024.
    pub fn beta_1024(&self) -> u32 {
        (self.beta * BICTCP_BETA_SCALE as f64).round() as u32
    }

    /// The kernel's `cube_rtt_scale` (`bic_scale * 10`): C in units of 1/1024.
    pub fn cube_rtt_scale(&self) -> u32 {
        (self.c * 1024.0).round() as u32
    }

    /// Check every value against what the algorithm accepts; `algorithm` names it in the error.
    pub fn validate(&self, algorithm: &str) -> Result<(), CcError> {
        let bad = |param: &str, value: String, accepted: &str| CcError::BadValue {
            algorithm: algorithm.to_string(),
            param: param.to_string(),
            value,
            accepted: accepted.to_string(),
        };
        // round(beta * 1024) must be 1..=1023: beta * 1024 in [0.5, 1023.5).
        if !(self.beta > 0.0 && self.beta < 1.0) {
            return Err(bad("beta", self.beta.to_string(), "0 < beta < 1"));
        }
        if !(self.beta * 1024.0 >= 0.5 && self.beta * 1024.0 < 1023.5) {
            return Err(bad(
                "beta",
                self.beta.to_string(),
                "0 < beta < 1, with round(beta * 1024) in 1..1023",
            ));
        }
        if !(self.c > 0.0 && self.c <= 100.0) {
            return Err(bad("c", self.c.to_string(), "0 < c <= 100"));
        }
        if self.c * 1024.0 < 0.5 {
            return Err(bad(
                "c",
                self.c.to_string(),
                "0 < c <= 100, with round(c * 1024) >= 1",
            ));
        }
        if self.hystart_detect > (HYSTART_ACK_TRAIN | HYSTART_DELAY) {
            return Err(bad(
                "hystart_detect",
                self.hystart_detect.to_string(),
                "0..3 (1 ACK train, 2 delay, 3 both)",
            ));
        }
        for (name, v) in [
            ("hystart_low_window", self.hystart_low_window),
            ("hystart_ack_delta_us", self.hystart_ack_delta_us),
            ("initial_ssthresh", self.initial_ssthresh),
        ] {
            if v > i32::MAX as u32 {
                return Err(bad(name, v.to_string(), "an integer 0..2147483647"));
            }
        }
        Ok(())
    }
}

/// CUBIC's private per-connection state: `struct bictcp` (net/ipv4/tcp_cubic.c).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Bictcp {
    /// Increase cwnd by 1 after this many ACKed packets.
    cnt: u32,
    /// Last maximum snd_cwnd (W_max).
    last_max_cwnd: u32,
    /// The last snd_cwnd.
    last_cwnd: u32,
    /// Jiffies when last_cwnd was updated.
    last_time: u32,
    /// Origin point of the cubic function (packets).
    bic_origin_point: u32,
    /// Time to the origin point from the beginning of the epoch, in 1/1024 s.
    bic_k: u32,
    /// Minimum delay, microseconds.
    delay_min: u32,
    /// Jiffies at the beginning of the epoch (0 = no epoch).
    epoch_start: u32,
    /// Number of ACKed packets (for the Reno-friendly estimate).
    ack_cnt: u32,
    /// Estimated Reno-friendly cwnd.
    tcp_cwnd: u32,
    // --- not cleared by bictcp_reset() (the kernel's memset stops at `unused`) ---
    /// Number of delay samples taken in this round.
    sample_cnt: u8,
    /// Whether HyStart found the exit point.
    found: bool,
    /// Beginning of the HyStart round, microseconds (u32 as in the kernel).
    round_start: u32,
    /// snd_nxt at the start of the round, bytes (u64 here).
    end_seq: u64,
    /// Last time the ACK spacing was close, microseconds.
    last_ack: u32,
    /// Minimum RTT of the current round, microseconds.
    curr_rtt: u32,
}

impl Bictcp {
    /// net/ipv4/tcp_cubic.c: bictcp_reset(): clears everything up to `unused`, and `found`.
    fn reset(&mut self) {
        *self = Bictcp {
            sample_cnt: self.sample_cnt,
            round_start: self.round_start,
            end_seq: self.end_seq,
            last_ack: self.last_ack,
            curr_rtt: self.curr_rtt,
            ..Bictcp::default()
        };
    }
}

/// CUBIC congestion control (`struct tcp_congestion_ops cubictcp`, Linux 6.18).
#[derive(Debug, Clone)]
pub struct Cubic {
    params: CubicParams,
    /// `beta` of the kernel: beta * 1024.
    beta: u32,
    /// `beta_scale = 8 * (1024 + beta) / 3 / (1024 - beta)`.
    beta_scale: u32,
    /// `cube_rtt_scale = bic_scale * 10`: C * 1024.
    cube_rtt_scale: u32,
    /// `cube_factor = 2^40 / cube_rtt_scale`.
    cube_factor: u64,
    ca: Bictcp,
}

impl Default for Cubic {
    /// CUBIC with Linux's default tunables.
    fn default() -> Self {
        Cubic::new(CubicParams::default()).expect("Linux's defaults are valid")
    }
}

impl Cubic {
    /// A CUBIC instance with these tunables (rejected, naming the field, when out of range).
    ///
    /// net/ipv4/tcp_cubic.c: cubictcp_register() computes the scale factors:
    /// `beta_scale = 8*(BICTCP_BETA_SCALE+beta)/3/(BICTCP_BETA_SCALE-beta)`,
    /// `cube_rtt_scale = bic_scale * 10` and `cube_factor = 2^(10+3*BICTCP_HZ) / cube_rtt_scale`
    /// (the "1/c * 2^2*bictcp_HZ * srtt" of the kernel's comment, with srtt fixed at 100 ms).
    pub fn new(params: CubicParams) -> Result<Self, CcError> {
        params.validate("cubic")?;
        let beta = params.beta_1024();
        let beta_scale = 8 * (BICTCP_BETA_SCALE + beta) / 3 / (BICTCP_BETA_SCALE - beta);
        let cube_rtt_scale = params.cube_rtt_scale();
        let cube_factor = (1u64 << (10 + 3 * BICTCP_HZ)) / cube_rtt_scale as u64;
        Ok(Cubic {
            params,
            beta,
            beta_scale,
            cube_rtt_scale,
            cube_factor,
            ca: Bictcp::default(),
        })
    }

    /// The tunables this instance was built with.
    pub fn params(&self) -> &CubicParams {
        &self.params
    }

    /// The kernel's integer `beta` (beta * 1024).
    pub fn beta_1024(&self) -> u32 {
        self.beta
    }

    /// The kernel's `beta_scale`.
    pub fn beta_scale(&self) -> u32 {
        self.beta_scale
    }

    /// The kernel's `cube_rtt_scale` (C * 1024).
    pub fn cube_rtt_scale(&self) -> u32 {
        self.cube_rtt_scale
    }

    /// The kernel's `cube_factor` (2^40 / cube_rtt_scale).
    pub fn cube_factor(&self) -> u64 {
        self.cube_factor
    }

    /// W_max: the window CUBIC aims back at (`last_max_cwnd`), packets.
    pub fn last_max_cwnd(&self) -> u32 {
        self.ca.last_max_cwnd
    }

    /// net/ipv4/tcp_cubic.c: bictcp_hystart_reset(): start a HyStart round.
    fn hystart_reset(&mut self, tp: &TcpSock) {
        let now = bictcp_clock_us(tp);
        self.ca.round_start = now;
        self.ca.last_ack = now;
        self.ca.end_seq = tp.snd_nxt;
        self.ca.curr_rtt = !0u32;
        self.ca.sample_cnt = 0;
    }

    /// Compute the congestion window to use: sets `ca.cnt`, the number of packets to ACK for
    /// cwnd to grow by one.
    ///
    /// net/ipv4/tcp_cubic.c: bictcp_update(). `now` is `tcp_jiffies32`, `hz` is `HZ`.
    fn bictcp_update(&mut self, cwnd: u32, acked: u32, now: u32, hz: u32) {
        let ca = &mut self.ca;
        ca.ack_cnt = ca.ack_cnt.wrapping_add(acked); // count the number of ACKed packets

        if ca.last_cwnd == cwnd && (now.wrapping_sub(ca.last_time) as i32) <= (hz / 32) as i32 {
            return;
        }

        // The CUBIC function can update ca->cnt at most once per jiffy. On all cwnd reduction
        // events, ca->epoch_start is set to 0, which will force a recalculation of ca->cnt.
        if !(ca.epoch_start != 0 && now == ca.last_time) {
            ca.last_cwnd = cwnd;
            ca.last_time = now;

            if ca.epoch_start == 0 {
                ca.epoch_start = now; // record beginning
                ca.ack_cnt = acked; // start counting
                ca.tcp_cwnd = cwnd; // syn with cubic

                if ca.last_max_cwnd <= cwnd {
                    ca.bic_k = 0;
                    ca.bic_origin_point = cwnd;
                } else {
                    // Compute new K based on
                    // (wmax-cwnd) * (srtt>>3 / HZ) / c * 2^(3*bictcp_HZ)
                    ca.bic_k = cubic_root(
                        self.cube_factor
                            .wrapping_mul((ca.last_max_cwnd - cwnd) as u64),
                    );
                    ca.bic_origin_point = ca.last_max_cwnd;
                }
            }

            // cubic function - calc: c/rtt * (t-K)^3 with time = (t - K) / 2^bictcp_HZ,
            // c = cube_rtt_scale >> 10.
            // t = (s32)(tcp_jiffies32 - epoch_start) sign-extended into a u64, as in C.
            let mut t = now.wrapping_sub(ca.epoch_start) as i32 as i64 as u64;
            t = t.wrapping_add(usecs_to_jiffies(ca.delay_min, hz));
            // change the unit from HZ to bictcp_HZ
            t <<= BICTCP_HZ;
            t /= hz as u64; // do_div(t, HZ)

            let k = ca.bic_k as u64;
            let offs = t.abs_diff(k); // t < K ? K - t : t - K

            // c/rtt * (t-K)^3
            let delta = ((self.cube_rtt_scale as u64)
                .wrapping_mul(offs)
                .wrapping_mul(offs)
                .wrapping_mul(offs)
                >> (10 + 3 * BICTCP_HZ)) as u32;
            let bic_target = if t < k {
                ca.bic_origin_point.wrapping_sub(delta) // below origin
            } else {
                ca.bic_origin_point.wrapping_add(delta) // above origin
            };

            // cubic function - calc bictcp_cnt
            ca.cnt = if bic_target > cwnd {
                cwnd / (bic_target - cwnd)
            } else {
                cwnd.wrapping_mul(100) // very small increment
            };

            // The initial growth of cubic function may be too conservative when the available
            // bandwidth is still unknown.
            if ca.last_max_cwnd == 0 && ca.cnt > 20 {
                ca.cnt = 20; // increase cwnd 5% per RTT
            }
        }

        // tcp_friendliness: TCP Friendly
        if self.params.tcp_friendliness {
            // Divergence: the kernel loops forever when this is 0 (see the module docs).
            let delta = (cwnd.wrapping_mul(self.beta_scale) >> 3).max(1);
            // while (ca->ack_cnt > delta) { ca->ack_cnt -= delta; ca->tcp_cwnd++; }
            if ca.ack_cnt > delta {
                let n = (ca.ack_cnt - 1) / delta;
                ca.ack_cnt -= n * delta;
                ca.tcp_cwnd = ca.tcp_cwnd.wrapping_add(n);
            }

            if ca.tcp_cwnd > cwnd {
                // if bic is slower than tcp
                let delta = ca.tcp_cwnd - cwnd;
                let max_cnt = cwnd / delta;
                if ca.cnt > max_cnt {
                    ca.cnt = max_cnt;
                }
            }
        }

        // The maximum rate of cwnd increase CUBIC allows is 1 packet per 2 packets ACKed,
        // meaning cwnd grows at 1.5x per RTT.
        ca.cnt = ca.cnt.max(MIN_CNT);
    }

    /// net/ipv4/tcp_cubic.c: hystart_update(): track HyStart's rounds on every ACK of slow
    /// start, and at cwnd >= `hystart_low_window` look for the exit point with the ACK-train and
    /// delay-increase detectors; on detection set ssthresh = cwnd.
    ///
    /// The round is tracked below the low window too, as since "tcp_cubic: fix incorrect HyStart
    /// round start detection" (upstream 25c1a9ca53db, 2025; in 6.18): the first round ends with
    /// the first ACK beyond the initial window, so every round starts at the first ACK of a
    /// slow-start burst. Before it, the first reset waited for cwnd 16 (the 7th ACK of the
    /// initial window) and every round began 60 % into a burst, where the burst's own queue
    /// tripped the delay detector (issue 13).
    fn hystart_update(&mut self, tp: &mut TcpSock, delay: u32) {
        // after(tp->snd_una, ca->end_seq): sequence numbers are u64 bytes here, never wrapping.
        if tp.snd_una > self.ca.end_seq {
            self.hystart_reset(tp);
        }

        // hystart triggers when cwnd is larger than some threshold
        if tp.snd_cwnd < self.params.hystart_low_window {
            return;
        }

        if self.params.hystart_detect & HYSTART_ACK_TRAIN != 0 {
            let now = bictcp_clock_us(tp);
            let ca = &mut self.ca;

            // first detection parameter - ack-train detection
            if (now.wrapping_sub(ca.last_ack) as i32) <= self.params.hystart_ack_delta_us as i32 {
                ca.last_ack = now;

                let mut threshold = ca.delay_min.wrapping_add(hystart_ack_delay(tp));

                // Hystart ack train triggers if we get ack past ca->delay_min/2. Pacing might
                // have delayed packets up to RTT/2 during slow start. The kernel halves only
                // `if (sk->sk_pacing_status == SK_PACING_NONE)`: always true here, since CUBIC
                // never sets `tp.pacing_needed` (SK_PACING_NEEDED) and no fq qdisc is modelled
                // (SK_PACING_FQ); see the module docs.
                threshold >>= 1;

                // (s32)(now - round_start) > threshold compares as u32 in C.
                if now.wrapping_sub(ca.round_start) > threshold {
                    ca.found = true;
                    tp.snd_ssthresh = tp.snd_cwnd;
                }
            }
        }

        if self.params.hystart_detect & HYSTART_DELAY != 0 {
            let ca = &mut self.ca;
            // obtain the minimum delay of more than sampling packets
            if ca.curr_rtt > delay {
                ca.curr_rtt = delay;
            }
            if ca.sample_cnt < HYSTART_MIN_SAMPLES {
                ca.sample_cnt += 1;
            } else if ca.curr_rtt
                > ca.delay_min
                    .wrapping_add(hystart_delay_thresh(ca.delay_min >> 3))
            {
                ca.found = true;
                tp.snd_ssthresh = tp.snd_cwnd;
            }
        }
    }
}

impl CongestionControl for Cubic {
    fn name(&self) -> &'static str {
        "cubic"
    }

    /// net/ipv4/tcp_cubic.c: cubictcp_init(). The kernel zeroes `icsk_ca_priv` before `init`
    /// (tcp_assign_congestion_control); we start from a zeroed state too.
    fn init(&mut self, tp: &mut TcpSock) {
        self.ca = Bictcp::default();
        self.ca.reset();

        if self.params.hystart {
            self.hystart_reset(tp);
        }

        if !self.params.hystart && self.params.initial_ssthresh != 0 {
            tp.snd_ssthresh = self.params.initial_ssthresh;
        }
    }

    /// net/ipv4/tcp_cubic.c: cubictcp_recalc_ssthresh(): end the epoch, remember W_max (lowered
    /// by fast convergence when the window did not regain the previous maximum) and return
    /// `max(cwnd * beta / 1024, 2)`.
    fn ssthresh(&mut self, tp: &mut TcpSock) -> u32 {
        let ca = &mut self.ca;
        let cwnd = tp.snd_cwnd;
        ca.epoch_start = 0; // end of epoch

        // Wmax and fast convergence
        if cwnd < ca.last_max_cwnd && self.params.fast_convergence {
            ca.last_max_cwnd =
                cwnd.wrapping_mul(BICTCP_BETA_SCALE + self.beta) / (2 * BICTCP_BETA_SCALE);
        } else {
            ca.last_max_cwnd = cwnd;
        }

        (cwnd.wrapping_mul(self.beta) / BICTCP_BETA_SCALE).max(2)
    }

    /// net/ipv4/tcp_cubic.c: cubictcp_cong_avoid(): slow start below ssthresh (HyStart acts in
    /// `pkts_acked`), then the cubic window with `tcp_cong_avoid_ai(tp, ca->cnt, acked)`.
    /// `_ack` is the cumulative ACK in bytes; CUBIC 6.18 does not use it.
    fn cong_avoid(&mut self, tp: &mut TcpSock, _ack: u64, acked: u32) {
        if !tp.is_cwnd_limited() {
            return;
        }

        let mut acked = acked;
        if tp.in_slow_start() {
            acked = tcp_slow_start(tp, acked);
            if acked == 0 {
                return;
            }
        }
        let (now, hz) = (tp.jiffies(), tp.clock.hz);
        self.bictcp_update(tp.snd_cwnd, acked, now, hz);
        tcp_cong_avoid_ai(tp, self.ca.cnt, acked);
    }

    /// net/ipv4/tcp_cubic.c: cubictcp_state(): a retransmission timeout forgets everything.
    fn set_state(&mut self, tp: &mut TcpSock, new_state: CaState) {
        if new_state == CaState::Loss {
            self.ca.reset();
            self.hystart_reset(tp);
        }
    }

    /// net/ipv4/tcp_cubic.c: cubictcp_cwnd_event(): after an idle period (application limited)
    /// shift `epoch_start` by the idle time to keep cwnd growth on the cubic curve.
    fn cwnd_event(&mut self, tp: &mut TcpSock, event: CaEvent) {
        if event == CaEvent::TxStart {
            let now = tp.jiffies();
            let delta = now.wrapping_sub(tp.lsndtime) as i32;

            // We were application limited (idle) for a while.
            // Shift epoch_start to keep cwnd growth to cubic curve.
            let ca = &mut self.ca;
            if ca.epoch_start != 0 && delta > 0 {
                ca.epoch_start = ca.epoch_start.wrapping_add(delta as u32);
                if after(ca.epoch_start, now) {
                    ca.epoch_start = now;
                }
            }
        }
    }

    /// net/ipv4/tcp_cubic.c: cubictcp_acked(): track the minimum delay (`delay_min`, a zero
    /// sample counting as 1 us) and run HyStart on every ACK of slow start (its detectors act
    /// once cwnd >= hystart_low_window, `hystart_update`).
    fn pkts_acked(&mut self, tp: &mut TcpSock, sample: &AckSample) {
        // Some calls are for duplicates without timestamps
        if sample.rtt_us < 0 {
            return;
        }

        // Discard delay samples right after fast recovery
        if self.ca.epoch_start != 0
            && (tp.jiffies().wrapping_sub(self.ca.epoch_start) as i32) < tp.clock.hz as i32
        {
            return;
        }

        // The kernel's ack_sample.rtt_us is an s32 stored into a u32.
        let mut delay = sample.rtt_us as u32;
        if delay == 0 {
            delay = 1;
        }

        // first time call or link delay decreases
        if self.ca.delay_min == 0 || self.ca.delay_min > delay {
            self.ca.delay_min = delay;
        }

        if !self.ca.found && tp.in_slow_start() && self.params.hystart {
            self.hystart_update(tp, delay);
        }
    }

    /// `.undo_cwnd = tcp_reno_undo_cwnd` (net/ipv4/tcp_cubic.c: cubictcp).
    fn undo_cwnd(&mut self, tp: &mut TcpSock) -> u32 {
        tcp_reno_undo_cwnd(tp)
    }
}

/// net/ipv4/tcp_cubic.c: bictcp_clock_us(): `tcp_sk(sk)->tcp_mstamp` truncated to u32 us.
fn bictcp_clock_us(tp: &TcpSock) -> u32 {
    tp.tcp_mstamp_us as u32
}

/// include/linux/jiffies.h: usecs_to_jiffies() (rounds up), with `HZ = hz`.
fn usecs_to_jiffies(us: u32, hz: u32) -> u64 {
    (us as u64 * hz as u64).div_ceil(USEC_PER_SEC)
}

/// net/ipv4/tcp_cubic.c: HYSTART_DELAY_THRESH(x) = clamp(x, 4 ms, 16 ms).
fn hystart_delay_thresh(x: u32) -> u32 {
    x.clamp(HYSTART_DELAY_MIN, HYSTART_DELAY_MAX)
}

/// Account for TSO/GRO delays in the ACK-train threshold, capped at 1 ms.
///
/// net/ipv4/tcp_cubic.c: hystart_ack_delay(): `min(1 ms, sk_gso_max_size * 4 s / pacing rate)`,
/// 0 when the pacing rate is 0. `sk_gso_max_size` is fixed at 65536 (see the module docs).
fn hystart_ack_delay(tp: &TcpSock) -> u32 {
    let rate = tp.pacing_rate_bytes_per_s;
    if rate == 0 {
        return 0;
    }
    USEC_PER_MSEC.min(GSO_MAX_SIZE * 4 * USEC_PER_SEC / rate) as u32
}

/// cbrt(x) most significant bits for x in 0..64, the starting point of `cubic_root`.
///
/// Defined as `v[x] = cbrt(x << 18) - 1`, so that `cbrt(x) ~= (v[x] + 10) >> 6`, then refined by
/// hand in the kernel (Willy Tarreau): the refined values are what Linux computes with, so we use
/// them too for bit-identical `K` (the test `cubic_root_table_follows_its_definition` checks them
/// against the definition: entries 8..63, the ones the Newton-Raphson path reads, are within a
/// few units of it; entries 0..7 serve `a < 64` directly).
const CBRT_V: [u8; 64] = [
    /* 0x00 */ 0, 54, 54, 54, 118, 118, 118, 118, //
    /* 0x08 */ 123, 129, 134, 138, 143, 147, 151, 156, //
    /* 0x10 */ 157, 161, 164, 168, 170, 173, 176, 179, //
    /* 0x18 */ 181, 185, 187, 190, 192, 194, 197, 199, //
    /* 0x20 */ 200, 202, 204, 206, 209, 211, 213, 215, //
    /* 0x28 */ 217, 219, 221, 222, 224, 225, 227, 229, //
    /* 0x30 */ 231, 232, 234, 236, 237, 239, 240, 242, //
    /* 0x38 */ 244, 245, 246, 248, 250, 251, 252, 254, //
];

/// Integer cube root: a table lookup on the most significant bits, then one Newton-Raphson
/// iteration `x = (2x + a / x^2) / 3` (computed as `(2x + a / (x (x - 1))) * 341 >> 10`).
/// The kernel states an average error of about 0.195 %.
///
/// net/ipv4/tcp_cubic.c: cubic_root(). `u32` arithmetic wraps as in C.
pub fn cubic_root(a: u64) -> u32 {
    let b = 64 - a.leading_zeros(); // fls64(a)
    if b < 7 {
        // a in [0..63]
        return (CBRT_V[a as usize] as u32 + 35) >> 6;
    }

    let b = ((b * 84) >> 8) - 1;
    let shift = (a >> (b * 3)) as usize;

    let mut x = ((CBRT_V[shift] as u32 + 10) << b) >> 6;

    // Newton-Raphson iteration
    //                         2
    // x    = ( 2 * x  +  a / x  ) / 3
    //  k+1          k         k
    x = (2u32.wrapping_mul(x)).wrapping_add((a / (x as u64 * (x as u64 - 1))) as u32);
    x.wrapping_mul(341) >> 10
}

#[cfg(test)]
#[path = "tests_cubic.rs"]
mod tests;
