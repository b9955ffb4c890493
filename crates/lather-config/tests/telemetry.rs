//! `[telemetry]`: read with its defaults; a bad endpoint, ratio or timeout is an error
//! naming the file and line.

use lather_config::Config;

fn error_of(text: &str) -> String {
    Config::from_toml(text, "t.toml").unwrap_err().to_string()
}

#[test]
fn the_table_is_read_with_its_defaults() {
    assert!(Config::from_toml("", "t.toml").unwrap().telemetry.is_none());
    let telemetry = Config::from_toml(
        "[telemetry]\notlp_endpoint = \"http://collector:4318\"\n",
        "t.toml",
    )
    .unwrap()
    .telemetry
    .unwrap();
    assert_eq!(telemetry.service_name, "lather");
    assert_eq!(telemetry.sample_ratio, 1.0);
    assert_eq!(
        telemetry.export_timeout_ms,
        lather_config::DEFAULT_EXPORT_TIMEOUT_MS
    );
    assert_eq!(telemetry.traces_url(), "http://collector:4318/v1/traces");
    let given = Config::from_toml(
        "[telemetry]\notlp_endpoint = \"http://c:4318/v1/traces\"\nservice_name = \"edge\"\nsample_ratio = 0.25\nexport_timeout_ms = 500\n",
        "t.toml",
    )
    .unwrap()
    .telemetry
    .unwrap();
    assert_eq!(given.traces_url(), "http://c:4318/v1/traces");
    assert_eq!(given.service_name, "edge");
    assert_eq!(given.sample_ratio, 0.25);
    assert_eq!(given.export_timeout_ms, 500);
}

#[test]
fn bad_values_are_errors_naming_the_line() {
    let e = error_of("[telemetry]\notlp_endpoint = \"collector:4318\"\n");
    assert!(e.contains("t.toml:2") && e.contains("otlp_endpoint"), "{e}");
    let e = error_of("[telemetry]\notlp_endpoint = \"ftp://c:4318\"\n");
    assert!(
        e.contains("t.toml:2") && e.contains("not an http:// or https:// URL"),
        "{e}"
    );
    let https = "[telemetry]\notlp_endpoint = \"https://c:4318\"\n";
    assert!(lather_config::Config::from_toml(https, "t.toml").is_ok());
    let e = error_of("[telemetry]\notlp_endpoint = \"http://c:4318\"\nsample_ratio = 1.5\n");
    assert!(e.contains("t.toml:3") && e.contains("sample_ratio"), "{e}");
    let e = error_of("[telemetry]\notlp_endpoint = \"http://c:4318\"\n\nexport_timeout_ms = 0\n");
    assert!(
        e.contains("t.toml:4") && e.contains("export_timeout_ms"),
        "{e}"
    );
    let e = error_of("[telemetry]\notlp_endpoint = \"http://c:4318\"\nbatch = 1\n");
    assert!(e.contains("batch"), "{e}");
}
