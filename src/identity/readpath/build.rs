//! How a [`ReadPath`] is made and set up: its data dir, environment,
//! process ids, clock and stats sink, before any question is asked.

use super::ReadPath;
use super::asking::check_dir;
use crate::base::clock;
use crate::base::paths;
use crate::identity::caller::ScopeEnv;
use std::path::Path;

impl ReadPath {
    /// The process's data dir and environment.
    pub fn from_process() -> ReadPath {
        let dir = paths::data_dir_path();
        ReadPath {
            dir_refused: matches!(dir, Err(paths::DirProblem::Relative(_))),
            dir: dir.ok(),
            env: ScopeEnv::from_process(),
            now_override: None,
            server_pid: std::process::id(),
            stats: Some(crate::stats::Via::Lib),
            host_pid: None,
        }
    }

    /// For the CLI: the MCP server is the parent process, and the host that
    /// started the server (whose `/clear` lineage applies) its parent.
    pub fn from_process_for_cli() -> ReadPath {
        ReadPath { stats: Some(crate::stats::Via::Cli), ..ReadPath::from_process().for_cli(crate::fsx::parent_of) }
    }

    /// [`ReadPath::from_process_for_cli`] from a given read path, with the
    /// parent lookup given (the tests force the one systems without `/proc`
    /// or Toolhelp have: none).
    pub(crate) fn for_cli(self, parent_of: fn(u32) -> Option<u32>) -> ReadPath {
        let mut rp = self;
        let server_pid = rp.env.parent_pid.unwrap_or(rp.server_pid);
        // Only a Claude Code session id makes the host's `/clear` lineage
        // matter; without one, spare every CLI call the /proc read.
        rp.env.parent_pid = rp.env.claude_session_id.as_ref().and_then(|_| parent_of(server_pid));
        ReadPath { server_pid, ..rp }
    }

    /// A read path on the data dir `dir`, with the server environment `env` (tests, servers that know both).
    pub fn new(dir: &Path, env: ScopeEnv) -> ReadPath {
        ReadPath {
            dir: Some(dir.to_path_buf()),
            env,
            now_override: None,
            server_pid: std::process::id(),
            stats: Some(crate::stats::Via::Lib),
            dir_refused: false,
            host_pid: None,
        }
    }

    /// Record ledger answers ([`ReadPath::stub`], [`ReadPath::deliver`]) in
    /// the stats as answered by `via`; `None`: record nothing (a server that
    /// answers with something else, a diff, records its final answer itself
    /// with [`crate::stats::record`]).
    pub fn with_stats(mut self, via: Option<crate::stats::Via>) -> ReadPath {
        self.stats = via;
        self
    }

    /// Where and as whom this read path records its answers.
    pub(crate) fn stats_sink(&self) -> Option<(crate::stats::Via, &Path)> {
        Some((self.stats?, self.dir.as_deref()?))
    }

    /// Set the host process the MCP server runs under (tests, simulations).
    pub fn with_host_pid(mut self, pid: u32) -> ReadPath {
        self.host_pid = Some(pid);
        self
    }

    /// The host process the MCP server runs under: given, or the server's
    /// parent (Claude Code starts stdio servers as its children), looked up
    /// once per server.
    pub(crate) fn host_pid(&self) -> Option<u32> {
        use std::sync::Mutex;
        static SEEN: Mutex<Option<(u32, Option<u32>)>> = Mutex::new(None);
        if self.host_pid.is_some() {
            return self.host_pid;
        }
        let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
        match *seen {
            Some((server, host)) if server == self.server_pid => host,
            _ => {
                let host = crate::fsx::parent_of(self.server_pid);
                *seen = Some((self.server_pid, host));
                host
            }
        }
    }

    /// Set the MCP server process whose requests claim Cursor call records.
    pub fn with_server_pid(mut self, pid: u32) -> ReadPath {
        self.server_pid = pid;
        self
    }

    /// Pin "now" (tests and fault injection).
    pub fn at(mut self, now_ms: u64) -> ReadPath {
        self.now_override = Some(now_ms);
        self
    }

    /// `LEAN_CTX_CONVERSATION_SCOPE=0|false|off` in the environment.
    pub(crate) fn scoping_disabled(&self) -> bool {
        self.env.scoping_disabled
    }

    /// The data dir, when there is one.
    pub fn data_dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// Now, unix ms (`LEAN_CTX_NOW_MS` when set, for tests).
    pub fn now(&self) -> u64 {
        self.now_override.unwrap_or_else(clock::now_ms_env)
    }

    /// A data dir we may read: ours and closed. Readers never create it.
    pub(crate) fn usable_dir(&self) -> Option<&Path> {
        let d = self.dir.as_deref()?;
        check_dir(d).ok().map(|()| d)
    }

    /// The usable data dir's secret, created if it has none yet (a data dir
    /// from before digests were keyed). `None`: no usable dir, or a secret
    /// that cannot be read or made (every digest question then withholds).
    pub(crate) fn secret(&self) -> Option<crate::state::secret::Secret> {
        crate::state::secret::Secret::load_or_create(self.usable_dir()?).ok()
    }
}
