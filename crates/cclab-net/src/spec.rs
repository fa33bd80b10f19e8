//! One direction of a link as a scenario describes it: the scenario file's field names, every
//! quantity in the unit its name says (`delay_ms`, `rate_bps`). The simulator (`cclab-sim`) and
//! the real-time emulator (`cclab-link`) both read this and build the same [`LinkConfig`] from
//! it with [`LinkSpec::link_config`], so the two clocks run one model.

use crate::capacity::{Capacity, MahimahiTrace};
use crate::error::NetError;
use crate::link::{DelaySpike, LinkConfig, Outage, QueueLimit};
use crate::loss::LossModel;
use crate::qdisc::QdiscConfig;
use crate::radio::{Mobility, RadioConfig};
use crate::{NS_PER_MS, NS_PER_S};
use serde::{Deserialize, Serialize};

/// One direction of a link, in the scenario's units.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec {
    /// Serialisation rate; None with no trace = infinitely fast.
    #[serde(default)]
    pub rate_bps: Option<u64>,
    /// Mahimahi trace text (replaces `rate_bps`).
    #[serde(default)]
    pub capacity_trace_text: Option<String>,
    /// One-way propagation delay, ms.
    #[serde(default)]
    pub delay_ms: f64,
    /// Drop-tail limit in packets (the one in transmission included).
    #[serde(default)]
    pub queue_pkts: Option<u32>,
    /// Drop-tail limit in bytes.
    #[serde(default)]
    pub queue_bytes: Option<u64>,
    /// Random loss at ingress.
    #[serde(default = "no_loss")]
    pub loss_model: LossModel,
    /// Periods when the link serves nothing.
    #[serde(default)]
    pub outages: Vec<OutageSpec>,
    /// Periods when departing packets take longer to arrive.
    #[serde(default)]
    pub delay_spikes: Vec<DelaySpikeSpec>,
    /// ECN step marking: ECT packets admitted while the queue holds at least this many packets
    /// are marked CE; None = no marking.
    #[serde(default)]
    pub ecn_threshold_pkts: Option<u32>,
    /// Queue discipline: drop-tail (default), RED, CoDel, FQ-CoDel or PIE ([`QdiscConfig`]).
    #[serde(default, skip_serializing_if = "QdiscConfig::is_drop_tail")]
    pub qdisc: QdiscConfig,
    /// A 3G radio bearer after the serialisation ([`RadioSpec`]); None: a wire.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub radio: Option<RadioSpec>,
}

/// A link direction's 3G radio bearer ([`crate::radio`]) in the scenario's units. A field left
/// out takes the mobility class's preset (`pdu_loss_model` and the three `spike_` fields), else
/// the paper's RLC (42 B PDUs, 400 ms, MaxDAT 6), error-free PDUs and no random spikes.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RadioSpec {
    /// Mobility class whose preset fills the fields left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mobility: Option<Mobility>,
    /// RLC PDU payload, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pdu_bytes: Option<u32>,
    /// Error process of PDU transmissions (the forms of `loss_model`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pdu_loss_model: Option<LossModel>,
    /// Time from one transmission of a PDU to the next, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rlc_retx_interval_ms: Option<f64>,
    /// Transmissions of a PDU before its packet is discarded (MaxDAT).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_dat: Option<u32>,
    /// Random delay spikes (fades) per second of radio-up time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spike_rate_per_s: Option<f64>,
    /// Shortest fade, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spike_duration_min_ms: Option<f64>,
    /// Mean fade, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spike_duration_mean_ms: Option<f64>,
}

