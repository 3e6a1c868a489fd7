//! `leanctx hooks install|uninstall|status`.

use super::args::InstallArgs;
use super::to_json;
use crate::Host;
use crate::install;
use std::io::{self, Write};
use std::path::Path;
use std::process::ExitCode;

pub(crate) type InstallFn =
    fn(Host, &install::InstallOptions, &mut dyn Write) -> Result<install::Report, install::InstallError>;

/// `hooks install|uninstall` for each host named (each once, in order): a
/// host that fails does not stop the others; exit 1 if any failed.
pub(crate) fn install_each(
    hosts: &[Host],
    a: InstallArgs,
    create: bool,
    if_present: bool,
    uninstalling: bool,
) -> ExitCode {
    let f: InstallFn = if uninstalling { install::uninstall } else { install::install };
    let opts = install::InstallOptions {
        project: a.project,
        local: a.local,
        dry_run: a.dry_run,
        create,
        if_present,
        overlap_noted: Default::default(),
        // Uninstalling takes ours out whether or not this binary can serve.
        server: a.server || (!a.no_server && (uninstalling || serve_exists())),
    };
    let mut seen = Vec::new();
    let mut reports = Vec::new();
    let mut out = io::stdout().lock();
    let mut sink = io::sink();
    for &h in hosts {
        if seen.contains(&h) {
            continue;
        }
        seen.push(h);
        let w: &mut dyn Write = if a.json { &mut sink } else { &mut out };
        let rep = f(h, &opts, w).unwrap_or_else(|e| {
            if !a.json {
                let _ = out.flush();
                eprintln!("leanctx: {e}");
            }
            install::Report {
                host: Some(h),
                ok: false,
                dry_run: a.dry_run,
                error: Some(e.message().to_string()),
                ..Default::default()
            }
        });
        reports.push(rep);
    }
    let removed = reports.iter().flat_map(|r| &r.files).any(|f| !f.removed.is_empty());
    if a.json {
        match to_json(&reports) {
            Ok(j) => {
                let _ = writeln!(out, "{j}");
            }
            Err(e) => {
                eprintln!("leanctx: {e}");
                return ExitCode::from(2);
            }
        }
    } else if uninstalling && removed && !a.dry_run {
        let _ = writeln!(out, "{}", install::BINARY_STAYS);
    }
    let _ = out.flush();
    if reports.iter().all(|r| r.ok) { ExitCode::SUCCESS } else { ExitCode::from(1) }
}

/// Whether this binary has `leanctx serve`: registering a server the
/// binary cannot run would leave every host with a failing MCP server.
pub(crate) fn serve_exists() -> bool {
    <super::args::Cli as clap::CommandFactory>::command().find_subcommand("serve").is_some()
}

/// `hooks status`.
pub(crate) fn status(host: Option<Host>, project: Option<&Path>, json: bool) -> ExitCode {
    let mut out = io::stdout().lock();
    match crate::status::hooks::print(host, project, json, &mut out) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let _ = out.flush();
            eprintln!("leanctx: {e}");
            ExitCode::from(1)
        }
    }
}
