//! 802.11 PHY timing: how long a frame is on the air, and the presets of the three PHYs a
//! [`DcfCell`](super::DcfCell) offers.
//!
//! A frame's airtime is its PHY preamble and header, then its PSDU (the MAC frame: header, body,
//! FCS) at the mode's rate:
//! - DSSS / HR-DSSS (IEEE 802.11-2016 Clauses 15 and 16): the long PPDU (16.2.2.2) is a 144 µs
//!   preamble and a 48 µs header at 1 Mbit/s, then the PSDU, whose duration the LENGTH field
//!   gives in whole microseconds: `ceil(8 L / rate_Mbps)` µs.
//! - OFDM (Clause 17), ERP-OFDM (Clause 18) and HT (Clause 19): preamble and header, then
//!   `N_SYM = ceil((16 + 8 L + 6) / N_DBPS)` symbols (SERVICE field, PSDU, tail bits; 17.3.5 and
//!   Eq. 19-32, one BCC encoder), `N_DBPS = rate x symbol time`, then in the 2.4 GHz band a 6 µs
//!   signal extension (ERP-OFDM, Clause 18; HT on 2.4 GHz likewise).
//!
//! The values below were read in the standard's tables as ns-3 (nsnam/ns-3-dev-git @1406464)
//! quotes them: `wifi-phy.cc` (`Configure80211b/g/n`), `wifi-standard-constants.h`,
//! `non-ht/dsss-phy.cc`, `non-ht/ofdm-phy.cc` (`GetPayloadDuration`, `GetSignalExtension`),
//! `ht/ht-phy.cc` (HT-mixed preamble fields), `wifi-mac.cc` (`ConfigurePhyDependentParameters`:
//! CWmin 31 for 802.11b, 15 otherwise, CWmax 1023), `ap-wifi-mac.cc` (the basic rate set) and
//! `wifi-remote-station-manager.cc` (`GetControlAnswerMode`: a control response goes at the
//! highest basic rate not above the data rate). The airtimes are checked against ns-3's
//! `test/tx-duration-test.cc` figures in the tests.

use serde::{Deserialize, Serialize};

/// Bytes of an Ack frame (802.11-2016 9.3.1.4: Frame Control, Duration, RA, FCS).
pub const ACK_BYTES: u32 = 14;
/// Bytes of an RTS frame (9.3.1.2: Frame Control, Duration, RA, TA, FCS).
pub const RTS_BYTES: u32 = 20;
/// Bytes of a CTS frame (9.3.1.3: Frame Control, Duration, RA, FCS).
pub const CTS_BYTES: u32 = 14;
/// Bits an OFDM PPDU adds to the PSDU in its DATA field: SERVICE (16) and tail (6).
const OFDM_SERVICE_TAIL_BITS: u64 = 16 + 6;

/// Rates of HT MCS 0..=7, 20 MHz, one spatial stream, 800 ns guard interval, bit/s (802.11-2016
/// 19.5, the MCS table for 20 MHz, NSS = 1: N_DBPS 26, 52, 78, 104, 156, 208, 234, 260 per 4 µs
/// symbol).
pub const HT_MCS_RATES_BPS: [u64; 8] = [
    6_500_000, 13_000_000, 19_500_000, 26_000_000, 39_000_000, 52_000_000, 58_500_000, 65_000_000,
];

/// The 802.11b rate set, bit/s: DSSS 1 and 2 Mbit/s (Clause 15), HR-DSSS 5.5 and 11 Mbit/s
/// (Clause 16).
pub const DSSS_RATES_BPS: [u64; 4] = [1_000_000, 2_000_000, 5_500_000, 11_000_000];

/// The ERP-OFDM rate set of 802.11g, bit/s (802.11-2016 Clause 18 with Table 17-4's OFDM rates
/// for 20 MHz: N_DBPS 24, 36, 48, 72, 96, 144, 192, 216 per 4 µs symbol).
pub const ERP_OFDM_RATES_BPS: [u64; 8] = [
    6_000_000, 9_000_000, 12_000_000, 18_000_000, 24_000_000, 36_000_000, 48_000_000, 54_000_000,
];

/// The PHY of a cell, which sets every default of a [`DcfSpec`](super::DcfSpec).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum Standard {
    /// HR-DSSS (802.11-2016 Clause 16), 11 Mbit/s, long preamble.
    #[serde(rename = "802.11b")]
    Dot11b,
    /// ERP-OFDM (Clause 18) in a BSS of ERP stations only (short slot), 54 Mbit/s.
    #[default]
    #[serde(rename = "802.11g")]
    Dot11g,
    /// HT (Clause 19) on 2.4 GHz, 20 MHz, one spatial stream, long guard interval, HT-mixed
    /// preamble, MCS `ht_mcs` (default 7: 65 Mbit/s). No aggregation (A-MPDU, A-MSDU).
    #[serde(rename = "802.11n")]
    Dot11n,
}

