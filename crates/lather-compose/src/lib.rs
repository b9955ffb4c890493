//! lather's composition: the handlers and the services' plans a configuration describes.
//!
//! A [`Composer`] holds the handler kinds it knows (lather's built-in kinds, and any a host
//! registers) and builds from a [`Config`](lather_config::Config): each `[handlers.NAME]`
//! table becomes a handler of its kind — the kind reads its own settings from the table,
//! less the engine's options — wrapped for its placement (in process, on a remote worker,
//! or chosen per call), and each service's flows become [`Plan`](lather_pipeline::Plan)s.
//! Errors name the file, the line and the key.
//!
//! ```
//! let config = lather_config::Config::from_toml(r#"
//! [handlers.log]
//! kind = "logging"
//! [[service]]
//! name = "echo"
//! path = "/echo"
//! builtin = "echo"
//! request = [["log"]]
//! "#, "inline").unwrap();
//! let plans = lather_compose::Composer::builtin().service_plans(&config).unwrap();
//! assert_eq!(plans[0].request.to_string(), "1: log\n");
//! ```

mod builtin;
mod composer;
mod plans;
mod settings;
mod step;

pub use builtin::{
    build_handler, build_handler_with, build_placed_step, build_services, build_services_with,
    build_step, service_plans,
};
pub use composer::Composer;
pub use plans::{Route, ServicePlans, Services};
pub use step::{limits, server_limits};
