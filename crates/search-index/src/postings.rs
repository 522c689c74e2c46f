//! Posting lists: for each trigram, the sorted ids of the documents that contain it.
//!
//! Built chunk by chunk ([`Postings::build`]), 2,048 documents to a chunk, on every thread
//! at once: a thread reads a chunk's documents, collects each one's distinct trigrams
//! ([`Extractor`]) into 256 buckets by their high bits (the ids arrive in order), sorts
//! each bucket by the trigrams' low bits with a counting sort that stays in cache (stable,
//! so the ids stay in order) and encodes the chunk's lists. A chunk is kept where its ids
//! say, whichever thread built it and whenever, so the result never depends on timing;
//! nothing is merged while building.
//!
//! A stored list is the concatenation, in id order, of its blocks: one per chunk that holds
//! the trigram — the chunks skipped since the previous block, the ids in this one and the
//! block's kind (varints), then the ids within the chunk as varint deltas or, when smaller,
//! a 256-byte bitmap of the chunk. Saving copies the chunks' blocks in trigram order.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::grams::{Extractor, GRAM_SPACE, Gram};

/// Documents per chunk (ids within a chunk take 11 bits).
const CHUNK: usize = 2048;
const LOCAL_BITS: u32 = 11;
const LOCAL_MASK: u32 = (1 << LOCAL_BITS) - 1;
/// Bytes of a block's bitmap.
const BITMAP_BYTES: usize = CHUNK / 8;
/// Trigram bits sorted within a bucket; the others choose the bucket.
const LOW_BITS: u32 = 13;
const LOW_MASK: u32 = (1 << LOW_BITS) - 1;
const BUCKETS: usize = GRAM_SPACE >> LOW_BITS;
/// Counters of a bucket's sort: one per value of the low bits.
const COUNTS: usize = 1 << LOW_BITS;
/// Every this many lists of a chunk, where one starts is noted (lookups in memory).
const SAMPLE: u32 = 64;

/// Kinds of block (the low bit of its head).
const DELTAS: u64 = 0;
const BITMAP: u64 = 1;

/// What reading one document gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Content {
    /// The bytes to index were put in the buffer.
    Text,
    /// The document cannot be narrowed (a text encoding the matcher converts, or it could
    /// not be read now): it is a candidate for every query.
    Always,
    /// Nothing to index (not a file the search reads).
    Skip,
}

/// Appends `v` as a LEB128 varint.
pub(crate) fn push_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Bytes of `v` as a LEB128 varint.
fn varint_len(v: u64) -> usize {
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

/// Reads a LEB128 varint at `*at`.
pub(crate) fn read_varint(bytes: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    let mut shift = 0;
    loop {
        let b = *bytes.get(*at)?;
        *at += 1;
        v |= u64::from(b & 0x7f).checked_shl(shift)?;
        if b < 0x80 {
            return Some(v);
        }
        shift += 7;
        if shift > 63 {
            return None;
        }
    }
}

/// One chunk's lists in trigram order. Each: the trigram's distance from the previous one,
/// the block's head (`(ids - 1) << 1 | kind`), for deltas the payload's length (varints),
/// then the payload as stored.
#[derive(Debug, Default, Clone)]
struct ChunkLists {
    bytes: Vec<u8>,
    /// Every [`SAMPLE`]th list: its trigram, where it starts and the trigram before it.
    sample: Vec<(Gram, usize, Gram)>,
    lists: u32,
}

/// One chunk's list of one trigram, as read back.
#[derive(Debug, Clone, Copy)]
struct Part<'a> {
    gram: Gram,
    ids: u32,
    /// The head's varint bytes
    head: &'a [u8],
    payload: &'a [u8],
}

