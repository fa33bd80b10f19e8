//! A mesh chain as a scenario gives it ([`MeshSpec`], scenario units, environment values
//! defaulting to the `environment`'s preset) and as the chain runs it ([`MeshParams`]: ns,
//! mW, the per-pair radio tables).

use super::ht::{self, HtMode, HT_MAX_AMPDU_BYTES, MAX_MCS, MESH_MAC_OVERHEAD_BYTES};
use super::radio::{self, Environment};
use crate::dcf::phy::ACK_BYTES;
use crate::dcf::spec::{DEFAULT_RETRY_LIMIT, MAX_CW};
use crate::error::NetError;
use crate::spec::ms_to_ns;
use serde::{Deserialize, Serialize};

/// aSlotTime, µs: 9 on both bands (5 GHz OFDM, Table 17-21; 2.4 GHz ERP short slot, Table
/// 18-5, which a BSS of HT stations uses, as ns-3 with `ShortSlotTimeSupported`).
pub const SLOT_US: u64 = 9;
/// aSIFSTime on 5 GHz, µs (Table 17-21).
pub const SIFS_5GHZ_US: u64 = 16;
/// aSIFSTime on 2.4 GHz, µs (Table 18-5).
pub const SIFS_2_4GHZ_US: u64 = 10;
/// The signal extension after every 2.4 GHz OFDM/HT PPDU, µs (Clause 18, 19.4.3).
pub const SIGNAL_EXTENSION_2_4GHZ_US: u64 = 6;
/// Free-space loss at 1 m on channel 6 (2437 MHz), dB: `20 log10(4 pi / lambda)`.
pub const REFERENCE_LOSS_2_4GHZ_DB: f64 = 40.18;
/// aCWmin, aCWmax of the OFDM PHY (ns-3 `WifiMac::ConfigurePhyDependentParameters`).
pub const CW_MIN: u32 = 15;
/// aCWmax.
pub const CW_MAX: u32 = 1023;
/// aRxPHYStartDelay of a non-HT response, µs (its preamble + SIGNAL, as ns-3 takes it).
pub const RX_PHY_START_DELAY_US: u64 = 20;
/// ns-3's default transmit power (`WifiPhy::TxPowerStart`), dBm.
pub const DEFAULT_TX_POWER_DBM: f64 = 16.0206;
/// ns-3's `LogDistancePropagationLossModel` reference loss at 1 m (5.15 GHz free space), dB:
/// the 5 GHz default.
pub const REFERENCE_LOSS_5GHZ_DB: f64 = 46.6777;
/// ns-3's `WifiPhy::RxNoiseFigure`, dB.
pub const DEFAULT_NOISE_FIGURE_DB: f64 = 7.0;
/// CCA sensitivity, dBm (802.11-2016 19.3.19.5; ns-3 `CcaSensitivity`).
pub const DEFAULT_CS_THRESHOLD_DBM: f64 = -82.0;
/// The BlockAck window: at most 64 MPDUs in flight (802.11-2016 10.24.7).
pub const BLOCK_ACK_WINDOW: u32 = 64;

