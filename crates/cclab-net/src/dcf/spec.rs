//! A DCF cell as a scenario gives it ([`DcfSpec`], the scenario's units, every PHY value
//! defaulting to its `standard`'s preset) and as the cell runs it ([`DcfParams`], resolved, in
//! ns).

use super::phy::{self, Mode, Preset, Standard, ACK_BYTES, CTS_BYTES, RTS_BYTES};
use super::rate::{
    ArfParams, RateAdaptation, DEFAULT_FAILURE_THRESHOLD, DEFAULT_MAX_SUCCESS_THRESHOLD,
    DEFAULT_SUCCESS_THRESHOLD, DEFAULT_TIMER_THRESHOLD,
};
use crate::error::NetError;
use crate::spec::ms_to_ns;
use serde::{Deserialize, Serialize};

/// dot11ShortRetryLimit's default: at most 7 transmission attempts of a frame (ns-3
/// `WifiMac::FrameRetryLimit`).
pub const DEFAULT_RETRY_LIMIT: u32 = 7;
/// The largest CW accepted, slots (so backoff arithmetic never overflows).
pub const MAX_CW: u32 = (1 << 20) - 1;

/// An 802.11 DCF cell, in the scenario's units. Every field has a default: a bare spec is an
/// 802.11g cell (54 Mbit/s, short slot) with unlimited queues and no frame errors. The PHY
/// values (`slot_us` ... `mac_overhead_bytes`) are `None` for "the standard's value".
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DcfSpec {
    /// The PHY whose values are the defaults: `"802.11b"`, `"802.11g"` (default) or `"802.11n"`.
    pub standard: Standard,
    /// 802.11n only: the HT MCS, 0..=7 (one stream, 20 MHz, long GI); default 7 (65 Mbit/s).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ht_mcs: Option<u8>,
    /// aSlotTime, µs (802.11b 20, 802.11g/n 9).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slot_us: Option<f64>,
    /// aSIFSTime, µs (10 for all three).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sifs_us: Option<f64>,
    /// DIFS, µs; default SIFS + 2 slots (802.11b 50, 802.11g/n 28).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub difs_us: Option<f64>,
    /// Rate of data frames, bit/s (802.11b 11 M, 802.11g 54 M, 802.11n the MCS's rate).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_rate_bps: Option<u64>,
    /// Rate of Ack, RTS and CTS frames, bit/s; default the highest basic rate not above the
    /// data rate (802.11b 2 M of {1, 2}; 802.11g/n 24 M of {6, 12, 24}).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub control_rate_bps: Option<u64>,
    /// CWmin, slots (802.11b 31, 802.11g/n 15).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cw_min: Option<u32>,
    /// CWmax, slots (1023).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cw_max: Option<u32>,
    /// PHY preamble and header of a data frame, µs (802.11b 192, 802.11g 20, 802.11n HT-mixed
    /// 36).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preamble_us: Option<f64>,
    /// PHY preamble and header of Ack, RTS and CTS, µs (802.11b 192, 802.11g/n 20).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub control_preamble_us: Option<f64>,
    /// Signal extension after every OFDM frame, µs (802.11g/n on 2.4 GHz 6; 802.11b 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signal_extension_us: Option<f64>,
    /// MAC header, FCS and LLC/SNAP around each packet, bytes (36; 802.11n QoS Data 38).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mac_overhead_bytes: Option<u32>,
    /// Transmission attempts of a frame before it is dropped (dot11ShortRetryLimit and
    /// dot11LongRetryLimit as one, like ns-3's FrameRetryLimit); default 7.
    pub retry_limit: u32,
    /// Each port's queue limit, packets (the frame in transmission included); None: no limit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_pkts: Option<u32>,
    /// Each port's queue limit, bytes (the frame in transmission included); None: no limit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_bytes: Option<u64>,
    /// Per port (entry k for port k): a packet limit that replaces `queue_pkts` for that port
    /// (an access point's queue beside the stations' device queues); `null` or a missing entry:
    /// `queue_pkts`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub queue_pkts_by_port: Vec<Option<u32>>,
    /// Frames whose PSDU is longer than this go after an RTS/CTS exchange; None: never.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rts_threshold_bytes: Option<u32>,
    /// Probability that a transmission attempt not in a collision is lost, every port.
    pub frame_error_rate: f64,
    /// Per port (entry k for port k): replaces `frame_error_rate`; empty: not used. A frame
    /// between two ports is lost with the larger of their two rates.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub frame_error_rates: Vec<f64>,
    /// Propagation delay from any port to any other, ms.
    pub delay_ms: f64,
    /// Per-station rate adaptation of data frames: `"none"` (default: every frame at
    /// `data_rate_bps`), `"arf"` or `"aarf"` (see [`super::rate`]); stations start at
    /// `data_rate_bps`, the top of their ladder.
    #[serde(skip_serializing_if = "RateAdaptation::is_none")]
    pub rate_adaptation: RateAdaptation,
    /// ARF/AARF: consecutive failed attempts (collisions and frame errors) that step a rate
    /// down; default 2.
    #[serde(skip_serializing_if = "is_default_failure_threshold")]
    pub arf_failure_threshold: u32,
    /// ARF/AARF: consecutive successes that step a rate up (AARF: the threshold's minimum);
    /// default 10.
    #[serde(skip_serializing_if = "is_default_success_threshold")]
    pub arf_success_threshold: u32,
    /// ARF/AARF: transmissions since the last change that step a rate up (ns-3's "timer",
    /// counted in transmissions; AARF: its minimum); default 15.
    #[serde(skip_serializing_if = "is_default_timer_threshold")]
    pub arf_timer_threshold: u32,
    /// AARF: the largest success threshold (it doubles after each failed probe); default 60.
    #[serde(skip_serializing_if = "is_default_max_success_threshold")]
    pub aarf_max_success_threshold: u32,
    /// How a backoff counter counts a busy medium: `"ieee"` (default; 802.11-2016 10.3.4.3, as
    /// ns-3: frozen while the medium is busy, decremented only at the end of idle slots) or
    /// `"bianchi"` (Bianchi 2000's Markov chain, whose time step is an idle slot or a whole
    /// transmission: a station that did not transmit counts a busy period as one slot).
    #[serde(skip_serializing_if = "BackoffRule::is_ieee")]
    pub backoff_rule: BackoffRule,
}

