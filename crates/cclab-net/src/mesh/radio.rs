//! The mesh's radio: where nodes are, how much of a transmission each node receives, and what
//! that does to a frame.
//!
//! - **Path loss**: log-distance (Rappaport, *Wireless Communications*, 2nd ed., Eq. 4.69;
//!   ns-3's `LogDistancePropagationLossModel`): `L(d) = L0 + 10 n log10(d / 1 m)` dB for
//!   `d >= 1 m`, and `L0` below 1 m (as ns-3 returns the reference loss inside the reference
//!   distance). `L0` defaults to free space at 1 m, `20 log10(4 pi / lambda)`: 40.18 dB on
//!   2.4 GHz channel 6 (2437 MHz), and on 5 GHz ns-3's default 46.6777 dB (5.15 GHz).
//! - **Received power** `P_rx = P_tx - L(d)` dBm; **noise** `N = -174 dBm/Hz + 10 log10(B) +
//!   NF + extra` (thermal noise over the channel width, receiver noise figure, an environment's
//!   extra noise).
//! - **Carrier sense**: a node senses a transmission received at or above
//!   `cs_threshold_dbm` (default -82 dBm, the CCA sensitivity of 802.11-2016 19.3.19.5 and
//!   ns-3's `CcaSensitivity`), and only decodes what it senses.
//! - **Frame errors** from SINR: `S / (N + sum of the interference overlapping the frame)`,
//!   through a waterfall curve per modulation, below.
//!
//! # Frame error rate (a documented approximation, not a PHY abstraction)
//! The anchor of each modulation is 802.11-2016 Table 19-23 (receiver minimum input
//! sensitivity: the input level at which a 4096-octet PSDU has a PER of 10 %): at 20 MHz -82,
//! -79, -77, -74, -70, -66, -65, -64 dBm for MCS 0..7 (40 MHz: 3 dB higher, over twice the
//! noise), with the noise figure of 10 dB the table assumes (19.3.19.2) that is an SNR of
//! `SNR10 = 9, 12, 14, 17, 21, 25, 26, 27 dB` at either width. Two streams (MCS 8-15) take
//! the anchor of their per-stream modulation. The non-HT control rates (Table 17-18: 6, 12,
//! 24 Mbit/s at -82, -79, -74 dBm) take MCS 0's, 1's and 3's 9, 12 and 17 dB. Around the
//! anchor the mean number of errored blocks in 4096 octets falls exponentially with the SNR,
//! `lambda(s) = -ln(0.9) exp(-k (s - SNR10))` with `k` = 1.5 /dB (a 4096-octet PER from 90 %
//! to 10 % in 2.1 dB, the width of a coded OFDM waterfall), and a frame of `L` bytes is lost
//! with `PER(L) = 1 - exp(-lambda(s) L / 4096)` (errors independent along the frame). So a short
//! control frame survives a little below the anchor (14 B: 3 % lost at 3 dB below) and not
//! far below it (95 % at 6 dB below). We use this rather
//! than ns-3's NIST or YANS error models (bit error rates per modulation with convolutional
//! code bounds) because its parameters are the standard's own numbers and it is a few lines;
//! the table's 5 dB implementation margin makes it about that much more pessimistic than
//! ns-3's models at the same SNR.

use serde::{Deserialize, Serialize};

/// Thermal noise density at 290 K, dBm/Hz.
pub const THERMAL_NOISE_DBM_PER_HZ: f64 = -174.0;
/// SNR at which a 4096-octet PSDU has a PER of 10 %, per modulation (MCS mod 8), dB (above).
pub const SNR10_DB: [f64; 8] = [9.0, 12.0, 14.0, 17.0, 21.0, 25.0, 26.0, 27.0];
/// Slope of the waterfall (of ln lambda), 1/dB.
pub const PER_SLOPE_PER_DB: f64 = 1.5;
/// The PSDU length the anchors are measured at, bytes.
pub const PER_REFERENCE_BYTES: f64 = 4096.0;

/// dBm to mW.
pub fn dbm_to_mw(dbm: f64) -> f64 {
    10f64.powf(dbm / 10.0)
}

/// mW to dBm.
pub fn mw_to_dbm(mw: f64) -> f64 {
    10.0 * mw.log10()
}

/// Log-distance path loss at `distance_m`, dB (the reference loss inside 1 m).
pub fn path_loss_db(distance_m: f64, reference_loss_db: f64, exponent: f64) -> f64 {
    reference_loss_db + 10.0 * exponent * distance_m.max(1.0).log10()
}

/// Noise power over `channel_width_mhz`, dBm: thermal, the noise figure, extra noise.
pub fn noise_dbm(channel_width_mhz: u32, noise_figure_db: f64, extra_noise_db: f64) -> f64 {
    THERMAL_NOISE_DBM_PER_HZ
        + 10.0 * (f64::from(channel_width_mhz) * 1e6).log10()
        + noise_figure_db
        + extra_noise_db
}

