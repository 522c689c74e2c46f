//! From a regular expression to the trigrams a file must contain for it to match: an AND/OR
//! tree of trigrams derived from the pattern's syntax tree (`regex-syntax`'s HIR), after
//! Russ Cox's "Regular Expression Matching with a Trigram Index".
//!
//! Each node of the tree gets an [`Info`]: the exact strings it matches when there are few
//! (`Literal`, small classes such as `[Kk\u{212A}]` from a case-insensitive letter, short
//! alternations), otherwise the strings its matches start and end with, plus a query that
//! every match satisfies. Concatenation crosses exact sets and adds the trigrams that span
//! the boundary between one part's suffixes and the next part's prefixes; alternation ORs;
//! a repetition that may match nothing knows nothing. Strings are kept as symbols: a byte's
//! code ([`crate::grams::code`]), or a letter in either case, which a class holding both
//! cases of an ASCII letter (`[Pp]`, or `p` case-insensitive) collapses to, so that a
//! case-insensitive literal stays one string. Only when a string becomes trigrams does
//! such a symbol expand: a trigram with letters in either case is the OR of its case
//! variants (the index keeps case). A pattern the index cannot narrow (`.`, `\w+`, a lone
//! short literal) gives [`GramQuery::All`].

use std::collections::BTreeSet;

use regex_syntax::hir::{Class, Hir, HirKind};

use crate::grams::{Gram, code};

/// Exact strings kept for one node, at most.
const MAX_EXACT: usize = 16;
/// Prefixes or suffixes kept for one node, at most.
const MAX_SET: usize = 16;
/// Characters of a class enumerated, at most (a larger class matches "any character").
const MAX_CLASS_CHARS: u32 = 64;
/// Branches of an OR kept, at most (a larger OR narrows too little to be worth reading).
const MAX_OR: usize = 64;

/// What a file must contain for a pattern to match in it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum GramQuery {
    /// Any file may match.
    All,
    /// No file can match.
    Nothing,
    /// The file contains this trigram.
    Gram(Gram),
    /// All of these hold.
    And(Vec<GramQuery>),
    /// One of these holds.
    Or(Vec<GramQuery>),
}

impl GramQuery {
    /// Both `self` and `other`.
    pub fn and(self, other: GramQuery) -> GramQuery {
        combine(self, other, true)
    }

    /// `self` or `other`.
    pub fn or(self, other: GramQuery) -> GramQuery {
        combine(self, other, false)
    }

    /// The trigrams the query names.
    pub fn grams(&self) -> BTreeSet<Gram> {
        let mut out = BTreeSet::new();
        self.collect(&mut out);
        out
    }

    fn collect(&self, out: &mut BTreeSet<Gram>) {
        match self {
            GramQuery::All | GramQuery::Nothing => {}
            GramQuery::Gram(g) => {
                out.insert(*g);
            }
            GramQuery::And(list) | GramQuery::Or(list) => {
                for q in list {
                    q.collect(out);
                }
            }
        }
    }
}

fn combine(a: GramQuery, b: GramQuery, and: bool) -> GramQuery {
    use GramQuery::{All, Nothing};
    let (absorbing, neutral) = if and { (Nothing, All) } else { (All, Nothing) };
    if a == absorbing || b == absorbing {
        return absorbing;
    }
    if a == neutral {
        return b;
    }
    if b == neutral {
        return a;
    }
    let mut list = Vec::new();
    for q in [a, b] {
        match (q, and) {
            (GramQuery::And(inner), true) | (GramQuery::Or(inner), false) => list.extend(inner),
            (q, _) => list.push(q),
        }
    }
    list.sort();
    list.dedup();
    if !and && list.len() > MAX_OR {
        return All;
    }
    match list.len() {
        1 => list.pop().unwrap_or(All),
        _ if and => GramQuery::And(list),
        _ => GramQuery::Or(list),
    }
}

/// A set of strings of byte codes.
type Set = BTreeSet<Vec<u8>>;

