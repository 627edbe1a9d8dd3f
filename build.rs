//! Compiles `kernels/` to PTX with rustc's nvptx64-nvidia-cuda target and puts it in OUT_DIR
//! for the host crate to embed.
//!
//! Rust-CUDA's `cuda_builder` cannot be used here (its codegen needs LLVM 7, see README), so
//! this runs a nested `cargo rustc -Zbuild-std=core --crate-type cdylib` for the nvptx target
//! with `scripts/nvptx-link.sh` as the linker: it links the bitcode of the kernel crate, core
//! and compiler_builtins into one module (llvm-link), internalizes everything but the kernels
//! and optimizes (opt), then emits PTX (llc). That is what rustc's own llvm-bitcode-linker
//! would do, which the toolchain cannot download here.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The PTX ISA target: sm_80 PTX runs on Ampere and is JIT-compiled for Hopper (sm_90).
const PTX_TARGET_CPU: &str = "sm_80";

fn main() {
    let root = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    for p in ["kernels/src", "kernels/Cargo.toml", "scripts/nvptx-link.sh", "rust-toolchain.toml"] {
        println!("cargo:rerun-if-changed={}", root.join(p).display());
    }
    println!("cargo:rerun-if-env-changed=VEBALLOC_PTX");

    // An already built PTX file may be supplied (for example by a packager).
    if let Ok(ptx) = env::var("VEBALLOC_PTX") {
        std::fs::copy(&ptx, out.join("veballoc.ptx")).expect("copy VEBALLOC_PTX");
        return;
    }

    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let sysroot = String::from_utf8(
        Command::new(&rustc).args(["--print", "sysroot"]).output().expect("run rustc --print sysroot").stdout,
    )
    .unwrap();
    let host = env::var("HOST").unwrap();
    let llvm_bin = Path::new(sysroot.trim()).join("lib/rustlib").join(&host).join("bin");
    if !llvm_bin.join("llvm-link").exists()
        || !Path::new(sysroot.trim()).join("lib/rustlib/src/rust/library/core").exists()
    {
        panic!(
            "\n\nveballoc: building the PTX needs the pinned nightly's `rust-src` and `llvm-tools` components\n\
             (looked in {}).\nRun `scripts/setup.sh` once (it runs `rustup toolchain install` with them).\n\n",
            sysroot.trim()
        );
    }

    let linker = root.join("scripts/nvptx-link.sh");
    let target_dir = root.join("target/ptx");
    let flags =
        [format!("-Ctarget-cpu={PTX_TARGET_CPU}"), format!("-Clinker={}", linker.display())].join("\x1f");
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(root.join("kernels"))
        .args(["rustc", "--release", "--lib", "--crate-type", "cdylib", "-Zbuild-std=core"])
        .args(["--target", "nvptx64-nvidia-cuda"])
        .arg("--target-dir")
        .arg(&target_dir)
        .env("CARGO_ENCODED_RUSTFLAGS", flags)
        .env("VEBALLOC_LLVM_BIN", &llvm_bin)
        .env("VEBALLOC_PTX_CPU", PTX_TARGET_CPU);
    // The outer build's settings are for the host; keep them away from the device build.
    for v in [
        "RUSTFLAGS",
        "CARGO_BUILD_RUSTFLAGS",
        "RUSTC_WRAPPER",
        "RUSTC_WORKSPACE_WRAPPER",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET",
        "CARGO_MAKEFLAGS",
        "MAKEFLAGS",
        "MFLAGS",
    ] {
        cmd.env_remove(v);
    }
    for (k, _) in env::vars() {
        if k.starts_with("CARGO_PROFILE_") || k.starts_with("CARGO_CFG_") || k.starts_with("CARGO_FEATURE_") {
            cmd.env_remove(k);
        }
    }
    let status = cmd.status().expect("run cargo for the PTX build");
    if !status.success() {
        panic!("veballoc: the PTX build of kernels/ failed (see the output above)");
    }
    let ptx = target_dir.join("nvptx64-nvidia-cuda/release/veballoc_kernels.ptx");
    std::fs::copy(&ptx, out.join("veballoc.ptx")).unwrap_or_else(|e| panic!("copy {}: {e}", ptx.display()));
}
