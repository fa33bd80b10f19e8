//! Spurious-timeout accounting from ground truth (issue 14 part 4): the world sees every copy of
//! every data segment leave its sender, every drop and every arrival, so for each RTO it knows
//! whether the data it retransmitted had been lost, and which retransmissions were not needed.
//!
//! Bookkeeping, per TCP flow slot, sized by the rare events only:
//! - each copy of a segment carries a `CopyTag` in its packet: its copy number for that
//!   sequence (0 the original, k the k-th retransmission) and the RTO episode that sent it (the
//!   1-based RTO id while the sender was in Loss after it; 0 otherwise). Three bytes, which fit
//!   in the packet's padding (a bigger packet cost 3 % more instructions on the S0 bench): the
//!   copy number saturates at 255, the episode is kept modulo 65535 and read back as the latest
//!   RTO with that residue (exact while no copy outlives 65535 later RTOs);
//! - `retx` counts the retransmissions per sequence, `drops` the copies dropped per sequence;
//! - an RTO is **spurious** when the segment it retransmits (snd_una) was not lost: the
//!   receiver already holds it, or a copy sent before the RTO is still queued or in flight and
//!   then arrives (or is still on its way when the run ends). It is **not spurious** when every
//!   earlier copy was dropped. Decided at once when the receiver holds it or no copy is left,
//!   else when the first earlier copy arrives or the last one is dropped;
//! - an **unneeded retransmission** is a copy the receiver got twice: every arrival of data the
//!   receiver already holds counts once, for the episode of the arriving copy, or of the first
//!   copy delivered when that one was an RTO episode's; arrivals with neither are not an RTO's.

use std::collections::HashMap;

/// What a data packet says about its copy (see the module doc).
#[derive(Debug, Clone, Copy, Default)]
#[repr(C, packed)] // 3 bytes, alignment 1: it fits in the padding after `Packet::hop`
pub(super) struct CopyTag {
    /// 0 for the original transmission, k for the k-th retransmission of that sequence
    /// (saturating).
    copy: u8,
    /// The RTO episode that sent it: its 1-based id, modulo 65535, in 1..=65535; 0 for none.
    episode: u16,
}

/// Episode ids in a tag: 1..=`EPISODE_MOD`.
const EPISODE_MOD: u32 = u16::MAX as u32;

impl CopyTag {
    fn new(copy: u16, episode: u32) -> CopyTag {
        CopyTag {
            copy: copy.min(u8::MAX as u16) as u8,
            episode: if episode == 0 {
                0
            } else {
                ((episode - 1) % EPISODE_MOD + 1) as u16
            },
        }
    }

    /// The 1-based id of the RTO episode that sent it (0 for none), given `n` RTOs so far: the
    /// latest id <= n with this residue.
    fn episode(self, n: usize) -> u32 {
        let e = self.episode as u32;
        let n = n as u32;
        if e == 0 || n < e {
            return 0;
        }
        n - (n - e) % EPISODE_MOD
    }
}

/// An RTO whose head segment's earlier copies are still in the network.
#[derive(Debug, Clone, Copy)]
struct Pending {
    /// Index into `facts`.
    rto: usize,
    seq: u64,
    /// Copies sent before the RTO: those numbered below this.
    old_copies: u16,
    /// Earlier copies neither dropped nor delivered yet.
    left: u16,
}

/// What the world knows of one RTO.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct RtoFacts {
    /// Spurious (true), not (false), undecided (None: an earlier copy is still on its way).
    pub spurious: Option<bool>,
    /// Copies sent in its episode (or first delivered from it) that the receiver got twice.
    pub unneeded_pkts: u32,
}

/// The ground-truth record of one TCP flow slot.
#[derive(Debug, Default)]
pub(super) struct StoBook {
    retx: HashMap<u64, u16>,
    drops: HashMap<u64, u16>,
    /// The episode of the first delivered copy, for sequences first delivered by an RTO
    /// episode's retransmission.
    first_episode: HashMap<u64, u32>,
    pending: Vec<Pending>,
    pub facts: Vec<RtoFacts>,
}

impl StoBook {
    /// The tag of a copy leaving the sender: its copy number (counting it) and its episode.
    pub fn tag(&mut self, seq: u64, retrans: bool, episode: u32) -> CopyTag {
        if !retrans {
            return CopyTag::default();
        }
        let n = self.retx.entry(seq).or_insert(0);
        *n = n.saturating_add(1);
        CopyTag::new(*n, episode)
    }

