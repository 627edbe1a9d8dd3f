//! The README's quickstart, built out of tree exactly as a user would: `examples/quickstart/`
//! copied file by file into a fresh folder outside veballoc's workspace, depending on veballoc
//! by git URL (a `file://` URL of a snapshot of this working tree, since the network reaches
//! only the package registries), then by path; built with `cargo build --release` under the
//! default toolchain (the PTX build picks the pinned nightly itself), with no
//! `CUDA_LIBRARY_PATH` and no veballoc environment. Checks the host binary and both PTX files
//! (the user's kernels and veballoc's), that the binary starts (it reports "no GPU" without
//! one), that nothing was written into veballoc's sources (a git or registry dependency's are
//! read-only), and that `--features veballoc/checks` builds both PTX files with the checks.
//! No GPU needed. Takes a few minutes (a fresh build of cust, veballoc and two PTX files).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// The template, relative to veballoc's root.
const TEMPLATE: &str = "examples/quickstart";
/// Its files: the README shows each of them verbatim.
const TEMPLATE_FILES: [&str; 5] =
    ["Cargo.toml", "build.rs", "src/main.rs", "kernels/Cargo.toml", "kernels/src/lib.rs"];
/// How many times the template names veballoc's git URL (three dependencies and the patch).
const URL_USES: usize = 4;
/// The exit status of the quickstart binary without a GPU.
const NO_GPU_EXIT: i32 = 2;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn run(cmd: &mut Command) -> Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\n--- stdout\n{}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn git(dir: &Path) -> Command {
    let mut c = Command::new("git");
    c.arg("-C").arg(dir);
    for setting in [
        "user.name=veballoc-test",
        "user.email=test@localhost",
        "commit.gpgsign=false",
        "init.defaultBranch=main",
    ] {
        c.args(["-c", setting]);
    }
    c
}

/// Copies the working tree's files (tracked and new, not ignored) to `dest` and commits them
/// there: what a fresh clone of this state would hold.
fn snapshot(dest: &Path) {
    let list = run(git(&repo()).args(["ls-files", "-z", "--cached", "--others", "--exclude-standard"]));
    let mut copied = 0;
    for name in list.stdout.split(|&b| b == 0).filter(|n| !n.is_empty()) {
        let name = std::str::from_utf8(name).expect("file names are UTF-8");
        let src = repo().join(name);
        if !src.is_file() {
            continue; // deleted in the working tree
        }
        let dst = dest.join(name);
        std::fs::create_dir_all(dst.parent().unwrap()).unwrap();
        std::fs::copy(&src, &dst).unwrap_or_else(|e| panic!("copy {}: {e}", src.display()));
        copied += 1;
    }
    assert!(copied > 0, "no files listed by git");
    run(git(dest).args(["init", "-q"]));
    run(git(dest).args(["add", "-A"]));
    run(git(dest).args(["commit", "-q", "-m", "snapshot"]));
}

/// Files under `dir`, relative, skipping `.git`.
fn files_under(dir: &Path) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.file_name().is_some_and(|n| n == ".git") {
                continue;
            }
            if p.is_dir() {
                stack.push(p);
            } else {
                found.insert(p.strip_prefix(dir).unwrap().to_string_lossy().into_owned());
            }
        }
    }
    found
}

/// A `cargo` as a user's shell runs it: rustup's proxy with the default toolchain (the
/// pinned nightly where none is set), none of this test's cargo, rustc or CUDA settings.
fn user_cargo(dir: &Path) -> Command {
    let mut c = Command::new("cargo");
    c.current_dir(dir);
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy().into_owned();
        let keep = ["CARGO_HOME", "CARGO_NET_", "CARGO_HTTP_", "CARGO_REGISTRIES_", "CARGO_REGISTRY_"]
            .iter()
            .any(|p| k.starts_with(p));
        let drop = (k.starts_with("CARGO") && !keep)
            || k.starts_with("RUSTC")
            || k.starts_with("RUSTDOC")
            || k == "RUSTFLAGS"
            || k == "RUSTUP_TOOLCHAIN"
            || k.starts_with("CUDA_")
            || k.starts_with("VEBALLOC_")
            || k == "LD_LIBRARY_PATH";
        if drop {
            c.env_remove(&k);
        }
    }
    let mut probe = Command::new("cargo");
    probe.current_dir(dir).arg("--version").env_remove("RUSTUP_TOOLCHAIN");
    if !probe.output().is_ok_and(|o| o.status.success()) {
        c.env("RUSTUP_TOOLCHAIN", veballoc_ptx_build_pinned());
    }
    c
}

