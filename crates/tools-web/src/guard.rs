//! The SSRF guard: which addresses a fetch may connect to, a DNS resolver for reqwest that
//! checks every resolved address and hands reqwest only the checked ones (so the connection
//! goes to exactly what was vetted; there is no second lookup to rebind), and the check of
//! IP-literal hosts, which reqwest never sends through a resolver.

use std::collections::HashSet;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use async_trait::async_trait;
use url::{Host, Url};

/// Resolves host names to addresses. The default uses the system resolver; hosts (and tests)
/// may put their own in the context's services as `Arc<dyn HostLookup>`. Whatever it returns
/// is still checked by the guard.
#[async_trait]
pub trait HostLookup: Send + Sync {
    /// Every address of `host`.
    async fn lookup(&self, host: &str) -> std::io::Result<Vec<IpAddr>>;
}
impl tool_core::ServiceType for dyn HostLookup {}

/// The system resolver (`getaddrinfo` through tokio).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemLookup;

#[async_trait]
impl HostLookup for SystemLookup {
    async fn lookup(&self, host: &str) -> std::io::Result<Vec<IpAddr>> {
        let addrs = tokio::net::lookup_host((host, 0)).await?;
        Ok(addrs.map(|a| a.ip()).collect())
    }
}

/// Why the guard refused a host: carried as the resolver's error so the fetch can tell a
/// refusal from a network failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blocked {
    /// The host as written in the URL
    pub host: String,
    /// The address that is not allowed, when there is one
    pub addr: Option<IpAddr>,
    /// What kind of address it is
    pub reason: &'static str,
}

impl fmt::Display for Blocked {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let article = if self.reason.starts_with(['a', 'e', 'i', 'o', 'u', 'I']) {
            "an"
        } else {
            "a"
        };
        let literal = self.host.trim_matches(['[', ']']).parse::<IpAddr>().is_ok();
        match self.addr {
            Some(addr) if !literal => write!(
                f,
                "{} resolves to {addr}, {article} {} address",
                self.host, self.reason
            ),
            _ => write!(f, "{} is {article} {} address", self.host, self.reason),
        }
    }
}

impl std::error::Error for Blocked {}

/// Why `ip` is not a public address, or `None` when it is one. IPv6 forms that embed an IPv4
/// address (mapped, compatible, NAT64, 6to4) are judged by the embedded address.
pub fn non_public_reason(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => v4_reason(v4),
        IpAddr::V6(v6) => v6_reason(v6),
    }
}

fn v4_reason(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    let reason = match (a, b, c) {
        (0, _, _) => "unspecified (\"this network\")",
        (10, _, _) | (172, 16..=31, _) | (192, 168, _) => "private network",
        (100, 64..=127, _) => "shared (carrier-grade NAT)",
        (127, _, _) => "loopback",
        (169, 254, _) => "link-local (cloud metadata)",
        (192, 0, 0) => "IETF protocol",
        (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => "documentation",
        (198, 18..=19, _) => "benchmarking",
        (224..=239, _, _) => "multicast",
        (240..=255, _, _) => "reserved or broadcast",
        _ => return None,
    };
    Some(reason)
}

fn v6_reason(ip: Ipv6Addr) -> Option<&'static str> {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return v4_reason(v4).map(|_| "IPv4-mapped non-public");
    }
    let s = ip.segments();
    if ip.is_unspecified() {
        return Some("unspecified");
    }
    if ip.is_loopback() {
        return Some("loopback");
    }
    // ::a.b.c.d (IPv4-compatible, deprecated)
    if s[..6] == [0; 6] {
        return Some("IPv4-compatible");
    }
    // 64:ff9b::/96 (NAT64) embeds an IPv4 address in its last 32 bits.
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        let v4 = Ipv4Addr::new(
            (s[6] >> 8) as u8,
            (s[6] & 0xff) as u8,
            (s[7] >> 8) as u8,
            (s[7] & 0xff) as u8,
        );
        return v4_reason(v4).map(|_| "NAT64 non-public");
    }
    // 2002::/16 (6to4) embeds an IPv4 address in bits 16..48.
    if s[0] == 0x2002 {
        let v4 = Ipv4Addr::new(
            (s[1] >> 8) as u8,
            (s[1] & 0xff) as u8,
            (s[2] >> 8) as u8,
            (s[2] & 0xff) as u8,
        );
        return v4_reason(v4).map(|_| "6to4 non-public");
    }
    let reason = match s[0] {
        0x0064 if s[1] == 0xff9b => "local-use NAT64",
        0x0100 if s[1..4] == [0, 0, 0] => "discard-only",
        // Teredo tunnels reach arbitrary IPv4 hosts; refuse them outright.
        0x2001 if s[1] == 0 => "Teredo",
        0x2001 if s[1] == 0x0db8 => "documentation",
        x if x & 0xfe00 == 0xfc00 => "unique-local",
        x if x & 0xffc0 == 0xfe80 => "link-local",
        x if x & 0xffc0 == 0xfec0 => "site-local",
        x if x & 0xff00 == 0xff00 => "multicast",
        _ => return None,
    };
    Some(reason)
}

