//! Tests of the coupled Multipath TCP algorithms (`lia`, `olia`, `balia`) against the papers'
//! closed forms on synthetic connections, the single-path fallback to Reno, and the registry.

use super::balia::{self, Balia};
use super::coupled::test_support::{sock, view};
use super::lia::{self, Lia};
use super::olia::{self, Olia};
use super::reno::Reno;
use super::{build, CaEvent, CaState, CongestionControl, ParamValue, Params, SubflowView};
use crate::tcp::sock::TcpSock;

/// Give `cc` (subflow `me`) the connection `views`, its own view rebuilt from `tp`.
fn give(cc: &mut dyn CongestionControl, views: &[SubflowView], me: usize, tp: &TcpSock) {
    let mut vs = views.to_vec();
    vs[me].cwnd_pkts = tp.snd_cwnd;
    vs[me].ssthresh_pkts = tp.snd_ssthresh;
    vs[me].srtt_us = tp.srtt_us;
    vs[me].ca_state = tp.ca_state;
    vs[me].cc_state = cc.coupled_state();
    cc.set_subflows(&vs, me);
}

/// One ACK of one packet.
fn ack(cc: &mut dyn CongestionControl, tp: &mut TcpSock) {
    tp.snd_una += tp.mss_cache as u64;
    let a = tp.snd_una;
    cc.cong_avoid(tp, a, 1);
}

fn rfc_alpha(views: &[SubflowView]) -> (f64, f64) {
    lia::alpha_rfc(views.iter().copied())
}

// ---------------------------------------------------------------- LIA

#[test]
fn lia_alpha_matches_rfc6356_in_fixed_point() {
    let cases: Vec<Vec<SubflowView>> = vec![
        vec![view(100, 50), view(100, 50)],
        vec![view(60, 20), view(200, 100)],
        vec![view(30, 10), view(300, 80), view(50, 40)],
        vec![view(500, 200), view(20, 15)],
    ];
    for vs in &cases {
        let (alpha, total) = rfc_alpha(vs);
        let fixed = lia::recalc_alpha_fixed(vs.iter().copied(), vs.len() as u32);
        // The kernel keeps 2^12 alpha / w_total, rounded down.
        let want = 4096.0 * alpha / total;
        assert!(
            (fixed as f64 - want).abs() <= 1.0 + want * 0.01,
            "{fixed} vs {want}"
        );
    }
    // Two equal subflows, equal RTTs: alpha = 1/2 (n equal subflows: 1/n).
    let vs = [view(100, 50), view(100, 50)];
    assert!((rfc_alpha(&vs).0 - 0.5).abs() < 1e-12);
    let vs = [view(80, 30), view(80, 30), view(80, 30), view(80, 30)];
    assert!((rfc_alpha(&vs).0 - 0.25).abs() < 1e-12);
    // One established subflow: alpha = 1 (Reno).
    assert_eq!(lia::recalc_alpha_fixed(vs.iter().copied(), 1), 1);
}

