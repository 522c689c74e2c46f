//! Posting lists: for each trigram, the sorted ids of the documents that contain it.
//!
//! Built chunk by chunk ([`Postings::build`]): each thread reads 2,048 documents, collects
//! their distinct trigrams ([`Extractor`]) as `gram << 11 | local id` words, sorts the words
//! by trigram (a stable radix sort, so ids stay in order) and hands the chunk over; chunks
//! are appended in order to one growing list per trigram, as varint deltas. Stored lists
//! are either those deltas or, when smaller, a bitmap of the ids from the first one on.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};

use crate::grams::{Extractor, GRAM_SPACE, Gram};

/// Documents per chunk (local ids take 11 bits; trigrams the other 21).
const CHUNK: usize = 2048;
const LOCAL_BITS: u32 = 11;

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

/// One trigram's list while building: varint deltas and the last id.
#[derive(Debug, Default, Clone)]
struct Growing {
    bytes: Vec<u8>,
    last: u32,
    count: u32,
}

/// A sorted chunk's words and its ids that every query searches.
type Chunk = (Vec<u32>, Vec<u32>);
/// The next chunk to append, the chunks done and waiting, and the lists so far.
type Merge = (usize, Vec<Option<Chunk>>, Postings);

/// Posting lists held in memory.
#[derive(Debug)]
pub struct Postings {
    /// Slot of each trigram in `lists` plus one (0: none).
    slots: Vec<u32>,
    lists: Vec<(Gram, Growing)>,
    docs: u32,
    always: Vec<u32>,
}

impl Default for Postings {
    fn default() -> Self {
        Self::new()
    }
}

impl Postings {
    /// No documents yet.
    pub fn new() -> Self {
        Postings {
            slots: vec![0; GRAM_SPACE],
            lists: Vec::new(),
            docs: 0,
            always: Vec::new(),
        }
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
        self.lists.len()
    }

    /// Adds the ids `base + (w & local)` of `words` (ascending, above every id added
    /// before) to the list of `gram`.
    fn add_run(&mut self, gram: Gram, base: u32, words: &[u32], local: u32) {
        let Some(slot) = self.slots.get_mut(gram as usize) else {
            return;
        };
        if *slot == 0 {
            self.lists.push((gram, Growing::default()));
            *slot = u32::try_from(self.lists.len()).unwrap_or(u32::MAX);
        }
        let Some((_, list)) = self.lists.get_mut(*slot as usize - 1) else {
            return;
        };
        for &w in words {
            let id = base + (w & local);
            let delta = if list.count == 0 { id } else { id - list.last };
            push_varint(&mut list.bytes, u64::from(delta));
            list.last = id;
            list.count += 1;
        }
    }

