//! The one table of every fault lather raises.

/// The SOAP 1.2 top-level fault code (`env:Code/env:Value`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FaultCode {
    /// The envelope's namespace is not one this node speaks.
    VersionMismatch,
    /// A mustUnderstand header block was not understood.
    MustUnderstand,
    /// A header or body used an encoding this node does not support.
    DataEncodingUnknown,
    /// The message was wrong; sending it again unchanged will fail again.
    Sender,
    /// This node (or one behind it) failed; the same message may succeed later.
    Receiver,
}

impl FaultCode {
    /// The local name of the SOAP 1.2 code.
    pub fn soap12_local(self) -> &'static str {
        match self {
            FaultCode::VersionMismatch => "VersionMismatch",
            FaultCode::MustUnderstand => "MustUnderstand",
            FaultCode::DataEncodingUnknown => "DataEncodingUnknown",
            FaultCode::Sender => "Sender",
            FaultCode::Receiver => "Receiver",
        }
    }

    /// The local name of the matching SOAP 1.1 `faultcode`.
    pub fn soap11_local(self) -> &'static str {
        match self {
            FaultCode::VersionMismatch => "VersionMismatch",
            FaultCode::MustUnderstand => "MustUnderstand",
            FaultCode::DataEncodingUnknown | FaultCode::Sender => "Client",
            FaultCode::Receiver => "Server",
        }
    }
}

/// One row of the catalogue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FaultSpec {
    /// Stable numeric code; never reused once published.
    pub id: u16,
    /// Stable name; also the SOAP 1.2 subcode's local name in [`LATHER_FAULT_NS`].
    pub name: &'static str,
    /// SOAP 1.2 top-level code (SOAP 1.1 `faultcode` follows from it).
    pub code: FaultCode,
    /// Whether the fault carries a lather subcode (the SOAP-defined codes do not).
    pub has_subcode: bool,
    /// HTTP status for SOAP 1.2 and for transport-level refusals.
    pub http_status: u16,
    /// Default human-readable reason.
    pub reason: &'static str,
}

/// The WS-Security 1.0 extension namespace, whose fault codes some kinds use.
pub const WSSE_NS: &str =
    "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-secext-1.0.xsd";

/// The WS-Addressing 1.0 namespace (W3C Recommendation, 2006), whose fault codes some kinds use.
pub const WSA10_NS: &str = "http://www.w3.org/2005/08/addressing";

/// The WS-Addressing 2004/08 member submission's namespace, whose fault codes some kinds use.
pub const WSA04_NS: &str = "http://schemas.xmlsoap.org/ws/2004/08/addressing";

/// The WS-Eventing 2004/08 (W3C Submission 2006) namespace, whose fault codes some kinds use.
pub const WSE04_NS: &str = "http://schemas.xmlsoap.org/ws/2004/08/eventing";

/// The WS-Eventing W3C Recommendation (2011) namespace, whose fault codes some kinds use.
pub const WSE11_NS: &str = "http://www.w3.org/2011/03/ws-evt";

/// The WS-BaseNotification 1.3 (OASIS) schema namespace, whose fault elements some kinds use.
pub const WSN_B_NS: &str = "http://docs.oasis-open.org/wsn/b-2";

