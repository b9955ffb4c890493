//! `lather check`: validate a configuration and print what it will serve.

use lather_config::{Builtin, Config, ServiceKind};
use std::path::Path;

/// Loads `path`, prints the plan, or fails with the error naming the line and key.
pub(crate) fn run(path: &Path) -> anyhow::Result<()> {
    let config = Config::load(path)?;
    let server = &config.server;
    println!("{}: ok", path.display());
    println!(
        "server: listen {}, max_message_bytes {}, max_depth {}, max_attributes {}",
        server.listen, server.max_message_bytes, server.max_depth, server.max_attributes
    );
    for svc in &config.services {
        let what = match svc.kind() {
            ServiceKind::Builtin(Builtin::Echo) => "builtin echo".to_owned(),
            ServiceKind::Gateway(ups) => {
                let urls: Vec<&str> = ups.iter().map(|u| u.url.as_str()).collect();
                format!(
                    "gateway to {} (timeout {} ms)",
                    urls.join(", "),
                    svc.timeout().as_millis()
                )
            }
        };
        println!(
            "service {:<16} {:<24} {}",
            svc.name.get_ref(),
            svc.path.get_ref(),
            what
        );
    }
    if config.services.is_empty() {
        println!("(no services configured)");
    }
    Ok(())
}
