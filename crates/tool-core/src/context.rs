//! The execution context: everything a call may use besides its input — the session's
//! working directory and mode, the permission engine, the managers, host services, the read
//! ledger — plus per-call cancellation and progress.

use std::any::{Any, TypeId};
use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::managers::{LspManager, TaskManager, Unconfigured};
use crate::{
    AllowHint, PermissionEngine, PermissionMode, PermissionPrompter, PermissionRule, ReadLedger,
    RuleBehavior, RuleSource, RuleSourceKind, SourcedRule, ToolError, path,
};

/// Told about every file a tool writes, creates, moves or deletes, before the tool returns
/// (a session's search index keeps itself fresh with it, whether or not the file system
/// reports the change). Installed as `Arc<dyn WriteObserver>`; tools call
/// [`ToolContext::note_write`].
pub trait WriteObserver: Send + Sync {
    /// `path` (absolute) changed.
    fn wrote(&self, path: &Path);
}

/// A typed map of what the host provides: sub-agent runner, user prompter, summariser,
/// search provider. Keyed by exact type, so store trait objects as `Arc<dyn Trait>` (an
/// `Arc<MyImpl>` is a different key, and a reader of `Arc<dyn Trait>` never sees it); see
/// [`ToolContextBuilder::service`] for the types the crates read.
///
/// A value stored under a type nothing reads is otherwise silent, so the map remembers which
/// types were looked up: [`Services::unread`] lists the stored ones no code has asked for,
/// and [`Services::require`]'s error names the type it wanted and those unread ones.
#[derive(Default)]
pub struct Services {
    map: RwLock<HashMap<TypeId, Stored>>,
    looked_up: Mutex<HashSet<TypeId>>,
}

/// One stored value and the name of its type.
struct Stored {
    value: Arc<dyn Any + Send + Sync>,
    type_name: &'static str,
}

impl Stored {
    fn new<T: Send + Sync + 'static>(value: T) -> Self {
        Stored {
            value: Arc::new(value),
            type_name: std::any::type_name::<T>(),
        }
    }
}

impl fmt::Debug for Services {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.map.read().map(|m| m.len()).unwrap_or(0);
        f.debug_struct("Services").field("len", &n).finish()
    }
}

/// A type the session's services may hold: the map refuses, at compile time, a type no
/// crate declared, so a service cannot be stored under a type nothing reads. Shared
/// services are `Arc<T>` for a `T` that is [`ServiceType`] (a trait object such as
/// `dyn PermissionPrompter`, or a settings value); a value kept as it is (a cheap handle)
/// implements `Service` itself. A host's own type for its own tools opts in with
/// `impl tool_core::ServiceType for MyThing {}` and is stored as `Arc<MyThing>`.
///
/// ```compile_fail
/// // A prompter stored under its own type, where the tools read `Arc<dyn PermissionPrompter>`,
/// // does not compile (use `.prompter(..)`).
/// use std::sync::Arc;
/// use tool_core::{PermissionAnswer, PermissionPrompter, PermissionRequest, ToolContext};
/// struct Yes;
/// #[tool_core::async_trait]
/// impl PermissionPrompter for Yes {
///     async fn ask(&self, _: &PermissionRequest) -> PermissionAnswer { PermissionAnswer::Allow }
/// }
/// let ctx = ToolContext::builder("/tmp").service(Arc::new(Yes)).build();
/// ```
///
/// ```
/// // The same prompter as the trait object the tools read compiles.
/// use std::sync::Arc;
/// use tool_core::{PermissionAnswer, PermissionPrompter, PermissionRequest, ToolContext};
/// struct Yes;
/// #[tool_core::async_trait]
/// impl PermissionPrompter for Yes {
///     async fn ask(&self, _: &PermissionRequest) -> PermissionAnswer { PermissionAnswer::Allow }
/// }
/// let ctx = ToolContext::builder("/tmp").prompter(Arc::new(Yes)).build();
/// # let _ = ctx;
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a session service",
    note = "store a trait object as `Arc<dyn Trait>` (or use the builder's typed method: `.prompter(..)`, `.question_prompter(..)`, `.allow_hint(..)`, or a crate's `install`) and a value as `Arc<Value>`; a host's own type opts in with `impl tool_core::ServiceType for MyType {{}}`"
)]
pub trait Service: Send + Sync + 'static {}

/// What may be shared as a service in an `Arc` (see [`Service`]).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a service type",
    note = "a trait object goes in as `Arc<dyn Trait>`, not as `Arc<MyImpl>`; a host's own type opts in with `impl tool_core::ServiceType for MyType {{}}`"
)]
pub trait ServiceType: Send + Sync + 'static {}

impl<T: ServiceType + ?Sized> Service for Arc<T> {}

// The services tool-core's own code and the other crates read, declared where the types
// live: tool-core's here; each crate's beside its own types.
impl ServiceType for dyn crate::PermissionPrompter {}
impl ServiceType for dyn crate::QuestionPrompter {}
impl ServiceType for dyn crate::AllowHint {}
impl ServiceType for dyn crate::Summariser {}
impl ServiceType for dyn WriteObserver {}
impl ServiceType for Vec<crate::SettingsLayer> {}
impl ServiceType for crate::TrustReport {}
impl Service for EventSink {}

