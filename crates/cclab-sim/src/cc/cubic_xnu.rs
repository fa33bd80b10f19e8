//! Apple's CUBIC, as XNU implements it in `bsd/netinet/tcp_cubic.c` (tag `xnu-11417.101.15`,
//! apple-oss-distributions/xnu), behind our Linux `tcp_congestion_ops` interface.
//!
//! Every function names the XNU function it follows. XNU keeps windows in bytes (`snd_cwnd`,
//! `snd_ssthresh`, `t_maxseg`); so does this file's state (`u32` bytes, as in XNU), and it
//! converts from and to our packet windows at the hooks (`bytes = packets * mss_cache`; every
//! segment of the simulator is a full MSS, so nothing is lost). XNU's arithmetic is kept: `f32`
//! where XNU uses `float` (K via `cbrtf`, the cubic term, the backoff), truncating `float ->
//! uint32_t` casts, `u32` byte counters, `u64` for `incr_win`. Time is `tcp_now` in
//! milliseconds (`TCP_RETRANSHZ` = 1000), here `tcp_mstamp_us / 1000`.
//!
//! Defaults are XNU's sysctls: `net.inet.tcp.cubic_minor_fixes = 1`, `cubic_rfc_compliant = 1`
//! (so `tcp_cubic_init` sets backoff 0.3 i.e. W <- 0.7 W, fast-convergence factor 0.85 and beta
//! 0.7), `cubic_use_minrtt = 0`, `flow_control_response = 1`; C (`tcp_cubic_coeff`) is 0.4 and not
//! a sysctl. XNU also declares `cubic_tcp_friendliness` and `cubic_fast_convergence` sysctls but
//! `tcp_cubic.c` never reads them (friendliness and fast convergence follow `cubic_minor_fixes`),
//! so they are not exposed here.
//!
//! Seven more switches are not XNU sysctls but ablation switches (issue 13 part 5, the S0
//! study's "why the order"): each turns one of XNU's differences from Linux CUBIC off; their
//! defaults are XNU's behaviour, so a scenario without them runs as before.
//! - `tcp_friendliness`: the Reno-friendly window of `tcp_cubic_tcpwin` (or the "TCP mode"
//!   without minor fixes); off: the cubic target only.
//! - `friendly_ai_above_wmax`: XNU's Reno window grows 1 MSS per window at or above
//!   W(last_max); off: 3 (1 - beta) / (1 + beta) everywhere, as Linux's `tcp_friendliness`.
//! - `fast_convergence`: W(last_max) lowered to 0.85 W at a loss below the previous one.
//! - `last_max_from_ssthresh`: W(last_max) starts at the initial ssthresh (1 GiB), so the first
//!   loss out of slow start already applies fast convergence; off: at 0, as Linux's
//!   `last_max_cwnd`.
//! - `bytes_acked_carry`: `t_bytes_acked` is not reset at a loss; off: reset, as Linux's
//!   `ack_cnt` restarts with each epoch.
//! - `ssthresh_round_to_mss`: the reduced window is rounded to the nearest MSS (`tcp_round_to`);
//!   off: down to a whole MSS, as Linux's `cwnd * beta / 1024` truncates.
//! - `hystart` (off, as XNU, which has none): Linux 6.18's HyStart from `cubic.rs`, with its
//!   default tunables, may end slow start; W(last_max) is then set to that ssthresh, as
//!   `tcp_cubic_cwnd_init_or_reset` sets it from the initial one.
//!
//! How XNU's hooks map onto ours (we keep the Linux 6.18 TCP core; only the window arithmetic is
//! XNU's):
//! - `tcp_cubic_init` + `tcp_cubic_cwnd_init_or_reset` -> `init` (the initial cwnd is the core's;
//!   XNU with minor fixes also uses 10 segments). `after_idle` -> `cwnd_event(CwndRestart)`
//!   clears the cubic state; the restart window itself is Linux's `tcp_cwnd_restart`.
//! - `tcp_cubic_ack_rcvd` / `tcp_cubic_congestion_avd` -> `cong_avoid`. `BYTES_ACKED(th, tp)` is
//!   `acked * mss` where Linux's `acked` counts newly cumulatively acked *and SACKed* segments.
//!   XNU skips growth while cwnd is "non-validated" (RFC 7661, `tcp_cc_is_cwnd_nonvalidated`);
//!   we skip it while Linux's `tcp_is_cwnd_limited` is false, and `TF_CWND_NONVALIDATED` is
//!   never set (XNU's RFC 7661 pipeack machinery is not modelled).
//! - `tcp_cubic_pre_fr` -> `ssthresh`. XNU then sets cwnd = ssthresh at once (SACK) and sends;
//!   our core runs Linux's PRR during recovery instead.
//! - `tcp_cubic_post_fr` -> `cwnd_event(CompleteCwr)` (Linux's `tcp_end_cwnd_reduction`, after it
//!   set cwnd = ssthresh): cwnd = ssthresh, or `max(flight, mss) + mss` when the flight size
//!   (`snd_max - th_ack`, here `packets_out`) is below ssthresh.
//! - `tcp_cubic_after_timeout` -> `cwnd_event(Loss)` right after `ssthresh` in Linux's
//!   `tcp_enter_loss`: the `ssthresh` call's effect is undone and, unless the RTO came in fast
//!   recovery, XNU's `tcp_cubic_clear_state` + `tcp_cubic_pre_fr` run instead (so an RTO never
//!   applies fast convergence). cwnd after an RTO is Linux's `in_flight + 1` (1 after marking
//!   everything lost), as XNU's 1 MSS.
//! - `get_base_rtt` (the route's minimum RTT over up to `N_RTT_BASE` minutes, ms) is Linux's
//!   windowed `min_rtt_us` / 1000. `snd_wnd` (the peer's window) is taken as unlimited and
//!   `TCP_MAXWIN << snd_scale` as Linux's `snd_cwnd_clamp`.
//! - Undo after a spurious retransmission is Linux's (`tcp_reno_undo_cwnd`), not XNU's
//!   `tcp_bad_rexmt_restore_state`. ABC in slow start is XNU's (`min(acked, initial cwnd)` with
//!   minor fixes, else 2 or 1 MSS) and, as in XNU, slow start may overshoot ssthresh by that much.

