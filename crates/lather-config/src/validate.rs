//! Checks that TOML's types cannot express: exclusive keys, paths, URLs, duplicates.
//!
//! The checks go on after a problem where they can: every handler, the `[nats]` table and
//! every service are checked even when one before them is wrong, and within a service its
//! path, name, kind, flows and routes each on their own. What depends on a check that
//! failed (a service's kind-specific keys when its kind is not clear) is skipped.

use crate::FlowSpec;
use crate::error::{Problems, line_of};
use crate::{Config, ConfigError, ServiceConfig, ServiceKind, Upstream};
use std::collections::{BTreeSet, HashMap};
use std::ops::Range;
use toml::Spanned;

/// Paths lather itself answers at.
const RESERVED_PATHS: [&str; 3] = ["/health", "/ready", "/metrics"];

/// The longest `delivery_wait_ms` an event source takes: past a second, notifications
/// would wait longer than a subscriber of soft real-time events expects.
const MAX_DELIVERY_WAIT_MS: u64 = 1_000;

pub(crate) fn validate(config: &mut Config, text: &str, origin: &str) -> Result<(), ConfigError> {
    let at = |span: Range<usize>, msg: String| {
        ConfigError::new(origin, Some(line_of(text, span.start)), msg)
    };
    let mut problems = Problems::default();
    check_server(config, text, origin, &mut problems);
    if let Some(stream) = &config.stream {
        problems.check(stream.check(origin, config.server.tls.is_some()));
    }
    if let Some(qos) = &config.qos {
        problems.check(crate::qos::check(qos, &at));
        if let Some(broker) = &qos.broker
            && broker.get_ref() == "nats"
            && config.nats.is_none()
        {
            problems.check(Err(at(
                broker.span(),
                "qos.broker: \"nats\" publishes the offers through [nats]: add a [nats] table with the url of the NATS server".to_owned(),
            )));
        }
    }
    problems.check(crate::public::check_server_url(
        config.server.public_url.as_deref(),
        origin,
    ));
    let handlers: BTreeSet<&str> = config.handlers.keys().map(String::as_str).collect();
    for (name, handler) in &config.handlers {
        problems.check(check_handler(
            name,
            handler,
            &handlers,
            config.nats.is_some(),
            &at,
        ));
    }
    if let Some(telemetry) = &config.telemetry {
        problems.check(check_telemetry(telemetry, text, origin, &at));
    }
    if let Some(nats) = &config.nats {
        problems.check(check_nats(nats, text, origin, &at));
    }
    let mut taken = Taken::default();
    let has_stream_table = config.stream.is_some();
    let classes = config.qos.as_ref().map(|q| &q.classes);
    for (i, svc) in config.services.iter_mut().enumerate() {
        let context = ServiceContext {
            handlers: &handlers,
            has_stream_table,
            classes,
            nats: config.nats.as_ref(),
            at: &at,
        };
        check_service(svc, i, &context, &mut taken, &mut problems);
    }
    // Reads every service's kind: only once each is known.
    if problems.is_empty() {
        problems.check(crate::async_replies::check_shared_names(config, &at));
    }
    problems.finish()
}

/// `[telemetry]`: an `http://` or `https://` endpoint, a ratio in 0..=1, a timeout above 0.
fn check_telemetry(
    telemetry: &crate::TelemetryConfig,
    text: &str,
    origin: &str,
    at: &impl Fn(Range<usize>, String) -> ConfigError,
) -> Result<(), ConfigError> {
    let line = |key: &str| crate::error::line_of_key(text, "telemetry", key);
    let url = telemetry.otlp_endpoint.get_ref();
    let scheme_ok = url.starts_with("http://") || url.starts_with("https://");
    if !scheme_ok || url.parse::<http::Uri>().is_err() {
        return Err(at(
            telemetry.otlp_endpoint.span(),
            format!(
                "telemetry.otlp_endpoint: {url:?} is not an http:// or https:// URL (e.g. \"http://collector:4318\")"
            ),
        ));
    }
    if !(0.0..=1.0).contains(&telemetry.sample_ratio) {
        return Err(ConfigError::new(
            origin,
            line("sample_ratio"),
            format!(
                "telemetry.sample_ratio: {} is not between 0.0 and 1.0",
                telemetry.sample_ratio
            ),
        ));
    }
    if telemetry.export_timeout_ms == 0 {
        return Err(ConfigError::new(
            origin,
            line("export_timeout_ms"),
            "telemetry.export_timeout_ms must be greater than 0",
        ));
    }
    if telemetry.service_name.trim().is_empty() {
        return Err(ConfigError::new(
            origin,
            line("service_name"),
            "telemetry.service_name: empty",
        ));
    }
    Ok(())
}

/// The `[server]` keys' bounds, each problem on its own.
fn check_server(config: &Config, text: &str, origin: &str, problems: &mut Problems) {
    let server = &config.server;
    let rules = [
        (
            server.max_message_bytes == 0,
            "max_message_bytes",
            "server.max_message_bytes must be greater than 0",
        ),
        (
            server.max_in_flight == crate::MaxInFlight::Fixed(0),
            "max_in_flight",
            "server.max_in_flight must be at least 1 (or \"auto\")",
        ),
        (
            server.max_batch_items == 0,
            "max_batch_items",
            "server.max_batch_items must be at least 1",
        ),
        (
            server.min_in_flight == 0,
            "min_in_flight",
            "server.min_in_flight must be at least 1",
        ),
        (
            server.body_timeout_ms == 0,
            "body_timeout_ms",
            "server.body_timeout_ms must be greater than 0",
        ),
        (
            server.roam_spare_idle_percent > 100,
            "roam_spare_idle_percent",
            "server.roam_spare_idle_percent must be at most 100",
        ),
        (
            server.max_depth < 3,
            "max_depth",
            "server.max_depth must be at least 3 (Envelope, Body, payload)",
        ),
    ];
    for (bad, key, message) in rules {
        if bad {
            let line = crate::error::line_of_key(text, "server", key);
            problems.check(Err(ConfigError::new(origin, line, message)));
        }
    }
    let (spare, saturated) = (
        server.roam_spare_idle_percent,
        server.roam_saturated_idle_percent,
    );
    if saturated > spare {
        // At the key written: lowering the spare share alone below the default saturated
        // one is the usual way here.
        let line = crate::error::line_of_key(text, "server", "roam_saturated_idle_percent")
            .or_else(|| crate::error::line_of_key(text, "server", "roam_spare_idle_percent"));
        problems.check(Err(ConfigError::new(
            origin,
            line,
            format!(
                "server.roam_saturated_idle_percent ({saturated}) must not be above server.roam_spare_idle_percent ({spare}): a CPU cannot be both saturated and spare; lower both"
            ),
        )));
    }
    problems.check(crate::connections::check(server, text, origin));
    if let Some((span, why)) = server.tls.as_ref().and_then(|t| t.problem()) {
        problems.check(Err(ConfigError::new(
            origin,
            Some(crate::error::line_of(text, span.start)),
            why,
        )));
    }
}

