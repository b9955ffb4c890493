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
    let (fewest, least) = fewest(open);
    let Some(cpu) = cpu else {
        return fewest;
    };
    let lane = lane_of(cpus, cpu, open.len());
    match open.get(lane) {
        Some(n) if *n <= least + slack(open) => lane,
        _ => fewest,
    }
}

/// The lane serving the fewest connections and how many it serves ((0, 0) for no lane).
fn fewest(open: &[usize]) -> (usize, usize) {
    open.iter()
        .enumerate()
        .min_by_key(|(_, n)| **n)
        .map_or((0, 0), |(i, n)| (i, *n))
}

/// How many connections beyond the least busy lane a lane may serve: `8 + total / 8`.
fn slack(open: &[usize]) -> usize {
    8 + open.iter().sum::<usize>() / 8
}

/// The lane running on `cpu` among `lanes` (a CPU outside `cpus` taken modulo the lanes).
fn lane_of(cpus: &[usize], cpu: usize, lanes: usize) -> usize {
    cpus.iter()
        .position(|c| *c == cpu)
        .unwrap_or(cpu % lanes.max(1))
}

/// Where a connection served on lane `from` should move now that its packets arrive on
/// `cpu`, given the connections each lane serves (`open`) and the idle share of each lane's
/// CPU lately (`idle`, per mille): to the lane of that CPU when the CPU has spare time
/// (idle at least `limits.spare` per mille) or, where no
/// CPU has any, when its lane serves no more connections than this one; off
/// a saturated CPU, to the lane of the CPU with the most spare time, or, when no CPU has
/// any, beyond the count bound of [`by_cpu`] to the lane serving the fewest. `None`: stay.
pub(crate) fn roam_to(
    cpus: &[usize],
    from: usize,
    cpu: usize,
    open: &[usize],
    idle: &[u32],
    limits: Thresholds,
) -> Option<Move> {
    let lanes = open.len();
    if lanes < 2 || from >= lanes || idle.len() != lanes {
        return None;
    }
    let want = lane_of(cpus, cpu, lanes);
    // Where no CPU has time to spare, following must not pile connections on one lane:
    // only to a lane serving no more than this one (clients on both CPUs swap lanes).
    // Where another CPU has some, a connection off a saturated one stays there.
    let none_spare = idle.iter().all(|p| *p < limits.spare);
    if want != from && (idle[want] >= limits.spare || (none_spare && open[want] <= open[from])) {
        return Some(Move::Follow(want));
    }
    if idle[from] >= limits.saturated {
        return None;
    }
    let (roomiest, most) = idle
        .iter()
        .enumerate()
        .max_by_key(|(_, p)| **p)
        .map_or((from, 0), |(i, p)| (i, *p));
    if most >= limits.spare && roomiest != from {
        return Some(Move::Shed(roomiest));
    }
    let (fewest, least) = fewest(open);
    (open[from] > least + slack(open) && fewest != from).then_some(Move::Shed(fewest))
}

/// The idle shares (per mille) [`roam_to`] decides by (`[server]
/// roam_spare_idle_percent` and `roam_saturated_idle_percent`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Thresholds {
    /// A CPU idle at least this much has time to spare: it takes the connections whose
    /// packets arrive on it, however many it serves, and those shed to it.
    pub(crate) spare: u32,
    /// A CPU idle less than this is saturated: its lane sheds connections, to the lane of
    /// a CPU with spare time or, beyond the count bound, to the lane serving the fewest.
    pub(crate) saturated: u32,
}

impl Thresholds {
    /// The thresholds of `[server] roam_spare_idle_percent` and
    /// `roam_saturated_idle_percent`.
    pub(crate) fn from_percent(spare: u32, saturated: u32) -> Thresholds {
        Thresholds {
            spare: spare.saturating_mul(10),
            saturated: saturated.saturating_mul(10),
        }
    }
}

/// A roaming connection's move.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Move {
    /// To the lane of the CPU its packets arrive on.
    Follow(usize),
    /// Off its lane's saturated CPU, to this lane.
    Shed(usize),
}

