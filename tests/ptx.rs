//! The embedded PTX: every kernel the host launches is in it, nothing is left unresolved, and
//! it assembles for sm_90. That needs `ptxas`: `PTXAS` names it, else it is looked up on PATH
//! (scripts/setup.sh installs it in .deps/cuda/bin, which scripts/env.sh puts on PATH); the
//! test fails without it.

use std::process::Command;

const KERNELS: [&str; 12] = [
    "veballoc_trim_segments",
    "bump_malloc",
    "cuda_malloc",
    "cuda_free",
    "veballoc_init",
    "veballoc_trim",
    "vb_malloc",
    "vb_free",
    "vb_write",
    "vb_verify",
    "vb_churn",
    "vb_calloc_realloc",
];

#[test]
fn ptx_has_every_kernel() {
    for k in KERNELS {
        assert!(veballoc::PTX.contains(&format!(".visible .entry {k}(")), "kernel {k} missing from the PTX");
    }
    assert!(veballoc::PTX.contains(".target sm_80"));
    // Whole-program link: no declaration without a body (an unresolved call into core).
    // Only CUDA's own device malloc/free (the baselines) come from the driver.
    let driver_provided = |l: &str| l.ends_with(" malloc") || l.ends_with(" free");
    let unresolved: Vec<&str> = veballoc::PTX
        .lines()
        .filter(|l| l.starts_with(".extern") && !driver_provided(l.trim_end()))
        .collect();
    assert!(unresolved.is_empty(), "unresolved symbols in the PTX: {unresolved:?}");
}

#[test]
fn ptx_uses_gpu_scope_ordered_atomics() {
    // The shim's inline asm, not LLVM's lowering of core atomics (which drops the ordering
    // of RMWs and uses .sys scope): every atomic names its ordering and .gpu scope.
    for line in veballoc::PTX.lines().map(str::trim).filter(|l| l.starts_with("atom.")) {
        let ordered = ["atom.relaxed.gpu.", "atom.acquire.gpu.", "atom.release.gpu.", "atom.acq_rel.gpu."];
        assert!(ordered.iter().any(|o| line.starts_with(o)), "atomic without explicit order/scope: {line}");
    }
    // The hot paths: slice take (acquire add on the slot), give-back (release add), installs (swap).
    assert!(veballoc::PTX.contains("atom.acquire.gpu.add.u64"));
    assert!(veballoc::PTX.contains("atom.release.gpu.add.u32"));
    assert!(veballoc::PTX.contains("atom.acq_rel.gpu.exch.b64"));
    assert!(veballoc::PTX.contains("match.any.sync.b32"));
}

/// Names the ptxas to use (default: `ptxas` on PATH).
const PTXAS_ENV: &str = "PTXAS";

/// ptxas `-v` for sm_90 on veballoc's PTX, run once for every test that reads its report
/// (assembling the whole PTX takes about half a minute).
fn ptxas() -> &'static std::process::Output {
    static OUT: std::sync::OnceLock<std::process::Output> = std::sync::OnceLock::new();
    OUT.get_or_init(run_ptxas)
}

/// Runs ptxas -v for sm_90 on veballoc's PTX; panics if it cannot run or rejects the PTX.
fn run_ptxas() -> std::process::Output {
    let dir = std::env::temp_dir().join(format!("veballoc-ptx-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ptx = dir.join("veballoc.ptx");
    std::fs::write(&ptx, veballoc::PTX).unwrap();
    let ptxas = std::env::var_os(PTXAS_ENV).unwrap_or_else(|| "ptxas".into());
    let out =
        Command::new(&ptxas).args(["-arch=sm_90", "-v", "-o"]).arg(dir.join("k.cubin")).arg(&ptx).output();
    std::fs::remove_dir_all(&dir).ok();
    let out = out.unwrap_or_else(|e| {
        panic!(
            "cannot run {} ({e}): scripts/setup.sh installs ptxas in .deps/cuda/bin, and \
             `source scripts/env.sh` puts it on PATH (or set {PTXAS_ENV})",
            ptxas.to_string_lossy()
        )
    });
    assert!(out.status.success(), "ptxas rejected the PTX:\n{}", String::from_utf8_lossy(&out.stderr));
    out
}

#[test]
fn ptx_assembles_for_sm90() {
    ptxas();
}

/// The registers ptxas gives kernel `name` (its `-v` report).
fn registers_of(report: &str, name: &str) -> u32 {
    let at = report
        .find(&format!("Compiling entry function '{name}'"))
        .unwrap_or_else(|| panic!("no ptxas report for {name}"));
    let used = &report[at..][report[at..].find("Used ").expect("a register count") + 5..];
    used[..used.find(' ').unwrap()].parse().unwrap()
}

#[test]
fn free_kernel_keeps_its_register_cap() {
    // Free's hot path needs about 20 registers, its rare paths (recycle, whole-block and run
    // frees) up to 100: without the cap they set the kernel's count, and so its occupancy.
    let cap = veballoc_kernels::FREE_KERNEL_REGISTERS;
    let entry = &veballoc::PTX[veballoc::PTX.find(".visible .entry vb_free(").expect("vb_free")..];
    let head = &entry[..entry.find("\n{").expect("vb_free's body")];
    assert!(head.contains(&format!("\n.maxnreg {cap}")), "vb_free has no .maxnreg {cap}:\n{head}");
    let report = String::from_utf8_lossy(&ptxas().stderr);
    let used = registers_of(&report, "vb_free");
    assert!(used <= cap, "ptxas gives vb_free {used} registers, above its cap of {cap}");
    // The malloc kernel has no cap of its own (its installs spill under a low one): ptxas,
    // run here without a module cap, gives it what it needs, far above the free kernel's.
    assert!(registers_of(&report, "vb_malloc") > cap);
}
