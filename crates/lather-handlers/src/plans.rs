//! Every service's request and response plans, built from the configuration.

use crate::build_step;
use lather_config::{Config, ConfigError, Flow};
use lather_pipeline::{Plan, Step};
use std::collections::HashMap;
use std::sync::Arc;

/// The plans of one service.
#[derive(Debug, Clone, Default)]
pub struct ServicePlans {
    /// Stages run on each request before the service.
    pub request: Plan,
    /// Stages run on each SOAP response of the service.
    pub response: Plan,
}

/// Builds each handler once and each service's plans, in the order of `config.services`.
/// A clash inside a stage is reported at the flow's line, naming both handlers.
pub fn service_plans(config: &Config) -> Result<Vec<ServicePlans>, ConfigError> {
    let mut steps: HashMap<&str, Arc<Step>> = HashMap::new();
    for (name, cfg) in &config.handlers {
        steps.insert(name, Arc::new(build_step(name, cfg, config)?));
    }
    config
        .services
        .iter()
        .enumerate()
        .map(|(i, svc)| {
            Ok(ServicePlans {
                request: plan(
                    config,
                    &steps,
                    svc.request.as_ref(),
                    &format!("service[{i}].request"),
                )?,
                response: plan(
                    config,
                    &steps,
                    svc.response.as_ref(),
                    &format!("service[{i}].response"),
                )?,
            })
        })
        .collect()
}

fn plan(
    config: &Config,
    steps: &HashMap<&str, Arc<Step>>,
    flow: Option<&Flow>,
    key: &str,
) -> Result<Plan, ConfigError> {
    let Some(flow) = flow else {
        return Ok(Plan::default());
    };
    let stages = flow
        .get_ref()
        .iter()
        .map(|stage| {
            stage
                .iter()
                .map(|name| steps[name.get_ref().as_str()].clone())
                .collect()
        })
        .collect();
    Plan::new(stages).map_err(|e| config.error_at(flow.span(), format!("{key}: {e}")))
}
