//! `lather check`: validate a configuration and print what it will serve.

use lather_config::{Builtin, Config, ServiceKind};
use std::path::Path;

/// Loads `path`, prints the plan, or fails with every problem found, each naming its line
/// and key.
pub(crate) fn run(path: &Path) -> anyhow::Result<()> {
    let config = Config::load(path)?;
    let plans = lather_compose::service_plans(&config)?;
    lather_http::Server::check_tls_files(&config)?;
    let server = &config.server;
    println!("{}: ok", path.display());
    println!(
        "server: listen {}, max_message_bytes {}, max_depth {}, max_attributes {}",
        server.listen, server.max_message_bytes, server.max_depth, server.max_attributes
    );
    if server.compress_responses {
        let qos = config.qos.clone().unwrap_or_default();
        println!(
            "  answers gzip-compressed from {} bytes: always when the client requires it (QoS header), for server-decides and Accept-Encoding while lather's CPU is below {}%",
            server.compress_min_bytes,
            qos.compress_below_cpu()
        );
        for rule in qos.client_rules() {
            let network = rule
                .network
                .map_or_else(|| "any address".to_owned(), |n| n.to_string());
            let path = rule.path.as_deref().unwrap_or("any path");
            let mut gets = Vec::new();
            if let Some(compression) = rule.compression {
                gets.push(format!("compression {}", compression.as_str()));
            }
            if let Some(class) = &rule.class {
                gets.push(format!("class {class}"));
            }
            let who = rule
                .identity
                .as_deref()
                .map_or_else(String::new, |i| format!(" authenticated as {i}"));
            println!(
                "  clients from {network}{who} to {path} without a QoS header: {}",
                gets.join(", ")
            );
        }
        for (name, class) in qos.class_rules() {
            let dscp = class.dscp.map_or("answers not marked".to_owned(), |d| {
                format!("answers marked DSCP {d}")
            });
            let priority = class.priority.as_deref().unwrap_or("priority unchanged");
            let who = if class.allow.is_empty() {
                "any client may state it".to_owned()
            } else {
                let nets: Vec<String> = class.allow.iter().map(ToString::to_string).collect();
                format!("stated only from {}", nets.join(", "))
            };
            println!("  traffic class {name}: {dscp}; admission {priority}; {who}");
        }
    } else {
        println!("  answers never compressed");
    }
    if let Some(qos) = &config.qos
        && let Some(url) = &qos.broker
    {
        let refresh = qos
            .broker_refresh_s
            .as_ref()
            .map_or(lather_config::DEFAULT_BROKER_REFRESH_S, |r| *r.get_ref());
        println!(
            "  offers registered with the QoS broker {} at start, every {refresh} s (lease {} s) and whenever an adaptive price moves",
            url.get_ref(),
            refresh * 3
        );
    }
    match &server.tls {
        Some(tls) => {
            let clients = match tls.client_auth() {
                lather_config::ClientAuth::None => "no client certificates asked for".to_owned(),
                auth => format!(
                    "client certificates {} (verified against {})",
                    auth.as_str(),
                    tls.client_ca_file
                        .as_ref()
                        .map_or("", |f| f.get_ref().as_str())
                ),
            };
            let reload = tls.reload_check().map_or_else(
                || "never checked for a change".to_owned(),
                |every| format!("checked for a change every {} ms", every.as_millis()),
            );
            println!(
                "  TLS (HTTPS, ALPN h2 and http/1.1): certificate {} with key {}, {reload}; {clients}",
                tls.cert_file.get_ref(),
                tls.key_file.get_ref()
            );
        }
        None => println!("  plain HTTP (no [server.tls])"),
    }
    let phases = if server.phase_metrics {
        "each request's phases counted in lather_phase_seconds"
    } else {
        "phases not counted"
    };
    let header = match server.server_timing {
        lather_config::ServerTiming::Off => "no Server-Timing header",
        lather_config::ServerTiming::OnRequest => {
            "Server-Timing for requests with Lather-Timing from admin_allow addresses"
        }
        lather_config::ServerTiming::Always => "Server-Timing on every answer",
    };
    println!("  {phases}; {header}");
    if server.trusted_proxies.is_empty() {
        println!(
            "  no trusted proxies: Forwarded and X-Forwarded-* from clients are dropped and written anew by gateways"
        );
    } else {
        let nets: Vec<String> = server
            .trusted_proxies
            .iter()
            .map(ToString::to_string)
            .collect();
        println!(
            "  Forwarded and X-Forwarded-* kept and extended from the trusted proxies {}",
            nets.join(", ")
        );
    }
    if server.access_log {
        println!(
            "  each answer logged on lather::access (GET /health, /ready and /metrics are not)"
        );
    } else {
        println!("  no access log");
    }
    println!(
        "  request metrics label at most {} operation names per service (further ones as operation=\"other\")",
        server.metrics_max_operations
    );
    match &server.outbound_ca_file {
        Some(file) => println!(
            "  outbound https:// calls trust the system's CAs and those of {}",
            file.get_ref()
        ),
        None => println!("  outbound https:// calls trust the system's CAs"),
    }
    match &config.telemetry {
        Some(t) => println!(
            "traces: exported over OTLP/HTTP to {} as service {:?}, {} of new traces sampled, each export given up after {} ms{}",
            t.traces_url(),
            t.service_name,
            t.sample_ratio,
            t.export_timeout_ms,
            if cfg!(feature = "otel") {
                ""
            } else {
                " (ignored: this lather was built without the otel feature)"
            }
        ),
        None => println!("traces: not exported (no [telemetry])"),
    }
    if let Some(stream) = &config.stream {
        println!(
            "message streams: accepted on {}{}, at most {} connections of {} requests in flight and {} schemas each; idle connections closed after {} ms, tokens good for {} s",
            stream.listen,
            stream
                .public_port
                .map_or_else(String::new, |p| format!(" (told to senders as port {p})")),
            stream.max_connections,
            stream.max_in_flight,
            stream.max_schemas,
            stream.idle_timeout_ms,
            stream.token_lifetime_s
        );
    }
    if let Some(nats) = &config.nats {
        print_nats(nats);
    }
    if !config.handlers.is_empty() {
        println!("handlers:");
    }
    for (name, handler) in &config.handlers {
        let mut traits = vec![handler.kind.get_ref().clone()];
        if handler.oneway == Some(true) {
            traits.push("oneway".into());
        } else if handler.must_perform == Some(false) {
            traits.push("may fail".into());
        }
        if handler.snapshot == Some(true) {
            traits.push("reads its stage's input".into());
        }
        if let Some(r) = &handler.retries {
            traits.push(format!("retries {}", r.get_ref()));
        }
        if let Some(t) = &handler.timeout_ms {
            traits.push(format!("timeout {} ms", t.get_ref()));
        }
        if handler.placement() == lather_config::Placement::Remote {
            let fallback = match handler.fallback() {
                lather_config::Fallback::Local => "local",
                lather_config::Fallback::Fault => "fault",
            };
            let oneway = handler.oneway == Some(true);
            let subject = config.nats.as_ref().map_or_else(String::new, |n| {
                if oneway {
                    n.oneway_subject(name)
                } else {
                    n.handler_subject(name)
                }
            });
            let how = if oneway {
                "remote work queue"
            } else {
                "remote"
            };
            traits.push(format!("{how} on {subject}, fallback {fallback}"));
            if let Some((items, wait)) = config
                .nats
                .as_ref()
                .map(lather_config::NatsConfig::frame_batch)
                .filter(|(items, _)| *items > 1)
            {
                traits.push(format!(
                    "sent in batches of at most {items}, {} ms after the first at the latest",
                    wait.as_millis()
                ));
            }
        }
        if handler.placement() == lather_config::Placement::Auto {
            let subject = config
                .nats
                .as_ref()
                .map_or_else(String::new, |n| n.handler_subject(name));
            traits.push(format!("auto: local or remote on {subject}"));
        }
        println!("  {name:<16} {}", traits.join(", "));
        if handler.kind.get_ref() == "cache" {
            println!("  {:<16} {}", "", cache_summary(handler));
        }
    }
    for (svc, plans) in config.services.iter().zip(&plans) {
        let what = match svc.kind() {
            ServiceKind::Builtin(Builtin::Echo) => "builtin echo".to_owned(),
            ServiceKind::Builtin(Builtin::EventSource) => "builtin event-source".to_owned(),
            ServiceKind::Builtin(Builtin::Registry) => {
                let limits = lather_http::registry_limits(svc);
                format!(
                    "builtin registry (in memory; at most {} registrations, leases up to {} s)",
                    limits.max_registrations,
                    limits.max_lease.as_secs()
                )
            }
            ServiceKind::Builtin(Builtin::QosBroker) => {
                let limits = lather_http::registry_limits(svc);
                let allow: Vec<String> = lather_http::register_allow(svc)
                    .iter()
                    .map(ToString::to_string)
                    .collect();
                format!(
                    "builtin qos-broker (offers in {}; at most {} offers, {} per registrant, leases up to {} s; registrations from {}; selections answered from memory)",
                    svc.store.as_ref().map_or_else(
                        || "memory, lost on restart".to_owned(),
                        |f| format!("the SQLite file {} (WAL)", f.get_ref())
                    ),
                    limits.max_registrations,
                    svc.max_offers_per_owner
                        .as_ref()
                        .map_or(100, |v| *v.get_ref()),
                    limits.max_lease.as_secs(),
                    allow.join(", ")
                )
            }
            ServiceKind::Builtin(Builtin::ContextStore) => {
                let limits = lather_http::context_store_limits(svc);
                format!(
                    "builtin context-store ({}; at most {} contexts of {} bytes, lifetime {} s by default, {} s at most)",
                    match (&config.nats, &svc.store) {
                        (Some(nats), _) if svc.shares_contexts(Some(nats)) => {
                            format!("NATS JetStream KV bucket {}", svc.context_bucket(nats))
                        }
                        (_, Some(file)) => format!("file {}", file.get_ref()),
                        (_, None) => "in memory".to_owned(),
                    },
                    limits.max_contexts,
                    limits.max_context_bytes,
                    limits.default_ttl.as_secs(),
                    limits.max_ttl.as_secs()
                )
            }
            ServiceKind::RegistryGateway(r) => format!(
                "gateway to the endpoints registered as {} at {}, asked every {} ms (timeout {} ms)",
                r.name,
                r.registry.url,
                r.poll.as_millis(),
                svc.timeout().as_millis()
            ),
            ServiceKind::Gateway(ups) => {
                let urls: Vec<String> = ups
                    .iter()
                    .map(|u| match u.weight {
                        1 => u.url.clone(),
                        w => format!("{} (weight {w})", u.url),
                    })
                    .collect();
                format!(
                    "gateway to {} (timeout {} ms)",
                    urls.join(", "),
                    svc.timeout().as_millis()
                )
            }
        };
        println!(
            "service {:<16} {:<24} {}",
            svc.name.get_ref(),
            svc.path.get_ref(),
            what
        );
        if svc.accept_streams.as_ref().is_some_and(|a| *a.get_ref()) {
            println!("  accepts message streams (each message through its handlers as any other)");
        }
        if svc.stream_mode() != lather_config::StreamMode::Off {
            let over = if svc.stream_mode() == lather_config::StreamMode::H2 {
                "HTTP/2 (one request to the upstream's URL)"
            } else {
                "TCP"
            };
            let on_error = match svc.stream_on_error.as_ref().map(|o| *o.get_ref()) {
                Some(lather_config::StreamOnError::Resend) => "sent again over SOAP/HTTP",
                _ => "answered with UpstreamFailed",
            };
            println!(
                "  streams to its upstreams over {over}, per operation, where granted (SOAP/HTTP until then and for messages that do not fit); a request lost with its stream is {on_error}; refused negotiations retried after {} s",
                svc.stream_retry_s.as_ref().map_or(60, |r| *r.get_ref())
            );
        }
        print_offers(svc);
        print_tuning(svc, config.nats.as_ref());
        print_flows(
            "  ",
            &[
                ("request", &plans.request),
                ("response", &plans.response),
                ("fault", &plans.fault),
            ],
        );
        for route in &plans.routes {
            let mut rules = Vec::new();
            if let Some(op) = &route.operation {
                rules.push(format!("operation {op}"));
            }
            if let Some(action) = &route.action {
                rules.push(format!("action {action}"));
            }
            if let Some(header) = &route.header {
                rules.push(format!("header {header}"));
            }
            if let Some(p) = route.priority {
                rules.push(format!("priority {}", p.name()));
            }
            println!("  route: {}", rules.join(", "));
            print_flows(
                "    ",
                &[("request", &route.request), ("response", &route.response)],
            );
        }
    }
    if config.services.is_empty() {
        println!("(no services configured)");
    }
    Ok(())
}

