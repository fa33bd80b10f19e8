//! Equations 2-5 and step 6: the range [lower, upper] a terminal keeps cwnd in.

use super::spec::{CandidateRule, MiddlewareSpec};
use super::tables::lookup;
use serde::Serialize;

/// f(N) = N^f_exponent (eq. 4): how the cell's total throughput falls as terminals are added.
pub fn f_of_n(n: u32, f_exponent: f64) -> f64 {
    f64::from(n).powf(f_exponent)
}

/// Bandwidth = BWmax * f(N) (eq. 3), bit/s.
pub fn bandwidth_bps(bw_max_bps: u64, n: u32, f_exponent: f64) -> f64 {
    bw_max_bps as f64 * f_of_n(n, f_exponent)
}

/// Ideal_cwnd = Bandwidth * RTT / (SegmentSize * N) (eq. 2), packets (not rounded): each of N
/// terminals' share of Bandwidth * RTT. `rtt_ms` in ms, the segment in bytes (the paper's
/// `Bandwidth[Mbps] * RTT[sec] / 1.5 KB` with the units made to cancel).
pub fn ideal_cwnd_pkts(spec: &MiddlewareSpec, n: u32, rtt_ms: f64) -> f64 {
    let bits_in_flight = bandwidth_bps(spec.bw_max_bps, n, spec.f_exponent) * rtt_ms / 1e3;
    bits_in_flight / (f64::from(spec.segment_bytes) * 8.0 * f64::from(n.max(1)))
}

/// A window in packets from eq. 2's real number: rounded down (the paper's integer window), at
/// least 1, at most u32::MAX.
fn to_pkts(x: f64) -> u32 {
    if x.is_nan() {
        return 1;
    }
    x.floor().clamp(1.0, f64::from(u32::MAX)) as u32
}

/// Candidate 1 (step 2): the upper and lower windows eq. 2 gives, packets. `u32::MAX` for both
/// when the rule uses no candidate 1 (`table_only`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Candidates {
    /// upper1, packets.
    pub upper_pkts: u32,
    /// lower1, packets; <= upper_pkts.
    pub lower_pkts: u32,
}

/// Candidate 1 from N, the current RTT and the minimum RTT (ms), by `spec.candidate_rule`.
pub fn candidates(spec: &MiddlewareSpec, n: u32, rtt_ms: f64, min_rtt_ms: f64) -> Candidates {
    let at_rtt = ideal_cwnd_pkts(spec, n, rtt_ms);
    let (upper, lower) = match spec.candidate_rule {
        CandidateRule::RttSpan => {
            let at_min = ideal_cwnd_pkts(spec, n, min_rtt_ms);
            // min_rtt <= rtt normally; a windowed minimum can exceed a smoothed RTT for a
            // while, so order them.
            (to_pkts(at_rtt.max(at_min)), to_pkts(at_rtt.min(at_min)))
        }
        CandidateRule::Ideal => (to_pkts(at_rtt), to_pkts(at_rtt)),
        CandidateRule::Scaled => (
            to_pkts(at_rtt * spec.scaled_upper_factor),
            to_pkts(at_rtt * spec.scaled_lower_factor),
        ),
        CandidateRule::TableOnly => (u32::MAX, u32::MAX),
    };
    debug_assert!(lower <= upper);
    Candidates {
        upper_pkts: upper,
        lower_pkts: lower,
    }
}

/// The range one step sets (step 6), with how it was reached.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Bounds {
    /// cwnd is kept at or above this, packets: min(lower1, lower2).
    pub lower_pkts: u32,
    /// cwnd is kept at or below this, packets: min(upper1, upper2); >= lower_pkts.
    pub upper_pkts: u32,
    /// Terminals counted (N).
    pub n: u32,
    /// Eq. 5: current RTT - min RTT, ms.
    pub ratio_rtt_ms: f64,
    /// Eq. 2 at the current RTT, packets (not rounded).
    pub ideal_cwnd_pkts: f64,
    /// Candidate 1 (u32::MAX: none).
    pub upper1_pkts: u32,
    /// Candidate 1 (u32::MAX: none).
    pub lower1_pkts: u32,
    /// Candidate 2, the table row's max.
    pub upper2_pkts: u32,
    /// Candidate 2, the table row's min.
    pub lower2_pkts: u32,
    /// Index of the table row (eq. 5's ratio_rtt).
    pub row: usize,
}

