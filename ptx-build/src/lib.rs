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
//! // build.rs of a host crate whose kernels live in ./kernels
//! veballoc_ptx_build::Ptx::new("kernels")
//!     .checks_like_veballoc("veballoc-kernels/checks")
//!     .build_to_out_dir("kernels.ptx"); // include_str!(concat!(env!("OUT_DIR"), "/kernels.ptx"))
//! ```
//!
//! Where the files go: the nested build's target folder is `<target>/ptx` (`<target>/ptx-checks`
//! with the safety checks) in the *building* crate's target folder, found from `OUT_DIR`, so
//! that nothing is written into the kernel crate's or veballoc's sources (read-only for a git
//! or registry dependency).
//!
//! Which toolchain: the device build needs a nightly with the `rust-src` and `llvm-tools`
//! components. Where rustup is installed it runs on [`PINNED_TOOLCHAIN`], whatever toolchain
//! runs the outer build (a stable one is fine), and says how to install it when it is missing.
//! `VEBALLOC_PTX_TOOLCHAIN=<name>` picks another rustup toolchain, `VEBALLOC_PTX_TOOLCHAIN=current`
//! the one that runs the outer build (also the choice where rustup is not installed).

use std::env;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The PTX ISA target: sm_80 PTX runs on Ampere and is JIT-compiled for Hopper (sm_90).
pub const PTX_TARGET_CPU: &str = "sm_80";

/// The nightly the device build runs on (veballoc's `rust-toolchain.toml`; a test checks
/// that they agree).
pub const PINNED_TOOLCHAIN: &str = "nightly-2026-05-19";

/// Environment variable: the rustup toolchain for the device build, or `current`.
pub const TOOLCHAIN_ENV: &str = "VEBALLOC_PTX_TOOLCHAIN";

/// The one command that installs what the device build needs.
pub fn install_command() -> String {
    format!("rustup toolchain install {PINNED_TOOLCHAIN} --profile minimal --component rust-src,llvm-tools")
}

/// The linker stand-in, next to this crate's manifest.
pub fn linker_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("nvptx-link.sh")
}

/// veballoc's allocator crate (`veballoc-kernels`), next to this crate.
fn allocator_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernels")
}

