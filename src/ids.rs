//! Validation of identifiers that come from hook payloads and the environment.
//!
//! Ids end up in JSON state, in journal lines and (hashed) in file names. An
//! id that could confuse any of those — path separators, `..`, control
//! characters, tabs, unbounded length — is treated as absent: we withhold
//! rather than store something we cannot trust.

/// Longest id we accept. Real ids are UUIDs or short tokens (< 64 bytes).
pub const MAX_ID_LEN: usize = 256;

/// `true` if `s` is a usable id: 1..=256 bytes of `[A-Za-z0-9._:@+=-]`,
/// not made only of dots.
pub fn is_valid_id(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= MAX_ID_LEN
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"._:@+=-".contains(&b))
        && !s.bytes().all(|b| b == b'.')
}

/// The id if it is valid, else `None`.
pub fn valid_id(s: &str) -> Option<&str> {
    is_valid_id(s).then_some(s)
}

/// Longest tool or server name we keep. Names beyond that are not real MCP names.
pub const MAX_NAME_LEN: usize = 256;

/// `true` if `s` is a name that can be stored as-is in a journal line:
/// printable ASCII without whitespace.
pub fn is_plain_name(s: &str) -> bool {
    !s.is_empty() && s.len() <= MAX_NAME_LEN && s.bytes().all(|b| b.is_ascii_graphic())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn id_table() {
        let cases: &[(&str, bool)] = &[
            ("68bfdc56-c5ac-4f7e-b000-18c5bbb6c9d7", true),
            ("toolu_mock_3ea9fac1ab1948ea", true),
            ("a715a3f764ed27d1d", true),
            ("sa_7c1d2e", true),
            ("abc123", true),
            ("", false),
            (".", false),
            ("..", false),
            ("a/b", false),
            ("../etc", false),
            ("a\0b", false),
            ("a\nb", false),
            ("a\tb", false),
            ("a b", false),
            ("é", false),
        ];
        for (id, ok) in cases {
            assert_eq!(is_valid_id(id), *ok, "{id:?}");
        }
        assert!(!is_valid_id(&"x".repeat(MAX_ID_LEN + 1)));
        assert!(is_valid_id(&"x".repeat(MAX_ID_LEN)));
    }

    #[test]
    fn names() {
        assert!(is_plain_name("mcp__ctx__ctx_read"));
        assert!(is_plain_name("MCP:lean-ctx:ctx_read"));
        assert!(!is_plain_name("a b"));
        assert!(!is_plain_name("a\tb"));
        assert!(!is_plain_name(""));
    }
}
