//! The composer: handler kinds by name, and the plans a configuration makes of them.

use crate::plans::{ServicePlans, Services, assemble};
use crate::settings::HandlerTables;
use crate::step::{Ingredients, build_handler, build_placed_step, builtin_services};
use lather_config::{Config, ConfigError, HandlerConfig};
use lather_pipeline::{Handler, KindRegistry, Options, Resources, Step};
use lather_remote::Link;
use std::collections::HashMap;
use std::sync::Arc;

/// Builds handlers and services' plans from a configuration, with the handler kinds of its
/// [`KindRegistry`]: lather's built-in kinds ([`Composer::builtin`]) and any others
/// registered ([`Composer::kinds_mut`]).
#[derive(Debug, Clone)]
pub struct Composer {
    kinds: KindRegistry,
}

impl Default for Composer {
    fn default() -> Self {
        Composer::builtin()
    }
}

impl Composer {
    /// A composer with lather's built-in kinds ([`lather_handlers::builtin_kinds`], and
    /// lather-context's `context-compact` and `context-expand`).
    pub fn builtin() -> Self {
        let mut kinds = lather_handlers::builtin_kinds();
        kinds.register(lather_context::CompactKind);
        kinds.register(lather_context::ExpandKind);
        Composer::new(kinds)
    }

    /// A composer with exactly `kinds`.
    pub fn new(kinds: KindRegistry) -> Self {
        Composer { kinds }
    }

    /// The kinds it builds handlers of.
    pub fn kinds(&self) -> &KindRegistry {
        &self.kinds
    }

    /// The kinds, to register more (`composer.kinds_mut().register(MyKind)`).
    pub fn kinds_mut(&mut self) -> &mut KindRegistry {
        &mut self.kinds
    }

    /// Builds each handler of `config` once, placed as configured, and each service's
    /// plans, in the order of `config.services`; with the NATS link the remote handlers
    /// share (not connected yet: the host connects it before serving). Kinds find what the
    /// process shares in `resources` (e.g. `publish` its
    /// [`EventSinks`](lather_handlers::EventSinks)). Errors name the file, line and key.
    pub fn services(
        &self,
        config: &Config,
        resources: &Resources,
    ) -> Result<Services, ConfigError> {
        let remote = config
            .handlers
            .values()
            .any(|h| h.placement().uses_workers());
        let link = match &config.nats {
            Some(nats) if remote => Some(Arc::new(Link::new(nats))),
            _ => None,
        };
        let tables = HandlerTables::of(config);
        let services = builtin_services(config);
        let with = self.ingredients(config, &tables, &services, resources);
        let mut steps: HashMap<&str, Arc<Step>> = HashMap::new();
        for (name, cfg) in &config.handlers {
            let step = build_placed_step(&with, name, cfg, link.as_ref())?;
            steps.insert(name, Arc::new(step));
        }
        let plans = assemble(config, &steps)?;
        Ok(Services { plans, link })
    }

    /// Every service's plans (see [`Composer::services`]), with no shared resources.
    pub fn service_plans(&self, config: &Config) -> Result<Vec<ServicePlans>, ConfigError> {
        self.services(config, &Resources::new()).map(|s| s.plans)
    }

    /// The handler `cfg` (named `name` in `config`) as it runs in this process, whatever
    /// its placement, and its engine options: what a `lather worker` hosts.
    pub fn handler(
        &self,
        name: &str,
        cfg: &HandlerConfig,
        config: &Config,
        resources: &Resources,
    ) -> Result<(Arc<dyn Handler>, Options), ConfigError> {
        let tables = HandlerTables::of(config);
        let services = builtin_services(config);
        build_handler(
            &self.ingredients(config, &tables, &services, resources),
            name,
            cfg,
        )
    }

    /// [`Composer::handler`] as a step that runs in this process.
    pub fn step(
        &self,
        name: &str,
        cfg: &HandlerConfig,
        config: &Config,
        resources: &Resources,
    ) -> Result<Step, ConfigError> {
        let (handler, options) = self.handler(name, cfg, config, resources)?;
        Ok(Step::new(name, handler, options))
    }

    /// [`Composer::handler`] as a step placed as configured: a remote or auto-placed
    /// handler reaches its workers through `link` (see [`Composer::services`]).
    pub fn placed_step(
        &self,
        name: &str,
        cfg: &HandlerConfig,
        config: &Config,
        link: Option<&Arc<Link>>,
        resources: &Resources,
    ) -> Result<Step, ConfigError> {
        let tables = HandlerTables::of(config);
        let services = builtin_services(config);
        build_placed_step(
            &self.ingredients(config, &tables, &services, resources),
            name,
            cfg,
            link,
        )
    }

    fn ingredients<'a>(
        &'a self,
        config: &'a Config,
        tables: &'a HandlerTables<'a>,
        services: &'a [(String, String)],
        resources: &'a Resources,
    ) -> Ingredients<'a> {
        Ingredients {
            kinds: &self.kinds,
            config,
            tables,
            services,
            resources,
        }
    }
}
