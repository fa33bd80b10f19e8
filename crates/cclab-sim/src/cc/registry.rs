//! The algorithms by name: what exists (`algorithms`, listed by `cclab presets`) and building one
//! from a name and its tunables (`build`), with every value checked and errors naming the field
//! and what is accepted.
//!
//! An entry is either an algorithm (`base == name`) or a preset: a base algorithm with some
//! tunables preset (`cubic-ios`). A preset's values apply first, then the user's.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use super::cubic::{Cubic, CubicParams, DEFAULT_BIC_SCALE};
use super::reno::Reno;
use super::CongestionControl;

/// Tunables of an algorithm by name, as given in a scenario's `cc_params`.
pub type Params = BTreeMap<String, ParamValue>;

/// One tunable's value: a boolean, an integer or a real number (untagged in JSON/TOML).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ParamValue {
    /// true / false.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A real number.
    Float(f64),
}

impl ParamValue {
    /// The value as a real number (integers convert; booleans are not numbers).
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            ParamValue::Bool(_) => None,
            ParamValue::Int(i) => Some(i as f64),
            ParamValue::Float(f) => Some(f),
        }
    }

    /// The value as a boolean: true/false, or the integers 0 and 1.
    pub fn as_bool(&self) -> Option<bool> {
        match *self {
            ParamValue::Bool(b) => Some(b),
            ParamValue::Int(0) => Some(false),
            ParamValue::Int(1) => Some(true),
            _ => None,
        }
    }

    /// The value as an integer: an integer, or a real number with no fractional part.
    pub fn as_int(&self) -> Option<i64> {
        match *self {
            ParamValue::Bool(_) => None,
            ParamValue::Int(i) => Some(i),
            ParamValue::Float(f) if f.is_finite() && f.fract() == 0.0 && f.abs() < 9.0e15 => {
                Some(f as i64)
            }
            ParamValue::Float(_) => None,
        }
    }
}

impl fmt::Display for ParamValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParamValue::Bool(b) => write!(f, "{b}"),
            ParamValue::Int(i) => write!(f, "{i}"),
            ParamValue::Float(x) => write!(f, "{x}"),
        }
    }
}

/// One tunable of an algorithm: its name, default and meaning.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ParamInfo {
    /// Name in `cc_params` (Linux's module-parameter name where there is one).
    pub name: &'static str,
    /// Value when not given.
    pub default: ParamValue,
    /// What it does and what it accepts.
    pub doc: &'static str,
}

/// An algorithm or preset that `build` knows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AlgorithmInfo {
    /// Name in a scenario's `cc`.
    pub name: &'static str,
    /// The algorithm it is built from: equal to `name` unless it is a preset.
    pub base: &'static str,
    /// One line on what it is.
    pub description: &'static str,
    /// Where its behaviour comes from, e.g. "Linux 6.18 net/ipv4/tcp_cubic.c".
    pub source: &'static str,
    /// The tunables accepted in `cc_params` (the base algorithm's).
    pub params: Vec<ParamInfo>,
    /// The tunables a preset sets before the user's (empty for an algorithm).
    pub preset_params: Params,
}

/// Why an algorithm could not be built.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CcError {
    /// No algorithm or preset has this name.
    #[error("unknown congestion control {}: known are {}", crate::config::shown(name), .known.join(", "))]
    UnknownAlgorithm {
        /// The name asked for.
        name: String,
        /// The names that exist.
        known: Vec<String>,
    },
    /// The algorithm has no tunable of this name.
    #[error(
        "cc_params.{param} is not a parameter of {algorithm}: {}",
        known_params(algorithm, known)
    )]
    UnknownParam {
        /// The algorithm (as named by the user).
        algorithm: String,
        /// The tunable given.
        param: String,
        /// The tunables it accepts.
        known: Vec<String>,
    },
    /// The value is of the wrong kind or out of range.
    #[error("cc_params.{param} = {value} is out of range for {algorithm}: accepted {accepted}")]
    BadValue {
        /// The algorithm (as named by the user).
        algorithm: String,
        /// The tunable.
        param: String,
        /// The value given.
        value: String,
        /// What is accepted.
        accepted: String,
    },
}