impl ChunkLists {
    /// Appends the list of `gram` (above every trigram added before): the local ids in
    /// `words`' low bits, ascending.
    fn push(&mut self, gram: Gram, previous: Gram, words: &[u32]) {
        if self.lists.is_multiple_of(SAMPLE) {
            self.sample.push((gram, self.bytes.len(), previous));
        }
        self.lists += 1;
        push_varint(&mut self.bytes, u64::from(gram - previous));
        let mut deltas = 0usize;
        let mut last = 0u32;
        for &w in words {
            let id = w & LOCAL_MASK;
            deltas += 1 + usize::from(id - last >= 0x80);
            last = id;
        }
        let n = words.len() as u64;
        // The head and length take at most 20 bytes.
        self.bytes.reserve(deltas.min(BITMAP_BYTES) + 20);
        if deltas > BITMAP_BYTES {
            push_varint(&mut self.bytes, (n - 1) << 1 | BITMAP);
            let start = self.bytes.len();
            self.bytes.resize(start + BITMAP_BYTES, 0);
            let bitmap = &mut self.bytes[start..];
            for &w in words {
                let id = (w & LOCAL_MASK) as usize;
                bitmap[id / 8] |= 1 << (id % 8);
            }
        } else {
            push_varint(&mut self.bytes, (n - 1) << 1 | DELTAS);
            push_varint(&mut self.bytes, deltas as u64);
            let mut last = 0u32;
            for &w in words {
                let id = w & LOCAL_MASK;
                push_varint(&mut self.bytes, u64::from(id - last));
                last = id;
            }
        }
    }

    /// The list at `*at`, whose previous trigram is `previous`; moves `*at` past it.
    fn part(&self, at: &mut usize, previous: Gram) -> Option<Part<'_>> {
        let bytes = &self.bytes;
        let gram = previous.checked_add(u32::try_from(read_varint(bytes, at)?).ok()?)?;
        let head_at = *at;
        let head = read_varint(bytes, at)?;
        let head_bytes = bytes.get(head_at..*at)?;
        let len = if head & 1 == BITMAP {
            BITMAP_BYTES
        } else {
            usize::try_from(read_varint(bytes, at)?).ok()?
        };
        let payload = bytes.get(*at..at.checked_add(len)?)?;
        *at += len;
        Some(Part {
            gram,
            ids: u32::try_from((head >> 1) + 1).ok()?,
            head: head_bytes,
            payload,
        })
    }

    /// This chunk's list of `gram`.
    fn find(&self, gram: Gram) -> Option<Part<'_>> {
        let i = self
            .sample
            .partition_point(|s| s.0 <= gram)
            .checked_sub(1)?;
        let &(_, mut at, mut previous) = self.sample.get(i)?;
        while at < self.bytes.len() {
            let part = self.part(&mut at, previous)?;
            if part.gram >= gram {
                return (part.gram == gram).then_some(part);
            }
            previous = part.gram;
        }
        None
    }
}

/// Reads a chunk's lists in trigram order.
struct Cursor<'a> {
    chunk: &'a ChunkLists,
    at: usize,
    current: Option<Part<'a>>,
}

impl<'a> Cursor<'a> {
    fn new(chunk: &'a ChunkLists) -> Self {
        let mut at = 0;
        let current = chunk.part(&mut at, 0);
        Cursor { chunk, at, current }
    }

    fn advance(&mut self) {
        let previous = self.current.map_or(0, |p| p.gram);
        self.current = if self.at < self.chunk.bytes.len() {
            self.chunk.part(&mut self.at, previous)
        } else {
            None
        };
    }
}

/// A chunk's lists and the local ids of its documents that every query searches.
type Built = (ChunkLists, Vec<u32>);

/// One thread's state while building chunks.
struct Worker {
    extractor: Extractor,
    buf: Vec<u8>,
    /// Per bucket (a trigram's high bits): `low bits << 11 | local id`, ids ascending.
    buckets: Box<[Vec<u32>; BUCKETS]>,
    sorted: Vec<u32>,
    counts: Box<[u32; COUNTS]>,
}

impl Worker {
    fn new() -> Self {
        Worker {
            extractor: Extractor::new(),
            buf: Vec::new(),
            buckets: Box::new(std::array::from_fn(|_| Vec::new())),
            sorted: Vec::new(),
            counts: Box::new([0; COUNTS]),
        }
    }