/// Host names that must never be fetched even before resolving them.
fn special_name(name: &str) -> Option<&'static str> {
    let name = name.trim_end_matches('.');
    if name == "localhost" || name.ends_with(".localhost") {
        Some("loopback")
    } else {
        None
    }
}

/// The hosts exempt from the guard (`webFetch.allowPrivateHosts`), compared lowercase,
/// without brackets or a trailing dot.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Exemptions(HashSet<String>);

impl Exemptions {
    /// Exemptions for these host names or addresses.
    pub fn new<I: IntoIterator<Item = S>, S: AsRef<str>>(hosts: I) -> Self {
        Exemptions(
            hosts
                .into_iter()
                .map(|h| normalize_host(h.as_ref()))
                .collect(),
        )
    }

    /// Whether `host` (as in a URL) is exempt.
    pub fn contains(&self, host: &str) -> bool {
        !self.0.is_empty() && self.0.contains(&normalize_host(host))
    }
}

/// A host as compared everywhere: lowercase, no IPv6 brackets, no trailing dot.
pub fn normalize_host(host: &str) -> String {
    host.trim()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .trim_end_matches('.')
        .to_ascii_lowercase()
}

/// Checks the host of `url` before any connection: IP literals (which the WHATWG parser has
/// already normalised, so `2130706433`, `0x7f.1` and `[::ffff:127.0.0.1]` arrive here as
/// loopback addresses) and names that are loopback by definition. Names are checked again,
/// address by address, when they are resolved.
pub fn check_url_host(url: &Url, exempt: &Exemptions) -> Result<(), Blocked> {
    let Some(host) = url.host() else {
        return Err(Blocked {
            host: String::new(),
            addr: None,
            reason: "missing",
        });
    };
    let shown = url.host_str().unwrap_or_default().to_owned();
    if exempt.contains(&shown) {
        return Ok(());
    }
    let (addr, reason) = match host {
        Host::Ipv4(v4) => (Some(IpAddr::V4(v4)), non_public_reason(IpAddr::V4(v4))),
        Host::Ipv6(v6) => (Some(IpAddr::V6(v6)), non_public_reason(IpAddr::V6(v6))),
        Host::Domain(name) => (None, special_name(&name.to_ascii_lowercase())),
    };
    match reason {
        Some(reason) => Err(Blocked {
            host: shown,
            addr,
            reason,
        }),
        None => Ok(()),
    }
}

/// Checks an address a connection actually went to (a last line of defence after the
/// resolver).
pub fn check_remote(host: &str, addr: SocketAddr, exempt: &Exemptions) -> Result<(), Blocked> {
    if exempt.contains(host) {
        return Ok(());
    }
    match non_public_reason(addr.ip()) {
        Some(reason) => Err(Blocked {
            host: host.to_owned(),
            addr: Some(addr.ip()),
            reason,
        }),
        None => Ok(()),
    }
}

/// The resolver reqwest uses for fetches: one lookup, every address checked, and only the
/// checked addresses returned, so reqwest connects to nothing else.
pub struct GuardResolver {
    lookup: Arc<dyn HostLookup>,
    exempt: Exemptions,
}

impl fmt::Debug for GuardResolver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GuardResolver")
            .field("exempt", &self.exempt)
            .finish_non_exhaustive()
    }
}

impl GuardResolver {
    /// A resolver using `lookup`, exempting `exempt`.
    pub fn new(lookup: Arc<dyn HostLookup>, exempt: Exemptions) -> Self {
        GuardResolver { lookup, exempt }
    }

    /// Resolves `host` and checks every answer: one non-public answer refuses the host
    /// (a name that resolves to both a public and a private address is refused).
    pub async fn resolve_checked(
        &self,
        host: &str,
    ) -> Result<Vec<IpAddr>, Box<dyn std::error::Error + Send + Sync>> {
        let exempt = self.exempt.contains(host);
        if !exempt && let Some(reason) = special_name(&host.to_ascii_lowercase()) {
            return Err(Box::new(Blocked {
                host: host.to_owned(),
                addr: None,
                reason,
            }));
        }
        let addrs = self.lookup.lookup(host).await?;
        if addrs.is_empty() {
            return Err(format!("{host} has no addresses").into());
        }
        if !exempt {
            for addr in &addrs {
                if let Some(reason) = non_public_reason(*addr) {
                    return Err(Box::new(Blocked {
                        host: host.to_owned(),
                        addr: Some(*addr),
                        reason,
                    }));
                }
            }
        }
        Ok(addrs)
    }
}