/// A chain of mesh nodes on one channel, in the scenario's units. Every field has a default: a
/// bare spec is a 1 m-spaced chain in the anechoic room on 2.4 GHz (the S4 paper's channel 6)
/// at HT40 MCS 11 without aggregation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MeshSpec {
    /// HT MCS of every data frame, 0..=15 (8..=15: two streams); default 11.
    pub mcs: u8,
    /// 20 or 40 (default 40).
    pub channel_width_mhz: u32,
    /// 800 (long, default) or 400 (short).
    pub guard_interval_ns: u32,
    /// 2.4 (default: SIFS 10 µs, 6 µs signal extension) or 5 (SIFS 16 µs, none), GHz.
    pub band_ghz: f64,
    /// A-MPDU aggregation with BlockAck (default off, one MPDU and an Ack per access).
    pub ampdu: bool,
    /// At most this many MPDUs in one A-MPDU (1..=64, the BlockAck window).
    pub ampdu_max_frames: u32,
    /// At most this many bytes in one A-MPDU (up to 65535).
    pub ampdu_max_bytes: u32,
    /// Distance between neighbours, m (nodes at 0, s, 2 s, ...), unless `positions_m` is given.
    pub spacing_m: f64,
    /// Each node's position along the line, m (empty: from `spacing_m`; else one per node).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub positions_m: Vec<f64>,
    /// `"anechoic"` (default) or `"campus"`: the defaults of the fields below that are None.
    pub environment: Environment,
    /// Log-distance exponent n (anechoic 2, campus 3).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path_loss_exponent: Option<f64>,
    /// Path loss at 1 m, dB (default free space at 1 m: 40.18 on 2.4 GHz channel 6, ns-3's
    /// 46.6777 on 5 GHz).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reference_loss_db: Option<f64>,
    /// Transmit power of every node, dBm.
    pub tx_power_dbm: f64,
    /// Receiver noise figure, dB.
    pub noise_figure_db: f64,
    /// Noise on top of thermal + noise figure, dB (anechoic 0, campus 6).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extra_noise_db: Option<f64>,
    /// A node senses (defers to, and can decode) a transmission received at or above this, dBm.
    pub cs_threshold_dbm: f64,
    /// Per-attempt loss of a data MPDU besides the SINR's (anechoic 0, campus 0.05).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frame_error_rate: Option<f64>,
    /// Fraction of time other transmitters are on the channel (anechoic 0, campus 0.2).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub background_busy_fraction: Option<f64>,
    /// Length of one background transmission, µs (1000).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub background_burst_us: Option<f64>,
    /// Power of the background at every node, dBm (-75: sensed, and interfering).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub background_rx_dbm: Option<f64>,
    /// MAC header, Mesh Control, LLC/SNAP and FCS around the packet, bytes (50).
    pub mac_overhead_bytes: u32,
    /// Transmission attempts of a frame before it is dropped (7).
    pub retry_limit: u32,
    /// Each node's drop-tail limit, packets (frames in an exchange included).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_pkts: Option<u32>,
    /// Each node's limit, bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_bytes: Option<u32>,
    /// Propagation delay, ms.
    pub delay_ms: f64,
}

impl Default for MeshSpec {
    fn default() -> Self {
        MeshSpec {
            mcs: 11,
            channel_width_mhz: 40,
            guard_interval_ns: 800,
            band_ghz: 2.4,
            ampdu: false,
            ampdu_max_frames: BLOCK_ACK_WINDOW,
            ampdu_max_bytes: HT_MAX_AMPDU_BYTES,
            spacing_m: 1.0,
            positions_m: Vec::new(),
            environment: Environment::Anechoic,
            path_loss_exponent: None,
            reference_loss_db: None,
            tx_power_dbm: DEFAULT_TX_POWER_DBM,
            noise_figure_db: DEFAULT_NOISE_FIGURE_DB,
            extra_noise_db: None,
            cs_threshold_dbm: DEFAULT_CS_THRESHOLD_DBM,
            frame_error_rate: None,
            background_busy_fraction: None,
            background_burst_us: None,
            background_rx_dbm: None,
            mac_overhead_bytes: MESH_MAC_OVERHEAD_BYTES,
            retry_limit: DEFAULT_RETRY_LIMIT,
            queue_pkts: None,
            queue_bytes: None,
            delay_ms: 0.0,
        }
    }
}

