//! The event queue: integer-nanosecond time, events at equal times run in the order they were
//! scheduled. Every event source is a slot that holds at most one pending deadline (a link's
//! next arrival, a flow's sender timer, its receiver timer, its start, the trace sampler), so
//! the queue is an indexed binary heap over those slots keyed by (time, sequence): moving or
//! cancelling a timer updates its slot in place, and nothing stale is ever popped.

/// What happens at an event (small and `Copy`; the index names the element).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Event {
    /// The front packet of link `i` reaches the far end.
    LinkArrival(u32),
    /// Flow `i`'s sender timer (retransmission, loss probe, RACK reordering or pacing).
    SenderTimer(u32),
    /// Flow `i`'s receiver timer (delayed ACK or SACK compression).
    ReceiverTimer(u32),
    /// Flow `i`'s application starts.
    AppStart(u32),
    /// Host agent `i`'s next action (the S1 middleware: a broadcast, a clamp step).
    Agent(u32),
    /// UDP application `i` sends its next datagram.
    UdpSend(u32),
    /// Periodic trace sample.
    Sample,
}

const NOT_QUEUED: u32 = u32::MAX;

/// A deterministic future-event list with one slot per event source.
#[derive(Debug, Default)]
pub struct EventQueue {
    n_links: u32,
    n_flows: u32,
    n_agents: u32,
    /// (deadline ns, sequence number when scheduled, slot) in heap order.
    heap: Vec<(u64, u64, u32)>,
    /// Per slot: its index in `heap`, or `NOT_QUEUED`.
    pos: Vec<u32>,
    seq: u64,
    /// Events popped so far.
    pub processed: u64,
}

impl EventQueue {
    /// A queue for `n_links` links and `n_flows` flows.
    pub fn new(n_links: usize, n_flows: usize) -> Self {
        Self::with_agents(n_links, n_flows, 0)
    }

    /// A queue for `n_links` links, `n_flows` flows and `n_agents` host agents.
    pub fn with_agents(n_links: usize, n_flows: usize, n_agents: usize) -> Self {
        Self::with_sources(n_links, n_flows, n_agents, 0)
    }

    /// A queue for `n_links` links, `n_flows` TCP flows, `n_agents` host agents and `n_udp` UDP
    /// applications.
    pub fn with_sources(n_links: usize, n_flows: usize, n_agents: usize, n_udp: usize) -> Self {
        let n = n_links + 3 * n_flows + n_agents + n_udp + 1;
        EventQueue {
            n_links: n_links as u32,
            n_flows: n_flows as u32,
            n_agents: n_agents as u32,
            heap: Vec::with_capacity(n),
            pos: vec![NOT_QUEUED; n],
            seq: 0,
            processed: 0,
        }
    }

    fn slot(&self, ev: Event) -> usize {
        let l = self.n_links as usize;
        match ev {
            Event::LinkArrival(i) => i as usize,
            Event::SenderTimer(f) => l + 3 * f as usize,
            Event::ReceiverTimer(f) => l + 3 * f as usize + 1,
            Event::AppStart(f) => l + 3 * f as usize + 2,
            Event::Agent(a) => l + 3 * self.n_flows as usize + a as usize,
            Event::UdpSend(u) => {
                l + 3 * self.n_flows as usize + self.n_agents as usize + u as usize
            }
            Event::Sample => self.pos.len() - 1,
        }
    }

    fn event(&self, slot: usize) -> Event {
        let l = self.n_links as usize;
        if slot < l {
            return Event::LinkArrival(slot as u32);
        }
        if slot == self.pos.len() - 1 {
            return Event::Sample;
        }
        let agents = l + 3 * self.n_flows as usize;
        let udp = agents + self.n_agents as usize;
        if slot >= udp {
            return Event::UdpSend((slot - udp) as u32);
        }
        if slot >= agents {
            return Event::Agent((slot - agents) as u32);
        }
        let f = ((slot - l) / 3) as u32;
        match (slot - l) % 3 {
            0 => Event::SenderTimer(f),
            1 => Event::ReceiverTimer(f),
            _ => Event::AppStart(f),
        }
    }

