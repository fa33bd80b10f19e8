//! TCP over an 802.11s mesh chain (`kind = "mesh"` media): five nodes in a line, a bulk CUBIC
//! flow from the first node to the node 1..4 hops away over static routes; every node in
//! between is a router forwarding in zero time. Goodput falls with hops.

use cclab_net::mesh::{MeshSpec, MeshStationStats};
use cclab_net::MacStats;
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

#[test]
fn saturated_udp_carries_the_airtime_closed_form_over_one_hop_and_1_over_n_beyond() {
    // 60 Mbit/s of 1472-byte payloads (1500-byte IP packets) into the chain, 10 s. One hop:
    // one frame per DIFS + CWmin/2 slots + DATA + SIFS + Ack (docs/mesh.md), of which 1472
    // bytes are payload.
    let spec = json!({"spacing_m": 1.0, "queue_pkts": 1000});
    let p = serde_json::from_value::<MeshSpec>(spec.clone())
        .unwrap()
        .params(5);
    let cycle_ns = p.difs_ns as f64
        + f64::from(p.cw_min) / 2.0 * p.slot_ns as f64
        + p.data_ns(1500) as f64
        + p.sifs_ns as f64
        + p.ack_ns as f64;
    let closed_form_bps = 1472.0 * 8.0 / (cycle_ns * 1e-9);
    let mut got = vec![];
    for hops in 1..=3 {
        let mut sc = chain(hops, spec.clone(), 10.0);
        let mut v = serde_json::to_value(&sc).unwrap();
        v["flows"][0]["transport"] = json!("udp");
        v["flows"][0]["rate_bps"] = json!(60_000_000u64);
        v["flows"][0]["payload_bytes"] = json!(1472);
        sc = serde_json::from_value(v).unwrap();
        sc.validate().unwrap();
        let out = run(&sc, None).unwrap();
        let u = out.flow_stats[0].udp.as_ref().expect("udp stats");
        println!(
            "UDP {hops} hop(s): {:.3} Mbit/s received (closed form / hops {:.3}), loss {:.3}",
            u.receive_rate_bps / 1e6,
            closed_form_bps / hops as f64 / 1e6,
            u.loss
        );
        got.push(u.receive_rate_bps);
    }
    let err = got[0] / closed_form_bps - 1.0;
    assert!(err.abs() < 0.03, "one hop: {} vs {closed_form_bps}", got[0]);
    for (i, g) in got.iter().enumerate().skip(1) {
        let r = g * (i + 1) as f64 / got[0];
        assert!((r - 1.0).abs() < 0.05, "{} hops: {r}", i + 1);
    }
}

/// Nodes `n0`, `n1`, `n2` `spacing_m` apart (5 GHz, MCS 0, exponent 3: at 40 m the ends do
/// not sense each other, at 10 m they do), each end sending 10 Mbit/s of UDP to the middle.
fn into_the_middle(spacing_m: f64) -> Scenario {
    let spec = json!({"mcs": 0, "band_ghz": 5.0, "spacing_m": spacing_m,
                      "path_loss_exponent": 3.0, "queue_pkts": 100});
    let udp = |name: &str, from: &str| {
        json!({"name": name, "sender": from, "receiver": "n1", "cc": "cubic", "transport": "udp",
               "rate_bps": 10_000_000u64, "payload_bytes": 1472})
    };
    let v = json!({
        "name": "middle", "duration_s": 5.0, "seed": 1,
        "nodes": [{"name": "n0"}, {"name": "n1"}, {"name": "n2"}],
        "media": [{"name": "mesh", "kind": "mesh", "nodes": ["n0", "n1", "n2"], "spec": spec}],
        "flows": [udp("left", "n0"), udp("right", "n2")],
    });
    let sc: Scenario = serde_json::from_value(v).expect("scenario parses");
    sc.validate().expect("valid scenario");
    sc
}

/// The `mac` counters of lane `name` in the summary.
fn mac(out: &cclab_sim::RunOutput, name: &str) -> MeshStationStats {
    match out
        .link_stats
        .iter()
        .find(|l| l.link == name)
        .and_then(|l| l.mac)
    {
        Some(MacStats::Mesh { stats }) => stats,
        other => panic!("{name}: {other:?}"),
    }
}

#[test]
fn the_summary_carries_hidden_collisions_only_where_terminals_are_hidden() {
    let hidden = run(&into_the_middle(40.0), None).unwrap();
    let sensed = run(&into_the_middle(10.0), None).unwrap();
    for out in [&hidden, &sensed] {
        for l in &out.link_stats {
            let m = mac(out, &l.link);
            assert_eq!(m.retry_drops, l.counters.dropped_retry_pkts, "{}", l.link);
        }
    }
    let ends = |out: &cclab_sim::RunOutput| [mac(out, "mesh.n0"), mac(out, "mesh.n2")];
    for m in ends(&hidden) {
        assert!(m.hidden_collisions > 0 && m.retry_drops > 0, "{m:?}");
    }
    for m in ends(&sensed) {
        assert_eq!(m.hidden_collisions, 0, "{m:?}");
    }
    // In the summary's JSON: the counters and the derived figures.
    let l = hidden
        .link_stats
        .iter()
        .find(|l| l.link == "mesh.n0")
        .unwrap();
    let v = serde_json::to_value(l).unwrap();
    let m = mac(&hidden, "mesh.n0");
    assert_eq!(v["mac"]["kind"], "mesh");
    assert_eq!(v["mac"]["hidden_collisions"], m.hidden_collisions);
    assert_eq!(v["mac"]["residual_loss"].as_f64(), m.residual_loss());
    let share = v["mac"]["hidden_share"].as_f64().unwrap();
    assert!(share > 0.9, "{share}");
    let middle = serde_json::to_value(
        sensed
            .link_stats
            .iter()
            .find(|l| l.link == "mesh.n1")
            .unwrap(),
    )
    .unwrap();
    // The middle node sends nothing: no attempt, so no collision probability.
    assert_eq!(middle["mac"]["attempts"], 0);
    assert!(middle["mac"]["collision_prob"].is_null());
}