/// A handler's name, placement and `after` list.
fn check_handler(
    name: &str,
    handler: &crate::HandlerConfig,
    handlers: &BTreeSet<&str>,
    has_nats: bool,
    at: &impl Fn(Range<usize>, String) -> ConfigError,
) -> Result<(), ConfigError> {
    if let Some(why) = crate::names::name_problem(name) {
        return Err(at(
            handler.kind.span(),
            format!("handlers: the handler name {why}"),
        ));
    }
    if let Some(p) = &handler.placement
        && p.get_ref().uses_workers()
        && !has_nats
    {
        let what = match p.get_ref() {
            crate::Placement::Auto => "an auto-placed",
            _ => "a remote",
        };
        return Err(at(
            p.span(),
            format!(
                "handlers.{name}.placement: {what} handler needs a [nats] table with the url of the NATS server"
            ),
        ));
    }
    if let Some(p) = &handler.placement
        && *p.get_ref() == crate::Placement::Auto
        && handler.oneway == Some(true)
    {
        return Err(at(
            p.span(),
            format!(
                "handlers.{name}.placement: \"auto\" chooses by how long the message waits, and nothing waits for a oneway handler; use \"remote\" (a JetStream work queue) or \"local\""
            ),
        ));
    }
    for before in handler.after.iter().flat_map(|a| a.get_ref()) {
        let b = before.get_ref();
        if b == name {
            return Err(at(
                before.span(),
                format!("handlers.{name}.after: a handler cannot run after itself"),
            ));
        }
        if !handlers.contains(b.as_str()) {
            return Err(at(
                before.span(),
                format!("handlers.{name}.after: no handler named {b:?}"),
            ));
        }
    }
    Ok(())
}

/// The `[nats]` table.
fn check_nats(
    nats: &crate::NatsConfig,
    text: &str,
    origin: &str,
    at: &impl Fn(Range<usize>, String) -> ConfigError,
) -> Result<(), ConfigError> {
    let line = |key: &str| crate::error::line_of_key(text, "nats", key);
    let url = nats.url.get_ref();
    if url.trim().is_empty() {
        return Err(at(nats.url.span(), "nats.url: empty".to_owned()));
    }
    let subject_ok = !nats.subject_prefix.is_empty()
        && !nats
            .subject_prefix
            .contains(|c: char| c.is_whitespace() || c == '*' || c == '>');
    if !subject_ok {
        return Err(ConfigError::new(
            origin,
            line("subject_prefix"),
            format!(
                "nats.subject_prefix: {:?} is not a subject prefix (no spaces, * or >)",
                nats.subject_prefix
            ),
        ));
    }
    if nats.connect_timeout_ms == 0 {
        return Err(ConfigError::new(
            origin,
            line("connect_timeout_ms"),
            "nats.connect_timeout_ms must be greater than 0",
        ));
    }
    for (key, value) in [
        ("oneway_max_bytes", nats.oneway_max_bytes),
        ("oneway_max_messages", nats.oneway_max_messages),
    ] {
        if value == 0 || i64::try_from(value).is_err() {
            return Err(ConfigError::new(
                origin,
                line(key),
                format!("nats.{key} must be between 1 and {}", i64::MAX),
            ));
        }
    }
    for (key, value, least) in [
        ("ack_timeout_ms", &nats.ack_timeout_ms, 1),
        ("heartbeat_ms", &nats.heartbeat_ms, 10),
    ] {
        if let Some(v) = value
            && !(least..=crate::nats::MAX_LIVENESS_MS).contains(v.get_ref())
        {
            return Err(at(
                v.span(),
                format!(
                    "nats.{key}: must be between {least} and {}",
                    crate::nats::MAX_LIVENESS_MS
                ),
            ));
        }
    }
    for (key, value, range) in [
        (
            "batch_max_items",
            &nats.batch_max_items,
            1..=crate::nats::MAX_FRAME_BATCH,
        ),
        ("batch_wait_ms", &nats.batch_wait_ms, 0..=1000),
    ] {
        if let Some(v) = value
            && !range.contains(v.get_ref())
        {
            return Err(at(
                v.span(),
                format!(
                    "nats.{key}: must be between {} and {}",
                    range.start(),
                    range.end()
                ),
            ));
        }
    }
    check_nats_security(nats, at)
}

/// The `[nats]` TLS and authentication keys: pairs complete, files named, one
/// authentication method at most, `tls_required = false` not against a `tls://` URL.
fn check_nats_security(
    nats: &crate::NatsConfig,
    at: &impl Fn(Range<usize>, String) -> ConfigError,
) -> Result<(), ConfigError> {
    for (key, value) in [
        ("tls_ca_file", &nats.tls_ca_file),
        ("tls_client_cert_file", &nats.tls_client_cert_file),
        ("tls_client_key_file", &nats.tls_client_key_file),
        ("credentials_file", &nats.credentials_file),
        ("nkey_seed_file", &nats.nkey_seed_file),
        ("user", &nats.user),
    ] {
        if let Some(v) = value
            && v.get_ref().trim().is_empty()
        {
            return Err(at(v.span(), format!("nats.{key}: empty")));
        }
    }
    for (key, value) in [("password", &nats.password), ("token", &nats.token)] {
        if let Some(v) = value
            && v.get_ref().expose().is_empty()
        {
            return Err(at(v.span(), format!("nats.{key}: empty")));
        }
    }
    match (&nats.tls_client_cert_file, &nats.tls_client_key_file) {
        (Some(cert), None) => {
            return Err(at(
                cert.span(),
                "nats.tls_client_cert_file needs nats.tls_client_key_file (both or neither)"
                    .to_owned(),
            ));
        }
        (None, Some(key)) => {
            return Err(at(
                key.span(),
                "nats.tls_client_key_file needs nats.tls_client_cert_file (both or neither)"
                    .to_owned(),
            ));
        }
        _ => {}
    }
    match (&nats.user, &nats.password) {
        (Some(user), None) => {
            return Err(at(
                user.span(),
                "nats.user needs nats.password (both or neither)".to_owned(),
            ));
        }
        (None, Some(password)) => {
            return Err(at(
                password.span(),
                "nats.password needs nats.user (both or neither)".to_owned(),
            ));
        }
        _ => {}
    }
    let methods = crate::nats_security::auth_keys_set(nats);
    if let [(first, _), (second, span), ..] = methods.as_slice() {
        return Err(at(
            span.clone(),
            format!(
                "nats.{second}: only one authentication method may be set, and nats.{first} is set too \
                 (choose one of credentials_file, nkey_seed_file, user + password, token)"
            ),
        ));
    }
    if let Some(v) = &nats.tls_required
        && !*v.get_ref()
        && crate::nats_security::has_tls_scheme(nats.url.get_ref())
    {
        return Err(at(
            v.span(),
            "nats.tls_required = false, but nats.url uses tls://".to_owned(),
        ));
    }
    Ok(())
}

/// What every service's checks read besides the service.
struct ServiceContext<'a, At> {
    handlers: &'a BTreeSet<&'a str>,
    has_stream_table: bool,
    classes: Option<&'a std::collections::BTreeMap<String, crate::QosClass>>,
    nats: Option<&'a crate::NatsConfig>,
    at: &'a At,
}

/// The paths and names taken by the services checked so far.
#[derive(Default)]
struct Taken {
    paths: HashMap<String, usize>,
    names: HashMap<String, usize>,
}

