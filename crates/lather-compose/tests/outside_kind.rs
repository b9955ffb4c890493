//! A handler kind from outside lather — defined here as another crate would define it —
//! registered in a [`Composer`] and used from TOML: its settings are read from its own
//! table, and its errors name the file, the line and the key like a built-in kind's.

use lather_compose::Composer;
use lather_config::Config;
use lather_envelope::{Envelope, EnvelopeBuilder, Fault, FaultKind, Limits, SoapVersion};
use lather_pipeline::{
    Access, BuildEnv, Context, Handler, HandlerFuture, HandlerKind, Message, Outcome, Parts,
    SettingsError, Verdict, Work, run,
};
use serde::Deserialize;
use std::sync::Arc;

/// Refuses messages whose Body content is longer than `max_bytes`.
#[derive(Debug)]
struct SizeCap {
    max: usize,
}

impl Handler for SizeCap {
    fn access(&self) -> Access {
        Access::read_only(Parts::none().body())
    }

    fn call<'a>(&'a self, message: &'a Message) -> HandlerFuture<'a> {
        Box::pin(async move {
            if message.envelope().body().len() > self.max {
                Verdict::Fault(Fault::with_reason(
                    FaultKind::MessageTooLarge,
                    "size-cap: the Body is too long",
                ))
            } else {
                Verdict::proceed()
            }
        })
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SizeCapSettings {
    max_bytes: u64,
    #[serde(default)]
    note: Option<String>,
}

struct SizeCapKind;

impl HandlerKind for SizeCapKind {
    type Settings = SizeCapSettings;

    fn name(&self) -> &'static str {
        "size-cap"
    }

    fn work(&self) -> Work {
        Work::Cpu
    }

    fn idempotent(&self) -> bool {
        false
    }

    fn build(
        &self,
        settings: SizeCapSettings,
        _env: &BuildEnv<'_>,
    ) -> Result<Arc<dyn Handler>, SettingsError> {
        if settings.max_bytes == 0 {
            return Err(SettingsError::key("max_bytes", "must be greater than 0"));
        }
        if settings.note.as_deref() == Some("") {
            return Err(SettingsError::whole("a note must say something"));
        }
        Ok(Arc::new(SizeCap {
            max: usize::try_from(settings.max_bytes).unwrap_or(usize::MAX),
        }))
    }
}

fn composer() -> Composer {
    let mut composer = Composer::builtin();
    composer.kinds_mut().register(SizeCapKind);
    composer
}

fn config(handler: &str) -> Config {
    let text = format!(
        "[handlers.log]\nkind = \"logging\"\n\n[handlers.cap]\nkind = \"size-cap\"\n{handler}\n[[service]]\nname = \"s\"\npath = \"/s\"\nbuiltin = \"echo\"\nrequest = [[\"log\", \"cap\"]]\n"
    );
    Config::from_toml(&text, "outside.toml").unwrap()
}

fn error(handler: &str) -> String {
    composer()
        .service_plans(&config(handler))
        .unwrap_err()
        .to_string()
}

fn message(body: &str) -> Message {
    let bytes = EnvelopeBuilder::new(SoapVersion::V12)
        .body(body.to_owned().into())
        .build();
    Message::new(
        Envelope::parse(bytes, &Limits::default()).unwrap(),
        Context::default(),
    )
}

#[tokio::test]
async fn an_outside_kind_is_built_from_its_table_and_runs() {
    let plans = composer()
        .service_plans(&config("max_bytes = 16\ntimeout_ms = 500\n"))
        .unwrap();
    let plan = &plans[0].request;
    assert_eq!(plan.to_string(), "1: log ‖ cap\n");
    let cap = &plan.stages()[0][1];
    assert_eq!(cap.options().work, Work::Cpu);
    assert_eq!(cap.options().timeout.as_millis(), 500);
    let short = run(plan, message("<a/>"), &Limits::default()).await;
    assert!(matches!(short, Outcome::Continue(_)), "{short:?}");
    let long = run(
        plan,
        message("<a>far more than sixteen bytes</a>"),
        &Limits::default(),
    )
    .await;
    let Outcome::Fault(f) = long else {
        panic!("{long:?}")
    };
    assert_eq!(f.kind(), FaultKind::MessageTooLarge);
}

#[test]
fn without_registration_the_kind_is_unknown_and_the_known_ones_are_listed() {
    let err = Composer::builtin()
        .service_plans(&config("max_bytes = 16\n"))
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("outside.toml:5:")
            && err.contains("handlers.cap.kind: unknown kind \"size-cap\"")
            && err.contains("known kinds: ")
            && err.contains("wsse-username"),
        "{err}"
    );
    let listed = composer()
        .service_plans(&config("max_bytes = 16\n"))
        .map(|_| ());
    assert!(listed.is_ok(), "{listed:?}");
}

