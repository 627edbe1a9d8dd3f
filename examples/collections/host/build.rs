//! Builds the example's kernel crate to PTX with Rust's `alloc` crate (for its Vec, Box,
//! String, BTreeMap) and veballoc's allocator, with the safety checks exactly when veballoc's
//! own PTX has them.
fn main() {
    veballoc_ptx_build::Ptx::new("../kernels")
        .with_alloc()
        .checks_like_veballoc("veballoc-kernels/checks")
        .build_to_out_dir("collections.ptx");
}