/// `mptcp_ccc_recalc_alpha` picks the best path by `(cwnd << 32) / srtt_us^2`, which is 0 for
/// every subflow below `srtt_us^2 / 2^32` packets, and breaks the tie for the last subflow it
/// walks: `mptcp_for_each_sk` walks newest first, so the initial subflow. Here a 23-packet subflow
/// at 56 ms (the better path: 23 / 56^2 > 2 / 112^2) and a 2-packet one at 112 ms both give 0.
#[test]
fn lia_best_path_ties_go_to_the_initial_subflow_as_v09x_walks_them() {
    let (good, poor) = (view(23, 56), view(2, 112));
    for v in [good, poor] {
        assert_eq!(((v.cwnd_pkts as u64) << 32) / (v.srtt_us as u64).pow(2), 0);
    }
    // alpha with a given best path: (w_best << 32) / (sum_i (w_i << 10) rtt_best / rtt_i)^2.
    let with_best = |best: SubflowView| {
        let sum: u64 = [good, poor]
            .iter()
            .map(|v| ((v.cwnd_pkts as u64) << 10) * best.srtt_us as u64 / v.srtt_us as u64)
            .sum();
        ((best.cwnd_pkts as u64) << 32) / (sum * sum)
    };
    // The initial subflow on the better path: alpha from it, RFC 6356's (to the fixed point).
    let alpha = lia::recalc_alpha_fixed([good, poor].into_iter(), 2);
    assert_eq!(alpha, with_best(good));
    let (rfc, total) = rfc_alpha(&[good, poor]);
    assert!(
        (alpha as f64 - 4096.0 * rfc / total).abs() <= 1.0,
        "{alpha}"
    );
    // The initial subflow on the worse path: alpha from it, 3 against 163.
    let alpha = lia::recalc_alpha_fixed([poor, good].into_iter(), 2);
    assert_eq!(alpha, with_best(poor));
    assert!((alpha as f64) < 0.1 * 4096.0 * rfc / total, "{alpha}");
}

/// Run `rounds` RTTs of a connection: each subflow gets one ACK per packet of its window, the
/// subflows interleaved, `set_subflows` before each ACK. Returns the final windows.
fn run_rtts(ccs: &mut [Box<dyn CongestionControl>], tps: &mut [TcpSock], rounds: usize) {
    run_rtts_acking(ccs, tps, rounds, 1);
}

/// A connection in congestion avoidance, as after a loss: each subflow has changed CA state
/// once (so LIA recomputes its alpha, still 1 from `init`, on the first ACK, as v0.9x does).
fn connection(
    name: &str,
    params: &Params,
    subflows: &[(u32, u32)],
) -> (Vec<Box<dyn CongestionControl>>, Vec<TcpSock>) {
    let mut ccs: Vec<Box<dyn CongestionControl>> = subflows
        .iter()
        .map(|_| build(name, params).unwrap())
        .collect();
    let mut tps: Vec<TcpSock> = subflows
        .iter()
        .map(|&(w, rtt)| {
            let mut v = view(w, rtt);
            v.ssthresh_pkts = 2;
            sock(&v)
        })
        .collect();
    let views: Vec<SubflowView> = subflows.iter().map(|&(w, r)| view(w, r)).collect();
    for (i, (cc, tp)) in ccs.iter_mut().zip(tps.iter_mut()).enumerate() {
        cc.set_subflows(&views, i);
        cc.set_state(tp, CaState::Open);
    }
    (ccs, tps)
}

#[test]
fn lia_two_equal_subflows_grow_half_a_packet_per_rtt_in_total() {
    // alpha = 1/2, w_total = 2w: each ACK adds 1/(4w), each subflow w/(4w) = 1/4 per RTT, the
    // connection 1/2. A loss halves one subflow only (a quarter of the total), so the
    // equilibrium under a loss rate p is Reno's: w_total = sqrt(2/p), RFC 6356's goal.
    for exact in [false, true] {
        let p: Params = [("exact".to_string(), ParamValue::Bool(exact))].into();
        let (mut ccs, mut tps) = connection("lia", &p, &[(100, 50), (100, 50)]);
        run_rtts(&mut ccs, &mut tps, 40);
        let total: u32 = tps.iter().map(|t| t.snd_cwnd).sum();
        let per_rtt = (total - 200) as f64 / 40.0;
        // The kernel counts 4096/10 = 409 ACKs per packet where the RFC counts 400.
        assert!((per_rtt - 0.5).abs() <= 0.05, "exact {exact}: {per_rtt}");
    }
}

