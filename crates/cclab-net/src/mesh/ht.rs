//! 802.11n HT PHY timing for the mesh: HT MCS 0-15 (one or two spatial streams), 20 or 40 MHz,
//! 800 or 400 ns guard interval, HT-mixed format; A-MPDU framing and the non-HT control
//! responses (Ack, BlockAck) at the highest mandatory OFDM rate (6, 12, 24 Mbit/s) not above
//! the data rate. On 2.4 GHz every PPDU is followed by the 6 µs signal
//! extension (19.4.3, `SignalExtension`; ns-3 `HtPhy` on 2.4 GHz), which the caller adds
//! ([`HtMode::airtime_ns`] is the PPDU without it).
//!
//! Airtime of an HT-mixed PPDU (IEEE 802.11-2016 19.4.3, Eq. 19-89, one BCC encoder, no STBC):
//!
//! `TXTIME = T_LEG_PREAMBLE + T_L_SIG + T_HT_SIG + T_HT_STF + N_LTF x T_HT_LTF
//!           + T_SYML x ceil(T_SYMS x N_SYM / T_SYML)`
//!
//! with `T_LEG_PREAMBLE = 16 µs` (L-STF + L-LTF), `T_L_SIG = 4`, `T_HT_SIG = 8`, `T_HT_STF = 4`,
//! `T_HT_LTF = 4` and `N_LTF` = 1 for one stream, 2 for two (Table 19-13), `T_SYML = 4 µs`,
//! `T_SYMS = 3.6 µs` (the short GI symbol; 4 µs with the long GI), and
//! `N_SYM = ceil((8 L + 16 + 6 N_ES) / N_DBPS)` (Eq. 19-32: SERVICE, PSDU, tail; `N_ES = 1` at
//! every rate here, all below 300 Mbit/s). `N_DBPS` from the MCS tables 19-27 .. 19-30:
//! `N_SD x N_BPSCS x R x N_SS` with `N_SD` = 52 (20 MHz) or 108 (40 MHz). The same layout is
//! ns-3's `HtPhy::GetPayloadDuration` and `HtPhy::GetTrainingDuration` (read in
//! nsnam/ns-3-dev-git, `src/wifi/model/ht/ht-phy.cc`; not copied); the tests check it against
//! figures worked by hand from the equation.
//!
//! Control responses go as non-HT (OFDM, Clause 17) PPDUs at the highest mandatory rate of
//! {6, 12, 24} Mbit/s not above the data rate (802.11-2016 10.7.6.5.2, as ns-3's
//! `GetControlAnswerMode` applies it; in a 40 MHz BSS as non-HT duplicates, same duration):
//! 20 µs preamble and SIGNAL, then 4 µs symbols of 24, 48 or 96 bits.

use super::super::dcf::phy::{control_rate_bps, Format, Mode};

/// A compressed BlockAck frame, bytes (802.11-2016 9.3.1.9: Frame Control 2, Duration 2, RA 6,
/// TA 6, BA Control 2, Starting Sequence Control 2, 64-bit bitmap 8, FCS 4).
pub const BLOCK_ACK_BYTES: u32 = 32;
/// An A-MPDU subframe's delimiter, bytes (802.11-2016 9.7.1).
pub const AMPDU_DELIMITER_BYTES: u32 = 4;
/// The largest A-MPDU an HT station accepts, bytes (maximum A-MPDU length exponent 3:
/// 2^(13+3) - 1, 802.11-2016 9.4.2.56.3).
pub const HT_MAX_AMPDU_BYTES: u32 = 65_535;
/// MAC overhead of an 802.11s mesh data frame around the packet, bytes: a four-address QoS Data
/// header (Frame Control 2, Duration 2, four addresses 24, Sequence Control 2, QoS Control 2:
/// 32; 802.11-2016 9.3.2.1), the Mesh Control field (Mesh Flags 1, Mesh TTL 1, Mesh Sequence
/// Number 4: 6; 9.2.4.7.3), LLC/SNAP 8 and FCS 4.
pub const MESH_MAC_OVERHEAD_BYTES: u32 = 32 + 6 + 8 + 4;
/// Highest HT MCS with one or two equal-modulation streams.
pub const MAX_MCS: u8 = 15;

