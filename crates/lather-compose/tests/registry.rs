//! Building handlers and plans from configuration, and the errors that name the line.

use lather_compose::service_plans;
use lather_config::Config;
use lather_test_util::ScratchDir;

fn config(handlers: &str, request: &str) -> Config {
    let text = format!(
        "{handlers}\n[[service]]\nname = \"s\"\npath = \"/s\"\nbuiltin = \"echo\"\nrequest = {request}\n"
    );
    Config::from_toml(&text, "h.toml").unwrap()
}

fn error(handlers: &str, request: &str) -> String {
    service_plans(&config(handlers, request))
        .unwrap_err()
        .to_string()
}

#[test]
fn builds_the_stages_of_each_service() {
    let cfg = config(
        "[handlers.log]\nkind = \"logging\"\noneway = true\n[handlers.burn]\nkind = \"cpu-burn\"\nmicros = 5\n[handlers.wait]\nkind = \"sleep\"\nmillis = 1\nmust_perform = false\n",
        r#"[["log", "burn"], ["wait"]]"#,
    );
    let plans = service_plans(&cfg).unwrap();
    assert_eq!(
        plans[0].request.to_string(),
        "1: log (oneway) ‖ burn\n2: wait (may fail)\n"
    );
    assert!(plans[0].response.is_empty());
    let burn = &plans[0].request.stages()[0][1];
    assert_eq!(burn.options().work, lather_pipeline::Work::Cpu);
}

