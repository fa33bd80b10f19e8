//! DCTCP (Linux 6.18 net/ipv4/tcp_dctcp.c) end to end on a data-centre path: 100 Mbit/s, 2 ms
//! RTT (BDP 17 packets), a 200-packet drop-tail buffer that CE-marks ECT packets once it holds
//! K = 20. The flow's `ecn` is "low": the receiver's precise CE echo that a DCTCP receiver
//! gives (`dctcp_ece_ack_update`). DCTCP holds the queue near K with full goodput and no loss,
//! cutting cwnd by alpha / 2 (alpha: the EWMA of the marked fraction) rather than by half.
//!
//! Against Reno on the same path: without ECN Reno fills the buffer and drops; with classic ECN
//! at the same K its queue is shorter on average but swings from empty to K (it halves), and it
//! loses goodput; to match Reno's goodput DCTCP needs a far smaller K and keeps a far shorter
//! queue (the DCTCP paper's claim: K >= BDP / 7 suffices).
//!
//! Measured figures: `cargo test --release -p cclab-sim --test dctcp -- --nocapture`.

mod common;
use common::*;

const MSS: f64 = 1448.0;
const RATE_BPS: u64 = 100_000_000;
const RTT_MS: f64 = 2.0;
const QUEUE_PKTS: u32 = 200;
const K: u32 = 20;
const DURATION_S: f64 = 10.0;
/// Statistics skip the start-up (slow start and its first reductions).
const WARM_UP_S: f64 = 1.0;

/// One flow over the data-centre dumbbell, marking at `k_pkts` on the data direction; links
/// sampled every 0.1 ms (a packet takes 0.12 ms at 100 Mbit/s).
fn path(cc: &str, ecn: EcnMode, k_pkts: u32, loss: f64) -> Dumbbell {
    Dumbbell::new(RATE_BPS, RTT_MS)
        .queue_pkts(QUEUE_PKTS)
        .loss(loss)
        .duration_s(DURATION_S)
        .ecn_threshold_pkts(k_pkts)
        .trace(TraceMode::Change)
        .trace_interval_ms(0.1)
        .flow(Flow::new(cc).ecn(ecn).mss_bytes(MSS as u32))
}

/// Payload rate of the link at MSS + 52 bytes on the wire, bit/s.
fn ceiling_bps() -> f64 {
    RATE_BPS as f64 * MSS / (MSS + 52.0)
}

/// What one run gives.
struct Run {
    out: cclab_sim::RunOutput,
    /// Queue of the data direction after the warm-up, packets.
    queue: Vec<u32>,
    /// (t, cwnd, ssthresh) of every ECN reduction ("cwr" event).
    cwrs: Vec<(f64, u32, u32)>,
    goodput: f64,
}

impl Run {
    fn new(d: &Dumbbell) -> Run {
        let out = d.run();
        let l = &out.links;
        let queue = (0..l.t_s.len())
            .filter(|&i| l.link[i] == 0 && l.t_s[i] >= WARM_UP_S)
            .map(|i| l.queue_pkts[i])
            .collect();
        let cwrs = cwr_events(&out);
        let goodput = out.flow_stats[0].goodput_bps / ceiling_bps();
        Run {
            out,
            queue,
            cwrs,
            goodput,
        }
    }

    fn mean_queue(&self) -> f64 {
        self.queue.iter().map(|&x| x as f64).sum::<f64>() / self.queue.len() as f64
    }

    fn sd_queue(&self) -> f64 {
        let m = self.mean_queue();
        let var = self
            .queue
            .iter()
            .map(|&x| (x as f64 - m).powi(2))
            .sum::<f64>()
            / self.queue.len() as f64;
        var.sqrt()
    }

    fn max_queue(&self) -> u32 {
        *self.queue.iter().max().unwrap()
    }

    /// The largest queue of the whole run, start-up included.
    fn max_queue_all(&self) -> u32 {
        let l = &self.out.links;
        (0..l.t_s.len())
            .filter(|&i| l.link[i] == 0)
            .map(|i| l.queue_pkts[i])
            .max()
            .unwrap()
    }