/// The pinned nightly, from rust-toolchain.toml.
fn veballoc_ptx_build_pinned() -> String {
    let toml = std::fs::read_to_string(repo().join("rust-toolchain.toml")).unwrap();
    toml.lines()
        .find_map(|l| l.trim().strip_prefix("channel = \"").and_then(|r| r.strip_suffix('"')))
        .expect("a channel in rust-toolchain.toml")
        .to_string()
}

fn build(app: &Path, args: &[&str]) {
    let version = run(user_cargo(app).arg("--version"));
    eprintln!("outer build: {}", String::from_utf8_lossy(&version.stdout).trim());
    let t = Instant::now();
    let out = run(user_cargo(app).arg("build").args(args));
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("cargo build {} in {:.0} s", args.join(" "), t.elapsed().as_secs_f64());
    assert!(!stderr.contains("warning: `my-"), "the quickstart builds with warnings:\n{stderr}");
}

/// Checks the PTX of the user's kernels and of veballoc in `<target>/<ptx_dir>`.
fn check_ptx(app: &Path, ptx_dir: &str, checks: bool) {
    let dir = app.join("target").join(ptx_dir).join("nvptx64-nvidia-cuda/release");
    let read = |name: &str| {
        let p = dir.join(name);
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("the PTX {} is missing: {e}", p.display()))
    };
    let mine = read("my_kernels.ptx");
    assert!(mine.contains(".entry sums("), "the user's kernel is missing from its PTX");
    assert_eq!(veballoc::ptx_checks(&mine), Some(checks), "the user's PTX: allocator checks");
    let theirs = read("veballoc_kernels.ptx");
    assert!(theirs.contains(".entry veballoc_init"), "veballoc's PTX lacks its kernels");
    assert_eq!(veballoc::ptx_checks(&theirs), Some(checks), "veballoc's PTX: allocator checks");
}

/// Runs the quickstart binary: it reports "no GPU" (status 2) without one, or checks its
/// sums on a GPU. Where the build linked the stub libcuda (no CUDA installed), the stub is
/// what the loader finds without a driver.
fn run_binary(app: &Path) {
    let mut cmd = Command::new(app.join("target/release/my-app"));
    let stub = app.join("target/cuda-stub");
    if stub.join("libcuda.so.1").exists() {
        eprintln!("the build linked the stub libcuda in {}", stub.display());
        cmd.env("LD_LIBRARY_PATH", &stub);
    }
    let out = cmd.output().expect("run my-app");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    match out.status.code() {
        Some(0) => assert!(stdout.contains(": 0 wrong sums"), "{stdout}"),
        Some(NO_GPU_EXIT) => assert!(stderr.contains("no usable CUDA GPU"), "{stderr}"),
        _ => panic!("my-app failed ({}):\n{stdout}\n{stderr}", out.status),
    }
}

/// `git status` of `dir` lists nothing (no file written or changed), apart from `allowed`.
fn assert_untouched(dir: &Path, allowed: &[&str]) {
    let st = run(git(dir).args(["status", "--porcelain", "--ignored", "--untracked-files=all"]));
    let changed: Vec<String> = String::from_utf8_lossy(&st.stdout)
        .lines()
        .filter(|l| !allowed.iter().any(|a| l.ends_with(a)))
        .map(str::to_string)
        .collect();
    assert!(changed.is_empty(), "the build wrote into veballoc's sources at {}: {changed:?}", dir.display());
}

