//! BBRv2/v3 tunables: the sources' `bbr_<name>` module parameters with each branch's defaults,
//! their ranges, and how a scenario's `cc_params` set them.

use super::*;

/// Tunables, named as the sources' `bbr_<name>` module parameters / `bbr_param(sk, name)`.
/// Gains and fractions are in 1/256 (`BBR_UNIT`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NextParams {
    /// Window of the min_rtt filter, s.
    pub min_rtt_win_sec: u32,
    /// Time held at the PROBE_RTT cwnd, ms (0 = never PROBE_RTT).
    pub probe_rtt_mode_ms: u32,
    /// Window of the probe_rtt_min_us filter, ms: the interval between PROBE_RTTs.
    pub probe_rtt_win_ms: u32,
    /// PROBE_RTT cwnd as a fraction of the BDP.
    pub probe_rtt_cwnd_gain: u32,
    /// STARTUP pacing gain (v3 `startup_pacing_gain`, v2 `high_gain`).
    pub startup_pacing_gain: u32,
    /// STARTUP and DRAIN cwnd gain (v3 `startup_cwnd_gain`; v2 uses `high_gain`).
    pub startup_cwnd_gain: u32,
    /// DRAIN pacing gain.
    pub drain_gain: u32,
    /// PROBE_BW cwnd gain.
    pub cwnd_gain: u32,
    /// PROBE_BW pacing gains of UP, DOWN, CRUISE, REFILL (`bbr_pacing_gain[]`).
    pub pacing_gain: [u32; 4],
    /// Minimum cwnd, packets.
    pub cwnd_min_target: u32,
    /// Bandwidth growth that counts as growing (1.25).
    pub full_bw_thresh: u32,
    /// Rounds without such growth before the pipe is full.
    pub full_bw_cnt: u32,
    /// Gain on the ACK-aggregation allowance (0 = off).
    pub extra_acked_gain: u32,
    /// Window of the ACK-aggregation filter, rounds.
    pub extra_acked_win_rtts: u32,
    /// Multiplicative cut of inflight_hi / bw_lo / inflight_lo on loss (0.3).
    pub beta: u32,
    /// Loss rate of a flight above which inflight is too high (2 %).
    pub loss_thresh: u32,
    /// Lossy events in a STARTUP recovery round that end STARTUP (0 = off).
    pub full_loss_cnt: u32,
    /// Headroom left under inflight_hi in CRUISE and PROBE_RTT (15 %).
    pub inflight_headroom: u32,
    /// v3: extra cwnd gain in PROBE_UP, in units of 1/4 (0..3).
    pub bw_probe_cwnd_gain: u32,
    /// v2: PROBE_UP ends once inflight reaches this multiple of the BDP (1.25).
    pub bw_probe_pif_gain: u32,
    /// Max rounds between bandwidth probes (Reno coexistence).
    pub bw_probe_max_rounds: u32,
    /// Random extra rounds before a probe.
    pub bw_probe_rand_rounds: u32,
    /// Base wall-clock time between probes, us.
    pub bw_probe_base_us: u32,
    /// Random extra wall-clock time between probes, us.
    pub bw_probe_rand_us: u32,
    /// EWMA gain of the CE ratio (ECN; never used in cclab).
    pub ecn_alpha_gain: u32,
    /// Initial ecn_alpha.
    pub ecn_alpha_init: u32,
    /// Cut of inflight_lo per unit ecn_alpha (0 = no ECN bounding).
    pub ecn_factor: u32,
    /// CE ratio above which inflight is too high (0 = off).
    pub ecn_thresh: u32,
    /// Max min_rtt at which ECN logic is used, us (0 = any).
    pub ecn_max_rtt_us: u32,
    /// Re-probe gain after ECN clears (0 = off).
    pub ecn_reprobe_gain: u32,
    /// STARTUP rounds with CE ratio above ecn_thresh that end STARTUP.
    pub full_ecn_cnt: u32,
    /// Skip model updates on app-limited ACKs that change nothing.
    pub fast_path: bool,
    /// v3: slow down for a loss repaired by a TLP.
    pub loss_probe_recovery: bool,
    /// Halve the min_rtt-based TSO allowance every 2^shift us of min_rtt (0 = off).
    pub tso_rtt_shift: u32,
}

/// One tunable: name, default, accepted range, doc.
pub struct Knob {
    /// Name (the source's `bbr_<name>` without the prefix).
    pub name: &'static str,
    /// Lowest accepted value.
    pub lo: i64,
    /// Highest accepted value.
    pub hi: i64,
    /// One line for `cclab presets`.
    pub doc: &'static str,
}

