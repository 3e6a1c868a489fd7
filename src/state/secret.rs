//! The data dir's secret: 32 random bytes in `<data dir>/secret` (0600,
//! created with the first record that needs it) that key every content
//! digest, argument fingerprint and name hash the journal stores (BLAKE3
//! keyed mode). An unkeyed hash of a short secret is a dictionary away from
//! the secret (`DB_PIN=4821` came back from a journal in under a second);
//! keyed, a journal read without this file gives nothing away. Whoever can
//! read the secret too (the user, root) can still test guesses: the data
//! dir is private (0700) for that reason.
//!
//! Lengths are stored coarse ([`coarse_len`]): the ledger compares them
//! only alongside the digest, and `leanctx stats` needs a size, not the
//! size.

use crate::fsx;
#[cfg(test)]
use crate::state::ledger::hex32;
use crate::state::ledger::{Content, hex32_str};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The file's name in the data dir.
pub const SECRET_FILE: &str = "secret";
/// Its size: exactly this many bytes, nothing else is a secret.
pub const SECRET_BYTES: usize = 32;

/// Inputs longer than this (one BLAKE3 block) are remembered, one a thread.
const MEMO_OVER: usize = 64;

/// A remembered seal: the key, the input and its digest.
type LongSeal = ([u8; SECRET_BYTES], Vec<u8>, [u8; 32]);

thread_local! {
    /// The last seal of more than one block made on this thread, with its
    /// key and input: the witness seals the same 256 transcript bytes at
    /// every question while nothing is appended, five compressions in
    /// portable code (~3,300 instructions of an in-process stub's ~23,000:
    /// benches/README.md). Compared whole, so only the same key and bytes
    /// get it; in memory only, never written. Names (one block) are not
    /// remembered: a one-shot process would only pay the copy.
    static LAST_LONG: std::cell::RefCell<Option<LongSeal>> = const { std::cell::RefCell::new(None) };
}

/// A data dir's key. Not `Debug`: it is never printed.
#[derive(Clone)]
pub struct Secret([u8; SECRET_BYTES]);

/// Secrets this process has read, by data dir (a long-lived server asks
/// many times; a replaced secret only makes its later records match
/// nothing, which withholds). Most recently used last, at most
/// [`MAX_CACHED`]: unbounded, a process that had read 5,500 data dirs'
/// secrets scanned them all at every question (benches/hooks' serve rows
/// went from 0.41 to 1.66 ms beyond the file read after the micro
/// section's secret row).
static CACHE: Mutex<Vec<(PathBuf, Secret)>> = Mutex::new(Vec::new());

/// Data dirs whose secrets are kept (a server reads one; tests and tools a
/// few). The least recently used goes first; it is only read again.
pub const MAX_CACHED: usize = 8;

impl Secret {
    /// The key itself, for tests and benches that build one.
    pub fn from_bytes(b: [u8; SECRET_BYTES]) -> Secret {
        Secret(b)
    }

    /// Read the secret of `dir`: `Ok(None)` when there is none yet; an error
    /// when the file is not one (a FIFO, a symlink, another user's, readable
    /// by others, not 32 bytes).
    pub fn load(dir: &Path) -> io::Result<Option<Secret>> {
        if let Some(s) = cached(dir) {
            return Ok(Some(s));
        }
        let path = dir.join(SECRET_FILE);
        let Some((f, md)) = fsx::open_state_md(&path, false, SECRET_BYTES as u64)? else { return Ok(None) };
        // State may be group-readable; the secret may not.
        if fsx::mode_of(&md) & 0o077 != 0 {
            return Err(fsx::untrusted(&path, &format!("has mode {:o}: readable by others", fsx::mode_of(&md))));
        }
        // One `read` of the size `fstat` gave (`read_to_end` asked again for
        // the 0 of the end).
        let bytes = fsx::read_opened(&path, &f, &md, &fsx::ReadRule::state(SECRET_BYTES as u64))?;
        let s = from_file(&path, &bytes)?;
        remember(dir, &s);
        Ok(Some(s))
    }

