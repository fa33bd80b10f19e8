//! A 3G (UMTS / IMT-2000) radio bearer on a link direction: RLC acknowledged mode and random
//! delay spikes (study S3; Sekiguchi et al., "TCP retransmission on 3G").
//!
//! The model sits after the link's serialisation: the link's capacity is the radio bearer's
//! rate, its queue is the RNC's buffer, its propagation delay the rest of the path.
//!
//! **RLC acknowledged mode** ([`rlc`], 3GPP TS 25.322 section 9.7 and 11.3): each IP packet (an
//! RLC SDU) is cut into `ceil(bytes / pdu_bytes)` PDUs. Every transmission of a PDU is hit by
//! the PDU error process (a [`LossModel`], Bernoulli or Gilbert-Elliott, stepped once per PDU
//! transmission); a PDU in error is sent again one retransmission interval later, at most
//! `max_dat - 1` times (MaxDAT transmissions in all); a retransmission's error is drawn as the
//! channel is one interval later ([`rlc`] says how). A packet is complete when its last PDU
//! gets through; it is handed on in sequence (never before the packets ahead of it); a packet
//! one of whose PDUs fails all MaxDAT transmissions is discarded (counted as
//! `dropped_rlc_pkts`) at the time the next transmission would have been due, and packets
//! behind it wait until then (the receiver moves its window past it then).
//!
//! Retransmitted PDUs take capacity, as on a real bearer: a packet's transmission lasts as long
//! as its bytes plus every retransmitted PDU's bytes. We diverge from a real bearer in *when*
//! that capacity is taken: the whole packet's retransmission work is charged in its own slot
//! (when it is first sent), where the bearer sends each retransmission one interval later, in
//! front of newer PDUs. So total work and throughput are exact, but a packet that follows a
//! retransmitting one is delayed up to an interval early rather than late. The errors of one
//! packet's PDUs are drawn when the packet starts its transmission, PDU by PDU, from the
//! link's RLC streams.
//!
//! **Random delay spikes** ([`spikes`]): an alternating renewal process of fades. While the
//! radio is up, a fade starts at rate `spike_rate_per_s` (exponential gaps); a fade lasts
//! `spike_duration_min_ms` plus an exponential part with mean `spike_duration_mean_ms - min`.
//! During a fade the link delivers nothing: a packet that would arrive during it arrives when it
//! ends (packets keep their order). A fade stalls both directions of a radio link: drivers build
//! both directions' processes from one stream ([`spike_rng`]), so they draw the same fades.
//! Fades come on top of the scheduled `delay_spikes` of the link (which add delay to departing
//! packets); serialisation goes on during a fade (the RNC keeps sending into the Node B's
//! buffer, which delivers when the radio returns).
//!
//! Presets per mobility class ([`Mobility`]) set the PDU error process and the spike process;
//! docs/scenario.md explains how each number was chosen from the paper's Table 3 and Section 3.1.

pub mod mobility;
pub mod rlc;
pub mod spikes;

pub use mobility::Mobility;
pub use rlc::Rlc;
pub use spikes::SpikeProcess;

use crate::error::NetError;
use crate::loss::LossModel;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// PDU size of the paper's RLC (TS 25.322 as deployed for 384 kbit/s bearers), bytes.
pub const DEFAULT_PDU_BYTES: u32 = 42;
/// RLC retransmission interval of the paper, ns (400 ms).
pub const DEFAULT_RLC_RETX_INTERVAL_NS: u64 = 400_000_000;
/// MaxDAT: transmissions of a PDU before its SDU is discarded. The paper cites 6 as the best
/// value for TCP (its reference 20) and says operators may use more; 6 with 400 ms also gives
/// the paper's "400 ms x MaxDAT x 2" of about 4.8 s, close to the RTO (4 s) at which its measured
/// spurious timeouts stopped falling.
pub const DEFAULT_MAX_DAT: u32 = 6;
/// Largest MaxDAT accepted (TS 25.331 MaxDAT: 1 to 40).
pub const MAX_MAX_DAT: u32 = 40;

/// The radio model of a link direction, in the link's units (ns).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RadioConfig {
    /// RLC PDU payload, bytes (>= 1).
    pub pdu_bytes: u32,
    /// Error process of PDU transmissions.
    pub pdu_loss: LossModel,
    /// Time from one transmission of a PDU to the next, ns (> 0).
    pub rlc_retx_interval_ns: u64,
    /// Transmissions of a PDU before its packet is discarded (1 to [`MAX_MAX_DAT`]).
    pub max_dat: u32,
    /// Fades begin at this rate while the radio is up, per second (0: no random spikes).
    pub spike_rate_per_s: f64,
    /// Shortest fade, ns.
    pub spike_duration_min_ns: u64,
    /// Mean fade, ns (>= the shortest).
    pub spike_duration_mean_ns: u64,
}

