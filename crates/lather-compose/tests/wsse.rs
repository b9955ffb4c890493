//! `wsse-username` as configured: its keys and their errors, and how its access places it
//! beside `decrypt`.

use lather_compose::service_plans;
use lather_config::Config;
use lather_test_util::ScratchDir;

/// A scratch directory with a user table `users` and a key file `aes.key`.
fn scratch(test: &str) -> ScratchDir {
    let dir = ScratchDir::new(&format!("wsse-{test}"));
    dir.write("users", "alice:s3cret\n");
    dir.write("aes.key", "11".repeat(32));
    dir
}

/// The plans of one echo service whose handlers are `auth` (wsse-username, with `auth`
/// extra keys) and `open` (decrypt, with `open` extra keys), and whose request flow is
/// `request`; or the error, as text.
fn plans(test: &str, auth: &str, open: &str, request: &str) -> Result<String, String> {
    let dir = scratch(test);
    let text = format!(
        "[handlers.auth]\nkind = \"wsse-username\"\nusers_file = \"{}\"\n{auth}\n\
         [handlers.open]\nkind = \"decrypt\"\nkey_file = \"{}\"\n{open}\n\
         [[service]]\nname = \"s\"\npath = \"/s\"\nbuiltin = \"echo\"\nrequest = {request}\n",
        dir.join("users").display(),
        dir.join("aes.key").display()
    );
    let config = Config::from_toml(&text, "w.toml").map_err(|e| e.to_string())?;
    service_plans(&config)
        .map(|p| p[0].request.to_string())
        .map_err(|e| e.to_string())
}

#[test]
fn the_new_keys_are_read_and_bad_values_name_their_line() {
    let ok = plans(
        "keys",
        "max_nonce_bytes = 64\nmax_nonces = 10\nrequire_nonce = true\nforward_security = true",
        "forward_security = true",
        r#"[["auth"]]"#,
    );
    assert!(ok.is_ok(), "{ok:?}");
    for (keys, line, key) in [
        ("max_nonce_bytes = 0", 4, "max_nonce_bytes"),
        ("max_nonce_bytes = 5000", 4, "max_nonce_bytes"),
        ("window_s = 60\nmax_nonces = 0", 5, "max_nonces"),
    ] {
        let err = plans("bad", keys, "", r#"[["auth"]]"#).unwrap_err();
        assert!(
            err.starts_with(&format!("w.toml:{line}:"))
                && err.contains(&format!("handlers.auth.{key}: must be between 1 and")),
            "{err}"
        );
    }
    let err = plans("foreign", "", "max_nonces = 5", r#"[["open"]]"#).unwrap_err();
    assert!(err.contains("does not take max_nonces"), "{err}");
}

#[test]
fn both_handlers_now_write_the_security_header() {
    // Both take their parts out of wsse:Security: they cannot share a stage...
    let err = plans("clash", "", "", r#"[["open", "auth"]]"#).unwrap_err();
    assert!(
        err.contains("open and auth cannot run together") && err.contains("Security"),
        "{err}"
    );
    // ...and `auto` runs them in the order listed.
    let plan = plans("auto", "", "", r#"{ auto = ["open", "auth"] }"#).unwrap();
    assert_eq!(plan, "1: open\n2: auth\n");
    // A decrypt that forwards the header leaves it alone, so it may share a stage again.
    let plan = plans(
        "share",
        "",
        "forward_security = true",
        r#"[["open", "auth"]]"#,
    )
    .unwrap();
    assert_eq!(plan, "1: open ‖ auth\n");
}