/// The integer tunables both versions expose (booleans are `fast_path`, `loss_probe_recovery`).
pub const KNOBS: &[Knob] = &[
    Knob {
        name: "min_rtt_win_sec",
        lo: 1,
        hi: 3600,
        doc: "min_rtt filter window, s",
    },
    Knob {
        name: "probe_rtt_mode_ms",
        lo: 0,
        hi: 10_000,
        doc: "time at the PROBE_RTT cwnd, ms; 0 disables PROBE_RTT",
    },
    Knob {
        name: "probe_rtt_win_ms",
        lo: 1,
        hi: 3_600_000,
        doc: "interval between PROBE_RTTs (probe_rtt_min_us window), ms",
    },
    Knob {
        name: "probe_rtt_cwnd_gain",
        lo: 0,
        hi: 1023,
        doc: "PROBE_RTT cwnd as a fraction of BDP, 1/256 (128 = 0.5)",
    },
    Knob {
        name: "startup_pacing_gain",
        lo: 257,
        hi: 1023,
        doc: "STARTUP pacing gain, 1/256",
    },
    Knob {
        name: "startup_cwnd_gain",
        lo: 256,
        hi: 1023,
        doc: "STARTUP/DRAIN cwnd gain, 1/256",
    },
    Knob {
        name: "drain_gain",
        lo: 1,
        hi: 256,
        doc: "DRAIN pacing gain, 1/256",
    },
    Knob {
        name: "cwnd_gain",
        lo: 256,
        hi: 1023,
        doc: "PROBE_BW cwnd gain, 1/256 (512 = 2.0)",
    },
    Knob {
        name: "bw_probe_up_gain",
        lo: 257,
        hi: 1023,
        doc: "PROBE_BW UP pacing gain (bbr_pacing_gain[0]), 1/256 (320 = 1.25)",
    },
    Knob {
        name: "bw_probe_down_gain",
        lo: 1,
        hi: 256,
        doc: "PROBE_BW DOWN pacing gain (bbr_pacing_gain[1]), 1/256",
    },
    Knob {
        name: "cwnd_min_target",
        lo: 1,
        hi: 1000,
        doc: "minimum cwnd, packets",
    },
    Knob {
        name: "full_bw_thresh",
        lo: 257,
        hi: 1023,
        doc: "bw growth that counts as growing, 1/256 (320 = 1.25)",
    },
    Knob {
        name: "full_bw_cnt",
        lo: 1,
        hi: 3,
        doc: "rounds without growth before the pipe is full",
    },
    Knob {
        name: "extra_acked_gain",
        lo: 0,
        hi: 1023,
        doc: "ACK-aggregation cwnd allowance gain, 1/256; 0 = off",
    },
    Knob {
        name: "extra_acked_win_rtts",
        lo: 1,
        hi: 31,
        doc: "ACK-aggregation filter window, rounds",
    },
    Knob {
        name: "beta",
        lo: 0,
        hi: 255,
        doc: "multiplicative cut on loss, 1/256 (76 = 0.3); 0 = no loss response",
    },
    Knob {
        name: "loss_thresh",
        lo: 1,
        hi: 255,
        doc: "loss rate of a flight that means too much inflight, 1/256 (5 = 2 %)",
    },
    Knob {
        name: "full_loss_cnt",
        lo: 0,
        hi: 15,
        doc: "loss events in a STARTUP recovery round ending STARTUP; 0 = off",
    },
    Knob {
        name: "inflight_headroom",
        lo: 0,
        hi: 255,
        doc: "headroom under inflight_hi when cruising, 1/256 (38 = 15 %)",
    },
    Knob {
        name: "bw_probe_cwnd_gain",
        lo: 0,
        hi: 3,
        doc: "extra PROBE_UP cwnd gain in 1/4 (v3 only; v2 ignores it)",
    },
    Knob {
        name: "bw_probe_pif_gain",
        lo: 256,
        hi: 511,
        doc: "PROBE_UP ends at this inflight/BDP, 1/256 (v2 only; v3 ignores it)",
    },
    Knob {
        name: "bw_probe_max_rounds",
        lo: 1,
        hi: 255,
        doc: "max rounds between bandwidth probes (Reno coexistence)",
    },
    Knob {
        name: "bw_probe_rand_rounds",
        lo: 1,
        hi: 255,
        doc: "random rounds added before a probe",
    },
    Knob {
        name: "bw_probe_base_us",
        lo: 0,
        hi: 60_000_000,
        doc: "base time between bandwidth probes, us",
    },
    Knob {
        name: "bw_probe_rand_us",
        lo: 1,
        hi: 60_000_000,
        doc: "random time added between probes, us",
    },
    Knob {
        name: "ecn_alpha_gain",
        lo: 0,
        hi: 256,
        doc: "ECN: EWMA gain of the CE ratio, 1/256",
    },
    Knob {
        name: "ecn_alpha_init",
        lo: 0,
        hi: 256,
        doc: "ECN: initial alpha, 1/256",
    },
    Knob {
        name: "ecn_factor",
        lo: 0,
        hi: 256,
        doc: "ECN: inflight_lo cut per alpha, 1/256",
    },
    Knob {
        name: "ecn_thresh",
        lo: 0,
        hi: 256,
        doc: "ECN: CE ratio meaning too much inflight, 1/256",
    },
    Knob {
        name: "ecn_max_rtt_us",
        lo: 0,
        hi: 524_287,
        doc: "ECN: max min_rtt for ECN logic, us",
    },
    Knob {
        name: "ecn_reprobe_gain",
        lo: 0,
        hi: 256,
        doc: "ECN: reprobe gain after marks clear, 1/256",
    },
    Knob {
        name: "full_ecn_cnt",
        lo: 0,
        hi: 3,
        doc: "ECN: high-CE STARTUP rounds ending STARTUP",
    },
    Knob {
        name: "tso_rtt_shift",
        lo: 0,
        hi: 31,
        doc: "halve the min_rtt TSO allowance per 2^shift us of min_rtt",
    },
];

