//! A subscription's part of its lather.bin frames, made once when its delivery starts:
//! its id and its reference parameters in compact form.

use super::codec::{BinaryFrameError, FieldKind, write_head};
use crate::Subscription;
use crate::delivery::stamped::Stamped;
use lather_envelope::{Element, Limits};

/// The per-subscription part of a subscription's frames: its id and its reference
/// parameters in compact form, made once.
#[derive(Debug, Clone)]
pub(crate) struct SubscriptionPart {
    id: String,
    params: Vec<(FieldKind, String, String)>,
}

impl SubscriptionPart {
    pub(crate) fn new(sub: &Subscription) -> SubscriptionPart {
        let limits = Limits {
            max_message_bytes: usize::MAX,
            max_depth: 64,
            max_attributes: 64,
        };
        let params = sub
            .notify_to
            .params
            .iter()
            .map(|xml| match Element::parse(xml.as_bytes(), &limits) {
                Ok(e) if e.elements().next().is_none() => (
                    FieldKind::ReferenceParameter,
                    format!("{{{}}}{}", e.name().namespace(), e.name().local()),
                    e.text().to_string(),
                ),
                _ => (FieldKind::ReferenceParameterXml, String::new(), xml.clone()),
            })
            .collect();
        SubscriptionPart {
            id: sub.id.clone(),
            params,
        }
    }

    /// Appends `event`'s frame to `out` (the event's payload shared where `out` allows
    /// it, [`crate::delivery::binding::wire::Wire`]).
    pub(crate) fn render(
        &self,
        event: &Stamped,
        out: &mut impl crate::delivery::binding::wire::Out,
    ) -> Result<(), BinaryFrameError> {
        let mut fields: Vec<(FieldKind, &str, &str)> = self
            .params
            .iter()
            .map(|(k, n, v)| (*k, n.as_str(), v.as_str()))
            .collect();
        let names: Vec<String> = event.headers.iter().map(|h| h.clark()).collect();
        for (h, name) in event.headers.iter().zip(&names) {
            fields.push((FieldKind::Header, name, &h.text));
        }
        let mut head = Vec::new();
        write_head(
            &mut head,
            &self.id,
            event.seq,
            event.published_ns,
            &event.action,
            event.topics.first().map_or("", String::as_str),
            &fields,
            event.payload.len(),
        )?;
        out.own(&head);
        out.payload(&event.payload);
        Ok(())
    }
}
