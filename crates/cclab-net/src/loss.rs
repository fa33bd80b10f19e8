//! Loss models, drawn once per packet at a link's ingress: random (Bernoulli, Gilbert-Elliott),
//! or chosen packets by their ingress number (`nth`, for a reproducible single loss such as a
//! connection's SYN, on the simulator and in cclab-link alike).

use crate::error::NetError;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// Which packets a link loses at random. In a scenario file:
/// `{ kind = "bernoulli", p = 0.01 }` or
/// `{ kind = "gilbert_elliott", p_good_bad = 0.01, p_bad_good = 0.3, loss_good = 0, loss_bad = 0.5 }`
/// or `{ kind = "nth", pkts = [1] }`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum LossModel {
    /// Never lose.
    #[default]
    None,
    /// Lose each packet independently.
    Bernoulli {
        /// Probability that a packet is lost, in [0, 1].
        p: f64,
    },
    /// Two-state Markov chain (Gilbert-Elliott), starting in Good. Per packet the state first
    /// changes (Good->Bad with `p_good_bad`, Bad->Good with `p_bad_good`), then the packet is
    /// lost with the loss probability of the current state.
    GilbertElliott {
        /// Per-packet probability of going from Good to Bad, in [0, 1].
        p_good_bad: f64,
        /// Per-packet probability of going from Bad to Good, in [0, 1].
        p_bad_good: f64,
        /// Loss probability in the Good state, in [0, 1].
        loss_good: f64,
        /// Loss probability in the Bad state, in [0, 1].
        loss_bad: f64,
    },
    /// Lose exactly these packets, by ingress number (1 = the first packet offered since the
    /// link was built, or since cclab-link's `start`); no random draw.
    Nth {
        /// Ingress numbers, each at least 1.
        pkts: Vec<u64>,
    },
}

/// The most entries `nth`'s `pkts` takes.
pub const MAX_NTH_PKTS: usize = 10_000;

impl LossModel {
    /// Check every probability is in [0, 1] (NaN is refused); the error names the field.
    pub fn validate(&self) -> Result<(), NetError> {
        let check = |name: &str, v: f64| {
            if (0.0..=1.0).contains(&v) {
                Ok(())
            } else {
                Err(NetError::invalid(name, v, "a probability in [0, 1]"))
            }
        };
        match *self {
            LossModel::None => Ok(()),
            LossModel::Nth { ref pkts } => {
                if pkts.len() > MAX_NTH_PKTS {
                    return Err(NetError::invalid(
                        "pkts",
                        format!("{} entries", pkts.len()),
                        &format!("at most {MAX_NTH_PKTS} packet numbers"),
                    ));
                }
                match pkts.iter().find(|&&n| n == 0) {
                    Some(_) => Err(NetError::invalid(
                        "pkts",
                        0,
                        "packet numbers from 1 (the first packet the link is offered)",
                    )),
                    None => Ok(()),
                }
            }
            LossModel::Bernoulli { p } => check("p", p),
            LossModel::GilbertElliott {
                p_good_bad,
                p_bad_good,
                loss_good,
                loss_bad,
            } => {
                check("p_good_bad", p_good_bad)?;
                check("p_bad_good", p_bad_good)?;
                check("loss_good", loss_good)?;
                check("loss_bad", loss_bad)
            }
        }
    }

    /// Long-run fraction of packets lost. For Gilbert-Elliott this is the stationary rate
    /// `(p_gb * loss_bad + p_bg * loss_good) / (p_gb + p_bg)` (or `loss_good` when the chain
    /// never leaves its initial Good state); `nth` loses none in the long run.
    pub fn mean_loss(&self) -> f64 {
        match *self {
            LossModel::None | LossModel::Nth { .. } => 0.0,
            LossModel::Bernoulli { p } => p,
            LossModel::GilbertElliott {
                p_good_bad,
                p_bad_good,
                loss_good,
                loss_bad,
            } => {
                let s = p_good_bad + p_bad_good;
                if s == 0.0 {
                    loss_good
                } else {
                    (p_good_bad * loss_bad + p_bad_good * loss_good) / s
                }
            }
        }
    }
}

