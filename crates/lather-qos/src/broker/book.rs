//! The broker's offer book: the offers in SQLite ([`OfferStore`]) and an in-memory index by
//! service kept in step with it, from which every selection is answered without touching
//! the file. Writes (registrations) take one writer lock, write the file, then the index.

use super::store::{Held, OfferStore, StoreError};
use crate::offer::Offer;
use lather_config::CompressionPreference;
use std::collections::HashMap;
use std::sync::{Mutex, RwLock};
use std::time::Duration;

/// The broker's bounds.
#[derive(Debug, Clone, Copy)]
pub struct BookLimits {
    /// Most offers held at once (`max_registrations`, default 10 000).
    pub max_offers: usize,
    /// The longest lease, also the lease of a registration that asks for none
    /// (`max_lease_s`, default one hour).
    pub max_lease: Duration,
    /// Most offers one owner (registrant address) may hold (`max_offers_per_owner`,
    /// default 100).
    pub max_per_owner: usize,
}

/// Most offers one `ListOffers` answer holds (the first, by service, endpoint and name).
pub const MAX_LISTED: usize = 1000;

impl Default for BookLimits {
    fn default() -> Self {
        BookLimits {
            max_offers: 10_000,
            max_lease: Duration::from_secs(3600),
            max_per_owner: 100,
        }
    }
}

/// What a client asks the broker for.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Selection {
    /// The service wanted.
    pub service: String,
    /// The slowest response time acceptable, in milliseconds.
    pub max_response_time_ms: Option<u64>,
    /// The least request rate needed, per second.
    pub min_throughput: Option<f64>,
    /// The most the client pays per request.
    pub max_price: Option<f64>,
    /// The compression wanted (an offer that names none fits any).
    pub compression: Option<CompressionPreference>,
    /// The traffic class wanted.
    pub class: Option<String>,
}

/// Why a registration or removal was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BookError {
    /// The endpoint's offers were registered by another address, whose lease runs.
    #[error("the offers of {endpoint} were registered from another address")]
    NotOwner {
        /// The endpoint.
        endpoint: String,
    },
    /// The registration would hold more offers than allowed.
    #[error("the broker holds at most {max} offers")]
    Full {
        /// `max_registrations`.
        max: usize,
    },
    /// The registration would give its owner more offers than allowed.
    #[error("one address may hold at most {max} offers")]
    OwnerFull {
        /// `max_offers_per_owner`.
        max: usize,
    },
    /// The registration holds two offers of one name for one endpoint, or none.
    #[error("{0}")]
    Invalid(String),
    /// The file could not be written.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Why no offer fits; the message counts what each candidate lacked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct NoFit(pub String);

/// The offers, on disk and in memory.
#[derive(Debug)]
pub struct OfferBook {
    store: OfferStore,
    index: RwLock<HashMap<String, Vec<Held>>>,
    writer: Mutex<()>,
    limits: BookLimits,
}

impl OfferBook {
    /// The book over `store`, its index read from the file (leases ended before `now`
    /// purged first).
    pub fn open(store: OfferStore, limits: BookLimits, now: u64) -> Result<OfferBook, StoreError> {
        store.purge(now)?;
        let mut index: HashMap<String, Vec<Held>> = HashMap::new();
        for held in store.load()? {
            index
                .entry(held.offer.service.clone())
                .or_default()
                .push(held);
        }
        Ok(OfferBook {
            store,
            index: RwLock::new(index),
            writer: Mutex::new(()),
            limits,
        })
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<String, Vec<Held>>> {
        // The index is only ever replaced entry by entry: a poisoned lock holds no half-write.
        self.index.read().unwrap_or_else(|p| p.into_inner())
    }

    /// Registers `offers` for `owner` (the registrant's address): every offer of each
    /// endpoint named is replaced. The lease granted is `lease`, at most (and by default)
    /// `max_lease`. Blocking (SQLite): run it off the async threads.
    pub fn register(
        &self,
        offers: Vec<Offer>,
        owner: &str,
        lease: Option<Duration>,
        now: u64,
    ) -> Result<Duration, BookError> {
        if offers.is_empty() {
            return Err(BookError::Invalid(
                "q:RegisterOffers holds no q:Offer".into(),
            ));
        }
        let mut endpoints: Vec<String> = offers.iter().map(|o| o.endpoint.clone()).collect();
        endpoints.sort();
        endpoints.dedup();
        let mut names: Vec<(&str, &str)> = offers
            .iter()
            .map(|o| (o.endpoint.as_str(), o.name.as_str()))
            .collect();
        names.sort_unstable();
        if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
            return Err(BookError::Invalid(format!(
                "two offers named {:?} for {}",
                w[0].1, w[0].0
            )));
        }
        let lease = lease
            .unwrap_or(self.limits.max_lease)
            .min(self.limits.max_lease);
        let expires = now.saturating_add(lease.as_secs());
        let _writing = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        let (mut kept, mut owned) = (0, 0);
        for held in self.read().values().flatten() {
            if !endpoints.contains(&held.offer.endpoint) {
                let live = held.expires >= now;
                kept += usize::from(live);
                owned += usize::from(live && held.owner == owner);
            } else if held.owner != owner && held.expires >= now {
                return Err(BookError::NotOwner {
                    endpoint: held.offer.endpoint.clone(),
                });
            }
        }
        if kept + offers.len() > self.limits.max_offers {
            return Err(BookError::Full {
                max: self.limits.max_offers,
            });
        }
        if owned + offers.len() > self.limits.max_per_owner {
            return Err(BookError::OwnerFull {
                max: self.limits.max_per_owner,
            });
        }
        self.store.purge(now)?;
        self.store.replace(&endpoints, &offers, owner, expires)?;
        let mut index = self.index.write().unwrap_or_else(|p| p.into_inner());
        for list in index.values_mut() {
            list.retain(|h| h.expires >= now && !endpoints.contains(&h.offer.endpoint));
        }
        for offer in offers {
            index.entry(offer.service.clone()).or_default().push(Held {
                offer,
                owner: owner.to_owned(),
                expires,
            });
        }
        index.retain(|_, list| !list.is_empty());
        Ok(lease)
    }

