//! The middleware in a scenario: parsed, validated under `middleware`, hosts resolved.

use crate::config::{ConfigError, Scenario};
use serde_json::{json, Value};

fn dumbbell(middleware: Value) -> Value {
    json!({
        "name": "mw", "duration_s": 1.0,
        "bottleneck": {"fwd": {"rate_bps": 10_000_000, "delay_ms": 10.0},
                       "rev": {"rate_bps": 10_000_000, "delay_ms": 10.0}},
        "senders": [{"name": "phone1"}, {"name": "phone2"}, {"name": "idle"}],
        "receivers": [{"name": "server"}],
        "flows": [{"name": "a", "sender": "phone1", "receiver": "server", "cc": "cubic"},
                  {"name": "b", "sender": "phone2", "receiver": "server", "cc": "cubic"}],
        "middleware": middleware,
    })
}

fn parse(v: Value) -> Result<Scenario, ConfigError> {
    Scenario::from_json(&v.to_string())
}

#[test]
fn absent_means_off() {
    let mut v = dumbbell(Value::Null);
    v.as_object_mut().unwrap().remove("middleware");
    let sc = parse(v).unwrap();
    assert!(sc.middleware.is_none());
    assert!(sc.middleware_hosts().is_empty());
}

#[test]
fn defaults_run_on_every_host_that_sends() {
    let sc = parse(dumbbell(json!({}))).unwrap();
    assert_eq!(sc.middleware.as_ref().unwrap().rows().len(), 5);
    assert_eq!(sc.middleware_hosts(), ["phone1", "phone2"]);
    let sc = parse(dumbbell(json!({"hosts": ["idle", "phone2"]}))).unwrap();
    assert_eq!(sc.middleware_hosts(), ["phone2", "idle"]);
    let sc = parse(dumbbell(json!({"enabled": false}))).unwrap();
    assert!(sc.middleware_hosts().is_empty());
}

#[test]
fn errors_name_the_field() {
    let e = parse(dumbbell(json!({"hosts": ["phone9"]}))).unwrap_err();
    assert_eq!(e.field, "middleware.hosts[0]");
    assert!(e.message.contains("no host"), "{e}");
    let e = parse(dumbbell(json!({"table": "fastest"}))).unwrap_err();
    assert_eq!(e.field, "middleware.table");
    let e = parse(dumbbell(
        json!({"table": [{"from_ratio_rtt_ms": 0, "upper_pkts": 1, "lower_pkts": 2}]}),
    ))
    .unwrap_err();
    assert_eq!(e.field, "middleware.table[0].upper_pkts");
    // Unknown keys are refused by serde.
    let e = parse(dumbbell(json!({"bwmax": 1}))).unwrap_err();
    assert!(e.message.contains("bwmax"), "{e}");
}

#[test]
fn a_router_cannot_run_it() {
    let v = json!({
        "name": "g", "duration_s": 1.0,
        "nodes": [{"name": "t1"}, {"name": "ap", "kind": "router"}, {"name": "srv"}],
        "links": [
            {"name": "l1", "endpoints": ["t1", "ap"], "fwd": {"rate_bps": 1_000_000}, "rev": {"rate_bps": 1_000_000}},
            {"name": "l2", "endpoints": ["ap", "srv"], "fwd": {"rate_bps": 1_000_000}, "rev": {"rate_bps": 1_000_000}}],
        "flows": [{"name": "f", "sender": "t1", "receiver": "srv", "cc": "cubic"}],
        "middleware": {"hosts": ["ap"]},
    });
    let e = parse(v.clone()).unwrap_err();
    assert_eq!(e.field, "middleware.hosts[0]");
    assert!(e.message.contains("router"), "{e}");
    let mut ok = v;
    ok["middleware"] = json!({"min_terminals": 2});
    assert_eq!(parse(ok).unwrap().middleware_hosts(), ["t1"]);
}