impl Default for RadioConfig {
    /// The paper's RLC (42 B PDUs, 400 ms, MaxDAT 6) with error-free PDUs and no spikes.
    fn default() -> Self {
        RadioConfig {
            pdu_bytes: DEFAULT_PDU_BYTES,
            pdu_loss: LossModel::None,
            rlc_retx_interval_ns: DEFAULT_RLC_RETX_INTERVAL_NS,
            max_dat: DEFAULT_MAX_DAT,
            spike_rate_per_s: 0.0,
            spike_duration_min_ns: 0,
            spike_duration_mean_ns: 0,
        }
    }
}

impl RadioConfig {
    /// Check every setting; the error names the field (`pdu_bytes`, `pdu_loss.p`, ...).
    pub fn validate(&self) -> Result<(), NetError> {
        if self.pdu_bytes == 0 {
            return Err(NetError::invalid("pdu_bytes", 0, "at least 1 byte"));
        }
        self.pdu_loss
            .validate()
            .map_err(|e| e.in_field("pdu_loss"))?;
        if let LossModel::Nth { .. } = self.pdu_loss {
            return Err(NetError::invalid(
                "pdu_loss.kind",
                "nth",
                "none, bernoulli or gilbert_elliott (nth is for a link's loss_model)",
            ));
        }
        if self.rlc_retx_interval_ns == 0 {
            return Err(NetError::invalid("rlc_retx_interval_ns", 0, "more than 0"));
        }
        if !(1..=MAX_MAX_DAT).contains(&self.max_dat) {
            return Err(NetError::invalid(
                "max_dat",
                self.max_dat,
                "1 to 40 transmissions (TS 25.331)",
            ));
        }
        if !self.spike_rate_per_s.is_finite() || self.spike_rate_per_s < 0.0 {
            return Err(NetError::invalid(
                "spike_rate_per_s",
                self.spike_rate_per_s,
                "a finite rate >= 0 per second",
            ));
        }
        if self.spike_duration_mean_ns < self.spike_duration_min_ns {
            return Err(NetError::invalid(
                "spike_duration_mean_ns",
                self.spike_duration_mean_ns,
                &format!(
                    "at least spike_duration_min_ns ({})",
                    self.spike_duration_min_ns
                ),
            ));
        }
        Ok(())
    }
}

/// The random stream of the delay spikes of link direction `name` in a run seeded with `seed`:
/// the same for `<link>.fwd` and `<link>.rev` (a fade stalls both directions), from the
/// element name `<link>.spikes`. Other names get their own stream (`<name>.spikes`).
pub fn spike_rng(seed: u64, name: &str) -> ChaCha8Rng {
    let link = name
        .strip_suffix(".fwd")
        .or_else(|| name.strip_suffix(".rev"))
        .unwrap_or(name);
    crate::rng::stream(seed, &format!("{link}.spikes"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    #[test]
    fn validate_names_the_field() {
        let field = |c: RadioConfig| match c.validate() {
            Err(NetError::InvalidField { field, .. }) => field,
            other => panic!("{other:?}"),
        };
        let d = RadioConfig::default;
        assert!(d().validate().is_ok());
        assert_eq!(
            field(RadioConfig {
                pdu_bytes: 0,
                ..d()
            }),
            "pdu_bytes"
        );
        assert_eq!(
            field(RadioConfig {
                pdu_loss: LossModel::Bernoulli { p: 1.5 },
                ..d()
            }),
            "pdu_loss.p"
        );
        assert_eq!(field(RadioConfig { max_dat: 0, ..d() }), "max_dat");
        assert_eq!(field(RadioConfig { max_dat: 41, ..d() }), "max_dat");
        assert_eq!(
            field(RadioConfig {
                rlc_retx_interval_ns: 0,
                ..d()
            }),
            "rlc_retx_interval_ns"
        );
        assert_eq!(
            field(RadioConfig {
                spike_rate_per_s: f64::NAN,
                ..d()
            }),
            "spike_rate_per_s"
        );
        assert_eq!(
            field(RadioConfig {
                spike_duration_min_ns: 2,
                spike_duration_mean_ns: 1,
                ..d()
            }),
            "spike_duration_mean_ns"
        );
    }

    #[test]
    fn both_directions_share_the_spike_stream() {
        let first = |name: &str| -> u64 { spike_rng(5, name).random() };
        assert_eq!(first("bottleneck.fwd"), first("bottleneck.rev"));
        assert_eq!(first("bottleneck.fwd"), first("bottleneck"));
        assert_ne!(first("bottleneck.fwd"), first("wan.fwd"));
        let own: u64 = crate::rng::stream(5, "bottleneck.fwd").random();
        assert_ne!(first("bottleneck.fwd"), own, "not the link's loss stream");
    }
}
