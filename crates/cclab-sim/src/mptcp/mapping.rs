//! The data sequence mapping of one subflow: which bytes of the connection's data each of its
//! subflow sequence ranges carries (the DSS option's mapping, RFC 8684 section 3.3.1). The
//! sender records a mapping when it gives data to the subflow (`mptcp_write_xmit` ->
//! `mptcp_skb_entail`, which stamps `TCP_SKB_CB(skb)->data_seq` on the subflow's skb); the
//! receiver reads the same table where Linux reads the DSS option of each segment
//! (`mptcp_input.c`, `mptcp_detect_mapping` / `mptcp_prepare_skb`).

use std::collections::VecDeque;

/// One mapping: `len` bytes from subflow byte `sub_seq` carry data bytes from `data_seq`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mapping {
    /// First subflow sequence byte (the subflow's own space, from 0).
    pub sub_seq: u64,
    /// First data sequence byte (the connection's 64-bit space, from 0).
    pub data_seq: u64,
    /// Bytes.
    pub len: u64,
}

impl Mapping {
    /// One past the last subflow byte.
    pub fn sub_end(&self) -> u64 {
        self.sub_seq + self.len
    }
}

/// A subflow's mappings in subflow sequence order, contiguous (the subflow's bytes are all
/// mapped: it only sends what the connection gave it). Entries are dropped once the subflow's
/// cumulative ACK passes them (its receiver has then read them).
#[derive(Debug, Clone, Default)]
pub struct SubflowMap {
    entries: VecDeque<Mapping>,
}

impl SubflowMap {
    /// Map `len` subflow bytes from `sub_seq` to data from `data_seq`; extends the last entry
    /// when both sequences continue it (the usual case: new data, in order).
    pub fn push(&mut self, sub_seq: u64, data_seq: u64, len: u64) {
        if len == 0 {
            return;
        }
        if let Some(last) = self.entries.back_mut() {
            debug_assert_eq!(last.sub_end(), sub_seq, "subflow bytes are mapped in order");
            if last.data_seq + last.len == data_seq {
                last.len += len;
                return;
            }
        }
        self.entries.push_back(Mapping {
            sub_seq,
            data_seq,
            len,
        });
    }

    /// Forget the mappings wholly below `sub_una` (acked at the subflow level).
    pub fn prune(&mut self, sub_una: u64) {
        while self.entries.front().is_some_and(|m| m.sub_end() <= sub_una) {
            self.entries.pop_front();
        }
    }

    /// Call `f(data_start, data_end)` for each data range the subflow bytes
    /// `[sub_start, sub_end)` carry, in subflow order.
    pub fn data_ranges(&self, sub_start: u64, sub_end: u64, mut f: impl FnMut(u64, u64)) {
        // The first entry that ends after sub_start (entries are sorted and contiguous).
        let i = self.entries.partition_point(|m| m.sub_end() <= sub_start);
        for m in self.entries.range(i..) {
            if m.sub_seq >= sub_end {
                break;
            }
            let a = sub_start.max(m.sub_seq);
            let b = sub_end.min(m.sub_end());
            f(m.data_seq + (a - m.sub_seq), m.data_seq + (b - m.sub_seq));
        }
    }

    /// Mappings held.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether none is held.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranges(m: &SubflowMap, a: u64, b: u64) -> Vec<(u64, u64)> {
        let mut v = Vec::new();
        m.data_ranges(a, b, |x, y| v.push((x, y)));
        v
    }

    #[test]
    fn contiguous_data_extends_one_entry() {
        let mut m = SubflowMap::default();
        m.push(0, 100, 10);
        m.push(10, 110, 5);
        assert_eq!(m.len(), 1);
        assert_eq!(ranges(&m, 3, 12), vec![(103, 112)]);
    }

    #[test]
    fn a_jump_in_data_sequence_starts_an_entry_and_ranges_split_there() {
        let mut m = SubflowMap::default();
        m.push(0, 100, 10);
        m.push(10, 50, 10); // reinjected data
        m.push(20, 110, 10);
        assert_eq!(m.len(), 3);
        assert_eq!(ranges(&m, 5, 25), vec![(105, 110), (50, 60), (110, 115)]);
        m.prune(10);
        assert_eq!(m.len(), 2);
        assert_eq!(ranges(&m, 10, 30), vec![(50, 60), (110, 120)]);
    }
}