fn known_params(algorithm: &str, known: &[String]) -> String {
    if known.is_empty() {
        format!("{algorithm} has no parameters")
    } else {
        format!("known are {}", known.join(", "))
    }
}

const CUBIC_SOURCE: &str = "Linux 6.18 net/ipv4/tcp_cubic.c";

fn cubic_params_info() -> Vec<ParamInfo> {
    let d = CubicParams::default();
    vec![
        ParamInfo {
            name: "beta",
            default: ParamValue::Float(d.beta),
            doc: "multiplicative decrease factor: cwnd becomes beta * cwnd on loss; 0 < beta < 1, \
                  used in units of 1/1024 (Linux: beta = 717 / 1024)",
        },
        ParamInfo {
            name: "c",
            default: ParamValue::Float(d.c),
            doc: "cubic scaling constant C, packets/s^3; 0 < c <= 100, used in units of 1/1024 \
                  (Linux: bic_scale * 10 / 1024 = 410 / 1024); give c or bic_scale, not both",
        },
        ParamInfo {
            name: "bic_scale",
            default: ParamValue::Int(DEFAULT_BIC_SCALE as i64),
            doc: "Linux's form of C: C = bic_scale * 10 / 1024; an integer 1..10240; \
                  give c or bic_scale, not both",
        },
        ParamInfo {
            name: "fast_convergence",
            default: ParamValue::Bool(d.fast_convergence),
            doc: "turn on/off fast convergence: after a loss below the previous maximum, aim at \
                  cwnd * (1 + beta) / 2 instead; true/false or 0/1",
        },
        ParamInfo {
            name: "tcp_friendliness",
            default: ParamValue::Bool(d.tcp_friendliness),
            doc: "turn on/off tcp friendliness: never grow slower than the emulated Reno-friendly \
                  window; true/false or 0/1",
        },
        ParamInfo {
            name: "hystart",
            default: ParamValue::Bool(d.hystart),
            doc: "turn on/off hybrid slow start algorithm; true/false or 0/1",
        },
        ParamInfo {
            name: "hystart_detect",
            default: ParamValue::Int(d.hystart_detect as i64),
            doc: "hybrid slow start detection mechanisms: 1 packet-train, 2 delay, 3 both \
                  packet-train and delay; 0..3",
        },
        ParamInfo {
            name: "hystart_low_window",
            default: ParamValue::Int(d.hystart_low_window as i64),
            doc: "lower bound cwnd for hybrid slow start, packets; an integer >= 0",
        },
        ParamInfo {
            name: "hystart_ack_delta_us",
            default: ParamValue::Int(d.hystart_ack_delta_us as i64),
            doc: "spacing between ACKs indicating a train, microseconds; an integer >= 0",
        },
        ParamInfo {
            name: "initial_ssthresh",
            default: ParamValue::Int(d.initial_ssthresh as i64),
            doc: "initial value of slow start threshold, packets; 0 = infinite; as in Linux it \
                  only applies with hystart off; an integer >= 0",
        },
    ]
}

/// Builds an algorithm from the name the user gave and its (preset-merged) tunables.
type BuildFn = fn(&str, &Params) -> Result<Box<dyn CongestionControl>, CcError>;

/// The algorithms that live in their own files, each exposing `info()` and `build()`.
fn family() -> Vec<(AlgorithmInfo, BuildFn)> {
    vec![
        (super::bic::info(), super::bic::build),
        (super::highspeed::info(), super::highspeed::build),
        (super::htcp::info(), super::htcp::build),
        (super::scalable::info(), super::scalable::build),
        (super::vegas::info(), super::vegas::build),
        (super::veno::info(), super::veno::build),
        (super::westwood::info(), super::westwood::build),
        (super::illinois::info(), super::illinois::build),
        (super::hybla::info(), super::hybla::build),
        (super::yeah::info(), super::yeah::build),
        (super::lp::info(), super::lp::build),
        (super::bbr::info(), super::bbr::build),
        (super::bbr2::info(), super::bbr2::build),
        (super::bbr3::info(), super::bbr3::build),
        (super::cubic_xnu::info(), super::cubic_xnu::build),
        (super::dctcp::info(), super::dctcp::build),
        (super::lia::info(), super::lia::build),
        (super::olia::info(), super::olia::build),
        (super::balia::info(), super::balia::build),
    ]
}