impl Services {
    /// Stores `value`, replacing any earlier value of the same type.
    pub fn insert<T: Service>(&self, value: T) {
        if let Ok(mut map) = self.map.write() {
            map.insert(TypeId::of::<T>(), Stored::new(value));
        }
    }

    /// A clone of the stored value of type `T`.
    pub fn get<T: Service + Clone>(&self) -> Option<T> {
        self.note_lookup::<T>();
        let map = self.map.read().ok()?;
        map.get(&TypeId::of::<T>())?
            .value
            .downcast_ref::<T>()
            .cloned()
    }

    /// The stored value of type `T`, for a read whose service the host must provide: the
    /// error says `what` is missing, names the type expected (`Arc<dyn PermissionPrompter>`,
    /// not the implementation's type), how a host installs it, and the stored types nothing
    /// has read (the likely mistake). Reads where a missing service is legitimately optional
    /// use [`Services::get`].
    pub fn require<T: Service + Clone>(&self, what: &str) -> Result<T, ToolError> {
        if let Some(value) = self.get::<T>() {
            return Ok(value);
        }
        let mut message = format!(
            "{what} (the host installed no `{}` service; a host adds one with `ToolContextBuilder::service` or `Services::insert`, as exactly that type",
            short_type_name(std::any::type_name::<T>())
        );
        let unread = self.unread();
        if !unread.is_empty() {
            message.push_str("; installed but never read: ");
            message.push_str(
                &unread
                    .iter()
                    .map(|t| format!("`{t}`"))
                    .collect::<Vec<_>>()
                    .join(", "),
            );
        }
        message.push(')');
        Err(ToolError::respond(message))
    }

    /// The types (short names) of stored values no code has looked up yet: a value stored
    /// under a type nothing reads (`SandboxSettings` where `Arc<SandboxSettings>` is read,
    /// `Arc<MyImpl>` where `Arc<dyn Trait>` is) stays here for the whole session.
    pub fn unread(&self) -> Vec<String> {
        let looked_up = self
            .looked_up
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let Ok(map) = self.map.read() else {
            return Vec::new();
        };
        let mut names: Vec<String> = map
            .iter()
            .filter(|(id, _)| !looked_up.contains(id))
            .map(|(_, stored)| short_type_name(stored.type_name))
            .collect();
        names.sort();
        names
    }

    fn note_lookup<T: 'static>(&self) {
        self.looked_up
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(TypeId::of::<T>());
    }

    /// The stored value of type `T`, made by `make` and stored first when there is none:
    /// create-on-first-use of session state. The check and the insert happen under one
    /// write lock, so concurrent first calls all get the same value and `make` runs at most
    /// once per type. `make` runs under that lock: it must not use these services.
    pub fn get_or_insert_with<T: Service + Clone>(&self, make: impl FnOnce() -> T) -> T {
        match self.get_or_try_insert_with(|| Ok::<T, std::convert::Infallible>(make())) {
            Ok(value) => value,
            Err(never) => match never {},
        }
    }

    /// [`Services::get_or_insert_with`] for a `make` that can fail: on failure nothing is
    /// stored and the error is returned (a later call tries again).
    pub fn get_or_try_insert_with<T: Service + Clone, E>(
        &self,
        make: impl FnOnce() -> Result<T, E>,
    ) -> Result<T, E> {
        if let Some(value) = self.get::<T>() {
            return Ok(value);
        }
        let mut map = self
            .map
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(value) = map
            .get(&TypeId::of::<T>())
            .and_then(|v| v.value.downcast_ref::<T>())
        {
            return Ok(value.clone());
        }
        let value = make()?;
        map.insert(TypeId::of::<T>(), Stored::new(value.clone()));
        Ok(value)
    }
}

/// A type name without module paths: `alloc::sync::Arc<dyn tool_core::exec::Prompter>` is
/// `Arc<dyn Prompter>`.
fn short_type_name(full: &str) -> String {
    let mut out = String::with_capacity(full.len());
    let mut word = String::new();
    for c in full.chars() {
        if c.is_alphanumeric() || c == '_' || c == ':' {
            word.push(c);
        } else {
            out.push_str(word.rsplit("::").next().unwrap_or_default());
            word.clear();
            out.push(c);
        }
    }
    out.push_str(word.rsplit("::").next().unwrap_or_default());
    out
}

/// Something that happened in a session outside any call: a scheduled prompt fired, a
/// monitored command printed new lines, a background task ended. A host that drives a live
/// session passes it on (the binary's `batch` prints it as an event line); see
/// [`EventSink`] and [`ToolContext::emit_event`].
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SessionEvent {
    /// What happened: `cron`, `monitor` or `task`
    pub event: String,
    /// The job or task it concerns
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// What the model should read
    pub text: String,
    /// Structured details
    pub data: serde_json::Value,
}

/// How many events a session holds while no [`EventSink`] is installed (a scheduler can fire
/// a job that came due while nothing ran before the host's client is connected); older ones
/// are dropped first.
pub const PENDING_EVENTS: usize = 256;