/// The values a chain runs with.
#[derive(Debug, Clone, PartialEq)]
pub struct MeshParams {
    /// The data frames' mode.
    pub ht: HtMode,
    /// aSlotTime, ns.
    pub slot_ns: u64,
    /// aSIFSTime, ns.
    pub sifs_ns: u64,
    /// DIFS = SIFS + 2 slots, ns.
    pub difs_ns: u64,
    /// aCWmin, aCWmax.
    pub cw_min: u32,
    /// aCWmax.
    pub cw_max: u32,
    /// Signal extension after every PPDU, ns (2.4 GHz: 6 µs).
    pub signal_extension_ns: u64,
    /// Ack, ns (at the control response rate).
    pub ack_ns: u64,
    /// BlockAck, ns.
    pub block_ack_ns: u64,
    /// The control responses' modulation index (for their error rate).
    pub control_modulation: usize,
    /// AckTimeout = SIFS + slot + aRxPHYStartDelay, ns (10.3.2.9).
    pub ack_timeout_ns: u64,
    /// Aggregation: None off, else (max MPDUs, max bytes).
    pub ampdu: Option<(u32, u32)>,
    /// Bytes around each packet.
    pub mac_overhead_bytes: u32,
    /// Attempts before a drop.
    pub retry_limit: u32,
    /// Queue limits.
    pub queue_pkts: Option<u32>,
    /// Queue limit, bytes.
    pub queue_bytes: Option<u64>,
    /// Propagation delay, ns.
    pub delay_ns: u64,
    /// Noise, mW.
    pub noise_mw: f64,
    /// Sense threshold, mW.
    pub cs_mw: f64,
    /// Received power of node i's transmissions at node j, mW (`rx_mw[i][j]`).
    pub rx_mw: Vec<Vec<f64>>,
    /// Per-attempt extra loss of a data MPDU.
    pub frame_error_rate: f64,
    /// Background: (busy fraction, burst ns, power at every node mW); None: off.
    pub background: Option<(f64, u64, f64)>,
}

fn field(path: &str, name: &str, message: impl Into<String>) -> NetError {
    NetError::field(format!("{path}.{name}"), message)
}

fn finite(path: &str, name: &str, v: f64) -> Result<(), NetError> {
    if v.is_finite() {
        Ok(())
    } else {
        Err(field(
            path,
            name,
            format!("{v} is not accepted: a finite number"),
        ))
    }
}

impl MeshSpec {
    /// Its path loss at 1 m, dB.
    pub fn reference_loss(&self) -> f64 {
        self.reference_loss_db.unwrap_or(if self.band_ghz == 5.0 {
            REFERENCE_LOSS_5GHZ_DB
        } else {
            REFERENCE_LOSS_2_4GHZ_DB
        })
    }

    /// The HT mode of its data frames.
    pub fn ht(&self) -> HtMode {
        HtMode {
            mcs: self.mcs.min(MAX_MCS),
            channel_width_mhz: self.channel_width_mhz,
            guard_interval_ns: self.guard_interval_ns,
        }
    }

    /// Node `k`'s position along the line, m.
    pub fn position_m(&self, k: usize) -> f64 {
        self.positions_m
            .get(k)
            .copied()
            .unwrap_or(k as f64 * self.spacing_m)
    }

