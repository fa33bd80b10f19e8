//! The default scheduler of the multipath-tcp.org v0.9x kernel (`net/mptcp/mptcp_sched.c`):
//! the available subflow with the lowest smoothed RTT, preferring, for reinjected data, a
//! subflow that has not carried it yet; and upstream Linux 6.18's (`net/mptcp/protocol.c`,
//! `mptcp_subflow_get_send`): the subflow whose queued bytes drain soonest at its average
//! pacing rate ([`linux_pick`]). O(subflows) per decision, no allocation.

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

/// What upstream's scheduler reads of one subflow.
#[derive(Debug, Clone, Copy)]
pub struct LingerCandidate {
    /// `mptcp_subflow_active`: established (joined) and not stale (we take `tp->pf`).
    pub usable: bool,
    /// `sk_wmem_queued`, bytes.
    pub wmem_queued_bytes: u64,
    /// `subflow->avg_pacing_rate`, bytes/s (the socket's pacing rate until the first burst;
    /// 0: passed over, as upstream does a subflow with no rate yet).
    pub avg_pacing_rate: u64,
}

/// `mptcp_subflow_get_send` (6.18, no backup subflows): among `n` subflows the usable one with
/// the shortest linger time, `sk_wmem_queued << 32 / avg_pacing_rate` (the first of equals: the
/// test is `<` in the walk of `conn_list`, where subflows are in the order they joined).
/// Whether it may take data (`sk_stream_memory_free`) is the caller's to ask.
pub fn linux_pick(n: usize, cand: impl Fn(usize) -> LingerCandidate) -> Option<usize> {
    let mut best = None;
    let mut best_linger = u128::MAX;
    for k in 0..n {
        let c = cand(k);
        if !c.usable || c.avg_pacing_rate == 0 {
            continue;
        }
        let linger = (u128::from(c.wmem_queued_bytes) << 32) / u128::from(c.avg_pacing_rate);
        if linger < best_linger {
            best_linger = linger;
            best = Some(k);
        }
    }
    best
}

/// The chosen subflow's average pacing rate once it is given a burst of `burst` bytes while it
/// holds `wmem` at pacing rate `pace` (the end of `mptcp_subflow_get_send`): the mean of the old
/// average over what it holds and the current rate over the burst.
pub fn avg_pacing_after(avg: u64, wmem: u64, pace: u64, burst: u64) -> u64 {
    if burst + wmem == 0 {
        return avg;
    }
    let num = u128::from(avg) * u128::from(wmem) + u128::from(pace) * u128::from(burst);
    (num / u128::from(burst + wmem)) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(wmem: u64, pace: u64) -> LingerCandidate {
        LingerCandidate {
            usable: true,
            wmem_queued_bytes: wmem,
            avg_pacing_rate: pace,
        }
    }

    #[test]
    fn upstream_picks_the_shortest_linger_time() {
        // 100 KB at 10 MB/s (10 ms) against 150 KB at 30 MB/s (5 ms): the second.
        let v = [l(100_000, 10_000_000), l(150_000, 30_000_000)];
        assert_eq!(linux_pick(2, |k| v[k]), Some(1));
        // Equal linger times: the first joined.
        let w = [l(100_000, 10_000_000), l(200_000, 20_000_000)];
        assert_eq!(linux_pick(2, |k| w[k]), Some(0));
        // No rate yet, or not usable: passed over.
        let mut x = [l(0, 0), l(500_000, 1_000_000)];
        assert_eq!(linux_pick(2, |k| x[k]), Some(1));
        x[1].usable = false;
        assert_eq!(linux_pick(2, |k| x[k]), None);
    }

    #[test]
    fn the_average_pacing_rate_weights_the_burst() {
        // Empty: the current rate; holding as much as the burst: the mean.
        assert_eq!(avg_pacing_after(5, 0, 9, 100), 9);
        assert_eq!(avg_pacing_after(10, 100, 30, 100), 20);
    }

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
