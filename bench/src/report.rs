//! Recording a run: JSON and CSV with the GPU, driver, date and git revision, and the SVG plots.

use std::io::Write;
use std::path::Path;

use serde::Serialize;

use crate::common::{Bench, Point, Res, BLOCK, MIXED_MIN};
use crate::cpu_model::CpuModelInfo;
use crate::memory::{ChurnPoint, UtilPoint, MIB};
use crate::peers::PeerRun;
use crate::plot;
use crate::Cli;

#[derive(Serialize)]
pub(crate) struct Report<'a> {
    pub(crate) gpu: String,
    pub(crate) driver: i32,
    pub(crate) date_utc: String,
    pub(crate) git_rev: &'static str,
    pub(crate) threads: u64,
    pub(crate) iters: u32,
    pub(crate) heap_bytes: u64,
    pub(crate) block: u32,
    pub(crate) max_registers: u32,
    /// Whether each new GPU heap ran `Heap::boot` (the default; `VEBALLOC_BOOT=0` turns it
    /// off); false for the CPU model, whose heaps do not boot.
    pub(crate) boot: bool,
    pub(crate) points: &'a [Point],
    pub(crate) frag: &'a [FragPoint],
    /// `frag --frag-map`'s maps (absent without it).
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub(crate) frag_maps: &'a [FragMap],
    pub(crate) oom: &'a [OomPoint],
    pub(crate) util: &'a [UtilPoint],
    pub(crate) churn: &'a [ChurnPoint],
    /// veballoc's medians against every other allocator measured at the same point.
    pub(crate) ratios: Vec<Ratio>,
    /// Every peer invocation, with its rows as the binary wrote them.
    pub(crate) peer_runs: &'a [PeerRun],
    /// Where no GPU was usable: the CPU model's settings (the `gpu` field then reads "CPU
    /// model (no GPU): <CPU>", and every time is a CPU time). Absent in GPU runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) cpu_model: Option<CpuModelInfo>,
}

/// What a run recorded and where it ran: what `save` writes, from a GPU run (`Bench`) or
/// from the CPU model (`cpu_model::CpuModel`).
pub(crate) struct Record<'a> {
    /// The GPU's name, or "CPU model (no GPU): <CPU>".
    pub(crate) device: String,
    /// The CUDA driver version (0 in the CPU model).
    pub(crate) driver: i32,
    pub(crate) cli: &'a Cli,
    /// Threads per launch and heap bytes the run used.
    pub(crate) threads: u64,
    pub(crate) heap_bytes: u64,
    pub(crate) points: &'a [Point],
    pub(crate) frag: &'a [FragPoint],
    pub(crate) frag_maps: &'a [FragMap],
    pub(crate) oom: &'a [OomPoint],
    pub(crate) util: &'a [UtilPoint],
    pub(crate) churn: &'a [ChurnPoint],
    /// Labels of the peers run next to veballoc.
    pub(crate) peer_labels: Vec<String>,
    pub(crate) peer_runs: &'a [PeerRun],
    pub(crate) cpu_model: Option<CpuModelInfo>,
}

/// veballoc against another allocator (a peer, CUDA malloc or a floor) at one point, both
/// medians of this run.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub(crate) struct Ratio {
    pub(crate) test: String,
    pub(crate) phase: String,
    pub(crate) size: u64,
    pub(crate) threads: u64,
    pub(crate) versus: String,
    pub(crate) veballoc_ms: f64,
    pub(crate) other_ms: f64,
    /// other / veballoc: above 1, veballoc is faster; for a floor, 1 / (how many times the
    /// floor's time veballoc takes).
    pub(crate) speedup: f64,
}

/// Tests whose points compare allocators at the same size and thread count.
const RATIO_TESTS: [&str; 3] = ["single", "mixed", "scaling"];