impl FaultKind {
    /// The subcode QName `(namespace, preferred prefix, local name)`: lather's own
    /// (`lf:Name` in [`LATHER_FAULT_NS`]) unless a specification defines the code, as
    /// WS-Security does for its faults. Such codes are also the SOAP 1.1 `faultcode`.
    pub fn subcode(self) -> (&'static str, &'static str, &'static str) {
        match self {
            FaultKind::FailedAuthentication => (WSSE_NS, "wsse", "FailedAuthentication"),
            FaultKind::InvalidSecurity => (WSSE_NS, "wsse", "InvalidSecurity"),
            FaultKind::MessageExpired => (WSSE_NS, "wsse", "MessageExpired"),
            FaultKind::UnsupportedAlgorithm => (WSSE_NS, "wsse", "UnsupportedAlgorithm"),
            FaultKind::FailedCheck => (WSSE_NS, "wsse", "FailedCheck"),
            FaultKind::MessageAddressingHeaderRequired => {
                (WSA10_NS, "wsa", "MessageAddressingHeaderRequired")
            }
            FaultKind::InvalidAddressingHeader
            | FaultKind::InvalidCardinality
            | FaultKind::MissingAddressInEpr
            | FaultKind::ActionMismatch => (WSA10_NS, "wsa", "InvalidAddressingHeader"),
            FaultKind::MessageInformationHeaderRequired => {
                (WSA04_NS, "wsa", "MessageInformationHeaderRequired")
            }
            FaultKind::InvalidMessageInformationHeader => {
                (WSA04_NS, "wsa", "InvalidMessageInformationHeader")
            }
            FaultKind::DeliveryModeRequestedUnavailable => {
                (WSE04_NS, "wse", "DeliveryModeRequestedUnavailable")
            }
            FaultKind::InvalidExpirationTime => (WSE04_NS, "wse", "InvalidExpirationTime"),
            FaultKind::FilteringRequestedUnavailable => {
                (WSE04_NS, "wse", "FilteringRequestedUnavailable")
            }
            FaultKind::EventSourceUnableToProcess => {
                (WSE04_NS, "wse", "EventSourceUnableToProcess")
            }
            FaultKind::UnableToRenew => (WSE04_NS, "wse", "UnableToRenew"),
            FaultKind::InvalidEventingMessage => (WSE04_NS, "wse", "InvalidMessage"),
            FaultKind::FilteringRequestedUnavailable2011 => {
                (WSE11_NS, "wse", "FilteringRequestedUnavailable")
            }
            FaultKind::EmptyFilter => (WSE11_NS, "wse", "EmptyFilter"),
            FaultKind::CannotProcessFilter => (WSE11_NS, "wse", "CannotProcessFilter"),
            FaultKind::NoDeliveryMechanismEstablished => {
                (WSE11_NS, "wse", "NoDeliveryMechanismEstablished")
            }
            FaultKind::DeliveryFormatRequestedUnavailable => {
                (WSE11_NS, "wse", "DeliveryFormatRequestedUnavailable")
            }
            FaultKind::UnusableEpr => (WSE11_NS, "wse", "UnusableEPR"),
            FaultKind::UnknownSubscription => (WSE11_NS, "wse", "UnknownSubscription"),
            FaultKind::UnsupportedExpirationValue => {
                (WSE11_NS, "wse", "UnsupportedExpirationValue")
            }
            FaultKind::TopicExpressionDialectUnknown => {
                (WSN_B_NS, "wsnt", "TopicExpressionDialectUnknownFault")
            }
            FaultKind::InvalidTopicExpression => (WSN_B_NS, "wsnt", "InvalidTopicExpressionFault"),
            FaultKind::TopicNotSupported => (WSN_B_NS, "wsnt", "TopicNotSupportedFault"),
            FaultKind::InvalidFilter => (WSN_B_NS, "wsnt", "InvalidFilterFault"),
            FaultKind::SubscribeCreationFailed => {
                (WSN_B_NS, "wsnt", "SubscribeCreationFailedFault")
            }
            FaultKind::UnacceptableInitialTerminationTime => {
                (WSN_B_NS, "wsnt", "UnacceptableInitialTerminationTimeFault")
            }
            FaultKind::UnacceptableTerminationTime => {
                (WSN_B_NS, "wsnt", "UnacceptableTerminationTimeFault")
            }
            FaultKind::UnrecognizedPolicyRequest => {
                (WSN_B_NS, "wsnt", "UnrecognizedPolicyRequestFault")
            }
            FaultKind::InvalidMessageContentExpression => {
                (WSN_B_NS, "wsnt", "InvalidMessageContentExpressionFault")
            }
            other => (LATHER_FAULT_NS, "lf", other.spec().name),
        }
    }