/// Where a session's events go; the host installs it with
/// [`ToolContext::set_event_sink`]. Events emitted before one is installed wait for it (the
/// latest [`PENDING_EVENTS`]); the tools keep their own record too (TaskOutput, CronList).
#[derive(Clone)]
pub struct EventSink(Arc<dyn Fn(SessionEvent) + Send + Sync>);

impl fmt::Debug for EventSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("EventSink(..)")
    }
}

impl EventSink {
    /// A sink that calls `f` for every event.
    pub fn new(f: impl Fn(SessionEvent) + Send + Sync + 'static) -> Self {
        EventSink(Arc::new(f))
    }

    /// Passes an event on.
    pub fn emit(&self, event: SessionEvent) {
        (self.0)(event);
    }
}

/// A progress event from a running call.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// What is happening
    pub message: String,
    /// How far, in units of `total`
    pub progress: Option<f64>,
    /// The total, if known
    pub total: Option<f64>,
}

/// Where a call's progress events go; a no-op unless the host installed one.
#[derive(Clone, Default)]
pub struct ProgressSink(Option<Arc<dyn Fn(Progress) + Send + Sync>>);

impl fmt::Debug for ProgressSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() {
            "ProgressSink(..)"
        } else {
            "ProgressSink(none)"
        })
    }
}

impl ProgressSink {
    /// A sink that calls `f` for every event.
    pub fn new(f: impl Fn(Progress) + Send + Sync + 'static) -> Self {
        ProgressSink(Some(Arc::new(f)))
    }

    /// Reports a message.
    pub fn report(&self, message: impl Into<String>) {
        self.report_progress(Progress {
            message: message.into(),
            progress: None,
            total: None,
        });
    }

    /// Reports an event.
    pub fn report_progress(&self, event: Progress) {
        if let Some(f) = &self.0 {
            f(event);
        }
    }
}

/// Session state shared by every call of one session.
#[derive(Debug)]
struct Session {
    id: String,
    original_cwd: PathBuf,
    cwd: RwLock<PathBuf>,
    mode: RwLock<PermissionMode>,
    additional_dirs: RwLock<Vec<PathBuf>>,
    permissions: PermissionEngine,
    lsp: Arc<dyn LspManager>,
    tasks: Arc<dyn TaskManager>,
    services: Services,
    ledger: ReadLedger,
    state_dir: PathBuf,
    /// Where this session keeps what is its own (see [`ToolContext::private_state_dir`])
    private_state_dir: PathBuf,
    /// The session whose mode caps this one's (a sub-agent's caller), while it lives
    ceiling: Option<std::sync::Weak<Session>>,
    call_timeout: Option<Duration>,
    /// See [`ToolContextBuilder::alone_on_runtime`]
    alone_on_runtime: bool,
    /// Events emitted while no sink was installed; the lock also orders emits against
    /// [`ToolContext::set_event_sink`].
    pending_events: Mutex<VecDeque<SessionEvent>>,
}

/// What a call runs in: the session it belongs to and the services the host provides.
///
/// Cloning is cheap: clones share the session (working directory, mode, rules, ledger,
/// managers, services) and the cancellation token. [`ToolContext::for_call`] derives the
/// context of one call, with a child token and its own progress sink.
#[derive(Debug, Clone)]
pub struct ToolContext {
    session: Arc<Session>,
    cancel: CancellationToken,
    progress: ProgressSink,
    call_id: Option<String>,
    approval: crate::ApprovedBy,
}

/// Builds a [`ToolContext`].
#[derive(Debug)]
pub struct ToolContextBuilder {
    cwd: PathBuf,
    mode: PermissionMode,
    additional_dirs: Vec<PathBuf>,
    permissions: PermissionEngine,
    lsp: Arc<dyn LspManager>,
    tasks: Arc<dyn TaskManager>,
    services: Services,
    state_dir: Option<PathBuf>,
    private_state_dir: Option<PathBuf>,
    ceiling: Option<std::sync::Weak<Session>>,
    session_id: Option<String>,
    call_timeout: Option<Duration>,
    alone_on_runtime: bool,
    host_rules: Vec<(RuleBehavior, PermissionRule)>,
}

impl ToolContextBuilder {
    /// The permission mode (default: `default`).
    pub fn mode(mut self, mode: PermissionMode) -> Self {
        self.mode = mode;
        self
    }

    /// Extra directories the session may work in.
    pub fn additional_dirs(mut self, dirs: Vec<PathBuf>) -> Self {
        self.additional_dirs = dirs;
        self
    }

    /// The permission engine (default: no rules).
    pub fn permissions(mut self, engine: PermissionEngine) -> Self {
        self.permissions = engine;
        self
    }

    /// Allows calls matching `rule` (`"Bash(npm test)"`, `"Edit(src/**)"`, `"WebFetch"`),
    /// as the host program's own rule: messages name its source as "the host program", and
    /// `/x` path patterns are relative to the working directory. A blank rule adds nothing.
    pub fn allow(self, rule: &str) -> Self {
        self.host_rule(RuleBehavior::Allow, rule)
    }

    /// Denies calls matching `rule`, in every mode (see [`ToolContextBuilder::allow`]).
    pub fn deny(self, rule: &str) -> Self {
        self.host_rule(RuleBehavior::Deny, rule)
    }

