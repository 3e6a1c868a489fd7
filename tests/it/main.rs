//! One integration test binary (fast to link), one module per area.

mod support;

mod e2e;
mod gate;
mod hooks;
mod install;
mod clock;
mod crash;
mod faults;
mod readpath;
mod rng;
mod security;