    /// The SOAP 1.2 second-level subcode `(namespace, preferred prefix, local name)` some
    /// specifications define below their subcode, as WS-Addressing 1.0 does for
    /// `wsa:InvalidAddressingHeader`. SOAP 1.1 has no place for it.
    pub fn subsubcode(self) -> Option<(&'static str, &'static str, &'static str)> {
        match self {
            FaultKind::InvalidCardinality => Some((WSA10_NS, "wsa", "InvalidCardinality")),
            FaultKind::MissingAddressInEpr => Some((WSA10_NS, "wsa", "MissingAddressInEPR")),
            FaultKind::ActionMismatch => Some((WSA10_NS, "wsa", "ActionMismatch")),
            _ => None,
        }
    }

    /// The WS-Addressing namespace whose binding this kind follows, if it is an addressing
    /// fault: its envelope carries `wsa:Action` = `{namespace}/fault`.
    pub fn addressing_namespace(self) -> Option<&'static str> {
        let ns = self.subcode().0;
        (ns == WSA10_NS || ns == WSA04_NS).then_some(ns)
    }

    /// Whether the subcode is defined by another specification (see [`FaultKind::subcode`]).
    pub fn has_foreign_subcode(self) -> bool {
        self.subcode().0 != LATHER_FAULT_NS
    }
}

/// Namespace of lather's fault subcodes and fault detail.
pub const LATHER_FAULT_NS: &str = "urn:lather:fault";

