//! `leanctx hooks install|uninstall|status`: edit each host's hook config
//! without ever losing a user's data (README: "Installing into host configs").
//!
//! An edit is: find the file (following symlinks to the real one), lock its
//! directory, read and parse it strictly (JSON; comments where the host
//! reads them, see [`target::accepts_comments`]; duplicate keys and wrong
//! shapes are refused with `file:line:col` and the file is left
//! byte-for-byte alone), change only our entries (recognised by program,
//! see [`command`]) by splicing them into the original text ([`jsonfile`]),
//! and, if anything changed, back the file up once and replace it
//! atomically with its mode (and owner) kept. The entries come from
//! `hooks/<host>.json` ([`spec`]). Codex also reads hooks from
//! `config.toml`, edited with toml_edit ([`tomlfile`]).

pub mod command;
pub mod cursor;
pub mod diff;
pub mod edit;
pub mod entries;
pub mod fsio;
pub mod inspect;
pub mod jsonfile;
pub mod nested;
pub mod presence;
pub mod server;
pub mod spec;
pub mod target;
pub mod tomlfile;

use crate::base::host::Host;
use edit::{Changes, ShapeError};
use jsonfile::Node;
use spec::Spec;
use std::fs;
use std::io::{self, Write};
use std::path::PathBuf;
use target::{Scope, Target};

/// Where and how to install.
#[derive(Clone, Debug, Default)]
pub struct InstallOptions {
    /// Project dir for project scope; `None` = user scope.
    pub project: Option<PathBuf>,
    /// Claude Code / CodeBuddy: `settings.local.json` instead of `settings.json`.
    pub local: bool,
    /// Show the change, write nothing.
    pub dry_run: bool,
    /// User scope: create the host's config dir when it does not exist
    /// (otherwise a missing dir means the host is not installed: refuse).
    pub create: bool,
    /// User scope: when the host's config dir does not exist, say so and
    /// succeed (for installers that try every host).
    pub if_present: bool,
    /// Set once the Cursor/Claude Code note has been printed: a run over
    /// several hosts says it once.
    pub overlap_noted: std::cell::Cell<bool>,
    /// User scope: also register (uninstall: unregister) `leanctx serve`
    /// as the host's MCP server ([`server`]).
    pub server: bool,
}

/// What an install or uninstall did to one host (`--json`).
#[derive(Debug, Default, serde::Serialize)]
pub struct Report {
    pub host: Option<Host>,
    pub ok: bool,
    /// Install only: the host's config dir does not exist and `--if-present`
    /// skipped it.
    pub skipped: bool,
    pub dry_run: bool,
    pub files: Vec<FileChange>,
    pub notes: Vec<String>,
    pub warnings: Vec<String>,
    pub error: Option<String>,
}

/// One config file's change.
#[derive(Debug, Default, serde::Serialize)]
pub struct FileChange {
    #[serde(serialize_with = "crate::base::paths::lossy::path")]
    pub path: PathBuf,
    /// `user`, `project <dir>`, `project <dir> (local)`.
    pub scope: String,
    pub added: Vec<String>,
    pub updated: Vec<String>,
    pub removed: Vec<String>,
    /// Nothing to do: the file was already as asked.
    pub unchanged: bool,
    /// The config dir was (or, dry run, would be) created.
    pub created_dir: bool,
    /// The file held only leanctx's entries and was removed.
    pub deleted: bool,
    #[serde(serialize_with = "crate::base::paths::lossy::opt")]
    pub backup: Option<PathBuf>,
    /// The real file, when the config is a symlink.
    #[serde(serialize_with = "crate::base::paths::lossy::opt")]
    pub via_link: Option<PathBuf>,
    /// `--dry-run`: the unified diff of the change.
    pub diff: Option<String>,
}

impl FileChange {
    fn of(t: &Target, res: &EditResult, dry_run: bool) -> FileChange {
        FileChange {
            path: t.file.clone(),
            scope: t.describe_scope(),
            added: res.changes.added.clone(),
            updated: res.changes.updated.clone(),
            removed: res.changes.removed.clone(),
            unchanged: res.changes.is_empty(),
            created_dir: false,
            deleted: res.deleted,
            backup: res.backup.clone(),
            via_link: res.via_link.clone(),
            diff: (dry_run && !res.diff.is_empty()).then(|| res.diff.clone()),
        }
    }
}

