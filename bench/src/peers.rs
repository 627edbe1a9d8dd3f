//! Peers: the prebuilt benchmark binaries of other device allocators (`--peers DIR`, DIR
//! holding `bin/peer_*`, see shared/peers/README.md), run in the same invocation with the
//! same thread count, heap size, iterations and warm-up as veballoc, their rows parsed and
//! recorded next to veballoc's.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::common::{Bench, Res};

/// The peers the binaries provide: (name in `--peers-list`, binary, label in the results).
pub(crate) const PEERS: [(&str, &str, &str); 4] = [
    ("gallatin", "peer_gallatin", "gallatin"),
    ("cuda", "peer_cuda", "cuda-peer"),
    ("ouro_p_s", "peer_ouro_p_s", "ouro-p-s"),
    ("ouro_c_s", "peer_ouro_c_s", "ouro-c-s"),
];
/// How often a running peer is polled for its exit.
const POLL: Duration = Duration::from_millis(20);
/// Columns of a peer CSV row.
const PEER_CSV_HEADER: &str =
    "allocator,test,size_or_range,threads,iter,alloc_ms,free_ms,range_bytes,live_bytes";

/// A peer binary to run.
#[derive(Clone, Debug)]
pub(crate) struct Peer {
    /// Its name in `--peers-list` (gallatin, cuda, ...).
    pub(crate) name: String,
    /// Allocator label in the results.
    pub(crate) label: String,
    pub(crate) bin: PathBuf,
}

impl Peer {
    /// CUDA's device malloc: slow at some sizes, so it runs only at `--cuda-sizes`, with
    /// `--cuda-iters` and no warm-up, as the harness's own CUDA baseline.
    pub(crate) fn is_cuda(&self) -> bool {
        self.name == "cuda"
    }
}

/// Resolves `--peers-list` against `DIR/bin`; every named peer must exist there.
pub(crate) fn resolve(dir: &Path, list: &[String]) -> Result<Vec<Peer>, String> {
    let mut out: Vec<Peer> = Vec::new();
    for want in list.iter().map(|s| s.trim()).filter(|s| !s.is_empty()) {
        let Some(&(name, bin, label)) = PEERS.iter().find(|p| p.0 == want) else {
            let known: Vec<&str> = PEERS.iter().map(|p| p.0).collect();
            return Err(format!("unknown peer {want:?} (known: {})", known.join(", ")));
        };
        let path = dir.join("bin").join(bin);
        if !path.is_file() {
            return Err(format!("peer {name}: {} not found", path.display()));
        }
        if !out.iter().any(|p| p.name == name) {
            out.push(Peer { name: name.into(), label: label.into(), bin: path });
        }
    }
    Ok(out)
}

/// One CSV row of a peer binary (one recorded iteration).
#[derive(Serialize, Clone, Debug, PartialEq)]
pub(crate) struct PeerRow {
    pub(crate) allocator: String,
    pub(crate) test: String,
    /// A size, or `lo-hi` for mixed sizes.
    pub(crate) size_or_range: String,
    pub(crate) threads: u64,
    pub(crate) iter: u32,
    pub(crate) alloc_ms: f64,
    pub(crate) free_ms: f64,
    pub(crate) range_bytes: u64,
    pub(crate) live_bytes: u64,
}

/// Parses a peer CSV (header line, then rows; a header repeated by appending is skipped).
pub(crate) fn parse_csv(text: &str) -> Result<Vec<PeerRow>, String> {
    let mut rows = Vec::new();
    for (k, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line == PEER_CSV_HEADER {
            continue;
        }
        let f: Vec<&str> = line.split(',').collect();
        if f.len() != 9 {
            return Err(format!("line {}: {} fields, want 9: {line}", k + 1, f.len()));
        }
        let num = |i: usize| -> Result<f64, String> {
            f[i].trim().parse::<f64>().map_err(|e| format!("line {}: field {}: {e}", k + 1, i + 1))
        };
        let int = |i: usize| -> Result<u64, String> {
            f[i].trim().parse::<u64>().map_err(|e| format!("line {}: field {}: {e}", k + 1, i + 1))
        };
        rows.push(PeerRow {
            allocator: f[0].into(),
            test: f[1].into(),
            size_or_range: f[2].into(),
            threads: int(3)?,
            iter: int(4)? as u32,
            alloc_ms: num(5)?,
            free_ms: num(6)?,
            range_bytes: int(7)?,
            live_bytes: int(8)?,
        });
    }
    Ok(rows)
}