#[test]
fn lia_unequal_rtts_and_never_more_than_reno() {
    // RFC 6356 goal 2: no subflow grows faster than one Reno flow on its path, i.e. at most one
    // packet per w_r ACKs.
    let configs: &[&[(u32, u32)]] = &[
        &[(10, 10), (200, 100)],
        &[(50, 10), (50, 100)],
        &[(300, 30), (5, 200), (40, 60)],
        &[(20, 20), (20, 20)],
    ];
    for cfg in configs {
        for exact in [false, true] {
            let p: Params = [("exact".to_string(), ParamValue::Bool(exact))].into();
            let (mut ccs, mut tps) = connection("lia", &p, cfg);
            let before: Vec<u32> = tps.iter().map(|t| t.snd_cwnd).collect();
            run_rtts(&mut ccs, &mut tps, 1);
            for (i, t) in tps.iter().enumerate() {
                assert!(
                    t.snd_cwnd <= before[i] + 1,
                    "{cfg:?} exact {exact} subflow {i}"
                );
            }
        }
        // The per-ACK increase the kernel uses is min(alpha/w_total, 1/w_r) in reciprocal form.
        let vs: Vec<SubflowView> = cfg.iter().map(|&(w, r)| view(w, r)).collect();
        let fixed = lia::recalc_alpha_fixed(vs.iter().copied(), vs.len() as u32);
        let (alpha, total) = rfc_alpha(&vs);
        for v in &vs {
            let acks = (4096 / fixed).max(v.cwnd_pkts as u64) as f64;
            let rfc = 1.0 / (alpha / total).min(1.0 / v.cwnd_pkts as f64);
            assert!(acks >= v.cwnd_pkts as f64);
            // alpha is an integer of about 2^12 alpha / w_total: a relative error up to
            // 1 / alpha_fixed (9 % here for the 3-subflow case, alpha_fixed = 11).
            let tol = 1.0 + rfc * (0.02 + 1.0 / fixed as f64);
            assert!((acks - rfc).abs() <= tol, "{cfg:?}: {acks} vs {rfc}");
        }
    }
    // Unequal RTTs: the short-RTT path is capped by Reno's 1/w_r, the long one follows alpha.
    let vs = [view(50, 10), view(50, 100)];
    let (alpha, total) = rfc_alpha(&vs);
    assert!(alpha / total > 1.0 / 50.0 * 0.99 || alpha / total < 1.0 / 50.0);
    let want = 100.0 * (50.0 / 100.0) / (5.0 + 0.5f64).powi(2);
    assert!((alpha - want).abs() < 1e-9, "{alpha} vs {want}");
}

#[test]
fn lia_ssthresh_halves_each_subflow() {
    let vs = [view(101, 20), view(40, 30)];
    let mut cc = Lia::new(false);
    let mut tp = sock(&vs[0]);
    give(&mut cc, &vs, 0, &tp);
    assert_eq!(cc.ssthresh(&mut tp), 50);
    tp.snd_cwnd = 3;
    assert_eq!(cc.ssthresh(&mut tp), 2);
    tp.snd_cwnd = 30;
    tp.prior_cwnd = 80;
    assert_eq!(cc.undo_cwnd(&mut tp), 80);
}

