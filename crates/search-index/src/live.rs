//! The index a session queries: a base (a saved file, or lists built in memory) plus what
//! changed since — documents added or indexed again get new ids above the base's, with
//! their trigrams in an in-memory overlay, and the ids they replace are marked dead.

use std::collections::{BTreeMap, HashMap};
use std::time::SystemTime;

use crate::IndexError;
use crate::file::{Contents, DirEntry, Doc, DocMeta, IndexFile};
use crate::grams::Gram;
use crate::postings::Postings;
use crate::query::GramQuery;

/// Where the base's posting lists are.
#[derive(Debug)]
enum Base {
    /// No base: every document is in the overlay.
    Empty,
    /// Built in this session and kept in memory (it could not be saved).
    Memory(Box<Postings>),
    /// A saved file.
    File(Box<IndexFile>),
}

/// How a document takes part in queries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Indexed {
    /// Its trigrams are in the lists.
    Grams,
    /// It is a candidate for every query (its content could not be narrowed).
    Always,
    /// It is listed but never searched (a symbolic link).
    Listed,
}

/// One document, as the session knows it.
#[derive(Debug, Clone)]
pub struct Entry {
    /// Path relative to the project root
    pub rel: Box<[u8]>,
    /// Metadata when it was indexed
    pub meta: DocMeta,
    /// Whether a newer version replaced it, or it was removed
    pub dead: bool,
    /// How it takes part in queries
    pub indexed: Indexed,
}

/// What a query's trigrams leave to search.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Candidates {
    /// Every document (the query does not narrow, or too little to be worth reading).
    All,
    /// These ids, sorted.
    Some(Vec<u32>),
}

/// The queried index: see the module documentation.
#[derive(Debug)]
pub struct LiveIndex {
    base: Base,
    base_docs: u32,
    entries: Vec<Entry>,
    /// Whether the base's documents are sorted by path (a saved index's always are): they
    /// are then found by binary search, and `by_path` holds only the documents added since.
    base_sorted: bool,
    /// Ids of the live documents by path (see `base_sorted`).
    by_path: HashMap<Box<[u8]>, u32>,
    overlay: HashMap<Gram, Vec<u32>>,
    always: Vec<u32>,
    dirs: BTreeMap<Box<[u8]>, u64>,
    dead: usize,
    built: SystemTime,
    /// The base's documents newest first, then by path: the order results are shown in,
    /// sorted once (documents added since are few and sorted when asked for).
    base_order: Vec<u32>,
}

/// A query whose estimated candidates exceed this share of the documents searches them all
/// (reading the lists would cost more than it saves).
const BROAD: f64 = 0.5;
/// Below this many documents every list is cheap to read.
const SMALL: f64 = 1000.0;

impl LiveIndex {
    fn with_base(
        base: Base,
        contents: Contents,
        always: &[u32],
        listed: &dyn Fn(u32) -> bool,
    ) -> Self {
        let base_docs = u32::try_from(contents.docs.len()).unwrap_or(u32::MAX);
        let base_sorted = contents.docs.windows(2).all(|w| w[0].rel < w[1].rel);
        let mut entries = Vec::with_capacity(contents.docs.len());
        let mut by_path = HashMap::new();
        for (id, Doc { rel, meta }) in contents.docs.into_iter().enumerate() {
            let id = u32::try_from(id).unwrap_or(u32::MAX);
            if !base_sorted {
                by_path.insert(rel.clone(), id);
            }
            let indexed = if meta.kind == crate::DocKind::Symlink {
                Indexed::Listed
            } else if listed(id) {
                Indexed::Always
            } else {
                Indexed::Grams
            };
            entries.push(Entry {
                rel,
                meta,
                dead: false,
                indexed,
            });
        }
        let mut base_order: Vec<u32> = (0..base_docs).collect();
        base_order.sort_unstable_by(|&a, &b| newer(&entries[a as usize], &entries[b as usize]));
        LiveIndex {
            base_order,
            base,
            base_docs,
            entries,
            base_sorted,
            by_path,
            overlay: HashMap::new(),
            always: always.to_vec(),
            dirs: contents
                .dirs
                .into_iter()
                .map(|d| (d.rel, d.skipped))
                .collect(),
            dead: 0,
            built: contents.built,
        }
    }

