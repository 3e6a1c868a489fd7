//! The command line, as clap reads it: every command, its arguments and
//! their help. The per-call commands (`hook`, `scope`, `stub`, `deliver`)
//! are also read by hand, faster, in [`super::fast`], which must read
//! exactly what clap reads (its tests check it).

use crate::Host;
use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

/// A host name, in any case, with its other spellings (`claude`): read as
/// `Host::from_str` reads it, and listed, so completions offer host names.
fn host_parser() -> impl TypedValueParser<Value = Host> {
    let names = Host::ALL.map(|h| match h {
        Host::ClaudeCode => PossibleValue::new(h.as_str()).aliases(["claude", "claudecode"]),
        Host::CodeBuddy => PossibleValue::new(h.as_str()).alias("codebuddy-code"),
        _ => PossibleValue::new(h.as_str()),
    });
    PossibleValuesParser::new(names).map(|s| s.to_ascii_lowercase().parse::<Host>().expect("one of Host's names"))
}

#[derive(Parser)]
#[command(name = "leanctx", version, about = "Conversation identity and MCP gate for context-saving MCP servers")]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Subcommand)]
pub(crate) enum Command {
    /// Handle one hook event: payload on stdin, the host's answer on stdout. Always exits 0.
    Hook {
        /// The host that runs the hook: cursor, claude-code (claude), codex or codebuddy.
        #[arg(value_parser = host_parser(), ignore_case = true)]
        host: Host,
        /// Override the payload's hook_event_name.
        #[arg(long)]
        event: Option<String>,
    },
    /// May the caller of this MCP call be served a stub for this version of
    /// this content? Exit 0: serve the stub; 1: deliver the content (and, with
    /// --result, its delivery is recorded); 2: error.
    Stub {
        #[command(flatten)]
        ledger: LedgerArgs,
        /// The MCP result the server returns if no stub is served, as JSON (a file, or - for stdin).
        #[arg(long, value_name = "FILE|-")]
        result: Option<PathBuf>,
    },
    /// Record that this result is being delivered to the caller of this MCP
    /// call. Exit 0: recorded; 1: not recorded (no exact caller; says why); 2: error.
    Deliver {
        #[command(flatten)]
        ledger: LedgerArgs,
        /// The MCP result the server returns, as JSON (a file, or - for stdin).
        #[arg(long, value_name = "FILE|-")]
        result: PathBuf,
    },
    /// Who is calling, and may they get a stub.
    #[command(subcommand)]
    Scope(ScopeCmd),
    /// Check that everything works: the data dir, the state, the hooks of
    /// every host, the gate's policy files. Names every problem with its fix.
    /// Exit 0: no problem; 1: a problem.
    #[command(visible_alias = "doctor")]
    Status {
        /// Print the same report as JSON (`problems`, `issues` with each fix, `healthy`).
        #[arg(long)]
        json: bool,
    },
    /// What leanctx saved: bytes and estimated tokens, reads, stubs, diffs,
    /// and why stubs were withheld (each with what you can do).
    Stats(StatsArgs),
    /// Explain what the MCP gate decides for a tool.
    #[command(subcommand)]
    Gate(GateCmd),
    /// Install, remove or inspect leanctx's entries in a host's hook config.
    #[command(subcommand)]
    Hooks(HooksCmd),
    /// Run the MCP server (stdio): tool `read` serves a file whole the first
    /// time and a stub only where the delivery ledger says the caller holds it.
    Serve,
    /// Print a shell completion script (e.g. `leanctx completions bash > ~/.local/share/bash-completion/completions/leanctx`).
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
}

#[derive(Args)]
pub(crate) struct StatsArgs {
    /// The last N UTC days, today included (7d, 30d, any Nd up to 400d), or all.
    #[arg(long, default_value = "7d", value_name = "Nd|all", value_parser = crate::stats::report::Since::parse)]
    pub(crate) since: crate::stats::report::Since,
    /// Group the figures by day, host, session, file, reason or tool.
    #[arg(long, default_value = "day", value_name = "GROUP", value_parser = crate::stats::report::By::parse)]
    pub(crate) by: crate::stats::report::By,
    /// Price of a million input tokens (any currency): adds what the saved tokens would have cost.
    #[arg(long, value_name = "PRICE")]
    pub(crate) input_price: Option<f64>,
    /// Price of a million cache-read tokens: what re-sending them on each later turn would have cost.
    #[arg(long, value_name = "PRICE")]
    pub(crate) cache_read_price: Option<f64>,
    /// Print the report as JSON (stable; README, "leanctx stats").
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Subcommand)]
pub(crate) enum ScopeCmd {
    /// Print the caller's scope (exit 0 known, 1 unknown).
    Current {
        /// Re-read now instead of the ~3 s cache (a CLI process has no cache to reuse anyway).
        #[arg(long)]
        fresh: bool,
        /// Print the caller, its source and the per-call resolution as JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        call: CallArg,
    },
    /// Decide a stub: exit 0 allow, 1 withhold, 2 error.
    Check {
        /// Scope the content was delivered to; omit for an unscoped delivery.
        #[arg(long)]
        delivered: Option<String>,
        /// Delivery time, unix milliseconds (enables the compaction check).
        #[arg(long = "at")]
        at: Option<u64>,
        /// Cold stub (entry from a persisted index).
        #[arg(long)]
        cold: bool,
        /// Print the decision, its reason and the caller as JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        call: CallArg,
    },
}

