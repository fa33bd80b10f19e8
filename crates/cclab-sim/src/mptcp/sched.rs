//! The default scheduler of the multipath-tcp.org v0.9x kernel (`net/mptcp/mptcp_sched.c`):
//! the available subflow with the lowest smoothed RTT, preferring, for reinjected data, a
//! subflow that has not carried it yet. O(subflows) per decision, no allocation.

use crate::cc::CaState;
use crate::tcp::sender::Sender;

/// What the scheduler reads of one subflow.
#[derive(Debug, Clone, Copy)]
pub struct Candidate {
    /// `!mptcp_is_def_unavailable`: established (joined) and not in potential failure
    /// (`tp->pf`, set by an RTO, cleared when the subflow's ACKs move again).
    pub usable: bool,
    /// `mptcp_is_temp_unavailable` (see [`temp_unavailable`]).
    pub temp_unavailable: bool,
    /// `srtt_us` (Linux units: us << 3; 0 before the first sample, which then wins, as in
    /// `get_subflow_from_selectors`'s `tp->srtt_us < min_srtt`).
    pub srtt_us: u32,
}

/// `mptcp_is_temp_unavailable` for a subflow whose send queue holds nothing unsent (we give a
/// subflow only what it sends at once, so `write_seq == snd_nxt` and the queued-data and
/// zero-window tests of v0.9x are moot):
/// - in Loss after an RTO (with SACK; without it, until snd_una reaches high_seq);
/// - no room in cwnd (`tcp_packets_in_flight >= snd_cwnd`);
/// - TSQ throttled (the v0.9x versions before the write queue rework test
///   `TSQ_THROTTLED` here: "when TSQ gets cleared the subflow becomes eligible again").
pub fn temp_unavailable(s: &Sender) -> bool {
    let tp = &s.tp;
    if tp.ca_state == CaState::Loss && (s.cfg.sack || tp.snd_una != tp.high_seq) {
        return true;
    }
    if tp.packets_in_flight() >= tp.snd_cwnd {
        return true;
    }
    s.below.throttled
}

/// `get_available_subflow` (no backup subflows, no DATA_FIN): among `n` subflows
/// (`cand(k)`; `skip` a bit mask of subflows not to consider now), the usable, available one
/// with the lowest srtt (the first on ties). `path_mask` (bit k: subflow k already carried
/// this data, a reinjection's `TCP_SKB_CB(skb)->path_mask`): an available subflow outside it
/// is preferred (`get_subflow_from_selectors`' "unused" subflows); when none is, v0.9x finds
/// no backup subflow, clears the path mask and selects again, so the best available subflow
/// of all is taken, the one the data went on included. With one subflow, it is taken if
/// available (v0.9x bypasses the scheduler).
pub fn get_available_subflow(
    n: usize,
    cand: impl Fn(usize) -> Candidate,
    skip: u32,
    path_mask: u32,
) -> Option<usize> {
    if n == 1 {
        let c = cand(0);
        return (skip & 1 == 0 && c.usable && !c.temp_unavailable).then_some(0);
    }
    let mut best: Option<usize> = None;
    let mut min_srtt = u32::MAX;
    let mut found_unused = false;
    let mut found_unused_una = false;
    for k in 0..n {
        if skip & (1 << k) != 0 {
            continue;
        }
        let unused = path_mask & (1 << k) == 0;
        if !unused && found_unused {
            continue;
        }
        let c = cand(k);
        if !c.usable {
            continue;
        }
        if c.temp_unavailable {
            found_unused_una |= unused;
            continue;
        }
        if unused && !found_unused {
            // The first unused subflow: forget a used one chosen so far.
            min_srtt = u32::MAX;
            best = None;
            found_unused = true;
        }
        if c.srtt_us < min_srtt {
            min_srtt = c.srtt_us;
            best = Some(k);
        }
    }
    if best.is_none() && found_unused_una {
        return None;
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(srtt_us: u32, avail: bool) -> Candidate {
        Candidate {
            usable: true,
            temp_unavailable: !avail,
            srtt_us,
        }
    }

    #[test]
    fn lowest_srtt_among_available() {
        let v = [c(800, true), c(400, true), c(200, false)];
        assert_eq!(get_available_subflow(3, |k| v[k], 0, 0), Some(1));
        // Skipped (it could not send): the next best.
        assert_eq!(get_available_subflow(3, |k| v[k], 0b010, 0), Some(0));
        assert_eq!(get_available_subflow(3, |k| v[k], 0b011, 0), None);
    }

    #[test]
    fn reinjected_data_prefers_a_subflow_it_has_not_been_on() {
        let v = [c(100, true), c(900, true)];
        assert_eq!(get_available_subflow(2, |k| v[k], 0, 0b01), Some(1));
        // The unused one is busy: the path mask is cleared, the best of all is taken.
        let w = [c(100, true), c(900, false)];
        assert_eq!(get_available_subflow(2, |k| w[k], 0, 0b01), Some(0));
        // Every subflow has carried it: the best of them.
        assert_eq!(get_available_subflow(2, |k| v[k], 0, 0b11), Some(0));
    }

    #[test]
    fn a_subflow_in_potential_failure_is_never_chosen() {
        let mut v = [c(100, true), c(900, true)];
        v[0].usable = false;
        assert_eq!(get_available_subflow(2, |k| v[k], 0, 0), Some(1));
    }
}
