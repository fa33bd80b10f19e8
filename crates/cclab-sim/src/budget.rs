//! A run's budget (issue 18): at most `sim.max_events` events and, if set, `sim.max_wall_s`
//! seconds of wall-clock time. A run that reaches either stops with `BudgetExceeded`, naming the
//! field, the budget and how far it got in simulated time. Wall time decides only whether a run
//! stops: a run within its budget is bit-identical whatever the budget.

use std::time::{Duration, Instant};

/// The default `sim.max_events`: 10^9, 500 times the events of the largest shipped scenario or
/// study run (2.0 million: 30 CUBIC flows over a 3-bottleneck parking lot for 100 s;
/// docs/scenario.md, "Budget"), and some minutes of wall time. Python's
/// `cclab.scenario.DEFAULT_MAX_EVENTS` is the same number.
pub const DEFAULT_MAX_EVENTS: u64 = 1_000_000_000;

/// Events between two looks at the clock (each costs a few tens of nanoseconds).
const WALL_CHECK_EVERY: u64 = 1024;

/// A run stopped at its budget. Displayed as `field: message`, like a `ConfigError`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BudgetExceeded {
    /// `sim.max_events` events were processed before the end of the run.
    #[error(
        "sim.max_events: {max_events} events reached at t = {} s of {} s; raise \
         sim.max_events or shorten duration_s",
        secs(*t_ns), secs(*duration_ns)
    )]
    Events {
        max_events: u64,
        t_ns: u64,
        duration_ns: u64,
    },
    /// `sim.max_wall_s` seconds of wall-clock time passed before the end of the run.
    #[error(
        "sim.max_wall_s: {max_wall_s} s of wall-clock time reached at t = {} s of {} s \
         ({events} events); raise sim.max_wall_s or shorten duration_s",
        secs(*t_ns), secs(*duration_ns)
    )]
    WallTime {
        max_wall_s: f64,
        events: u64,
        t_ns: u64,
        duration_ns: u64,
    },
}

impl BudgetExceeded {
    /// The scenario field whose budget was reached.
    pub fn field(&self) -> &'static str {
        match self {
            BudgetExceeded::Events { .. } => "sim.max_events",
            BudgetExceeded::WallTime { .. } => "sim.max_wall_s",
        }
    }

    /// What happened, without the field (the message of a `ConfigError` for it).
    pub fn message(&self) -> String {
        let s = self.to_string();
        s.strip_prefix(&format!("{}: ", self.field()))
            .map(str::to_string)
            .unwrap_or(s)
    }
}

/// Simulated ns as seconds for a message: at most three decimals, no trailing zeros.
fn secs(ns: u64) -> String {
    let s = format!("{:.3}", ns as f64 * 1e-9);
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

/// The budget of one run, checked after every event.
#[derive(Debug, Clone)]
pub struct Budget {
    max_events: u64,
    max_wall_s: Option<f64>,
    deadline: Option<Instant>,
    duration_ns: u64,
}

impl Budget {
    /// A budget starting now.
    pub fn start(max_events: u64, max_wall_s: Option<f64>, duration_ns: u64) -> Self {
        Budget {
            max_events,
            max_wall_s,
            deadline: max_wall_s.map(|s| Instant::now() + Duration::from_secs_f64(s)),
            duration_ns,
        }
    }

    /// Whether the run may go on after `events` events, the latest at `t_ns` (`more`: whether
    /// another event is due before the end: a run that needs exactly `max_events` is within
    /// its budget).
    pub fn check(&self, events: u64, t_ns: u64, more: bool) -> Result<(), BudgetExceeded> {
        if events >= self.max_events && more {
            return Err(BudgetExceeded::Events {
                max_events: self.max_events,
                t_ns,
                duration_ns: self.duration_ns,
            });
        }
        if let (Some(deadline), Some(max_wall_s)) = (self.deadline, self.max_wall_s) {
            if events.is_multiple_of(WALL_CHECK_EVERY) && more && Instant::now() >= deadline {
                return Err(BudgetExceeded::WallTime {
                    max_wall_s,
                    events,
                    t_ns,
                    duration_ns: self.duration_ns,
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_event_budget_counts_only_events_still_due() {
        let b = Budget::start(10, None, 5_000_000_000);
        assert!(b.check(9, 1, true).is_ok());
        assert!(b.check(10, 1, false).is_ok());
        let e = b.check(10, 3_200_000_000, true).unwrap_err();
        assert_eq!(e.field(), "sim.max_events");
        assert_eq!(
            e.to_string(),
            "sim.max_events: 10 events reached at t = 3.2 s of 5 s; raise sim.max_events or \
             shorten duration_s"
        );
        assert!(e.message().starts_with("10 events reached"));
    }

    #[test]
    fn the_wall_budget_names_its_field() {
        let b = Budget::start(u64::MAX, Some(1e-9), 1_000_000_000);
        std::thread::sleep(Duration::from_millis(1));
        assert!(
            b.check(1023, 1, true).is_ok(),
            "the clock is read every 1024 events"
        );
        let e = b.check(2048, 250_000_000, true).unwrap_err();
        assert_eq!(e.field(), "sim.max_wall_s");
        assert!(
            e.message().contains("at t = 0.25 s of 1 s (2048 events)"),
            "{e}"
        );
    }
}