/// Null pointers and wrong words a peer reported on its `[iter]` lines (recorded iterations;
/// warm-up lines are `[warmup]`), summed: `nulls=N bad_words=M`.
pub(crate) fn parse_checks(stdout: &str) -> (u64, u64) {
    let (mut nulls, mut bad) = (0, 0);
    for line in stdout.lines().filter(|l| l.starts_with("[iter]")) {
        for tok in line.split_whitespace() {
            if let Some(v) = tok.strip_prefix("nulls=") {
                nulls += v.parse::<u64>().unwrap_or(0);
            } else if let Some(v) = tok.strip_prefix("bad_words=") {
                bad += v.parse::<u64>().unwrap_or(0);
            }
        }
    }
    (nulls, bad)
}

/// One point (or, for `scale`, one series of points) asked of a peer.
#[derive(Clone, Copy, Debug)]
pub(crate) enum PeerCmd {
    Single { threads: u64, size: u64 },
    Mixed { threads: u64, lo: u64, hi: u64 },
    Scale { size: u64, log_min: u32, log_max: u32 },
}

impl PeerCmd {
    /// Command-line arguments before the options.
    pub(crate) fn args(self) -> Vec<String> {
        match self {
            PeerCmd::Single { threads, size } => vec!["single".into(), threads.to_string(), size.to_string()],
            PeerCmd::Mixed { threads, lo, hi } => {
                vec!["mixed".into(), threads.to_string(), lo.to_string(), hi.to_string()]
            }
            PeerCmd::Scale { size, log_min, log_max } => {
                vec!["scale".into(), size.to_string(), log_min.to_string(), log_max.to_string()]
            }
        }
    }
    /// A short name for its files.
    fn tag(self) -> String {
        self.args().join("-")
    }
}

/// What one peer invocation did.
#[derive(Serialize, Clone)]
pub(crate) struct PeerRun {
    pub(crate) peer: String,
    /// The binary that ran.
    pub(crate) bin: String,
    /// Which of the harness's tests it served.
    pub(crate) test: String,
    pub(crate) args: Vec<String>,
    /// How it ended: "exit N", "signal N", "timed out" or "did not start".
    pub(crate) status: String,
    pub(crate) seconds: f64,
    pub(crate) nulls: u64,
    pub(crate) bad_words: u64,
    /// Its log (stdout and stderr), relative to the output folder.
    pub(crate) log: String,
    pub(crate) rows: Vec<PeerRow>,
}

/// Median alloc and free times (ms) of `rows` grouped by thread count, ascending.
pub(crate) fn medians_by_threads(rows: &[PeerRow]) -> Vec<(u64, Vec<f64>, Vec<f64>)> {
    let mut threads: Vec<u64> = rows.iter().map(|r| r.threads).collect();
    threads.sort_unstable();
    threads.dedup();
    threads
        .into_iter()
        .map(|t| {
            let sel = rows.iter().filter(|r| r.threads == t);
            (t, sel.clone().map(|r| r.alloc_ms).collect(), sel.map(|r| r.free_ms).collect())
        })
        .collect()
}

/// How a peer invocation ended.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Ended {
    Exit(i32),
    Signal(i32),
    /// Killed after `--peer-timeout-s`.
    TimedOut,
    /// Could not be started (the log says why).
    NotStarted,
}

impl Ended {
    pub(crate) fn ok(self) -> bool {
        self == Ended::Exit(0)
    }
}

impl std::fmt::Display for Ended {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            Ended::Exit(c) => write!(f, "exit {c}"),
            Ended::Signal(s) => write!(f, "signal {s}"),
            Ended::TimedOut => write!(f, "timed out"),
            Ended::NotStarted => write!(f, "did not start"),
        }
    }
}

/// Runs `bin args` with stdout and stderr to `log`, killing it after `deadline`; returns how
/// it ended and the seconds it took.
pub(crate) fn invoke(bin: &Path, args: &[String], log: &Path, deadline: Duration) -> Res<(Ended, f64)> {
    use std::os::unix::process::ExitStatusExt;
    let logf = std::fs::File::create(log)?;
    let t0 = Instant::now();
    let mut child = match Command::new(bin)
        .args(args)
        .stdin(Stdio::null())
        .stdout(logf.try_clone()?)
        .stderr(logf.try_clone()?)
        .spawn()
    {
        Ok(c) => c,
        Err(e) => {
            use std::io::Write;
            writeln!(&logf, "could not start {}: {e}", bin.display())?;
            return Ok((Ended::NotStarted, t0.elapsed().as_secs_f64()));
        }
    };
    let status = loop {
        if let Some(s) = child.try_wait()? {
            break match (s.code(), s.signal()) {
                (Some(c), _) => Ended::Exit(c),
                (None, Some(sig)) => Ended::Signal(sig),
                (None, None) => Ended::NotStarted,
            };
        }
        if t0.elapsed() > deadline {
            child.kill().ok();
            child.wait().ok();
            break Ended::TimedOut;
        }
        std::thread::sleep(POLL);
    };
    Ok((status, t0.elapsed().as_secs_f64()))
}