#[test]
fn lia_alpha_is_the_connections_and_forced_updates_cross_subflows() {
    let vs = [view(100, 50), view(100, 50)];
    let (mut a, mut b) = (Lia::new(false), Lia::new(false));
    let (mut ta, mut tb) = (sock(&vs[0]), sock(&vs[1]));
    // A slow-start ACK on a recomputes alpha; b adopts it on its next event.
    ta.snd_ssthresh = 1000;
    give(&mut a, &vs, 0, &ta);
    ack(&mut a, &mut ta);
    assert_eq!(
        a.alpha(),
        lia::recalc_alpha_fixed([view(101, 50), view(100, 50)].into_iter(), 2)
    );
    let mut vs2 = vs;
    vs2[0].cwnd_pkts = ta.snd_cwnd;
    vs2[0].cc_state = a.coupled_state();
    b.set_subflows(&vs2, 1);
    assert_eq!(b.alpha(), a.alpha());
    // A state change on a forces b to recompute on its next congestion-avoidance ACK.
    a.set_state(&mut ta, CaState::Disorder);
    assert_eq!(a.coupled_state()[2], 1);
    vs2[0].cwnd_pkts = 10;
    vs2[0].cc_state = a.coupled_state();
    b.set_subflows(&vs2, 1);
    ack(&mut b, &mut tb);
    let want = lia::recalc_alpha_fixed([view(10, 50), view(100, 50)].into_iter(), 2);
    assert_eq!(b.alpha(), want);
    assert_eq!(b.coupled_state()[2], 0);
    // ... and a sees the flag cleared and the new alpha.
    let mut vs3 = vs2;
    vs3[1].cc_state = b.coupled_state();
    a.set_subflows(&vs3, 0);
    assert_eq!((a.alpha(), a.coupled_state()[2]), (want, 0));
    // An RTO recomputes too.
    ta.snd_cwnd = 1;
    a.cwnd_event(&mut ta, CaEvent::Loss);
    // (a's own window from its tp, b's from b's last view.)
    assert_eq!(
        a.alpha(),
        lia::recalc_alpha_fixed([view(1, 50), view(100, 50)].into_iter(), 2)
    );
}

// ---------------------------------------------------------------- OLIA

/// A view with a loss interval of `l` bytes (loss1 = 0, loss2 = l: l2 - l1 = l).
fn lossy(w: u32, rtt_ms: u32, l: u64) -> SubflowView {
    let mut v = view(w, rtt_ms);
    v.cc_state = [0, l, l, 0];
    v
}

#[test]
fn olia_sets_and_alphas() {
    // s1 is the best path (largest l / rtt^2) and not the largest window: B \ M = {s1},
    // M = {s0}; alpha = 1/(|P| |B\M|) = 1/3 on s1, -1/(|P| |M|) = -1/3 on s0, 0 on s2.
    let vs = [
        lossy(40, 50, 100_000),
        lossy(20, 50, 400_000),
        lossy(10, 100, 400_000),
    ];
    assert_eq!(olia::epsilon(&vs, 0, 3), (-1, 3, 1, 1));
    assert_eq!(olia::epsilon(&vs, 1, 3), (1, 3, 1, 1));
    assert_eq!(olia::epsilon(&vs, 2, 3), (0, 1, 1, 1));
    // The best path has the largest window: B \ M is empty, every alpha is 0.
    let vs = [lossy(40, 50, 900_000), lossy(20, 50, 400_000)];
    assert_eq!(olia::epsilon(&vs, 0, 2), (0, 1, 1, 0));
    assert_eq!(olia::epsilon(&vs, 1, 2), (0, 1, 1, 0));
    // No loss yet (all l = 0): every path is best; two share the largest window.
    let vs = [view(30, 20), view(30, 40), view(10, 20), view(5, 80)];
    assert_eq!(olia::epsilon(&vs, 0, 4), (-1, 8, 2, 2));
    assert_eq!(olia::epsilon(&vs, 2, 4), (1, 8, 2, 2));
    // Equal l / rtt^2 on two paths: both best. l = 4x at twice the RTT is as good.
    let vs = [lossy(50, 20, 100_000), lossy(10, 40, 400_000)];
    assert_eq!(olia::epsilon(&vs, 1, 2), (1, 2, 1, 1));
    // A subflow in Recovery counts with its ssthresh: 100 -> 30, so s1 (40) has the largest.
    let mut r = lossy(100, 20, 900_000);
    r.ca_state = CaState::Recovery;
    r.ssthresh_pkts = 30;
    let vs = [r, lossy(40, 20, 100)];
    assert_eq!(olia::epsilon(&vs, 0, 2), (1, 2, 1, 1));
    assert_eq!(olia::epsilon(&vs, 1, 2), (-1, 2, 1, 1));
    // A subflow without an RTT sample is in no set.
    let mut s = view(90, 20);
    s.srtt_us = 0;
    let vs = [s, view(30, 20), view(10, 20)];
    assert_eq!(olia::epsilon(&vs, 1, 3), (-1, 3, 1, 1));
}

