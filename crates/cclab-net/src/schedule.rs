//! Timed events on a link: outages (the link transmits nothing) and delay spikes (packets
//! leaving then take longer to arrive). The config types are plain lists; the link normalises
//! them once into sorted, disjoint intervals and walks them with a cursor, because the times it
//! asks about never decrease. A lookup therefore costs O(1) amortised, not a scan of the list.

use serde::{Deserialize, Serialize};

/// The link transmits nothing in `[start_ns, start_ns + duration_ns)`; packets wait in the
/// queue (and count towards its limit). Overlapping outages merge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Outage {
    /// When the outage begins, ns.
    pub start_ns: u64,
    /// How long it lasts, ns.
    pub duration_ns: u64,
}

impl Outage {
    /// First instant after the outage, ns (saturating).
    pub fn end_ns(&self) -> u64 {
        self.start_ns.saturating_add(self.duration_ns)
    }
}

/// Packets whose transmission ends in `[start_ns, start_ns + duration_ns)` take
/// `extra_delay_ns` longer to reach the far end (a radio stall, a handover); later packets never
/// overtake them. Overlapping spikes add up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DelaySpike {
    /// When the spike window begins, ns.
    pub start_ns: u64,
    /// How long the window lasts, ns.
    pub duration_ns: u64,
    /// Delay added to packets departing in the window, ns.
    pub extra_delay_ns: u64,
}

/// Outages as sorted, disjoint, non-empty `[start, end)` intervals with a forward cursor.
#[derive(Debug, Clone, Default)]
pub(crate) struct OutageSchedule {
    intervals: Vec<(u64, u64)>,
    /// Index of the first interval that may still matter (all before it end at or before the
    /// last time asked about).
    next: usize,
    /// Last time asked about (queries must not go back).
    last_query: u64,
}

impl OutageSchedule {
    pub(crate) fn new(outages: &[Outage]) -> Self {
        let mut raw: Vec<(u64, u64)> = outages
            .iter()
            .filter(|o| o.duration_ns > 0)
            .map(|o| (o.start_ns, o.end_ns()))
            .collect();
        raw.sort_unstable();
        let mut intervals: Vec<(u64, u64)> = Vec::with_capacity(raw.len());
        for (s, e) in raw {
            match intervals.last_mut() {
                Some(last) if s <= last.1 => last.1 = last.1.max(e),
                _ => intervals.push((s, e)),
            }
        }
        OutageSchedule {
            intervals,
            next: 0,
            last_query: 0,
        }
    }

    /// Earliest start >= `t` of a transmission lasting `len` ns that overlaps no outage (a
    /// transmission that would overlap one starts when it ends). With `len` 0: the first
    /// instant >= `t` outside every outage. `t` must not decrease from one call to the next.
    pub(crate) fn fit(&mut self, mut t: u64, len: u64) -> u64 {
        debug_assert!(t >= self.last_query, "outage queries went back in time");
        self.last_query = t;
        while let Some(&(s, e)) = self.intervals.get(self.next) {
            if e <= t {
                self.next += 1;
            } else if t >= s || t.saturating_add(len) > s {
                t = e;
                self.next += 1;
            } else {
                break;
            }
        }
        t
    }
}

/// Delay spikes as sorted, disjoint `[start, end)` segments carrying the summed extra delay.
#[derive(Debug, Clone, Default)]
pub(crate) struct SpikeSchedule {
    segments: Vec<(u64, u64, u64)>,
    next: usize,
    last_query: u64,
}

