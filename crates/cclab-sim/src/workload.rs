//! Workloads of short transfers: a flow that opens several TCP connections one after another
//! (`flows[].workload`), each a fresh connection (new socket, handshake, initial window and
//! initial RTO) that sends a size of its own, the next one starting a think time after the
//! previous one's completion (its receiver has every byte). This is how study S3 measures
//! spurious timeouts per connection and per content size (the paper's 6 KB .. 2 MB downloads and
//! its web mix of section 5).
//!
//! Sizes and think times are drawn when the world is built, from the flow's own random stream
//! (`<flow>.workload`), so they do not depend on what happens in the run and the same seed gives
//! the same sequence.

use crate::config::{err, ConfigError};
use rand::Rng;
use serde::{Deserialize, Serialize};

/// The most connections one flow may open (each is a socket of its own in the world).
pub const MAX_CONNECTIONS: u32 = 100_000;

/// `flows[].workload`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Workload {
    /// Connections opened one after another.
    #[serde(default = "one")]
    pub connections: u32,
    /// Each connection's size: "fixed" (the flow's `size_bytes`), "web" (the S3 paper's mix of
    /// web content sizes) or a list of bins.
    #[serde(default)]
    pub sizes: SizeMix,
    /// Time from one connection's completion to the next one's start (mean, if exponential).
    #[serde(default)]
    pub think_time_s: f64,
    /// How think times are drawn.
    #[serde(default)]
    pub think_time_dist: ThinkDist,
}

fn one() -> u32 {
    1
}

/// Sizes of a workload's connections.
#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
#[serde(untagged)]
pub enum SizeMix {
    /// By name: "fixed" or "web".
    Named(String),
    /// Bins: a bin is chosen with probability share / (sum of shares), the size uniformly in
    /// [min_bytes, max_bytes].
    Bins(Vec<SizeBin>),
    /// Every connection sends the flow's `size_bytes`.
    #[default]
    #[serde(skip)]
    Fixed,
}

/// One bin of a size mix.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SizeBin {
    pub min_bytes: u64,
    pub max_bytes: u64,
    pub share: f64,
}

/// The S3 paper's web content (section 5, 140 sites sampled at random): 0-50 kB 66 %,
/// 50-100 kB 22 %, 100-150 kB 7 %, 150-200 kB 2 %, over 500 kB 2 %. The paper's shares sum to
/// 99 % and give no upper bound for the last bin: we take 500 kB-1 MB (kB = 1000 bytes) and
/// normalise the shares; a transfer has at least one byte.
pub const WEB_MIX: [SizeBin; 5] = [
    SizeBin {
        min_bytes: 1,
        max_bytes: 50_000,
        share: 66.0,
    },
    SizeBin {
        min_bytes: 50_000,
        max_bytes: 100_000,
        share: 22.0,
    },
    SizeBin {
        min_bytes: 100_000,
        max_bytes: 150_000,
        share: 7.0,
    },
    SizeBin {
        min_bytes: 150_000,
        max_bytes: 200_000,
        share: 2.0,
    },
    SizeBin {
        min_bytes: 500_000,
        max_bytes: 1_000_000,
        share: 2.0,
    },
];

/// How think times are drawn.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, Default, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ThinkDist {
    /// Always `think_time_s`.
    #[default]
    Fixed,
    /// Exponential with mean `think_time_s` (a Poisson user).
    Exponential,
}

impl Workload {
    /// The bins sizes are drawn from (None: every connection sends `size_bytes`).
    fn bins(&self) -> Option<&[SizeBin]> {
        match &self.sizes {
            SizeMix::Named(n) if n == "web" => Some(&WEB_MIX),
            SizeMix::Bins(b) => Some(b),
            SizeMix::Named(_) | SizeMix::Fixed => None,
        }
    }

    /// Check every field; `p` is the flow's path (`flows[0]`), `size_bytes` the flow's.
    pub fn validate(&self, p: &str, size_bytes: u64) -> Result<(), ConfigError> {
        let p = format!("{p}.workload");
        if !(1..=MAX_CONNECTIONS).contains(&self.connections) {
            return Err(err(
                format!("{p}.connections"),
                format!("{} is not accepted: 1..{MAX_CONNECTIONS}", self.connections),
            ));
        }
        if !(self.think_time_s.is_finite() && self.think_time_s >= 0.0) {
            return Err(err(
                format!("{p}.think_time_s"),
                format!("{} is not accepted: a time >= 0", self.think_time_s),
            ));
        }
        match &self.sizes {
            SizeMix::Named(n) if n == "web" => {}
            SizeMix::Named(n) if n == "fixed" => {}
            SizeMix::Named(n) => {
                return Err(err(
                    format!("{p}.sizes"),
                    format!(
                        "{} is not accepted: \"fixed\", \"web\" or a list of bins",
                        crate::config::shown(n)
                    ),
                ))
            }
            SizeMix::Bins(b) => {
                if b.is_empty() {
                    return Err(err(format!("{p}.sizes"), "at least one bin"));
                }
                for (i, bin) in b.iter().enumerate() {
                    let q = format!("{p}.sizes[{i}]");
                    if bin.min_bytes == 0 || bin.max_bytes < bin.min_bytes {
                        return Err(err(
                            q,
                            format!(
                                "[{}, {}] is not accepted: 1 <= min_bytes <= max_bytes",
                                bin.min_bytes, bin.max_bytes
                            ),
                        ));
                    }
                    if !(bin.share.is_finite() && bin.share > 0.0) {
                        return Err(err(
                            format!("{q}.share"),
                            format!("{} is not accepted: a share > 0", bin.share),
                        ));
                    }
                }
            }
            SizeMix::Fixed => {}
        }
        if self.bins().is_none() && size_bytes == 0 && self.connections > 1 {
            return Err(err(
                format!("{p}.connections"),
                "several connections need a size: give the flow's size_bytes or workload.sizes",
            ));
        }
        Ok(())
    }

