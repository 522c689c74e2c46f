//! monitor tests.
