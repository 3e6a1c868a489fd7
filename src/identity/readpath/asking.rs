//! One question's memo of the data dir check: a question (a decision, a
//! stub, a delivery) `stat`s the data dir once, not once per step.

use crate::base::paths;
use crate::fsx;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

thread_local! {
    /// How many questions this thread is inside, and the data dir the
    /// outermost found usable: one question `stat`s the data dir once, not
    /// once per step (a decision checked it up to four times). The path's
    /// buffer outlives the question (the flag says whether it holds this
    /// question's dir): one allocation less a question.
    static CHECKED: std::cell::RefCell<(usize, bool, Option<PathBuf>)> = const { std::cell::RefCell::new((0, false, None)) };
    /// The outermost question this thread is inside (see [`question`]).
    static QUESTION: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Numbers questions across threads (0: none), so a journal reader shared by
/// every thread can tell that the one asking now already read it under the
/// lock ([`crate::state::digest::Reader::refresh_in`]).
static NEXT_QUESTION: AtomicU64 = AtomicU64::new(1);

/// Held for one question (see [`CHECKED`]); the memo ends with it.
pub(crate) struct Asking;

impl Drop for Asking {
    fn drop(&mut self) {
        CHECKED.with_borrow_mut(|c| {
            c.0 -= 1;
            if c.0 == 0 {
                c.1 = false;
                QUESTION.set(0);
                fsx::unanchor();
            }
        });
    }
}

pub(crate) fn asking() -> Asking {
    CHECKED.with_borrow_mut(|c| {
        if c.0 == 0 {
            QUESTION.set(NEXT_QUESTION.fetch_add(1, Ordering::Relaxed));
        }
        c.0 += 1;
    });
    Asking
}

/// The question this thread is inside, unique in the process (`None`
/// outside any).
pub(crate) fn question() -> Option<u64> {
    Some(QUESTION.get()).filter(|&q| q != 0)
}

/// [`paths::check_data_dir`], once per question: a success is remembered
/// until the question ends (a failure is checked again, with its reason).
/// A success inside a question also anchors the data dir for it
/// ([`fsx::anchor`]): until the question ends, the `lstat`s of the dir's
/// files (journal, lock files, witness state) may go relative to a handle
/// of the directory this `stat` found, not along the whole path again.
pub(super) fn check_dir(d: &Path) -> Result<(), paths::DirProblem> {
    if CHECKED.with_borrow(|c| c.0 > 0 && c.1 && c.2.as_deref() == Some(d)) {
        return Ok(());
    }
    let md = paths::check_data_dir_md(d)?;
    CHECKED.with_borrow_mut(|c| {
        if c.0 > 0 {
            match &mut c.2 {
                Some(kept) => {
                    let kept = kept.as_mut_os_string();
                    kept.clear();
                    kept.push(d.as_os_str());
                }
                None => c.2 = Some(d.to_path_buf()),
            }
            c.1 = true;
            fsx::anchor(d, &md);
        }
    });
    Ok(())
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// A success holds for its question only, and for its dir only: a dir
    /// opened to others meanwhile is refused by the next question, and
    /// another dir is checked.
    #[test]
    fn a_checked_dir_is_remembered_for_its_question_and_dir_only() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let mode = |d: &Path, m: u32| std::fs::set_permissions(d, std::fs::Permissions::from_mode(m)).unwrap();
        mode(a.path(), 0o700);
        mode(b.path(), 0o777);
        {
            let _q = asking();
            assert!(check_dir(a.path()).is_ok());
            mode(a.path(), 0o777);
            assert!(check_dir(a.path()).is_ok(), "remembered within the question");
            assert!(check_dir(b.path()).is_err(), "another dir is checked");
        }
        let _q = asking();
        assert!(check_dir(a.path()).is_err(), "checked again by the next question");
        mode(a.path(), 0o700);
        assert!(check_dir(a.path()).is_ok());
    }
}