impl Bench {
    /// Runs `cmd` on `peer` with the harness's heap size, `iters` recorded iterations after
    /// `warmup` untimed ones; records the run and returns its rows (empty when it failed, did
    /// not end, returned nulls or wrong words: reported, it does not stop the harness, and no
    /// point or ratio uses its times).
    pub(crate) fn run_peer(
        &mut self,
        peer: &Peer,
        test: &str,
        cmd: PeerCmd,
        iters: u32,
        warmup: u32,
    ) -> Res<Vec<PeerRow>> {
        let dir = self.cli.out.join("peers");
        std::fs::create_dir_all(&dir)?;
        let tag = format!("{}-{test}-{}", peer.label, cmd.tag());
        let (csv, log) = (dir.join(format!("{tag}.csv")), dir.join(format!("{tag}.log")));
        // A fresh CSV per invocation: the binary appends.
        let _ = std::fs::remove_file(&csv);
        let mut args = cmd.args();
        args.extend([
            "--iters".into(),
            iters.to_string(),
            "--warmup".into(),
            warmup.to_string(),
            "--heap-gib".into(),
            self.cli.heap_gib.to_string(),
            "--device".into(),
            self.cli.device.to_string(),
            "--name".into(),
            peer.label.clone(),
            "--csv".into(),
            csv.to_string_lossy().into_owned(),
        ]);
        eprint!("  [peer {} {}] ...\r", peer.label, cmd.args().join(" "));
        let deadline = Duration::from_secs(self.cli.peer_timeout_s);
        let (ended, seconds) = invoke(&peer.bin, &args, &log, deadline)?;
        let out = std::fs::read_to_string(&log).unwrap_or_default();
        let (nulls, bad_words) = parse_checks(&out);
        let rows = match std::fs::read_to_string(&csv) {
            Ok(text) => parse_csv(&text).unwrap_or_else(|e| {
                eprintln!("warning: peer {}: {}: {e}", peer.label, csv.display());
                Vec::new()
            }),
            Err(_) => Vec::new(),
        };
        if !ended.ok() {
            eprintln!(
                "warning: peer {} {}: {ended}{}; see {}",
                peer.label,
                cmd.args().join(" "),
                if ended == Ended::TimedOut { " (--peer-timeout-s)" } else { "" },
                log.display()
            );
        }
        if nulls != 0 || bad_words != 0 {
            eprintln!(
                "warning: peer {} {}: {nulls} nulls, {bad_words} wrong words (VERIFY FAILED in {}); \
                 its times are not recorded (a frag round's ratio is, with its nulls, unless words were wrong)",
                peer.label,
                cmd.args().join(" "),
                log.display()
            );
        }
        // A run that did less work (nulls), wrong work or did not end is no timing to compare
        // with: it stays in the peer-run log with its status, and no point or ratio uses it.
        // A frag round records its nulls beside its range / live, as veballoc's do.
        let clean = ended.ok() && bad_words == 0 && (nulls == 0 || test == "frag");
        self.peer_runs.push(PeerRun {
            peer: peer.label.clone(),
            bin: peer.bin.display().to_string(),
            test: test.into(),
            args,
            status: ended.to_string(),
            seconds,
            nulls,
            bad_words,
            log: format!("peers/{tag}.log"),
            rows: rows.clone(),
        });
        Ok(if clean { rows } else { Vec::new() })
    }

    /// Iterations and warm-up for `peer`: the harness's own, or CUDA malloc's.
    pub(crate) fn peer_iters(&self, peer: &Peer) -> (u32, u32) {
        if peer.is_cuda() {
            (self.cli.cuda_iters, 1)
        } else {
            // veballoc's points drop one warm-up iteration; so do the peers'.
            (self.cli.iters, 1)
        }
    }

    /// Whether `peer` runs at size (or maximum) `s`.
    pub(crate) fn peer_runs_at(&self, peer: &Peer, s: u64) -> bool {
        !peer.is_cuda() || self.cli.cuda_sizes.contains(&s)
    }