/// What is known of the strings one node of the pattern matches.
#[derive(Debug, Clone)]
struct Info {
    /// It may match the empty string.
    can_empty: bool,
    /// Every string it matches, when few.
    exact: Option<Set>,
    /// Every match starts with one of these (holds "" when nothing is known).
    prefix: Set,
    /// Every match ends with one of these.
    suffix: Set,
    /// Every match satisfies this.
    query: GramQuery,
}

fn set_of(strings: impl IntoIterator<Item = Vec<u8>>) -> Set {
    strings.into_iter().collect()
}

fn empty_string() -> Set {
    set_of([Vec::new()])
}

impl Info {
    fn exact(set: Set) -> Info {
        Info {
            can_empty: set.contains(&Vec::new()),
            exact: Some(set),
            prefix: Set::new(),
            suffix: Set::new(),
            query: GramQuery::All,
        }
    }

    /// Matches any one character (or anything at all, when `can_empty`).
    fn any(can_empty: bool) -> Info {
        Info {
            can_empty,
            exact: None,
            prefix: empty_string(),
            suffix: empty_string(),
            query: GramQuery::All,
        }
    }

    /// The same knowledge without exact strings: they become the prefixes and suffixes,
    /// and their trigrams join the query.
    fn inexact(mut self) -> Info {
        if let Some(set) = self.exact.take() {
            self.query = self.query.and(any_of(&set));
            self.prefix = set.clone();
            self.suffix = set;
        }
        self
    }

    /// Commits the prefixes and suffixes to the query and keeps them short (two codes are
    /// all that a trigram across a boundary needs of them), then few.
    fn simplify(mut self) -> Info {
        if let Some(set) = &self.exact {
            if set.len() > MAX_EXACT {
                return self.inexact().simplify();
            }
            return self;
        }
        self.query = self
            .query
            .and(any_of(&self.prefix))
            .and(any_of(&self.suffix));
        self.prefix = shorten(&self.prefix, true);
        self.suffix = shorten(&self.suffix, false);
        self
    }

    /// The query this knowledge amounts to.
    fn finish(self) -> GramQuery {
        match &self.exact {
            Some(set) => self.query.and(any_of(set)),
            None => self
                .query
                .and(any_of(&self.prefix))
                .and(any_of(&self.suffix)),
        }
    }
}

/// Keeps the first (`head`) or last two codes of each string, then fewer while there are too
/// many.
fn shorten(set: &Set, head: bool) -> Set {
    for keep in [2usize, 1, 0] {
        let cut: Set = set
            .iter()
            .map(|s| {
                if s.len() <= keep {
                    s.clone()
                } else if head {
                    s[..keep].to_vec()
                } else {
                    s[s.len() - keep..].to_vec()
                }
            })
            .collect();
        if cut.len() <= MAX_SET {
            return cut;
        }
    }
    empty_string()
}

/// One of the strings occurs: the OR over the strings of the AND of their trigrams. A string
/// shorter than a trigram says nothing; no string at all means no match.
fn any_of(set: &Set) -> GramQuery {
    if set.is_empty() {
        return GramQuery::Nothing;
    }
    if set.len() > MAX_OR || set.iter().any(|s| s.len() < 3) {
        return GramQuery::All;
    }
    set.iter().fold(GramQuery::Nothing, |acc, s| {
        // The AND of a string's trigrams, built at once (folding `and` one trigram at a time
        // sorts the growing list each time: quadratic in a long literal).
        let mut grams: Vec<GramQuery> = s.windows(3).map(trigram).collect();
        grams.sort();
        grams.dedup();
        let all = match grams.len() {
            1 => grams.pop().unwrap_or(GramQuery::All),
            _ => GramQuery::And(grams),
        };
        acc.or(all)
    })
}

/// The symbol of an ASCII letter in either case, for letters `a` to `z` (`FOLDED` plus the
/// letter's place in the alphabet); symbols below it are byte codes.
const FOLDED: u8 = 128;

/// The codes a symbol stands for: one, or a letter's two cases.
fn variants(symbol: u8) -> impl Iterator<Item = u32> {
    let (first, second) = match symbol.checked_sub(FOLDED) {
        Some(letter) => {
            let lower = b'a' + letter % 26;
            (code(lower), Some(code(lower.to_ascii_uppercase())))
        }
        None => (u32::from(symbol), None),
    };
    std::iter::once(first).chain(second)
}