/// The range for a terminal that counts `n` terminals (itself included) and whose connection
/// has smoothed RTT `rtt_ms` and minimum RTT `min_rtt_ms`. None when the middleware is inactive:
/// turned off, fewer than `min_terminals` counted, or no RTT measured yet (an RTT not > 0).
/// `spec` is validated ([`MiddlewareSpec::validate`]).
pub fn bounds(spec: &MiddlewareSpec, n: u32, rtt_ms: f64, min_rtt_ms: f64) -> Option<Bounds> {
    let measured = |x: f64| x.is_finite() && x > 0.0;
    if !spec.enabled || n < spec.min_terminals.max(1) || !measured(rtt_ms) || !measured(min_rtt_ms)
    {
        return None;
    }
    let rows = spec.rows();
    if rows.is_empty() {
        return None;
    }
    let c1 = candidates(spec, n, rtt_ms, min_rtt_ms);
    let ratio_rtt_ms = rtt_ms - min_rtt_ms; // eq. 5
    let (row, c2) = lookup(rows, ratio_rtt_ms);
    let b = Bounds {
        lower_pkts: c1.lower_pkts.min(c2.lower_pkts),
        upper_pkts: c1.upper_pkts.min(c2.upper_pkts),
        n,
        ratio_rtt_ms,
        ideal_cwnd_pkts: ideal_cwnd_pkts(spec, n, rtt_ms),
        upper1_pkts: c1.upper_pkts,
        lower1_pkts: c1.lower_pkts,
        upper2_pkts: c2.upper_pkts,
        lower2_pkts: c2.lower_pkts,
        row,
    };
    debug_assert!(1 <= b.lower_pkts && b.lower_pkts <= b.upper_pkts);
    Some(b)
}

#[cfg(test)]
mod tests {
    use super::super::spec::TableSpec;
    use super::super::tables::{TablePreset, TableRow};
    use super::*;

    fn spec(rule: CandidateRule, table: TablePreset) -> MiddlewareSpec {
        MiddlewareSpec {
            candidate_rule: rule,
            table: TableSpec::Named(table.name().into()),
            ..MiddlewareSpec::default()
        }
    }

    #[test]
    fn eq4_f_of_n() {
        assert_eq!(f_of_n(1, -0.15), 1.0);
        assert!((f_of_n(2, -0.15) - 0.901_250_462_6).abs() < 1e-9);
        assert!((f_of_n(6, -0.15) - 0.764_323_675_6).abs() < 1e-9);
        assert!((f_of_n(20, -0.15) - 0.638_036_465_7).abs() < 1e-9);
        assert_eq!(f_of_n(7, 0.0), 1.0);
        // Monotone decreasing for a negative exponent.
        for n in 1..50 {
            assert!(f_of_n(n + 1, -0.15) < f_of_n(n, -0.15));
        }
    }

    #[test]
    fn eq3_bandwidth() {
        assert_eq!(bandwidth_bps(54_000_000, 1, -0.15), 54e6);
        assert!((bandwidth_bps(54_000_000, 6, -0.15) - 41.273_478_48e6).abs() < 1.0);
    }

