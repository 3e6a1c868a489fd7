//! JSON arguments (`--call`, `--result`) from a file or stdin, bounded.

use super::args::CallArg;
use super::error::CliError;
use crate::hook::payload as stdin;
use crate::identity::mcp_call::McpCall;
use std::time::Instant;

/// Read a JSON argument from a file or stdin (`-`), at most `max` bytes.
pub(crate) fn read_json_arg(flag: &str, path: &std::path::Path, max: usize) -> Result<serde_json::Value, CliError> {
    let bytes = if path.as_os_str() == "-" {
        match stdin::read_bounded(max, Instant::now() + stdin::STDIN_DEADLINE) {
            stdin::Input::Complete(b) => b,
            stdin::Input::TimedOut(b) if serde_json::from_slice::<serde_json::Value>(&b).is_ok() => b,
            stdin::Input::TimedOut(_) => return Err(format!("{flag} -: stdin did not close in time").into()),
            stdin::Input::TooLarge { .. } => return Err(format!("{flag} -: larger than {max} bytes").into()),
            stdin::Input::Error(e) => return Err(CliError::caused(format!("{flag} -: {e}"), e)),
        }
    } else {
        // A file: the bounded read (a FIFO, a device or a file over `max` is
        // refused at once; `-` is the way to pipe). Read under the same
        // deadline as stdin.
        let rule = crate::fsx::ReadRule { deadline: stdin::STDIN_DEADLINE, ..crate::fsx::ReadRule::any(max as u64) };
        match crate::fsx::read_file(path, &rule) {
            Ok(Some(b)) => b,
            Ok(None) => return Err(format!("{flag} {}: no such file", path.display()).into()),
            Err(e) => return Err(CliError::caused(format!("{flag}: {e}"), e)),
        }
    };
    serde_json::from_slice(&bytes).map_err(|e| CliError::caused(format!("{flag}: not JSON: {e}"), e))
}

/// Read an MCP call from a file or stdin (bounded like a hook payload).
pub(crate) fn read_call(arg: &CallArg) -> Result<Option<McpCall>, CliError> {
    let Some(path) = &arg.call else { return Ok(None) };
    let v = read_json_arg("--call", path, stdin::MAX_PAYLOAD_BYTES)?;
    McpCall::from_json(&v).map(Some).ok_or_else(|| "--call: no tool name (params.name) in the call".into())
}
