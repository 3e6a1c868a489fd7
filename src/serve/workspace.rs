//! The workspace a read may reach: the client's MCP roots, else the
//! server's working directory; and the file a `path` argument names, after
//! `..` and symlinks are resolved.

use std::path::{Path, PathBuf};

/// The largest file `read` serves (the ledger hashes results up to this).
pub const MAX_FILE_BYTES: u64 = crate::state::ledger::MAX_RESULT_BYTES as u64;
/// How much of a file's start is searched for a NUL byte (binary).
const BINARY_SNIFF_BYTES: usize = 8 * 1024;

/// The roots a read may reach, canonical; the first is where relative
/// paths start.
#[derive(Clone, Debug, Default)]
pub struct Workspace {
    roots: Vec<PathBuf>,
}

/// Why a read was refused: the text the tool error shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refused(pub String);

/// A file that may be served, read whole.
#[derive(Debug)]
pub struct FileText {
    /// Canonical path.
    pub path: PathBuf,
    /// The path as the caller should see it: relative to its root when
    /// inside one.
    pub shown: String,
    pub text: String,
}

impl Workspace {
    /// The server's working directory (no roots from the client).
    pub fn from_cwd() -> Workspace {
        Workspace::from_dirs(std::env::current_dir())
    }

    /// Directories that exist, canonical; others are dropped.
    pub fn from_dirs(dirs: impl IntoIterator<Item = PathBuf>) -> Workspace {
        let roots = dirs.into_iter().filter_map(|d| d.canonicalize().ok()).filter(|d| d.is_dir()).collect();
        Workspace { roots }
    }

    /// The roots of a `roots/list` result (`file://` URIs only).
    pub fn from_roots_result(result: &serde_json::Value) -> Workspace {
        let uris = result.get("roots").and_then(|r| r.as_array()).into_iter().flatten();
        Workspace::from_dirs(uris.filter_map(|r| r.get("uri")?.as_str().and_then(file_uri_path)))
    }

    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
    }

    pub fn is_empty(&self) -> bool {
        self.roots.is_empty()
    }

    /// Resolve `path` (relative to the first root, or absolute) to a
    /// regular text file inside a root, and read it.
    pub fn read(&self, path: &str) -> Result<FileText, Refused> {
        let first = self.roots.first().ok_or_else(|| {
            Refused("no workspace: the client gave no root and the server's directory is gone".into())
        })?;
        let asked = Path::new(path);
        let joined = if asked.is_absolute() { asked.to_path_buf() } else { first.join(asked) };
        let real = joined.canonicalize().map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => Refused(format!("{path}: no such file")),
            _ => Refused(format!("{path}: cannot be resolved: {e}")),
        })?;
        let Some(root) = self.roots.iter().find(|r| real.starts_with(r)) else {
            return Err(Refused(format!("{path}: outside the workspace ({})", self.describe())));
        };
        let md = std::fs::metadata(&real).map_err(|e| Refused(format!("{path}: unreadable: {e}")))?;
        if md.is_dir() {
            return Err(Refused(format!("{path}: is a directory; read takes a file")));
        }
        if !md.is_file() {
            return Err(Refused(format!("{path}: not a regular file")));
        }
        if md.len() > MAX_FILE_BYTES {
            return Err(Refused(format!("{path}: {} bytes, larger than the {MAX_FILE_BYTES} read serves", md.len())));
        }
        let bytes = read_capped(&real).map_err(|e| Refused(format!("{path}: unreadable: {e}")))?;
        if bytes[..bytes.len().min(BINARY_SNIFF_BYTES)].contains(&0) {
            return Err(Refused(format!("{path}: a binary file (a NUL byte); read serves text")));
        }
        let text =
            String::from_utf8(bytes).map_err(|_| Refused(format!("{path}: not UTF-8 text; read serves text")))?;
        let shown = real.strip_prefix(root).map(|p| p.to_string_lossy().into_owned()).unwrap_or_default();
        let shown = if shown.is_empty() { real.to_string_lossy().into_owned() } else { shown };
        Ok(FileText { path: real, shown, text })
    }

    fn describe(&self) -> String {
        self.roots.iter().map(|r| r.display().to_string()).collect::<Vec<_>>().join(", ")
    }
}

/// Read through the one bounded reader (`fsx`): opened without blocking,
/// checked on the handle to be a regular file of at most [`MAX_FILE_BYTES`]
/// (a file that grew meanwhile is refused, not served cut), read under a
/// deadline.
fn read_capped(p: &Path) -> std::io::Result<Vec<u8>> {
    let rule = crate::fsx::ReadRule::any(MAX_FILE_BYTES);
    crate::fsx::read_file(p, &rule)?.ok_or_else(|| std::io::Error::from(std::io::ErrorKind::NotFound))
}

/// The path of a `file://` URI (percent-decoded); `None` for other schemes.
pub fn file_uri_path(uri: &str) -> Option<PathBuf> {
    let rest = uri.strip_prefix("file://")?;
    // `file://host/path`: only the local host (empty or localhost).
    let rest = rest.strip_prefix("localhost").unwrap_or(rest);
    if !rest.starts_with('/') {
        return None;
    }
    let bytes = rest.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(b) = rest.get(i + 1..i + 3).and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    let s = String::from_utf8(out).ok()?;
    // Windows: file:///C:/x → C:/x.
    #[cfg(windows)]
    let s = s.strip_prefix('/').filter(|t| t.as_bytes().get(1) == Some(&b':')).map(str::to_string).unwrap_or(s);
    Some(PathBuf::from(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_uris() {
        assert_eq!(file_uri_path("file:///a/b%20c"), Some(PathBuf::from("/a/b c")));
        assert_eq!(file_uri_path("file://localhost/a"), Some(PathBuf::from("/a")));
        assert_eq!(file_uri_path("file://other/a"), None);
        assert_eq!(file_uri_path("https://x/a"), None);
        assert_eq!(file_uri_path("file:///a%zz"), Some(PathBuf::from("/a%zz")));
    }

    #[test]
    fn reads_are_held_inside_the_roots() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("ws");
        std::fs::create_dir_all(root.join("d")).unwrap();
        std::fs::write(root.join("a.txt"), "hello\n").unwrap();
        std::fs::write(root.join("bin"), b"x\0y").unwrap();
        std::fs::write(root.join("latin1"), b"caf\xe9").unwrap();
        std::fs::write(t.path().join("secret"), "s").unwrap();
        let ws = Workspace::from_dirs([root.clone()]);
        let f = ws.read("a.txt").unwrap();
        assert_eq!((f.shown.as_str(), f.text.as_str()), ("a.txt", "hello\n"));
        assert_eq!(ws.read("d/../a.txt").unwrap().shown, "a.txt");
        let err = |p: &str| ws.read(p).unwrap_err().0;
        assert!(err("../secret").contains("outside the workspace"));
        assert!(err(t.path().join("secret").to_str().unwrap()).contains("outside the workspace"));
        assert!(err("d").contains("directory"));
        assert!(err("bin").contains("binary"));
        assert!(err("latin1").contains("UTF-8"));
        assert!(err("nope").contains("no such file"));
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(t.path().join("secret"), root.join("link")).unwrap();
            assert!(err("link").contains("outside the workspace"));
        }
        assert!(Workspace::default().read("a.txt").unwrap_err().0.contains("no workspace"));
    }
}