#[test]
fn unknown_kinds_and_foreign_parameters_name_their_line() {
    let msg = error("[handlers.x]\nkind = \"encrypt-all\"\n", r#"[["x"]]"#);
    assert!(
        msg.starts_with("h.toml:2:")
            && msg.contains("unknown kind \"encrypt-all\"")
            && msg.contains("cpu-burn"),
        "{msg}"
    );
    let msg = error(
        "[handlers.x]\nkind = \"sleep\"\nmillis = 1\nrounds = 3\n",
        r#"[["x"]]"#,
    );
    assert!(
        msg.starts_with("h.toml:4:") && msg.contains("does not take rounds"),
        "{msg}"
    );
    let msg = error("[handlers.x]\nkind = \"digest\"\n", r#"[["x"]]"#);
    assert!(
        msg.starts_with("h.toml:2:") && msg.contains("needs rounds"),
        "{msg}"
    );
    let msg = error(
        "[handlers.x]\nkind = \"logging\"\noneway = true\nretries = 2\n",
        r#"[["x"]]"#,
    );
    assert!(
        msg.starts_with("h.toml:4:") && msg.contains("oneway handler is not retried"),
        "{msg}"
    );
    let msg = error(
        "[handlers.x]\nkind = \"logging\"\ntimeout_ms = 0\n",
        r#"[["x"]]"#,
    );
    assert!(
        msg.starts_with("h.toml:3:") && msg.contains("greater than 0"),
        "{msg}"
    );
}

#[test]
fn action_routes_set_admission_priority() {
    let text = "[handlers.log]\nkind = \"logging\"\n[[service]]\nname = \"s\"\npath = \"/s\"\nbuiltin = \"echo\"\n\
                [[service.route]]\naction = \"urn:vip\"\npriority = \"high\"\nrequest = [[\"log\"]]\n\
                [[service.route]]\naction = \"urn:bulk\"\npriority = \"low\"\n";
    let plans = service_plans(&Config::from_toml(text, "p.toml").unwrap()).unwrap();
    let p = &plans[0];
    assert_eq!(
        p.priority_for_action(Some("urn:vip")),
        Some(lather_pipeline::Priority::High)
    );
    assert_eq!(
        p.priority_for_action(Some("urn:bulk")),
        Some(lather_pipeline::Priority::Low)
    );
    assert_eq!(p.priority_for_action(Some("urn:other")), None);
    assert_eq!(p.priority_for_action(None), None);
    assert_eq!(p.routes[0].request.to_string(), "1: log\n");
    assert!(
        p.routes[1].request.is_empty(),
        "a route without a flow takes the service's (here none)"
    );
}

#[test]
fn audit_file_needs_a_path_it_can_open() {
    let msg = error("[handlers.a]\nkind = \"audit-file\"\n", r#"[["a"]]"#);
    assert!(
        msg.starts_with("h.toml:2:") && msg.contains("needs path"),
        "{msg}"
    );
    let msg = error(
        "[handlers.a]\nkind = \"audit-file\"\npath = \"/nonexistent-dir/x/audit.log\"\n",
        r#"[["a"]]"#,
    );
    assert!(
        msg.starts_with("h.toml:3:") && msg.contains("cannot open"),
        "{msg}"
    );
    let msg = error(
        "[handlers.a]\nkind = \"audit-file\"\npath = \"/tmp/lather-registry-audit.log\"\nfsync = \"often\"\n",
        r#"[["a"]]"#,
    );
    assert!(
        msg.starts_with("h.toml:4:") && msg.contains("fsync"),
        "{msg}"
    );
}

#[test]
fn work_and_snapshot_options_override_the_kind() {
    let cfg = config(
        "[handlers.burn]\nkind = \"cpu-burn\"\nmicros = 5\nwork = \"io\"\n[handlers.log]\nkind = \"logging\"\nwork = \"cpu\"\nsnapshot = true\n",
        r#"[["burn", "log"]]"#,
    );
    let plans = service_plans(&cfg).unwrap();
    let stage = &plans[0].request.stages()[0];
    assert_eq!(stage[0].options().work, lather_pipeline::Work::Io);
    assert_eq!(stage[1].options().work, lather_pipeline::Work::Cpu);
    assert!(stage[1].options().snapshot && !stage[0].options().snapshot);
    let msg = error(
        "[handlers.burn]\nkind = \"cpu-burn\"\nmicros = 5\nwork = \"gpu\"\n",
        r#"[["burn"]]"#,
    );
    assert!(
        msg.starts_with("h.toml:4:") && msg.contains("\"gpu\" is not \"cpu\" or \"io\""),
        "{msg}"
    );
}

#[test]
fn wsrf_resource_needs_a_store_it_can_open() {
    let dir = ScratchDir::new("registry-wsrf");
    let good = dir.join("resources.redb");
    let cfg = config(
        &format!(
            "[handlers.r]\nkind = \"wsrf-resource\"\npath = {:?}\nmax_resources = 10\n",
            good.display().to_string()
        ),
        r#"[["r"]]"#,
    );
    let plans = service_plans(&cfg).unwrap();
    let step = &plans[0].request.stages()[0][0];
    assert!(
        !step.options().stateless,
        "a store handler is never retried"
    );
    assert!(good.exists());
    drop(plans);

    let msg = error("[handlers.r]\nkind = \"wsrf-resource\"\n", r#"[["r"]]"#);
    assert!(
        msg.starts_with("h.toml:2:") && msg.contains("needs path"),
        "{msg}"
    );
    // Not a redb file: 4 KiB of bytes no database starts with.
    let garbage = dir.join("garbage.redb");
    std::fs::write(&garbage, vec![0x5a; 4096]).unwrap();
    for bad in [garbage, dir.to_path_buf(), dir.join("missing-dir/x.redb")] {
        let msg = error(
            &format!(
                "[handlers.r]\nkind = \"wsrf-resource\"\npath = {:?}\n",
                bad.display().to_string()
            ),
            r#"[["r"]]"#,
        );
        assert!(
            msg.starts_with("h.toml:3:")
                && msg.contains("handlers.r.path: cannot open the resource store"),
            "{msg}"
        );
    }
    let msg = error(
        &format!(
            "[handlers.r]\nkind = \"wsrf-resource\"\npath = {:?}\nretries = 1\n",
            dir.join("retried.redb").display().to_string()
        ),
        r#"[["r"]]"#,
    );
    assert!(
        msg.starts_with("h.toml:4:") && msg.contains("not retried"),
        "{msg}"
    );
    let msg = error(
        "[handlers.r]\nkind = \"wsrf-resource\"\npath = \"x\"\nsink = \"http://a/\"\n",
        r#"[["r"]]"#,
    );
    assert!(
        msg.starts_with("h.toml:4:") && msg.contains("does not take sink"),
        "{msg}"
    );
}

#[test]
fn notify_needs_an_http_or_https_sink() {
    let cfg = config(
        "[handlers.n]\nkind = \"notify\"\nsink = \"http://127.0.0.1:9/events\"\ntimeout_ms = 250\n",
        r#"[["n"]]"#,
    );
    let plans = service_plans(&cfg).unwrap();
    let step = &plans[0].request.stages()[0][0];
    assert_eq!(
        step.options().timeout,
        std::time::Duration::from_millis(250)
    );
    assert_eq!(step.options().work, lather_pipeline::Work::Io);

    let msg = error("[handlers.n]\nkind = \"notify\"\n", r#"[["n"]]"#);
    assert!(
        msg.starts_with("h.toml:2:") && msg.contains("needs sink"),
        "{msg}"
    );
    for (sink, why) in [
        ("ftp://a/x", "http://"),
        ("mailto:x@y", "http://"),
        ("", "not a URL"),
    ] {
        let msg = error(
            &format!("[handlers.n]\nkind = \"notify\"\n\nsink = {sink:?}\n"),
            r#"[["n"]]"#,
        );
        assert!(
            msg.starts_with("h.toml:4:") && msg.contains("handlers.n.sink") && msg.contains(why),
            "{msg}"
        );
    }
    let msg = error(
        "[handlers.n]\nkind = \"notify\"\nsink = \"http://a/\"\nmax_resources = 3\n",
        r#"[["n"]]"#,
    );
    assert!(
        msg.starts_with("h.toml:4:") && msg.contains("does not take max_resources"),
        "{msg}"
    );
}

#[test]
fn wsa_takes_required_and_response_action() {
    let cfg = config(
        "[handlers.wsa]\nkind = \"wsa\"\nrequired = true\nresponse_action = \"urn:a#r\"\n",
        r#"[["wsa"]]"#,
    );
    let plans = service_plans(&cfg).unwrap();
    let step = &plans[0].request.stages()[0][0];
    assert_eq!(step.options().work, lather_pipeline::Work::Io);
    let action = lather_envelope::QName::new(lather_envelope::WSA10_NS, "Action");
    assert!(step.access().reads.has_header(&action));
    assert!(plans[0].request.understood_headers().contains(&action));
    let msg = error(
        "[handlers.wsa]\nkind = \"wsa\"\nreverse = true\n",
        r#"[["wsa"]]"#,
    );
    assert!(
        msg.starts_with("h.toml:3:") && msg.contains("does not take reverse"),
        "{msg}"
    );
}

#[test]
fn format_convert_reads_its_mapping_file() {
    let example = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/format-convert.map"
    );
    let cfg = config(
        &format!(
            "[handlers.up]\nkind = \"format-convert\"\nmapping_file = \"{example}\"\n\
             [handlers.down]\nkind = \"format-convert\"\nmapping_file = \"{example}\"\nreverse = true\n"
        ),
        r#"[["up"], ["down"]]"#,
    );
    let plans = service_plans(&cfg).unwrap();
    let up = &plans[0].request.stages()[0][0];
    assert_eq!(up.options().work, lather_pipeline::Work::Cpu);
    assert!(up.access().writes.has_body());

    let msg = error("[handlers.c]\nkind = \"format-convert\"\n", r#"[["c"]]"#);
    assert!(
        msg.starts_with("h.toml:2:") && msg.contains("needs mapping_file"),
        "{msg}"
    );
    let msg = error(
        "[handlers.c]\nkind = \"format-convert\"\nmapping_file = \"/nonexistent/rules.map\"\n",
        r#"[["c"]]"#,
    );
    assert!(
        msg.starts_with("h.toml:3:") && msg.contains("cannot read"),
        "{msg}"
    );
    // A bad rule: the TOML line of mapping_file, and the file and line of the rule.
    let dir = ScratchDir::new("registry-bad-map");
    let bad = dir.write(
        "bad.map",
        "# rules\nnamespace urn:a = urn:b\nrename urn:c = urn:d\n",
    );
    let msg = error(
        &format!(
            "[handlers.c]\nkind = \"format-convert\"\nreverse = false\nmapping_file = \"{}\"\n",
            bad.display()
        ),
        r#"[["c"]]"#,
    );
    assert!(
        msg.starts_with("h.toml:4:")
            && msg.contains(&format!("{}:3:", bad.display()))
            && msg.contains("unknown rule \"rename\""),
        "{msg}"
    );
}

#[test]
fn wsa_and_format_convert_share_a_stage() {
    let example = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/format-convert.map"
    );
    let cfg = config(
        &format!(
            "[handlers.wsa]\nkind = \"wsa\"\n[handlers.convert]\nkind = \"format-convert\"\nmapping_file = \"{example}\"\n"
        ),
        r#"[["wsa", "convert"]]"#,
    );
    let plans = service_plans(&cfg).unwrap();
    assert_eq!(plans[0].request.to_string(), "1: wsa ‖ convert\n");
}

#[test]
fn encrypted_headers_are_named_in_clark_notation() {
    let dir = ScratchDir::new("registry-header-key");
    let key = dir.join("k.hex");
    std::fs::write(&key, "000102030405060708090a0b0c0d0e0f\n").unwrap();
    let handlers = |header: &str| {
        format!(
            "[handlers.open]\nkind = \"decrypt\"\nkey_file = {:?}\nheader = {header:?}\n",
            key.display().to_string()
        )
    };
    let cfg = config(&handlers("{urn:x}Secret"), r#"[["open"]]"#);
    let plans = service_plans(&cfg).unwrap();
    let access = plans[0].request.stages()[0][0].access().clone();
    assert!(
        access
            .reads
            .named_headers()
            .iter()
            .any(|q| q.local() == "EncryptedHeader")
    );
    assert!(
        access
            .writes
            .named_headers()
            .iter()
            .any(|q| q.local() == "Secret")
    );
    let msg = error(&handlers("Secret"), r#"[["open"]]"#);
    assert!(
        msg.starts_with("h.toml:4:") && msg.contains("is not a header name"),
        "{msg}"
    );
}

#[test]
fn a_remote_handler_keeps_its_access_waits_on_io_and_shares_one_link() {
    let cfg = config(
        "[nats]\nurl = \"nats://127.0.0.1:4222\"\n[handlers.burn]\nkind = \"cpu-burn\"\nmicros = 5\nplacement = \"remote\"\n[handlers.zip]\nkind = \"compress\"\nplacement = \"remote\"\ntimeout_ms = 250\n[handlers.here]\nkind = \"compress\"\n",
        r#"[["burn", "zip"], ["here"]]"#,
    );
    let services = lather_compose::build_services(&cfg).unwrap();
    let link = services.link.expect("a remote handler makes a link");
    assert_eq!(link.url(), "nats://127.0.0.1:4222");
    assert!(
        link.client().is_none(),
        "not connected until the host starts"
    );
    let stages = services.plans[0].request.stages();
    let zip = &stages[0][1];
    let here = &stages[1][0];
    assert_eq!(
        zip.access(),
        here.access(),
        "same access as the local handler"
    );
    assert_eq!(zip.options().work, lather_pipeline::Work::Io);
    assert_eq!(here.options().work, lather_pipeline::Work::Cpu);
    assert_eq!(zip.options().timeout, std::time::Duration::from_millis(250));
    let figures: Vec<&str> = zip.observations().iter().map(|o| o.name).collect();
    assert!(figures.contains(&"remote_calls"), "{figures:?}");
    assert!(here.observations().iter().all(|o| o.name != "remote_calls"));
    // Without a remote handler there is no link, even with [nats].
    let local = config(
        "[nats]\nurl = \"nats://127.0.0.1:4222\"\n[handlers.zip]\nkind = \"compress\"\n",
        r#"[["zip"]]"#,
    );
    assert!(
        lather_compose::build_services(&local)
            .unwrap()
            .link
            .is_none()
    );
}