/// veballoc's median at each point of `RATIO_TESTS` against every other allocator's median at
/// the same test, phase, size and thread count.
pub(crate) fn ratios(points: &[Point]) -> Vec<Ratio> {
    let mut out = Vec::new();
    for v in points.iter().filter(|p| p.allocator == "veballoc" && RATIO_TESTS.contains(&p.test.as_str())) {
        for o in points.iter().filter(|o| {
            o.allocator != "veballoc"
                && o.test == v.test
                && o.phase == v.phase
                && o.size == v.size
                && o.threads == v.threads
        }) {
            if v.median_ms > 0.0 && o.median_ms.is_finite() {
                out.push(Ratio {
                    test: v.test.clone(),
                    phase: v.phase.clone(),
                    size: v.size,
                    threads: v.threads,
                    versus: o.allocator.clone(),
                    veballoc_ms: v.median_ms,
                    other_ms: o.median_ms,
                    speedup: o.median_ms / v.median_ms,
                });
            }
        }
    }
    out
}

/// One segment of a `frag` point's map (`--frag-map`), after round 0.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub(crate) struct SegRow {
    pub(crate) segment: u32,
    /// "g<group>", "free", or the table's other kinds.
    pub(crate) kind: String,
    pub(crate) blocks_out: u32,
    /// Bytes of one of the segment's blocks (0 when it serves no group).
    pub(crate) block_bytes: u64,
    /// Requested bytes of the round's pointers in the segment.
    pub(crate) live_bytes: u64,
    /// 64 KiB units of the segment that hold at least one of them.
    pub(crate) units: u64,
}

/// Where one `frag` point's range went: its segments up to the highest in use.
#[derive(Serialize, Clone)]
pub(crate) struct FragMap {
    pub(crate) size: u64,
    pub(crate) mixed: bool,
    pub(crate) threads: u64,
    pub(crate) segments: Vec<SegRow>,
}

/// Address range handed out vs live bytes after one alloc round.
#[derive(Serialize, Clone)]
pub(crate) struct FragPoint {
    pub(crate) allocator: String,
    /// Size, or the maximum for mixed sizes.
    pub(crate) size: u64,
    pub(crate) mixed: bool,
    pub(crate) round: u32,
    pub(crate) threads: u64,
    /// Highest address + its size - lowest address.
    pub(crate) range_bytes: u64,
    /// Bytes requested (N*S, or the sum of the mixed sizes).
    pub(crate) live_bytes: u64,
    pub(crate) ratio: f64,
    /// Requests that got null (left out of the range; the live bytes count every request).
    pub(crate) nulls: u64,
}

/// Bytes handed out before null.
#[derive(Serialize, Clone)]
pub(crate) struct OomPoint {
    pub(crate) allocator: String,
    pub(crate) size: u64,
    pub(crate) threads: u64,
    pub(crate) served: u64,
    pub(crate) heap_bytes: u64,
    /// served * size / heap_bytes.
    pub(crate) share: f64,
    pub(crate) ms: f64,
}

impl Bench {
    pub(crate) fn save(&self, name: &str) -> Res<()> {
        self.results().save(name)
    }

    /// This run's results, on this GPU.
    pub(crate) fn results(&self) -> Record<'_> {
        Record {
            // The ordinal only where it is not the default, so that files of one-GPU runs read
            // as before.
            device: match self.gpu.ordinal() {
                0 => self.gpu.name().into(),
                n => format!("{} (device {n})", self.gpu.name()),
            },
            driver: self.gpu.driver_version(),
            cli: &self.cli,
            threads: self.cli.threads,
            heap_bytes: self.cli.heap_gib << 30,
            points: &self.points,
            frag: &self.frag,
            frag_maps: &self.frag_maps,
            oom: &self.oom,
            util: &self.util,
            churn: &self.churn,
            peer_labels: self.peers.iter().map(|p| p.label.clone()).collect(),
            peer_runs: &self.peer_runs,
            cpu_model: None,
        }
    }
}