impl RadioSpec {
    /// Check every value; the error names the field under `path` (`bottleneck.radio.max_dat`).
    pub fn validate(&self, path: &str) -> Result<(), NetError> {
        for (name, v) in [
            ("rlc_retx_interval_ms", self.rlc_retx_interval_ms),
            ("spike_rate_per_s", self.spike_rate_per_s),
            ("spike_duration_min_ms", self.spike_duration_min_ms),
            ("spike_duration_mean_ms", self.spike_duration_mean_ms),
        ] {
            if let Some(v) = v {
                check_nonneg(&format!("{path}.{name}"), v)?;
            }
        }
        let c = self.radio_config();
        if c.spike_duration_mean_ns < c.spike_duration_min_ns {
            let ms = |ns: u64| ns as f64 / NS_PER_MS as f64;
            return Err(NetError::field(
                format!("{path}.spike_duration_mean_ms"),
                format!(
                    "{} is not accepted: at least spike_duration_min_ms ({})",
                    ms(c.spike_duration_mean_ns),
                    ms(c.spike_duration_min_ns)
                ),
            ));
        }
        c.validate().map_err(|e| match e {
            NetError::InvalidField {
                field,
                value,
                accepted,
            } => {
                // The config's names in ns back to the scenario's in ms.
                let field = match field.as_str() {
                    "rlc_retx_interval_ns" => "rlc_retx_interval_ms".to_string(),
                    f => f.replacen("pdu_loss", "pdu_loss_model", 1),
                };
                NetError::field(
                    format!("{path}.{field}"),
                    format!("{value} is not accepted: {accepted}"),
                )
            }
            other => NetError::field(path, other.to_string()),
        })
    }

    /// The radio model in the link's units: the mobility preset, then every field given.
    pub fn radio_config(&self) -> RadioConfig {
        let mut c = RadioConfig::default();
        if let Some(m) = self.mobility {
            let p = m.preset();
            c.pdu_loss = p.pdu_loss;
            c.spike_rate_per_s = p.spike_rate_per_s;
            c.spike_duration_min_ns = p.spike_duration_min_ns;
            c.spike_duration_mean_ns = p.spike_duration_mean_ns;
        }
        if let Some(v) = self.pdu_bytes {
            c.pdu_bytes = v;
        }
        if let Some(v) = &self.pdu_loss_model {
            c.pdu_loss = v.clone();
        }
        if let Some(v) = self.rlc_retx_interval_ms {
            c.rlc_retx_interval_ns = ms_to_ns(v);
        }
        if let Some(v) = self.max_dat {
            c.max_dat = v;
        }
        if let Some(v) = self.spike_rate_per_s {
            c.spike_rate_per_s = v;
        }
        if let Some(v) = self.spike_duration_min_ms {
            c.spike_duration_min_ns = ms_to_ns(v);
            // A minimum above the preset's mean moves the mean with it, unless one is given.
            c.spike_duration_mean_ns = c.spike_duration_mean_ns.max(c.spike_duration_min_ns);
        }
        if let Some(v) = self.spike_duration_mean_ms {
            c.spike_duration_mean_ns = ms_to_ns(v);
        }
        c
    }
}

impl Default for LinkSpec {
    /// An ideal direction: no rate limit, no delay, no queue limit, no loss.
    fn default() -> Self {
        LinkSpec {
            rate_bps: None,
            capacity_trace_text: None,
            delay_ms: 0.0,
            queue_pkts: None,
            queue_bytes: None,
            loss_model: LossModel::None,
            outages: Vec::new(),
            delay_spikes: Vec::new(),
            ecn_threshold_pkts: None,
            qdisc: QdiscConfig::DropTail,
            radio: None,
        }
    }
}

fn no_loss() -> LossModel {
    LossModel::None
}

/// The link serves nothing in [start_s, start_s + duration_s).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutageSpec {
    /// Start, s.
    pub start_s: f64,
    /// Length, s.
    pub duration_s: f64,
}

/// Packets leaving in [start_s, start_s + duration_s) get `extra_delay_ms` more delay.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DelaySpikeSpec {
    /// Start, s.
    pub start_s: f64,
    /// Length, s.
    pub duration_s: f64,
    /// Extra one-way delay, ms.
    pub extra_delay_ms: f64,
}