    /// Check every value for a chain of `ports` nodes; errors name the field under `path`.
    pub fn validate(&self, path: &str, ports: usize) -> Result<(), NetError> {
        if ports < 2 {
            return Err(NetError::field(
                path,
                format!("a mesh chain of {ports} node(s) is not accepted: at least 2"),
            ));
        }
        if self.mcs > MAX_MCS {
            return Err(field(
                path,
                "mcs",
                format!(
                    "{} is not accepted: 0 to 15 (8-15: two spatial streams)",
                    self.mcs
                ),
            ));
        }
        if !matches!(self.channel_width_mhz, 20 | 40) {
            return Err(field(
                path,
                "channel_width_mhz",
                format!("{} is not accepted: 20 or 40", self.channel_width_mhz),
            ));
        }
        if self.band_ghz != 2.4 && self.band_ghz != 5.0 {
            return Err(field(
                path,
                "band_ghz",
                format!("{} is not accepted: 2.4 or 5", self.band_ghz),
            ));
        }
        if !matches!(self.guard_interval_ns, 400 | 800) {
            return Err(field(
                path,
                "guard_interval_ns",
                format!(
                    "{} is not accepted: 800 (long) or 400 (short)",
                    self.guard_interval_ns
                ),
            ));
        }
        if !(1..=BLOCK_ACK_WINDOW).contains(&self.ampdu_max_frames) {
            return Err(field(
                path,
                "ampdu_max_frames",
                format!(
                    "{} is not accepted: 1 to {BLOCK_ACK_WINDOW} (the BlockAck window)",
                    self.ampdu_max_frames
                ),
            ));
        }
        if !(1..=HT_MAX_AMPDU_BYTES).contains(&self.ampdu_max_bytes) {
            return Err(field(
                path,
                "ampdu_max_bytes",
                format!(
                    "{} is not accepted: 1 to {HT_MAX_AMPDU_BYTES}",
                    self.ampdu_max_bytes
                ),
            ));
        }
        if !(self.spacing_m.is_finite() && self.spacing_m > 0.0) {
            return Err(field(
                path,
                "spacing_m",
                format!("{} is not accepted: a distance > 0 m", self.spacing_m),
            ));
        }
        if !self.positions_m.is_empty() {
            if self.positions_m.len() != ports {
                return Err(field(
                    path,
                    "positions_m",
                    format!(
                        "{} positions for {ports} nodes are not accepted: none, or one per node",
                        self.positions_m.len()
                    ),
                ));
            }
            if let Some(x) = self.positions_m.iter().find(|x| !x.is_finite()) {
                return Err(field(
                    path,
                    "positions_m",
                    format!("{x} is not accepted: finite positions, m"),
                ));
            }
            for i in 0..ports {
                for j in i + 1..ports {
                    if self.positions_m[i] == self.positions_m[j] {
                        return Err(field(path, "positions_m", format!("nodes {i} and {j} both at {} m are not accepted: distinct positions", self.positions_m[i])));
                    }
                }
            }
        }
        if let Some(n) = self.path_loss_exponent {
            if !(n.is_finite() && n > 0.0) {
                return Err(field(
                    path,
                    "path_loss_exponent",
                    format!("{n} is not accepted: a number > 0 (2 free space, 2.7-5 built-up)"),
                ));
            }
        }
        if let Some(x) = self.reference_loss_db {
            finite(path, "reference_loss_db", x)?;
        }
        finite(path, "tx_power_dbm", self.tx_power_dbm)?;
        finite(path, "noise_figure_db", self.noise_figure_db)?;
        finite(path, "cs_threshold_dbm", self.cs_threshold_dbm)?;
        if let Some(x) = self.extra_noise_db {
            finite(path, "extra_noise_db", x)?;
        }
        if let Some(x) = self.background_rx_dbm {
            finite(path, "background_rx_dbm", x)?;
        }
        for (name, v) in [
            ("frame_error_rate", self.frame_error_rate),
            ("background_busy_fraction", self.background_busy_fraction),
        ] {
            if let Some(v) = v.filter(|v| !(0.0..1.0).contains(v)) {
                return Err(field(
                    path,
                    name,
                    format!("{v} is not accepted: a probability in [0, 1)"),
                ));
            }
        }
        if let Some(b) = self
            .background_burst_us
            .filter(|b| !(b.is_finite() && *b > 0.0))
        {
            return Err(field(
                path,
                "background_burst_us",
                format!("{b} is not accepted: a duration > 0 µs"),
            ));
        }
        if self.retry_limit == 0 {
            return Err(field(
                path,
                "retry_limit",
                "0 is not accepted: at least 1 attempt",
            ));
        }
        if self.queue_pkts == Some(0) {
            return Err(field(
                path,
                "queue_pkts",
                "0 is not accepted: at least 1 packet (or no limit)",
            ));
        }
        if self.queue_bytes == Some(0) {
            return Err(field(
                path,
                "queue_bytes",
                "0 is not accepted: at least 1 byte (or no limit)",
            ));
        }
        if !(self.delay_ms.is_finite() && self.delay_ms >= 0.0) {
            return Err(field(
                path,
                "delay_ms",
                format!("{} is not accepted: a delay >= 0 ms", self.delay_ms),
            ));
        }
        Ok(())
    }