/// An installer failure, with a message for the user (exit code 1) and,
/// when an I/O error caused it, that error ([`std::error::Error::source`]).
#[derive(Debug)]
pub struct InstallError {
    message: String,
    cause: Option<io::Error>,
}

impl InstallError {
    /// A failure `what` on `path` because of `cause`: "cannot write <path>: <cause>".
    pub fn io(what: &str, path: &std::path::Path, cause: io::Error) -> InstallError {
        InstallError { message: format!("{what} {}: {cause}", path.display()), cause: Some(cause) }
    }

    /// The message for the user.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl std::fmt::Display for InstallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for InstallError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.cause.as_ref().map(|e| e as _)
    }
}

impl From<String> for InstallError {
    fn from(message: String) -> Self {
        InstallError { message, cause: None }
    }
}

pub(crate) fn out_err(e: io::Error) -> InstallError {
    InstallError { message: format!("cannot write output: {e}"), cause: Some(e) }
}

pub fn install(host: Host, opts: &InstallOptions, out: &mut dyn Write) -> Result<Report, InstallError> {
    let mut rep = Report { host: Some(host), ok: true, dry_run: opts.dry_run, ..Report::default() };
    let t = target::resolve(host, opts.project.as_deref(), opts.local)?;
    let dir_exists = t.dir.is_dir();
    if !dir_exists && t.dir.exists() {
        return Err(InstallError::from(format!("{} is not a directory", t.dir.display())));
    }
    let asked = opts.create || matches!(t.scope, Scope::Project { .. });
    // Not asked for by name into a dir that is there: only a host that is
    // really installed (its program on PATH, or a config dir in use). A
    // host whose program is found gets its config dir created.
    let presence = (!asked && (opts.if_present || !dir_exists)).then(|| presence::detect(host, &t.dir));
    if let Some(p) = presence.as_ref().filter(|p| !p.found()) {
        if opts.if_present {
            writeln!(out, "{host}: skipped: {}", p.why()).map_err(out_err)?;
            rep.skipped = true;
            rep.notes.push(format!("skipped: {}", p.why()));
            return Ok(rep);
        }
        return Err(InstallError::from(format!(
            "{host} does not look installed here ({}); nothing written \
             (use --create to create {} anyway, or --project <DIR> for a project)",
            p.why(),
            t.dir.display()
        )));
    }
    let bin = command::hook_binary()?;
    let bin_str = bin.to_str().ok_or_else(|| format!("the binary path {} is not UTF-8", bin.display()))?;
    let word = command::program_word(bin_str)?;
    let spec = Spec::for_host(host, &word);
    let t = if host == Host::Codex { codex_file(t)? } else { t };
    let server = opts.server && t.scope == Scope::User;
    if server && !opts.dry_run {
        // A server config leanctx would refuse is refused before the hooks
        // are written, so a refusal writes nothing at all.
        server_edit(host, Some(&server_program(bin_str)), true, &mut io::sink(), &mut Report::default())?;
    }
    let res = if is_toml(&t) {
        edit_config(&t, opts.dry_run, false, false, |text| toml_edit_with(&t, text, |doc| nested::upsert(doc, &spec)))?
    } else {
        edit_config(&t, opts.dry_run, !dir_exists, false, |text| {
            json_edit_with(&t, text, &entries::skeleton(host), |doc| entries::upsert(doc, &spec))
        })?
    };

    writeln!(out, "{host} ({}): {}", t.describe_scope(), t.file.display()).map_err(out_err)?;
    // As written: quoted on Unix, forward slashes and no `\\?\` on Windows.
    writeln!(out, "  hooks run {word} hook {host}").map_err(out_err)?;
    if !bin.is_file() {
        let w = format!("{} does not exist (yet); the hooks will fail until it does", bin.display());
        writeln!(out, "  warning: {w}").map_err(out_err)?;
        rep.warnings.push(w);
    }
    if !dir_exists {
        let verb = if opts.dry_run { "would create" } else { "created" };
        writeln!(out, "  {verb} {}", t.dir.display()).map_err(out_err)?;
    }
    report(&res, opts.dry_run, spec.entries.len(), out)?;
    rep.files.push(FileChange { created_dir: !dir_exists, ..FileChange::of(&t, &res, opts.dry_run) });
    if server {
        server_edit(host, Some(&server_program(bin_str)), opts.dry_run, out, &mut rep)?;
    } else if opts.server {
        // Its command is this user's binary path: not for a project's
        // checked-in config.
        let note = format!("the MCP server is registered per user: `leanctx hooks install {host}` without --project");
        writeln!(out, "  note: {note}").map_err(out_err)?;
        rep.notes.push(note);
    }
    if res.changes.is_empty() {
        return Ok(rep);
    }
    for note in host_notes(host, &t) {
        writeln!(out, "  note: {note}").map_err(out_err)?;
        rep.notes.push(note);
    }
    if matches!(host, Host::ClaudeCode | Host::Cursor) && overlap_installed(host) {
        if !opts.overlap_noted.replace(true) {
            writeln!(out, "  note: {}", crate::hosts::overlap::NOTE).map_err(out_err)?;
        }
        rep.notes.push(crate::hosts::overlap::NOTE.to_string());
    }
    Ok(rep)
}

