//! Compiles `kernels/` to PTX (see `ptx-build/`) and puts it in OUT_DIR for the host crate
//! to embed. The PTX gets the safety checks (`kernels/src/check.rs`) with this crate's
//! `checks` feature, and in debug builds.

use std::env;
use std::path::PathBuf;

fn main() {
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    println!("cargo:rerun-if-env-changed=VEBALLOC_PTX");
    println!("cargo:rerun-if-changed=rust-toolchain.toml");

    // An already built PTX file may be supplied (for example by a packager); say whether it
    // has the checks with VEBALLOC_PTX_CHECKS=1.
    if let Ok(ptx) = env::var("VEBALLOC_PTX") {
        std::fs::copy(&ptx, out.join("veballoc.ptx")).expect("copy VEBALLOC_PTX");
        if env::var_os("VEBALLOC_PTX_CHECKS").is_some() {
            println!("cargo:rustc-env=VEBALLOC_PTX_CHECKS=1");
        }
        return;
    }
    let ptx = veballoc_ptx_build::Ptx::new("kernels")
        .target_dir("target/ptx")
        .checks_like_veballoc("checks")
        .build();
    std::fs::copy(&ptx, out.join("veballoc.ptx")).unwrap_or_else(|e| panic!("copy {}: {e}", ptx.display()));
}