/// One service: its path, name and kind, then (when its kind is clear) the keys of its
/// kind, its flows and routes; each part's problem on its own.
fn check_service<At: Fn(Range<usize>, String) -> ConfigError>(
    svc: &mut ServiceConfig,
    i: usize,
    cx: &ServiceContext<'_, At>,
    taken: &mut Taken,
    problems: &mut Problems,
) {
    let at = cx.at;
    problems.check(check_path(svc, i, &mut taken.paths, at));
    problems.check(check_name(svc, i, &mut taken.names, at));
    svc.kind = problems.keep(service_kind(svc, i, at));
    if svc.kind.is_some() {
        problems.check(check_prefix(svc, i, at));
        problems.check(crate::offer::check(i, &svc.offers, cx.classes, at));
        problems.check(crate::stream::check_service(
            svc,
            i,
            cx.has_stream_table,
            at,
        ));
        problems.check(crate::public::check_service(svc, i, at));
        problems.check(crate::header_rules::check_service(svc, i, at));
        problems.check(crate::tuning::check_service(svc, i, at));
        problems.check(crate::upstream_tls::check_service(svc, i, at));
        problems.check(crate::failover_settings::check_service(svc, i, at));
        problems.check(crate::async_replies::check_service(svc, i, at));
        problems.check(crate::subscriptions::check(svc, i, cx.nats, at));
    }
    if svc.max_in_flight == Some(crate::MaxInFlight::Fixed(0)) {
        problems.check(Err(at(
            svc.name.span(),
            format!("service[{i}].max_in_flight must be at least 1 (or \"auto\")"),
        )));
    }
    for (flow, key) in [
        (&svc.request, "request"),
        (&svc.response, "response"),
        (&svc.fault, "fault"),
    ] {
        problems.check(check_flow(
            flow.as_ref(),
            &format!("service[{i}].{key}"),
            cx.handlers,
            at,
        ));
    }
    for (r, route) in svc.routes.iter().enumerate() {
        let key = format!("service[{i}].route[{r}]");
        problems.check(check_route(route, &key, at));
        problems.check(check_flow(
            route.request.as_ref(),
            &format!("{key}.request"),
            cx.handlers,
            at,
        ));
        problems.check(check_flow(
            route.response.as_ref(),
            &format!("{key}.response"),
            cx.handlers,
            at,
        ));
    }
    if let Some(t) = &svc.timeout_ms
        && *t.get_ref() == 0
    {
        problems.check(Err(at(
            t.span(),
            format!("service[{i}].timeout_ms: must be greater than 0"),
        )));
    }
}

/// A service's path: well-formed, not lather's own, not taken (nor its `/publish`).
fn check_path(
    svc: &ServiceConfig,
    i: usize,
    paths: &mut HashMap<String, usize>,
    at: &impl Fn(Range<usize>, String) -> ConfigError,
) -> Result<(), ConfigError> {
    let key = format!("service[{i}].path");
    let path = svc.path.get_ref();
    if let Some(why) = crate::names::path_problem(path) {
        return Err(at(svc.path.span(), format!("{key}: {why}")));
    }
    if !path.starts_with('/') || path.contains(['?', '#', ' ']) {
        return Err(at(
            svc.path.span(),
            format!("{key}: path must start with '/' and hold no '?', '#' or spaces, got {path:?}"),
        ));
    }
    if RESERVED_PATHS.contains(&path.as_str()) {
        return Err(at(
            svc.path.span(),
            format!("{key}: {path} is reserved for lather itself"),
        ));
    }
    if let Some(first) = paths.insert(path.clone(), i) {
        return Err(at(
            svc.path.span(),
            format!("{key}: path {path} is already used by service[{first}]"),
        ));
    }
    let publishes = svc
        .builtin
        .as_ref()
        .is_some_and(|b| *b.get_ref() == crate::Builtin::EventSource);
    if publishes && let Some(first) = paths.insert(format!("{path}/publish"), i) {
        return Err(at(
            svc.path.span(),
            format!(
                "{key}: this event source publishes at {path}/publish, already used by service[{first}]"
            ),
        ));
    }
    Ok(())
}

/// A service's name: well-formed and not taken.
fn check_name(
    svc: &ServiceConfig,
    i: usize,
    names: &mut HashMap<String, usize>,
    at: &impl Fn(Range<usize>, String) -> ConfigError,
) -> Result<(), ConfigError> {
    let name = svc.name.get_ref();
    if let Some(why) = crate::names::name_problem(name) {
        return Err(at(svc.name.span(), format!("service[{i}].name: {why}")));
    }
    if let Some(first) = names.insert(name.clone(), i) {
        return Err(at(
            svc.name.span(),
            format!("service[{i}].name: name {name:?} is already used by service[{first}]"),
        ));
    }
    Ok(())
}

/// A path ending in `/*` is a gateway's prefix; such a gateway forwards each request to
/// its own upstream path, which neither message streams nor batches carry.
fn check_prefix(
    svc: &ServiceConfig,
    i: usize,
    at: &impl Fn(std::ops::Range<usize>, String) -> ConfigError,
) -> Result<(), ConfigError> {
    if svc.path_prefix().is_none() {
        return Ok(());
    }
    if !matches!(
        svc.kind(),
        ServiceKind::Gateway(_) | ServiceKind::RegistryGateway(_)
    ) {
        return Err(at(
            svc.path.span(),
            format!(
                "service[{i}].path: a path ending in /* answers a whole prefix, which only a gateway (upstream) service can"
            ),
        ));
    }
    let streams = svc
        .stream
        .as_ref()
        .filter(|s| *s.get_ref() != crate::StreamMode::Off)
        .map(|s| (s.span(), "stream"));
    let batches = svc
        .batch_upstream
        .as_ref()
        .filter(|b| *b.get_ref())
        .map(|b| (b.span(), "batch_upstream"));
    let later = svc
        .async_replies
        .as_ref()
        .filter(|a| *a.get_ref())
        .map(|a| (a.span(), "async_replies"));
    if let Some((span, key)) = streams.or(batches).or(later) {
        return Err(at(
            span,
            format!(
                "service[{i}].{key}: a prefix gateway (path ending in /*) forwards each request to its own path, which message streams, batches and requests answered later do not carry"
            ),
        ));
    }
    Ok(())
}

/// Every stage non-empty, every name a defined handler, no name twice in a stage (or in
/// an `auto` list).
fn check_flow(
    flow: Option<&crate::Flow>,
    key: &str,
    handlers: &std::collections::BTreeSet<&str>,
    at: &impl Fn(std::ops::Range<usize>, String) -> ConfigError,
) -> Result<(), ConfigError> {
    let Some(flow) = flow else { return Ok(()) };
    let groups: Vec<&[toml::Spanned<String>]> = match flow.get_ref() {
        FlowSpec::Stages(stages) => stages.iter().map(Vec::as_slice).collect(),
        FlowSpec::Auto(names) if names.is_empty() => {
            return Err(at(flow.span(), format!("{key}: `auto` lists no handler")));
        }
        FlowSpec::Auto(names) => vec![names.as_slice()],
    };
    let auto = matches!(flow.get_ref(), FlowSpec::Auto(_));
    for (s, stage) in groups.iter().enumerate() {
        if stage.is_empty() {
            return Err(at(flow.span(), format!("{key}: stage {} is empty", s + 1)));
        }
        for (h, name) in stage.iter().enumerate() {
            let n = name.get_ref();
            if !handlers.contains(n.as_str()) {
                return Err(at(
                    name.span(),
                    format!("{key}: no handler named {n:?} (define it as [handlers.{n}])"),
                ));
            }
            if stage[..h].iter().any(|other| other.get_ref() == n) {
                let place = if auto {
                    "the auto list".to_owned()
                } else {
                    format!("stage {}", s + 1)
                };
                return Err(at(
                    name.span(),
                    format!("{key}: {n:?} is listed twice in {place}"),
                ));
            }
        }
    }
    Ok(())
}