impl ScopeCmd {
    pub(crate) fn json(&self) -> bool {
        match self {
            ScopeCmd::Current { json, .. } | ScopeCmd::Check { json, .. } => *json,
        }
    }
}

#[derive(Args)]
pub(crate) struct LedgerArgs {
    /// The MCP tools/call request being answered (or its params) as JSON: a file, or - for stdin.
    #[arg(long, value_name = "FILE|-")]
    pub(crate) call: PathBuf,
    /// The server's name for the content (a path); only its hash is kept.
    #[arg(long)]
    pub(crate) key: String,
    /// The content's version (a hash); only its hash is kept.
    #[arg(long)]
    pub(crate) version: String,
    /// The result is a diff against this version of the key (recorded with
    /// it: a stub then also needs that version still held).
    #[arg(long)]
    pub(crate) base: Option<String>,
    /// Print the decision, reason, caller and the delivery it relied on as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Args)]
pub(crate) struct CallArg {
    /// The MCP tools/call request (or its params) as JSON: a file, or - for stdin.
    #[arg(long, value_name = "FILE|-")]
    pub(crate) call: Option<PathBuf>,
}

#[derive(Subcommand)]
pub(crate) enum GateCmd {
    /// Show which policy rule decides for a tool, and the answer each host would get.
    Check {
        /// The host whose answer to show: cursor, claude-code, codex or codebuddy.
        #[arg(value_parser = host_parser(), ignore_case = true, long)]
        host: Host,
        /// Tool name as the host spells it (mcp__server__tool, MCP:server:tool, tool).
        #[arg(long)]
        tool: String,
        /// The server the call is on, when the tool name does not say it (Cursor's mcp_server_name).
        #[arg(long)]
        server: Option<String>,
        /// Workspace dir whose .lean-ctx/gate.json applies (default: current dir).
        #[arg(long, value_name = "DIR")]
        cwd: Option<PathBuf>,
        /// Print the files, rules, verdict and answer as JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
pub(crate) enum HooksCmd {
    /// Add leanctx's hook entries to each host's config.
    Install {
        /// The hosts: cursor, claude-code (claude), codex, codebuddy; one or more (or --all).
        #[arg(value_parser = host_parser(), ignore_case = true, required_unless_present = "all", num_args = 1.., value_name = "HOST")]
        hosts: Vec<Host>,
        /// Every host found on this machine (its program on PATH, or a config dir in use); says
        /// which were skipped and why.
        #[arg(long, conflicts_with_all = ["hosts", "create"])]
        all: bool,
        #[command(flatten)]
        opts: InstallArgs,
        /// Create the host's user config dir if it does not exist.
        #[arg(long, conflicts_with = "if_present")]
        create: bool,
        /// Skip (exit 0) a host that is not found (its program not on PATH, its config dir missing
        /// or empty), saying why.
        #[arg(long)]
        if_present: bool,
    },
    /// Remove exactly leanctx's hook entries (and what that emptied).
    Uninstall {
        /// The hosts: cursor, claude-code (claude), codex, codebuddy; one or more.
        #[arg(value_parser = host_parser(), ignore_case = true, required = true, num_args = 1.., value_name = "HOST")]
        hosts: Vec<Host>,
        #[command(flatten)]
        opts: InstallArgs,
    },
    /// Where each host's config is, whether our hooks are in it, and whether they fired.
    Status {
        /// Only this host: cursor, claude-code (claude), codex or codebuddy (default: all).
        #[arg(value_parser = host_parser(), ignore_case = true)]
        host: Option<Host>,
        /// Show this project's files (default: the current dir's).
        #[arg(long, value_name = "DIR")]
        project: Option<PathBuf>,
        /// Print the same report as JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Args)]
pub(crate) struct InstallArgs {
    /// Project scope: the project dir (default: user scope).
    #[arg(long, value_name = "DIR")]
    pub(crate) project: Option<PathBuf>,
    /// Claude Code / CodeBuddy: settings.local.json (with --project).
    #[arg(long, requires = "project")]
    pub(crate) local: bool,
    /// Print the change as a diff, write nothing.
    #[arg(long)]
    pub(crate) dry_run: bool,
    /// Print what was done, per host, as JSON.
    #[arg(long)]
    pub(crate) json: bool,
    /// Leave the MCP server registration (`leanctx serve`) alone: hooks only.
    #[arg(long)]
    pub(crate) no_server: bool,
    /// Register the MCP server even when this binary has no `serve` command
    /// (tests).
    #[arg(long, hide = true, conflicts_with = "no_server")]
    pub(crate) server: bool,
}