impl Standard {
    /// The name in scenario files.
    pub fn name(self) -> &'static str {
        match self {
            Standard::Dot11b => "802.11b",
            Standard::Dot11g => "802.11g",
            Standard::Dot11n => "802.11n",
        }
    }

    /// The rates a station of this PHY can send data frames at, slowest first (the ladder of
    /// rate adaptation): 802.11b DSSS and HR-DSSS, 802.11g ERP-OFDM, 802.11n HT MCS 0-7 (one
    /// stream, 20 MHz, long GI).
    pub fn rates_bps(self) -> &'static [u64] {
        match self {
            Standard::Dot11b => &DSSS_RATES_BPS,
            Standard::Dot11g => &ERP_OFDM_RATES_BPS,
            Standard::Dot11n => &HT_MCS_RATES_BPS,
        }
    }

    /// The standard's values (see the module doc for the sources); `ht_mcs` is read by 802.11n
    /// only (an out-of-range MCS takes 7).
    pub fn preset(self, ht_mcs: u8) -> Preset {
        match self {
            // Clause 16: slot 20 µs, SIFS 10 µs, long PPDU 192 µs; basic rates 1 and 2 Mbit/s
            // (ns-3 ap-wifi-mac.cc), so an Ack answers an 11 Mbit/s frame at 2 Mbit/s.
            Standard::Dot11b => Preset {
                slot_us: 20.0,
                sifs_us: 10.0,
                cw_min: 31,
                cw_max: 1023,
                data_rate_bps: 11_000_000,
                basic_rates_bps: &[1_000_000, 2_000_000],
                format: Format::Dsss,
                preamble_us: 192.0,
                control_preamble_us: 192.0,
                signal_extension_us: 0.0,
                mac_overhead_bytes: MAC_OVERHEAD_BYTES,
            },
            // Table 18-5 (ERP characteristics): short slot 9 µs, SIFS 10 µs, signal extension
            // 6 µs; 17.3.2: preamble 16 µs + SIGNAL 4 µs; basic rates 6, 12, 24 Mbit/s.
            Standard::Dot11g => Preset {
                slot_us: 9.0,
                sifs_us: 10.0,
                cw_min: 15,
                cw_max: 1023,
                data_rate_bps: 54_000_000,
                basic_rates_bps: OFDM_BASIC_RATES_BPS,
                format: Format::Ofdm,
                preamble_us: 20.0,
                control_preamble_us: 20.0,
                signal_extension_us: 6.0,
                mac_overhead_bytes: MAC_OVERHEAD_BYTES,
            },
            // Clause 19 on 2.4 GHz: ERP timing; HT-mixed preamble L-STF + L-LTF 16 µs, L-SIG
            // 4 µs, HT-SIG 8 µs, HT-STF 4 µs, one HT-LTF 4 µs = 36 µs; control responses are
            // non-HT (ERP-OFDM) frames; HT data frames are QoS Data (2 more header bytes).
            Standard::Dot11n => Preset {
                slot_us: 9.0,
                sifs_us: 10.0,
                cw_min: 15,
                cw_max: 1023,
                data_rate_bps: HT_MCS_RATES_BPS[usize::from(ht_mcs).min(7)],
                basic_rates_bps: OFDM_BASIC_RATES_BPS,
                format: Format::Ofdm,
                preamble_us: 36.0,
                control_preamble_us: 20.0,
                signal_extension_us: 6.0,
                mac_overhead_bytes: MAC_OVERHEAD_BYTES + 2,
            },
        }
    }
}

/// MAC overhead of a data frame around the packet, bytes: a three-address Data header (24,
/// 802.11-2016 9.3.2.1), FCS (4) and LLC/SNAP (8, IEEE 802.2 with the EtherType).
pub const MAC_OVERHEAD_BYTES: u32 = 24 + 4 + 8;

/// The mandatory OFDM rates that ns-3's access point puts in its basic rate set.
const OFDM_BASIC_RATES_BPS: &[u64] = &[6_000_000, 12_000_000, 24_000_000];

/// How a PHY lays a frame out in time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// DSSS / HR-DSSS: the PSDU's duration rounded up to whole microseconds.
    Dsss,
    /// OFDM, ERP-OFDM, HT: whole 4 µs symbols (800 ns guard interval).
    Ofdm,
}

