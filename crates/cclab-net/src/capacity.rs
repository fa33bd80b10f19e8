//! How fast a link serialises: a constant rate, or a Mahimahi capacity trace.

use crate::error::NetError;
use crate::{NS_PER_MS, NS_PER_S};
use serde::{Deserialize, Serialize};

/// Bytes one Mahimahi delivery opportunity carries (one MTU).
pub const MAHIMAHI_MTU_BYTES: u32 = 1500;

/// A link's service capacity. In a config: `{ kind = "rate", rate_bps = 64000000 }` or
/// `{ kind = "trace", opportunities_ms = [1, 1, 3, 4] }`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Capacity {
    /// Constant rate: a packet of `b` bytes takes `ceil(8 b * 1e9 / rate_bps)` ns.
    Rate {
        /// Bits per second, > 0.
        rate_bps: u64,
    },
    /// Trace-driven capacity (e.g. cellular traces recorded for Mahimahi).
    Trace(MahimahiTrace),
}

impl Capacity {
    /// Transmission time of `bytes` at `rate_bps`, ns, rounded up; exact integer arithmetic.
    /// A rate of 0 never finishes (`u64::MAX`); a result beyond `u64` saturates.
    pub fn tx_time_ns(rate_bps: u64, bytes: u32) -> u64 {
        if rate_bps == 0 {
            return u64::MAX;
        }
        let num = u128::from(bytes) * 8 * u128::from(NS_PER_S);
        u64::try_from(num.div_ceil(u128::from(rate_bps))).unwrap_or(u64::MAX)
    }

    /// Average capacity, bits per second.
    pub fn mean_rate_bps(&self) -> f64 {
        match self {
            Capacity::Rate { rate_bps } => *rate_bps as f64,
            Capacity::Trace(t) => t.mean_rate_bps(),
        }
    }

    /// Check the setting (a rate must be > 0; a trace is valid by construction).
    pub fn validate(&self) -> Result<(), NetError> {
        match self {
            Capacity::Rate { rate_bps: 0 } => Err(NetError::invalid("rate_bps", 0, "a rate > 0")),
            _ => Ok(()),
        }
    }
}

/// A Mahimahi trace: one line per delivery opportunity of one MTU (1500 bytes), each an integer
/// millisecond timestamp, non-decreasing (equal timestamps are several opportunities at once).
/// The trace repeats with a period equal to its last timestamp, as Mahimahi's link shell does:
/// opportunity `i` of repetition `r` is at `r * period + t_i` ms.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "TraceRepr", into = "TraceRepr")]
pub struct MahimahiTrace {
    /// Opportunity times within one period, ms, non-decreasing; the last is the period (> 0).
    opportunities_ms: Vec<u64>,
}

/// Serialised form of a [`MahimahiTrace`].
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct TraceRepr {
    opportunities_ms: Vec<u64>,
}

impl TryFrom<TraceRepr> for MahimahiTrace {
    type Error = NetError;
    fn try_from(r: TraceRepr) -> Result<Self, NetError> {
        MahimahiTrace::from_opportunities_ms(r.opportunities_ms)
    }
}

impl From<MahimahiTrace> for TraceRepr {
    fn from(t: MahimahiTrace) -> Self {
        TraceRepr {
            opportunities_ms: t.opportunities_ms,
        }
    }
}

impl MahimahiTrace {
    /// Parse the text of a trace file. Blank lines are ignored; errors carry the 1-based line
    /// number (0 for an empty trace).
    pub fn parse(text: &str) -> Result<Self, NetError> {
        let mut ops: Vec<u64> = Vec::new();
        let mut last_line = 0;
        for (i, line) in text.lines().enumerate() {
            let t = line.trim();
            if t.is_empty() {
                continue;
            }
            let v: u64 = t.parse().map_err(|_| NetError::TraceParse {
                line: i + 1,
                msg: format!("{t:?} is not a whole number of milliseconds"),
            })?;
            if let Some(&prev) = ops.last() {
                if v < prev {
                    return Err(NetError::TraceParse {
                        line: i + 1,
                        msg: format!("timestamps must not decrease ({v} after {prev})"),
                    });
                }
            }
            ops.push(v);
            last_line = i + 1;
        }
        Self::check(&ops, last_line)?;
        Ok(MahimahiTrace {
            opportunities_ms: ops,
        })
    }