    /// Asks before calls matching `rule`, even in bypassPermissions mode; without a
    /// prompter the call is refused (see [`ToolContextBuilder::allow`]).
    pub fn ask(self, rule: &str) -> Self {
        self.host_rule(RuleBehavior::Ask, rule)
    }

    fn host_rule(mut self, behavior: RuleBehavior, rule: &str) -> Self {
        if let Some(rule) = PermissionRule::parse(rule) {
            self.host_rules.push((behavior, rule));
        }
        self
    }

    /// The person who answers permission questions: calls that need approval are asked
    /// through `prompter` instead of being refused.
    pub fn prompter(self, prompter: Arc<dyn PermissionPrompter>) -> Self {
        self.service(prompter)
    }

    /// The person who answers AskUserQuestion (and other tools' questions to the user);
    /// without one, such calls are refused unless the model supplied the answers.
    pub fn question_prompter(self, prompter: Arc<dyn crate::QuestionPrompter>) -> Self {
        self.service(prompter)
    }

    /// How refusals tell the model what would allow a call, in the host's words (default:
    /// [`NeutralHint`](crate::NeutralHint), which names the rule and mode but no flag or
    /// file).
    pub fn allow_hint(self, hint: Arc<dyn AllowHint>) -> Self {
        self.service(hint)
    }

    /// The language-server manager (default: [`Unconfigured`]).
    pub fn lsp(mut self, lsp: Arc<dyn LspManager>) -> Self {
        self.lsp = lsp;
        self
    }

    /// The background task manager (default: [`Unconfigured`]).
    pub fn tasks(mut self, tasks: Arc<dyn TaskManager>) -> Self {
        self.tasks = tasks;
        self
    }

    /// Adds a host service, keyed by its exact type, which must be a [`Service`]: trait
    /// objects go in as `Arc<dyn Trait>` (an `Arc<MyImpl>` does not compile) and values
    /// wrapped as the table says; prefer the typed methods and the crates' `install` calls. [`Services::unread`] lists what was installed
    /// and never read.
    ///
    /// The types the crates read:
    ///
    /// | Type | Read by |
    /// |---|---|
    /// | `Arc<dyn PermissionPrompter>` | tool-core (execution path), tools-agent (sub-agents) |
    /// | [`EventSink`] | tool-core (set it with [`ToolContext::set_event_sink`]) |
    /// | `Arc<Vec<SettingsLayer>>` | tools-web, tools-shell, tools-agent, tools-mcp, registry |
    /// | `Arc<TrustReport>` | tools-agent (Config), registry |
    /// | `Arc<dyn Summariser>` | tools-web (WebFetch) |
    /// | `Arc<dyn SearchProvider>` | tools-web (WebSearch) |
    /// | `Arc<dyn HostLookup>` | tools-web (WebFetch) |
    /// | `Arc<SandboxSettings>` | tools-shell |
    /// | `Arc<ShellTasks>` | tools-shell (background commands, Monitor, TaskOutput), registry |
    /// | `Arc<dyn AgentRunner>` | tools-agent (Agent, SendMessage: required) |
    /// | `Arc<dyn QuestionPrompter>` | tools-agent (AskUserQuestion) |
    /// | `Arc<dyn UserMessageSink>` | tools-agent (SendUserMessage) |
    /// | `ToolCatalog` | tools-agent (ToolSearch, sub-agents) |
    /// | `Arc<TaskListId>` | tools-agent (task lists) |
    /// | `Arc<AgentIdentity>`, `Arc<TeammateIdentity>` | tools-agent |
    /// | `Arc<CronScheduler>` | tools-agent (Cron tools; made on first use when absent) |
    /// | `Arc<McpManager>` | tools-mcp (resources) |
    /// | `Arc<dyn UpfrontInput>`, `ClientHook` | tools-mcp (server mode) |
    /// | `Arc<Profile>` | registry |
    ///
    /// Each crate falls back to its default when an optional one is missing; a required one
    /// is read with [`Services::require`], whose error names the type.
    ///
    /// Session state a crate keeps for itself (`Arc<FetchCache>`, `Arc<ShellSession>`) is
    /// made on first use with [`Services::get_or_insert_with`].
    pub fn service<T: Service>(self, value: T) -> Self {
        self.services.insert(value);
        self
    }