    #[test]
    fn eq2_ideal_cwnd() {
        let m = MiddlewareSpec::default();
        // 54 Mbit/s * 0.512 s / (1500 B * 8) = 2304 packets, exactly, for one terminal.
        assert_eq!(ideal_cwnd_pkts(&m, 1, 512.0), 2304.0);
        // Six: 2304 * 6^-0.15 / 6.
        let six = ideal_cwnd_pkts(&m, 6, 512.0);
        assert!((six - 2304.0 * f_of_n(6, -0.15) / 6.0).abs() < 1e-9);
        assert!((six - 293.500_291_4).abs() < 1e-6);
        // Linear in RTT and BWmax, inverse in the segment size.
        assert_eq!(ideal_cwnd_pkts(&m, 1, 1024.0), 4608.0);
        let m2 = MiddlewareSpec {
            bw_max_bps: 27_000_000,
            segment_bytes: 750,
            ..m.clone()
        };
        assert_eq!(ideal_cwnd_pkts(&m2, 1, 512.0), 2304.0);
    }

    #[test]
    fn candidate_rules() {
        let (n, rtt, min) = (6, 600.0, 512.0);
        // rtt_span: eq. 2 at the current RTT above, at the minimum below.
        let c = candidates(
            &spec(CandidateRule::RttSpan, TablePreset::Improved),
            n,
            rtt,
            min,
        );
        assert_eq!((c.upper_pkts, c.lower_pkts), (343, 293));
        // Swapped RTTs (a windowed min above srtt) still give lower <= upper.
        let c = candidates(
            &spec(CandidateRule::RttSpan, TablePreset::Improved),
            n,
            min,
            rtt,
        );
        assert_eq!((c.upper_pkts, c.lower_pkts), (343, 293));
        let c = candidates(
            &spec(CandidateRule::Ideal, TablePreset::Improved),
            n,
            rtt,
            min,
        );
        assert_eq!((c.upper_pkts, c.lower_pkts), (343, 343));
        let mut s = spec(CandidateRule::Scaled, TablePreset::Improved);
        let c = candidates(&s, n, rtt, min);
        assert_eq!((c.upper_pkts, c.lower_pkts), (343, 171)); // 343.9 and 171.97, floored
        s.scaled_upper_factor = 2.0;
        s.scaled_lower_factor = 2.0;
        let c = candidates(&s, n, rtt, min);
        assert_eq!((c.upper_pkts, c.lower_pkts), (687, 687));
        let c = candidates(
            &spec(CandidateRule::TableOnly, TablePreset::Improved),
            n,
            rtt,
            min,
        );
        assert_eq!((c.upper_pkts, c.lower_pkts), (u32::MAX, u32::MAX));
        // At least one packet, however small the share.
        let c = candidates(
            &spec(CandidateRule::Ideal, TablePreset::Improved),
            1000,
            0.01,
            0.01,
        );
        assert_eq!((c.upper_pkts, c.lower_pkts), (1, 1));
    }

    #[test]
    fn step6_takes_the_smaller_of_each_pair() {
        let m = spec(CandidateRule::RttSpan, TablePreset::Improved);
        // Six terminals, no queue: candidate 1 = 293 both, row 0 = (1000, 200).
        let b = bounds(&m, 6, 512.0, 512.0).unwrap();
        assert_eq!((b.upper1_pkts, b.lower1_pkts), (293, 293));
        assert_eq!((b.upper2_pkts, b.lower2_pkts, b.row), (1000, 200, 0));
        assert_eq!((b.lower_pkts, b.upper_pkts), (200, 293));
        assert_eq!(b.ratio_rtt_ms, 0.0);
        // 100 ms of queue: row 1 (700, 150); candidate 1 = (eq. 2 at 612, at 512).
        let b = bounds(&m, 6, 612.0, 512.0).unwrap();
        assert_eq!(b.row, 1);
        assert_eq!((b.upper1_pkts, b.lower1_pkts), (350, 293));
        assert_eq!((b.lower_pkts, b.upper_pkts), (150, 350));
        // 400 ms: row 4 (50, 1): the table binds both.
        let b = bounds(&m, 6, 912.0, 512.0).unwrap();
        assert_eq!((b.lower_pkts, b.upper_pkts, b.row), (1, 50, 4));
        // One terminal: eq. 2 (2304) is above every row: the table alone.
        let b = bounds(&m, 1, 512.0, 512.0).unwrap();
        assert_eq!((b.lower_pkts, b.upper_pkts), (200, 1000));
        // Twenty: eq. 2 (73) below the table's min: the range shrinks to eq. 2's.
        let b = bounds(&m, 20, 512.0, 512.0).unwrap();
        assert_eq!((b.lower_pkts, b.upper_pkts), (73, 73));
        // The before table's minimum mode: cwnd 1.
        let b = bounds(
            &spec(CandidateRule::RttSpan, TablePreset::Before),
            3,
            900.0,
            512.0,
        )
        .unwrap();
        assert_eq!((b.lower_pkts, b.upper_pkts), (1, 1));
        // The S3.2 table keeps 555 as max throughout.
        let b = bounds(
            &spec(CandidateRule::TableOnly, TablePreset::S32),
            3,
            700.0,
            512.0,
        )
        .unwrap();
        assert_eq!((b.lower_pkts, b.upper_pkts, b.row), (2, 555, 3));
    }