    /// Each connection's (size in bytes, think time before it in ns; 0 for the first), drawn
    /// from `rng`. `size_bytes` is the flow's (0: bulk, for a single fixed connection).
    pub fn draw(&self, size_bytes: u64, rng: &mut impl Rng) -> Vec<(u64, u64)> {
        let bins = self.bins();
        let total: f64 = bins.map_or(0.0, |b| b.iter().map(|x| x.share).sum());
        (0..self.connections)
            .map(|k| {
                let size = match bins {
                    Some(b) => {
                        let mut u = rng.random::<f64>() * total;
                        let bin = b
                            .iter()
                            .find(|x| {
                                u -= x.share;
                                u < 0.0
                            })
                            .unwrap_or(&b[b.len() - 1]);
                        rng.random_range(bin.min_bytes..=bin.max_bytes)
                    }
                    None => size_bytes,
                };
                let think_s = match (k, self.think_time_dist) {
                    (0, _) => 0.0,
                    (_, ThinkDist::Fixed) => self.think_time_s,
                    // Inverse transform; 1 - u is in (0, 1], so the log is finite.
                    (_, ThinkDist::Exponential) => {
                        -self.think_time_s * (1.0 - rng.random::<f64>()).ln()
                    }
                };
                (size, crate::config::s_to_ns(think_s))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn web(n: u32) -> Workload {
        Workload {
            connections: n,
            sizes: SizeMix::Named("web".into()),
            think_time_s: 2.0,
            think_time_dist: ThinkDist::Exponential,
        }
    }

    #[test]
    fn web_mix_shares_match_the_paper() {
        let w = web(100_000);
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let d = w.draw(0, &mut rng);
        let share = |lo: u64, hi: u64| {
            d.iter().filter(|(s, _)| (lo..=hi).contains(s)).count() as f64 / d.len() as f64
        };
        // Shares normalised over 99 %; sampling error of 100 000 draws is about 0.15 %.
        assert!((share(1, 49_999) - 66.0 / 99.0).abs() < 0.005);
        assert!((share(50_001, 99_999) - 22.0 / 99.0).abs() < 0.005);
        assert!((share(500_000, 1_000_000) - 2.0 / 99.0).abs() < 0.002);
        assert_eq!(share(200_001, 499_999), 0.0);
        // Exponential think times: mean 2 s, first connection none.
        assert_eq!(d[0].1, 0);
        let mean = d[1..].iter().map(|(_, t)| *t as f64 * 1e-9).sum::<f64>() / (d.len() - 1) as f64;
        assert!((mean - 2.0).abs() < 0.03, "mean think time {mean}");
    }

    #[test]
    fn fixed_sizes_and_bad_values() {
        let w = Workload {
            connections: 3,
            sizes: SizeMix::Fixed,
            think_time_s: 0.5,
            think_time_dist: ThinkDist::Fixed,
        };
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        let d = w.draw(6000, &mut rng);
        assert_eq!(d, vec![(6000, 0), (6000, 500_000_000), (6000, 500_000_000)]);
        assert!(w
            .validate("flows[0]", 0)
            .unwrap_err()
            .to_string()
            .contains("flows[0].workload.connections"));
        let bad = Workload {
            sizes: SizeMix::Named("mail".into()),
            ..w.clone()
        };
        assert!(bad
            .validate("flows[1]", 6000)
            .unwrap_err()
            .to_string()
            .contains("flows[1].workload.sizes"));
        let bins = Workload {
            sizes: SizeMix::Bins(vec![SizeBin {
                min_bytes: 10,
                max_bytes: 5,
                share: 1.0,
            }]),
            ..w
        };
        assert!(bins
            .validate("flows[0]", 0)
            .unwrap_err()
            .to_string()
            .contains("flows[0].workload.sizes[0]"));
    }
}
