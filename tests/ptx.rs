//! The embedded PTX modules (the runtime's, `PTX`, and the one with the tests' and benchmarks'
//! kernels, `BENCH_PTX`): every kernel the host launches is in them, nothing is left
//! unresolved, and they assemble for sm_90. That needs `ptxas`: `PTXAS` names it, else it is looked up on PATH
//! (scripts/setup.sh installs it in .deps/cuda/bin, which scripts/env.sh puts on PATH); the
//! test fails without it.

use std::process::Command;

/// The runtime's kernels: what `veballoc::Heap` launches, in `PTX` (and in `BENCH_PTX`).
const RUNTIME_KERNELS: [&str; 11] = [
    "veballoc_init",
    "veballoc_boot",
    "veballoc_boot_slots",
    "veballoc_info",
    "veballoc_trim",
    "veballoc_trim_segments",
    "veballoc_host_claim",
    "veballoc_host_release",
    "veballoc_release_segments",
    "veballoc_reacquire_segments",
    "veballoc_layout_without_checks",
];
/// Some of the kernels that tests and benchmarks launch: in `BENCH_PTX` only.
const BENCH_KERNELS: [&str; 14] = [
    veballoc_kernels::BENCH_PROBE_KERNEL,
    "bump_malloc",
    "cuda_malloc",
    "cuda_free",
    "vb_free",
    "vb_write",
    "vb_verify",
    "vb_churn",
    "vb_calloc_realloc",
    "vb_malloc_warp",
    "floor_malloc",
    "floor_free",
    "util_fill",
    "churn_round",
];

/// The names of the kernels `ptx` defines.
fn entry_names(ptx: &str) -> Vec<&str> {
    ptx.lines()
        .filter_map(|l| l.strip_prefix(".visible .entry "))
        .map(|l| &l[..l.find('(').unwrap_or(l.len())])
        .collect()
}

#[test]
fn ptx_has_every_kernel() {
    for (ptx, name) in [(veballoc::PTX, "PTX"), (veballoc::BENCH_PTX, "BENCH_PTX")] {
        for k in RUNTIME_KERNELS {
            // The stamp of a build with the checks has the other name.
            let k = if veballoc::PTX_HAS_CHECKS && k == "veballoc_layout_without_checks" {
                veballoc_kernels::STAMP_WITH_CHECKS
            } else {
                k
            };
            assert!(veballoc::ptx_defines_kernel(ptx, k), "kernel {k} missing from {name}");
        }
        assert!(ptx.contains(".target sm_80"));
        // Whole-program link: no declaration without a body (an unresolved call into core).
        // Only CUDA's own device malloc/free (the baselines) come from the driver.
        let driver_provided = |l: &str| l.ends_with(" malloc") || l.ends_with(" free");
        let unresolved: Vec<&str> =
            ptx.lines().filter(|l| l.starts_with(".extern") && !driver_provided(l.trim_end())).collect();
        assert!(unresolved.is_empty(), "unresolved symbols in {name}: {unresolved:?}");
    }
    for k in BENCH_KERNELS {
        assert!(veballoc::ptx_defines_kernel(veballoc::BENCH_PTX, k), "kernel {k} missing from BENCH_PTX");
    }
}

/// What `Gpu::new` loads, and the driver JIT-compiles on a machine's first run, is the
/// runtime's kernels alone (every `.entry` of `PTX` is one of them): with the tests' and
/// benchmarks' kernels the JIT took about 45 s of CPU (sm_90, r35), without them 1.5 s.
#[test]
fn the_runtime_ptx_holds_only_the_runtime_kernels() {
    let entries = entry_names(veballoc::PTX);
    assert_eq!(entries.len(), RUNTIME_KERNELS.len(), "{entries:?}");
    let stamp = |k: &str| k.starts_with("veballoc_layout_");
    for e in &entries {
        assert!(RUNTIME_KERNELS.contains(e) || stamp(e), "{e} in the runtime PTX");
    }
    // `Gpu::launch` finds a kernel's module by its name: the runtime's kernels have the
    // prefix, the tests' and benchmarks' do not.
    let prefix = veballoc_kernels::RUNTIME_KERNEL_PREFIX;
    assert!(entries.iter().all(|e| e.starts_with(prefix)), "{entries:?}");
    let bench_only: Vec<&str> =
        entry_names(veballoc::BENCH_PTX).into_iter().filter(|e| !entries.contains(e)).collect();
    assert!(bench_only.len() >= BENCH_KERNELS.len(), "{bench_only:?}");
    assert!(bench_only.iter().all(|e| !e.starts_with(prefix)), "{bench_only:?}");
    assert!(veballoc::PTX.len() * 2 < veballoc::BENCH_PTX.len(), "the runtime PTX is not much smaller");
}

