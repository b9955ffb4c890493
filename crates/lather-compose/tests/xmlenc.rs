//! `encrypt` and `decrypt` as configured: key files, algorithms, and the line of what is
//! wrong.

use lather_compose::service_plans;
use lather_config::Config;
use lather_test_util::ScratchDir;

fn config_error(handler: &str, key_contents: Option<&[u8]>) -> String {
    let dir = ScratchDir::new("xmlenc-config");
    let key_path = dir.join("key");
    if let Some(bytes) = key_contents {
        dir.write("key", bytes);
    }
    let text = format!(
        "[handlers.x]\n{handler}key_file = \"{}\"\n[[service]]\nname = \"s\"\npath = \"/s\"\nbuiltin = \"echo\"\nrequest = [[\"x\"]]\n",
        key_path.display()
    );
    let config = Config::from_toml(&text, "k.toml").unwrap();
    match service_plans(&config) {
        Ok(_) => String::new(),
        Err(e) => e.to_string(),
    }
}

#[test]
fn configuration_reads_key_files_and_names_the_line_of_what_is_wrong() {
    let hex = b"000102030405060708090a0b0c0d0e0f\n";
    assert_eq!(config_error("kind = \"decrypt\"\n", Some(hex)), "");
    assert_eq!(
        config_error("kind = \"decrypt\"\nrequired = true\n", Some(&[7; 32][..])),
        ""
    );
    assert_eq!(
        config_error(
            "kind = \"encrypt\"\nalgorithm = \"aes128-cbc\"\n",
            Some(hex)
        ),
        ""
    );
    let msg = config_error("kind = \"decrypt\"\n", None);
    assert!(
        msg.starts_with("k.toml:3:") && msg.contains("key_file") && msg.contains("cannot read"),
        "{msg}"
    );
    let msg = config_error("kind = \"decrypt\"\n", Some(b"0011\n"));
    assert!(
        msg.starts_with("k.toml:3:") && msg.contains("32 or 64 digits"),
        "{msg}"
    );
    // The default algorithm, aes256-gcm, wants 32 bytes.
    let msg = config_error("kind = \"encrypt\"\n", Some(hex));
    assert!(
        msg.starts_with("k.toml:3:") && msg.contains("needs a 32-byte key"),
        "{msg}"
    );
    let msg = config_error("kind = \"encrypt\"\nalgorithm = \"rot13\"\n", Some(hex));
    assert!(
        msg.starts_with("k.toml:3:") && msg.contains("\"rot13\" is not one of aes128-gcm"),
        "{msg}"
    );
    let msg = config_error(
        "kind = \"decrypt\"\nalgorithm = \"aes128-gcm\"\n",
        Some(hex),
    );
    assert!(
        msg.starts_with("k.toml:3:") && msg.contains("does not take algorithm"),
        "{msg}"
    );
    let msg = config_error("kind = \"encrypt\"\nrequired = true\n", Some(hex));
    assert!(
        msg.starts_with("k.toml:3:") && msg.contains("does not take required"),
        "{msg}"
    );
}