impl SpikeSchedule {
    pub(crate) fn new(spikes: &[DelaySpike]) -> Self {
        // Sweep over start (+extra) and end (-extra) points; sums in i128 cannot overflow.
        let mut points: Vec<(u64, i128)> = Vec::with_capacity(spikes.len() * 2);
        for s in spikes
            .iter()
            .filter(|s| s.duration_ns > 0 && s.extra_delay_ns > 0)
        {
            points.push((s.start_ns, i128::from(s.extra_delay_ns)));
            points.push((
                s.start_ns.saturating_add(s.duration_ns),
                -i128::from(s.extra_delay_ns),
            ));
        }
        points.sort_unstable();
        let mut segments = Vec::new();
        let mut level: i128 = 0;
        for (i, &(t, delta)) in points.iter().enumerate() {
            level += delta;
            match points.get(i + 1) {
                Some(&(t_next, _)) if t_next > t && level > 0 => {
                    segments.push((t, t_next, u64::try_from(level).unwrap_or(u64::MAX)));
                }
                _ => {}
            }
        }
        debug_assert_eq!(level, 0);
        SpikeSchedule {
            segments,
            next: 0,
            last_query: 0,
        }
    }

    /// Extra delay of a packet whose transmission ends at `t`; `t` must not decrease from one
    /// call to the next.
    pub(crate) fn extra_at(&mut self, t: u64) -> u64 {
        debug_assert!(t >= self.last_query, "spike queries went back in time");
        self.last_query = t;
        while let Some(&(s, e, extra)) = self.segments.get(self.next) {
            if e <= t {
                self.next += 1;
            } else {
                return if s <= t { extra } else { 0 };
            }
        }
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outages(v: &[(u64, u64)]) -> OutageSchedule {
        let list: Vec<Outage> = v
            .iter()
            .map(|&(s, d)| Outage {
                start_ns: s,
                duration_ns: d,
            })
            .collect();
        OutageSchedule::new(&list)
    }

    #[test]
    fn outages_merge_and_are_skipped() {
        // [10,20) and [15,30) merge; [30,35) touches and merges too; [50,50) is empty.
        let mut o = outages(&[(30, 5), (10, 10), (15, 15), (50, 0)]);
        assert_eq!(o.intervals, vec![(10, 35)]);
        assert_eq!(o.fit(0, 10), 0, "fits exactly before the outage");
        assert_eq!(o.fit(1, 10), 35, "would overlap: starts after it");
        assert_eq!(o.fit(40, 0), 40);
        assert_eq!(o.fit(u64::MAX, 5), u64::MAX);
    }

    #[test]
    fn a_transmission_skips_every_gap_too_small_for_it() {
        let mut o = outages(&[(10, 10), (25, 10), (40, 10)]);
        assert_eq!(
            o.fit(5, 6),
            50,
            "gaps [20,25) and [35,40) are too short for 6 ns"
        );
        let mut o = outages(&[(10, 10), (25, 10)]);
        assert_eq!(o.fit(12, 0), 20);
        assert_eq!(o.fit(20, 5), 20);
        assert_eq!(o.fit(30, 0), 35);
    }

    #[test]
    fn never_ending_outage_saturates() {
        let mut o = outages(&[(10, u64::MAX)]);
        assert_eq!(o.fit(10, 1), u64::MAX);
    }

    #[test]
    fn spikes_sum_where_they_overlap() {
        let sp = |s, d, x| DelaySpike {
            start_ns: s,
            duration_ns: d,
            extra_delay_ns: x,
        };
        let mut s = SpikeSchedule::new(&[
            sp(10, 10, 100),
            sp(15, 10, 1000),
            sp(40, 0, 7),
            sp(50, 5, 0),
        ]);
        let got: Vec<u64> = [0, 9, 10, 14, 15, 19, 20, 24, 25, 40, 60]
            .iter()
            .map(|&t| s.extra_at(t))
            .collect();
        assert_eq!(got, [0, 0, 100, 100, 1100, 1100, 1000, 1000, 0, 0, 0]);
        let mut s = SpikeSchedule::new(&[sp(0, u64::MAX, u64::MAX), sp(0, 5, u64::MAX)]);
        assert_eq!(s.extra_at(1), u64::MAX, "saturates");
    }
}
