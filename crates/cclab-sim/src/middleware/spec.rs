//! The middleware's settings as a scenario gives them (`[middleware]`, docs/scenario.md): every
//! field has a default, so `[middleware]` alone turns on the paper's improved middleware.
//!
//! ## Which candidates eq. 2 gives (`candidate_rule`)
//! Section 3.2, step (2): "(1)で検知した接続台数と式2から、適切なCWNDサイズの上限値候補1と下限値
//! 候補1をそれぞれ算出" (from the count found in (1) and eq. 2, compute the upper candidate 1
//! and the lower candidate 1, each). Eq. 2 is one formula (`Ideal_cwnd`); the paper does not
//! say how it yields two values. Its only measured input besides N is RTT, and the middleware
//! reads two RTTs from the kernel monitor (step 3: "その時点の RTT(current_rtt) とその最小値
//! (min_rtt)"). The default, [`CandidateRule::RttSpan`], evaluates eq. 2 at both:
//! - lower1 = eq. 2 at min_rtt: each terminal's share of the path's pipe when nothing is
//!   queued; below it the terminals together cannot keep the cell busy;
//! - upper1 = eq. 2 at current_rtt: the share of the pipe plus what is queued now; above it a
//!   terminal only lengthens the queue.
//!
//! Why this reading: it computes two values "each" from eq. 2, as step (2) says; lower1 <= upper1
//! always (so lower <= upper after step 6, whatever the table); the range it leaves to the stock
//! algorithm ("その範囲の中でデフォルトの TCP アルゴリズムによる制御が行われる") has the width of
//! the share times ratio_rtt / min_rtt, that is, it follows the queueing delay that eq. 5
//! measures; and both shrink as N grows, as the paper says of the correction values
//! ("接続台数が増えるほど、CWNDの補正値は小さくなる"). The alternatives stay selectable:
//! [`CandidateRule::Ideal`] (both candidates are `Ideal_cwnd` at the current RTT: the most literal
//! reading of one formula, but whenever it is below the table's min the range has no width),
//! [`CandidateRule::Scaled`] (fixed factors around `Ideal_cwnd`) and [`CandidateRule::TableOnly`]
//! (eq. 2 ignored: an ablation).
//!
//! ## BWmax (`bw_max_bps`)
//! "BWmax はその通信環境における最高通信速度" (the highest communication speed of that
//! environment); the paper gives no number. Its environment is IEEE 802.11g, whose highest rate
//! is 54 Mbit/s: the default. (A measured peak, e.g. the 23-24 Mbit/s TCP goodput of a full
//! 802.11g model, is the other reading; set it per scenario.) With 54 Mbit/s and the paper's
//! 512 ms, eq. 2 gives 2304 packets for one terminal, above every table's max, so a lone
//! terminal is bounded by the table alone, and 293 packets each for six.
//!
//! ## Units of eq. 2
//! The paper writes `Bandwidth[Mbps] * RTT[sec] / (Segmentsize(1.5Kbyte) * N)`, whose units do
//! not cancel; we convert: `bw_bps * rtt_s / (segment_bytes * 8 * N)` packets.
//!
//! ## Counting
//! Each terminal running the middleware broadcasts one UDP datagram of `count_bytes` (IPv4 packet
//! size) every `count_interval_ms`, and counts as present every sender heard within the last
//! `count_window_ms`, itself included. The paper gives neither the period nor the size; ours: one
//! broadcast per clamping step (500 ms), 64-byte packets, a window of three periods (a terminal
//! is still counted after two of its broadcasts are lost on a busy cell).

use super::tables::{TablePreset, TableRow};
use crate::config::ConfigError;
use serde::{Deserialize, Serialize};

/// How eq. 2 gives the upper and the lower candidate 1 (see the module's documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CandidateRule {
    /// upper1 = eq. 2 at the current RTT, lower1 = eq. 2 at the minimum RTT (default).
    #[default]
    RttSpan,
    /// upper1 = lower1 = eq. 2 at the current RTT.
    Ideal,
    /// upper1 = `scaled_upper_factor` x, lower1 = `scaled_lower_factor` x eq. 2 at the current RTT.
    Scaled,
    /// No candidate 1: the table alone decides.
    TableOnly,
}

