//! Heap validator and statistics: walks the trees and tables of a quiescent heap (no kernel
//! running; on the host, over a copy of the device metadata) and checks them against each
//! other, as mimalloc's segment validator does.

use crate::block::{
    gid_of, group_block_bytes, group_blocks_per_segment, group_of, kind_parts, run_block_handed, slice_bytes,
    slices_per_block, slot_blocks, slot_parts, split_gid, KIND_FREE, KIND_LARGE_TAIL, KIND_PACKED,
    KIND_RUN_TAIL, KIND_SLICES, KIND_WHOLE, MAX_BLOCKS_PER_SEGMENT, NUM_CLASSES, NUM_GROUPS,
};
use crate::class::RUN_GROUP;
use crate::heap::{counter, DeviceHeap};
use crate::segment::{seg_kind, SegKind, Segments, OUT_COUNT_MASK};
use crate::slice::{packed_row, run_row, PACKED_CLASSES, RUN_GROUPS};

/// What the heap holds, from one walk of its metadata.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stats {
    /// Bytes the user holds: live slices, whole blocks and segment runs, at their usable size.
    pub bytes_in_use: u64,
    /// Segments in the segment tree.
    pub free_segments: u64,
    /// Segments formatted for each group (see `class::group_of`).
    pub segments_per_group: [u64; NUM_GROUPS],
    /// Segments in multi-segment runs.
    pub large_segments: u64,
    /// Segments owned by the host-side pool.
    pub host_segments: u64,
    /// Segments whose memory was returned to the driver.
    pub released_segments: u64,
    /// Blocks out of their tree serving slices, per class (includes current blocks).
    pub slice_blocks: [u64; NUM_CLASSES],
    /// Blocks handed out whole, per group (each block of a run of whole blocks counts).
    pub whole_blocks: [u64; NUM_GROUPS],
    /// Live slices per class (packed objects not included).
    pub live_slices: [u64; NUM_CLASSES],
    /// Blocks serving `malloc_packed` (counted in `slice_blocks` of their class too).
    pub packed_blocks: u64,
    /// Live packed objects (their sizes are not recorded, so they are not in `bytes_in_use`).
    pub live_packed: u64,
    /// Stale summary bits in the trees (harmless; searches skip them).
    pub stale_summary_bits: u64,
    /// Parked blocks claimed ahead: the blocks of run rows' current segments not handed out
    /// yet (`trim` returns them).
    pub reserved_blocks: u64,
    /// Blocks at the start of a segment that end a multi-segment run (their bytes are in
    /// `bytes_in_use` with the run's).
    pub large_tail_blocks: u64,
    /// `free` calls on pointers the heap never handed out.
    pub invalid_frees: u64,
    /// `free` calls on slices not handed out at the time (double frees), counted by heaps
    /// with checks.
    pub double_frees: u64,
    /// Requests answered with null for lack of memory.
    pub out_of_memory: u64,
}

impl Default for Stats {
    fn default() -> Self {
        Self {
            bytes_in_use: 0,
            free_segments: 0,
            segments_per_group: [0; NUM_GROUPS],
            large_segments: 0,
            host_segments: 0,
            released_segments: 0,
            slice_blocks: [0; NUM_CLASSES],
            whole_blocks: [0; NUM_GROUPS],
            live_slices: [0; NUM_CLASSES],
            packed_blocks: 0,
            live_packed: 0,
            stale_summary_bits: 0,
            reserved_blocks: 0,
            large_tail_blocks: 0,
            invalid_frees: 0,
            double_frees: 0,
            out_of_memory: 0,
        }
    }
}

impl Stats {
    /// Blocks out of their trees, all classes.
    pub fn blocks_in_use(&self) -> u64 {
        self.slice_blocks.iter().chain(self.whole_blocks.iter()).sum()
    }
    /// Segments not in the segment tree.
    pub fn segments_in_use(&self) -> u64 {
        self.segments_per_group.iter().sum::<u64>() + self.large_segments + self.host_segments
    }
}

