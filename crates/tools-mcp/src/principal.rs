//! Who sent a request: the principal a protocol 2026-07-28 request finds its context by, and
//! that a multi round-trip request's sealed state is bound to, and the part of the state
//! directory that is its own.

use std::sync::Arc;

use sha2::{Digest, Sha256};

/// Who sent a request: the name of the token that authenticated it, or the local client.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Principal {
    name: Arc<str>,
    /// The name of its own subtree of the state directory (none for the local client)
    state: Option<Arc<str>>,
}

impl Principal {
    /// The one client of a server without tokens (stdio, or HTTP on loopback).
    pub fn local() -> Self {
        Principal {
            name: Arc::from("local"),
            state: None,
        }
    }

    /// A principal named `name` (for example the label of a token), without a subtree of
    /// its own.
    pub fn named(name: &str) -> Self {
        Principal {
            name: Arc::from(name),
            state: None,
        }
    }

    /// The principal of the bearer token labelled `label` whose secret has the SHA-256
    /// `digest`. Its subtree of the state directory is named by a digest of the secret's
    /// digest, so it stays the same when the token files are reordered, and names no token.
    pub fn for_token(label: &str, digest: &[u8; 32]) -> Self {
        let mut hasher = Sha256::new();
        hasher.update(b"agent-tools principal state\0");
        hasher.update(digest);
        let key: String = hasher
            .finalize()
            .iter()
            .take(16)
            .map(|b| format!("{b:02x}"))
            .collect();
        Principal {
            name: Arc::from(label),
            state: Some(Arc::from(format!("token-{key}"))),
        }
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.name
    }

    /// The name of this principal's own subtree of the state directory
    /// (`<state>/principals/<name>`), where its sessions keep plans, todos, task lists,
    /// inboxes, transcripts and output; `None` for the local client, whose sessions use the
    /// state directory itself.
    pub fn state_dir_name(&self) -> Option<&str> {
        self.state.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_token_has_its_own_stable_subtree() {
        let a = Principal::for_token("token 1", &[1; 32]);
        let a_again = Principal::for_token("token 2", &[1; 32]);
        let b = Principal::for_token("token 1", &[2; 32]);
        assert_eq!(a.state_dir_name(), a_again.state_dir_name());
        assert_ne!(a.state_dir_name(), b.state_dir_name());
        assert!(Principal::local().state_dir_name().is_none());
        let name = a.state_dir_name().unwrap();
        assert_eq!(name.len(), "token-".len() + 32);
        assert_eq!(tool_core::path::safe_component(name), name);
    }
}
