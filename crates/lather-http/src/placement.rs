//! Which I/O thread serves an accepted connection.
//!
//! With one thread per CPU, each pinned to its CPU (`[server] pin_io_threads`), a
//! connection goes to the thread of the CPU that receives its packets (`SO_INCOMING_CPU`):
//! the kernel wakes a thread on the CPU it is already running on, with no interrupt sent
//! to another CPU, and a client's connections share one thread, so one wake-up serves
//! them all. On a loopback bench this took a sixth off echo's CPU per request saturated
//! (docs/tuning.md, "Pinned I/O threads"). A thread that would serve too many more
//! connections than the least busy one does not get it: when every packet arrives on one
//! CPU (a network card with one queue), the connections are still spread.

use std::os::fd::AsFd;

/// How accepted connections are spread over the I/O threads.
#[derive(Debug, Clone)]
pub(crate) enum Placement {
    /// To the thread serving the fewest, the accepting thread among them.
    Fewest,
    /// Lane `i` runs on `cpus[i]`; see [`by_cpu`]. The accepting thread serves none.
    ByCpu {
        /// The CPU of each lane, in lane order.
        cpus: Vec<usize>,
    },
}

impl Placement {
    /// How many I/O threads serve connections besides the accepting one, of `io_threads`
    /// in all: every one under [`Placement::ByCpu`], all but the accepting one else.
    pub(crate) fn lanes(&self, io_threads: usize) -> usize {
        match self {
            Placement::ByCpu { cpus } => cpus.len(),
            Placement::Fewest => io_threads.saturating_sub(1),
        }
    }

    /// The CPU lane `lane` is pinned to, if any.
    pub(crate) fn cpu(&self, lane: usize) -> Option<usize> {
        match self {
            Placement::ByCpu { cpus } => cpus.get(lane).copied(),
            Placement::Fewest => None,
        }
    }

    /// The lane for `stream` (`None`: the accepting thread serves it), given the
    /// connections each lane serves (`open`) and the accepting thread serves (`own`).
    pub(crate) fn pick(&self, stream: &impl AsFd, open: &[usize], own: usize) -> Option<usize> {
        match self {
            Placement::Fewest => open
                .iter()
                .enumerate()
                .min_by_key(|(_, n)| **n)
                .filter(|(_, n)| **n < own)
                .map(|(i, _)| i),
            Placement::ByCpu { cpus } => Some(by_cpu(cpus, incoming_cpu(stream), open)),
        }
    }
}

/// The lane for a connection whose packets arrive on `cpu` (`None`: not known), given the
/// connections each lane serves now (`open`, one per lane, not empty): the lane running on
/// that CPU (a CPU outside `cpus` is taken modulo the lanes), unless it serves more than
/// `8 + total / 8` connections beyond the least busy lane; then, and when the CPU is not
/// known, the least busy lane.
pub(crate) fn by_cpu(cpus: &[usize], cpu: Option<usize>, open: &[usize]) -> usize {
    let (fewest, least) = open
        .iter()
        .enumerate()
        .min_by_key(|(_, n)| **n)
        .map_or((0, 0), |(i, n)| (i, *n));
    let Some(cpu) = cpu else {
        return fewest;
    };
    let lane = cpus
        .iter()
        .position(|c| *c == cpu)
        .unwrap_or(cpu % open.len().max(1));
    let total: usize = open.iter().sum();
    match open.get(lane) {
        Some(n) if *n <= least + 8 + total / 8 => lane,
        _ => fewest,
    }
}

/// The CPU that last received `stream`'s packets, where the kernel says.
fn incoming_cpu(stream: &impl AsFd) -> Option<usize> {
    socket2::SockRef::from(stream).cpu_affinity().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connection_goes_to_the_lane_of_its_cpu() {
        let cpus = [2, 3, 5];
        assert_eq!(by_cpu(&cpus, Some(3), &[0, 0, 0]), 1);
        assert_eq!(by_cpu(&cpus, Some(5), &[4, 4, 4]), 2);
        // A CPU outside the set: taken modulo the lanes.
        assert_eq!(by_cpu(&cpus, Some(7), &[1, 1, 1]), 1);
    }

    #[test]
    fn an_unknown_cpu_goes_to_the_least_busy_lane() {
        assert_eq!(by_cpu(&[0, 1], None, &[5, 2]), 1);
    }

    #[test]
    fn a_lane_far_busier_than_the_least_busy_is_passed_over() {
        // Allowed: up to 8 + total / 8 beyond the least busy lane.
        assert_eq!(by_cpu(&[0, 1], Some(0), &[8, 0]), 0);
        assert_eq!(by_cpu(&[0, 1], Some(0), &[9, 0]), 0);
        assert_eq!(by_cpu(&[0, 1], Some(0), &[10, 0]), 1);
        assert_eq!(by_cpu(&[0, 1], Some(0), &[600, 480]), 0);
        assert_eq!(by_cpu(&[0, 1], Some(0), &[600, 450]), 1);
        assert_eq!(by_cpu(&[0, 1], Some(0), &[600, 300]), 1);
    }

    #[test]
    fn every_packet_on_one_cpu_still_spreads_the_connections() {
        let cpus = [0, 1];
        let mut open = [0usize, 0];
        for _ in 0..1000 {
            let lane = by_cpu(&cpus, Some(0), &open);
            open[lane] += 1;
        }
        assert!(open[1] >= 400, "{open:?}");
    }

    #[test]
    fn the_kernel_names_the_cpu_of_a_loopback_connection() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (served, _) = listener.accept().unwrap();
        let cpus = lather_pipeline::affinity::process_cpus();
        let cpu = incoming_cpu(&served).expect("SO_INCOMING_CPU is readable on Linux");
        assert!(cpus.contains(&cpu), "{cpu} not in {cpus:?}");
        drop(client);
    }
}
