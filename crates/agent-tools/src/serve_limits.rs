//! The limits of `agent-tools serve` a deployment can set: connection deadlines and the
//! cap on connections (HTTP), how long an unused session lives, and how long command output
//! is kept in the state directory and how much of it. Always compiled, so the command line
//! is the same with and without the `mcp` feature.

use clap::Args;

/// `serve`'s limits (see `docs/deploy.md`).
#[derive(Debug, Clone, Default, Args)]
pub struct ServeLimits {
    /// Seconds a client may take to send a request's headers, from the connection's accept
    /// or a request's first byte (default: 10); also the longest pause in a request body
    #[arg(long = "header-timeout", value_name = "SECONDS", requires = "http")]
    pub header_timeout: Option<f64>,
    /// Seconds a kept-alive connection may wait for its next request (default: 60)
    #[arg(long = "idle-timeout", value_name = "SECONDS", requires = "http")]
    pub idle_timeout: Option<f64>,
    /// The most HTTP connections served at once; at the cap the one idle longest is closed
    /// (default: 512)
    #[arg(long = "max-connections", value_name = "N", requires = "http")]
    pub max_connections: Option<usize>,
    /// Seconds a session or context lives without a request and without a call in flight;
    /// then its background commands are stopped and its files deleted (default: 1800)
    #[arg(long = "session-idle", value_name = "SECONDS", requires = "http")]
    pub session_idle: Option<f64>,
    /// Seconds that command output and spilled results are kept in the state directory
    /// (default: 86400)
    #[arg(long = "output-retention", value_name = "SECONDS")]
    pub output_retention: Option<f64>,
    /// Bytes of the state directory that command output and spilled results may take; the
    /// oldest go first (default: 1073741824)
    #[arg(long = "output-budget", value_name = "BYTES")]
    pub output_budget: Option<u64>,
}