#[test]
fn ptx_uses_gpu_scope_ordered_atomics() {
    // The shim's inline asm, not LLVM's lowering of core atomics (which drops the ordering
    // of RMWs and uses .sys scope): every atomic names its ordering and .gpu scope.
    for ptx in [veballoc::PTX, veballoc::BENCH_PTX] {
        for line in ptx.lines().map(str::trim).filter(|l| l.starts_with("atom.")) {
            let ordered =
                ["atom.relaxed.gpu.", "atom.acquire.gpu.", "atom.release.gpu.", "atom.acq_rel.gpu."];
            assert!(
                ordered.iter().any(|o| line.starts_with(o)),
                "atomic without explicit order/scope: {line}"
            );
        }
    }
    // The hot paths: slice take (acquire add on the slot), give-back (release add), installs (swap).
    assert!(veballoc::BENCH_PTX.contains("atom.acquire.gpu.global.add.u64"));
    assert!(veballoc::BENCH_PTX.contains("atom.release.gpu.global.add.u32"));
    assert!(veballoc::BENCH_PTX.contains("atom.acq_rel.gpu.global.exch.b64"));
    assert!(veballoc::BENCH_PTX.contains("match.any.sync.b32"));
}

#[test]
fn ptx_atomics_are_in_the_global_state_space() {
    // With a generic address, ptxas must also serve a word in shared memory, and emits a CAS
    // loop beside each 64-bit RMW on every path (r46: 2900 more SASS instructions in
    // vb_malloc). Every word the shim touches is global memory (`atomic::words`' contract).
    for ptx in [veballoc::PTX, veballoc::BENCH_PTX] {
        let ordered = |l: &&str| {
            ["atom.", "red.", "ld.relaxed.", "ld.acquire.", "st.relaxed.", "st.release."]
                .iter()
                .any(|p| l.starts_with(p))
        };
        let lines: Vec<&str> = ptx.lines().map(str::trim).filter(ordered).collect();
        assert!(lines.len() > 100, "the shim's instructions: {}", lines.len());
        for line in lines {
            assert!(line.contains(".gpu.global."), "not in the global state space: {line}");
        }
    }
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
    run_ptxas_on(veballoc::BENCH_PTX)
}

/// Runs ptxas -v for sm_90 on `ptx_text`; panics if it cannot run or rejects it.
fn run_ptxas_on(ptx_text: &str) -> std::process::Output {
    // One folder per run: tests run ptxas side by side.
    static RUNS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let run = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("veballoc-ptx-{}-{run}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ptx = dir.join("veballoc.ptx");
    std::fs::write(&ptx, ptx_text).unwrap();
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
    // The whole module (BENCH_PTX: the report the other tests read), and the runtime's alone,
    // which `Gpu::new` loads.
    ptxas();
    let out = run_ptxas_on(veballoc::PTX);
    assert!(String::from_utf8_lossy(&out.stderr).contains("Compiling entry function 'veballoc_init'"));
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
    let entry =
        &veballoc::BENCH_PTX[veballoc::BENCH_PTX.find(".visible .entry vb_free(").expect("vb_free")..];
    let head = &entry[..entry.find("\n{").expect("vb_free's body")];
    assert!(head.contains(&format!("\n.maxnreg {cap}")), "vb_free has no .maxnreg {cap}:\n{head}");
    let report = String::from_utf8_lossy(&ptxas().stderr);
    let used = registers_of(&report, "vb_free");
    assert!(used <= cap, "ptxas gives vb_free {used} registers, above its cap of {cap}");
    // The malloc kernel has no cap of its own (its installs spill under a low one): ptxas,
    // run here without a module cap, gives it what it needs, far above the free kernel's.
    assert!(registers_of(&report, "vb_malloc") > cap);
}