/// The paper's per-ACK increase on subflow `me`, packets.
fn olia_paper(vs: &[SubflowView], me: usize, alpha: f64) -> f64 {
    let x = |v: &SubflowView| v.cwnd_pkts as f64 / v.srtt_us as f64;
    let sum: f64 = vs.iter().map(x).sum();
    let (w, r) = (vs[me].cwnd_pkts as f64, vs[me].srtt_us as f64);
    (w / (r * r)) / (sum * sum) + alpha / w
}

#[test]
fn olia_per_ack_increase_matches_the_paper() {
    let vs = [
        lossy(40, 50, 100_000),
        lossy(20, 50, 400_000),
        lossy(10, 100, 400_000),
    ];
    for me in 0..3 {
        let mut cc = Olia::new(false);
        let mut tp = sock(&vs[me]);
        cc.init(&mut tp);
        give(&mut cc, &vs, me, &tp);
        // Keep the loss interval of `vs[me]` as its own: set it through set_state.
        tp.snd_una = vs[me].cc_state[1];
        let una = tp.snd_una;
        cc.cong_avoid(&mut tp, una, 1);
        cc.set_state(&mut tp, CaState::Recovery);
        tp.ca_state = CaState::Open;
        give(&mut cc, &vs, me, &tp);
        let before = cc.cnt();
        cc.cong_avoid(&mut tp, una, 1);
        let (num, den) = cc.epsilon();
        let want = olia_paper(&vs, me, num as f64 / den as f64) * 1024.0;
        let got = (cc.cnt() - before) as f64;
        assert!(
            (got - want).abs() <= 2.0,
            "me {me}: {got} vs {want} (alpha {num}/{den})"
        );
    }
    // alpha sums to zero across the connection.
    let s: f64 = (0..3)
        .map(|i| {
            let (n, d, _, _) = olia::epsilon(&vs, i, 3);
            n as f64 / d as f64
        })
        .sum();
    assert!(s.abs() < 1e-12);
}

#[test]
fn olia_counter_moves_cwnd_by_one_and_restarts() {
    // Two equal subflows, no losses: both in M, B \ M empty, alpha 0; the first term alone is
    // 1/(4w) per ACK: +1 after about 4w ACKs.
    let vs = [view(25, 30), view(25, 30)];
    let mut cc = Olia::new(false);
    let mut tp = sock(&vs[0]);
    cc.init(&mut tp);
    let mut acks = 0;
    while tp.snd_cwnd == 25 {
        give(&mut cc, &vs, 0, &tp);
        ack(&mut cc, &mut tp);
        acks += 1;
    }
    assert_eq!(tp.snd_cwnd, 26);
    assert_eq!(cc.cnt(), 0);
    assert!((95..=105).contains(&acks), "{acks}");
    // Loss intervals shift on Loss, Recovery and CWR, only if snd_una moved since.
    let s = cc.coupled_state();
    cc.set_state(&mut tp, CaState::Cwr);
    let t = cc.coupled_state();
    assert_eq!((t[0], t[1], t[2]), (s[1], s[2], s[2]));
    cc.set_state(&mut tp, CaState::Loss);
    assert_eq!(cc.coupled_state(), t);
}

// ---------------------------------------------------------------- BALIA

/// BALIA's paper increase per ACK and alpha on `me`.
fn balia_paper(vs: &[SubflowView], me: usize) -> (f64, f64) {
    let x = |v: &SubflowView| v.cwnd_pkts as f64 / v.srtt_us as f64;
    let sum: f64 = vs.iter().map(x).sum();
    let max = vs.iter().map(x).fold(0.0, f64::max);
    let a = max / x(&vs[me]);
    let inc = x(&vs[me]) / (vs[me].srtt_us as f64 * sum * sum) * (1.0 + a) / 2.0 * (4.0 + a) / 5.0;
    (inc, a)
}