use super::cubic::Cubic;
use super::params::ParamReader;
use super::reno::tcp_reno_undo_cwnd;
use super::Params;
use super::{
    AckSample, AlgorithmInfo, CaEvent, CaState, CcError, CongestionControl, ParamInfo, ParamValue,
};
use crate::tcp::sock::TcpSock;

/// The algorithm's name in scenarios.
pub const CUBIC_XNU_NAME: &str = "cubic-xnu";
/// `TCP_RETRANSHZ`: granularity of XNU's `tcp_now`, ticks per second (1 ms).
pub const TCP_RETRANSHZ: u32 = 1000;
/// `TCP_CC_CWND_INIT_PKTS`: initial window with minor fixes, segments.
pub const TCP_CC_CWND_INIT_PKTS: u32 = 10;
/// `TCP_CC_CWND_INIT_BYTES`: initial window without minor fixes (RFC 3390), bytes.
pub const TCP_CC_CWND_INIT_BYTES: u32 = 4380;
/// `TCP_MAXWIN << TCP_MAX_WINSHIFT`: the "infinite" ssthresh of `tcp_cubic_cwnd_init_or_reset`.
pub const TCP_MAX_SSTHRESH_BYTES: u32 = 65535 << 14;
/// `tcp_cubic_coeff`: C, segments per second cubed.
pub const TCP_CUBIC_COEFF: f32 = 0.4;

/// XNU's tunables: the `net.inet.tcp.*` sysctls `tcp_cubic.c` reads, with XNU's defaults.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct XnuCubicParams {
    /// `net.inet.tcp.cubic_minor_fixes` (1): float K, RFC 8312 Reno-friendly window taken as the
    /// faster of the two increments, fast convergence, ABC limit of the initial window.
    pub cubic_minor_fixes: bool,
    /// `net.inet.tcp.cubic_rfc_compliant` (1): backoff 0.3 / fast convergence 0.85 / beta 0.7
    /// instead of 0.2 / 0.875 / 0.8.
    pub cubic_rfc_compliant: bool,
    /// `net.inet.tcp.cubic_use_minrtt` (0): when non-zero, the RTT added to the elapsed time is
    /// at least this many milliseconds.
    pub cubic_use_minrtt_ms: u32,
    /// `net.inet.tcp.flow_control_response` (1): `tcp_cubic_post_fr` deflates cwnd to the
    /// flight size when it is below ssthresh.
    pub flow_control_response: bool,
    /// Ablation switch (true = XNU): the Reno-friendly window (`tcp_cubic_tcpwin`) may drive
    /// growth; false: cwnd follows the cubic target only (and no "TCP mode" without minor fixes).
    pub tcp_friendliness: bool,
    /// Ablation switch (true = XNU): the Reno-friendly window grows 1 MSS per window once cwnd
    /// is at or above W(last_max) (minor fixes, RFC mode); false: 3 (1 - beta) / (1 + beta) MSS
    /// per window everywhere, as Linux's estimate.
    pub friendly_ai_above_wmax: bool,
    /// Ablation switch (true = XNU with minor fixes): at a loss below the previous W(last_max),
    /// remember `fast_convergence_factor` W; false: W.
    pub fast_convergence: bool,
    /// Ablation switch (true = XNU): `tcp_cubic_cwnd_init_or_reset` starts W(last_max) at
    /// ssthresh (1 GiB at first), so the first loss counts as "below the previous maximum";
    /// false: it starts at 0, as Linux's `last_max_cwnd`.
    pub last_max_from_ssthresh: bool,
    /// Ablation switch (true = XNU): `t_bytes_acked` (bytes towards the next 1-MSS increase) is
    /// kept across a loss; false: `tcp_cubic_pre_fr` resets it, as Linux restarts `ack_cnt`.
    pub bytes_acked_carry: bool,
    /// Ablation switch (true = XNU): ssthresh = `tcp_round_to(0.7 W, MSS)`, the nearest MSS;
    /// false: rounded down to a whole MSS, as Linux's truncating `cwnd * beta / 1024`.
    pub ssthresh_round_to_mss: bool,
    /// Ablation switch (false = XNU, which has no HyStart): Linux 6.18's HyStart (`cubic.rs`,
    /// default tunables) may end slow start.
    pub hystart: bool,
}

