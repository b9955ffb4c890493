//! Every service's request and response plans, built from the configuration.

use lather_config::{Config, ConfigError, Flow, FlowSpec, parse_clark};
use lather_envelope::{Envelope, QName};
use lather_pipeline::{Order, Plan, Priority, Step};
use lather_remote::Link;
use std::collections::HashMap;
use std::sync::Arc;

/// The plans of one service.
#[derive(Debug, Clone, Default)]
pub struct ServicePlans {
    /// Stages run on each request before the service.
    pub request: Plan,
    /// Stages run on each SOAP response of the service.
    pub response: Plan,
    /// Stages run on each fault on its way back to the requester.
    pub fault: Plan,
    /// Routes, in order: the first that matches a message gives its plans.
    pub routes: Vec<Route>,
}

/// A route: rules (all given ones must hold) and the plans for the messages they pick.
#[derive(Debug, Clone)]
pub struct Route {
    /// The Body's first child must have this name.
    pub operation: Option<QName>,
    /// The action (`SOAPAction`, `action` parameter or `wsa:Action`) must be this.
    pub action: Option<String>,
    /// A header block with this name must be present.
    pub header: Option<QName>,
    /// Admission class for the route's messages (action-only routes).
    pub priority: Option<Priority>,
    /// The request plan (the service's when the route sets none).
    pub request: Plan,
    /// The response plan (the service's when the route sets none).
    pub response: Plan,
}

/// WS-Addressing namespaces whose `Action` header counts as the message's action.
const WSA_NAMESPACES: [&str; 2] = [
    "http://www.w3.org/2005/08/addressing",
    "http://schemas.xmlsoap.org/ws/2004/08/addressing",
];

impl Route {
    /// Whether the route picks a message with `envelope` and HTTP-level `action`.
    pub fn matches(&self, envelope: &Envelope, action: Option<&str>) -> bool {
        let operation_ok = self
            .operation
            .as_ref()
            .is_none_or(|op| envelope.operation() == Some(op));
        let header_ok = self
            .header
            .as_ref()
            .is_none_or(|h| envelope.header(h).is_some());
        let action_ok = self.action.as_deref().is_none_or(|want| {
            action == Some(want)
                || envelope
                    .headers()
                    .iter()
                    .filter(|b| WSA_NAMESPACES.iter().any(|ns| b.name().is(ns, "Action")))
                    .any(|b| envelope.header_text(b).as_deref() == Some(want))
        });
        operation_ok && header_ok && action_ok
    }

    /// Whether the route can be chosen from the HTTP action alone (before the body is read).
    pub fn matches_action_only(&self, action: Option<&str>) -> bool {
        self.operation.is_none()
            && self.header.is_none()
            && self.action.is_some()
            && self.action.as_deref() == action
    }
}

impl ServicePlans {
    /// The request and response plans for a message: the first matching route's, else the
    /// service's.
    pub fn for_message(&self, envelope: &Envelope, action: Option<&str>) -> (&Plan, &Plan) {
        match self.routes.iter().find(|r| r.matches(envelope, action)) {
            Some(route) => (&route.request, &route.response),
            None => (&self.request, &self.response),
        }
    }

    /// The admission class an action-only route gives a message with this HTTP action.
    pub fn priority_for_action(&self, action: Option<&str>) -> Option<Priority> {
        self.routes
            .iter()
            .find(|r| r.matches_action_only(action))
            .and_then(|r| r.priority)
    }
}

/// Every service's plans and, when a handler is placed remotely, the link to NATS its
/// stand-ins share (not connected yet: the host connects it at start).
#[derive(Debug, Clone, Default)]
pub struct Services {
    /// The plans, in the order of `config.services`.
    pub plans: Vec<ServicePlans>,
    /// The link to `[nats]`, when at least one handler has `placement = "remote"` or
    /// `"auto"`.
    pub link: Option<Arc<Link>>,
}

/// Each service's plans, in the order of `config.services`, from the steps built for its
/// handlers. A clash inside a stage is reported at the flow's line, naming both handlers.
pub(crate) fn assemble(
    config: &Config,
    steps: &HashMap<&str, Arc<Step>>,
) -> Result<Vec<ServicePlans>, ConfigError> {
    config
        .services
        .iter()
        .enumerate()
        .map(|(i, svc)| {
            let request = plan(
                config,
                steps,
                svc.request.as_ref(),
                &format!("service[{i}].request"),
            )?;
            let response = plan(
                config,
                steps,
                svc.response.as_ref(),
                &format!("service[{i}].response"),
            )?;
            let fault = plan(
                config,
                steps,
                svc.fault.as_ref(),
                &format!("service[{i}].fault"),
            )?;
            let routes = svc
                .routes
                .iter()
                .enumerate()
                .map(|(r, route)| {
                    route_plans(
                        config,
                        steps,
                        route,
                        &format!("service[{i}].route[{r}]"),
                        &request,
                        &response,
                    )
                })
                .collect::<Result<_, ConfigError>>()?;
            Ok(ServicePlans {
                request,
                response,
                fault,
                routes,
            })
        })
        .collect()
}

fn route_plans(
    config: &Config,
    steps: &HashMap<&str, Arc<Step>>,
    route: &lather_config::RouteConfig,
    key: &str,
    request: &Plan,
    response: &Plan,
) -> Result<Route, ConfigError> {
    let clark = |v: &Option<toml::Spanned<String>>| {
        v.as_ref()
            .and_then(|v| parse_clark(v.get_ref()))
            .map(|(ns, local)| QName::new(ns, local))
    };
    Ok(Route {
        operation: clark(&route.operation),
        action: route.action.as_ref().map(|a| a.get_ref().clone()),
        header: clark(&route.header),
        priority: route
            .priority
            .as_ref()
            .and_then(|p| Priority::parse(p.get_ref())),
        request: match &route.request {
            Some(f) => plan(config, steps, Some(f), &format!("{key}.request"))?,
            None => request.clone(),
        },
        response: match &route.response {
            Some(f) => plan(config, steps, Some(f), &format!("{key}.response"))?,
            None => response.clone(),
        },
    })
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
    let step = |name: &toml::Spanned<String>| steps[name.get_ref().as_str()].clone();
    let planned = match flow.get_ref() {
        FlowSpec::Stages(stages) => Plan::new(
            stages
                .iter()
                .map(|s| s.iter().map(step).collect())
                .collect(),
        ),
        FlowSpec::Auto(names) => {
            let index = |n: &str| names.iter().position(|m| m.get_ref() == n);
            let orders: Vec<Order> = names
                .iter()
                .enumerate()
                .flat_map(|(after, name)| {
                    let befores = config.handlers[name.get_ref()].after.as_ref();
                    befores
                        .into_iter()
                        .flat_map(|b| b.get_ref())
                        .filter_map(move |b| {
                            index(b.get_ref()).map(|before| Order { before, after })
                        })
                })
                .collect();
            Plan::auto(names.iter().map(step).collect(), &orders)
        }
    };
    planned.map_err(|e| config.error_at(flow.span(), format!("{key}: {e}")))
}