/// The CPU that last received `stream`'s packets, where the kernel says.
pub(crate) fn incoming_cpu(stream: &impl AsFd) -> Option<usize> {
    socket2::SockRef::from(stream).cpu_affinity().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The thresholds of the default `[server]` table.
    fn defaults() -> Thresholds {
        let server = lather_config::ServerConfig::default();
        Thresholds::from_percent(
            server.roam_spare_idle_percent,
            server.roam_saturated_idle_percent,
        )
    }

    #[test]
    fn the_configured_thresholds_decide_what_is_spare_and_saturated() {
        let cpus = [0, 1];
        assert_eq!(
            defaults(),
            Thresholds {
                spare: 300,
                saturated: 50
            }
        );
        // CPU 0 idles 40% of its time: spare by default, not when 50% is asked for.
        let (open, idle) = ([31, 1], [400, 900]);
        assert_eq!(
            roam_to(&cpus, 1, 0, &open, &idle, defaults()),
            Some(Move::Follow(0))
        );
        let strict = Thresholds::from_percent(50, 5);
        assert_eq!(roam_to(&cpus, 1, 0, &open, &idle, strict), None);
        // CPU 0 idles 8%: not saturated by default, saturated when 10% is the bound.
        let (open, idle) = ([20, 12], [80, 900]);
        assert_eq!(roam_to(&cpus, 0, 0, &open, &idle, defaults()), None);
        assert_eq!(
            roam_to(&cpus, 0, 0, &open, &idle, Thresholds::from_percent(30, 10)),
            Some(Move::Shed(1))
        );
    }

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
    fn a_connection_follows_its_cpu_while_that_cpu_has_spare_time() {
        let cpus = [0, 1];
        // All 32 on lane 0 is fine while CPU 0 idles half its time.
        assert_eq!(
            roam_to(&cpus, 1, 0, &[31, 1], &[500, 900], defaults()),
            Some(Move::Follow(0))
        );
        // Already there: it stays.
        assert_eq!(
            roam_to(&cpus, 0, 0, &[32, 0], &[500, 1000], defaults()),
            None
        );
        // A CPU outside the set: taken modulo the lanes.
        assert_eq!(
            roam_to(&cpus, 0, 3, &[5, 5], &[900, 900], defaults()),
            Some(Move::Follow(1))
        );
    }

    #[test]
    fn where_no_cpu_has_spare_time_a_connection_follows_only_to_a_lane_serving_no_more() {
        let cpus = [0, 1];
        assert_eq!(
            roam_to(&cpus, 1, 0, &[17, 15], &[250, 100], defaults()),
            None
        );
        // Its own CPU has spare time: it stays rather than join a busy one.
        assert_eq!(
            roam_to(&cpus, 1, 0, &[15, 17], &[250, 900], defaults()),
            None
        );
        assert_eq!(
            roam_to(&cpus, 1, 0, &[16, 17], &[10, 10], defaults()),
            Some(Move::Follow(0))
        );
        assert_eq!(
            roam_to(&cpus, 1, 0, &[16, 16], &[10, 10], defaults()),
            Some(Move::Follow(0))
        );
        assert_eq!(roam_to(&cpus, 1, 0, &[17, 16], &[10, 10], defaults()), None);
    }

    #[test]
    fn a_saturated_cpu_sheds_to_one_with_spare_time() {
        let cpus = [0, 1];
        assert_eq!(
            roam_to(&cpus, 0, 0, &[32, 0], &[20, 900], defaults()),
            Some(Move::Shed(1))
        );
        // Spare time elsewhere, but this CPU is not saturated: it stays.
        assert_eq!(
            roam_to(&cpus, 0, 0, &[32, 0], &[100, 900], defaults()),
            None
        );
    }

    #[test]
    fn with_no_spare_time_anywhere_a_lane_beyond_the_bound_sheds_to_the_least_busy() {
        let cpus = [0, 1];
        assert_eq!(
            roam_to(&cpus, 0, 0, &[32, 0], &[0, 100], defaults()),
            Some(Move::Shed(1))
        );
        assert_eq!(
            roam_to(&cpus, 0, 0, &[23, 9], &[0, 0], defaults()),
            Some(Move::Shed(1))
        );
        // At the bound: it stays.
        assert_eq!(roam_to(&cpus, 0, 0, &[22, 10], &[0, 0], defaults()), None);
    }

    #[test]
    fn shedding_and_following_settle_at_the_bound() {
        // Every packet on CPU 0, both CPUs saturated: connections move until neither rule
        // applies, and then stay.
        let cpus = [0, 1];
        let idle = [0, 0];
        let mut lane_of = vec![0usize; 40];
        let mut open = [40usize, 0];
        for _ in 0..10 {
            for lane in &mut lane_of {
                if let Some(Move::Shed(to) | Move::Follow(to)) =
                    roam_to(&cpus, *lane, 0, &open, &idle, defaults())
                {
                    open[*lane] -= 1;
                    open[to] += 1;
                    *lane = to;
                }
            }
        }
        assert_eq!(open, [26, 14]);
        let moved: Vec<_> = lane_of
            .iter()
            .filter_map(|lane| roam_to(&cpus, *lane, 0, &open, &idle, defaults()))
            .collect();
        assert!(moved.is_empty(), "{moved:?}");
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