    /// Schedule `ev` at `t_ns`, replacing its pending deadline if it has one (it then runs
    /// after the events already scheduled for `t_ns`).
    pub fn push(&mut self, t_ns: u64, ev: Event) {
        let s = self.slot(ev);
        let entry = (t_ns, self.seq, s as u32);
        self.seq += 1;
        let i = self.pos[s];
        if i == NOT_QUEUED {
            self.heap.push(entry);
            let i = self.heap.len() - 1;
            self.pos[s] = i as u32;
            self.sift_up(i);
        } else {
            self.heap[i as usize] = entry;
            let i = self.sift_up(i as usize);
            self.sift_down(i);
        }
    }

    /// `ev`'s pending deadline, if it has one.
    pub fn deadline(&self, ev: Event) -> Option<u64> {
        let i = self.pos[self.slot(ev)];
        (i != NOT_QUEUED).then(|| self.heap[i as usize].0)
    }

    /// Make `ev`'s pending deadline `t_ns` (`None`: cancel it); nothing changes when it already
    /// is (an unchanged deadline keeps its place among equal times).
    pub fn set(&mut self, ev: Event, t_ns: Option<u64>) {
        if self.deadline(ev) == t_ns {
            return;
        }
        match t_ns {
            Some(t) => self.push(t, ev),
            None => self.cancel(ev),
        }
    }

    /// Drop `ev`'s pending deadline, if any.
    pub fn cancel(&mut self, ev: Event) {
        let s = self.slot(ev);
        let i = self.pos[s];
        if i != NOT_QUEUED {
            self.remove_at(i as usize);
        }
    }

    /// The next event at or before `until_ns`, in (time, scheduling) order.
    pub fn pop_until(&mut self, until_ns: u64) -> Option<(u64, Event)> {
        let &(t, _, s) = self.heap.first()?;
        if t > until_ns {
            return None;
        }
        self.remove_at(0);
        self.processed += 1;
        Some((t, self.event(s as usize)))
    }

    /// Whether an event is due at or before `until_ns`.
    pub fn due_by(&self, until_ns: u64) -> bool {
        self.heap.first().is_some_and(|e| e.0 <= until_ns)
    }

