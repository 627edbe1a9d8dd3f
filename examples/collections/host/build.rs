//! Builds the example's kernel crate to PTX with Rust's `alloc` crate (for its Vec, Box,
//! String, BTreeMap) and veballoc's allocator, with the safety checks exactly when veballoc's
//! own PTX has them.
fn main() {
    veballoc_ptx_build::Ptx::new("../kernels")
        .with_alloc()
        .checks_like_veballoc("veballoc-kernels/checks")
        .build_to_out_dir("collections.ptx");
    // The same kernels over CUDA's device malloc, for the comparison (a folder of its own, so
    // that the two feature sets do not rebuild each other).
    let out = std::env::var("OUT_DIR").expect("OUT_DIR");
    veballoc_ptx_build::Ptx::new("../kernels")
        .with_alloc()
        .feature("cuda-malloc")
        .target_dir(format!("{out}/ptx-cuda-malloc"))
        .build_to_out_dir("collections-cuda-malloc.ptx");
}
