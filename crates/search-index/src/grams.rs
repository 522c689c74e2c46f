//! Trigrams over a 7-bit alphabet: every byte maps to a code (each printable ASCII
//! character its own, upper- and lower-case letters apart; control characters and the
//! bytes of non-ASCII text in a few shared codes), and a trigram is three codes, 21 bits.
//!
//! The shared codes keep the set of trigrams small enough for a 256 KiB bitmap, which is
//! what makes extraction about a nanosecond per byte. They only ever merge trigrams, so a
//! file that contains a string always contains the mapped trigrams of that string: the
//! index stays a superset, and the matcher decides. Case is kept, so that a query for
//! `PM_RESUME` does not read every file holding `pm_resume` or `Pm_Resume`; a
//! case-insensitive query asks for the case variants of its trigrams (`query.rs`).

/// A trigram: three byte codes, `c0 << 14 | c1 << 7 | c2`.
pub type Gram = u32;

/// How many trigrams there can be.
pub const GRAM_SPACE: usize = 1 << 21;

/// Codes of the bytes: see the module documentation.
static CODES: [u8; 256] = codes();

const fn codes() -> [u8; 256] {
    let mut table = [0u8; 256];
    let mut b = 0usize;
    while b < 256 {
        let byte = b as u8;
        table[b] = match byte {
            b'\t' => 1,
            b'\n' => 2,
            b'\r' => 3,
            // Other control characters and DEL share one code.
            0..=0x1f | 0x7f => 4,
            // Printable ASCII, each its own code: 95 codes, 5..=99.
            0x20..=0x7e => byte - 0x20 + 5,
            // The bytes of non-ASCII text: 28 shared codes, 100..=127.
            _ => 100 + (byte - 0x80) % 28,
        };
        b += 1;
    }
    table
}

/// The code of one byte.
#[inline]
pub fn code(byte: u8) -> u32 {
    u32::from(CODES[usize::from(byte)])
}

/// The trigram of three bytes.
#[inline]
pub fn gram(a: u8, b: u8, c: u8) -> Gram {
    code(a) << 14 | code(b) << 7 | code(c)
}

/// The trigrams of `bytes` (every window of three), in order, with repeats.
#[cfg(test)]
pub(crate) fn grams_of(bytes: &[u8]) -> impl Iterator<Item = Gram> + '_ {
    bytes.windows(3).map(|w| gram(w[0], w[1], w[2]))
}

/// Words of the bitmap of seen trigrams.
const SEEN_WORDS: usize = GRAM_SPACE / 64;

/// Bytes fed at a time: the trigrams new in them are gathered in a buffer this long.
const PIECE: usize = 4096;

/// Collects the distinct trigrams of one file's content, fed in pieces.
#[derive(Debug, Clone)]
pub struct Extractor {
    seen: Box<[u64; SEEN_WORDS]>,
    /// The distinct trigrams so far.
    grams: Vec<Gram>,
    /// Scratch the loop writes every trigram of a piece to, the new ones first.
    fresh: Box<[Gram; PIECE]>,
    window: u32,
    filled: u8,
}

impl Default for Extractor {
    fn default() -> Self {
        Self::new()
    }
}

impl Extractor {
    /// An empty extractor.
    pub fn new() -> Self {
        Extractor {
            seen: Box::new([0; SEEN_WORDS]),
            grams: Vec::new(),
            fresh: Box::new([0; PIECE]),
            window: 0,
            filled: 0,
        }
    }

    /// Feeds the next bytes of the current file.
    pub fn feed(&mut self, mut bytes: &[u8]) {
        // The first two bytes of a file only start the window.
        while self.filled < 2 {
            let Some((&b, rest)) = bytes.split_first() else {
                return;
            };
            self.window = (self.window << 7) | code(b);
            self.filled += 1;
            bytes = rest;
        }
        let mut window = u64::from(self.window);
        for piece in bytes.chunks(PIECE) {
            window = self.feed_piece(window, piece);
        }
        self.window = (window as u32) & (GRAM_SPACE - 1) as u32;
    }

