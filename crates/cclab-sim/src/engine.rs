//! The event queue: integer-nanosecond time, events at equal times run in insertion order
//! (a binary heap keyed by (time, sequence)). Timers are cancelled lazily by their owners
//! (a fired event whose deadline moved is ignored), never by scanning the queue.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// What happens at an event (small and `Copy`; the index names the element).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Event {
    /// The front packet of link `i` reaches the far end.
    LinkArrival(u32),
    /// Flow `i`'s sender timer (RTO or RACK reordering timer).
    SenderTimer(u32),
    /// Flow `i`'s receiver timer (delayed ACK or SACK compression).
    ReceiverTimer(u32),
    /// Flow `i`'s application starts.
    AppStart(u32),
    /// Periodic trace sample.
    Sample,
}

/// A deterministic future-event list.
#[derive(Debug, Default)]
pub struct EventQueue {
    heap: BinaryHeap<Reverse<(u64, u64, Event)>>,
    seq: u64,
    /// Events popped so far.
    pub processed: u64,
}

impl EventQueue {
    /// Schedule `ev` at `t_ns`.
    pub fn push(&mut self, t_ns: u64, ev: Event) {
        self.heap.push(Reverse((t_ns, self.seq, ev)));
        self.seq += 1;
    }

    /// The next event at or before `until_ns`, in (time, insertion) order.
    pub fn pop_until(&mut self, until_ns: u64) -> Option<(u64, Event)> {
        let Reverse((t, _, _)) = self.heap.peek()?;
        if *t > until_ns {
            return None;
        }
        let Reverse((t, _, ev)) = self.heap.pop()?;
        self.processed += 1;
        Some((t, ev))
    }

    /// Events waiting.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// Whether nothing is waiting.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_times_run_in_insertion_order() {
        let mut q = EventQueue::default();
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
    fn pop_until_stops_at_the_horizon() {
        let mut q = EventQueue::default();
        q.push(10, Event::Sample);
        assert!(q.pop_until(9).is_none());
        assert!(q.pop_until(10).is_some());
    }
}