#[test]
fn balia_increase_matches_the_paper() {
    let cases: &[&[(u32, u32)]] = &[
        &[(100, 50), (100, 50)],
        &[(60, 20), (200, 100)],
        &[(30, 10), (300, 80), (50, 40)],
        &[(1000, 200), (20, 15)],
    ];
    for cfg in cases {
        let vs: Vec<SubflowView> = cfg.iter().map(|&(w, r)| view(w, r)).collect();
        for me in 0..vs.len() {
            let (ai, _) = balia::recalc_ai_md(&vs, me);
            let (inc, _) = balia_paper(&vs, me);
            let want = 1.0 / inc;
            assert!(
                (ai as f64 - want).abs() <= 1.0 + want * 0.01,
                "{cfg:?} {me}: {ai} vs {want}"
            );
            let (einc, _) = balia::balia_exact(&vs, me).unwrap();
            assert!((einc - inc).abs() < 1e-12 * inc.max(1.0));
        }
    }
    // A single subflow: ai = w, md = w/2 (Reno).
    assert_eq!(balia::recalc_ai_md(&[view(80, 30)], 0), (80, 40));
    // Two equal subflows: alpha 1, ai = 4 w_total^2 ... = 10 (2x)^2 w / (2x 5x) = 4w.
    assert_eq!(balia::recalc_ai_md(&[view(50, 30), view(50, 30)], 0).0, 200);
}

#[test]
fn balia_decrease_is_w_over_2_min_alpha_1_5() {
    let check = |vs: &[SubflowView], exact: bool, want: u32| {
        let mut cc = Balia::new(exact, false);
        let mut tp = sock(&vs[0]);
        tp.snd_ssthresh = 1000; // slow start: the ACK recomputes ai and md
        give(&mut cc, vs, 0, &tp);
        tp.snd_cwnd -= 1;
        ack(&mut cc, &mut tp);
        assert_eq!(tp.snd_cwnd, vs[0].cwnd_pkts);
        assert_eq!(cc.ssthresh(&mut tp), want, "{vs:?} exact {exact}");
    };
    // The best path: alpha 1, halve (w - w/2).
    check(&[view(101, 50), view(50, 50)], false, 51);
    check(&[view(101, 50), view(50, 50)], true, 51);
    // A third of the best rate: alpha 3, capped at 1.5: keep w - 1.5 (w/2) = w/4.
    check(&[view(100, 50), view(300, 50)], false, 25);
    check(&[view(100, 50), view(300, 50)], true, 25);
    // 0.6 of the best rate: the kernel's integer alpha is 1 (halve); the paper's 1.67 -> 1.5.
    check(&[view(60, 50), view(100, 50)], false, 30);
    check(&[view(60, 50), view(100, 50)], true, 15);
    // Not multipath: Reno's.
    let mut tp = sock(&view(101, 50));
    assert_eq!(Balia::new(false, false).ssthresh(&mut tp), 50);
}

#[test]
fn balia_recomputes_on_loss_and_complete_cwr_only_unless_forced() {
    let vs = [view(100, 50), view(100, 50)];
    for forced_update in [false, true] {
        let mut cc = Balia::new(false, forced_update);
        let mut tp = sock(&vs[0]);
        give(&mut cc, &vs, 0, &tp);
        cc.cwnd_event(&mut tp, CaEvent::CompleteCwr);
        assert_eq!(cc.ai_md(), (400, 50));
        // Peers change, a state change happens: the kernel keeps ai until cwnd grows.
        let vs2 = [view(100, 50), view(300, 50)];
        give(&mut cc, &vs2, 0, &tp);
        cc.set_state(&mut tp, CaState::Open);
        ack(&mut cc, &mut tp);
        let want = if forced_update {
            balia::recalc_ai_md(&vs2, 0)
        } else {
            (400, 50)
        };
        assert_eq!(cc.ai_md(), want, "forced_update {forced_update}");
        cc.cwnd_event(&mut tp, CaEvent::Loss);
        assert_eq!(cc.ai_md(), balia::recalc_ai_md(&vs2, 0));
    }
}