impl Record<'_> {
    /// Writes `<name>.json`, `<name>.csv`, the per-test CSVs and the plots under `--out`.
    pub(crate) fn save(&self, name: &str) -> Res<()> {
        std::fs::create_dir_all(&self.cli.out)?;
        let report = Report {
            gpu: self.device.clone(),
            driver: self.driver,
            date_utc: date_utc(),
            git_rev: env!("VEBALLOC_GIT_REV"),
            threads: self.threads,
            iters: self.cli.iters,
            heap_bytes: self.heap_bytes,
            block: BLOCK,
            max_registers: self.cli.maxreg,
            // The CPU model's heaps do not boot (`CpuHeap`).
            boot: self.cpu_model.is_none() && veballoc::boot_requested(),
            points: self.points,
            frag: self.frag,
            frag_maps: self.frag_maps,
            oom: self.oom,
            util: self.util,
            churn: self.churn,
            ratios: ratios(self.points),
            peer_runs: self.peer_runs,
            cpu_model: self.cpu_model.clone(),
        };
        let json = self.cli.out.join(format!("{name}.json"));
        std::fs::write(&json, serde_json::to_string_pretty(&report)?)?;
        write_csv(&self.cli.out.join(format!("{name}.csv")), &report)?;
        let head = format!(
            "# gpu={} driver={} date={} rev={}\n",
            report.gpu, report.driver, report.date_utc, report.git_rev
        );
        if !self.frag.is_empty() {
            let mut t =
                head.clone() + "allocator,size,mixed,round,threads,range_bytes,live_bytes,ratio,nulls\n";
            for f in self.frag.iter() {
                t += &format!(
                    "{},{},{},{},{},{},{},{:.4},{}\n",
                    f.allocator,
                    f.size,
                    f.mixed,
                    f.round,
                    f.threads,
                    f.range_bytes,
                    f.live_bytes,
                    f.ratio,
                    f.nulls
                );
            }
            std::fs::write(self.cli.out.join(format!("{name}-frag.csv")), t)?;
        }
        if !self.frag_maps.is_empty() {
            let mut t = head.clone()
                + "size,mixed,threads,segment,kind,blocks_out,block_bytes,live_bytes,units_64k\n";
            for m in self.frag_maps.iter() {
                for r in &m.segments {
                    t += &format!(
                        "{},{},{},{},{},{},{},{},{}\n",
                        m.size,
                        m.mixed,
                        m.threads,
                        r.segment,
                        r.kind,
                        r.blocks_out,
                        r.block_bytes,
                        r.live_bytes,
                        r.units
                    );
                }
            }
            std::fs::write(self.cli.out.join(format!("{name}-frag-map.csv")), t)?;
        }
        if !self.oom.is_empty() {
            let mut t = head.clone() + "allocator,size,threads,served,heap_bytes,share,ms\n";
            for o in self.oom.iter() {
                t += &format!(
                    "{},{},{},{},{},{:.4},{:.3}\n",
                    o.allocator, o.size, o.threads, o.served, o.heap_bytes, o.share, o.ms
                );
            }
            std::fs::write(self.cli.out.join(format!("{name}-oom.csv")), t)?;
        }
        if !report.ratios.is_empty() {
            let mut t = head.clone() + "test,phase,size,threads,versus,veballoc_ms,other_ms,speedup\n";
            for r in &report.ratios {
                t += &format!(
                    "{},{},{},{},{},{:.6},{:.6},{:.4}\n",
                    r.test, r.phase, r.size, r.threads, r.versus, r.veballoc_ms, r.other_ms, r.speedup
                );
            }
            std::fs::write(self.cli.out.join(format!("{name}-ratios.csv")), t)?;
        }
        if !self.peer_runs.is_empty() {
            let mut t = head.clone()
                + "allocator,test,size_or_range,threads,iter,alloc_ms,free_ms,range_bytes,live_bytes\n";
            for r in self.peer_runs.iter().flat_map(|r| &r.rows) {
                t += &format!(
                    "{},{},{},{},{},{:.6},{:.6},{},{}\n",
                    r.allocator,
                    r.test,
                    r.size_or_range,
                    r.threads,
                    r.iter,
                    r.alloc_ms,
                    r.free_ms,
                    r.range_bytes,
                    r.live_bytes
                );
            }
            std::fs::write(self.cli.out.join(format!("{name}-peers.csv")), t)?;
        }
        self.save_memory_csv(name, &head)?;
        let plots = self.plots(name);
        println!(
            "\nwrote {} and .csv{}",
            json.display(),
            if plots.is_empty() { String::new() } else { format!(", plots: {}", plots.join(", ")) }
        );
        Ok(())
    }

    /// Draws the plots this run has data for; returns their file names.
    pub(crate) fn plots(&self, name: &str) -> Vec<String> {
        let mut made = Vec::new();
        // Draws one plot; a failure is reported and the run goes on.
        let mut emit =
            |file: String, title: &str, x: &str, log_y: bool, y: &str, ss: &[plot::Series]| match plot::draw(
                &self.cli.out.join(&file),
                title,
                x,
                y,
                log_y,
                ss,
            ) {
                Ok(()) => made.push(file),
                Err(e) => eprintln!("warning: plot {file}: {e}"),
            };
        let series = |test: &str,
                      alloc: &str,
                      phase: &str,
                      threads: Option<u64>,
                      size: Option<u64>,
                      by_threads: bool| plot::Series {
            label: format!("{alloc} {phase}"),
            points: self
                .points
                .iter()
                .filter(|p| p.test == test && p.allocator == alloc && p.phase == phase)
                .filter(|p| threads.is_none_or(|t| p.threads == t) && size.is_none_or(|s| p.size == s))
                .map(|p| (if by_threads { p.threads as f64 } else { p.size as f64 }, p.median_ms))
                .collect(),
            dashed: false,
        };
        let peer_labels = &self.peer_labels;
        for test in ["single", "mixed", "warm"] {
            let mut ss = Vec::new();
            let mut allocs: Vec<(String, bool)> = ["veballoc", "floor", "cuda", "veballoc-warm"]
                .iter()
                .map(|a| (a.to_string(), *a == "floor"))
                .collect();
            allocs.extend(peer_labels.iter().map(|l| (l.clone(), true)));
            for (alloc, dashed) in &allocs {
                for phase in ["alloc", "free"] {
                    let mut s = series(test, alloc, phase, None, None, false);
                    s.dashed = *dashed;
                    if !s.points.is_empty() {
                        ss.push(s);
                    }
                }
            }
            if ss.is_empty() {
                continue;
            }
            let file = format!("{name}-{test}.svg");
            let title = format!(
                "{test}: {} threads, median of {} iterations ({})",
                self.threads, self.cli.iters, self.device
            );
            let x = if test == "mixed" { "max size (bytes)" } else { "size (bytes)" };
            emit(file, &title, x, true, "time (ms)", &ss);
        }
        for (test, allocs, x) in [
            ("packed", &["veballoc", "veballoc-packed", "cuda"][..], "max size (bytes)"),
            ("collective", &["malloc", "malloc_warp", "malloc_block"][..], "size (bytes)"),
        ] {
            let mut ss = Vec::new();
            for (i, alloc) in allocs.iter().enumerate() {
                for phase in ["alloc", "read", "free"] {
                    let mut s = series(test, alloc, phase, None, None, false);
                    s.dashed = i > 0 && phase != "alloc";
                    if !s.points.is_empty() {
                        ss.push(s);
                    }
                }
            }
            if !ss.is_empty() {
                let title = format!(
                    "{test}: {} threads, median of {} iterations ({})",
                    self.threads, self.cli.iters, self.device
                );
                emit(format!("{name}-{test}.svg"), &title, x, true, "time (ms)", &ss);
            }
        }
        for (test, phases, by_threads, x, file) in [
            ("host", &["pair"][..], false, "size (bytes)", "host-sizes"),
            ("host-live", &["alloc", "free"][..], true, "live allocations", "host-live"),
        ] {
            let mut ss = Vec::new();
            for (i, alloc) in ["veballoc", "cuMemAlloc", "cuMemAllocAsync"].iter().enumerate() {
                for phase in phases {
                    let mut s = series(test, alloc, phase, None, None, by_threads);
                    s.points.iter_mut().for_each(|p| p.1 *= 1e3);
                    s.dashed = i > 0;
                    if !s.points.is_empty() {
                        ss.push(s);
                    }
                }
            }
            if !ss.is_empty() {
                let title = format!("{test}: host-side allocation, us per call ({})", self.device);
                emit(format!("{name}-{file}.svg"), &title, x, true, "time (us)", &ss);
            }
        }
        let sizes: Vec<u64> = {
            let mut v: Vec<u64> =
                self.points.iter().filter(|p| p.test == "scaling").map(|p| p.size).collect();
            v.sort();
            v.dedup();
            v
        };
        if !sizes.is_empty() {
            // One plot per size (veballoc, floor and peers), alloc and free.
            for &sz in &sizes {
                let mut ss = Vec::new();
                let mut allocs = vec!["veballoc".to_string(), "floor".to_string()];
                allocs.extend(peer_labels.iter().cloned());
                for alloc in &allocs {
                    for phase in ["alloc", "free"] {
                        let mut s = series("scaling", alloc, phase, None, Some(sz), true);
                        s.dashed = alloc != "veballoc";
                        if !s.points.is_empty() {
                            ss.push(s);
                        }
                    }
                }
                emit(
                    format!("{name}-scaling-{sz}.svg"),
                    &format!("scaling at {sz} B: median time vs threads ({})", self.device),
                    "threads",
                    true,
                    "time (ms)",
                    &ss,
                );
            }
            let mut ss = Vec::new();
            for &sz in &sizes {
                for (alloc, phase) in [("veballoc", "alloc"), ("veballoc", "free"), ("floor", "alloc")] {
                    let mut s = series("scaling", alloc, phase, None, Some(sz), true);
                    s.label = format!("{alloc} {phase} {sz} B");
                    s.dashed = alloc == "floor";
                    ss.push(s);
                }
            }
            emit(
                format!("{name}-scaling.svg"),
                "scaling: time vs threads",
                "threads",
                true,
                "time (ms)",
                &ss,
            );
        }
        if !self.frag.is_empty() {
            let mut ss = Vec::new();
            let mut allocs = vec!["veballoc".to_string(), "cuda".to_string()];
            allocs.extend(peer_labels.iter().cloned());
            for alloc in &allocs {
                for mixed in [false, true] {
                    let pts: Vec<(f64, f64)> = self
                        .frag
                        .iter()
                        .filter(|f| &f.allocator == alloc && f.mixed == mixed && f.round == 0)
                        .map(|f| (f.size as f64, f.ratio))
                        .collect();
                    if !pts.is_empty() {
                        ss.push(plot::Series {
                            label: format!(
                                "{alloc} {}",
                                if mixed { "mixed (x = max)" } else { "single size" }
                            ),
                            points: pts,
                            dashed: alloc != "veballoc",
                        });
                    }
                }
            }
            // The CPU model says so in every title (a GPU run's title stays as it was).
            let on = if self.cpu_model.is_some() { format!(" ({})", self.device) } else { String::new() };
            emit(
                format!("{name}-frag.svg"),
                &format!("address range handed out / live bytes (first round){on}"),
                "size (bytes)",
                false,
                "range / live",
                &ss,
            );
        }
        if !self.util.is_empty() {
            let singles: Vec<_> = self.util.iter().filter(|u| u.lo == u.hi).collect();
            let ss = [
                plot::Series {
                    label: "veballoc, at the first null".into(),
                    points: singles.iter().map(|u| (u.lo as f64, 100.0 * u.share_at_first_null)).collect(),
                    dashed: false,
                },
                plot::Series {
                    label: "veballoc, filled on after it".into(),
                    points: singles.iter().map(|u| (u.lo as f64, 100.0 * u.share_max)).collect(),
                    dashed: true,
                },
            ];
            emit(
                format!("{name}-util.svg"),
                &format!("util: requested bytes live / heap, one size per fill ({})", self.device),
                "size (bytes)",
                false,
                "% of the heap",
                &ss,
            );
        }
        // Draws one plot on linear axes from 0 (after `emit`'s last use: both push to `made`).
        let mut emit_linear =
            |file: String, title: &str, x: &str, y: &str, ss: &[plot::Series]| match plot::draw_xy(
                &self.cli.out.join(&file),
                title,
                x,
                y,
                false,
                false,
                ss,
            ) {
                Ok(()) => made.push(file),
                Err(e) => eprintln!("warning: plot {file}: {e}"),
            };
        if !self.churn.is_empty() {
            let rounds: Vec<_> =
                self.churn.iter().filter(|c| c.alloc_share > 0.0 || c.live_bytes > 0).collect();
            let live = plot::Series {
                label: "live (requested bytes)".into(),
                points: rounds.iter().map(|c| (c.round as f64, 100.0 * c.live_share)).collect(),
                dashed: false,
            };
            let nulls = plot::Series {
                label: "nulls in the round".into(),
                points: rounds.iter().map(|c| (c.round as f64, c.nulls as f64)).collect(),
                dashed: false,
            };
            let title = |what: &str| format!("churn: {what} per round ({})", self.device);
            for (file, what, y, s) in
                [("churn", "live share", "% of the heap", live), ("churn-nulls", "nulls", "nulls", nulls)]
            {
                emit_linear(format!("{name}-{file}.svg"), &title(what), "round", y, &[s]);
            }
        }
        // `--frag-map`: per point, what each segment holds (one plot a point).
        for m in self.frag_maps.iter() {
            let mib = |b: u64| b as f64 / MIB as f64;
            let ss = [
                plot::Series {
                    label: "blocks out (MiB)".into(),
                    points: m
                        .segments
                        .iter()
                        .map(|r| (r.segment as f64, mib(r.blocks_out as u64 * r.block_bytes)))
                        .collect(),
                    dashed: true,
                },
                plot::Series {
                    label: "requested bytes live (MiB)".into(),
                    points: m.segments.iter().map(|r| (r.segment as f64, mib(r.live_bytes))).collect(),
                    dashed: false,
                },
            ];
            let what = if m.mixed { format!("mixed-{}", m.size) } else { m.size.to_string() };
            let sizes =
                if m.mixed { format!("sizes {MIXED_MIN}..{} B", m.size) } else { format!("{} B", m.size) };
            let title = format!("frag, first round, {sizes} x {}: each segment ({})", m.threads, self.device);
            emit_linear(format!("{name}-frag-map-{what}.svg"), &title, "segment", "MiB", &ss);
        }
        made
    }
}