impl CandidateRule {
    /// Every rule.
    pub const ALL: [CandidateRule; 4] = [
        CandidateRule::RttSpan,
        CandidateRule::Ideal,
        CandidateRule::Scaled,
        CandidateRule::TableOnly,
    ];

    /// Its name in scenario files.
    pub fn name(self) -> &'static str {
        match self {
            CandidateRule::RttSpan => "rtt_span",
            CandidateRule::Ideal => "ideal",
            CandidateRule::Scaled => "scaled",
            CandidateRule::TableOnly => "table_only",
        }
    }
}

/// The table of candidate 2: a shipped one by name, or rows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum TableSpec {
    /// "s32" (section 3.2), "before" or "improved" (table 3).
    Named(String),
    /// Custom rows, thresholds increasing from 0.
    Rows(Vec<TableRow>),
}

impl Default for TableSpec {
    fn default() -> Self {
        TableSpec::Named(TablePreset::Improved.name().into())
    }
}

impl TableSpec {
    /// The rows; empty for an unknown name (refused by [`MiddlewareSpec::validate`]).
    pub fn rows(&self) -> &[TableRow] {
        match self {
            TableSpec::Named(n) => TablePreset::from_name(n).map_or(&[], TablePreset::rows),
            TableSpec::Rows(r) => r,
        }
    }
}

/// The middleware of a scenario. Field names carry their units.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MiddlewareSpec {
    /// Whether it runs (a scenario can keep its settings and turn it off).
    pub enabled: bool,
    /// Candidate 2: "s32", "before", "improved" (default) or rows.
    pub table: TableSpec,
    /// How eq. 2 gives the two candidates 1.
    pub candidate_rule: CandidateRule,
    /// With `candidate_rule = "scaled"`: upper1 = this x Ideal_cwnd (default 1).
    pub scaled_upper_factor: f64,
    /// With `candidate_rule = "scaled"`: lower1 = this x Ideal_cwnd (default 0.5).
    pub scaled_lower_factor: f64,
    /// BWmax of eq. 3, bit/s (default 54 Mbit/s, 802.11g's highest rate).
    pub bw_max_bps: u64,
    /// The exponent of f(N) = N^f_exponent, eq. 4 (default -0.15).
    pub f_exponent: f64,
    /// SegmentSize of eq. 2, bytes (default 1500, the paper's 1.5 KB).
    pub segment_bytes: u32,
    /// The clamping step: bounds are recomputed and applied this often, ms (default 500).
    pub interval_ms: f64,
    /// Each terminal broadcasts one counting datagram this often, ms (default 500).
    pub count_interval_ms: f64,
    /// Size of a counting datagram as an IPv4 packet (20 IP + 8 UDP + payload), bytes (default 64).
    pub count_bytes: u32,
    /// A sender counts as present this long after it was last heard, ms (default 1500).
    pub count_window_ms: f64,
    /// Bounds apply only while at least this many terminals are counted, the terminal itself
    /// included (the paper's future work; default 1: always).
    pub min_terminals: u32,
    /// Hosts that run it; empty: every host that sends a flow.
    pub hosts: Vec<String>,
}

impl Default for MiddlewareSpec {
    fn default() -> Self {
        MiddlewareSpec {
            enabled: true,
            table: TableSpec::default(),
            candidate_rule: CandidateRule::RttSpan,
            scaled_upper_factor: 1.0,
            scaled_lower_factor: 0.5,
            bw_max_bps: 54_000_000,
            f_exponent: -0.15,
            segment_bytes: 1500,
            interval_ms: 500.0,
            count_interval_ms: 500.0,
            count_bytes: 64,
            count_window_ms: 1500.0,
            min_terminals: 1,
            hosts: Vec::new(),
        }
    }
}