/// Seconds (finite, >= 0) to nanoseconds.
pub fn s_to_ns(s: f64) -> u64 {
    (s * NS_PER_S as f64).round() as u64
}

/// Milliseconds to nanoseconds.
pub fn ms_to_ns(ms: f64) -> u64 {
    (ms * NS_PER_MS as f64).round() as u64
}

fn check_nonneg(field: &str, v: f64) -> Result<(), NetError> {
    if !v.is_finite() || v < 0.0 {
        return Err(NetError::field(
            field,
            format!("{v} is not accepted: a finite number >= 0"),
        ));
    }
    Ok(())
}

impl LinkSpec {
    /// Whether this direction does nothing at all: no rate, trace, delay, loss, outage, spike
    /// or marking (a wire with no model).
    pub fn is_ideal(&self) -> bool {
        self.rate_bps.is_none()
            && self.capacity_trace_text.is_none()
            && self.delay_ms == 0.0
            && matches!(self.loss_model, LossModel::None)
            && self.outages.is_empty()
            && self.delay_spikes.is_empty()
            && self.ecn_threshold_pkts.is_none()
            && self.qdisc.is_drop_tail()
            && self.radio.is_none()
    }

    /// Check every value; the error names the field under `path` (`links[0].fwd.delay_ms`).
    pub fn validate(&self, path: &str) -> Result<(), NetError> {
        if self.rate_bps == Some(0) {
            return Err(NetError::field(
                format!("{path}.rate_bps"),
                "0 is not accepted: a rate > 0 bps",
            ));
        }
        if self.rate_bps.is_some() && self.capacity_trace_text.is_some() {
            return Err(NetError::field(
                format!("{path}.capacity_trace"),
                "give either rate_bps or capacity_trace, not both",
            ));
        }
        if let Some(text) = &self.capacity_trace_text {
            // Parsed here too, not only when the link is built: what validates must run.
            MahimahiTrace::parse(text)
                .map_err(|e| NetError::field(format!("{path}.capacity_trace"), e.to_string()))?;
        }
        check_nonneg(&format!("{path}.delay_ms"), self.delay_ms)?;
        if self.queue_pkts.is_some() && self.queue_bytes.is_some() {
            return Err(NetError::field(
                format!("{path}.queue_bytes"),
                "give either queue_pkts or queue_bytes",
            ));
        }
        if self.queue_pkts == Some(0) || self.queue_bytes == Some(0) {
            return Err(NetError::field(
                format!("{path}.queue_pkts"),
                "0 is not accepted: at least 1",
            ));
        }
        self.loss_model
            .validate()
            .map_err(|e| NetError::field(format!("{path}.loss_model"), e.to_string()))?;
        if let Some(k) = self.ecn_threshold_pkts {
            if k == 0 {
                return Err(NetError::field(
                    format!("{path}.ecn_threshold_pkts"),
                    "0 is not accepted: at least 1 packet (or none: no marking)",
                ));
            }
            if let Some(q) = self.queue_pkts.filter(|&q| k >= q) {
                return Err(NetError::field(
                    format!("{path}.ecn_threshold_pkts"),
                    format!("{k} is not accepted: below queue_pkts ({q}), which the queue never exceeds"),
                ));
            }
        }
        if !self.qdisc.is_drop_tail() && self.ecn_threshold_pkts.is_some() {
            return Err(NetError::field(
                format!("{path}.ecn_threshold_pkts"),
                "step marking is drop-tail's; with a qdisc, mark with the qdisc's own ecn setting",
            ));
        }
        self.qdisc.validate().map_err(|e| match e {
            NetError::InvalidField {
                field,
                value,
                accepted,
            } => NetError::field(
                format!("{path}.{field}"),
                format!("{value} is not accepted: {accepted}"),
            ),
            other => NetError::field(format!("{path}.qdisc"), other.to_string()),
        })?;
        for (i, o) in self.outages.iter().enumerate() {
            check_nonneg(&format!("{path}.outages[{i}].start_s"), o.start_s)?;
            check_nonneg(&format!("{path}.outages[{i}].duration_s"), o.duration_s)?;
        }
        if let Some(r) = &self.radio {
            r.validate(&format!("{path}.radio"))?;
        }
        for (i, o) in self.delay_spikes.iter().enumerate() {
            check_nonneg(&format!("{path}.delay_spikes[{i}].start_s"), o.start_s)?;
            check_nonneg(
                &format!("{path}.delay_spikes[{i}].duration_s"),
                o.duration_s,
            )?;
            check_nonneg(
                &format!("{path}.delay_spikes[{i}].extra_delay_ms"),
                o.extra_delay_ms,
            )?;
        }
        Ok(())
    }