    /// The resolved values for `ports` nodes (an unvalidated spec does not panic).
    pub fn params(&self, ports: usize) -> MeshParams {
        let env = self.environment.preset();
        let exponent = self.path_loss_exponent.unwrap_or(env.path_loss_exponent);
        let extra = self.extra_noise_db.unwrap_or(env.extra_noise_db);
        let noise_dbm = radio::noise_dbm(self.channel_width_mhz, self.noise_figure_db, extra);
        let rx_mw = (0..ports)
            .map(|i| {
                (0..ports)
                    .map(|j| {
                        let d = (self.position_m(i) - self.position_m(j)).abs();
                        let loss = radio::path_loss_db(d, self.reference_loss(), exponent);
                        radio::dbm_to_mw(self.tx_power_dbm - loss)
                    })
                    .collect()
            })
            .collect();
        let busy = self
            .background_busy_fraction
            .unwrap_or(env.background_busy_fraction)
            .clamp(0.0, 0.99);
        let burst_us = self
            .background_burst_us
            .unwrap_or(env.background_burst_us)
            .max(1.0);
        let bg_dbm = self.background_rx_dbm.unwrap_or(env.background_rx_dbm);
        let slot_ns = SLOT_US * 1000;
        let five = self.band_ghz == 5.0;
        let sifs_ns = if five { SIFS_5GHZ_US } else { SIFS_2_4GHZ_US } * 1000;
        let ext_ns = if five {
            0
        } else {
            SIGNAL_EXTENSION_2_4GHZ_US * 1000
        };
        let (control, control_modulation) = ht::control_mode(self.ht().rate_bps(), ext_ns);
        MeshParams {
            ht: self.ht(),
            slot_ns,
            sifs_ns,
            difs_ns: sifs_ns + 2 * slot_ns,
            cw_min: CW_MIN.min(MAX_CW),
            cw_max: CW_MAX,
            signal_extension_ns: ext_ns,
            ack_ns: control.airtime_ns(ACK_BYTES),
            block_ack_ns: control.airtime_ns(ht::BLOCK_ACK_BYTES),
            control_modulation,
            ack_timeout_ns: sifs_ns + slot_ns + RX_PHY_START_DELAY_US * 1000,
            ampdu: self.ampdu.then_some((
                self.ampdu_max_frames.clamp(1, BLOCK_ACK_WINDOW),
                self.ampdu_max_bytes.clamp(1, HT_MAX_AMPDU_BYTES),
            )),
            mac_overhead_bytes: self.mac_overhead_bytes,
            retry_limit: self.retry_limit.max(1),
            queue_pkts: self.queue_pkts,
            queue_bytes: self.queue_bytes.map(u64::from),
            delay_ns: ms_to_ns(self.delay_ms.max(0.0)),
            noise_mw: radio::dbm_to_mw(noise_dbm),
            cs_mw: radio::dbm_to_mw(self.cs_threshold_dbm),
            rx_mw,
            frame_error_rate: self
                .frame_error_rate
                .unwrap_or(env.frame_error_rate)
                .clamp(0.0, 1.0),
            background: (busy > 0.0).then(|| {
                (
                    busy,
                    (burst_us * 1000.0).round() as u64,
                    radio::dbm_to_mw(bg_dbm),
                )
            }),
        }
    }
}

impl MeshParams {
    /// The MPDU of a packet of `wire_bytes`.
    pub fn mpdu_bytes(&self, wire_bytes: u32) -> u32 {
        wire_bytes.saturating_add(self.mac_overhead_bytes)
    }

    /// Airtime of an HT PPDU carrying a PSDU of `psdu_bytes`, signal extension included, ns.
    pub fn ppdu_ns(&self, psdu_bytes: u32) -> u64 {
        self.ht
            .airtime_ns(psdu_bytes)
            .saturating_add(self.signal_extension_ns)
    }

    /// Airtime of one data frame (no aggregation) carrying `wire_bytes`, ns.
    pub fn data_ns(&self, wire_bytes: u32) -> u64 {
        self.ppdu_ns(self.mpdu_bytes(wire_bytes))
    }

    /// SNR of node `from`'s frames at node `to`, dB.
    pub fn snr_db(&self, from: usize, to: usize) -> f64 {
        radio::mw_to_dbm(self.rx_mw[from][to] / self.noise_mw)
    }

    /// Whether node `at` senses node `from`'s transmissions.
    pub fn senses(&self, at: usize, from: usize) -> bool {
        self.rx_mw[from][at] >= self.cs_mw
    }
}
