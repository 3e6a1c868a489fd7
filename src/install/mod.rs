//! `leanctx hooks install|uninstall|status`: edit each host's hook config
//! without ever losing a user's data (DESIGN.md §7).

use crate::host::Host;
use std::io::Write;
use std::path::PathBuf;

/// Where and how to install.
#[derive(Clone, Debug, Default)]
pub struct InstallOptions {
    /// Project dir for project scope; `None` = user scope.
    pub project: Option<PathBuf>,
    /// Claude Code / CodeBuddy: `settings.local.json` instead of `settings.json`.
    pub local: bool,
    /// Show the change, write nothing.
    pub dry_run: bool,
}

/// An installer failure, with a message for the user; exit code 1.
#[derive(Debug)]
pub struct InstallError(pub String);

impl std::fmt::Display for InstallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for InstallError {}

pub fn install(host: Host, opts: &InstallOptions, out: &mut dyn Write) -> Result<(), InstallError> {
    let _ = (host, opts, out);
    Err(InstallError("the installer is not built yet".into()))
}

pub fn uninstall(host: Host, opts: &InstallOptions, out: &mut dyn Write) -> Result<(), InstallError> {
    let _ = (host, opts, out);
    Err(InstallError("the installer is not built yet".into()))
}

pub fn status(host: Option<Host>, json: bool, out: &mut dyn Write) -> Result<(), InstallError> {
    let _ = (host, json, out);
    Err(InstallError("the installer is not built yet".into()))
}