/// One PTX build of a kernel crate.
pub struct Ptx {
    root: PathBuf,
    crate_dir: PathBuf,
    target_dir: Option<PathBuf>,
    features: Vec<String>,
    no_default_features: bool,
    checks: bool,
    alloc: bool,
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
            checks: false,
            alloc: false,
        }
    }

    /// veballoc's own kernel crate (`veballoc-kernels` with its runtime kernels: the PTX that
    /// `veballoc::PTX` embeds; with `.feature("bench-kernels")` also those of its tests and
    /// benchmarks, `veballoc::BENCH_PTX`), for example to get it in the other checks mode
    /// (`Ptx::veballoc().feature("checks")`) for `VEBALLOC_PTX_FILE`.
    pub fn veballoc() -> Self {
        Ptx::new(allocator_dir())
    }

    /// Where the nested build keeps its files (default: `ptx` in the building crate's target
    /// folder); relative paths are taken from the build script's package root.
    pub fn target_dir(mut self, dir: impl AsRef<Path>) -> Self {
        self.target_dir = Some(self.root.join(dir));
        self
    }

    /// Builds Rust's `alloc` crate for the device too (`-Zbuild-std=core,alloc`), for kernel
    /// crates that use `alloc::vec::Vec`, `Box`, `String`, `BTreeMap` through veballoc's
    /// global allocator (`veballoc_kernels::global_allocator!()`).
    pub fn with_alloc(mut self) -> Self {
        self.alloc = true;
        self
    }

    /// Enables a cargo feature of the kernel crate.
    pub fn feature(mut self, f: &str) -> Self {
        self.features.push(f.to_string());
        self
    }

    /// Whether veballoc's own PTX has the safety checks in this build. In a crate that
    /// depends on veballoc, veballoc's build script says so (`DEP_VEBALLOC_CHECKS`: its
    /// `checks` feature, or a debug profile); otherwise the building crate's `checks` feature
    /// or a debug profile. Every module that allocates from one heap must agree (the checks
    /// keep a bitmap that all of them must update).
    pub fn checks_wanted() -> bool {
        match env::var("DEP_VEBALLOC_CHECKS").as_deref() {
            Ok(v) => v == "1",
            Err(_) => {
                env::var_os("CARGO_FEATURE_CHECKS").is_some() || env::var("PROFILE").as_deref() == Ok("debug")
            }
        }
    }

    /// Turns on `feature` (`"checks"` for veballoc-kernels itself, `"veballoc-kernels/checks"`
    /// for a user's crate) when [`Ptx::checks_wanted`], keeps those builds apart in the
    /// target folder (`-checks` appended to its name), and sets `VEBALLOC_PTX_CHECKS=1` for the
    /// crate's code (`option_env!`).
    pub fn checks_like_veballoc(self, feature: &str) -> Self {
        if Self::checks_wanted() {
            println!("cargo:rustc-env=VEBALLOC_PTX_CHECKS=1");
            self.feature(feature).with_checks_dir()
        } else {
            self
        }
    }

    /// Keeps this build's files apart from builds without the checks (in `<target dir>-checks`).
    fn with_checks_dir(mut self) -> Self {
        self.checks = true;
        self
    }

    /// Builds without the kernel crate's default features.
    pub fn no_default_features(mut self) -> Self {
        self.no_default_features = true;
        self
    }

    /// The nested build's target folder.
    fn nested_target_dir(&self) -> PathBuf {
        let base = match &self.target_dir {
            Some(t) => t.clone(),
            None => match env::var_os("OUT_DIR") {
                Some(out) => target_dir_of(Path::new(&out)).join("ptx"),
                None => self.crate_dir.join("../target/ptx"),
            },
        };
        if self.checks || self.features.iter().any(|f| f == "checks" || f.ends_with("/checks")) {
            let mut name = base.file_name().unwrap_or_default().to_os_string();
            name.push("-checks");
            base.with_file_name(name)
        } else {
            base
        }
    }

    /// Runs the build and copies the PTX to `OUT_DIR/<file_name>` (for
    /// `include_str!(concat!(env!("OUT_DIR"), "/<file_name>"))`); returns that path.
    pub fn build_to_out_dir(self, file_name: &str) -> PathBuf {
        let out = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR: call this from a build script"))
            .join(file_name);
        let ptx = self.build();
        std::fs::copy(&ptx, &out)
            .unwrap_or_else(|e| panic!("copy {} to {}: {e}", ptx.display(), out.display()));
        out
    }

    /// Runs the build (printing `rerun-if-changed` lines for the crate) and returns the PTX
    /// file's path. Panics with a message that says what to do when the toolchain or its
    /// `rust-src` or `llvm-tools` components are missing.
    pub fn build(self) -> PathBuf {
        if !self.crate_dir.join("Cargo.toml").is_file() {
            // Else the nested cargo's missing working directory read as a missing cargo.
            panic!(
                "veballoc: no kernel crate at {} (no Cargo.toml there; Ptx::new takes a path relative \
                 to the building package's root)",
                self.crate_dir.display()
            );
        }
        // The kernel crate and veballoc's allocator (which it links in): a change to either
        // must rebuild the PTX, or the PTX and the host's heap layout could disagree.
        let allocator = allocator_dir();
        for dir in [&self.crate_dir, &allocator] {
            for p in ["src", "Cargo.toml"] {
                println!("cargo:rerun-if-changed={}", dir.join(p).display());
            }
        }
        println!("cargo:rerun-if-changed={}", linker_script().display());
        println!("cargo:rerun-if-env-changed={TOOLCHAIN_ENV}");
        let tools = Toolchain::find();
        let sysroot = String::from_utf8(
            Command::new(&tools.rustc)
                .args(["--print", "sysroot"])
                .output()
                .unwrap_or_else(|e| panic!("run {} --print sysroot: {e}", tools.rustc.to_string_lossy()))
                .stdout,
        )
        .expect("sysroot path");
        let sysroot = Path::new(sysroot.trim());
        let host = env::var("HOST").unwrap_or_else(|_| "x86_64-unknown-linux-gnu".into());
        let llvm_bin = sysroot.join("lib/rustlib").join(&host).join("bin");
        if !llvm_bin.join("llvm-link").exists() || !sysroot.join("lib/rustlib/src/rust/library/core").exists()
        {
            let fix = match &tools.rustup_toolchain {
                Some(t) => format!("rustup component add --toolchain {t} rust-src llvm-tools"),
                // `current` builds with the outer build's toolchain: installing the pinned one
                // would not change that.
                None if env::var(TOOLCHAIN_ENV).as_deref() == Ok("current") => format!(
                    "unset {TOOLCHAIN_ENV} (`current` picks the outer build's toolchain), then:\n    {}",
                    install_command()
                ),
                None => install_command(),
            };
            panic!(
                "\n\nveballoc: building PTX needs a nightly with the `rust-src` and `llvm-tools` components\n\
                 (looked in {}). Run once:\n    {fix}\n\n",
                sysroot.display(),
            );
        }
        let target_dir = self.nested_target_dir();
        let flags =
            [format!("-Ctarget-cpu={PTX_TARGET_CPU}"), format!("-Clinker={}", linker_script().display())]
                .join("\x1f");
        let mut cmd = Command::new(&tools.cargo);
        cmd.current_dir(&self.crate_dir)
            .args(["rustc", "--release", "--lib", "--crate-type", "cdylib"])
            .arg(if self.alloc { "-Zbuild-std=core,alloc" } else { "-Zbuild-std=core" })
            .args(["--target", "nvptx64-nvidia-cuda"])
            .arg("--target-dir")
            .arg(&target_dir);
        if self.no_default_features {
            cmd.arg("--no-default-features");
        }
        if !self.features.is_empty() {
            cmd.arg("--features").arg(self.features.join(","));
        }
        // The outer build's settings are for the host; keep them away from the device build.
        for v in [
            "RUSTC",
            "RUSTDOC",
            "RUSTFLAGS",
            "CARGO_BUILD_RUSTFLAGS",
            "RUSTC_WRAPPER",
            "RUSTC_WORKSPACE_WRAPPER",
            "CARGO_TARGET_DIR",
            "CARGO_BUILD_TARGET",
            "CARGO_BUILD_TARGET_DIR",
            "CARGO_MAKEFLAGS",
            "MAKEFLAGS",
            "MFLAGS",
        ] {
            cmd.env_remove(v);
        }
        for (k, _) in env::vars_os() {
            let k = k.to_string_lossy();
            if k.starts_with("CARGO_PROFILE_")
                || k.starts_with("CARGO_CFG_")
                || k.starts_with("CARGO_FEATURE_")
                || k.starts_with("__CARGO")
            {
                cmd.env_remove(&*k);
            }
        }
        cmd.env("RUSTC", &tools.rustc)
            .env("CARGO_ENCODED_RUSTFLAGS", flags)
            .env("VEBALLOC_LLVM_BIN", &llvm_bin)
            .env("VEBALLOC_PTX_CPU", PTX_TARGET_CPU);
        if let Some(t) = &tools.rustup_toolchain {
            // Anything the nested build runs through rustup's proxies gets the same toolchain.
            cmd.env("RUSTUP_TOOLCHAIN", t);
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

/// The target folder of the build whose build script has `out` as OUT_DIR
/// (`<target>/[<triple>/]<profile>/build/<pkg>-<hash>/out`), else `out` itself.
pub fn target_dir_of(out: &Path) -> PathBuf {
    match out.parent().and_then(Path::parent) {
        Some(b) if b.file_name().is_some_and(|n| n == "build") => {
            b.parent().and_then(Path::parent).map(Path::to_path_buf).unwrap_or_else(|| out.to_path_buf())
        }
        _ => out.to_path_buf(),
    }
}

/// The cargo and rustc of the device build.
struct Toolchain {
    cargo: OsString,
    rustc: OsString,
    rustup_toolchain: Option<String>,
}

impl Toolchain {
    fn find() -> Toolchain {
        let current = || Toolchain {
            cargo: env::var_os("CARGO").unwrap_or_else(|| "cargo".into()),
            rustc: env::var_os("RUSTC").unwrap_or_else(|| "rustc".into()),
            rustup_toolchain: None,
        };
        let wanted = env::var(TOOLCHAIN_ENV).unwrap_or_else(|_| PINNED_TOOLCHAIN.to_string());
        if wanted == "current" {
            return current();
        }
        let Some(rustup) = find_rustup() else {
            return current();
        };
        let which = |tool: &str| -> Option<OsString> {
            let out = Command::new(&rustup).args(["which", "--toolchain", &wanted, tool]).output().ok()?;
            let path = String::from_utf8(out.stdout).ok()?;
            (out.status.success() && !path.trim().is_empty()).then(|| path.trim().into())
        };
        match (which("cargo"), which("rustc")) {
            (Some(cargo), Some(rustc)) => Toolchain { cargo, rustc, rustup_toolchain: Some(wanted) },
            _ => panic!(
                "\n\nveballoc: building PTX needs the Rust toolchain {wanted} with `rust-src` and \
                 `llvm-tools`, which rustup does not have. Run once:\n    {}\n\n",
                if wanted == PINNED_TOOLCHAIN {
                    install_command()
                } else {
                    format!("rustup toolchain install {wanted} --component rust-src,llvm-tools")
                }
            ),
        }
    }
}

/// rustup's binary: on PATH, else in CARGO_HOME (or ~/.cargo)/bin.
fn find_rustup() -> Option<PathBuf> {
    let works = |p: &Path| Command::new(p).arg("--version").output().is_ok_and(|o| o.status.success());
    let mut candidates = vec![PathBuf::from("rustup")];
    if let Some(home) = env::var_os("CARGO_HOME") {
        candidates.push(Path::new(&home).join("bin/rustup"));
    }
    if let Some(home) = env::var_os("HOME") {
        candidates.push(Path::new(&home).join(".cargo/bin/rustup"));
    }
    candidates.into_iter().find(|p| works(p))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pinned_toolchain_is_veballocs() {
        let toml =
            std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../rust-toolchain.toml"))
                .expect("read rust-toolchain.toml");
        assert!(
            toml.lines().any(|l| l.trim() == format!("channel = \"{PINNED_TOOLCHAIN}\"")),
            "PINNED_TOOLCHAIN ({PINNED_TOOLCHAIN}) differs from rust-toolchain.toml's channel"
        );
    }

    /// A kernel crate path with no Cargo.toml is named as such (the nested cargo's missing
    /// working directory read "run cargo for the PTX build: No such file or directory").
    #[test]
    #[should_panic(expected = "no kernel crate at")]
    fn a_missing_kernel_crate_is_named() {
        Ptx::new("no-such-kernels").build();
    }

    #[test]
    fn target_dir_is_found_from_out_dir() {
        let t = target_dir_of(Path::new("/w/app/target/release/build/my-app-0123abcd/out"));
        assert_eq!(t, Path::new("/w/app/target"));
        let t = target_dir_of(Path::new("/w/t/x86_64-unknown-linux-gnu/debug/build/a-1/out"));
        assert_eq!(t, Path::new("/w/t/x86_64-unknown-linux-gnu"));
        // An unknown layout keeps the files in OUT_DIR.
        assert_eq!(target_dir_of(Path::new("/somewhere/out")), Path::new("/somewhere/out"));
    }
}