    /// The state directory (default: `AGENT_TOOLS_HOME`, else `~/.agent-tools`).
    pub fn state_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.state_dir = Some(dir.into());
        self
    }

    /// Where the session keeps what belongs to it alone — plans, todos, task lists, team
    /// inboxes, sub-agent transcripts, spilled results, background output — when that is not
    /// the state directory itself: `agent-tools serve` gives each bearer token (principal) its
    /// own directory, so one client never sees another's files (default: the state
    /// directory). See [`ToolContext::private_state_dir`].
    pub fn private_state_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.private_state_dir = Some(dir.into());
        self
    }

    /// The session's mode never allows more than `caller`'s, now or later: a sub-agent's
    /// context follows its caller into plan mode (see [`ToolContext::permission_mode`]).
    pub fn mode_ceiling(mut self, caller: &ToolContext) -> Self {
        self.ceiling = Some(Arc::downgrade(&caller.session));
        self
    }

    /// The session id used in spill paths (default: 128 random bits, so that no other
    /// session can guess the names of this one's files).
    pub fn session_id(mut self, id: impl Into<String>) -> Self {
        self.session_id = Some(id.into());
        self
    }

    /// A time limit for every call (default: none; tools bound their own work).
    pub fn call_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.call_timeout = timeout;
        self
    }

    /// Whether the session has its runtime to itself, as in a process that serves one
    /// agent (`agent-tools batch`); default: no. A call's validation and permission check
    /// may block (a slow file system, a command line of megabytes), so by default they run
    /// only after the worker's other tasks were handed to another thread: a server's other
    /// sessions and its health check never wait for them. That hand-over wakes a thread on
    /// every call, about 50 microseconds where a whole Bash call of `:` takes 1.4 ms; a
    /// session alone on its runtime runs them where the call runs (its other tasks, such
    /// as concurrent read-only calls, move to the runtime's other workers as usual).
    pub fn alone_on_runtime(mut self, alone: bool) -> Self {
        self.alone_on_runtime = alone;
        self
    }

    /// The directories the session will work in: the working directory, then the
    /// additional ones (canonical), for a host that wires a manager before `build`.
    pub fn working_dirs(&self) -> Vec<PathBuf> {
        std::iter::once(&self.cwd)
            .chain(&self.additional_dirs)
            .map(|d| path::canonicalize_lenient(d))
            .collect()
    }

    /// The state directory the session will use (see [`ToolContextBuilder::state_dir`]).
    pub fn state_dir_path(&self) -> PathBuf {
        self.state_dir.clone().unwrap_or_else(builder_state_dir)
    }

    /// The private state directory the session will use (see
    /// [`ToolContextBuilder::private_state_dir`]).
    pub fn private_state_dir_path(&self) -> PathBuf {
        self.private_state_dir
            .clone()
            .unwrap_or_else(|| self.state_dir_path())
    }

    /// The context.
    pub fn build(self) -> ToolContext {
        let cwd = path::canonicalize_lenient(&self.cwd);
        for (behavior, rule) in self.host_rules {
            self.permissions.add_rule(SourcedRule {
                rule,
                behavior,
                source: RuleSource {
                    kind: RuleSourceKind::Host,
                    file: None,
                    root: cwd.clone(),
                },
            });
        }
        let id = self.session_id.unwrap_or_else(default_session_id);
        let state_dir = self.state_dir.unwrap_or_else(builder_state_dir);
        let private_state_dir = self.private_state_dir.unwrap_or_else(|| state_dir.clone());
        ToolContext {
            session: Arc::new(Session {
                id,
                original_cwd: cwd.clone(),
                cwd: RwLock::new(cwd),
                mode: RwLock::new(self.mode),
                additional_dirs: RwLock::new(
                    self.additional_dirs
                        .iter()
                        .map(|d| path::canonicalize_lenient(d))
                        .collect(),
                ),
                permissions: self.permissions,
                lsp: self.lsp,
                tasks: self.tasks,
                services: self.services,
                ledger: ReadLedger::new(),
                state_dir,
                private_state_dir,
                ceiling: self.ceiling,
                call_timeout: self.call_timeout,
                alone_on_runtime: self.alone_on_runtime,
                pending_events: Mutex::new(VecDeque::new()),
            }),
            cancel: CancellationToken::new(),
            progress: ProgressSink::default(),
            call_id: None,
            approval: crate::ApprovedBy::Unchecked,
        }
    }
}

fn default_session_id() -> String {
    format!("s{}", crate::unguessable_id())
}

/// The state directory: `AGENT_TOOLS_HOME`, else `.agent-tools` in the home directory
/// (`HOME`, else the account's home from the password database). There is no shared
/// fallback: without either, an error says what to set.
pub fn default_state_dir() -> Result<PathBuf, ToolError> {
    if let Some(dir) = std::env::var_os("AGENT_TOOLS_HOME").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir));
    }
    path::home_dir()
        .map(|home| home.join(".agent-tools"))
        .ok_or_else(|| {
            ToolError::fatal(
                "no state directory: HOME is not set and this account has no home directory in the password database; set AGENT_TOOLS_HOME (or HOME) to a directory only you can write",
            )
        })
}

/// The state directory of a builder given none: [`default_state_dir`], else (no home at
/// all) a directory under `/nonexistent`, which no account but root can create, so that
/// nothing is read from or written to a shared place.
fn builder_state_dir() -> PathBuf {
    default_state_dir().unwrap_or_else(|_| PathBuf::from("/nonexistent/.agent-tools"))
}

impl ToolContext {
    /// Starts building a context rooted at `cwd`.
    pub fn builder(cwd: impl Into<PathBuf>) -> ToolContextBuilder {
        ToolContextBuilder {
            cwd: cwd.into(),
            mode: PermissionMode::Default,
            additional_dirs: Vec::new(),
            permissions: PermissionEngine::default(),
            lsp: Arc::new(Unconfigured),
            tasks: Arc::new(Unconfigured),
            services: Services::default(),
            state_dir: None,
            private_state_dir: None,
            ceiling: None,
            session_id: None,
            call_timeout: None,
            alone_on_runtime: false,
            host_rules: Vec::new(),
        }
    }