/// A route needs a rule; names must be names; priority only on action-only routes.
fn check_route(
    route: &crate::RouteConfig,
    key: &str,
    at: &impl Fn(std::ops::Range<usize>, String) -> ConfigError,
) -> Result<(), ConfigError> {
    if route.operation.is_none() && route.action.is_none() && route.header.is_none() {
        let span = route
            .request
            .as_ref()
            .or(route.response.as_ref())
            .map_or(0..0, |f| f.span());
        return Err(at(
            span,
            format!("{key}: a route needs operation, action or header to match on"),
        ));
    }
    for (name, value) in [("operation", &route.operation), ("header", &route.header)] {
        if let Some(v) = value
            && crate::parse_clark(v.get_ref()).is_none()
        {
            return Err(at(
                v.span(),
                format!(
                    "{key}.{name}: {:?} is not a name; write {{namespace}}local",
                    v.get_ref()
                ),
            ));
        }
    }
    if let Some(p) = &route.priority {
        if !["high", "normal", "low"].contains(&p.get_ref().to_ascii_lowercase().as_str()) {
            return Err(at(
                p.span(),
                format!(
                    "{key}.priority: {:?} is not high, normal or low",
                    p.get_ref()
                ),
            ));
        }
        if route.operation.is_some() || route.header.is_some() || route.action.is_none() {
            return Err(at(
                p.span(),
                format!(
                    "{key}.priority: only a route that matches by action alone may set a priority (admission happens before the body is read)"
                ),
            ));
        }
    }
    Ok(())
}

/// Checks the `qos-broker` keys: only a broker takes them; `register_allow` lists valid
/// networks; `max_offers_per_owner` is at least 1.
fn check_broker_keys(
    svc: &crate::ServiceConfig,
    i: usize,
    at: &impl Fn(std::ops::Range<usize>, String) -> ConfigError,
) -> Result<(), ConfigError> {
    let is_broker = svc
        .builtin
        .as_ref()
        .is_some_and(|b| *b.get_ref() == crate::Builtin::QosBroker);
    let only = |span: std::ops::Range<usize>, key: &str| {
        at(
            span,
            format!("service[{i}].{key}: only a builtin = \"qos-broker\" service takes it"),
        )
    };
    if let Some(allow) = &svc.register_allow {
        if !is_broker {
            return Err(only(allow.span(), "register_allow"));
        }
        for net in allow.get_ref() {
            if let Err(e) = net.get_ref().parse::<crate::IpNet>() {
                return Err(at(net.span(), format!("service[{i}].register_allow: {e}")));
            }
        }
    }
    if let Some(max) = &svc.max_offers_per_owner {
        if !is_broker {
            return Err(only(max.span(), "max_offers_per_owner"));
        }
        if *max.get_ref() == 0 {
            return Err(at(
                max.span(),
                format!("service[{i}].max_offers_per_owner: must be at least 1"),
            ));
        }
    }
    Ok(())
}

fn service_kind(
    svc: &ServiceConfig,
    i: usize,
    at: &impl Fn(std::ops::Range<usize>, String) -> ConfigError,
) -> Result<ServiceKind, ConfigError> {
    let is_source = svc
        .builtin
        .as_ref()
        .is_some_and(|b| *b.get_ref() == crate::Builtin::EventSource);
    let is_context_store = svc
        .builtin
        .as_ref()
        .is_some_and(|b| *b.get_ref() == crate::Builtin::ContextStore);
    let is_broker = svc
        .builtin
        .as_ref()
        .is_some_and(|b| *b.get_ref() == crate::Builtin::QosBroker);
    if let Some(span) = svc.store.as_ref().map(|v| v.span())
        && !is_source
        && !is_context_store
        && !is_broker
    {
        return Err(at(
            span,
            format!(
                "service[{i}].store: only a builtin = \"event-source\", \"context-store\" or \"qos-broker\" service takes it"
            ),
        ));
    }
    let is_registry = svc.builtin.as_ref().is_some_and(|b| {
        *b.get_ref() == crate::Builtin::Registry || *b.get_ref() == crate::Builtin::QosBroker
    });
    for (key, value) in [
        ("max_registrations", &svc.max_registrations),
        ("max_lease_s", &svc.max_lease_s),
    ] {
        if let Some(value) = value {
            if !is_registry {
                return Err(at(
                    value.span(),
                    format!(
                        "service[{i}].{key}: only a builtin = \"registry\" or \"qos-broker\" service takes it"
                    ),
                ));
            }
            if *value.get_ref() == 0 {
                return Err(at(
                    value.span(),
                    format!("service[{i}].{key}: must be at least 1"),
                ));
            }
            if key == "max_lease_s" && *value.get_ref() > crate::MAX_LEASE_S {
                return Err(at(
                    value.span(),
                    format!(
                        "service[{i}].max_lease_s: at most {} (30 days)",
                        crate::MAX_LEASE_S
                    ),
                ));
            }
        }
    }
    check_broker_keys(svc, i, at)?;
    if let Some(mode) = &svc.contexts
        && !is_context_store
    {
        return Err(at(
            mode.span(),
            format!("service[{i}].contexts: only a builtin = \"context-store\" service takes it"),
        ));
    }
    let store_keys = [
        ("max_context_bytes", &svc.max_context_bytes),
        ("max_contexts", &svc.max_contexts),
        ("context_ttl_s", &svc.context_ttl_s),
        ("max_context_ttl_s", &svc.max_context_ttl_s),
    ];
    for (key, value) in store_keys {
        if let Some(value) = value {
            if !is_context_store {
                return Err(at(
                    value.span(),
                    format!(
                        "service[{i}].{key}: only a builtin = \"context-store\" service takes it"
                    ),
                ));
            }
            if *value.get_ref() == 0 {
                return Err(at(
                    value.span(),
                    format!("service[{i}].{key}: must be at least 1"),
                ));
            }
        }
    }
    let source_keys = [
        (
            "max_expires_s",
            svc.max_expires_s.as_ref().map(|v| v.span()),
        ),
        ("event_action", svc.event_action.as_ref().map(|v| v.span())),
        (
            "compress_min_bytes",
            svc.compress_min_bytes.as_ref().map(|v| v.span()),
        ),
        (
            "subscriptions",
            svc.subscriptions.as_ref().map(|v| v.span()),
        ),
        ("notify_allow", svc.notify_allow.as_ref().map(|v| v.span())),
        (
            "notify_schemes",
            svc.notify_schemes.as_ref().map(|v| v.span()),
        ),
        (
            "max_subscriptions_per_identity",
            svc.max_subscriptions_per_identity
                .as_ref()
                .map(|v| v.span()),
        ),
        (
            "filter_budget",
            svc.filter_budget.as_ref().map(|v| v.span()),
        ),
        (
            "sink_queue_bytes",
            svc.sink_queue_bytes.as_ref().map(|v| v.span()),
        ),
        (
            "queue_bytes_total",
            svc.queue_bytes_total.as_ref().map(|v| v.span()),
        ),
        (
            "sink_write_timeout_ms",
            svc.sink_write_timeout_ms.as_ref().map(|v| v.span()),
        ),
        (
            "delivery_wait_ms",
            svc.delivery_wait_ms.as_ref().map(|v| v.span()),
        ),
    ];
    for (key, span) in source_keys {
        if let Some(span) = span
            && !is_source
        {
            return Err(at(
                span,
                format!("service[{i}].{key}: only a builtin = \"event-source\" service takes it"),
            ));
        }
    }
    for (key, value) in [
        (
            "max_subscriptions_per_identity",
            &svc.max_subscriptions_per_identity,
        ),
        ("filter_budget", &svc.filter_budget),
    ] {
        if let Some(value) = value
            && *value.get_ref() == 0
        {
            return Err(at(
                value.span(),
                format!("service[{i}].{key}: must be at least 1"),
            ));
        }
    }
    if let Some(wait) = &svc.delivery_wait_ms
        && *wait.get_ref() > MAX_DELIVERY_WAIT_MS
    {
        return Err(at(
            wait.span(),
            format!("service[{i}].delivery_wait_ms: must be at most {MAX_DELIVERY_WAIT_MS}"),
        ));
    }
    if let Some(max) = &svc.max_expires_s
        && *max.get_ref() == 0
    {
        return Err(at(
            max.span(),
            format!("service[{i}].max_expires_s: must be at least 1"),
        ));
    }
    for (key, value) in [
        ("sink_queue_bytes", &svc.sink_queue_bytes),
        ("queue_bytes_total", &svc.queue_bytes_total),
        ("sink_write_timeout_ms", &svc.sink_write_timeout_ms),
    ] {
        if let Some(v) = value
            && *v.get_ref() == 0
        {
            return Err(at(
                v.span(),
                format!("service[{i}].{key}: must be at least 1"),
            ));
        }
    }
    match (&svc.builtin, &svc.upstream) {
        (Some(b), None) => Ok(ServiceKind::Builtin(*b.get_ref())),
        (None, Some(spec)) => match spec.get_ref() {
            crate::UpstreamSpec::List(list) => {
                if list.is_empty() {
                    return Err(at(
                        spec.span(),
                        format!("service[{i}].upstream: needs at least one URL"),
                    ));
                }
                list.iter()
                    .map(|entry| {
                        let url = Spanned::new(entry.span(), entry.get_ref().url.clone());
                        upstream(&url, i, true, at).map(|u| Upstream {
                            weight: entry.get_ref().weight,
                            ..u
                        })
                    })
                    .collect::<Result<_, _>>()
                    .map(ServiceKind::Gateway)
            }
            crate::UpstreamSpec::Registry(r) => {
                if r.name.get_ref().trim().is_empty() {
                    return Err(at(
                        r.name.span(),
                        format!("service[{i}].upstream.name: names no service"),
                    ));
                }
                let poll = r.poll_ms.as_ref().map_or(5_000, |p| *p.get_ref());
                if poll == 0 {
                    return Err(at(
                        spec.span(),
                        format!("service[{i}].upstream.poll_ms: must be at least 1"),
                    ));
                }
                Ok(ServiceKind::RegistryGateway(crate::RegistryBackends {
                    registry: upstream(&r.registry, i, true, at)?,
                    name: r.name.get_ref().trim().to_owned(),
                    poll: std::time::Duration::from_millis(poll),
                }))
            }
        },
        (Some(b), Some(_)) => Err(at(
            b.span(),
            format!("service[{i}]: set either builtin or upstream, not both"),
        )),
        (None, None) => Err(at(
            svc.name.span(),
            format!("service[{i}]: needs builtin = \"echo\" or upstream = [\"http://…\"]"),
        )),
    }
}