    /// A trace from its opportunity times (ms); errors number the entries from 1 as lines.
    pub fn from_opportunities_ms(ops: Vec<u64>) -> Result<Self, NetError> {
        if let Some(i) = ops.windows(2).position(|w| w[1] < w[0]) {
            return Err(NetError::TraceParse {
                line: i + 2,
                msg: format!(
                    "timestamps must not decrease ({} after {})",
                    ops[i + 1],
                    ops[i]
                ),
            });
        }
        Self::check(&ops, ops.len())?;
        Ok(MahimahiTrace {
            opportunities_ms: ops,
        })
    }

    fn check(ops: &[u64], last_line: usize) -> Result<(), NetError> {
        match ops.last() {
            None => Err(NetError::TraceParse {
                line: 0,
                msg: "the trace has no delivery opportunities".into(),
            }),
            Some(0) => Err(NetError::TraceParse {
                line: last_line,
                msg: "the last timestamp (the period) must be > 0 ms".into(),
            }),
            Some(_) => Ok(()),
        }
    }

    /// Opportunities per period (never 0).
    pub fn len(&self) -> usize {
        self.opportunities_ms.len()
    }

    /// Whether the trace has no opportunities (never true: construction refuses it).
    pub fn is_empty(&self) -> bool {
        self.opportunities_ms.is_empty()
    }

    /// Length of one period, ms (the last timestamp, > 0).
    pub fn period_ms(&self) -> u64 {
        self.opportunities_ms.last().copied().unwrap_or(1).max(1)
    }

    /// Opportunity times within one period, ms.
    pub fn opportunities_ms(&self) -> &[u64] {
        &self.opportunities_ms
    }

    /// Average capacity, bits per second: `len * 1500 * 8` bits per period.
    pub fn mean_rate_bps(&self) -> f64 {
        self.len() as f64 * f64::from(MAHIMAHI_MTU_BYTES) * 8.0 * 1000.0 / self.period_ms() as f64
    }

    /// Time of opportunity number `k` (counting across repetitions from 0), ns; saturates.
    pub fn opportunity_ns(&self, k: u64) -> u64 {
        let n = self.len().max(1) as u64;
        let (rep, i) = (k / n, (k % n) as usize);
        let within = self.opportunities_ms.get(i).copied().unwrap_or(0);
        rep.saturating_mul(self.period_ms())
            .saturating_add(within)
            .saturating_mul(NS_PER_MS)
    }