    /// A new RTO retransmits `seq` (called before its retransmission is tagged).
    pub fn on_rto(&mut self, seq: u64, receiver_holds: bool) {
        let rto = self.facts.len();
        self.facts.push(RtoFacts::default());
        if receiver_holds {
            self.facts[rto].spurious = Some(true);
            return;
        }
        let old_copies = 1 + self.retx.get(&seq).copied().unwrap_or(0);
        let dropped = self.drops.get(&seq).copied().unwrap_or(0);
        let left = old_copies.saturating_sub(dropped);
        if left == 0 {
            self.facts[rto].spurious = Some(false);
        } else {
            self.pending.push(Pending {
                rto,
                seq,
                old_copies,
                left,
            });
        }
    }

    /// A copy of `seq` was dropped in the network.
    pub fn on_drop(&mut self, seq: u64, tag: CopyTag) {
        let n = self.drops.entry(seq).or_insert(0);
        *n = n.saturating_add(1);
        if self.pending.is_empty() {
            return;
        }
        let facts = &mut self.facts;
        self.pending.retain_mut(|p| {
            if p.seq != seq || tag.copy as u16 >= p.old_copies {
                return true;
            }
            p.left -= 1;
            if p.left == 0 {
                facts[p.rto].spurious = Some(false);
                return false;
            }
            true
        });
    }

    /// A copy of `seq` reached the receiver; `dup`: the receiver already held it.
    #[inline]
    pub fn on_arrival(&mut self, seq: u64, tag: CopyTag, dup: bool) {
        // The common case, a first arrival of an original with nothing pending, costs nothing.
        if dup || tag.episode != 0 || !self.pending.is_empty() {
            self.on_arrival_slow(seq, tag, dup);
        }
    }

    #[cold]
    #[inline(never)]
    fn on_arrival_slow(&mut self, seq: u64, tag: CopyTag, dup: bool) {
        if !self.pending.is_empty() {
            let facts = &mut self.facts;
            self.pending.retain(|p| {
                if p.seq == seq && (tag.copy as u16) < p.old_copies {
                    facts[p.rto].spurious = Some(true);
                    return false;
                }
                true
            });
        }
        let episode = tag.episode(self.facts.len());
        if dup {
            let ep = if episode > 0 {
                episode
            } else if self.first_episode.is_empty() {
                0
            } else {
                self.first_episode.get(&seq).copied().unwrap_or(0)
            };
            if ep > 0 {
                if let Some(f) = self.facts.get_mut(ep as usize - 1) {
                    f.unneeded_pkts += 1;
                }
            }
        } else if episode > 0 {
            self.first_episode.insert(seq, episode);
        }
    }

    /// At the end of the run: an earlier copy still on its way was not lost.
    pub fn finish(&mut self) {
        for p in self.pending.drain(..) {
            self.facts[p.rto].spurious = Some(true);
        }
    }
}

/// A flow's STO counters in the summary.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct StoCounts {
    /// RTOs that were spurious (ground truth).
    pub sto_count: u64,
    /// Of those, the ones a detector proved spurious (an undo ended their episode).
    pub sto_detected: u64,
    /// Retransmissions of spurious RTOs' episodes the receiver got twice.
    pub spurious_retrans_pkts: u64,
}

impl std::ops::AddAssign for StoCounts {
    fn add_assign(&mut self, o: StoCounts) {
        self.sto_count += o.sto_count;
        self.sto_detected += o.sto_detected;
        self.spurious_retrans_pkts += o.spurious_retrans_pkts;
    }
}

impl super::FlowSlot {
    /// Close the books at the end of the run (once).
    pub(super) fn sto_finish(&mut self) {
        self.sender.sto_finish();
        self.sto.finish();
    }

    /// Its STO counters.
    pub(super) fn sto_counts(&self) -> StoCounts {
        let mut c = StoCounts::default();
        for (rec, f) in self.sender.sto.rtos.iter().zip(&self.sto.facts) {
            if f.spurious == Some(true) {
                c.sto_count += 1;
                c.sto_detected += rec.detector.is_some() as u64;
                c.spurious_retrans_pkts += f.unneeded_pkts as u64;
            }
        }
        c
    }

