//! lather's binary notification frame (`lather.bin://`), self-delimiting so frames follow
//! each other on a TCP stream. Byte layout (all integers big-endian; `docs/eventing-binary.md`):
//!
//! ```text
//! offset size  field
//! 0      2     magic "LB" (0x4C 0x42)
//! 2      1     version (1)
//! 3      1     flags: bit 0 FLAG_GZIP (the body is gzip-compressed), bit 1 FLAG_KIND
//!              (the body starts with a kind byte); other bits 0
//! 4      4     body length N: bytes after this field (at most MAX_BODY)
//! 8      8     event sequence number
//! 16     8     publish time, Unix nanoseconds
//! 24     1+n   subscription id: length (u8), UTF-8
//! …      2+n   action: length (u16), UTF-8
//! …      2+n   topic: length (u16), UTF-8 (empty if none)
//! …      1     field count (u8), then per field:
//!              kind (u8: 0 reference parameter, 1 event header, 2 reference parameter as XML),
//!              name: length (u16) + UTF-8 (`{namespace}local`; empty for kind 2),
//!              value: length (u16) + UTF-8 (text content; the element for kind 2)
//! …      rest  event payload (the event element's bytes)
//! ```
//!
//! A frame with `FLAG_KIND` starts its body with a kind byte: 0 a notification (the layout
//! above from offset 8 on), 1 a SubscriptionEnd ([`EndFrame`]: subscription id as above,
//! then status and reason, each a u16 length and UTF-8). Frames without it are
//! notifications, byte for byte as before either flag existed. With `FLAG_GZIP` the N body
//! bytes are the gzip (RFC 1952) of the body as described; decoders inflate at most
//! [`MAX_BODY`] bytes of it.

mod codec;
mod part;

pub(crate) use codec::compress_in_place;
pub use codec::{
    BinaryFrameError, BinaryMessage, EndFrame, FLAG_GZIP, FLAG_KIND, Field, FieldKind, Frame,
    KIND_NOTIFICATION, KIND_SUBSCRIPTION_END, MAGIC, MAX_BODY, PREFIX_LEN, VERSION, decode,
    decode_message, encode, encode_end,
};
pub(crate) use part::SubscriptionPart;