/// A loss process: a model, its state and its own random stream.
#[derive(Debug, Clone)]
pub struct Loss {
    model: LossModel,
    /// Gilbert-Elliott: in the Bad state.
    bad: bool,
    /// `nth`: packets offered so far.
    offered: u64,
    rng: ChaCha8Rng,
}

impl Loss {
    /// A process for `model` drawing from `rng`, starting in the Good state. An unvalidated
    /// model does not panic: out-of-range probabilities act as clamped, NaN as 0.
    pub fn new(model: LossModel, rng: ChaCha8Rng) -> Self {
        Loss {
            model,
            bad: false,
            offered: 0,
            rng,
        }
    }

    /// Whether the next packet is lost. Call exactly once per packet offered.
    pub fn drop_next(&mut self) -> bool {
        match self.model {
            LossModel::None => false,
            LossModel::Nth { ref pkts } => {
                self.offered += 1;
                pkts.contains(&self.offered)
            }
            LossModel::Bernoulli { p } => p > 0.0 && self.rng.random::<f64>() < p,
            LossModel::GilbertElliott {
                p_good_bad,
                p_bad_good,
                loss_good,
                loss_bad,
            } => {
                let flip = if self.bad { p_bad_good } else { p_good_bad };
                // Always drawn (even when `flip` is 0), so the stream stays aligned per packet.
                if self.rng.random::<f64>() < flip {
                    self.bad = !self.bad;
                }
                let p = if self.bad { loss_bad } else { loss_good };
                p > 0.0 && self.rng.random::<f64>() < p
            }
        }
    }