#[test]
fn quickstart_builds_out_of_tree_by_git_url_and_by_path() {
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos();
    // Cargo names its git checkout after the URL's last segment: unique, to clean it up.
    let name = format!("veballoc-oot-{}-{nanos}", std::process::id());
    let tmp = std::env::temp_dir().join(&name);
    let (src, app) = (tmp.join(&name), tmp.join("my-app"));
    snapshot(&src);

    // The user's crate: the template's files, verbatim but for veballoc's URL.
    let template = repo().join(TEMPLATE);
    let listed: BTreeSet<String> = TEMPLATE_FILES.iter().map(|s| s.to_string()).collect();
    assert_eq!(files_under(&template), listed, "the template's files (the README shows each)");
    let manifest = std::fs::read_to_string(template.join("Cargo.toml")).unwrap();
    let url = manifest
        .lines()
        .find_map(|l| l.strip_prefix("veballoc = { git = \"").and_then(|r| r.split('"').next()))
        .expect("a `veballoc = { git = \"..\" }` line in the template's Cargo.toml");
    assert_eq!(manifest.matches(url).count(), URL_USES, "uses of {url} in the template");
    let local_url = format!("file://{}", src.display());
    for f in TEMPLATE_FILES {
        let text = std::fs::read_to_string(template.join(f)).unwrap().replace(url, &local_url);
        std::fs::create_dir_all(app.join(f).parent().unwrap()).unwrap();
        std::fs::write(app.join(f), text).unwrap();
    }

    // By git URL.
    build(&app, &["--release"]);
    check_ptx(&app, "ptx", false);
    run_binary(&app);
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(&std::env::var_os("HOME").expect("HOME")).join(".cargo"));
    let checkouts: Vec<PathBuf> = std::fs::read_dir(home.join("git/checkouts"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(&format!("{name}-")))
        .collect();
    assert_eq!(checkouts.len(), 1, "cargo's checkout of {local_url}");
    for rev in std::fs::read_dir(&checkouts[0]).unwrap().flatten() {
        assert_untouched(&rev.path(), &[".cargo-ok"]);
    }

    // By path, outside veballoc's workspace (sharing the target folder: a faster build).
    let manifest = std::fs::read_to_string(app.join("Cargo.toml")).unwrap();
    let by_path = manifest
        .replace(
            &format!("veballoc = {{ git = \"{local_url}\""),
            &format!("veballoc = {{ path = \"{}\"", src.display()),
        )
        .replace(
            &format!("veballoc-kernels = {{ git = \"{local_url}\""),
            &format!("veballoc-kernels = {{ path = \"{}\"", src.join("kernels").display()),
        )
        .replace(
            &format!("veballoc-ptx-build = {{ git = \"{local_url}\""),
            &format!("veballoc-ptx-build = {{ path = \"{}\"", src.join("ptx-build").display()),
        )
        .replace(
            &format!("find_cuda_helper = {{ git = \"{local_url}\""),
            &format!("find_cuda_helper = {{ path = \"{}\"", src.join("find-cuda-helper").display()),
        );
    assert!(!by_path.contains(&local_url), "every git dependency turned into a path one:\n{by_path}");
    std::fs::write(app.join("Cargo.toml"), by_path).unwrap();
    build(&app, &["--release"]);
    check_ptx(&app, "ptx", false);
    run_binary(&app);
    // The safety checks, asked of veballoc alone, reach the user's PTX too (DEP_VEBALLOC_CHECKS).
    build(&app, &["--release", "--features", "veballoc/checks"]);
    check_ptx(&app, "ptx-checks", true);
    assert_untouched(&src, &[]);

    for p in checkouts {
        let _ = std::fs::remove_dir_all(p);
    }
    if let Ok(dbs) = std::fs::read_dir(home.join("git/db")) {
        for db in dbs.flatten().filter(|e| e.file_name().to_string_lossy().starts_with(&format!("{name}-"))) {
            let _ = std::fs::remove_dir_all(db.path());
        }
    }
    let _ = std::fs::remove_dir_all(&tmp);
}
