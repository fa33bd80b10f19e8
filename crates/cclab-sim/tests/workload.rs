//! Workloads: a flow's connections one after another (`flows[].workload`, src/workload.rs).

mod common;
use common::{Dumbbell, Flow};
use serde_json::json;

/// The summary's per-connection rows and the events, for a workload flow.
fn conns(out: &cclab_sim::RunOutput) -> Vec<cclab_sim::ConnStats> {
    out.flow_stats[0]
        .connections
        .clone()
        .expect("a workload lists its connections")
}

#[test]
fn connections_follow_one_another_after_the_think_time() {
    // 1 Mbit/s, RTT 100 ms: three 20 kB transfers, 0.5 s apart.
    let out = Dumbbell::new(1_000_000, 100.0)
        .duration_s(10.0)
        .flow(
            Flow::new("cubic")
                .size_bytes(20_000)
                .workload(json!({"connections": 3, "think_time_s": 0.5})),
        )
        .run();
    let c = conns(&out);
    assert_eq!(c.len(), 3);
    for (k, x) in c.iter().enumerate() {
        assert_eq!(x.conn, k as u32);
        assert_eq!(x.size_bytes, 20_000);
        assert_eq!(
            x.delivered_bytes, 20_000,
            "connection {k} delivered everything"
        );
        let done = x.completion_s.expect("completed");
        // At least the data's serialisation at 1 Mbit/s plus the one-way delay.
        assert!(x.transfer_time_s.unwrap() > 0.16 + 0.05, "{x:?}");
        if let Some(next) = c.get(k + 1) {
            assert!(
                (next.start_s - (done + 0.5)).abs() < 1e-9,
                "{next:?} starts 0.5 s after {x:?}"
            );
        }
    }
    let f = &out.flow_stats[0];
    assert_eq!(f.delivered_bytes, 60_000);
    assert_eq!(f.sent_pkts, c.iter().map(|x| x.sent_pkts).sum::<u64>());
    assert!((f.completion_s.unwrap() - c[2].completion_s.unwrap()).abs() < 1e-12);
    // Every connection opens with a fresh window: each sends its initial window at its start.
    let starts: Vec<_> = (0..out.events.kind.len())
        .filter(|&i| out.events.kind[i] == "conn_start")
        .map(|i| out.events.detail[i].clone())
        .collect();
    assert_eq!(
        starts,
        [
            "conn=0 size_bytes=20000",
            "conn=1 size_bytes=20000",
            "conn=2 size_bytes=20000"
        ]
    );
}

#[test]
fn a_web_mix_draws_the_same_sizes_for_a_seed_and_others_for_another() {
    let run = |seed| {
        Dumbbell::new(2_000_000, 100.0)
            .seed(seed)
            .duration_s(30.0)
            .flow(Flow::new("cubic").workload(
                json!({"connections": 20, "sizes": "web", "think_time_s": 0.2,
                                                     "think_time_dist": "exponential"}),
            ))
            .run()
    };
    let sizes =
        |o: &cclab_sim::RunOutput| conns(o).iter().map(|c| c.size_bytes).collect::<Vec<_>>();
    let (a, b, c) = (run(1), run(1), run(2));
    assert_eq!(sizes(&a), sizes(&b));
    assert_ne!(sizes(&a), sizes(&c));
    assert!(sizes(&a).iter().all(|&s| (1..=1_000_000).contains(&s)));
    // Later connections start only after earlier ones complete.
    let cs = conns(&a);
    for w in cs.windows(2) {
        assert!(w[1].start_s >= w[0].completion_s.unwrap());
    }
}

#[test]
fn a_workload_on_a_udp_flow_is_refused_by_name() {
    let sc = Dumbbell::new(1_000_000, 100.0)
        .flow(Flow::udp(100_000, 1000).workload(json!({"connections": 2})))
        .to_json();
    let e = cclab_sim::Scenario::from_json(&sc.to_string()).unwrap_err();
    assert_eq!(e.field, "flows[0].workload", "{e}");
}
