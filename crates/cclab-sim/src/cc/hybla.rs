//! TCP Hybla (Caini and Firrincieli, 2004), as Linux 6.18 implements it in
//! `net/ipv4/tcp_hybla.c`.
//!
//! Hybla makes a long-RTT flow grow as a reference flow with RTT `rtt0` (25 ms) would, by
//! scaling Reno's increments with `rho = max(srtt / rtt0, 1)`: slow start adds `2^rho - 1`
//! packets per ACK and congestion avoidance `rho^2 / cwnd`. `rho` is kept in fixed point with
//! 3 fractional bits (`rho_3ls`), `2^fraction` comes from an 8-entry table in 1/128
//! (`hybla_fraction`), and the sub-packet remainders of the increments accumulate in
//! `snd_cwnd_cents` (1/128 packets). Hybla works only in the Open state; elsewhere it is Reno.
//!
//! We follow Linux 6.18. Every function names the kernel function it follows; the arithmetic is
//! the kernel's (`u32`, wrapping where C wraps). The module parameter `rtt0` (ms) is per
//! instance, same name, default and range (1..U32_MAX / 1000, as `rtt0_set()` enforces).
//!
//! Where we diverge from the kernel, and why:
//! - `init`: the kernel runs it after the handshake, with `srtt_us` measured on the SYN, sets
//!   `cwnd = rho` and remembers that srtt as `minrtt_us`. The simulator has no handshake, so
//!   `srtt_us` is 0 at `init`: we compute `rho` and `cwnd = rho` (1) as the kernel would with
//!   that srtt, but remember "no RTT seen yet" (`u32::MAX`) instead of 0 as `minrtt_us`, so that
//!   the first measured srtt recalculates rho. The kernel code with a 0 `minrtt_us` would never
//!   recalculate it (`srtt_us < 0` is never true) and stay Reno forever.
//! - The `ack` argument of `cong_avoid` is a `u64` byte sequence (unused by Hybla itself).

use super::params::ParamReader;
use super::reno::{tcp_reno_cong_avoid, tcp_reno_ssthresh, tcp_reno_undo_cwnd};
use super::{AlgorithmInfo, CaState, CcError, CongestionControl, ParamInfo, ParamValue, Params};
use crate::tcp::sock::TcpSock;

/// Default `rtt0`: the reference RTT, ms (1/40 s).
pub const DEFAULT_RTT0_MS: u32 = 25;
/// Largest `rtt0` the kernel accepts (`U32_MAX / USEC_PER_MSEC`, so `rtt0 * 1000` fits).
pub const RTT0_MAX_MS: u32 = u32::MAX / 1000;
/// `cwnd_clamp` set by `hybla_init`.
const HYBLA_CWND_CLAMP: u32 = 65535;

/// What `cclab presets` lists for TCP Hybla.
pub fn info() -> AlgorithmInfo {
    AlgorithmInfo {
        name: "hybla",
        base: "hybla",
        description: "TCP Hybla: Reno scaled by rho = srtt / rtt0 so long-RTT (satellite) flows \
                      grow like a 25 ms flow",
        source: "Linux 6.18 net/ipv4/tcp_hybla.c",
        params: vec![ParamInfo {
            name: "rtt0",
            default: ParamValue::Int(DEFAULT_RTT0_MS as i64),
            doc: "reference round trip time (ms): rho = max(srtt / rtt0, 1); an integer \
                  1..4294967",
        }],
        preset_params: Params::new(),
    }
}

/// Build TCP Hybla from `params` (names already checked by the registry; values here).
pub fn build(algorithm: &str, params: &Params) -> Result<Box<dyn CongestionControl>, CcError> {
    let r = ParamReader::new(algorithm, params);
    let rtt0 = r.int("rtt0", DEFAULT_RTT0_MS as i64, 1, RTT0_MAX_MS as i64)? as u32;
    Ok(Box::new(Hybla::new(rtt0)))
}

/// 2^(odds / 8) in 1/128, for the fractional part of rho (`hybla_fraction`).
///
/// net/ipv4/tcp_hybla.c: hybla_fraction().
fn hybla_fraction(odds: u32) -> u32 {
    const FRACTIONS: [u32; 8] = [128, 139, 152, 165, 181, 197, 215, 234];
    FRACTIONS.get(odds as usize).copied().unwrap_or(128)
}

