//! `lather check` on configurations with the eventing handler (`kind = "publish"`): a valid
//! one is printed, a `source` that is not an event source of the file, or a remote
//! placement, is an error naming the file and line.

use crate::serving::check_text as check;

const SERVICES: &str = "[[service]]\nname = \"events\"\npath = \"/events\"\nbuiltin = \"event-source\"\n\n[[service]]\nname = \"orders\"\npath = \"/orders\"\nbuiltin = \"echo\"\nrequest = [[\"feed\"]]\n";

#[test]
fn a_publish_handler_to_an_event_source_checks() {
    let out = check(
        "publish-ok.toml",
        &format!(
            "[handlers.feed]\nkind = \"publish\"\nsource = \"events\"\ntopic = \"alarms\"\noneway = true\n\n{SERVICES}"
        ),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("feed             publish, oneway"),
        "{stdout}"
    );
    assert!(stdout.contains("1: feed (oneway)"), "{stdout}");
}

#[test]
fn a_source_that_is_not_an_event_source_names_its_line() {
    for (wanted, why) in [
        (
            "nowhere",
            "\"nowhere\" names no service (event sources: events)",
        ),
        (
            "orders",
            "\"orders\" is not a builtin = \"event-source\" service",
        ),
    ] {
        let out = check(
            "publish-bad-source.toml",
            &format!("[handlers.feed]\nkind = \"publish\"\nsource = \"{wanted}\"\n\n{SERVICES}"),
        );
        assert_eq!(out.status.code(), Some(78));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("publish-bad-source.toml:3:")
                && stderr.contains("handlers.feed.source")
                && stderr.contains(why),
            "{stderr}"
        );
    }
}

#[test]
fn a_publish_handler_without_source_or_placed_remotely_is_refused() {
    let out = check(
        "publish-no-source.toml",
        &format!("[handlers.feed]\nkind = \"publish\"\n\n{SERVICES}"),
    );
    assert_eq!(out.status.code(), Some(78));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("publish-no-source.toml:2:") && stderr.contains("needs source"),
        "{stderr}"
    );
    let out = check(
        "publish-remote.toml",
        &format!(
            "[nats]\nurl = \"nats://127.0.0.1:4222\"\n\n[handlers.feed]\nkind = \"publish\"\nsource = \"events\"\nplacement = \"remote\"\n\n{SERVICES}"
        ),
    );
    assert_eq!(out.status.code(), Some(78));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("publish-remote.toml:7:")
            && stderr.contains("handlers.feed.placement")
            && stderr.contains("a worker has no event sources"),
        "{stderr}"
    );
}