    /// ssthresh / cwnd of the reductions after the warm-up.
    fn reduction_ratios(&self) -> Vec<f64> {
        self.cwrs
            .iter()
            .filter(|c| c.0 >= WARM_UP_S)
            .map(|&(_, cwnd, ssthresh)| ssthresh as f64 / cwnd as f64)
            .collect()
    }

    fn summary(&self, label: &str) -> String {
        let st = &self.out.flow_stats[0];
        let r = self.reduction_ratios();
        format!(
            "{label}: goodput {:.4} of the link, queue mean {:.2} sd {:.2} max {} (whole run {}), \
             retrans {} drops {} ce_marks {} reductions {} ssthresh/cwnd mean {:.3}",
            self.goodput,
            self.mean_queue(),
            self.sd_queue(),
            self.max_queue(),
            self.max_queue_all(),
            st.retrans_pkts,
            self.out.link_stats[0].counters.dropped_queue_full_pkts,
            self.out.link_stats[0].counters.ce_marks,
            st.cwr_count,
            r.iter().sum::<f64>() / r.len().max(1) as f64,
        )
    }
}

fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len().max(1) as f64
}

#[test]
fn dctcp_holds_the_queue_at_k_with_full_goodput() {
    let d = Run::new(&path("dctcp", EcnMode::Low, K, 0.0));
    println!("{}", d.summary("dctcp K=20"));
    let st = &d.out.flow_stats[0];
    // Marks instead of drops: nothing to repair.
    assert_eq!(st.retrans_pkts, 0);
    assert_eq!(st.rto_count, 0);
    assert_eq!(d.out.link_stats[0].counters.dropped_queue_full_pkts, 0);
    assert!(!d.out.flows.ca_state.contains(&3), "never in Recovery");
    // The queue sits at K: mean within 0.5 K .. 1.5 K, few packets either side, and never near
    // the buffer, not even in slow start.
    let (m, sd) = (d.mean_queue(), d.sd_queue());
    assert!(
        (0.5 * K as f64..=1.5 * K as f64).contains(&m),
        "mean queue {m:.2}, K {K}"
    );
    assert!(sd < 0.25 * K as f64, "queue sd {sd:.2}");
    assert!(d.max_queue() <= K + K / 2, "max queue {}", d.max_queue());
    assert!(
        d.max_queue_all() < QUEUE_PKTS / 2,
        "max queue in slow start {}",
        d.max_queue_all()
    );
    assert!(d.goodput >= 0.9, "goodput {:.4} of the link", d.goodput);

    // Reductions: one per marked window at most (CWR lasts a window), each by alpha / 2. The
    // first comes with alpha near its initial 1.0 (decayed by the unmarked windows of slow
    // start), so it is about Reno's half; later ones are much gentler.
    assert_eq!(d.cwrs.len() as u64, st.cwr_count);
    assert!(d.cwrs.len() > 100, "{} reductions", d.cwrs.len());
    let (_, cwnd0, ssthresh0) = d.cwrs[0];
    let first = ssthresh0 as f64 / cwnd0 as f64;
    println!("first reduction: cwnd {cwnd0} -> ssthresh {ssthresh0}");
    assert!(
        (0.5..0.7).contains(&first),
        "first reduction {ssthresh0}/{cwnd0}"
    );
    for w in d.cwrs.windows(2) {
        assert!(
            w[1].0 - w[0].0 >= RTT_MS / 1e3,
            "reductions {:.5} s and {:.5} s less than an RTT apart",
            w[0].0,
            w[1].0
        );
    }
    let ratios = d.reduction_ratios();
    assert!(
        ratios.iter().all(|&r| r > 0.5),
        "every reduction smaller than Reno's half: {:?}",
        ratios.iter().cloned().fold(1.0, f64::min)
    );
    assert!(
        mean(&ratios) > 0.85,
        "mean ssthresh/cwnd {:.3}",
        mean(&ratios)
    );
    // alpha, read back from each cut (cwnd - ssthresh = cwnd * alpha / 2), follows the marked
    // fraction F (CE marks per delivered segment); at a reduction it is at its lowest (it
    // decayed through the unmarked windows before), so below F's mean but of its size.
    let alpha: Vec<f64> = ratios.iter().map(|r| 2.0 * (1.0 - r)).collect();
    let f = d.out.link_stats[0].counters.ce_marks as f64 / (st.delivered_bytes as f64 / MSS);
    println!(
        "alpha at reductions {:.3}, marked fraction {f:.3}",
        mean(&alpha)
    );
    assert!(
        (0.5 * f..=1.5 * f).contains(&mean(&alpha)),
        "alpha {:.3} vs F {f:.3}",
        mean(&alpha)
    );
}

