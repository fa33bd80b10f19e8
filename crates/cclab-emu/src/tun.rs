//! Opening a TUN device inside a network namespace. A short-lived thread joins the namespace
//! (setns on /var/run/netns/NAME), opens /dev/net/tun there (IFF_TUN | IFF_NO_PI,
//! non-blocking) and, if asked, sets the device up with txqueuelen 10000 through ioctls on a
//! socket of that namespace; then the thread ends. The file descriptor stays bound to the
//! namespace it was created in, so the main thread never leaves its own.

use nix::sched::{setns, CloneFlags};
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;

/// TUN txqueuelen set by cclab-link: the kernel queues this many packets towards the
/// emulator before dropping (KERNEL.md: the default 500 drops before the emulated bottleneck).
pub const TXQUEUELEN: i32 = 10_000;

/// Why a port could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum TunError {
    #[error("namespace {0:?} not found (/var/run/netns/{0} does not exist): create it first (`ip netns add {0}`)")]
    NoNetns(String),
    #[error("cannot enter namespace {0:?}: {1} (cclab-link must run as root)")]
    Setns(String, nix::Error),
    #[error("/dev/net/tun is missing: load the tun module (`modprobe tun`)")]
    NoTunDevice,
    #[error("cannot open /dev/net/tun: {0} (cclab-link must run as root)")]
    OpenTun(io::Error),
    #[error("cannot create TUN device {dev:?}{ns}: {err} (is a device of that name already there, or still held by another cclab-link?)")]
    SetIff {
        dev: String,
        ns: String,
        err: io::Error,
    },
    #[error("cannot configure {dev:?} ({what}): {err}")]
    Configure {
        dev: String,
        what: &'static str,
        err: io::Error,
    },
}

fn ifreq(dev: &str) -> libc::ifreq {
    // SAFETY: ifreq is plain old data; all zeroes is a valid value.
    let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
    for (d, s) in ifr.ifr_name.iter_mut().zip(dev.bytes()) {
        *d = s as libc::c_char;
    }
    ifr
}

fn cvt(r: libc::c_int) -> io::Result<()> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Open TUN `dev` in the current thread's namespace.
fn open_here(dev: &str, ns_label: &str, configure: bool) -> Result<OwnedFd, TunError> {
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open("/dev/net/tun")
        .map_err(|e| {
            if e.kind() == io::ErrorKind::NotFound {
                TunError::NoTunDevice
            } else {
                TunError::OpenTun(e)
            }
        })?;
    let mut ifr = ifreq(dev);
    ifr.ifr_ifru.ifru_flags = (libc::IFF_TUN | libc::IFF_NO_PI) as libc::c_short;
    // SAFETY: TUNSETIFF reads and writes an ifreq, which `ifr` is.
    cvt(unsafe { libc::ioctl(f.as_raw_fd(), libc::TUNSETIFF, &mut ifr) }).map_err(|err| {
        TunError::SetIff {
            dev: dev.into(),
            ns: ns_label.into(),
            err,
        }
    })?;
    if configure {
        configure_here(dev)?;
    }
    Ok(OwnedFd::from(f))
}

/// txqueuelen 10000 and up, through a socket of the current namespace.
fn configure_here(dev: &str) -> Result<(), TunError> {
    let fail = |what, err| TunError::Configure {
        dev: dev.into(),
        what,
        err,
    };
    // SAFETY: a plain socket(2) call; the result is checked and owned below.
    let s = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if s < 0 {
        return Err(fail("socket", io::Error::last_os_error()));
    }
    // SAFETY: `s` is a fresh descriptor nobody else owns.
    let s = unsafe { OwnedFd::from_raw_fd(s) };
    let mut ifr = ifreq(dev);
    ifr.ifr_ifru.ifru_metric = TXQUEUELEN; // ifr_qlen shares the union's int
                                           // SAFETY: these ioctls read/write an ifreq.
    cvt(unsafe { libc::ioctl(s.as_raw_fd(), libc::SIOCSIFTXQLEN, &mut ifr) })
        .map_err(|e| fail("txqueuelen", e))?;
    let mut ifr = ifreq(dev);
    cvt(unsafe { libc::ioctl(s.as_raw_fd(), libc::SIOCGIFFLAGS, &mut ifr) })
        .map_err(|e| fail("get flags", e))?;
    // SAFETY: SIOCGIFFLAGS filled ifru_flags.
    unsafe { ifr.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short };
    cvt(unsafe { libc::ioctl(s.as_raw_fd(), libc::SIOCSIFFLAGS, &mut ifr) })
        .map_err(|e| fail("set up", e))?;
    Ok(())
}

/// Open TUN `dev` inside namespace `netns` (None: the emulator's own namespace).
pub fn open_tun(netns: Option<&str>, dev: &str, configure: bool) -> Result<OwnedFd, TunError> {
    let Some(ns) = netns else {
        return open_here(dev, "", configure);
    };
    let path = format!("/var/run/netns/{ns}");
    let nsf = File::open(&path).map_err(|_| TunError::NoNetns(ns.into()))?;
    let (ns, dev) = (ns.to_string(), dev.to_string());
    std::thread::spawn(move || {
        setns(&nsf, CloneFlags::CLONE_NEWNET).map_err(|e| TunError::Setns(ns.clone(), e))?;
        open_here(&dev, &format!(" in namespace {ns:?}"), configure)
    })
    .join()
    .unwrap_or_else(|_| {
        Err(TunError::OpenTun(io::Error::other(
            "the namespace thread panicked",
        )))
    })
}
