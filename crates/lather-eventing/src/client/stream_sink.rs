//! The sink's TCP bindings: `soap.tcp://` (length-prefixed envelopes, plain or
//! gzip-compressed) and `lather.bin://` (binary frames: notifications and SubscriptionEnd,
//! plain or compressed). Every connection is read frame by frame; a frame that cannot be
//! read — bad framing, a compressed frame that is not gzip or inflates beyond the frame
//! maximum (a zip bomb) — closes that connection and yields nothing.

use super::sink::{Notification, SinkMessage, SubscriptionEnded, read};
use crate::delivery::binding::Binding;
use crate::delivery::binding::binary::{self, BinaryMessage, FieldKind};
use crate::delivery::binding::tcp::decode_soap_frame;
use bytes::Bytes;
use lather_envelope::escape::{escape_attribute, escape_text};
use tokio::io::AsyncReadExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// Accepts connections on `listener` and reads each in `binding`.
pub(super) async fn accept(listener: TcpListener, binding: Binding, tx: mpsc::Sender<SinkMessage>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        tokio::spawn(read_stream(stream, binding, tx.clone()));
    }
}

/// Reads frames from `stream` until it ends, the sink closes or a frame is refused.
async fn read_stream(mut stream: TcpStream, binding: Binding, tx: mpsc::Sender<SinkMessage>) {
    let mut buf: Vec<u8> = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
        let mut at = 0;
        loop {
            let taken = match binding {
                Binding::Binary => binary::decode_message(&buf[at..])
                    .map(|m| m.map(|(m, used)| (message_of(m), used)))
                    .map_err(|e| e.to_string()),
                _ => match decode_soap_frame(&buf[at..]) {
                    Ok(Some((envelope, used))) => {
                        read(Bytes::copy_from_slice(&envelope)).map(|m| Some((m, used)))
                    }
                    Ok(None) => Ok(None),
                    Err(e) => Err(e.to_string()),
                },
            };
            match taken {
                Ok(Some((message, used))) => {
                    at += used;
                    if tx.send(message).await.is_err() {
                        return;
                    }
                }
                Ok(None) => break,
                Err(why) => {
                    tracing::warn!("sink connection closed: {why}");
                    return;
                }
            }
        }
        buf.drain(..at);
    }
}

/// A binary frame as a sink message: the action, the event, and the reference parameters
/// and event headers as XML elements.
fn message_of(message: BinaryMessage) -> SinkMessage {
    match message {
        BinaryMessage::End(end) => SinkMessage::End(SubscriptionEnded {
            status: end.status,
            reason: end.reason,
        }),
        BinaryMessage::Notification(frame) => {
            let reference_parameters = frame
                .fields
                .iter()
                .map(|f| match f.kind {
                    FieldKind::ReferenceParameterXml => f.value.clone(),
                    FieldKind::ReferenceParameter | FieldKind::Header => element(&f.name, &f.value),
                })
                .collect();
            SinkMessage::Notification(Notification {
                action: Some(frame.action),
                body: String::from_utf8_lossy(&frame.payload).into_owned(),
                // A binary frame always carries the raw event.
                wrapped: false,
                reference_parameters,
            })
        }
    }
}

/// `<p:local xmlns:p="ns">text</p:local>` from a Clark name `{ns}local` and its text.
fn element(clark: &str, text: &str) -> String {
    let (ns, local) = clark
        .strip_prefix('{')
        .and_then(|rest| rest.split_once('}'))
        .unwrap_or(("", clark));
    if ns.is_empty() {
        return format!("<{local}>{}</{local}>", escape_text(text));
    }
    format!(
        r#"<p:{local} xmlns:p="{}">{}</p:{local}>"#,
        escape_attribute(ns),
        escape_text(text)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clark_names_become_elements() {
        assert_eq!(
            element("{urn:k}Key", "4<2"),
            r#"<p:Key xmlns:p="urn:k">4&lt;2</p:Key>"#
        );
        assert_eq!(element("Key", "v"), "<Key>v</Key>");
    }
}
