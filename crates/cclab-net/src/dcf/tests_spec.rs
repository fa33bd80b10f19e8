//! The spec's presets, overrides, serde form and validation errors.

use super::rate::RateAdaptation;
use super::spec::{DcfSpec, MAX_CW};
use super::Standard;
use crate::error::NetError;

#[test]
fn presets_resolve_and_fields_override_them() {
    let g = DcfSpec::default().params();
    assert_eq!(
        (
            g.slot_ns,
            g.sifs_ns,
            g.difs_ns,
            g.cw_min,
            g.cw_max,
            g.retry_limit
        ),
        (9_000, 10_000, 28_000, 15, 1023, 7)
    );
    assert_eq!(
        (g.data.rate_bps, g.control.rate_bps),
        (54_000_000, 24_000_000)
    );
    assert_eq!(
        (g.data_ns(1500), g.ack_ns(), g.response_timeout_ns()),
        (254_000, 34_000, 39_000)
    );
    let b = DcfSpec::of(Standard::Dot11b).params();
    assert_eq!((b.slot_ns, b.difs_ns, b.cw_min), (20_000, 50_000, 31));
    assert_eq!((b.data_ns(1500), b.ack_ns()), (1_310_000, 248_000));
    let n = DcfSpec {
        ht_mcs: Some(3),
        ..DcfSpec::of(Standard::Dot11n)
    }
    .params();
    assert_eq!(
        (n.data.rate_bps, n.control.rate_bps),
        (26_000_000, 24_000_000)
    );
    // A long slot moves the derived DIFS; an explicit DIFS wins.
    let long = DcfSpec {
        slot_us: Some(20.0),
        ..DcfSpec::default()
    };
    assert_eq!(long.params().difs_ns, 50_000);
    let spec = DcfSpec {
        difs_us: Some(34.0),
        data_rate_bps: Some(12_000_000),
        ..long
    };
    let p = spec.params();
    assert_eq!((p.difs_ns, p.control.rate_bps), (34_000, 12_000_000));
    assert!(!p.uses_rts(3000));
    let rts = DcfSpec {
        rts_threshold_bytes: Some(500),
        ..DcfSpec::default()
    }
    .params();
    assert!(rts.uses_rts(1500) && !rts.uses_rts(400));
}