impl Default for XnuCubicParams {
    fn default() -> Self {
        XnuCubicParams {
            cubic_minor_fixes: true,
            cubic_rfc_compliant: true,
            cubic_use_minrtt_ms: 0,
            flow_control_response: true,
            tcp_friendliness: true,
            friendly_ai_above_wmax: true,
            fast_convergence: true,
            last_max_from_ssthresh: true,
            bytes_acked_carry: true,
            ssthresh_round_to_mss: true,
            hystart: false,
        }
    }
}

/// What `cclab presets` lists for XNU's CUBIC.
pub fn info() -> AlgorithmInfo {
    let d = XnuCubicParams::default();
    AlgorithmInfo {
        name: CUBIC_XNU_NAME,
        base: CUBIC_XNU_NAME,
        description: "Apple's CUBIC (macOS/iOS): C 0.4, beta 0.7, float K in ms, XNU's \
                      Reno-friendly and fast-convergence rules",
        source: "Apple xnu-11417.101.15 bsd/netinet/tcp_cubic.c",
        params: vec![
            ParamInfo {
                name: "cubic_minor_fixes",
                default: ParamValue::Bool(d.cubic_minor_fixes),
                doc: "net.inet.tcp.cubic_minor_fixes: float K, Reno-friendly increment as the \
                      faster of both, fast convergence, ABC up to the initial window; \
                      true/false or 0/1",
            },
            ParamInfo {
                name: "cubic_rfc_compliant",
                default: ParamValue::Bool(d.cubic_rfc_compliant),
                doc: "net.inet.tcp.cubic_rfc_compliant: reduce to 0.7 W with fast-convergence \
                      factor 0.85 (RFC 8312); off: 0.8 W and 0.875; true/false or 0/1",
            },
            ParamInfo {
                name: "cubic_use_minrtt",
                default: ParamValue::Int(d.cubic_use_minrtt_ms as i64),
                doc: "net.inet.tcp.cubic_use_minrtt: lower bound in ms of the RTT added to the \
                      time since the epoch started; 0 = off; an integer 0..60000",
            },
            ParamInfo {
                name: "flow_control_response",
                default: ParamValue::Bool(d.flow_control_response),
                doc: "net.inet.tcp.flow_control_response: after recovery set cwnd from the \
                      flight size when it is below ssthresh; true/false or 0/1",
            },
            ParamInfo {
                name: "tcp_friendliness",
                default: ParamValue::Bool(d.tcp_friendliness),
                doc: "ablation switch, not a sysctl: the Reno-friendly window may drive \
                      growth; off: the cubic target only; true/false or 0/1",
            },
            ParamInfo {
                name: "friendly_ai_above_wmax",
                default: ParamValue::Bool(d.friendly_ai_above_wmax),
                doc: "ablation switch, not a sysctl: the Reno-friendly window grows 1 MSS per \
                      window at or above W(last_max); off: 3(1-beta)/(1+beta) everywhere, as \
                      Linux; true/false or 0/1",
            },
            ParamInfo {
                name: "fast_convergence",
                default: ParamValue::Bool(d.fast_convergence),
                doc: "ablation switch, not a sysctl: lower W(last_max) to 0.85 W at a loss below \
                      the previous one (with minor fixes); true/false or 0/1",
            },
            ParamInfo {
                name: "last_max_from_ssthresh",
                default: ParamValue::Bool(d.last_max_from_ssthresh),
                doc: "ablation switch, not a sysctl: W(last_max) starts at ssthresh (1 GiB), so \
                      the first loss applies fast convergence; off: at 0, as Linux; true/false \
                      or 0/1",
            },
            ParamInfo {
                name: "bytes_acked_carry",
                default: ParamValue::Bool(d.bytes_acked_carry),
                doc: "ablation switch, not a sysctl: bytes acked towards the next 1-MSS increase \
                      are kept across a loss; off: reset, as Linux; true/false or 0/1",
            },
            ParamInfo {
                name: "ssthresh_round_to_mss",
                default: ParamValue::Bool(d.ssthresh_round_to_mss),
                doc: "ablation switch, not a sysctl: the reduced window is rounded to the nearest \
                      MSS; off: down to a whole MSS, as Linux; true/false or 0/1",
            },
            ParamInfo {
                name: "hystart",
                default: ParamValue::Bool(d.hystart),
                doc: "ablation switch, not a sysctl: Linux 6.18's HyStart (default tunables) may \
                      end slow start; XNU has none; true/false or 0/1",
            },
        ],
        preset_params: Params::new(),
    }
}