/// What a `cache` handler keeps: its operations, entry lifetime and byte budget.
fn cache_summary(handler: &lather_config::HandlerConfig) -> String {
    let number = |key: &str, default: u64| {
        handler
            .settings
            .get(key)
            .and_then(|v| v.get_ref().as_integer())
            .and_then(|v| u64::try_from(v).ok())
            .unwrap_or(default)
    };
    let list = |key: &str| {
        handler
            .settings
            .get(key)
            .and_then(|v| v.get_ref().as_array().cloned())
            .unwrap_or_default()
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut text = format!(
        "caches answers of {} for {} ms, at most {} bytes ({} per answer), least recently used evicted first",
        list("operations"),
        number("ttl_ms", lather_handlers::CACHE_DEFAULT_TTL_MS),
        number("max_bytes", lather_handlers::CACHE_DEFAULT_MAX_BYTES),
        number(
            "max_entry_bytes",
            lather_handlers::CACHE_DEFAULT_MAX_ENTRY_BYTES
        ),
    );
    for (key, what) in [
        ("never", "never"),
        ("invalidate_on", "emptied by"),
        ("key_headers", "keyed also by"),
    ] {
        let names = list(key);
        if !names.is_empty() {
            text.push_str(&format!("; {what} {names}"));
        }
    }
    text
}

/// A service's tuning: asynchronous replies, the addresses its WSDL names, a gateway's
/// WSDL cache, upstream protocol and request compression.
fn print_tuning(svc: &lather_config::ServiceConfig, nats: Option<&lather_config::NatsConfig>) {
    if let Some(replies) = svc.async_replies() {
        println!(
            "  asynchronous replies: requests with a ReplyTo get 202, answers POSTed there ({} attempts) or kept {} s for polling; at most {} waiting, kept {}{}",
            replies.attempts,
            replies.keep.as_secs(),
            replies.max_pending,
            match (replies.store.as_deref(), nats) {
                (Some(f), _) => format!("in {f}"),
                (None, Some(nats)) => {
                    let names = svc.async_names(nats);
                    format!(
                        "in JetStream, shared by nodes (stream {}, answers in bucket {})",
                        names.stream, names.bucket
                    )
                }
                (None, None) => "in memory (lost on restart)".to_owned(),
            },
            if replies.allow.is_empty() {
                String::new()
            } else {
                format!("; ReplyTo also allowed: {}", replies.allow.join(", "))
            }
        );
    }
    let addresses = svc.wsdl_addresses();
    if !addresses.is_empty() {
        let named: Vec<String> = addresses
            .iter()
            .map(|a| format!("{} (weight {})", a.url, a.weight))
            .collect();
        println!("  its WSDL names in turn: {}", named.join(", "));
    }
    if !matches!(
        svc.kind(),
        ServiceKind::Gateway(_) | ServiceKind::RegistryGateway(_)
    ) {
        return;
    }
    if let Some(prefix) = svc.path_prefix() {
        println!(
            "  answers every path below {prefix}/, forwarded to the upstream's path followed by the rest"
        );
    }
    match svc.wsdl_cache() {
        Some(keep) => println!(
            "  backend WSDL kept {} ms (with the documents it imports, served as ?wsdl=…/?xsd=…; {} at most)",
            keep.as_millis(),
            svc.wsdl_cache_documents()
        ),
        None => println!("  backend WSDL asked for on every request"),
    }
    let removed = svc.request_headers_remove();
    if !removed.is_empty() {
        println!("  request headers not forwarded: {}", removed.join(", "));
    }
    for (what, pairs) in [
        ("request headers set", svc.request_headers_set()),
        ("request headers added", svc.request_headers_add()),
        ("response headers added", svc.response_headers_add()),
    ] {
        if !pairs.is_empty() {
            let shown: Vec<String> = pairs.iter().map(|(n, v)| format!("{n}: {v}")).collect();
            println!("  {what}: {}", shown.join(", "));
        }
    }
    match svc.upstream_protocol() {
        lather_config::UpstreamProtocol::Http1 => println!(
            "  HTTP/1.1 to the upstreams, at most {} connections to each (one request each)",
            svc.upstream_connections()
        ),
        lather_config::UpstreamProtocol::H2 => println!(
            "  HTTP/2 to the upstreams (prior knowledge over http://, ALPN h2 over https://) over {} connections to each, requests multiplexed",
            svc.upstream_connections()
        ),
    }
    print_upstream_tls(svc);
    if let Some((items, wait)) = svc.upstream_batching() {
        println!(
            "  requests to the upstream gathered into lb:Batch requests of at most {items}, sent {} ms after the first at the latest",
            wait.as_millis()
        );
    }
    if let Some(min) = svc.compress_requests_from() {
        println!("  requests to the upstreams gzip-compressed from {min} bytes");
    }
    print_failover(&svc.failover());
}

/// A gateway's balancing, retries, ejection and health checks.
fn print_failover(f: &lather_config::Failover) {
    let balance = match f.balance {
        lather_config::Balance::RoundRobin => "weighted round-robin",
        lather_config::Balance::LeastOutstanding => "least outstanding requests",
    };
    let resend = match &f.idempotent {
        lather_config::Idempotent::None => "only requests not yet sent".to_owned(),
        lather_config::Idempotent::All => "any request".to_owned(),
        lather_config::Idempotent::Operations(ops) => {
            format!("requests not yet sent, and {}", ops.join(", "))
        }
    };
    let try_timeout = f
        .try_timeout
        .map(|t| format!(", {} ms a try", t.as_millis()))
        .unwrap_or_default();
    println!(
        "  {balance}; connect timeout {} ms; up to {} backends tried: {resend}{try_timeout}",
        f.connect_timeout.as_millis(),
        f.max_attempts
    );
    match f.eject_after {
        0 => println!("  backends never ejected"),
        n => println!(
            "  a backend failing {n} times in a row is ejected for {} ms (doubling in a row, up to {}x)",
            f.eject_for.as_millis(),
            lather_config::MAX_EJECT_FACTOR
        ),
    }
    if let Some(h) = &f.health_check {
        let probe = match &h.probe {
            lather_config::Probe::Wsdl => "GET ?wsdl".to_owned(),
            lather_config::Probe::Soap { action, .. } => format!(
                "a SOAP request{}",
                action
                    .as_ref()
                    .map(|a| format!(" ({a})"))
                    .unwrap_or_default()
            ),
        };
        println!(
            "  health checked by {probe} every {} ms (timeout {} ms): down after {}, up after {} in a row",
            h.interval.as_millis(),
            h.timeout.as_millis(),
            h.unhealthy_after,
            h.healthy_after
        );
    }
    if f.expose_backend_errors {
        println!("  faults name the backend and its error to clients");
    }
}

/// How a gateway speaks TLS to `https://` upstreams, when it may have one.
fn print_upstream_tls(svc: &lather_config::ServiceConfig) {
    let https = match svc.kind() {
        ServiceKind::Gateway(list) => list.iter().any(|u| u.uri.scheme_str() == Some("https")),
        _ => true,
    };
    if !https {
        return;
    }
    let tls = svc.upstream_tls();
    let roots = tls.ca_file.as_deref().map_or_else(
        || "the system's trusted CAs".to_owned(),
        |f| format!("the CAs in {f}"),
    );
    let name = tls
        .server_name
        .as_deref()
        .map_or_else(|| "each URL's host".to_owned(), |n| format!("the name {n}"));
    let client = tls.client_cert.as_ref().map_or_else(
        || "no client certificate".to_owned(),
        |(cert, _)| format!("client certificate {cert}"),
    );
    println!("  https:// upstreams: certificates verified against {roots} for {name}; {client}");
}

fn print_flows(indent: &str, flows: &[(&str, &lather_pipeline::Plan)]) {
    for (flow, plan) in flows {
        if plan.is_empty() {
            continue;
        }
        println!("{indent}{flow} stages:");
        for line in plan.to_string().lines() {
            println!("{indent}  {line}");
        }
    }
}

/// A service's QoS offers: what each promises, and how an adaptive price moves.
fn print_offers(svc: &lather_config::ServiceConfig) {
    for offer in &svc.offers {
        let mut what = format!(
            "  offer {}: {} ms, {}/s, price {}",
            offer.name.get_ref(),
            offer.response_time_ms.get_ref(),
            offer.throughput.get_ref(),
            offer.price.get_ref()
        );
        if let Some(c) = &offer.compression {
            what.push_str(&format!(", compression {}", c.get_ref().as_str()));
        }
        if let Some(c) = &offer.class {
            what.push_str(&format!(", class {}", c.get_ref()));
        }
        println!("{what} (GET {}?qos)", svc.path.get_ref());
        if let Some(rule) = offer.adaptive_rule() {
            println!(
                "    adaptive: {} averaged over {} s; above {} the price rises {} (up to {}), below {} it falls {} (down to {})",
                rule.metric.as_str(),
                rule.window,
                rule.raise_above,
                rule.step,
                rule.max_price,
                rule.lower_below,
                rule.step,
                rule.min_price
            );
        }
    }
}

/// The NATS server, whether TLS is on and which authentication method is used (never a
/// secret).
fn print_nats(nats: &lather_config::NatsConfig) {
    let tls = if nats.tls_required() {
        let roots = nats
            .tls_ca_file
            .as_ref()
            .map_or_else(|| "the system's roots".to_owned(), |f| f.get_ref().clone());
        let client = nats
            .tls_client_cert_file
            .as_ref()
            .map_or_else(String::new, |f| {
                format!(", client certificate {}", f.get_ref())
            });
        format!("TLS required (server verified against {roots}{client})")
    } else if nats.tls_ca_file.is_some() {
        "TLS when the server asks for it".to_owned()
    } else {
        "no TLS unless the server asks for it".to_owned()
    };
    println!(
        "nats: {}; {tls}; authentication: {}",
        nats.url.get_ref(),
        nats.auth().describe()
    );
}
