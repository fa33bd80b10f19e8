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
            let kind = if i == 0 || i == hops {
                "host"
            } else {
                "router"
            };
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
        assert!(w[1] < 0.9 * w[0], "{goodputs:?}");
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

/// Goodput over 1..=4 hops and the exponent of a power-law fit `g ~ n^-a` (least squares in
/// log-log).
fn fit(spec: &Value, duration_s: f64) -> (Vec<f64>, f64) {
    let g: Vec<f64> = (1..=4)
        .map(|h| {
            run(&chain(h, spec.clone(), duration_s), None)
                .unwrap()
                .flow_stats[0]
                .goodput_bps
        })
        .collect();
    let xs: Vec<f64> = (1..=4).map(|n| (n as f64).ln()).collect();
    let ys: Vec<f64> = g.iter().map(|v| v.ln()).collect();
    let (mx, my) = (xs.iter().sum::<f64>() / 4.0, ys.iter().sum::<f64>() / 4.0);
    let sxy: f64 = xs.iter().zip(&ys).map(|(x, y)| (x - mx) * (y - my)).sum();
    let sxx: f64 = xs.iter().map(|x| (x - mx) * (x - mx)).sum();
    (g, -sxy / sxx)
}

#[test]
fn lossy_hops_fall_faster_than_clean_ones() {
    let clean = json!({"spacing_m": 1.0, "queue_pkts": 1000});
    let campus = json!({"spacing_m": 1.0, "queue_pkts": 1000, "environment": "campus"});
    // Residual per-hop loss: a 40 % MPDU error floor and 4 attempts leave 0.4^4 = 2.6 %.
    let lossy =
        json!({"spacing_m": 1.0, "queue_pkts": 1000, "frame_error_rate": 0.4, "retry_limit": 4});
    let mut a = vec![];
    for (name, spec) in [("clean", clean), ("campus", campus), ("lossy", lossy)] {
        let (g, exponent) = fit(&spec, 20.0);
        let mbps: Vec<String> = g.iter().map(|v| format!("{:.2}", v / 1e6)).collect();
        println!(
            "{name}: {} Mbit/s over 1-4 hops, exponent {exponent:.2}",
            mbps.join(" / ")
        );
        a.push(exponent);
    }
    assert!((0.85..1.15).contains(&a[0]), "{a:?}");
    assert!(a[2] > a[0] + 0.2, "{a:?}");
}
