//! Where requests go (io_tester `io_class_data::get_pos`): random offsets uniform over the
//! file's whole reqsize blocks, or sequential ones wrapping at the end of the file.
//!
//! Two departures from io_tester, both because every shard shares one scratch file here:
//! each shard's sequential stream starts at its own part of the file (io_tester gives every
//! shard a file of its own), and the random block is drawn from `0..blocks`, where
//! io_tester's `uniform_int_distribution(0, file_size / reqsize)` includes the block that
//! starts at the end of the file (a read there returns 0 bytes).

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};

/// The offsets of one shard's requests.
pub struct Offsets {
    random: bool,
    reqsize: u64,
    /// Whole reqsize blocks in the file.
    blocks: u64,
    next_block: u64,
    rng: SmallRng,
}

impl Offsets {
    /// Offsets in a file of `file_size` bytes (at least `reqsize`) for `shard` of `shards`.
    pub fn new(
        random: bool,
        file_size: u64,
        reqsize: u64,
        shard: u64,
        shards: u64,
        seed: u64,
    ) -> Self {
        assert!(
            reqsize > 0 && file_size >= reqsize,
            "file smaller than a request"
        );
        let blocks = file_size / reqsize;
        Offsets {
            random,
            reqsize,
            blocks,
            next_block: blocks * shard / shards.max(1),
            rng: SmallRng::seed_from_u64(seed),
        }
    }

    /// The next request's offset: a multiple of reqsize, with the request inside the file.
    pub fn next_offset(&mut self) -> u64 {
        let block = if self.random {
            self.rng.random_range(0..self.blocks)
        } else {
            let block = self.next_block;
            self.next_block = (block + 1) % self.blocks;
            block
        };
        block * self.reqsize
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn offsets_are_aligned_and_inside_the_file(
            random: bool,
            reqsize in 1u64..70_000,
            extra in 0u64..1_000_000,
            shards in 1u64..8,
            shard_pick: u64,
            seed: u64,
        ) {
            let file_size = reqsize + extra;
            let shard = shard_pick % shards;
            let mut o = Offsets::new(random, file_size, reqsize, shard, shards, seed);
            for _ in 0..200 {
                let off = o.next_offset();
                prop_assert_eq!(off % reqsize, 0);
                prop_assert!(off + reqsize <= file_size);
            }
        }

        #[test]
        fn sequential_offsets_follow_each_other_and_wrap(
            reqsize in 1u64..10_000,
            blocks in 1u64..50,
            shards in 1u64..4,
        ) {
            let mut o = Offsets::new(false, reqsize * blocks, reqsize, shards - 1, shards, 0);
            let first = o.next_offset();
            prop_assert_eq!(first, blocks * (shards - 1) / shards * reqsize);
            let mut prev = first;
            for _ in 0..(2 * blocks) {
                let off = o.next_offset();
                prop_assert_eq!(off, (prev + reqsize) % (blocks * reqsize));
                prev = off;
            }
        }
    }

    #[test]
    fn random_offsets_cover_the_file() {
        let mut o = Offsets::new(true, 8 * 4096, 4096, 0, 1, 7);
        let mut seen = [false; 8];
        for _ in 0..1000 {
            seen[(o.next_offset() / 4096) as usize] = true;
        }
        assert!(seen.iter().all(|s| *s));
    }
}
