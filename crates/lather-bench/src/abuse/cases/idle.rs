//! g. Idle connections: many sockets opened and never written to, while
//! the probe runs.

use std::io::Read as _;
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use super::{CaseVerdict, Ctx};

/// The expectation: nothing beyond the probe answering (checked for every
/// case); how many sockets the server closed is reported.
pub(crate) fn expected() -> bool {
    true
}

/// Runs the case.
pub(crate) async fn run(ctx: &Ctx) -> CaseVerdict {
    let wanted = ctx.pick(500, 5_000);
    let hold = Duration::from_secs(ctx.pick(3, 20));
    let addr = ctx.addr;
    let counted = tokio::task::spawn_blocking(move || idle(addr, wanted, hold)).await;
    match counted {
        Ok((opened, closed, why)) => CaseVerdict::new(
            expected(),
            format!(
                "{opened} of {wanted} idle sockets opened{why}; held {} s; the server closed {closed}",
                hold.as_secs()
            ),
        ),
        Err(e) => CaseVerdict::new(false, format!("idle task: {e}")),
    }
}

/// Opens up to `wanted` sockets, holds them `hold`, returns how many were
/// opened, how many the server closed meanwhile and why opening stopped.
fn idle(addr: SocketAddr, wanted: usize, hold: Duration) -> (usize, usize, String) {
    let mut sockets = Vec::with_capacity(wanted);
    let mut why = String::new();
    for _ in 0..wanted {
        match TcpStream::connect_timeout(&addr, Duration::from_secs(2)) {
            Ok(s) => sockets.push(s),
            Err(e) => {
                why = format!(" (then: {e})");
                break;
            }
        }
    }
    std::thread::sleep(hold);
    let mut closed = 0;
    let mut buf = [0u8; 512];
    for s in &mut sockets {
        let ended = match s.set_nonblocking(true) {
            Ok(()) => {
                !matches!(s.read(&mut buf), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
            }
            Err(_) => true,
        };
        closed += usize::from(ended);
    }
    (sockets.len(), closed, why)
}