// ---------------------------------------------------------------- Single path and registry

/// The same hook sequence on Reno and on `name` with no `set_subflows`: the same windows.
#[test]
fn single_path_is_reno_on_the_hook_sequence() {
    for name in ["lia", "olia", "balia"] {
        for exact in [false, true] {
            let p: Params = [("exact".to_string(), ParamValue::Bool(exact))].into();
            let mut cc = build(name, &p).unwrap();
            let mut reno = Reno::new();
            let mut a = TcpSock::new(1448, 10, u32::MAX, crate::tcp::clock::KernelClock::new(250));
            a.is_cwnd_limited = true;
            let mut b = a.clone();
            cc.init(&mut a);
            reno.init(&mut b);
            for step in 0..5000u32 {
                let acked = 1 + step % 3;
                for (cc, tp) in [
                    (&mut *cc, &mut a),
                    (&mut reno as &mut dyn CongestionControl, &mut b),
                ] {
                    tp.snd_una += 1448 * acked as u64;
                    let una = tp.snd_una;
                    cc.cong_avoid(tp, una, acked);
                    if step % 700 == 699 {
                        cc.set_state(tp, CaState::Recovery);
                        tp.snd_ssthresh = cc.ssthresh(tp);
                        tp.snd_cwnd = tp.snd_ssthresh;
                        cc.set_state(tp, CaState::Open);
                    }
                    if step == 3000 {
                        cc.cwnd_event(tp, CaEvent::Loss);
                        tp.snd_ssthresh = cc.ssthresh(tp);
                        tp.snd_cwnd = 1;
                    }
                }
                assert_eq!(
                    (a.snd_cwnd, a.snd_ssthresh, a.snd_cwnd_cnt),
                    (b.snd_cwnd, b.snd_ssthresh, b.snd_cwnd_cnt),
                    "{name} exact {exact} step {step}"
                );
            }
            assert_eq!(cc.undo_cwnd(&mut a), reno.undo_cwnd(&mut b));
        }
    }
}

/// A simulated single-path run with each algorithm is Reno's run, trace for trace.
#[test]
fn single_path_is_reno_in_the_simulator() {
    let run = |cc: &str| {
        let v = serde_json::json!({
            "name": "coupled-single-path", "duration_s": 15.0, "seed": 3,
            "bottleneck": {
                "fwd": {"rate_bps": 10_000_000, "delay_ms": 20.0, "queue_pkts": 20},
                "rev": {"rate_bps": 10_000_000, "delay_ms": 20.0, "queue_pkts": 20},
            },
            "flows": [{"name": "f0", "sender": "sender", "receiver": "receiver", "cc": cc}],
        });
        let sc: crate::Scenario = serde_json::from_value(v).expect("scenario parses");
        crate::run(&sc, None).expect("runs")
    };
    let reno = run("reno");
    assert!(reno.flow_stats[0].retrans_pkts > 0, "the run has losses");
    for name in ["lia", "olia", "balia"] {
        let out = run(name);
        assert_eq!(out.flows.cwnd_pkts, reno.flows.cwnd_pkts, "{name}");
        assert_eq!(out.flows.t_s, reno.flows.t_s, "{name}");
        assert_eq!(
            out.flow_stats[0].goodput_bps,
            reno.flow_stats[0].goodput_bps
        );
        assert_eq!(
            out.flow_stats[0].retrans_pkts,
            reno.flow_stats[0].retrans_pkts
        );
    }
}

