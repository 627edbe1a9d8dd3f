//! veballoc's stand-in for `find_cuda_helper` 0.2, the build-script helper with which `cust`
//! and `cust_raw` (veballoc's CUDA bindings) link `-lcuda`. A workspace uses it with
//!
//! ```toml
//! [patch.crates-io]
//! find_cuda_helper = { git = "<veballoc's git URL>" }   # or { path = ".../find-cuda-helper" }
//! ```
//!
//! It searches where the original does (`CUDA_LIBRARY_PATH`, `/opt/cuda`, `/usr/local/cuda`,
//! `/usr/local/cuda-*`; the original panics with "Could not find a cuda installation" when
//! none of these exists, even on a machine whose driver installed `libcuda.so`). Where none of
//! those folders nor the system's library folders holds a `libcuda.so`, it generates a stub
//! one (soname `libcuda.so.1`, every entry point returns `CUDA_ERROR_NO_DEVICE`) with the C
//! compiler that links Rust binaries anyway, in `<target dir>/cuda-stub/`, and links against
//! it. At run time the loader takes the driver's `libcuda.so.1` where one is installed; on a
//! machine without a driver, `LD_LIBRARY_PATH=<target dir>/cuda-stub` lets a binary start and
//! report that there is no GPU.
//!
//! `VEBALLOC_CUDA_STUB=1` links the stub even where a `libcuda.so` exists; `VEBALLOC_CUDA_STUB=0`
//! never generates it (the original's behaviour).

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Every CUDA driver entry point the stub defines: those of `cust_raw` 0.11's bindings and of
/// CUDA 12.9's `cuda.h` (after its `_v2`.. macros).
const STUB_SYMBOLS: &str = include_str!("cuda-symbols.txt");
/// What every stub entry point returns: `CUDA_ERROR_NO_DEVICE`.
const CUDA_ERROR_NO_DEVICE: u32 = 100;
/// Environment switch: `1` always links the stub, `0` never generates it.
pub const STUB_ENV: &str = "VEBALLOC_CUDA_STUB";
/// The stub's file name and soname (the soname is the driver's, so that the driver replaces it
/// at run time).
const STUB_FILE: &str = "libcuda.so";
const STUB_SONAME: &str = "libcuda.so.1";

/// Emits the link lines for `libcuda` (called from `cust`'s and `cust_raw`'s build scripts).
pub fn include_cuda() {
    if env::var("DOCS_RS").is_ok() || cfg!(doc) {
        return;
    }
    println!("cargo:rerun-if-env-changed={STUB_ENV}");
    let mut paths = find_cuda_lib_dirs();
    let stub = match env::var(STUB_ENV).as_deref() {
        Ok("1") => true,
        Ok("0") => false,
        _ => !paths.iter().any(|p| p.join(STUB_FILE).exists()) && !system_has_libcuda(),
    };
    if stub {
        paths.insert(0, build_stub());
    }
    if paths.is_empty() && !system_has_libcuda() {
        panic!("Could not find a cuda installation (and {STUB_ENV}=0 forbids the stub libcuda)");
    }
    for path in paths {
        println!("cargo:rustc-link-search=native={}", path.display());
    }
    println!("cargo:rustc-link-lib=dylib=cuda");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=CUDA_LIBRARY_PATH");
    println!("cargo:rerun-if-env-changed=CUDA_ROOT");
    println!("cargo:rerun-if-env-changed=CUDA_PATH");
    println!("cargo:rerun-if-env-changed=CUDA_TOOLKIT_ROOT_DIR");
}

/// Whether the linker's default folders hold a `libcuda.so` (a driver package's).
fn system_has_libcuda() -> bool {
    let arch = env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_else(|_| std::env::consts::ARCH.into());
    let multiarch = format!("/usr/lib/{arch}-linux-gnu");
    let lib_multiarch = format!("/lib/{arch}-linux-gnu");
    [multiarch.as_str(), lib_multiarch.as_str(), "/usr/lib64", "/lib64", "/usr/lib", "/usr/local/lib"]
        .iter()
        .any(|d| Path::new(d).join(STUB_FILE).exists())
}

/// The build's target folder (`<target>/[<triple>/]<profile>/build/<pkg>-<hash>/out` is
/// OUT_DIR), else OUT_DIR itself.
fn target_dir() -> PathBuf {
    let out = PathBuf::from(env::var("OUT_DIR").expect("OUT_DIR (run from a build script)"));
    let build = out.parent().and_then(Path::parent);
    match build {
        Some(b) if b.file_name().is_some_and(|n| n == "build") => {
            b.parent().and_then(Path::parent).map(Path::to_path_buf).unwrap_or(out)
        }
        _ => out,
    }
}