    /// Reads documents `first..last` and encodes their lists; also gives the local ids of
    /// those every query searches.
    fn chunk(
        &mut self,
        first: usize,
        last: usize,
        read: &(dyn Fn(usize, &mut Vec<u8>) -> Content + Sync),
    ) -> Built {
        let mut always = Vec::new();
        for (local, id) in (first..last).enumerate() {
            let local = local as u32;
            self.buf.clear();
            match read(id, &mut self.buf) {
                Content::Text => {
                    self.extractor.feed(&self.buf);
                    let buckets = &mut *self.buckets;
                    for &g in self.extractor.grams() {
                        buckets[(g >> LOW_BITS) as usize % BUCKETS]
                            .push((g & LOW_MASK) << LOCAL_BITS | local);
                    }
                    self.extractor.reset();
                }
                Content::Always => always.push(local),
                Content::Skip => {}
            }
        }
        // Room for the encoded lists at once, a byte per (document, trigram) pair: half of
        // it is used on source trees, less on dense chunks, more on sparse ones (growing a
        // few MiB by doubling, a copy each time, cost 3% of a build); what is not used is
        // never touched.
        let pairs: usize = self.buckets.iter().map(Vec::len).sum();
        let mut lists = ChunkLists {
            bytes: Vec::with_capacity(pairs + 4096),
            ..ChunkLists::default()
        };
        let mut previous = 0;
        for (high, bucket) in self.buckets.iter_mut().enumerate() {
            if bucket.is_empty() {
                continue;
            }
            // A stable counting sort by the low bits (each count then turned into where
            // its run starts, with the running total kept in a register).
            let counts = &mut *self.counts;
            counts.fill(0);
            for &w in bucket.iter() {
                counts[(w >> LOCAL_BITS) as usize % COUNTS] += 1;
            }
            let mut total = 0;
            for c in counts.iter_mut() {
                let n = *c;
                *c = total;
                total += n;
            }
            self.sorted.clear();
            self.sorted.resize(bucket.len(), 0);
            let sorted = &mut self.sorted[..];
            for &w in bucket.iter() {
                let slot = &mut counts[(w >> LOCAL_BITS) as usize % COUNTS];
                let at = *slot as usize;
                *slot += 1;
                if let Some(s) = sorted.get_mut(at) {
                    *s = w;
                }
            }
            let mut run = &self.sorted[..];
            while let Some(&first) = run.first() {
                let low = first >> LOCAL_BITS;
                let end = run
                    .iter()
                    .position(|w| w >> LOCAL_BITS != low)
                    .unwrap_or(run.len());
                let gram = (high as u32) << LOW_BITS | low;
                lists.push(gram, previous, &run[..end]);
                previous = gram;
                run = &run[end..];
            }
            // A bucket that held a huge chunk does not keep its memory.
            if bucket.capacity() > 1 << 20 {
                *bucket = Vec::new();
            } else {
                bucket.clear();
            }
        }
        (lists, always)
    }
}

/// Posting lists held in memory.
#[derive(Debug, Default)]
pub struct Postings {
    /// The chunks, in id order.
    chunks: Vec<ChunkLists>,
    docs: u32,
    always: Vec<u32>,
}

impl Postings {
    /// No documents yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Documents covered (ids `0..docs`).
    pub fn docs(&self) -> u32 {
        self.docs
    }

    /// Ids that are candidates for every query.
    pub fn always(&self) -> &[u32] {
        &self.always
    }

    /// Distinct trigrams.
    pub fn grams(&self) -> usize {
        let mut n = 0;
        self.merge(|_, _| n += 1);
        n
    }