/// Build XNU's CUBIC from its (name-checked) tunables.
pub fn build(algorithm: &str, params: &Params) -> Result<Box<dyn CongestionControl>, CcError> {
    let r = ParamReader::new(algorithm, params);
    let d = XnuCubicParams::default();
    let p = XnuCubicParams {
        cubic_minor_fixes: r.bool("cubic_minor_fixes", d.cubic_minor_fixes)?,
        cubic_rfc_compliant: r.bool("cubic_rfc_compliant", d.cubic_rfc_compliant)?,
        cubic_use_minrtt_ms: r.int("cubic_use_minrtt", d.cubic_use_minrtt_ms as i64, 0, 60_000)?
            as u32,
        flow_control_response: r.bool("flow_control_response", d.flow_control_response)?,
        tcp_friendliness: r.bool("tcp_friendliness", d.tcp_friendliness)?,
        friendly_ai_above_wmax: r.bool("friendly_ai_above_wmax", d.friendly_ai_above_wmax)?,
        fast_convergence: r.bool("fast_convergence", d.fast_convergence)?,
        last_max_from_ssthresh: r.bool("last_max_from_ssthresh", d.last_max_from_ssthresh)?,
        bytes_acked_carry: r.bool("bytes_acked_carry", d.bytes_acked_carry)?,
        ssthresh_round_to_mss: r.bool("ssthresh_round_to_mss", d.ssthresh_round_to_mss)?,
        hystart: r.bool("hystart", d.hystart)?,
    };
    Ok(Box::new(XnuCubic::new(p)))
}

/// `struct tcp_cubic_state` (bsd/netinet/tcp_var.h), windows in bytes, times in ms.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CubicState {
    /// `cub_last_max`: cwnd at the last loss (after fast convergence), bytes.
    pub last_max: u32,
    /// `cub_epoch_start`: `tcp_now` when the epoch started (0 = none), ms.
    pub epoch_start: u32,
    /// `cub_origin_point`: the window the curve plateaus at, bytes.
    pub origin_point: u32,
    /// `cub_tcp_win`: the emulated Reno window, bytes (0 = start a new one).
    pub tcp_win: u32,
    /// `cub_tcp_bytes_acked`: bytes acked towards the next Reno increment.
    pub tcp_bytes_acked: u32,
    /// `cub_avg_lastmax`: running average of `last_max` (63/64 history), bytes.
    pub avg_lastmax: u32,
    /// `cub_mean_dev`: mean absolute deviation of `last_max` from that average, bytes.
    pub mean_dev: u32,
    /// `cub_epoch_period`: K, ms (a `float` in XNU).
    pub epoch_period: f32,
}

/// XNU's CUBIC (`struct tcp_cc_algo tcp_cc_cubic`).
#[derive(Debug, Clone)]
pub struct XnuCubic {
    params: XnuCubicParams,
    /// `tcp_cubic_backoff`: fraction of the window taken off on loss.
    backoff: f32,
    /// `tcp_cubic_fast_convergence_factor`.
    fast_convergence_factor: f32,
    /// `tcp_cubic_beta`: used for the Reno-friendly increase rate.
    beta: f32,
    /// The per-connection cubic state (`tp->t_ccstate`).
    pub st: CubicState,
    /// `tp->t_bytes_acked`: bytes acked towards the next 1-MSS increase (RFC 3465 counting).
    pub t_bytes_acked: u32,
    /// `st` and ssthresh before the last `ssthresh` call, so that an RTO can replace it with
    /// `tcp_cubic_after_timeout`'s own computation.
    saved: Option<(CubicState, u32)>,
    /// With the `hystart` switch: Linux's CUBIC, used only for its HyStart (`pkts_acked`,
    /// `set_state`); its window arithmetic never runs.
    hystart: Option<Box<Cubic>>,
}

/// bsd/netinet/tcp_subr.c: tcp_round_to(): round to the nearest multiple of `round`.
pub fn tcp_round_to(val: u32, round: u32) -> u32 {
    ((val as u64 + (round / 2) as u64) / round as u64 * round as u64) as u32
}

impl XnuCubic {
    /// An instance with these tunables; `tcp_cubic_init` picks the constants from
    /// `cubic_rfc_compliant`.
    pub fn new(params: XnuCubicParams) -> Self {
        let (backoff, fast_convergence_factor, beta) = if params.cubic_rfc_compliant {
            (0.3f32, 0.85f32, 0.7f32)
        } else {
            (0.2f32, 0.875f32, 0.8f32)
        };
        XnuCubic {
            params,
            backoff,
            fast_convergence_factor,
            beta,
            st: CubicState::default(),
            t_bytes_acked: 0,
            saved: None,
            hystart: params.hystart.then(|| Box::new(Cubic::default())),
        }
    }