#[test]
fn registry_builds_them_by_name_with_their_params() {
    let all = super::algorithms();
    for (name, params) in [
        ("lia", vec!["exact", "per_segment"]),
        ("olia", vec!["exact", "per_segment"]),
        ("balia", vec!["exact", "forced_update", "per_segment"]),
    ] {
        let info = all.iter().find(|a| a.name == name).expect(name);
        assert_eq!(info.base, name);
        assert!(info
            .source
            .starts_with("multipath-tcp.org v0.9x net/mptcp/mptcp_"));
        assert!(info.description.contains("simulator only"));
        let names: Vec<_> = info.params.iter().map(|p| p.name).collect();
        assert_eq!(names, params);
        let given: Params = params
            .iter()
            .map(|p| (p.to_string(), ParamValue::Bool(true)))
            .collect();
        assert_eq!(build(name, &given).unwrap().name(), name);
        let bad: Params = [("exact".to_string(), ParamValue::Int(2))].into();
        let e = build(name, &bad).err().unwrap();
        assert_eq!(
            e.to_string(),
            format!("cc_params.exact = 2 is out of range for {name}: accepted true/false or 0/1")
        );
        let unknown: Params = [("beta".to_string(), ParamValue::Float(0.5))].into();
        assert!(build(name, &unknown).is_err());
        // Not coupled: nothing shared until set_subflows; the hook is the only difference.
        let cc = build(name, &Params::new()).unwrap();
        assert!(!cc.needs_ecn() && !cc.has_cong_control());
    }
}

/// `rounds` RTTs as `run_rtts`, each ACK covering `segs` packets (delayed ACKs: 2).
fn run_rtts_acking(
    ccs: &mut [Box<dyn CongestionControl>],
    tps: &mut [TcpSock],
    rounds: usize,
    segs: u32,
) {
    let n = ccs.len();
    for _ in 0..rounds {
        let windows: Vec<u32> = tps.iter().map(|t| t.snd_cwnd).collect();
        let most = *windows.iter().max().unwrap();
        for k in (0..most).step_by(segs as usize) {
            for i in 0..n {
                if k >= windows[i] {
                    continue;
                }
                let views: Vec<SubflowView> = (0..n)
                    .map(|j| {
                        let mut v = view(tps[j].snd_cwnd, 1);
                        v.srtt_us = tps[j].srtt_us;
                        v.ssthresh_pkts = tps[j].snd_ssthresh;
                        v.cc_state = ccs[j].coupled_state();
                        v
                    })
                    .collect();
                ccs[i].set_subflows(&views, i);
                tps[i].snd_una += (segs * tps[i].mss_cache) as u64;
                let a = tps[i].snd_una;
                ccs[i].cong_avoid(&mut tps[i], a, segs);
            }
        }
    }
}

#[test]
fn per_segment_counts_each_acked_segment_as_one_of_v09x_per_ack_steps() {
    // Two subflows in congestion avoidance, 60 RTTs: with delayed ACKs (2 segments per ACK)
    // v0.9x's per-ACK count grows about half as fast as with every segment ACKed;
    // `per_segment` gives the every-segment growth back.
    for name in ["lia", "olia", "balia"] {
        let grow = |per_segment: bool, segs: u32| {
            let p: Params = [("per_segment".to_string(), ParamValue::Bool(per_segment))].into();
            let (mut ccs, mut tps) = connection(name, &p, &[(60, 50), (40, 50)]);
            run_rtts_acking(&mut ccs, &mut tps, 60, segs);
            tps.iter().map(|t| t.snd_cwnd).sum::<u32>() as f64 - 100.0
        };
        let (every, delayed, per_segment) = (grow(false, 1), grow(false, 2), grow(true, 2));
        assert!(every > 10.0, "{name}: {every}");
        assert!(
            (delayed / every - 0.5).abs() < 0.15,
            "{name}: {delayed} vs {every}"
        );
        assert!(
            (per_segment / every - 1.0).abs() < 0.1,
            "{name}: {per_segment} vs {every}"
        );
        assert_eq!(
            grow(true, 1),
            every,
            "{name}: one segment per ACK is v0.9x's count"
        );
    }
}