    /// An index over a saved file (its documents and directories move into the index).
    pub fn from_file(mut file: IndexFile) -> Self {
        let contents = Contents {
            root: file.contents.root.clone(),
            built: file.contents.built,
            docs: std::mem::take(&mut file.contents.docs),
            dirs: std::mem::take(&mut file.contents.dirs),
        };
        let always = file.always.clone();
        let set: std::collections::HashSet<u32> = always.iter().copied().collect();
        LiveIndex::with_base(Base::File(Box::new(file)), contents, &always, &|id| {
            set.contains(&id)
        })
    }

    /// An index over lists built in memory.
    pub fn from_memory(contents: Contents, postings: Postings) -> Self {
        let always = postings.always().to_vec();
        let set: std::collections::HashSet<u32> = always.iter().copied().collect();
        LiveIndex::with_base(Base::Memory(Box::new(postings)), contents, &always, &|id| {
            set.contains(&id)
        })
    }

    /// An index with nothing yet.
    pub fn empty(root: std::path::PathBuf) -> Self {
        LiveIndex::with_base(
            Base::Empty,
            Contents {
                root,
                built: SystemTime::now(),
                docs: Vec::new(),
                dirs: Vec::new(),
            },
            &[],
            &|_| false,
        )
    }

    /// When the base was built.
    pub fn built(&self) -> SystemTime {
        self.built
    }

    /// Whether the base is a saved file.
    pub fn is_saved(&self) -> bool {
        matches!(self.base, Base::File(_))
    }

    /// Bytes of the saved file, if any.
    pub fn file_bytes(&self) -> Option<u64> {
        match &self.base {
            Base::File(f) => Some(f.bytes),
            _ => None,
        }
    }

    /// Live documents.
    pub fn len(&self) -> usize {
        self.entries.len() - self.dead
    }

    /// Whether there is no live document.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Documents indexed again or added since the base.
    pub fn changed(&self) -> usize {
        self.entries.len() - self.base_docs as usize
    }

    /// The id of the live document at `rel`.
    fn id_of(&self, rel: &[u8]) -> Option<u32> {
        if let Some(&id) = self.by_path.get(rel) {
            return Some(id);
        }
        if !self.base_sorted {
            return None;
        }
        let base = self.entries.get(..self.base_docs as usize)?;
        let at = base.binary_search_by(|e| e.rel[..].cmp(rel)).ok()?;
        let id = u32::try_from(at).ok()?;
        base.get(at).filter(|e| !e.dead).map(|_| id)
    }

    /// The live document at `rel`, for paths asked in ascending order: `cursor` (0 at
    /// first) remembers where the last one was, so a sorted walk is matched against the
    /// sorted base in one pass rather than a search per path.
    pub fn get_ascending(&self, rel: &[u8], cursor: &mut usize) -> Option<&Entry> {
        if !self.base_sorted || !self.by_path.is_empty() {
            return self.get(rel);
        }
        let base = self.entries.get(..self.base_docs as usize)?;
        while base.get(*cursor).is_some_and(|e| &e.rel[..] < rel) {
            *cursor += 1;
        }
        base.get(*cursor).filter(|e| &e.rel[..] == rel && !e.dead)
    }

    /// The live document at `rel`.
    pub fn get(&self, rel: &[u8]) -> Option<&Entry> {
        let id = self.id_of(rel)?;
        self.entries.get(id as usize).filter(|e| !e.dead)
    }

    /// A document by id.
    pub fn entry(&self, id: u32) -> Option<&Entry> {
        self.entries.get(id as usize)
    }

