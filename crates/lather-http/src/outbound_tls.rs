//! The trust of lather's own outbound `https://` calls — event deliveries, `notify`
//! handlers, asynchronous replies, the QoS broker: the system's CAs plus
//! `[server] outbound_ca_file`.

use crate::ServeError;
use lather_client::OutboundTls;
use lather_config::Config;

/// The outbound trust `config` asks for; a bundle that cannot be used is a configuration
/// error at the key's line naming the file.
pub(crate) fn load(config: &Config) -> Result<OutboundTls, ServeError> {
    match &config.server.outbound_ca_file {
        None => Ok(OutboundTls::system()),
        Some(path) => OutboundTls::with_ca_file(path.get_ref()).map_err(|e| {
            ServeError::Config(config.error_at(path.span(), format!("server.outbound_ca_file {e}")))
        }),
    }
}
