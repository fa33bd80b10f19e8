//! Property tests of the JSON the core reads (issue 18, part 2): random mutations of valid
//! normalised scenarios (tests/data/fuzz-*.json, written by python/cclab's `to_core_json`) —
//! values replaced by wrong types, NaN-free extremes, huge and negative numbers, keys removed or
//! added — either parse, validate and run, or give a `ConfigError` naming a field, whose message
//! carries no JSON position or Rust type name. Never a panic (the test would fail on one) and
//! never `SimError::Internal`.

use cclab_sim::{Scenario, SimError};
use proptest::prelude::*;
use serde_json::{json, Value};

const SEEDS: [&str; 5] = [
    include_str!("data/fuzz-dumbbell.json"),
    include_str!("data/fuzz-fq-codel.json"),
    include_str!("data/fuzz-radio.json"),
    include_str!("data/fuzz-general.json"),
    include_str!("data/fuzz-dcf.json"),
];

/// Replacement values.
fn nasty() -> Vec<Value> {
    vec![
        Value::Null,
        json!(true),
        json!(0),
        json!(-1),
        json!(1),
        json!(0.5),
        json!(-0.5),
        json!(1e300),
        json!(-1e300),
        json!(4294967296u64),
        json!(u64::MAX),
        json!(i64::MIN),
        json!(1e-320),
        json!(""),
        json!("x"),
        json!("cubic"),
        json!("\u{e9}\u{202e}"),
        json!([]),
        json!([1, 2]),
        json!({}),
        json!({"kind": "nope"}),
    ]
}

/// Every path (keys and indices) in `v`.
fn paths(v: &Value, prefix: &mut Vec<Value>, out: &mut Vec<Vec<Value>>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                prefix.push(json!(k));
                out.push(prefix.clone());
                paths(x, prefix, out);
                prefix.pop();
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                prefix.push(json!(i));
                out.push(prefix.clone());
                paths(x, prefix, out);
                prefix.pop();
            }
        }
        _ => {}
    }
}

fn at<'a>(v: &'a mut Value, path: &[Value]) -> &'a mut Value {
    path.iter().fold(v, |cur, p| match p {
        Value::String(k) => &mut cur[k.as_str()],
        Value::Number(i) => &mut cur[i.as_u64().unwrap() as usize],
        _ => unreachable!(),
    })
}

/// Apply mutation (`pick` selects the path, `op` what to do, `val` the value).
fn mutate(v: &mut Value, pick: usize, op: u8, val: usize) {
    let mut all = Vec::new();
    paths(v, &mut Vec::new(), &mut all);
    if all.is_empty() {
        return;
    }
    let path = &all[pick % all.len()];
    let values = nasty();
    let (parent, last) = path.split_at(path.len() - 1);
    let parent = at(v, parent);
    match (op % 3, &last[0]) {
        (0, _) => *at(parent, last) = values[val % values.len()].clone(),
        (1, Value::String(k)) => {
            if let Value::Object(m) = parent {
                m.remove(k);
            }
        }
        (1, Value::Number(i)) => {
            if let Value::Array(a) = parent {
                a.remove(i.as_u64().unwrap() as usize);
            }
        }
        _ => {
            if let Value::Object(m) = parent {
                m.insert(format!("unknown{val}"), values[val % values.len()].clone());
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 256,
        failure_persistence: None,
        // Deterministic in CI: the same cases every run.
        rng_seed: proptest::test_runner::RngSeed::Fixed(18),
        ..ProptestConfig::default()
    })]

    #[test]
    fn mutated_configs_run_or_name_a_field(
        seed in 0usize..SEEDS.len(),
        muts in prop::collection::vec((any::<usize>(), any::<u8>(), any::<usize>()), 1..4),
    ) {
        let mut v: Value = serde_json::from_str(SEEDS[seed]).unwrap();
        for (pick, op, val) in muts {
            mutate(&mut v, pick, op, val);
        }
        let text = v.to_string();
        match Scenario::from_json(&text) {
            Err(e) => {
                prop_assert!(!e.field.is_empty() && !e.message.is_empty(), "{e:?}");
                for bad in [" at line ", " column ", "expected u", "expected i", "expected f"] {
                    prop_assert!(!e.message.contains(bad), "{} says {:?}", e.field, e.message);
                }
            }
            Ok(sc) => {
                // Runs short enough to try (a mutation may have made the run long: not run).
                if sc.duration_s <= 1.0 && sc.flows.len() <= 8 {
                    match cclab_sim::run(&sc, None) {
                        Ok(_) => {}
                        Err(SimError::Config(e)) => prop_assert!(!e.field.is_empty(), "{e:?}"),
                        Err(e) => prop_assert!(false, "{e}"),
                    }
                }
            }
        }
    }
}

#[test]
fn the_seeds_run() {
    for s in SEEDS {
        let sc = Scenario::from_json(s).unwrap();
        cclab_sim::run(&sc, None).unwrap();
    }
}

#[test]
fn json_errors_name_the_field_and_the_range() {
    let mut v: Value = serde_json::from_str(SEEDS[0]).unwrap();
    v["bottleneck"]["fwd"]["queue_pkts"] = json!(4294967296u64);
    let e = Scenario::from_json(&v.to_string()).unwrap_err();
    assert_eq!(e.field, "bottleneck.fwd.queue_pkts");
    assert_eq!(
        e.message,
        "4294967296 is not accepted: a whole number from 0 to 4294967295"
    );
    let text = v.to_string().replace("4294967296", "NaN");
    let e = Scenario::from_json(&text).unwrap_err();
    assert_eq!(e.field, "bottleneck.fwd.queue_pkts");
    assert!(
        e.message.contains("NaN and infinity never are"),
        "{}",
        e.message
    );
    v["bottleneck"]["fwd"]["queue_pkts"] = json!(100);
    v["duration_s"] = json!(1e7);
    let e = Scenario::from_json(&v.to_string()).unwrap_err();
    assert_eq!(e.field, "duration_s");
}
