//! What every hook process pays before `main`. A Linux glibc build is
//! installed linked statically (static-pie: installers/install.sh): no
//! dynamic loader, no libraries to map, no symbols to bind, which made
//! every hook and CLI read ~0.4 ms (22–28 %) faster here (benches/README.md).
//! A dynamic build (plain `cargo build`, and what a user's RUSTFLAGS give)
//! must still load no more than libc and libgcc_s: a new library is a cost
//! on every tool call (libm, pulled in by one `f64::log10` in `leanctx
//! stats`, cost every hook an open, five mmaps and a longer symbol search).
//! Both are pinned here, on the real file.

use crate::support::BIN;

/// How a 64-bit little-endian ELF file is linked: its type (`ET_DYN` 3 for
/// a PIE, `ET_EXEC` 2 for a fixed-address one), its interpreter
/// (`PT_INTERP`: the dynamic loader the kernel starts first) and its
/// `DT_NEEDED` libraries.
struct Linkage {
    kind: u16,
    interp: Option<String>,
    needed: Vec<String>,
}

fn linkage(elf: &[u8]) -> Linkage {
    let u16_at = |o: usize| u16::from_le_bytes(elf[o..o + 2].try_into().unwrap()) as usize;
    let u32_at = |o: usize| u32::from_le_bytes(elf[o..o + 4].try_into().unwrap());
    let u64_at = |o: usize| u64::from_le_bytes(elf[o..o + 8].try_into().unwrap());
    assert_eq!(&elf[..6], b"\x7fELF\x02\x01", "a 64-bit little-endian ELF");
    let kind = u16_at(0x10) as u16;
    let (phoff, phentsize, phnum) = (u64_at(0x20) as usize, u16_at(0x36), u16_at(0x38));
    let headers: Vec<usize> = (0..phnum).map(|i| phoff + i * phentsize).collect();
    let cstr = |s: &[u8]| String::from_utf8_lossy(&s[..s.iter().position(|&b| b == 0).unwrap()]).into_owned();
    let interp = headers.iter().find(|&&h| u32_at(h) == 3).map(|&h| cstr(&elf[u64_at(h + 0x08) as usize..]));
    // A virtual address to its offset in the file, through the PT_LOAD segments.
    let offset_of = |vaddr: u64| {
        headers
            .iter()
            .filter(|&&h| u32_at(h) == 1)
            .find(|&&h| (u64_at(h + 0x10)..u64_at(h + 0x10) + u64_at(h + 0x20)).contains(&vaddr))
            .map(|&h| (vaddr - u64_at(h + 0x10) + u64_at(h + 0x08)) as usize)
            .expect("address in a loaded segment")
    };
    // A static-pie has a dynamic section (its own relocations) but no
    // string table and nothing needed; a fixed-address static one has none.
    let needed = match headers.iter().find(|&&h| u32_at(h) == 2) {
        None => Vec::new(),
        Some(&dynamic) => {
            let (start, size) = (u64_at(dynamic + 0x08) as usize, u64_at(dynamic + 0x20) as usize);
            let entries: Vec<(u64, u64)> =
                (start..start + size).step_by(16).map(|e| (u64_at(e), u64_at(e + 8))).collect();
            let names: Vec<u64> = entries.iter().filter(|e| e.0 == 1).map(|e| e.1).collect();
            match entries.iter().find(|e| e.0 == 5) {
                None => {
                    assert!(names.is_empty(), "DT_NEEDED without DT_STRTAB");
                    Vec::new()
                }
                Some(&(_, strtab)) => {
                    let strtab = offset_of(strtab);
                    names.iter().map(|&n| cstr(&elf[strtab + n as usize..])).collect()
                }
            }
        }
    };
    Linkage { kind, interp, needed }
}

/// A build with `crt-static` (how install.sh builds on Linux with glibc; the
/// tests run on it with `RUSTFLAGS="-C target-feature=+crt-static" cargo
/// test --target <triple>`) is a static-pie: position-independent (the
/// binary's own ASLR kept), no loader, nothing needed. Any other Linux
/// build loads libc and libgcc_s (unwinding: a hook's panic is caught and
/// answered) through the loader, nothing more.
#[test]
fn the_binary_is_static_pie_or_loads_only_libc_and_libgcc() {
    let elf = std::fs::read(BIN).unwrap();
    let Linkage { kind, interp, mut needed } = linkage(&elf);
    needed.sort();
    if cfg!(target_feature = "crt-static") {
        assert_eq!((interp.as_deref(), needed.as_slice()), (None, &[][..]), "a static build loads nothing");
        assert_eq!(kind, 3, "static-pie (ET_DYN), not a fixed-address executable");
        return;
    }
    let loaders = ["/lib64/ld-linux-x86-64.so.2", "/lib/ld-linux-aarch64.so.1"];
    if cfg!(target_env = "gnu") {
        assert!(interp.as_deref().is_some_and(|i| loaders.contains(&i)), "{interp:?}");
        assert!(needed.iter().any(|l| l == "libc.so.6"), "{needed:?}");
    }
    let allowed = ["libc.so.6", "libgcc_s.so.1", "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1"];
    let extra: Vec<&String> = needed.iter().filter(|l| !allowed.contains(&l.as_str())).collect();
    assert!(extra.is_empty(), "every hook process now loads {extra:?} too (all: {needed:?})");
}

/// What is installed on Linux with glibc is the static build: install.sh
/// asks cargo for it on both triples (by `--target`, so the proc macros,
/// built for the host, stay dynamic: they cannot be linked statically).
#[test]
fn install_sh_builds_linux_gnu_statically() {
    let sh = std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("installers/install.sh"))
        .unwrap();
    let arm = sh
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("x86_64-unknown-linux-gnu | aarch64-unknown-linux-gnu)"))
        .take_while(|l| !l.trim_end().ends_with(";;"))
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        arm.contains(
            r#"set -- --target "$triple" --config "target.$triple.rustflags=[\"-C\", \"target-feature=+crt-static\"]""#
        ),
        "{arm}"
    );
    let install = sh.lines().find(|l| l.trim_start().starts_with("cargo install --path")).unwrap();
    assert!(install.trim_end().ends_with(r#""$@""#), "{install}");
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
