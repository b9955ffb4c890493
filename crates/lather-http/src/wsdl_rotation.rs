//! WSDL-based load balancing: the served WSDL names one of several endpoint addresses,
//! a different one to each client in turn (each as often as its weight), so clients that
//! call the service directly spread themselves over the backends.

use lather_config::WeightedUrl;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The addresses in the order they are handed out: one round of a smooth weighted
/// round-robin (weights 5, 1, 1 give a a b a c a a, not a a a a a b c), repeated.
#[derive(Debug)]
pub(crate) struct WsdlRotation {
    round: Vec<String>,
    next: AtomicUsize,
}

impl WsdlRotation {
    /// The rotation over `addresses`; `None` when there are none.
    pub(crate) fn new(addresses: &[WeightedUrl]) -> Option<Self> {
        if addresses.is_empty() {
            return None;
        }
        let weights: Vec<u32> = addresses.iter().map(|a| a.weight).collect();
        let round = crate::weighted_round::smooth_round(&weights)
            .into_iter()
            .map(|i| addresses[i].url.clone())
            .collect();
        Some(WsdlRotation {
            round,
            next: AtomicUsize::new(0),
        })
    }

    /// The address for the next WSDL served.
    pub(crate) fn next(&self) -> &str {
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.round.len();
        &self.round[i]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn address(url: &str, weight: u32) -> WeightedUrl {
        WeightedUrl {
            url: url.to_owned(),
            weight,
        }
    }

    #[test]
    fn addresses_are_handed_out_in_proportion_to_their_weights_and_interleaved() {
        let rotation =
            WsdlRotation::new(&[address("a", 5), address("b", 1), address("c", 1)]).unwrap();
        let handed: Vec<&str> = (0..14).map(|_| rotation.next()).collect();
        assert_eq!(&handed[..7], ["a", "a", "b", "a", "c", "a", "a"]);
        assert_eq!(handed[..7], handed[7..]);
        let even = WsdlRotation::new(&[address("x", 1), address("y", 1)]).unwrap();
        let handed: Vec<&str> = (0..4).map(|_| even.next()).collect();
        assert_eq!(handed, ["x", "y", "x", "y"]);
        assert!(WsdlRotation::new(&[]).is_none());
    }
}
