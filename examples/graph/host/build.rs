//! Builds the example's kernel crate to PTX (with veballoc's allocator linked in), with the
//! safety checks exactly when veballoc's own PTX has them (debug builds, `checks` feature).
fn main() {
    veballoc_ptx_build::Ptx::new("../kernels")
        .checks_like_veballoc("veballoc-kernels/checks")
        .build_to_out_dir("graph.ptx");
}