/// One PHY's default values (every one can be overridden in a [`DcfSpec`](super::DcfSpec)).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Preset {
    /// aSlotTime, µs.
    pub slot_us: f64,
    /// aSIFSTime, µs.
    pub sifs_us: f64,
    /// aCWmin, slots.
    pub cw_min: u32,
    /// aCWmax, slots.
    pub cw_max: u32,
    /// Data frames' rate, bit/s.
    pub data_rate_bps: u64,
    /// The basic rate set; a control response goes at the highest not above the data rate.
    pub basic_rates_bps: &'static [u64],
    /// The frame layout.
    pub format: Format,
    /// PHY preamble and header of a data frame, µs.
    pub preamble_us: f64,
    /// PHY preamble and header of a control frame (Ack, RTS, CTS), µs.
    pub control_preamble_us: f64,
    /// Signal extension after every frame, µs.
    pub signal_extension_us: f64,
    /// MAC header, FCS and LLC/SNAP around the packet, bytes.
    pub mac_overhead_bytes: u32,
}

impl Preset {
    /// The rate of a control response to a frame sent at `data_rate_bps`: the highest basic
    /// rate not above it, else the lowest basic rate.
    pub fn control_rate_bps(&self, data_rate_bps: u64) -> u64 {
        control_rate_bps(self.basic_rates_bps, data_rate_bps)
    }
}

/// The rate of a control response to a frame sent at `data_rate_bps` in a BSS whose basic rate
/// set is `basic_rates_bps`: the highest basic rate not above it, else the lowest basic rate
/// (802.11-2012 9.7, as ns-3's `WifiRemoteStationManager::GetControlAnswerMode` quotes it).
pub fn control_rate_bps(basic_rates_bps: &[u64], data_rate_bps: u64) -> u64 {
    let lowest = basic_rates_bps.first().copied().unwrap_or(1_000_000);
    basic_rates_bps
        .iter()
        .copied()
        .filter(|&r| r <= data_rate_bps)
        .max()
        .unwrap_or(lowest)
}

/// One transmit mode: a layout, a preamble and header, a rate. All times in ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mode {
    /// The frame layout.
    pub format: Format,
    /// PHY preamble and header, ns.
    pub preamble_ns: u64,
    /// Rate of the PSDU, bit/s (> 0).
    pub rate_bps: u64,
    /// Signal extension after the frame, ns (OFDM only).
    pub signal_extension_ns: u64,
}

/// OFDM symbol with the 800 ns guard interval, ns.
pub const OFDM_SYMBOL_NS: u64 = 4_000;

impl Mode {
    /// Airtime of a PSDU of `psdu_bytes`, ns.
    pub fn airtime_ns(&self, psdu_bytes: u32) -> u64 {
        let bits = u128::from(psdu_bytes) * 8;
        let rate = u128::from(self.rate_bps.max(1));
        let body_ns = match self.format {
            // ceil(bits / rate) in whole µs.
            Format::Dsss => bits.saturating_mul(1_000_000).div_ceil(rate) * 1_000,
            Format::Ofdm => {
                let sym = u128::from(OFDM_SYMBOL_NS);
                // N_DBPS = rate x symbol; N_SYM = ceil(bits_total / N_DBPS), in integers.
                let n_sym = ((bits + u128::from(OFDM_SERVICE_TAIL_BITS)) * 1_000_000_000)
                    .div_ceil(rate * sym);
                n_sym * sym + u128::from(self.signal_extension_ns)
            }
        };
        u64::try_from(body_ns)
            .unwrap_or(u64::MAX)
            .saturating_add(self.preamble_ns)
    }
}

/// A rate in Mbit/s as people write it: `54`, `5.5`, `6.5`.
pub fn mbps(rate_bps: u64) -> String {
    let m = rate_bps as f64 / 1e6;
    format!("{m}")
}

