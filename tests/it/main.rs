//! One integration test binary (fast to link), one module per area.

mod support;

mod gate;
mod hooks;
mod install;
mod clock;
mod readpath;
mod security;