    /// The tunables.
    pub fn params(&self) -> &XnuCubicParams {
        &self.params
    }

    /// `tcp_cubic_backoff`.
    pub fn backoff(&self) -> f32 {
        self.backoff
    }

    /// `tcp_cubic_beta`.
    pub fn beta(&self) -> f32 {
        self.beta
    }

    /// `tcp_cubic_fast_convergence_factor`.
    pub fn fast_convergence_factor(&self) -> f32 {
        self.fast_convergence_factor
    }

    /// bsd/netinet/tcp_cubic.c: tcp_cubic_clear_state().
    fn clear_state(&mut self) {
        self.st.last_max = 0;
        self.st.epoch_start = 0;
        self.st.origin_point = 0;
        self.st.tcp_win = 0;
        self.st.tcp_bytes_acked = 0;
        self.st.epoch_period = 0.0;
    }

    /// bsd/netinet/tcp_cubic.c: tcp_cubic_cwnd_init_or_reset(), without the cwnd (the core's).
    /// `first` is XNU's `txbytes <= tcp_initial_cwnd(tp)` (nothing sent yet).
    fn cwnd_init_or_reset(&mut self, tp: &mut TcpSock, first: bool) {
        self.clear_state();
        self.t_bytes_acked = 0;
        let mss = tp.mss_cache;
        let mut ssthresh = ssthresh_bytes(tp);
        if first && ssthresh < TCP_MAX_SSTHRESH_BYTES {
            ssthresh = TCP_MAX_SSTHRESH_BYTES;
            tp.snd_ssthresh = pkts(ssthresh, mss).max(tp.snd_ssthresh);
        }
        // Initialize cubic last max to be same as ssthresh (the ablation switch off: 0, as
        // Linux's bictcp_reset; tcp_cubic_update then takes ssthresh at the first epoch).
        self.st.last_max = if self.params.last_max_from_ssthresh {
            ssthresh
        } else {
            0
        };
    }

    /// bsd/netinet/tcp_cubic.c: tcp_cubic_update(): the cubic target window for the next RTT,
    /// W(t) = C (t - K)^3 + W(last_max), bytes. `now` is `tcp_now` (ms), `rtt` the base RTT (ms),
    /// `cwnd`/`ssthresh`/`mss` in bytes.
    pub fn tcp_cubic_update(
        &mut self,
        now: u32,
        rtt: u32,
        cwnd: u32,
        ssthresh: u32,
        mss: u32,
    ) -> u32 {
        let win = cwnd; // min(snd_cwnd, snd_wnd) with an unlimited peer window
        if self.st.last_max == 0 {
            self.st.last_max = ssthresh;
        }
        if self.st.epoch_start == 0 {
            // This is the beginning of a new epoch.
            self.st.epoch_start = if now == 0 { 1 } else { now };
            if win < self.st.last_max {
                // Cubic epoch period: the time to get back to last_max after the backoff.
                let k = if self.params.cubic_minor_fixes {
                    (self.st.last_max - win) as f32 / mss as f32 / TCP_CUBIC_COEFF
                } else {
                    ((self.st.last_max - win) / mss) as f32 / TCP_CUBIC_COEFF
                };
                self.st.epoch_period = k.cbrt() * TCP_RETRANSHZ as f32;
                self.st.origin_point = self.st.last_max;
            } else {
                self.st.epoch_period = 0.0;
                self.st.origin_point = win;
            }
        }
        debug_assert!(self.st.origin_point > 0);
        // timer_diff(): (int32_t)(now - epoch_start) stored into a uint32_t.
        let mut elapsed_time = now.wrapping_sub(self.st.epoch_start);
        elapsed_time = if self.params.cubic_use_minrtt_ms != 0 {
            elapsed_time.wrapping_add(self.params.cubic_use_minrtt_ms.max(rtt))
        } else {
            elapsed_time.wrapping_add(rtt)
        };
        let mut var = (elapsed_time as f32 - self.st.epoch_period) / TCP_RETRANSHZ as f32;
        var = var * var * var * (TCP_CUBIC_COEFF * mss as f32);
        // (uint32_t)(origin + var): truncation; saturates where C's conversion is undefined.
        (self.st.origin_point as f32 + var) as u32
    }

