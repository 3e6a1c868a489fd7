//! The `leanctx` binary: its own entry point, then [`leanctx::cli::run`].

// The entry point is ours, not std's runtime (see `main` below).
#![cfg_attr(not(test), no_main)]

/// The process entry point, without std's runtime setup: a hook is a fresh
/// process on every tool call, and that setup (the main thread's stack guard,
/// read from /proc/self/maps through glibc's sscanf) was a quarter of a
/// hook's instructions (callgrind). What it gave that leanctx needs is done
/// here: standard fds that are closed are opened on /dev/null (else a state
/// file could take fd 1 and receive the answer), SIGPIPE is ignored (a
/// closed pipe is an error, not a death: ripgrep's rule), and stdout is
/// flushed before the exit code is returned.
#[cfg(not(test))]
#[unsafe(no_mangle)]
pub extern "C" fn main(_argc: std::ffi::c_int, _argv: *const *const std::ffi::c_char) -> std::ffi::c_int {
    leanctx::fsx::prepare_process();
    let code = leanctx::cli::run();
    let _ = std::io::Write::flush(&mut std::io::stdout());
    let _ = std::io::Write::flush(&mut std::io::stderr());
    exit_code(code)
}

/// The numeric value of an [`std::process::ExitCode`] (it has no accessor): leanctx only
/// ever exits 0, 1 or 2.
#[cfg(not(test))]
fn exit_code(code: std::process::ExitCode) -> std::ffi::c_int {
    [0u8, 1, 2].into_iter().find(|&n| std::process::ExitCode::from(n) == code).map_or(1, std::ffi::c_int::from)
}
