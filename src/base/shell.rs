//! Splitting a POSIX shell command line into words, as far as leanctx
//! needs to: to recognise its own hook entries in a host's config, and to
//! name an MCP server by the command that starts it.

/// How much of the line to read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Extent {
    /// The first simple command: words end at blanks, the line at an
    /// operator (`; | & < > ( )`, a newline, a backtick), and a
    /// backslash-newline is a line continuation. Expansions (`$X`) are kept
    /// literally.
    FirstCommand,
    /// The whole line as words split at any whitespace, with no operators; a
    /// trailing backslash leaves the words unknown.
    Words,
}

/// The words of `s` (single and double quotes, backslash escapes). `None`
/// when a quote is left open: the words could be anything.
pub fn words(s: &str, extent: Extent) -> Option<Vec<String>> {
    let first = extent == Extent::FirstCommand;
    let mut out = Vec::new();
    let (mut cur, mut in_word) = (String::new(), false);
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '\'' => break,
                        c => cur.push(c),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '"' => break,
                        '\\' => match chars.next()? {
                            '\n' if first => {}
                            c @ ('$' | '`' | '"' | '\\' | '\n') => cur.push(c),
                            c => {
                                cur.push('\\');
                                cur.push(c);
                            }
                        },
                        c => cur.push(c),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some('\n') if first => {}
                    Some(c) => cur.push(c),
                    None if first => {}
                    None => return None,
                }
            }
            ';' | '|' | '&' | '<' | '>' | '(' | ')' | '\n' | '`' if first => break,
            c if if first { c == ' ' || c == '\t' } else { c.is_whitespace() } => {
                if in_word {
                    out.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        out.push(cur);
    }
    Some(out)
}
