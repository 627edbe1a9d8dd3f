//! Compiles `kernels/` to PTX (see `ptx-build/`), twice: the runtime's kernels, and those with
//! the tests' and benchmarks' kernels; puts both in OUT_DIR for the host crate to embed. The
//! PTX gets the safety checks (`kernels/src/check.rs`) with this crate's `checks` feature, and
//! in debug builds. The nested build's files go to `ptx` (or
//! `ptx-checks`) in the building workspace's target folder, never into this crate's sources.
//! Crates that depend on veballoc learn whether the PTX has the checks from
//! `DEP_VEBALLOC_CHECKS` (`links = "veballoc"`), which `veballoc-ptx-build` reads.

use std::env;
use std::path::PathBuf;

fn main() {
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    println!("cargo:rerun-if-env-changed=VEBALLOC_PTX");
    println!("cargo:rerun-if-env-changed=VEBALLOC_PTX_CHECKS");

    // An already built PTX file may be supplied (for example by a packager); say whether it
    // has the checks with VEBALLOC_PTX_CHECKS=1.
    if let Ok(ptx) = env::var("VEBALLOC_PTX") {
        // One module then serves both: the runtime's kernels and the tests' and benchmarks'.
        std::fs::copy(&ptx, out.join("veballoc.ptx")).expect("copy VEBALLOC_PTX");
        std::fs::copy(&ptx, out.join("veballoc-bench.ptx")).expect("copy VEBALLOC_PTX");
        let checks = env::var("VEBALLOC_PTX_CHECKS").as_deref() == Ok("1");
        if checks {
            println!("cargo:rustc-env=VEBALLOC_PTX_CHECKS=1");
        }
        println!("cargo:checks={}", u8::from(checks));
        return;
    }
    let checks = veballoc_ptx_build::Ptx::checks_wanted();
    // The runtime's kernels alone (what `Gpu::new` loads and the driver JIT-compiles: 1.5 s of
    // ptxas on sm_90 against 45 s with the tests' and benchmarks' kernels, r35), then the module
    // with those too (loaded on the first launch of one of them). Built in that order, so that
    // the nested build's own PTX file is the whole module (scripts/device-bundle.sh copies it).
    veballoc_ptx_build::Ptx::veballoc().checks_like_veballoc("checks").build_to_out_dir("veballoc.ptx");
    veballoc_ptx_build::Ptx::veballoc()
        .feature("bench-kernels")
        .checks_like_veballoc("checks")
        .build_to_out_dir("veballoc-bench.ptx");
    println!("cargo:checks={}", u8::from(checks));
}