    /// bsd/netinet/tcp_cubic.c: tcp_cubic_tcpwin(): the window a Reno-like sender would have now,
    /// bytes (`cwnd`, `acked`, `mss` in bytes).
    pub fn tcp_cubic_tcpwin(&mut self, cwnd: u32, acked: u32, mss: u32) -> u32 {
        let st = &mut self.st;
        if st.tcp_win == 0 {
            // Start of the epoch: what Cubic decided at its beginning.
            st.tcp_win = cwnd;
            st.tcp_bytes_acked = if self.params.cubic_minor_fixes {
                acked
            } else {
                0
            };
        } else {
            st.tcp_bytes_acked = st.tcp_bytes_acked.wrapping_add(acked);
            if self.params.cubic_minor_fixes {
                // Increase by ai_factor * MSS, once per RTT (cwnd bytes acked).
                while st.tcp_bytes_acked >= cwnd {
                    st.tcp_bytes_acked -= cwnd;
                    let full_ai = if self.params.friendly_ai_above_wmax {
                        cwnd >= st.last_max || !self.params.cubic_rfc_compliant
                    } else {
                        false
                    };
                    if full_ai {
                        st.tcp_win = st.tcp_win.wrapping_add(mss);
                    } else {
                        // Increase-rate from Section 4.2, RFC 8312 (everywhere with the
                        // `friendly_ai_above_wmax` switch off, as Linux).
                        let ai_factor = 3.0f32 * (1.0 - self.beta) / (1.0 + self.beta);
                        st.tcp_win = st.tcp_win.wrapping_add((mss as f32 * ai_factor) as u32);
                    }
                }
            } else if st.tcp_bytes_acked >= st.tcp_win {
                st.tcp_bytes_acked -= st.tcp_win;
                st.tcp_win = st.tcp_win.wrapping_add(mss);
            }
        }
        st.tcp_win
    }

    /// bsd/netinet/tcp_cubic.c: TCP_CUBIC_ENABLE_TCPMODE() (no socket is "realtime" here).
    fn enable_tcpmode(&self, mss: u32) -> bool {
        self.st.mean_dev > (mss << 1)
    }

    /// bsd/netinet/tcp_cubic.c: tcp_cubic_congestion_avd(): one ACK in congestion avoidance;
    /// returns the new cwnd, bytes. `cwnd_max` is `TCP_MAXWIN << snd_scale` (bytes).
    #[allow(clippy::too_many_arguments)]
    pub fn tcp_cubic_congestion_avd(
        &mut self,
        now: u32,
        rtt: u32,
        mut cwnd: u32,
        ssthresh: u32,
        acked: u32,
        mss: u32,
        cwnd_max: u32,
    ) -> u32 {
        let mut incr_win: u64 = u32::MAX as u64;
        self.t_bytes_acked = self.t_bytes_acked.wrapping_add(acked);

        // First compute cubic window; this initializes the epoch after recovery.
        let cubic_target_win = self.tcp_cubic_update(now, rtt, cwnd, ssthresh, mss);
        // Compute TCP window if a multiplicative decrease of 0.2 is used.
        let mut tcp_win = self.tcp_cubic_tcpwin(cwnd, acked, mss);

        if cwnd < tcp_win
            && !self.params.cubic_minor_fixes
            && self.params.tcp_friendliness
            && self.enable_tcpmode(mss)
        {
            // This connection is in TCP-friendly region.
            if self.t_bytes_acked >= cwnd {
                self.t_bytes_acked -= cwnd;
                cwnd = tcp_win.min(cwnd_max);
            }
        } else if cubic_target_win > cwnd {
            // Bytes to acknowledge before cwnd may grow by one segment.
            incr_win = cwnd as u64 * mss as u64 / (cubic_target_win - cwnd) as u64;
            if !self.params.cubic_minor_fixes
                && incr_win > 0
                && self.t_bytes_acked as u64 >= incr_win
            {
                self.t_bytes_acked -= incr_win as u32;
                cwnd = cwnd.saturating_add(mss).min(cwnd_max);
            }
        }

        if self.params.cubic_minor_fixes {
            tcp_win = tcp_round_to(tcp_win, mss);
            if cwnd < tcp_win && self.params.tcp_friendliness {
                let tcp_incr_win = cwnd as u64 * mss as u64 / (tcp_win - cwnd) as u64;
                if tcp_incr_win < incr_win {
                    // This connection is in TCP-friendly region.
                    incr_win = tcp_incr_win;
                }
            }
            if incr_win > 0 && self.t_bytes_acked as u64 >= incr_win {
                self.t_bytes_acked -= incr_win as u32;
                cwnd = cwnd.saturating_add(mss).min(cwnd_max);
            }
        }
        cwnd
    }