    /// The context of one call: same session, a child cancellation token, its own progress
    /// sink and call id.
    pub fn for_call(&self, call_id: Option<String>, progress: ProgressSink) -> ToolContext {
        ToolContext {
            session: Arc::clone(&self.session),
            cancel: self.cancel.child_token(),
            progress,
            call_id,
            approval: crate::ApprovedBy::Unchecked,
        }
    }

    /// A context sharing the session but with a child token (for a group of calls).
    pub fn child(&self) -> ToolContext {
        let mut ctx = self.clone();
        ctx.cancel = self.cancel.child_token();
        ctx.approval = crate::ApprovedBy::Unchecked;
        ctx
    }

    /// What allowed the call this context belongs to, as the execution path recorded it
    /// ([`ApprovedBy::Unchecked`](crate::ApprovedBy::Unchecked) for a context no call's permission
    /// step went through).
    pub fn approved_by(&self) -> crate::ApprovedBy {
        self.approval
    }

    /// This call's context, recording what allowed it (the execution path only).
    pub(crate) fn approved(mut self, approval: crate::ApprovedBy) -> ToolContext {
        self.approval = approval;
        self
    }

    /// The session id.
    pub fn session_id(&self) -> &str {
        &self.session.id
    }

    /// The id of this call, when the host gave one.
    pub fn call_id(&self) -> Option<&str> {
        self.call_id.as_deref()
    }

    /// The current working directory (canonical).
    pub fn cwd(&self) -> PathBuf {
        self.session
            .cwd
            .read()
            .map(|c| c.clone())
            .unwrap_or_else(|_| self.session.original_cwd.clone())
    }

    /// Changes the working directory for later calls of the session.
    pub fn set_cwd(&self, cwd: &Path) {
        if let Ok(mut c) = self.session.cwd.write() {
            *c = path::canonicalize_lenient(cwd);
        }
    }

    /// The working directory the session started in.
    pub fn original_cwd(&self) -> &Path {
        &self.session.original_cwd
    }

    /// The permission mode in effect: the session's own, capped by its caller's mode in
    /// effect now when it has one ([`ToolContextBuilder::mode_ceiling`]) — a sub-agent whose
    /// caller enters plan mode is in plan mode from its next call on.
    pub fn permission_mode(&self) -> PermissionMode {
        let own = self.own_permission_mode();
        match self.caller() {
            Some(caller) => own.capped_at(caller.permission_mode()),
            None => own,
        }
    }

    /// The session's own mode, before its caller's caps it.
    pub fn own_permission_mode(&self) -> PermissionMode {
        self.session.mode.read().map(|m| *m).unwrap_or_default()
    }

    /// Whether a call that would ask is refused instead: the mode in effect is dontAsk, or a
    /// caller up the chain runs in dontAsk (a plan-mode sub-agent of a dontAsk caller asks
    /// nobody either).
    pub fn refuses_asks(&self) -> bool {
        self.own_permission_mode() == PermissionMode::DontAsk
            || self.caller().is_some_and(|c| c.refuses_asks())
    }

    /// The caller's context, while the caller's session lives.
    fn caller(&self) -> Option<ToolContext> {
        let session = self.session.ceiling.as_ref()?.upgrade()?;
        Some(ToolContext {
            session,
            cancel: CancellationToken::new(),
            progress: ProgressSink::default(),
            call_id: None,
            approval: crate::ApprovedBy::Unchecked,
        })
    }

    /// Changes the session's own permission mode (plan mode tools do this); a caller's mode
    /// still caps it.
    pub fn set_permission_mode(&self, mode: PermissionMode) {
        if let Ok(mut m) = self.session.mode.write() {
            *m = mode;
        }
    }

    /// Additional working directories (canonical).
    pub fn additional_dirs(&self) -> Vec<PathBuf> {
        self.session
            .additional_dirs
            .read()
            .map(|d| d.clone())
            .unwrap_or_default()
    }

    /// Adds a working directory.
    pub fn add_working_dir(&self, dir: &Path) {
        if let Ok(mut dirs) = self.session.additional_dirs.write() {
            let dir = path::canonicalize_lenient(dir);
            if !dirs.contains(&dir) {
                dirs.push(dir);
            }
        }
    }

    /// Every working directory: the original one, the current one and the additional ones.
    pub fn working_dirs(&self) -> Vec<PathBuf> {
        let mut dirs = vec![self.session.original_cwd.clone()];
        let cwd = self.cwd();
        if !dirs.contains(&cwd) {
            dirs.push(cwd);
        }
        for d in self.additional_dirs() {
            if !dirs.contains(&d) {
                dirs.push(d);
            }
        }
        dirs
    }

    /// Whether `path` (canonicalised here) lies inside a working directory.
    pub fn is_in_working_dirs(&self, target: &Path) -> bool {
        let canonical = path::canonicalize_lenient(target);
        self.working_dirs()
            .iter()
            .any(|d| path::is_within(&canonical, d))
    }