/// The first inconsistency the validator found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeapError {
    /// A tree's summaries hide a free index (`tree` is the group, `None` for the segment tree).
    Tree { tree: Option<usize>, err: crate::veb::VebError },
    /// The segment tree and the table disagree about segment `seg`.
    SegmentTreeMismatch { seg: u32, entry: u32 },
    /// A table entry that decodes to nothing.
    CorruptEntry { seg: u32, entry: u32 },
    /// A block bit of group `group` is set inside segment `seg`, which is not of that group
    /// (or past the group's blocks in it).
    StrayBlockBit { seg: u32, group: usize },
    /// A block out of its tree whose kind word is none of the kinds, or names a class of
    /// another group.
    BadBlockKind { seg: u32, local: u32, word: u32 },
    /// The out-count of `seg` differs from the blocks missing from its tree.
    OutCount { seg: u32, counted: u32, found: u32 },
    /// A free block whose counters are not parked (free count zero, kind free).
    FreeBlockNotParked { seg: u32, local: u32 },
    /// A block out of its tree whose kind says parked: handed out, but not as anything.
    ParkedBlockOutOfTree { seg: u32, local: u32 },
    /// A slice block with more frees than hand-outs.
    OverFreed { seg: u32, local: u32 },
    /// A slice block whose every slice came back but which was not recycled.
    NotRecycled { seg: u32, local: u32 },
    /// A multi-segment run that is broken (bad length, missing tail, tail without head).
    BadRun { seg: u32 },
    /// A run of whole blocks that is broken: a run length of 0 or past the segment's blocks,
    /// a block of the run not marked as its tail, or a tail block outside any run.
    BadBlockRun { seg: u32, local: u32 },
    /// Blocks marked as the tail of a multi-segment run that no run claims (or the reverse).
    OrphanLargeTail { claimed: u64, found: u64 },
    /// The hand-out bitmap of a block disagrees with its live count (heaps with checks).
    HandOutBits { seg: u32, local: u32, marked: u32, live: u32 },
}

impl DeviceHeap {
    /// Walks the heap and returns its statistics, or the first inconsistency.
    /// Call only while no kernel uses the heap.
    pub fn validate(&self) -> Result<Stats, HeapError> {
        let mut s = Stats::default();
        let n = self.layout().num_segments;
        s.stale_summary_bits +=
            self.segments().seg_tree().check().map_err(|err| HeapError::Tree { tree: None, err })?;
        for g in 0..NUM_GROUPS {
            s.stale_summary_bits +=
                self.blocks().block_tree(g).check().map_err(|err| HeapError::Tree { tree: Some(g), err })?;
        }
        let current = self.current_blocks();
        // Tail blocks that runs' heads claim, and that the segments after them hold.
        let mut large_tail_blocks = 0u64;
        let mut seg = 0u32;
        while seg < n {
            // Acquire: quiescent heap; acquire for form's sake.
            let entry = self.segments().seg_table(seg).load_acquire();
            let kind = seg_kind(entry);
            let free = self.segments().seg_tree().contains(seg as u64);
            if free != (kind == SegKind::Free) {
                return Err(HeapError::SegmentTreeMismatch { seg, entry });
            }
            // Only the group of a segment's format may have its blocks in its tree, and only
            // the `group_blocks_per_segment` ids of that group.
            for g in 0..NUM_GROUPS {
                let first_stray = if kind == SegKind::Group(g) { group_blocks_per_segment(g) } else { 0 };
                let (from, end) =
                    (gid_of(seg, 0) + first_stray as u64, gid_of(seg, 0) + MAX_BLOCKS_PER_SEGMENT as u64);
                if self.blocks().block_tree(g).successor(from).is_some_and(|id| id < end) {
                    return Err(HeapError::StrayBlockBit { seg, group: g });
                }
            }
            match kind {
                SegKind::Free => {
                    // A free segment has no block out and no reclaimer: a count that a
                    // release's late subtraction wrapped shows here (the reclaim stored 0).
                    // Acquire: quiescent heap (no kernel running); orders the read after every writer.
                    let counted = self.segments().seg_out(seg).load_acquire();
                    if counted != 0 {
                        return Err(HeapError::OutCount { seg, counted, found: 0 });
                    }
                    s.free_segments += 1
                }
                SegKind::Group(g) => {
                    s.segments_per_group[g] += 1;
                    self.check_group_segment(seg, g, &current, &mut s)?;
                }
                SegKind::LargeHead => {
                    // Acquire: quiescent heap (no kernel running); orders the read after every writer.
                    let k = self.segments().seg_run(seg).load_acquire();
                    if k == 0 || seg as u64 + k as u64 > n as u64 {
                        return Err(HeapError::BadRun { seg });
                    }
                    for t in 1..k {
                        // Acquire: quiescent heap (no kernel running); orders the read after every writer.
                        if seg_kind(self.segments().seg_table(seg + t).load_acquire()) != SegKind::LargeTail {
                            return Err(HeapError::BadRun { seg: seg + t });
                        }
                    }
                    // Acquire: quiescent heap (no kernel running); orders the read after every writer.
                    let tail = self.segments().seg_run_tail(seg).load_acquire();
                    if tail > 0 {
                        self.check_run_tail(seg + k, tail)?;
                        large_tail_blocks += tail as u64;
                    }
                    s.large_segments += k as u64;
                    s.bytes_in_use += Segments::run_bytes(k, tail);
                    seg += k;
                    continue;
                }
                SegKind::LargeTail => return Err(HeapError::BadRun { seg }),
                SegKind::Host => s.host_segments += 1,
                SegKind::Released => s.released_segments += 1,
                SegKind::Corrupt(entry) => return Err(HeapError::CorruptEntry { seg, entry }),
            }
            seg += 1;
        }
        if large_tail_blocks != s.large_tail_blocks {
            return Err(HeapError::OrphanLargeTail {
                claimed: large_tail_blocks,
                found: s.large_tail_blocks,
            });
        }
        // Acquire: quiescent heap (no kernel running); orders the read after every writer.
        s.invalid_frees = self.counter(counter::INVALID_FREE).load_acquire();
        // Acquire: quiescent heap (no kernel running); orders the read after every writer.
        s.out_of_memory = self.counter(counter::OUT_OF_MEMORY).load_acquire();
        // Acquire: quiescent heap (no kernel running); orders the read after every writer.
        s.double_frees = self.counter(counter::DOUBLE_FREE).load_acquire();
        Ok(s)
    }