/// A backend or registry URL: `http://` or (when `https` is allowed) `https://`, with a
/// host.
fn upstream(
    url: &Spanned<String>,
    i: usize,
    https: bool,
    at: &impl Fn(std::ops::Range<usize>, String) -> ConfigError,
) -> Result<Upstream, ConfigError> {
    let raw = url.get_ref();
    let bad = |why: &str| at(url.span(), format!("service[{i}].upstream: {raw:?} {why}"));
    let uri: http::Uri = raw
        .parse()
        .map_err(|e| bad(&format!("is not a URL ({e})")))?;
    match uri.scheme_str() {
        Some("http") => {}
        Some("https") if https => {}
        _ if https => return Err(bad("must start with http:// or https://")),
        _ => return Err(bad("must start with http://")),
    }
    if uri.host().is_none_or(str::is_empty) {
        return Err(bad("has no host"));
    }
    Ok(Upstream {
        url: raw.clone(),
        uri,
        weight: 1,
    })
}

#[cfg(test)]
mod tests {
    use crate::{Builtin, Config, ServiceKind};

    const GOOD: &str = r#"
[server]
listen = "127.0.0.1:9090"
max_message_bytes = 1024

[[service]]
name = "echo"
path = "/echo"
builtin = "echo"

[[service]]
name = "gw"
path = "/gw"
upstream = ["http://127.0.0.1:9090/echo", "http://localhost:1/x"]
timeout_ms = 250
"#;

    #[test]
    fn reads_a_full_configuration() {
        let cfg = Config::from_toml(GOOD, "good.toml").unwrap();
        assert_eq!(cfg.server.listen.port(), 9090);
        assert_eq!(cfg.server.max_message_bytes, 1024);
        assert_eq!(cfg.services[0].kind(), &ServiceKind::Builtin(Builtin::Echo));
        match cfg.services[1].kind() {
            ServiceKind::Gateway(ups) => assert_eq!(ups.len(), 2),
            other => panic!("{other:?}"),
        }
        assert_eq!(cfg.services[1].timeout().as_millis(), 250);
    }

    fn error_of(text: &str) -> (Option<usize>, String) {
        let e = Config::from_toml(text, "t.toml").unwrap_err();
        (e.line(), e.to_string())
    }

    #[test]
    fn routes_need_a_rule_a_name_and_priority_only_by_action() {
        let base = "[handlers.h]\nkind = \"logging\"\n[[service]]\nname = \"a\"\npath = \"/a\"\nbuiltin = \"echo\"\n[[service.route]]\n";
        let (line, msg) = error_of(&format!("{base}request = [[\"h\"]]\n"));
        assert_eq!(line, Some(8), "{msg}");
        assert!(msg.contains("needs operation, action or header"), "{msg}");
        let (line, msg) = error_of(&format!("{base}operation = \"{{urn:x}}\"\n"));
        assert_eq!(line, Some(8), "{msg}");
        assert!(msg.contains("is not a name"), "{msg}");
        let (line, msg) = error_of(&format!(
            "{base}operation = \"{{urn:x}}op\"\npriority = \"high\"\n"
        ));
        assert_eq!(line, Some(9), "{msg}");
        assert!(msg.contains("matches by action alone"), "{msg}");
        let (_, msg) = error_of(&format!(
            "{base}action = \"urn:a\"\npriority = \"urgent\"\n"
        ));
        assert!(msg.contains("not high, normal or low"), "{msg}");
        let (line, msg) = error_of(&format!(
            "{base}action = \"urn:a\"\nrequest = [[\"nope\"]]\n"
        ));
        assert_eq!(line, Some(9), "{msg}");
        assert!(
            msg.contains("route[0].request: no handler named \"nope\""),
            "{msg}"
        );
        Config::from_toml(
            &format!("{base}action = \"urn:a\"\npriority = \"HIGH\"\nrequest = [[\"h\"]]\n"),
            "t",
        )
        .unwrap();
        assert_eq!(
            crate::parse_clark("{urn:x}op"),
            Some(("urn:x".into(), "op".into()))
        );
        assert_eq!(crate::parse_clark("op"), Some((String::new(), "op".into())));
    }

