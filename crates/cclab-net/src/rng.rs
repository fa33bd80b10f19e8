//! Per-element random streams. Every random element (a link direction's loss process, ...) draws
//! from its own generator seeded from (run seed, element name), so adding or removing an element
//! never changes the draws of another, and the same seed gives the same run on every platform
//! and Rust version (the derivation below uses only fixed integer arithmetic, not std's hasher).

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// FNV-1a, 64-bit: a stable hash of the element name.
fn fnv1a(s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// One step of splitmix64 (Steele, Lea, Flood): spreads nearby inputs over the whole range.
fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The seed of `element`'s stream in a run seeded with `seed`: the run seed mixed with the
/// FNV-1a hash of the name through splitmix64. Depends on nothing but its two arguments.
pub fn stream_seed(seed: u64, element: &str) -> u64 {
    splitmix64(seed ^ splitmix64(fnv1a(element)))
}

/// `element`'s random stream in a run seeded with `seed` (ChaCha8, seeded from
/// [`stream_seed`]; `rand_chacha` documents its output as portable).
pub fn stream(seed: u64, element: &str) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(stream_seed(seed, element))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    #[test]
    fn building_blocks_match_their_reference_values() {
        // FNV-1a test vectors (Fowler/Noll/Vo) and the first splitmix64 output from state 0.
        assert_eq!(fnv1a(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a("a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a("foobar"), 0x8594_4171_f739_67e8);
        assert_eq!(splitmix64(0), 0xe220_a839_7b1d_cdaf);
    }

    #[test]
    fn seeds_are_pinned() {
        // A change here changes every published result: do not update casually.
        assert_eq!(stream_seed(1, "bottleneck.fwd"), PINNED_BOTTLENECK_FWD);
        assert_eq!(stream_seed(0, ""), PINNED_EMPTY);
    }
    const PINNED_BOTTLENECK_FWD: u64 = 0xc111_3cc1_bf75_e4dc; // also computed independently in Python
    const PINNED_EMPTY: u64 = 0x21fa_69a5_8f3d_62f5;

    #[test]
    fn streams_are_reproducible_and_distinct() {
        let draw = |seed, name| -> Vec<u64> {
            let mut r = stream(seed, name);
            (0..4).map(|_| r.random()).collect()
        };
        assert_eq!(draw(1, "bottleneck.fwd"), draw(1, "bottleneck.fwd"));
        assert_ne!(draw(1, "bottleneck.fwd"), draw(1, "bottleneck.rev"));
        assert_ne!(draw(1, "bottleneck.fwd"), draw(2, "bottleneck.fwd"));
    }

    #[test]
    fn adding_an_element_leaves_the_others_alone() {
        // Streams are created in different orders and amounts; each element's draws only
        // depend on (seed, its own name).
        let mut a1 = stream(7, "a");
        let first: Vec<u64> = (0..8).map(|_| a1.random()).collect();
        let mut b = stream(7, "b");
        let mut a2 = stream(7, "a");
        let _: u64 = b.random();
        let again: Vec<u64> = (0..8).map(|_| a2.random()).collect();
        assert_eq!(first, again);
        // Distinct names give distinct seeds over many nearby names and seeds.
        let mut seen = std::collections::HashSet::new();
        for s in 0..50u64 {
            for i in 0..50 {
                assert!(seen.insert(stream_seed(s, &format!("link{i}.fwd"))));
            }
        }
    }
}