pub(crate) fn write_csv(path: &Path, r: &Report) -> Res<()> {
    let mut f = std::fs::File::create(path)?;
    writeln!(f, "# gpu={} driver={} date={} rev={}", r.gpu, r.driver, r.date_utc, r.git_rev)?;
    writeln!(f, "test,allocator,phase,size,threads,iters,mean_ms,std_ms,min_ms,max_ms,median_ms")?;
    for p in r.points {
        writeln!(
            f,
            "{},{},{},{},{},{},{:.6},{:.6},{:.6},{:.6},{:.6}",
            p.test,
            p.allocator,
            p.phase,
            p.size,
            p.threads,
            p.samples_ms.len(),
            p.mean_ms,
            p.std_ms,
            p.min_ms,
            p.max_ms,
            p.median_ms
        )?;
    }
    Ok(())
}

/// Now, as an ISO-8601 UTC timestamp.
pub(crate) fn date_utc() -> String {
    let secs =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let (days, rem) = (secs / 86400, secs % 86400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + (m <= 2) as i64;
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pt(test: &str, alloc: &str, phase: &str, size: u64, threads: u64, ms: &[f64]) -> Point {
        Point::new(test, alloc, phase, size, threads, ms.to_vec())
    }

    #[test]
    fn ratios_pair_medians_at_the_same_point() {
        let points = [
            pt("single", "veballoc", "alloc", 16, 1024, &[0.1, 0.3, 0.2]),
            pt("single", "gallatin", "alloc", 16, 1024, &[0.4, 0.5, 0.3]),
            pt("single", "floor", "alloc", 16, 1024, &[0.05]),
            // Another size, thread count, phase or test: not paired with the first point.
            pt("single", "gallatin", "alloc", 32, 1024, &[9.0]),
            pt("single", "gallatin", "alloc", 16, 2048, &[9.0]),
            pt("single", "gallatin", "free", 16, 1024, &[9.0]),
            pt("warm", "gallatin", "alloc", 16, 1024, &[9.0]),
            pt("warm", "veballoc", "alloc", 16, 1024, &[1.0]),
        ];
        let r = ratios(&points);
        assert_eq!(r.len(), 2, "{r:?}");
        let g = r.iter().find(|r| r.versus == "gallatin").unwrap();
        assert_eq!((g.veballoc_ms, g.other_ms), (0.2, 0.4));
        assert!((g.speedup - 2.0).abs() < 1e-12);
        let f = r.iter().find(|r| r.versus == "floor").unwrap();
        assert!((f.speedup - 0.25).abs() < 1e-12, "the floor is 4x faster");
    }
}
