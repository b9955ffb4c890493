//! `[qos]`: the threshold and client rules read with their defaults; every bad value is an
//! error naming the file and the key.

use lather_config::{CompressionPreference, Config};

fn error_of(text: &str) -> String {
    Config::from_toml(text, "q.toml").unwrap_err().to_string()
}

#[test]
fn the_table_is_read_with_its_defaults_and_checked() {
    let config = Config::from_toml("", "q.toml").unwrap();
    assert!(config.qos.is_none());
    let config = Config::from_toml(
        "[qos]\n[[qos.client]]\naddress = \"10.0.0.0/8\"\ncompression = \"required\"\n\
         [[qos.client]]\npath = \"/q\"\ncompression = \"server-decides\"\n",
        "q.toml",
    )
    .unwrap();
    let qos = config.qos.unwrap();
    assert_eq!(qos.compress_below_cpu(), 80);
    let rules = qos.client_rules();
    assert_eq!(rules.len(), 2);
    assert_eq!(rules[0].compression, Some(CompressionPreference::Required));
    let classes = Config::from_toml(
        "[qos.class.gold]\ndscp = 46\n[[qos.client]]\npath = \"/q\"\nclass = \"gold\"\n",
        "q.toml",
    )
    .unwrap()
    .qos
    .unwrap();
    assert_eq!(classes.class_rules()["gold"].dscp, Some(46));
    let ranked = Config::from_toml(
        "[qos.class.gold]\npriority = \"HIGH\"\nallow = [\"10.0.0.0/8\", \"::1\"]\n",
        "q.toml",
    )
    .unwrap()
    .qos
    .unwrap()
    .class_rules();
    assert_eq!(ranked["gold"].dscp, None);
    assert_eq!(ranked["gold"].priority.as_deref(), Some("high"));
    assert_eq!(ranked["gold"].allow.len(), 2);
    assert_eq!(classes.client_rules()[0].class.as_deref(), Some("gold"));
    assert_eq!(rules[1].path.as_deref(), Some("/q"));
    for (text, says) in [
        ("[qos]\ncompress_below_cpu = 0\n", "qos.compress_below_cpu"),
        ("[qos]\ncompress_below_cpu = 101\n", "between 1 and 100"),
        (
            "[qos]\n[[qos.client]]\ncompression = \"none\"\n",
            "qos.client[0]: name an address, a path or an identity",
        ),
        (
            "[qos]\n[[qos.client]]\naddress = \"10.0.0.0/40\"\ncompression = \"none\"\n",
            "qos.client[0].address",
        ),
        (
            "[qos]\n[[qos.client]]\npath = \"/q\"\ncompression = \"sometimes\"\n",
            "unknown variant",
        ),
        ("[qos]\ncompress_below = 80\n", "unknown field"),
        (
            "[qos.class.gold]\ndscp = 64\n",
            "qos.class.gold.dscp: a DiffServ code point is 0 to 63",
        ),
        (
            "[qos.class.gold]\npriority = \"urgent\"\n",
            "qos.class.gold.priority: \"urgent\" is not high, normal or low",
        ),
        (
            "[qos.class.gold]\nallow = [\"10.0.0.0/33\"]\n",
            "qos.class.gold.allow",
        ),
        (
            "[qos]\n[[qos.client]]\npath = \"/q\"\n",
            "qos.client[0]: give a compression or a class",
        ),
        (
            "[qos]\n[[qos.client]]\npath = \"/q\"\nclass = \"gold\"\n",
            "no [qos.class.gold] is configured",
        ),
    ] {
        let e = error_of(text);
        assert!(e.contains(says), "{text}: {e}");
        assert!(e.contains("q.toml"), "{text}: {e}");
    }
}

const SVC: &str = "[[service]]\nname = \"q\"\npath = \"/q\"\nbuiltin = \"echo\"\n";