#[test]
fn an_unknown_key_names_its_file_line_and_key() {
    let err = error("max_bytes = 16\nmax_byte = 3\n");
    assert_eq!(
        err,
        "outside.toml:7: handlers.cap.max_byte: kind \"size-cap\" does not take max_byte"
    );
}

#[test]
fn a_settings_error_names_the_line_of_its_key() {
    let err = error("note = \"cap\"\nmax_bytes = 0\n");
    assert_eq!(
        err,
        "outside.toml:7: handlers.cap.max_bytes: must be greater than 0"
    );
    let err = error("max_bytes = 4\nnote = \"\"\n");
    assert_eq!(
        err,
        "outside.toml:5: handlers.cap: a note must say something"
    );
}

#[test]
fn a_missing_key_and_a_wrong_type_name_theirs() {
    let err = error("note = \"x\"\n");
    assert_eq!(
        err,
        "outside.toml:5: handlers.cap: kind \"size-cap\" needs max_bytes = …"
    );
    let err = error("max_bytes = \"lots\"\n");
    assert!(
        err.starts_with("outside.toml:6: handlers.cap.max_bytes: invalid type"),
        "{err}"
    );
}

#[test]
fn the_kind_says_whether_it_is_idempotent() {
    let composer = composer();
    let kinds = composer.kinds();
    assert!(!kinds.get("size-cap").unwrap().idempotent());
    // Built-in kinds that write, send or keep state are not idempotent; the others are.
    for kind in ["audit-file", "notify", "publish", "wsrf-resource"] {
        assert!(!kinds.get(kind).unwrap().idempotent(), "{kind}");
    }
    for kind in kinds.names() {
        let expected = !matches!(
            kind,
            "audit-file" | "notify" | "publish" | "wsrf-resource" | "size-cap"
        );
        assert_eq!(kinds.get(kind).unwrap().idempotent(), expected, "{kind}");
    }
    assert!(kinds.get("sleep").unwrap().idempotent());
    assert!(kinds.get("wsse-username").unwrap().idempotent());
    assert!(kinds.get("wsrf-resource").unwrap().stateful());
    assert!(!kinds.get("publish").unwrap().remote_capable());
    assert!(!kinds.get("cache").unwrap().remote_capable());
    assert!(kinds.get("cache").unwrap().idempotent());
    assert!(kinds.get("require-identity").unwrap().idempotent());
    assert!(kinds.get("context-compact").unwrap().idempotent());
    assert_eq!(kinds.names().count(), 21);
}

#[test]
fn a_configuration_not_read_from_text_still_gives_the_kind_its_settings() {
    let config: Config =
        toml::from_str("[handlers.cap]\nkind = \"size-cap\"\nmax_bytes = 8\n").unwrap();
    assert_eq!(config.text(), "");
    let cfg = &config.handlers["cap"];
    let built = composer().handler("cap", cfg, &config, &Default::default());
    assert!(built.is_ok(), "{:?}", built.err());
    let config: Config =
        toml::from_str("[handlers.cap]\nkind = \"size-cap\"\nmax_bytes = 8\nmax_byte = 3\n")
            .unwrap();
    let err = composer()
        .handler("cap", &config.handlers["cap"], &config, &Default::default())
        .err()
        .unwrap();
    assert_eq!(
        err.message(),
        "handlers.cap.max_byte: kind \"size-cap\" does not take max_byte"
    );
}