/// How a waiting station's backoff counter counts a busy medium ([`DcfSpec::backoff_rule`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackoffRule {
    /// IEEE 802.11-2016 10.3.4.3: frozen while the medium is busy.
    #[default]
    Ieee,
    /// Bianchi (2000): a busy period counts as one slot for the stations that did not send.
    Bianchi,
}

impl BackoffRule {
    /// Whether this is the standard's rule (the default).
    pub fn is_ieee(&self) -> bool {
        *self == BackoffRule::Ieee
    }
}

fn is_default_failure_threshold(v: &u32) -> bool {
    *v == DEFAULT_FAILURE_THRESHOLD
}
fn is_default_success_threshold(v: &u32) -> bool {
    *v == DEFAULT_SUCCESS_THRESHOLD
}
fn is_default_timer_threshold(v: &u32) -> bool {
    *v == DEFAULT_TIMER_THRESHOLD
}
fn is_default_max_success_threshold(v: &u32) -> bool {
    *v == DEFAULT_MAX_SUCCESS_THRESHOLD
}

impl Default for DcfSpec {
    /// An 802.11g cell with every standard value, retry limit 7, no queue limit, no RTS/CTS,
    /// no frame errors, no delay, no rate adaptation (ARF thresholds at ns-3's defaults).
    fn default() -> Self {
        DcfSpec {
            standard: Standard::Dot11g,
            ht_mcs: None,
            slot_us: None,
            sifs_us: None,
            difs_us: None,
            data_rate_bps: None,
            control_rate_bps: None,
            cw_min: None,
            cw_max: None,
            preamble_us: None,
            control_preamble_us: None,
            signal_extension_us: None,
            mac_overhead_bytes: None,
            retry_limit: DEFAULT_RETRY_LIMIT,
            queue_pkts: None,
            queue_bytes: None,
            queue_pkts_by_port: Vec::new(),
            rts_threshold_bytes: None,
            frame_error_rate: 0.0,
            frame_error_rates: Vec::new(),
            delay_ms: 0.0,
            rate_adaptation: RateAdaptation::None,
            arf_failure_threshold: DEFAULT_FAILURE_THRESHOLD,
            arf_success_threshold: DEFAULT_SUCCESS_THRESHOLD,
            arf_timer_threshold: DEFAULT_TIMER_THRESHOLD,
            aarf_max_success_threshold: DEFAULT_MAX_SUCCESS_THRESHOLD,
            backoff_rule: BackoffRule::Ieee,
        }
    }
}