/// What `t`'s file held before leanctx first changed it, from its backup.
fn before(t: &Target) -> edit::Before {
    fs::read_to_string(fsio::backup_path(&t.file)).map(|b| edit::Before::of(&b)).unwrap_or_default()
}

/// Remove leanctx's entries. The report's `ok` is set; whether anything
/// changed is in its files. (The caller says once that the binary stays.)
pub fn uninstall(host: Host, opts: &InstallOptions, out: &mut dyn Write) -> Result<Report, InstallError> {
    let mut rep = Report { host: Some(host), ok: true, dry_run: opts.dry_run, ..Report::default() };
    let t = target::resolve(host, opts.project.as_deref(), opts.local)?;
    writeln!(out, "{host} ({}): {}", t.describe_scope(), t.file.display()).map_err(out_err)?;
    if !t.dir.is_dir() {
        writeln!(out, "  {} does not exist; nothing to remove", t.dir.display()).map_err(out_err)?;
        return Ok(rep);
    }
    // Codex: hooks may be in config.toml too; take ours out of both.
    let toml = (host == Host::Codex).then(|| toml_target(&t)).filter(|c| c.file.is_file());
    if fs::symlink_metadata(&t.file).is_err() {
        writeln!(out, "  no such file; nothing to remove").map_err(out_err)?;
    } else {
        let res = edit_config(&t, opts.dry_run, false, true, |text| {
            json_edit_with(&t, text, &entries::skeleton(host), |doc| entries::remove(host, doc, &before(&t)))
        })?;
        report(&res, opts.dry_run, 0, out)?;
        rep.files.push(FileChange::of(&t, &res, opts.dry_run));
    }
    if let Some(c) = toml {
        let res = edit_config(&c, opts.dry_run, false, true, |text| {
            toml_edit_with(&c, text, |doc| nested::remove(doc, host, &edit::Before::default()))
        })?;
        if !res.changes.is_empty() {
            writeln!(out, "{host} ({}): {}", c.describe_scope(), c.file.display()).map_err(out_err)?;
            report(&res, opts.dry_run, 0, out)?;
            rep.files.push(FileChange::of(&c, &res, opts.dry_run));
        }
    }
    if opts.server && t.scope == Scope::User {
        server_edit(host, None, opts.dry_run, out, &mut rep)?;
    }
    Ok(rep)
}

/// The binary as the server entry's `command`: a path hosts start without
/// a shell (an argv word: unquoted, in the platform's own form, `C:\…\leanctx.exe`
/// on Windows, without the `\\?\` prefix `canonicalize` gives there).
fn server_program(bin: &str) -> String {
    command::native_path(bin)
}

/// The file that holds `host`'s user-scope MCP servers, as a target.
pub fn server_target(host: Host) -> Result<Target, InstallError> {
    let file = crate::hosts::profile::profile(host).server_file(target::home)?;
    let dir = file.parent().map(PathBuf::from).unwrap_or_default();
    Ok(Target { host, scope: Scope::User, dir, file })
}

