//! Compiles a `no_std` kernel crate to PTX from a build script: veballoc's own `kernels/`, or
//! a user's kernel crate that depends on it (see `examples/graph`).
//!
//! Rust-CUDA's `cuda_builder` cannot be used (its codegen needs LLVM 7, see the README), so
//! this runs a nested `cargo rustc -Zbuild-std=core --crate-type cdylib` for the
//! nvptx64-nvidia-cuda target with `nvptx-link.sh` as the linker: it links the bitcode of the
//! kernel crate and of everything it uses (core, compiler_builtins, veballoc-kernels) into one
//! module (llvm-link), internalizes everything but the kernels and optimizes (opt), then emits
//! PTX (llc). That is what rustc's own llvm-bitcode-linker would do, which the toolchain
//! cannot download here.
//!
//! ```no_run
//! // build.rs of a host crate whose kernels live in ../my-kernels
//! let ptx = veballoc_ptx_build::Ptx::new("../my-kernels").build();
//! std::fs::copy(ptx, std::path::Path::new(&std::env::var("OUT_DIR").unwrap()).join("k.ptx")).unwrap();
//! ```

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The PTX ISA target: sm_80 PTX runs on Ampere and is JIT-compiled for Hopper (sm_90).
pub const PTX_TARGET_CPU: &str = "sm_80";

/// The linker stand-in, next to this crate's manifest.
pub fn linker_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("nvptx-link.sh")
}

/// One PTX build of a kernel crate.
pub struct Ptx {
    root: PathBuf,
    crate_dir: PathBuf,
    target_dir: Option<PathBuf>,
    features: Vec<String>,
    no_default_features: bool,
}

impl Ptx {
    /// The kernel crate at `crate_dir` (relative paths are taken from the build script's
    /// package root).
    pub fn new(crate_dir: impl AsRef<Path>) -> Self {
        let root = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".into()));
        Ptx {
            crate_dir: root.join(crate_dir),
            root,
            target_dir: None,
            features: vec![],
            no_default_features: false,
        }
    }

    /// Where the nested build keeps its files (default: `<crate>/../target/ptx`); relative
    /// paths are taken from the build script's package root.
    pub fn target_dir(mut self, dir: impl AsRef<Path>) -> Self {
        self.target_dir = Some(self.root.join(dir));
        self
    }

    /// Enables a cargo feature of the kernel crate.
    pub fn feature(mut self, f: &str) -> Self {
        self.features.push(f.to_string());
        self
    }

    /// Whether veballoc's own PTX has the safety checks in this build: the building crate's
    /// `checks` feature, or a debug profile. Every module that allocates from one heap must
    /// agree (the checks keep a bitmap that all of them must update).
    pub fn checks_wanted() -> bool {
        env::var_os("CARGO_FEATURE_CHECKS").is_some() || env::var("PROFILE").as_deref() == Ok("debug")
    }

    /// Turns on `feature` (`"checks"` for veballoc-kernels itself, `"veballoc-kernels/checks"`
    /// for a user's crate) when [`Ptx::checks_wanted`], and keeps those builds apart in the
    /// target folder.
    pub fn checks_like_veballoc(mut self, feature: &str) -> Self {
        if Self::checks_wanted() {
            self = self.feature(feature);
            if let Some(t) = self.target_dir.take() {
                let mut name = t.file_name().unwrap_or_default().to_os_string();
                name.push("-checks");
                self.target_dir = Some(t.with_file_name(name));
            }
            println!("cargo:rustc-env=VEBALLOC_PTX_CHECKS=1");
        }
        self
    }

    /// Builds without the kernel crate's default features.
    pub fn no_default_features(mut self) -> Self {
        self.no_default_features = true;
        self
    }

