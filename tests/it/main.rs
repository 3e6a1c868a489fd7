//! One integration test binary (fast to link), one module per area.

mod support;

mod gate;
mod hooks;
mod install;
mod clock;
mod crash;
mod readpath;
mod rng;
mod security;