/// Register `leanctx serve` (`program`: the binary) or, with `None`,
/// unregister it, in the host's user MCP config ([`server`]); the same
/// edit as the hooks': bytes kept, strict parse, lock, backup, dry run.
fn server_edit(
    host: Host,
    program: Option<&str>,
    dry_run: bool,
    out: &mut dyn Write,
    rep: &mut Report,
) -> Result<(), InstallError> {
    let t = server_target(host)?;
    if program.is_none() && fs::symlink_metadata(&t.file).is_err() {
        return Ok(());
    }
    let table = crate::hosts::profile::profile(host).server.table;
    let res = if is_toml(&t) {
        edit_config(&t, dry_run, false, program.is_none(), |text| {
            toml_edit_in(&t, table, text, |doc| match program {
                Some(p) => server::upsert(doc, host, p),
                None => server::remove(doc, host),
            })
        })?
    } else {
        edit_config(&t, dry_run, false, program.is_none(), |text| {
            json_edit_with(&t, text, &serde_json::json!({}), |doc| match program {
                Some(p) => server::upsert(doc, host, p),
                None => server::remove(doc, host),
            })
        })?
    };
    if program.is_some() || !res.changes.is_empty() {
        writeln!(out, "{host} MCP server (user): {}", t.file.display()).map_err(out_err)?;
        if let Some(p) = program {
            writeln!(out, "  the host runs {p} {}", server::SUBCOMMAND).map_err(out_err)?;
        }
        report(&res, dry_run, usize::from(program.is_some()), out)?;
        rep.files.push(FileChange::of(&t, &res, dry_run));
    }
    if program.is_some() && !res.changes.is_empty() {
        let note = crate::hosts::profile::profile(host).server.note.to_string();
        writeln!(out, "  note: {note}").map_err(out_err)?;
        rep.notes.push(note);
    }
    Ok(())
}

/// Said once after an uninstall that removed something.
pub const BINARY_STAYS: &str = "(the leanctx binary stays; remove it with `cargo uninstall leanctx` or by deleting it)";

/// What an edit did (or would do).
struct EditResult {
    changes: Changes,
    diff: String,
    backup: Option<PathBuf>,
    /// The real file, when the config is a symlink.
    via_link: Option<PathBuf>,
    /// The file was leanctx's alone and is gone.
    deleted: bool,
}

fn report(res: &EditResult, dry_run: bool, expected: usize, out: &mut dyn Write) -> Result<(), InstallError> {
    let w = |out: &mut dyn Write, s: String| writeln!(out, "{s}").map_err(out_err);
    if let Some(real) = &res.via_link {
        w(out, format!("  (a symlink: editing its target {})", real.display()))?;
    }
    if res.changes.is_empty() {
        let what = if expected > 0 {
            format!("already up to date ({expected} entries)")
        } else {
            "no leanctx entries".to_string()
        };
        return w(out, format!("  {what}; nothing written"));
    }
    if dry_run {
        out.write_all(res.diff.as_bytes()).map_err(out_err)?;
        return w(out, format!("  would have: {}", res.changes.summary()) + "\n  dry run: nothing written");
    }
    w(out, format!("  {}", res.changes.summary()))?;
    if res.deleted {
        w(out, "  the file held only leanctx's entries (leanctx created it): removed".into())?;
    }
    if let Some(b) = &res.backup {
        // Made only when none exists, so it holds the file before this change
        // (the user's original, unless leanctx created the file).
        w(out, format!("  backup of the file before this change: {}", b.display()))?;
    }
    Ok(())
}

fn fail_at(t: &Target, pos: jsonfile::Pos, msg: &str) -> InstallError {
    InstallError::from(format!("{}:{}:{}: {msg}; nothing written", t.file.display(), pos.line, pos.col))
}

