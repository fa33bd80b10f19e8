//! How fast a link serialises: a constant rate, or a Mahimahi capacity trace.

use crate::error::NetError;
use crate::NS_PER_MS;

/// Bytes one Mahimahi delivery opportunity carries (one MTU).
pub const MAHIMAHI_MTU_BYTES: u32 = 1500;

/// A link's service capacity.
#[derive(Debug, Clone, PartialEq)]
pub enum Capacity {
    /// Constant rate: a packet of `b` bytes takes ceil(8 b / rate) seconds (integer ns).
    Rate { rate_bps: u64 },
    /// Trace-driven capacity (cellular traces in Mahimahi's format).
    Trace(MahimahiTrace),
}

impl Capacity {
    /// Transmission time of `bytes` at a constant rate, ns (rounded up).
    pub fn tx_time_ns(rate_bps: u64, bytes: u32) -> u64 {
        debug_assert!(rate_bps > 0);
        let num = bytes as u128 * 8 * 1_000_000_000;
        num.div_ceil(rate_bps.max(1) as u128) as u64
    }
}

/// A Mahimahi trace: one line per delivery opportunity of one MTU, each an integer millisecond
/// timestamp (non-decreasing); the trace repeats with a period of its last timestamp, as
/// Mahimahi's link shell does.
#[derive(Debug, Clone, PartialEq)]
pub struct MahimahiTrace {
    /// Opportunity times within one period, ms, sorted.
    opportunities_ms: Vec<u64>,
    /// Length of one period, ms (> 0).
    period_ms: u64,
}

impl MahimahiTrace {
    /// Parse the text of a trace file; blank lines are ignored; errors carry the line number.
    pub fn parse(text: &str) -> Result<Self, NetError> {
        let mut ops = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let t = line.trim();
            if t.is_empty() {
                continue;
            }
            let v: u64 = t.parse().map_err(|_| NetError::TraceParse {
                line: i + 1,
                msg: format!("{t:?} is not a whole number of milliseconds"),
            })?;
            if ops.last().is_some_and(|&last| v < last) {
                return Err(NetError::TraceParse {
                    line: i + 1,
                    msg: format!("timestamps must not decrease ({v} after {})", ops.last().unwrap_or(&0)),
                });
            }
            ops.push(v);
        }
        let period_ms = *ops.last().ok_or(NetError::TraceParse { line: 0, msg: "the trace is empty".into() })?;
        if period_ms == 0 {
            return Err(NetError::TraceParse { line: ops.len(), msg: "the last timestamp must be > 0".into() });
        }
        Ok(MahimahiTrace { opportunities_ms: ops, period_ms })
    }

    /// Opportunities per period.
    pub fn len(&self) -> usize {
        self.opportunities_ms.len()
    }

    /// Whether the trace has no opportunities (never: `parse` refuses it).
    pub fn is_empty(&self) -> bool {
        self.opportunities_ms.is_empty()
    }

    /// Average capacity, bits per second.
    pub fn mean_rate_bps(&self) -> f64 {
        self.len() as f64 * MAHIMAHI_MTU_BYTES as f64 * 8.0 / (self.period_ms as f64 / 1000.0)
    }

    /// Time of opportunity number `k` (counting across periods from 0), ns.
    pub fn opportunity_ns(&self, k: u64) -> u64 {
        let n = self.len() as u64;
        let (loops, i) = (k / n, (k % n) as usize);
        (loops * self.period_ms + self.opportunities_ms[i]) * NS_PER_MS
    }

    /// Index of the first opportunity at or after `t_ns`.
    pub fn first_at_or_after(&self, t_ns: u64) -> u64 {
        let n = self.len() as u64;
        let t_ms = t_ns.div_ceil(NS_PER_MS);
        let loops = t_ms / self.period_ms;
        let within = t_ms - loops * self.period_ms;
        let i = self.opportunities_ms.partition_point(|&o| o < within) as u64;
        loops * n + i
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_loop() {
        let t = MahimahiTrace::parse("1\n1\n3\n\n4\n").unwrap();
        assert_eq!(t.len(), 4);
        assert_eq!(t.opportunity_ns(0), NS_PER_MS);
        assert_eq!(t.opportunity_ns(3), 4 * NS_PER_MS);
        assert_eq!(t.opportunity_ns(4), 5 * NS_PER_MS, "second period starts after 4 ms");
        assert_eq!(t.first_at_or_after(0), 0);
        assert_eq!(t.first_at_or_after(2 * NS_PER_MS), 2);
        assert_eq!(t.first_at_or_after(4 * NS_PER_MS + 1), 4);
        assert!((t.mean_rate_bps() - 4.0 * 12000.0 / 0.004).abs() < 1e-6);
    }

    #[test]
    fn parse_errors_name_the_line() {
        assert_eq!(
            MahimahiTrace::parse("1\nx\n").unwrap_err(),
            NetError::TraceParse { line: 2, msg: "\"x\" is not a whole number of milliseconds".into() }
        );
        assert!(matches!(MahimahiTrace::parse("5\n3\n"), Err(NetError::TraceParse { line: 2, .. })));
        assert!(MahimahiTrace::parse("\n").is_err());
        assert!(MahimahiTrace::parse("0\n0\n").is_err());
    }

    #[test]
    fn tx_time_is_exact_and_rounds_up() {
        assert_eq!(Capacity::tx_time_ns(8_000_000, 1000), 1_000_000);
        assert_eq!(Capacity::tx_time_ns(3, 1), 2_666_666_667);
    }
}