    /// How many slices block `gid` of class `c` has handed out (or given back unhanded), if
    /// it is a current block: in a current slot's run (of its class's row, or of a packed row
    /// of that class) and not yet wholly passed by it (a passed block may have recycled and
    /// be another slot's now).
    pub(crate) fn current_blocks(&self) -> impl Fn(usize, u64) -> Option<u32> + '_ {
        move |c, gid| {
            let packed = (0..PACKED_CLASSES.len()).filter(|&i| PACKED_CLASSES[i] == c).map(packed_row);
            core::iter::once(c).chain(packed).find_map(|row| {
                (0..self.layout().shards).find_map(|sh| {
                    // Acquire: quiescent heap (no kernel running); orders the read after every writer.
                    let w = self.slots().current(row, sh).load_acquire();
                    // A block the run has passed entirely may have recycled and be another
                    // slot's now: only a block the run has not passed is the run's.
                    match slot_parts(w) {
                        (Some(first), handed) if (first..first + slot_blocks(w) as u64).contains(&gid) => {
                            let h = run_block_handed(handed, (gid - first) as u32, slices_per_block(c));
                            (h < slices_per_block(c)).then_some(h)
                        }
                        _ => None,
                    }
                })
            })
        }
    }

    /// Whether block `local` of segment `seg` is a block not yet handed out of a run row's
    /// current segment (claimed ahead, parked).
    fn is_reserved(&self, seg: u32, local: u32) -> bool {
        (0..RUN_GROUPS.len()).any(|i| {
            (0..self.layout().shards).any(|sh| {
                // Acquire: quiescent heap (no kernel running); orders the read after every writer.
                matches!(slot_parts(self.slots().current(run_row(i), sh).load_acquire()),
                    (Some(gid), handed) if split_gid(gid).0 == seg && local >= handed)
            })
        })
    }

    /// With checks, block `local`'s hand-out bits must number its live slices (for a packed
    /// block, its live objects: one bit per object).
    fn check_bits(&self, seg: u32, local: u32, g: usize, live: u32) -> Result<(), HeapError> {
        if !self.checking() {
            return Ok(());
        }
        let marked = self.hand_out().marked_in_block(seg, local, g);
        if marked != live {
            return Err(HeapError::HandOutBits { seg, local, marked, live });
        }
        Ok(())
    }

    /// The first `tail` blocks of segment `ts` end the run before it: `ts` is in the heap and
    /// formatted for `RUN_GROUP`, those blocks are marked so, and the next one is not.
    fn check_run_tail(&self, ts: u32, tail: u32) -> Result<(), HeapError> {
        let bps = group_blocks_per_segment(RUN_GROUP);
        // Acquire: quiescent heap (no kernel running); orders the read after every writer.
        if ts >= self.layout().num_segments
            || tail >= bps
            || seg_kind(self.segments().seg_table(ts).load_acquire()) != SegKind::Group(RUN_GROUP)
        {
            return Err(HeapError::BadRun { seg: ts });
        }
        for local in 0..=tail {
            // Acquire: quiescent heap (no kernel running); orders the read after every writer.
            let kind = kind_parts(self.blocks().block_meta(ts, local).kind.load_acquire()).0;
            if (kind == KIND_LARGE_TAIL) != (local < tail) {
                return Err(HeapError::BadBlockRun { seg: ts, local });
            }
        }
        Ok(())
    }

    fn check_group_segment(
        &self,
        seg: u32,
        g: usize,
        is_current: &impl Fn(usize, u64) -> Option<u32>,
        s: &mut Stats,
    ) -> Result<(), HeapError> {
        let mut out = 0;
        // Tail blocks still expected after the head of a run of whole blocks.
        let mut tails = 0;
        // Leading blocks that end a multi-segment run.
        let mut leading_large = 0u64;
        for local in 0..group_blocks_per_segment(g) {
            let gid = gid_of(seg, local);
            let m = self.blocks().block_meta(seg, local);
            // Acquire: quiescent heap (no kernel running); orders the read after every writer.
            let freed = m.freed.load_acquire();
            // Acquire: quiescent heap (no kernel running); orders the read after every writer.
            let word = m.kind.load_acquire();
            let (kind, c) = kind_parts(word);
            if (tails > 0) != (kind == KIND_RUN_TAIL) {
                return Err(HeapError::BadBlockRun { seg, local });
            }
            if self.blocks().block_tree(g).contains(gid) {
                // Parked, or never installed (all zeros).
                if freed != 0 || word != KIND_FREE {
                    return Err(HeapError::FreeBlockNotParked { seg, local });
                }
                self.check_bits(seg, local, g, 0)?;
                continue;
            }
            out += 1;
            if kind == KIND_FREE {
                if freed == 0 && self.is_reserved(seg, local) {
                    s.reserved_blocks += 1;
                    self.check_bits(seg, local, g, 0)?;
                    continue;
                }
                return Err(HeapError::ParkedBlockOutOfTree { seg, local });
            }
            if kind == KIND_LARGE_TAIL {
                // Only the leading blocks of a RUN_GROUP segment end a run.
                if g != RUN_GROUP || local as u64 != leading_large {
                    return Err(HeapError::BadBlockRun { seg, local });
                }
                leading_large += 1;
                s.large_tail_blocks += 1;
                s.whole_blocks[g] += 1;
                self.check_bits(seg, local, g, 0)?;
                continue;
            }
            if kind == KIND_WHOLE || kind == KIND_RUN_TAIL {
                if kind == KIND_WHOLE {
                    // `freed` holds the run length.
                    if freed == 0 || local + freed > group_blocks_per_segment(g) {
                        return Err(HeapError::BadBlockRun { seg, local });
                    }
                    tails = freed - 1;
                } else {
                    tails -= 1;
                }
                s.whole_blocks[g] += 1;
                s.bytes_in_use += group_block_bytes(g);
                self.check_bits(seg, local, g, 0)?;
                continue;
            }
            if !matches!(kind, KIND_SLICES | KIND_PACKED) || c >= NUM_CLASSES || group_of(c) != g {
                return Err(HeapError::BadBlockKind { seg, local, word });
            }
            s.slice_blocks[c] += 1;
            // A block out of its slot has handed out (or given back) all its slices.
            let handed = is_current(c, gid).unwrap_or(slices_per_block(c));
            if freed > handed {
                return Err(HeapError::OverFreed { seg, local });
            }
            if freed == slices_per_block(c) {
                return Err(HeapError::NotRecycled { seg, local });
            }
            let live = handed - freed;
            self.check_bits(seg, local, g, live)?;
            if kind == KIND_PACKED {
                s.packed_blocks += 1;
                s.live_packed += live as u64;
            } else {
                s.live_slices[c] += live as u64;
                s.bytes_in_use += live as u64 * slice_bytes(c);
            }
        }
        // Acquire: quiescent heap (no kernel running); orders the read after every writer.
        let counted = self.segments().seg_out(seg).load_acquire() & OUT_COUNT_MASK;
        if counted != out {
            return Err(HeapError::OutCount { seg, counted, found: out });
        }
        Ok(())
    }
}
