//! Where OAuth tokens of MCP servers live: one file per server URL in
//! `<state>/mcp-oauth/` (the directory mode 0700, each file 0600), never in a project and
//! never printed. A file holds the authorization server's metadata, the client agent-tools
//! used (its ID, and the secret dynamic registration gave it), the tokens with when they
//! were received, and the scopes a server asked for on a `403 insufficient_scope` (the next
//! login asks for them too).
//!
//! Writes replace the file atomically; a refresh takes an exclusive `flock` on a lock file
//! beside it ([`TokenStore::lock`], held by the session's token source around rmcp's
//! refresh), so two processes (a `serve` and a `call`) never spend the same refresh token
//! twice. [`FileCredentials`] is rmcp's `CredentialStore` over one file.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use rmcp::transport::auth::{AuthError, AuthorizationMetadata, CredentialStore, StoredCredentials};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The directory of token files, under the state directory.
pub const TOKEN_DIR: &str = "mcp-oauth";

/// The client agent-tools used with an authorization server.
#[derive(Clone, Default, Serialize, Deserialize)]
pub(crate) struct StoredClient {
    pub(crate) client_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) client_secret: Option<String>,
    pub(crate) redirect_uri: String,
}

/// Everything kept for one server URL.
#[derive(Clone, Default, Serialize, Deserialize)]
pub(crate) struct TokenFile {
    /// The server's URL (the key; kept for people reading the file)
    pub(crate) url: String,
    /// The server names that logged in with it (for messages)
    #[serde(default)]
    pub(crate) servers: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) metadata: Option<AuthorizationMetadata>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) client: Option<StoredClient>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) credentials: Option<StoredCredentials>,
    /// Scopes a `403 insufficient_scope` named that the tokens lack
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) required_scopes: Vec<String>,
}

impl std::fmt::Debug for TokenFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenFile")
            .field("url", &self.url)
            .field("servers", &self.servers)
            .field("has_tokens", &self.credentials.is_some())
            .finish_non_exhaustive()
    }
}

/// The token file of one server URL.
#[derive(Debug, Clone)]
pub(crate) struct TokenStore {
    path: PathBuf,
}

/// A problem with the token store, as a message naming the file.
fn problem(path: &Path, what: &str, e: impl std::fmt::Display) -> String {
    format!("{}: cannot {what}: {e}", path.display())
}

impl TokenStore {
    /// The store of `url` under `state_dir`.
    pub(crate) fn new(state_dir: &Path, url: &str) -> Self {
        TokenStore {
            path: state_dir.join(TOKEN_DIR).join(file_name(url)),
        }
    }

    /// The file's path.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The file's content; `None` when there is no file.
    pub(crate) fn load(&self) -> Result<Option<TokenFile>, String> {
        let bytes = match std::fs::read(&self.path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(problem(&self.path, "read it", e)),
        };
        serde_json::from_slice(&bytes).map(Some).map_err(|e| {
            problem(
                &self.path,
                "read it (remove it and log in again)",
                format!("not a token file: {e}"),
            )
        })
    }

    /// Replaces the file with `file` (mode 0600, in a directory of mode 0700).
    pub(crate) fn save(&self, file: &TokenFile) -> Result<(), String> {
        let dir = self.dir()?;
        let bytes =
            serde_json::to_vec_pretty(file).map_err(|e| problem(&self.path, "encode", e))?;
        let name = self.path.file_name().unwrap_or_default();
        let temp = dir.join(tool_core::temp_file_name(name));
        let written = (|| {
            let mut out = std::fs::File::options()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&temp)?;
            out.write_all(&bytes)?;
            out.sync_all()?;
            std::fs::rename(&temp, &self.path)
        })();
        if let Err(e) = written {
            let _ = std::fs::remove_file(&temp);
            return Err(problem(&self.path, "write it", e));
        }
        Ok(())
    }

    /// Changes the file with `change` (an empty file when there is none).
    pub(crate) fn update(&self, change: impl FnOnce(&mut TokenFile)) -> Result<TokenFile, String> {
        let mut file = self.load()?.unwrap_or_default();
        change(&mut file);
        self.save(&file)?;
        Ok(file)
    }

    /// Removes the file; whether there was one.
    pub(crate) fn remove(&self) -> Result<bool, String> {
        match std::fs::remove_file(&self.path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(problem(&self.path, "remove it", e)),
        }
    }

    /// The token directory, made (mode 0700) when missing and narrowed to 0700 when wider.
    fn dir(&self) -> Result<&Path, String> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        if let Err(e) = std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
        {
            return Err(problem(dir, "create it", e));
        }
        let meta = std::fs::symlink_metadata(dir).map_err(|e| problem(dir, "read it", e))?;
        if !meta.is_dir() {
            return Err(problem(dir, "use it", "not a directory"));
        }
        if meta.permissions().mode() & 0o077 != 0 {
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
                .map_err(|e| problem(dir, "make it private", e))?;
        }
        Ok(dir)
    }

    /// An exclusive lock held across a refresh (a lock file beside the token file).
    pub(crate) fn lock(&self) -> Result<std::fs::File, String> {
        self.dir()?;
        let path = self.path.with_extension("lock");
        let file = std::fs::File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(&path)
            .map_err(|e| problem(&path, "open it", e))?;
        rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive)
            .map_err(|e| problem(&path, "lock it", e))?;
        Ok(file)
    }
}