/// The trigram of three symbols: one trigram, or the OR of the case variants of one with
/// letters in either case (up to eight).
fn trigram(w: &[u8]) -> GramQuery {
    let mut grams: Vec<GramQuery> = Vec::with_capacity(8);
    for a in variants(w[0]) {
        for b in variants(w[1]) {
            for c in variants(w[2]) {
                grams.push(GramQuery::Gram(a << 14 | b << 7 | c));
            }
        }
    }
    // Distinct already (the variants differ in case); sorted, as `combine` keeps lists.
    grams.sort();
    match grams.len() {
        1 => grams.pop().unwrap_or(GramQuery::All),
        _ => GramQuery::Or(grams),
    }
}

/// Every concatenation of a string of `a` with one of `b`, or `None` when too many.
fn cross(a: &Set, b: &Set, max: usize) -> Option<Set> {
    if a.len().saturating_mul(b.len()) > max {
        return None;
    }
    Some(
        a.iter()
            .flat_map(|x| {
                b.iter().map(move |y| {
                    let mut s = x.clone();
                    s.extend_from_slice(y);
                    s
                })
            })
            .collect(),
    )
}

fn concat(x: Info, y: Info) -> Info {
    let can_empty = x.can_empty && y.can_empty;
    if let (Some(a), Some(b)) = (&x.exact, &y.exact)
        && let Some(set) = cross(a, b, MAX_EXACT)
    {
        let mut info = Info::exact(set);
        info.query = x.query.and(y.query);
        info.can_empty = can_empty;
        return info;
    }
    let x_exact = x.exact.clone();
    let y_exact = y.exact.clone();
    let x = x.inexact();
    let y = y.inexact();
    let mut query = x.query.clone().and(y.query.clone());
    // A match holds one of x's suffixes right before one of y's prefixes.
    if let Some(boundary) = cross(&x.suffix, &y.prefix, MAX_OR) {
        query = query.and(any_of(&boundary));
    }
    let prefix = match &x_exact {
        Some(set) => cross(set, &y.prefix, MAX_SET * MAX_SET).unwrap_or_else(|| x.prefix.clone()),
        None => x.prefix.clone(),
    };
    let suffix = match &y_exact {
        Some(set) => cross(&x.suffix, set, MAX_SET * MAX_SET).unwrap_or_else(|| y.suffix.clone()),
        None => y.suffix.clone(),
    };
    Info {
        can_empty,
        exact: None,
        prefix,
        suffix,
        query,
    }
    .simplify()
}

fn alternate(x: Info, y: Info) -> Info {
    let can_empty = x.can_empty || y.can_empty;
    if let (Some(a), Some(b)) = (&x.exact, &y.exact) {
        let union: Set = a.union(b).cloned().collect();
        if union.len() <= MAX_EXACT {
            let mut info = Info::exact(union);
            info.query = x.query.or(y.query);
            info.can_empty = can_empty;
            return info;
        }
    }
    // Each side's prefixes and suffixes are committed to its own query before the OR: their
    // union alone would say less.
    let x = x.inexact().simplify();
    let y = y.inexact().simplify();
    Info {
        can_empty,
        exact: None,
        prefix: x.prefix.union(&y.prefix).cloned().collect(),
        suffix: x.suffix.union(&y.suffix).cloned().collect(),
        query: x.query.or(y.query),
    }
    .simplify()
}

/// The byte codes of `bytes`.
fn codes(bytes: &[u8]) -> Vec<u8> {
    // Codes are below 128: the conversion never fails.
    bytes
        .iter()
        .map(|&b| u8::try_from(code(b)).unwrap_or(0))
        .collect()
}

