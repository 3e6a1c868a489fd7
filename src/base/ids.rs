//! Validation of identifiers that come from hook payloads and the environment.
//!
//! Ids end up in JSON state, in journal lines and (hashed) in file names. An
//! id that could confuse any of those — path separators, `..`, control
//! characters, tabs, unbounded length — is treated as absent: we withhold
//! rather than store something we cannot trust — or, for the ids a host is
//! known to send in such a shape (Cursor's subagent ids), kept hashed
//! ([`safe_id`]).

/// Longest id we accept. Real ids are UUIDs or short tokens (< 64 bytes).
pub const MAX_ID_LEN: usize = 256;

/// `true` if `s` is a usable id: 1..=256 bytes of `[A-Za-z0-9._:@+=-]`,
/// not made only of dots.
pub fn is_valid_id(s: &str) -> bool {
    !s.is_empty() && s.len() <= MAX_ID_LEN && s.bytes().all(|b| ID_BYTE[b as usize]) && !s.bytes().all(|b| b == b'.')
}

/// The bytes an id may hold, by value: one load a byte, where the rule
/// spelled out took up to eight comparisons (the read path checks a call's
/// ids several times a question).
const ID_BYTE: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        t[b] = c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b':' | b'@' | b'+' | b'=' | b'-');
        b += 1;
    }
    t
};

/// The id if it is valid, else `None`.
pub fn valid_id(s: &str) -> Option<&str> {
    is_valid_id(s).then_some(s)
}

/// The id in a form that is safe to store: itself when valid, else `h:` and
/// the first 32 hex digits of its sha256. Hosts send ids we cannot store
/// as they are (Cursor's `subagent_id` is a Task call id with a newline in
/// it): dropping them lost what they name, while this form is the same for
/// the same raw id (a start and its stop still match), cannot be told from
/// another id by anything but a hash collision, and never carries the raw
/// text. `None` for an empty or blank id (absent).
pub fn safe_id(s: &str) -> Option<String> {
    if is_valid_id(s) {
        return Some(s.to_string());
    }
    if s.trim().is_empty() {
        return None;
    }
    let h = crate::base::fingerprint::sha256_hex(s.as_bytes());
    Some(format!("{HASHED_ID_PREFIX}{}", &h[..32]))
}

/// What [`safe_id`] puts before the hash of an id it could not keep.
pub const HASHED_ID_PREFIX: &str = "h:";

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

    /// The table holds the bytes the rule names, and no other.
    #[test]
    fn id_bytes_are_the_rule() {
        for b in 0..=255u8 {
            assert_eq!(ID_BYTE[b as usize], b.is_ascii_alphanumeric() || b"._:@+=-".contains(&b), "{b}");
        }
    }

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
    fn safe_ids_are_stable_and_valid() {
        assert_eq!(
            safe_id("68bfdc56-c5ac-4f7e-b000-18c5bbb6c9d7").as_deref(),
            Some("68bfdc56-c5ac-4f7e-b000-18c5bbb6c9d7")
        );
        let raw = "call-7e307548-94ae-4cad-a0f5-9f259da62a4a-40\nfc_98235bb8-f81a-95c9-a28f-e733cae6f1d4_0";
        let a = safe_id(raw).unwrap();
        assert_eq!(safe_id(raw).unwrap(), a, "stable");
        assert!(a.starts_with("h:") && a.len() == 34 && is_valid_id(&a), "{a}");
        assert_ne!(safe_id("a/b").unwrap(), safe_id("a/c").unwrap());
        assert!(is_valid_id(&safe_id(&"x".repeat(MAX_ID_LEN + 1)).unwrap()));
        assert!(is_valid_id(&safe_id("..").unwrap()));
        assert_eq!(safe_id(""), None);
        assert_eq!(safe_id(" \n"), None);
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