impl reqwest::dns::Resolve for GuardResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let lookup = Arc::clone(&self.lookup);
        let exempt = self.exempt.clone();
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let this = GuardResolver { lookup, exempt };
            let addrs = this.resolve_checked(&host).await?;
            let addrs: reqwest::dns::Addrs =
                Box::new(addrs.into_iter().map(|ip| SocketAddr::new(ip, 0)));
            Ok(addrs)
        })
    }
}

/// The guard's refusal inside an error chain (reqwest wraps the resolver's error).
pub fn find_blocked<'a>(err: &'a (dyn std::error::Error + 'static)) -> Option<&'a Blocked> {
    let mut current = Some(err);
    while let Some(e) = current {
        if let Some(b) = e.downcast_ref::<Blocked>() {
            return Some(b);
        }
        current = e.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(url: &str, blocked: bool) {
        let parsed = Url::parse(url).unwrap();
        assert_eq!(
            check_url_host(&parsed, &Exemptions::default()).is_err(),
            blocked,
            "{url} (parsed host {:?})",
            parsed.host_str()
        );
    }

    #[test]
    fn literal_hosts() {
        for url in [
            "http://127.0.0.1:8080/",
            "http://[::1]/",
            "http://localhost/",
            "http://LOCALHOST./",
            "http://a.localhost/",
            "http://169.254.169.254/latest/meta-data/",
            "http://2130706433/",
            "http://0x7f.1/",
            "http://017700000001/",
            "http://127.1/",
            "http://[::ffff:127.0.0.1]/",
            "http://[::ffff:a9fe:a9fe]/",
            "http://[::127.0.0.1]/",
            "http://[64:ff9b::7f00:1]/",
            "http://[2002:7f00:1::]/",
            "http://[2001::1]/",
            "http://[fd00::1]/",
            "http://[fe80::1]/",
            "http://[ff02::1]/",
            "http://[::]/",
            "http://0.0.0.0/",
            "http://10.1.2.3/",
            "http://172.16.0.1/",
            "http://172.31.255.255/",
            "http://192.168.1.1/",
            "http://100.64.0.1/",
            "http://224.0.0.1/",
            "http://255.255.255.255/",
            "http://192.0.2.1/",
        ] {
            check(url, true);
        }
        for url in [
            "https://example.com/",
            "http://8.8.8.8/",
            "http://172.32.0.1/",
            "http://100.128.0.1/",
            "http://[2606:4700::1111]/",
            "http://[::ffff:8.8.8.8]/",
            "http://[64:ff9b::808:808]/",
            "http://[2002:808:808::]/",
            "http://localhost.example.com/",
        ] {
            check(url, false);
        }
    }

    #[test]
    fn exemptions_match_normalised_hosts() {
        let exempt = Exemptions::new(["127.0.0.1", "[::1]", "Intranet.Example."]);
        for url in [
            "http://127.0.0.1:9/",
            "http://2130706433/",
            "http://[::1]/",
            "http://intranet.example/",
        ] {
            assert!(
                check_url_host(&Url::parse(url).unwrap(), &exempt).is_ok(),
                "{url}"
            );
        }
        assert!(check_url_host(&Url::parse("http://127.0.0.2/").unwrap(), &exempt).is_err());
    }

    struct Fixed(Vec<IpAddr>);

    #[async_trait]
    impl HostLookup for Fixed {
        async fn lookup(&self, _host: &str) -> std::io::Result<Vec<IpAddr>> {
            Ok(self.0.clone())
        }
    }

    #[tokio::test]
    async fn every_answer_is_checked() {
        let mixed = GuardResolver::new(
            Arc::new(Fixed(vec![
                "8.8.8.8".parse().unwrap(),
                "10.0.0.1".parse().unwrap(),
            ])),
            Exemptions::default(),
        );
        let err = mixed.resolve_checked("mixed.example").await.unwrap_err();
        let blocked = find_blocked(err.as_ref()).unwrap();
        assert_eq!(
            blocked.to_string(),
            "mixed.example resolves to 10.0.0.1, a private network address"
        );
        let public = GuardResolver::new(
            Arc::new(Fixed(vec!["8.8.8.8".parse().unwrap()])),
            Exemptions::default(),
        );
        assert_eq!(
            public.resolve_checked("dns.example").await.unwrap(),
            vec!["8.8.8.8".parse::<IpAddr>().unwrap()]
        );
        let exempt = GuardResolver::new(
            Arc::new(Fixed(vec!["10.0.0.1".parse().unwrap()])),
            Exemptions::new(["intranet.example"]),
        );
        assert!(exempt.resolve_checked("intranet.example").await.is_ok());
    }
}
