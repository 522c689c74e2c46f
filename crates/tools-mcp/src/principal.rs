//! Who sent a request: the principal a protocol 2026-07-28 request finds its context by, and
//! that a multi round-trip request's sealed state is bound to.

use std::sync::Arc;

/// Who sent a request: the name of the token that authenticated it, or the local client.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Principal(Arc<str>);

impl Principal {
    /// The one client of a server without tokens (stdio, or HTTP on loopback).
    pub fn local() -> Self {
        Principal(Arc::from("local"))
    }

    /// A principal named `name` (for example the label of a token).
    pub fn named(name: &str) -> Self {
        Principal(Arc::from(name))
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}
