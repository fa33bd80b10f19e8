//! Candidate 2: the table of (max, min) cwnd indexed by `ratio_rtt` (eq. 5).
//!
//! The paper's rows start at ratio_rtt 0, 51, 106, 161 and 331 ms ("0-", "51-", ...; the text:
//! "ratio_rtt が 331.0 以上" = at or above 331.0): a row applies from its threshold (included)
//! up to the next row's (excluded). Three tables are shipped:
//! - `s32`: section 3.2's table 1 (the middleware of the earlier papers): max 555 throughout,
//!   min 200, 50, 10, 2, 1;
//! - `before`: table 3, "改善前" (before the improvement): the max falls with the ratio too;
//! - `improved`: table 3, "改善後" (after): both bounds looser (the paper's proposal).
//!
//! At ratio_rtt >= 331 ms the `before` table sets cwnd to 1 ("通信最小モード", minimum
//! transmission mode) to avoid further delay.

use serde::{Deserialize, Serialize};

/// One row: from `from_ratio_rtt_ms` on, cwnd is kept within [lower_pkts, upper_pkts].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableRow {
    /// The row applies when ratio_rtt (current RTT - min RTT) >= this, ms; the first row's is 0.
    pub from_ratio_rtt_ms: f64,
    /// Candidate upper bound (the paper's max_cwnd2), packets; >= lower_pkts.
    pub upper_pkts: u32,
    /// Candidate lower bound (min_cwnd2), packets; >= 1.
    pub lower_pkts: u32,
}

const fn row(from_ratio_rtt_ms: f64, upper_pkts: u32, lower_pkts: u32) -> TableRow {
    TableRow {
        from_ratio_rtt_ms,
        upper_pkts,
        lower_pkts,
    }
}

/// Section 3.2, table 1.
pub const S32: [TableRow; 5] = [
    row(0.0, 555, 200),
    row(51.0, 555, 50),
    row(106.0, 555, 10),
    row(161.0, 555, 2),
    row(331.0, 555, 1),
];

/// Table 3, before the improvement (改善前).
pub const BEFORE: [TableRow; 5] = [
    row(0.0, 555, 200),
    row(51.0, 200, 50),
    row(106.0, 100, 10),
    row(161.0, 10, 2),
    row(331.0, 1, 1),
];

/// Table 3, after the improvement (改善後): the paper's proposal.
pub const IMPROVED: [TableRow; 5] = [
    row(0.0, 1000, 200),
    row(51.0, 700, 150),
    row(106.0, 400, 100),
    row(161.0, 200, 10),
    row(331.0, 50, 1),
];

/// A shipped table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TablePreset {
    /// Section 3.2, table 1.
    S32,
    /// Table 3, before the improvement.
    Before,
    /// Table 3, after the improvement (default).
    Improved,
}

impl TablePreset {
    /// Every preset, in the paper's order.
    pub const ALL: [TablePreset; 3] =
        [TablePreset::S32, TablePreset::Before, TablePreset::Improved];

    /// Its name in scenario files.
    pub fn name(self) -> &'static str {
        match self {
            TablePreset::S32 => "s32",
            TablePreset::Before => "before",
            TablePreset::Improved => "improved",
        }
    }

    /// The preset of that name.
    pub fn from_name(name: &str) -> Option<TablePreset> {
        Self::ALL.into_iter().find(|p| p.name() == name)
    }

    /// Its rows.
    pub fn rows(self) -> &'static [TableRow] {
        match self {
            TablePreset::S32 => &S32,
            TablePreset::Before => &BEFORE,
            TablePreset::Improved => &IMPROVED,
        }
    }
}

/// The row for `ratio_rtt_ms` (eq. 5): the last whose threshold it reaches, and its index. A
/// negative ratio (current RTT below the minimum, possible when the minimum is a windowed one)
/// or NaN takes the first row. `rows` is non-empty with increasing thresholds
/// ([`crate::middleware::MiddlewareSpec::validate`]).
pub fn lookup(rows: &[TableRow], ratio_rtt_ms: f64) -> (usize, TableRow) {
    debug_assert!(!rows.is_empty());
    let i = rows
        .iter()
        .rposition(|r| ratio_rtt_ms >= r.from_ratio_rtt_ms)
        .unwrap_or(0);
    (i, rows[i])
}

#[cfg(test)]
mod tests {
    use super::*;

    const EDGES: [f64; 5] = [0.0, 51.0, 106.0, 161.0, 331.0];

    #[test]
    fn presets_are_the_papers_tables() {
        let pairs = |t: TablePreset| -> Vec<(u32, u32)> {
            t.rows()
                .iter()
                .map(|r| (r.upper_pkts, r.lower_pkts))
                .collect()
        };
        assert_eq!(
            pairs(TablePreset::S32),
            [(555, 200), (555, 50), (555, 10), (555, 2), (555, 1)]
        );
        assert_eq!(
            pairs(TablePreset::Before),
            [(555, 200), (200, 50), (100, 10), (10, 2), (1, 1)]
        );
        assert_eq!(
            pairs(TablePreset::Improved),
            [(1000, 200), (700, 150), (400, 100), (200, 10), (50, 1)]
        );
        for t in TablePreset::ALL {
            let edges: Vec<f64> = t.rows().iter().map(|r| r.from_ratio_rtt_ms).collect();
            assert_eq!(edges, EDGES);
            assert_eq!(TablePreset::from_name(t.name()), Some(t));
        }
        assert_eq!(TablePreset::from_name("S32"), None);
    }

    #[test]
    fn every_row_boundary_of_every_table() {
        for t in TablePreset::ALL {
            let rows = t.rows();
            for (i, &edge) in EDGES.iter().enumerate() {
                // At the threshold: this row; just below it: the row before.
                assert_eq!(lookup(rows, edge), (i, rows[i]), "{} at {edge}", t.name());
                if i > 0 {
                    let below = edge - 1e-9;
                    assert_eq!(lookup(rows, below).0, i - 1, "{} at {below}", t.name());
                    // The paper's integer milliseconds: 50 is row 0, 51 row 1, ...
                    assert_eq!(lookup(rows, edge - 1.0).0, i - 1);
                }
            }
            assert_eq!(lookup(rows, 1e9).0, 4);
            assert_eq!(lookup(rows, -3.0).0, 0);
            assert_eq!(lookup(rows, f64::NAN).0, 0);
        }
        // The paper's "331.0 以上": cwnd 1 in the before table.
        assert_eq!(lookup(&BEFORE, 331.0).1, row(331.0, 1, 1));
        assert_eq!(lookup(&BEFORE, 330.9).1, row(161.0, 10, 2));
        assert_eq!(lookup(&IMPROVED, 105.99).1, row(51.0, 700, 150));
        assert_eq!(lookup(&IMPROVED, 160.0).1, row(106.0, 400, 100));
    }
}