/// `N_BPSCS x R` per subcarrier of HT MCS 0..=7 as (numerator, denominator): BPSK 1/2, QPSK
/// 1/2, QPSK 3/4, 16-QAM 1/2, 16-QAM 3/4, 64-QAM 2/3, 64-QAM 3/4, 64-QAM 5/6.
const BITS_PER_SUBCARRIER: [(u64, u64); 8] = [
    (1, 2),
    (2, 2),
    (6, 4),
    (4, 2),
    (12, 4),
    (12, 3),
    (18, 4),
    (30, 6),
];

/// An HT transmit mode (the settings a mesh fixes for every data frame).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HtMode {
    /// HT MCS 0..=15 (8..=15: two spatial streams).
    pub mcs: u8,
    /// 20 or 40.
    pub channel_width_mhz: u32,
    /// 800 (long) or 400 (short).
    pub guard_interval_ns: u32,
}

impl HtMode {
    /// Spatial streams (1 for MCS 0-7, 2 for 8-15).
    pub fn streams(&self) -> u64 {
        u64::from(self.mcs.min(MAX_MCS) / 8) + 1
    }

    /// The modulation and coding index 0..=7 (the MCS within its stream count).
    pub fn modulation(&self) -> usize {
        usize::from(self.mcs.min(MAX_MCS) % 8)
    }

    /// Data subcarriers N_SD (52 at 20 MHz, 108 at 40 MHz).
    fn data_subcarriers(&self) -> u64 {
        if self.channel_width_mhz >= 40 {
            108
        } else {
            52
        }
    }

    /// Data bits per OFDM symbol, N_DBPS.
    pub fn n_dbps(&self) -> u64 {
        let (num, den) = BITS_PER_SUBCARRIER[self.modulation()];
        self.data_subcarriers() * num / den * self.streams()
    }

    /// The symbol, ns (4000 with the long GI, 3600 with the short).
    fn symbol_ns(&self) -> u64 {
        if self.guard_interval_ns == 400 {
            3_600
        } else {
            4_000
        }
    }

    /// The PHY rate, bit/s (MCS 11 HT40 long GI: 108 Mbit/s).
    pub fn rate_bps(&self) -> u64 {
        self.n_dbps() * 1_000_000_000 / self.symbol_ns()
    }

    /// HT-mixed preamble and headers, ns: 16 + 4 + 8 + 4 + 4 N_LTF µs.
    pub fn preamble_ns(&self) -> u64 {
        (16 + 4 + 8 + 4 + 4 * self.streams()) * 1_000
    }

    /// Airtime of a PSDU of `psdu_bytes` (Eq. 19-89), ns.
    pub fn airtime_ns(&self, psdu_bytes: u32) -> u64 {
        let bits = 8 * u64::from(psdu_bytes) + 16 + 6;
        let n_sym = bits.div_ceil(self.n_dbps());
        // T_SYML x ceil(T_SYMS x N_SYM / T_SYML).
        let data_ns = (self.symbol_ns() * n_sym).div_ceil(4_000) * 4_000;
        self.preamble_ns() + data_ns
    }
}

/// The mandatory OFDM rates a control response can go at, bit/s, and their modulations (the
/// index of the HT MCS with the same modulation and code rate: BPSK 1/2, QPSK 1/2, 16-QAM 1/2).
pub const CONTROL_RATES_BPS: [(u64, usize); 3] = [(6_000_000, 0), (12_000_000, 1), (24_000_000, 3)];

/// The non-HT mode of a control response to a frame at `data_rate_bps` (ERP-OFDM on 2.4 GHz):
/// 20 µs preamble and SIGNAL, then `signal_extension_ns`; and its modulation index.
pub fn control_mode(data_rate_bps: u64, signal_extension_ns: u64) -> (Mode, usize) {
    let basic = CONTROL_RATES_BPS.map(|r| r.0);
    let rate_bps = control_rate_bps(&basic, data_rate_bps);
    let modulation = CONTROL_RATES_BPS
        .iter()
        .find(|r| r.0 == rate_bps)
        .map_or(0, |r| r.1);
    let mode = Mode {
        format: Format::Ofdm,
        preamble_ns: 20_000,
        rate_bps,
        signal_extension_ns,
    };
    (mode, modulation)
}

