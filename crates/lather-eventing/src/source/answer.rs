//! Answering the WS-Eventing requests: Subscribe (to the source), Renew, GetStatus and
//! Unsubscribe (to the manager), each in the version it speaks.

use super::keeping::Change;
use super::{Inner, millis, now_ms};
use crate::protocol::expires::{self, Requested};
use crate::protocol::problem::{Problem, Refusal, refuse};
use crate::protocol::reply;
use crate::protocol::request::{self, ExpiresRequest};
use crate::protocol::subscription::new_uuid;
use crate::protocol::version::LATHER_EVENTING_NS;
use crate::{Subscription, Version};
use lather_envelope::{Envelope, QName, SoapVersion};
use std::sync::Arc;
use std::time::Duration;

impl Inner {
    /// The response's action name and body for a request in `version`.
    pub(super) async fn answer(
        self: &Arc<Self>,
        envelope: &Envelope,
        version: Version,
        manager: &str,
        identity: Option<&str>,
    ) -> Result<(String, String), Refusal> {
        let (payload, element) = match request::body_element(envelope) {
            Ok(read) => read,
            Err(why) => return refuse(Problem::Malformed, why.to_string()),
        };
        if element.name().local() != "GetStatus" {
            self.check_shared()?;
        }
        match element.name().local() {
            "Subscribe" => {
                let request = request::subscribe(&element, &payload, version)?;
                self.subscribe(request, envelope, version, manager, identity)
                    .await
            }
            "Renew" => {
                let id = identifier(envelope, version).ok_or_else(|| Refusal {
                    problem: Problem::UnknownRenew,
                    reason: "Renew names no subscription identifier".into(),
                })?;
                let wanted = element
                    .child(&QName::new(version.eventing_ns(), "Expires"))
                    .map(request::expires);
                let granted = self.grant(version, wanted.as_ref())?;
                let sub = {
                    let mut active = self.lock();
                    let Some(a) = active.get_mut(&id) else {
                        return refuse(Problem::UnknownRenew, format!("no subscription {id}"));
                    };
                    a.sub.expires_ms = now_ms().saturating_add(millis(granted));
                    a.sub.clone()
                };
                let id = sub.id.clone();
                self.keep(Change::Put(Box::new(sub))).await?;
                // An Unsubscribe or expiry that came in meanwhile must not be undone.
                if !self.lock().contains_key(&id) {
                    self.keep(Change::Remove(id)).await?;
                }
                let body = reply::granted_response(
                    version,
                    "RenewResponse",
                    &expires::format_duration(granted),
                );
                Ok(("RenewResponse".into(), body))
            }
            "GetStatus" => {
                let id = self.known(envelope, version)?;
                let left = self.lock().get(&id).map_or(0, |a| a.sub.expires_ms);
                let left = Duration::from_millis(left.saturating_sub(now_ms()));
                let body = reply::granted_response(
                    version,
                    "GetStatusResponse",
                    &expires::format_duration(left),
                );
                Ok(("GetStatusResponse".into(), body))
            }
            "Unsubscribe" => {
                let id = self.known(envelope, version)?;
                self.lock().remove(&id);
                self.keep(Change::Remove(id)).await?;
                Ok((
                    "UnsubscribeResponse".into(),
                    reply::unsubscribe_response(version),
                ))
            }
            other => refuse(
                Problem::Malformed,
                format!("{other} is not a WS-Eventing request this source answers"),
            ),
        }
    }

    /// The identifier of a known subscription the request names.
    fn known(&self, envelope: &Envelope, version: Version) -> Result<String, Refusal> {
        match identifier(envelope, version) {
            Some(id) if self.lock().contains_key(&id) => Ok(id),
            Some(id) => refuse(Problem::Unknown, format!("no subscription {id}")),
            None => refuse(
                Problem::Unknown,
                "the request names no subscription identifier",
            ),
        }
    }