    /// One events row per RTO, kind `sto`, at the RTO's time, written when the run ends (when
    /// every fact is final): detail `seq=<n> spurious=<yes|no> detected=<frto|eifel|dsack|
    /// no_retrans|none> unneeded_pkts=<n> undetected=<reason|-> frto_abort=<why|->`, the
    /// reason (for an undetected spurious RTO only) one of `fin`, `no_window`, `dupack`,
    /// `timestamps_off`, `detection_off`, `run_end`, `other`, and `frto_abort` why F-RTO gave
    /// up on it (`fin`, `no_window`, `dupack`) even when another detector then proved it
    /// (the paper's Table 4 counts F-RTO's failures) (docs/scenario.md).
    pub(super) fn sto_rows(&self, events: &mut crate::trace::EventTrace) {
        for (rec, f) in self.sender.sto.rtos.iter().zip(&self.sto.facts) {
            let spurious = f.spurious == Some(true);
            let why = self.sto_undetected_reason(rec, f);
            let mut detail = format!(
                "seq={} spurious={} detected={} unneeded_pkts={} undetected={why} frto_abort={}",
                rec.seq,
                if spurious { "yes" } else { "no" },
                rec.detector.unwrap_or("none"),
                f.unneeded_pkts,
                rec.frto_abort.unwrap_or("-")
            );
            if let Some((_, k)) = self.conn {
                detail.push_str(&format!(" subflow={k}"));
            }
            if let Some(c) = self.seq {
                detail.push_str(&format!(" conn={}", c.k));
            }
            events.push(rec.t_ns, self.id as i32, "sto", detail);
        }
    }

    /// Why a spurious RTO went undetected (the `sto` row's `undetected`), `-` when it was not
    /// spurious or was detected.
    fn sto_undetected_reason(
        &self,
        rec: &crate::tcp::sto::RtoRecord,
        f: &RtoFacts,
    ) -> &'static str {
        if f.spurious != Some(true) || rec.detector.is_some() {
            "-"
        } else if let Some(off) = self.sender.sto_detection_off() {
            off
        } else if let Some(abort) = rec.frto_abort {
            abort
        } else if rec.open {
            "run_end"
        } else {
            "other"
        }
    }

    /// Its undetected spurious RTOs by reason (a workload connection's summary row).
    pub(super) fn sto_undetected(&self) -> std::collections::BTreeMap<&'static str, u64> {
        let mut m = std::collections::BTreeMap::new();
        for (rec, f) in self.sender.sto.rtos.iter().zip(&self.sto.facts) {
            let why = self.sto_undetected_reason(rec, f);
            if why != "-" {
                *m.entry(why).or_insert(0) += 1;
            }
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn held_data_makes_the_rto_spurious_and_its_copy_unneeded() {
        let mut b = StoBook::default();
        b.on_rto(0, true);
        let t = b.tag(0, true, 1);
        b.on_arrival(0, t, true);
        assert_eq!(b.facts[0].spurious, Some(true));
        assert_eq!(b.facts[0].unneeded_pkts, 1);
    }

    #[test]
    fn a_dropped_original_makes_it_genuine() {
        let mut b = StoBook::default();
        b.on_drop(100, CopyTag::default());
        b.on_rto(100, false);
        assert_eq!(b.facts[0].spurious, Some(false));
    }

    #[test]
    fn episodes_read_back_modulo() {
        for (id, n) in [
            (1, 1),
            (7, 9),
            (65535, 65535),
            (65536, 65540),
            (200_000, 200_003),
        ] {
            assert_eq!(CopyTag::new(1, id).episode(n), id, "id {id} n {n}");
        }
        assert_eq!(CopyTag::new(0, 0).episode(5), 0);
        assert_eq!(CopyTag::new(300, 1).copy, 255);
    }

    #[test]
    fn an_original_in_flight_decides_when_it_arrives_or_is_dropped() {
        let mut b = StoBook::default();
        b.on_rto(0, false);
        let t = b.tag(0, true, 1);
        // The retransmission arrives first; the original, still queued, arrives after it.
        b.on_arrival(0, t, false);
        assert_eq!(b.facts[0].spurious, None);
        b.on_arrival(0, CopyTag::default(), true);
        assert_eq!(b.facts[0].spurious, Some(true));
        assert_eq!(
            b.facts[0].unneeded_pkts, 1,
            "first delivered by the episode"
        );

        let mut b = StoBook::default();
        b.on_rto(0, false);
        let t = b.tag(0, true, 1);
        b.on_drop(0, t); // the new copy does not decide
        assert_eq!(b.facts[0].spurious, None);
        b.on_drop(0, CopyTag::default());
        assert_eq!(b.facts[0].spurious, Some(false));
    }
}

#[cfg(test)]
mod size {
    /// The tag fits in the packet's padding: a packet is as big as before it.
    #[test]
    fn packets_did_not_grow() {
        assert_eq!(std::mem::size_of::<super::super::Packet>(), 120);
    }
}