    /// Events waiting.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// Whether nothing is waiting.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    fn remove_at(&mut self, i: usize) {
        let s = self.heap[i].2 as usize;
        self.pos[s] = NOT_QUEUED;
        let last = self.heap.pop().expect("non-empty heap");
        if i < self.heap.len() {
            self.heap[i] = last;
            self.pos[last.2 as usize] = i as u32;
            let i = self.sift_up(i);
            self.sift_down(i);
        }
    }

    fn less(&self, a: usize, b: usize) -> bool {
        let (x, y) = (&self.heap[a], &self.heap[b]);
        (x.0, x.1) < (y.0, y.1)
    }

    fn swap(&mut self, a: usize, b: usize) {
        self.heap.swap(a, b);
        self.pos[self.heap[a].2 as usize] = a as u32;
        self.pos[self.heap[b].2 as usize] = b as u32;
    }

    fn sift_up(&mut self, mut i: usize) -> usize {
        while i > 0 {
            let p = (i - 1) / 2;
            if !self.less(i, p) {
                break;
            }
            self.swap(i, p);
            i = p;
        }
        i
    }

    fn sift_down(&mut self, mut i: usize) {
        let n = self.heap.len();
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut m = i;
            if l < n && self.less(l, m) {
                m = l;
            }
            if r < n && self.less(r, m) {
                m = r;
            }
            if m == i {
                return;
            }
            self.swap(i, m);
            i = m;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_times_run_in_insertion_order() {
        let mut q = EventQueue::new(0, 3);
        q.push(10, Event::Sample);
        q.push(5, Event::AppStart(2));
        q.push(10, Event::AppStart(1));
        q.push(10, Event::AppStart(0));
        let order: Vec<_> = std::iter::from_fn(|| q.pop_until(100)).collect();
        assert_eq!(
            order,
            vec![
                (5, Event::AppStart(2)),
                (10, Event::Sample),
                (10, Event::AppStart(1)),
                (10, Event::AppStart(0))
            ]
        );
        assert_eq!(q.processed, 4);
    }

    #[test]
    fn every_event_has_its_own_slot() {
        let mut q = EventQueue::with_sources(2, 2, 3, 2);
        let all = [
            Event::LinkArrival(0),
            Event::LinkArrival(1),
            Event::SenderTimer(0),
            Event::ReceiverTimer(0),
            Event::AppStart(0),
            Event::SenderTimer(1),
            Event::ReceiverTimer(1),
            Event::AppStart(1),
            Event::Agent(0),
            Event::Agent(1),
            Event::Agent(2),
            Event::UdpSend(0),
            Event::UdpSend(1),
            Event::Sample,
        ];
        for (i, &e) in all.iter().enumerate() {
            q.push(i as u64, e);
        }
        let order: Vec<_> = std::iter::from_fn(|| q.pop_until(100).map(|(_, e)| e)).collect();
        assert_eq!(order, all);
    }

    #[test]
    fn pop_until_stops_at_the_horizon() {
        let mut q = EventQueue::new(0, 0);
        q.push(10, Event::Sample);
        assert!(q.pop_until(9).is_none());
        assert!(q.pop_until(10).is_some());
    }

    #[test]
    fn rescheduling_moves_the_one_pending_deadline() {
        let mut q = EventQueue::new(2, 2);
        q.push(50, Event::SenderTimer(1));
        q.push(30, Event::LinkArrival(0));
        q.push(20, Event::SenderTimer(1)); // earlier: replaces 50
        q.push(40, Event::ReceiverTimer(0));
        q.push(60, Event::ReceiverTimer(0)); // later: replaces 40
        q.set(Event::LinkArrival(0), None);
        q.cancel(Event::LinkArrival(1)); // not queued: nothing happens
        q.set(Event::SenderTimer(0), Some(60)); // after ReceiverTimer(0), scheduled earlier
        q.set(Event::ReceiverTimer(0), Some(60)); // unchanged: keeps its place
        assert_eq!(q.deadline(Event::SenderTimer(1)), Some(20));
        assert_eq!(q.deadline(Event::LinkArrival(0)), None);
        assert_eq!(q.len(), 3);
        let order: Vec<_> = std::iter::from_fn(|| q.pop_until(100)).collect();
        assert_eq!(
            order,
            vec![
                (20, Event::SenderTimer(1)),
                (60, Event::ReceiverTimer(0)),
                (60, Event::SenderTimer(0))
            ]
        );
    }

    /// Against a sorted reference: random pushes, moves and cancels pop in (time, order) order.
    #[test]
    fn matches_a_sorted_reference() {
        let (links, flows) = (5usize, 4usize);
        let mut q = EventQueue::new(links, flows);
        let mut pending: std::collections::BTreeMap<usize, (u64, u64)> = Default::default();
        let mut state = 12345u64;
        let mut rnd = |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        let mut seq = 0u64;
        let mut now = 0u64;
        for _ in 0..20_000 {
            let slot = rnd((links + 3 * flows + 1) as u64) as usize;
            let ev = q.event(slot);
            match rnd(4) {
                0 => {
                    q.cancel(ev);
                    pending.remove(&slot);
                }
                1 => {
                    if let Some((t, ev)) = q.pop_until(now + rnd(50)) {
                        let (&want, &(wt, _)) =
                            pending.iter().min_by_key(|(_, k)| **k).expect("pending");
                        assert_eq!((t, q.slot(ev)), (wt, want));
                        pending.remove(&want);
                        now = t;
                    }
                }
                _ => {
                    let t = now + rnd(100);
                    q.push(t, ev);
                    pending.insert(slot, (t, seq));
                    seq += 1;
                }
            }
            assert_eq!(q.len(), pending.len());
        }
    }
}