    /// Gilbert-Elliott: whether the chain is in its Bad state (always false for other models).
    pub fn in_bad_state(&self) -> bool {
        self.bad
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::stream;

    fn fraction(model: LossModel, n: usize) -> f64 {
        let mut l = Loss::new(model, stream(1, "t"));
        (0..n).filter(|_| l.drop_next()).count() as f64 / n as f64
    }

    fn ge(p_good_bad: f64, p_bad_good: f64, loss_good: f64, loss_bad: f64) -> LossModel {
        LossModel::GilbertElliott {
            p_good_bad,
            p_bad_good,
            loss_good,
            loss_bad,
        }
    }

    #[test]
    fn bernoulli_long_run_rate() {
        // n = 1e6, p = 0.01: standard deviation of the fraction is 1e-4; allow 5 sigma.
        let f = fraction(LossModel::Bernoulli { p: 0.01 }, 1_000_000);
        assert!((f - 0.01).abs() < 5e-4, "{f}");
        let f = fraction(LossModel::Bernoulli { p: 0.3 }, 200_000);
        assert!((f - 0.3).abs() < 0.006, "{f}");
    }

    #[test]
    fn extremes_are_exact() {
        assert_eq!(fraction(LossModel::Bernoulli { p: 0.0 }, 100_000), 0.0);
        assert_eq!(fraction(LossModel::Bernoulli { p: 1.0 }, 100_000), 1.0);
        assert_eq!(fraction(LossModel::None, 100_000), 0.0);
        assert_eq!(fraction(ge(0.5, 0.5, 0.0, 0.0), 100_000), 0.0);
        assert_eq!(fraction(ge(0.5, 0.5, 1.0, 1.0), 100_000), 1.0);
    }

    #[test]
    fn gilbert_elliott_stationary_rate() {
        for m in [
            ge(0.01, 0.2, 0.001, 0.5),
            ge(0.05, 0.05, 0.0, 1.0),
            ge(0.3, 0.6, 0.1, 0.9),
        ] {
            let want = m.mean_loss();
            let f = fraction(m.clone(), 2_000_000);
            assert!((f - want).abs() / want < 0.05, "{m:?}: {f} vs {want}");
        }
        let m = ge(0.01, 0.2, 0.001, 0.5);
        assert!((m.mean_loss() - (0.01 * 0.5 + 0.2 * 0.001) / 0.21).abs() < 1e-15);
        assert_eq!(ge(0.0, 0.0, 0.25, 1.0).mean_loss(), 0.25);
    }

    #[test]
    fn gilbert_elliott_changes_state_before_drawing() {
        // Always flips Good->Bad on the first packet; Bad always loses, Good never does.
        let mut l = Loss::new(ge(1.0, 0.0, 0.0, 1.0), stream(1, "t"));
        assert!(!l.in_bad_state());
        assert!(
            l.drop_next(),
            "the first packet is already drawn in the Bad state"
        );
        assert!(l.in_bad_state());
        // Alternating chain: Bad, Good, Bad, ...
        let mut l = Loss::new(ge(1.0, 1.0, 0.0, 1.0), stream(1, "t"));
        let got: Vec<bool> = (0..6).map(|_| l.drop_next()).collect();
        assert_eq!(got, [true, false, true, false, true, false]);
    }

    #[test]
    fn nth_loses_exactly_the_numbered_packets() {
        let mut l = Loss::new(LossModel::Nth { pkts: vec![1, 4] }, stream(1, "t"));
        let got: Vec<bool> = (0..6).map(|_| l.drop_next()).collect();
        assert_eq!(got, [true, false, false, true, false, false]);
        let m: LossModel = serde_json::from_str(r#"{"kind": "nth", "pkts": [1]}"#).unwrap();
        assert_eq!(m, LossModel::Nth { pkts: vec![1] });
        let e = LossModel::Nth { pkts: vec![2, 0] }.validate().unwrap_err();
        assert!(
            matches!(e, NetError::InvalidField { ref field, .. } if field == "pkts"),
            "{e}"
        );
    }

    #[test]
    fn same_seed_same_drops() {
        let run = |seed| {
            let mut l = Loss::new(ge(0.02, 0.2, 0.001, 0.4), stream(seed, "x"));
            (0..10_000).map(|_| l.drop_next()).collect::<Vec<_>>()
        };
        assert_eq!(run(3), run(3));
        assert_ne!(run(3), run(4));
    }

    #[test]
    fn validate_names_the_field() {
        let e = LossModel::Bernoulli { p: 1.5 }.validate().unwrap_err();
        assert_eq!(e, NetError::invalid("p", 1.5, "a probability in [0, 1]"));
        let e = ge(0.1, -0.1, 0.0, 1.0).validate().unwrap_err();
        assert!(
            matches!(e, NetError::InvalidField { ref field, .. } if field == "p_bad_good"),
            "{e}"
        );
        let e = ge(0.1, 0.1, 0.0, f64::NAN).validate().unwrap_err();
        assert!(e.to_string().starts_with("loss_bad = NaN"), "{e}");
        assert!(ge(0.0, 1.0, 0.0, 1.0).validate().is_ok());
        assert!(LossModel::None.validate().is_ok());
    }

    #[test]
    fn deserialises_from_tagged_tables() {
        let m: LossModel = serde_json::from_str(r#"{"kind": "bernoulli", "p": 0.25}"#).unwrap();
        assert_eq!(m, LossModel::Bernoulli { p: 0.25 });
        let m: LossModel = serde_json::from_str(
            r#"{"kind": "gilbert_elliott", "p_good_bad": 0.1, "p_bad_good": 0.2, "loss_good": 0, "loss_bad": 1}"#,
        )
        .unwrap();
        assert_eq!(m, ge(0.1, 0.2, 0.0, 1.0));
        assert_eq!(
            serde_json::from_str::<LossModel>(r#"{"kind": "none"}"#).unwrap(),
            LossModel::None
        );
        assert!(
            serde_json::from_str::<LossModel>(r#"{"kind": "bernoulli", "p": 0.1, "q": 1}"#)
                .is_err()
        );
        assert!(serde_json::from_str::<LossModel>(r#"{"kind": "uniform"}"#).is_err());
        let back: LossModel = serde_json::from_str(&serde_json::to_string(&m).unwrap()).unwrap();
        assert_eq!(back, m);
    }
}
