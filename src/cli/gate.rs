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
    let cwd = match cwd {
        Some(c) => c,
        None => std::env::current_dir().map_err(|e| super::error::CliError::caused(format!("current dir: {e}"), e))?,
    };
    let report = crate::status::gate::explain(host, tool, server, paths::data_dir_path().ok().as_deref(), &cwd);
    print_out(&if json { to_json(&report) } else { report.human() });
    Ok(0)
}