/// Read, change with `f`, write if changed. See the module doc.
fn edit_config(
    t: &Target,
    dry_run: bool,
    create_dir: bool,
    uninstalling: bool,
    transform: impl FnOnce(&str) -> Result<Edit, InstallError>,
) -> Result<EditResult, InstallError> {
    let io_err = InstallError::io;
    if create_dir && !dry_run {
        fs::create_dir_all(&t.dir).map_err(|e| io_err("cannot create", &t.dir, e))?;
    }
    let real = fsio::real_path(&t.file).map_err(|e| io_err("cannot resolve", &t.file, e))?;
    let real_dir = real.parent().map(|p| p.to_path_buf()).unwrap_or_else(|| PathBuf::from("/"));
    let _lock = if real_dir.is_dir() {
        Some(fsio::lock_dir(&real_dir).map_err(|e| io_err("cannot lock", &real_dir, e))?)
    } else if dry_run {
        None
    } else {
        return Err(InstallError::from(format!(
            "{} points into {}, which does not exist; nothing written",
            t.file.display(),
            real_dir.display()
        )));
    };

    let (old, keep) = match fs::metadata(&real) {
        Ok(md) if !md.is_file() => return Err(InstallError::from(format!("{} is not a regular file", real.display()))),
        Ok(md) => {
            let bytes = fsio::read_config_bytes(&real).map_err(|e| io_err("cannot read", &real, e))?;
            (bytes, Some(crate::fsx::Keep::of(&md)))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => (None, None),
        Err(e) => return Err(io_err("cannot read", &real, e)),
    };
    let old_text = match &old {
        None => String::new(),
        Some(b) => match std::str::from_utf8(b) {
            Ok(s) => s.to_string(),
            Err(e) => {
                let good = std::str::from_utf8(&b[..e.valid_up_to()]).unwrap_or_default();
                return Err(fail_at(t, jsonfile::pos_of(good, good.len()), "not UTF-8 text"));
            }
        },
    };
    let Edit { changes, text: new_text, skeleton } = transform(&old_text)?;
    let via_link = (real != t.file).then(|| real.clone());
    if changes.is_empty() {
        return Ok(EditResult { changes, diff: String::new(), backup: None, via_link, deleted: false });
    }
    // Uninstalling from a file leanctx created leaves nothing, as before.
    let bak = fsio::backup_path(&t.file);
    let delete = uninstalling && skeleton && via_link.is_none() && !bak.exists();
    let name = t.file.display().to_string();
    let diff = if dry_run {
        let old_name = if old.is_some() { name.clone() } else { "/dev/null".into() };
        let new_name = if delete { "/dev/null".into() } else { name.clone() };
        diff::unified(&old_text, if delete { "" } else { &new_text }, &old_name, &new_name)
    } else {
        String::new()
    };
    if dry_run || (new_text == old_text && !delete) {
        return Ok(EditResult { changes, diff, backup: None, via_link, deleted: false });
    }
    if delete {
        fs::remove_file(&real).map_err(|e| io_err("cannot remove", &real, e))?;
        crate::fsx::sync_dir(&real_dir).map_err(|e| io_err("cannot sync", &real_dir, e))?;
        return Ok(EditResult { changes, diff, backup: None, via_link, deleted: true });
    }
    let backup = match (&old, keep) {
        (Some(bytes), Some(m)) => {
            fsio::backup_once(&t.file, bytes, m).map_err(|e| io_err("cannot write the backup of", &t.file, e))?
        }
        _ => None,
    };
    crate::fsx::replace_durable(&real, new_text.as_bytes(), keep).map_err(|e| io_err("cannot write", &real, e))?;
    Ok(EditResult { changes, diff, backup, via_link, deleted: false })
}

/// What a format's edit made of a file.
struct Edit {
    changes: Changes,
    text: String,
    /// Nothing is left but what leanctx itself would write into an empty
    /// file (`{}`, Cursor's `{"version": 1}`).
    skeleton: bool,
}

/// A JSON config edited by `f` ([`jsonfile`]).
/// `skeleton`: what is left of a file leanctx created once ours is removed.
fn json_edit_with(
    t: &Target,
    text: &str,
    skeleton: &serde_json::Value,
    f: impl FnOnce(&mut Node) -> Result<Changes, ShapeError>,
) -> Result<Edit, InstallError> {
    let mut doc = jsonfile::parse(text, target::accepts_comments(t.host)).map_err(|e| fail_at(t, e.pos, &e.msg))?;
    let changes = f(&mut doc.root)
        .map_err(|e| fail_at(t, doc.pos(e.at), &format!("{} (leanctx will not guess how to merge into it)", e.msg)))?;
    Ok(Edit { skeleton: doc.root.to_value() == *skeleton, text: doc.render(), changes })
}

/// Codex's config.toml edited by `f` ([`tomlfile`]): only its hooks.
fn toml_edit_with(
    t: &Target,
    text: &str,
    f: impl FnOnce(&mut Node) -> Result<Changes, ShapeError>,
) -> Result<Edit, InstallError> {
    // Hooks go into a config.toml only when it already held some: never
    // removed as a skeleton.
    toml_edit_in(t, "hooks", text, f).map(|e| Edit { skeleton: false, ..e })
}

/// Codex's config.toml edited by `f`: only its top-level `key`. A file that
/// is left empty counts as a skeleton (an uninstall removes it when
/// leanctx created it, as for JSON: no backup, not a link).
fn toml_edit_in(
    t: &Target,
    key: &str,
    text: &str,
    f: impl FnOnce(&mut Node) -> Result<Changes, ShapeError>,
) -> Result<Edit, InstallError> {
    let mut doc = tomlfile::parse(text).map_err(|e| fail_at(t, e.pos, &e.msg))?;
    let mut tree = doc.tree_of(key);
    let changes = f(&mut tree)
        .map_err(|e| fail_at(t, doc.pos(e.at), &format!("{} (leanctx will not guess how to merge into it)", e.msg)))?;
    if !changes.is_empty() {
        doc.apply_of(key, &tree);
    }
    let text = doc.render();
    Ok(Edit { changes, skeleton: text.trim().is_empty(), text })
}

fn is_toml(t: &Target) -> bool {
    t.file.extension().is_some_and(|e| e == "toml")
}

/// Codex's config.toml beside its hooks.json.
fn toml_target(t: &Target) -> Target {
    Target { file: t.dir.join("config.toml"), ..t.clone() }
}

/// Where Codex's entries go: hooks.json, unless config.toml already has
/// ours (upgrade them there) or holds the user's hooks while hooks.json
/// does not exist (one representation per layer, as Codex advises). Never
/// both: Codex runs the hooks of both files.
fn codex_file(t: Target) -> Result<Target, InstallError> {
    let c = toml_target(&t);
    let text = match fsio::read_config(&c.file) {
        Ok(Some(text)) => text,
        Ok(None) => return Ok(t),
        // Codex cannot read it either; editing hooks.json beside it is safe,
        // but say what is wrong rather than guess what it holds.
        Err(e) => return Err(InstallError::io("cannot read", &c.file, e)),
    };
    let doc = tomlfile::parse(&text)
        .map_err(|e| fail_at(&c, e.pos, &format!("{} (Codex reads its hooks here too)", e.msg)))?;
    let in_toml = !nested::find(&doc.tree().to_value(), Host::Codex).is_empty();
    let in_json = fsio::read_config(&t.file)
        .ok()
        .flatten()
        .and_then(|s| jsonfile::parse(&s, false).ok())
        .is_some_and(|d| !nested::find(&d.root.to_value(), Host::Codex).is_empty());
    if in_toml && in_json {
        return Err(InstallError::from(format!(
            "leanctx entries are in both {} and {}, and Codex runs both; nothing written \
             (`leanctx hooks uninstall codex` removes them from both, then install again)",
            t.file.display(),
            c.file.display()
        )));
    }
    let json_exists = fs::symlink_metadata(&t.file).is_ok();
    Ok(if in_toml || (!json_exists && doc.has_hooks()) { c } else { t })
}

/// What each host needs the user to know after its config changed.
fn host_notes(host: Host, t: &Target) -> Vec<String> {
    let p = crate::hosts::profile::profile(host);
    let project = matches!(t.scope, Scope::Project { .. });
    std::iter::once(p.install_note).chain(p.project_note.filter(|_| project)).map(str::to_string).collect()
}

/// The other side of the Cursor/Claude overlap has our entries (user scope).
fn overlap_installed(host: Host) -> bool {
    let other = if host == Host::Cursor { Host::ClaudeCode } else { Host::Cursor };
    inspect::user_entries(other).is_some_and(|n| n > 0)
}