/// The strings of the characters of a class: their codes, except that an ASCII letter whose
/// two cases are both in the class is one symbol for either case.
fn class_strings(chars: &[&[u8]]) -> Set {
    let has = |b: u8| chars.iter().any(|c| **c == [b]);
    chars
        .iter()
        .map(|c| match c {
            [b] if b.is_ascii_alphabetic()
                && has(b.to_ascii_lowercase())
                && has(b.to_ascii_uppercase()) =>
            {
                vec![FOLDED + (b.to_ascii_lowercase() - b'a')]
            }
            _ => codes(c),
        })
        .collect()
}

fn class(class: &Class) -> Info {
    let count: u32 = match class {
        Class::Unicode(c) => c
            .ranges()
            .iter()
            .map(|r| u32::from(r.end()) - u32::from(r.start()) + 1)
            .sum(),
        Class::Bytes(c) => c
            .ranges()
            .iter()
            .map(|r| u32::from(r.end()) - u32::from(r.start()) + 1)
            .sum(),
    };
    if count > MAX_CLASS_CHARS {
        return Info::any(false);
    }
    let mut chars: Vec<Vec<u8>> = Vec::new();
    match class {
        Class::Unicode(c) => {
            let mut buf = [0u8; 4];
            for r in c.ranges() {
                for ch in r.start()..=r.end() {
                    chars.push(ch.encode_utf8(&mut buf).as_bytes().to_vec());
                }
            }
        }
        Class::Bytes(c) => {
            for r in c.ranges() {
                for b in r.start()..=r.end() {
                    chars.push(vec![b]);
                }
            }
        }
    }
    let chars: Vec<&[u8]> = chars.iter().map(Vec::as_slice).collect();
    let set = class_strings(&chars);
    if set.len() > MAX_EXACT {
        return Info::any(false);
    }
    // An empty class matches nothing: an empty exact set.
    Info::exact(set)
}

fn analyze(hir: &Hir) -> Info {
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => Info::exact(empty_string()),
        HirKind::Literal(lit) => Info::exact(set_of([codes(&lit.0)])),
        HirKind::Class(c) => class(c),
        HirKind::Capture(cap) => analyze(&cap.sub),
        HirKind::Repetition(rep) => {
            if rep.max == Some(0) {
                return Info::exact(empty_string());
            }
            let sub = analyze(&rep.sub);
            if rep.min == 0 {
                if rep.max == Some(1)
                    && let Some(mut set) = sub.exact
                {
                    set.insert(Vec::new());
                    if set.len() <= MAX_EXACT {
                        return Info::exact(set);
                    }
                }
                return Info::any(true);
            }
            let sub = sub.inexact().simplify();
            Info {
                can_empty: sub.can_empty,
                ..sub
            }
        }
        HirKind::Concat(parts) => {
            let mut parts = parts.iter().map(analyze);
            let first = parts.next().unwrap_or_else(|| Info::exact(empty_string()));
            parts.fold(first, concat)
        }
        HirKind::Alternation(parts) => {
            let mut parts = parts.iter().map(analyze);
            let first = parts.next().unwrap_or_else(|| Info::exact(Set::new()));
            parts.fold(first, alternate)
        }
    }
}

/// How a pattern is matched: the flags of Grep's matcher that change what it matches.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PatternOptions {
    /// `-i`: case-insensitive
    pub case_insensitive: bool,
    /// `.` matches line breaks and patterns span lines
    pub multiline: bool,
}

