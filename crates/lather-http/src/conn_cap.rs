//! Connection caps: how many connections are open in all and per client address.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError};

/// The open connections, counted against `max_connections` and
/// `max_connections_per_client`.
#[derive(Debug)]
pub(crate) struct ConnectionCaps {
    max: usize,
    per_client: usize,
    open: Mutex<Open>,
}

#[derive(Debug, Default)]
struct Open {
    total: usize,
    by_client: HashMap<IpAddr, usize>,
}

/// Which cap refused a connection (the config key's name).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// `max_connections`.
    Total,
    /// `max_connections_per_client`.
    PerClient,
}

impl Refusal {
    /// The config key of the cap.
    pub(crate) fn key(self) -> &'static str {
        match self {
            Refusal::Total => "max_connections",
            Refusal::PerClient => "max_connections_per_client",
        }
    }
}

/// One admitted connection; gives its place back when dropped.
#[derive(Debug)]
pub(crate) struct Slot {
    caps: Arc<ConnectionCaps>,
    client: IpAddr,
}

impl ConnectionCaps {
    /// Caps of `max` connections in all and `per_client` from one address.
    pub(crate) fn new(max: usize, per_client: usize) -> Arc<Self> {
        Arc::new(ConnectionCaps {
            max,
            per_client,
            open: Mutex::new(Open::default()),
        })
    }

    /// Admits a connection from `client`, or says which cap is reached.
    pub(crate) fn admit(self: &Arc<Self>, client: IpAddr) -> Result<Slot, Refusal> {
        let client = canonical(client);
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        if open.total >= self.max {
            return Err(Refusal::Total);
        }
        let count = open.by_client.entry(client).or_insert(0);
        if *count >= self.per_client {
            return Err(Refusal::PerClient);
        }
        *count += 1;
        open.total += 1;
        Ok(Slot {
            caps: self.clone(),
            client,
        })
    }

    /// Connections open now, in all.
    #[cfg(test)]
    fn total(&self) -> usize {
        self.open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .total
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut open = self
            .caps
            .open
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        open.total = open.total.saturating_sub(1);
        if let Some(count) = open.by_client.get_mut(&self.client) {
            *count -= 1;
            if *count == 0 {
                open.by_client.remove(&self.client);
            }
        }
    }
}

/// An IPv4 client seen through an IPv6 listener counts as its IPv4 address.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_count_and_give_back() {
        let caps = ConnectionCaps::new(3, 2);
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "::ffff:10.0.0.2".parse().unwrap();
        let a1 = caps.admit(a).unwrap();
        let _a2 = caps.admit(a).unwrap();
        assert_eq!(caps.admit(a).unwrap_err(), Refusal::PerClient);
        let b1 = caps.admit(b).unwrap();
        assert_eq!(
            caps.admit("10.0.0.2".parse().unwrap()).unwrap_err(),
            Refusal::Total
        );
        drop(b1);
        drop(a1);
        assert_eq!(caps.total(), 1);
        let _a3 = caps.admit(a).unwrap();
        assert_eq!(caps.admit(a).unwrap_err(), Refusal::PerClient);
        assert_eq!(caps.open.lock().unwrap().by_client.len(), 1);
    }
}
