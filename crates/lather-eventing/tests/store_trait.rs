//! The event source keeps subscriptions through `SubscriptionStore`: a store from outside
//! the crate is loaded at open and told every Subscribe and Unsubscribe, its failures
//! refuse the request with a fault, and the redb store given through the trait is the
//! same file `SourceSettings::store` opens.

use bytes::Bytes;
use futures_util::future::BoxFuture;
use lather_envelope::{Envelope, FaultKind, Limits};
use lather_eventing::store::RedbStore;
use lather_eventing::{
    EventSource, LATHER_EVENTING_NS, SourceSettings, StoreError, Subscription, SubscriptionStore,
};
use lather_test_util::ScratchDir;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

const WSE11: &str = "http://www.w3.org/2011/03/ws-evt";
const WSA10: &str = "http://www.w3.org/2005/08/addressing";

/// A store of the test's own: a map, and a switch making every write fail.
#[derive(Debug, Default)]
struct MapStore {
    subs: Mutex<HashMap<String, Subscription>>,
    broken: AtomicBool,
}

impl MapStore {
    fn ids(&self) -> Vec<String> {
        self.subs.lock().unwrap().keys().cloned().collect()
    }

    fn check(&self) -> Result<(), StoreError> {
        if self.broken.load(Ordering::SeqCst) {
            return Err(StoreError::Backend("the disk is on fire".into()));
        }
        Ok(())
    }
}

impl SubscriptionStore for MapStore {
    fn load(&self) -> BoxFuture<'_, Result<Vec<Subscription>, StoreError>> {
        Box::pin(async { Ok(self.subs.lock().unwrap().values().cloned().collect()) })
    }

    fn put<'a>(&'a self, sub: &'a Subscription) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            self.check()?;
            self.subs
                .lock()
                .unwrap()
                .insert(sub.id.clone(), sub.clone());
            Ok(())
        })
    }

    fn remove<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            self.check()?;
            self.subs.lock().unwrap().remove(id);
            Ok(())
        })
    }
}

fn envelope(text: String) -> Envelope {
    Envelope::parse(Bytes::from(text), &Limits::default()).unwrap()
}

fn subscribe() -> Envelope {
    envelope(format!(
        r#"<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope" xmlns:wsa="{WSA10}"><s:Header><wsa:Action>{WSE11}/Subscribe</wsa:Action></s:Header><s:Body><wse:Subscribe xmlns:wse="{WSE11}"><wse:Delivery><wse:NotifyTo><wsa:Address>http://127.0.0.1:9/n</wsa:Address></wse:NotifyTo></wse:Delivery></wse:Subscribe></s:Body></s:Envelope>"#
    ))
}

fn unsubscribe(id: &str) -> Envelope {
    envelope(format!(
        r#"<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope" xmlns:wsa="{WSA10}"><s:Header><lev:Identifier xmlns:lev="{LATHER_EVENTING_NS}">{id}</lev:Identifier></s:Header><s:Body><wse:Unsubscribe xmlns:wse="{WSE11}"/></s:Body></s:Envelope>"#
    ))
}

const MANAGER: &str = "http://127.0.0.1:8/events";

#[tokio::test]
async fn an_outside_store_is_loaded_and_told_every_change() {
    let store = Arc::new(MapStore::default());
    let source = EventSource::open_with_store(SourceSettings::allowing_loopback(), store.clone())
        .await
        .unwrap();
    source.handle(&subscribe(), MANAGER).await.unwrap();
    let ids = store.ids();
    assert_eq!(ids.len(), 1);
    drop(source);

    // A new source over the same store holds the subscription again.
    let source = EventSource::open_with_store(SourceSettings::allowing_loopback(), store.clone())
        .await
        .unwrap();
    let held: Vec<String> = source.subscriptions().into_iter().map(|s| s.id).collect();
    assert_eq!(held, ids);

    source.handle(&unsubscribe(&ids[0]), MANAGER).await.unwrap();
    assert!(store.ids().is_empty());
    assert!(source.subscriptions().is_empty());
}

#[tokio::test]
async fn a_failing_store_refuses_the_subscribe_with_a_fault() {
    let store = Arc::new(MapStore::default());
    store.broken.store(true, Ordering::SeqCst);
    let source = EventSource::open_with_store(SourceSettings::allowing_loopback(), store.clone())
        .await
        .unwrap();
    let fault = source.handle(&subscribe(), MANAGER).await.unwrap_err();
    assert_eq!(fault.kind(), FaultKind::Internal);
    assert!(
        fault.reason().contains("the disk is on fire"),
        "{}",
        fault.reason()
    );
    assert!(store.ids().is_empty());
}

#[tokio::test]
async fn the_redb_store_through_the_trait_is_the_file_the_settings_name() {
    let dir = ScratchDir::new("store-trait");
    let path = dir.join("subs.redb");

    let store = RedbStore::open(&path).unwrap();
    let source = EventSource::open_with_store(SourceSettings::allowing_loopback(), Arc::new(store))
        .await
        .unwrap();
    source.handle(&subscribe(), MANAGER).await.unwrap();
    let ids: Vec<String> = source.subscriptions().into_iter().map(|s| s.id).collect();
    // Dropping the source closes the file (its tasks hold it only weakly).
    drop(source);

    let source = EventSource::open(SourceSettings {
        store: Some(path.clone()),
        ..SourceSettings::allowing_loopback()
    })
    .unwrap();
    let held: Vec<String> = source.subscriptions().into_iter().map(|s| s.id).collect();
    assert_eq!(held, ids);
    drop(source);
}