    /// Resolves a path from the model against the working directory.
    pub fn resolve_path(&self, input: &str) -> PathBuf {
        path::resolve(&self.cwd(), input)
    }

    /// The permission engine.
    pub fn permissions(&self) -> &PermissionEngine {
        &self.session.permissions
    }

    /// Tells the session's [`WriteObserver`], if one is installed, that `path` changed.
    pub fn note_write(&self, path: &Path) {
        if let Some(observer) = self.services().get::<Arc<dyn WriteObserver>>() {
            observer.wrote(path);
        }
    }

    /// The language-server manager.
    pub fn lsp(&self) -> &Arc<dyn LspManager> {
        &self.session.lsp
    }

    /// The background task manager.
    pub fn tasks(&self) -> &Arc<dyn TaskManager> {
        &self.session.tasks
    }

    /// Host services.
    pub fn services(&self) -> &Services {
        &self.session.services
    }

    /// Installs the host's [`EventSink`] for the whole session: as a service (for tools that
    /// emit events) and in the background task manager (tasks that end, monitored lines).
    /// Events emitted before it was installed are passed to it first, in order.
    pub fn set_event_sink(&self, sink: EventSink) {
        self.tasks().set_event_sink(sink.clone());
        let mut pending = self
            .session
            .pending_events
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        self.services().insert(sink.clone());
        for event in pending.drain(..) {
            sink.emit(event);
        }
    }

    /// Passes a session event to the host's [`EventSink`]; without one yet, the event waits
    /// for it (see [`PENDING_EVENTS`]).
    pub fn emit_event(&self, event: SessionEvent) {
        let mut pending = self
            .session
            .pending_events
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match self.services().get::<EventSink>() {
            Some(sink) => sink.emit(event),
            None => {
                if pending.len() == PENDING_EVENTS {
                    pending.pop_front();
                }
                pending.push_back(event);
            }
        }
    }

    /// The read-file ledger.
    pub fn ledger(&self) -> &ReadLedger {
        &self.session.ledger
    }

    /// The state directory: the person's settings and approvals, their own skills and
    /// agent definitions, caches shared by sessions.
    pub fn state_dir(&self) -> &Path {
        &self.session.state_dir
    }

    /// Where the session keeps what belongs to it alone: plans, todos, task lists, team
    /// inboxes, sub-agent transcripts, spilled results, background output. The state
    /// directory itself unless the host gave each client its own
    /// ([`ToolContextBuilder::private_state_dir`]); the file tools see another client's
    /// directory as off limits.
    pub fn private_state_dir(&self) -> &Path {
        &self.session.private_state_dir
    }

    /// The per-call time limit, if any.
    pub fn call_timeout(&self) -> Option<Duration> {
        self.session.call_timeout
    }

    /// Whether the session has its runtime to itself (see
    /// [`ToolContextBuilder::alone_on_runtime`]).
    pub fn alone_on_runtime(&self) -> bool {
        self.session.alone_on_runtime
    }

    /// This call's cancellation token.
    pub fn cancel_token(&self) -> &CancellationToken {
        &self.cancel
    }

