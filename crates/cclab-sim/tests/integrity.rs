//! Determinism and delivery integrity.

mod common;
use cclab_net::loss::LossModel;
use common::*;

fn lossy(seed: u64) -> Dumbbell {
    Dumbbell::new(20_000_000, 60.0)
        .queue_pkts(100)
        .loss(1e-2)
        .duration_s(20.0)
        .seed(seed)
        .trace(TraceMode::Ack)
        .flow(Flow::new("cubic"))
}

#[test]
fn same_seed_same_trace_bit_for_bit() {
    let a = lossy(7).run();
    let b = lossy(7).run();
    assert_eq!(a.flows.t_s.len(), b.flows.t_s.len());
    assert!(a
        .flows
        .t_s
        .iter()
        .zip(&b.flows.t_s)
        .all(|(x, y)| x.to_bits() == y.to_bits()));
    assert_eq!(a.flows.cwnd_pkts, b.flows.cwnd_pkts);
    assert_eq!(a.flows.delivered_bytes, b.flows.delivered_bytes);
    assert_eq!(a.events.detail, b.events.detail);
    assert_eq!(a.events_processed, b.events_processed);
}

#[test]
fn different_seeds_differ() {
    let a = lossy(1).run();
    let b = lossy(2).run();
    assert_ne!(a.flows.cwnd_pkts, b.flows.cwnd_pkts);
}

/// A fixed-size transfer through heavy loss on both directions, a burst-loss channel and an
/// outage: the receiver's application gets exactly every byte, in order, and the flow ends.
#[test]
fn every_byte_once_in_order_through_loss_and_outage() {
    let size: u64 = 3_000_017; // not a multiple of the MSS
    for (sack, ts) in [(true, true), (false, true), (true, false), (false, false)] {
        let out = Dumbbell::new(8_000_000, 80.0)
            .name("integrity")
            .duration_s(300.0)
            .seed(3)
            .queue_pkts(60)
            .loss_model(LossModel::GilbertElliott {
                p_good_bad: 0.01,
                p_bad_good: 0.3,
                loss_good: 0.005,
                loss_bad: 0.4,
            })
            .outage(2.0, 1.5)
            .rev_loss_model(LossModel::Bernoulli { p: 0.02 })
            .flow(
                Flow::new("reno")
                    .name("f")
                    .size_bytes(size)
                    .sack(sack)
                    .timestamps(ts),
            )
            .run();
        let st = &out.flow_stats[0];
        assert_eq!(st.delivered_bytes, size, "sack={sack} ts={ts}: {st:?}");
        assert!(
            st.completion_s.is_some(),
            "sack={sack} ts={ts}: transfer did not finish"
        );
        assert!(st.retrans_pkts > 0);
        // delivered_bytes in the trace never decreases
        assert!(out.flows.delivered_bytes.windows(2).all(|w| w[0] <= w[1]));
    }
}