/// IPv4 + UDP headers, bytes.
pub const UDP_IP_HEADER_BYTES: u32 = 28;
/// The smallest counting datagram: the headers and a 16-byte payload (a tag and the sender's id).
pub const MIN_COUNT_BYTES: u32 = UDP_IP_HEADER_BYTES + 16;
/// The largest: one unfragmented packet on a 1500-byte MTU.
pub const MAX_COUNT_BYTES: u32 = 1500;

fn ms_to_ns(ms: f64) -> u64 {
    (ms * 1e6).round() as u64
}

impl MiddlewareSpec {
    /// The rows of candidate 2's table.
    pub fn rows(&self) -> &[TableRow] {
        self.table.rows()
    }

    /// `interval_ms` in ns.
    pub fn interval_ns(&self) -> u64 {
        ms_to_ns(self.interval_ms)
    }

    /// `count_interval_ms` in ns.
    pub fn count_interval_ns(&self) -> u64 {
        ms_to_ns(self.count_interval_ms)
    }

    /// `count_window_ms` in ns.
    pub fn count_window_ns(&self) -> u64 {
        ms_to_ns(self.count_window_ms)
    }

    /// Whether `host` runs the middleware: it is enabled and the host is listed, or, with no
    /// list, the host sends a flow.
    pub fn runs_on(&self, host: &str, sends_a_flow: bool) -> bool {
        self.enabled
            && if self.hosts.is_empty() {
                sends_a_flow
            } else {
                self.hosts.iter().any(|h| h == host)
            }
    }

    /// Check every value; `path` is the field (`middleware`). Host names are checked against
    /// the network by the scenario.
    pub fn validate(&self, path: &str) -> Result<(), ConfigError> {
        let bad = |f: &str, m: String| Err(ConfigError::new(format!("{path}.{f}"), m));
        match &self.table {
            TableSpec::Named(n) if TablePreset::from_name(n).is_none() => {
                return bad(
                    "table",
                    format!("{n:?} is not accepted: \"s32\", \"before\", \"improved\" or a list of rows"),
                );
            }
            TableSpec::Named(_) => {}
            TableSpec::Rows(rows) => validate_rows(path, rows)?,
        }
        for (f, v) in [
            ("scaled_upper_factor", self.scaled_upper_factor),
            ("scaled_lower_factor", self.scaled_lower_factor),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return bad(f, format!("{v} is not accepted: a factor > 0"));
            }
        }
        if self.scaled_lower_factor > self.scaled_upper_factor {
            return bad(
                "scaled_lower_factor",
                format!(
                    "{} is not accepted: at most scaled_upper_factor ({})",
                    self.scaled_lower_factor, self.scaled_upper_factor
                ),
            );
        }
        if self.bw_max_bps == 0 {
            return bad("bw_max_bps", "0 is not accepted: a rate > 0".into());
        }
        if !(self.f_exponent.is_finite() && (-5.0..=0.0).contains(&self.f_exponent)) {
            return bad(
                "f_exponent",
                format!(
                    "{} is not accepted: -5..0 (f(N) must not grow with N; the paper's -0.15)",
                    self.f_exponent
                ),
            );
        }
        if !(64..=65535).contains(&self.segment_bytes) {
            return bad(
                "segment_bytes",
                format!("{} is not accepted: 64..65535", self.segment_bytes),
            );
        }
        for (f, v) in [
            ("interval_ms", self.interval_ms),
            ("count_interval_ms", self.count_interval_ms),
            ("count_window_ms", self.count_window_ms),
        ] {
            if !(v.is_finite() && v >= 1.0) {
                return bad(f, format!("{v} is not accepted: at least 1 ms"));
            }
        }
        if self.count_window_ms < self.count_interval_ms {
            return bad(
                "count_window_ms",
                format!(
                    "{} is not accepted: at least count_interval_ms ({}), or terminals are forgotten \
                     between their broadcasts",
                    self.count_window_ms, self.count_interval_ms
                ),
            );
        }
        if !(MIN_COUNT_BYTES..=MAX_COUNT_BYTES).contains(&self.count_bytes) {
            return bad(
                "count_bytes",
                format!(
                    "{} is not accepted: {MIN_COUNT_BYTES}..{MAX_COUNT_BYTES} (an IPv4 packet: 28 bytes \
                     of headers and at least 16 of payload)",
                    self.count_bytes
                ),
            );
        }
        if self.min_terminals == 0 {
            return bad(
                "min_terminals",
                "0 is not accepted: at least 1 (a terminal counts itself)".into(),
            );
        }
        for (i, h) in self.hosts.iter().enumerate() {
            if h.is_empty() {
                return bad(&format!("hosts[{i}]"), "a host's name".into());
            }
            if self.hosts[..i].contains(h) {
                return bad(&format!("hosts[{i}]"), format!("{h:?} is listed twice"));
            }
        }
        Ok(())
    }
}