    /// Live documents (id and entry) whose path is `scope` or lies under it ("" for all).
    pub fn under<'a>(&'a self, scope: &'a [u8]) -> impl Iterator<Item = (u32, &'a Entry)> + 'a {
        self.entries
            .iter()
            .enumerate()
            .filter(move |(_, e)| !e.dead && within(&e.rel, scope))
            .map(|(i, e)| (u32::try_from(i).unwrap_or(u32::MAX), e))
    }

    /// The live documents under `scope`, newest first, then by path (the order Grep and
    /// Glob show results in), as an iterator that costs nothing for what it does not reach.
    pub fn newest_first<'a>(
        &'a self,
        scope: &'a [u8],
    ) -> impl Iterator<Item = (u32, &'a Entry)> + 'a {
        let mut added: Vec<u32> = (self.base_docs
            ..u32::try_from(self.entries.len()).unwrap_or(u32::MAX))
            .filter(|&id| self.entries.get(id as usize).is_some_and(|e| !e.dead))
            .collect();
        added
            .sort_unstable_by(|&a, &b| newer(&self.entries[a as usize], &self.entries[b as usize]));
        let base = self
            .base_order
            .iter()
            .copied()
            .filter(move |&id| self.entries.get(id as usize).is_some_and(|e| !e.dead));
        Merge {
            index: self,
            base: base.peekable(),
            added: added.into_iter().peekable(),
        }
        .filter(move |(_, e)| within(&e.rel, scope))
    }

    /// `ids` in the order results are shown in.
    pub fn sort_newest_first(&self, ids: &mut [u32]) {
        ids.sort_unstable_by(|&a, &b| {
            match (self.entries.get(a as usize), self.entries.get(b as usize)) {
                (Some(x), Some(y)) => newer(x, y),
                _ => a.cmp(&b),
            }
        });
    }

    /// Adds or replaces the document at `rel`; `grams` are its trigrams when its content is
    /// indexed.
    pub fn upsert(&mut self, rel: &[u8], meta: DocMeta, indexed: Indexed, grams: &[Gram]) {
        self.remove(rel);
        let id = u32::try_from(self.entries.len()).unwrap_or(u32::MAX);
        self.entries.push(Entry {
            rel: rel.into(),
            meta,
            dead: false,
            indexed,
        });
        self.by_path.insert(rel.into(), id);
        match indexed {
            Indexed::Grams => {
                for &g in grams {
                    self.overlay.entry(g).or_default().push(id);
                }
            }
            Indexed::Always => self.always.push(id),
            Indexed::Listed => {}
        }
    }

    /// Removes the document at `rel`; true when there was one.
    pub fn remove(&mut self, rel: &[u8]) -> bool {
        let Some(id) = self.id_of(rel) else {
            return false;
        };
        self.by_path.remove(rel);
        if let Some(e) = self.entries.get_mut(id as usize)
            && !e.dead
        {
            e.dead = true;
            self.dead += 1;
        }
        true
    }

    /// Removes every document and directory under `dir` (and `dir` itself).
    pub fn remove_under(&mut self, dir: &[u8]) {
        let gone: Vec<Box<[u8]>> = self.under(dir).map(|(_, e)| e.rel.clone()).collect();
        for rel in gone {
            self.remove(&rel);
        }
        self.dirs.retain(|rel, _| !within(rel, dir));
    }

    /// Forgets the directories under `dir` (and `dir` itself); their documents stay.
    pub fn remove_dirs_under(&mut self, dir: &[u8]) {
        self.dirs.retain(|rel, _| !within(rel, dir));
    }

    /// Records a walked directory and the entries its ignore rules skipped.
    pub fn set_dir(&mut self, rel: &[u8], skipped: u64) {
        self.dirs.insert(rel.into(), skipped);
    }

    /// Whether `rel` is a directory the index walked.
    pub fn has_dir(&self, rel: &[u8]) -> bool {
        self.dirs.contains_key(rel)
    }

    /// The directories walked.
    pub fn dirs(&self) -> impl Iterator<Item = (&[u8], u64)> {
        self.dirs.iter().map(|(r, s)| (&r[..], *s))
    }

    /// Entries the ignore rules skipped in `scope` and below.
    pub fn skipped_under(&self, scope: &[u8]) -> u64 {
        self.dirs
            .iter()
            .filter(|(rel, _)| within(rel, scope))
            .map(|(_, s)| s)
            .sum()
    }

    /// Documents whose content holds `gram` (dead ones included).
    fn count(&self, gram: Gram) -> u64 {
        let base = match &self.base {
            Base::Empty => 0,
            Base::Memory(p) => p.ids(gram).len() as u64,
            Base::File(f) => u64::from(f.count(gram)),
        };
        base + self.overlay.get(&gram).map_or(0, |l| l.len() as u64)
    }

    fn ids(&self, gram: Gram) -> Result<Vec<u32>, IndexError> {
        let mut ids = match &self.base {
            Base::Empty => Vec::new(),
            Base::Memory(p) => p.ids(gram),
            Base::File(f) => f.ids(gram)?,
        };
        if let Some(more) = self.overlay.get(&gram) {
            ids.extend_from_slice(more);
        }
        Ok(ids)
    }

    /// An estimate of the documents the query leaves (an upper bound).
    pub fn estimate(&self, query: &GramQuery) -> u64 {
        let all = self.entries.len() as u64;
        match query {
            GramQuery::All => all,
            GramQuery::Nothing => 0,
            GramQuery::Gram(g) => self.count(*g),
            GramQuery::And(list) => list.iter().map(|q| self.estimate(q)).min().unwrap_or(all),
            GramQuery::Or(list) => list.iter().map(|q| self.estimate(q)).sum::<u64>().min(all),
        }
    }

    /// The live documents that may match `query`.
    pub fn candidates(&self, query: &GramQuery) -> Result<Candidates, IndexError> {
        let all = self.entries.len().max(1) as f64;
        if all > SMALL && self.estimate(query) as f64 > BROAD * all {
            return Ok(Candidates::All);
        }
        let Some(mut ids) = self.eval(query)? else {
            return Ok(Candidates::All);
        };
        ids.extend_from_slice(&self.always);
        ids.sort_unstable();
        ids.dedup();
        ids.retain(|&id| {
            self.entries
                .get(id as usize)
                .is_some_and(|e| !e.dead && e.indexed != Indexed::Listed)
        });
        Ok(Candidates::Some(ids))
    }

    /// The ids satisfying `query` (dead ones included); `None` for all.
    fn eval(&self, query: &GramQuery) -> Result<Option<Vec<u32>>, IndexError> {
        match query {
            GramQuery::All => Ok(None),
            GramQuery::Nothing => Ok(Some(Vec::new())),
            GramQuery::Gram(g) => self.ids(*g).map(Some),
            GramQuery::And(list) => {
                let mut order: Vec<(u64, &GramQuery)> =
                    list.iter().map(|q| (self.estimate(q), q)).collect();
                order.sort_by_key(|(e, _)| *e);
                let mut current: Option<Vec<u32>> = None;
                for (estimate, q) in order {
                    if let Some(c) = &current {
                        if c.is_empty() {
                            break;
                        }
                        // Few candidates left: reading a long list would cost more than
                        // letting the matcher reject the few that do not match.
                        if c.len() <= 32 && estimate > 64 * c.len() as u64 {
                            continue;
                        }
                    }
                    let Some(ids) = self.eval(q)? else { continue };
                    current = Some(match current {
                        None => ids,
                        Some(c) => intersect(&c, &ids),
                    });
                }
                Ok(current)
            }
            GramQuery::Or(list) => {
                let mut out = Vec::new();
                for q in list {
                    match self.eval(q)? {
                        None => return Ok(None),
                        Some(ids) => out = union(&out, &ids),
                    }
                }
                Ok(Some(out))
            }
        }
    }
}