fn field(path: &str, name: &str, message: impl Into<String>) -> NetError {
    NetError::field(format!("{path}.{name}"), message)
}

impl DcfSpec {
    /// An all-defaults spec of `standard`.
    pub fn of(standard: Standard) -> Self {
        DcfSpec {
            standard,
            ..DcfSpec::default()
        }
    }

    /// Check every value; errors name the field under `path` (`media[0].cw_max`) and say what
    /// is accepted. [`DcfSpec::validate_ports`] adds the checks that need the port count.
    pub fn validate(&self, path: &str) -> Result<(), NetError> {
        if let Some(m) = self.ht_mcs {
            if self.standard != Standard::Dot11n {
                return Err(field(
                    path,
                    "ht_mcs",
                    format!(
                        "is for standard = \"802.11n\" only (this cell is {:?})",
                        self.standard.name()
                    ),
                ));
            }
            if m > 7 {
                return Err(field(
                    path,
                    "ht_mcs",
                    format!("{m} is not accepted: 0 to 7 (one spatial stream)"),
                ));
            }
        }
        if let Some(s) = self.slot_us {
            if !(s.is_finite() && s > 0.0) {
                return Err(field(
                    path,
                    "slot_us",
                    format!("{s} is not accepted: a finite number > 0"),
                ));
            }
        }
        for (name, v) in [
            ("sifs_us", self.sifs_us),
            ("difs_us", self.difs_us),
            ("preamble_us", self.preamble_us),
            ("control_preamble_us", self.control_preamble_us),
            ("signal_extension_us", self.signal_extension_us),
            ("delay_ms", Some(self.delay_ms)),
        ] {
            if let Some(v) = v.filter(|v| !(v.is_finite() && *v >= 0.0)) {
                return Err(field(
                    path,
                    name,
                    format!("{v} is not accepted: a finite number >= 0"),
                ));
            }
        }
        for (name, v) in [
            ("data_rate_bps", self.data_rate_bps),
            ("control_rate_bps", self.control_rate_bps),
        ] {
            if v == Some(0) {
                return Err(field(path, name, "0 is not accepted: a rate > 0 bps"));
            }
        }
        let preset = self.preset();
        let (cw_min, cw_max) = (
            self.cw_min.unwrap_or(preset.cw_min),
            self.cw_max.unwrap_or(preset.cw_max),
        );
        if cw_max > MAX_CW {
            return Err(field(
                path,
                "cw_max",
                format!("{cw_max} is not accepted: at most {MAX_CW} slots"),
            ));
        }
        if cw_min > cw_max {
            let name = if self.cw_min.is_some() {
                "cw_min"
            } else {
                "cw_max"
            };
            return Err(field(
                path,
                name,
                format!(
                    "cw_min ({cw_min}) above cw_max ({cw_max}) is not accepted: cw_min <= cw_max"
                ),
            ));
        }
        if self.retry_limit == 0 {
            return Err(field(
                path,
                "retry_limit",
                "0 is not accepted: at least 1 transmission attempt",
            ));
        }
        if self.queue_pkts == Some(0) {
            return Err(field(path, "queue_pkts", "0 is not accepted: at least 1"));
        }
        if self.queue_bytes == Some(0) {
            return Err(field(path, "queue_bytes", "0 is not accepted: at least 1"));
        }
        for (k, &q) in self.queue_pkts_by_port.iter().enumerate() {
            if q == Some(0) {
                return Err(field(
                    path,
                    &format!("queue_pkts_by_port[{k}]"),
                    "0 is not accepted: at least 1, or null for queue_pkts",
                ));
            }
        }
        if !(0.0..=1.0).contains(&self.frame_error_rate) {
            return Err(field(
                path,
                "frame_error_rate",
                format!(
                    "{} is not accepted: a probability in [0, 1]",
                    self.frame_error_rate
                ),
            ));
        }
        for (k, &e) in self.frame_error_rates.iter().enumerate() {
            if !(0.0..=1.0).contains(&e) {
                return Err(field(
                    path,
                    &format!("frame_error_rates[{k}]"),
                    format!("{e} is not accepted: a probability in [0, 1]"),
                ));
            }
        }
        self.validate_rate_adaptation(path)
    }