    /// [`Secret::load`], creating it when missing: 32 bytes from the OS, in a
    /// fresh 0600 temp file, published by a hard link (which fails if the
    /// name exists), so a reader never sees a partial secret and, when two
    /// processes race, the loser reads the winner's.
    pub fn load_or_create(dir: &Path) -> io::Result<Secret> {
        if let Some(s) = Secret::load(dir)? {
            return Ok(s);
        }
        let mut key = [0u8; SECRET_BYTES];
        getrandom::fill(&mut key).map_err(|e| io::Error::other(format!("no random bytes from the OS: {e}")))?;
        let tmp = dir.join(format!("{}secret-{}", fsx::TEMP_PREFIX, std::process::id()));
        let _ = std::fs::remove_file(&tmp);
        let write = |path: &Path| -> io::Result<()> {
            let mut f = fsx::create_new(path, 0o600)?;
            io::Write::write_all(&mut f, &key)?;
            f.sync_all()
        };
        let published = write(&tmp).and_then(|()| std::fs::hard_link(&tmp, dir.join(SECRET_FILE)));
        let _ = std::fs::remove_file(&tmp);
        // A file system without hard links: create the name itself. A racer
        // may then read it short for a moment, which it refuses (withholds).
        let published = match published {
            Err(e) if e.kind() != io::ErrorKind::AlreadyExists && dir.join(SECRET_FILE).symlink_metadata().is_err() => {
                write(&dir.join(SECRET_FILE))
            }
            r => r,
        };
        match published {
            Ok(()) => {
                let s = Secret(key);
                remember(dir, &s);
                Ok(s)
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Secret::load(dir)?
                .ok_or_else(|| io::Error::other(format!("{} vanished while created", dir.join(SECRET_FILE).display()))),
            Err(e) => Err(e),
        }
    }

    /// 32 hex digits: the keyed BLAKE3 of `raw` in `domain` (a domain each
    /// for names, fingerprints, refs and digests, so one never stands for
    /// another).
    pub fn seal(&self, domain: &str, raw: &str) -> String {
        self.seal_bytes(domain, raw.as_bytes())
    }

    /// [`Secret::seal`] of bytes that need not be text.
    /// Short inputs (all of them, as a rule) by [`crate::base::blake3_short`],
    /// which spares a fresh process the `blake3` crate's CPU probe.
    pub fn seal_bytes(&self, domain: &str, raw: &[u8]) -> String {
        self.with_seal(domain, raw, str::to_string)
    }

    /// Whether [`Secret::seal_bytes`] of `raw` is `seal`, without making a
    /// string of it (the witness compares the seal of a transcript's tail at
    /// every question).
    pub(crate) fn seal_is(&self, domain: &str, raw: &[u8], seal: &str) -> bool {
        self.with_seal(domain, raw, |s| s == seal)
    }

    /// `*out` = [`Secret::seal_bytes`] of `raw`, in `out`'s own buffer.
    pub(crate) fn seal_into(&self, domain: &str, raw: &[u8], out: &mut String) {
        self.with_seal(domain, raw, |s| {
            out.clear();
            out.push_str(s);
        })
    }

    /// `f` of the seal of `raw` in `domain`. The input (`domain`, a 0, `raw`)
    /// is put together on the stack when it is one block, the seal's hex
    /// always: a stub question seals a few names and a transcript tail or
    /// two, and each seal took two or three allocations (input, hex, the
    /// remembered seal's copy) before it was compared or kept.
    fn with_seal<R>(&self, domain: &str, raw: &[u8], f: impl FnOnce(&str) -> R) -> R {
        let len = domain.len() + 1 + raw.len();
        let is_input = |i: &[u8]| {
            i.len() == len
                && i[..domain.len()] == *domain.as_bytes()
                && i[domain.len()] == 0
                && i[domain.len() + 1..] == *raw
        };
        // Remembered: past one block, up to what `blake3_short` hashes.
        let long = len > MEMO_OVER && len <= crate::base::blake3_short::SHORT_MAX;
        let remembered = long
            .then(|| LAST_LONG.with_borrow(|m| m.as_ref().filter(|(k, i, _)| *k == self.0 && is_input(i)).map(|m| m.2)))
            .flatten();
        if let Some(d) = remembered {
            return f(hex32_str(&mut [0; 32], &d));
        }
        if len <= MEMO_OVER {
            let mut input = [0u8; MEMO_OVER];
            input[..domain.len()].copy_from_slice(domain.as_bytes());
            input[domain.len() + 1..len].copy_from_slice(raw);
            let d = crate::base::blake3_short::keyed(&self.0, &input[..len]);
            return f(hex32_str(&mut [0; 32], &d));
        }
        let mut input = Vec::with_capacity(len);
        input.extend_from_slice(domain.as_bytes());
        input.push(0);
        input.extend_from_slice(raw);
        let d = crate::base::blake3_short::keyed(&self.0, &input);
        if long {
            LAST_LONG.with_borrow_mut(|m| *m = Some((self.0, input, d)));
        }
        f(hex32_str(&mut [0; 32], &d))
    }

    /// The journal's name for a `--key` or `--version`.
    pub fn name(&self, kind: &str, s: &str) -> String {
        self.seal(kind, s)
    }

    /// The journal's form of a call ref: a fingerprint ref (`fp:`) sealed,
    /// a host's call id (`id:`) as it is (an id, not content).
    pub fn seal_ref(&self, r: &str) -> String {
        match r.strip_prefix("fp:") {
            Some(fp) => format!("fp:{}", self.seal("ref", fp)),
            None => r.to_string(),
        }
    }

    /// The journal's form of a call record's argument fingerprint.
    pub fn seal_fp(&self, fp: &str) -> String {
        self.seal("fp", fp)
    }

    /// The journal's form of a result: its digest sealed, its length coarse.
    pub fn seal_content(&self, c: &Content) -> Content {
        Content { digest: self.seal("digest", &c.digest), len: coarse_len(c.len) }
    }
}

/// A length as the journal keeps it: up to 64 bytes, 64; above, rounded up
/// to four significant bits (less than 12.5 % over). A short secret's exact
/// length is not kept; a size for `leanctx stats` is.
pub fn coarse_len(len: u64) -> u64 {
    if len <= 64 {
        return 64;
    }
    // Four significant bits: the unit is 1/8 of the highest bit or less.
    let shift = 60 - len.leading_zeros();
    let unit = 1u64 << shift;
    len.div_ceil(unit).saturating_mul(unit)
}

fn from_file(path: &Path, bytes: &[u8]) -> io::Result<Secret> {
    let key: [u8; SECRET_BYTES] = bytes
        .try_into()
        .map_err(|_| fsx::untrusted(path, &format!("is {} bytes, not a {SECRET_BYTES}-byte secret", bytes.len())))?;
    Ok(Secret(key))
}

fn cached(dir: &Path) -> Option<Secret> {
    find_in(&mut CACHE.lock().unwrap_or_else(|e| e.into_inner()), dir)
}

fn remember(dir: &Path, s: &Secret) {
    keep_in(&mut CACHE.lock().unwrap_or_else(|e| e.into_inner()), dir, s);
}

/// `dir`'s secret in `c`, moved to the back (most recently used).
fn find_in(c: &mut [(PathBuf, Secret)], dir: &Path) -> Option<Secret> {
    // From the back: the dir asked last is asked again.
    let i = c.iter().rposition(|(d, _)| d == dir)?;
    c[i..].rotate_left(1);
    Some(c[c.len() - 1].1.clone())
}

/// Keep `s` for `dir` in `c`, dropping the least recently used past
/// [`MAX_CACHED`].
fn keep_in(c: &mut Vec<(PathBuf, Secret)>, dir: &Path, s: &Secret) {
    if find_in(c, dir).is_some() {
        return;
    }
    if c.len() >= MAX_CACHED {
        c.remove(0);
    }
    c.push((dir.to_path_buf(), s.clone()));
}

/// How many secrets this process keeps now (tests).
#[cfg(test)]
fn cached_len() -> usize {
    CACHE.lock().unwrap_or_else(|e| e.into_inner()).len()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The remembered seal is the seal of the same key and bytes only.
    #[test]
    fn a_long_seal_is_remembered_for_its_key_and_bytes_only() {
        let (a, b) = (Secret([1; SECRET_BYTES]), Secret([2; SECRET_BYTES]));
        let tail: Vec<u8> = (0..256u32).map(|i| (i * 7) as u8).collect();
        let mut other = tail.clone();
        other[255] ^= 1;
        let fresh = |s: &Secret, raw: &[u8]| {
            let mut h = blake3::Hasher::new_keyed(&s.0);
            h.update(b"witness-tail\0");
            h.update(raw);
            hex32(h.finalize().as_bytes())
        };
        for (s, raw) in [(&a, &tail), (&a, &tail), (&b, &tail), (&a, &other), (&a, &tail), (&b, &other)] {
            assert_eq!(s.seal_bytes("witness-tail", raw), fresh(s, raw));
        }
        assert_ne!(a.seal_bytes("witness-tail", &tail), a.seal_bytes("witness-agent-tail", &tail));
        // The same bytes split otherwise between domain and input are
        // another input (the 0 between them moves).
        let mut shifted = b"l".to_vec();
        shifted.extend_from_slice(&tail);
        assert_eq!(a.seal_bytes("witness-tail", &shifted), fresh_in(&a, "witness-tail", &shifted));
        assert_eq!(
            a.seal_bytes("witness-tai", &[b"l".as_slice(), &shifted].concat()),
            fresh_in(&a, "witness-tai", &[b"l".as_slice(), &shifted].concat())
        );
    }

    fn fresh_in(s: &Secret, domain: &str, raw: &[u8]) -> String {
        let mut h = blake3::Hasher::new_keyed(&s.0);
        h.update(domain.as_bytes());
        h.update(&[0]);
        h.update(raw);
        hex32(h.finalize().as_bytes())
    }

    /// Every length, around one block and past what is remembered: the
    /// seal is the `blake3` crate's, and comparing or writing it in place
    /// says the same as the string.
    #[test]
    fn seals_of_every_length_are_blake3s() {
        let s = Secret([7; SECRET_BYTES]);
        let raw: Vec<u8> = (0..1101u32).map(|i| (i * 31 + 5) as u8).collect();
        let mut kept = String::from("an earlier seal, longer than one");
        for n in (0..80).chain([1000, 1017, 1018, 1019, 1023, 1024, 1025, 1100]) {
            for domain in ["digest", "witness-tail"] {
                let want = fresh_in(&s, domain, &raw[..n]);
                assert_eq!(s.seal_bytes(domain, &raw[..n]), want, "{domain} {n}");
                assert!(s.seal_is(domain, &raw[..n], &want), "{domain} {n}");
                assert!(!s.seal_is(domain, &raw[..n], &fresh_in(&s, domain, &raw[..n + 1])), "{domain} {n}");
                s.seal_into(domain, &raw[..n], &mut kept);
                assert_eq!(kept, want, "{domain} {n}");
                // Again: remembered (or not) alike.
                assert_eq!(s.seal_bytes(domain, &raw[..n]), want, "{domain} {n}, again");
            }
        }
    }

    #[test]
    fn coarse_lengths() {
        for (len, want) in [(0, 64), (12, 64), (64, 64), (65, 72), (72, 72), (73, 80), (1000, 1024), (1025, 1152)] {
            assert_eq!(coarse_len(len), want, "{len}");
        }
        for len in [65u64, 100, 4097, 60_000, 1 << 40] {
            let c = coarse_len(len);
            assert!(c >= len && c - len <= len / 8, "{len} -> {c}");
        }
    }

    /// The process's cache stays bounded however many data dirs it reads
    /// (unbounded, every question scanned them all: benches/hooks).
    #[test]
    fn the_cache_is_bounded() {
        let dirs: Vec<_> = (0..3 * MAX_CACHED).map(|_| tempfile::tempdir().unwrap()).collect();
        for d in &dirs {
            Secret::load_or_create(d.path()).unwrap();
            assert!(cached_len() <= MAX_CACHED, "{}", cached_len());
        }
    }

    /// Least recently used out: a dir asked between others stays kept.
    #[test]
    fn the_cache_drops_the_least_recently_used() {
        let key = |i: u8| Secret([i; SECRET_BYTES]);
        let dir = |i: u8| PathBuf::from(format!("/d/{i}"));
        let mut c = Vec::new();
        keep_in(&mut c, &dir(0), &key(0));
        for i in 1..=3 * MAX_CACHED as u8 {
            keep_in(&mut c, &dir(i), &key(i));
            assert_eq!(find_in(&mut c, &dir(0)).map(|s| s.0), Some(key(0).0), "after {i}");
            assert!(c.len() <= MAX_CACHED);
        }
        assert!(find_in(&mut c, &dir(1)).is_none(), "dropped");
        let last = 3 * MAX_CACHED as u8;
        assert_eq!(find_in(&mut c, &dir(last)).map(|s| s.0), Some(key(last).0));
        // Kept again: no duplicate.
        keep_in(&mut c, &dir(last), &key(last));
        assert_eq!(c.iter().filter(|(d, _)| *d == dir(last)).count(), 1);
    }

    #[test]
    fn created_once_0600_and_read_back() {
        let t = tempfile::tempdir().unwrap();
        let a = Secret::load_or_create(t.path()).unwrap();
        let b = Secret::load_or_create(t.path()).unwrap();
        assert_eq!(a.0, b.0);
        let on_disk = std::fs::read(t.path().join(SECRET_FILE)).unwrap();
        assert_eq!(on_disk, a.0);
        #[cfg(unix)]
        assert_eq!(fsx::mode_of(&std::fs::metadata(t.path().join(SECRET_FILE)).unwrap()), 0o600);
        let left: Vec<_> = std::fs::read_dir(t.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(left, [SECRET_FILE], "no temp left");
    }

    #[test]
    fn a_wrong_size_is_refused_and_missing_is_none() {
        let t = tempfile::tempdir().unwrap();
        assert!(Secret::load(t.path()).unwrap().is_none());
        let p = t.path().join(SECRET_FILE);
        std::fs::write(&p, [1u8; 31]).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
        let e = Secret::load(t.path()).err().unwrap().to_string();
        assert!(e.contains("31 bytes"), "{e}");
        assert!(Secret::load_or_create(t.path()).is_err(), "never replaced");
    }

    #[test]
    fn seals_differ_by_key_and_domain() {
        let (a, b) = (Secret([1; 32]), Secret([2; 32]));
        assert_ne!(a.seal("fp", "x"), b.seal("fp", "x"));
        assert_ne!(a.seal("fp", "x"), a.seal("digest", "x"));
        assert_eq!(a.seal("fp", "x").len(), 32);
        assert_eq!(a.seal_ref("id:toolu_1"), "id:toolu_1");
        assert!(a.seal_ref("fp:abc").starts_with("fp:") && a.seal_ref("fp:abc") != "fp:abc");
        let c = Content { digest: "d".into(), len: 12 };
        assert_eq!(a.seal_content(&c), Content { digest: a.seal("digest", "d"), len: 64 });
    }
}
