//! Random loss models, drawn once per packet.

use crate::error::NetError;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// Which packets a link loses at random.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum LossModel {
    /// Never lose.
    None,
    /// Lose each packet independently with probability `p`.
    Bernoulli { p: f64 },
    /// Two-state Markov chain (Gilbert-Elliott): per packet the state changes Good->Bad with
    /// `p_good_bad` and Bad->Good with `p_bad_good`, then the packet is lost with the loss
    /// probability of the current state.
    GilbertElliott { p_good_bad: f64, p_bad_good: f64, loss_good: f64, loss_bad: f64 },
}

impl LossModel {
    /// Check every probability is in [0, 1].
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
            LossModel::Bernoulli { p } => check("p", p),
            LossModel::GilbertElliott { p_good_bad, p_bad_good, loss_good, loss_bad } => {
                check("p_good_bad", p_good_bad)?;
                check("p_bad_good", p_bad_good)?;
                check("loss_good", loss_good)?;
                check("loss_bad", loss_bad)
            }
        }
    }

    /// Long-run fraction of packets lost.
    pub fn mean_loss(&self) -> f64 {
        match *self {
            LossModel::None => 0.0,
            LossModel::Bernoulli { p } => p,
            LossModel::GilbertElliott { p_good_bad, p_bad_good, loss_good, loss_bad } => {
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

/// A loss process: a model, its state and its random stream.
#[derive(Debug, Clone)]
pub struct Loss {
    model: LossModel,
    bad: bool,
    rng: ChaCha8Rng,
}

impl Loss {
    /// Start in the Good state.
    pub fn new(model: LossModel, rng: ChaCha8Rng) -> Self {
        Loss { model, bad: false, rng }
    }

    /// Whether the next packet is lost (one call per packet).
    pub fn drop_next(&mut self) -> bool {
        match self.model {
            LossModel::None => false,
            LossModel::Bernoulli { p } => p > 0.0 && self.rng.random::<f64>() < p,
            LossModel::GilbertElliott { p_good_bad, p_bad_good, loss_good, loss_bad } => {
                let flip = if self.bad { p_bad_good } else { p_good_bad };
                if self.rng.random::<f64>() < flip {
                    self.bad = !self.bad;
                }
                let p = if self.bad { loss_bad } else { loss_good };
                p > 0.0 && self.rng.random::<f64>() < p
            }
        }
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

    #[test]
    fn bernoulli_rate() {
        let f = fraction(LossModel::Bernoulli { p: 0.01 }, 1_000_000);
        assert!((f - 0.01).abs() < 0.0005, "{f}");
        assert_eq!(fraction(LossModel::Bernoulli { p: 0.0 }, 10_000), 0.0);
        assert_eq!(fraction(LossModel::Bernoulli { p: 1.0 }, 10_000), 1.0);
        assert_eq!(fraction(LossModel::None, 10_000), 0.0);
    }

    #[test]
    fn gilbert_elliott_stationary_rate() {
        let m = LossModel::GilbertElliott { p_good_bad: 0.01, p_bad_good: 0.2, loss_good: 0.001, loss_bad: 0.5 };
        let want = m.mean_loss();
        let f = fraction(m, 2_000_000);
        assert!((f - want).abs() / want < 0.05, "{f} vs {want}");
    }

    #[test]
    fn validate_names_the_field() {
        let e = LossModel::Bernoulli { p: 1.5 }.validate().unwrap_err();
        assert!(e.to_string().starts_with("p = 1.5"), "{e}");
        assert!(LossModel::GilbertElliott { p_good_bad: 0.1, p_bad_good: -0.1, loss_good: 0.0, loss_bad: 1.0 }
            .validate()
            .is_err());
    }
}