    /// Appends one sorted chunk (`words` sorted by trigram, ids ascending within one) whose
    /// first id is `base`, covering `len` documents.
    fn append_chunk(&mut self, base: u32, len: usize, words: &[u32], always: &[u32]) {
        let local = (1u32 << LOCAL_BITS) - 1;
        let mut run = words;
        while let Some(&first) = run.first() {
            // One trigram's ids, found once.
            let gram = first >> LOCAL_BITS;
            let end = run
                .iter()
                .position(|w| w >> LOCAL_BITS != gram)
                .unwrap_or(run.len());
            let (ids, rest) = run.split_at(end);
            self.add_run(gram, base, ids, local);
            run = rest;
        }
        self.always.extend(always.iter().map(|l| base + l));
        self.docs = base + u32::try_from(len).unwrap_or(0);
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
        // Chunks done, waiting for their turn to be appended.
        let done: Mutex<Merge> = Mutex::new((0, vec![None; chunks], Postings::new()));
        let turn = Condvar::new();
        let work = || {
            let mut extractor = Extractor::new();
            let mut buf = Vec::new();
            let mut words: Vec<u32> = Vec::new();
            let mut scratch: Vec<u32> = Vec::new();
            loop {
                if stop.load(Ordering::Relaxed) {
                    return;
                }
                let c = next.fetch_add(1, Ordering::Relaxed);
                if c >= chunks {
                    return;
                }
                // A thread far ahead of the chunk to append next waits, so that finished
                // chunks do not pile up behind a slow one.
                let ahead = 2 * threads.max(1);
                let Ok(mut state) = done.lock() else { return };
                while c > state.0 + ahead {
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                    let Ok((next_state, _)) =
                        turn.wait_timeout(state, std::time::Duration::from_millis(20))
                    else {
                        return;
                    };
                    state = next_state;
                }
                drop(state);
                let first = c * CHUNK;
                let last = (first + CHUNK).min(count);
                words.clear();
                let mut always = Vec::new();
                for (local, id) in (first..last).enumerate() {
                    buf.clear();
                    let local = local as u32;
                    match read(id, &mut buf) {
                        Content::Text => {
                            extractor.feed(&buf);
                            words.extend(extractor.grams().iter().map(|g| g << LOCAL_BITS | local));
                            extractor.reset();
                        }
                        Content::Always => always.push(local),
                        Content::Skip => {}
                    }
                }
                radix_sort(&mut words, &mut scratch);
                let Ok(mut state) = done.lock() else { return };
                if let Some(slot) = state.1.get_mut(c) {
                    *slot = Some((std::mem::take(&mut words), always));
                }
                // Append every chunk whose turn has come, in order.
                loop {
                    let at = state.0;
                    let Some(Some((ready, always))) = state.1.get_mut(at).map(Option::take) else {
                        break;
                    };
                    let base = u32::try_from(at * CHUNK).unwrap_or(u32::MAX);
                    let len = (count - at * CHUNK).min(CHUNK);
                    state.2.append_chunk(base, len, &ready, &always);
                    state.0 += 1;
                    turn.notify_all();
                }
            }
        };
        std::thread::scope(|scope| {
            for _ in 1..threads.max(1) {
                scope.spawn(work);
            }
            work();
        });
        done.into_inner().map(|s| s.2).unwrap_or_default()
    }

    /// The sorted ids of `gram`'s list.
    pub fn ids(&self, gram: Gram) -> Vec<u32> {
        let Some(&slot) = self.slots.get(gram as usize) else {
            return Vec::new();
        };
        if slot == 0 {
            return Vec::new();
        }
        self.lists
            .get(slot as usize - 1)
            .map(|(_, l)| decode_deltas(&l.bytes, l.count))
            .unwrap_or_default()
    }

    /// The lists in trigram order: slots into `lists`.
    pub(crate) fn order(&self) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.lists.len()).collect();
        order.sort_unstable_by_key(|&i| self.lists[i].0);
        order
    }

    /// The trigram, count and stored size of the list in slot `i`.
    pub(crate) fn stored_size(&self, i: usize) -> Option<(Gram, u32, usize)> {
        let (gram, list) = self.lists.get(i)?;
        let first = read_varint(&list.bytes, &mut 0).and_then(|f| u32::try_from(f).ok());
        let size = match first {
            Some(first) if list.count > 0 => form(&list.bytes, first, list.last).1,
            _ => 1,
        };
        Some((*gram, list.count, size))
    }

    /// The stored form of the list in slot `i`.
    pub(crate) fn stored(&self, i: usize) -> Vec<u8> {
        self.lists
            .get(i)
            .map(|(_, l)| encode_list(&l.bytes, l.count))
            .unwrap_or_else(|| vec![DELTAS])
    }
}

/// Sorts words by their trigram (bits 11..32), stably: two passes of 11 and 10 bits.
fn radix_sort(words: &mut Vec<u32>, scratch: &mut Vec<u32>) {
    for (shift, bits) in [(LOCAL_BITS, 11u32), (LOCAL_BITS + 11, 10)] {
        let buckets = 1usize << bits;
        let mask = (buckets - 1) as u32;
        let mut counts = vec![0usize; buckets + 1];
        for &w in words.iter() {
            counts[((w >> shift) & mask) as usize + 1] += 1;
        }
        for i in 1..=buckets {
            counts[i] += counts[i - 1];
        }
        scratch.clear();
        scratch.resize(words.len(), 0);
        for &w in words.iter() {
            let b = ((w >> shift) & mask) as usize;
            scratch[counts[b]] = w;
            counts[b] += 1;
        }
        std::mem::swap(words, scratch);
    }
}