fn validate_rows(path: &str, rows: &[TableRow]) -> Result<(), ConfigError> {
    if rows.is_empty() {
        return Err(ConfigError::new(
            format!("{path}.table"),
            "at least one row (or a table's name: \"s32\", \"before\", \"improved\")",
        ));
    }
    for (i, r) in rows.iter().enumerate() {
        let bad = |f: &str, m: String| Err(ConfigError::new(format!("{path}.table[{i}].{f}"), m));
        let from = r.from_ratio_rtt_ms;
        if i == 0 && from != 0.0 {
            return bad(
                "from_ratio_rtt_ms",
                format!("{from} is not accepted: the first row starts at 0"),
            );
        }
        if i > 0 && !(from.is_finite() && from > rows[i - 1].from_ratio_rtt_ms) {
            return bad(
                "from_ratio_rtt_ms",
                format!(
                    "{from} is not accepted: above the previous row's ({})",
                    rows[i - 1].from_ratio_rtt_ms
                ),
            );
        }
        if r.lower_pkts == 0 {
            return bad("lower_pkts", "0 is not accepted: at least 1 packet".into());
        }
        if r.upper_pkts < r.lower_pkts {
            return bad(
                "upper_pkts",
                format!(
                    "{} is not accepted: at least lower_pkts ({})",
                    r.upper_pkts, r.lower_pkts
                ),
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from_json(s: &str) -> MiddlewareSpec {
        serde_json::from_str(s).unwrap()
    }

    fn field_of(m: &MiddlewareSpec) -> String {
        m.validate("middleware").unwrap_err().field
    }

    #[test]
    fn an_empty_table_is_the_improved_middleware() {
        let m = from_json("{}");
        assert_eq!(m, MiddlewareSpec::default());
        m.validate("middleware").unwrap();
        assert_eq!(m.rows(), TablePreset::Improved.rows());
        assert_eq!(m.candidate_rule, CandidateRule::RttSpan);
        assert_eq!((m.bw_max_bps, m.segment_bytes), (54_000_000, 1500));
        assert_eq!(m.f_exponent, -0.15);
        assert_eq!(
            (m.interval_ns(), m.count_interval_ns(), m.count_window_ns()),
            (500_000_000, 500_000_000, 1_500_000_000)
        );
        // Defaults survive a round trip through the normalised JSON.
        let back: MiddlewareSpec =
            serde_json::from_str(&serde_json::to_string(&m).unwrap()).unwrap();
        assert_eq!(back, m);
    }

    #[test]
    fn tables_by_name_or_rows() {
        let m = from_json(r#"{"table": "before", "candidate_rule": "table_only"}"#);
        assert_eq!(m.rows(), TablePreset::Before.rows());
        assert_eq!(m.candidate_rule, CandidateRule::TableOnly);
        let m = from_json(
            r#"{"table": [{"from_ratio_rtt_ms": 0, "upper_pkts": 80, "lower_pkts": 8},
                          {"from_ratio_rtt_ms": 20.5, "upper_pkts": 40, "lower_pkts": 4}]}"#,
        );
        m.validate("middleware").unwrap();
        assert_eq!(m.rows().len(), 2);
        assert_eq!(m.rows()[1].from_ratio_rtt_ms, 20.5);
        for r in CandidateRule::ALL {
            let j = format!(r#"{{"candidate_rule": "{}"}}"#, r.name());
            assert_eq!(from_json(&j).candidate_rule, r);
        }
    }

    #[test]
    fn unknown_fields_are_refused() {
        assert!(serde_json::from_str::<MiddlewareSpec>(r#"{"tabel": "s32"}"#).is_err());
        assert!(serde_json::from_str::<MiddlewareSpec>(r#"{"candidate_rule": "max"}"#).is_err());
    }

    #[test]
    fn every_bad_value_names_its_field() {
        let with = |f: fn(&mut MiddlewareSpec)| {
            let mut m = MiddlewareSpec::default();
            f(&mut m);
            field_of(&m)
        };
        assert_eq!(
            with(|m| m.table = TableSpec::Named("fast".into())),
            "middleware.table"
        );
        assert_eq!(
            with(|m| m.table = TableSpec::Rows(vec![])),
            "middleware.table"
        );
        fn r(from: f64, upper: u32, lower: u32) -> TableRow {
            TableRow {
                from_ratio_rtt_ms: from,
                upper_pkts: upper,
                lower_pkts: lower,
            }
        }
        assert_eq!(
            with(|m| m.table = TableSpec::Rows(vec![r(5.0, 10, 1)])),
            "middleware.table[0].from_ratio_rtt_ms"
        );
        assert_eq!(
            with(|m| m.table = TableSpec::Rows(vec![r(0.0, 10, 1), r(0.0, 5, 1)])),
            "middleware.table[1].from_ratio_rtt_ms"
        );
        assert_eq!(
            with(|m| m.table = TableSpec::Rows(vec![r(0.0, 10, 1), r(f64::NAN, 5, 1)])),
            "middleware.table[1].from_ratio_rtt_ms"
        );
        assert_eq!(
            with(|m| m.table = TableSpec::Rows(vec![r(0.0, 10, 0)])),
            "middleware.table[0].lower_pkts"
        );
        assert_eq!(
            with(|m| m.table = TableSpec::Rows(vec![r(0.0, 10, 1), r(9.0, 3, 4)])),
            "middleware.table[1].upper_pkts"
        );
        assert_eq!(
            with(|m| m.scaled_upper_factor = 0.0),
            "middleware.scaled_upper_factor"
        );
        assert_eq!(
            with(|m| m.scaled_lower_factor = 2.0),
            "middleware.scaled_lower_factor"
        );
        assert_eq!(with(|m| m.bw_max_bps = 0), "middleware.bw_max_bps");
        assert_eq!(with(|m| m.f_exponent = 0.1), "middleware.f_exponent");
        assert_eq!(with(|m| m.f_exponent = f64::NAN), "middleware.f_exponent");
        assert_eq!(with(|m| m.segment_bytes = 10), "middleware.segment_bytes");
        assert_eq!(with(|m| m.interval_ms = 0.5), "middleware.interval_ms");
        assert_eq!(
            with(|m| m.count_interval_ms = f64::INFINITY),
            "middleware.count_interval_ms"
        );
        assert_eq!(
            with(|m| m.count_window_ms = 400.0),
            "middleware.count_window_ms"
        );
        assert_eq!(with(|m| m.count_bytes = 30), "middleware.count_bytes");
        assert_eq!(with(|m| m.count_bytes = 1501), "middleware.count_bytes");
        assert_eq!(with(|m| m.min_terminals = 0), "middleware.min_terminals");
        assert_eq!(
            with(|m| m.hosts = vec!["a".into(), "".into()]),
            "middleware.hosts[1]"
        );
        assert_eq!(
            with(|m| m.hosts = vec!["a".into(), "a".into()]),
            "middleware.hosts[1]"
        );
    }

    #[test]
    fn which_hosts_run_it() {
        let mut m = MiddlewareSpec::default();
        assert!(m.runs_on("phone1", true));
        assert!(!m.runs_on("server", false));
        m.hosts = vec!["server".into()];
        assert!(m.runs_on("server", false));
        assert!(!m.runs_on("phone1", true));
        m.enabled = false;
        assert!(!m.runs_on("server", false));
    }
}