    /// bsd/netinet/tcp_cubic.c: tcp_cubic_pre_fr(): note W(last_max) (lowered by fast
    /// convergence), update its average and deviation, return the new ssthresh in bytes.
    /// `TF_CWND_NONVALIDATED` is never set here (see the file header).
    pub fn tcp_cubic_pre_fr(&mut self, cwnd: u32, flight: u32, mss: u32) -> u32 {
        self.st.epoch_start = 0;
        self.st.tcp_win = 0;
        self.st.tcp_bytes_acked = 0;
        if !self.params.bytes_acked_carry {
            self.t_bytes_acked = 0;
        }

        let mut win = cwnd; // min(snd_cwnd, snd_wnd)
                            // The window at which loss occurred, lowered a little more when it did not regain the
                            // previous maximum (a new flow took some of the capacity).
        if win < self.st.last_max && self.params.cubic_minor_fixes && self.params.fast_convergence {
            self.st.last_max = (win as f32 * self.fast_convergence_factor) as u32;
        } else {
            self.st.last_max = win;
        }
        if self.st.last_max == 0 {
            self.st.last_max = flight;
        }

        // Average (63 parts history, 1 part new) and mean absolute deviation of last_max.
        if self.st.avg_lastmax == 0 {
            self.st.avg_lastmax = self.st.last_max;
        } else {
            let mut avg = self.st.avg_lastmax;
            avg = (avg << 6).wrapping_sub(avg);
            self.st.avg_lastmax = avg.wrapping_add(self.st.last_max) >> 6;
        }
        let dev = (self.st.avg_lastmax as i32).wrapping_sub(self.st.last_max as i32);
        let dev = dev.wrapping_abs();
        if self.st.mean_dev == 0 {
            self.st.mean_dev = dev as u32;
        } else {
            let m = self.st.mean_dev as i32;
            let d = dev.wrapping_add((m << 4).wrapping_sub(m));
            self.st.mean_dev = (d >> 4) as u32;
        }

        // Backoff congestion window by tcp_cubic_backoff factor.
        win = (win as f32 - win as f32 * self.backoff) as u32;
        win = if self.params.ssthresh_round_to_mss {
            tcp_round_to(win, mss)
        } else {
            win / mss * mss
        };
        win.max(2 * mss)
    }

    /// bsd/netinet/tcp_cubic.c: tcp_cubic_post_fr(): the cwnd to leave recovery with, bytes
    /// (`flight` = `snd_max - th_ack`).
    pub fn tcp_cubic_post_fr(&mut self, ssthresh: u32, flight: u32, mss: u32) -> u32 {
        let flight_size = if !self.params.cubic_minor_fixes || self.params.flow_control_response {
            flight
        } else {
            ssthresh
        };
        // (The SACK branch needs t_lossflightsize > 0, which is never the case here.)
        let cwnd = if flight_size < ssthresh {
            flight_size.max(mss) + mss
        } else {
            ssthresh
        };
        self.st.tcp_win = 0;
        self.st.tcp_bytes_acked = 0;
        cwnd
    }
}

/// Packets to bytes, saturating.
fn bytes(pkts: u32, mss: u32) -> u32 {
    pkts.saturating_mul(mss)
}

/// Bytes to packets (windows here are whole segments).
fn pkts(bytes: u32, mss: u32) -> u32 {
    bytes / mss
}

/// ssthresh in bytes, Linux's "infinite" mapping to XNU's `TCP_MAXWIN << TCP_MAX_WINSHIFT`.
fn ssthresh_bytes(tp: &TcpSock) -> u32 {
    bytes(tp.snd_ssthresh, tp.mss_cache).min(TCP_MAX_SSTHRESH_BYTES)
}

/// `tcp_now`: milliseconds.
fn tcp_now(tp: &TcpSock) -> u32 {
    (tp.tcp_mstamp_us / 1000) as u32
}

/// bsd/netinet/tcp_input.c: get_base_rtt(): minimum RTT, ms (0 before the first sample).
fn get_base_rtt(tp: &TcpSock) -> u32 {
    if tp.min_rtt_us == u32::MAX {
        0
    } else {
        tp.min_rtt_us / 1000
    }
}