#[test]
fn dctcp_against_reno_on_the_same_path() {
    let d = Run::new(&path("dctcp", EcnMode::Low, K, 0.0));
    let off = Run::new(&path("reno", EcnMode::Off, K, 0.0));
    let on = Run::new(&path("reno", EcnMode::On, K, 0.0));
    // DCTCP at K = 5 (> BDP / 7 = 2.4, the paper's bound for full throughput).
    let d5 = Run::new(&path("dctcp", EcnMode::Low, 5, 0.0));
    println!("{}", d.summary("dctcp low K=20"));
    println!("{}", off.summary("reno off"));
    println!("{}", on.summary("reno on K=20"));
    println!("{}", d5.summary("dctcp low K=5"));

    // Without ECN Reno fills the buffer and drops: DCTCP's queue is a fraction of it.
    assert!(off.out.flow_stats[0].retrans_pkts > 0);
    assert!(off.max_queue() == QUEUE_PKTS);
    assert!(
        d.mean_queue() * 5.0 < off.mean_queue(),
        "dctcp {:.1} vs reno without ECN {:.1}",
        d.mean_queue(),
        off.mean_queue()
    );

    // Classic ECN, same K: Reno halves on every marked window, so its queue drains from K to
    // about empty and back (a lower mean than DCTCP's, but a swing of K), and it cannot keep
    // the link busy; DCTCP's cuts are small, its queue steady at K, its goodput full.
    assert_eq!(on.out.flow_stats[0].retrans_pkts, 0);
    assert!(on.reduction_ratios().iter().all(|&r| r <= 0.5));
    assert!(
        d.sd_queue() * 2.0 < on.sd_queue(),
        "queue sd dctcp {:.2} vs reno {:.2}",
        d.sd_queue(),
        on.sd_queue()
    );
    assert!(
        d.goodput > on.goodput,
        "goodput dctcp {:.4} vs reno {:.4}",
        d.goodput,
        on.goodput
    );
    // For at least Reno's goodput, DCTCP needs a quarter of the marking threshold and keeps a
    // far shorter queue.
    assert!(
        d5.goodput >= on.goodput,
        "{:.4} vs {:.4}",
        d5.goodput,
        on.goodput
    );
    assert!(
        d5.mean_queue() < 0.6 * on.mean_queue(),
        "mean queue dctcp K=5 {:.2} vs reno K=20 {:.2}",
        d5.mean_queue(),
        on.mean_queue()
    );
    assert_eq!(d5.out.flow_stats[0].retrans_pkts, 0);
}

#[test]
fn a_loss_halves_as_reno() {
    // Random loss on top of the marks: entering Recovery from Open or Disorder sets ssthresh to
    // half the cwnd (dctcp_state -> dctcp_react_to_loss), whatever alpha is.
    let d = Run::new(&path("dctcp", EcnMode::Low, K, 1e-3));
    let f = &d.out.flows;
    let mut n = 0;
    for i in 1..f.len() {
        if f.ca_state[i] == 3 && f.ca_state[i - 1] < 2 {
            let cwnd = f.cwnd_pkts[i - 1];
            assert_eq!(
                f.ssthresh_pkts[i],
                (cwnd >> 1).max(2),
                "at {:.4} s: cwnd {cwnd}",
                f.t_s[i]
            );
            n += 1;
        }
    }
    println!(
        "{} recoveries from Open/Disorder, {}",
        n,
        d.summary("dctcp loss 1e-3")
    );
    assert!(n > 10, "{n} recoveries");
}