    #[test]
    fn the_table_row_follows_ratio_rtt_at_every_boundary() {
        let m = spec(CandidateRule::TableOnly, TablePreset::Improved);
        let rows = TablePreset::Improved.rows();
        for (i, r) in rows.iter().enumerate() {
            let b = bounds(&m, 3, 100.0 + r.from_ratio_rtt_ms, 100.0).unwrap();
            assert_eq!(b.row, i);
            assert_eq!((b.upper_pkts, b.lower_pkts), (r.upper_pkts, r.lower_pkts));
            if i > 0 {
                let b = bounds(&m, 3, 100.0 + r.from_ratio_rtt_ms - 0.001, 100.0).unwrap();
                assert_eq!(b.row, i - 1);
            }
        }
    }

    #[test]
    fn inactive_cases() {
        let mut m = MiddlewareSpec::default();
        assert!(bounds(&m, 0, 500.0, 500.0).is_none());
        assert!(bounds(&m, 1, 0.0, 500.0).is_none()); // no RTT sample yet
        assert!(bounds(&m, 1, 500.0, 0.0).is_none());
        assert!(bounds(&m, 1, f64::NAN, 500.0).is_none());
        m.min_terminals = 4; // the paper's future work: only with many terminals
        assert!(bounds(&m, 3, 600.0, 512.0).is_none());
        assert!(bounds(&m, 4, 600.0, 512.0).is_some());
        m.enabled = false;
        assert!(bounds(&m, 4, 600.0, 512.0).is_none());
        m.enabled = true;
        m.table = TableSpec::Named("unknown".into()); // not validated
        assert!(bounds(&m, 4, 600.0, 512.0).is_none());
    }

    #[test]
    fn lower_never_exceeds_upper() {
        let tables = [
            TableSpec::Named("s32".into()),
            TableSpec::Named("before".into()),
            TableSpec::Named("improved".into()),
            TableSpec::Rows(vec![TableRow {
                from_ratio_rtt_ms: 0.0,
                upper_pkts: 7,
                lower_pkts: 7,
            }]),
        ];
        for rule in CandidateRule::ALL {
            for table in &tables {
                let m = MiddlewareSpec {
                    candidate_rule: rule,
                    table: table.clone(),
                    ..MiddlewareSpec::default()
                };
                for n in 1..=25 {
                    for min in [0.05, 20.0, 512.0] {
                        for extra in [0.0, 10.0, 51.0, 120.0, 200.0, 400.0, 5000.0] {
                            let b = bounds(&m, n, min + extra, min).unwrap();
                            assert!(1 <= b.lower_pkts && b.lower_pkts <= b.upper_pkts, "{b:?}");
                        }
                    }
                }
            }
        }
    }
}