    /// Runs every peer at one point of `test` (single or mixed sizes) and records its median
    /// alloc and free; returns (label, alloc median, free median) per peer that produced rows.
    pub(crate) fn peers_at(
        &mut self,
        test: &str,
        mixed: bool,
        s: u64,
        n: u64,
    ) -> Res<Vec<(String, f64, f64)>> {
        let mut out = Vec::new();
        for peer in self.peers.clone() {
            if !self.peer_runs_at(&peer, s) {
                continue;
            }
            let cmd = if mixed {
                PeerCmd::Mixed { threads: n, lo: crate::common::MIXED_MIN, hi: s }
            } else {
                PeerCmd::Single { threads: n, size: s }
            };
            let (iters, warmup) = self.peer_iters(&peer);
            let rows = self.run_peer(&peer, test, cmd, iters, warmup)?;
            if rows.is_empty() {
                continue;
            }
            let ta = rows.iter().map(|r| r.alloc_ms).collect();
            let tf = rows.iter().map(|r| r.free_ms).collect();
            let (a, f) = self.record(test, &peer.label, s, n, ta, tf)?;
            out.push((peer.label.clone(), a, f));
        }
        Ok(out)
    }

    /// Runs every peer over thread counts 2^log_min..2^log_max at `size` (one invocation
    /// each) and records the points under `test`; returns (label, threads, alloc median,
    /// free median).
    pub(crate) fn peers_scaling(
        &mut self,
        test: &str,
        size: u64,
        log_min: u32,
        log_max: u32,
    ) -> Res<Vec<(String, u64, f64, f64)>> {
        let mut out = Vec::new();
        for peer in self.peers.clone() {
            if !self.peer_runs_at(&peer, size) {
                continue;
            }
            let (iters, warmup) = self.peer_iters(&peer);
            let rows =
                self.run_peer(&peer, test, PeerCmd::Scale { size, log_min, log_max }, iters, warmup)?;
            for (t, ta, tf) in medians_by_threads(&rows) {
                let (a, f) = self.record(test, &peer.label, size, t, ta, tf)?;
                out.push((peer.label.clone(), t, a, f));
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::Point;

    /// Median of `v`, as the harness records it.
    fn median(v: &[f64]) -> f64 {
        Point::new("", "", "", 0, 0, v.to_vec()).median_ms
    }

    const SAMPLE: &str = "allocator,test,size_or_range,threads,iter,alloc_ms,free_ms,range_bytes,live_bytes
gallatin,single,16,1000000,0,0.114500,0.054200,33554432,16000000
gallatin,single,16,1000000,1,0.120000,0.050000,33554440,16000000
allocator,test,size_or_range,threads,iter,alloc_ms,free_ms,range_bytes,live_bytes
gallatin,mixed,16-64,1024,0,0.2,0.04,1000,900
";

    #[test]
    fn parses_peer_csv_with_repeated_header() {
        let rows = parse_csv(SAMPLE).unwrap();
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[0].allocator, "gallatin");
        assert_eq!(rows[0].threads, 1_000_000);
        assert_eq!(rows[1].iter, 1);
        assert!((rows[1].alloc_ms - 0.12).abs() < 1e-12);
        assert_eq!(rows[0].range_bytes, 33554432);
        assert_eq!(rows[2].size_or_range, "16-64");
        assert_eq!(rows[2].live_bytes, 900);
    }

    #[test]
    fn rejects_malformed_peer_rows() {
        assert!(parse_csv("gallatin,single,16,100,0,0.1,0.1,5\n").is_err(), "8 fields");
        assert!(parse_csv("gallatin,single,16,x,0,0.1,0.1,5,6\n").is_err(), "threads not a number");
        assert!(parse_csv("").unwrap().is_empty());
    }

    #[test]
    fn sums_nulls_and_bad_words_of_recorded_iterations() {
        let out = "[info] x\n[warmup] Gallatin single 16 n=4 alloc_ms=1 free_ms=1 nulls=7 bad_words=7\n\
                   [iter] Gallatin single 16 n=4 it=0 alloc_ms=0.1 free_ms=0.1 range=1 live=1 nulls=2 bad_words=0\n\
                   [iter] Gallatin single 16 n=4 it=1 alloc_ms=0.1 free_ms=0.1 range=1 live=1 nulls=1 bad_words=5  <-- VERIFY FAILED\n";
        assert_eq!(parse_checks(out), (3, 5));
    }

    #[test]
    fn groups_scale_rows_by_threads() {
        let row = |t, a| PeerRow {
            allocator: "g".into(),
            test: "scale".into(),
            size_or_range: "16".into(),
            threads: t,
            iter: 0,
            alloc_ms: a,
            free_ms: a / 2.0,
            range_bytes: 0,
            live_bytes: 0,
        };
        let g = medians_by_threads(&[row(2, 3.0), row(1, 1.0), row(2, 5.0), row(2, 4.0)]);
        assert_eq!(g.len(), 2);
        assert_eq!(g[0].0, 1);
        assert_eq!(g[1].0, 2);
        assert_eq!(median(&g[1].1), 4.0);
        assert_eq!(median(&g[1].2), 2.0);
    }

    #[test]
    fn builds_peer_command_lines() {
        assert_eq!(PeerCmd::Single { threads: 1 << 20, size: 16 }.args(), ["single", "1048576", "16"]);
        assert_eq!(PeerCmd::Mixed { threads: 8, lo: 16, hi: 64 }.args(), ["mixed", "8", "16", "64"]);
        assert_eq!(PeerCmd::Scale { size: 512, log_min: 0, log_max: 20 }.args(), ["scale", "512", "0", "20"]);
    }

    /// A stand-in peer: a shell script that writes two rows to the file after --csv and an
    /// [iter] line with a null, as the real binaries do.
    fn fake_peer(dir: &Path, body: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let bin = dir.join("bin/peer_gallatin");
        std::fs::create_dir_all(dir.join("bin")).unwrap();
        std::fs::write(&bin, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
        bin
    }

    #[test]
    fn invokes_a_peer_and_reads_its_rows() {
        let dir = std::env::temp_dir().join(format!("vb-peer-run-{}", std::process::id()));
        let bin = fake_peer(
            &dir,
            r#"while [ $# -gt 0 ]; do [ "$1" = --csv ] && csv=$2; shift; done
echo "[iter] Gallatin single 16 n=4 it=0 alloc_ms=0.1 free_ms=0.1 range=1 live=1 nulls=1 bad_words=0"
printf 'allocator,test,size_or_range,threads,iter,alloc_ms,free_ms,range_bytes,live_bytes\n' > "$csv"
printf 'gallatin,single,16,4,0,0.5,0.25,128,64\ngallatin,single,16,4,1,0.7,0.35,128,64\n' >> "$csv"
echo done >&2"#,
        );
        let (csv, log) = (dir.join("p.csv"), dir.join("p.log"));
        let mut args = PeerCmd::Single { threads: 4, size: 16 }.args();
        args.extend(["--csv".into(), csv.to_string_lossy().into_owned()]);
        let (ended, _) = invoke(&bin, &args, &log, Duration::from_secs(30)).unwrap();
        assert!(ended.ok(), "{ended}");
        let rows = parse_csv(&std::fs::read_to_string(&csv).unwrap()).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[1].alloc_ms, 0.7);
        let out = std::fs::read_to_string(&log).unwrap();
        assert_eq!(parse_checks(&out), (1, 0));
        assert!(out.contains("done"), "stderr in the log too");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn kills_a_peer_past_its_deadline() {
        let dir = std::env::temp_dir().join(format!("vb-peer-slow-{}", std::process::id()));
        let bin = fake_peer(&dir, "exec sleep 30");
        let (ended, secs) = invoke(&bin, &[], &dir.join("p.log"), Duration::from_millis(200)).unwrap();
        assert_eq!(ended, Ended::TimedOut);
        assert!(secs < 10.0, "killed, not waited for: {secs} s");
        let missing = invoke(&dir.join("bin/none"), &[], &dir.join("q.log"), Duration::from_secs(1)).unwrap();
        assert_eq!(missing.0, Ended::NotStarted);
        let crash = fake_peer(&dir, "kill -SEGV $$");
        assert_eq!(
            invoke(&crash, &[], &dir.join("r.log"), Duration::from_secs(30)).unwrap().0,
            Ended::Signal(11)
        );
        let fail = fake_peer(&dir, "exit 4");
        let e = invoke(&fail, &[], &dir.join("s.log"), Duration::from_secs(30)).unwrap().0;
        assert_eq!((e, e.to_string()), (Ended::Exit(4), "exit 4".to_string()));
        assert!(std::fs::read_to_string(dir.join("q.log")).unwrap().contains("could not start"));
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn resolves_peers_in_a_folder() {
        let dir = std::env::temp_dir().join(format!("vb-peers-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("bin")).unwrap();
        std::fs::write(dir.join("bin/peer_gallatin"), "").unwrap();
        let p = resolve(&dir, &["gallatin".into(), "gallatin".into()]).unwrap();
        assert_eq!(p.len(), 1, "a peer named twice runs once");
        assert_eq!(p[0].label, "gallatin");
        assert!(resolve(&dir, &["cuda".into()]).is_err(), "missing binary");
        assert!(resolve(&dir, &["tbuddy".into()]).is_err(), "unknown peer");
        std::fs::remove_dir_all(&dir).ok();
    }
}