#[test]
fn offers_are_read_with_their_adaptive_defaults_and_checked() {
    let config = Config::from_toml(
        &format!(
            "{SVC}[[service.offer]]\nname = \"gold\"\nresponse_time_ms = 20\nthroughput = 500\nprice = 10\n\
             [service.offer.adaptive]\n"
        ),
        "q.toml",
    )
    .unwrap();
    let rule = config.services[0].offers[0].adaptive_rule().unwrap();
    assert_eq!(rule.metric, lather_config::LoadMetric::Cpu);
    assert_eq!(
        (rule.window, rule.raise_above, rule.lower_below),
        (30, 80.0, 70.0)
    );
    assert_eq!(
        (rule.step, rule.min_price, rule.max_price),
        (1.0, 10.0, 20.0)
    );
    let offer =
        "[[service.offer]]\nname = \"a\"\nresponse_time_ms = 1\nthroughput = 1\nprice = 1\n";
    for (extra, says) in [
        (format!("{offer}{offer}"), "named twice"),
        (offer.replace("price = 1", "price = -1"), "offer[0].price"),
        (format!("{offer}class = \"gold\"\n"), "no [qos.class.gold]"),
        (
            format!("{offer}[service.offer.adaptive]\nraise_above = 60\n"),
            "lower_below (70) must be under raise_above (60)",
        ),
        (
            format!("{offer}[service.offer.adaptive]\nwindow_s = 0\n"),
            "window_s",
        ),
        (
            format!("{offer}[service.offer.adaptive]\nmetric = \"ram\"\n"),
            "unknown variant",
        ),
        (
            format!("{offer}[service.offer.adaptive]\nmax_price = 0.5\n"),
            "max_price",
        ),
        (offer.replace("price = 1\n", ""), "missing field `price`"),
    ] {
        let e = error_of(&format!("{SVC}{extra}"));
        assert!(e.contains(says), "{extra}: {e}");
    }
    for (text, says) in [
        ("[qos]\nbroker = \"nats://x\"\n", "qos.broker"),
        ("[qos]\nbroker = \"nats\"\n", "add a [nats] table"),
        (
            "[qos]\nbroker = \"http://x/q\"\nbroker_refresh_s = 100000\n",
            "between 1 and 86400",
        ),
        (
            "[qos.class.gold]\npriority = \"high\"\nallow = []\n",
            "name at least one address",
        ),
        (
            "[[service]]\nname = \"b\"\npath = \"/b\"\nbuiltin = \"echo\"\nregister_allow = [\"::1\"]\n",
            "register_allow: only a builtin = \"qos-broker\"",
        ),
        (
            "[[service]]\nname = \"b\"\npath = \"/b\"\nbuiltin = \"qos-broker\"\nregister_allow = [\"10.0.0.0/99\"]\n",
            "register_allow",
        ),
        (
            "[[service]]\nname = \"b\"\npath = \"/b\"\nbuiltin = \"qos-broker\"\nmax_offers_per_owner = 0\n",
            "max_offers_per_owner: must be at least 1",
        ),
        (
            "[[service]]\nname = \"b\"\npath = \"/b\"\nbuiltin = \"qos-broker\"\nmax_lease_s = 99999999\n",
            "max_lease_s: at most 2592000",
        ),
        (
            "[qos]\nbroker = \"http://x/q\"\nbroker_refresh_s = 0\n",
            "broker_refresh_s",
        ),
        (
            "[[service]]\nname = \"b\"\npath = \"/b\"\nbuiltin = \"echo\"\nstore = \"b.sqlite\"\n",
            "qos-broker",
        ),
    ] {
        let e = error_of(text);
        assert!(e.contains(says), "{text}: {e}");
    }
    Config::from_toml(
        "[[service]]\nname = \"b\"\npath = \"/b\"\nbuiltin = \"qos-broker\"\nstore = \"b.sqlite\"\nmax_registrations = 5\n",
        "q.toml",
    )
    .unwrap();
}
