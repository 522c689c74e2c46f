//! The fetch cache: 15 minutes, 50 MB, least recently used first out, keyed by the URL the
//! model asked for. One cache per session (it lives in the context's services), so a page
//! fetched under one session's settings is never served under another's.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tool_core::ToolContext;

/// How long an entry lives.
pub const TTL: Duration = Duration::from_secs(15 * 60);
/// The most bytes of content kept.
pub const MAX_BYTES: usize = 50 * 1024 * 1024;

/// A processed fetch, before the prompt is applied.
#[derive(Debug, Clone, PartialEq)]
pub struct CachedPage {
    /// The URL the content came from
    pub url: String,
    /// The HTTP status
    pub code: u16,
    /// Its reason phrase
    pub code_text: String,
    /// The body size in bytes
    pub bytes: usize,
    /// The media type
    pub media_type: String,
    /// The content the model gets (Markdown, text, or a note about a saved binary body)
    pub content: String,
    /// Whether the content is a note about a binary body (no summariser applies)
    pub binary: bool,
}

impl CachedPage {
    fn size(&self) -> usize {
        self.content.len() + self.url.len() + 64
    }
}

#[derive(Debug)]
struct Entry {
    page: Arc<CachedPage>,
    stored: Instant,
    used: u64,
}

#[derive(Debug, Default)]
struct Inner {
    entries: HashMap<String, Entry>,
    bytes: usize,
    clock: u64,
}

/// The cache.
#[derive(Debug, Default)]
pub struct FetchCache {
    inner: Mutex<Inner>,
}
impl tool_core::ServiceType for FetchCache {}

impl FetchCache {
    /// The session's cache, created on first use.
    pub fn of(ctx: &ToolContext) -> Arc<FetchCache> {
        ctx.services()
            .get_or_insert_with(|| Arc::new(FetchCache::default()))
    }

    /// The fresh entry for `key`.
    pub fn get(&self, key: &str) -> Option<Arc<CachedPage>> {
        self.get_at(key, Instant::now())
    }

    fn get_at(&self, key: &str, now: Instant) -> Option<Arc<CachedPage>> {
        let mut inner = self.inner.lock().ok()?;
        inner.clock += 1;
        let clock = inner.clock;
        let expired = match inner.entries.get_mut(key) {
            None => return None,
            Some(e) if now.duration_since(e.stored) < TTL => {
                e.used = clock;
                return Some(Arc::clone(&e.page));
            }
            Some(_) => true,
        };
        if expired && let Some(e) = inner.entries.remove(key) {
            inner.bytes -= e.page.size();
        }
        None
    }

    /// Stores `page` under `key`, evicting expired and then least recently used entries to
    /// stay under `MAX_BYTES`. A page larger than the whole cache is not stored.
    pub fn put(&self, key: &str, page: CachedPage) {
        self.put_at(key, page, Instant::now());
    }

    fn put_at(&self, key: &str, page: CachedPage, now: Instant) {
        let size = page.size();
        if size > MAX_BYTES {
            return;
        }
        let Ok(mut inner) = self.inner.lock() else {
            return;
        };
        if let Some(old) = inner.entries.remove(key) {
            inner.bytes -= old.page.size();
        }
        let expired: Vec<String> = inner
            .entries
            .iter()
            .filter(|(_, e)| now.duration_since(e.stored) >= TTL)
            .map(|(k, _)| k.clone())
            .collect();
        for k in expired {
            if let Some(e) = inner.entries.remove(&k) {
                inner.bytes -= e.page.size();
            }
        }
        while inner.bytes + size > MAX_BYTES {
            let Some(oldest) = inner
                .entries
                .iter()
                .min_by_key(|(_, e)| e.used)
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            if let Some(e) = inner.entries.remove(&oldest) {
                inner.bytes -= e.page.size();
            }
        }
        inner.clock += 1;
        let used = inner.clock;
        inner.bytes += size;
        inner.entries.insert(
            key.to_owned(),
            Entry {
                page: Arc::new(page),
                stored: now,
                used,
            },
        );
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.inner.lock().map(|i| i.entries.len()).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn concurrent_first_uses_get_one_cache() {
        const THREADS: usize = 16;
        let dir = std::env::temp_dir();
        let ctx = ToolContext::builder(&dir).state_dir(&dir).build();
        let barrier = std::sync::Barrier::new(THREADS);
        let caches: Vec<Arc<FetchCache>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..THREADS)
                .map(|_| {
                    scope.spawn(|| {
                        barrier.wait();
                        FetchCache::of(&ctx)
                    })
                })
                .collect();
            handles.into_iter().filter_map(|h| h.join().ok()).collect()
        });
        assert_eq!(caches.len(), THREADS);
        assert!(caches.iter().all(|c| Arc::ptr_eq(c, &caches[0])));
    }

    fn page(content_len: usize) -> CachedPage {
        CachedPage {
            url: "u".into(),
            code: 200,
            code_text: "OK".into(),
            bytes: content_len,
            media_type: "text/plain".into(),
            content: "x".repeat(content_len),
            binary: false,
        }
    }

    #[test]
    fn entries_expire_after_the_ttl() {
        let cache = FetchCache::default();
        let t0 = Instant::now();
        cache.put_at("a", page(10), t0);
        assert!(cache.get_at("a", t0 + Duration::from_secs(60)).is_some());
        assert!(cache.get_at("a", t0 + TTL).is_none());
        assert_eq!(cache.len(), 0);
    }

    #[test]
    fn least_recently_used_goes_first() {
        let cache = FetchCache::default();
        let t0 = Instant::now();
        let big = MAX_BYTES / 3;
        cache.put_at("a", page(big), t0);
        cache.put_at("b", page(big), t0);
        assert!(cache.get_at("a", t0).is_some());
        cache.put_at("c", page(big), t0);
        // a, b and c do not fit with the overhead: b, the least recently used, went.
        assert!(cache.get_at("b", t0).is_none());
        assert!(cache.get_at("a", t0).is_some());
        assert!(cache.get_at("c", t0).is_some());
        cache.put_at("huge", page(MAX_BYTES + 1), t0);
        assert!(cache.get_at("huge", t0).is_none());
    }
}
