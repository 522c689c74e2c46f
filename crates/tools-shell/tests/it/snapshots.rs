//! snapshots tests.