    /// The cclab-net configuration of this direction, as both the simulator and the real-time
    /// emulator build it. The only error is an unreadable capacity trace (the message says
    /// which line); callers prefix their field path.
    pub fn link_config(&self) -> Result<LinkConfig, String> {
        let capacity = match (&self.capacity_trace_text, self.rate_bps) {
            (Some(text), _) => Some(Capacity::Trace(
                MahimahiTrace::parse(text).map_err(|e| e.to_string())?,
            )),
            (None, Some(r)) => Some(Capacity::Rate { rate_bps: r }),
            (None, None) => None,
        };
        let queue = match (self.queue_pkts, self.queue_bytes) {
            (Some(p), _) => QueueLimit::Packets(p),
            (None, Some(b)) => QueueLimit::Bytes(b),
            (None, None) => QueueLimit::Unlimited,
        };
        Ok(LinkConfig {
            capacity,
            delay_ns: ms_to_ns(self.delay_ms),
            queue,
            loss: self.loss_model.clone(),
            outages: self
                .outages
                .iter()
                .map(|o| Outage {
                    start_ns: s_to_ns(o.start_s),
                    duration_ns: s_to_ns(o.duration_s),
                })
                .collect(),
            delay_spikes: self
                .delay_spikes
                .iter()
                .map(|d| DelaySpike {
                    start_ns: s_to_ns(d.start_s),
                    duration_ns: s_to_ns(d.duration_s),
                    extra_delay_ns: ms_to_ns(d.extra_delay_ms),
                })
                .collect(),
            ecn_threshold_pkts: self.ecn_threshold_pkts,
            qdisc: self.qdisc.clone(),
            radio: self.radio.as_ref().map(RadioSpec::radio_config),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ideal_means_no_model_at_all() {
        assert!(LinkSpec::default().is_ideal());
        for s in [
            LinkSpec {
                delay_ms: 0.1,
                ..LinkSpec::default()
            },
            LinkSpec {
                rate_bps: Some(1),
                ..LinkSpec::default()
            },
            LinkSpec {
                ecn_threshold_pkts: Some(3),
                ..LinkSpec::default()
            },
            LinkSpec {
                loss_model: LossModel::Bernoulli { p: 0.0 },
                ..LinkSpec::default()
            },
        ] {
            assert!(!s.is_ideal(), "{s:?}");
        }
    }

    #[test]
    fn errors_name_the_field_under_the_path() {
        let f = |s: LinkSpec| match s.validate("links[1].rev") {
            Err(NetError::Field { field, .. }) => field,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            f(LinkSpec {
                rate_bps: Some(0),
                ..LinkSpec::default()
            }),
            "links[1].rev.rate_bps"
        );
        assert_eq!(
            f(LinkSpec {
                delay_ms: -1.0,
                ..LinkSpec::default()
            }),
            "links[1].rev.delay_ms"
        );
        assert_eq!(
            f(LinkSpec {
                queue_pkts: Some(10),
                ecn_threshold_pkts: Some(10),
                ..LinkSpec::default()
            }),
            "links[1].rev.ecn_threshold_pkts"
        );
        let c = LinkSpec {
            rate_bps: Some(8_000_000),
            delay_ms: 2.5,
            queue_pkts: Some(4),
            ..LinkSpec::default()
        }
        .link_config()
        .unwrap();
        assert_eq!((c.delay_ns, c.queue), (2_500_000, QueueLimit::Packets(4)));
    }

    #[test]
    fn radio_takes_the_preset_then_each_field_given() {
        let spec: LinkSpec = serde_json::from_str(
            r#"{"rate_bps": 384000, "radio": {"mobility": "car", "max_dat": 4,
                "spike_duration_mean_ms": 1000}}"#,
        )
        .unwrap();
        assert!(!spec.is_ideal());
        spec.validate("bottleneck").unwrap();
        let r = spec.link_config().unwrap().radio.unwrap();
        let car = Mobility::Car.preset();
        assert_eq!(r.pdu_loss, car.pdu_loss);
        assert_eq!(r.spike_rate_per_s, car.spike_rate_per_s);
        assert_eq!(r.max_dat, 4);
        assert_eq!(r.spike_duration_mean_ns, 1_000_000_000);
        assert_eq!((r.pdu_bytes, r.rlc_retx_interval_ns), (42, 400_000_000));
        // No mobility: the paper's RLC, error-free, no spikes.
        let plain = RadioSpec::default().radio_config();
        assert_eq!(plain, RadioConfig::default());
        assert!(serde_json::from_str::<RadioSpec>(r#"{"mobility": "bike"}"#).is_err());
        assert!(serde_json::from_str::<RadioSpec>(r#"{"pdu_size": 40}"#).is_err());
    }

    #[test]
    fn radio_errors_name_the_scenario_field() {
        let f = |r: RadioSpec| match (LinkSpec {
            radio: Some(r),
            ..LinkSpec::default()
        })
        .validate("links[0].reverse")
        {
            Err(NetError::Field { field, message }) => (field, message),
            other => panic!("{other:?}"),
        };
        let (field, msg) = f(RadioSpec {
            max_dat: Some(0),
            ..RadioSpec::default()
        });
        assert_eq!(field, "links[0].reverse.radio.max_dat");
        assert!(msg.contains("1 to 40"), "{msg}");
        let (field, _) = f(RadioSpec {
            rlc_retx_interval_ms: Some(0.0),
            ..RadioSpec::default()
        });
        assert_eq!(field, "links[0].reverse.radio.rlc_retx_interval_ms");
        let (field, _) = f(RadioSpec {
            spike_rate_per_s: Some(-1.0),
            ..RadioSpec::default()
        });
        assert_eq!(field, "links[0].reverse.radio.spike_rate_per_s");
        let (field, msg) = f(RadioSpec {
            spike_duration_min_ms: Some(500.0),
            spike_duration_mean_ms: Some(100.0),
            ..RadioSpec::default()
        });
        assert_eq!(field, "links[0].reverse.radio.spike_duration_mean_ms");
        assert_eq!(
            msg,
            "100 is not accepted: at least spike_duration_min_ms (500)"
        );
        // Against the preset's minimum (300 ms) too.
        let (field, _) = f(RadioSpec {
            mobility: Some(Mobility::Car),
            spike_duration_mean_ms: Some(200.0),
            ..RadioSpec::default()
        });
        assert_eq!(field, "links[0].reverse.radio.spike_duration_mean_ms");
        let (field, _) = f(RadioSpec {
            pdu_loss_model: Some(LossModel::Bernoulli { p: 2.0 }),
            ..RadioSpec::default()
        });
        assert_eq!(field, "links[0].reverse.radio.pdu_loss_model.p");
        let (field, _) = f(RadioSpec {
            pdu_bytes: Some(0),
            ..RadioSpec::default()
        });
        assert_eq!(field, "links[0].reverse.radio.pdu_bytes");
    }
}
