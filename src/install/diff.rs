//! A small unified diff for `--dry-run`: enough to see what would change,
//! with three lines of context. Config files are small and the change is
//! local, so common prefix/suffix trimming plus an LCS on the rest is fast.

const CONTEXT: usize = 3;
/// Above this many cells the middle is shown as all-removed/all-added.
const LCS_LIMIT: usize = 4_000_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Same,
    Del,
    Add,
}

/// `---`/`+++` headers and `@@` hunks; empty when the texts are equal.
pub fn unified(old: &str, new: &str, old_name: &str, new_name: &str) -> String {
    if old == new {
        return String::new();
    }
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    let ops = script(&a, &b);
    let mut out = format!("--- {old_name}\n+++ {new_name}\n");
    // Walk the script, emitting hunks around changed lines.
    let changed: Vec<usize> =
        ops.iter().enumerate().filter(|(_, (op, _, _))| *op != Op::Same).map(|(i, _)| i).collect();
    let mut k = 0;
    while k < changed.len() {
        let start = changed[k].saturating_sub(CONTEXT);
        let mut end = changed[k];
        while k < changed.len() && changed[k] <= end + 2 * CONTEXT + 1 {
            end = changed[k];
            k += 1;
        }
        let end = (end + CONTEXT + 1).min(ops.len());
        let (a0, b0) = (ops[start].1, ops[start].2);
        let dels = ops[start..end].iter().filter(|o| o.0 != Op::Add).count();
        let adds = ops[start..end].iter().filter(|o| o.0 != Op::Del).count();
        // As in diff(1): an empty side names the line before it.
        let first = |at: usize, n: usize| if n == 0 { at } else { at + 1 };
        out.push_str(&format!("@@ -{},{dels} +{},{adds} @@\n", first(a0, dels), first(b0, adds)));
        for &(op, i, j) in &ops[start..end] {
            match op {
                Op::Same => out.push_str(&format!(" {}\n", a[i])),
                Op::Del => out.push_str(&format!("-{}\n", a[i])),
                Op::Add => out.push_str(&format!("+{}\n", b[j])),
            }
        }
    }
    out
}

/// The edit script: (op, index in a, index in b) — for `Add` the a-index is
/// where it would go, for `Del` the b-index likewise.
fn script(a: &[&str], b: &[&str]) -> Vec<(Op, usize, usize)> {
    let pre = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let suf = a[pre..].iter().rev().zip(b[pre..].iter().rev()).take_while(|(x, y)| x == y).count();
    let (am, bm) = (&a[pre..a.len() - suf], &b[pre..b.len() - suf]);
    let mut ops: Vec<(Op, usize, usize)> = (0..pre).map(|i| (Op::Same, i, i)).collect();
    if am.len().saturating_mul(bm.len()) > LCS_LIMIT {
        ops.extend((0..am.len()).map(|i| (Op::Del, pre + i, pre)));
        ops.extend((0..bm.len()).map(|j| (Op::Add, pre + am.len(), pre + j)));
    } else {
        // lcs[i][j] = LCS length of am[i..] and bm[j..].
        let (n, m) = (am.len(), bm.len());
        let mut lcs = vec![0u32; (n + 1) * (m + 1)];
        for i in (0..n).rev() {
            for j in (0..m).rev() {
                lcs[i * (m + 1) + j] = if am[i] == bm[j] {
                    lcs[(i + 1) * (m + 1) + j + 1] + 1
                } else {
                    lcs[(i + 1) * (m + 1) + j].max(lcs[i * (m + 1) + j + 1])
                };
            }
        }
        let (mut i, mut j) = (0, 0);
        while i < n || j < m {
            if i < n && j < m && am[i] == bm[j] {
                ops.push((Op::Same, pre + i, pre + j));
                i += 1;
                j += 1;
            } else if i < n && (j == m || lcs[(i + 1) * (m + 1) + j] >= lcs[i * (m + 1) + j + 1]) {
                // Deletions first on a tie, like diff(1): "-old" above "+new".
                ops.push((Op::Del, pre + i, pre + j));
                i += 1;
            } else {
                ops.push((Op::Add, pre + i, pre + j));
                j += 1;
            }
        }
    }
    let (a_off, b_off) = (a.len() - suf, b.len() - suf);
    ops.extend((0..suf).map(|k| (Op::Same, a_off + k, b_off + k)));
    ops
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_texts_have_no_diff() {
        assert_eq!(unified("a\nb\n", "a\nb\n", "x", "y"), "");
    }

    #[test]
    fn a_change_shows_with_context() {
        let old = "1\n2\n3\n4\n5\n6\n7\n8\n9\n";
        let new = "1\n2\n3\n4\nfive\n6\n7\n8\n9\n";
        assert_eq!(unified(old, new, "a", "b"), "--- a\n+++ b\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n");
    }

    #[test]
    fn insertions_and_separate_hunks() {
        let old: String = (0..30).map(|i| format!("{i}\n")).collect();
        let new: String = (0..30)
            .filter(|&i| i != 25)
            .flat_map(|i| if i == 2 { vec![format!("{i}\n"), "new\n".into()] } else { vec![format!("{i}\n")] })
            .collect();
        let d = unified(&old, &new, "a", "b");
        assert_eq!(d.matches("@@ -").count(), 2, "{d}");
        assert!(d.contains("+new\n") && d.contains("-25\n"), "{d}");
        assert_eq!(d.lines().filter(|l| l.starts_with('+') && !l.starts_with("+++")).count(), 1);
        assert_eq!(unified("", "x\n", "a", "b"), "--- a\n+++ b\n@@ -0,0 +1,1 @@\n+x\n");
    }
}
