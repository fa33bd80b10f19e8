//! TCP over an 802.11s mesh chain (`kind = "mesh"` media): five nodes in a line, a bulk CUBIC
//! flow from the first node to the node 1..4 hops away over static routes; every node in
//! between is a router forwarding in zero time. Goodput falls with hops.

use cclab_sim::config::Scenario;
use cclab_sim::run;
use serde_json::{json, Value};

/// Five nodes `n0..n4` on mesh `mesh` (`spec`: MeshSpec fields), a CUBIC flow `n0 -> n{hops}`
/// routed hop by hop along the chain (both ways).
fn chain(hops: usize, spec: Value, duration_s: f64) -> Scenario {
    let names: Vec<String> = (0..5).map(|i| format!("n{i}")).collect();
    let nodes: Vec<Value> = (0..5)
        .map(|i| {
            let mut routes = serde_json::Map::new();
            if i < hops {
                routes.insert(names[hops].clone(), json!(names[i + 1]));
            }
            if i > 0 {
                routes.insert(names[0].clone(), json!(names[i - 1]));
            }
            let kind = if i == 0 || i == hops { "host" } else { "router" };
            json!({"name": names[i], "kind": kind, "routes": routes})
        })
        .collect();
    let v = json!({
        "name": format!("chain-{hops}"), "duration_s": duration_s, "seed": 1,
        "sim": {"trace": "change"},
        "nodes": nodes,
        "media": [{"name": "mesh", "kind": "mesh", "nodes": names, "spec": spec}],
        "flows": [{"name": "bulk", "sender": "n0", "receiver": names[hops], "cc": "cubic"}],
    });
    let sc: Scenario = serde_json::from_value(v).expect("scenario parses");
    sc.validate().expect("valid scenario");
    sc
}

#[test]
fn cubic_goodput_falls_with_hops() {
    let spec = json!({"spacing_m": 1.0, "queue_pkts": 1000});
    let mut goodputs = vec![];
    for hops in 1..=4 {
        let out = run(&chain(hops, spec.clone(), 20.0), None).unwrap();
        let g = out.flow_stats[0].goodput_bps;
        println!("{hops} hop(s): CUBIC goodput {:.2} Mbit/s", g / 1e6);
        goodputs.push(g);
    }
    // One hop: below the saturated 39.8 Mbit/s of 1500 B frames (TCP ACKs share the channel),
    // well above half of it.
    assert!((20e6..39.8e6).contains(&goodputs[0]), "{goodputs:?}");
    for w in goodputs.windows(2) {
        assert!(w[1] < 0.8 * w[0], "{goodputs:?}");
    }
    // Roughly 1/n: n hops carry between 1/(1.5 n) and 1.2/n of one hop.
    for (i, g) in goodputs.iter().enumerate() {
        let n = (i + 1) as f64;
        let r = g / goodputs[0] * n;
        assert!((0.66..1.2).contains(&r), "{} hops: {r}", i + 1);
    }
}

#[test]
fn a_scenario_names_a_bad_mesh_field() {
    let v = json!({
        "name": "bad", "duration_s": 1.0,
        "nodes": [{"name": "a"}, {"name": "b"}],
        "media": [{"name": "m", "kind": "mesh", "nodes": ["a", "b"], "spec": {"spacing_m": 0.0}}],
        "flows": [{"name": "f", "sender": "a", "receiver": "b", "cc": "cubic"}],
    });
    let sc: Scenario = serde_json::from_value(v).expect("parses");
    let e = sc.validate().unwrap_err().to_string();
    assert!(e.contains("media[0].spec.spacing_m"), "{e}");
}