    /// The ARF/AARF thresholds (checked whatever the mode, so a scenario can switch it on
    /// alone), and with rate adaptation on, a `data_rate_bps` of the standard's rate set.
    fn validate_rate_adaptation(&self, path: &str) -> Result<(), NetError> {
        for (name, v) in [
            ("arf_failure_threshold", self.arf_failure_threshold),
            ("arf_success_threshold", self.arf_success_threshold),
            ("arf_timer_threshold", self.arf_timer_threshold),
        ] {
            if v == 0 {
                return Err(field(path, name, "0 is not accepted: at least 1"));
            }
        }
        if self.aarf_max_success_threshold < self.arf_success_threshold {
            return Err(field(
                path,
                "aarf_max_success_threshold",
                format!(
                    "{} below arf_success_threshold ({}) is not accepted: at least \
                     arf_success_threshold",
                    self.aarf_max_success_threshold, self.arf_success_threshold
                ),
            ));
        }
        if let Some(r) = self
            .data_rate_bps
            .filter(|_| !self.rate_adaptation.is_none())
        {
            let rates = self.standard.rates_bps();
            if !rates.contains(&r) {
                let list: Vec<String> = rates.iter().map(|&x| phy::mbps(x)).collect();
                return Err(field(
                    path,
                    "data_rate_bps",
                    format!(
                        "{r} is not accepted with rate_adaptation = {:?}: a rate of {} ({} \
                         Mbit/s), the top of the stations' ladder",
                        self.rate_adaptation.name(),
                        self.standard.name(),
                        list.join(", ")
                    ),
                ));
            }
        }
        Ok(())
    }

    /// [`DcfSpec::validate`], and what needs the number of ports: at least 2,
    /// `frame_error_rates` empty or one per port, `queue_pkts_by_port` at most one per port.
    pub fn validate_ports(&self, path: &str, ports: usize) -> Result<(), NetError> {
        self.validate(path)?;
        if ports < 2 {
            return Err(NetError::field(
                path,
                format!("a cell of {ports} port(s) is not accepted: at least 2"),
            ));
        }
        let n = self.frame_error_rates.len();
        if n != 0 && n != ports {
            return Err(field(
                path,
                "frame_error_rates",
                format!("{n} values are not accepted: none, or one per port ({ports})"),
            ));
        }
        let n = self.queue_pkts_by_port.len();
        if n > ports {
            return Err(field(
                path,
                "queue_pkts_by_port",
                format!("{n} values are not accepted: at most one per port ({ports})"),
            ));
        }
        Ok(())
    }

    /// Port `k`'s queue limit, packets (None: no limit).
    pub fn port_queue_pkts(&self, k: usize) -> Option<u32> {
        self.queue_pkts_by_port
            .get(k)
            .copied()
            .flatten()
            .or(self.queue_pkts)
    }

    /// The standard's values this spec starts from.
    pub fn preset(&self) -> Preset {
        self.standard.preset(self.ht_mcs.unwrap_or(7))
    }

