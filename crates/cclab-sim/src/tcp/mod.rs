//! TCP, faithful to Linux 6.18 (this machine's kernel): sender, receiver, RTT estimation, loss
//! recovery. Each function names the kernel function it follows.

pub mod clock;
pub mod ecn;
pub mod handshake;
pub mod minmax;
mod rack;
pub mod rcvbuf;
pub mod receiver;
mod recovery;
pub mod rtt;
mod sack;
pub mod segment;
pub mod sender;
pub mod skb;
pub mod sndbuf;
pub mod sock;
pub mod sto;
#[cfg(test)]
mod tests_rack;
#[cfg(test)]
mod tests_recovery;
#[cfg(test)]
mod tests_sack;
#[cfg(test)]
mod tests_sndbuf;
#[cfg(test)]
mod tests_support;
#[cfg(test)]
mod tests_tso;
#[cfg(test)]
mod tests_window;
mod tlp;
mod tso;
pub mod tsq;
mod undo;
