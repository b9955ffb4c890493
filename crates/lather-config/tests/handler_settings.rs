//! A handler table: the engine's keys typed, every other key the kind's, with its line.

use lather_config::Config;

#[test]
fn engine_keys_are_typed_and_the_rest_is_the_kinds_with_its_lines() {
    let text =
        "[handlers.a]\nkind = \"digest\"\nrounds = 3\ntimeout_ms = 50\nmode = { fast = true }\n";
    let cfg = Config::from_toml(text, "t").unwrap();
    let a = &cfg.handlers["a"];
    assert_eq!(a.kind.get_ref(), "digest");
    assert_eq!(a.timeout_ms.as_ref().map(|t| *t.get_ref()), Some(50));
    let keys: Vec<&str> = a.settings.keys().map(String::as_str).collect();
    assert_eq!(keys, ["mode", "rounds"]);
    assert_eq!(a.settings["rounds"].get_ref().as_integer(), Some(3));
    let line = |k: &str| cfg.error_at(a.settings[k].span(), "x").line();
    assert_eq!((line("rounds"), line("mode")), (Some(3), Some(5)));
}

#[test]
fn engine_keys_keep_their_type_errors_and_kind_is_required() {
    let err =
        Config::from_toml("[handlers.a]\nkind = \"x\"\nretries = \"many\"\n", "t").unwrap_err();
    assert_eq!(err.line(), Some(3), "{err}");
    let err = Config::from_toml("[handlers.a]\nrounds = 3\n", "t").unwrap_err();
    assert!(err.message().contains("missing field `kind`"), "{err}");
}