/// The trigrams a file must contain for `pattern` to match in it; [`GramQuery::All`] when
/// the pattern does not parse here (the matcher then decides, and reports the error).
pub fn query_for(pattern: &str, options: PatternOptions) -> GramQuery {
    let parsed = regex_syntax::ParserBuilder::new()
        .case_insensitive(options.case_insensitive)
        .multi_line(true)
        .dot_matches_new_line(options.multiline)
        .utf8(false)
        .build()
        .parse(pattern);
    match parsed {
        Ok(hir) => analyze(&hir).finish(),
        Err(_) => GramQuery::All,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::grams::gram;

    fn q(pattern: &str) -> GramQuery {
        query_for(pattern, PatternOptions::default())
    }

    fn all_of(text: &str) -> GramQuery {
        let b = text.as_bytes();
        b.windows(3).fold(GramQuery::All, |q, w| {
            q.and(GramQuery::Gram(gram(w[0], w[1], w[2])))
        })
    }

    /// Whether a text containing exactly the trigrams of `text` satisfies the query.
    fn satisfied(query: &GramQuery, text: &str) -> bool {
        let have: BTreeSet<Gram> = crate::grams::grams_of(text.as_bytes()).collect();
        fn eval(q: &GramQuery, have: &BTreeSet<Gram>) -> bool {
            match q {
                GramQuery::All => true,
                GramQuery::Nothing => false,
                GramQuery::Gram(g) => have.contains(g),
                GramQuery::And(l) => l.iter().all(|q| eval(q, have)),
                GramQuery::Or(l) => l.iter().any(|q| eval(q, have)),
            }
        }
        eval(query, &have)
    }

    fn insensitive(pattern: &str) -> GramQuery {
        query_for(
            pattern,
            PatternOptions {
                case_insensitive: true,
                ..Default::default()
            },
        )
    }

    /// The trigrams of `text` with its ASCII letters in either case: each an OR of variants.
    fn either_case(text: &str) -> GramQuery {
        let b = text.as_bytes();
        b.windows(3).fold(GramQuery::All, |q, w| {
            let cases = |c: u8| [c.to_ascii_lowercase(), c.to_ascii_uppercase()];
            let mut variants = GramQuery::Nothing;
            for x in cases(w[0]) {
                for y in cases(w[1]) {
                    for z in cases(w[2]) {
                        variants = variants.or(GramQuery::Gram(gram(x, y, z)));
                    }
                }
            }
            q.and(variants)
        })
    }

    /// Every spelling of `word` with its ASCII letters in upper or lower case.
    fn spellings(word: &str) -> Vec<String> {
        let letters = word.bytes().filter(u8::is_ascii_alphabetic).count();
        (0..1u32 << letters)
            .map(|mask| {
                let mut i = 0;
                word.chars()
                    .map(|c| {
                        if !c.is_ascii_alphabetic() {
                            return c;
                        }
                        i += 1;
                        if mask >> (i - 1) & 1 == 1 {
                            c.to_ascii_uppercase()
                        } else {
                            c.to_ascii_lowercase()
                        }
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn literals_need_all_their_trigrams_in_their_case() {
        assert_eq!(q("rcu_read_lock_bh"), all_of("rcu_read_lock_bh"));
        // Case is kept: upper case asks for upper-case trigrams only.
        let upper = q("PM_RESUME");
        assert_eq!(upper, all_of("PM_RESUME"));
        assert!(satisfied(&upper, "x PM_RESUME y"));
        assert!(!satisfied(&upper, "pm_resume"));
        assert!(!satisfied(&upper, "PM_Resume"));
    }

    #[test]
    fn case_insensitive_literals_ask_for_every_case_variant() {
        // `s` also matches `ſ` (U+017F), whose bytes are other codes, so the query is an OR
        // of both spellings, each trigram an OR of its case variants.
        let query = insensitive("pm_resume");
        assert_eq!(
            query,
            either_case("pm_resume").or(either_case("pm_re\u{17f}ume"))
        );
        assert_eq!(insensitive("PM_RESUME"), query);
        assert_eq!(q("(?i)pm_resume"), query);
        assert!(satisfied(&query, "pm_re\u{17f}ume"));
        assert!(!satisfied(&query, "pm_resum"));
        // Every spelling satisfies it: a variant left out fails here.
        for word in ["pm_resume", "abcd", "x_yz_w"] {
            let query = insensitive(word);
            for spelling in spellings(word) {
                assert!(satisfied(&query, &spelling), "{word} {spelling}");
            }
        }
        assert_eq!(spellings("ab_c").len(), 8);
    }

    #[test]
    fn a_class_of_both_cases_is_either_case() {
        let class = q("[Pp]m_resume");
        assert!(satisfied(&class, "pm_resume"));
        assert!(satisfied(&class, "Pm_resume"));
        assert!(!satisfied(&class, "pM_resume"));
        let first =
            GramQuery::Gram(gram(b'p', b'm', b'_')).or(GramQuery::Gram(gram(b'P', b'm', b'_')));
        assert_eq!(class, first.and(all_of("m_resume")));
        // One case of a letter is that case only.
        assert_eq!(q("[P]M_RESUME"), all_of("PM_RESUME"));
        assert_eq!(
            q("(?-u:[Aa])bc"),
            GramQuery::Gram(gram(b'a', b'b', b'c')).or(GramQuery::Gram(gram(b'A', b'b', b'c')))
        );
    }

    #[test]
    fn case_insensitive_letters_keep_their_unicode_variants() {
        // `k` case-insensitive is also the Kelvin sign U+212A (three non-ASCII bytes), and
        // `s` the long s U+017F: both spellings satisfy the query.
        let query = insensitive("kelvins");
        for text in [
            "kelvins",
            "KELVINS",
            "\u{212A}ELVIN\u{17f}",
            "KELVIN\u{17f}",
        ] {
            assert!(satisfied(&query, text), "{text}");
        }
        for spelling in spellings("kelvins") {
            assert!(satisfied(&query, &spelling), "{spelling}");
        }
        assert!(!satisfied(&query, "kelvi"));
        for spelling in spellings("elvins") {
            let text = format!("\u{212A}{spelling}");
            assert!(satisfied(&query, &text), "{text}");
        }
    }

    #[test]
    fn patterns_the_index_cannot_narrow() {
        for pattern in [
            ".", "\\w+", "ab", "a*", "(?s).*", "[a-z]+", "x|yz", "\\d{3}", "(",
        ] {
            assert_eq!(q(pattern), GramQuery::All, "{pattern}");
        }
        assert_eq!(q("[^\\x00-\\x{10FFFF}]"), GramQuery::Nothing);
    }

    #[test]
    fn alternations_and_classes() {
        assert_eq!(
            q("ERR_SYS|LINK_REQ"),
            all_of("ERR_SYS").or(all_of("LINK_REQ"))
        );
        assert_eq!(q("foo[ab]ar"), all_of("fooaar").or(all_of("foobar")));
        let anchored = q("^static int [a-z0-9_]+_probe\\(");
        assert_eq!(anchored, all_of("static int ").and(all_of("_probe(")));
        let spaced = q("struct\\s+page_pool\\b");
        assert_eq!(spaced, all_of("struct").and(all_of("page_pool")));
        let exported = q("EXPORT_SYMBOL_GPL\\(kmalloc");
        assert_eq!(exported, all_of("EXPORT_SYMBOL_GPL(kmalloc"));
    }

    #[test]
    fn queries_are_necessary_conditions() {
        // Every string the pattern matches satisfies its query.
        let cases: &[(&str, &[&str])] = &[
            ("ab(cd|ef)gh", &["abcdgh", "abefgh"]),
            ("a(bc)?de", &["ade", "abcde"]),
            ("x+yzw", &["xyzw", "xxxxyzw"]),
            ("(?i)straße", &["STRASSE straße", "Straße"]),
            ("(?i)k\\w{2}lvin", &["\u{212A}xxlvin", "KABLVIN"]),
            ("(?i)pm_resume", &["Pm_ReSuMe", "PM_RE\u{17f}UME"]),
            ("[Pp]m_[Rr]esume", &["Pm_Resume", "pm_resume"]),
            ("(?i)é[a-c]Q", &["ÉBq", "éaQ"]),
            ("foo.*bar", &["foo bar", "foobar", "fooxxxxbar"]),
            ("one \\d+\\nneedle", &["one 12\nneedle"]),
            ("[0-9a-f]{4}-zz", &["12ab-zz"]),
            ("colou?r", &["color", "colour"]),
            ("\\bint\\b", &["int"]),
        ];
        for (pattern, texts) in cases {
            let query = q(pattern);
            let re = regex::Regex::new(pattern).unwrap();
            for text in *texts {
                if re.is_match(text) {
                    assert!(satisfied(&query, text), "{pattern} {text:?} {query:?}");
                }
            }
        }
    }
}