    /// Runs the build (printing `rerun-if-changed` lines for the crate) and returns the PTX
    /// file's path. Panics with a message that says what to do when the toolchain lacks the
    /// `rust-src` or `llvm-tools` components.
    pub fn build(self) -> PathBuf {
        // The kernel crate and veballoc's allocator (which it links in): a change to either
        // must rebuild the PTX, or the PTX and the host's heap layout could disagree.
        let allocator = Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernels");
        for dir in [&self.crate_dir, &allocator] {
            for p in ["src", "Cargo.toml"] {
                println!("cargo:rerun-if-changed={}", dir.join(p).display());
            }
        }
        println!("cargo:rerun-if-changed={}", linker_script().display());
        let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
        let sysroot = String::from_utf8(
            Command::new(&rustc)
                .args(["--print", "sysroot"])
                .output()
                .expect("run rustc --print sysroot")
                .stdout,
        )
        .expect("sysroot path");
        let host = env::var("HOST").unwrap_or_else(|_| "x86_64-unknown-linux-gnu".into());
        let llvm_bin = Path::new(sysroot.trim()).join("lib/rustlib").join(&host).join("bin");
        if !llvm_bin.join("llvm-link").exists()
            || !Path::new(sysroot.trim()).join("lib/rustlib/src/rust/library/core").exists()
        {
            panic!(
                "\n\nveballoc: building PTX needs the nightly's `rust-src` and `llvm-tools` components\n\
                 (looked in {}).\nRun veballoc's `scripts/setup.sh` once (it runs `rustup toolchain install` with them).\n\n",
                sysroot.trim()
            );
        }
        let target_dir = self.target_dir.clone().unwrap_or_else(|| self.crate_dir.join("../target/ptx"));
        let flags =
            [format!("-Ctarget-cpu={PTX_TARGET_CPU}"), format!("-Clinker={}", linker_script().display())]
                .join("\x1f");
        let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut cmd = Command::new(cargo);
        cmd.current_dir(&self.crate_dir)
            .args(["rustc", "--release", "--lib", "--crate-type", "cdylib", "-Zbuild-std=core"])
            .args(["--target", "nvptx64-nvidia-cuda"])
            .arg("--target-dir")
            .arg(&target_dir)
            .env("CARGO_ENCODED_RUSTFLAGS", flags)
            .env("VEBALLOC_LLVM_BIN", &llvm_bin)
            .env("VEBALLOC_PTX_CPU", PTX_TARGET_CPU);
        if self.no_default_features {
            cmd.arg("--no-default-features");
        }
        if !self.features.is_empty() {
            cmd.arg("--features").arg(self.features.join(","));
        }
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
            if k.starts_with("CARGO_PROFILE_")
                || k.starts_with("CARGO_CFG_")
                || k.starts_with("CARGO_FEATURE_")
            {
                cmd.env_remove(k);
            }
        }
        // No debug info in the PTX whatever the workspace's release profile says: ptxas
        // rejects (or crashes on) parts of what LLVM emits for it.
        cmd.env("CARGO_PROFILE_RELEASE_DEBUG", "false");
        let status = cmd.status().expect("run cargo for the PTX build");
        if !status.success() {
            panic!("veballoc: the PTX build of {} failed (see the output above)", self.crate_dir.display());
        }
        let name = crate_lib_name(&self.crate_dir.join("Cargo.toml"));
        target_dir.join("nvptx64-nvidia-cuda/release").join(format!("{name}.ptx"))
    }
}

/// The library name cargo gives the crate's artifacts: `[lib] name`, else the package name
/// with `-` as `_`. A small reader for the two keys, to keep this crate dependency-free.
fn crate_lib_name(manifest: &Path) -> String {
    let text =
        std::fs::read_to_string(manifest).unwrap_or_else(|e| panic!("read {}: {e}", manifest.display()));
    let (mut section, mut package, mut lib) = (String::new(), None, None);
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line.to_string();
        } else if let Some(v) = line.strip_prefix("name").map(str::trim).and_then(|r| r.strip_prefix('=')) {
            let v = v.trim().trim_matches('"').to_string();
            match section.as_str() {
                "[package]" => package = Some(v),
                "[lib]" => lib = Some(v),
                _ => {}
            }
        }
    }
    lib.or(package).expect("a package name in Cargo.toml").replace('-', "_")
}
