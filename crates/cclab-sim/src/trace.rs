//! Trace tables as columns (the shared schema of docs/design.md), filled during a run and
//! handed to Python as arrays without per-row objects.

/// One row per sample of a flow's state.
#[derive(Debug, Default, Clone)]
pub struct FlowTrace {
    pub flow: Vec<i32>,
    /// A Multipath TCP subflow's index in its connection (0 for a TCP flow).
    pub subflow: Vec<u8>,
    pub t_s: Vec<f64>,
    pub cwnd_pkts: Vec<u32>,
    pub ssthresh_pkts: Vec<u32>,
    pub inflight_pkts: Vec<u32>,
    pub srtt_ms: Vec<f64>,
    pub rttvar_ms: Vec<f64>,
    pub min_rtt_ms: Vec<f64>,
    pub rto_ms: Vec<f64>,
    pub delivered_bytes: Vec<u64>,
    pub retrans_pkts: Vec<u64>,
    pub ca_state: Vec<u8>,
    pub pacing_rate_bps: Vec<f64>,
    /// Bytes of the flow's skbs in its host's interface queue or NIC (`sk_wmem_alloc`).
    pub below_tcp_bytes: Vec<u64>,
    /// The socket send buffer's size (`sk_sndbuf`); NaN without one (`sndbuf = "unlimited"`,
    /// v0.9x Multipath TCP subflows).
    pub sndbuf_bytes: Vec<f64>,
    /// What the socket holds until acknowledged, skb overhead included (`sk_wmem_queued`); NaN
    /// without a send buffer.
    pub wmem_queued_bytes: Vec<f64>,
}

impl FlowTrace {
    /// Rows recorded.
    pub fn len(&self) -> usize {
        self.t_s.len()
    }
    /// Whether no row was recorded.
    pub fn is_empty(&self) -> bool {
        self.t_s.is_empty()
    }
}

/// One row per sample of a link's queue.
#[derive(Debug, Default, Clone)]
pub struct LinkTrace {
    pub link: Vec<i32>,
    pub t_s: Vec<f64>,
    pub queue_pkts: Vec<u32>,
    pub queue_bytes: Vec<u64>,
    pub drops: Vec<u64>,
    pub tx_bytes: Vec<u64>,
    /// ECT packets marked CE so far (cumulative, like `drops`).
    pub ce_marks: Vec<u64>,
}

/// Discrete events (rto, fast_retransmit, loss, ...).
#[derive(Debug, Default, Clone)]
pub struct EventTrace {
    pub t_s: Vec<f64>,
    pub flow: Vec<i32>,
    pub kind: Vec<&'static str>,
    pub detail: Vec<String>,
}

impl EventTrace {
    /// Append one event.
    pub fn push(&mut self, t_ns: u64, flow: i32, kind: &'static str, detail: String) {
        self.t_s.push(t_ns as f64 * 1e-9);
        self.flow.push(flow);
        self.kind.push(kind);
        self.detail.push(detail);
    }
}
