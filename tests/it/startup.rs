//! What every hook process pays before `main`: the shared libraries the
//! dynamic loader maps and searches for each symbol. A new one is a cost on
//! every tool call (libm, pulled in by one `f64::log10` in `leanctx stats`,
//! cost every hook an open, five mmaps and a longer symbol search), so the
//! set is pinned here.

use crate::support::BIN;

/// The `DT_NEEDED` names of a 64-bit little-endian ELF file.
fn needed(elf: &[u8]) -> Vec<String> {
    let u16_at = |o: usize| u16::from_le_bytes(elf[o..o + 2].try_into().unwrap()) as usize;
    let u32_at = |o: usize| u32::from_le_bytes(elf[o..o + 4].try_into().unwrap());
    let u64_at = |o: usize| u64::from_le_bytes(elf[o..o + 8].try_into().unwrap());
    assert_eq!(&elf[..6], b"\x7fELF\x02\x01", "a 64-bit little-endian ELF");
    let (phoff, phentsize, phnum) = (u64_at(0x20) as usize, u16_at(0x36), u16_at(0x38));
    let headers: Vec<usize> = (0..phnum).map(|i| phoff + i * phentsize).collect();
    // A virtual address to its offset in the file, through the PT_LOAD segments.
    let offset_of = |vaddr: u64| {
        headers
            .iter()
            .filter(|&&h| u32_at(h) == 1)
            .find(|&&h| (u64_at(h + 0x10)..u64_at(h + 0x10) + u64_at(h + 0x20)).contains(&vaddr))
            .map(|&h| (vaddr - u64_at(h + 0x10) + u64_at(h + 0x08)) as usize)
            .expect("address in a loaded segment")
    };
    let dynamic = headers.iter().find(|&&h| u32_at(h) == 2).expect("a dynamic section");
    let (start, size) = (u64_at(dynamic + 0x08) as usize, u64_at(dynamic + 0x20) as usize);
    let entries: Vec<(u64, u64)> = (start..start + size).step_by(16).map(|e| (u64_at(e), u64_at(e + 8))).collect();
    let strtab = offset_of(entries.iter().find(|e| e.0 == 5).expect("DT_STRTAB").1);
    entries
        .iter()
        .filter(|e| e.0 == 1)
        .map(|e| {
            let s = &elf[strtab + e.1 as usize..];
            String::from_utf8_lossy(&s[..s.iter().position(|&b| b == 0).unwrap()]).into_owned()
        })
        .collect()
}

#[test]
fn the_binary_loads_only_libc_and_libgcc() {
    let elf = std::fs::read(BIN).unwrap();
    let mut libs = needed(&elf);
    libs.sort();
    // Static builds (musl) need nothing; a glibc build needs libc, and
    // libgcc_s for unwinding (a hook's panic is caught and answered).
    let allowed = ["libc.so.6", "libgcc_s.so.1", "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1"];
    let extra: Vec<&String> = libs.iter().filter(|l| !allowed.contains(&l.as_str())).collect();
    if cfg!(target_env = "gnu") {
        assert!(libs.iter().any(|l| l == "libc.so.6"), "{libs:?}");
    }
    assert!(extra.is_empty(), "every hook process now loads {extra:?} too (all: {libs:?})");
}

/// The `memchr` crate's top-level searches ask the CPU for AVX2 on their
/// first call in a process (std's feature detection: nine `cpuid`, each a
/// trap to the hypervisor under a VM, 5–25 µs here): a one-shot `leanctx
/// stub` that read its transcript paid them on every question. Every
/// search goes through `base::bytes`, which uses the crate's SSE2 searcher
/// (no probe) on x86_64.
#[test]
fn byte_searches_go_through_base_bytes() {
    fn rs_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                rs_files(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rs_files(&src, &mut files);
    assert!(files.len() > 50, "{} source files found", files.len());
    let own = src.join("base").join("bytes.rs");
    let calls: Vec<String> = files
        .iter()
        .filter(|p| **p != own)
        .flat_map(|p| {
            let text = std::fs::read_to_string(p).unwrap();
            let lines: Vec<String> = text
                .lines()
                .enumerate()
                .filter(|(_, l)| !l.trim_start().starts_with("//") && l.contains("memchr::"))
                .map(|(i, l)| format!("{}:{}: {}", p.display(), i + 1, l.trim()))
                .collect();
            lines
        })
        .collect();
    assert!(calls.is_empty(), "memchr called directly (use leanctx::base::bytes):\n{}", calls.join("\n"));
}