    async fn subscribe(
        self: &Arc<Self>,
        request: request::SubscribeRequest,
        envelope: &Envelope,
        version: Version,
        manager: &str,
        identity: Option<&str>,
    ) -> Result<(String, String), Refusal> {
        let granted = self.grant(version, request.expires.as_ref())?;
        let policy = &self.settings.notify_policy;
        for (what, to) in [
            ("NotifyTo", Some(&request.notify_to)),
            ("EndTo", request.end_to.as_ref()),
        ] {
            if let Some(to) = to
                && let Err(why) = policy.check_address(&to.address)
            {
                return refuse(Problem::UnusableEpr, format!("{what} refused: {why}"));
            }
        }
        if let Some(xpath) = &request.xpath
            && let Err(why) = xpath.check_cost(self.settings.filter_budget)
        {
            return refuse(Problem::CostlyFilter, why.to_string());
        }
        let slot = self
            .reserve(identity)
            .or_else(|full| refuse(Problem::Unable, full.to_string()))?;
        let sub = Subscription {
            id: new_uuid(),
            version,
            soap12: envelope.version() == SoapVersion::V12,
            notify_to: request.notify_to,
            end_to: request.end_to,
            manager: manager.to_owned(),
            expires_ms: now_ms().saturating_add(millis(granted)),
            topics: request.topics,
            actions: request.actions,
            xpath: request.xpath.as_ref().map(|x| x.expression().to_owned()),
            xpath_namespaces: request
                .xpath
                .as_ref()
                .map(|x| x.namespaces().to_vec())
                .unwrap_or_default(),
            gzip: request.gzip,
            wsn: None,
            wrapped: request.wrapped,
            owner: identity.map(str::to_owned),
        };
        self.keep(Change::Put(Box::new(sub.clone()))).await?;
        let body = reply::subscribe_response(version, &sub, &expires::format_duration(granted));
        self.activate_reserved(sub, slot);
        Ok(("SubscribeResponse".into(), body))
    }

    /// The expiration to grant for `wanted`.
    fn grant(
        &self,
        version: Version,
        wanted: Option<&ExpiresRequest>,
    ) -> Result<Duration, Refusal> {
        let max = self.settings.max_expires;
        let Some(wanted) = wanted else {
            return Ok(max);
        };
        match expires::parse(&wanted.text, now_ms()) {
            None => refuse(
                Problem::BadExpires,
                format!(
                    "Expires {:?} is neither an xs:duration nor an xs:dateTime",
                    wanted.text
                ),
            ),
            Some(Requested::Past) => refuse(
                Problem::BadExpires,
                format!("Expires {:?} is negative or in the past", wanted.text),
            ),
            // 2011 (its schema allows a zero duration; CXF asks so for a subscription that
            // does not expire): PT0S asks for an indefinite expiration, beyond any maximum.
            Some(Requested::In(d)) if d.is_zero() && !version.is_2004() => {
                if wanted.best_effort {
                    Ok(max)
                } else {
                    refuse(
                        Problem::ExpiresTooLong,
                        format!(
                            "Expires {:?} asks for an indefinite expiration; the maximum is {}; set BestEffort=\"true\" to accept it",
                            wanted.text,
                            expires::format_duration(max)
                        ),
                    )
                }
            }
            Some(Requested::In(d)) if d.is_zero() => refuse(Problem::BadExpires, "Expires is zero"),
            Some(Requested::In(d)) if d > max => {
                if version.is_2004() || wanted.best_effort {
                    Ok(max)
                } else {
                    refuse(
                        Problem::ExpiresTooLong,
                        format!(
                            "Expires {:?} is beyond the maximum {}; set BestEffort=\"true\" to accept it",
                            wanted.text,
                            expires::format_duration(max)
                        ),
                    )
                }
            }
            Some(Requested::In(d)) => Ok(d),
        }
    }
}

/// The subscription identifier the request carries as a header block (the manager EPR's
/// reference parameter): `wse:Identifier` (2004/08) or `lev:Identifier` (2011; either is
/// accepted in both).
fn identifier(envelope: &Envelope, version: Version) -> Option<String> {
    let (ns, local) = version.identifier();
    let block = envelope
        .header(&QName::new(ns, local))
        .or_else(|| envelope.header(&QName::new(lather_envelope::WSE04_NS, "Identifier")))
        .or_else(|| envelope.header(&QName::new(LATHER_EVENTING_NS, "Identifier")))?;
    envelope.header_text(block)
}
