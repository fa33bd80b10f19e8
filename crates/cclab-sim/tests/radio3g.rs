//! TCP over a 3G radio link (study S3): the bottleneck's two directions are 384 kbit/s down and
//! 64 kbit/s up with 150 ms each way, and a radio model (RLC acknowledged mode, delay spikes;
//! crates/cclab-net/src/radio). The links table shows the RLC's discards and delays.

mod common;
use common::*;
use serde_json::{json, Value};

/// A CUBIC bulk flow down a 3G link whose data direction has `radio` (scenario fields) and
/// whose ACK direction has `rev_radio`.
fn three_g(radio: Value, rev_radio: Value, duration_s: f64, seed: u64) -> cclab_sim::RunOutput {
    let path = Dumbbell::new(384_000, 300.0)
        .duration_s(duration_s)
        .seed(seed);
    three_g_on(path.flow(Flow::new("cubic")), radio, rev_radio)
}

/// `path` (a dumbbell of 384 kbit/s with its flows) made the 3G link: 64 kbit/s up, `radio`
/// on the data direction and `rev_radio` on the ACKs'.
fn three_g_on(path: Dumbbell, radio: Value, rev_radio: Value) -> cclab_sim::RunOutput {
    let mut v = path.to_json();
    v["bottleneck"]["fwd"]["radio"] = radio;
    v["bottleneck"]["rev"]["radio"] = rev_radio;
    v["bottleneck"]["rev"]["rate_bps"] = json!(64_000);
    let sc: cclab_sim::Scenario = serde_json::from_value(v).expect("scenario parses");
    sc.validate().expect("valid");
    cclab_sim::run(&sc, None).expect("run succeeds")
}

#[test]
fn rlc_discards_show_in_the_links_table_at_the_closed_form_rate() {
    // PDU errors 5 %, MaxDAT 3: a 1500 B packet (36 PDUs) is discarded with probability
    // 1 - (1 - 0.05^3)^36 = 0.0045; ACKs (52 B, 2 PDUs) with 2.5e-4.
    let radio = json!({"pdu_loss_model": {"kind": "bernoulli", "p": 0.05}, "max_dat": 3});
    let out = three_g(radio.clone(), radio, 300.0, 1);
    let down = &out.link_stats[0].counters;
    assert_eq!(out.link_stats[0].link, "bottleneck.fwd");
    let (n, got) = (down.enqueued_pkts as f64, down.dropped_rlc_pkts as f64);
    assert!(n > 5000.0, "{n}");
    let p = 1.0 - (1.0 - 0.05f64.powi(3)).powi(36);
    // 4 standard errors, plus the few packets still in the link at the end.
    let tol = 4.0 * (n * p * (1.0 - p)).sqrt() + 5.0;
    assert!(
        (got - n * p).abs() < tol,
        "{got} discards of {n}, want {}",
        n * p
    );
    assert_eq!(down.dropped_pkts(), down.dropped_rlc_pkts, "no other drops");
    // The links table's drops column of the data direction ends at the same count (less what
    // was discarded after the last sample).
    let last = (0..out.links.link.len())
        .rev()
        .find(|&i| out.links.link[i] == 0)
        .unwrap();
    assert!(out.links.drops[last] <= down.dropped_rlc_pkts);
    assert!(out.links.drops[last] + 3 >= down.dropped_rlc_pkts);
    // The flow sees the discards as losses and recovers; it keeps the link busy.
    let f = &out.flow_stats[0];
    assert!(f.retrans_pkts >= down.dropped_rlc_pkts / 2, "{f:?}");
    assert!(f.goodput_bps > 200_000.0, "{}", f.goodput_bps);
}

#[test]
fn rlc_retransmissions_lengthen_the_rtt_by_whole_intervals() {
    // No discards (MaxDAT 10) and no errors on the ACK direction: the smallest RTT is the base
    // 300 ms plus serialisation, and a data packet needs at least one retransmission with
    // probability 1 - 0.95^36 = 0.84, so the smoothed RTT sits 400 ms or more above it.
    let radio = json!({"pdu_loss_model": {"kind": "bernoulli", "p": 0.05}, "max_dat": 10});
    let out = three_g(radio, json!({}), 120.0, 2);
    assert_eq!(out.link_stats[0].counters.dropped_pkts(), 0);
    let f = &out.flows;
    let min_rtt = f
        .min_rtt_ms
        .iter()
        .copied()
        .filter(|&x| x > 0.0)
        .fold(f64::MAX, f64::min);
    assert!((300.0..400.0).contains(&min_rtt), "{min_rtt}");
    let late: Vec<f64> = (0..f.t_s.len())
        .filter(|&i| f.t_s[i] > 30.0)
        .map(|i| f.srtt_ms[i])
        .collect();
    let mean = late.iter().sum::<f64>() / late.len() as f64;
    assert!(
        mean > min_rtt + 400.0,
        "mean srtt {mean} ms, min rtt {min_rtt} ms"
    );
    // Retransmitted PDUs take capacity: more bytes went on the air than were delivered.
    let c = &out.link_stats[0].counters;
    assert!(c.tx_bytes as f64 > 1.05 * c.delivered_bytes as f64, "{c:?}");
}

#[test]
fn mobility_presets_run_and_repeat_bit_for_bit() {
    let run = |seed| {
        let out = three_g(
            json!({"mobility": "express-train"}),
            json!({"mobility": "express-train"}),
            200.0,
            seed,
        );
        (
            out.link_stats
                .iter()
                .map(|l| l.counters)
                .collect::<Vec<_>>(),
            out.flows.srtt_ms.clone(),
        )
    };
    let a = run(3);
    assert_eq!(a, run(3));
    assert_ne!(a, run(4));
    assert!(a.0[0].delivered_pkts > 1000, "{:?}", a.0[0]);
}

#[test]
fn fades_stall_both_directions_and_cause_spurious_timeouts() {
    // Error-free PDUs, fades of exactly 5 s about every 20 s of radio-up time; a window of at
    // most 20 packets (the queue never overflows, the RTT stays near 1 s): the flow times out
    // in fades although the link loses nothing, and the timeouts are found spurious once the
    // held packets and ACKs arrive.
    let radio = json!({"spike_rate_per_s": 0.05, "spike_duration_min_ms": 5000,
                       "spike_duration_mean_ms": 5000});
    let path = Dumbbell::new(384_000, 300.0)
        .duration_s(300.0)
        .seed(5)
        .flow(Flow::new("cubic").max_cwnd_pkts(20));
    let out = three_g_on(path, radio.clone(), radio);
    for l in &out.link_stats {
        assert_eq!(l.counters.dropped_pkts(), 0, "{l:?}");
    }
    let f = &out.flow_stats[0];
    assert!(f.rto_count >= 5, "{f:?}");
    assert!(f.undo_count >= f.rto_count / 2, "{f:?}");
    // Nothing reaches either end during a fade: the longest gap between ACK-driven rows of
    // the flow trace is at least a fade long.
    let t = &out.flows.t_s;
    let longest = t.windows(2).map(|w| w[1] - w[0]).fold(0.0, f64::max);
    assert!(longest >= 4.9, "{longest}");
}