    /// Feeds at most [`PIECE`] bytes after the window `window`; gives the window after them.
    #[inline]
    fn feed_piece(&mut self, mut window: u64, piece: &[u8]) -> u64 {
        // Without a branch on whether a trigram is new: every position writes its trigram
        // after the new ones and moves the end only when the bitmap had not seen it (a
        // mispredicted branch per new trigram cost a third of the time). The window is
        // not masked where it is carried from byte to byte: the mask sits off that chain.
        let seen = &mut *self.seen;
        let fresh = &mut *self.fresh;
        let mask = (GRAM_SPACE - 1) as u64;
        let mut n = 0usize;
        // The trigram is the window's low 21 bits: the word and bit are taken from the
        // window as it is, and the scratch gets its low 32 bits, masked when kept.
        let mut step = |window: u64| {
            let word = (window >> 6) as usize % SEEN_WORDS;
            let bit = 1u64 << (window & 63);
            let before = seen[word];
            seen[word] = before | bit;
            // `n` stays below the piece's length: it grows by at most one per byte.
            fresh[n % PIECE] = window as u32;
            n += usize::from(before & bit == 0);
        };
        let mut quads = piece.chunks_exact(4);
        for q in &mut quads {
            let c = |i: usize| u64::from(CODES[usize::from(q[i])]);
            window = (window << 7) | c(0);
            step(window);
            window = (window << 7) | c(1);
            step(window);
            window = (window << 7) | c(2);
            step(window);
            window = (window << 7) | c(3);
            step(window);
        }
        for &b in quads.remainder() {
            window = (window << 7) | u64::from(CODES[usize::from(b)]);
            step(window);
        }
        self.grams
            .extend(fresh[..n.min(PIECE)].iter().map(|&w| w & mask as u32));
        window
    }

    /// The distinct trigrams of the current file, in order of first appearance.
    pub fn grams(&self) -> &[Gram] {
        &self.grams
    }

    /// Forgets the current file (cost proportional to its distinct trigrams).
    pub fn reset(&mut self) {
        for &g in &self.grams {
            self.seen[(g >> 6) as usize % SEEN_WORDS] = 0;
        }
        self.grams.clear();
        self.window = 0;
        self.filled = 0;
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn every_printable_character_has_its_own_code_and_case_is_kept() {
        let printable: std::collections::BTreeSet<u32> = (0x20u8..=0x7e).map(code).collect();
        assert_eq!(printable.len(), 95);
        assert_eq!(printable.first(), Some(&5));
        assert_eq!(printable.last(), Some(&99));
        for (upper, lower) in (b'A'..=b'Z').zip(b'a'..=b'z') {
            assert_ne!(code(upper), code(lower), "{}", char::from(upper));
        }
        assert_ne!(gram(b'P', b'M', b'_'), gram(b'p', b'm', b'_'));
        assert!((0..=255u8).all(|b| code(b) < 128));
        assert_eq!(code(b'\n'), 2);
        assert_eq!(code(0), 4);
        assert_eq!(code(0x7f), 4);
        // Non-ASCII bytes share the codes above the printable ones, and use all of them.
        let high: std::collections::BTreeSet<u32> = (0x80..=0xffu8).map(code).collect();
        assert_eq!(high, (100..128).collect());
    }

    #[test]
    fn extraction_matches_a_set_over_many_pieces_of_every_size() {
        // Text with repeats near and far, longer than several scratch pieces.
        let mut state = 7u32;
        let bytes: Vec<u8> = (0..3 * PIECE + 1000)
            .map(|_| {
                state = state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                b"abcdeFGH \n\x01\xc3\xa9"[(state >> 16) as usize % 13]
            })
            .collect();
        let mut expected = Vec::new();
        let mut set = std::collections::HashSet::new();
        for g in grams_of(&bytes) {
            if set.insert(g) {
                expected.push(g);
            }
        }
        let mut x = Extractor::new();
        for split in [1, 2, 3, 1000, PIECE - 1, PIECE, PIECE + 1, bytes.len()] {
            for piece in bytes.chunks(split) {
                x.feed(piece);
            }
            assert_eq!(x.grams(), expected, "pieces of {split}");
            x.reset();
        }
    }

    #[test]
    fn extraction_is_distinct_and_continues_across_pieces() {
        let mut x = Extractor::new();
        x.feed(b"abcab");
        x.feed(b"cX");
        let got: Vec<Gram> = x.grams().to_vec();
        let expected = [
            gram(b'a', b'b', b'c'),
            gram(b'b', b'c', b'a'),
            gram(b'c', b'a', b'b'),
            gram(b'b', b'c', b'X'),
        ];
        assert!(!got.contains(&gram(b'b', b'c', b'x')));
        assert_eq!(got, expected);
        x.reset();
        assert!(x.grams().is_empty());
        x.feed(b"ab");
        assert!(x.grams().is_empty());
        x.feed(b"C");
        assert_eq!(x.grams(), [gram(b'a', b'b', b'C')]);
    }
}
