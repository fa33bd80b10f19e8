//! Step 1: counting the terminals on the AP from the broadcasts heard.
//!
//! "APを共有する端末間でUDPパケットをブロードキャストし合うことで、同じAPへの同時接続端末数を
//! 把握" (the terminals sharing the AP broadcast UDP packets to one another and so learn how many
//! are connected). A terminal counts itself and every other sender heard within the window.

use std::collections::BTreeMap;

/// The senders one terminal has heard, by id (the simulator's host index, the kernel daemon's
/// IPv4 address). Deterministic: times are given, never read.
#[derive(Debug, Clone)]
pub struct TerminalCounter {
    /// This terminal's own id (always counted, never stored).
    self_id: u64,
    /// A sender counts while `now - last_heard <= window_ns`.
    window_ns: u64,
    /// Last time each other sender was heard, ns.
    last_heard_ns: BTreeMap<u64, u64>,
}

impl TerminalCounter {
    /// A counter for terminal `self_id` that remembers a sender for `window_ns`
    /// (`MiddlewareSpec::count_window_ns`).
    pub fn new(self_id: u64, window_ns: u64) -> Self {
        TerminalCounter {
            self_id,
            window_ns,
            last_heard_ns: BTreeMap::new(),
        }
    }

    /// A broadcast from `id` arrived at `now_ns`. The terminal's own (looped back) is ignored.
    pub fn heard(&mut self, now_ns: u64, id: u64) {
        if id == self.self_id {
            return;
        }
        let t = self.last_heard_ns.entry(id).or_insert(now_ns);
        *t = (*t).max(now_ns);
        // Forget senders long silent, so the map stays as small as the cell.
        let window = self.window_ns;
        self.last_heard_ns
            .retain(|_, &mut t| now_ns.saturating_sub(t) <= window);
    }

    /// Terminals on the AP at `now_ns`: this one and every sender heard within the window.
    pub fn count(&self, now_ns: u64) -> u32 {
        let others = self
            .last_heard_ns
            .values()
            .filter(|&&t| now_ns.saturating_sub(t) <= self.window_ns)
            .count();
        1 + others as u32
    }

    /// The ids counted at `now_ns` besides this terminal, in increasing order.
    pub fn heard_ids(&self, now_ns: u64) -> Vec<u64> {
        self.last_heard_ns
            .iter()
            .filter(|(_, &t)| now_ns.saturating_sub(t) <= self.window_ns)
            .map(|(&id, _)| id)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn counts_itself_and_the_senders_within_the_window() {
        let mut c = TerminalCounter::new(7, 1500 * MS);
        assert_eq!(c.count(0), 1);
        c.heard(10 * MS, 7); // its own broadcast, looped back
        assert_eq!(c.count(10 * MS), 1);
        c.heard(100 * MS, 3);
        c.heard(200 * MS, 4);
        c.heard(300 * MS, 3); // again: still one sender
        assert_eq!(c.count(300 * MS), 3);
        assert_eq!(c.heard_ids(300 * MS), [3, 4]);
        // Sender 4 heard at 200 ms counts until 1700 ms inclusive.
        assert_eq!(c.count(1700 * MS), 3);
        assert_eq!(c.count(1700 * MS + 1), 2);
        assert_eq!(c.count(1800 * MS), 2);
        assert_eq!(c.count(1800 * MS + 1), 1);
    }

    #[test]
    fn periodic_senders_are_found_within_one_period() {
        // Six terminals broadcasting every 500 ms with staggered phases: terminal 0 counts all
        // six once each has sent once, i.e. within one period of the first broadcast.
        let period = 500 * MS;
        let mut c = TerminalCounter::new(0, 3 * period);
        let mut found_at = None;
        for t in (0..10 * period).step_by(MS as usize) {
            for id in 1..6u64 {
                if t % period == id * 83 * MS {
                    c.heard(t, id);
                }
            }
            if found_at.is_none() && c.count(t) == 6 {
                found_at = Some(t);
            }
        }
        assert_eq!(found_at, Some(5 * 83 * MS));
        assert!(found_at.unwrap() < period);
        assert_eq!(c.count(10 * period), 6);
    }

    #[test]
    fn a_late_arrival_does_not_move_time_back() {
        let mut c = TerminalCounter::new(0, 100);
        c.heard(500, 1);
        c.heard(450, 1); // out of order: keeps 500
        assert_eq!(c.count(600), 2);
        assert_eq!(c.count(601), 1);
        // Long-silent senders are forgotten when others are heard.
        c.heard(10_000, 2);
        assert_eq!(c.heard_ids(10_000), [2]);
    }
}