/// Microseconds (finite, >= 0) to whole nanoseconds.
pub fn us_to_ns(us: f64) -> u64 {
    (us * 1_000.0).round() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(s: Standard, data: bool) -> Mode {
        let p = s.preset(7);
        let (preamble, rate) = if data {
            (p.preamble_us, p.data_rate_bps)
        } else {
            (p.control_preamble_us, p.control_rate_bps(p.data_rate_bps))
        };
        Mode {
            format: p.format,
            preamble_ns: us_to_ns(preamble),
            rate_bps: rate,
            signal_extension_ns: us_to_ns(p.signal_extension_us),
        }
    }

    #[test]
    fn airtimes_match_ns3_tx_duration_test() {
        // ns-3 src/wifi/test/tx-duration-test.cc: 802.11g 54 Mbit/s (ERP, 6 µs extension)
        // 1536 B 254 µs, 76 B 38 µs, 14 B 30 µs; HR-DSSS 11 Mbit/s long preamble 1023..1026 B
        // 744..747 µs + 192; HT MCS 7 20 MHz long GI (5 GHz, no extension) 1536 B 228 µs, 76 B
        // 48 µs, 14 B 40 µs.
        let g = mode(Standard::Dot11g, true);
        assert_eq!(
            [1536, 76, 14].map(|b| g.airtime_ns(b)),
            [254_000, 38_000, 30_000]
        );
        let b = mode(Standard::Dot11b, true);
        assert_eq!(
            [1023, 1024, 1025, 1026].map(|l| b.airtime_ns(l)),
            [936_000, 937_000, 938_000, 939_000]
        );
        let n5 = Mode {
            signal_extension_ns: 0,
            ..mode(Standard::Dot11n, true)
        };
        assert_eq!(
            [1536, 76, 14].map(|l| n5.airtime_ns(l)),
            [228_000, 48_000, 40_000]
        );
        // On 2.4 GHz the HT frame has the 6 µs extension.
        assert_eq!(mode(Standard::Dot11n, true).airtime_ns(1536), 234_000);
    }

    #[test]
    fn the_rate_sets_and_their_airtimes() {
        // ns-3 tx-duration-test.cc, DSSS long preamble: 1023..1026 B at 1 Mbit/s 8184..8208 µs
        // + 192, at 2 Mbit/s 4092..4104 µs + 192.
        let at = |s: Standard, rate: u64| Mode {
            rate_bps: rate,
            ..mode(s, true)
        };
        let b = Standard::Dot11b;
        assert_eq!(b.rates_bps(), [1_000_000, 2_000_000, 5_500_000, 11_000_000]);
        assert_eq!(
            [1023, 1026].map(|l| at(b, 1_000_000).airtime_ns(l)),
            [(8184 + 192) * 1000, (8208 + 192) * 1000]
        );
        assert_eq!(
            [1023, 1026].map(|l| at(b, 2_000_000).airtime_ns(l)),
            [(4092 + 192) * 1000, (4104 + 192) * 1000]
        );
        // 5.5 Mbit/s: 8 x 1023 / 5.5 = 1488 µs; 8 x 1024 / 5.5 = 1489.45, rounded up to 1490.
        assert_eq!(
            [1023, 1024].map(|l| at(b, 5_500_000).airtime_ns(l)),
            [(1488 + 192) * 1000, (1490 + 192) * 1000]
        );
        // ERP-OFDM 6 Mbit/s (N_DBPS 24), 1536 B: ceil(12310 / 24) = 513 symbols: 20 + 2052 + 6.
        let g = Standard::Dot11g;
        assert_eq!(g.rates_bps().len(), 8);
        assert_eq!(at(g, 6_000_000).airtime_ns(1536), 2_078_000);
        assert_eq!(at(g, 9_000_000).airtime_ns(1536), (20 + 342 * 4 + 6) * 1000);
        assert_eq!(Standard::Dot11n.rates_bps(), HT_MCS_RATES_BPS);
        assert_eq!(
            [5_500_000, 54_000_000, 6_500_000].map(mbps),
            ["5.5", "54", "6.5"]
        );
    }

    #[test]
    fn control_frames_go_at_the_highest_basic_rate_not_above_the_data_rate() {
        // 802.11g: Ack at 24 Mbit/s: 20 + 2 symbols (134 bits / 96) + 6 = 34 µs; RTS 182 bits,
        // also 2 symbols. 802.11b: Ack at 2 Mbit/s: 192 + 56 = 248 µs; RTS 192 + 80.
        let g = mode(Standard::Dot11g, false);
        assert_eq!(g.rate_bps, 24_000_000);
        assert_eq!(
            [ACK_BYTES, RTS_BYTES, CTS_BYTES].map(|l| g.airtime_ns(l)),
            [34_000, 34_000, 34_000]
        );
        let b = mode(Standard::Dot11b, false);
        assert_eq!(b.rate_bps, 2_000_000);
        assert_eq!(
            [ACK_BYTES, RTS_BYTES].map(|l| b.airtime_ns(l)),
            [248_000, 272_000]
        );
        let n = Standard::Dot11n;
        let rates: Vec<u64> = (0..8)
            .map(|m| n.preset(m).control_rate_bps(n.preset(m).data_rate_bps) / 1_000_000)
            .collect();
        assert_eq!(rates, [6, 12, 12, 24, 24, 24, 24, 24]);
        assert_eq!(Standard::Dot11g.preset(0).control_rate_bps(1), 6_000_000);
    }
}