/// Every algorithm and preset `build` accepts, with their tunables.
pub fn algorithms() -> Vec<AlgorithmInfo> {
    let ios: Params = [
        ("beta".to_string(), ParamValue::Float(0.8)),
        ("c".to_string(), ParamValue::Float(0.25)),
    ]
    .into_iter()
    .collect();
    vec![
        AlgorithmInfo {
            name: "reno",
            base: "reno",
            description: "TCP Reno: slow start, then +1 packet per RTT, halve cwnd on loss",
            source: "Linux 6.18 net/ipv4/tcp_cong.c",
            params: Vec::new(),
            preset_params: Params::new(),
        },
        AlgorithmInfo {
            name: "cubic",
            base: "cubic",
            description: "CUBIC with HyStart, Linux's default congestion control",
            source: CUBIC_SOURCE,
            params: cubic_params_info(),
            preset_params: Params::new(),
        },
        AlgorithmInfo {
            name: "cubic-ios",
            base: "cubic",
            description: "iOS-like CUBIC as measured by the S0 paper (Hozumi et al.)",
            source: CUBIC_SOURCE,
            params: cubic_params_info(),
            preset_params: ios,
        },
    ]
    .into_iter()
    .chain(family().into_iter().map(|(info, _)| info))
    .collect()
}

/// Build the algorithm or preset `name` with the tunables `params` (a preset's tunables apply
/// first, then these). Every value is checked; unknown names and tunables are errors.
pub fn build(name: &str, params: &Params) -> Result<Box<dyn CongestionControl>, CcError> {
    let all = algorithms();
    let Some(info) = all.iter().find(|a| a.name == name) else {
        return Err(CcError::UnknownAlgorithm {
            name: name.to_string(),
            known: all.iter().map(|a| a.name.to_string()).collect(),
        });
    };
    for param in params.keys() {
        if !info.params.iter().any(|p| p.name == param) {
            return Err(CcError::UnknownParam {
                algorithm: name.to_string(),
                param: param.clone(),
                known: info.params.iter().map(|p| p.name.to_string()).collect(),
            });
        }
    }
    match info.base {
        "reno" => Ok(Box::new(Reno::new())),
        "cubic" => {
            let merged = merge(&info.preset_params, params);
            Ok(Box::new(Cubic::new(cubic_params(name, &merged)?)?))
        }
        base => {
            let merged = merge(&info.preset_params, params);
            match family().into_iter().find(|(i, _)| i.name == base) {
                Some((_, build)) => build(name, &merged),
                None => unreachable!("registry lists base {base:?} without a builder"),
            }
        }
    }
}

/// A preset's tunables overridden by the user's. `c` and `bic_scale` are two forms of one
/// tunable: the user's either form replaces the preset's.
fn merge(preset: &Params, user: &Params) -> Params {
    let mut merged = preset.clone();
    if user.contains_key("c") || user.contains_key("bic_scale") {
        merged.remove("c");
        merged.remove("bic_scale");
    }
    merged.extend(user.iter().map(|(k, v)| (k.clone(), *v)));
    merged
}