    /// Removes the offers of `endpoint`, if `owner` registered them (or their lease ended);
    /// how many there were. Blocking (SQLite).
    pub fn deregister(&self, endpoint: &str, owner: &str, now: u64) -> Result<usize, BookError> {
        let _writing = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        if self
            .read()
            .values()
            .flatten()
            .any(|h| h.offer.endpoint == endpoint && h.owner != owner && h.expires >= now)
        {
            return Err(BookError::NotOwner {
                endpoint: endpoint.to_owned(),
            });
        }
        let removed = self.store.remove(endpoint)?;
        let mut index = self.index.write().unwrap_or_else(|p| p.into_inner());
        for list in index.values_mut() {
            list.retain(|h| h.offer.endpoint != endpoint);
        }
        index.retain(|_, list| !list.is_empty());
        Ok(removed)
    }

    /// The best live offer for `want`: the cheapest that meets every requirement, then
    /// the fastest, then the one allowing most requests. Reads memory only.
    pub fn select(&self, want: &Selection, now: u64) -> Result<Offer, NoFit> {
        let index = self.read();
        let Some(list) = index.get(&want.service) else {
            return Err(NoFit(format!(
                "no offers for the service {:?}",
                want.service
            )));
        };
        let mut lacks = [0usize; 5];
        let mut best: Option<&Offer> = None;
        let mut live = 0;
        for held in list.iter().filter(|h| h.expires >= now) {
            live += 1;
            let o = &held.offer;
            let failed = [
                want.max_response_time_ms
                    .is_some_and(|m| o.response_time_ms > m),
                want.min_throughput.is_some_and(|m| o.throughput < m),
                want.max_price.is_some_and(|m| o.price > m),
                want.compression
                    .is_some_and(|c| o.compression.is_some_and(|oc| oc != c)),
                want.class
                    .as_ref()
                    .is_some_and(|c| o.class.as_ref() != Some(c)),
            ];
            if let Some(i) = failed.iter().position(|f| *f) {
                lacks[i] += 1;
                continue;
            }
            let better = best.is_none_or(|b| {
                (o.price, o.response_time_ms, -o.throughput)
                    < (b.price, b.response_time_ms, -b.throughput)
            });
            if better {
                best = Some(o);
            }
        }
        if let Some(best) = best {
            return Ok(best.clone());
        }
        if live == 0 {
            return Err(NoFit(format!(
                "no live offers for the service {:?}",
                want.service
            )));
        }
        let why = [
            "slower than asked",
            "below the throughput asked",
            "dearer than asked",
            "with another compression",
            "of another traffic class",
        ];
        let parts: Vec<String> = lacks
            .iter()
            .zip(why)
            .filter(|(n, _)| **n > 0)
            .map(|(n, w)| format!("{n} {w}"))
            .collect();
        Err(NoFit(format!(
            "none of the {live} offers for {:?} fits: {}",
            want.service,
            parts.join(", ")
        )))
    }

