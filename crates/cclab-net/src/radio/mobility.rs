//! Mobility classes of study S3 and the radio settings each one stands for.
//!
//! The paper (Sekiguchi et al., Table 3 and Section 3.1) orders the classes, it gives no
//! numbers: near the base station few RLC retransmissions, small delay and little variation;
//! at the cell edge many RLC retransmissions (large but steady delay), delay spikes and losses
//! rare; moving, retransmissions that swing widely, frequent handovers and shadowing (frequent
//! delay spikes, more loss). Its Section 6.2.1 adds that the number of delay spikes met grows
//! with speed. The numbers below are our choice within that ordering; docs/scenario.md
//! (section "Radio links") gives the reasoning for each.

use crate::loss::LossModel;
use crate::NS_PER_MS;
use serde::{Deserialize, Serialize};

/// A mobility class: `"static-strong"`, `"static-weak"`, `"walking"`, `"car"` or
/// `"express-train"` in a scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mobility {
    /// Still, near the base station (strong field).
    StaticStrong,
    /// Still, at the cell edge (weak field).
    StaticWeak,
    /// Walking (about 4 km/h).
    Walking,
    /// In a car (about 40 km/h).
    Car,
    /// On an express train (about 120 km/h).
    ExpressTrain,
}

/// What a mobility class sets: the PDU error process and the delay-spike process.
#[derive(Debug, Clone, PartialEq)]
pub struct MobilityPreset {
    /// Error process of PDU transmissions.
    pub pdu_loss: LossModel,
    /// Fades per second of radio-up time.
    pub spike_rate_per_s: f64,
    /// Shortest fade, ns.
    pub spike_duration_min_ns: u64,
    /// Mean fade, ns.
    pub spike_duration_mean_ns: u64,
}

/// Fade lengths, the same for every class (the paper says how often spikes come, not how long
/// they last): at least 300 ms, mean 2.5 s. With the paper's RTO of 4 s, a fade then causes a
/// spurious timeout about a quarter of the time, P(D > 3.5 s) = exp(-3.2 / 2.2) = 0.23.
const SPIKE_MIN_NS: u64 = 300 * NS_PER_MS;
const SPIKE_MEAN_NS: u64 = 2500 * NS_PER_MS;

/// PDU errors while moving: Gilbert-Elliott with bad spells of 100 PDU transmissions (about
/// 90 ms at 384 kbit/s) a sixth of the time, errors 2 % good and 30 % bad (mean 6.7 %), so the
/// number of RLC retransmissions swings widely.
const MOVING_PDU_LOSS: LossModel = LossModel::GilbertElliott {
    p_good_bad: 0.002,
    p_bad_good: 0.01,
    loss_good: 0.02,
    loss_bad: 0.3,
};

impl Mobility {
    /// Every class, in the paper's order.
    pub const ALL: [Mobility; 5] = [
        Mobility::StaticStrong,
        Mobility::StaticWeak,
        Mobility::Walking,
        Mobility::Car,
        Mobility::ExpressTrain,
    ];

    /// The name in scenario files.
    pub fn name(self) -> &'static str {
        match self {
            Mobility::StaticStrong => "static-strong",
            Mobility::StaticWeak => "static-weak",
            Mobility::Walking => "walking",
            Mobility::Car => "car",
            Mobility::ExpressTrain => "express-train",
        }
    }

    /// The class's radio settings.
    pub fn preset(self) -> MobilityPreset {
        // Fades per second: a handover or shadow zone every 1 km travelled when moving
        // (rate = speed / 1 km); rare handovers (ping-pong at the cell edge) when still.
        let (pdu_loss, spike_rate_per_s) = match self {
            Mobility::StaticStrong => (LossModel::Bernoulli { p: 0.005 }, 1.0 / 3600.0),
            Mobility::StaticWeak => (LossModel::Bernoulli { p: 0.05 }, 1.0 / 1800.0),
            Mobility::Walking => (MOVING_PDU_LOSS, 1.0 / 900.0),
            Mobility::Car => (MOVING_PDU_LOSS, 1.0 / 90.0),
            Mobility::ExpressTrain => (MOVING_PDU_LOSS, 1.0 / 30.0),
        };
        MobilityPreset {
            pdu_loss,
            spike_rate_per_s,
            spike_duration_min_ns: SPIKE_MIN_NS,
            spike_duration_mean_ns: SPIKE_MEAN_NS,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_keep_the_papers_ordering() {
        let p: Vec<MobilityPreset> = Mobility::ALL.iter().map(|m| m.preset()).collect();
        let err: Vec<f64> = p.iter().map(|x| x.pdu_loss.mean_loss()).collect();
        let rate: Vec<f64> = p.iter().map(|x| x.spike_rate_per_s).collect();
        // Table 3: the cell edge retransmits more than near the base station; moving too.
        assert!(err[0] < err[1] && err[0] < err[2]);
        // Table 3 and section 6.2.1: spikes rare when still, more frequent with speed.
        assert!(rate.windows(2).all(|w| w[0] < w[1]), "{rate:?}");
        for x in &p {
            x.pdu_loss.validate().unwrap();
            assert!(x.spike_duration_min_ns <= x.spike_duration_mean_ns);
        }
    }

    #[test]
    fn names_round_trip() {
        for m in Mobility::ALL {
            let s = serde_json::to_string(&m).unwrap();
            assert_eq!(s, format!("\"{}\"", m.name()));
            assert_eq!(serde_json::from_str::<Mobility>(&s).unwrap(), m);
        }
        assert!(serde_json::from_str::<Mobility>("\"train\"").is_err());
    }
}
