//! The SOAP envelope at the core of lather: parsed lazily from [`Bytes`], edited by byte
//! ranges, refused with a catalogued [`Fault`].
//!
//! # Parsing
//!
//! [`Envelope::parse`] checks the whole message — UTF-8, well-formed XML, no DOCTYPE, the
//! [`Limits`] — but records only the skeleton: version, header blocks (name,
//! `mustUnderstand`, role/actor, relay, byte range), the Body's range and its first child's
//! name. Body content stays bytes until someone asks.
//!
//! # Editing
//!
//! Changes are described as [`Edit`]s and applied by [`Envelope::write`], which copies the
//! unchanged byte ranges verbatim, or by [`Envelope::edited`], which also gives the edited
//! envelope without parsing again what did not change. A header block taken out with
//! [`Envelope::extract_header`] carries the namespace declarations in scope, so it is
//! well-formed on its own.
//!
//! # Faults
//!
//! Every refusal is a [`Fault`] whose [`FaultKind`] has one row in the catalogue: stable
//! code, SOAP 1.2 code and subcode, SOAP 1.1 faultcode, HTTP status and reason. A fault
//! received from someone else is read with [`ReceivedFault`].
//!
//! This crate has no async runtime and no I/O.

pub mod batch;
mod builder;
pub mod datetime;
mod edit;
mod element;
mod envelope;
pub mod escape;
mod fault;
mod find;
mod fragment;
mod header;
mod interned;
mod limits;
mod namespace;
mod parse;
mod qname;
mod rebuild;
mod received;
mod scan;
mod source;
mod utf16;
pub mod uuid;
mod version;

pub use builder::EnvelopeBuilder;
pub use bytes::Bytes;
pub use edit::{Edit, EditError};
pub use element::{Element, Node};
pub use envelope::Envelope;
pub use fault::bounds as fault_bounds;
pub use fault::{
    Fault, FaultCode, FaultKind, FaultSpec, LATHER_FAULT_NS, MAX_SUBCODES, WSA04_NS, WSA10_NS,
    WSE04_NS, WSE11_NS, WSN_B_NS, WSSE_NS,
};
pub use header::HeaderBlock;
pub use limits::Limits;
pub use namespace::XML_NS;
pub use qname::QName;
pub use received::ReceivedFault;
pub use version::{SOAP11_NS, SOAP12_NS, SoapVersion};
