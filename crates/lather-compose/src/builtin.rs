//! Shorthands for a [`Composer::builtin`]: the functions callers used before kinds were open.

use crate::composer::Composer;
use crate::plans::{ServicePlans, Services};
use lather_config::{Config, ConfigError, HandlerConfig};
use lather_handlers::EventSinks;
use lather_pipeline::{Handler, Options, Resources, Step};
use lather_remote::Link;
use std::sync::Arc;

/// Resources holding `sinks`, where `publish` handlers find their event sources.
fn with_sinks(sinks: &EventSinks) -> Resources {
    let mut resources = Resources::new();
    resources.insert(sinks.clone());
    resources
}

/// Every service's plans with the built-in kinds ([`Composer::service_plans`]).
pub fn service_plans(config: &Config) -> Result<Vec<ServicePlans>, ConfigError> {
    Composer::builtin().service_plans(config)
}

/// [`service_plans`] plus the NATS link of the remote handlers, which the host must connect
/// before serving. No event source runs here (see [`build_services_with`]).
pub fn build_services(config: &Config) -> Result<Services, ConfigError> {
    Composer::builtin().services(config, &Resources::new())
}

/// [`build_services`] for a host whose event sources are (or will be) registered in
/// `sinks`, where `publish` handlers find them.
pub fn build_services_with(config: &Config, sinks: &EventSinks) -> Result<Services, ConfigError> {
    Composer::builtin().services(config, &with_sinks(sinks))
}

/// The handler `cfg` with the built-in kinds and its engine options ([`Composer::handler`]).
/// No event source runs here: a `publish` handler built so faults with
/// `EventSourceNotRunning`.
pub fn build_handler(
    name: &str,
    cfg: &HandlerConfig,
    config: &Config,
) -> Result<(Arc<dyn Handler>, Options), ConfigError> {
    Composer::builtin().handler(name, cfg, config, &Resources::new())
}

/// [`build_handler`] in a process whose event sources are (or will be) registered in
/// `sinks`.
pub fn build_handler_with(
    name: &str,
    cfg: &HandlerConfig,
    config: &Config,
    sinks: &EventSinks,
) -> Result<(Arc<dyn Handler>, Options), ConfigError> {
    Composer::builtin().handler(name, cfg, config, &with_sinks(sinks))
}

/// The handler `cfg` as a step that runs in this process ([`Composer::step`]).
pub fn build_step(name: &str, cfg: &HandlerConfig, config: &Config) -> Result<Step, ConfigError> {
    Composer::builtin().step(name, cfg, config, &Resources::new())
}

/// The handler `cfg` as a step placed as configured ([`Composer::placed_step`]); a
/// `publish` handler hands its events to the source of that name in `sinks`.
pub fn build_placed_step(
    name: &str,
    cfg: &HandlerConfig,
    config: &Config,
    link: Option<&Arc<Link>>,
    sinks: &EventSinks,
) -> Result<Step, ConfigError> {
    Composer::builtin().placed_step(name, cfg, config, link, &with_sinks(sinks))
}
