//! Compiles the BPF program (bpf/*.bpf.c) with clang into OUT_DIR. Needs clang and libbpf's
//! headers (Debian: `apt-get install clang libbpf-dev`; `make setup-test` installs them).

use std::path::PathBuf;
use std::process::Command;

fn main() {
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    let src = "bpf/cwnd_clamp.bpf.c";
    println!("cargo:rerun-if-changed={src}");
    // Debian keeps asm/types.h under the multiarch directory, which `-target bpf` does not search.
    let multiarch = Command::new("gcc")
        .arg("-print-multiarch")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| format!("{}-linux-gnu", std::env::var("CARGO_CFG_TARGET_ARCH").unwrap()));
    let status = Command::new("clang")
        .args(["-O2", "-g", "-target", "bpf", "-Wall", "-Werror"])
        .arg(format!("-I/usr/include/{multiarch}"))
        .args(["-c", src, "-o"])
        .arg(out.join("cwnd_clamp.bpf.o"))
        .status();
    match status {
        Ok(s) if s.success() => {}
        Ok(s) => panic!("clang failed ({s}) compiling {src}"),
        Err(e) => panic!(
            "cannot run clang ({e}): cclab-bpf compiles its BPF program with clang; \
             install it with `apt-get install clang libbpf-dev` (or run `make setup-test`)"
        ),
    }
}
