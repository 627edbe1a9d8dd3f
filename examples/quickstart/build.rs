// Compiles ./kernels to PTX for `include_str!` in src/main.rs, with veballoc's safety checks
// exactly when veballoc's own PTX has them (debug builds, or `--features veballoc/checks`).
fn main() {
    veballoc_ptx_build::Ptx::new("kernels")
        .checks_like_veballoc("veballoc-kernels/checks")
        .build_to_out_dir("kernels.ptx");
}