/// Decodes `count` varint deltas.
fn decode_deltas(bytes: &[u8], count: u32) -> Vec<u32> {
    let mut out = Vec::with_capacity(count as usize);
    let mut at = 0;
    let mut id = 0u32;
    for i in 0..count {
        let Some(d) = read_varint(bytes, &mut at) else {
            break;
        };
        let d = u32::try_from(d).unwrap_or(u32::MAX);
        id = if i == 0 { d } else { id.saturating_add(d) };
        out.push(id);
    }
    out
}

/// Kinds of stored list.
const DELTAS: u8 = 0;
const BITMAP: u8 = 1;

/// Which form a list of varint `deltas` from `first` to `last` is stored in, and its size
/// with the kind byte: the deltas, or (when smaller) the first id and a bitmap from it on.
fn form(deltas: &[u8], first: u32, last: u32) -> (u8, usize) {
    let mut head = Vec::new();
    push_varint(&mut head, u64::from(first));
    let bitmap = head.len() + ((last - first) / 8 + 1) as usize;
    if bitmap < deltas.len() {
        (BITMAP, 1 + bitmap)
    } else {
        (DELTAS, 1 + deltas.len())
    }
}

/// The stored form of a list given as varint deltas: a kind byte, then the deltas or (when
/// smaller) the first id as a varint and a bitmap of the ids from it on.
fn encode_list(deltas: &[u8], count: u32) -> Vec<u8> {
    let ids = decode_deltas(deltas, count);
    let (Some(&first), Some(&last)) = (ids.first(), ids.last()) else {
        return vec![DELTAS];
    };
    let bitmap_len = ((last - first) / 8 + 1) as usize;
    if form(deltas, first, last).0 == BITMAP {
        let mut out = Vec::with_capacity(bitmap_len + 6);
        out.push(BITMAP);
        push_varint(&mut out, u64::from(first));
        let start = out.len();
        out.resize(start + bitmap_len, 0);
        for id in ids {
            let bit = (id - first) as usize;
            out[start + bit / 8] |= 1 << (bit % 8);
        }
        out
    } else {
        let mut out = Vec::with_capacity(deltas.len() + 1);
        out.push(DELTAS);
        out.extend_from_slice(deltas);
        out
    }
}

/// Decodes a stored list of `count` ids; `None` when it is malformed.
pub(crate) fn decode_list(bytes: &[u8], count: u32) -> Option<Vec<u32>> {
    let (&kind, rest) = bytes.split_first()?;
    match kind {
        DELTAS => {
            let ids = decode_deltas(rest, count);
            (ids.len() == count as usize && ids.windows(2).all(|w| w[0] < w[1])).then_some(ids)
        }
        BITMAP => {
            let mut at = 0;
            let first = u32::try_from(read_varint(rest, &mut at)?).ok()?;
            let bits = rest.get(at..)?;
            let mut ids = Vec::with_capacity(count as usize);
            for (i, &byte) in bits.iter().enumerate() {
                let mut b = byte;
                while b != 0 {
                    let bit = b.trailing_zeros();
                    ids.push(first.checked_add(u32::try_from(i * 8).ok()? + bit)?);
                    b &= b - 1;
                }
            }
            (ids.len() == count as usize).then_some(ids)
        }
        _ => None,
    }
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
            let mut at = 0;
            assert_eq!(read_varint(&out, &mut at), Some(v));
            assert_eq!(at, out.len());
        }
        assert_eq!(read_varint(&[0x80], &mut 0), None);
    }

    #[test]
    fn lists_are_stored_as_deltas_or_bitmaps_and_read_back() {
        for ids in [
            vec![5u32],
            vec![0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16],
            vec![3, 1000, 100_000, 4_000_000],
            (0..5000).step_by(2).collect::<Vec<u32>>(),
        ] {
            let mut deltas = Vec::new();
            let mut last = 0;
            for (i, &id) in ids.iter().enumerate() {
                push_varint(&mut deltas, u64::from(if i == 0 { id } else { id - last }));
                last = id;
            }
            let count = ids.len() as u32;
            let stored = encode_list(&deltas, count);
            assert_eq!(decode_list(&stored, count), Some(ids.clone()));
            let (_, size) = form(&deltas, ids[0], ids[ids.len() - 1]);
            assert_eq!(stored.len(), size);
            assert!(stored.len() <= deltas.len() + 1);
        }
        assert_eq!(decode_list(&[7, 1], 1), None);
        assert_eq!(decode_list(&[DELTAS, 3, 0], 2), None, "ids must increase");
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