    /// Ends the session, for a host whose sessions come and go (a server): cancels its
    /// calls, stops its background tasks and deletes the files kept for it in the state
    /// directory — its tasks' output and the results spilled to `tool-results/<session>/`
    /// (removed on a blocking thread). What other sessions keep is untouched.
    pub async fn close(&self) {
        self.cancel.cancel();
        self.tasks().close().await;
        let id = self.session_id();
        if path::safe_component(id) != id {
            return;
        }
        let dir = self.private_state_dir().join("tool-results").join(id);
        let _ = tokio::task::spawn_blocking(move || match std::fs::remove_dir_all(&dir) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        })
        .await;
    }

    /// Whether the call has been cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// This call's progress sink.
    pub fn progress(&self) -> &ProgressSink {
        &self.progress
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn closing_deletes_the_spilled_results_in_the_private_state_directory() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let private = dir.path().join("principals/token-1");
        let ctx = ToolContext::builder(dir.path())
            .state_dir(dir.path())
            .private_state_dir(&private)
            .build();
        let spilled = private.join("tool-results").join(ctx.session_id());
        std::fs::create_dir_all(&spilled).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(spilled.join("call-1.txt"), "x").unwrap_or_else(|e| panic!("{e}"));
        ctx.close().await;
        assert!(!spilled.exists(), "{} is left", spilled.display());
    }

    impl ServiceType for String {}
    impl Service for u32 {}
    impl ServiceType for Mine {}
    impl ServiceType for dyn Prompter {}

    #[test]
    fn services_are_typed() {
        let s = Services::default();
        assert!(s.get::<Arc<String>>().is_none());
        s.insert(Arc::new("x".to_owned()));
        s.insert(7_u32);
        assert_eq!(
            s.get::<Arc<String>>().as_deref().map(String::as_str),
            Some("x")
        );
        assert_eq!(s.get::<u32>(), Some(7));
    }

    #[test]
    fn concurrent_first_uses_share_one_instance() {
        use std::sync::Barrier;
        use std::sync::atomic::{AtomicUsize, Ordering};
        const THREADS: usize = 16;
        let services = Services::default();
        let made = AtomicUsize::new(0);
        let barrier = Barrier::new(THREADS);
        let got: Vec<Arc<String>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..THREADS)
                .map(|_| {
                    scope.spawn(|| {
                        barrier.wait();
                        services.get_or_insert_with(|| {
                            made.fetch_add(1, Ordering::SeqCst);
                            // Widen the window in which a racy version would make a second.
                            std::thread::sleep(Duration::from_millis(20));
                            Arc::new("state".to_owned())
                        })
                    })
                })
                .collect();
            handles.into_iter().filter_map(|h| h.join().ok()).collect()
        });
        assert_eq!(got.len(), THREADS);
        assert_eq!(made.load(Ordering::SeqCst), 1);
        assert!(got.iter().all(|s| Arc::ptr_eq(s, &got[0])));
        assert!(
            services
                .get::<Arc<String>>()
                .is_some_and(|s| Arc::ptr_eq(&s, &got[0]))
        );
    }

    #[test]
    fn a_failed_make_stores_nothing() {
        let services = Services::default();
        let failed: Result<u32, &str> = services.get_or_try_insert_with(|| Err("no"));
        assert_eq!(failed, Err("no"));
        assert_eq!(services.get::<u32>(), None);
        assert_eq!(
            services.get_or_try_insert_with(|| Ok::<_, &str>(3_u32)),
            Ok(3)
        );
        assert_eq!(services.get_or_insert_with(|| 4_u32), 3);
    }

    trait Prompter: Send + Sync {}
    struct Mine;
    impl Prompter for Mine {}

    #[test]
    fn a_missing_required_service_names_the_type_and_the_unread_ones() {
        let services = Services::default();
        // The implementation's type, not the trait object a reader asks for.
        services.insert(Arc::new(Mine));
        services.insert(7_u32);
        assert_eq!(services.get::<u32>(), Some(7));
        assert_eq!(services.unread(), vec!["Arc<Mine>".to_owned()]);
        let err = services
            .require::<Arc<dyn Prompter>>("No prompter is configured")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.starts_with("No prompter is configured ("), "{err}");
        assert!(err.contains("no `Arc<dyn Prompter>` service"), "{err}");
        assert!(err.contains("ToolContextBuilder::service"), "{err}");
        assert!(
            err.contains("installed but never read: `Arc<Mine>`"),
            "{err}"
        );
        let prompter: Arc<dyn Prompter> = Arc::new(Mine);
        services.insert(prompter);
        assert!(services.require::<Arc<dyn Prompter>>("x").is_ok());
        assert_eq!(services.unread(), vec!["Arc<Mine>".to_owned()]);
    }

    #[test]
    fn type_names_lose_their_paths() {
        assert_eq!(
            short_type_name("alloc::sync::Arc<dyn tool_core::exec::PermissionPrompter>"),
            "Arc<dyn PermissionPrompter>"
        );
        assert_eq!(
            short_type_name("alloc::sync::Arc<alloc::vec::Vec<tool_core::SettingsLayer>>"),
            "Arc<Vec<SettingsLayer>>"
        );
        assert_eq!(short_type_name("u32"), "u32");
    }

    fn event(n: usize) -> SessionEvent {
        SessionEvent {
            event: "cron".to_owned(),
            id: Some(n.to_string()),
            text: format!("prompt {n}"),
            data: serde_json::Value::Null,
        }
    }

    #[test]
    fn events_before_the_sink_wait_for_it_in_order() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        let ctx = ToolContext::builder(dir.path())
            .state_dir(dir.path().join("state"))
            .build();
        for n in 0..PENDING_EVENTS + 3 {
            ctx.emit_event(event(n));
        }
        let seen = Arc::new(Mutex::new(Vec::new()));
        let into = Arc::clone(&seen);
        ctx.set_event_sink(EventSink::new(move |e| {
            if let Ok(mut v) = into.lock() {
                v.push(e.id.unwrap_or_default());
            }
        }));
        ctx.emit_event(event(9999));
        let seen = seen.lock().map(|v| v.clone()).unwrap_or_default();
        // The oldest three were dropped; the rest arrive first, in order, then the new one.
        let mut want: Vec<String> = (3..PENDING_EVENTS + 3).map(|n| n.to_string()).collect();
        want.push("9999".to_owned());
        assert_eq!(seen, want);
        Ok(())
    }

    #[test]
    fn session_state_is_shared_and_calls_get_child_tokens() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        let ctx = ToolContext::builder(dir.path())
            .state_dir(dir.path().join("state"))
            .build();
        let call = ctx.for_call(Some("c1".into()), ProgressSink::default());
        call.set_permission_mode(PermissionMode::Plan);
        assert_eq!(ctx.permission_mode(), PermissionMode::Plan);
        call.cancel_token().cancel();
        assert!(!ctx.is_cancelled());
        ctx.cancel_token().cancel();
        let other = ctx.for_call(None, ProgressSink::default());
        assert!(other.is_cancelled());
        assert!(ctx.is_in_working_dirs(&dir.path().join("a/b")));
        assert!(!ctx.is_in_working_dirs(Path::new("/etc/passwd")));
        Ok(())
    }
}