    /// Builds the lists of `count` documents on `threads` threads; `read(id, buf)` puts a
    /// document's content in `buf` (cleared) and says what it is. Stops early (with the
    /// documents read so far) when `stop` becomes true.
    pub fn build(
        count: usize,
        threads: usize,
        read: &(dyn Fn(usize, &mut Vec<u8>) -> Content + Sync),
        stop: &AtomicBool,
    ) -> Postings {
        let chunks = count.div_ceil(CHUNK);
        let next = AtomicUsize::new(0);
        let done: Mutex<Vec<Option<Built>>> = Mutex::new(vec![None; chunks]);
        let work = || {
            let mut worker = Worker::new();
            loop {
                if stop.load(Ordering::Relaxed) {
                    return;
                }
                let c = next.fetch_add(1, Ordering::Relaxed);
                if c >= chunks {
                    return;
                }
                let first = c * CHUNK;
                let built = worker.chunk(first, (first + CHUNK).min(count), read);
                let Ok(mut done) = done.lock() else { return };
                if let Some(slot) = done.get_mut(c) {
                    *slot = Some(built);
                }
            }
        };
        std::thread::scope(|scope| {
            for _ in 1..threads.max(1) {
                scope.spawn(work);
            }
            work();
        });
        // The chunks finished from the first on (all of them unless stopped).
        let mut postings = Postings::new();
        for (c, chunk) in done
            .into_inner()
            .unwrap_or_default()
            .into_iter()
            .enumerate()
        {
            let Some((lists, always)) = chunk else { break };
            let base = u32::try_from(c * CHUNK).unwrap_or(u32::MAX);
            postings.chunks.push(lists);
            postings.always.extend(always.iter().map(|l| base + l));
            postings.docs = u32::try_from((c * CHUNK + CHUNK).min(count)).unwrap_or(u32::MAX);
        }
        postings
    }

    /// The sorted ids of `gram`'s list.
    pub fn ids(&self, gram: Gram) -> Vec<u32> {
        let mut out = Vec::new();
        for (c, chunk) in self.chunks.iter().enumerate() {
            if let Some(part) = chunk.find(gram) {
                let base = u32::try_from(c * CHUNK).unwrap_or(u32::MAX);
                let head = read_varint(part.head, &mut 0).unwrap_or(0);
                decode_block(head, part.payload, base, &mut out);
            }
        }
        out
    }