#[test]
fn deserialises_with_defaults_and_refuses_unknown_fields() {
    let s: DcfSpec = serde_json::from_str(r#"{"standard": "802.11b", "cw_min": 7}"#).unwrap();
    assert_eq!(
        (s.standard, s.cw_min, s.retry_limit),
        (Standard::Dot11b, Some(7), 7)
    );
    assert!(serde_json::from_str::<DcfSpec>(r#"{"slot": 9}"#).is_err());
    assert!(serde_json::from_str::<DcfSpec>(r#"{"standard": "802.11ax"}"#).is_err());
    let back: DcfSpec = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
    assert_eq!(back, s);
}

#[test]
fn bad_values_name_their_field() {
    let f = |s: DcfSpec| match s.validate_ports("media[2]", 3) {
        Err(NetError::Field { field, message }) => {
            assert!(!message.is_empty());
            field
        }
        other => panic!("{other:?}"),
    };
    let d = DcfSpec::default;
    let cases: Vec<(DcfSpec, &str)> = vec![
        (
            DcfSpec {
                slot_us: Some(0.0),
                ..d()
            },
            "slot_us",
        ),
        (
            DcfSpec {
                sifs_us: Some(f64::NAN),
                ..d()
            },
            "sifs_us",
        ),
        (
            DcfSpec {
                difs_us: Some(-1.0),
                ..d()
            },
            "difs_us",
        ),
        (
            DcfSpec {
                data_rate_bps: Some(0),
                ..d()
            },
            "data_rate_bps",
        ),
        (
            DcfSpec {
                control_rate_bps: Some(0),
                ..d()
            },
            "control_rate_bps",
        ),
        (
            DcfSpec {
                cw_min: Some(2000),
                ..d()
            },
            "cw_min",
        ),
        (
            DcfSpec {
                cw_max: Some(7),
                ..d()
            },
            "cw_max",
        ),
        (
            DcfSpec {
                cw_max: Some(MAX_CW + 1),
                ..d()
            },
            "cw_max",
        ),
        (
            DcfSpec {
                retry_limit: 0,
                ..d()
            },
            "retry_limit",
        ),
        (
            DcfSpec {
                queue_pkts: Some(0),
                ..d()
            },
            "queue_pkts",
        ),
        (
            DcfSpec {
                queue_bytes: Some(0),
                ..d()
            },
            "queue_bytes",
        ),
        (
            DcfSpec {
                frame_error_rate: 1.5,
                ..d()
            },
            "frame_error_rate",
        ),
        (
            DcfSpec {
                frame_error_rates: vec![0.0, -0.1, 0.0],
                ..d()
            },
            "frame_error_rates[1]",
        ),
        (
            DcfSpec {
                frame_error_rates: vec![0.1, 0.1],
                ..d()
            },
            "frame_error_rates",
        ),
        (
            DcfSpec {
                ht_mcs: Some(3),
                ..d()
            },
            "ht_mcs",
        ),
        (
            DcfSpec {
                ht_mcs: Some(8),
                ..DcfSpec::of(Standard::Dot11n)
            },
            "ht_mcs",
        ),
        (
            DcfSpec {
                preamble_us: Some(f64::INFINITY),
                ..d()
            },
            "preamble_us",
        ),
        (
            DcfSpec {
                delay_ms: -0.5,
                ..d()
            },
            "delay_ms",
        ),
        (
            DcfSpec {
                arf_failure_threshold: 0,
                ..d()
            },
            "arf_failure_threshold",
        ),
        (
            DcfSpec {
                arf_success_threshold: 0,
                ..d()
            },
            "arf_success_threshold",
        ),
        (
            DcfSpec {
                arf_timer_threshold: 0,
                rate_adaptation: RateAdaptation::Arf,
                ..d()
            },
            "arf_timer_threshold",
        ),
        (
            DcfSpec {
                arf_success_threshold: 20,
                aarf_max_success_threshold: 15,
                ..d()
            },
            "aarf_max_success_threshold",
        ),
        (
            DcfSpec {
                data_rate_bps: Some(50_000_000),
                rate_adaptation: RateAdaptation::Aarf,
                ..d()
            },
            "data_rate_bps",
        ),
    ];
    for (spec, name) in cases {
        assert_eq!(f(spec), format!("media[2].{name}"));
    }
    assert!(DcfSpec::default().validate_ports("m", 3).is_ok());
    assert!(matches!(
        DcfSpec::default().validate_ports("media[0]", 1),
        Err(NetError::Field { field, .. }) if field == "media[0]"
    ));
}

#[test]
fn rate_adaptation_parses_and_resolves_its_ladder() {
    // Off by default, and absent from the serialised form then (so specs written before it
    // serialise as they did).
    let d = DcfSpec::default();
    assert_eq!(d.rate_adaptation, RateAdaptation::None);
    let json = serde_json::to_value(&d).unwrap();
    for k in [
        "rate_adaptation",
        "arf_failure_threshold",
        "arf_success_threshold",
        "arf_timer_threshold",
        "aarf_max_success_threshold",
    ] {
        assert!(json.get(k).is_none(), "{k}");
    }
    assert_eq!(d.params().rates_bps, [54_000_000]);
    let s: DcfSpec =
        serde_json::from_str(r#"{"rate_adaptation": "arf", "arf_failure_threshold": 3}"#).unwrap();
    assert_eq!(
        (
            s.rate_adaptation,
            s.arf_failure_threshold,
            s.arf_success_threshold
        ),
        (RateAdaptation::Arf, 3, 10)
    );
    let back: DcfSpec = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
    assert_eq!(back, s);
    assert!(serde_json::from_str::<DcfSpec>(r#"{"rate_adaptation": "minstrel"}"#).is_err());
    let p = s.params();
    assert_eq!(p.rates_bps.len(), 8);
    assert_eq!((p.arf.failure_threshold, p.arf.adaptive), (3, false));
    // The standard's rates up to data_rate_bps (or the MCS), slowest first.
    let ladder = |s: DcfSpec| -> Vec<f64> {
        let spec = DcfSpec {
            rate_adaptation: RateAdaptation::Aarf,
            ..s
        };
        assert!(spec.validate("m").is_ok());
        assert!(spec.params().arf.adaptive);
        spec.params()
            .rates_bps
            .iter()
            .map(|&r| r as f64 / 1e6)
            .collect()
    };
    assert_eq!(
        ladder(DcfSpec {
            data_rate_bps: Some(24_000_000),
            ..DcfSpec::default()
        }),
        [6.0, 9.0, 12.0, 18.0, 24.0]
    );
    assert_eq!(ladder(DcfSpec::of(Standard::Dot11b)), [1.0, 2.0, 5.5, 11.0]);
    assert_eq!(
        ladder(DcfSpec {
            ht_mcs: Some(3),
            ..DcfSpec::of(Standard::Dot11n)
        }),
        [6.5, 13.0, 19.5, 26.0]
    );
    // Without rate adaptation any data rate is accepted (a ladder of one).
    let odd = DcfSpec {
        data_rate_bps: Some(50_000_000),
        ..DcfSpec::default()
    };
    assert!(odd.validate("m").is_ok());
    assert_eq!(odd.params().rates_bps, [50_000_000]);
    let e = DcfSpec {
        data_rate_bps: Some(50_000_000),
        rate_adaptation: RateAdaptation::Arf,
        ..DcfSpec::default()
    }
    .validate("media[0].spec")
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("media[0].spec.data_rate_bps") && e.contains("6, 9, 12, 18, 24, 36, 48, 54"),
        "{e}"
    );
}
