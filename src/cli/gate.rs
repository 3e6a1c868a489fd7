//! `leanctx gate check`.

use super::{print_out, to_json};
use crate::Host;
use crate::base::paths;
use std::path::PathBuf;

pub(crate) fn gate_check(
    host: Host,
    tool: &str,
    server: Option<&str>,
    cwd: Option<PathBuf>,
    json: bool,
) -> Result<u8, super::error::CliError> {
    let here = || std::env::current_dir().map_err(|e| super::error::CliError::caused(format!("current dir: {e}"), e));
    // A relative --cwd is the workspace as seen from here (the hook only
    // ever gets absolute ones).
    let cwd = match cwd {
        Some(c) if c.is_absolute() => c,
        Some(c) => here()?.join(c),
        None => here()?,
    };
    let report = crate::status::gate::explain(host, tool, server, &paths::data_dir_path(), &cwd);
    print_out(&if json { to_json(&report)? } else { report.human() })?;
    Ok(0)
}
