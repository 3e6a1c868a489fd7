//! One question's memo of the data dir check: a question (a decision, a
//! stub, a delivery) `stat`s the data dir once, not once per step.

use crate::base::paths;
use std::path::{Path, PathBuf};

thread_local! {
    /// How many questions this thread is inside, and the data dir the
    /// outermost found usable: one question `stat`s the data dir once, not
    /// once per step (a decision checked it up to four times).
    static CHECKED: std::cell::RefCell<(usize, Option<PathBuf>)> = const { std::cell::RefCell::new((0, None)) };
}

/// Held for one question (see [`CHECKED`]); the memo ends with it.
pub(crate) struct Asking;

impl Drop for Asking {
    fn drop(&mut self) {
        CHECKED.with_borrow_mut(|c| {
            c.0 -= 1;
            if c.0 == 0 {
                c.1 = None;
            }
        });
    }
}

pub(crate) fn asking() -> Asking {
    CHECKED.with_borrow_mut(|c| c.0 += 1);
    Asking
}

/// [`paths::check_data_dir`], once per question: a success is remembered
/// until the question ends (a failure is checked again, with its reason).
pub(super) fn check_dir(d: &Path) -> Result<(), paths::DirProblem> {
    if CHECKED.with_borrow(|c| c.0 > 0 && c.1.as_deref() == Some(d)) {
        return Ok(());
    }
    let r = paths::check_data_dir(d);
    if r.is_ok() {
        CHECKED.with_borrow_mut(|c| {
            if c.0 > 0 {
                c.1 = Some(d.to_path_buf());
            }
        });
    }
    r
}
