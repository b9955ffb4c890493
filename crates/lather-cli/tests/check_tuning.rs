//! `lather check` on the tuning toolbox: a `cache` handler, a gateway's WSDL cache and
//! request compression, and `wsdl_addresses` are explained; a bad cache setting is an
//! error naming the key.

use crate::serving::check_text as check;

#[test]
fn the_tuning_keys_are_explained_with_their_defaults() {
    let out = check(
        "tuning-ok.toml",
        "[handlers.prices]\nkind = \"cache\"\noperations = [\"GetPrice\"]\ninvalidate_on = [\"SetPrice\"]\n\n\
         [[service]]\nname = \"shop\"\npath = \"/shop\"\nupstream = [\"http://shop.example:8080/ws\"]\n\
         async_replies = true\nasync_store = \"jobs.redb\"\nbatch_upstream = true\n\
         compress_requests = true\nwsdl_addresses = [\"http://a.example/ws\", { url = \"http://b.example/ws\", weight = 3 }]\n\
         request = [[\"prices\"]]\nresponse = [[\"prices\"]]\n",
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for expected in [
        "caches answers of GetPrice for 60000 ms, at most 16777216 bytes (1048576 per answer)",
        "emptied by SetPrice",
        "backend WSDL kept 60000 ms",
        "requests to the upstreams gzip-compressed from 1024 bytes",
        "HTTP/1.1 to the upstreams, at most 1024 connections to each",
        "gathered into lb:Batch requests of at most 10, sent 2 ms after the first at the latest",
        "its WSDL names in turn: http://a.example/ws (weight 1), http://b.example/ws (weight 3)",
        "asynchronous replies: requests with a ReplyTo get 202, answers POSTed there (6 attempts) or kept 300 s for polling; at most 1000 waiting, kept in jobs.redb",
        "each request's phases counted in lather_phase_seconds; Server-Timing for requests with Lather-Timing from admin_allow addresses",
    ] {
        assert!(stdout.contains(expected), "no {expected:?} in {stdout}");
    }
}

#[test]
fn with_nats_shared_async_replies_and_call_batches_are_explained() {
    let out = check(
        "tuning-nats.toml",
        "[nats]\nurl = \"nats://127.0.0.1:4222\"\nbatch_max_items = 8\n\n\
         [handlers.log]\nkind = \"logging\"\nplacement = \"remote\"\n\n\
         [[service]]\nname = \"quotes\"\npath = \"/q\"\nbuiltin = \"echo\"\nasync_replies = true\nrequest = [[\"log\"]]\n",
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    for expected in [
        "kept in JetStream, shared by nodes (stream LATHER_ASYNC_QUOTES, answers in bucket lather_quotes_async)",
        "remote on lather.handler.log, fallback fault, sent in batches of at most 8, 1 ms after the first at the latest",
    ] {
        assert!(stdout.contains(expected), "no {expected:?} in {stdout}");
    }
}

#[test]
fn qos_compression_settings_are_explained() {
    let out = check(
        "tuning-qos.toml",
        "[qos]\ncompress_below_cpu = 60\n[qos.class.gold]\ndscp = 46\n\
         [[qos.client]]\naddress = \"10.0.0.0/8\"\ncompression = \"required\"\nclass = \"gold\"\n\n\
         [[service]]\nname = \"e\"\npath = \"/e\"\nbuiltin = \"echo\"\n",
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    for expected in [
        "while lather's CPU is below 60%",
        "clients from 10.0.0.0/8 to any path without a QoS header: compression required, class gold",
        "traffic class gold: answers marked DSCP 46",
    ] {
        assert!(stdout.contains(expected), "no {expected:?} in {stdout}");
    }
}

#[test]
fn a_bad_cache_setting_names_its_key() {
    let out = check(
        "tuning-bad.toml",
        "[handlers.c]\nkind = \"cache\"\noperations = [\"*\"]\nttl_ms = 0\n\n\
         [[service]]\nname = \"e\"\npath = \"/e\"\nbuiltin = \"echo\"\nrequest = [[\"c\"]]\n",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("tuning-bad.toml"), "{stderr}");
    assert!(stderr.contains("ttl_ms"), "{stderr}");
    assert!(stderr.contains("at least 1"), "{stderr}");
}

#[test]
fn trusted_proxies_prefixes_and_header_rules_are_explained() {
    let out = check(
        "forwarding.toml",
        "[server]\ntrusted_proxies = [\"10.0.0.0/8\"]\n\n\
         [[service]]\nname = \"api\"\npath = \"/api/*\"\nupstream = [\"http://api.example:8080/base\"]\n\
         request_headers_remove = [\"Cookie\"]\nrequest_headers_set = { \"X-Env\" = \"prod\" }\n\
         request_headers_add = { \"X-Tag\" = \"gw\" }\nresponse_headers_add = { \"X-Served-By\" = \"lather\" }\n",
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for expected in [
        "Forwarded and X-Forwarded-* kept and extended from the trusted proxies 10.0.0.0/8",
        "answers every path below /api/, forwarded to the upstream's path followed by the rest",
        "request headers not forwarded: cookie",
        "request headers set: X-Env: prod",
        "request headers added: X-Tag: gw",
        "response headers added: X-Served-By: lather",
    ] {
        assert!(stdout.contains(expected), "no {expected:?} in {stdout}");
    }
}