    /// Calls `f` with each trigram, in order, and its chunks' parts (with their chunk).
    fn merge(&self, mut f: impl FnMut(Gram, &[(u32, Part<'_>)])) {
        let mut cursors: Vec<Cursor<'_>> = self.chunks.iter().map(Cursor::new).collect();
        let mut parts = Vec::with_capacity(cursors.len());
        loop {
            let Some(gram) = cursors
                .iter()
                .filter_map(|c| c.current.map(|p| p.gram))
                .min()
            else {
                return;
            };
            parts.clear();
            for (c, cursor) in cursors.iter_mut().enumerate() {
                if let Some(part) = cursor.current
                    && part.gram == gram
                {
                    parts.push((c as u32, part));
                    cursor.advance();
                }
            }
            f(gram, &parts);
        }
    }

    /// The stored lists' directory in trigram order: trigram, ids, stored size.
    pub(crate) fn directory(&self) -> Vec<(Gram, u32, usize)> {
        let mut out = Vec::new();
        self.merge(|gram, parts| {
            let mut size = 0;
            let mut count = 0u32;
            let mut next = 0u32;
            for (c, part) in parts {
                size += varint_len(u64::from(c - next)) + part.head.len() + part.payload.len();
                count = count.saturating_add(part.ids);
                next = c + 1;
            }
            out.push((gram, count, size));
        });
        out
    }

    /// Calls `f` with each stored list, in trigram order (the directory's); stops at the
    /// first error.
    pub(crate) fn for_each_stored<E>(
        &self,
        mut f: impl FnMut(&[u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut result = Ok(());
        let mut list = Vec::new();
        self.merge(|_, parts| {
            if result.is_err() {
                return;
            }
            list.clear();
            let mut next = 0u32;
            for (c, part) in parts {
                push_varint(&mut list, u64::from(c - next));
                // The head, then the payload (deltas carry no length: their count says
                // where they end).
                list.extend_from_slice(part.head);
                list.extend_from_slice(part.payload);
                next = c + 1;
            }
            result = f(&list);
        });
        result
    }
}

/// Appends the ids of a block (`head` as stored, `payload` its ids) of the chunk starting
/// at `base`; `None` when it is malformed.
fn decode_block(head: u64, payload: &[u8], base: u32, out: &mut Vec<u32>) -> Option<()> {
    let n = usize::try_from((head >> 1) + 1).ok()?;
    let start = out.len();
    if head & 1 == BITMAP {
        for (i, &byte) in payload.iter().enumerate() {
            let mut b = byte;
            while b != 0 {
                let bit = b.trailing_zeros() as usize;
                out.push(base.checked_add(u32::try_from(i * 8 + bit).ok()?)?);
                b &= b - 1;
            }
        }
    } else {
        let mut at = 0;
        let mut id = 0u64;
        for i in 0..n {
            let d = read_varint(payload, &mut at)?;
            if i > 0 && d == 0 {
                return None;
            }
            id = id.checked_add(d)?;
            if id >= CHUNK as u64 {
                return None;
            }
            out.push(base.checked_add(u32::try_from(id).ok()?)?);
        }
        if at != payload.len() {
            return None;
        }
    }
    (out.len() - start == n).then_some(())
}

/// Decodes a stored list of `count` ids; `None` when it is malformed.
pub(crate) fn decode_list(bytes: &[u8], count: u32) -> Option<Vec<u32>> {
    let mut ids = Vec::with_capacity(count as usize);
    let mut at = 0;
    let mut chunk = 0u64;
    while at < bytes.len() {
        chunk = chunk.checked_add(read_varint(bytes, &mut at)?)?;
        let head = read_varint(bytes, &mut at)?;
        let n = (head >> 1) + 1;
        let len = if head & 1 == BITMAP {
            BITMAP_BYTES
        } else {
            // Deltas: n varints.
            let mut end = at;
            for _ in 0..n {
                read_varint(bytes, &mut end)?;
            }
            end - at
        };
        let payload = bytes.get(at..at.checked_add(len)?)?;
        let base = u32::try_from(chunk.checked_mul(CHUNK as u64)?).ok()?;
        decode_block(head, payload, base, &mut ids)?;
        at += len;
        if ids.len() > count as usize {
            return None;
        }
        chunk += 1;
    }
    (ids.len() == count as usize).then_some(ids)
}
#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::grams::gram;

    #[test]
    fn varints_round_trip() {
        let mut out = Vec::new();
        for v in [0u64, 1, 127, 128, 300, u64::from(u32::MAX), u64::MAX] {
            out.clear();
            push_varint(&mut out, v);
            assert_eq!(varint_len(v), out.len());
            let mut at = 0;
            assert_eq!(read_varint(&out, &mut at), Some(v));
            assert_eq!(at, out.len());
        }
        assert_eq!(read_varint(&[0x80], &mut 0), None);
    }

    /// The lists of documents that hold "needle" when `has(id)`, "other" otherwise.
    fn built(count: usize, has: impl Fn(usize) -> bool + Sync) -> Postings {
        let read = |id: usize, buf: &mut Vec<u8>| {
            buf.extend_from_slice(if has(id) { b"needle" } else { b"other" });
            Content::Text
        };
        Postings::build(count, 2, &read, &AtomicBool::new(false))
    }

    /// Every stored list, as the file holds it: trigram, count, bytes.
    fn stored(p: &Postings) -> Vec<(Gram, u32, Vec<u8>)> {
        let directory = p.directory();
        let mut lists = Vec::new();
        p.for_each_stored(|l| {
            lists.push(l.to_vec());
            Ok::<(), ()>(())
        })
        .unwrap();
        assert_eq!(lists.len(), directory.len());
        directory
            .into_iter()
            .zip(lists)
            .map(|((gram, count, size), list)| {
                assert_eq!(list.len(), size);
                (gram, count, list)
            })
            .collect()
    }

    #[test]
    fn lists_are_stored_as_deltas_or_bitmaps_per_chunk_and_read_back() {
        let needle = gram(b'n', b'e', b'e');
        let cases: Vec<Vec<u32>> = vec![
            vec![5],
            vec![0, 1, 2, 3, 2047, 2048, 2049],
            vec![3, 1000, 5000, 9000],
            (0..9000).step_by(2).collect(),
            (0..9000).filter(|i| i % 7 != 3 && i / 2048 != 2).collect(),
        ];
        for ids in cases {
            let p = built(9001, |id| ids.binary_search(&(id as u32)).is_ok());
            assert_eq!(p.ids(needle), ids);
            let lists = stored(&p);
            assert!(lists.windows(2).all(|w| w[0].0 < w[1].0));
            let (_, count, list) = lists.iter().find(|l| l.0 == needle).unwrap();
            assert_eq!(decode_list(list, *count), Some(ids.clone()));
            // A dense list takes a bitmap per chunk: about a bit per document.
            if ids.len() > 4000 {
                assert!(list.len() <= 5 * 260, "{} bytes", list.len());
            }
            // The other documents' list, and the trigrams both hold.
            let other: Vec<u32> = (0..9001)
                .filter(|i| ids.binary_search(i).is_err())
                .collect();
            assert_eq!(p.ids(gram(b'o', b't', b'h')), other);
            assert_eq!(p.ids(gram(b'x', b'y', b'z')), Vec::<u32>::new());
            for (g, count, list) in &lists {
                assert_eq!(decode_list(list, *count), Some(p.ids(*g)));
            }
        }
    }

    #[test]
    fn malformed_lists_are_refused() {
        let ok = |bytes: &[u8], count| decode_list(bytes, count);
        // Chunk 0, two ids (head 1 << 1), deltas 3 and 4: ids 3 and 7.
        assert_eq!(ok(&[0, 2, 3, 4], 2), Some(vec![3, 7]));
        // Chunk 1 after chunk 0 (gap 0), then chunk 3 (gap 1).
        assert_eq!(
            ok(&[0, 0, 5, 0, 0, 6, 1, 0, 1], 3),
            Some(vec![5, 2054, 6145])
        );
        assert_eq!(ok(&[0, 2, 3, 4], 3), None, "fewer ids than counted");
        assert_eq!(ok(&[0, 2, 3, 0], 2), None, "ids must increase");
        assert_eq!(ok(&[0, 0, 0x80, 0x10], 1), None, "an id past the chunk");
        assert_eq!(ok(&[0, 2, 3], 2), None, "cut short");
        assert_eq!(ok(&[0, 1, 0, 0], 1), None, "a bitmap cut short");
        let mut bitmap = vec![0, 1 << 1 | 1];
        bitmap.extend([0u8; BITMAP_BYTES]);
        bitmap[2] = 0b101;
        assert_eq!(ok(&bitmap, 2), Some(vec![0, 2]));
        bitmap[2] = 0b111;
        assert_eq!(
            ok(&bitmap, 3),
            None,
            "a bitmap must hold as many ids as its head says"
        );
        assert_eq!(ok(&[0xff; 12], 1), None);
    }

    #[test]
    fn building_in_chunks_on_threads_gives_the_lists_of_the_documents() {
        let docs: Vec<String> = (0..2500)
            .map(|i| {
                format!(
                    "doc {i} common {} end",
                    if i % 3 == 0 { "fizz" } else { "buzz" }
                )
            })
            .collect();
        let read = |id: usize, buf: &mut Vec<u8>| {
            if id == 7 {
                return Content::Always;
            }
            if id == 8 {
                return Content::Skip;
            }
            buf.extend_from_slice(docs[id].as_bytes());
            Content::Text
        };
        let stop = AtomicBool::new(false);
        for threads in [1, 3] {
            let p = Postings::build(docs.len(), threads, &read, &stop);
            assert_eq!(p.docs(), 2500);
            assert_eq!(p.always(), [7]);
            let fizz = p.ids(gram(b'f', b'i', b'z'));
            let expected: Vec<u32> = (0..2500).step_by(3).collect();
            assert_eq!(fizz, expected);
            let common = p.ids(gram(b'c', b'o', b'm'));
            assert_eq!(common.len(), 2498);
            assert!(!common.contains(&7) && !common.contains(&8));
        }
    }
}