/// TCP Hybla: `struct hybla` (net/ipv4/tcp_hybla.c) plus the `rtt0` module parameter.
#[derive(Debug, Clone)]
pub struct Hybla {
    /// Reference RTT, ms (`rtt0`).
    rtt0_ms: u32,
    /// Whether Hybla is active (Open state) (`hybla_en`).
    hybla_en: bool,
    /// Increments below one packet, 1/128 packets (`snd_cwnd_cents`).
    snd_cwnd_cents: u32,
    /// rho, integer part (`rho`).
    rho: u32,
    /// rho^2, integer part (`rho2`).
    rho2: u32,
    /// rho << 3 (`rho_3ls`).
    rho_3ls: u32,
    /// rho^2 << 7 (`rho2_7ls`).
    rho2_7ls: u32,
    /// Minimum smoothed RTT seen, `srtt_us` units (<< 3) (`minrtt_us`).
    minrtt_us: u32,
}

impl Default for Hybla {
    /// Hybla with Linux's default `rtt0` (25 ms).
    fn default() -> Self {
        Hybla::new(DEFAULT_RTT0_MS)
    }
}

impl Hybla {
    /// A Hybla instance with reference RTT `rtt0_ms` (1..=`RTT0_MAX_MS`).
    pub fn new(rtt0_ms: u32) -> Self {
        assert!((1..=RTT0_MAX_MS).contains(&rtt0_ms), "rtt0 out of range");
        Hybla {
            rtt0_ms,
            hybla_en: true,
            snd_cwnd_cents: 0,
            rho: 0,
            rho2: 0,
            rho_3ls: 0,
            rho2_7ls: 0,
            minrtt_us: u32::MAX,
        }
    }

    /// rho, integer part.
    pub fn rho(&self) -> u32 {
        self.rho
    }

    /// rho << 3 (rho with 3 fractional bits).
    pub fn rho_3ls(&self) -> u32 {
        self.rho_3ls
    }

    /// rho^2, integer part.
    pub fn rho2(&self) -> u32 {
        self.rho2
    }

    /// Accumulated sub-packet increments, 1/128 packets.
    pub fn snd_cwnd_cents(&self) -> u32 {
        self.snd_cwnd_cents
    }

    /// net/ipv4/tcp_hybla.c: hybla_recalc_param(): rho from srtt (`srtt_us` is << 3, so the
    /// quotient is already rho << 3), at least 1.
    fn recalc_param(&mut self, tp: &TcpSock) {
        self.rho_3ls = (tp.srtt_us / (self.rtt0_ms * 1000)).max(8);
        self.rho = self.rho_3ls >> 3;
        self.rho2_7ls = self.rho_3ls.wrapping_mul(self.rho_3ls) << 1;
        self.rho2 = self.rho2_7ls >> 7;
    }
}