    /// The values the cell runs with: every `None` replaced by the preset, times in ns.
    pub fn params(&self) -> DcfParams {
        let p = self.preset();
        let slot_us = self.slot_us.unwrap_or(p.slot_us);
        let sifs_us = self.sifs_us.unwrap_or(p.sifs_us);
        let data_rate_bps = self.data_rate_bps.unwrap_or(p.data_rate_bps);
        let signal_extension_ns =
            phy::us_to_ns(self.signal_extension_us.unwrap_or(p.signal_extension_us));
        let cw_min = self.cw_min.unwrap_or(p.cw_min).min(MAX_CW);
        DcfParams {
            slot_ns: phy::us_to_ns(slot_us).max(1),
            sifs_ns: phy::us_to_ns(sifs_us),
            difs_ns: phy::us_to_ns(self.difs_us.unwrap_or(sifs_us + 2.0 * slot_us)),
            data: Mode {
                format: p.format,
                preamble_ns: phy::us_to_ns(self.preamble_us.unwrap_or(p.preamble_us)),
                rate_bps: data_rate_bps.max(1),
                signal_extension_ns,
            },
            control: Mode {
                format: p.format,
                preamble_ns: phy::us_to_ns(
                    self.control_preamble_us.unwrap_or(p.control_preamble_us),
                ),
                rate_bps: self
                    .control_rate_bps
                    .unwrap_or_else(|| p.control_rate_bps(data_rate_bps))
                    .max(1),
                signal_extension_ns,
            },
            cw_min,
            cw_max: self.cw_max.unwrap_or(p.cw_max).clamp(cw_min, MAX_CW),
            retry_limit: self.retry_limit.max(1),
            mac_overhead_bytes: self.mac_overhead_bytes.unwrap_or(p.mac_overhead_bytes),
            rts_threshold_bytes: self.rts_threshold_bytes,
            queue_bytes: self.queue_bytes,
            delay_ns: ms_to_ns(self.delay_ms),
            rates_bps: ladder(
                self.standard.rates_bps(),
                data_rate_bps.max(1),
                self.rate_adaptation,
            ),
            basic_rates_bps: p.basic_rates_bps,
            control_rate_fixed: self.control_rate_bps.is_some(),
            rate_adaptation: self.rate_adaptation,
            arf: ArfParams {
                adaptive: self.rate_adaptation == RateAdaptation::Aarf,
                failure_threshold: self.arf_failure_threshold.max(1),
                success_threshold: self.arf_success_threshold.max(1),
                timer_threshold: self.arf_timer_threshold.max(1),
                max_success_threshold: self
                    .aarf_max_success_threshold
                    .max(self.arf_success_threshold.max(1)),
            },
            backoff_rule: self.backoff_rule,
        }
    }
}

/// The rates a station steps through, slowest first, ending at `top_bps`: with rate adaptation
/// the standard's rates below it, then it; without, `top_bps` alone.
fn ladder(standard_bps: &[u64], top_bps: u64, mode: RateAdaptation) -> Vec<u64> {
    let mut v: Vec<u64> = if mode.is_none() {
        Vec::new()
    } else {
        standard_bps
            .iter()
            .copied()
            .filter(|&r| r < top_bps)
            .collect()
    };
    v.push(top_bps);
    v
}

/// The values a cell runs with (from [`DcfSpec::params`]); times in ns.
#[derive(Debug, Clone, PartialEq)]
pub struct DcfParams {
    /// aSlotTime, ns (> 0).
    pub slot_ns: u64,
    /// aSIFSTime, ns.
    pub sifs_ns: u64,
    /// DIFS, ns.
    pub difs_ns: u64,
    /// Mode of data frames.
    pub data: Mode,
    /// Mode of Ack, RTS and CTS frames.
    pub control: Mode,
    /// CWmin, slots (<= `cw_max`).
    pub cw_min: u32,
    /// CWmax, slots (<= [`MAX_CW`]).
    pub cw_max: u32,
    /// Transmission attempts of a frame before it is dropped (>= 1).
    pub retry_limit: u32,
    /// MAC header, FCS and LLC/SNAP around each packet, bytes.
    pub mac_overhead_bytes: u32,
    /// PSDUs longer than this go after RTS/CTS; None: never.
    pub rts_threshold_bytes: Option<u32>,
    /// Each port's queue limit, bytes (the packet limits are per port:
    /// [`DcfSpec::port_queue_pkts`]).
    pub queue_bytes: Option<u64>,
    /// Propagation delay, ns.
    pub delay_ns: u64,
    /// The data rates a station can be at, slowest first; the last is `data.rate_bps`, where
    /// every station starts (one rate without rate adaptation; at most 8).
    pub rates_bps: Vec<u64>,
    /// The basic rate set: an Ack goes at the highest of them not above its data frame's rate.
    pub basic_rates_bps: &'static [u64],
    /// `control_rate_bps` was set: every Ack at `control.rate_bps`, whatever the data rate.
    pub control_rate_fixed: bool,
    /// Which rate adaptation the stations run.
    pub rate_adaptation: RateAdaptation,
    /// ARF's and AARF's thresholds.
    pub arf: ArfParams,
    /// How waiting stations count a busy medium.
    pub backoff_rule: BackoffRule,
}