impl NextParams {
    /// Value of the integer tunable `name`.
    pub fn get(&self, name: &str) -> u32 {
        let mut c = *self;
        *c.field_mut(name)
    }

    fn field_mut(&mut self, name: &str) -> &mut u32 {
        match name {
            "min_rtt_win_sec" => &mut self.min_rtt_win_sec,
            "probe_rtt_mode_ms" => &mut self.probe_rtt_mode_ms,
            "probe_rtt_win_ms" => &mut self.probe_rtt_win_ms,
            "probe_rtt_cwnd_gain" => &mut self.probe_rtt_cwnd_gain,
            "startup_pacing_gain" => &mut self.startup_pacing_gain,
            "startup_cwnd_gain" => &mut self.startup_cwnd_gain,
            "drain_gain" => &mut self.drain_gain,
            "cwnd_gain" => &mut self.cwnd_gain,
            "bw_probe_up_gain" => &mut self.pacing_gain[0],
            "bw_probe_down_gain" => &mut self.pacing_gain[1],
            "cwnd_min_target" => &mut self.cwnd_min_target,
            "full_bw_thresh" => &mut self.full_bw_thresh,
            "full_bw_cnt" => &mut self.full_bw_cnt,
            "extra_acked_gain" => &mut self.extra_acked_gain,
            "extra_acked_win_rtts" => &mut self.extra_acked_win_rtts,
            "beta" => &mut self.beta,
            "loss_thresh" => &mut self.loss_thresh,
            "full_loss_cnt" => &mut self.full_loss_cnt,
            "inflight_headroom" => &mut self.inflight_headroom,
            "bw_probe_cwnd_gain" => &mut self.bw_probe_cwnd_gain,
            "bw_probe_pif_gain" => &mut self.bw_probe_pif_gain,
            "bw_probe_max_rounds" => &mut self.bw_probe_max_rounds,
            "bw_probe_rand_rounds" => &mut self.bw_probe_rand_rounds,
            "bw_probe_base_us" => &mut self.bw_probe_base_us,
            "bw_probe_rand_us" => &mut self.bw_probe_rand_us,
            "ecn_alpha_gain" => &mut self.ecn_alpha_gain,
            "ecn_alpha_init" => &mut self.ecn_alpha_init,
            "ecn_factor" => &mut self.ecn_factor,
            "ecn_thresh" => &mut self.ecn_thresh,
            "ecn_max_rtt_us" => &mut self.ecn_max_rtt_us,
            "ecn_reprobe_gain" => &mut self.ecn_reprobe_gain,
            "full_ecn_cnt" => &mut self.full_ecn_cnt,
            "tso_rtt_shift" => &mut self.tso_rtt_shift,
            _ => unreachable!("unknown BBR tunable {name}"),
        }
    }

    /// The `ParamInfo` list for `cclab presets`.
    pub fn infos(&self) -> Vec<ParamInfo> {
        let mut v: Vec<ParamInfo> = KNOBS
            .iter()
            .map(|k| ParamInfo {
                name: k.name,
                default: ParamValue::Int(self.get(k.name) as i64),
                doc: k.doc,
            })
            .collect();
        v.push(ParamInfo {
            name: "fast_path",
            default: ParamValue::Bool(self.fast_path),
            doc: "skip model updates on app-limited ACKs that change nothing",
        });
        v.push(ParamInfo {
            name: "loss_probe_recovery",
            default: ParamValue::Bool(self.loss_probe_recovery),
            doc: "slow down for a loss repaired by a tail loss probe (v3 only)",
        });
        v
    }

    /// These defaults overridden by `params`, each checked against its range.
    pub fn read(mut self, algorithm: &str, params: &Params) -> Result<Self, CcError> {
        let r = ParamReader::new(algorithm, params);
        for k in KNOBS {
            let def = self.get(k.name) as i64;
            *self.field_mut(k.name) = r.int(k.name, def, k.lo, k.hi)? as u32;
        }
        self.fast_path = r.bool("fast_path", self.fast_path)?;
        self.loss_probe_recovery = r.bool("loss_probe_recovery", self.loss_probe_recovery)?;
        Ok(self)
    }
}