    /// Number of the first opportunity at or after `t_ns` (see [`Self::opportunity_ns`]).
    pub fn first_at_or_after(&self, t_ns: u64) -> u64 {
        let n = self.len() as u64;
        let period = self.period_ms();
        let t_ms = t_ns.div_ceil(NS_PER_MS);
        let (rep, within) = (t_ms / period, t_ms % period);
        if within == 0 && rep > 0 {
            // The previous repetition's final opportunities (at `period`) fall exactly at t_ms
            // and come first.
            let i = self.opportunities_ms.partition_point(|&o| o < period) as u64;
            return (rep - 1).saturating_mul(n).saturating_add(i);
        }
        let i = self.opportunities_ms.partition_point(|&o| o < within) as u64;
        rep.saturating_mul(n).saturating_add(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_loop() {
        let t = MahimahiTrace::parse("1\n1\n3\n\n4\n").unwrap();
        assert_eq!((t.len(), t.period_ms()), (4, 4));
        let times: Vec<u64> = (0..9).map(|k| t.opportunity_ns(k) / NS_PER_MS).collect();
        assert_eq!(times, [1, 1, 3, 4, 5, 5, 7, 8, 9]);
        assert_eq!(t.first_at_or_after(0), 0);
        assert_eq!(t.first_at_or_after(NS_PER_MS), 0);
        assert_eq!(t.first_at_or_after(NS_PER_MS + 1), 2);
        assert_eq!(t.first_at_or_after(2 * NS_PER_MS), 2);
        assert_eq!(t.first_at_or_after(4 * NS_PER_MS), 3);
        assert_eq!(t.first_at_or_after(4 * NS_PER_MS + 1), 4);
        assert_eq!(t.first_at_or_after(8 * NS_PER_MS), 7);
        // 4 MTUs per 4 ms = 12 Mbit/s.
        assert!((t.mean_rate_bps() - 12e6).abs() < 1e-6);
        assert!((Capacity::Trace(t).mean_rate_bps() - 12e6).abs() < 1e-6);
    }

    #[test]
    fn first_at_or_after_agrees_with_a_scan() {
        // Includes timestamp 0, which coincides with the previous repetition's last one.
        for text in ["0\n0\n2\n5\n5\n", "3\n", "1\n2\n2\n2\n", "0\n7\n"] {
            let t = MahimahiTrace::parse(text).unwrap();
            for t_ns in (0..40 * NS_PER_MS).step_by(250_000) {
                let want = (0..).find(|&k| t.opportunity_ns(k) >= t_ns).unwrap();
                assert_eq!(t.first_at_or_after(t_ns), want, "{text:?} at {t_ns}");
            }
        }
    }

    #[test]
    fn parse_errors_name_the_line() {
        assert_eq!(
            MahimahiTrace::parse("1\nx\n").unwrap_err(),
            NetError::TraceParse {
                line: 2,
                msg: "\"x\" is not a whole number of milliseconds".into()
            }
        );
        assert!(matches!(
            MahimahiTrace::parse("5\n\n3\n"),
            Err(NetError::TraceParse { line: 3, .. })
        ));
        assert!(matches!(
            MahimahiTrace::parse("-1\n"),
            Err(NetError::TraceParse { line: 1, .. })
        ));
        assert!(matches!(
            MahimahiTrace::parse("1.5\n"),
            Err(NetError::TraceParse { line: 1, .. })
        ));
        assert!(matches!(
            MahimahiTrace::parse("\n \n"),
            Err(NetError::TraceParse { line: 0, .. })
        ));
        assert!(matches!(
            MahimahiTrace::parse("0\n\n0\n"),
            Err(NetError::TraceParse { line: 3, .. })
        ));
        assert!(
            MahimahiTrace::parse(" 2\r\n3 \r\n").is_ok(),
            "CRLF and spaces are fine"
        );
        assert!(matches!(
            MahimahiTrace::from_opportunities_ms(vec![1, 3, 2]),
            Err(NetError::TraceParse { line: 3, .. })
        ));
        assert!(MahimahiTrace::from_opportunities_ms(vec![]).is_err());
    }

    #[test]
    fn huge_times_saturate_instead_of_overflowing() {
        let t = MahimahiTrace::parse(&format!("1\n{}\n", u64::MAX / 2)).unwrap();
        assert_eq!(t.opportunity_ns(1), u64::MAX);
        assert_eq!(t.opportunity_ns(u64::MAX), u64::MAX);
        let k = t.first_at_or_after(u64::MAX);
        assert!(t.opportunity_ns(k) == u64::MAX);
    }

    #[test]
    fn tx_time_is_exact_and_rounds_up() {
        assert_eq!(Capacity::tx_time_ns(8_000_000, 1000), 1_000_000);
        assert_eq!(Capacity::tx_time_ns(64_000_000, 1500), 187_500);
        assert_eq!(Capacity::tx_time_ns(3, 1), 2_666_666_667);
        assert_eq!(Capacity::tx_time_ns(10_000_000_000, 1), 1);
        assert_eq!(Capacity::tx_time_ns(1, 0), 0);
        assert_eq!(Capacity::tx_time_ns(0, 1500), u64::MAX);
        assert_eq!(Capacity::tx_time_ns(1, u32::MAX), u64::MAX, "saturates");
    }

    #[test]
    fn serde_round_trip_and_validation() {
        let c: Capacity = serde_json::from_str(r#"{"kind": "rate", "rate_bps": 1000}"#).unwrap();
        assert_eq!(c, Capacity::Rate { rate_bps: 1000 });
        let c: Capacity =
            serde_json::from_str(r#"{"kind": "trace", "opportunities_ms": [1, 2, 2]}"#).unwrap();
        assert_eq!(c, Capacity::Trace(MahimahiTrace::parse("1\n2\n2").unwrap()));
        assert_eq!(
            serde_json::from_str::<Capacity>(&serde_json::to_string(&c).unwrap()).unwrap(),
            c
        );
        assert!(serde_json::from_str::<Capacity>(
            r#"{"kind": "trace", "opportunities_ms": [2, 1]}"#
        )
        .is_err());
        assert!(
            serde_json::from_str::<Capacity>(r#"{"kind": "rate", "rate_bps": 1, "x": 0}"#).is_err()
        );
        assert!(Capacity::Rate { rate_bps: 0 }.validate().is_err());
        assert!(c.validate().is_ok());
    }
}
