//! One integration test binary (fast to link), one module per area.

mod support;

mod clock;
mod crash;
mod faults;
mod fuzz;
mod gate;
mod hooks;
mod install;
mod ledger;
mod newuser;
mod readpath;
mod rng;
mod security;
mod sim;
mod sim_ledger;