impl CongestionControl for Hybla {
    fn name(&self) -> &'static str {
        "hybla"
    }

    /// net/ipv4/tcp_hybla.c: hybla_init(): clamp 65535, rho from the current srtt and
    /// `cwnd = rho`. Divergence: with no srtt yet (always, in the simulator) `minrtt_us` is
    /// "unset" so the first srtt recalculates rho (see the module docs).
    fn init(&mut self, tp: &mut TcpSock) {
        self.rho = 0;
        self.rho2 = 0;
        self.rho_3ls = 0;
        self.rho2_7ls = 0;
        self.snd_cwnd_cents = 0;
        self.hybla_en = true;
        tp.set_cwnd(2);
        tp.snd_cwnd_clamp = HYBLA_CWND_CLAMP;
        // 1st Rho measurement based on initial srtt.
        self.recalc_param(tp);
        // Set minimum rtt as this is the 1st ever seen.
        self.minrtt_us = if tp.srtt_us == 0 {
            u32::MAX
        } else {
            tp.srtt_us
        };
        tp.set_cwnd(self.rho);
    }

    /// `.ssthresh = tcp_reno_ssthresh`.
    fn ssthresh(&mut self, tp: &mut TcpSock) -> u32 {
        tcp_reno_ssthresh(tp)
    }

    /// net/ipv4/tcp_hybla.c: hybla_cong_avoid(): recalc rho on a new minimum srtt; in Open
    /// state grow by `2^rho - 1` per ACK in slow start and `rho^2 / cwnd` in congestion
    /// avoidance, keeping fractions in `snd_cwnd_cents`; Reno otherwise.
    fn cong_avoid(&mut self, tp: &mut TcpSock, ack: u64, acked: u32) {
        // Recalculate rho only if this srtt is the lowest.
        if tp.srtt_us < self.minrtt_us {
            self.recalc_param(tp);
            self.minrtt_us = tp.srtt_us;
        }
        if !tp.is_cwnd_limited() {
            return;
        }
        if !self.hybla_en {
            tcp_reno_cong_avoid(tp, ack, acked);
            return;
        }
        if self.rho == 0 {
            self.recalc_param(tp);
        }
        let rho_fractions = self.rho_3ls - (self.rho << 3);
        let is_slowstart = tp.in_slow_start();
        let increment = if is_slowstart {
            // INC = 2^rho - 1, as (2^int * 2^fract << 7) - 128.
            (1u32 << self.rho.min(16))
                .wrapping_mul(hybla_fraction(rho_fractions))
                .wrapping_sub(128)
        } else {
            // INC = rho^2 / W, already << 7.
            let inc = self.rho2_7ls / tp.snd_cwnd;
            if inc < 128 {
                tp.snd_cwnd_cnt = tp.snd_cwnd_cnt.wrapping_add(1);
            }
            inc
        };
        let odd = increment % 128;
        tp.set_cwnd(tp.snd_cwnd.wrapping_add(increment >> 7));
        self.snd_cwnd_cents += odd;
        // Check when fractions go >= 128 and increase cwnd by 1.
        while self.snd_cwnd_cents >= 128 {
            tp.set_cwnd(tp.snd_cwnd.wrapping_add(1));
            self.snd_cwnd_cents -= 128;
            tp.snd_cwnd_cnt = 0;
        }
        // Check when cwnd has not been incremented for a while.
        if increment == 0 && odd == 0 && tp.snd_cwnd_cnt >= tp.snd_cwnd {
            tp.set_cwnd(tp.snd_cwnd.wrapping_add(1));
            tp.snd_cwnd_cnt = 0;
        }
        // Clamp down slowstart cwnd to ssthresh value.
        if is_slowstart {
            tp.set_cwnd(tp.snd_cwnd.min(tp.snd_ssthresh));
        }
        tp.set_cwnd(tp.snd_cwnd.min(tp.snd_cwnd_clamp));
    }

    /// net/ipv4/tcp_hybla.c: hybla_state(): Hybla only in the Open state.
    fn set_state(&mut self, _tp: &mut TcpSock, new_state: CaState) {
        self.hybla_en = new_state == CaState::Open;
    }

    /// `.undo_cwnd = tcp_reno_undo_cwnd`.
    fn undo_cwnd(&mut self, tp: &mut TcpSock) -> u32 {
        tcp_reno_undo_cwnd(tp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u32 = 1000;

    /// A connection whose smoothed RTT is `srtt_ms`, in `state`, Hybla initialised as the
    /// simulator does (no RTT yet), then one ACK to take the srtt into rho.
    fn setup(srtt_ms: u32, cwnd: u32, ssthresh: u32) -> (Hybla, TcpSock) {
        let mut tp = TcpSock::new(MSS, 10, 100_000, crate::tcp::clock::KernelClock::new(250));
        let mut cc = Hybla::default();
        cc.init(&mut tp);
        assert_eq!((tp.snd_cwnd, tp.snd_cwnd_clamp, cc.rho()), (1, 65535, 1));
        tp.srtt_us = (srtt_ms * 1000) << 3;
        tp.is_cwnd_limited = true;
        tp.snd_cwnd = cwnd;
        tp.snd_ssthresh = ssthresh;
        (cc, tp)
    }

    fn ack(cc: &mut Hybla, tp: &mut TcpSock) {
        tp.snd_una += MSS as u64;
        let a = tp.snd_una;
        cc.cong_avoid(tp, a, 1);
    }

    #[test]
    fn rho_scales_with_srtt_over_rtt0() {
        for (srtt_ms, rho_3ls, rho, rho2) in [
            (10, 8, 1, 1),
            (25, 8, 1, 1),
            (30, 9, 1, 1),
            (50, 16, 2, 4),
            (250, 80, 10, 100),
            (600, 192, 24, 576),
        ] {
            let (mut cc, mut tp) = setup(srtt_ms, 10, 5);
            ack(&mut cc, &mut tp);
            assert_eq!(
                (cc.rho_3ls(), cc.rho(), cc.rho2()),
                (rho_3ls, rho, rho2),
                "{srtt_ms} ms"
            );
        }
        // rtt0 is a tunable: 250 ms against rtt0 = 50 ms gives rho 5.
        let mut tp = TcpSock::new(MSS, 10, 100_000, crate::tcp::clock::KernelClock::new(250));
        tp.srtt_us = 250_000 << 3;
        let mut cc = Hybla::new(50);
        cc.init(&mut tp);
        assert_eq!((cc.rho(), tp.snd_cwnd), (5, 5)); // with a handshake srtt, cwnd = rho
    }

    #[test]
    fn rho_is_recalculated_only_on_a_new_minimum_srtt() {
        let (mut cc, mut tp) = setup(250, 10, 5);
        ack(&mut cc, &mut tp);
        assert_eq!(cc.rho(), 10);
        tp.srtt_us = 500_000 << 3; // queueing: srtt grows, rho does not
        ack(&mut cc, &mut tp);
        assert_eq!(cc.rho(), 10);
        tp.srtt_us = 100_000 << 3; // a lower srtt: rho follows
        ack(&mut cc, &mut tp);
        assert_eq!(cc.rho(), 4);
    }

    #[test]
    fn slow_start_adds_two_to_the_rho_minus_one_per_ack() {
        // srtt 25 ms: rho 1, +1 per ACK (Reno's slow start).
        let (mut cc, mut tp) = setup(25, 10, 1000);
        for expect in 11..=20 {
            ack(&mut cc, &mut tp);
            assert_eq!(tp.snd_cwnd, expect);
        }
        // srtt 250 ms: rho 10, +2^10 - 1 = 1023 per ACK (whatever the ACK covers).
        let (mut cc, mut tp) = setup(250, 10, 100_000);
        ack(&mut cc, &mut tp);
        assert_eq!(tp.snd_cwnd, 10 + 1023);
        ack(&mut cc, &mut tp);
        assert_eq!(tp.snd_cwnd, 10 + 2 * 1023);
        // Capped at ssthresh, then at the clamp Hybla set (65535).
        let (mut cc, mut tp) = setup(250, 10, 500);
        ack(&mut cc, &mut tp);
        assert_eq!(tp.snd_cwnd, 500);
        let (mut cc, mut tp) = setup(250, 65000, 100_000);
        ack(&mut cc, &mut tp);
        assert_eq!(tp.snd_cwnd, 65535);
        // srtt 30 ms: rho = 9/8, 2^(9/8) = 2 * 139/128: increment 150/128 per ACK.
        let (mut cc, mut tp) = setup(30, 10, 1000);
        ack(&mut cc, &mut tp);
        assert_eq!((tp.snd_cwnd, cc.snd_cwnd_cents()), (11, 22));
        for _ in 0..5 {
            ack(&mut cc, &mut tp);
        }
        // 6 ACKs: 6 * 150 / 128 = 7.03 packets.
        assert_eq!((tp.snd_cwnd, cc.snd_cwnd_cents()), (17, 4));
    }

    #[test]
    fn congestion_avoidance_adds_rho_squared_over_cwnd_per_ack() {
        // rho 10, cwnd 200: 12800 / 200 = 64/128 per ACK: +1 per 2 ACKs.
        let (mut cc, mut tp) = setup(250, 200, 100);
        ack(&mut cc, &mut tp);
        assert_eq!((tp.snd_cwnd, cc.snd_cwnd_cents()), (200, 64));
        ack(&mut cc, &mut tp);
        assert_eq!((tp.snd_cwnd, cc.snd_cwnd_cents()), (201, 0));
        // rho 10, cwnd 50: 256/128 = +2 per ACK.
        let (mut cc, mut tp) = setup(250, 50, 10);
        ack(&mut cc, &mut tp);
        assert_eq!(tp.snd_cwnd, 52);
        // Over one RTT (cwnd ACKs) the window grows by about rho^2 = 100 packets.
        let (mut cc, mut tp) = setup(250, 1000, 100);
        for _ in 0..1000 {
            ack(&mut cc, &mut tp);
        }
        assert!(
            (90..=100).contains(&(tp.snd_cwnd - 1000)),
            "{}",
            tp.snd_cwnd
        );
        // rho 1 (srtt 25 ms), cwnd 10: 128 / 10 = 12/128 per ACK: +1 after 11 ACKs (Reno-like).
        let (mut cc, mut tp) = setup(25, 10, 5);
        for _ in 0..10 {
            ack(&mut cc, &mut tp);
        }
        assert_eq!(tp.snd_cwnd, 10);
        ack(&mut cc, &mut tp);
        assert_eq!(
            (tp.snd_cwnd, cc.snd_cwnd_cents(), tp.snd_cwnd_cnt),
            (11, 4, 0)
        );
        // rho 1, cwnd 200: the increment rounds to 0; snd_cwnd_cnt adds 1 per cwnd ACKs.
        let (mut cc, mut tp) = setup(25, 200, 5);
        for _ in 0..199 {
            ack(&mut cc, &mut tp);
        }
        assert_eq!(tp.snd_cwnd, 200);
        ack(&mut cc, &mut tp);
        assert_eq!((tp.snd_cwnd, tp.snd_cwnd_cnt), (201, 0));
    }

    #[test]
    fn reno_outside_the_open_state_and_on_loss() {
        let (mut cc, mut tp) = setup(250, 10, 100_000);
        cc.set_state(&mut tp, CaState::Loss);
        ack(&mut cc, &mut tp);
        assert_eq!(tp.snd_cwnd, 11); // Reno slow start, not +1023
        cc.set_state(&mut tp, CaState::Open);
        ack(&mut cc, &mut tp);
        assert_eq!(tp.snd_cwnd, 11 + 1023);
        // Not cwnd-limited: no growth.
        tp.is_cwnd_limited = false;
        ack(&mut cc, &mut tp);
        assert_eq!(tp.snd_cwnd, 11 + 1023);
        tp.snd_cwnd = 101;
        assert_eq!(cc.ssthresh(&mut tp), 50);
        tp.prior_cwnd = 300;
        assert_eq!(cc.undo_cwnd(&mut tp), 300);
    }

    #[test]
    fn info_and_build() {
        let i = info();
        assert_eq!(
            (i.name, i.base, i.source),
            ("hybla", "hybla", "Linux 6.18 net/ipv4/tcp_hybla.c")
        );
        assert_eq!(i.params.len(), 1);
        assert_eq!(
            (i.params[0].name, i.params[0].default),
            ("rtt0", ParamValue::Int(25))
        );
        assert_eq!(build("hybla", &Params::new()).unwrap().name(), "hybla");
        let ok: Params = [("rtt0".to_string(), ParamValue::Int(4_294_967))]
            .into_iter()
            .collect();
        assert!(build("hybla", &ok).is_ok());
        for v in [
            ParamValue::Int(0),
            ParamValue::Int(4_294_968),
            ParamValue::Float(2.5),
        ] {
            let p: Params = [("rtt0".to_string(), v)].into_iter().collect();
            match build("hybla", &p) {
                Err(CcError::BadValue {
                    algorithm, param, ..
                }) => {
                    assert_eq!((algorithm.as_str(), param.as_str()), ("hybla", "rtt0"))
                }
                Err(e) => panic!("{v}: {e}"),
                Ok(_) => panic!("rtt0 = {v} accepted"),
            }
        }
    }
}