impl DcfParams {
    /// PSDU of a packet of `wire_bytes`: the packet in an MPDU.
    pub fn psdu_bytes(&self, wire_bytes: u32) -> u32 {
        wire_bytes.saturating_add(self.mac_overhead_bytes)
    }

    /// Whether a packet of `wire_bytes` goes after RTS/CTS.
    pub fn uses_rts(&self, wire_bytes: u32) -> bool {
        self.rts_threshold_bytes
            .is_some_and(|t| self.psdu_bytes(wire_bytes) > t)
    }

    /// Airtime of the data frame carrying a packet of `wire_bytes`, ns.
    pub fn data_ns(&self, wire_bytes: u32) -> u64 {
        self.data.airtime_ns(self.psdu_bytes(wire_bytes))
    }

    /// Airtime of a broadcast data frame of a packet of `wire_bytes`, ns: sent at the control
    /// (basic) rate, as a group-addressed frame goes at a rate of the basic rate set.
    pub fn broadcast_ns(&self, wire_bytes: u32) -> u64 {
        self.control.airtime_ns(self.psdu_bytes(wire_bytes))
    }

    /// Airtime of an Ack, ns.
    pub fn ack_ns(&self) -> u64 {
        self.control.airtime_ns(ACK_BYTES)
    }

    /// Airtime of the data frame carrying a packet of `wire_bytes` at `rate_bps`, ns.
    pub fn data_ns_at(&self, wire_bytes: u32, rate_bps: u64) -> u64 {
        Mode {
            rate_bps: rate_bps.max(1),
            ..self.data
        }
        .airtime_ns(self.psdu_bytes(wire_bytes))
    }

    /// The rate of the Ack to a data frame sent at `rate_bps`: the highest basic rate not
    /// above it ([`phy::control_rate_bps`]), or `control.rate_bps` when it was set.
    pub fn ack_rate_bps(&self, rate_bps: u64) -> u64 {
        if self.control_rate_fixed {
            self.control.rate_bps
        } else {
            phy::control_rate_bps(self.basic_rates_bps, rate_bps).max(1)
        }
    }

    /// Airtime of the Ack to a data frame sent at `rate_bps`, ns.
    pub fn ack_ns_at(&self, rate_bps: u64) -> u64 {
        Mode {
            rate_bps: self.ack_rate_bps(rate_bps),
            ..self.control
        }
        .airtime_ns(ACK_BYTES)
    }

    /// Airtime of an RTS, ns.
    pub fn rts_ns(&self) -> u64 {
        self.control.airtime_ns(RTS_BYTES)
    }

    /// Airtime of a CTS, ns.
    pub fn cts_ns(&self) -> u64 {
        self.control.airtime_ns(CTS_BYTES)
    }

    /// AckTimeout and CTSTimeout after the end of the frame, ns: aSIFSTime + aSlotTime +
    /// aRxPHYStartDelay (802.11-2016 10.3.2.9 and 10.3.2.7), aRxPHYStartDelay taken as the
    /// response's PHY preamble and header, as ns-3's frame-exchange-manager.cc does.
    pub fn response_timeout_ns(&self) -> u64 {
        self.sifs_ns + self.slot_ns + self.control.preamble_ns
    }
}