    /// The live offers, of one service or all: at most [`MAX_LISTED`], by service, endpoint
    /// and name.
    pub fn list(&self, service: Option<&str>, now: u64) -> Vec<Offer> {
        let index = self.read();
        let lists: Vec<&Vec<Held>> = match service {
            Some(s) => index.get(s).into_iter().collect(),
            None => index.values().collect(),
        };
        let mut out: Vec<Offer> = lists
            .into_iter()
            .flatten()
            .filter(|h| h.expires >= now)
            .map(|h| h.offer.clone())
            .collect();
        out.sort_by(|a, b| {
            (&a.service, &a.endpoint, &a.name).cmp(&(&b.service, &b.endpoint, &b.name))
        });
        out.truncate(MAX_LISTED);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lather_test_util::ScratchDir;

    fn offer(endpoint: &str, name: &str, ms: u64, throughput: f64, price: f64) -> Offer {
        Offer {
            service: "quotes".into(),
            endpoint: endpoint.into(),
            name: name.into(),
            response_time_ms: ms,
            throughput,
            price,
            compression: None,
            class: None,
            adapts_to: None,
        }
    }

    fn book(path: Option<&std::path::Path>, max: usize) -> OfferBook {
        let limits = BookLimits {
            max_offers: max,
            ..BookLimits::default()
        };
        OfferBook::open(OfferStore::open(path).unwrap(), limits, 1000).unwrap()
    }

    #[test]
    fn the_cheapest_fitting_offer_wins_and_a_miss_says_why() {
        let b = book(None, 100);
        b.register(
            vec![
                offer("http://a/q", "gold", 20, 500.0, 10.0),
                offer("http://a/q", "bronze", 200, 100.0, 1.0),
            ],
            "10.0.0.1",
            None,
            1000,
        )
        .unwrap();
        b.register(
            vec![offer("http://b/q", "silver", 50, 1000.0, 5.0)],
            "10.0.0.2",
            None,
            1000,
        )
        .unwrap();
        let mut want = Selection {
            service: "quotes".into(),
            ..Selection::default()
        };
        assert_eq!(b.select(&want, 1000).unwrap().name, "bronze");
        want.max_response_time_ms = Some(100);
        assert_eq!(b.select(&want, 1000).unwrap().name, "silver");
        want.min_throughput = Some(800.0);
        want.max_price = Some(4.0);
        let miss = b.select(&want, 1000).unwrap_err().0;
        assert_eq!(
            miss,
            "none of the 3 offers for \"quotes\" fits: 1 slower than asked, 1 below the throughput asked, 1 dearer than asked"
        );
        want.service = "other".into();
        assert!(b.select(&want, 1000).unwrap_err().0.contains("no offers"));
    }

    #[test]
    fn registrations_replace_by_endpoint_belong_to_their_owner_and_expire() {
        let b = book(None, 3);
        let lease = b
            .register(
                vec![offer("http://a/q", "gold", 20, 500.0, 10.0)],
                "10.0.0.1",
                Some(Duration::from_secs(60)),
                1000,
            )
            .unwrap();
        assert_eq!(lease, Duration::from_secs(60));
        // Another address may not replace or remove them while the lease runs.
        let theft = b.register(
            vec![offer("http://a/q", "gold", 1, 1e6, 0.0)],
            "10.9.9.9",
            None,
            1000,
        );
        assert!(
            matches!(theft, Err(BookError::NotOwner { .. })),
            "{theft:?}"
        );
        assert!(matches!(
            b.deregister("http://a/q", "10.9.9.9", 1000),
            Err(BookError::NotOwner { .. })
        ));
        // The owner replaces them: the old offer is gone.
        b.register(
            vec![offer("http://a/q", "plain", 20, 500.0, 3.0)],
            "10.0.0.1",
            Some(Duration::from_secs(60)),
            1000,
        )
        .unwrap();
        let names: Vec<String> = b.list(None, 1000).into_iter().map(|o| o.name).collect();
        assert_eq!(names, ["plain"]);
        // The bound counts offers.
        let full = b.register(
            (0..3)
                .map(|i| offer("http://c/q", &format!("o{i}"), 1, 1.0, 1.0))
                .collect(),
            "10.0.0.3",
            None,
            1000,
        );
        assert!(matches!(full, Err(BookError::Full { max: 3 })), "{full:?}");
        // After the lease the offers are not selected, and anyone may take the endpoint.
        let want = Selection {
            service: "quotes".into(),
            ..Selection::default()
        };
        assert!(b.select(&want, 1061).is_err());
        b.register(
            vec![offer("http://a/q", "new", 20, 500.0, 3.0)],
            "10.9.9.9",
            None,
            1061,
        )
        .unwrap();
        assert_eq!(b.deregister("http://a/q", "10.9.9.9", 1061).unwrap(), 1);
        assert!(b.list(None, 1061).is_empty());
    }

    #[test]
    fn a_reopened_file_holds_every_registration() {
        let dir = ScratchDir::new("book");
        let path = dir.join("offers.sqlite");
        {
            let b = book(Some(&path), 100);
            let mut gold = offer("http://a/q", "gold", 20, 500.0, 10.25);
            gold.compression = Some(CompressionPreference::Required);
            gold.class = Some("gold".into());
            gold.adapts_to = Some("cpu".into());
            b.register(
                vec![gold, offer("http://a/q", "bronze", 200, 100.0, 1.0)],
                "10.0.0.1",
                None,
                1000,
            )
            .unwrap();
        }
        let b = book(Some(&path), 100);
        let listed = b.list(Some("quotes"), 1000);
        assert_eq!(listed.len(), 2);
        let gold = listed.iter().find(|o| o.name == "gold").unwrap();
        assert_eq!(gold.price, 10.25);
        assert_eq!(gold.compression, Some(CompressionPreference::Required));
        assert_eq!(gold.class.as_deref(), Some("gold"));
        // The owner survives the restart too.
        assert!(matches!(
            b.deregister("http://a/q", "10.9.9.9", 1000),
            Err(BookError::NotOwner { .. })
        ));
    }
}
