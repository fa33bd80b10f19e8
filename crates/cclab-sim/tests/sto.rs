//! Spurious timeouts through whole scenarios (issue 14 parts 3 and 4): one scheduled delay
//! spike longer than the RTO on a steady flow gives exactly one RTO, spurious by the world's
//! ground truth, detected by F-RTO (by the timestamps when they are on), with cwnd and ssthresh
//! as the chosen response says and the unneeded retransmissions counted as the receiver got
//! them; an outage that drops gives a timeout that is not spurious.

mod common;
use common::*;

/// The `sto` rows: (t_s, detail).
fn sto_rows(out: &cclab_sim::RunOutput) -> Vec<(f64, String)> {
    rows(out, "sto")
}

fn rows(out: &cclab_sim::RunOutput, kind: &str) -> Vec<(f64, String)> {
    let ev = &out.events;
    (0..ev.t_s.len())
        .filter(|&i| ev.kind[i] == kind)
        .map(|i| (ev.t_s[i], ev.detail[i].clone()))
        .collect()
}

/// The value of `name=` in an event's detail.
fn field<'a>(detail: &'a str, name: &str) -> &'a str {
    detail
        .split(' ')
        .find_map(|kv| kv.strip_prefix(name).and_then(|v| v.strip_prefix('=')))
        .unwrap_or_else(|| panic!("no {name} in {detail:?}"))
}

fn num(detail: &str, name: &str) -> u64 {
    field(detail, name).parse().expect("a number")
}

/// A Reno flow held at 40 packets (below the 50-packet BDP: no queueing, no loss) on 2 Mbit/s
/// and 300 ms; at 10 s every packet entering the bottleneck for 10 ms is held 1.2 s more, so
/// the ACK clock stops for longer than the RTO (~0.5 s) but less than the backed-off one.
fn spike(flow: Flow) -> cclab_sim::RunOutput {
    Dumbbell::new(2_000_000, 300.0)
        .queue_pkts(1000)
        .duration_s(20.0)
        .delay_spike(10.0, 0.01, 1200.0)
        .flow(flow.max_cwnd_pkts(40))
        .run()
}

fn reno(frto: bool, ts: bool) -> Flow {
    Flow::new("reno").frto(frto).timestamps(ts).sack(true)
}

/// The test: exactly one RTO, spurious, detected by F-RTO (by Eifel with timestamps);
/// every retransmission was unneeded and is counted once.
#[test]
fn a_spike_longer_than_the_rto_is_one_detected_spurious_timeout() {
    for (ts, detector) in [(false, "frto"), (true, "eifel")] {
        let out = spike(reno(true, ts));
        let st = &out.flow_stats[0];
        assert_eq!(st.rto_count, 1, "timestamps {ts}: {st:?}");
        assert_eq!((st.sto_count, st.sto_detected), (1, 1), "{st:?}");
        let sto = sto_rows(&out);
        assert_eq!(sto.len(), 1);
        let d = &sto[0].1;
        assert_eq!(field(d, "spurious"), "yes", "{d}");
        assert_eq!(field(d, "detected"), detector, "{d}");
        assert_eq!(field(d, "undetected"), "-", "{d}");
        // No packet was lost: every retransmission reached a receiver that had the data.
        assert!(st.retrans_pkts >= 1);
        assert_eq!(st.spurious_retrans_pkts, st.retrans_pkts, "{st:?}");
        assert_eq!(num(d, "unneeded_pkts"), st.retrans_pkts);
        assert_eq!(rows(&out, "drop").len(), 0);
        // The row is at the RTO's time.
        assert_eq!(sto[0].0, rows(&out, "rto")[0].0);
    }
}

/// Without any detector the same spike is an undetected STO and go-back-N resends the window:
/// all those retransmissions are unneeded, and counted.
#[test]
fn undetected_spike_counts_the_go_back_n_retransmissions() {
    let out = spike(reno(false, false).field("dsack_undo", false));
    let d = &sto_rows(&out)[0].1;
    assert_eq!(field(d, "undetected"), "timestamps_off", "{d}");
    let out = spike(
        reno(false, false)
            .field("dsack_undo", false)
            .field("eifel_detection", false),
    );
    let st = &out.flow_stats[0];
    assert_eq!((st.rto_count, st.sto_count, st.sto_detected), (1, 1, 0));
    let d = &sto_rows(&out)[0].1;
    assert_eq!(field(d, "undetected"), "detection_off", "{d}");
    assert!(st.retrans_pkts > 10, "go-back-N: {st:?}");
    assert_eq!(st.spurious_retrans_pkts, st.retrans_pkts, "{st:?}");
    let frto = spike(reno(true, false));
    assert!(frto.flow_stats[0].spurious_retrans_pkts < st.spurious_retrans_pkts);
}

/// The paper's first reason (its Table 4): the transfer's last segments are held by the spike,
/// so after the timeout F-RTO has no new data to send and gives up (`fin`); without timestamps
/// or D-SACKs nothing else detects it. With D-SACKs it is detected late, F-RTO's give-up kept.
#[test]
fn a_short_transfer_caught_by_the_spike_is_undetected_for_want_of_new_data() {
    let short = |dsack: bool| {
        Dumbbell::new(2_000_000, 300.0)
            .queue_pkts(1000)
            .duration_s(20.0)
            .delay_spike(10.0, 0.05, 1200.0)
            .flow(
                // No handshake: the data itself starts at 9.99 s, just before the spike.
                reno(true, false)
                    .tlp(false)
                    .handshake(false)
                    .start_s(9.99)
                    .size_bytes(10 * 1448)
                    .field("dsack_undo", dsack),
            )
            .run()
    };
    let out = short(false);
    let st = &out.flow_stats[0];
    assert_eq!(
        (st.rto_count, st.sto_count, st.sto_detected),
        (1, 1, 0),
        "{st:?}"
    );
    let d = &sto_rows(&out)[0].1;
    assert_eq!(field(d, "undetected"), "fin", "{d}");
    let out = short(true);
    let d = &sto_rows(&out)[0].1;
    assert_eq!(
        (field(d, "detected"), field(d, "frto_abort")),
        ("dsack", "fin"),
        "{d}"
    );
}

