//! Unguessable ids: 128 bits from the operating system's random source, as hex. Session,
//! sub-agent and context ids name files and reach other sessions' state, so no one may
//! predict them from a process id or the time.

use std::fmt::Write as _;

/// 128 random bits as 32 lowercase hex digits.
pub fn unguessable_id() -> String {
    let bytes = random_bytes();
    bytes.iter().fold(String::with_capacity(32), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}

#[cfg(unix)]
fn random_bytes() -> [u8; 16] {
    let mut buf = [0u8; 16];
    let mut filled = 0;
    while filled < buf.len() {
        match rustix::rand::getrandom(&mut buf[filled..], rustix::rand::GetRandomFlags::empty()) {
            Ok(n) => filled += n,
            Err(rustix::io::Errno::INTR) => {}
            // No getrandom (a very old kernel): the kernel's pool through its device.
            Err(_) => return urandom().unwrap_or_else(fallback),
        }
    }
    buf
}

#[cfg(unix)]
fn urandom() -> Option<[u8; 16]> {
    use std::io::Read;
    let mut buf = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut buf))
        .ok()?;
    Some(buf)
}

#[cfg(not(unix))]
fn random_bytes() -> [u8; 16] {
    fallback()
}

/// The standard library's randomly keyed hasher over the time and a counter: keys drawn
/// from the operating system once per process, so the output is not predictable from
/// outside it.
fn fallback() -> [u8; 16] {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let mut out = [0u8; 16];
    for half in out.chunks_mut(8) {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(N.fetch_add(1, Ordering::Relaxed));
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        h.write_u128(nanos);
        half.copy_from_slice(&h.finish().to_le_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_long_hex_and_distinct() {
        let ids: std::collections::BTreeSet<String> = (0..100).map(|_| unguessable_id()).collect();
        assert_eq!(ids.len(), 100);
        assert!(
            ids.iter()
                .all(|id| id.len() == 32 && id.chars().all(|c| c.is_ascii_hexdigit()))
        );
        assert_ne!(fallback(), fallback());
    }
}