    #[test]
    fn flows_are_stages_or_an_auto_list() {
        let base = "[handlers.a]\nkind = \"logging\"\n[handlers.b]\nkind = \"logging\"\nafter = [\"a\"]\n[[service]]\nname = \"s\"\npath = \"/s\"\nbuiltin = \"echo\"\n";
        let cfg = Config::from_toml(
            &format!("{base}request = {{ auto = [\"a\", \"b\"] }}\nfault = [[\"a\"]]\n"),
            "t.toml",
        )
        .unwrap();
        let svc = &cfg.services[0];
        let names: Vec<&str> = svc
            .request
            .as_ref()
            .unwrap()
            .get_ref()
            .names()
            .iter()
            .map(|n| n.get_ref().as_str())
            .collect();
        assert_eq!(names, ["a", "b"]);
        assert!(matches!(
            svc.request.as_ref().unwrap().get_ref(),
            crate::FlowSpec::Auto(_)
        ));
        assert!(matches!(
            svc.fault.as_ref().unwrap().get_ref(),
            crate::FlowSpec::Stages(_)
        ));

        let (line, msg) = error_of(&format!("{base}request = \"auto\"\n"));
        assert_eq!(line, Some(10));
        assert!(msg.contains("{ auto = ["), "{msg}");
        let (_, msg) = error_of(&format!("{base}request = {{ plan = [\"a\"] }}\n"));
        assert!(msg.contains("unknown key \"plan\""), "{msg}");
        let (line, msg) = error_of(&format!("{base}request = {{ auto = [\"a\", \"a\"] }}\n"));
        assert_eq!(line, Some(10));
        assert!(msg.contains("listed twice in the auto list"), "{msg}");
        let (_, msg) = error_of(&format!("{base}request = {{ auto = [] }}\n"));
        assert!(msg.contains("`auto` lists no handler"), "{msg}");
        let (line, msg) = error_of(&format!("{base}fault = [[\"nope\"]]\n"));
        assert_eq!(line, Some(10));
        assert!(
            msg.contains("service[0].fault: no handler named \"nope\""),
            "{msg}"
        );
    }

    #[test]
    fn every_problem_is_reported_with_its_line() {
        let text = "[server]\nmax_depth = 2\n\n[handlers.a]\nkind = \"logging\"\nafter = [\"ghost\"]\n\n[[service]]\nname = \"a\"\npath = \"/health\"\nbuiltin = \"echo\"\nrequest = [[\"nope\"]]\n\n[[service]]\nname = \"a\"\npath = \"/b\"\nbuiltin = \"echo\"\ntimeout_ms = 0\n";
        let err = Config::from_toml(text, "t.toml").unwrap_err();
        let found: Vec<(Option<usize>, &str)> = err
            .issues()
            .iter()
            .map(|i| (i.line(), i.message()))
            .collect();
        let lines: Vec<Option<usize>> = found.iter().map(|(l, _)| *l).collect();
        assert_eq!(
            lines,
            [Some(2), Some(6), Some(10), Some(12), Some(15), Some(18)],
            "{err}"
        );
        let text = err.to_string();
        for needle in [
            "t.toml:2: server.max_depth must be at least 3",
            "t.toml:6: handlers.a.after: no handler named \"ghost\"",
            "t.toml:10: service[0].path: /health is reserved",
            "t.toml:12: service[0].request: no handler named \"nope\"",
            "t.toml:15: service[1].name: name \"a\" is already used",
            "t.toml:18: service[1].timeout_ms: must be greater than 0",
        ] {
            assert!(text.contains(needle), "{needle} missing from:\n{text}");
        }
        assert_eq!(text.lines().count(), 6, "{text}");
        // The first problem is still at hand alone.
        assert_eq!(err.line(), Some(2));
        assert!(err.message().starts_with("server.max_depth"));
    }

    #[test]
    fn a_service_whose_kind_is_unclear_skips_only_its_kind_checks() {
        let text = "[[service]]\nname = \"a\"\npath = \"/a\"\n\n[[service]]\nname = \"b\"\npath = \"b\"\nbuiltin = \"echo\"\n";
        let err = Config::from_toml(text, "t.toml").unwrap_err();
        let lines: Vec<Option<usize>> = err.issues().iter().map(|i| i.line()).collect();
        assert_eq!(lines, [Some(2), Some(7)], "{err}");
        assert!(err.issues()[0].message().contains("needs builtin"), "{err}");
    }

