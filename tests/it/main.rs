//! One integration test binary (fast to link), one module per area.

mod support;

mod clock;
// Unix-only modules, never compiled elsewhere (README "Platforms"): crash
// kills hooks with signals and checks modes; faults mounts tmpfs, makes
// FIFOs and read-only dirs; security checks modes, owners, FIFOs and other
// users.
#[cfg(unix)]
mod crash;
#[cfg(unix)]
mod faults;
// Unix-only: FIFOs, device links and other users' files everywhere leanctx reads.
#[cfg(unix)]
mod files;
mod fuzz;
mod gate;
// Unix-only: file modes.
#[cfg(unix)]
mod gate_agree;
mod hook_failopen;
mod hooks;
// Unix-only: FIFOs, symlink loops and modes as transcripts.
#[cfg(unix)]
mod hostile;
mod install;
mod layers;
mod ledger;
mod model;
mod newuser;
mod readpath;
mod rng;
mod secondtry;
mod secret;
#[cfg(unix)]
mod security;
mod serve;
mod serve_panic;
mod serve_protocol;
mod serve_ranges;
mod serve_session;
mod serverinstall;
// Unix-only: the scope-check simulation's fault episodes make FIFOs and
// change the data dir's modes.
#[cfg(unix)]
mod sim;
// Unix-only too: it shares the scope-check simulation's fault episodes.
#[cfg(unix)]
mod sim_ledger;
mod stats;
// How the binary is linked (static-pie, or only libc and libgcc): 64-bit little-endian Linux ELF.
#[cfg(all(target_os = "linux", target_pointer_width = "64", target_endian = "little"))]
mod startup;
mod subagent_compaction;
mod withdrawal;
// Unix-only: FIFOs and modes.
#[cfg(unix)]
mod witness;
#[cfg(unix)]
mod witness_log;