/// Bytes an MPDU of `mpdu_bytes` takes in an A-MPDU: delimiter, MPDU, padding to a 4-byte
/// boundary (802.11-2016 9.7.1; every subframe padded: the last one's padding is not counted
/// by ns-3, a difference of at most 3 bytes, which we do not model).
pub fn ampdu_subframe_bytes(mpdu_bytes: u32) -> u32 {
    (AMPDU_DELIMITER_BYTES + mpdu_bytes).div_ceil(4) * 4
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dcf::phy::ACK_BYTES;

    fn ht(mcs: u8, w: u32, gi: u32) -> HtMode {
        HtMode {
            mcs,
            channel_width_mhz: w,
            guard_interval_ns: gi,
        }
    }

    #[test]
    fn rates_follow_the_ht_mcs_tables() {
        // 802.11-2016 Tables 19-27 (20 MHz, 1 SS), 19-28 (40 MHz, 1 SS), 19-30 (40 MHz, 2 SS).
        let r = |m, w, gi| ht(m, w, gi).rate_bps();
        assert_eq!(r(7, 20, 800), 65_000_000);
        assert_eq!(r(0, 40, 800), 13_500_000);
        assert_eq!(r(7, 40, 800), 135_000_000);
        assert_eq!(r(7, 40, 400), 150_000_000);
        assert_eq!(r(11, 40, 800), 108_000_000);
        assert_eq!(r(11, 40, 400), 120_000_000);
        assert_eq!(r(15, 40, 800), 270_000_000);
        assert_eq!(r(15, 40, 400), 300_000_000);
        assert_eq!(r(8, 20, 800), 13_000_000);
        assert_eq!(ht(11, 40, 800).n_dbps(), 432);
    }

    #[test]
    fn airtimes_follow_eq_19_89() {
        // The DCF's HT MCS 7 20 MHz check (ns-3 tx-duration-test.cc, 5 GHz): 1536 B 228 µs.
        assert_eq!(ht(7, 20, 800).airtime_ns(1536), 228_000);
        // MCS 11 HT40 LGI, a 1550 B PSDU (1500 B packet + 50 B mesh overhead): 12422 bits /
        // 432 = 28.75 -> 29 symbols = 116 µs; preamble 36 + 2 HT-LTFs = 40 µs: 156 µs.
        assert_eq!(ht(11, 40, 800).airtime_ns(1550), 156_000);
        // Short GI: 29 x 3.6 = 104.4 µs -> 108 µs (whole 4 µs): 148 µs.
        assert_eq!(ht(11, 40, 400).airtime_ns(1550), 148_000);
        // One stream: 36 µs preamble. MCS 0 HT40, 100 B: 822 bits / 54 -> 16 symbols: 100 µs.
        assert_eq!(ht(0, 40, 800).airtime_ns(100), 100_000);
        // Control responses at 24 Mbit/s: Ack 134 bits -> 2 symbols, BlockAck 278 -> 3.
        let (m24, k) = control_mode(ht(11, 40, 800).rate_bps(), 0);
        assert_eq!((m24.rate_bps, k), (24_000_000, 3));
        let ack_ba = |m: Mode| (m.airtime_ns(ACK_BYTES), m.airtime_ns(BLOCK_ACK_BYTES));
        assert_eq!(ack_ba(m24), (28_000, 32_000));
        assert_eq!(ack_ba(control_mode(108_000_000, 6_000).0), (34_000, 38_000));
        // MCS 0 HT40 (13.5 Mbit/s): 12 Mbit/s, 48 bits a symbol: Ack 3 symbols, 32 µs. MCS 0
        // HT20 (6.5 Mbit/s): 6 Mbit/s, Ack ceil(134 / 24) = 6 symbols, 44 µs.
        let (m12, k) = control_mode(ht(0, 40, 800).rate_bps(), 0);
        assert_eq!(
            (m12.rate_bps, k, m12.airtime_ns(ACK_BYTES)),
            (12_000_000, 1, 32_000)
        );
        let (m6, k) = control_mode(ht(0, 20, 800).rate_bps(), 0);
        assert_eq!(
            (m6.rate_bps, k, m6.airtime_ns(ACK_BYTES)),
            (6_000_000, 0, 44_000)
        );
    }

    #[test]
    fn ampdu_subframes_are_padded_to_four_bytes() {
        assert_eq!(ampdu_subframe_bytes(1550), 1556);
        assert_eq!(ampdu_subframe_bytes(1551), 1556);
        assert_eq!(ampdu_subframe_bytes(1548), 1552);
    }
}
