//! The emulator's clock: CLOCK_MONOTONIC, as ns since start (the models' `now`).

use nix::time::{clock_gettime, ClockId};
use std::time::Duration;

/// Monotonic time since the emulator started.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    start: Duration,
}

fn mono() -> Duration {
    // CLOCK_MONOTONIC cannot fail on Linux; a zero would only make `now` stand still.
    clock_gettime(ClockId::CLOCK_MONOTONIC)
        .map(Duration::from)
        .unwrap_or_default()
}

impl Clock {
    /// Start counting now.
    pub fn start() -> Clock {
        Clock { start: mono() }
    }

    /// ns since start.
    pub fn now_ns(&self) -> u64 {
        mono().saturating_sub(self.start).as_nanos() as u64
    }

    /// The absolute CLOCK_MONOTONIC time of `t_ns` since start (for an absolute timerfd).
    pub fn deadline(&self, t_ns: u64) -> Duration {
        self.start + Duration::from_nanos(t_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_moves_forward_from_zero() {
        let c = Clock::start();
        let a = c.now_ns();
        std::thread::sleep(Duration::from_millis(2));
        let b = c.now_ns();
        assert!(a < 1_000_000_000 && b >= a + 2_000_000, "{a} {b}");
        assert_eq!(c.deadline(5) - c.deadline(0), Duration::from_nanos(5));
    }
}
