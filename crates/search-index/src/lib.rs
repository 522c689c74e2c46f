//! The trigram index behind agent-tools' Grep and Glob, pure of tool knowledge: which
//! files are indexed, how they are kept fresh and how candidates are searched is
//! `tools-fs`'s business.
//!
//! # Overview
//!
//! - [`Extractor`] collects the distinct trigrams of a file's content over a 7-bit alphabet
//!   ([`grams`](crate::gram)) that keeps the case of letters: one index serves
//!   case-sensitive queries and case-insensitive ones, which ask for the case variants.
//! - [`query_for`] turns a regular expression into a [`GramQuery`], the AND/OR of trigrams
//!   that a file must contain for the pattern to match in it, derived from `regex-syntax`'s
//!   syntax tree (literals, classes, alternations, repetitions, case-insensitivity,
//!   Unicode classes). A pattern the trigrams cannot narrow gives [`GramQuery::All`].
//! - [`Postings::build`] builds the posting lists of many documents in parallel chunks.
//! - [`save`] writes an index file (versioned, checksummed, renamed into place);
//!   [`IndexFile::open`] checks one and reads its lists with positioned reads.
//! - [`LiveIndex`] is what a session queries: a base plus the documents changed since;
//!   [`LiveIndex::candidates`] answers a query with [`Candidates`].
//!
//! Every answer is a superset: the index only rules files out, and the caller's matcher
//! decides, so results are those of a full scan.
//!
//! # Example
//!
//! ```
//! use std::sync::atomic::AtomicBool;
//! use std::time::SystemTime;
//! use search_index::{
//!     Candidates, Content, Contents, Doc, DocKind, DocMeta, LiveIndex, PatternOptions,
//!     Postings, query_for,
//! };
//!
//! let texts = ["fn rcu_read_lock_bh() {}", "static int x;", "RCU_READ_LOCK_BH"];
//! let read = |id: usize, buf: &mut Vec<u8>| {
//!     buf.extend_from_slice(texts[id].as_bytes());
//!     Content::Text
//! };
//! let postings = Postings::build(texts.len(), 2, &read, &AtomicBool::new(false));
//! let meta = DocMeta { mtime: SystemTime::UNIX_EPOCH, size: 0, ino: 0, kind: DocKind::File };
//! let docs = ["a.c", "b.c", "c.h"]
//!     .iter()
//!     .map(|p| Doc { rel: p.as_bytes().into(), meta })
//!     .collect();
//! let contents = Contents { root: "/src".into(), built: SystemTime::now(), docs, dirs: vec![] };
//! let index = LiveIndex::from_memory(contents, postings);
//! let query = query_for("rcu_read_lock_bh", PatternOptions::default());
//! assert_eq!(index.candidates(&query).unwrap(), Candidates::Some(vec![0]));
//! // Case-insensitive: both spellings are candidates; the matcher decides.
//! let options = PatternOptions { case_insensitive: true, ..Default::default() };
//! let query = query_for("rcu_read_lock_bh", options);
//! assert_eq!(index.candidates(&query).unwrap(), Candidates::Some(vec![0, 2]));
//! ```

mod file;
mod grams;
mod live;
mod postings;
mod query;

use std::path::PathBuf;

pub use file::{Contents, DirEntry, Doc, DocKind, DocMeta, FORMAT_VERSION, IndexFile, save};
pub use grams::{Extractor, GRAM_SPACE, Gram, code, gram};
pub use live::{Candidates, Entry, Indexed, LiveIndex, within};
pub use postings::{Content, Postings};
pub use query::{GramQuery, PatternOptions, query_for};

/// What can go wrong with an index file. Each one means the file is not used (it is rebuilt).
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// Reading or writing failed.
    #[error("index file {path}: {source}")]
    Io {
        /// The file
        path: PathBuf,
        /// What the system said
        #[source]
        source: std::io::Error,
    },
    /// The file is not a complete, intact index.
    #[error("index file {path} is damaged ({reason})")]
    Corrupt {
        /// The file
        path: PathBuf,
        /// What is wrong
        reason: String,
    },
    /// The file was written in another format version.
    #[error(
        "index file {path} has format version {found}, this build reads version {FORMAT_VERSION}"
    )]
    Version {
        /// The file
        path: PathBuf,
        /// The version it has
        found: u32,
    },
}