/// The file name for `url`: its host (for people) and a digest of the whole URL.
fn file_name(url: &str) -> String {
    let host: String = url::Url::parse(url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_owned))
        .unwrap_or_default()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    let digest: String = Sha256::digest(url.as_bytes())
        .iter()
        .take(12)
        .map(|b| format!("{b:02x}"))
        .collect();
    if host.is_empty() {
        format!("{digest}.json")
    } else {
        format!("{host}-{digest}.json")
    }
}

/// rmcp's credential store over a [`TokenStore`]: the `credentials` of the file.
#[derive(Debug, Clone)]
pub(crate) struct FileCredentials(pub(crate) TokenStore);

fn store_error(message: String) -> AuthError {
    AuthError::CredentialStoreError(message)
}

#[async_trait::async_trait]
impl CredentialStore for FileCredentials {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        Ok(self
            .0
            .load()
            .map_err(store_error)?
            .and_then(|f| f.credentials))
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        self.0
            .update(|f| f.credentials = Some(credentials))
            .map(drop)
            .map_err(store_error)
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.0
            .update(|f| f.credentials = None)
            .map(drop)
            .map_err(store_error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_per_url_private_and_replaced_whole() {
        let state = tempfile::tempdir().unwrap();
        let a = TokenStore::new(state.path(), "https://mcp.example.com/mcp");
        let b = TokenStore::new(state.path(), "https://mcp.example.com/other");
        assert_ne!(a.path(), b.path());
        assert!(
            a.path()
                .file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("mcp.example.com-")
        );
        assert!(a.load().unwrap().is_none());
        a.update(|f| {
            f.url = "https://mcp.example.com/mcp".into();
            f.required_scopes = vec!["x".into()];
        })
        .unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(a.path()), 0o600);
        assert_eq!(mode(a.path().parent().unwrap()), 0o700);
        assert_eq!(a.load().unwrap().unwrap().required_scopes, ["x"]);
        // A directory made wider by someone is narrowed again.
        std::fs::set_permissions(
            a.path().parent().unwrap(),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        a.update(|f| f.required_scopes.clear()).unwrap();
        assert_eq!(mode(a.path().parent().unwrap()), 0o700);
        // No temporary file is left behind.
        let names: Vec<String> = std::fs::read_dir(a.path().parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
        assert!(a.remove().unwrap());
        assert!(!a.remove().unwrap());
    }

    #[test]
    fn odd_urls_still_get_a_plain_file_name() {
        let check = |url: &str, prefix: &str| {
            let name = file_name(url);
            assert!(name.starts_with(prefix), "{url}: {name}");
            assert!(
                name.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c)),
                "{name}"
            );
        };
        check("http://127.0.0.1:8080/mcp", "127.0.0.1-");
        check("http://[::1]:8080/mcp", "___1_-");
        check("not a url", "");
        check("https://../../etc/passwd", "..-");
    }

    #[test]
    fn a_token_directory_that_is_a_link_is_refused() {
        let state = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), state.path().join(TOKEN_DIR)).unwrap();
        let store = TokenStore::new(state.path(), "https://x/mcp");
        let err = store.save(&TokenFile::default()).unwrap_err();
        assert!(err.contains("not a directory"), "{err}");
        assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 0);
        // A link planted at the file's own name is replaced, its target untouched.
        std::fs::remove_file(state.path().join(TOKEN_DIR)).unwrap();
        store.dir().unwrap();
        let target = elsewhere.path().join("target");
        std::fs::write(&target, "keep").unwrap();
        std::os::unix::fs::symlink(&target, store.path()).unwrap();
        store.save(&TokenFile::default()).unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
        assert!(
            !std::fs::symlink_metadata(store.path())
                .unwrap()
                .is_symlink()
        );
    }

    #[test]
    fn a_broken_file_says_what_to_do() {
        let state = tempfile::tempdir().unwrap();
        let store = TokenStore::new(state.path(), "https://x/mcp");
        store.dir().unwrap();
        std::fs::write(store.path(), "{").unwrap();
        let err = store.load().unwrap_err();
        assert!(err.contains("remove it and log in again"), "{err}");
    }
}
