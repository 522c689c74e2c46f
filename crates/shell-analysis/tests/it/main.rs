//! The analysis from outside: the option tables against the programs' own `--help` (the
//! completeness test), variants generated from the tables (every spelling of every option
//! that writes or runs), and the public API on the classes of the attacker model.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod api;
mod completeness;
mod variants;