impl CongestionControl for XnuCubic {
    fn name(&self) -> &'static str {
        CUBIC_XNU_NAME
    }

    /// bsd/netinet/tcp_cubic.c: tcp_cubic_init() (constants chosen in `new`), then
    /// tcp_cubic_cwnd_init_or_reset() as XNU's `cwnd_init` hook.
    fn init(&mut self, tp: &mut TcpSock) {
        self.st = CubicState::default();
        self.t_bytes_acked = 0;
        self.saved = None;
        self.cwnd_init_or_reset(tp, true);
        if let Some(linux) = self.hystart.as_mut() {
            linux.init(tp);
        }
    }

    /// With the `hystart` switch only: Linux's `cubictcp_acked` (HyStart). When it ends slow
    /// start, W(last_max) becomes that ssthresh, as `tcp_cubic_cwnd_init_or_reset` sets it from
    /// the initial ssthresh (else the first epoch would aim at XNU's 1 GiB initial value).
    fn pkts_acked(&mut self, tp: &mut TcpSock, sample: &AckSample) {
        let Some(linux) = self.hystart.as_mut() else {
            return;
        };
        let before = tp.snd_ssthresh;
        linux.pkts_acked(tp, sample);
        if tp.snd_ssthresh != before {
            self.st.last_max = ssthresh_bytes(tp);
        }
    }

    /// With the `hystart` switch only: Linux's `cubictcp_state` (an RTO restarts HyStart).
    fn set_state(&mut self, tp: &mut TcpSock, new_state: CaState) {
        if let Some(linux) = self.hystart.as_mut() {
            linux.set_state(tp, new_state);
        }
    }

    /// bsd/netinet/tcp_cubic.c: tcp_cubic_pre_fr(), called where Linux asks for ssthresh.
    fn ssthresh(&mut self, tp: &mut TcpSock) -> u32 {
        self.saved = Some((self.st, tp.snd_ssthresh));
        let mss = tp.mss_cache;
        let flight = bytes(tp.packets_out, mss);
        pkts(
            self.tcp_cubic_pre_fr(bytes(tp.snd_cwnd, mss), flight, mss),
            mss,
        )
    }

    /// bsd/netinet/tcp_cubic.c: tcp_cubic_ack_rcvd(): RFC 3465 slow start below ssthresh,
    /// `tcp_cubic_congestion_avd` above.
    fn cong_avoid(&mut self, tp: &mut TcpSock, _ack: u64, acked: u32) {
        // Do not increase the congestion window in non-validated phase.
        if !tp.is_cwnd_limited() {
            return;
        }
        let mss = tp.mss_cache;
        let cwnd_max = bytes(tp.snd_cwnd_clamp, mss);
        let cwnd = bytes(tp.snd_cwnd, mss);
        let acked_bytes = bytes(acked, mss);
        let ssthresh = ssthresh_bytes(tp);
        let new_cwnd = if cwnd >= ssthresh {
            let (now, rtt) = (tcp_now(tp), get_base_rtt(tp));
            self.tcp_cubic_congestion_avd(now, rtt, cwnd, ssthresh, acked_bytes, mss, cwnd_max)
        } else {
            // Limit the increment as RFC 3465 section 2.3 suggests.
            let abc_lim = if self.params.cubic_minor_fixes {
                // tcp_initial_cwnd(): the burst the network is known to survive.
                TCP_CC_CWND_INIT_PKTS * mss
            } else if tp.ca_state != CaState::Loss {
                // XNU: snd_nxt == snd_max, i.e. not going back after an RTO (Linux never
                // rewinds snd_nxt; its Loss state is the equivalent).
                2 * mss
            } else {
                mss
            };
            cwnd.saturating_add(acked_bytes.min(abc_lim)).min(cwnd_max)
        };
        tp.set_cwnd(pkts(new_cwnd, mss).max(1));
    }

    /// The XNU hooks Linux's events stand for: `post_fr` when recovery completes,
    /// `after_timeout` on an RTO, `after_idle` on a restart after idle.
    fn cwnd_event(&mut self, tp: &mut TcpSock, event: CaEvent) {
        let mss = tp.mss_cache;
        match event {
            CaEvent::CompleteCwr => {
                // bsd/netinet/tcp_cubic.c: tcp_cubic_post_fr().
                if tp.snd_ssthresh >= crate::tcp::sock::TCP_INFINITE_SSTHRESH {
                    return;
                }
                let ssthresh = ssthresh_bytes(tp);
                let flight = bytes(tp.packets_out, mss);
                let cwnd = self.tcp_cubic_post_fr(ssthresh, flight, mss);
                tp.set_cwnd(pkts(cwnd, mss).max(1));
            }
            CaEvent::Loss => {
                // bsd/netinet/tcp_cubic.c: tcp_cubic_after_timeout(): replace what `ssthresh`
                // (pre_fr with the fast-recovery state) did.
                let Some((st, old_ssthresh)) = self.saved.take() else {
                    return;
                };
                self.st = st;
                if tp.ca_state == CaState::Recovery {
                    // IN_FASTRECOVERY: XNU leaves ssthresh and the cubic state alone.
                    tp.snd_ssthresh = old_ssthresh;
                } else {
                    self.clear_state();
                    let flight = bytes(tp.packets_out, mss);
                    let ssthresh = self.tcp_cubic_pre_fr(bytes(tp.snd_cwnd, mss), flight, mss);
                    tp.snd_ssthresh = pkts(ssthresh, mss);
                }
            }
            CaEvent::CwndRestart => {
                // bsd/netinet/tcp_cubic.c: tcp_cubic_cwnd_init_or_reset() as `after_idle`.
                self.cwnd_init_or_reset(tp, false);
            }
            _ => {}
        }
    }

    /// Linux's `tcp_reno_undo_cwnd` (XNU's undo lives in its TCP core, which we do not use).
    fn undo_cwnd(&mut self, tp: &mut TcpSock) -> u32 {
        tcp_reno_undo_cwnd(tp)
    }
}

#[cfg(test)]
#[path = "tests_cubic_xnu.rs"]
mod tests;

#[cfg(test)]
#[path = "tests_cubic_xnu_switches.rs"]
mod tests_switches;