/// Newest first, then by path bytes.
fn newer(a: &Entry, b: &Entry) -> std::cmp::Ordering {
    b.meta
        .mtime
        .cmp(&a.meta.mtime)
        .then_with(|| a.rel.cmp(&b.rel))
}

/// Two streams in newest-first order merged into one.
struct Merge<'a, B: Iterator<Item = u32>, A: Iterator<Item = u32>> {
    index: &'a LiveIndex,
    base: std::iter::Peekable<B>,
    added: std::iter::Peekable<A>,
}

impl<'a, B: Iterator<Item = u32>, A: Iterator<Item = u32>> Iterator for Merge<'a, B, A> {
    type Item = (u32, &'a Entry);

    fn next(&mut self) -> Option<Self::Item> {
        let entries = &self.index.entries;
        let id = match (self.base.peek(), self.added.peek()) {
            (Some(&b), Some(&a)) => {
                if newer(&entries[a as usize], &entries[b as usize]).is_lt() {
                    self.added.next()
                } else {
                    self.base.next()
                }
            }
            (Some(_), None) => self.base.next(),
            (None, Some(_)) => self.added.next(),
            (None, None) => None,
        }?;
        entries.get(id as usize).map(|e| (id, e))
    }
}

/// Whether `rel` is `scope` or lies under it ("" holds everything).
pub fn within(rel: &[u8], scope: &[u8]) -> bool {
    scope.is_empty()
        || rel == scope
        || (rel.len() > scope.len() && rel.starts_with(scope) && rel[scope.len()] == b'/')
}

fn intersect(a: &[u32], b: &[u32]) -> Vec<u32> {
    let mut out = Vec::with_capacity(a.len().min(b.len()));
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                out.push(a[i]);
                i += 1;
                j += 1;
            }
        }
    }
    out
}