    #[test]
    fn environment_variables_fill_values_before_the_checks() {
        let env = |name: &str| match name {
            "ECHO_PATH" => Some("/e".to_owned()),
            "DEPTH" => Some("2".to_owned()),
            _ => None,
        };
        let text = "[server]\nlisten = \"127.0.0.1:${PORT:-8181}\"\n[[service]]\nname = \"e\"\npath = \"${ECHO_PATH}\"\nbuiltin = \"echo\"\n";
        let cfg = Config::from_toml_with_env(text, "t.toml", &env).unwrap();
        assert_eq!(cfg.server.listen.port(), 8181);
        assert_eq!(cfg.services[0].path.get_ref(), "/e");
        assert!(cfg.text().contains("path = \"/e\""), "{}", cfg.text());
        // A substituted value is checked like a written one, on its line.
        let err = Config::from_toml_with_env("[server]\n\nmax_depth = ${DEPTH}\n", "t.toml", &env)
            .unwrap_err();
        assert_eq!(err.line(), Some(3), "{err}");
        let err = Config::from_toml_with_env("[server]\nlisten = \"${LISTEN}\"\n", "t.toml", &env)
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "t.toml:2: environment variable LISTEN is not set (write `${LISTEN:-default}` to give a default)"
        );
    }

    #[test]
    fn after_names_another_defined_handler() {
        let text = "[handlers.a]\nkind = \"logging\"\nafter = [\"ghost\"]\n";
        let (line, msg) = error_of(text);
        assert_eq!(line, Some(3));
        assert!(
            msg.contains("handlers.a.after: no handler named \"ghost\""),
            "{msg}"
        );
        let (_, msg) = error_of("[handlers.a]\nkind = \"logging\"\nafter = [\"a\"]\n");
        assert!(msg.contains("cannot run after itself"), "{msg}");
    }

    #[test]
    fn remote_placement_needs_nats_and_known_values() {
        use crate::{Fallback, Placement};
        let handler = "[handlers.a]\nkind = \"logging\"\nplacement = \"remote\"\n";
        let (line, msg) = error_of(handler);
        assert_eq!(line, Some(3), "{msg}");
        assert!(msg.contains("handlers.a.placement"), "{msg}");
        assert!(msg.contains("[nats]"), "{msg}");
        let text =
            format!("{handler}fallback = \"local\"\n[nats]\nurl = \"nats://127.0.0.1:4222\"\n");
        let cfg = Config::from_toml(&text, "t").unwrap();
        let a = &cfg.handlers["a"];
        assert_eq!(a.placement(), Placement::Remote);
        assert_eq!(a.fallback(), Fallback::Local);
        let nats = cfg.nats.as_ref().unwrap();
        assert_eq!(nats.subject_prefix, "lather");
        assert_eq!(nats.connect_timeout_ms, 2000);
        assert_eq!(nats.handler_subject("a"), "lather.handler.a");
        assert_eq!(nats.oneway_subject("a"), "lather.oneway.a");
        assert_eq!(nats.oneway_max_bytes, 256 * 1024 * 1024);
        assert_eq!(nats.oneway_max_messages, 100_000);
        let (_, msg) = error_of("[nats]\nurl = \"nats://x\"\noneway_max_messages = 0\n");
        assert!(msg.contains("nats.oneway_max_messages"), "{msg}");
        assert_eq!(nats.ack_timeout(), std::time::Duration::from_millis(100));
        assert_eq!(nats.heartbeat(), std::time::Duration::from_millis(200));
        let (line, msg) = error_of("[nats]\nurl = \"nats://x\"\nheartbeat_ms = 0\n");
        assert_eq!(line, Some(3), "{msg}");
        assert!(msg.contains("nats.heartbeat_ms"), "{msg}");
        let (line, msg) = error_of("[nats]\nurl = \"nats://x\"\n\nack_timeout_ms = 60001\n");
        assert_eq!(line, Some(4), "{msg}");
        assert!(msg.contains("nats.ack_timeout_ms"), "{msg}");
        assert_eq!(nats.frame_batch(), (1, std::time::Duration::from_millis(1)));
        let (line, msg) = error_of("[nats]\nurl = \"nats://x\"\nbatch_max_items = 257\n");
        assert_eq!(line, Some(3), "{msg}");
        assert!(
            msg.contains("nats.batch_max_items: must be between 1 and 256"),
            "{msg}"
        );
        let (_, msg) = error_of("[nats]\nurl = \"nats://x\"\nbatch_wait_ms = 1001\n");
        assert!(msg.contains("nats.batch_wait_ms"), "{msg}");
        let plain = Config::from_toml("[handlers.b]\nkind = \"logging\"\n", "t").unwrap();
        assert_eq!(plain.handlers["b"].placement(), Placement::Local);
        assert_eq!(plain.handlers["b"].fallback(), Fallback::Fault);
        let (line, msg) = error_of("[handlers.b]\nkind = \"logging\"\nplacement = \"auto\"\n");
        assert_eq!(line, Some(3), "{msg}");
        assert!(msg.contains("handlers.b.placement"), "{msg}");
        assert!(
            msg.contains("auto-placed handler needs a [nats] table"),
            "{msg}"
        );
        let auto = Config::from_toml(
            "[handlers.b]\nkind = \"logging\"\nplacement = \"auto\"\n[nats]\nurl = \"nats://h\"\n",
            "t",
        )
        .unwrap();
        assert_eq!(auto.handlers["b"].placement(), Placement::Auto);
        let (line, msg) = error_of(
            "[nats]\nurl = \"nats://h\"\n[handlers.b]\nkind = \"logging\"\noneway = true\nplacement = \"auto\"\n",
        );
        assert_eq!(line, Some(6), "{msg}");
        assert!(msg.contains("nothing waits for a oneway handler"), "{msg}");
        assert!(Placement::Auto.uses_workers() && Placement::Remote.uses_workers());
        assert!(!Placement::Local.uses_workers());
        let (line, msg) = error_of("[handlers.a]\nkind = \"logging\"\nplacement = \"moon\"\n");
        assert_eq!(line, Some(3), "{msg}");
        assert!(msg.contains("moon") || msg.contains("variant"), "{msg}");
        let (line, msg) = error_of("[handlers.a]\nkind = \"logging\"\nfallback = \"retry\"\n");
        assert_eq!(line, Some(3), "{msg}");
        let (_, msg) = error_of("[nats]\nurl = \"nats://x\"\nsubject_prefix = \"a b\"\n");
        assert!(msg.contains("nats.subject_prefix"), "{msg}");
        let (line, msg) = error_of("[nats]\nurl = \"nats://x\"\nport = 3\n");
        assert_eq!(line, Some(3), "{msg}");
    }

    #[test]
    fn max_in_flight_is_a_number_or_auto() {
        use crate::{Auto, MaxInFlight};
        let cfg =
            Config::from_toml("[server]\nmax_in_flight = 8\nqueue_capacity = 3\n", "t").unwrap();
        assert_eq!(cfg.server.max_in_flight, MaxInFlight::Fixed(8));
        assert_eq!(cfg.server.queue_capacity, 3);
        let cfg = Config::from_toml("[server]\nmax_in_flight = \"auto\"\n", "t").unwrap();
        assert_eq!(cfg.server.max_in_flight, MaxInFlight::Auto(Auto::Auto));
        assert_eq!(
            Config::from_toml("", "t").unwrap().server.max_in_flight,
            MaxInFlight::Auto(Auto::Auto)
        );
        let (line, msg) = error_of("[server]\nmax_in_flight = \"lots\"\n");
        assert_eq!(line, Some(2), "{msg}");
        assert!(msg.contains("max_in_flight"), "{msg}");
        let (_, msg) = error_of("[server]\nmax_in_flight = 0\n");
        assert!(msg.contains("at least 1"), "{msg}");
        assert_eq!(Config::from_toml("", "t").unwrap().server.min_in_flight, 4);
        let cfg = Config::from_toml("[server]\nmin_in_flight = 16\n", "t").unwrap();
        assert_eq!(cfg.server.min_in_flight, 16);
        let (_, msg) = error_of("[server]\nmin_in_flight = 0\n");
        assert!(
            msg.contains("server.min_in_flight must be at least 1"),
            "{msg}"
        );
    }

    #[test]
    fn roaming_keys_have_defaults_and_bounds() {
        let server = Config::from_toml("", "t").unwrap().server;
        assert!(server.roam_connections);
        assert_eq!(
            (
                server.roam_spare_idle_percent,
                server.roam_saturated_idle_percent
            ),
            (30, 5)
        );
        let cfg = Config::from_toml(
            "[server]\nroam_connections = false\nroam_spare_idle_percent = 60\nroam_saturated_idle_percent = 0\n",
            "t",
        )
        .unwrap();
        assert!(!cfg.server.roam_connections);
        assert_eq!(cfg.server.roam_spare_idle_percent, 60);
        assert_eq!(cfg.server.roam_saturated_idle_percent, 0);
        let (line, msg) = error_of("[server]\nroam_spare_idle_percent = 101\n");
        assert_eq!(line, Some(2), "{msg}");
        assert!(msg.contains("at most 100"), "{msg}");
        let (line, msg) =
            error_of("[server]\nroam_spare_idle_percent = 20\nroam_saturated_idle_percent = 21\n");
        assert_eq!(line, Some(3), "{msg}");
        assert!(
            msg.contains("roam_saturated_idle_percent (21) must not be above"),
            "{msg}"
        );
        // Every CPU spare and none saturated: always follow, never shed.
        let cfg = Config::from_toml(
            "[server]\nroam_spare_idle_percent = 0\nroam_saturated_idle_percent = 0\n",
            "t",
        )
        .unwrap();
        assert_eq!(cfg.server.roam_spare_idle_percent, 0);
        // The spare share alone lowered below the default saturated one: named at its line.
        let (line, msg) =
            error_of("[server]\nlisten = \"127.0.0.1:1\"\nroam_spare_idle_percent = 2\n");
        assert_eq!(line, Some(3), "{msg}");
        assert!(msg.contains("(5) must not be above"), "{msg}");
        assert!(msg.contains("roam_spare_idle_percent (2)"), "{msg}");
        let (_, msg) = error_of("[server]\nroam_spare_idle_percent = -1\n");
        assert!(msg.contains("roam_spare_idle_percent"), "{msg}");
    }

    #[test]
    fn unknown_keys_name_the_key_and_line() {
        let (line, msg) = error_of("[server]\nlisten = \"127.0.0.1:1\"\nlisten_port = 3\n");
        assert_eq!(line, Some(3));
        assert!(msg.contains("listen_port"), "{msg}");
        assert!(msg.starts_with("t.toml:3:"), "{msg}");
        let (line, msg) = error_of(
            "[[service]]\nname = \"a\"\npath = \"/a\"\nbuiltin = \"echo\"\nupstreams = []\n",
        );
        assert_eq!(line, Some(5));
        assert!(msg.contains("upstreams"), "{msg}");
        let (_, msg) = error_of("[serve]\n");
        assert!(msg.contains("serve"), "{msg}");
    }

    #[test]
    fn semantic_errors_point_at_their_line() {
        let cases = [
            (
                "[[service]]\nname = \"a\"\npath = \"a\"\nbuiltin = \"echo\"\n",
                3,
                "path",
            ),
            (
                "[[service]]\nname = \"a\"\npath = \"/a\"\nbuiltin = \"echo\"\nupstream = [\"http://x\"]\n",
                4,
                "not both",
            ),
            (
                "[[service]]\nname = \"a\"\npath = \"/a\"\n",
                2,
                "needs builtin",
            ),
            (
                "[[service]]\nname = \"a\"\npath = \"/a\"\nupstream = [\"ftp://x/\"]\n",
                4,
                "http://",
            ),
            (
                "[[service]]\nname = \"a\"\npath = \"/a\"\nupstream = [\"https://x/\", \"gopher://y/\"]\n",
                4,
                "must start with http:// or https://",
            ),
            (
                "[[service]]\nname = \"a\"\npath = \"/a\"\nupstream = []\n",
                4,
                "at least one",
            ),
            (
                "[[service]]\nname = \"a\"\npath = \"/metrics\"\nbuiltin = \"echo\"\n",
                3,
                "reserved",
            ),
            (
                "[[service]]\nname = \"a\"\npath = \"/a\"\nbuiltin = \"soap\"\n",
                4,
                "unknown variant",
            ),
            (
                "[[service]]\nname = \"a\"\npath = \"/a\"\nbuiltin = \"echo\"\n[[service]]\nname = \"b\"\npath = \"/a\"\nbuiltin = \"echo\"\n",
                7,
                "already used",
            ),
            (
                "[[service]]\nname = \"a\"\npath = \"/a\"\nbuiltin = \"echo\"\nstore = \"x.redb\"\n",
                5,
                "event-source",
            ),
            (
                "[[service]]\nname = \"a\"\npath = \"/a\"\nbuiltin = \"event-source\"\nmax_expires_s = 0\n",
                5,
                "at least 1",
            ),
            (
                "[[service]]\nname = \"a\"\npath = \"/a\"\nbuiltin = \"event-source\"\nfilter_budget = 0\n",
                5,
                "filter_budget: must be at least 1",
            ),
            (
                "[[service]]\nname = \"a\"\npath = \"/a\"\nbuiltin = \"echo\"\nnotify_allow = [\"127.0.0.1\"]\n",
                5,
                "notify_allow: only a builtin = \"event-source\"",
            ),
            (
                "[[service]]\nname = \"a\"\npath = \"/a\"\nbuiltin = \"echo\"\ncompress_min_bytes = 10\n",
                5,
                "compress_min_bytes: only a builtin = \"event-source\"",
            ),
            (
                "[[service]]\nname = \"a\"\npath = \"/a\"\nbuiltin = \"echo\"\nsink_queue_bytes = 10\n",
                5,
                "sink_queue_bytes: only a builtin = \"event-source\"",
            ),
            (
                "[[service]]\nname = \"a\"\npath = \"/a\"\nbuiltin = \"echo\"\ndelivery_wait_ms = 1\n",
                5,
                "delivery_wait_ms: only a builtin = \"event-source\"",
            ),
            (
                "[[service]]\nname = \"a\"\npath = \"/a\"\nbuiltin = \"event-source\"\ndelivery_wait_ms = 1001\n",
                5,
                "delivery_wait_ms: must be at most 1000",
            ),
            (
                "[[service]]\nname = \"a\"\npath = \"/a\"\nbuiltin = \"event-source\"\nqueue_bytes_total = 0\n",
                5,
                "queue_bytes_total: must be at least 1",
            ),
            (
                "[[service]]\nname = \"a\"\npath = \"/a\"\nbuiltin = \"event-source\"\nsink_write_timeout_ms = 0\n",
                5,
                "sink_write_timeout_ms: must be at least 1",
            ),
            (
                "[[service]]\nname = \"a\"\npath = \"/a/publish\"\nbuiltin = \"echo\"\n[[service]]\nname = \"b\"\npath = \"/a\"\nbuiltin = \"event-source\"\n",
                7,
                "publishes at /a/publish",
            ),
            (
                "[[service]]\nname = \"a\"\npath = \"/a\"\nbuiltin = \"echo\"\nstore = \"x.redb\"\n",
                5,
                "store: only a builtin = \"event-source\", \"context-store\" or \"qos-broker\"",
            ),
            (
                "[[service]]\nname = \"a\"\npath = \"/a\"\nbuiltin = \"event-source\"\nmax_contexts = 5\n",
                5,
                "max_contexts: only a builtin = \"context-store\"",
            ),
            (
                "[[service]]\nname = \"a\"\npath = \"/a\"\nbuiltin = \"context-store\"\nmax_context_bytes = 0\n",
                5,
                "max_context_bytes: must be at least 1",
            ),
            (
                "[[service]]\nname = \"a\"\npath = \"/a\"\nbuiltin = \"context-store\"\ncontext_ttl = 5\n",
                5,
                "context_ttl",
            ),
            (
                "[[service]]\nname = \"a\"\npath = \"/a\"\nupstream = { registry = \"ftp://r\", name = \"q\" }\n",
                4,
                "must start with http://",
            ),
            (
                "[[service]]\nname = \"a\"\npath = \"/a\"\nupstream = { registry = \"http://r/reg\", nam = \"q\" }\n",
                4,
                "unknown field `nam`",
            ),
            (
                "[[service]]\nname = \"a\"\npath = \"/a\"\nupstream = \"http://r\"\n",
                4,
                "a list of backend URLs, or { registry",
            ),
            ("[server]\nlisten = \"nowhere\"\n", 2, "socket address"),
            ("[server]\nmax_message_bytes = -1\n", 2, "max_message_bytes"),
        ];
        for (text, line, needle) in cases {
            let (got, msg) = error_of(text);
            assert_eq!(got, Some(line), "{text}: {msg}");
            assert!(msg.contains(needle), "{text}: {msg}");
        }
    }

    #[test]
    fn prefix_paths_are_for_gateways_that_send_each_request_alone() {
        let gw = "[[service]]\nname = \"g\"\npath = \"/api/*\"\nupstream = [\"http://127.0.0.1:9/base\"]\n";
        let config = Config::from_toml(
            &format!("[server]\ntrusted_proxies = [\"10.0.0.0/8\", \"::1\"]\n{gw}"),
            "t.toml",
        )
        .unwrap();
        let svc = &config.services[0];
        assert_eq!(svc.path_prefix(), Some("/api"));
        assert_eq!(svc.base_path(), "/api");
        assert_eq!(config.server.trusted_proxies.len(), 2);
        let root = gw.replace("/api/*", "/*");
        let config = Config::from_toml(&root, "t.toml").unwrap();
        assert_eq!(config.services[0].path_prefix(), Some(""));
        for (extra, key) in [
            ("stream = \"tcp\"\n", "stream"),
            ("batch_upstream = true\n", "batch_upstream"),
            ("async_replies = true\n", "async_replies"),
        ] {
            let e = Config::from_toml(&format!("{gw}{extra}"), "t.toml").unwrap_err();
            assert_eq!(e.line(), Some(5), "{extra}: {e}");
            assert!(
                e.message().contains(key) && e.message().contains("prefix"),
                "{e}"
            );
        }
        let echo = "[[service]]\nname = \"e\"\npath = \"/e/*\"\nbuiltin = \"echo\"\n";
        let e = Config::from_toml(echo, "t.toml").unwrap_err();
        assert_eq!(e.line(), Some(3), "{e}");
        assert!(e.message().contains("only a gateway"), "{e}");
        let e = Config::from_toml("[server]\ntrusted_proxies = [\"10.0.0.0/33\"]\n", "t.toml")
            .unwrap_err();
        assert!(e.message().contains("trusted_proxies"), "{e}");
    }
}