/// Generates the stub `libcuda.so` (and a `libcuda.so.1` link to it) in `<target>/cuda-stub`,
/// unless an identical one is there, and returns the folder.
fn build_stub() -> PathBuf {
    let dir = target_dir().join("cuda-stub");
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("create {}: {e}", dir.display()));
    let source: String = STUB_SYMBOLS
        .lines()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| format!("int {s}(void) {{ return {CUDA_ERROR_NO_DEVICE}; }}\n"))
        .collect();
    let lib = dir.join(STUB_FILE);
    let c_file = dir.join("stub.c");
    let fresh = lib.exists() && std::fs::read_to_string(&c_file).is_ok_and(|s| s == source);
    if !fresh {
        // cust's and cust_raw's build scripts (and other profiles' builds) may run this at
        // once: each writes its own files and renames them into place.
        let tag = format!("{}-{}", std::process::id(), env::var("CARGO_PKG_NAME").unwrap_or_default());
        let (tmp_c, tmp_lib) = (dir.join(format!("stub-{tag}.c")), dir.join(format!("{STUB_FILE}-{tag}")));
        std::fs::write(&tmp_c, &source).unwrap_or_else(|e| panic!("write {}: {e}", tmp_c.display()));
        let cc = env::var("CC").unwrap_or_else(|_| "cc".into());
        let status = Command::new(&cc)
            .args(["-shared", "-fPIC", "-O1"])
            .arg(format!("-Wl,-soname,{STUB_SONAME}"))
            .arg("-o")
            .arg(&tmp_lib)
            .arg(&tmp_c)
            .status()
            .unwrap_or_else(|e| panic!("run the C compiler `{cc}` for the stub libcuda: {e}"));
        assert!(status.success(), "the C compiler `{cc}` failed to build the stub libcuda");
        std::fs::rename(&tmp_lib, &lib).unwrap_or_else(|e| panic!("rename to {}: {e}", lib.display()));
        std::fs::rename(&tmp_c, &c_file).unwrap_or_else(|e| panic!("rename to {}: {e}", c_file.display()));
    }
    let link = dir.join(STUB_SONAME);
    if std::fs::read_link(&link).is_err() {
        // A concurrent run may have made it: only its absence afterwards is an error.
        let _ = std::os::unix::fs::symlink(STUB_FILE, &link);
        assert!(link.exists(), "could not link {} to {STUB_FILE}", link.display());
    }
    dir
}

// The original's search, unchanged in what it finds (minus its `glob` dependency).

fn is_cuda_root_path<P: AsRef<Path>>(path: P) -> bool {
    path.as_ref().join("include").join("cuda.h").is_file()
}

/// The CUDA toolkit's root: `CUDA_PATH`, `CUDA_ROOT`, `CUDA_TOOLKIT_ROOT_DIR`, then
/// `/usr/local/cuda` and `/opt/cuda` (a folder with `include/cuda.h`).
pub fn find_cuda_root() -> Option<PathBuf> {
    for path in
        ["CUDA_PATH", "CUDA_ROOT", "CUDA_TOOLKIT_ROOT_DIR"].iter().filter_map(|name| env::var(name).ok())
    {
        if is_cuda_root_path(&path) {
            return Some(path.into());
        }
    }
    ["/usr/local/cuda", "/opt/cuda"].into_iter().find(|p| is_cuda_root_path(p)).map(PathBuf::from)
}

/// The folders of `CUDA_LIBRARY_PATH` (`:`-separated), if set.
pub fn read_env() -> Vec<PathBuf> {
    match env::var("CUDA_LIBRARY_PATH") {
        Ok(path) => path.split(':').map(PathBuf::from).collect(),
        Err(_) => vec![],
    }
}

/// Library folders of CUDA installations: `lib64` (and `lib64/stubs`) of `CUDA_LIBRARY_PATH`'s
/// folders, `/opt/cuda`, `/usr/local/cuda` and `/usr/local/cuda-*`, and their
/// `targets/x86_64-linux/lib` (and `lib/stubs`).
pub fn find_cuda_lib_dirs() -> Vec<PathBuf> {
    let mut candidates = read_env();
    candidates.push(PathBuf::from("/opt/cuda"));
    candidates.push(PathBuf::from("/usr/local/cuda"));
    let mut versioned: Vec<PathBuf> = std::fs::read_dir("/usr/local")
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("cuda-")))
                .collect()
        })
        .unwrap_or_default();
    versioned.sort();
    candidates.extend(versioned);

    let mut valid_paths = vec![];
    for base in &candidates {
        let lib = base.join("lib64");
        if lib.is_dir() {
            valid_paths.push(lib.clone());
            valid_paths.push(lib.join("stubs"));
        }
        let base = base.join("targets/x86_64-linux");
        if base.join("include/cuda.h").is_file() {
            valid_paths.push(base.join("lib"));
            valid_paths.push(base.join("lib/stubs"));
        }
    }
    valid_paths
}