/// cwnd and ssthresh after the detected STO, per response (Reno: the window was 40 and
/// ssthresh infinite before the spike; the timeout sets ssthresh = 20).
#[test]
fn each_response_sets_cwnd_and_ssthresh_as_it_says() {
    const INFINITE: u64 = 0x7fff_ffff;
    // Linux's undo: cwnd = max(cwnd, prior_cwnd) = 40, ssthresh back to infinite.
    let out = spike(reno(true, false));
    let (t_undo, _) = rows(&out, "undo")[0].clone();
    let f = &out.flows;
    let last = (0..f.t_s.len()).rfind(|&i| f.t_s[i] <= t_undo).unwrap();
    assert_eq!(
        (f.cwnd_pkts[last], f.ssthresh_pkts[last] as u64),
        (40, INFINITE)
    );
    assert!(rows(&out, "sto_response").is_empty());

    // RFC 4015: cwnd = FlightSize + min(acked, IW), ssthresh = pipe_prev = max(40, infinite).
    let out = spike(reno(true, false).field("sto_response", "eifel"));
    let r = rows(&out, "sto_response");
    assert_eq!(r.len(), 1, "{r:?}");
    let d = &r[0].1;
    assert_eq!(
        num(d, "cwnd"),
        num(d, "in_flight") + num(d, "acked_pkts").min(10),
        "{d}"
    );
    assert_eq!(num(d, "ssthresh"), INFINITE, "{d}");
    assert_eq!(out.flow_stats[0].sto_detected, 1);

    // The paper's RFC 2861-like: cwnd unchanged (40), ssthresh halved (20).
    let out = spike(reno(true, false).field("sto_response", "rfc2861"));
    let d = &rows(&out, "sto_response")[0].1;
    assert_eq!((num(d, "cwnd"), num(d, "ssthresh")), (40, 20), "{d}");

    // Reno: nothing detects or undoes it; cwnd restarts from the timeout's, ssthresh 20.
    let out = spike(reno(false, false).field("sto_response", "reno"));
    let st = &out.flow_stats[0];
    assert_eq!(
        (st.rto_count, st.sto_count, st.sto_detected, st.undo_count),
        (1, 1, 0, 0)
    );
    let d = &sto_rows(&out)[0].1;
    assert_eq!(field(d, "undetected"), "detection_off", "{d}");
    let (t_rto, _) = rows(&out, "rto")[0].clone();
    let f = &out.flows;
    let at = (0..f.t_s.len()).find(|&i| f.t_s[i] >= t_rto).unwrap();
    assert_eq!(f.ssthresh_pkts[at], 20);
    assert!(f.cwnd_pkts[at] <= 2, "cwnd {}", f.cwnd_pkts[at]);
}

/// sto_response = "reno" with F-RTO on is refused, naming the field.
#[test]
fn reno_response_with_frto_is_refused() {
    let json = Dumbbell::new(2_000_000, 300.0)
        .flow(Flow::new("reno").field("sto_response", "reno"))
        .to_json();
    let e = cclab_sim::config::Scenario::from_json(&json.to_string()).unwrap_err();
    assert_eq!(e.field, "flows[0].frto", "{e}");
}

/// Random losses heavy enough for tail losses: every timeout the world calls genuine
/// retransmitted a segment whose every copy had been dropped (a `drop` event for its sequence
/// before the RTO), and there is at least one.
#[test]
fn a_dropped_head_makes_a_genuine_timeout() {
    let out = Dumbbell::new(2_000_000, 300.0)
        .queue_pkts(1000)
        .loss(0.25)
        .duration_s(60.0)
        .flow(reno(true, true).max_cwnd_pkts(40))
        .run();
    let st = &out.flow_stats[0];
    let drops = rows(&out, "drop");
    let sto = sto_rows(&out);
    assert_eq!(sto.len() as u64, st.rto_count);
    let genuine: Vec<_> = sto
        .iter()
        .filter(|(_, d)| field(d, "spurious") == "no")
        .collect();
    assert!(!genuine.is_empty(), "{st:?}");
    for (t, d) in &genuine {
        let seq = field(d, "seq");
        assert!(
            drops
                .iter()
                .any(|(td, dd)| td <= t && field(dd, "seq") == seq),
            "no drop of {seq} before {t}"
        );
    }
    assert_eq!(st.sto_count, (sto.len() - genuine.len()) as u64, "{st:?}");
}

/// An outage here holds packets (the link serves nothing, its queue keeps them): the segment
/// the timeout retransmits waits in the queue and arrives after the outage, so that timeout is
/// spurious by the definition, as the paper's delay spikes are; the timestamps detect it.
#[test]
fn an_outage_that_holds_the_head_gives_a_spurious_timeout() {
    let out = Dumbbell::new(2_000_000, 300.0)
        .queue_pkts(1000)
        .duration_s(20.0)
        .outage(10.0, 2.0)
        .flow(reno(true, true).max_cwnd_pkts(40))
        .run();
    let st = &out.flow_stats[0];
    assert!(st.rto_count >= 1, "{st:?}");
    assert!(rows(&out, "drop").is_empty());
    let sto = sto_rows(&out);
    assert_eq!(field(&sto[0].1, "spurious"), "yes", "{sto:?}");
    assert_eq!(st.sto_count, st.rto_count, "{st:?}");
}