fn union(a: &[u32], b: &[u32]) -> Vec<u32> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        let next = match (a.get(i), b.get(j)) {
            (Some(&x), Some(&y)) if x < y => {
                i += 1;
                x
            }
            (Some(&x), Some(&y)) if x > y => {
                j += 1;
                y
            }
            (Some(&x), Some(_)) => {
                i += 1;
                j += 1;
                x
            }
            (Some(&x), None) => {
                i += 1;
                x
            }
            (None, Some(&y)) => {
                j += 1;
                y
            }
            (None, None) => break,
        };
        out.push(next);
    }
    out
}

impl From<&LiveIndex> for Vec<DirEntry> {
    fn from(index: &LiveIndex) -> Self {
        index
            .dirs
            .iter()
            .map(|(rel, skipped)| DirEntry {
                rel: rel.clone(),
                skipped: *skipped,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::sync::atomic::AtomicBool;

    use super::*;
    use crate::grams::Extractor;
    use crate::postings::Content;
    use crate::query::{PatternOptions, query_for};
    use crate::{DocKind, save};

    fn meta() -> DocMeta {
        DocMeta {
            mtime: SystemTime::UNIX_EPOCH,
            size: 1,
            ino: 1,
            kind: DocKind::File,
        }
    }

    fn grams_of(text: &str) -> Vec<Gram> {
        let mut x = Extractor::new();
        x.feed(text.as_bytes());
        x.grams().to_vec()
    }

    fn built(texts: &[(&str, &str)]) -> (Contents, Postings) {
        let read = |id: usize, buf: &mut Vec<u8>| {
            buf.extend_from_slice(texts[id].1.as_bytes());
            Content::Text
        };
        let postings = Postings::build(texts.len(), 2, &read, &AtomicBool::new(false));
        let contents = Contents {
            root: "/p".into(),
            built: SystemTime::UNIX_EPOCH,
            docs: texts
                .iter()
                .map(|(rel, _)| Doc {
                    rel: rel.as_bytes().into(),
                    meta: meta(),
                })
                .collect(),
            dirs: vec![
                DirEntry {
                    rel: b"".as_slice().into(),
                    skipped: 2,
                },
                DirEntry {
                    rel: b"src".as_slice().into(),
                    skipped: 3,
                },
            ],
        };
        (contents, postings)
    }

    fn paths(index: &LiveIndex, pattern: &str) -> Vec<String> {
        match index
            .candidates(&query_for(pattern, PatternOptions::default()))
            .unwrap()
        {
            Candidates::All => vec!["*".to_owned()],
            Candidates::Some(ids) => ids
                .into_iter()
                .map(|id| String::from_utf8_lossy(&index.entry(id).unwrap().rel).into_owned())
                .collect(),
        }
    }

    fn check_index(index: &mut LiveIndex) {
        assert_eq!(paths(index, "needle_one"), ["a.txt"]);
        assert_eq!(paths(index, "needle_(one|two)"), ["a.txt", "src/b.rs"]);
        assert_eq!(paths(index, "zzzzz"), Vec::<String>::new());
        assert_eq!(paths(index, "."), ["*"]);
        assert_eq!(index.skipped_under(b""), 5);
        assert_eq!(index.skipped_under(b"src"), 3);
        // An edit: the old version is dead, the new one found.
        index.upsert(
            b"a.txt",
            meta(),
            Indexed::Grams,
            &grams_of("now needle_three"),
        );
        assert_eq!(paths(index, "needle_one"), Vec::<String>::new());
        assert_eq!(paths(index, "needle_three"), ["a.txt"]);
        assert!(index.remove(b"src/b.rs"));
        assert_eq!(paths(index, "needle_two"), Vec::<String>::new());
        index.upsert(b"new.bin", meta(), Indexed::Always, &[]);
        assert_eq!(paths(index, "needle_three"), ["a.txt", "new.bin"]);
        index.remove_under(b"src");
        assert_eq!(index.skipped_under(b""), 2);
        assert_eq!(index.len(), 3);
    }

    const TEXTS: &[(&str, &str)] = &[
        ("a.txt", "has needle_one here"),
        ("c.md", "nothing"),
        ("src/b.rs", "fn needle_two() {}"),
        ("src/d.rs", "fn other() {}"),
    ];

    #[test]
    fn queries_in_memory_and_from_a_saved_file_agree() {
        let (contents, postings) = built(TEXTS);
        let mut memory = LiveIndex::from_memory(contents.clone(), postings);
        check_index(&mut memory);

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index");
        let (contents, postings) = built(TEXTS);
        let bytes = save(&path, &contents, &postings).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), bytes);
        let file = IndexFile::open(&path).unwrap();
        assert_eq!(file.contents, contents);
        let mut saved = LiveIndex::from_file(file);
        assert!(saved.is_saved());
        check_index(&mut saved);
    }

    /// Whether `get`, and `get_ascending` over the paths in order, find a live document at
    /// each path.
    fn check_lookups(index: &LiveIndex, expected: &[(&str, bool)]) {
        let mut cursor = 0;
        for &(rel, live) in expected {
            let rel = rel.as_bytes();
            let found = index.get(rel).map(|e| e.rel.to_vec());
            assert_eq!(found, live.then(|| rel.to_vec()), "get {rel:?}");
            let found = index
                .get_ascending(rel, &mut cursor)
                .map(|e| e.rel.to_vec());
            assert_eq!(found, live.then(|| rel.to_vec()), "get_ascending {rel:?}");
        }
    }

    #[test]
    fn documents_are_found_by_path_sorted_base_or_not() {
        let sorted = TEXTS.to_vec();
        let mut unsorted = TEXTS.to_vec();
        unsorted.reverse();
        for texts in [sorted, unsorted] {
            let (contents, postings) = built(&texts);
            let mut index = LiveIndex::from_memory(contents, postings);
            let all = [
                ("0.txt", false),
                ("a.txt", true),
                ("b.txt", false),
                ("c.md", true),
                ("src/b.rs", true),
                ("src/d.rs", true),
                ("zz", false),
            ];
            check_lookups(&index, &all);
            // Removed, removed twice, then added again; a new path after the base.
            assert!(index.remove(b"c.md"));
            assert!(!index.remove(b"c.md"));
            assert!(!index.remove(b"b.txt"));
            check_lookups(&index, &[("a.txt", true), ("c.md", false)]);
            index.upsert(b"c.md", meta(), Indexed::Always, &[]);
            index.upsert(b"b.txt", meta(), Indexed::Always, &[]);
            let again = [
                ("a.txt", true),
                ("b.txt", true),
                ("c.md", true),
                ("src/b.rs", true),
            ];
            check_lookups(&index, &again);
            assert_eq!(index.get(b"c.md").unwrap().indexed, Indexed::Always);
            index.remove_under(b"src");
            check_lookups(&index, &[("src/b.rs", false), ("src/d.rs", false)]);
            assert_eq!(index.len(), 3);
        }
    }

    #[test]
    fn damaged_files_are_refused_with_the_reason() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index");
        let (contents, postings) = built(TEXTS);
        save(&path, &contents, &postings).unwrap();
        let good = std::fs::read(&path).unwrap();
        let reason = |bytes: &[u8]| {
            std::fs::write(&path, bytes).unwrap();
            IndexFile::open(&path).unwrap_err().to_string()
        };
        assert!(reason(&good[..good.len() - 1]).contains("truncated"));
        assert!(reason(&good[..50]).contains("shorter than its header"));
        let mut flipped = good.clone();
        let last = flipped.len() - 1;
        flipped[last] ^= 1;
        assert!(reason(&flipped).contains("body checksum"));
        let mut other = good.clone();
        other[8] = 9;
        assert!(reason(&other).contains("version 9"));
        let mut header = good.clone();
        header[12] ^= 1;
        assert!(reason(&header).contains("header checksum"));
        assert!(reason(&[b'x'; 200]).contains("not an index"));
        // Whatever is cut, the file is refused, never trusted.
        for cut in (0..good.len()).step_by(7) {
            std::fs::write(&path, &good[..cut]).unwrap();
            assert!(IndexFile::open(&path).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn documents_come_newest_first_then_by_path() {
        let (mut contents, postings) = built(TEXTS);
        let at = |s: u64| SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(s);
        contents.docs[0].meta.mtime = at(5);
        contents.docs[1].meta.mtime = at(9);
        contents.docs[2].meta.mtime = at(5);
        contents.docs[3].meta.mtime = at(1);
        let mut index = LiveIndex::from_memory(contents, postings);
        let order = |index: &LiveIndex, scope: &[u8]| -> Vec<String> {
            index
                .newest_first(scope)
                .map(|(_, e)| String::from_utf8_lossy(&e.rel).into_owned())
                .collect()
        };
        assert_eq!(
            order(&index, b""),
            ["c.md", "a.txt", "src/b.rs", "src/d.rs"]
        );
        let newest = DocMeta {
            mtime: at(7),
            ..meta()
        };
        index.upsert(b"src/d.rs", newest, Indexed::Grams, &[]);
        index.upsert(
            b"b0.txt",
            DocMeta {
                mtime: at(5),
                ..meta()
            },
            Indexed::Grams,
            &[],
        );
        assert_eq!(
            order(&index, b""),
            ["c.md", "src/d.rs", "a.txt", "b0.txt", "src/b.rs"]
        );
        assert_eq!(order(&index, b"src"), ["src/d.rs", "src/b.rs"]);
        let mut ids: Vec<u32> = index.newest_first(b"").map(|(id, _)| id).collect();
        ids.reverse();
        index.sort_newest_first(&mut ids);
        let again: Vec<u32> = index.newest_first(b"").map(|(id, _)| id).collect();
        assert_eq!(ids, again);
    }

    #[test]
    fn scopes() {
        assert!(within(b"src/a.rs", b"src"));
        assert!(within(b"src", b"src"));
        assert!(!within(b"srcx/a.rs", b"src"));
        assert!(within(b"anything", b""));
        assert_eq!(intersect(&[1, 3, 5, 7], &[3, 4, 7]), [3, 7]);
        assert_eq!(union(&[1, 5], &[2, 5, 9]), [1, 2, 5, 9]);
    }
}