/// CUBIC's tunables from `params` (names already checked), every value checked;
/// `algorithm` is the name the user gave, for errors.
fn cubic_params(algorithm: &str, params: &Params) -> Result<CubicParams, CcError> {
    let bad = |param: &str, value: &ParamValue, accepted: &str| CcError::BadValue {
        algorithm: algorithm.to_string(),
        param: param.to_string(),
        value: value.to_string(),
        accepted: accepted.to_string(),
    };
    let get_bool = |param: &str, v: &ParamValue| {
        v.as_bool()
            .ok_or_else(|| bad(param, v, "true/false or 0/1"))
    };
    let get_int = |param: &str, v: &ParamValue, lo: i64, hi: i64, accepted: &str| {
        v.as_int()
            .filter(|i| (lo..=hi).contains(i))
            .map(|i| i as u32)
            .ok_or_else(|| bad(param, v, accepted))
    };
    const NONNEG: &str = "an integer 0..2147483647";
    let max = i32::MAX as i64;

    let mut p = CubicParams::default();
    if let (Some(_), Some(v)) = (params.get("c"), params.get("bic_scale")) {
        return Err(bad(
            "bic_scale",
            v,
            "c or bic_scale, not both (c is given too)",
        ));
    }
    for (name, v) in params {
        match name.as_str() {
            "fast_convergence" => p.fast_convergence = get_bool(name, v)?,
            "tcp_friendliness" => p.tcp_friendliness = get_bool(name, v)?,
            "hystart" => p.hystart = get_bool(name, v)?,
            "hystart_detect" => {
                p.hystart_detect = get_int(name, v, 0, 3, "0..3 (1 ACK train, 2 delay, 3 both)")?
            }
            "hystart_low_window" => p.hystart_low_window = get_int(name, v, 0, max, NONNEG)?,
            "hystart_ack_delta_us" => p.hystart_ack_delta_us = get_int(name, v, 0, max, NONNEG)?,
            "initial_ssthresh" => p.initial_ssthresh = get_int(name, v, 0, max, NONNEG)?,
            "beta" => p.beta = v.as_f64().ok_or_else(|| bad(name, v, "0 < beta < 1"))?,
            "c" => p.c = v.as_f64().ok_or_else(|| bad(name, v, "0 < c <= 100"))?,
            "bic_scale" => {
                let s = get_int(
                    name,
                    v,
                    1,
                    10240,
                    "an integer 1..10240 (C = bic_scale * 10 / 1024 <= 100)",
                )?;
                p.c = CubicParams::c_from_bic_scale(s);
            }
            other => unreachable!("parameter {other:?} listed for cubic but not parsed"),
        }
    }
    p.validate(algorithm)?;
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcp::sock::TcpSock;

    fn params(list: &[(&str, ParamValue)]) -> Params {
        list.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    fn err(name: &str, list: &[(&str, ParamValue)]) -> CcError {
        match build(name, &params(list)) {
            Ok(_) => panic!("{name} {list:?} was accepted"),
            Err(e) => e,
        }
    }

    #[test]
    fn lists_reno_cubic_and_the_ios_preset() {
        let all = algorithms();
        let names: Vec<_> = all.iter().map(|a| (a.name, a.base)).collect();
        assert_eq!(
            names[..3],
            [("reno", "reno"), ("cubic", "cubic"), ("cubic-ios", "cubic")]
        );
        let mut unique: Vec<_> = names.iter().map(|n| n.0).collect();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), names.len(), "names are unique");
        for a in &all[3..] {
            assert_eq!(a.name, a.base, "the family has no presets yet");
            assert_eq!(build(a.name, &Params::new()).unwrap().name(), a.name);
        }
        for a in &all {
            let src = [
                "Linux 6.18 net/ipv4/",
                "Apple xnu-",
                "google/bbr branch ",
                "multipath-tcp.org v0.9x net/mptcp/",
            ];
            assert!(src.iter().any(|s| a.source.starts_with(s)), "{}", a.source);
            assert_eq!(a.preset_params.is_empty(), a.name == a.base);
            for k in a.preset_params.keys() {
                assert!(
                    a.params.iter().any(|p| p.name == k),
                    "{} presets unknown {k}",
                    a.name
                );
            }
            // The documented defaults are accepted and build.
            let defaults: Params = a
                .params
                .iter()
                .filter(|p| p.name != "bic_scale")
                .map(|p| (p.name.to_string(), p.default))
                .collect();
            build(a.name, &defaults).unwrap();
        }
        let json = serde_json::to_value(&all).unwrap();
        assert_eq!(json[2]["preset_params"]["beta"], 0.8);
        assert_eq!(json[1]["params"][0]["name"], "beta");
        assert_eq!(json[1]["params"][3]["default"], true);
    }

    #[test]
    fn only_dctcp_needs_ecn() {
        // TCP_CONG_NEEDS_ECN: set in Linux 6.18 by tcp_dctcp.c alone among these.
        for a in algorithms() {
            let cc = build(a.name, &Params::new()).unwrap();
            assert_eq!(cc.needs_ecn(), a.name == "dctcp", "{}", a.name);
        }
    }

    #[test]
    fn builds_by_name() {
        for name in ["reno", "cubic", "cubic-ios"] {
            let cc = build(name, &Params::new()).unwrap();
            assert_eq!(cc.name(), if name == "reno" { "reno" } else { "cubic" });
        }
    }

    #[test]
    fn unknown_algorithm() {
        let e = err("bbr9", &[]);
        let known: Vec<String> = algorithms().iter().map(|a| a.name.to_string()).collect();
        assert_eq!(
            e,
            CcError::UnknownAlgorithm {
                name: "bbr9".into(),
                known
            }
        );
        assert!(e.to_string().starts_with(
            "unknown congestion control \"bbr9\": known are reno, cubic, cubic-ios, "
        ));
    }

    #[test]
    fn unknown_param() {
        let e = err("cubic", &[("gamma", ParamValue::Float(1.0))]);
        assert!(
            matches!(&e, CcError::UnknownParam { algorithm, param, known }
            if algorithm == "cubic" && param == "gamma" && known.contains(&"beta".to_string()))
        );
        assert!(e
            .to_string()
            .starts_with("cc_params.gamma is not a parameter of cubic: known are beta, c, "));
        let e = err("reno", &[("beta", ParamValue::Float(0.5))]);
        assert_eq!(
            e.to_string(),
            "cc_params.beta is not a parameter of reno: reno has no parameters"
        );
        // The preset accepts its base's tunables, and only those.
        let e = err("cubic-ios", &[("alpha", ParamValue::Int(1))]);
        assert!(matches!(e, CcError::UnknownParam { .. }));
    }

    #[test]
    fn bad_values_name_the_field_and_what_is_accepted() {
        let e = err("cubic", &[("beta", ParamValue::Float(1.5))]);
        assert_eq!(
            e.to_string(),
            "cc_params.beta = 1.5 is out of range for cubic: accepted 0 < beta < 1"
        );
        assert_eq!(
            e,
            CcError::BadValue {
                algorithm: "cubic".into(),
                param: "beta".into(),
                value: "1.5".into(),
                accepted: "0 < beta < 1".into()
            }
        );
        let cases: &[(&str, ParamValue)] = &[
            ("beta", ParamValue::Float(0.0)),
            ("beta", ParamValue::Int(1)),
            ("beta", ParamValue::Float(f64::NAN)),
            ("beta", ParamValue::Float(0.0001)), // rounds to 0/1024
            ("beta", ParamValue::Bool(true)),
            ("c", ParamValue::Float(0.0)),
            ("c", ParamValue::Float(-1.0)),
            ("c", ParamValue::Float(100.5)),
            ("c", ParamValue::Float(f64::INFINITY)),
            ("c", ParamValue::Float(1e-4)), // rounds to 0/1024
            ("bic_scale", ParamValue::Int(0)),
            ("bic_scale", ParamValue::Int(10241)),
            ("bic_scale", ParamValue::Float(41.5)),
            ("fast_convergence", ParamValue::Int(2)),
            ("tcp_friendliness", ParamValue::Float(1.0)),
            ("hystart", ParamValue::Int(-1)),
            ("hystart_detect", ParamValue::Int(4)),
            ("hystart_detect", ParamValue::Bool(true)),
            ("hystart_low_window", ParamValue::Int(-1)),
            ("hystart_ack_delta_us", ParamValue::Float(0.5)),
            ("initial_ssthresh", ParamValue::Int(1 << 31)),
        ];
        for (param, v) in cases {
            let e = err("cubic-ios", &[(param, *v)]);
            match &e {
                CcError::BadValue {
                    algorithm,
                    param: p,
                    ..
                } => {
                    assert_eq!(
                        (algorithm.as_str(), p.as_str()),
                        ("cubic-ios", *param),
                        "{e}"
                    )
                }
                _ => panic!("{param} = {v}: {e}"),
            }
            assert!(
                e.to_string().starts_with(&format!("cc_params.{param} = ")),
                "{e}"
            );
            assert!(e.to_string().contains("accepted "), "{e}");
        }
        // c and bic_scale are one tunable: not both.
        let e = err(
            "cubic",
            &[
                ("c", ParamValue::Float(0.4)),
                ("bic_scale", ParamValue::Int(41)),
            ],
        );
        assert!(
            matches!(&e, CcError::BadValue { param, .. } if param == "bic_scale"),
            "{e}"
        );
    }

    #[test]
    fn accepted_forms() {
        let p = cubic_params(
            "cubic",
            &params(&[
                ("fast_convergence", ParamValue::Int(0)),
                ("tcp_friendliness", ParamValue::Bool(false)),
                ("hystart", ParamValue::Int(1)),
                ("hystart_low_window", ParamValue::Float(32.0)),
                ("beta", ParamValue::Float(0.5)),
                ("c", ParamValue::Int(1)),
            ]),
        )
        .unwrap();
        assert!(!p.fast_convergence && !p.tcp_friendliness && p.hystart);
        assert_eq!(
            (p.hystart_low_window, p.beta_1024(), p.cube_rtt_scale()),
            (32, 512, 1024)
        );
        // bic_scale is Linux's integer form of C: cube_rtt_scale = bic_scale * 10 exactly.
        let p = cubic_params("cubic", &params(&[("bic_scale", ParamValue::Int(41))])).unwrap();
        assert_eq!((p.c, p.cube_rtt_scale()), (0.400390625, 410));
        let p = cubic_params("cubic", &params(&[("bic_scale", ParamValue::Int(25))])).unwrap();
        assert_eq!(p.cube_rtt_scale(), 250);
    }

    #[test]
    fn cubic_ios_preset_yields_beta_08_and_c_025() {
        let info = algorithms()
            .into_iter()
            .find(|a| a.name == "cubic-ios")
            .unwrap();
        let p = cubic_params("cubic-ios", &merge(&info.preset_params, &Params::new())).unwrap();
        assert_eq!((p.beta, p.c), (0.8, 0.25));
        assert_eq!((p.beta_1024(), p.cube_rtt_scale()), (819, 256));
        let cubic = Cubic::new(p).unwrap();
        assert_eq!(cubic.cube_factor(), (1u64 << 40) / 256);
        // Through the trait object: ssthresh = cwnd * 819 / 1024.
        let mut cc = build("cubic-ios", &Params::new()).unwrap();
        let mut tp = TcpSock::new(
            1448,
            1000,
            u32::MAX,
            crate::tcp::clock::KernelClock::new(250),
        );
        cc.init(&mut tp);
        assert_eq!(cc.ssthresh(&mut tp), 799);
        let mut cc = build("cubic", &Params::new()).unwrap();
        cc.init(&mut tp);
        assert_eq!(cc.ssthresh(&mut tp), 700);
        // The user's values apply after the preset's; either form of C replaces the preset's.
        let user = params(&[
            ("beta", ParamValue::Float(0.75)),
            ("bic_scale", ParamValue::Int(30)),
        ]);
        let p = cubic_params("cubic-ios", &merge(&info.preset_params, &user)).unwrap();
        assert_eq!((p.beta, p.cube_rtt_scale()), (0.75, 300));
        build("cubic-ios", &user).unwrap();
    }

    #[test]
    fn param_values_deserialize_untagged() {
        let p: Params =
            serde_json::from_str(r#"{"a": true, "b": 3, "c": 0.25, "d": 1e2}"#).unwrap();
        assert_eq!(p["a"], ParamValue::Bool(true));
        assert_eq!(p["b"], ParamValue::Int(3));
        assert_eq!(p["c"], ParamValue::Float(0.25));
        assert_eq!(p["d"].as_f64(), Some(100.0));
        assert_eq!(ParamValue::Bool(true).as_f64(), None);
        assert_eq!(ParamValue::Int(3).as_f64(), Some(3.0));
        assert_eq!(
            serde_json::to_string(&p).unwrap(),
            r#"{"a":true,"b":3,"c":0.25,"d":100.0}"#
        );
    }
}
