//! Builds the example's kernel crate to PTX (with veballoc's allocator linked in), with the
//! safety checks exactly when veballoc's own PTX has them (debug builds, `checks` feature).
fn main() {
    let ptx = veballoc_ptx_build::Ptx::new("../kernels")
        .target_dir("../../../target/ptx-graph")
        .checks_like_veballoc("veballoc-kernels/checks")
        .build();
    let out = std::path::Path::new(&std::env::var("OUT_DIR").unwrap()).join("graph.ptx");
    std::fs::copy(&ptx, out).unwrap_or_else(|e| panic!("copy {}: {e}", ptx.display()));
}
