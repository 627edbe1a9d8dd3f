//! Records the git revision the harness was built from (the device machine has no git).
use std::process::Command;

fn main() {
    let rev = Command::new("git")
        .args(["describe", "--always", "--dirty", "--abbrev=10"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=VEBALLOC_GIT_REV={rev}");
    println!("cargo:rerun-if-changed=../.git/HEAD");
    println!("cargo:rerun-if-changed=../.git/index");
    // A commit moves the branch's ref, not HEAD (which names the branch).
    println!("cargo:rerun-if-changed=../.git/refs/heads");
    // Editing a source leaves .git/index alone: watch the sources too, so that `--dirty`
    // is computed again (else a binary of edited code reports the clean revision).
    for dir in ["src", "../host/src", "../kernels/src", "../ptx-build/src"] {
        println!("cargo:rerun-if-changed={dir}");
    }
    // The collections kernels (Rust's alloc in kernels), with veballoc's checks when its PTX
    // has them, and the same crate over CUDA's device malloc, for `collections`.
    veballoc_ptx_build::Ptx::new("../examples/collections/kernels")
        .with_alloc()
        .checks_like_veballoc("veballoc-kernels/checks")
        .build_to_out_dir("collections.ptx");
    let out = std::env::var("OUT_DIR").expect("OUT_DIR");
    veballoc_ptx_build::Ptx::new("../examples/collections/kernels")
        .with_alloc()
        .feature("cuda-malloc")
        .target_dir(format!("{out}/ptx-cuda-malloc"))
        .build_to_out_dir("collections-cuda-malloc.ptx");
}