macro_rules! catalogue {
    ($( $(#[$doc:meta])* $kind:ident = $id:literal, $code:ident, $sub:literal, $status:literal, $reason:literal; )*) => {
        /// Every fault lather raises; see [`FaultKind::spec`] for its row in the catalogue.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum FaultKind {
            $( $(#[$doc])* $kind, )*
        }

        impl FaultKind {
            /// All kinds, in catalogue order.
            pub const ALL: &'static [FaultKind] = &[ $( FaultKind::$kind, )* ];

            /// This kind's row in the catalogue.
            pub fn spec(self) -> &'static FaultSpec {
                match self {
                    $( FaultKind::$kind => &FaultSpec {
                        id: $id,
                        name: stringify!($kind),
                        code: FaultCode::$code,
                        has_subcode: $sub,
                        http_status: $status,
                        reason: $reason,
                    }, )*
                }
            }
        }
    };
}

catalogue! {
    /// The bytes are not well-formed XML.
    MalformedXml = 1001, Sender, true, 400, "The message is not well-formed XML";
    /// The message holds a document type declaration (refused, so no entity is ever expanded).
    DoctypeForbidden = 1002, Sender, true, 400, "A SOAP message must not contain a document type declaration";
    /// The document element is not `Envelope`.
    NotAnEnvelope = 1003, Sender, true, 400, "The document element is not a SOAP Envelope";
    /// The envelope namespace is neither SOAP 1.1 nor SOAP 1.2.
    VersionMismatch = 1004, VersionMismatch, false, 500, "The envelope namespace is not a supported SOAP version";
    /// The envelope has no `Body`.
    MissingBody = 1005, Sender, true, 400, "The envelope has no Body";
    /// The envelope's children or header blocks break the SOAP structure rules.
    InvalidEnvelope = 1006, Sender, true, 400, "The envelope's structure is invalid";
    /// Elements nest deeper than the configured limit.
    TooDeep = 1007, Sender, true, 400, "The message nests elements deeper than allowed";
    /// One element carries more attributes than the configured limit.
    TooManyAttributes = 1008, Sender, true, 400, "An element carries more attributes than allowed";
    /// The message is larger than `max_message_bytes`.
    MessageTooLarge = 1009, Sender, true, 413, "The message is larger than allowed";
    /// The message bytes are not UTF-8.
    NotUtf8 = 1010, Sender, true, 400, "The message is not valid UTF-8";
    /// A mustUnderstand header block was not understood.
    MustUnderstand = 1011, MustUnderstand, false, 500, "A mandatory header block was not understood";
    /// A compressed Body (lather's `lc:Compressed` convention) could not be decoded.
    BadCompressedBody = 1012, Sender, true, 400, "The compressed Body could not be decoded";
    /// WS-Security: the security token could not be authenticated (`wsse:FailedAuthentication`).
    FailedAuthentication = 1020, Sender, true, 400, "The security token could not be authenticated";
    /// WS-Security: the Security header is missing or malformed (`wsse:InvalidSecurity`).
    InvalidSecurity = 1021, Sender, true, 400, "An error was discovered processing the Security header";
    /// WS-Security 1.1: the message is too old or from the future (`wsse:MessageExpired`).
    MessageExpired = 1022, Sender, true, 400, "The message has expired";
    /// WS-Security: a signature or encryption algorithm this node does not support
    /// (`wsse:UnsupportedAlgorithm`).
    UnsupportedAlgorithm = 1023, Sender, true, 400, "An unsupported signature or encryption algorithm was used";
    /// WS-Security: a signature or decryption did not verify (`wsse:FailedCheck`).
    FailedCheck = 1024, Sender, true, 400, "The signature or decryption was invalid";
    /// A `wsse-username` handler's replay cache holds `max_nonces` live nonces: a token with
    /// a new nonce cannot be remembered, so it is refused until entries expire (lather's own
    /// code).
    ReplayCacheFull = 1025, Receiver, true, 503, "The replay cache is full; retry later";
    /// A resource operation names no resource (no resource id header), or one this node
    /// does not hold (WS-ResourceFramework's ResourceUnknownFault).
    ResourceUnknown = 1040, Sender, true, 400, "The message names no resource, or one this node does not know";
    /// A WS-ResourceProperties request is malformed or asks for a change the resource
    /// refuses (WS-RP's InvalidResourcePropertyQNameFault, InvalidModificationFault,
    /// UnableToModifyResourcePropertyFault).
    InvalidResourceRequest = 1041, Sender, true, 400, "The resource properties request is invalid";
    /// WS-Addressing 1.0: a required addressing header is missing
    /// (`wsa:MessageAddressingHeaderRequired`).
    MessageAddressingHeaderRequired = 1030, Sender, true, 400, "A required header representing a Message Addressing Property is not present";
    /// WS-Addressing 1.0: an addressing header is not valid (`wsa:InvalidAddressingHeader`).
    InvalidAddressingHeader = 1031, Sender, true, 400, "A header representing a Message Addressing Property is not valid and the message cannot be processed";
    /// WS-Addressing 1.0: an addressing header occurs more than once
    /// (`wsa:InvalidAddressingHeader` / `wsa:InvalidCardinality`).
    InvalidCardinality = 1032, Sender, true, 400, "A header representing a Message Addressing Property occurs more than once";
    /// WS-Addressing 1.0: an endpoint reference has no `wsa:Address`
    /// (`wsa:InvalidAddressingHeader` / `wsa:MissingAddressInEPR`).
    MissingAddressInEpr = 1033, Sender, true, 400, "An endpoint reference has no Address";
    /// WS-Addressing 1.0: `wsa:Action` differs from the SOAP action
    /// (`wsa:InvalidAddressingHeader` / `wsa:ActionMismatch`).
    ActionMismatch = 1034, Sender, true, 400, "The wsa:Action header does not match the SOAP action";
    /// WS-Addressing 2004/08: a required message information header is missing
    /// (`wsa:MessageInformationHeaderRequired`).
    MessageInformationHeaderRequired = 1035, Sender, true, 400, "A required message information header, To, MessageID, or Action, is not present";
    /// WS-Addressing 2004/08: a message information header is not valid
    /// (`wsa:InvalidMessageInformationHeader`).
    InvalidMessageInformationHeader = 1036, Sender, true, 400, "A message information header is not valid and the message cannot be processed";
    /// WS-Eventing 2004/08: the requested delivery mode is not push
    /// (`wse:DeliveryModeRequestedUnavailable`).
    DeliveryModeRequestedUnavailable = 1050, Sender, true, 400, "The requested delivery mode is not supported";
    /// WS-Eventing 2004/08: the requested expiration is negative, in the past or not a
    /// duration or dateTime (`wse:InvalidExpirationTime`).
    InvalidExpirationTime = 1051, Sender, true, 400, "The expiration time requested is invalid";
    /// WS-Eventing 2004/08: the filter dialect is not one the source supports
    /// (`wse:FilteringRequestedUnavailable`).
    FilteringRequestedUnavailable = 1052, Sender, true, 400, "The requested filter dialect is not supported";
    /// WS-Eventing 2004/08: the source cannot take the subscription now, e.g. its store failed
    /// or it is full (`wse:EventSourceUnableToProcess`).
    EventSourceUnableToProcess = 1053, Receiver, true, 500, "The event source cannot process the subscription";
    /// WS-Eventing 2004/08: the subscription cannot be renewed, e.g. it is unknown or has
    /// ended (`wse:UnableToRenew`).
    UnableToRenew = 1054, Receiver, true, 500, "The subscription cannot be renewed";
    /// WS-Eventing 2004/08: the request is malformed or names no known subscription
    /// (`wse:InvalidMessage`).
    InvalidEventingMessage = 1055, Sender, true, 400, "The eventing request message is invalid";
    /// WS-Eventing 2011: the filter dialect is not one the source supports
    /// (`wse:FilteringRequestedUnavailable` in the 2011 namespace).
    FilteringRequestedUnavailable2011 = 1060, Sender, true, 400, "The requested filter dialect is not supported";
    /// WS-Eventing 2011: the filter is empty (`wse:EmptyFilter`).
    EmptyFilter = 1061, Sender, true, 400, "The filter is empty";
    /// WS-Eventing 2011: the filter's content cannot be processed (`wse:CannotProcessFilter`).
    CannotProcessFilter = 1062, Sender, true, 400, "The filter cannot be processed";
    /// WS-Eventing 2011: the Subscribe names no NotifyTo (`wse:NoDeliveryMechanismEstablished`).
    NoDeliveryMechanismEstablished = 1063, Sender, true, 400, "No delivery mechanism was established";
    /// WS-Eventing 2011: a delivery format other than Unwrap was requested
    /// (`wse:DeliveryFormatRequestedUnavailable`).
    DeliveryFormatRequestedUnavailable = 1064, Sender, true, 400, "The requested delivery format is not supported";
    /// WS-Eventing 2011: the NotifyTo or EndTo endpoint reference cannot be used
    /// (`wse:UnusableEPR`).
    UnusableEpr = 1065, Sender, true, 400, "An endpoint reference in the request cannot be used";
    /// WS-Eventing 2011: the request names no subscription this source holds
    /// (`wse:UnknownSubscription`).
    UnknownSubscription = 1066, Sender, true, 400, "The subscription is not known";
    /// WS-Eventing 2011: the requested expiration cannot be granted
    /// (`wse:UnsupportedExpirationValue`).
    UnsupportedExpirationValue = 1067, Sender, true, 400, "The requested expiration value is not supported";
    /// WS-Eventing 2011: the request is malformed in a way the specification gives no fault
    /// for (lather's own code).
    InvalidEventingRequest = 1068, Sender, true, 400, "The eventing request is invalid";
    /// WS-BaseNotification: the TopicExpression's dialect is not Simple or Concrete
    /// (`wsnt:TopicExpressionDialectUnknownFault`).
    TopicExpressionDialectUnknown = 1070, Sender, true, 400, "The topic expression dialect is not supported";
    /// WS-BaseNotification: the TopicExpression is not valid in its dialect
    /// (`wsnt:InvalidTopicExpressionFault`).
    InvalidTopicExpression = 1071, Sender, true, 400, "The topic expression is invalid";
    /// WS-BaseNotification: the topic is not one the producer can have
    /// (`wsnt:TopicNotSupportedFault`).
    TopicNotSupported = 1072, Sender, true, 400, "The topic is not supported";
    /// WS-BaseNotification: the Filter holds a component the producer does not support
    /// (`wsnt:InvalidFilterFault`).
    InvalidFilter = 1073, Sender, true, 400, "The filter is not supported";
    /// WS-BaseNotification: the subscription could not be created, e.g. the consumer cannot
    /// be reached or the producer is full (`wsnt:SubscribeCreationFailedFault`).
    SubscribeCreationFailed = 1074, Receiver, true, 500, "The subscription could not be created";
    /// WS-BaseNotification: the InitialTerminationTime is invalid, past or beyond the
    /// producer's maximum (`wsnt:UnacceptableInitialTerminationTimeFault`).
    UnacceptableInitialTerminationTime = 1075, Sender, true, 400, "The initial termination time is not acceptable";
    /// WS-BaseNotification: a Renew's TerminationTime is missing, invalid, past or beyond the
    /// maximum (`wsnt:UnacceptableTerminationTimeFault`).
    UnacceptableTerminationTime = 1076, Sender, true, 400, "The termination time is not acceptable";
    /// WS-BaseNotification: the SubscriptionPolicy holds a policy the producer does not
    /// recognise (`wsnt:UnrecognizedPolicyRequestFault`).
    UnrecognizedPolicyRequest = 1077, Sender, true, 400, "The subscription policy is not recognised";
    /// WS-BaseNotification: the MessageContent filter expression cannot be used
    /// (`wsnt:InvalidMessageContentExpressionFault`).
    InvalidMessageContentExpression = 1078, Sender, true, 400, "The message content expression is invalid";
    /// WS-BaseNotification: an optional operation the producer does not offer
    /// (PauseSubscription, ResumeSubscription, GetCurrentMessage); the detail names the
    /// specification's fault (`wsnt:PauseFailedFault`, `wsnt:ResumeFailedFault`,
    /// `wsnt:NoCurrentMessageOnTopicFault`).
    NotificationOperationUnavailable = 1079, Sender, true, 400, "The notification operation is not available";
    /// WS-Eventing (both versions): the Subscribe's Delivery asks for a notification
    /// compression lather does not offer (lather's own code; the detail lists the supported
    /// ones).
    UnsupportedCompression = 1080, Sender, true, 400, "The requested notification compression is not supported";
    /// An event source's sinks hold its `queue_bytes_total` bytes of events already: the
    /// publish is refused rather than queued for only some subscribers (lather's own code;
    /// answered with `Retry-After`).
    PublishQueueFull = 1081, Receiver, true, 503, "The event source's delivery queues are full";
    /// A `publish` handler got a message whose Body holds no element to publish as an
    /// event (lather's own code).
    NoEventToPublish = 1090, Sender, true, 400, "The message holds no event to publish";
    /// A `publish` handler's event source is not running in this process, so the event
    /// cannot be handed to it (lather's own code).
    EventSourceNotRunning = 1091, Receiver, true, 503, "The event source to publish to is not running here";
    /// An event source whose subscriptions live in NATS JetStream KV cannot reach NATS now:
    /// Subscribe, Renew and Unsubscribe are refused until it is back (lather's own code).
    SubscriptionsUnavailable = 1095, Receiver, true, 503, "The shared subscription store cannot be reached";
    /// The QoS requirements header (`q:QoS`, `urn:lather:qos`) holds a value lather cannot
    /// read (an unknown compression preference, a response time that is not a number).
    InvalidQosRequirements = 1100, Sender, true, 400, "The QoS requirements header is not valid";
    /// The request states a response time (`q:ResponseTimeMs`) and was still waiting for
    /// admission when that time ran out: it is refused rather than answered late (lather's
    /// own code; answered with `Retry-After`).
    ResponseTimeUnattainable = 1101, Receiver, true, 503, "The stated response time cannot be met";
    /// A QoS broker has no offer that meets the client's requirements; the reason says what
    /// each candidate lacks (lather's own code).
    NoOfferFits = 1102, Sender, true, 400, "No QoS offer meets the requirements";
    /// A QoS offer sent to a broker is not valid: a name, endpoint or figure is missing or
    /// out of range (lather's own code).
    InvalidOffer = 1103, Sender, true, 400, "The QoS offer is not valid";
    /// A QoS broker could not write its offer store (lather's own code).
    OfferStoreUnavailable = 1104, Receiver, true, 503, "The QoS offer store cannot be written";
    /// The request's media type is not a SOAP media type.
    UnsupportedMediaType = 2001, Sender, true, 415, "The media type is not a SOAP media type";
    /// The request's `Content-Encoding` is not gzip, deflate or identity.
    UnsupportedContentEncoding = 2002, Sender, true, 415, "The content encoding is not supported";
    /// The decompressed request exceeds `max_message_bytes`.
    DecodedTooLarge = 2003, Sender, true, 413, "The decompressed message is larger than allowed";
    /// A SOAP 1.1 request without the `SOAPAction` header.
    MissingSoapAction = 2004, Sender, true, 400, "A SOAP 1.1 request must carry a SOAPAction header";
    /// No service is configured at the request path.
    NoSuchService = 2005, Sender, true, 404, "No service at this path";
    /// The HTTP method is not POST (or GET for WSDL).
    MethodNotAllowed = 2006, Sender, true, 405, "Method not allowed";
    /// The request body could not be read or decoded.
    BadRequestBody = 2007, Sender, true, 400, "The request body could not be read";
    /// The service does not serve the operation the request's Body names.
    UnknownOperation = 2008, Sender, true, 400, "The service does not serve this operation";
    /// An HTTP/1.1 request without a `Host` header, with more than one, or with one that
    /// is not a host (RFC 9112 §3.2). Answered with 400 in both SOAP versions.
    BadHost = 2010, Sender, true, 400, "The request's Host header is missing, repeated or invalid";
    /// A fault a service raised with its own codes ([`Fault::application`](crate::Fault::application)):
    /// the envelope carries the service's code, subcodes and detail, not this row's.
    Application = 5000, Receiver, true, 500, "The service raised a fault";
    /// No upstream could be reached.
    UpstreamUnavailable = 3001, Receiver, true, 503, "No upstream service could be reached";
    /// An upstream answered with something that is not a usable HTTP response.
    UpstreamFailed = 3002, Receiver, true, 502, "The upstream service failed";
    /// The upstream did not answer within the service's timeout.
    UpstreamTimeout = 3003, Receiver, true, 504, "The upstream service did not answer in time";
    /// The server is at capacity; retry later.
    ServerBusy = 4001, Receiver, true, 503, "Server busy";
    /// An internal error; the server lives on.
    Internal = 4002, Receiver, true, 500, "Internal server error";
    /// The server is shutting down.
    ShuttingDown = 4003, Receiver, true, 503, "The server is shutting down";
    /// A handler failed (panicked, or returned a patch it may not make) or its stage's
    /// patches could not be merged.
    HandlerFailed = 4004, Receiver, true, 500, "A message handler failed";
    /// A handler did not finish within its timeout.
    HandlerTimeout = 4005, Receiver, true, 500, "A message handler did not finish in time";
    /// The resource store holds as many resources as it may; a new one is refused.
    ResourceStoreFull = 4006, Receiver, true, 503, "The resource store is full";
    /// The request body arrived slower than `min_body_bytes_per_s` or not within
    /// `body_timeout_ms`; the connection is closed after the answer.
    RequestTooSlow = 4007, Sender, true, 408, "The request body arrived too slowly";
    /// The JetStream queue of asynchronous requests (`async_replies` with `[nats]`) cannot
    /// be reached, so the request is not accepted.
    ReplyQueueUnavailable = 4008, Receiver, true, 503, "The asynchronous request queue cannot be reached";
    /// A remote handler's worker was lost (no acknowledgement, heartbeats stopped, or NATS
    /// dropped) with the call in hand, and the call may have run: a kind that is not
    /// idempotent is not run again.
    RemoteCallLost = 4010, Receiver, true, 502, "A remote handler's worker was lost mid-call";
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn ids_and_names_are_unique() {
        let ids: HashSet<u16> = FaultKind::ALL.iter().map(|k| k.spec().id).collect();
        let names: HashSet<&str> = FaultKind::ALL.iter().map(|k| k.spec().name).collect();
        assert_eq!(ids.len(), FaultKind::ALL.len());
        assert_eq!(names.len(), FaultKind::ALL.len());
    }

    #[test]
    fn statuses_are_errors_and_sender_faults_are_client_errors() {
        for kind in FaultKind::ALL {
            let spec = kind.spec();
            assert!((400..600).contains(&spec.http_status), "{}", spec.name);
            if spec.code == FaultCode::Sender {
                assert!((400..500).contains(&spec.http_status), "{}", spec.name);
            }
        }
    }
}