/// Probability that a frame of `bytes` at SINR `sinr_db` is lost, for modulation `modulation`
/// (HT MCS mod 8; a control response's rate takes the MCS of its modulation): the waterfall
/// of the module doc.
pub fn frame_error_rate(sinr_db: f64, modulation: usize, bytes: u32) -> f64 {
    let snr10 = SNR10_DB[modulation.min(7)];
    // Errored blocks per 4096 octets; -ln(0.9) at the anchor (PER 10 %).
    let lambda = -(0.9f64.ln()) * (-PER_SLOPE_PER_DB * (sinr_db - snr10)).exp();
    let per = -(-lambda * f64::from(bytes) / PER_REFERENCE_BYTES).exp_m1();
    // Below 2^-53, the resolution of a uniform draw, a loss cannot be drawn: call it 0 (and the
    // chain then takes no draw, so a clean channel uses the stream as the DCF cell does).
    if per < f64::EPSILON / 2.0 {
        0.0
    } else {
        per
    }
}

/// Where the mesh is: the values an environment preset fills in (each overridable in the
/// spec).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Environment {
    /// A shielded room: free-space loss (exponent 2), thermal noise only, no one else on the
    /// channel, no frame errors beyond the SNR's.
    #[default]
    Anechoic,
    /// Outdoors among buildings with other networks on the channel: exponent 3 (ns-3's
    /// log-distance default), 6 dB more noise, other transmitters busy 20 % of the time in
    /// 1 ms bursts heard at -75 dBm everywhere, and a 5 % per-attempt frame error floor
    /// (fading and non-Wi-Fi interference the geometry does not model).
    Campus,
}

/// An environment's values.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EnvironmentPreset {
    /// Path loss exponent n.
    pub path_loss_exponent: f64,
    /// Noise on top of thermal + noise figure, dB.
    pub extra_noise_db: f64,
    /// Fraction of time other transmitters are on the air.
    pub background_busy_fraction: f64,
    /// Length of one background transmission, µs.
    pub background_burst_us: f64,
    /// Its power at every node, dBm.
    pub background_rx_dbm: f64,
    /// Per-attempt loss of a data frame besides the SINR's (independent of it).
    pub frame_error_rate: f64,
}

impl Environment {
    /// The name in scenario files.
    pub fn name(self) -> &'static str {
        match self {
            Environment::Anechoic => "anechoic",
            Environment::Campus => "campus",
        }
    }

    /// Its values. Campus's are chosen to match the seed paper's description (busy airtime
    /// and a higher frame error rate than the anechoic room), not measured.
    pub fn preset(self) -> EnvironmentPreset {
        match self {
            Environment::Anechoic => EnvironmentPreset {
                path_loss_exponent: 2.0,
                extra_noise_db: 0.0,
                background_busy_fraction: 0.0,
                background_burst_us: 1000.0,
                background_rx_dbm: -75.0,
                frame_error_rate: 0.0,
            },
            Environment::Campus => EnvironmentPreset {
                path_loss_exponent: 3.0,
                extra_noise_db: 6.0,
                background_busy_fraction: 0.2,
                background_burst_us: 1000.0,
                background_rx_dbm: -75.0,
                frame_error_rate: 0.05,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_loss_is_log_distance_with_the_reference_inside_one_metre() {
        assert_eq!(path_loss_db(0.2, 46.6777, 3.0), 46.6777);
        assert_eq!(path_loss_db(1.0, 46.6777, 3.0), 46.6777);
        assert!((path_loss_db(10.0, 46.6777, 3.0) - 76.6777).abs() < 1e-9);
        assert!((path_loss_db(100.0, 40.0, 2.0) - 80.0).abs() < 1e-9);
    }

    #[test]
    fn noise_over_40_mhz() {
        // -174 + 76.02 + 7 = -90.98 dBm.
        assert!((noise_dbm(40, 7.0, 0.0) + 90.979).abs() < 1e-3);
        assert!((noise_dbm(20, 7.0, 6.0) + 87.99).abs() < 1e-2);
        assert!((mw_to_dbm(dbm_to_mw(-82.0)) + 82.0).abs() < 1e-12);
    }

    #[test]
    fn the_per_curve_meets_its_anchors() {
        // 10 % at the anchor for 4096 B, less for shorter frames, falling with SNR.
        for (m, &snr10) in SNR10_DB.iter().enumerate() {
            let at = frame_error_rate(snr10, m, 4096);
            assert!((at - 0.1).abs() < 1e-12, "mcs {m}: {at}");
            assert!(frame_error_rate(snr10, m, 1550) < 0.05);
            assert!(frame_error_rate(snr10 - 6.0, m, 1550) > 0.9);
            assert!(frame_error_rate(snr10 + 10.0, m, 1550) < 1e-5);
        }
        // A 14-byte Ack 3 dB and 6 dB below its anchor.
        let ack = |d: f64| frame_error_rate(SNR10_DB[1] - d, 1, 14);
        assert!((0.02..0.05).contains(&ack(3.0)) && ack(6.0) > 0.9);
        // MCS 11 (16-QAM 1/2, two streams): 17 dB.
        assert!(frame_error_rate(30.0, 3, 1550) < 1e-8);
        assert!(frame_error_rate(8.0, 3, 1550) > 0.98);
        assert_eq!(frame_error_rate(1e6, 3, 1550), 0.0);
        assert_eq!(frame_error_rate(-1e6, 3, 1550), 1.0);
    }
}
